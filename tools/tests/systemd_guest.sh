#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# ringtraced.service under systemd, in a guest booted with systemd as PID 1
# (RT_VM_INIT=systemd, run by tools/tests/systemd.sh): the ringtrace
# package's unit, enabled and started with `systemctl enable --now`; its
# ExecStartPre loads the module (installed where DKMS puts it; DKMS itself
# is tested by deb_guest.sh).  The trace goes to $RT_VM_OUT/svc, on the
# host, so that systemd.sh can read it after the guest's shutdown has
# stopped the service.  Ends with "systemd: N passed, M failed".
set -u
cd "$(dirname "$0")/../.."
readonly KVER=${RT_KVER:-$(uname -r)}
readonly BUILD=${BUILD:-${RT_CACHE:-/var/cache/ringtrace}/build}
readonly DEB=${RT_DEB:-${RT_CACHE:-/var/cache/ringtrace}/deb}

. tools/tests/check.sh

main() {
	local deb i
	deb=$(ls "$DEB"/ringtrace_*_*.deb 2>/dev/null | head -1)
	check "systemd is PID 1" test "$(cat /proc/1/comm)" = systemd
	# As in deb_guest.sh: man-db's trigger would rebuild the whole manual
	# index over 9p under TCG (10 minutes in the run that showed it), for
	# an index this test never reads.
	rm -f /var/lib/man-db/auto-update
	check "dpkg -i the ringtrace package" dpkg -i "$deb"
	install -D -m 0644 "$BUILD/$KVER/ringtrace.ko" "/lib/modules/$KVER/updates/dkms/ringtrace.ko"
	depmod "$KVER"
	mkdir -p "$RT_VM_OUT/svc"
	echo "RINGTRACED_OPTS=\"--root $RT_VM_OUT/svc --max-total 64M -f 200\"" >/etc/default/ringtraced
	systemctl daemon-reload
	check "systemctl enable --now ringtraced" systemctl enable --now ringtraced
	check "the service is active" test "$(systemctl is-active ringtraced)" = active
	check "its ExecStartPre loaded the module" grep -q '^ringtrace ' /proc/modules
	for ((i = 1; i <= 100; i++)); do
		echo "svc $i" >/sys/kernel/debug/ringtrace/marker
	done
	# STATUS= comes every 10 s.
	sleep 11
	systemctl show -p StatusText ringtraced | sed 's/^/# /'
	check "STATUS= shows the figures" \
		grep -q 'packets.*written.*lost' <(systemctl show -p StatusText ringtraced)
	check "the unit is enabled for the next boot" systemctl is-enabled ringtraced
	systemctl status --no-pager ringtraced 2>&1 | head -12 | sed 's/^/# /'
	check_summary systemd
	# The shutdown that follows stops ringtraced (SIGTERM): systemd.sh
	# reads the trace it leaves.
}

main
