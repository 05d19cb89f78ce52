#!/usr/bin/env bash
# The whole test suite: unit tests, ansible-lint (production profile), syntax checks, the
# collection build, and every molecule scenario in real Debian systemd containers; everything that talks
# to Kubernetes runs on a real control plane built from the upstream Go modules (scripts/controlplane-build.sh).
# Sets up what it needs (venv, apt packages, podman, images, npm schemas); safe to run twice.
#   scripts/test.sh                 everything
#   MOLECULE_SCENARIOS="a b" ...    only these scenarios;  MOLECULE_JOBS=N  parallel scenarios
#   MOLECULE_BACKGROUND=1 ...       run molecule beside lint and pytest (machines with spare cores)
#   scripts/test.sh --quick         the edit loop: setup, then only the pytest tiers unit, render and contract
#                                   (markers from tests/conftest.py: no playbook run, container, control plane,
#                                   molecule, lint, build or sanity); CI and the README run it without flags
# Each step prints its duration; the last line gives the total.
set -uo pipefail
quick=0
case "${1:-}" in
  "") ;;
  --quick) quick=1 ;;
  *) echo "usage: scripts/test.sh [--quick]" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.." || exit 1
root=$PWD
logs=$root/build/test-logs
mkdir -p "$logs"
fail=0
t0=$SECONDS t_step=$SECONDS
step() { printf '\n==== %s ==== (previous step: %d s)\n' "$*" "$((SECONDS - t_step))"; t_step=$SECONDS; }

step "setup"
bash scripts/bootstrap.sh || exit 1
# The Go builds (the test control plane: etcd, kube-apiserver, controller-manager, scheduler, KWOK, helm; the
# upstream judges: the DRA driver's validation, nvidia-ctk, Karpenter with its KWOK provider) are CPU-bound and
# the apt / debootstrap setup waits on the network and the disk, so they run side by side (issue 42: cold, one after the other, they were
# 32 minutes of setup). Each is cached per version under ~/.cache/gpufleet: minutes cold, a second when cached.
# --quick skips them: only playbook, container and cluster tests use them.
builds_pid=
if [ "$quick" = 0 ]; then
  { bash scripts/controlplane-build.sh build >/dev/null && bash scripts/dra-judge-build.sh >/dev/null \
      && bash scripts/nvidia-ctk-build.sh >/dev/null && bash scripts/karpenter-build.sh >/dev/null; } >"$logs/builds.log" 2>&1 &
  builds_pid=$!
fi
bash scripts/harness-setup.sh || exit 1
if [ "$quick" = 0 ]; then
# checkov for tests/integration/test_checkov_baseline.py, in its own venv (it pins packaging<24, which the
# locked ansible-core cannot use), cached under ~/.cache/gpufleet: about a minute cold, a second when cached
bash scripts/checkov.sh --version >/dev/null || exit 1
# ansible-core 2.18 (the older supported line) for tests/integration/test_ansible_core_218.py, its own venv
# under ~/.cache/gpufleet: about a minute cold
bash scripts/ansible-core-218.sh --version >/dev/null || exit 1
fi
if [ -f tests/schemas/package.json ]; then
  (cd tests/schemas && { [ -d node_modules ] && [ node_modules/.stamp -nt package-lock.json ] || { npm ci --no-audit --no-fund --silent && touch node_modules/.stamp; }; }) || exit 1
fi
[ -f tests/schemas-monitoring-gitops/package.json ] && { (cd tests/schemas-monitoring-gitops && { [ node_modules/.stamp -nt package-lock.json ] || { npm ci --no-audit --no-fund --silent && touch node_modules/.stamp; }; }) || exit 1; }
# shellcheck disable=SC1091
source .venv/bin/activate
export ANSIBLE_CONFIG=$root/ansible.cfg
export ANSIBLE_COLLECTIONS_PATH=$root/collections
export ANSIBLE_ROLES_PATH=$root/roles
export PY_COLORS=0 ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0 NO_COLOR=1

if [ "$quick" = 1 ]; then
  step "pytest --quick (tiers unit, render, contract)"
  python -m pytest -q -n "${PYTEST_WORKERS:-3}" --dist loadfile --durations=10 -m "not (playbook or container or cluster or molecule)" \
    tests collections/ansible_collections/gpufleet/k8s/tests/unit
  rc=$?
  step "done"
  [ $rc -eq 0 ] && echo "quick checks: OK (not run: lint, build, sanity, playbook/container/cluster tests, molecule)" \
    || echo "quick checks: FAILED (see above)"
  echo "total: $((SECONDS - t0)) s"
  exit $rc
fi

