"""Validate prometheus-operator objects (ServiceMonitor) with the npm package
@kubernetes-models/prometheus-operator (tests/schemas-monitoring-gitops, pinned in its package-lock.json)."""
import json
import os
import subprocess

SCHEMAS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "schemas-monitoring-gitops")


def _ensure_installed():
    stamp = os.path.join(SCHEMAS, "node_modules", ".stamp")
    lock = os.path.join(SCHEMAS, "package-lock.json")
    if not os.path.isfile(stamp) or os.path.getmtime(stamp) < os.path.getmtime(lock):
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--silent"], cwd=SCHEMAS, check=True, timeout=300)
        open(stamp, "w").close()


def validate_prometheus(objects):
    """Return (ok, output) of the schema check of ``objects``."""
    _ensure_installed()
    proc = subprocess.run(["node", "validate.mjs"], cwd=SCHEMAS, input=json.dumps(objects), capture_output=True,
                          text=True, timeout=120)
    return proc.returncode == 0, proc.stdout + proc.stderr


def assert_valid_prometheus(objects):
    ok, out = validate_prometheus(objects)
    assert ok, out
    assert out.count("ok ") == len(objects), out
