#!/usr/bin/env bash
# A test tool's own virtualenv, kept outside the repository and shared by checkouts: made on first use
# from a pinned requirements file (and a constraints file), reused after; a change of pins makes a new one.
#   scripts/cached-venv.sh NAME REQUIREMENTS [CONSTRAINTS]    prints the venv's directory
# The directory is ${XDG_CACHE_HOME:-~/.cache}/gpufleet/NAME-<hash of the pin files>, or $GPUFLEET_VENV_<NAME>
# (NAME upper-cased, - as _) when set. Two checkouts asking at once: one installs, the other waits.
set -euo pipefail
name=$1 req=$2 con=${3:-}
PY=${PYTHON:-python3}
want=$(cat "$req" ${con:+"$con"} | sha256sum | cut -c1-12)
override=GPUFLEET_VENV_$(printf '%s' "$name" | tr 'a-z-' 'A-Z_')
venv=${!override:-${XDG_CACHE_HOME:-$HOME/.cache}/gpufleet/$name-$want}
stamp=$venv/.gpufleet-stamp
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  mkdir -p "$(dirname "$venv")"
  exec 9>"$venv.lock"
  flock 9
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    rm -rf "$venv"
    "$PY" -m venv "$venv" >&2
    "$venv/bin/python" -m pip install -q -r "$req" ${con:+-c "$con"} >&2
    echo "$want" > "$stamp"
  fi
  exec 9>&-
fi
echo "$venv"
