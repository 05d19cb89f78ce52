"""Karpenter's real provisioning loop beside the test control plane (tests/helpers/controlplane.py).

What is real and what stands in:
- REAL: the Karpenter controller, v1.15.0 core (sigs.k8s.io/karpenter), built from the Go module proxy by
  scripts/karpenter-build.sh: provisioning (batching, scheduling simulation, instance-type choice, NodePool
  limits and weights, NodeOverlay), NodeClaim lifecycle, registration (taints and labels onto the Node),
  initialization, disruption. Its CRDs (NodePool, NodeClaim, NodeOverlay) come from the same module's source.
- REAL DATA: the instance types, generated here from the AWS provider's module
  (github.com/aws/karpenter-provider-aws v1.15.3): its recorded EC2 DescribeInstanceTypes answers
  (pkg/fake/zz_generated.describe_instance_types.go), its GPU metadata scraped from real instances
  (pkg/providers/drametadata/zz_generated_gpu_metadata.go: GPU count and product per instance type) and its
  us-east-1 on-demand prices (pkg/providers/pricing/zz_generated.pricing_aws.go). Each offering carries the
  labels the AWS provider publishes (karpenter.k8s.aws/instance-family, -category, -generation, -size, -cpu,
  -memory, -gpu-name, -gpu-manufacturer, -gpu-count, -gpu-memory), so gpufleet's GPU requirements are enforced.
- TYPED HERE: vCPU and memory of the GPU instance types absent from the recorded answers (AWS's published
  instance table, VCPU_MEMORY below); spot prices (0.4 x on-demand: the AWS provider reads them live);
  the EC2 GPU name of families absent from the recorded answers (EC2_GPU_NAME).
- STAND-IN: Karpenter's KWOK cloud provider stands in for EC2 (a "launch" creates a Node object; KWOK keeps
  it Ready as for every test Node), so gpufleet's NodePools point their nodeClassRef at a KWOKNodeClass of the
  same name instead of the EC2NodeClass; nothing else in them changes. The NVIDIA device plugin stands in as
  ``advertise()``: it sets what gpufleet's device-plugin config makes a node advertise (day2.expected).
- Karpenter runs out of cluster as a process with the admin kubeconfig (its own RBAC is not under test).
"""
import glob
import json
import os
import re
import subprocess
import threading

import yaml

from controlplane import ROOT, free_port

