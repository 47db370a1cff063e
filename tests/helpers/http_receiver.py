#!/usr/bin/env python3
"""http_receiver.py — a small HTTP receiver for the publish tests.

  http_receiver.py PORTFILE LOGFILE [--fail-first N [--fail-status S]] [--bulk-item-429 K] [--tls CERT KEY]

Listens on 127.0.0.1 (a free port, written to PORTFILE once ready) and
appends one JSON line per request to LOGFILE:
  {"path": ..., "ct": content type, "body": text, "status": answered}.
The first N requests are answered 503 (or S) to exercise retries.  POST .../_bulk
is a fake Elasticsearch bulk endpoint: the NDJSON framing is checked strictly
(a body ending in a newline, action and document lines alternating, every
action an {"index": {"_index": ..., "_id": ...}}, every document a JSON
object) and a bad body gets 400; a good one gets Elasticsearch's answer shape.
With --bulk-item-429 K the K-th document of the first bulk request is
answered 429 inside a 200 response, as a busy cluster does.
"""
import json, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

portfile, logfile = sys.argv[1], sys.argv[2]
args = sys.argv[3:]
fail_first = int(args[args.index("--fail-first") + 1]) if "--fail-first" in args else 0
fail_status = int(args[args.index("--fail-status") + 1]) if "--fail-status" in args else 503
item_429 = int(args[args.index("--bulk-item-429") + 1]) if "--bulk-item-429" in args else -1
lock = threading.Lock()
count = {"n": 0, "bulk": 0}


def check_bulk(body):
    if not body.endswith("\n"):
        return "body does not end with a newline"
    lines = body[:-1].split("\n")
    if len(lines) % 2:
        return "odd number of lines"
    docs = []
    for i in range(0, len(lines), 2):
        try:
            action, doc = json.loads(lines[i]), json.loads(lines[i + 1])
        except Exception as e:
            return "line %d: not JSON: %s" % (i + 1, e)
        if list(action) != ["index"] or not isinstance(action["index"].get("_index"), str) \
                or not isinstance(action["index"].get("_id"), str):
            return "line %d: bad action %r" % (i + 1, action)
        if not isinstance(doc, dict):
            return "line %d: document is not an object" % (i + 2)
        docs.append(doc)
    return docs


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def answer(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode("utf-8", "replace")
        with lock:
            count["n"] += 1
            n = count["n"]
        status, reply = 200, {"ok": True}
        if n <= fail_first:
            status, reply = fail_status, {"error": "not now"}
        elif self.path.split("?")[0].endswith("/_bulk"):
            docs = check_bulk(body)
            if isinstance(docs, str):
                status, reply = 400, {"error": docs}
            else:
                with lock:
                    count["bulk"] += 1
                    first = count["bulk"] == 1
                items = [{"index": {"status": 201}} for _ in docs]
                if first and 0 <= item_429 < len(items):
                    items[item_429] = {"index": {"status": 429, "error": {"reason": "busy"}}}
                reply = {"took": 1, "errors": any(i["index"]["status"] >= 300 for i in items), "items": items}
        with lock, open(logfile, "a") as f:
            f.write(json.dumps({"path": self.path, "ct": self.headers.get("Content-Type"),
                                "auth": self.headers.get("Authorization"), "body": body,
                                "status": status}) + "\n")
        self.answer(status, reply)


srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
if "--tls" in args:          # --tls CERT KEY: HTTPS
    import ssl
    i = args.index("--tls")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args[i + 1], args[i + 2])
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
with open(portfile + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
import os
os.rename(portfile + ".tmp", portfile)
srv.serve_forever()
