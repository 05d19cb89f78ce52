"""module_utils/node/mig_layout.py: parsing the documented nvidia-smi formats, planning, refusals, apply.

Inputs: tests/fixtures/nvidia-smi/mig (hand-written in NVIDIA's documented formats, see its README),
the recorded H200 XML (product name), and tests/standin/nvidia-smi-mig.py (the labelled stand-in) run
as a real program for apply and the boot-time CLI.
"""
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.node import mig_layout as ml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIX = os.path.join(ROOT, "tests", "fixtures", "nvidia-smi")
STANDIN = os.path.join(ROOT, "tests", "standin", "nvidia-smi-mig.py")


def fixture(name):
    with open(os.path.join(FIX, "mig", name)) as handle:
        return handle.read()


def test_gpu_query_rows():
    gpus = ml.parse_gpus(fixture("h100-query-mig-on.csv"))
    assert [(g["index"], g["name"], g["mig_capable"], g["mig"], g["mig_pending"]) for g in gpus] == [
        (0, "NVIDIA H100 80GB HBM3", True, True, True), (1, "NVIDIA H100 80GB HBM3", True, False, True)]
    assert ml.parse_gpus(fixture("t4-query.csv"))[0]["mig_capable"] is False
    with pytest.raises(ml.MigError, match="unexpected nvidia-smi --query-gpu line"):
        ml.parse_gpus("0, GPU-x, NVIDIA H100\n")


def test_lgip_lgi_lci_tables():
    profiles = ml.parse_profiles(fixture("h100-lgip.txt"))
    assert sorted(profiles[0]) == ["1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"]
    assert profiles[0]["1g.10gb"] == {"id": 19, "free": 4, "total": 7}
    assert profiles[0]["7g.80gb"] == {"id": 0, "free": 0, "total": 1}
    gis = ml.parse_gpu_instances(fixture("h100-lgi-3g-2x1g.txt"))
    assert [(g["gpu"], g["profile"], g["profile_id"], g["gi"], g["placement"]) for g in gis] == [
        (0, "3g.40gb", 9, 2, "4:4"), (0, "1g.10gb", 19, 9, "2:1"), (0, "1g.10gb", 19, 10, "3:1")]
    cis = ml.parse_compute_instances(fixture("h100-lci-3g-2x1g.txt"))
    assert [(c["gpu"], c["gi"], c["profile"], c["ci"]) for c in cis] == [(0, 2, "3g.40gb", 0), (0, 9, "1g.10gb", 0)]
    assert ml.parse_gpu_instances(fixture("lgi-none.txt")) == [] and ml.parse_compute_instances(fixture("lci-none.txt")) == []


def test_catalog_knows_the_recorded_h200_by_its_product_name():
    name = ET.parse(os.path.join(FIX, "h200-580-recorded.xml")).getroot().find("gpu/product_name").text
    assert ml.catalog_profiles(name)["1g.18gb"] == 7 and "1g.10gb" not in ml.catalog_profiles(name)
    assert ml.catalog_profiles("NVIDIA H100 80GB HBM3")["1g.10gb"] == 7
    assert ml.catalog_profiles("NVIDIA A100-SXM4-40GB")["1g.5gb"] == 7
    assert ml.catalog_profiles("Tesla T4") is None


def fake(outputs):
    """run() answering from {command text: (rc, out)}, recording the commands."""
    calls = []

    def run(argv):
        calls.append(" ".join(argv))
        rc, out = outputs[" ".join(argv[1:])]
        return rc, out, ""
    return run, calls


QUERY = " ".join(ml.GPU_QUERY)


def h100_state():
    run, calls = fake({QUERY: (0, fixture("h100-query-mig-on.csv")), "mig -lgipp": (0, fixture("h100-lgipp.txt")),
                       "mig -lgip": (0, fixture("h100-lgip.txt")),
                       "mig -lgi": (0, fixture("h100-lgi-3g-2x1g.txt")), "mig -lci": (0, fixture("h100-lci-3g-2x1g.txt"))})
    return ml.read_state(run), calls


