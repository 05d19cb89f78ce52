#!/bin/sh
# Read-only facts for the nvidia_driver role, one "key=value" per line.
# container: systemd-detect-virt's answer, else the engines' marker files; "none" when neither says so.
c=$(systemd-detect-virt --container 2>/dev/null) || c=none
if [ "$c" = none ]; then
  if [ -f /run/.containerenv ]; then c=podman; elif [ -f /.dockerenv ]; then c=docker; fi
fi
echo "container=$c"
# PID 2 is kthreadd wherever the kernel is our own (machine or VM); a container's PID namespace hides it
echo "pid2_comm=$(cat /proc/2/comm 2>/dev/null)"
# Platforms that ship the driver themselves
for p in /etc/dgx-release /home/kubernetes/bin/nvidia /etc/eks/release; do
  [ -e "$p" ] && echo "marker=$p"
done
# Secure Boot (mokutil prints "SecureBoot enabled|disabled", or that EFI variables are missing)
if command -v mokutil >/dev/null 2>&1; then
  out=$(mokutil --sb-state 2>&1); echo "mokutil_rc=$?"; echo "mokutil_out=$(echo "$out" | head -n 1)"
fi
# A driver installed through the package manager (its version), to tell it from a preinstalled one
# (apt: the package that owns /usr/bin/nvidia-smi, whatever its name on Debian, Ubuntu or NVIDIA's repository)
p=$(dpkg-query -S /usr/bin/nvidia-smi 2>/dev/null | sed -n '1s/:.*//p')
v=$(dpkg-query -W -f='${Version}' "${p:-nvidia-smi}" 2>/dev/null | grep -v '^$') \
  || v=$(dpkg-query -W -f='${Version}\n' 'nvidia-utils-*' 2>/dev/null | grep -v '^$' | head -n 1) \
  || v=$(rpm -q --qf '%{VERSION}' nvidia-driver 2>/dev/null) || v=""
echo "managed_version=$v"
