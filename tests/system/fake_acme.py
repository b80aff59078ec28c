"""A hostile or broken ACME CA for bareweb's ACME tests, over HTTPS on 0.0.0.0:14000:

    python3 fake_acme.py SCENARIO CERT KEY LOG [OTHER_CHAIN]

It logs one line per request (`METHOD PATH`) to LOG. Scenarios:

- `malformed`: the directory is not JSON;
- `badnonce`: every newAccount is refused with badNonce;
- `ratelimit`: newAccount is refused with 429 and Retry-After: 3600;
- `silent`: TCP connections are taken and never answered (no TLS either);
- `wrongkey`: a whole order that ends in OTHER_CHAIN, a certificate for the name with
  another key than the one the CSR was made with.

No JWS is checked: the client under test is what is tested."""
import http.server
import json
import socket
import ssl
import sys
import threading
import time

SCENARIO, CERT, KEY, LOG = sys.argv[1:5]
OTHER = sys.argv[5] if len(sys.argv) > 5 else None
HOST = "10.0.0.1:14000"
U = f"https://{HOST}"
log_lock = threading.Lock()


def log(line):
    with log_lock, open(LOG, "a") as f:
        f.write(line + "\n")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, status, body=b"", ctype="application/json", headers=()):
        self.send_response(status)
        self.send_header("Replay-Nonce", f"n{time.monotonic_ns()}")
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def problem(self, status, kind, detail, headers=()):
        body = json.dumps({"type": f"urn:ietf:params:acme:error:{kind}", "detail": detail})
        self.send(status, body.encode(), "application/problem+json", headers)

    def route(self):
        log(f"{self.command} {self.path}")
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        p = self.path
        if p == "/dir":
            if SCENARIO == "malformed":
                return self.send(200, b'{"newNonce": "https://10.0.0.1:14000/nonce", "newAcc')
            return self.send(200, json.dumps({
                "newNonce": f"{U}/nonce", "newAccount": f"{U}/acct",
                "newOrder": f"{U}/order"}).encode())
        if p == "/nonce":
            return self.send(200)
        if p == "/acct":
            if SCENARIO == "badnonce":
                return self.problem(400, "badNonce", "that nonce is stale")
            if SCENARIO == "ratelimit":
                return self.problem(429, "rateLimited", "too many new accounts",
                                    headers=[("Retry-After", "3600")])
            return self.send(201, b'{"status": "valid"}', headers=[("Location", f"{U}/acct/1")])
        order = {"status": "ready", "identifiers": [{"type": "dns", "value": "site.test"}],
                 "authorizations": [f"{U}/authz/1"], "finalize": f"{U}/finalize/1"}
        if p == "/order":
            return self.send(201, json.dumps(order).encode(),
                             headers=[("Location", f"{U}/order/1")])
        if p in ("/finalize/1", "/order/1"):
            order.update(status="valid", certificate=f"{U}/cert/1")
            return self.send(200, json.dumps(order).encode())
        if p == "/cert/1":
            with open(OTHER, "rb") as f:
                return self.send(200, f.read(), "application/pem-certificate-chain")
        return self.problem(404, "malformed", "no such resource")

    do_GET = do_HEAD = do_POST = route


def silent():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", 14000))
    s.listen(16)
    held = []
    while True:
        c, _ = s.accept()
        log("CONNECT")
        held.append(c)


def main():
    if SCENARIO == "silent":
        return silent()
    srv = http.server.ThreadingHTTPServer(("0.0.0.0", 14000), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(CERT, KEY)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
