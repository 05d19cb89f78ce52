#!/usr/bin/env bash
# Build Karpenter for the tests (nothing here ships): the core controller with its KWOK cloud provider,
# the main package sigs.k8s.io/karpenter/kwok, from the Go module proxy. The tests run it out of cluster beside
# the test control plane (tests/helpers/karpenter.py); its CRDs come from the same module's source.
# The AWS provider's module (github.com/aws/karpenter-provider-aws) is only downloaded: its recorded EC2 answers,
# GPU metadata and prices feed the instance-types file (tests/helpers/karpenter.py), its CRDs are the EC2NodeClass's.
#
# Cached outside the repository in $GPUFLEET_KARPENTER_CACHE (default ~/.cache/gpufleet/karpenter-<version>-<hash>/,
# the hash covers this script); a finished build (.done) is reused. Karpenter v1.15 needs Go >= 1.26.9, so the
# build runs with GOTOOLCHAIN=go1.27.3 (the Go module proxy serves the toolchain).
#
#   scripts/karpenter-build.sh          build if needed; prints the binary's path on its last line
#   scripts/karpenter-build.sh paths    prints binary=, core=, aws= (module source folders); builds nothing
#
# Cold build on the 2-core machine: see docs/development/testing.md.
set -euo pipefail
cd "$(dirname "$0")/.."
KARPENTER=sigs.k8s.io/karpenter
KARPENTER_VERSION=v1.15.0
AWS=github.com/aws/karpenter-provider-aws
AWS_VERSION=v1.15.3
export GOTOOLCHAIN=go1.27.3 GOFLAGS=-trimpath
command -v go >/dev/null || PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null || { echo "karpenter-build: Go is needed to build Karpenter" >&2; exit 1; }

hash=$(sha256sum "$0" | cut -c1-12)
dir=${GPUFLEET_KARPENTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpufleet}/karpenter-$KARPENTER_VERSION-$hash

module_dir() {  # $1 module@version: its source folder in the module cache (downloads it if absent)
  go mod download -json "$1" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p'
}

paths() {
  echo "binary=$dir/karpenter-kwok"
  echo "core=$(module_dir "$KARPENTER@$KARPENTER_VERSION")"
  echo "aws=$(module_dir "$AWS@$AWS_VERSION")"
}

case "${1:-build}" in
  build)
    if [ ! -f "$dir/.done" ]; then
      t0=$SECONDS
      echo "karpenter-build: building $KARPENTER/kwok@$KARPENTER_VERSION -> $dir" >&2
      rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
      GOBIN=$dir.tmp nice -n 10 go install -ldflags='-s -w' "$KARPENTER/kwok@$KARPENTER_VERSION"
      mv "$dir.tmp/kwok" "$dir.tmp/karpenter-kwok"
      module_dir "$AWS@$AWS_VERSION" >/dev/null
      touch "$dir.tmp/.done" && rm -rf "$dir" && mv "$dir.tmp" "$dir"
      echo "karpenter-build: built in $((SECONDS - t0)) s" >&2
    fi
    echo "$dir/karpenter-kwok"
    ;;
  paths) paths ;;
  *) echo "usage: $0 [build|paths]" >&2; exit 2 ;;
esac
