#!/usr/bin/env python3
"""Regenerate the variables section of every role README from meta/argument_specs.yml.

    scripts/gen-role-docs.py          rewrite roles/*/README.md
    scripts/gen-role-docs.py --check  exit 1 (listing the roles) when a README is out of date
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "collections"))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

from argspec_docs import render_role_readme  # noqa: E402
from ansible_collections.gpufleet.k8s.plugins.module_utils.role_specs import load_role_spec  # noqa: E402


def main(argv):
    check = "--check" in argv
    stale = []
    roles_dir = os.path.join(ROOT, "roles")
    for role in sorted(os.listdir(roles_dir)):
        if not os.path.isfile(os.path.join(roles_dir, role, "meta", "argument_specs.yml")):
            continue
        path = os.path.join(roles_dir, role, "README.md")
        current = open(path).read() if os.path.isfile(path) else ""
        wanted = render_role_readme(current, role, load_role_spec(roles_dir, role))
        if wanted != current:
            stale.append(role)
            if not check:
                with open(path, "w") as handle:
                    handle.write(wanted)
    if check and stale:
        print("role README out of date (run scripts/gen-role-docs.py): " + ", ".join(stale))
        return 1
    if not check:
        print("regenerated: " + (", ".join(stale) or "nothing"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
