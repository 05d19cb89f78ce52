#!/usr/bin/env python3
"""Build the installable gpufleet.k8s collection tarball.

The collection directory (collections/ansible_collections/gpufleet/k8s) holds the plugins; the
roles and playbooks stay at the top of the repository (roles/, playbooks/). ansible-galaxy does
not follow symlinks out of the collection, so this script stages a plain copy of the collection
plus roles/ and playbooks/ in a temporary tree and runs ``ansible-galaxy collection build`` there.
The result is usable by FQCN: ``gpufleet.k8s.nvidia_driver`` (role), ``gpufleet.k8s.site``
(playbook), ``gpufleet.k8s.preflight`` (module).

    scripts/build_collection.py [--output-path DIR]     prints the tarball's path (default DIR: build/collection)
    scripts/build_collection.py --stage-only DIR        only writes the staged collection tree to DIR
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTION = os.path.join(ROOT, "collections", "ansible_collections", "gpufleet", "k8s")
# Top-level folders of the repository that the collection carries (same names inside it).
CARRIED = ("roles", "playbooks")
# Never part of a build: caches, test output, local tarballs.
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", "output", "*.tar.gz",
                                 ".plugin-cache.yaml", "molecule", ".molecule")


def stage(dest):
    """Copy the collection plus roles/ and playbooks/ to ``dest`` (a new directory); return ``dest``."""
    shutil.copytree(COLLECTION, dest, symlinks=False, ignore=IGNORED)
    for name in CARRIED:
        target = os.path.join(dest, name)
        if os.path.lexists(target):
            raise SystemExit("build_collection: %s already exists in the collection directory; the top-level "
                             "%s/ is the one source" % (target, name))
        shutil.copytree(os.path.join(ROOT, name), target, symlinks=False, ignore=IGNORED)
    return dest


def build(output_path):
    os.makedirs(output_path, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="gpufleet-collection-")
    try:
        staged = stage(os.path.join(tmp, "ansible_collections", "gpufleet", "k8s"))
        galaxy = shutil.which("ansible-galaxy", path=os.path.dirname(sys.executable) + os.pathsep
                              + os.environ.get("PATH", ""))
        if not galaxy:
            raise SystemExit("build_collection: ansible-galaxy not found (activate the project's .venv)")
        proc = subprocess.run([galaxy, "collection", "build", "--force", "--output-path",
                               os.path.abspath(output_path), staged], capture_output=True, text=True)
        if proc.returncode != 0:
            sys.stderr.write(proc.stdout + proc.stderr)
            raise SystemExit("build_collection: ansible-galaxy collection build failed (rc=%d)" % proc.returncode)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    tarballs = [f for f in os.listdir(output_path) if f.startswith("gpufleet-k8s-") and f.endswith(".tar.gz")]
    version = _version()
    name = "gpufleet-k8s-%s.tar.gz" % version
    if name not in tarballs:
        raise SystemExit("build_collection: %s was not written to %s" % (name, output_path))
    return os.path.join(os.path.abspath(output_path), name)


def _version():
    import yaml  # the project's venv has PyYAML (ansible-core needs it)
    with open(os.path.join(COLLECTION, "galaxy.yml")) as handle:
        return yaml.safe_load(handle)["version"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-path", default=os.path.join(ROOT, "build", "collection"),
                        help="folder for the tarball (default: build/collection)")
    parser.add_argument("--stage-only", metavar="DIR",
                        help="write the staged collection tree to DIR (must not exist) and stop")
    args = parser.parse_args(argv)
    if args.stage_only:
        print(stage(os.path.abspath(args.stage_only)))
    else:
        print(build(args.output_path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
