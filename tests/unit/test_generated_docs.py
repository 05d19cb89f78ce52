"""The generated reference documentation (scripts/gen-docs.py, the one generator): fresh, complete,
and the generator notices what is stale. Role variable references come from the argument specs
(nested pool options included), the tables from the code that produces them, plugin pages from the
plugins' own documentation."""
import glob
import importlib.util
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLUGINS = os.path.join(ROOT, "collections", "ansible_collections", "gpufleet", "k8s", "plugins")


@pytest.fixture(scope="module")
def gen():
    spec = importlib.util.spec_from_file_location("gen_docs", os.path.join(ROOT, "scripts", "gen-docs.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def files(gen):
    return gen.wanted_files()


def test_generated_docs_are_fresh():
    """The check the test command relies on: run scripts/gen-docs.py after changing an argument
    spec, a plugin's documentation or versions.py / gpu_access.py / containerd_presets.py."""
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gen-docs.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_stale_or_orphaned_page_is_reported(gen, files, tmp_path, monkeypatch):
    changed = dict(files)
    changed["docs/reference/tables.md"] += "hand edit\n"
    assert "docs/reference/tables.md" in gen.stale_files(changed)
    orphan = tmp_path / "docs" / "reference" / "plugins" / "modules" / "gone.md"
    orphan.parent.mkdir(parents=True)
    orphan.write_text("x")
    monkeypatch.setattr(gen, "ROOT", str(tmp_path))
    monkeypatch.setattr(gen, "REFERENCE", str(tmp_path / "docs" / "reference"))
    stale = gen.stale_files({})
    assert stale == ["docs/reference/plugins/modules/gone.md (no longer generated)"]


def test_every_role_input_is_referenced_with_nested_pool_fields(files):
    import yaml
    for spec_path in glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml")):
        role = spec_path.split(os.sep)[-3]
        page = files["docs/reference/roles/%s.md" % role]
        with open(spec_path) as handle:
            specs = yaml.safe_load(handle)["argument_specs"]
        for entry in specs.values():
            for name in (entry or {}).get("options") or {}:
                assert "| `%s` |" % name in page, (role, name)
    pools = files["docs/reference/roles/gpu_pools.md"]
    for field in ("name", "gpu_type", "sharing", "sharing.mode", "sharing.mig_profile", "taints[].effect",
                  "disruption_budgets[].nodes"):
        assert "| `gpufleet_gpu_pools[].%s` |" % field in pools, field


def test_tables_come_from_the_code(files):
    import yaml
    from ansible_collections.gpufleet.k8s.plugins.module_utils.runtime import containerd_presets
    from ansible_collections.gpufleet.k8s.plugins.module_utils.model import gpu_access
    from ansible_collections.gpufleet.k8s.plugins.module_utils.core import versions
    with open(os.path.join(ROOT, "roles", "nvidia_container_toolkit", "defaults", "main.yml")) as handle:
        host_toolkit = yaml.safe_load(handle)["nvidia_container_toolkit_version"]
    page = files["docs/reference/tables.md"]
    for table in (gpu_access.table_markdown(), versions.table_markdown(host_toolkit),
                  containerd_presets.table_markdown()):
        assert table in page


def test_every_plugin_has_a_page_with_its_options(files):
    for kind, pattern in (("modules", "*.py"), ("lookup", "*.py"), ("callback", "*.py"), ("filter", "*.yml")):
        names = [os.path.basename(p).rsplit(".", 1)[0] for p in glob.glob(os.path.join(PLUGINS, kind, pattern))
                 if not os.path.basename(p).startswith("_")]
        assert names, kind
        for name in names:
            assert "docs/reference/plugins/%s/%s.md" % (kind, name) in files, (kind, name)
    placement = files["docs/reference/plugins/filter/gpu_pod_placement.md"]
    assert "| `runtime_class` | str |" in placement
    labels = files["docs/reference/plugins/modules/node_labels.md"]
    # options of the shared connection fragment are merged in, markup becomes Markdown
    assert "| `kubeconfig` |" in labels and "C(" not in labels and "O(" not in labels


def test_role_readme_section_replaced_in_place_keeping_hand_written_text(gen):
    specs = {"main": {"short_description": "S", "options": {"r_a": {"type": "int", "default": 1,
                                                                     "description": "A | B"}}}}
    first = gen.render_role_readme("", "r", specs)
    assert first.startswith("# Role r\n\nS\n") and "| `r_a` | int | `1` | no |  | A \\| B |" in first
    edited = first.replace("# Role r", "# Role r\n\nHand-written intro.")
    specs["main"]["options"]["r_b"] = {"type": "str", "description": "new"}
    second = gen.render_role_readme(edited, "r", specs)
    assert "Hand-written intro." in second and "`r_b`" in second
    assert second.count(gen.README_BEGIN) == 1 and second.count(gen.README_END) == 1
    assert gen.render_role_readme(second, "r", specs) == second
