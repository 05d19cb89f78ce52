#!/usr/bin/env bash
# Create or refresh the project's virtualenv in .venv from requirements.txt + constraints.txt.
# Idempotent: does nothing when the venv already matches the pinned files.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
stamp=.venv/.gpufleet-stamp
want=$(cat requirements.txt $( [ -f constraints.txt ] && echo constraints.txt ) | sha256sum | cut -d" " -f1)
if [ -x .venv/bin/python ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  exit 0
fi
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
if [ -f constraints.txt ]; then
  .venv/bin/python -m pip install -q -r requirements.txt -c constraints.txt
else
  .venv/bin/python -m pip install -q -r requirements.txt
fi
echo "$want" > "$stamp"
