"""Deployment files against the server they deploy (run by ctest; see tests/CMakeLists.txt).

DeployFiles: docker/Dockerfile, the compose files and the Kubernetes manifests parse, and their
ports, probes and GGUFD_* variable names match what `ggufd serve` accepts; `docker-compose
config` validates the compose files (it needs no engine); the inference gateway example
(docker/k8s/inference-gateway: InferencePool, endpoint picker, HTTPRoute) matches the Deployment
(its CRDs are not installed here, so its structure is checked, not applied).
NginxScaleOut: two real `ggufd serve` processes behind a real nginx running the shipped
docker/nginx config on loopback ports; streamed completions go through, to both replicas.

Environment: GGUFD_BINARY (the ggufd binary), GGUFD_MODEL (a small GGUF for NginxScaleOut).
"""
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import unittest

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCKER = os.path.join(ROOT, "docker")
BINARY = os.environ.get("GGUFD_BINARY", "")
MODEL = os.environ.get("GGUFD_MODEL", "")
# GGUFD_REQUIRE_TEST_DATA=1 (.ci/run sets it): a missing test model fails instead of skipping.
DATA_REQUIRED = os.environ.get("GGUFD_REQUIRE_TEST_DATA", "") not in ("", "0")


def server_env_names():
    """Every GGUFD_* variable `ggufd serve` reads, from its --help."""
    out = subprocess.run([BINARY, "serve", "--help"], capture_output=True, text=True, check=True).stdout
    names = set(re.findall(r"Env:(GGUFD_[A-Z0-9_]+)", out))
    assert len(names) > 20, out
    return names


def read(*parts):
    with open(os.path.join(DOCKER, *parts)) as f:
        return f.read()


def compose_default(value):
    """The value docker compose gives `${VAR-default}` / `${VAR:-default}` when VAR is unset."""
    m = re.fullmatch(r"\$\{[A-Z0-9_]+:?-(.*)\}", value)
    return m.group(1) if m else value


def compose_volume(spec):
    """(source, target, mode or None) of a short volume syntax, the source possibly `${VAR:-x}`."""
    m = re.fullmatch(r"(\$\{[^}]*\}|[^:]+):([^:]+)(?::(\w+))?", spec)
    assert m, spec
    return m.groups()


def k8s_docs(*folder):
    """Every object of the *.yaml manifests in docker/<folder> (not below it), in file order."""
    names = sorted(n for n in os.listdir(os.path.join(DOCKER, *folder)) if n.endswith(".yaml"))
    return [doc for name in names for doc in yaml.safe_load_all(read(*folder, name)) if doc]


