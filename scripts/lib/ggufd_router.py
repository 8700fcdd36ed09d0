"""Helpers of scripts/soak-router and scripts/bench-switch (Python 3 standard library only).

Server: one `ggufd serve` child process on a free loopback port, its log in a file, its RSS.
request / stream: one HTTP request each, on a connection of its own; stream() reads an SSE reply
and can drop the connection after a number of events (a client that goes away mid-stream).
model_states / gauges: GET /v1/models (id -> status) and GET /metrics (Prometheus text) parsed.
Nothing here is shared between threads except a Server, whose methods only read.
"""
import http.client
import json
import os
import signal
import socket
import subprocess
import time

HOST = "127.0.0.1"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def shared_dir():
    """The test data: $GGUFD_SHARED_DIR, else ../shared beside the checkout (or beside its parent,
    for a git worktree one level further down)."""
    if os.environ.get("GGUFD_SHARED_DIR"):
        return os.environ["GGUFD_SHARED_DIR"]
    for up in ("..", os.path.join("..", "..")):
        path = os.path.normpath(os.path.join(ROOT, up, "shared"))
        if os.path.isdir(os.path.join(path, "models")):
            return path
    return os.path.normpath(os.path.join(ROOT, "..", "shared"))


def default_binary():
    """build-release's ggufd when it exists (the benchmark build), else build's."""
    for build in ("build-release", "build"):
        path = os.path.join(ROOT, build, "tools", "ggufd", "ggufd")
        if os.path.exists(path):
            return path
    return os.path.join(ROOT, "build", "tools", "ggufd", "ggufd")


def free_port():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


class Server:
    """`ggufd serve ARGS --host 127.0.0.1 --port P`; stop() ends it (SIGTERM, then SIGKILL).
    subcommand=(): a server without one (llama-server, as a peer)."""

    def __init__(self, binary, args, log_path, subcommand=("serve",)):
        self.port = free_port()
        self.name = os.path.basename(binary)
        self.log_path = log_path
        self.log = open(log_path, "w")
        cmd = [binary, *subcommand, *args, "--host", HOST, "--port", str(self.port)]
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)

    def wait_ready(self, seconds=120):
        """Until GET /health and GET /v1/models both answer 200; raises if the process exits."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode} during start-up:\n{self.log_tail()}")
            try:
                if request(self.port, "GET", "/health", timeout=2)[0] == 200 and \
                        request(self.port, "GET", "/v1/models", timeout=2)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"{self.name} not ready after {seconds} s:\n{self.log_tail()}")

    def alive(self):
        return self.proc.poll() is None

    def rss_kib(self):
        """VmRSS of the server process in KiB (None once it has exited)."""
        try:
            with open(f"/proc/{self.proc.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except OSError:
            return None
        return None

    def log_tail(self, lines=30):
        self.log.flush()
        with open(self.log_path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=45)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode


def request(port, method, path, body=None, timeout=120):
    """One request; returns (status, {lower-case header: value}, body bytes)."""
    c = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        c.request(method, path, json.dumps(body) if body is not None else None, headers)
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


def stream(port, path, body, abort_after=None, timeout=120):
    """POSTs a streamed request and reads its SSE events.

    abort_after: drop the connection after that many data events (0: right after the headers).
    Returns {"status", "retry_after", "events", "first_event_s" (from sending to the first data
    event), "done" ([DONE] seen), "aborted", "error" (an error event's or a non-200 body's JSON)}.
    """
    out = {"status": None, "retry_after": None, "events": 0, "first_event_s": None, "done": False,
           "aborted": False, "error": None}
    c = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        t0 = time.monotonic()
        c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        sock = c.sock  # getresponse() hands it to the response when the server will close
        r = c.getresponse()
        out["status"], out["retry_after"] = r.status, r.getheader("Retry-After")
        if r.status != 200:
            out["error"] = parse_json(r.read())
            return out
        buf = b""
        while True:
            if abort_after is not None and out["events"] >= abort_after:
                out["aborted"] = True
                sock.shutdown(socket.SHUT_RDWR)
                return out
            chunk = r.read1(65536)
            if not chunk:
                return out
            buf += chunk
            while b"\n\n" in buf:
                event, buf = buf.split(b"\n\n", 1)
                data = b"\n".join(line[5:].strip() for line in event.split(b"\n") if line.startswith(b"data:"))
                if not data:
                    continue
                if data == b"[DONE]":
                    out["done"] = True
                    continue
                if out["first_event_s"] is None:
                    out["first_event_s"] = time.monotonic() - t0
                out["events"] += 1
                parsed = parse_json(data)
                if isinstance(parsed, dict) and "error" in parsed:
                    out["error"] = parsed
    finally:
        c.close()


def send_and_drop(port, path, body, delay_s):
    """Sends a request and closes the connection delay_s later without reading the reply."""
    c = http.client.HTTPConnection(HOST, port, timeout=30)
    try:
        c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        time.sleep(delay_s)
        c.sock.shutdown(socket.SHUT_RDWR)
    finally:
        c.close()


def parse_json(data):
    try:
        return json.loads(data)
    except ValueError:
        return {"unparsed": data[:200].decode(errors="replace")}


def status_of(entry):
    """A /v1/models entry's status as a word: "loaded", "loading", ... (or {"value": word})."""
    s = entry.get("status")
    if isinstance(s, dict):
        s = s.get("value")
    return s


def model_states(port):
    """GET /v1/models as {id: status}."""
    status, _, body = request(port, "GET", "/v1/models", timeout=10)
    if status != 200:
        raise RuntimeError(f"GET /v1/models: {status} {body[:200]!r}")
    return {m["id"]: status_of(m) for m in json.loads(body)["data"]}


def gauges(port, names):
    """GET /metrics: [(name, {label: value}, float)] for the samples of the given metric names."""
    status, _, body = request(port, "GET", "/metrics", timeout=10)
    if status != 200:
        raise RuntimeError(f"GET /metrics: {status}")
    out = []
    for line in body.decode().splitlines():
        if not line or line.startswith("#"):
            continue
        series, _, value = line.rpartition(" ")
        name, _, rest = series.partition("{")
        if name not in names:
            continue
        labels = {}
        for pair in filter(None, rest.rstrip("}").split('",')):
            k, _, v = pair.partition("=")
            labels[k.strip(",")] = v.strip('"')
        out.append((name, labels, float(value)))
    return out
