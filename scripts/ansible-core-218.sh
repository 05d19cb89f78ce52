#!/usr/bin/env bash
# ansible-playbook of the older supported ansible-core line (2.18, with the `ansible` 11 bundle), from a
# venv made on first use from tests/ansible_core_218/requirements.txt and kept outside the repository in
# $GPUFLEET_ANSIBLE218_VENV (default ~/.cache/gpufleet/ansible-core-218-<hash of the pins>); about a minute
# to make, nothing after.
#   scripts/ansible-core-218.sh --version            make the venv (scripts/test.sh setup), print the version
#   scripts/ansible-core-218.sh site.yml -i ...      ansible-playbook with these arguments
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
req=tests/ansible_core_218/requirements.txt
want=$(sha256sum < "$req" | cut -c1-12)
venv=${GPUFLEET_ANSIBLE218_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/gpufleet/ansible-core-218-$want}
stamp=$venv/.gpufleet-stamp
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  mkdir -p "$(dirname "$venv")"
  exec 9>"$venv.lock"
  flock 9   # two checkouts (or workers) asking at once: one installs, the other waits and reuses it
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    rm -rf "$venv"
    "$PY" -m venv "$venv" >&2
    "$venv/bin/python" -m pip install -q -r "$req" >&2
    echo "$want" > "$stamp"
  fi
  exec 9>&-
fi
[ "${1:-}" = "--version" ] && exec "$venv/bin/ansible-playbook" --version
exec "$venv/bin/ansible-playbook" "$@"