def test_one_query_then_the_three_mig_lists():
    _state, calls = h100_state()
    assert calls == ["nvidia-smi " + QUERY, "nvidia-smi mig -lgipp", "nvidia-smi mig -lgip", "nvidia-smi mig -lgi",
                     "nvidia-smi mig -lci"]
    run, calls = fake({QUERY: (0, fixture("h100-query-mig-off.csv"))})
    assert ml.read_state(run)["gpu_instances"] == [] and len(calls) == 1   # MIG off everywhere: nothing to list
    run, calls = fake({QUERY: (0, fixture("h100-query-mig-on.csv")), "mig -lgip": (0, fixture("h100-lgip.txt")),
                       "mig -lgipp": (2, "Invalid combination of input arguments"),   # a driver without -lgipp
                       "mig -lgi": (6, fixture("lgi-none.txt")), "mig -lci": (6, fixture("lci-none.txt"))})
    state = ml.read_state(run)
    assert state["compute_instances"] == [] and state["placements"] == {}


def test_lgipp_placements():
    placements = ml.parse_placements(fixture("h100-lgipp.txt"))
    assert placements == {0: {19: (1, (0, 1, 2, 3, 4, 5, 6)), 20: (1, (0, 1, 2, 3, 4, 5, 6)), 15: (2, (0, 2, 4, 6)),
                              14: (2, (0, 2, 4)), 9: (4, (0, 4)), 5: (4, (0,)), 0: (8, (0,))}}


@pytest.mark.parametrize("wanted, profiles, devices, steps", [
    # GPU 0 has 3g + 2x 1g with one compute instance missing; GPU 1 waits for MIG mode (pending)
    ("present", {"1g.10gb": "all"}, "all", {
        0: [["nvidia-smi", "mig", "-i", "0", "-dci"], ["nvidia-smi", "mig", "-i", "0", "-dgi"],
            ["nvidia-smi", "mig", "-i", "0", "-cgi", ",".join("1g.10gb:%d" % i for i in range(7)), "-C"]],
        1: [["nvidia-smi", "-i", "1", "-mig", "1"],
            ["nvidia-smi", "mig", "-i", "1", "-cgi", ",".join("1g.10gb:%d" % i for i in range(7)), "-C"]]}),
    ("present", {"3g.40gb": 1, "1g.10gb": 2}, [0], {   # same profiles, but GI 10 lacks its compute instance
        0: [["nvidia-smi", "mig", "-i", "0", "-dci"], ["nvidia-smi", "mig", "-i", "0", "-dgi"],
            ["nvidia-smi", "mig", "-i", "0", "-cgi", "3g.40gb:0,1g.10gb:4,1g.10gb:5", "-C"]]}),
    ("absent", None, "all", {
        0: [["nvidia-smi", "mig", "-i", "0", "-dci"], ["nvidia-smi", "mig", "-i", "0", "-dgi"],
            ["nvidia-smi", "-i", "0", "-mig", "0"]],
        1: [["nvidia-smi", "-i", "1", "-mig", "0"]]}),
])
def test_plan_commands(wanted, profiles, devices, steps):
    state, _calls = h100_state()
    plan = ml.plan(state, wanted, profiles, devices)
    assert dict((g["index"], g["steps"]) for g in plan["gpus"]) == steps and plan["changed"]


def test_plan_is_empty_when_the_read_back_equals_it():
    state, _calls = h100_state()
    state["compute_instances"].append({"gpu": 0, "gi": 10, "profile": "1g.10gb", "profile_id": 0, "ci": 0})
    plan = ml.plan(state, "present", {"3g.40gb": 1, "1g.10gb": 2}, [0])
    assert not plan["changed"] and plan["gpus"][0]["steps"] == []
    assert ml.diff(plan) == {"before": "GPU 0 (NVIDIA H100 80GB HBM3): MIG enabled, 2x 1g.10gb, 1x 3g.40gb\n",
                             "after": "GPU 0 (NVIDIA H100 80GB HBM3): MIG enabled, 2x 1g.10gb, 1x 3g.40gb\n"}


