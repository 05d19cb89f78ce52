"""The node stage's converged stamp (module_utils/node/node_stamp.py): fingerprint, comparison, inputs digest.

Real parts where they run here: files on a real temporary tree, the real dpkg-query of this Debian
machine. systemctl output is a recorded sample from a Debian 12 systemd container (PID 1 of this
machine is not systemd); rpm output follows rpm's --qf format (no rpm database here).
"""
import os
import subprocess

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.node import node_stamp as ns
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError, Problems

SYSTEMCTL_SHOW = """Id=containerd.service
ActiveState=active
UnitFileState=enabled

Id=nvidia-persistenced.service
ActiveState=inactive
UnitFileState=

Id=k3s.service
ActiveState=inactive
UnitFileState=
"""
DPKG = "containerd\t1.6.20~ds1-1+deb12u3\tii \nnvidia-driver\t535.261.03-1\thi \nrunc\t1.1.5+ds1-1+deb12u1\tii \n"


def real_run(argv):
    proc = subprocess.run(argv, capture_output=True, text=True)
    return proc.returncode, proc.stdout, proc.stderr


def tree(tmp_path):
    etc = tmp_path / "etc"
    (etc / "apt" / "preferences.d").mkdir(parents=True)
    pin = etc / "apt" / "preferences.d" / "gpufleet-nvidia-driver.pref"
    pin.write_text("Package: nvidia-driver\nPin: version 535.261.03-*\nPin-Priority: 1001\n")
    (etc / "containerd").mkdir()
    (etc / "containerd" / "config.toml").write_text("version = 2\n")
    (tmp_path / "run" / "systemd" / "system").mkdir(parents=True)  # systemd is the running init
    return etc, pin


def watch_for(etc, **extra):
    return ns.normalize_watch(dict({"paths": [str(etc / "apt"), str(etc / "containerd"), str(etc / "cdi")]}, **extra))


# --- watch spec -------------------------------------------------------------------------------

@pytest.mark.parametrize("watch, fragment", [
    ("x", "watch: must be a mapping"),
    ({"paths": ["/etc/apt"], "files": []}, "unknown key(s) files"),
    ({"paths": ["etc/apt"]}, "watch.paths: etc/apt: each path must be absolute"),
    ({"paths": ["/"]}, "must be absolute, normalized and not /"),
    ({"paths": ["/etc/../etc/apt"]}, "normalized"),
    ({"paths": []}, "watch.paths: at least one path"),
    ({"paths": ["/etc/apt"], "packages": "nvidia*"}, "watch.packages: must be a list"),
    ({"paths": ["/etc/apt"], "services": [""]}, "watch.services: must be a list of non-empty strings"),
])
def test_bad_watch_is_refused_naming_the_key(watch, fragment):
    with pytest.raises(GpufleetError) as err:
        ns.normalize_watch(watch)
    assert fragment in err.value.msg


def test_watch_is_sorted_and_deduplicated_so_order_does_not_count():
    a = ns.normalize_watch({"paths": ["/etc/b", "/etc/a", "/etc/a"], "packages": ["z*", "a*"]})
    b = ns.normalize_watch({"paths": ["/etc/a", "/etc/b"], "packages": ["a*", "z*"], "services": []})
    assert a == b == {"paths": ["/etc/a", "/etc/b"], "packages": ["a*", "z*"], "services": []}


def test_covered_and_package_watched():
    watch = ns.normalize_watch({"paths": ["/etc/apt", "/etc/dkms/framework.conf"], "packages": ["*nvidia*", "runc"]})
    assert ns.covered("/etc/apt/preferences.d/x.pref", watch)
    assert ns.covered("/etc/dkms/framework.conf", watch)
    assert not ns.covered("/etc/aptx/y", watch)
    assert not ns.covered("/etc/dkms/other.conf", watch)
    assert ns.package_watched("nvidia-driver=535.261.03-*", watch)
    assert ns.package_watched("libnvidia-container1", watch)
    assert ns.package_watched("runc", watch)
    assert not ns.package_watched("runc-extra", watch)


# --- fingerprint of files ---------------------------------------------------------------------

