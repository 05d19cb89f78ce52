#!/bin/sh
# Build a local apt repository with STAND-INS for NVIDIA's container toolkit packages.
#
# NVIDIA's libnvidia-container repository cannot be reached from the test machines, so this
# builds small packages with the REAL package names, versions and dependencies
# (nvidia-container-toolkit, nvidia-container-toolkit-base, libnvidia-container-tools,
# libnvidia-container1) at the three versions of standin-versions.env beside this script: an older
# one, the role's default pin and a newer one, so that version pinning is tested).
# Their binaries are shell scripts: nvidia-container-runtime execs runc, nvidia-ctk understands
# `cdi generate --output=FILE` and `system create-dev-char-symlinks`. They stand in for the
# upstream packages; they are not them.
# Usage: build-standin-repo.sh OUTDIR
set -eu
out=$1
. "$(dirname "$0")/standin-versions.env"
rm -rf "$out"
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

pkg() { # name version depends files-function
  name=$1 version=$2 depends=$3 fill=$4
  dir=$work/$name-$version
  mkdir -p "$dir/DEBIAN"
  {
    echo "Package: $name"
    echo "Version: $version"
    echo "Architecture: amd64"
    echo "Maintainer: gpufleet tests <tests@gpufleet.invalid>"
    [ -n "$depends" ] && echo "Depends: $depends"
    echo "Description: gpufleet test stand-in for NVIDIA's $name"
    echo " Built by molecule/nvidia_container_toolkit; NVIDIA's repository is unreachable here."
  } > "$dir/DEBIAN/control"
  "$fill" "$dir" "$version"
  dpkg-deb --root-owner-group --build "$dir" "$out/${name}_${version}_amd64.deb" >/dev/null
}

script() { # path content
  mkdir -p "$(dirname "$1")"
  printf '%s\n' "#!/bin/sh" "$2" > "$1"
  chmod 0755 "$1"
}

fill_lib() {
  mkdir -p "$1/usr/lib/x86_64-linux-gnu"
  echo "stand-in libnvidia-container $2" > "$1/usr/lib/x86_64-linux-gnu/libnvidia-container.so.1"
}
fill_tools() {
  script "$1/usr/bin/nvidia-container-cli" "echo 'cli-version: $2 (gpufleet stand-in)'"
}
fill_base() {
  script "$1/usr/bin/nvidia-container-runtime" '# stand-in: behaves like runc
exec runc "$@"'
  script "$1/usr/bin/nvidia-ctk" "# stand-in for nvidia-ctk $2
case \"\$1 \$2\" in
  'cdi generate')
    for arg; do case \$arg in --output=*) out=\${arg#--output=};; esac; done
    mkdir -p \"\$(dirname \"\$out\")\"
    printf '%s\n' '---' 'cdiVersion: 0.5.0' 'kind: nvidia.com/gpu' 'devices: []' 'containerEdits: {}' > \"\$out\";;
  'system create-dev-char-symlinks') exit 0;;
  *) echo 'NVIDIA Container Toolkit CLI version $2 (gpufleet stand-in)';;
esac"
}
fill_toolkit() {
  script "$1/usr/bin/nvidia-container-runtime-hook" "echo 'stand-in hook $2'"
}

for v in "$TOOLKIT_OLDER" "$TOOLKIT_PINNED" "$TOOLKIT_NEWER"; do
  pkg libnvidia-container1 "$v" "" fill_lib
  pkg libnvidia-container-tools "$v" "libnvidia-container1 (>= $v)" fill_tools
  pkg nvidia-container-toolkit-base "$v" "" fill_base
  pkg nvidia-container-toolkit "$v" "nvidia-container-toolkit-base (= $v), libnvidia-container-tools (>= $v), libnvidia-container-tools (<< 2.0.0)" fill_toolkit
done
(cd "$out" && dpkg-scanpackages --multiversion . /dev/null > Packages 2>/dev/null)
