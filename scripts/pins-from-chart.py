#!/usr/bin/env python3
"""Compare a GPU Operator chart version's values with gpufleet's pins (module_utils/core/versions.py).

Usage:
  scripts/pins-from-chart.py PATH [--json]

PATH is a chart's values.yaml, a chart directory or a packaged chart (.tgz; its values.yaml and Chart.yaml
are read), for example `helm pull nvidia/gpu-operator --version v26.7.0` with or without --untar. A chart
directory straight from NVIDIA's git tree says version v1.0.0-devel (the release packaging stamps the
version): package it first (`helm package --version vX.Y.Z --app-version vX.Y.Z DIR`). For each version
gpufleet pins from the chart (device plugin / GFD, dcgm-exporter, container toolkit, MIG manager, DCGM,
default driver, and the chart version itself) it prints the chart's value, the pin and same / differs /
absent. Exit status: 0 when nothing differs, 1 when something does (the pins to move in versions.py, then the digests from NVIDIA's OLM bundle of
that release, see docs/security.md), 2 when the file cannot be read.
"""

import json
import os
import sys
import tarfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "collections"))

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.versions import compare_chart_values  # noqa: E402


def load(path):
    """(values, chart version or None) from a values file or a chart directory."""
    chart_version = None
    if os.path.isfile(path) and path.endswith((".tgz", ".tar.gz")):
        with tarfile.open(path) as tar:
            names = {m.name.split("/", 1)[1]: m for m in tar.getmembers() if m.name.count("/") == 1}
            missing = [n for n in ("Chart.yaml", "values.yaml") if n not in names]
            if missing:
                raise ValueError("not a packaged chart (no top-level %s)" % " or ".join(missing))
            chart_version = (yaml.safe_load(tar.extractfile(names["Chart.yaml"])) or {}).get("version")
            return yaml.safe_load(tar.extractfile(names["values.yaml"])), chart_version
    if os.path.isdir(path):
        chart_file = os.path.join(path, "Chart.yaml")
        if os.path.isfile(chart_file):
            with open(chart_file) as handle:
                chart_version = (yaml.safe_load(handle) or {}).get("version")
        path = os.path.join(path, "values.yaml")
    with open(path) as handle:
        return yaml.safe_load(handle), chart_version


def main(argv):
    args = [a for a in argv if a != "--json"]
    if len(args) != 1:
        sys.stderr.write(__doc__)
        return 2
    try:
        values, chart_version = load(args[0])
        rows = compare_chart_values(values, chart_version)
    except (OSError, ValueError, yaml.YAMLError, tarfile.TarError) as exc:
        sys.stderr.write("pins-from-chart: %s: %s\n" % (args[0], exc))
        return 2
    if "--json" in argv:
        print(json.dumps(rows, indent=2))
    else:
        width = max(len(r["what"]) for r in rows)
        for row in rows:
            print("%-8s %-*s chart %-28s pinned %s" % (row["status"], width, row["what"],
                                                       row["chart"] if row["chart"] is not None else "-",
                                                       row["pinned"]))
    return 1 if any(r["status"] == "differs" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