def test_path_fingerprint_sees_content_mode_new_and_removed_files(tmp_path):
    etc, pin = tree(tmp_path)
    paths = [str(etc / "apt"), str(etc / "cdi")]
    base = ns.fingerprint_paths(paths)
    assert base[str(etc / "cdi")] == "absent"
    assert base[str(pin)].startswith("file ") and "sha256=" in base[str(pin)]
    assert ns.fingerprint_paths(paths) == base  # stable

    pin.write_text(pin.read_text() + "# edited\n")
    edited = ns.fingerprint_paths(paths)
    assert edited[str(pin)] != base[str(pin)]

    os.chmod(str(pin), 0o600)
    assert ns.fingerprint_paths(paths)[str(pin)] != edited[str(pin)]

    (etc / "apt" / "preferences.d" / "new.pref").write_text("x")
    assert str(etc / "apt" / "preferences.d" / "new.pref") in ns.fingerprint_paths(paths)

    pin.unlink()
    assert str(pin) not in ns.fingerprint_paths(paths)


def test_symlink_is_described_by_its_target(tmp_path):
    etc, pin = tree(tmp_path)
    link = etc / "apt" / "link"
    link.symlink_to(pin)
    assert ns.fingerprint_paths([str(etc / "apt")])[str(link)] == "link -> %s" % pin


# --- parsers (recorded real formats) and the real dpkg-query ----------------------------------

def test_parse_systemctl_show_recorded():
    assert ns.parse_systemctl_show(SYSTEMCTL_SHOW) == {
        "containerd.service": "enabled active", "nvidia-persistenced.service": "- inactive", "k3s.service": "- inactive"}


def test_parse_dpkg_keeps_version_and_selection():
    parsed = ns.parse_dpkg(DPKG)
    assert parsed["nvidia-driver"] == "535.261.03-1 hi"
    assert parsed["containerd"] == "1.6.20~ds1-1+deb12u3 ii"


def test_parse_rpm_filters_by_glob():
    out = "nvidia-driver\t3:570.172.08-1.el9\nkernel\t5.14.0-503.el9\nbash\t5.1.8-9.el9\n"
    assert ns.parse_rpm(out, ["*nvidia*", "kernel*"]) == {"nvidia-driver": "3:570.172.08-1.el9", "kernel": "5.14.0-503.el9"}


def test_fingerprint_with_the_real_dpkg_query(tmp_path):
    etc, _pin = tree(tmp_path)
    watch = watch_for(etc, packages=["dpkg", "no-such-package-gpufleet*"])
    state = ns.fingerprint(watch, real_run, sys_root=str(tmp_path))
    version = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "dpkg"], capture_output=True, text=True).stdout
    assert state["packages"] == {"dpkg": "%s ii" % version}  # a glob that matches nothing is not an error
    assert state["kernel"] == os.uname()[2]
    assert state["modules"] == {} and state["gpus"] == []


def test_fingerprint_reads_modules_and_gpus_from_sys_and_proc(tmp_path):
    etc, _pin = tree(tmp_path)
    (tmp_path / "sys" / "module" / "nvidia").mkdir(parents=True)
    (tmp_path / "sys" / "module" / "nvidia" / "version").write_text("535.261.03\n")
    (tmp_path / "sys" / "module" / "nouveau").mkdir()
    (tmp_path / "proc" / "driver" / "nvidia" / "gpus" / "0000:18:00.0").mkdir(parents=True)
    state = ns.fingerprint(watch_for(etc), real_run, sys_root=str(tmp_path))
    assert state["modules"] == {"nvidia": "535.261.03", "nouveau": "loaded"}
    assert state["gpus"] == ["0000:18:00.0"]


def test_fingerprint_fails_clearly_without_a_package_manager(tmp_path):
    etc, _pin = tree(tmp_path)

    def run(argv):
        return 127, "", "%s: not found" % argv[0]
    with pytest.raises(GpufleetError) as err:
        ns.fingerprint(watch_for(etc, packages=["*nvidia*"]), run, sys_root=str(tmp_path))
    assert "neither dpkg-query nor rpm" in err.value.msg


def test_failing_systemctl_is_an_error_not_a_silent_difference(tmp_path):
    """systemd runs (/run/systemd/system) but systemctl fails for another reason: that would hide drift."""
    etc, _pin = tree(tmp_path)

    def run(argv):
        return (1, "", "Failed to get properties: Access denied") if argv[0] == "systemctl" else real_run(argv)
    with pytest.raises(GpufleetError) as err:
        ns.fingerprint(watch_for(etc, services=["containerd.service"]), run, sys_root=str(tmp_path))
    assert "systemctl show failed: Failed to get properties: Access denied" in err.value.msg


