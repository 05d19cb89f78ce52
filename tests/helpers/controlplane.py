"""A real Kubernetes control plane on loopback for the tests.

etcd, kube-apiserver, kube-controller-manager and kube-scheduler are the upstream programs, built from
their Go modules by scripts/controlplane-build.sh (cached outside the repository). KWOK (also upstream,
sigs.k8s.io/kwok) STANDS IN FOR THE KUBELETS: no GPU machine and no kubelet can run here, so the test's
Nodes are created through the API as a kubelet registers them (capacity and allocatable as the NVIDIA
device plugin would advertise them) and KWOK keeps them Ready (status + Lease), marks the pods the
scheduler binds to them Running and Ready, completes Job pods and removes deleted pods, as a kubelet
would. Everything else - admission, RBAC, PodSecurity, server-side apply, the DaemonSet/Job/ServiceAccount
controllers, scheduling, taints, evictions and PodDisruptionBudgets - is the real thing.

Loopback only, free ports, token auth, RBAC and PodSecurity admission on (the defaults).
"""
import datetime
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/helpers/ -> the checkout
SHARED_CRDS = os.path.normpath(os.path.join(ROOT, "..", "shared", "crds"))
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
# The stand-in kubelets cannot pull this image: its pods stay Pending in ImagePullBackOff, as a real
# kubelet leaves a pod whose image does not exist (KWOK's selectors match exact values only).
UNPULLABLE_IMAGE = "registry.invalid/missing/cuda:1"

# KWOK's lifecycle for the simulated Nodes and their pods (KWOK's Stage API). Only Nodes annotated
# kwok.x-k8s.io/node=fake are managed, so a Node the test leaves unannotated behaves as one whose kubelet
# is gone (NotReady after the grace period).
KWOK_STAGES = r"""
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: gpufleet-node-ready}
spec:
  resourceRef: {apiGroup: v1, kind: Node}
  selector:
    matchExpressions:
    - {key: '.status.conditions.[] | select( .type == "Ready" ) | .status', operator: NotIn, values: ['True']}
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      {{ range NodeConditions }}
      - {type: {{ .type | Quote }}, status: {{ .status | Quote }}, reason: {{ .reason | Quote }},
         message: {{ .message | Quote }}, lastHeartbeatTime: {{ $now | Quote }}, lastTransitionTime: {{ $now | Quote }}}
      {{ end }}
      addresses:
      - {type: InternalIP, address: {{ NodeIP | Quote }}}
      - {type: Hostname, address: {{ .metadata.name | Quote }}}
      allocatable:
      {{ with .status.allocatable }}{{ YAML . 1 }}{{ else }}  {cpu: "8", memory: 64Gi, pods: "110"}{{ end }}
      capacity:
      {{ with .status.capacity }}{{ YAML . 1 }}{{ else }}  {cpu: "8", memory: 64Gi, pods: "110"}{{ end }}
      nodeInfo:
        architecture: amd64
        operatingSystem: linux
        kubeletVersion: {{ printf "kwok-%%s" Version | Quote }}
        containerRuntimeVersion: "containerd://stand-in"
        kernelVersion: ""
        kubeProxyVersion: ""
        osImage: "KWOK stand-in kubelet"
        machineID: ""
        systemUUID: ""
        bootID: ""
      phase: Running
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: gpufleet-pod-running}
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: .metadata.deletionTimestamp, operator: DoesNotExist}
    - {key: .status.phase, operator: In, values: [Pending]}
    - {key: '.status.conditions.[] | select( .type == "Ready" ) | .status', operator: NotIn, values: ['True']}
    - {key: '.spec.containers.[0].image', operator: NotIn, values: [%(unpullable)s]}
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - {type: Initialized, status: "True", lastTransitionTime: {{ $now | Quote }}}
      - {type: ContainersReady, status: "True", lastTransitionTime: {{ $now | Quote }}}
      - {type: Ready, status: "True", lastTransitionTime: {{ $now | Quote }}}
      containerStatuses:
      {{ range .spec.containers }}
      - {name: {{ .name | Quote }}, image: {{ .image | Quote }}, ready: true, started: true, restartCount: 0,
         state: {running: {startedAt: {{ $now | Quote }}}}}
      {{ end }}
      initContainerStatuses:
      {{ range .spec.initContainers }}
      - {name: {{ .name | Quote }}, image: {{ .image | Quote }}, ready: true, restartCount: 0,
         state: {terminated: {exitCode: 0, reason: Completed, startedAt: {{ $now | Quote }}, finishedAt: {{ $now | Quote }}}}}
      {{ end }}
      {{ with NodeIPWith .spec.nodeName }}
      hostIP: {{ . | Quote }}
      {{ end }}
      {{ with PodIPWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) }}
      podIP: {{ . | Quote }}
      {{ end }}
      phase: Running
      startTime: {{ $now | Quote }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: gpufleet-image-pull-fails}
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: .metadata.deletionTimestamp, operator: DoesNotExist}
    - {key: .status.phase, operator: In, values: [Pending]}
    - {key: '.spec.containers.[0].image', operator: In, values: [%(unpullable)s]}
    - {key: '.status.containerStatuses.[0].state.waiting.reason', operator: NotIn, values: [ImagePullBackOff]}
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - {type: Ready, status: "False", reason: ContainersNotReady, lastTransitionTime: {{ $now | Quote }}}
      containerStatuses:
      {{ range .spec.containers }}
      - {name: {{ .name | Quote }}, image: {{ .image | Quote }}, ready: false, started: false, restartCount: 0,
         state: {waiting: {reason: ImagePullBackOff, message: {{ printf "Back-off pulling image %%q" .image | Quote }}}}}
      {{ end }}
      phase: Pending
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: gpufleet-job-pod-succeeded}
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: .metadata.deletionTimestamp, operator: DoesNotExist}
    - {key: .status.phase, operator: In, values: [Running]}
    - {key: '.metadata.ownerReferences.[].kind', operator: In, values: [Job]}
  delay: {durationMilliseconds: 500}
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - {type: Ready, status: "False", reason: PodCompleted, lastTransitionTime: {{ $now | Quote }}}
      - {type: ContainersReady, status: "False", reason: PodCompleted, lastTransitionTime: {{ $now | Quote }}}
      containerStatuses:
      {{ range .spec.containers }}
      - {name: {{ .name | Quote }}, image: {{ .image | Quote }}, ready: false, started: false, restartCount: 0,
         state: {terminated: {exitCode: 0, reason: Completed, startedAt: {{ $now | Quote }}, finishedAt: {{ $now | Quote }}}}}
      {{ end }}
      phase: Succeeded
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: gpufleet-pod-gone}
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: .metadata.deletionTimestamp, operator: Exists}
  next:
    delete: true
"""


