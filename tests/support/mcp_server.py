#!/usr/bin/env python3
"""A small MCP server for fen's tests (stdlib only): JSON-RPC over stdio (newline-delimited)
or over streamable HTTP (POST /mcp answered with application/json; no server-sent stream).

Options:
  --http PORTFILE        serve HTTP on 127.0.0.1 (a free port, written to PORTFILE)
  --port N               that port instead of a free one
  --sleep-before-init S  wait S seconds before answering `initialize`
  --long                 add a tool with an 81-character name (a.b.a.b...)
  --many N --pad B       add N tools whose descriptions are B bytes each
  --pidfile PATH         write the process id there at start
Tools: echo{text}, fail{}, pid{}, slow{seconds}, env{name}, peek{} (readOnlyHint).
Every start writes noise to stderr and tries /dev/tty (neither may reach fen's terminal).
"""
import json
import os
import sys
import time

args = sys.argv[1:]


def opt(name, default=None):
    if name in args:
        i = args.index(name)
        return args[i + 1] if i + 1 < len(args) else default
    return default


SLEEP = float(opt("--sleep-before-init", "0"))
MANY = int(opt("--many", "0"))
PAD = int(opt("--pad", "100"))

TOOLS = [
    {"name": "echo", "description": "Echo the text back.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    {"name": "fail", "description": "Always fails.", "inputSchema": {"type": "object", "properties": {}}},
    {"name": "pid", "description": "The server's process id.", "inputSchema": {"type": "object"}},
    {"name": "slow", "description": "Sleeps.",
     "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}}},
    {"name": "env", "description": "One environment variable of the server.",
     "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}}},
    {"name": "peek", "description": "Reads nothing, changes nothing.",
     "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
]
if "--long" in args:
    TOOLS.append({"name": "a.b" * 27, "description": "A tool with a long name.",
                  "inputSchema": {"type": "object"}})
for i in range(MANY):
    TOOLS.append({"name": "bulk_%d" % i,
                  "description": ("widget number %d " % i) + "x" * PAD,
                  "inputSchema": {"type": "object", "properties": {"q": {"type": "string", "description": "y" * PAD}}}})


def text(t, is_error=False):
    return {"content": [{"type": "text", "text": t}], "isError": is_error}


def call(name, a):
    if name == "echo":
        return text("echo: " + str(a.get("text", "")))
    if name == "fail":
        return text("it broke", True)
    if name == "pid":
        return text(str(os.getpid()))
    if name == "slow":
        time.sleep(float(a.get("seconds", 1)))
        return text("slept")
    if name == "env":
        return text(os.environ.get(a.get("name", ""), "<unset>"))
    if name == "peek":
        return text("peeked")
    if name.startswith("bulk_") or name.startswith("a.b"):
        return text("ran " + name)
    return None


def handle(msg):
    """The response to one message (None for notifications)."""
    if "id" not in msg or "method" not in msg:
        return None
    mid, method, params = msg["id"], msg["method"], msg.get("params") or {}
    if method == "initialize":
        if SLEEP:
            time.sleep(SLEEP)
        result = {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                  "capabilities": {"tools": {}},
                  "serverInfo": {"name": "fake", "version": "1.0"}}
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        result = call(params.get("name"), params.get("arguments") or {})
        if result is None:
            return {"jsonrpc": "2.0", "id": mid, "error": {"code": -32602, "message": "unknown tool"}}
    else:
        return {"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "no method " + method}}
    return {"jsonrpc": "2.0", "id": mid, "result": result}


def noise():
    sys.stderr.write("fake mcp server: STDERR-NOISE starting\n")
    sys.stderr.flush()
    try:
        with open("/dev/tty", "w") as tty:
            tty.write("fake mcp server: TTY-NOISE\n")
    except OSError:
        pass


def serve_stdio():
    noise()
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        out = handle(msg)
        if out is not None:
            sys.stdout.write(json.dumps(out) + "\n")
            sys.stdout.flush()


def serve_http(portfile):
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            sys.stderr.write("http: " + (a[0] % a[1:]) + "\n")

        def _send(self, code, body=b"", ctype=None, extra=()):
            self.send_response(code)
            if ctype:
                self.send_header("Content-Type", ctype)
            for k, v in extra:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            n = int(self.headers.get("Content-Length") or 0)
            try:
                msg = json.loads(self.rfile.read(n) or b"{}")
            except ValueError:
                return self._send(400, b"bad json")
            out = handle(msg)
            if out is None:
                return self._send(202)
            extra = [("Mcp-Session-Id", "s-1")] if msg.get("method") == "initialize" else []
            self._send(200, json.dumps(out).encode(), "application/json", extra)

        def do_GET(self):
            self._send(405)

        def do_DELETE(self):
            self._send(200)

    srv = ThreadingHTTPServer(("127.0.0.1", int(opt("--port", "0"))), H)
    tmp = portfile + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(tmp, portfile)
    noise()
    srv.serve_forever()


if __name__ == "__main__":
    if opt("--pidfile"):
        with open(opt("--pidfile"), "w") as f:
            f.write(str(os.getpid()))
    if opt("--http"):
        serve_http(opt("--http"))
    else:
        serve_stdio()