KWOK_NODECLASS = {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass"}
CORE_CRDS = ("karpenter.sh_nodepools.yaml", "karpenter.sh_nodeclaims.yaml", "karpenter.sh_nodeoverlays.yaml")
AWS = "karpenter.k8s.aws/"

# vCPU and memory (GiB) of GPU instance types the recorded answers lack: AWS's published tables ("Amazon EC2
# accelerated computing instance types"), typed here.
VCPU_MEMORY = {
    "g5": {"xlarge": (4, 16), "2xlarge": (8, 32), "4xlarge": (16, 64), "8xlarge": (32, 128), "16xlarge": (64, 256),
           "12xlarge": (48, 192), "24xlarge": (96, 384), "48xlarge": (192, 768)},
    "g6": {"xlarge": (4, 16), "2xlarge": (8, 32), "4xlarge": (16, 64), "8xlarge": (32, 128), "16xlarge": (64, 256),
           "12xlarge": (48, 192), "24xlarge": (96, 384), "48xlarge": (192, 768)},
    "g6e": {"xlarge": (4, 32), "2xlarge": (8, 64), "4xlarge": (16, 128), "8xlarge": (32, 256),
            "16xlarge": (64, 512), "12xlarge": (48, 384), "24xlarge": (96, 768), "48xlarge": (192, 1536)},
    "p4d": {"24xlarge": (96, 1152)},
    "p5": {"4xlarge": (16, 256), "48xlarge": (192, 2048)},
    "p5e": {"48xlarge": (192, 2048)},
}
# EC2's GPU name (lower case) of families the recorded answers lack
EC2_GPU_NAME = {"g6e": "l40s", "p4d": "a100", "p5e": "h200"}
FAMILIES = tuple(VCPU_MEMORY)
# us-east-1 (the EKS inventory) and us-west-2 (the v1alpha5 example the migration converts); every zone at the
# us-east-1 prices
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d", "us-west-2a", "us-west-2b")


SCRIPT = os.path.join(ROOT, "scripts", "karpenter-build.sh")
# The CRDs EKS users get with the AWS provider's chart (karpenter-crd), from its module's pkg/apis/crds
AWS_CRDS = ("karpenter.sh_nodepools.yaml", "karpenter.k8s.aws_ec2nodeclasses.yaml", "karpenter.sh_nodeclaims.yaml",
            "karpenter.sh_nodeoverlays.yaml")


def module_dirs():
    """{binary, core, aws}: where the binary goes and the two modules' sources (downloaded if absent; no build)."""
    out = subprocess.run(["bash", SCRIPT, "paths"], check=True, capture_output=True, text=True).stdout
    return dict(line.split("=", 1) for line in out.split())


def build():
    """``module_dirs()`` after building Karpenter if needed (a missing build is built here, never skipped)."""
    subprocess.run(["bash", SCRIPT], check=True, stdout=subprocess.DEVNULL)
    return module_dirs()


def install_aws_crds(cp, dirs=None):
    """The AWS provider's Karpenter CRDs (NodePool, EC2NodeClass, NodeClaim, NodeOverlay) from its module."""
    dirs = dirs or module_dirs()
    cp.install_crds(AWS_CRDS, folder=os.path.join(dirs["aws"], "pkg", "apis", "crds"))


def _read(path):
    with open(path) as handle:
        return handle.read()


def recorded_instance_types(aws_dir):
    """{name: facts} from the AWS provider's recorded DescribeInstanceTypes answers (GPU types only)."""
    text = _read(os.path.join(aws_dir, "pkg", "fake", "zz_generated.describe_instance_types.go"))
    out = {}
    for block in re.split(r"\n\t\t\{\n", text):
        name = re.search(r'InstanceType:\s+"([a-z0-9.-]+)",\n\s+SupportedUsageClasses', block)
        gpu = re.search(r'GpuInfo: &ec2types.GpuInfo\{.*?Name:\s+aws.String\("([^"]+)"\).*?Manufacturer:\s+'
                        r'aws.String\("([^"]+)"\).*?Count:\s+aws.Int32\((\d+)\).*?SizeInMiB:\s+aws.Int32\((\d+)\)',
                        block, re.S)
        if not name or not gpu:
            continue
        out[name.group(1)] = {
            "vcpu": int(re.search(r"DefaultVCpus:\s+aws.Int32\((\d+)\)", block).group(1)),
            "memory_mib": int(re.search(r"MemoryInfo: &ec2types.MemoryInfo\{\s+SizeInMiB:\s+aws.Int64\((\d+)\)",
                                        block).group(1)),
            "arch": re.search(r'SupportedArchitectures:\s+\[\]ec2types.ArchitectureType\{"([^"]+)"', block).group(1),
            "gpu_name": gpu.group(1), "gpu_manufacturer": gpu.group(2), "gpu_count": int(gpu.group(3)),
            "gpu_memory_mib": int(gpu.group(4)),
        }
    return out


def gpu_metadata(aws_dir):
    """{instance type: (GPU count, product name)} from the AWS provider's scraped GPU metadata."""
    text = _read(os.path.join(aws_dir, "pkg", "providers", "drametadata", "zz_generated_gpu_metadata.go"))
    out = {}
    for match in re.finditer(r'\n\t"([a-z0-9.-]+)": \{\n\t\tCount: (\d+),(.*?)\n\t\},', text, re.S):
        product = re.search(r'"productName":\s+\{StringValue: strPtr\("([^"]+)"\)', match.group(3))
        out[match.group(1)] = (int(match.group(2)), product.group(1) if product else "")
    return out


def on_demand_prices(aws_dir, region="us-east-1"):
    text = _read(os.path.join(aws_dir, "pkg", "providers", "pricing", "zz_generated.pricing_aws.go"))
    section = text.split('"%s": {' % region, 1)[1].split("\n\t},", 1)[0]
    return {name: float(price) for name, price in re.findall(r'"([a-z0-9.-]+)": ([0-9.]+)', section)}


def instance_types(aws_dir, families=FAMILIES, zones=ZONES):
    """The KWOK provider's instance-types file (a list) for the GPU instance types of ``families``."""
    recorded = recorded_instance_types(aws_dir)
    gpus = gpu_metadata(aws_dir)
    prices = on_demand_prices(aws_dir)
    # EC2's GPU name, manufacturer and memory per family, where the recorded answers hold one of its types
    family_gpu = {}
    for name, facts in recorded.items():
        family_gpu[name.split(".")[0]] = facts
    out = []
    for name in sorted(gpus):
        family, size = name.split(".", 1)
        if family not in families or name not in prices:
            continue
        count = gpus[name][0]
        if name in recorded:
            facts = recorded[name]
            vcpu, memory_mib, arch = facts["vcpu"], facts["memory_mib"], facts["arch"]
        elif size in VCPU_MEMORY.get(family, {}):
            vcpu, memory_gib = VCPU_MEMORY[family][size]
            memory_mib, arch = memory_gib * 1024, "x86_64"
        else:
            continue
        gpu = family_gpu.get(family)
        labels = {
            AWS + "instance-family": family,
            AWS + "instance-category": re.match(r"[a-z]+", family).group(0),
            AWS + "instance-generation": re.match(r"[a-z]+(\d+)", family).group(1),
            AWS + "instance-size": size,
            AWS + "instance-cpu": str(vcpu),
            AWS + "instance-memory": str(memory_mib),
            AWS + "instance-gpu-manufacturer": (gpu["gpu_manufacturer"] if gpu else "NVIDIA").lower(),
            AWS + "instance-gpu-name": gpu["gpu_name"].lower() if gpu else EC2_GPU_NAME[family],
            AWS + "instance-gpu-count": str(count),
        }
        if gpu:
            labels[AWS + "instance-gpu-memory"] = str(gpu["gpu_memory_mib"])
        offerings = []
        for capacity_type, price in (("on-demand", prices[name]), ("spot", round(prices[name] * 0.4, 6))):
            for zone in zones:
                requirements = [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": [capacity_type]},
                                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}]
                requirements += [{"key": k, "operator": "In", "values": [v]} for k, v in sorted(labels.items())]
                offerings.append({"Price": price, "Available": True, "Requirements": requirements})
        out.append({"name": name, "architecture": {"x86_64": "amd64", "arm64": "arm64"}[arch],
                    "operatingSystems": ["linux"], "offerings": offerings,
                    "resources": {"cpu": str(vcpu), "memory": "%dMi" % memory_mib, "pods": "110",
                                  "ephemeral-storage": "100Gi", "nvidia.com/gpu": str(count)}})
    return out


