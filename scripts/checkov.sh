#!/usr/bin/env bash
# Run checkov (tests only) from its own virtualenv, made on first use from tests/checkov/requirements.txt
# + tests/checkov/constraints.txt. Not in .venv: checkov pins packaging<24, which the locked
# ansible-core/ansible-lint in constraints.txt cannot use. The venv is kept outside the repository in
# ~/.cache/gpufleet/checkov-<hash of the two files> (scripts/cached-venv.sh), so checkouts share it
# and a change of pins makes a new one; under a minute to make (48 s on the busy 2-core machine), nothing after.
#   scripts/checkov.sh -d DIR --framework kubernetes -o json    checkov with these arguments
#   scripts/checkov.sh --version                                 make the venv (scripts/test.sh setup)
# --skip-download is always passed: no network call to the vendor's API (unreachable here), no API key.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=$(bash scripts/cached-venv.sh checkov tests/checkov/requirements.txt tests/checkov/constraints.txt)
[ "${1:-}" = "--version" ] && exec "$venv/bin/checkov" --version
exec "$venv/bin/checkov" --skip-download "$@"