step "molecule scenarios (start)"
scenarios=${MOLECULE_SCENARIOS:-$(cd molecule && for d in */; do [ -f "$d/molecule.yml" ] && echo "${d%/}"; done)}
jobs=${MOLECULE_JOBS:-2}
# shellcheck disable=SC2317  # called through xargs
run_one() {
  local s=$1 t0=$SECONDS
  if molecule test -s "$s" >"$logs/molecule-$s.log" 2>&1; then
    echo "PASS $s ($((SECONDS - t0)) s)"
  else
    echo "FAIL $s ($((SECONDS - t0)) s) - log: build/test-logs/molecule-$s.log"
    grep -E "fatal:|FAILED!|msg:|ERROR" "$logs/molecule-$s.log" | head -20 | sed 's/^/     /'
  fi
}
export -f run_one; export logs
# shellcheck disable=SC2086  # one scenario name per word
run_molecule() { printf '%s\n' $scenarios | xargs -P "$jobs" -I{} bash -c 'run_one {}' >"$logs/molecule-results.txt"; }
# Molecule's containers and pytest's have their own names and images, so the scenarios can run beside
# lint and pytest (MOLECULE_BACKGROUND=1). Not by default: on the 2-core CI machine the overlap made the
# whole run slower (toolkit scenario 243 s alone, 1719 s beside pytest; .ci/run 2026-12-01).
molecule_pid='' molecule_done=''
if [ "${MOLECULE_BACKGROUND:-0}" != 0 ]; then
  run_molecule & molecule_pid=$!
  echo "molecule: running in the background (pid $molecule_pid)"
elif [ -n "$builds_pid" ] && kill -0 "$builds_pid" 2>/dev/null; then
  # Cold machine: the Go builds (CPU) still run, so the scenarios (apt and containers: network and disk) run
  # now, beside them, instead of after pytest; lint, the collection build and sanity follow, also before
  # pytest needs the builds. Warm, the builds are done already and molecule stays at the end, alone.
  echo "molecule: running now, beside the Go builds (a cold machine)"
  run_molecule; molecule_done=1
fi

step "ansible-lint (production profile)"
ansible-lint --profile production --nocolor -q || { echo "ansible-lint: FAILED"; fail=1; }

# No separate syntax-check loop: ansible-lint runs ansible-playbook --syntax-check on every playbook
# it finds (site.yml, playbooks/, awx/; checked with a broken play under awx/, reported as
# syntax-check[specific]).

step "collection build (plugins + roles/ + playbooks/)"
tmpd=$(mktemp -d)
python scripts/build_collection.py --output-path "$tmpd" || { echo "collection build: FAILED"; fail=1; }
rm -rf "$tmpd"

step "ansible-test sanity (the collection as built)"
# its own venvs are made once under build/sanity-home (about 1.5 min the first time, 40 s after)
bash scripts/sanity.sh >"$logs/sanity.log" 2>&1 || {
  echo "ansible-test sanity: FAILED - log: build/test-logs/sanity.log"; grep -E "^(ERROR|FATAL)" "$logs/sanity.log" | head -20; fail=1; }

if [ -n "$builds_pid" ]; then
  step "waiting for the Go builds"
  wait "$builds_pid" || { echo "setup: a Go build failed - log: build/test-logs/builds.log"; tail -30 "$logs/builds.log"; exit 1; }
  grep -E " built in | ready " "$logs/builds.log" | sed 's/^/  /'
fi

step "pytest"
# pytest-xdist: PYTEST_WORKERS processes (default 3: the container and playbook tests wait on I/O);
# --dist loadfile: a test module runs whole on one worker (its module fixtures - a booted container,
# a rendered inventory - are made once and its stateful tests keep their order)
# tests/: the repository (roles, playbooks, integration); the collection's own unit tests live in it
python -m pytest -q -n "${PYTEST_WORKERS:-3}" --dist loadfile --durations=15 tests collections/ansible_collections/gpufleet/k8s/tests/unit
rc=$?
[ $rc -eq 0 ] || fail=1

step "molecule"
if [ -n "$molecule_pid" ]; then wait "$molecule_pid"; elif [ -z "$molecule_done" ]; then run_molecule; fi
cat "$logs/molecule-results.txt"
passed=$(grep -c '^PASS' "$logs/molecule-results.txt")
failed=$(grep -c '^FAIL' "$logs/molecule-results.txt")
[ "$failed" -eq 0 ] || fail=1
step "done"
[ "$fail" -eq 0 ] && echo "all checks: OK" || echo "all checks: FAILED (see above)"
echo "molecule: $passed passed, $failed failed"
echo "total: $((SECONDS - t0)) s"
exit $fail
