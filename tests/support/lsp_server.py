#!/usr/bin/env python3
"""A small language server for fen's tests (stdlib only), on stdio with Content-Length framing.

Every line containing ERR gets an error diagnostic "found ERR: <line text>", every line with
WARN a warning, published after didOpen/didChange (with the document version), or answered to
textDocument/diagnostic with --pull. Flags:
  --no-init        never answer anything (a hung server)
  --silent         answer initialize, never send diagnostics
  --crash-on WORD  exit 1 when a change makes a document's text contain WORD
  --pidfile FILE   append this process's pid (one line per start)
  --env-out FILE   write this process's environment as JSON
  --pull           offer pull diagnostics instead of publishing
  --texts FILE     append every text a document gets (didOpen, didChange) as one JSON line,
                   and "<shutdown>" when asked to shut down
"""
import json
import os
import sys

args = sys.argv[1:]


def flag(name):
    return name in args


def value(name):
    if name in args:
        i = args.index(name)
        if i + 1 < len(args):
            return args[i + 1]
    return None


if value("--pidfile"):
    with open(value("--pidfile"), "a") as f:
        f.write("%d\n" % os.getpid())
if value("--env-out"):
    with open(value("--env-out"), "w") as f:
        json.dump(dict(os.environ), f)

inp = sys.stdin.buffer
out = sys.stdout.buffer
crash_word = value("--crash-on")
docs = {}


def read():
    length = None
    while True:
        line = inp.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            if length is not None:
                break
            continue
        k, _, v = line.decode().partition(":")
        if k.lower() == "content-length":
            length = int(v.strip())
    return json.loads(inp.read(length))


def send(msg):
    msg["jsonrpc"] = "2.0"
    body = json.dumps(msg).encode()
    out.write(b"Content-Length: %d\r\n\r\n" % len(body))
    out.write(body)
    out.flush()


def diagnostics(text):
    items = []
    for n, line in enumerate(text.split("\n")):
        for word, sev in (("ERR", 1), ("WARN", 2)):
            col = line.find(word)
            if col >= 0:
                items.append({
                    "range": {"start": {"line": n, "character": col},
                              "end": {"line": n, "character": col + len(word)}},
                    "severity": sev,
                    "source": "fake",
                    "message": "found %s: %s" % (word, line.strip()),
                })
    return items


def changed(uri, version, text, change):
    if change and crash_word and crash_word in text:
        sys.exit(1)
    docs[uri] = text
    if value("--texts"):
        with open(value("--texts"), "a") as f:
            f.write(json.dumps(text) + "\n")
    if flag("--silent") or flag("--pull"):
        return
    send({"method": "textDocument/publishDiagnostics",
          "params": {"uri": uri, "version": version, "diagnostics": diagnostics(text)}})


while True:
    msg = read()
    if msg is None:
        break
    if flag("--no-init"):
        continue
    method = msg.get("method")
    params = msg.get("params") or {}
    if method == "initialize":
        caps = {"textDocumentSync": 1, "definitionProvider": True}
        if flag("--pull"):
            caps["diagnosticProvider"] = {"interFileDependencies": False, "workspaceDiagnostics": False}
        send({"id": msg["id"], "result": {"capabilities": caps, "serverInfo": {"name": "fake"}}})
    elif method == "shutdown":
        if value("--texts"):
            with open(value("--texts"), "a") as f:
                f.write(json.dumps("<shutdown>") + "\n")
        send({"id": msg["id"], "result": None})
    elif method == "exit":
        sys.exit(0)
    elif method == "textDocument/didOpen":
        d = params["textDocument"]
        changed(d["uri"], d["version"], d["text"], False)
    elif method == "textDocument/didChange":
        d = params["textDocument"]
        changed(d["uri"], d["version"], params["contentChanges"][-1]["text"], True)
    elif method == "textDocument/diagnostic":
        text = docs.get(params["textDocument"]["uri"], "")
        send({"id": msg["id"], "result": {"kind": "full", "items": diagnostics(text)}})
    elif method == "textDocument/definition":
        send({"id": msg["id"], "result": {"uri": params["textDocument"]["uri"],
              "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}}})
    elif "id" in msg and method is not None:
        send({"id": msg["id"], "error": {"code": -32601, "message": "unknown method"}})
