"""Test setup: make the in-repo collection importable as ansible_collections.gpufleet.k8s, and the
shared test modules of tests/helpers/ by their plain names."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(ROOT, "collections")
if COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)
# The shared test modules (tests/helpers/) import by their plain names: ``from controlplane import ...``.
HELPERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "helpers")
if HELPERS not in sys.path:
    sys.path.insert(0, HELPERS)


import inspect  # noqa: E402
import types  # noqa: E402

import pytest  # noqa: E402

# Test tiers (markers registered in pytest.ini). Every test gets one by what it uses, so a new test is
# classified without a marker of its own; an explicit tier marker on a test or module wins.
#   cluster    the real test control plane (the control_plane fixture, or a ControlPlane of its own)
#   container  podman systemd containers (it uses tests/helpers/systemd_node.py's functions)
#   molecule   drives molecule scenarios (the scenarios themselves run in scripts/test.sh's molecule step)
#   playbook   under tests/integration otherwise: real ansible-playbook / ansible-galaxy runs on the controller
#   render     in-process rendering checked against golden files or upstream schemas (tests/unit)
#   unit       everything else under tests/unit and the collection's tests/unit
#   contract   in addition to the above: the output is checked against an upstream schema or format
#              (tests/helpers/k8s_schema.py, crd_schema.py, prom_schema.py, nap_schema.py, pod_security.py)
# scripts/test.sh --quick runs unit, render and contract: everything but playbook, container, cluster, molecule.
TIERS = ("unit", "render", "contract", "playbook", "container", "cluster", "molecule")
CONTRACT_HELPERS = ("k8s_schema", "crd_schema", "prom_schema", "nap_schema", "pod_security", "kubernetes_validate")


def _used(module):
    """(helper modules, classes) a test module uses: modules it imported, and where its imported
    functions and classes (with their base classes) were defined."""
    modules, classes = set(), []
    for value in vars(module).values():
        if isinstance(value, types.ModuleType):
            modules.add(value.__name__.split(".")[0])
        elif inspect.isclass(value):
            classes.extend(value.__mro__)
            modules.update(c.__module__ for c in value.__mro__)
        elif inspect.isfunction(value):
            modules.add(value.__module__)
    return modules, classes


def tier_of(item, cache):
    """The tier of one collected test (see TIERS)."""
    module = getattr(item, "module", None)
    key = getattr(module, "__name__", None)
    if key not in cache:
        cache[key] = _used(module) if module is not None else (set(), [])
    modules, classes = cache[key]
    if "control_plane" in getattr(item, "fixturenames", ()) or any(
            c.__name__ == "ControlPlane" and c.__module__ == "controlplane" for c in classes):
        return "cluster"
    if "systemd_node" in modules:  # its functions boot, exec into and remove podman systemd containers
        return "container"
    if os.sep + "integration" + os.sep in str(item.path):
        return "playbook"
    if modules & set(CONTRACT_HELPERS) or "golden" in os.path.basename(str(item.path)):
        return "render"
    return "unit"


def pytest_collection_modifyitems(config, items):
    cache = {}
    for item in items:
        if not any(item.get_closest_marker(t) for t in TIERS if t != "contract"):
            item.add_marker(tier_of(item, cache))
        module = getattr(item, "module", None)
        if module is not None and not item.get_closest_marker("contract") and \
                _used(module)[0] & set(CONTRACT_HELPERS):
            item.add_marker("contract")


@pytest.fixture(scope="module")
def control_plane(tmp_path_factory):
    """A real control plane for one test module (tests/helpers/controlplane.py): etcd, kube-apiserver,
    kube-controller-manager, kube-scheduler and KWOK standing in for the kubelets."""
    from controlplane import ControlPlane
    cp = ControlPlane(str(tmp_path_factory.mktemp("controlplane")))
    try:
        cp.start()
    except Exception:
        cp.stop()
        raise
    yield cp
    cp.stop()