@pytest.mark.parametrize("profiles, devices, message", [
    ({"1g.18gb": "all"}, "all", "pool_var: '1g.18gb' is not a MIG profile GPU 0 (NVIDIA H100 80GB HBM3) offers; use one "
     "of: 1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb"),
    ({"3g.40gb": 3}, "all", "pool_var['3g.40gb']: 3 instances do not fit GPU 0 (NVIDIA H100 80GB HBM3), which holds at most 2"),
    ({"4g.40gb": 1, "3g.40gb": 1, "1g.10gb": 1}, "all", "needs 8 compute slices"),
    ({"1g.10gb": 0}, "all", "pool_var['1g.10gb']: 0 is not a count; use an integer >= 1 or all"),
    ({}, "all", "pool_var: is empty"),
    ({"1g.10gb": 1}, [0, 5], "gpu_mig_devices: GPU index(es) 5 do not exist on this host; use 0, 1 or all"),
])
def test_refusals_name_the_variable_and_the_allowed_values(profiles, devices, message):
    state, _calls = h100_state()
    with pytest.raises(ml.MigError) as err:
        ml.plan(state, "present", profiles, devices, profiles_var="pool_var")
    assert message in str(err.value)


def test_a_gpu_without_mig_is_refused_and_skipped_by_absent():
    run, _calls = fake({QUERY: (0, fixture("t4-query.csv"))})
    state = ml.read_state(run)
    with pytest.raises(ml.MigError, match="GPU 0 \\(Tesla T4\\) has no MIG"):
        ml.plan(state, "present", {"1g.5gb": 1})
    assert ml.plan(state, "absent")["changed"] is False


def test_profiles_of_a_gpu_with_mig_off_come_from_the_catalog():
    run, _calls = fake({QUERY: (0, fixture("h100-query-mig-off.csv"))})
    plan = ml.plan(ml.read_state(run), "present", {"2g.20gb": "all"}, [1])
    assert plan["gpus"][0]["steps"] == [["nvidia-smi", "-i", "1", "-mig", "1"],
                                        ["nvidia-smi", "mig", "-i", "1", "-cgi", "2g.20gb:0,2g.20gb:2,2g.20gb:4", "-C"]]


@pytest.fixture()
def standin(tmp_path, monkeypatch):
    """run() executing the stand-in nvidia-smi with its state in tmp_path."""
    monkeypatch.setenv("NVIDIA_SMI_STANDIN_STATE", str(tmp_path / "state.json"))
    monkeypatch.setenv("NVIDIA_SMI_STANDIN_GPUS", "2")

    def run(argv):
        assert argv[0] == "nvidia-smi"
        proc = subprocess.run([sys.executable, STANDIN] + argv[1:], capture_output=True, text=True, check=False)
        return proc.returncode, proc.stdout, proc.stderr
    run("nvidia-smi --query-gpu=index --format=csv,noheader".split())
    run.state = tmp_path / "state.json"
    return run


def standin_state(run):
    return json.loads(run.state.read_text())


def test_converge_check_idempotent_change_and_absent_on_the_standin(standin):
    before = standin.state.read_text()
    check = ml.converge(standin, "present", {"1g.18gb": "all"}, check=True)
    assert check["changed"] and check["commands"] == [] and standin.state.read_text() == before
    done = ml.converge(standin, "present", {"1g.18gb": "all"})
    assert done["commands"][:2] == ["nvidia-smi -i 0 -mig 1",
                                    "nvidia-smi mig -i 0 -cgi " + ",".join("1g.18gb:%d" % i for i in range(7)) + " -C"]
    assert ml.converge(standin, "present", {"1g.18gb": "all"})["changed"] is False
    changed = ml.converge(standin, "present", {"3g.71gb": 1, "2g.35gb": 2}, [1])
    assert changed["commands"] == ["nvidia-smi mig -i 1 -dci", "nvidia-smi mig -i 1 -dgi",
                                   "nvidia-smi mig -i 1 -cgi 2g.35gb:0,2g.35gb:2,3g.71gb:4 -C"]
    gpus = standin_state(standin)["gpus"]
    assert sorted(g["profile"] for g in gpus[1]["gis"]) == ["2g.35gb", "2g.35gb", "3g.71gb"] and len(gpus[0]["gis"]) == 7
    gone = ml.converge(standin, "absent", None)
    assert gone["changed"] and not any(g["mig"] or g["gis"] for g in standin_state(standin)["gpus"])
    assert ml.converge(standin, "absent", None)["changed"] is False


def set_needs_reset(run):
    state = standin_state(run)
    for gpu in state["gpus"]:
        gpu["needs_reset"] = True
    run.state.write_text(json.dumps(state))


