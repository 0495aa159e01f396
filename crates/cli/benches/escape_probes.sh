#!/usr/bin/env bash
# Escape probes, side by side: the same shell commands run unconfined (the control), confined
# by `codecoder sandbox` and by the agent's own run_command under `codecoder exec` (its managed
# network; a fake model makes the call), each under bubblewrap and under Landlock (and Landlock's
# fallback without namespaces, codecoder run as nobody in a user namespace that may not nest
# another), and by Claude Code's sandbox runtime (`srt` from the npm package
# @anthropic-ai/sandbox-runtime). Each is judged by what the host saw: a byte on a listener, a
# file left in the workspace, a secret in the output.
#
# Usage: crates/cli/benches/escape_probes.sh            (prints a Markdown table)
#   CODECODER_BIN  the binary to probe (default: target/debug/codecoder of this checkout)
#   FAKE_MODEL_BIN the fake model server (default: target/debug/codecoder-fake-model)
#   SRT_VERSION    the srt version to install (default 0.0.83)
#   SRT_DIR        where srt is installed with npm when absent (default /tmp/escape-probes-srt)
#   PROBE_VERBOSE  when set, each run's verdict and output go to stderr
#   PROBE_ONLY, PROBE_RUNTIMES  space-separated probe or runtime names: run only those
# Runs as root (it adds network links in namespaces it makes). Needs bwrap, python3, curl, git,
# ip, unshare, nsenter and setpriv; srt also needs node, socat and ripgrep. srt sends no
# telemetry, and nothing here can reach the network anyway (below).
#
# Everything runs inside `bwrap --unshare-net`: a network namespace of its own, so no probe and
# no runtime can reach past this machine. The host's listeners run twice: in that namespace
# (127.0.0.1 and the abstract socket) and in a second namespace joined to it by a veth pair,
# the "remote" host 192.0.2.1 (a documentation address, routed only between the two). Names
# resolve through an /etc/hosts bound over the real one: allowed.test and denied.test at
# 192.0.2.1, local.test at 127.0.0.1 (a registry or dev server on this machine).
set -euo pipefail

TCP_PORT=47001
HTTP_PORT=47002
ABSTRACT_NAME=codecoder-escape-probe
RAW_IP=192.0.2.1
FAKE_KEY=FAKE-SSH-KEY-MATERIAL

if [[ "${1:-}" != --inner ]]; then
    here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    repo=$(cd "$here/../../.." && pwd)
    for tool in bwrap python3 curl git ip unshare nsenter setpriv node npm socat rg; do
        if ! command -v "$tool" >/dev/null; then
            echo "escape_probes: $tool is missing (Debian: apt-get install bubblewrap curl git" \
                "iproute2 util-linux nodejs npm socat ripgrep)" >&2
            exit 2
        fi
    done
    export CODECODER_BIN=${CODECODER_BIN:-$repo/target/debug/codecoder}
    export FAKE_MODEL_BIN=${FAKE_MODEL_BIN:-$repo/target/debug/codecoder-fake-model}
    if [[ ! -x $FAKE_MODEL_BIN ]]; then
        echo "escape_probes: no $FAKE_MODEL_BIN (cargo build -p codecoder-test-support)" >&2
        exit 2
    fi
    export SRT_VERSION=${SRT_VERSION:-0.0.83}
    SRT_DIR=${SRT_DIR:-/tmp/escape-probes-srt}
    if [[ ! -x "$SRT_DIR/node_modules/.bin/srt" ]]; then
        mkdir -p "$SRT_DIR"
        npm install --prefix "$SRT_DIR" --no-audit --no-fund --save-exact \
            "@anthropic-ai/sandbox-runtime@$SRT_VERSION" >&2
    fi
    export SRT_BIN=$SRT_DIR/node_modules/.bin/srt
    export PROBE_ROOT
    PROBE_ROOT=$(mktemp -d /tmp/escape-probes.XXXXXX)
    chmod 755 "$PROBE_ROOT"
    # Copies, so that a rebuild while the probes run does not mix two builds in one table.
    echo "codecoder: $(git -C "$repo" rev-parse --short HEAD), $CODECODER_BIN of" \
        "$(date -u -r "$CODECODER_BIN" '+%F %T') UTC" >&2
    cp "$CODECODER_BIN" "$PROBE_ROOT/codecoder"
    cp "$FAKE_MODEL_BIN" "$PROBE_ROOT/codecoder-fake-model"
    CODECODER_BIN=$PROBE_ROOT/codecoder
    FAKE_MODEL_BIN=$PROBE_ROOT/codecoder-fake-model
    printf '127.0.0.1 localhost local.test\n%s allowed.test denied.test\n' "$RAW_IP" \
        >"$PROBE_ROOT/hosts"
    echo "srt: $("$SRT_BIN" --version) on node $(node --version)" >&2
    echo "$(bwrap --version), socat $(socat -V | sed -n 's/^socat version \([^ ]*\).*/\1/p'), kernel $(uname -r)" >&2
    status=0
    bwrap --dev-bind / / --unshare-net --ro-bind "$PROBE_ROOT/hosts" /etc/hosts \
        --setenv DISABLE_TELEMETRY 1 -- bash "${BASH_SOURCE[0]}" --inner || status=$?
    rm -rf "$PROBE_ROOT"
    exit "$status"
