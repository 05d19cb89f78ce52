"""The in-process module runner of the controller-side action plugins: it must give a module the same
parameters and return the same result as Ansible's own module run (AnsibleModule in a new interpreter)."""
import datetime
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.render import object_filename
from ansible_collections.gpufleet.k8s.plugins.modules import build_files, render_manifests
from ansible_collections.gpufleet.k8s.plugins.plugin_utils.controller_module import (
    ControllerModule, ModuleExit, plain, run_in_process)

COLLECTIONS = os.path.abspath(os.path.join(os.path.dirname(__file__), *[".."] * 7))
MODULES = os.path.join(COLLECTIONS, "ansible_collections", "gpufleet", "k8s", "plugins", "modules")


class Tagged(str):
    """Stands for Ansible's tagged strings (str subclasses that YAML's safe dumper cannot represent)."""


def test_plain_gives_the_json_types_a_module_receives():
    value = {Tagged("k"): (Tagged("a"), 1, 2.5, True, None, {1}), "d": datetime.date(2026, 12, 1)}
    out = plain(value)
    assert out == {"k": ["a", 1, 2.5, True, None, [1]], "d": "2026-12-01"}
    assert list(out)[0].__class__ is str and out["k"][0].__class__ is str


def test_plain_refuses_what_json_cannot_carry():
    with pytest.raises(TypeError, match="object"):
        plain({"x": object()})


def test_unknown_or_mistyped_arguments_fail_naming_the_module_and_the_argument():
    with pytest.raises(ModuleExit) as exc:
        ControllerModule(build_files.argspec(), {"dest": "/x", "colour": "red"}, name="gpufleet.k8s.build_files")
    assert exc.value.result["failed"] is True
    assert "gpufleet.k8s.build_files" in exc.value.result["msg"] and "colour" in exc.value.result["msg"]
    with pytest.raises(ModuleExit) as exc:
        ControllerModule(build_files.argspec(), {"dest": "/x", "list": "maybe"})
    assert "list" in exc.value.result["msg"]


def test_defaults_and_types_come_from_the_module_argspec():
    module = ControllerModule(build_files.argspec(), {"dest": "~/x"}, check_mode=True, diff=True)
    assert module.params["dest"] == os.path.expanduser("~/x")  # type: path
    assert module.params["files"] == {} and module.params["absent"] == [] and module.params["list"] is False
    assert module.check_mode and module._diff


def _module_run(module_file, args, check_mode=False, diff=False):
    """Run the module file the way Ansible does: a new interpreter, AnsibleModule reading the args file."""
    args = dict(args, _ansible_check_mode=check_mode, _ansible_diff=diff)
    env = dict(os.environ, PYTHONPATH=COLLECTIONS)
    with open(os.path.join(str(args["dest"]) + ".args"), "w") as handle:
        json.dump({"ANSIBLE_MODULE_ARGS": args}, handle)
    out = subprocess.run([sys.executable, module_file.__file__, str(args["dest"]) + ".args"], env=env,
                         capture_output=True, text=True, check=False)
    result = json.loads(out.stdout)
    result.pop("invocation", None)
    return result


@pytest.mark.parametrize("check_mode", [False, True])
def test_in_process_and_module_runs_give_the_same_result_and_files(tmp_path, check_mode):
    objects = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "n"},
                "data": {"k": Tagged("v")}}]
    stale = object_filename(7, {"kind": "Secret", "metadata": {"name": "old"}})
    results, trees = [], []
    for how in ("in-process", "module"):
        dest = tmp_path / how
        dest.mkdir()
        (dest / stale).write_text("stale\n")
        args = {"dest": str(dest), "objects": objects}
        if how == "in-process":
            result = run_in_process(render_manifests, args, check_mode=check_mode, diff=True)
        else:
            result = _module_run(render_manifests, plain(args), check_mode=check_mode, diff=True)
        results.append(json.loads(json.dumps(result).replace(str(dest), "DEST")))
        trees.append(sorted((p.name, p.read_text()) for p in dest.iterdir()))
    assert results[0] == results[1]
    assert trees[0] == trees[1]
    assert results[0]["changed"] is True and results[0]["removed"] == ["DEST/" + stale]


def test_fail_json_and_warnings_reach_the_result(tmp_path):
    result = run_in_process(build_files, {"dest": str(tmp_path), "files": {"../escape": "x"}})
    assert result["failed"] is True and "../escape" in result["msg"]
    assert not (tmp_path.parent / "escape").exists()
    module = ControllerModule(build_files.argspec(), {"dest": str(tmp_path)})
    module.warn("careful")
    with pytest.raises(ModuleExit) as exc:
        module.exit_json(changed=True)
    assert exc.value.result == {"changed": True, "warnings": ["careful"]}
