"""The DRA judge (tests/dra-judge): NVIDIA's DRA Driver for GPUs' own decode, Normalize and Validate of the opaque
device configs gpufleet renders, built from the Go module proxy by scripts/dra-judge-build.sh (cached outside the
repository; the first call of a session builds it when it is missing, and a failed build fails the test)."""
import json
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "scripts", "dra-judge-build.sh")
_BINARY = []


def binary():
    """Path of the judge, built (or found in the cache) by scripts/dra-judge-build.sh."""
    if not _BINARY:
        proc = subprocess.run(["bash", BUILD], cwd=ROOT, capture_output=True, text=True, timeout=1800)
        assert proc.returncode == 0, "scripts/dra-judge-build.sh failed:\n%s%s" % (proc.stdout, proc.stderr)
        _BINARY.append(proc.stdout.strip().splitlines()[-1])
    return _BINARY[0]


def feature_gates_env(gates):
    """FEATURE_GATES as the driver's chart renders it from its featureGates value (templates/kubeletplugin.yaml:
    ``range $key, $value`` over the map, keys sorted, each ``key=value,``)."""
    return "".join("%s=%s," % (key, str(value).lower() if isinstance(value, bool) else value)
                   for key, value in sorted((gates or {}).items()))


def judge(configs, gates):
    """{name: verdict} of the driver for ``configs`` ({name: opaque parameters}) with the feature gates ``gates``
    (the chart's featureGates map, or the FEATURE_GATES text the chart rendered); a verdict is {"name", "kind",
    "accepted", "error"}."""
    items = [{"name": name, "parameters": params} for name, params in sorted(configs.items())]
    env = dict(os.environ, FEATURE_GATES=gates if isinstance(gates, str) else feature_gates_env(gates))
    proc = subprocess.run([binary()], input=json.dumps(items), env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, "dra-judge refused its input (rc %d): %s" % (proc.returncode, proc.stderr)
    return {v["name"]: v for v in json.loads(proc.stdout)}
