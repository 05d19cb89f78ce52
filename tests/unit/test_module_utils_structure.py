"""The shape of plugins/module_utils: one package per stage, layered (a package imports only its own
modules and the packages below it), every module imports on its own, the import graph between them has
no loop, imports sit at module level (none hidden in a function to dodge a loop), and no module grows
past MAX_LINES (the vendored copies under _vendor excepted)."""
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
# The layers, lowest first. A module may import modules of its own package and of packages on a lower
# layer, never a package on its own layer or above: core imports nothing of ours, model only core, the
# stage packages (and kube, the API client) only core and model, day2 and fleet gather the stages,
# and preflight (the one module at the top) may import anything.
LAYERS = [("core",), ("model",), ("kube", "node", "runtime", "pools", "addons"), ("day2",), ("fleet",), ("",)]
LAYER = dict((pkg, i) for i, pkgs in enumerate(LAYERS) for pkg in pkgs)


def package_of(name):
    return name.rsplit(".", 1)[0] if "." in name else ""


def module_names():
    """Every module as "package.module" ("preflight" for the one at the top), _vendor excepted."""
    out = []
    for dirpath, dirnames, filenames in os.walk(MODULE_UTILS):
        dirnames[:] = [d for d in dirnames if d not in ("_vendor", "__pycache__")]
        rel = os.path.relpath(dirpath, MODULE_UTILS).replace(os.sep, ".")
        for f in filenames:
            if f.endswith(".py") and f != "__init__.py":
                out.append(f[:-3] if rel == "." else rel + "." + f[:-3])
    return sorted(out)


def path_of(name):
    return os.path.join(MODULE_UTILS, *name.split(".")) + ".py"


def parse(name):
    with open(path_of(name)) as handle:
        return ast.parse(handle.read(), name)


def gpufleet_targets(node, names):
    """The gpufleet module_utils modules ("package.module") an import statement names ([] for any other)."""
    found = []
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        if node.module == PACKAGE or node.module.startswith(PACKAGE + "."):
            base = node.module[len(PACKAGE) + 1:]
            if base in names:
                found.append(base)
            else:
                found.extend((base + "." if base else "") + a.name for a in node.names)
    elif isinstance(node, ast.Import):
        found.extend(a.name[len(PACKAGE) + 1:] for a in node.names if a.name.startswith(PACKAGE + "."))
    return [t for t in found if t in names]


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
    assert "core.mirror_urls" in graph["addons.addons"]
    assert "pools.karpenter_v1alpha5" in graph["pools.pools_check"]
    assert "model.spec" in graph["pools.karpenter"]
    assert "addons.dcgm_exporter" in graph["addons.gpu_operator"]


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
    names = {"addons.addons", "core.mirror_urls"}
    tree = ast.parse("from %s.addons import addons\n\ndef f():\n    from %s.core.mirror_urls import x\n    import os\n"
                     % (PACKAGE, PACKAGE))
    assert function_level_imports(tree, names) == ["line 4 imports core.mirror_urls"]


@pytest.mark.parametrize("name", module_names())
def test_no_function_level_import_of_module_utils(name):
    assert function_level_imports(parse(name), set(module_names())) == []


@pytest.mark.parametrize("name", module_names())
def test_module_is_at_most_max_lines(name):
    with open(path_of(name)) as handle:
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


def layer_problems(graph):
    out = []
    for name, deps in sorted(graph.items()):
        pkg = package_of(name)
        for dep in deps:
            other = package_of(dep)
            if other != pkg and LAYER[other] >= LAYER[pkg]:
                out.append("%s imports %s (package %s may import only %s and the packages below it: %s)"
                           % (name, dep, pkg or "<top>", pkg or "<top>",
                              ", ".join(p for p in LAYER if LAYER[p] < LAYER[pkg]) or "none"))
    return out


@pytest.mark.parametrize("graph, problems", [
    ({"core.a": ["core.b"], "core.b": [], "model.m": ["core.a"]}, 0),
    ({"core.a": ["model.m"], "model.m": []}, 1),          # core imports nothing of ours
    ({"pools.p": ["addons.a"], "addons.a": []}, 1),       # stage packages do not import each other
    ({"day2.d": ["pools.p", "model.m"], "pools.p": [], "model.m": []}, 0),
    ({"preflight": ["fleet.f", "core.a"], "fleet.f": [], "core.a": []}, 0),
])
def test_layer_rule_finds_violations(graph, problems):
    assert len(layer_problems(graph)) == problems


def test_every_module_sits_in_a_known_package():
    unknown = sorted(n for n in module_names() if package_of(n) not in LAYER)
    assert unknown == [], "module_utils packages not in LAYERS: %s" % unknown
    for pkg in LAYER:
        if pkg:
            assert os.path.isfile(os.path.join(MODULE_UTILS, pkg, "__init__.py")), pkg


def test_packages_are_layered():
    assert layer_problems(import_graph()) == []
