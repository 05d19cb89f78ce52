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


import pytest  # noqa: E402


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
