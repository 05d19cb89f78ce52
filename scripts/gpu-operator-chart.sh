#!/usr/bin/env bash
# Package NVIDIA's GPU Operator chart the way its release does, for the tests (nothing here ships):
#   helm package --version vX.Y.Z --app-version vX.Y.Z ../shared/charts/gpu-operator-vX.Y.Z
# The chart in git says version v1.0.0-devel and appVersion main-latest; NVIDIA's release packaging stamps
# both (../shared/charts/SOURCES.md). The NFD subchart is vendored in the chart's charts/.
# Usage: scripts/gpu-operator-chart.sh [VERSION]   (default: the pin of module_utils/core/versions.py)
# The .tgz is cached outside the repository, keyed by a hash of the chart's files and the helm binary:
# ${XDG_CACHE_HOME:-~/.cache}/gpufleet/charts/gpu-operator-<version>-<hash>/gpu-operator-<version>.tgz; a cached
# one is reused. Prints its path on the last line. helm is the one scripts/controlplane-build.sh builds.
# Exit status: 0 done, 3 the chart folder is absent (tests skip, naming it), 1 anything else.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:-$(python3 -c 'import sys; sys.path.insert(0, "collections")
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.versions import CHARTS
print(CHARTS["gpu_operator"]["version"])')}
[ -n "$version" ] || { echo "gpu-operator-chart: no chart version pinned in versions.py" >&2; exit 1; }
src=$(cd .. && pwd)/shared/charts/gpu-operator-$version
[ -d "$src" ] || { echo "gpu-operator-chart: $src is absent (../shared/charts/)" >&2; exit 3; }
helm=$(bash scripts/controlplane-build.sh paths | sed -n 's/^helm=//p')/helm
[ -x "$helm" ] || { echo "gpu-operator-chart: $helm is not built: run scripts/controlplane-build.sh" >&2; exit 1; }
cache=${XDG_CACHE_HOME:-$HOME/.cache}/gpufleet/charts
hash=$( (cd "$src" && find . -type f -print0 | sort -z | xargs -0 sha256sum; echo "$helm") | sha256sum | cut -c1-12)
dir=$cache/gpu-operator-$version-$hash
if [ ! -f "$dir/.done" ]; then
  mkdir -p "$cache"
  tmp=$(mktemp -d "$dir.tmp.XXXXXX")
  "$helm" package --version "$version" --app-version "$version" "$src" -d "$tmp" >&2
  touch "$tmp/.done"
  # another caller may have finished first: keep its copy
  mv -T "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp"
fi
echo "$dir/gpu-operator-$version.tgz"
