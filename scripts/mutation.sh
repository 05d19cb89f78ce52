#!/usr/bin/env bash
# Mutation testing (mutmut 3) of core module_utils files against their unit tests: would the tests notice
# if the code were wrong? Not part of scripts/test.sh (minutes of CPU, and a survivor is a finding to
# read, not a pass/fail); run it after changing one of these files or their tests. docs/development/testing.md
# says how to read the result and holds the latest figures.
#   scripts/mutation.sh                  node_ownership, driver_compat, k8s_syntax
#   scripts/mutation.sh k8s_syntax       one or more of them (any module_utils file that has tests/unit/test_<name>*.py)
#   MUTATION_JOBS=N                      parallel mutants (default: the number of CPUs)
#   MUTATION_SHOW=1                      print the diff of every counted survivor
# mutmut comes from its own venv (tests/mutation/requirements.txt + constraints.txt, scripts/cached-venv.sh,
# under ~/.cache/gpufleet: under a minute to make, nothing after). It works on a copy of the sources in
# build/mutation/<files>/ laid out as mutmut expects (src/ansible_collections/..., tests/, roles/), so the
# repository's own files are never mutated. Prints killed / survived per file and the score without the
# mutants that only change a message text or are listed as equivalent in tests/mutation/equivalent.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(node_ownership driver_compat k8s_syntax)
venv=$(bash scripts/cached-venv.sh mutmut tests/mutation/requirements.txt tests/mutation/constraints.txt)
mu=collections/ansible_collections/gpufleet/k8s/plugins/module_utils
work=$root/build/mutation/$(IFS=-; echo "${files[*]}")
rm -rf "$work"
mkdir -p "$work/src" "$work/tests/unit"
cp -r collections/ansible_collections "$work/src/"
rm -rf "$work/src/ansible_collections/gpufleet/k8s/tests"
cp tests/*.py "$work/tests/"
cp -r tests/helpers "$work/tests/"   # the shared test modules (conftest puts them on sys.path)
cp -r tests/fixtures "$work/tests/"
cp pytest.ini "$work/"   # the tier markers, and pytest's rootdir stays in the copy
# what the tests read of the roles: argument specs and defaults, and the task files some tests check
# (test_repo_keys reads which filter each role's key task uses)
for d in roles/*/meta roles/*/defaults roles/*/tasks roles/*/vars; do
  [ -d "$d" ] && mkdir -p "$work/$d" && cp "$d"/*.yml "$work/$d/"
done
only=() selection=()
for f in "${files[@]}"; do
  # module_utils/<package>/<name>.py (or module_utils/<name>.py); a glob that matches nothing stays literal
  rel=
  for candidate in "$mu"/*/"$f".py "$mu/$f".py; do
    [ -f "$candidate" ] && { rel=${candidate#"$mu"/}; break; }
  done
  [ -n "$rel" ] || { echo "mutation: no $mu/*/$f.py" >&2; exit 2; }
  tests=(tests/unit/test_"$f".py tests/unit/test_"$f"_*.py)
  found=0
  for t in "${tests[@]}"; do [ -f "$t" ] && { cp "$t" "$work/tests/unit/"; selection+=("$t"); found=1; }; done
  [ $found = 1 ] || { echo "mutation: no tests/unit/test_$f*.py" >&2; exit 2; }
  only+=("src/ansible_collections/gpufleet/k8s/plugins/module_utils/$rel")
done
{
  echo "[mutmut]"
  echo "source_paths = src"
  printf 'only_mutate =\n'; printf '    %s\n' "${only[@]}"
  printf 'pytest_add_cli_args_test_selection =\n'; printf '    %s\n' "${selection[@]}"
  printf 'pytest_add_cli_args =\n    -p\n    no:cacheprovider\n    -q\n'
  echo "use_git_change_detection = false"
  printf 'also_copy =\n    roles\n    pytest.ini\n'   # tests read the roles' argument specs beside tests/
} > "$work/setup.cfg"
cd "$work"
export GPUFLEET_ROLES_DIR=$work/roles PY_COLORS=0 NO_COLOR=1
t0=$SECONDS
"$venv/bin/mutmut" run --max-children "${MUTATION_JOBS:-$(nproc)}" > "$work/run.log" 2>&1 || {
  echo "mutation: mutmut run failed - log: $work/run.log" >&2; tail -30 "$work/run.log" >&2; exit 1; }
echo "mutmut run: $((SECONDS - t0)) s (${files[*]}; tests: ${selection[*]})"
"$venv/bin/python" "$root/tests/mutation/summary.py" "$root/tests/mutation/equivalent.txt" "${only[@]}"