fi

# Inside the namespace.
LOG=$PROBE_ROOT/host.log
PROBES=$PROBE_ROOT/probes
mkdir -p "$PROBES"
: >"$LOG"

cat >"$PROBE_ROOT/listeners.py" <<EOF
# Host-side listeners: every byte a probe gets through is appended to the log with its kind.
import http.server, socket, socketserver, sys, threading
log = open("$LOG", "a", buffering=1)
def note(kind, data):
    log.write(f"{kind} {data}\n")
def tcp():
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", $TCP_PORT)); s.listen()
    while True:
        c, _ = s.accept(); c.settimeout(3)
        try: note("tcp", c.recv(64).decode().strip()); c.sendall(b"HOST-GOT-IT\n")
        except OSError: pass
        c.close()
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("0.0.0.0", 53))
    while True:
        data, peer = s.recvfrom(512); note("udp", f"{len(data)} bytes"); s.sendto(data, peer)
def abstract():
    s = socket.socket(socket.AF_UNIX); s.bind("\0$ABSTRACT_NAME"); s.listen()
    while True:
        c, _ = s.accept(); c.settimeout(3)
        try: note("abstract", c.recv(64).decode().strip()); c.sendall(b"HOST-GOT-IT\n")
        except OSError: pass
        c.close()
class Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        host = (self.headers.get("Host") or "").split(":")[0]
        note("http", host)
        body = f"HTTP-OK {host}\n".encode()
        self.send_response(200); self.send_header("Content-Length", str(len(body)))
        self.end_headers(); self.wfile.write(body)
    def log_message(self, *args): pass
def web():
    socketserver.ThreadingTCPServer.allow_reuse_address = True
    socketserver.ThreadingTCPServer(("0.0.0.0", $HTTP_PORT), Page).serve_forever()
for target in (tcp, udp, abstract, web):
    threading.Thread(target=target, daemon=True).start()
open(sys.argv[1], "w").close()
threading.Event().wait()
EOF
# Starts the listeners (with a command prefix, e.g. to enter a namespace) and waits until they
# listen; sets LISTENER_PID.
start_listeners() {
    local ready=$PROBE_ROOT/ready.$RANDOM
    "$@" python3 "$PROBE_ROOT/listeners.py" "$ready" &
    LISTENER_PID=$!
    until [[ -e $ready ]]; do sleep 0.05; done
}
start_listeners
LOCAL_PID=$LISTENER_PID
# The remote host: the same listeners in a namespace of their own, at $RAW_IP over a veth pair.
start_listeners unshare --net
REMOTE_PID=$LISTENER_PID
trap 'kill "$LOCAL_PID" "$REMOTE_PID"' EXIT
ip link add probe-near type veth peer name probe-far
ip link set probe-far netns "$REMOTE_PID"
ip addr add 192.0.2.2/24 dev probe-near
ip link set probe-near up
nsenter -t "$REMOTE_PID" -n sh -c \
    "ip link set lo up && ip addr add $RAW_IP/24 dev probe-far && ip link set probe-far up"

