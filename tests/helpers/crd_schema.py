"""Validate custom resources (Karpenter v1, GKE ComputeClass) with the npm schema packages.

The packages (tests/schemas/package.json, exact versions, package-lock.json) are generated from
the upstream CRDs; scripts/test.sh runs ``npm ci`` there. validate.mjs does the checking.
Note: those generated validators, like the CRDs, do not forbid unknown fields, so tests also
compare the emitted keys with the documented ones where that matters.
"""
import json
import os
import subprocess

SCHEMAS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "schemas")


def validate_crs(objects):
    """Return [{kind, name, ok, error}] for ``objects`` (a list of dicts)."""
    if not os.path.isdir(os.path.join(SCHEMAS, "node_modules", "@kubernetes-models")):
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--silent"], cwd=SCHEMAS, check=True, timeout=300)
    proc = subprocess.run(["node", "validate.mjs"], cwd=SCHEMAS, input=json.dumps(objects), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def assert_crs_valid(objects):
    results = validate_crs(objects)
    bad = [r for r in results if not r["ok"]]
    assert not bad, bad
    assert len(results) == len(objects)