def install_crds(cp, dirs):
    """Karpenter's own CRDs from the built module's source, and the KWOK provider's node class."""
    cp.install_crds(CORE_CRDS, folder=os.path.join(dirs["core"], "pkg", "apis", "crds"))
    cp.install_crds(["karpenter.kwok.sh_kwoknodeclasses.yaml"],
                    folder=os.path.join(dirs["core"], "kwok", "apis", "crds"))


def kwok_nodepool(nodepool):
    """gpufleet's NodePool with only ``nodeClassRef`` pointed at the KWOK node class of the same name."""
    out = json.loads(json.dumps(nodepool))
    ref = out["spec"]["template"]["spec"]["nodeClassRef"]
    out["spec"]["template"]["spec"]["nodeClassRef"] = dict(KWOK_NODECLASS, name=ref["name"])
    return out


def kwok_nodeclass(name):
    return {"apiVersion": "karpenter.kwok.sh/v1alpha1", "kind": "KWOKNodeClass", "metadata": {"name": name}}


class Karpenter:
    """The Karpenter process (KWOK provider) against ``cp``; ``start()``, ``stop()``, ``log_tail()``."""

    def __init__(self, cp, binary, types_file, batch_idle="300ms", batch_max="2s"):
        self.cp, self.binary, self.types_file = cp, binary, types_file
        self.env = dict(os.environ, KUBECONFIG=cp.kubeconfig, SYSTEM_NAMESPACE="kube-system",
                        DISABLE_LEADER_ELECTION="true", METRICS_PORT=str(free_port()),
                        HEALTH_PROBE_PORT=str(free_port()), INSTANCE_TYPES_FILE_PATH=types_file,
                        FEATURE_GATES="NodeOverlay=true", BATCH_IDLE_DURATION=batch_idle,
                        BATCH_MAX_DURATION=batch_max, LOG_LEVEL="debug", DISABLE_CLUSTER_STATE_OBSERVABILITY="true")
        self.log_path = cp.path("karpenter.log")
        self.proc = None

    def start(self):
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([self.binary], env=self.env, stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True, cwd=self.cp.dir)
        return self

    def alive(self):
        if self.proc.poll() is not None:
            raise RuntimeError("karpenter exited with %s:\n%s" % (self.proc.returncode, self.log_tail()))
        return True

    def log_tail(self, lines=40):
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            self.log.close()


