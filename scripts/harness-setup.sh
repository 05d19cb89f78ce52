#!/usr/bin/env bash
# Prepare this machine for molecule tests: podman (+ runc, cgroupfs), debootstrap-built Debian
# systemd images (no registry exists here), containerd for config validation, dpkg-dev for the
# local stand-in apt repository, openssh-client for the tests that reach a container over SSH,
# prometheus for its promtool (the alert rules are checked and unit-tested with it), chromium to
# look at the fleet report page in a real headless browser, gnupg to make throwaway signing keys.
# Idempotent and cached: an image that exists is reused.
set -euo pipefail
cd "$(dirname "$0")/.."

need_pkgs=(podman runc fuse-overlayfs slirp4netns uidmap debootstrap containerd dpkg-dev shellcheck openssh-client prometheus chromium gnupg)
missing=()
for p in "${need_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "harness: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# podman on this kind of machine: hybrid cgroups v1, no CAP_SYS_RESOURCE (rlimits cannot be raised).
conf=/etc/containers/containers.conf
hard_nofile=$(ulimit -Hn)
want_conf="# written by gpufleet scripts/harness-setup.sh
[containers]
default_ulimits = [\"nofile=${hard_nofile}:${hard_nofile}\", \"nproc=32768:32768\"]
[engine]
runtime = \"runc\"
cgroup_manager = \"cgroupfs\"
events_logger = \"file\""
if [ "$(cat "$conf" 2>/dev/null)" != "$want_conf" ]; then
  mkdir -p /etc/containers
  printf '%s\n' "$want_conf" > "$conf"
fi
sysctl -q -w fs.inotify.max_user_instances=8192 fs.inotify.max_user_watches=1048576 || true

build_image() {  # $1 suite, $2 tag
  local suite=$1 tag=$2
  if podman image exists "$tag"; then return 0; fi
  local root; root=$(mktemp -d /var/tmp/gpufleet-rootfs.XXXXXX)
  echo "harness: debootstrap $suite -> $tag"
  debootstrap --variant=minbase \
    --include=systemd,systemd-sysv,dbus,python3,python3-apt,ca-certificates,sudo,procps,iproute2 \
    "$suite" "$root" http://deb.debian.org/debian >/dev/null
  # keep images small and apt fast inside tests
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  # like a fresh install: package lists never fetched (apt modules then update them)
  touch -d @0 "$root"/var/lib/apt/lists
  tar -C "$root" -c . | podman import --change 'CMD ["/sbin/init"]' \
    --change 'STOPSIGNAL SIGRTMIN+3' - "$tag" >/dev/null
  rm -rf "$root"
}

# the two suites build in parallel (network bound)
build_image bookworm localhost/gpufleet-debian:12 &
p1=$!
build_image trixie localhost/gpufleet-debian:13 &
p2=$!
wait $p1; wait $p2
podman image exists localhost/gpufleet-debian:12
podman image exists localhost/gpufleet-debian:13
echo "harness: ready"