class DeployFiles(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.env_names = server_env_names()

    def assert_known_env(self, names, where):
        unknown = sorted(set(names) - self.env_names)
        self.assertEqual(unknown, [], f"{where}: variables ggufd does not read")

    def test_dockerfile(self):
        text = read("Dockerfile")
        code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
        self.assertNotIn("-march", code, "the image must run on any x86-64")
        self.assertRegex(text, r"(?m)^FROM debian:12 AS build$")
        self.assertRegex(text, r"(?m)^RUN scripts/install-deps")
        self.assertRegex(text, r"(?m)^USER ggufd$")
        self.assertRegex(text, r'(?m)^HEALTHCHECK .*CMD \["ggufd", "health"\]$')
        self.assertRegex(text, r"(?m)^EXPOSE 8080$")
        self.assertIn("GGUFD_PORT=8080", text)
        self.assertIn('VOLUME ["/models"]', text)
        self.assert_known_env(re.findall(r"\b(GGUFD_[A-Z0-9_]+)=", text), "Dockerfile ENV")

    def check_ggufd_service(self, name, service):
        self.assertEqual(service["healthcheck"]["test"], ["CMD", "ggufd", "health"], name)
        self.assertTrue(any(v.endswith(":/models:ro") for v in service["volumes"]), name)
        self.assertIn("restart", service)
        self.assertIn("limits", service["deploy"]["resources"])
        self.assert_known_env(service["environment"].keys(), f"compose service {name}")
        self.assertEqual(service["build"]["dockerfile"], "docker/Dockerfile")

    def test_compose(self):
        compose = yaml.safe_load(read("docker-compose.yml"))
        service = compose["services"]["ggufd"]
        self.check_ggufd_service("ggufd", service)
        self.assertTrue(service["ports"][0].endswith(":8080"))
        # The router serves the mounted models folder by default (an empty GGUFD_SERVE_DIR turns it
        # off: one model, as before), and the download cache is a writable volume at GGUFD_CACHE.
        env = service["environment"]
        self.assertEqual(compose_default(env["GGUFD_MODELS_DIR"]), "/models")
        cache = [source for source, target, mode in map(compose_volume, service["volumes"])
                 if target == env["GGUFD_CACHE"] and mode in (None, "rw")]
        self.assertEqual(len(cache), 1, "one read-write volume at GGUFD_CACHE")
        named = compose_default(cache[0])
        self.assertIn(named, compose.get("volumes") or {}, "the default cache is a named volume")
        self.assertTrue(re.search(r"mkdir -p [^\n]*" + env["GGUFD_CACHE"] + r"\b.*chown ggufd", read("Dockerfile")),
                        "the image makes the cache folder the ggufd user's (a new volume copies it)")

    def test_compose_scale_out(self):
        compose = yaml.safe_load(read("docker-compose.scale.yml"))
        replicas = [n for n in compose["services"] if n.startswith("ggufd-")]
        self.assertGreaterEqual(len(replicas), 2)
        for name in replicas:
            self.check_ggufd_service(name, compose["services"][name])
        nginx = compose["services"]["nginx"]
        self.assertTrue(nginx["ports"][0].endswith(":8080"))
        conf = read("nginx", "nginx.conf")
        for name in replicas:
            self.assertIn(f"server {name}:8080", conf, "every replica is an nginx upstream")
        proxy = read("nginx", "ggufd-proxy.conf")
        for directive in ("proxy_buffering off;", "proxy_http_version 1.1;", "proxy_read_timeout 600s;"):
            self.assertIn(directive, proxy)

    @unittest.skipUnless(shutil.which("docker-compose"), "docker-compose not installed")
    def test_compose_config_validates(self):
        for name in ("docker-compose.yml", "docker-compose.scale.yml"):
            r = subprocess.run(["docker-compose", "-f", os.path.join(DOCKER, name), "config", "-q"],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, f"{name}: {r.stderr}")

    def test_kubernetes(self):
        docs = {doc["kind"]: doc for doc in k8s_docs("k8s")}
        self.assertEqual(set(docs), {"Deployment", "Service", "HorizontalPodAutoscaler"})
        deployment = docs["Deployment"]
        pod = deployment["spec"]["template"]["spec"]
        self.assertTrue(pod["securityContext"]["runAsNonRoot"])
        container = pod["containers"][0]
        env = {e["name"]: e["value"] for e in container["env"]}
        self.assert_known_env(env.keys(), "Deployment env")
        port = container["ports"][0]
        self.assertEqual(port["containerPort"], int(env["GGUFD_PORT"]))
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            get = container[probe]["httpGet"]
            self.assertEqual(get["path"], "/health", probe)
            self.assertEqual(get["port"], port["name"], probe)
        self.assertIn("requests", container["resources"])
        self.assertGreater(pod["terminationGracePeriodSeconds"], int(env["GGUFD_SHUTDOWN_GRACE"]))
        service = docs["Service"]
        self.assertEqual(service["spec"]["selector"], deployment["spec"]["selector"]["matchLabels"])
        self.assertEqual(service["spec"]["ports"][0]["targetPort"], port["name"])
        hpa = docs["HorizontalPodAutoscaler"]
        self.assertEqual(hpa["spec"]["scaleTargetRef"]["name"], deployment["metadata"]["name"])

    def test_inference_gateway(self):
        """docker/k8s/inference-gateway against the plain Deployment (no CRDs here: structure only)."""
        plain = {doc["kind"]: doc for doc in k8s_docs("k8s")}
        deployment, service = plain["Deployment"], plain["Service"]
        docs = {}
        for doc in k8s_docs("k8s", "inference-gateway"):
            self.assertNotIn(doc["kind"], docs, "one object of each kind")
            self.assertTrue(doc["metadata"]["name"], doc["kind"])
            self.assertNotIn("namespace", doc["metadata"], "applies to the current namespace")
            docs[doc["kind"]] = doc
        self.assertEqual(set(docs), {"InferencePool", "ServiceAccount", "Role", "RoleBinding", "ConfigMap",
                                     "Deployment", "Service", "Gateway", "HTTPRoute"})
        self.check_pool(docs["InferencePool"], deployment, service, docs["Service"])
        self.check_picker(docs, docs["InferencePool"])
        self.check_route(docs["HTTPRoute"], docs["Gateway"], docs["InferencePool"])

    def check_pool(self, pool, deployment, service, picker_service):
        self.assertEqual(pool["apiVersion"], "inference.networking.k8s.io/v1")
        spec = pool["spec"]
        # The pool selects exactly the ggufd pods (the Service's selector), by labels only.
        self.assertEqual(set(spec["selector"]), {"matchLabels"})
        self.assertEqual(spec["selector"]["matchLabels"], service["spec"]["selector"])
        pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
        self.assertLessEqual(spec["selector"]["matchLabels"].items(), pod_labels.items())
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        self.assertEqual([p["number"] for p in spec["targetPorts"]], [container["ports"][0]["containerPort"]])
        self.assertIn(spec.get("appProtocol", "http"), ("http", "kubernetes.io/h2c"))
        ref = spec["endpointPickerRef"]
        self.assertEqual(ref.get("kind", "Service"), "Service")
        self.assertEqual(ref["name"], picker_service["metadata"]["name"])
        self.assertIn(ref["port"]["number"], [p["port"] for p in picker_service["spec"]["ports"]])
        self.assertIn(ref.get("failureMode", "FailClose"), ("FailOpen", "FailClose"))

    def check_picker(self, docs, pool):
        epp = docs["Deployment"]
        self.assertEqual(epp["spec"]["selector"]["matchLabels"], epp["spec"]["template"]["metadata"]["labels"])
        self.assertEqual(docs["Service"]["spec"]["selector"], epp["spec"]["selector"]["matchLabels"])
        pod = epp["spec"]["template"]["spec"]
        self.assertEqual(pod["serviceAccountName"], docs["ServiceAccount"]["metadata"]["name"])
        binding = docs["RoleBinding"]
        self.assertEqual(binding["roleRef"]["name"], docs["Role"]["metadata"]["name"])
        self.assertEqual(binding["subjects"][0]["name"], docs["ServiceAccount"]["metadata"]["name"])
        readable = {(g, r) for rule in docs["Role"]["rules"] if "watch" in rule["verbs"]
                    for g in rule["apiGroups"] for r in rule["resources"]}
        self.assertLessEqual({("inference.networking.k8s.io", "inferencepools"), ("", "pods")}, readable)
        container = pod["containers"][0]
        args = dict(a[2:].split("=", 1) for a in container["args"])
        self.assertEqual(args["pool-name"], pool["metadata"]["name"])
        self.assertEqual(args["pool-group"], pool["apiVersion"].split("/")[0])
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        self.assertEqual(int(args["grpc-port"]), ports["grpc"])
        for probe in ("livenessProbe", "readinessProbe"):
            self.assertEqual(container[probe]["grpc"]["port"], int(args["grpc-health-port"]), probe)
        ext_proc = next(p for p in docs["Service"]["spec"]["ports"]
                        if p["port"] == pool["spec"]["endpointPickerRef"]["port"]["number"])
        self.assertEqual(ext_proc["targetPort"], "grpc")
        # Cleartext HTTP/2 on both sides: the picker serves TLS unless told not to.
        self.assertEqual(ext_proc["appProtocol"], "kubernetes.io/h2c")
        self.assertEqual(args["secure-serving"], "false")
        # The config file the picker is told to read is a key of the mounted ConfigMap.
        mount = next(m for m in container["volumeMounts"] if args["config-file"].startswith(m["mountPath"] + "/"))
        volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
        self.assertEqual(volume["configMap"]["name"], docs["ConfigMap"]["metadata"]["name"])
        config = yaml.safe_load(docs["ConfigMap"]["data"][os.path.basename(args["config-file"])])
        self.check_picker_config(config)

    def check_picker_config(self, config):
        self.assertEqual(config["kind"], "EndpointPickerConfig")
        plugins = {p["type"]: p.get("parameters", {}) for p in config["plugins"]}
        # Metrics from ggufd's /metrics, read as the built-in "vllm" engine: the vllm:* names ggufd exports.
        self.assertEqual(plugins["metrics-data-source"]["path"], "/metrics")
        self.assertEqual(plugins["core-metrics-extractor"].get("defaultEngine", "vllm"), "vllm")
        profile = config["schedulingProfiles"][0]["plugins"]
        used = {p["pluginRef"] for p in profile}
        self.assertLessEqual({"queue-scorer", "kv-cache-utilization-scorer"}, used)
        self.assertLessEqual(used, set(plugins), "every profile entry refers to a declared plugin")

    def check_route(self, route, gateway, pool):
        self.assertTrue(gateway["spec"]["gatewayClassName"])
        parent = route["spec"]["parentRefs"][0]
        self.assertEqual((parent.get("kind", "Gateway"), parent["name"]), ("Gateway", gateway["metadata"]["name"]))
        backends = [b for rule in route["spec"]["rules"] for b in rule["backendRefs"]]
        self.assertEqual(backends, [{"group": "inference.networking.k8s.io", "kind": "InferencePool",
                                     "name": pool["metadata"]["name"]}])


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(port, proc, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"process on port {port} exited with {proc.returncode}")
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/health")
            if c.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"nothing healthy on port {port} after {seconds} s")


