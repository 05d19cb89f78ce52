#!/usr/bin/env bash
# ansible-test sanity on the gpufleet.k8s collection, as it is built (plugins + roles/ + playbooks/).
# ansible-test needs the collection at .../ansible_collections/gpufleet/k8s and no symlinks out of it,
# so the tree is staged by scripts/build_collection.py into a temporary directory first.
# The sanity tests' own virtual environments (pylint, yamllint, ... from PyPI) live under
# build/sanity-home (ansible-test keeps them in ~/.ansible/test/venv; HOME points there), so they are
# made once and reused. No Docker: --venv.
#   scripts/sanity.sh                   every sanity test
#   scripts/sanity.sh --test pep8 ...   extra ansible-test arguments
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
# shellcheck disable=SC1091
[ -n "${VIRTUAL_ENV:-}" ] || source .venv/bin/activate
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dest=$work/ansible_collections/gpufleet/k8s
python scripts/build_collection.py --stage-only "$dest" >/dev/null
home=$root/build/sanity-home
# ansible-test bootstraps pip in a new venv with get-pip.py from ci-files.testing.ansible.com, which
# is unreachable here: a stand-in in its cache installs pip with the interpreter's ensurepip, then
# runs pip install with the same arguments (PyPI is reachable).
pip_version=$(python -c 'import ansible_test._internal.python_requirements as r, inspect, re
print(re.search(r"pip=.([0-9.]+).", inspect.getsource(r)).group(1))')
mkdir -p "$home/.ansible/test/cache"
cat > "$home/.ansible/test/cache/get_pip_${pip_version//./_}.py" <<'PY'
"""Stand-in for get-pip.py (written by scripts/sanity.sh): ensurepip, then pip install ARGS."""
import ensurepip
import os
import subprocess
import sys

ensurepip.bootstrap(upgrade=True)
os.environ.pop("PIP_CONFIG_FILE", None)  # ensurepip sets it to /dev/null: the machine's pip.conf counts
args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install"] + args))
PY
cd "$dest"
# ansible-test lists a collection's files with git when it is a repository: make it one, so files
# that git would ignore (none here: the staged tree is clean) are skipped the same way everywhere.
printf "tests/output/\n" > .gitignore   # ansible-test's own output (and its delegation venv)
git init -q . && git add -A && git -c user.name=sanity -c user.email=sanity@localhost commit -qm staged
HOME=$home ANSIBLE_COLLECTIONS_PATH="$work" \
  ansible-test sanity --python "${SANITY_PYTHON:-3.11}" --venv --color no "$@"