# The probes: one script each, run with `sh FILE` from the workspace. Python is called by its
# path, so a HOME without pyenv's shims does not matter.
py=/usr/bin/python3
probe() { cat >"$PROBES/$1.sh"; }
probe tcp-loopback <<EOF
$py -c 'import socket; s=socket.create_connection(("127.0.0.1",$TCP_PORT),3); s.sendall(b"tcp-loopback"); print(s.recv(64).decode())'
EOF
probe tcp-raw-ip <<EOF
$py -c 'import socket; s=socket.create_connection(("$RAW_IP",$TCP_PORT),3); s.sendall(b"tcp-raw-ip"); print(s.recv(64).decode())'
EOF
probe tcp-proxy-port-elsewhere <<EOF
$py -c '
import os, socket, urllib.parse
proxy = os.environ.get("HTTP_PROXY") or os.environ.get("http_proxy") or "http://127.0.0.1:3128"
port = urllib.parse.urlsplit(proxy).port or 3128
s = socket.socket(); s.settimeout(3)
try: s.connect(("$RAW_IP", port)); print("HOST-ANSWERED: connected to port", port)
except ConnectionRefusedError: print("HOST-ANSWERED: refused on port", port)
except OSError as err: print("no connection:", err)'
EOF
probe udp-dns <<EOF
$py -c '
import socket, struct
query = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0) + b"\x07example\x03com\x00" + struct.pack(">HH", 1, 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(3)
s.sendto(query, ("$RAW_IP", 53)); print("reply", len(s.recv(512)))'
EOF
probe abstract-unix <<EOF
$py -c 'import socket; s=socket.socket(socket.AF_UNIX); s.settimeout(3); s.connect("\0$ABSTRACT_NAME"); s.sendall(b"abstract-unix"); print(s.recv(64).decode())'
EOF
probe proxy-allowed <<EOF
curl -sS -m 5 http://allowed.test:$HTTP_PORT/
EOF
probe proxy-connect-allowed <<EOF
curl -sS -m 5 --proxytunnel http://allowed.test:$HTTP_PORT/
EOF
probe proxy-allowed-loopback <<EOF
curl -sS -m 5 http://local.test:$HTTP_PORT/
EOF
# SOCKS5 (what git over ssh goes through): the first socks5 URL among the proxy variables,
# none unconfined. The text goes into the probe scripts as is, to expand there.
# shellcheck disable=SC2016
socks='socks=; for url in "$ALL_PROXY" "$all_proxy" "$FTP_PROXY"; do case $url in socks5*) socks=$url; break ;; esac; done'
probe socks-allowed <<EOF
$socks; curl -sS -m 5 -x "\$socks" http://allowed.test:$HTTP_PORT/
EOF
probe socks-denied <<EOF
$socks; curl -sS -m 5 -x "\$socks" http://denied.test:$HTTP_PORT/
EOF
probe proxy-denied <<EOF
curl -sS -m 5 http://denied.test:$HTTP_PORT/
EOF
probe proxy-raw-ip <<EOF
curl -sS -m 5 http://$RAW_IP:$HTTP_PORT/
EOF
probe direct-allowed <<EOF
curl -sS -m 5 --noproxy '*' http://allowed.test:$HTTP_PORT/
EOF
probe write-git-hooks <<'EOF'
echo 'echo pwned' > .git/hooks/x && echo WROTE
EOF
probe write-git-config <<'EOF'
git config core.hooksPath /tmp/evil-hooks && echo WROTE
EOF
probe write-global-hooks-path <<'EOF'
echo 'echo pwned' > .githooks/pre-commit && echo WROTE
EOF
probe create-git <<'EOF'
mkdir -p .git/hooks && echo 'echo pwned' > .git/hooks/pre-commit && echo WROTE
EOF
probe create-mcp-json <<'EOF'
echo '{"mcpServers":{"x":{"command":"sh"}}}' > .mcp.json && echo WROTE
EOF
probe create-claude-settings <<'EOF'
mkdir -p .claude && echo '{"hooks":{}}' > .claude/settings.json && echo WROTE
EOF
probe read-ssh-key <<'EOF'
cat ~/.ssh/id_rsa
EOF

# A fresh workspace and HOME per run. `repo` workspaces hold a `git init`; `bare` ones hold no
# `.git` at all (the "create a missing .git" probe needs one without).
fresh() {
    local kind=$1 dir
    dir=$(mktemp -d "$PROBE_ROOT/run.XXXXXX")
    mkdir -p "$dir/ws" "$dir/home/.ssh" "$dir/cchome"
    echo "$FAKE_KEY" >"$dir/home/.ssh/id_rsa"
    echo "workspace file" >"$dir/ws/README"
    if [[ $kind == repo ]]; then git -C "$dir/ws" init -q; fi
    # The user's global git config names a hooks directory inside the workspace.
    mkdir "$dir/ws/.githooks"
    printf '[core]\n\thooksPath = %s\n' "$dir/ws/.githooks" >"$dir/home/.gitconfig"
    cat >"$dir/cchome/config.toml" <<EOF
[network]
allowed_domains = ["allowed.test", "local.test"]
denied_domains = ["denied.test"]
EOF
    cat >"$dir/srt-settings.json" <<EOF
{"filesystem": {"denyRead": [], "allowWrite": ["."], "denyWrite": []},
 "network": {"allowedDomains": ["allowed.test", "local.test"], "deniedDomains": ["denied.test"]}}
EOF
    echo "$dir"
}

# Runs probe $2 under runtime $1 in run directory $3; its output goes to $3/out. Every runtime
# starts from the same small environment. The `exec` runtimes run the probe as the agent does:
# `codecoder exec` against the fake model, whose first reply is a run_command call of the probe
# (its output is in the JSON events) and whose second ends the turn.
run_under() {
    local runtime=$1 name=$2 dir=$3 backend=${1##*-} model_pid='' base_url=''
    local -a cmd
    case $runtime in
        unconfined) cmd=(sh "$PROBES/$name.sh") ;;
        srt) cmd=("$SRT_BIN" --settings "$dir/srt-settings.json" -- sh "$PROBES/$name.sh") ;;
        sandbox-*)
            cmd=("$CODECODER_BIN" sandbox -a never -c "sandbox.backend=\"$backend\"" --
                sh "$PROBES/$name.sh") ;;
        exec-*)
            printf '{"steps": [{"type": "reply", "tool_calls": [{"id": "probe", "name": "run_command", "arguments": {"command": "sh %s"}}]}, {"type": "reply", "text": "done"}]}\n' \
                "$PROBES/$name.sh" >"$dir/script.json"
            : >"$dir/model-url"
            "$FAKE_MODEL_BIN" --script "$dir/script.json" --quiet >"$dir/model-url" &
            model_pid=$!
            for _ in $(seq 600); do
                base_url=$(head -n 1 "$dir/model-url")
                if [[ -n $base_url ]]; then break; fi
                sleep 0.05
            done
            cmd=("$CODECODER_BIN" exec --json -a never -c "sandbox.backend=\"$backend\""
                "run the probe") ;;
    esac
    if [[ $runtime == exec-landlock-fallback ]]; then
        # Landlock's fallback, where the stage cannot make namespaces: codecoder runs as an
        # unprivileged user in a user namespace that may not nest another one.
        chown -R 65534:65534 "$dir"
        cmd=(setpriv --reuid=65534 --regid=65534 --clear-groups
            bwrap --dev-bind / / --unshare-user --disable-userns --
            "$CODECODER_BIN" exec --json -a never -c 'sandbox.backend="landlock"' "run the probe")
    fi
    local status=0
    (cd "$dir/ws" && env -i PATH="$PATH" HOME="$dir/home" CODECODER_HOME="$dir/cchome" \
        OPENAI_BASE_URL="$base_url/v1" OPENAI_API_KEY=sk-probe timeout 60 "${cmd[@]}") \
        >"$dir/out" 2>&1 </dev/null || status=$?
    echo "$status" >"$dir/status"
    if [[ -n $model_pid ]]; then
        kill "$model_pid" 2>/dev/null || true
        wait "$model_pid" 2>/dev/null || true
    fi
}

