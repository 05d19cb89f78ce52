#!/usr/bin/env bash
# Build the DRA judge (tests/dra-judge, tests only; nothing here ships): a small Go program that decodes,
# normalizes and validates the opaque GpuConfig objects gpufleet renders with the code of NVIDIA's DRA Driver
# for GPUs, sigs.k8s.io/dra-driver-nvidia-gpu at the version tests/dra-judge/go.mod requires (from the Go
# module proxy). The binary is cached outside the repository, in $GPUFLEET_DRA_JUDGE_CACHE (default
# ~/.cache/gpufleet/dra-judge-<version>-<hash of tests/dra-judge and the build flags>/); a cached one is reused.
# Safe to run again. Prints the binary's path on the last line (tests/helpers/dra_judge.py runs it).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
base=${GPUFLEET_DRA_JUDGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpufleet}
# the driver's go.mod says go 1.26.0: the machine's Go 1.26 builds it
export GOTOOLCHAIN=local GOFLAGS=-trimpath
command -v go >/dev/null || PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null || { echo "dra-judge: Go (1.26+) is needed to build the DRA judge" >&2; exit 1; }

FLAGS_REV=1   # bump when the build flags below change
src=$root/tests/dra-judge
version=$(awk '$1 == "require" && $2 == "sigs.k8s.io/dra-driver-nvidia-gpu" {print $3}
               $1 == "sigs.k8s.io/dra-driver-nvidia-gpu" {print $2}' "$src/go.mod" | head -n 1)
hash=$( (cd "$src" && find . -type f -print0 | sort -z | xargs -0 sha256sum; echo "$FLAGS_REV") | sha256sum | cut -c1-12)
dir=$base/dra-judge-$version-$hash
if [ ! -f "$dir/.done" ]; then
  t0=$SECONDS
  echo "dra-judge: building sigs.k8s.io/dra-driver-nvidia-gpu@$version judge -> $dir" >&2
  rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
  (cd "$src" && nice -n 10 go build -ldflags='-s -w' -o "$dir.tmp/dra-judge" .)
  touch "$dir.tmp/.done" && rm -rf "$dir" && mv "$dir.tmp" "$dir"
  echo "dra-judge: built in $((SECONDS - t0)) s" >&2
  # drop the builds of other versions or sources
  for old in "$base"/dra-judge-*/; do
    [ "${old%/}" = "$dir" ] || { echo "dra-judge: removing stale $old" >&2; rm -rf "$old"; }
  done
fi
echo "$dir/dra-judge"
