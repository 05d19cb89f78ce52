"""checkov over every inventory's rendered manifests, against tests/fixtures/checkov/baseline.yml (issue 30).

The renders are the RBAC allow-list test's (every inventory under inventories/ and
tests/integration/inventories, plus the example with NFD on), shared through the render cache. Their
.yaml/.yml files are copied into one tree, one folder per render, next to a canary folder, and checkov
(its own venv: scripts/checkov.sh) runs once over that tree, framework kubernetes, JSON out. The
(check_id, resource) pairs of the renders must equal the baseline's: a new finding fails, and so does a
baseline pair no render produces (a stale entry would let the finding come back unnoticed). The canary is
the example's device plugin DaemonSet made privileged with the host's PID namespace: its findings beyond
the baseline must include those two, so every run shows that a new finding on an already-baselined
resource is reported. One checkov run: 6.5 s on the idle 2-core machine, 16 s beside another test run
(the renders come from the cache; measured 2026-12-02).
"""
import json
import os
import shutil
import subprocess

import pytest
import yaml

from render_cache import RENDERS, rendered_site  # the renders the RBAC allowlist reads: each made once per run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BASELINE = os.path.join(ROOT, "tests", "fixtures", "checkov", "baseline.yml")
CHECKOV = os.path.join(ROOT, "scripts", "checkov.sh")
KINDS = ("inherent", "accepted", "tracked")
CANARY = "zz-canary"
PLUGIN = "DaemonSet.nvidia-device-plugin.nvidia-device-plugin"


def _flat(items):
    for item in items or []:
        if isinstance(item, list):
            yield from _flat(item)
        else:
            yield item


def baseline_pairs(doc):
    """{(check_id, resource): index of its group} from a baseline document; a malformed group or a pair
    in two groups raises ValueError."""
    out = {}
    for index, group in enumerate(doc.get("groups") or []):
        if group.get("kind") not in KINDS or not str(group.get("why") or "").strip():
            raise ValueError("group %d: needs a kind (%s) and a why" % (index, ", ".join(KINDS)))
        if group["kind"] == "tracked" and "issue" not in group["why"]:
            raise ValueError("group %d: a tracked group names the issue that fixes it" % index)
        checks, resources = list(_flat(group.get("checks"))), list(_flat(group.get("resources")))
        if not checks or not resources:
            raise ValueError("group %d: needs checks and resources" % index)
        for check in checks:
            for resource in resources:
                if (check, resource) in out:
                    raise ValueError("%s %s: in groups %d and %d" % (check, resource, out[(check, resource)], index))
                out[(check, resource)] = index
    return out


def findings(report):
    """{(check_id, resource): [file paths]} of a checkov JSON report (one framework or a list of them)."""
    out = {}
    for part in report if isinstance(report, list) else [report]:
        for item in (part.get("results") or {}).get("failed_checks") or []:
            out.setdefault((item["check_id"], item["resource"]), []).append(item["file_path"])
    return out


def under(found, folder, inside=True):
    """The findings with their files in the top folder ``folder`` of the scanned tree (or, with
    ``inside=False``, in any other)."""
    out = {}
    for pair, paths in found.items():
        for path in paths:
            if (path.lstrip("/").split("/", 1)[0] == folder) == inside:
                out.setdefault(pair, []).append(path)
    return out


def compare(found, allowed):
    """(found but not allowed, allowed but not found), each sorted."""
    return sorted(set(found) - set(allowed)), sorted(set(allowed) - set(found))


def stage(build, dest):
    """Copy the manifests (.yaml/.yml) of a build directory to ``dest``, keeping their paths."""
    for dirpath, _dirs, files in os.walk(build):
        for name in files:
            if name.endswith((".yaml", ".yml")):
                src = os.path.join(dirpath, name)
                target = os.path.join(dest, os.path.relpath(src, build))
                os.makedirs(os.path.dirname(target), exist_ok=True)
                shutil.copyfile(src, target)


def write_canary(example_build, dest):
    """The example's device plugin DaemonSet, privileged and in the host's PID namespace."""
    with open(os.path.join(example_build, "cluster", "device-plugin", "06-daemonset-nvidia-device-plugin.yaml")) as handle:
        daemonset = yaml.safe_load(handle)
    spec = daemonset["spec"]["template"]["spec"]
    spec["hostPID"] = True
    spec["containers"][0].setdefault("securityContext", {})["privileged"] = True
    os.makedirs(dest)
    with open(os.path.join(dest, "daemonset.yaml"), "w") as handle:
        yaml.safe_dump(daemonset, handle)