# A file probe's verdict: the content left behind (a non-empty $2) is an escape; a write the
# command saw succeed ("WROTE") whose result is gone was undone after the command; otherwise
# the write failed. An empty leftover ($3, an empty file or directory where the runtime put a
# mount point) is said too.
written() {
    local dir=$1 content=$2 leftover=${3:-$2}
    if [[ -s $content ]]; then echo ESCAPED
    elif grep -q WROTE "$dir/out"; then echo "written, removed after"
    elif [[ -e $leftover ]]; then echo "blocked (left an empty ${leftover##*/ws/})"
    else echo blocked; fi
}

# What the host saw: "ESCAPED" / "blocked" for an escape, "reached" / "refused" for a host the
# policy allows (reaching it is the point).
verdict() {
    local name=$1 dir=$2 before=$3 seen
    seen=$(tail -n +"$((before + 1))" "$LOG")
    # A run that did not get to run the probe says nothing about the sandbox.
    if [[ $(cat "$dir/status") == 124 ]]; then
        echo "(timed out)"
        return
    fi
    if [[ -e $dir/script.json ]] && ! grep -q '"type":"item.completed","item":{"id":"[^"]*","type":"command_execution"' "$dir/out"; then
        echo "(the command did not run)"
        return
    fi
    case $name in
        tcp-loopback | tcp-raw-ip | abstract-unix)
            grep -q "$name" <<<"$seen" && echo ESCAPED || echo blocked ;;
        udp-dns) grep -q '^udp ' <<<"$seen" && echo ESCAPED || echo blocked ;;
        tcp-proxy-port-elsewhere)
            grep -q HOST-ANSWERED "$dir/out" && echo "ESCAPED (the host answered)" || echo blocked ;;
        proxy-allowed | proxy-connect-allowed | socks-allowed)
            grep -q 'HTTP-OK allowed.test' "$dir/out" && echo reached || echo refused ;;
        proxy-allowed-loopback)
            grep -q 'HTTP-OK local.test' "$dir/out" && echo reached || echo refused ;;
        proxy-denied | socks-denied)
            grep -q '^http denied.test' <<<"$seen" && echo ESCAPED || echo blocked ;;
        proxy-raw-ip) grep -q "^http $RAW_IP" <<<"$seen" && echo ESCAPED || echo blocked ;;
        direct-allowed) grep -q '^http ' <<<"$seen" && echo ESCAPED || echo blocked ;;
        write-git-hooks) written "$dir" "$dir/ws/.git/hooks/x" ;;
        write-git-config)
            if grep -q hooksPath "$dir/ws/.git/config"; then echo ESCAPED
            else written "$dir" /nonexistent; fi ;;
        write-global-hooks-path) written "$dir" "$dir/ws/.githooks/pre-commit" ;;
        create-git) written "$dir" "$dir/ws/.git/hooks/pre-commit" "$dir/ws/.git" ;;
        create-mcp-json) written "$dir" "$dir/ws/.mcp.json" ;;
        create-claude-settings) written "$dir" "$dir/ws/.claude/settings.json" ;;
        read-ssh-key) grep -q "$FAKE_KEY" "$dir/out" && echo ESCAPED || echo blocked ;;
    esac
}

