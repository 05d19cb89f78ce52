#!/usr/bin/env bash
# ansible-playbook of the older supported ansible-core line (2.18, with the `ansible` 11 bundle), from its
# own venv (scripts/cached-venv.sh, pins in tests/ansible_core_218/requirements.txt): about a minute to
# make, nothing after.
#   scripts/ansible-core-218.sh --version            make the venv (scripts/test.sh setup), print the version
#   scripts/ansible-core-218.sh site.yml -i ...      ansible-playbook with these arguments
set -euo pipefail
cd "$(dirname "$0")/.."
venv=$(bash scripts/cached-venv.sh ansible-core-218 tests/ansible_core_218/requirements.txt)
exec "$venv/bin/ansible-playbook" "$@"
