"""The shape of plugins/module_utils: every module imports on its own, the import graph between them
has no loop, imports sit at module level (none hidden in a function to dodge a loop), and no module
grows past MAX_LINES (the vendored copies under _vendor excepted)."""
import ast
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.join(ROOT, "collections")
MODULE_UTILS = os.path.join(COLLECTIONS, "ansible_collections", "gpufleet", "k8s", "plugins", "module_utils")
PACKAGE = "ansible_collections.gpufleet.k8s.plugins.module_utils"
MAX_LINES = 450


def module_names():
    return sorted(f[:-3] for f in os.listdir(MODULE_UTILS) if f.endswith(".py") and f != "__init__.py")


def parse(name):
    with open(os.path.join(MODULE_UTILS, name + ".py")) as handle:
        return ast.parse(handle.read(), name)


def gpufleet_targets(node, names):
    """The gpufleet module_utils modules an import statement names ([] for any other import)."""
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        if node.module == PACKAGE:
            return [a.name for a in node.names if a.name in names]
        if node.module.startswith(PACKAGE + "."):
            first = node.module[len(PACKAGE) + 1:].split(".", 1)[0]
            return [first] if first in names else []
    if isinstance(node, ast.ImportFrom) and node.level > 0:   # relative imports inside module_utils
        first = (node.module or "").split(".", 1)[0]
        if first:
            return [first] if first in names else []
        return [a.name for a in node.names if a.name in names]
    if isinstance(node, ast.Import):
        return [a.name[len(PACKAGE) + 1:].split(".", 1)[0] for a in node.names
                if a.name.startswith(PACKAGE + ".") and a.name[len(PACKAGE) + 1:].split(".", 1)[0] in names]
    return []


def import_graph():
    names = set(module_names())
    return {name: sorted({t for node in ast.walk(parse(name)) for t in gpufleet_targets(node, names)} - {name})
            for name in sorted(names)}


def find_cycle(graph):
    """One import loop as a list of module names (first repeated at the end), or None."""
    state = {}
    stack = []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for dep in graph.get(node, []):
            if state.get(dep) == "open":
                return stack[stack.index(dep):] + [dep]
            if dep not in state:
                found = visit(dep)
                if found:
                    return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


@pytest.mark.parametrize("graph, cycle", [
    ({"a": ["b"], "b": ["c"], "c": []}, None),
    ({"a": ["b"], "b": ["a"]}, ["a", "b", "a"]),
    ({"a": ["b"], "b": ["c"], "c": ["b"]}, ["b", "c", "b"]),
    ({"a": ["b", "c"], "b": ["c"], "c": []}, None),
])
def test_find_cycle_finds_loops_and_only_loops(graph, cycle):
    assert find_cycle(graph) == cycle


def test_the_import_graph_is_read_from_the_source():
    graph = import_graph()
    # known edges, so that an empty graph (a parser that finds nothing) cannot pass the loop test
    assert "mirror_urls" in graph["addons"]
    assert "karpenter_v1alpha5" in graph["pools_check"]
    assert "spec" in graph["karpenter"]


def test_module_utils_import_graph_is_acyclic():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import loop: " + " -> ".join(cycle)


def function_level_imports(tree, names):
    out = []
    for func in ast.walk(tree):
        if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            for node in ast.walk(func):
                if node is not func and gpufleet_targets(node, names):
                    out.append("line %d imports %s" % (node.lineno, ", ".join(gpufleet_targets(node, names))))
    return sorted(set(out))


def test_function_level_import_detector():
    names = {"addons", "mirror_urls"}
    tree = ast.parse("from %s import addons\n\ndef f():\n    from %s.mirror_urls import x\n    import os\n"
                     % (PACKAGE, PACKAGE))
    assert function_level_imports(tree, names) == ["line 4 imports mirror_urls"]


@pytest.mark.parametrize("name", module_names())
def test_no_function_level_import_of_module_utils(name):
    assert function_level_imports(parse(name), set(module_names())) == []


@pytest.mark.parametrize("name", module_names())
def test_module_is_at_most_max_lines(name):
    with open(os.path.join(MODULE_UTILS, name + ".py")) as handle:
        lines = len(handle.read().splitlines())
    assert lines <= MAX_LINES, "%s.py has %d lines; split it (at most %d)" % (name, lines, MAX_LINES)


def test_modules_import_alone_in_a_fresh_interpreter():
    """Each module first in its own interpreter: an import that only works after another module was
    loaded (the symptom of a loop) fails here. One interpreter per module, run in one batch."""
    script = ("import importlib, sys, subprocess\n"
              "failed = []\n"
              "for name in sys.argv[1:]:\n"
              "    proc = subprocess.run([sys.executable, '-c', 'import %s.' + name], capture_output=True, text=True)\n"
              "    if proc.returncode:\n"
              "        failed.append(name + ': ' + (proc.stderr.strip().splitlines() or ['?'])[-1])\n"
              "print('\\n'.join(failed))\n"
              "sys.exit(1 if failed else 0)\n") % PACKAGE
    env = dict(os.environ, PYTHONPATH=COLLECTIONS + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", script] + module_names(), capture_output=True, text=True, env=env,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