declare -A label=(
    [tcp-loopback]="TCP connect to a host listener on 127.0.0.1"
    [tcp-raw-ip]="TCP connect to a raw IP ($RAW_IP)"
    [tcp-proxy-port-elsewhere]="TCP connect to $RAW_IP on the proxy's port"
    [udp-dns]="UDP DNS query to $RAW_IP:53"
    [abstract-unix]="connect to a host abstract unix socket"
    [proxy-allowed]="HTTP via the proxy, allowed host"
    [proxy-connect-allowed]="HTTP CONNECT via the proxy, allowed host"
    [proxy-allowed-loopback]="HTTP via the proxy, allowed host resolving to 127.0.0.1"
    [socks-allowed]="SOCKS5 via the proxy, allowed host"
    [socks-denied]="SOCKS5 via the proxy, denied host"
    [proxy-denied]="HTTP via the proxy, denied host"
    [proxy-raw-ip]="HTTP via the proxy, unlisted raw IP"
    [direct-allowed]="HTTP to an allowed host bypassing the proxy"
    [write-git-hooks]="write .git/hooks/x"
    [write-git-config]="git config core.hooksPath (.git/config)"
    [write-global-hooks-path]="write the hooks directory named by the global core.hooksPath"
    [create-git]="create a missing .git"
    [create-mcp-json]="create a missing .mcp.json"
    [create-claude-settings]="create a missing .claude/settings.json"
    [read-ssh-key]="read ~/.ssh/id_rsa"
)
order=(tcp-loopback tcp-raw-ip tcp-proxy-port-elsewhere udp-dns abstract-unix proxy-allowed
    proxy-connect-allowed proxy-allowed-loopback socks-allowed proxy-denied socks-denied
    proxy-raw-ip direct-allowed write-git-hooks write-git-config write-global-hooks-path
    create-git create-mcp-json create-claude-settings read-ssh-key)
