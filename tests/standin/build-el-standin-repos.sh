#!/bin/sh
# STAND-IN RPM repositories for a RHEL-family host (Rocky 9 layout), built with the real rpmbuild
# and createrepo_c. The distributions' and EPEL's repositories cannot be reached from the test
# machines and no RHEL-family image can be obtained, so the test host is a Debian container whose
# os-release names Rocky Linux 9, with Debian's real rpm and dnf. These packages carry the REAL
# names the roles install (pciutils, kmod, dracut, dnf-plugins-core, epel-release, dkms); their
# contents are stand-ins: dracut is a script that logs its arguments. They are not the real ones.
# Usage (inside the container): build-el-standin-repos.sh OUTDIR
set -eu
out=$1
top=$(mktemp -d)
mkdir -p "$out/baseos" "$out/crb" "$out/epel"

pkg() { # repo name version files-script(shell run in %install with $RPM_BUILD_ROOT) files-list
  repo=$1 name=$2 version=$3 install=$4 files=$5
  cat > "$top/$name.spec" <<EOF
Name: $name
Version: $version
Release: 1.gpufleet.standin
Summary: gpufleet test stand-in for $name
License: Apache-2.0
BuildArch: noarch
AutoReqProv: no
%description
Stand-in built by tests/standin/build-el-standin-repos.sh; not the distribution's package.
%install
mkdir -p \$RPM_BUILD_ROOT/usr/share/gpufleet-standin
echo "$name $version" > \$RPM_BUILD_ROOT/usr/share/gpufleet-standin/$name
$install
%files
/usr/share/gpufleet-standin/$name
$files
EOF
  rpmbuild -bb --quiet --nodeps --define "_topdir $top/build" --define "_rpmdir $out/$repo" \
    --define "_build_name_fmt %%{NAME}-%%{VERSION}-%%{RELEASE}.%%{ARCH}.rpm" "$top/$name.spec" >/dev/null
}

pkg baseos pciutils 3.7.0 "" ""
pkg baseos kmod 28 'mkdir -p $RPM_BUILD_ROOT/etc/modprobe.d' '%dir /etc/modprobe.d'
pkg baseos dracut 057 'mkdir -p $RPM_BUILD_ROOT/usr/bin; printf "%s\n" "#!/bin/sh" "echo \"dracut \$*\" >> /var/log/gpufleet-standin-dracut.log" > $RPM_BUILD_ROOT/usr/bin/dracut; chmod 755 $RPM_BUILD_ROOT/usr/bin/dracut' "/usr/bin/dracut"
pkg baseos dnf-plugins-core 4.3.0 "" ""
pkg baseos epel-release 9 "mkdir -p \$RPM_BUILD_ROOT/etc/yum.repos.d; printf '%s\n' '[epel]' 'name=EPEL 9 (gpufleet stand-in)' 'baseurl=file://$out/epel' 'enabled=1' 'gpgcheck=0' > \$RPM_BUILD_ROOT/etc/yum.repos.d/epel.repo" "/etc/yum.repos.d/epel.repo"
pkg crb crb-marker 1 "" ""
pkg epel dkms 3.1.0 "" ""
for repo in baseos crb epel; do createrepo_c --quiet "$out/$repo"; done
rm -rf "$top"
