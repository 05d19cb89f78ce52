"""What a refused input prints (issue 39): the variable, the problem with its value and the allowed values, in
at most 15 lines at default verbosity - not the role's whole argument spec (265 lines before, through
gpufleet.k8s.default, the project's stdout callback) - and site.yml on a fleet inventory names
playbooks/fleet.yml instead of a missing gpufleet_cluster_name."""
import re

from ansible_run import flat, run_site


def failure_block(out):
    """The lines from the first ``fatal:`` up to the recap."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("fatal:"))
    end = next(i for i, line in enumerate(lines) if i > start and line.startswith("PLAY RECAP"))
    return [line for line in lines[start:end] if line.strip()]


def test_a_refused_choice_prints_the_problem_only(tmp_path):
    rc, out = run_site(tmp_path / "b", "-e", "gpufleet_addons_mode=bogus")
    assert rc != 0
    block = failure_block(out)
    text = flat("\n".join(block))
    assert len(block) <= 15, "\n".join(block)
    assert "gpufleet_addons_mode must be one of: standalone, operator, none, got: bogus" in text, text
    assert "argument_spec_data" not in out and "gpufleet_upgrade_serial" not in out, out[-2000:]
    assert not (tmp_path / "b").exists()


def test_the_whole_spec_is_still_there_at_vvv(tmp_path):
    rc, out = run_site(tmp_path / "b", "-e", "gpufleet_addons_mode=bogus", "-vvv")
    assert rc != 0 and "argument_spec_data" in out and "gpufleet_upgrade_serial" in out


def test_site_on_a_fleet_inventory_names_the_fleet_playbook(tmp_path):
    rc, out = run_site(tmp_path / "b", inventory="inventories/fleet-example")
    assert rc != 0
    assert "playbooks/fleet.yml" in flat(out) and "missing required arguments" not in out, out[-2000:]
    assert re.search(r"localhost\s+: ok=0 ", out), out[-1000:]
