#!/usr/bin/env bash
# One command to re-run the converge benchmark:  bench/run.sh [--hosts 20] [--runs 3]
# Sets up what it needs (venv, podman images, GNU time, a local apt caching proxy on 127.0.0.1:3142).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
bash scripts/harness-setup.sh
for p in time apt-cacher-ng; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || \
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$p" >/dev/null
done
# A plain caching proxy (no mirror remapping: deb.debian.org is used as the archive address)
conf=/var/lib/gpufleet-bench/acng
if [ ! -f "$conf/acng.conf" ]; then
  mkdir -p "$conf" /var/cache/apt-cacher-ng /var/log/apt-cacher-ng /run/apt-cacher-ng
  printf '%s\n' "CacheDir: /var/cache/apt-cacher-ng" "LogDir: /var/log/apt-cacher-ng" \
    "SupportDir: /usr/lib/apt-cacher-ng" "Port: 3142" "BindAddress: 127.0.0.1" "ExThreshold: 4" > "$conf/acng.conf"
  chown -R apt-cacher-ng: /var/cache/apt-cacher-ng /var/log/apt-cacher-ng /run/apt-cacher-ng 2>/dev/null || true
fi
if ! (exec 3<>/dev/tcp/127.0.0.1/3142) 2>/dev/null; then
  /usr/sbin/apt-cacher-ng -c "$conf" pidfile=/run/apt-cacher-ng/pid SocketPath=/run/apt-cacher-ng/socket
  sleep 1
fi
sysctl -q -w fs.inotify.max_user_instances=8192 fs.inotify.max_user_watches=1048576 || true
exec .venv/bin/python bench/bench.py "$@"
