#!/usr/bin/env bash
# Run checkov (tests only) from its own virtualenv, made on first use from tests/checkov/requirements.txt
# + tests/checkov/constraints.txt. Not in .venv: checkov pins packaging<24, which the locked
# ansible-core/ansible-lint in constraints.txt cannot use. The venv is kept outside the repository in
# $GPUFLEET_CHECKOV_VENV (default ~/.cache/gpufleet/checkov-<hash of the two files>), so checkouts share it
# and a change of pins makes a new one; under a minute to make (48 s on the busy 2-core machine), nothing after.
#   scripts/checkov.sh -d DIR --framework kubernetes -o json    checkov with these arguments
#   scripts/checkov.sh --version                                 make the venv (scripts/test.sh setup)
# --skip-download is always passed: no network call to the vendor's API (unreachable here), no API key.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
req=tests/checkov/requirements.txt con=tests/checkov/constraints.txt
want=$(cat "$req" "$con" | sha256sum | cut -c1-12)
venv=${GPUFLEET_CHECKOV_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/gpufleet/checkov-$want}
stamp=$venv/.gpufleet-stamp
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  mkdir -p "$(dirname "$venv")"
  exec 9>"$venv.lock"
  flock 9   # two checkouts (or workers) asking at once: one installs, the other waits and reuses it
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    rm -rf "$venv"
    "$PY" -m venv "$venv" >&2
    "$venv/bin/python" -m pip install -q -r "$req" -c "$con" >&2
    echo "$want" > "$stamp"
  fi
  exec 9>&-
fi
[ "${1:-}" = "--version" ] && exec "$venv/bin/checkov" --version
exec "$venv/bin/checkov" --skip-download "$@"