def device_plugin_configs(build_dir):
    """{config name: parsed config} from gpufleet's rendered device-plugin ConfigMap (cluster stage)."""
    path = os.path.join(str(build_dir), "cluster", "device-plugin", "04-configmap-nvidia-device-plugin-configs.yaml")
    with open(path) as handle:
        data = yaml.safe_load(handle)["data"]
    return {name: yaml.safe_load(text) for name, text in data.items()}


def advertised(configs, labels):
    """What the NVIDIA device plugin advertises on a node with ``labels`` (written from the plugin's config
    format, not from gpufleet's code): the instance type's GPUs, times the replicas of a time-slicing / MPS
    resource of the config the node's ``nvidia.com/device-plugin.config`` label names (renamed as configured)."""
    gpus = int(labels[AWS + "instance-gpu-count"])
    config = configs.get(labels.get("nvidia.com/device-plugin.config"), configs["default"])
    sharing = config.get("sharing") or {}
    shared = sharing.get("mps") or sharing.get("timeSlicing") or {}
    out = {}
    for res in shared.get("resources") or []:
        name = res.get("rename") or (res["name"] + ".shared" if shared.get("renameByDefault") else res["name"])
        out[name] = gpus * int(res["replicas"])
    return out or {"nvidia.com/gpu": gpus}


class DevicePlugin:
    """STAND-IN for the NVIDIA device plugin on Karpenter's Nodes: once a Node appears, its capacity and
    allocatable get ``advertised(configs, node labels)``, as the plugin's registration with the kubelet would."""

    def __init__(self, cp, configs, interval=0.2):
        self.cp, self.configs, self.interval = cp, configs, interval
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.stopped.set()
        self.thread.join(timeout=5)

    def _run(self):
        while not self.stopped.is_set():
            try:
                for node in self.cp.items("/api/v1/nodes?labelSelector=karpenter.sh%2Fnodepool"):
                    labels = node["metadata"]["labels"]
                    if AWS + "instance-gpu-count" not in labels:
                        continue
                    want = {k: str(v) for k, v in advertised(self.configs, labels).items()}
                    status = node.get("status") or {}
                    if all((status.get(f) or {}).get(r) == n for r, n in want.items()
                           for f in ("capacity", "allocatable")):
                        continue
                    self.cp.request("PATCH", "/api/v1/nodes/%s/status" % node["metadata"]["name"],
                                    {"status": {"capacity": want, "allocatable": want}},
                                    content_type="application/strategic-merge-patch+json")
            except Exception:  # noqa: BLE001 - a Node deleted between list and patch: the next round sees it
                pass
            self.stopped.wait(self.interval)


def load_rendered(build, component="karpenter"):
    """The objects gpufleet rendered under build/provision/<component>/, in file order."""
    out = []
    for path in sorted(glob.glob(os.path.join(str(build), "provision", component, "*.yaml"))):
        with open(path) as handle:
            out.extend(d for d in yaml.safe_load_all(handle) if d)
    return out
