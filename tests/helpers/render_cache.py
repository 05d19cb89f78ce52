"""Site renders shared by the whole test run: an identical ``ansible-playbook`` render (same
playbook, inventory and extra vars) runs once per pytest run, whichever test file or xdist worker
asks first; the others wait for it and read the same build directory.

The build directory handed back is shared: read it, never run into it or change it (a test that
re-runs into a build makes its own render). ``GPUFLEET_RENDER_CACHE=0`` turns sharing off (every
call renders into a fresh directory of its own).
"""
import fcntl
import hashlib
import json
import os
import shutil
import tempfile

from ansible_run import ROOT, run_site
from inventories import cluster_inventories

# Every inventory's render (the example inventories, and the test inventories in render mode), and the
# example with NFD: the RBAC allowlist and the checkov baseline read the same renders, so the cache
# makes each one once per run. (label, inventory, extra ansible-playbook arguments)
# fleet inventories (docs/fleet.md: group_vars/all/fleet.yml) name clusters and render nothing themselves
RENDERS = [(name, "inventories/" + name, ()) for name in cluster_inventories()] + [
    (name, "tests/integration/inventories/" + name, ("-e", "gpufleet_apply=false"))
    for name in sorted(os.listdir(os.path.join(ROOT, "tests", "integration", "inventories")))] + [
    ("example with NFD", "inventories/example", ("-e", "nvidia_device_plugin_nfd_enabled=true"))]


def _root(tmp_path_factory):
    base = tmp_path_factory.getbasetemp()
    # xdist workers get <run>/popen-gwN: share the run's directory between them
    run_dir = base.parent if base.name.startswith("popen-gw") else base
    root = run_dir / "render-cache"
    root.mkdir(exist_ok=True)
    return root


def rendered_site(tmp_path_factory, *extra, playbook="site.yml", inventory="inventories/example"):
    """Return ``(rc, output, build_dir)`` of ``run_site`` for these arguments, rendered once per run."""
    name = os.path.basename(inventory.rstrip("/")) or "build"
    if os.environ.get("GPUFLEET_RENDER_CACHE", "1") == "0":
        build = tmp_path_factory.mktemp("render") / name
        rc, out = run_site(build, *extra, playbook=playbook, inventory=inventory)
        return rc, out, build
    key = hashlib.sha256(json.dumps([playbook, inventory, list(extra)]).encode()).hexdigest()[:16]
    entry = _root(tmp_path_factory) / key
    entry.mkdir(exist_ok=True)
    build = entry / name
    with open(entry / "lock", "w") as lock:
        fcntl.lockf(lock, fcntl.LOCK_EX)   # the first caller renders; the others wait here
        done = entry / "result.json"
        if not done.exists():
            rc, out = run_site(build, *extra, playbook=playbook, inventory=inventory)
            with tempfile.NamedTemporaryFile("w", dir=entry, delete=False) as handle:
                json.dump({"rc": rc, "out": out}, handle)
            os.replace(handle.name, done)
        with open(done) as handle:
            result = json.load(handle)
    return result["rc"], result["out"], build


def private_copy(build, tmp_path_factory):
    """A copy of a shared build directory that a test may run into (renders hold no absolute
    path of their build directory, so the copy is what a render there would have written)."""
    dest = tmp_path_factory.mktemp("render-copy") / os.path.basename(str(build))
    shutil.copytree(build, dest, symlinks=True)
    return dest