NOT_BOOTED = "System has not been booted with systemd as init system (PID 1). Can't operate.\nFailed to connect to bus: Host is down"


@pytest.mark.parametrize("booted, systemctl", [
    (False, None),                      # no /run/systemd/system: systemctl is never asked
    (True, (127, "", "systemctl: not found")),            # no systemctl binary
    (True, (1, "", NOT_BOOTED)),        # systemd installed, not PID 1 (what systemctl really prints)
], ids=["not-booted-with-systemd", "systemctl-not-found", "systemctl-says-not-booted"])
def test_no_service_manager_is_an_answer_not_a_failure(tmp_path, booted, systemctl):
    """Issue 15: a host without systemd (or with systemd not PID 1) gets 'no service manager'."""
    etc, _pin = tree(tmp_path)
    if not booted:
        (tmp_path / "run" / "systemd" / "system").rmdir()
    asked = []

    def run(argv):
        if argv[0] == "systemctl":
            asked.append(argv)
            return systemctl
        return real_run(argv)
    units = ["containerd.service", "nvidia-persistenced.service"]
    watch = watch_for(etc, services=units)
    state = ns.fingerprint(watch, run, sys_root=str(tmp_path))
    assert state["services"] == {u: "unknown (no service manager)" for u in units}
    assert bool(asked) == booted
    # the same answer twice is converged; systemd appearing later is a difference
    stamp = ns.make_stamp("sha256:in", watch, state)
    assert ns.compare(stamp, "sha256:in", watch, ns.fingerprint(watch, run, sys_root=str(tmp_path))) == (True, [])
    (tmp_path / "run" / "systemd" / "system").mkdir(parents=True, exist_ok=True)
    converged, reasons = ns.compare(stamp, "sha256:in", watch, ns.fingerprint(watch, fake_run(), sys_root=str(tmp_path)))
    assert not converged
    assert "service containerd.service: unknown (no service manager) -> enabled active" in reasons


def test_real_systemctl_on_this_machine_without_systemd_as_pid1(tmp_path):
    """This machine's PID 1 is not systemd: the real systemctl (if installed) must not fail the fingerprint."""
    etc, _pin = tree(tmp_path)
    state = ns.fingerprint(watch_for(etc, services=["containerd.service"]), real_run)
    if os.path.isdir("/run/systemd/system"):  # a developer machine booted with systemd: a real answer
        assert state["services"]["containerd.service"] != "unknown (no service manager)"
    else:
        assert state["services"] == {"containerd.service": "unknown (no service manager)"}


# --- check: stamp vs now ----------------------------------------------------------------------

def fake_run(dpkg=DPKG, show=SYSTEMCTL_SHOW):
    def run(argv):
        return (0, dpkg, "") if argv[0] == "dpkg-query" else (0, show, "")
    return run


def test_converged_only_when_inputs_watch_and_state_all_match(tmp_path):
    etc, pin = tree(tmp_path)
    watch = watch_for(etc, packages=["*nvidia*"], services=["containerd.service"])
    state = ns.fingerprint(watch, fake_run(), sys_root=str(tmp_path))
    stamp = ns.load(ns.dump(ns.make_stamp("sha256:in", watch, state)))
    now = ns.fingerprint(watch, fake_run(), sys_root=str(tmp_path))
    assert ns.compare(stamp, "sha256:in", watch, now) == (True, [])

    assert ns.compare(None, "sha256:in", watch, now)[1][0].startswith("no converged stamp")
    assert ns.compare(stamp, "sha256:other", watch, now) == (
        False, ["inputs changed since the last converge (a variable, the playbook or gpufleet itself)"])
    other_watch = watch_for(etc, packages=["*nvidia*", "runc"], services=["containerd.service"])
    assert ns.compare(stamp, "sha256:in", other_watch, now)[1] == ["the watch list changed since the last converge"]

    pin.write_text("edited\n")
    unheld = fake_run(dpkg=DPKG.replace("\thi ", "\tii "), show=SYSTEMCTL_SHOW.replace("ActiveState=active", "ActiveState=failed"))
    converged, reasons = ns.compare(stamp, "sha256:in", watch, ns.fingerprint(watch, unheld, sys_root=str(tmp_path)))
    assert not converged
    assert any(r.startswith("path %s: file " % pin) for r in reasons)
    assert "package nvidia-driver: 535.261.03-1 hi -> 535.261.03-1 ii" in reasons
    assert "service containerd.service: enabled active -> enabled failed" in reasons


