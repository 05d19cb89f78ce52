"""Test setup: make the in-repo collection importable as ansible_collections.gpufleet.k8s."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(ROOT, "collections")
if COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)
TESTS = os.path.dirname(os.path.abspath(__file__))
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (--dist loadgroup) an integration module runs whole on one worker: its
    module fixtures (a booted container, a rendered inventory) are made once and its stateful tests
    keep their order. The bad-input table is the exception: each case is independent and each
    worker boots its own container (systemd_node.per_worker), so its cases spread over workers."""
    import pytest

    for item in items:
        path = str(item.fspath)
        if os.sep + "integration" + os.sep in path and not path.endswith("test_bad_inputs.py"):
            item.add_marker(pytest.mark.xdist_group(os.path.basename(path)))