def build_paths():
    """{component: directory} as scripts/controlplane-build.sh lays the cache out (no build)."""
    out = subprocess.run(["bash", os.path.join(ROOT, "scripts", "controlplane-build.sh"), "paths"],
                         check=True, capture_output=True, text=True).stdout
    return dict(line.split("=", 1) for line in out.split())


def binary(component, name):
    path = os.path.join(build_paths()[component], name)
    if not os.access(path, os.X_OK):
        raise RuntimeError("%s is not built: run scripts/controlplane-build.sh (scripts/test.sh does)" % path)
    return path


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _pki(directory):
    """A CA, a serving certificate for 127.0.0.1 signed by it, and a service-account key pair."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
    from cryptography.x509.oid import NameOID
    import ipaddress

    now = datetime.datetime.now(datetime.timezone.utc)

    def pem_key(key):
        return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "gpufleet-test-ca")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
          .not_valid_after(now + datetime.timedelta(days=2))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                                        x509.DNSName("localhost")]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    files = {
        "ca.crt": ca.public_bytes(serialization.Encoding.PEM),
        "apiserver.crt": cert.public_bytes(serialization.Encoding.PEM),
        "apiserver.key": pem_key(key),
        "sa.key": pem_key(sa_key),
        "sa.pub": sa_key.public_key().public_bytes(serialization.Encoding.PEM,
                                                    serialization.PublicFormat.SubjectPublicKeyInfo),
    }
    for name, data in files.items():
        with open(os.path.join(directory, name), "wb") as f:
            f.write(data)
        os.chmod(os.path.join(directory, name), 0o600)


class ApiError(Exception):
    def __init__(self, code, body):
        self.code, self.body = code, body
        try:
            self.status = json.loads(body)
        except ValueError:
            self.status = {"message": body}
        super().__init__("HTTP %s: %s" % (code, self.status.get("message", body)))


class ControlPlane:
    """Start with ``start()`` (or as a context manager), stop with ``stop()``.

    ``full=False`` starts etcd and kube-apiserver only (``apiserver`` picks the build: "kube" is the newest
    minor, "kube_oldest" the oldest supported one).
    """

    TOKENS = {  # token, user, uid, groups
        "admin": ("gpufleet-test-admin", "admin", "system:masters"),
        "controller-manager": ("gpufleet-test-kcm", "system:kube-controller-manager", ""),
        "scheduler": ("gpufleet-test-sched", "system:kube-scheduler", ""),
        "kwok": ("gpufleet-test-kwok", "kwok-stand-in-kubelets", "system:masters"),
    }

    def __init__(self, workdir=None, full=True, apiserver="kube"):
        self.dir = workdir or tempfile.mkdtemp(prefix="gpufleet-cp-")
        self.full, self.apiserver_build = full, apiserver
        self.procs = {}
        self.port = None

    # ---------------------------------------------------------------- lifecycle
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def _spawn(self, name, argv):
        log = open(os.path.join(self.dir, name + ".log"), "wb")
        self.procs[name] = (subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                             start_new_session=True, cwd=self.dir), log)

    def log_tail(self, name, lines=30):
        try:
            with open(os.path.join(self.dir, name + ".log"), errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def _check_alive(self):
        for name, (proc, _) in self.procs.items():
            if proc.poll() is not None:
                raise RuntimeError("%s exited with %s:\n%s" % (name, proc.returncode, self.log_tail(name)))

    def start(self, timeout=90):
        t0 = time.monotonic()
        os.makedirs(self.dir, exist_ok=True)
        _pki(self.dir)
        with open(os.path.join(self.dir, "tokens.csv"), "w") as f:
            for token, user, groups in self.TOKENS.values():
                f.write('%s,%s,%s%s\n' % (token, user, user, (',"%s"' % groups) if groups else ""))
        self.etcd_port, peer, self.port = free_port(), free_port(), free_port()
        for who in self.TOKENS:
            self.write_kubeconfig(os.path.join(self.dir, who + ".kubeconfig"), who)
        self.start_etcd(peer)
        self.start_apiserver()
        self.wait(lambda: self._ready(), timeout - (time.monotonic() - t0), "kube-apiserver /readyz")
        if self.full:
            self._spawn("kube-controller-manager", [
                binary("kube", "kube-controller-manager"), "--kubeconfig=" + self.path("controller-manager.kubeconfig"),
                "--leader-elect=false", "--use-service-account-credentials=true", "--secure-port=0",
                "--controllers=*",
                "--service-account-private-key-file=" + self.path("sa.key"), "--root-ca-file=" + self.path("ca.crt"),
                "--node-monitor-grace-period=40s"])
            self._spawn("kube-scheduler", [
                binary("kube", "kube-scheduler"), "--kubeconfig=" + self.path("scheduler.kubeconfig"),
                "--authentication-kubeconfig=" + self.path("scheduler.kubeconfig"),
                "--authorization-kubeconfig=" + self.path("scheduler.kubeconfig"),
                "--leader-elect=false", "--secure-port=0"])
            with open(self.path("kwok.yaml"), "w") as f:
                f.write(KWOK_STAGES % {"unpullable": json.dumps(UNPULLABLE_IMAGE)})
            self._spawn("kwok", [
                binary("kwok", "kwok"), "--kubeconfig=" + self.path("kwok.kubeconfig"), "--config=" + self.path("kwok.yaml"),
                "--manage-nodes-with-annotation-selector=%s=fake" % KWOK_ANNOTATION, "--node-lease-duration-seconds=40",
                "--cidr=10.244.0.0/16", "--node-ip=10.200.0.1", "--server-address="])
            # the ServiceAccount controller has run once the default namespace's account exists
            self.wait(lambda: self.get("/api/v1/namespaces/default/serviceaccounts/default"),
                      timeout - (time.monotonic() - t0), "kube-controller-manager (default ServiceAccount)")
        self.started_in = time.monotonic() - t0
        return self

    def start_etcd(self, peer):
        self._spawn("etcd", [
            binary("etcd", "etcd"), "--name=gpufleet-test", "--data-dir=" + self.path("etcd-data"),
            "--listen-client-urls=http://127.0.0.1:%d" % self.etcd_port,
            "--advertise-client-urls=http://127.0.0.1:%d" % self.etcd_port,
            "--listen-peer-urls=http://127.0.0.1:%d" % peer, "--initial-advertise-peer-urls=http://127.0.0.1:%d" % peer,
            "--initial-cluster=gpufleet-test=http://127.0.0.1:%d" % peer, "--unsafe-no-fsync", "--log-level=warn"])

    def start_apiserver(self):
        self._spawn("kube-apiserver", [
            binary(self.apiserver_build, "kube-apiserver"), "--etcd-servers=http://127.0.0.1:%d" % self.etcd_port,
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=%d" % self.port,
            "--tls-cert-file=" + self.path("apiserver.crt"), "--tls-private-key-file=" + self.path("apiserver.key"),
            "--client-ca-file=" + self.path("ca.crt"), "--token-auth-file=" + self.path("tokens.csv"),
            "--authorization-mode=Node,RBAC", "--service-account-issuer=https://kubernetes.default.svc",
            "--service-account-key-file=" + self.path("sa.pub"),
            "--service-account-signing-key-file=" + self.path("sa.key"),
            "--service-cluster-ip-range=10.96.0.0/12", "--allow-privileged=true", "--profiling=false",
            "--endpoint-reconciler-type=none"])

    def stop_apiserver(self):
        """Kill kube-apiserver alone, as a crash would (fault tests); ``restart_apiserver()`` brings it back
        on the same port with the same etcd."""
        proc, log = self.procs.pop("kube-apiserver")
        proc.kill()
        proc.wait(timeout=30)
        log.close()

    def restart_apiserver(self, timeout=60):
        self.start_apiserver()
        self.wait(lambda: self._ready(), timeout, "kube-apiserver /readyz after restart")

    def stop(self):
        for name in ("kwok", "kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd"):
            if name not in self.procs:
                continue
            proc, log = self.procs.pop(name)
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=5)  # test data: no need to wait for a graceful drain
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
            log.close()
        shutil.rmtree(self.path("etcd-data"), ignore_errors=True)

    # ---------------------------------------------------------------- access
    def path(self, name):
        return os.path.join(self.dir, name)

    @property
    def url(self):
        return "https://127.0.0.1:%d" % self.port

    @property
    def kubeconfig(self):
        return self.path("admin.kubeconfig")

    def write_kubeconfig(self, dest, who="admin"):
        token = self.TOKENS[who][0]
        with open(dest, "w") as f:
            yaml.safe_dump({
                "apiVersion": "v1", "kind": "Config", "current-context": "gpufleet-test",
                "clusters": [{"name": "gpufleet-test", "cluster": {
                    "server": "https://127.0.0.1:%s" % (self.port or "0"),
                    "certificate-authority": self.path("ca.crt")}}],
                "users": [{"name": who, "user": {"token": token}}],
                "contexts": [{"name": "gpufleet-test", "context": {"cluster": "gpufleet-test", "user": who}}],
            }, f)

    def _ready(self):
        self._check_alive()
        try:
            return self.request("GET", "/readyz", raw=True) == b"ok"
        except (ApiError, OSError):
            return False

    def wait(self, predicate, timeout, what, interval=0.25):
        deadline = time.monotonic() + max(timeout, 1)
        last = None
        while time.monotonic() < deadline:
            try:
                last = predicate()
                if last:
                    return last
            except ApiError as exc:
                # 404: not there yet; 429: a new CRD's storage is still initializing
                if exc.code not in (404, 429):
                    raise
            self._check_alive()
            time.sleep(interval)
        raise TimeoutError("waited %.0f s for %s (last: %r)" % (timeout, what, last))

    def request(self, method, path, body=None, content_type="application/json", raw=False, token=None):
        ctx = ssl.create_default_context(cafile=self.path("ca.crt"))
        data = None
        if body is not None:
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method, headers={
            "Authorization": "Bearer " + (token or self.TOKENS["admin"][0]), "Content-Type": content_type,
            "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
                payload = resp.read()
        except urllib.error.HTTPError as exc:
            raise ApiError(exc.code, exc.read().decode(errors="replace")) from None
        return payload if raw else (json.loads(payload) if payload else None)

    def get(self, path):
        return self.request("GET", path)

    def exists(self, path):
        try:
            self.get(path)
            return True
        except ApiError as exc:
            if exc.code == 404:
                return False
            raise

    def items(self, path):
        return self.get(path)["items"]

    def create(self, path, obj):
        return self.request("POST", path, obj)

    def delete(self, path, propagation="Background"):
        """Delete; Background propagation, so no orphan finalizer waits for a garbage collector."""
        return self.request("DELETE", path, {"kind": "DeleteOptions", "apiVersion": "v1",
                                             "propagationPolicy": propagation})

    def merge_patch(self, path, patch):
        return self.request("PATCH", path, patch, content_type="application/merge-patch+json")

    def apply(self, path, obj, manager="gpufleet-test", force=True, dry_run=False):
        query = "?fieldManager=%s&force=%s%s" % (manager, "true" if force else "false", "&dryRun=All" if dry_run else "")
        return self.request("PATCH", path + query, obj, content_type="application/apply-patch+yaml")

    def _resources(self, api_version, refresh=False):
        cache = self.__dict__.setdefault("_discovery", {})
        if refresh or api_version not in cache:
            base = "/api/v1" if api_version == "v1" else "/apis/" + api_version
            cache[api_version] = (base, {r["kind"]: r for r in self.get(base)["resources"] if "/" not in r["name"]})
        return cache[api_version]

    def object_path(self, obj):
        """The REST path of ``obj`` (by API discovery, cached per group/version and read again for a kind
        not seen yet). Namespaced objects without a namespace go to ``default``, as kubectl sends them."""
        base, kinds = self._resources(obj["apiVersion"])
        if obj["kind"] not in kinds:
            base, kinds = self._resources(obj["apiVersion"], refresh=True)
        res = kinds[obj["kind"]]
        meta = obj.get("metadata") or {}
        if res["namespaced"]:
            return "%s/namespaces/%s/%s/%s" % (base, meta.get("namespace") or "default", res["name"], meta["name"])
        return "%s/%s/%s" % (base, res["name"], meta["name"])

    # ---------------------------------------------------------------- objects
    def add_node(self, name, gpu=None, labels=None, taints=None, kwok=True, extra_resources=None):
        """A Node as a kubelet registers it; ``gpu`` = the nvidia.com/gpu count the device plugin advertises."""
        resources = {"cpu": "64", "memory": "512Gi", "pods": "110"}
        if gpu:
            resources["nvidia.com/gpu"] = str(gpu)
        resources.update(extra_resources or {})
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": name, "labels": dict({"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                          "kubernetes.io/arch": "amd64"}, **(labels or {})),
            "annotations": {KWOK_ANNOTATION: "fake"} if kwok else {}},
            "spec": {"taints": taints or []}, "status": {"capacity": resources, "allocatable": resources}}
        self.create("/api/v1/nodes", node)
        if kwok:
            self.wait(lambda: self.node_ready(name), 30, "Node %s Ready (KWOK)" % name)
        return self.get("/api/v1/nodes/" + name)

    def add_nodes(self, names, gpu=None, labels=None, workers=16, ready_timeout=300):
        """Many KWOK Nodes at once (created ``workers`` at a time), then wait until every one is Ready."""
        from concurrent.futures import ThreadPoolExecutor
        resources = {"cpu": "64", "memory": "512Gi", "pods": "110"}
        if gpu:
            resources["nvidia.com/gpu"] = str(gpu)

        def one(name):
            self.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {
                "name": name, "labels": dict({"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                              "kubernetes.io/arch": "amd64"}, **(labels or {})),
                "annotations": {KWOK_ANNOTATION: "fake"}},
                "status": {"capacity": resources, "allocatable": resources}})
        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(one, names))
        wanted = set(names)

        def all_ready():
            ready = set()
            for node in self.items("/api/v1/nodes"):
                if node["metadata"]["name"] in wanted and any(
                        c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions") or []) \
                        and not any(t["key"] == "node.kubernetes.io/not-ready" for t in node["spec"].get("taints") or []):
                    ready.add(node["metadata"]["name"])
            return ready == wanted
        self.wait(all_ready, ready_timeout, "%d Nodes Ready (KWOK)" % len(wanted), interval=1)

    def node_ready(self, name):
        """Ready, and the node lifecycle controller has lifted its not-ready taint (schedulable)."""
        node = self.get("/api/v1/nodes/" + name)
        return any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions") or []) \
            and not any(t["key"] == "node.kubernetes.io/not-ready" for t in node["spec"].get("taints") or [])

    def node(self, name):
        return self.get("/api/v1/nodes/" + name)

    def install_crds(self, names, extend=None, folder=None):
        """Create the CRDs ``names`` (files in ``folder``, default ../shared/crds) and wait until they are served.
        ``extend`` {file name: function(crd)} changes a CRD before it is created."""
        for name in names:
            with open(os.path.join(folder or SHARED_CRDS, name)) as f:
                crd = yaml.safe_load(f)
            for key in ("status",):
                crd.pop(key, None)
            crd["metadata"] = {"name": crd["metadata"]["name"], "annotations": {
                k: v for k, v in (crd["metadata"].get("annotations") or {}).items()
                if k == "api-approved.kubernetes.io"}}
            if extend and name in extend:
                extend[name](crd)
            try:
                self.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
            except ApiError as exc:
                if exc.code != 409:
                    raise
            self.wait(lambda n=crd["metadata"]["name"]: any(
                c["type"] == "Established" and c["status"] == "True" for c in
                (self.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + n).get("status") or {})
                .get("conditions") or []), 30, "CRD %s Established" % crd["metadata"]["name"])


def shared_crds_or_skip(pytest):
    if not os.path.isdir(SHARED_CRDS):
        pytest.skip(reason="needs the upstream CRD files in ../shared/crds/ (%s is absent)" % SHARED_CRDS)
