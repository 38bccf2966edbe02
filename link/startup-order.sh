#!/usr/bin/env bash
# Writes link/startup-order.txt: the functions a release fen runs in its small start-up runs, in
# the order build.rs places them (a linker script: an output section before .text), so that they
# sit together. Without the ordering they are spread over the whole 20 MB of
# code and the kernel's fault-around maps 64 KB for each: most of a short run's peak RSS.
#
# Run after a toolchain or dependency update, or when start-up runs new code (symbol names carry
# crate hashes that change then; names the linker no longer finds are skipped, so a stale list
# costs RSS, never correctness):
#   cargo build --release && link/startup-order.sh
# Needs valgrind (callgrind) and python3 (a local SSE server for the streamed run).
set -euo pipefail
cd "$(dirname "$0")/.."
fen=$(realpath "${1:-${CARGO_TARGET_DIR:-target}/release/fen}")
out=link/startup-order.txt
tmp=$(mktemp -d)
trap 'kill $server 2>/dev/null || true; rm -rf "$tmp"' EXIT
server=

home=$tmp/home
mkdir -p "$home/work/src"
for f in README.md Cargo.toml src/main.rs; do echo x >"$home/work/$f"; done
echo '[{"tool_calls": [{"name": "ls", "arguments": {}}]}, {"text": "done"}]' >"$tmp/one-ls.json"

# An OpenAI chat stream of 2,000 deltas for every POST.
python3 - "$tmp/port" <<'PY' &
import http.server, json, sys
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_POST(self):
        self.rfile.read(int(self.headers.get('content-length', 0)))
        self.send_response(200)
        self.send_header('content-type', 'text/event-stream')
        self.end_headers()
        for i in range(2000):
            d = {"id": "c", "object": "chat.completion.chunk", "model": "m",
                 "choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": None}]}
            self.wfile.write(b"data: " + json.dumps(d).encode() + b"\n\n")
        d = {"id": "c", "object": "chat.completion.chunk", "model": "m",
             "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
             "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
        self.wfile.write(b"data: " + json.dumps(d).encode() + b"\n\ndata: [DONE]\n\n")
s = http.server.HTTPServer(('127.0.0.1', 0), H)
open(sys.argv[1], 'w').write(str(s.server_address[1]))
s.serve_forever()
PY
server=$!
for _ in $(seq 50); do [ -s "$tmp/port" ] && break; sleep 0.1; done
url="http://127.0.0.1:$(cat "$tmp/port")/v1"

n=0
profile() {
  n=$((n + 1))
  (cd "$home/work" && env -u FEN_EXTENSIONS_PATH -u FEN_EXTENSION_ROOT -u FEN_MOCK_SCRIPT \
    HOME="$home" XDG_CONFIG_HOME="$home/config" XDG_STATE_HOME="$home/state" \
    XDG_DATA_HOME="$home/data" OPENAI_API_KEY=profile \
    valgrind --tool=callgrind --demangle=no --callgrind-out-file="$tmp/cg.$n" \
    "$fen" "$@" </dev/null >/dev/null 2>&1) || { echo "profiling failed: fen $*" >&2; exit 1; }
}
# Cheapest first: each run's new functions follow the ones the runs before it needed.
profile --version
profile list tools --json
profile -p "list the files" --mock-script "$tmp/one-ls.json" --no-session
profile -p "list the files" --mock-script "$tmp/one-ls.json"
profile -p "list the files" --mock-script "$tmp/one-ls.json" --no-session --mode json
profile -p "stream" --provider openai --model m --base-url "$url" --no-session

# Function names in first-seen order, fen's own symbols only (callgrind marks recursion
# levels with 'N; the linker wants the plain name).
python3 - "$fen" "$out" "$tmp"/cg.{1..6} <<'PY'
import re, subprocess, sys
fen, out, files = sys.argv[1], sys.argv[2], sys.argv[3:]
nm = subprocess.run(['nm', '--defined-only', fen], capture_output=True, text=True, check=True).stdout
text = {p[2] for p in (l.split() for l in nm.splitlines()) if len(p) == 3 and p[1] in 'tT'}
seen, order = set(), []
for f in files:
    for line in open(f, errors='replace'):
        m = re.match(r"^c?fn=\(\d+\) (.+)$", line)
        if m:
            name = re.sub(r"'\d+$", '', m.group(1).strip())
            if name in text and name not in seen:
                seen.add(name)
                order.append(name)
open(out, 'w').write(''.join(n + '\n' for n in order))
print(f'{out}: {len(order)} functions')
PY