def test_kernel_and_module_changes_are_differences():
    base = {"paths": {}, "packages": {}, "services": {}, "kernel": "6.1.0-40-amd64", "modules": {"nvidia": "535.261.03"}, "gpus": []}
    newer = dict(base, kernel="6.1.0-41-amd64", modules={})
    assert ns.differences(base, newer) == ['kernel: "6.1.0-40-amd64" -> "6.1.0-41-amd64"',
                                           'modules: {"nvidia": "535.261.03"} -> {}']


def test_differences_are_capped_but_counted():
    old = {"paths": dict(("/etc/f%02d" % i, "absent") for i in range(15))}
    new = {"paths": dict(("/etc/f%02d" % i, "file") for i in range(15))}
    reasons = ns.differences(old, new, limit=10)
    assert len(reasons) == 11 and reasons[-1] == "... and 5 more"


@pytest.mark.parametrize("text", [None, "", "not json", "[]", '{"format": 99, "state": {}}', '{"format": 1}'])
def test_unreadable_or_foreign_stamp_means_a_full_run(text):
    assert ns.load(text) is None


# --- inputs digest ----------------------------------------------------------------------------

def code_tree(tmp_path):
    role = tmp_path / "roles" / "r"
    (role / "tasks").mkdir(parents=True)
    (role / "tasks" / "main.yml").write_text("- ansible.builtin.debug: {msg: hi}\n")
    (role / "__pycache__").mkdir()
    (role / "__pycache__" / "x.pyc").write_bytes(b"\0")
    return role


def test_inputs_digest_counts_prefixed_variables_and_code(tmp_path):
    role = code_tree(tmp_path)
    variables = {"nvidia_driver_version": "535", "gpufleet_apply": True, "ansible_host": "10.0.0.1", "other": 1}
    base = ns.inputs_digest(variables, ["nvidia_driver_", "gpufleet_"], [str(role)])
    assert base.startswith("sha256:")
    reordered = dict(reversed(list(variables.items())))
    assert ns.inputs_digest(reordered, ["gpufleet_", "nvidia_driver_"], [str(role)]) == base
    assert ns.inputs_digest(dict(variables, other=2, ansible_host="x"), ["nvidia_driver_", "gpufleet_"], [str(role)]) == base
    assert ns.inputs_digest(dict(variables, nvidia_driver_version="580"), ["nvidia_driver_", "gpufleet_"], [str(role)]) != base
    assert ns.inputs_digest(dict(variables, gpufleet_new=[1]), ["nvidia_driver_", "gpufleet_"], [str(role)]) != base

    (role / "__pycache__" / "x.pyc").write_bytes(b"\1")  # caches do not count
    assert ns.inputs_digest(variables, ["nvidia_driver_", "gpufleet_"], [str(role)]) == base
    (role / "tasks" / "main.yml").write_text("- ansible.builtin.debug: {msg: changed}\n")
    assert ns.inputs_digest(variables, ["nvidia_driver_", "gpufleet_"], [str(role)]) != base


def test_inputs_digest_refuses_a_missing_code_path(tmp_path):
    with pytest.raises(GpufleetError) as err:
        ns.inputs_digest({}, ["gpufleet_"], [str(tmp_path / "nope")])
    assert "code path %s does not exist" % (tmp_path / "nope") in err.value.msg


@pytest.mark.parametrize("value, ok", [(True, True), (False, True), ("false", True), ("Yes", True),
                                       ("sometimes", False), (1, False), (None, False)])
def test_preflight_fast_path_must_be_boolean(value, ok):
    problems = Problems()
    ns.check_inputs({"extra": {"gpufleet_node_fast_path": value}}, {}, problems)
    assert (problems.errors == []) is ok
    if not ok:
        assert problems.errors[0].startswith("gpufleet_node_fast_path: ") and "use one of: true" in problems.errors[0]


def test_the_fast_path_switch_itself_is_not_an_input(tmp_path):
    role = code_tree(tmp_path)
    base = ns.inputs_digest({"gpufleet_apply": True}, ["gpufleet_"], [str(role)])
    assert ns.inputs_digest({"gpufleet_apply": True, "gpufleet_node_fast_path": "false"}, ["gpufleet_"], [str(role)]) == base
