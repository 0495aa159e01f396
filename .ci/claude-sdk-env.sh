#!/usr/bin/env bash
# Installs the Claude Agent SDKs that the end-to-end tests drive codecoder with
# (crates/cli/tests/it/claude_sdk.rs): the TypeScript SDK from npm and the Python SDK from PyPI,
# both pinned to the versions ../shared/reference/claude-headless.md was read from.
#
# Usage: .ci/claude-sdk-env.sh DIR
# DIR receives an npm prefix (DIR/js/node_modules) and a venv (DIR/venv). The tests take them
# from CODECODER_TEST_CLAUDE_SDK_JS (DIR/js) and CODECODER_TEST_CLAUDE_SDK_PY (DIR/venv/bin/python).
#
# Both packages ship a Claude Code binary (npm: the platform's optional dependency; pip: inside
# the wheel). The tests never run it: the SDKs are pointed at codecoder. Only the start-up
# benchmark runs it, offline, inside a network namespace of its own.
#
# Idempotent and cheap when nothing changed: npm and pip skip what is installed at the pinned
# version, and pip reuses its cache for the 170 MB wheel.
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: $0 DIR" >&2
    exit 2
fi
dir="$1"

ts_sdk_version="0.3.333"
py_sdk_version="0.2.189"
# The TypeScript SDK's peer dependencies.
anthropic_sdk_version="0.93.0"
mcp_sdk_version="1.32.2"
zod_version="4.1.12"
python="${PYTHON:-python3.11}"
if ! command -v "$python" >/dev/null 2>&1; then
    python="python3"
fi

mkdir -p "$dir/js"
dir="$(cd "$dir" && pwd)"

start=$(date +%s)
npm install --prefix "$dir/js" --no-audit --no-fund --silent \
    "@anthropic-ai/claude-agent-sdk@$ts_sdk_version" \
    "@anthropic-ai/sdk@$anthropic_sdk_version" \
    "@modelcontextprotocol/sdk@$mcp_sdk_version" \
    "zod@$zod_version"
echo "== npm: @anthropic-ai/claude-agent-sdk $ts_sdk_version in $(($(date +%s) - start))s"

start=$(date +%s)
venv="$dir/venv"
if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check "claude-agent-sdk==$py_sdk_version"
"$venv/bin/python" -c "import claude_agent_sdk; print('claude-agent-sdk', claude_agent_sdk.__version__)"
echo "== pip: claude-agent-sdk $py_sdk_version in $(($(date +%s) - start))s"