# The unconfined column is the control: there every escape must get through, so a "blocked"
# elsewhere is the sandbox's doing and not a broken probe.
runtimes=(unconfined sandbox-bwrap sandbox-landlock exec-bwrap exec-landlock
    exec-landlock-fallback srt)
# PROBE_ONLY / PROBE_RUNTIMES (space-separated names) narrow a run, to look at one case.
if [[ -n ${PROBE_ONLY:-} ]]; then read -r -a order <<<"$PROBE_ONLY"; fi
if [[ -n ${PROBE_RUNTIMES:-} ]]; then read -r -a runtimes <<<"$PROBE_RUNTIMES"; fi

declare -A column=(
    [unconfined]="unconfined (control)"
    [sandbox-bwrap]="\`codecoder sandbox\` bwrap"
    [sandbox-landlock]="\`codecoder sandbox\` Landlock"
    [exec-bwrap]="\`codecoder exec\` bwrap"
    [exec-landlock]="\`codecoder exec\` Landlock"
    [exec-landlock-fallback]="\`codecoder exec\` Landlock, no namespaces"
    [srt]="srt $SRT_VERSION"
)
header="| probe |"
rule="| --- |"
for runtime in "${runtimes[@]}"; do
    header+=" ${column[$runtime]} |"
    rule+=" --- |"
done
echo "$header"
echo "$rule"
for name in "${order[@]}"; do
    row="| ${label[$name]} |"
    for runtime in "${runtimes[@]}"; do
        kind=repo
        if [[ $name == create-git ]]; then kind=bare; fi
        dir=$(fresh "$kind")
        before=$(wc -l <"$LOG")
        run_under "$runtime" "$name" "$dir"
        result=$(verdict "$name" "$dir" "$before")
        row+=" $result |"
        if [[ -n ${PROBE_VERBOSE:-} ]]; then
            echo "--- $runtime $name: $result" >&2
            sed 's/^/    /' "$dir/out" >&2
        fi
    done
    echo "$row"
done
