"""The layout of the tests themselves (issue 31 s.3): what tests share lives in tests/helpers/ (imported by
plain name, tests/conftest.py puts that folder on sys.path); no test module imports another test module,
and no shared module sits directly in tests/ (only conftest.py does)."""
import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEST_TREES = ("tests", os.path.join("collections", "ansible_collections", "gpufleet", "k8s", "tests"))


def python_files(root):
    for tree in TEST_TREES:
        for dirpath, dirs, files in os.walk(os.path.join(root, tree)):
            dirs[:] = sorted(d for d in dirs if d not in ("node_modules", "__pycache__"))
            for name in sorted(files):
                if name.endswith(".py"):
                    yield os.path.join(dirpath, name)


def imported_modules(path):
    """(line, dotted module name) of every import in the file at ``path``, at any depth."""
    with open(path) as handle:
        tree = ast.parse(handle.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.lineno, node.module


def imports_of_test_modules(root):
    """'file:line imports test_x' for every import of a test module (test_*.py, any package path) in ``root``."""
    test_modules = {os.path.basename(p)[:-3] for p in python_files(root) if os.path.basename(p).startswith("test_")}
    found = []
    for path in python_files(root):
        for line, module in imported_modules(path):
            last = module.split(".")[-1]
            if last in test_modules or last.startswith("test_"):
                found.append("%s:%d imports %s" % (os.path.relpath(path, root), line, module))
    return found


def helpers_outside_helpers(root):
    """Python files directly in tests/ other than conftest.py (shared modules belong in tests/helpers/)."""
    tests = os.path.join(root, "tests")
    return sorted(name for name in os.listdir(tests)
                  if name.endswith(".py") and name != "conftest.py" and os.path.isfile(os.path.join(tests, name)))


def test_no_test_module_imports_another_test_module():
    assert imports_of_test_modules(ROOT) == [], "move what is shared into tests/helpers/"


def test_shared_test_modules_live_in_tests_helpers():
    assert helpers_outside_helpers(ROOT) == [], "git mv them to tests/helpers/ (fix paths built from __file__)"
    helpers = os.listdir(os.path.join(ROOT, "tests", "helpers"))
    assert {"ansible_run.py", "systemd_node.py", "controlplane.py"} <= set(helpers)
    assert not [n for n in helpers if n.startswith("test_")], "a test module in tests/helpers/ would not be collected"


@pytest.fixture
def bad_tree(tmp_path):
    """A small tree with each kind of mistake the checks above must find."""
    (tmp_path / "tests" / "unit").mkdir(parents=True)
    (tmp_path / "tests" / "integration").mkdir()
    (tmp_path / "tests" / "helpers").mkdir()
    (tmp_path / "tests" / "conftest.py").write_text("import os\n")
    (tmp_path / "tests" / "shared_stuff.py").write_text("X = 1\n")
    (tmp_path / "tests" / "unit" / "test_a.py").write_text("X = 1\n")
    (tmp_path / "tests" / "integration" / "test_b.py").write_text(
        "import json\nfrom ansible_run import run_site\n\n\ndef test_b():\n    from test_a import X\n    assert X\n")
    (tmp_path / "tests" / "integration" / "test_c.py").write_text("from unit.test_a import X\nimport test_b\n")
    (tmp_path / "tests" / "helpers" / "ansible_run.py").write_text("from test_a import X\n")
    return tmp_path


def test_the_checks_find_each_kind_of_mistake(bad_tree):
    assert imports_of_test_modules(bad_tree) == [
        "tests/helpers/ansible_run.py:1 imports test_a",
        "tests/integration/test_b.py:6 imports test_a",
        "tests/integration/test_c.py:1 imports unit.test_a",
        "tests/integration/test_c.py:2 imports test_b",
    ]
    assert helpers_outside_helpers(bad_tree) == ["shared_stuff.py"]