# ------------------------------------------------------------------ the helpers themselves (checks that can fail)
GROUP = {"kind": "inherent", "why": "w", "checks": ["CKV_K8S_39"], "resources": ["DaemonSet.a.b"]}


@pytest.mark.parametrize("found,new,stale", [
    ({("CKV_K8S_39", "DaemonSet.a.b"): ["/x"]}, [], []),
    ({("CKV_K8S_39", "DaemonSet.a.b"): ["/x"], ("CKV_K8S_16", "DaemonSet.a.b"): ["/x"]},
     [("CKV_K8S_16", "DaemonSet.a.b")], []),
    ({("CKV_K8S_39", "DaemonSet.a.c"): ["/x"]}, [("CKV_K8S_39", "DaemonSet.a.c")], [("CKV_K8S_39", "DaemonSet.a.b")]),
    ({}, [], [("CKV_K8S_39", "DaemonSet.a.b")]),
])
def test_compare_names_new_and_stale_pairs(found, new, stale):
    assert compare(found, baseline_pairs({"groups": [GROUP]})) == (new, stale)


@pytest.mark.parametrize("change", [{"kind": "fine"}, {"why": " "}, {"checks": []}, {"resources": None},
                                    {"kind": "tracked", "why": "later"}])
def test_a_malformed_group_is_refused(change):
    with pytest.raises(ValueError):
        baseline_pairs({"groups": [dict(GROUP, **change)]})


def test_a_pair_in_two_groups_is_refused():
    with pytest.raises(ValueError, match="in groups 0 and 1"):
        baseline_pairs({"groups": [GROUP, dict(GROUP, checks=["CKV_K8S_25", "CKV_K8S_39"])]})


def test_the_baseline_file_is_well_formed():
    with open(BASELINE) as handle:
        pairs = baseline_pairs(yaml.safe_load(handle))
    assert ("CKV_K8S_39", "DaemonSet.nvidia-dcgm-exporter.dcgm-exporter") in pairs  # SYS_ADMIN for DCGM


def test_under_splits_by_top_folder():
    found = {("C", "R"): ["/zz-canary/a.yaml", "/example/b.yaml"], ("D", "R"): ["/example/c.yaml"]}
    assert under(found, CANARY) == {("C", "R"): ["/zz-canary/a.yaml"]}
    assert under(found, CANARY, inside=False) == {("C", "R"): ["/example/b.yaml"], ("D", "R"): ["/example/c.yaml"]}


# ------------------------------------------------------------------ one checkov run over every render
@pytest.fixture(scope="module")
def report(tmp_path_factory):
    tree = tmp_path_factory.mktemp("checkov") / "tree"
    example = None
    for label, inventory, extra in RENDERS:
        rc, log, build = rendered_site(tmp_path_factory, *extra, inventory=inventory)
        assert rc == 0, (label, log[-3000:])
        stage(build, tree / label.replace(" ", "_"))
        if inventory == "inventories/example" and not extra:
            example = build
    write_canary(example, tree / CANARY)
    proc = subprocess.run(["bash", CHECKOV, "-d", str(tree), "--framework", "kubernetes", "-o", "json", "--quiet"],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]  # 1: there are failed checks
    return json.loads(proc.stdout)


def test_checkov_read_every_manifest(report):
    for part in report if isinstance(report, list) else [report]:
        assert part["summary"]["parsing_errors"] == 0, part["results"].get("parsing_errors")


def test_every_finding_is_on_the_baseline_and_every_baseline_entry_is_found(report):
    with open(BASELINE) as handle:
        allowed = baseline_pairs(yaml.safe_load(handle))
    renders = under(findings(report), CANARY, inside=False)
    new, stale = compare(renders, allowed)
    assert not new, "checkov findings not on tests/fixtures/checkov/baseline.yml (fix them, or add them to a " \
        "group whose why covers them):\n" + "\n".join("%s %s   (%s)" % (c, r, ", ".join(sorted(renders[(c, r)])[:3]))
                                                     for c, r in new)
    assert not stale, "on the baseline but found in no render (remove them):\n" + \
        "\n".join("%s %s" % pair for pair in stale)


def test_a_new_finding_on_a_baselined_resource_is_reported(report):
    with open(BASELINE) as handle:
        allowed = baseline_pairs(yaml.safe_load(handle))
    new, _stale = compare(under(findings(report), CANARY), allowed)
    # privileged; host PID namespace (today exactly these two; hardening the DaemonSet may add others)
    assert {("CKV_K8S_16", PLUGIN), ("CKV_K8S_17", PLUGIN)} <= set(new), new