def test_a_pending_mig_mode_is_reset_when_allowed(standin):
    set_needs_reset(standin)
    done = ml.converge(standin, "present", {"7g.141gb": 1}, [0])
    assert done["commands"] == ["nvidia-smi -i 0 -mig 1", "nvidia-smi -i 0 -r",
                                "nvidia-smi mig -i 0 -cgi 7g.141gb:0 -C"] and done["reboot_required"] == []


def test_a_pending_mig_mode_without_reset_waits_for_a_reboot(standin):
    set_needs_reset(standin)
    done = ml.converge(standin, "present", {"7g.141gb": 1}, allow_reset=False)
    assert done["reboot_required"] == [0, 1] and done["commands"] == ["nvidia-smi -i 0 -mig 1", "nvidia-smi -i 1 -mig 1"]
    assert [(g["mig"], g["mig_pending"], g["gis"]) for g in standin_state(standin)["gpus"]] == [(False, True, [])] * 2
    # the reboot: pending modes take effect; the boot-time run creates the instances
    state = standin_state(standin)
    for gpu in state["gpus"]:
        gpu["mig"] = gpu["mig_pending"]
    standin.state.write_text(json.dumps(state))
    done = ml.converge(standin, "present", {"7g.141gb": 1})
    assert done["commands"] == ["nvidia-smi mig -i 0 -cgi 7g.141gb:0 -C", "nvidia-smi mig -i 1 -cgi 7g.141gb:0 -C"]


def test_a_failed_command_is_named(standin):
    ml.converge(standin, "present", {"1g.18gb": 1}, [0])
    real = standin

    def broken(argv):
        if "-cgi" in argv:
            return 2, "Unable to create a GPU instance on GPU 0 using profile 4g.71gb: Insufficient Resources\n", ""
        return real(argv)
    with pytest.raises(ml.MigError, match="-cgi 4g.71gb:0 -C failed \\(exit 2\\): Unable to create"):
        ml.converge(broken, "present", {"4g.71gb": 1}, [0])


