"""Every filter has a doc file next to it (like kubernetes.core's) and the real ansible-doc renders it,
in plain text and as JSON; the documented positional options match the filter's Python signature."""
import glob
import importlib
import inspect
import json
import os
import sys

import pytest

from ansible_run import CHECKOUT_PATHS, ansible

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FILTER_DIR = os.path.join(ROOT, "collections", "ansible_collections", "gpufleet", "k8s", "plugins", "filter")


def _filters():
    if os.path.join(ROOT, "collections") not in sys.path:
        sys.path.insert(0, os.path.join(ROOT, "collections"))
    out = {}
    for path in sorted(glob.glob(os.path.join(FILTER_DIR, "*.py"))):
        mod = importlib.import_module("ansible_collections.gpufleet.k8s.plugins.filter." + os.path.basename(path)[:-3])
        for name, func in mod.FilterModule().filters().items():
            out[name] = func
    return out


FILTERS = _filters()


def _doc(*args):
    return ansible("ansible-doc", "-t", "filter", *args, ANSIBLE_COLLECTIONS_PATH=CHECKOUT_PATHS["ANSIBLE_COLLECTIONS_PATH"])


@pytest.fixture(scope="module")
def json_docs():
    proc = _doc("--json", *["gpufleet.k8s." + n for n in sorted(FILTERS)])
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_there_are_filters_and_each_has_a_doc_file():
    assert len(FILTERS) >= 30
    missing = [n for n in FILTERS if not os.path.isfile(os.path.join(FILTER_DIR, n + ".yml"))]
    assert not missing, "filters without plugins/filter/<name>.yml: %s" % missing


def test_no_filter_is_listed_undocumented():
    proc = _doc("-l", "gpufleet.k8s")
    assert proc.returncode == 0, proc.stderr
    undocumented = [line.split()[0] for line in proc.stdout.splitlines() if "UNDOCUMENTED" in line]
    assert not undocumented


def test_plain_ansible_doc_renders_every_filter():
    """The plain renderer is stricter than --json (it formats every description as text)."""
    names = ["gpufleet.k8s." + n for n in sorted(FILTERS)]
    proc = _doc(*names)
    assert proc.returncode == 0, proc.stderr
    assert "ERROR" not in proc.stderr and "WARNING" not in proc.stderr, proc.stderr
    for name in names:
        assert "> FILTER %s " % name in proc.stdout or "> FILTER %s\n" % name in proc.stdout, name
    assert proc.stdout.count("EXAMPLES:") == len(names)


@pytest.mark.parametrize("name", sorted(FILTERS))
def test_doc_matches_signature(json_docs, name):
    doc = json_docs["gpufleet.k8s." + name]
    params = list(inspect.signature(FILTERS[name]).parameters.values())
    options = doc["doc"]["options"]
    assert options["_input"]["required"] is True
    positional = [p.strip() for p in (doc["doc"].get("positional") or "").split(",") if p.strip()]
    assert positional == [p.name for p in params[1:]], "documented positional arguments differ from the signature"
    for param in params[1:]:
        required = param.default is inspect.Parameter.empty
        assert bool(options[param.name].get("required")) == required, param.name
        if not required and param.default is not None:
            assert options[param.name].get("default") == param.default, param.name
    assert doc["doc"]["short_description"] and doc["doc"]["version_added"]
    assert "gpufleet.k8s." + name in doc["examples"]
    assert doc["return"]["_value"]["type"]
