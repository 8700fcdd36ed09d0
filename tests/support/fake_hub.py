#!/usr/bin/env python3
"""A local stand-in for the Hugging Face Hub over HTTPS, for the hub tests (tests/hub, tests/tools).

Serves the repos under --root (<root>/<org>/<repo>/<files>) on two HTTPS servers bound to
127.0.0.1: the hub (the file list and /resolve/) and a "CDN" that the hub redirects some repos to,
reached as https://localhost:<port> (the certificate's SAN covers 127.0.0.1 and localhost). The
CA and server certificate are made at start-up with the openssl CLI into --certs (ca.pem).
Prints "READY <hub port> <cdn port>" once both listen. Every request is logged as one JSON line
to <certs>/requests.log.

Behaviour per repo or file comes from --config (JSON):
  gated:      {"org/repo": "token"}   /resolve/ without "Authorization: Bearer token" -> 401
  cut_after:  {"org/repo/file": N}    the first GET of the file sends N bytes, then drops the connection
  lie_sha:    ["org/repo/file"]       the file list reports a wrong sha256
  lie_size:   {"org/repo/file": N}    the file list reports N bytes
  redirect:   ["org/repo"]            /resolve/ answers 302 to the CDN host
  loop:       ["org/repo"]            /resolve/ redirects to itself forever
  malformed:  ["org/repo"]            the file list is not JSON
  page_size:  N                       the file list comes in pages of N entries (Link: rel="next")
  page_elsewhere: true                those Link headers point to the CDN host
The CDN refuses requests that carry an Authorization header (the token must not leak there).
"""
import argparse
import hashlib
import http.server
import json
import os
import ssl
import subprocess
import sys
import threading
import urllib.parse

LOCK = threading.Lock()
CUT_DONE = set()


def make_certs(d):
    def run(*args):
        subprocess.run(["openssl", *args], check=True, cwd=d, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    run("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=ggufd test CA",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    run("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost")
    with open(os.path.join(d, "ext.cnf"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
                "keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n")
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "server.pem", "-days", "2", "-extfile", "ext.cnf")


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 16), b""):
            h.update(chunk)
    return h.hexdigest()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    role = "hub"
    cfg = {}
    root = ""
    log_path = ""
    cdn_port = 0

    def log_message(self, *args):
        pass

    def log_request_json(self, path):
        entry = {"server": self.role, "path": path, "range": self.headers.get("Range", ""),
                 "auth": self.headers.get("Authorization", "")}
        with LOCK, open(self.log_path, "a") as f:
            f.write(json.dumps(entry) + "\n")

    def reply(self, status, body=b"", headers=None):
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(url.path)
        self.log_request_json(path)
        parts = path.strip("/").split("/")
        if self.role == "cdn":
            if self.headers.get("Authorization"):
                return self.reply(400, b"Authorization header sent to the CDN")
            if parts[0] == "cdn" and len(parts) >= 4:
                return self.send_file("/".join(parts[1:3]), "/".join(parts[3:]))
        elif parts[:2] == ["api", "models"] and len(parts) >= 6 and parts[4] == "tree":
            cursor = int(urllib.parse.parse_qs(url.query).get("cursor", ["0"])[0])
            return self.tree("/".join(parts[2:4]), cursor)
        elif len(parts) >= 5 and parts[2:4] == ["resolve", "main"]:
            return self.resolve("/".join(parts[:2]), "/".join(parts[4:]))
        self.reply(404, b'{"error":"Not found"}')

    def tree(self, repo, cursor):
        base = os.path.join(self.root, repo)
        if not os.path.isdir(base):
            return self.reply(404, b'{"error":"Repository not found"}')
        if repo in self.cfg.get("malformed", []):
            return self.reply(200, b'[{"type": "file", "path": "x.gguf", "size": 12', {"Content-Type": "application/json"})
        out = []
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            for name in sorted(filenames):
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, base)
                key = repo + "/" + rel
                size = self.cfg.get("lie_size", {}).get(key, os.path.getsize(full))
                sha = sha256_of(full)
                if key in self.cfg.get("lie_sha", []):
                    sha = hashlib.sha256(b"not the file").hexdigest()
                out.append({"type": "file", "path": rel, "size": size, "oid": hashlib.sha1(rel.encode()).hexdigest(),
                            "lfs": {"oid": sha, "size": size, "pointerSize": 134}})
        headers = {"Content-Type": "application/json"}
        size = self.cfg.get("page_size")
        if size:
            if cursor + size < len(out):
                host = "localhost:%d" % self.cdn_port if self.cfg.get("page_elsewhere") else \
                    "127.0.0.1:%d" % self.server.server_address[1]
                headers["Link"] = '<https://%s/api/models/%s/tree/main?recursive=true&cursor=%d>; rel="next"' % (
                    host, repo, cursor + size)
            out = out[cursor:cursor + size]
        self.reply(200, json.dumps(out).encode(), headers)

    def resolve(self, repo, rel):
        want = self.cfg.get("gated", {}).get(repo)
        if want is not None and self.headers.get("Authorization") != "Bearer " + want:
            return self.reply(401, b'{"error":"Access to model ' + repo.encode() + b' is restricted."}')
        if repo in self.cfg.get("loop", []):
            return self.reply(302, b"", {"Location": self.path})
        if repo in self.cfg.get("redirect", []):
            loc = "https://localhost:%d/cdn/%s/%s?X-Amz-Signature=abc" % (self.cdn_port, repo, rel)
            return self.reply(302, b"", {"Location": loc})
        self.send_file(repo, rel)

    def send_file(self, repo, rel):
        full = os.path.join(self.root, repo, rel)
        if ".." in rel.split("/") or not os.path.isfile(full):
            return self.reply(404, b'{"error":"Entry not found"}')
        with open(full, "rb") as f:
            data = f.read()
        start = 0
        rng = self.headers.get("Range", "")
        if rng.startswith("bytes=") and rng.endswith("-"):
            start = int(rng[6:-1])
            if start >= len(data):
                return self.reply(416, b"", {"Content-Range": "bytes */%d" % len(data)})
        self.send_response(206 if start else 200)
        if start:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
        self.send_header("Content-Length", str(len(data) - start))
        self.end_headers()
        key = repo + "/" + rel
        cut = self.cfg.get("cut_after", {}).get(key)
        with LOCK:
            first = key not in CUT_DONE
            CUT_DONE.add(key)
        if cut is not None and first:
            self.wfile.write(data[start:start + cut])
            self.wfile.flush()
            self.close_connection = True
            self.connection.close()
            return
        self.wfile.write(data[start:])


def serve(role, cfg, args, context):
    handler = type(role + "Handler", (Handler,), {"role": role, "cfg": cfg, "root": args.root,
                                                    "log_path": os.path.join(args.certs, "requests.log")})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    server.handle_error = lambda request, address: None  # cut connections and refused handshakes
    server.socket = context.wrap_socket(server.socket, server_side=True)
    return server, handler


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--root", required=True)
    p.add_argument("--certs", required=True)
    p.add_argument("--config", default="")
    args = p.parse_args()
    cfg = json.load(open(args.config)) if args.config else {}
    make_certs(args.certs)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(os.path.join(args.certs, "server.pem"), os.path.join(args.certs, "server.key"))
    hub, hub_handler = serve("hub", cfg, args, context)
    cdn, _ = serve("cdn", cfg, args, context)
    hub_handler.cdn_port = cdn.server_address[1]
    threading.Thread(target=cdn.serve_forever, daemon=True).start()
    print("READY %d %d" % (hub.server_address[1], cdn.server_address[1]), flush=True)
    try:
        hub.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
