#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# ringtraced.service in a guest booted with systemd as PID 1, on the newest
# installed kernel without PREEMPT_RT (or -k KVER):
# tools/tests/systemd_guest.sh enables and starts it from the installed
# package, writes markers, and the guest shuts down through systemd, which
# stops the service.  Then, on the host: the trace it left is whole
# (ringtrace check: no damage) and holds every marker.
#
#   tools/tests/systemd.sh [-k KVER]
#
# Needs the packages of make deb in $RT_DEB (default $RT_CACHE/deb).  The
# guest's console and the trace go to $RT_SYSTEMD_OUT (default
# $RT_CACHE/vm-runs/systemd): not under /tmp or /var/tmp, which the unit's
# PrivateTmp=yes hides from the service (it then fails to start).  Prints "systemd-shutdown: N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
cache=${RT_CACHE:-/var/cache/ringtrace}
build=${BUILD:-$cache/build}
# The newest kernel without PREEMPT_RT: the version sort puts
# 6.12.117+deb12-rt-amd64 after 6.12.117+deb12-amd64, and the rt flavour is
# not the kernel a service is most often installed on.  -k picks any.
k=$(ls /lib/modules | grep -v -- '-rt-' | sort -V | tail -n1)
[[ ${1:-} == -k ]] && k=$2
out=${RT_SYSTEMD_OUT:-$cache/vm-runs/systemd}
. tools/tests/check.sh

# The guest's dpkg reads its database from this copy (tools/tests/guest-dpkg).
tools/tests/guest-dpkg pack || echo "# no copy of dpkg's database: the guest reads it over 9p"

# The guest puts ringtrace.ko where DKMS would (DKMS itself is the package
# suite's), and the unit's modprobe finds it through modules.dep.  depmod
# reads every module of the kernel, 4000 files: 183 s over 9p under TCG,
# seconds here.  So the host's depmod makes modules.* from the same files
# (the kernel's tree linked, ringtrace.ko copied where the guest puts it),
# and the guest copies them in; without them it runs depmod itself.
dep=$out.depmod
rm -rf "$dep"
if [[ ! -e /lib/modules/$k/updates && -f $build/$k/ringtrace.ko ]]; then
	mkdir -p "$dep/lib/modules/$k/updates/dkms" &&
		cp "$build/$k/ringtrace.ko" "$dep/lib/modules/$k/updates/dkms/"
	for f in /lib/modules/"$k"/*; do
		if [[ -d $f && ! -L $f ]]; then
			ln -s "$f" "$dep/lib/modules/$k/"
		elif [[ -f $f && ! -L $f ]]; then
			cp "$f" "$dep/lib/modules/$k/"
		fi
	done
	depmod -b "$dep" "$k" || { echo "# depmod on the host failed: the guest runs it"; rm -rf "$dep"; }
fi

RT_VM_INIT=systemd tools/vm/vmtest -k "$k" -t 900 -o "$out" -- \
	env BUILD="$build" RT_CACHE="$cache" RT_DEB="${RT_DEB:-$cache/deb}" RT_DEPMOD="$dep" tools/tests/systemd_guest.sh \
	>"$out.log" 2>&1
grep -E '^(ok|not ok|#) |^systemd: ' "$out/$k/console.log"
check "the guest with systemd as init ran the test and powered off" \
	grep -q ': PASS$' "$out/$k/result"
trace=$(ls -d "$out/$k"/svc/2* 2>/dev/null | tail -n1)
check "the service left a trace directory" test -n "$trace"
if [[ -n $trace ]]; then
	tools/ringtrace check "$trace" >"$out.check" 2>&1
	check "stopped at shutdown: the trace is whole (ringtrace check exit 0)" test $? -eq 0
	n=$(tools/ringtrace report -e marker "$trace" 2>/dev/null | grep -c 'data="svc [0-9]*')
	check "the trace holds the 100 markers ($n)" test "$n" -eq 100
fi
check_summary systemd-shutdown