def test_boot_time_cli_applies_the_config_document(standin, tmp_path, monkeypatch):
    config = tmp_path / "mig-config.json"
    config.write_text(json.dumps(ml.config_document("present", {"2g.35gb": "all"})))
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "nvidia-smi").write_text("#!/bin/sh\nexec %s %s \"$@\"\n" % (sys.executable, STANDIN))
    (bindir / "nvidia-smi").chmod(0o755)
    env = dict(os.environ, PATH=str(bindir) + os.pathsep + os.environ["PATH"])
    program = os.path.join(ROOT, "roles", "gpu_mig", "files", "mig_layout.py")   # what the role installs
    proc = subprocess.run([sys.executable, program, "apply", str(config)], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "gpufleet-mig: GPU 0 (NVIDIA H200): MIG enabled, 3x 2g.35gb; GPU 1 (NVIDIA H200): MIG enabled, 3x 2g.35gb" in proc.stdout
    config.write_text(json.dumps({"version": "v1", "mig-configs": {"other": []}}))
    proc = subprocess.run([sys.executable, program, "apply", str(config)], capture_output=True, text=True, env=env)
    assert proc.returncode == 1 and "not a gpufleet MIG config" in proc.stderr


def test_config_document_round_trip():
    doc = ml.config_document("present", {"1g.18gb": "all"}, [0, 1])
    assert doc == {"version": "v1", "mig-configs": {"gpufleet": [
        {"devices": [0, 1], "mig-enabled": True, "mig-devices": {"1g.18gb": "all"}}]}}
    assert ml.from_config_document(doc) == ("present", {"1g.18gb": "all"}, [0, 1])
    assert ml.from_config_document(ml.config_document("absent", {})) == ("absent", {}, "all")


# Placement (NVIDIA's MIG user guide: GPU instances occupy memory slices; on an 8-slice A100/H100/H200 a 1g with
# 1/8 of the memory starts at slice 0-6, a 1g with 1/4 at 0/2/4/6, 2g at 0/2/4, 3g at 0/4 taking 4 slices, 4g at
# 0 taking 4, 7g all 8; the A30 has 4 slices: 1g at 0-3, 2g at 0/2, 4g all 4). Expected starts worked out by
# hand from those tables.
def gpu_with_mig_off(name):
    run, _calls = fake({QUERY: (0, fixture(name))})
    return ml.read_state(run)


@pytest.mark.parametrize("query, profiles, cgi", [
    ("a100-40gb-query-mig-off.csv", {"4g.20gb": 1, "3g.20gb": 1}, "4g.20gb:0,3g.20gb:4"),
    ("a100-40gb-query-mig-off.csv", {"2g.10gb": 3, "1g.5gb": 1}, "2g.10gb:0,2g.10gb:2,2g.10gb:4,1g.5gb:6"),
    # the 3g must go to slice 4 for both 2g to fit (a first-fit from slice 0 would strand the second 2g)
    ("a100-40gb-query-mig-off.csv", {"3g.20gb": 1, "2g.10gb": 2}, "2g.10gb:0,2g.10gb:2,3g.20gb:4"),
    ("a100-40gb-query-mig-off.csv", {"3g.20gb": 1, "1g.5gb": 4}, "1g.5gb:0,1g.5gb:1,1g.5gb:2,1g.5gb:3,3g.20gb:4"),
    ("a100-40gb-query-mig-off.csv", {"2g.10gb": 3, "1g.10gb": 1}, "2g.10gb:0,2g.10gb:2,2g.10gb:4,1g.10gb:6"),
    ("a100-40gb-query-mig-off.csv", {"1g.5gb": "all"}, ",".join("1g.5gb:%d" % i for i in range(7))),
    ("a30-query-mig-off.csv", {"2g.12gb": 1, "1g.6gb": 2}, "2g.12gb:0,1g.6gb:2,1g.6gb:3"),
    ("h100-query-mig-off.csv", {"4g.40gb": 1, "1g.20gb": 1, "1g.10gb": 2}, "4g.40gb:0,1g.10gb:4,1g.10gb:5,1g.20gb:6"),
])
def test_placeable_mixes_are_created_at_explicit_placements(query, profiles, cgi):
    plan = ml.plan(gpu_with_mig_off(query), "present", profiles, [0])
    assert plan["gpus"][0]["steps"][-1] == ["nvidia-smi", "mig", "-i", "0", "-cgi", cgi, "-C"]


@pytest.mark.parametrize("query, profiles, counted", [
    # 7 compute slices, but the two 3g take all 8 memory slices
    ("a100-40gb-query-mig-off.csv", {"3g.20gb": 2, "1g.5gb": 1}, "1x 1g.5gb, 2x 3g.20gb"),
    # 5 compute slices; four 1g.10gb take all 8 memory slices
    ("a100-40gb-query-mig-off.csv", {"1g.10gb": 4, "1g.5gb": 1}, "4x 1g.10gb, 1x 1g.5gb"),
    ("a100-40gb-query-mig-off.csv", {"2g.10gb": 2, "1g.10gb": 2, "1g.5gb": 1}, "2x 1g.10gb, 1x 1g.5gb, 2x 2g.10gb"),
    ("a100-40gb-query-mig-off.csv", {"4g.20gb": 1, "1g.10gb": 2, "1g.5gb": 1}, "2x 1g.10gb, 1x 1g.5gb, 1x 4g.20gb"),
    # the A30 has 4 memory slices (the 7-slice count alone let these through)
    ("a30-query-mig-off.csv", {"4g.24gb": 1, "1g.6gb": 1}, "1x 1g.6gb, 1x 4g.24gb"),
    ("a30-query-mig-off.csv", {"2g.12gb": 2, "1g.6gb": 1}, "1x 1g.6gb, 2x 2g.12gb"),
    ("h100-query-mig-off.csv", {"3g.40gb": 2, "1g.10gb+me": 1}, "1x 1g.10gb+me, 2x 3g.40gb"),
])
def test_unplaceable_mixes_are_refused_naming_the_variable_and_profiles(query, profiles, counted):
    with pytest.raises(ml.MigError) as err:
        ml.plan(gpu_with_mig_off(query), "present", profiles, [0], profiles_var="gpufleet_gpu_pools[name=p].sharing.mig_profile")
    assert str(err.value).startswith("gpufleet_gpu_pools[name=p].sharing.mig_profile: %s cannot be placed together on GPU 0"
                                     % counted), str(err.value)
    assert "overlap in its memory slices" in str(err.value)


def test_the_gpus_own_lgipp_placements_win_over_the_catalog():
    state, _calls = h100_state()
    assert ml.plan(state, "present", {"4g.40gb": 1, "3g.40gb": 1}, [0])["changed"]
    # a GPU that reports 3g.40gb only at slice 0 (a hand-edited -lgipp) cannot hold it beside the 4g
    state["placements"] = ml.parse_placements(fixture("h100-lgipp.txt").replace("{0,4}:4", "{0}:4"))
    with pytest.raises(ml.MigError, match="1x 3g.40gb, 1x 4g.40gb cannot be placed together on GPU 0 .*"
                                          "3g.40gb takes 4 of 8 memory slices, starting at 0;"):
        ml.plan(state, "present", {"4g.40gb": 1, "3g.40gb": 1}, [0])
    # GPU 1 (MIG pending, not in -lgipp) is placed from the catalog
    assert ml.plan(state, "present", {"4g.40gb": 1, "3g.40gb": 1}, [1])["gpus"][0]["steps"][-1][-2] == "4g.40gb:0,3g.40gb:4"


def test_an_unplaceable_layout_is_refused_before_the_old_instances_are_destroyed(standin):
    ml.converge(standin, "present", {"1g.18gb": "all"}, [0])
    before = standin.state.read_text()
    log_before = (standin.state.parent / "state.json.log").read_text()
    for check in (True, False):
        with pytest.raises(ml.MigError, match="gpu_mig_profiles: 1x 1g.18gb, 2x 3g.71gb cannot be placed together on "
                                              "GPU 0 \\(NVIDIA H200\\)"):
            ml.converge(standin, "present", {"3g.71gb": 2, "1g.18gb": 1}, [0], check=check)
    assert standin.state.read_text() == before
    assert (standin.state.parent / "state.json.log").read_text() == log_before
    # what the stand-in (like the driver) does with that mix when asked anyway: the third instance fails
    assert standin("nvidia-smi -i 1 -mig 1".split())[0] == 0
    rc, out, _err = standin("nvidia-smi mig -i 1 -cgi 3g.71gb,3g.71gb,1g.18gb -C".split())
    assert rc != 0 and "using profile 1g.18gb: Insufficient Resources" in out


def test_a_refused_gpu_reset_leaves_the_mode_change_to_a_reboot(standin):
    # a pass-through GPU in a VM: the MIG mode stays pending and nvidia-smi -r answers "not supported" (exit 3)
    state = standin_state(standin)
    for gpu in state["gpus"]:
        gpu.update(needs_reset=True, reset_supported=False)
    standin.state.write_text(json.dumps(state))
    done = ml.converge(standin, "present", {"2g.35gb": "all"}, [0])
    assert done["reboot_required"] == [0]
    assert done["commands"] == ["nvidia-smi -i 0 -mig 1", "nvidia-smi -i 0 -r (refused, exit 3: Resetting GPU "
                                "00000000:18:00.0 is not supported.)"]
    assert [(g["mig"], g["mig_pending"], g["gis"]) for g in standin_state(standin)["gpus"]][0] == (False, True, [])


def test_a_layout_already_in_place_is_not_placed_again():
    state, _calls = h100_state()
    # placements under which two 1g.10gb cannot coexist (hand-edited -lgipp): GPU 0 already holds its layout
    # (once GI 10 has its compute instance), so nothing is planned and nothing refused
    state["placements"] = ml.parse_placements(fixture("h100-lgipp.txt").replace("19 Placements: {0,1,2,3,4,5,6}:1",
                                                                               "19 Placement : {0}:1"))
    state["compute_instances"].append({"gpu": 0, "gi": 10, "profile": "1g.10gb", "profile_id": 0, "ci": 0})
    assert ml.plan(state, "present", {"3g.40gb": 1, "1g.10gb": 2}, [0])["changed"] is False
    state["compute_instances"].pop()   # incomplete: it must be recreated, and now cannot be placed
    with pytest.raises(ml.MigError, match="2x 1g.10gb, 1x 3g.40gb cannot be placed together"):
        ml.plan(state, "present", {"3g.40gb": 1, "1g.10gb": 2}, [0])