@unittest.skipUnless(os.path.exists(MODEL) or DATA_REQUIRED, f"shared test model not found: {MODEL}")
@unittest.skipUnless(shutil.which("nginx"), "nginx not installed (scripts/install-deps --test installs it)")
class NginxScaleOut(unittest.TestCase):
    def setUp(self):
        self.assertTrue(os.path.exists(MODEL), f"test data missing: shared test model not found: {MODEL} "
                        "(GGUFD_REQUIRE_TEST_DATA=1: a test may not skip for missing data)")
        self.dir = tempfile.mkdtemp(prefix="ggufd-nginx-")
        self.procs = []
        self.logs = []
        self.ports = [free_port(), free_port()]
        for i, port in enumerate(self.ports):
            log = open(os.path.join(self.dir, f"ggufd-{i + 1}.log"), "w+")
            self.logs.append(log)
            self.procs.append(subprocess.Popen(
                [BINARY, "serve", "-m", MODEL, "--alias", "stories", "--port", str(port), "--threads", "1",
                 "--ctx-size", "256"], stdout=log, stderr=subprocess.STDOUT))
        # The shipped config, with the compose service names and port swapped for loopback ones.
        conf = read("nginx", "nginx.conf")
        for i, port in enumerate(self.ports):
            conf = conf.replace(f"server ggufd-{i + 1}:8080", f"server 127.0.0.1:{port}")
        self.nginx_port = free_port()
        conf = conf.replace("listen 8080;", f"listen 127.0.0.1:{self.nginx_port};")
        conf = conf.replace("worker_processes auto;", "worker_processes 1;")
        with open(os.path.join(self.dir, "nginx.conf"), "w") as f:
            f.write(conf)
        shutil.copy(os.path.join(DOCKER, "nginx", "ggufd-proxy.conf"), self.dir)
        for port, proc in zip(self.ports, self.procs):
            wait_healthy(port, proc)
        nginx_log = open(os.path.join(self.dir, "nginx.log"), "w+")
        self.logs.append(nginx_log)
        self.procs.append(subprocess.Popen(
            ["nginx", "-p", self.dir, "-c", os.path.join(self.dir, "nginx.conf"),
             "-g", f"daemon off; pid {self.dir}/nginx.pid;"], stdout=nginx_log, stderr=subprocess.STDOUT))
        wait_healthy(self.nginx_port, self.procs[-1], 20)

    def tearDown(self):
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            p.wait(timeout=30)
        for log in self.logs:
            log.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def stream(self, prompt):
        """POSTs a streamed completion through nginx; returns (content-type, events, arrival times)."""
        c = http.client.HTTPConnection("127.0.0.1", self.nginx_port, timeout=60)
        body = {"prompt": prompt, "max_tokens": 24, "stream": True, "ignore_eos": True, "temperature": 0}
        c.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
        r = c.getresponse()
        self.assertEqual(r.status, 200)
        events, buf = [], b""
        while True:
            chunk = r.read1(65536)
            if not chunk:
                break
            buf += chunk
            while b"\n\n" in buf:
                event, buf = buf.split(b"\n\n", 1)
                events.append(event.decode())
        c.close()
        return r.getheader("Content-Type"), events

    def test_streams_through_nginx_to_both_replicas(self):
        for i in range(4):
            content_type, events = self.stream(f"Once upon a time {i}")
            self.assertTrue(content_type.startswith("text/event-stream"), content_type)
            self.assertEqual(events[-1], "data: [DONE]")
            chunks = [json.loads(e[6:]) for e in events[:-1]]
            self.assertGreaterEqual(len(chunks), 24, "one event per token")
            self.assertEqual(chunks[-1]["choices"][0]["finish_reason"], "length")
        # A replica logs a request once it has finished with it, which can be just after the client
        # has read [DONE] (under the sanitizers, noticeably after): poll the logs for a while.
        deadline = time.monotonic() + 20
        while True:
            served = []
            for log in self.logs[:2]:
                log.flush()
                log.seek(0)
                served.append(log.read().count("POST /v1/completions 200"))
            if sum(served) >= 4 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        self.assertEqual(sum(served), 4)
        self.assertTrue(all(n > 0 for n in served), f"requests per replica: {served}")


if __name__ == "__main__":
    unittest.main()
