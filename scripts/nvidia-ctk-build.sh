#!/usr/bin/env bash
# Build NVIDIA's nvidia-ctk from the Go module proxy, at the host toolkit version gpufleet pins
# (nvidia_container_toolkit_version in roles/nvidia_container_toolkit/defaults/main.yml, "1.20.0-1" -> v1.20.0),
# for tests only: tests/integration/test_nvidia_ctk_contract.py compares `nvidia-ctk runtime configure` with
# gpufleet's own containerd change. Nothing here ships.
# The binary is cached outside the repository in $GPUFLEET_CTK_CACHE (default ~/.cache/gpufleet/nvidia-ctk-<version>/);
# a cached one is reused. Prints the binary's path on the last line.
# Usage: scripts/nvidia-ctk-build.sh [VERSION]   (VERSION like 1.20.0; default the role's pin)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

version=${1:-$(sed -n 's/^nvidia_container_toolkit_version: *"\{0,1\}\([0-9][0-9.]*\).*/\1/p' \
  "$root/roles/nvidia_container_toolkit/defaults/main.yml")}
[ -n "$version" ] || { echo "nvidia-ctk: no nvidia_container_toolkit_version in the role's defaults" >&2; exit 1; }
version=${version#v}
module=github.com/NVIDIA/nvidia-container-toolkit
dir=${GPUFLEET_CTK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpufleet}/nvidia-ctk-$version

if [ ! -f "$dir/.done" ]; then
  # Go from the machine image (/usr/local/go) when no login shell put it on PATH (CI runs non-interactively)
  command -v go >/dev/null || PATH=$PATH:/usr/local/go/bin
  command -v go >/dev/null || { echo "nvidia-ctk: Go (1.26+) is needed to build nvidia-ctk" >&2; exit 1; }
  export GOFLAGS=-trimpath
  # The toolkit's go.mod names the Go it needs: the machine's Go 1.26.8 when that is enough, else go1.27.3.
  gomod=$(GOTOOLCHAIN=local GOFLAGS=-mod=mod go mod download -json "$module@v$version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
  need=$(awk '$1 == "go" {print $2; exit}' "$gomod")
  if [ "$(printf '%s\n%s\n' "$need" 1.26.8 | sort -V | tail -n 1)" = 1.26.8 ]; then
    export GOTOOLCHAIN=local
  else
    export GOTOOLCHAIN=go1.27.3
  fi
  t0=$SECONDS
  echo "nvidia-ctk: building $module/cmd/nvidia-ctk@v$version (go $need, GOTOOLCHAIN=$GOTOOLCHAIN) -> $dir" >&2
  rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
  GOBIN=$dir.tmp nice -n 10 go install -ldflags='-s -w' "$module/cmd/nvidia-ctk@v$version"
  touch "$dir.tmp/.done" && rm -rf "$dir" && mv "$dir.tmp" "$dir"
  echo "nvidia-ctk: built in $((SECONDS - t0)) s" >&2
fi
echo "$dir/nvidia-ctk"
