#!/usr/bin/env bash
# Build the test control plane from the upstream Go modules (tests only; nothing here ships):
#   kube-apiserver, kube-controller-manager, kube-scheduler  k8s.io/kubernetes  (tests/controlplane/kube)
#   kube-apiserver at the oldest supported minor             k8s.io/kubernetes  (tests/controlplane/kube-oldest)
#   etcd                                                     go.etcd.io/etcd/server/v3 (tests/controlplane/etcd)
#   kwok (keeps simulated Nodes Ready, runs pods' lifecycle)  sigs.k8s.io/kwok
#   helm (the operator path)                                 helm.sh/helm/v3
# Binaries are cached per version outside the repository, in $GPUFLEET_CP_CACHE (default
# ~/.cache/gpufleet/controlplane/<name>-<version>-<hash of the wrapper module>/); a cached one is reused.
# Prints the directory of each component as NAME=DIR lines on the last lines (tests/helpers/controlplane.py reads the
# same layout). Cold build on the 2-core machine: see docs/development/testing.md.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
cache=${GPUFLEET_CP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpufleet/controlplane}
export GOTOOLCHAIN=local GOFLAGS=-trimpath
# Go from the machine image (/usr/local/go) when no login shell put it on PATH (CI runs non-interactively)
command -v go >/dev/null || PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null || { echo "controlplane: Go (1.26+) is needed to build the test control plane" >&2; exit 1; }

# Bump when the build flags below change (it is part of every wrapper's cache key).
FLAGS_REV=2

version_of() {  # $1 name, $2 module: the version the wrapper's go.mod requires
  awk -v m="$2" '$1 == "require" && $2 == m {print $3} $1 == m {print $2}' "$root/tests/controlplane/$1/go.mod" | head -n 1
}

# stdout: the cache directory of a wrapper module (its version and a hash of its files and FLAGS_REV)
wrapper_dir() {  # $1 name (folder under tests/controlplane), $2 the module it pins
  local src=$root/tests/controlplane/$1 hash
  hash=$( (cd "$src" && find . -type f -print0 | sort -z | xargs -0 sha256sum; echo "$FLAGS_REV") | sha256sum | cut -c1-12)
  echo "$cache/$1-$(version_of "$1" "$2")-$hash"
}

build_wrapper() {  # $1 name, $2 module; builds every main package of the wrapper into its cache dir
  local dir t0=$SECONDS ldflags='-s -w' v
  dir=$(wrapper_dir "$1" "$2")
  if [ -f "$dir/.done" ]; then return 0; fi
  if [ "$2" = k8s.io/kubernetes ]; then
    # the version the servers report (/version), as upstream's release build stamps it
    v=$(version_of "$1" "$2"); v=${v#v}
    ldflags+=" -X k8s.io/component-base/version.gitVersion=v$v -X k8s.io/component-base/version.gitMajor=${v%%.*}"
    ldflags+=" -X k8s.io/component-base/version.gitMinor=$(echo "$v" | cut -d. -f2) -X k8s.io/component-base/version.gitTreeState=clean"
  fi
  echo "controlplane: building $1 ($2) -> $dir" >&2
  rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
  (cd "$root/tests/controlplane/$1" && go build -ldflags="$ldflags" -o "$dir.tmp/" ./...)
  touch "$dir.tmp/.done" && rm -rf "$dir" && mv "$dir.tmp" "$dir"
  echo "controlplane: $1 built in $((SECONDS - t0)) s" >&2
}

install_tool() {  # $1 name, $2 package@version (a module without replace lines)
  local dir=$cache/$1-${2##*@} t0=$SECONDS
  if [ -f "$dir/.done" ]; then return 0; fi
  echo "controlplane: building $2 -> $dir" >&2
  rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
  GOBIN=$dir.tmp go install -ldflags='-s -w' "$2"
  touch "$dir.tmp/.done" && rm -rf "$dir" && mv "$dir.tmp" "$dir"
  echo "controlplane: $1 built in $((SECONDS - t0)) s" >&2
}

KWOK=sigs.k8s.io/kwok/cmd/kwok@v0.8.0
HELM=helm.sh/helm/v3/cmd/helm@v3.22.0

case "${1:-build}" in
  build)
    t0=$SECONDS
    build_wrapper etcd go.etcd.io/etcd/server/v3
    build_wrapper kube k8s.io/kubernetes
    build_wrapper kube-oldest k8s.io/kubernetes
    install_tool kwok "$KWOK"
    install_tool helm "$HELM"
    # drop the builds of other versions or flags
    keep=$("$0" paths | cut -d= -f2 | xargs -n1 basename)
    for old in "$cache"/*/; do
      [ -d "$old" ] || continue
      grep -qx "$(basename "$old")" <<<"$keep" || { echo "controlplane: removing stale $old" >&2; rm -rf "$old"; }
    done
    echo "controlplane: ready ($((SECONDS - t0)) s)" >&2
    ;&
  paths)
    echo "etcd=$(wrapper_dir etcd go.etcd.io/etcd/server/v3)"
    echo "kube=$(wrapper_dir kube k8s.io/kubernetes)"
    echo "kube_oldest=$(wrapper_dir kube-oldest k8s.io/kubernetes)"
    echo "kwok=$cache/kwok-${KWOK##*@}"
    echo "helm=$cache/helm-${HELM##*@}"
    ;;
  *) echo "usage: $0 [build|paths]" >&2; exit 2 ;;
esac
