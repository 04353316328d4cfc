#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# ringtraced.service under systemd, in a guest booted with systemd as PID 1
# (RT_VM_INIT=systemd, run by tools/tests/systemd.sh): the ringtrace
# package's unit, enabled and started with `systemctl enable --now`; its
# ExecStartPre loads the module (installed where DKMS puts it; DKMS itself
# is tested by deb_guest.sh).  The trace goes to $RT_VM_OUT/svc, on the
# host, so that systemd.sh can read it after the guest's shutdown has
# stopped the service.  Before that, the service once with a --trigger
# from /etc/default/ringtraced, quoted as the comment there shows it: the
# expression must reach the kernel as written (systemd's EnvironmentFile=
# and $RINGTRACED_OPTS split the options at spaces, quotes kept together),
# and a matching marker must save a snapshot.  Then the service with
# --on-chunk and a hook that hangs: its stop fits the unit's
# TimeoutStopSec, and the next start ships what it left.  Ends with
# "systemd: N passed, M failed".
set -u
cd "$(dirname "$0")/../.."
readonly KVER=${RT_KVER:-$(uname -r)}
readonly BUILD=${BUILD:-${RT_CACHE:-/var/cache/ringtrace}/build}
readonly DEB=${RT_DEB:-${RT_CACHE:-/var/cache/ringtrace}/deb}

readonly RT=/sys/kernel/debug/ringtrace

. tools/tests/check.sh
. tools/tests/guest-dpkg

note() { echo "# $*"; }

has_status() { systemctl show -p StatusText ringtraced | grep -q "$1"; }
trigger_is() { [[ $(cat "$RT/events/ringtrace_marker/trigger") == "$1" ]]; }

# snapshot_holds DIR MARKER EXPR: the snapshot DIR, read by the installed
# ringtrace, holds MARKER, and after it the kernel's trigger marker naming
# EXPR.
snapshot_holds() {
	local markers
	[[ -n $1 ]] || return 1
	markers=$(ringtrace report -e ringtrace_marker "$1" 2>&1) || { echo "# $markers"; return 1; }
	sed 's/^/# snapshot: /' <<<"$markers" | tail -n 4
	grep -A 1000 -F "data=\"$2" <<<"$markers" |
		grep -qF "data=\"ringtrace trigger: ringtrace_marker: $3 ("
}

# ringtraced --trigger as the service: the options as a user writes them
# in /etc/default/ringtraced (its comment's example).
service_trigger() {
	local expr='data == FAIL*' snap
	printf 'RINGTRACED_OPTS="--trigger '\''ringtrace_marker: %s'\'' --max 1"\n' "$expr" \
		>/etc/default/ringtraced
	sed 's/^/# \/etc\/default\/ringtraced: /' /etc/default/ringtraced
	check "--trigger: systemctl start ringtraced" systemctl start ringtraced
	check "--trigger: the kernel's trigger is the expression as written" \
		trigger_is "$expr"
	sed 's/^/# trigger: /' "$RT/events/ringtrace_marker/trigger"
	echo "FAIL svc" >"$RT/marker"
	# --max 1: the trigger is put back once the snapshot is saved.
	wait_for 60 trigger_is none
	snap=$(ls -d /var/lib/ringtrace/2*-ringtrace_marker 2>/dev/null | head -n1)
	check "--trigger: the FAIL marker saved a snapshot that holds it, then the trigger's marker (${snap:-none})" \
		snapshot_holds "$snap" "FAIL svc" "$expr"
	check "--trigger: STATUS= counts it" \
		wait_for 30 has_status 'flight recorder: 1 snapshot in .*--max 1 reached'
	systemctl show -p StatusText ringtraced | sed 's/^/# /'
	systemctl stop ringtraced
	systemctl reset-failed ringtraced 2>/dev/null
	check "--trigger: stopped, the trigger is put back" trigger_is none
	# The next start's ExecStartPre must load it again.
	check "--trigger: the module unloads after the stop" rmmod ringtrace
}

# ringtraced --on-chunk as the service, with a hook that hangs (ignoring
# SIGTERM) while sets wait for it: `systemctl stop` returns within the
# unit's TimeoutStopSec=60 and systemd never has to SIGKILL it (the
# daemon's own --stop-timeout, 50 s with --service, ends the hook's group
# and says what it left); then, with the README's ship-chunk script as the
# hook, the next start hands those sets over and the spool holds every
# marker.
service_handoff() {
	local hang=/usr/local/sbin/ringtrace-test-hang spool=/var/spool/ringtrace
	local ship=/usr/local/sbin/ship-chunk i t n
	mkdir -p /usr/local/sbin
	printf '#!/bin/sh\ntrap "" TERM\nsleep 1004\n' >"$hang"
	chmod 755 "$hang"
	echo "RINGTRACED_OPTS=\"--on-chunk $hang\"" >/etc/default/ringtraced
	check "--on-chunk: systemctl start ringtraced" systemctl start ringtraced
	for i in $(seq 1 200); do
		echo "svh $i" >"$RT/marker"
		((i % 100)) || systemctl reload ringtraced
	done
	check "--on-chunk: set 1 in the hook's hands, set 2 waiting" \
		wait_for 60 sh -c 'pgrep -f "[s]leep 1004" >/dev/null && ls -d /var/lib/ringtrace/*/chunk-000002 >/dev/null 2>&1'
	t=$SECONDS
	systemctl stop ringtraced
	t=$((SECONDS - t))
	check "--on-chunk: systemctl stop returns within TimeoutStopSec=60 ($t s)" test "$t" -lt 60
	check "--on-chunk: systemd did not have to kill it (Result=$(systemctl show -p Result --value ringtraced))" \
		test "$(systemctl show -p Result --value ringtraced)" = success
	journalctl -b -u ringtraced --no-pager -o cat | grep -e '--on-chunk' | sed 's/^/# journal: /'
	check "--on-chunk: the stop says what it left for the next start" \
		sh -c "journalctl -b -u ringtraced --no-pager -o cat | grep -q 'left for the next start: [1-9][0-9]* chunk sets not shipped'"
	check "--on-chunk: no hook process left" sh -c '! pgrep -f "[s]leep 1004"'
	systemctl reset-failed ringtraced 2>/dev/null

	# The README's script, as written there, and the next start.
	awk '/^    #!\/bin\/sh$/ { on = 1 } on && /^$/ { exit } on { print substr($0, 5) }' \
		daemon/README.md >"$ship"
	chmod 755 "$ship"
	rm -rf "$spool"
	echo "RINGTRACED_OPTS=\"--on-chunk $ship\"" >/etc/default/ringtraced
	check "--on-chunk: systemctl start ringtraced, the README's hook" systemctl start ringtraced
	check "--on-chunk: the start hands the sets left over to it" \
		wait_for 60 sh -c "ls -d $spool/*-chunk-000002 >/dev/null 2>&1"
	systemctl stop ringtraced
	systemctl reset-failed ringtraced 2>/dev/null
	n=$(tools/ringtrace report -e marker $(ls -d "$spool"/*/) 2>/dev/null | grep -c 'data="svh [0-9]*')
	check "--on-chunk: the spool's sets hold the 200 markers ($n)" test "$n" -eq 200
	rm -rf "$spool" "$hang" "$ship" /var/lib/ringtrace/2*
	rmmod ringtrace
}

main() {
	local deb i t
	deb=$(ls "$DEB"/ringtrace_*_*.deb 2>/dev/null | head -1)
	setup "systemd is PID 1" test "$(cat /proc/1/comm)" = systemd
	# As in deb_guest.sh: man-db's trigger would rebuild the whole manual
	# index over 9p under TCG (10 minutes in the run that showed it), for
	# an index this test never reads.
	rm -f /var/lib/man-db/auto-update
	# dpkg's database from the host's copy, in memory
	# (tools/tests/guest-dpkg): 9p reads it a file at a time.
	guest_dpkg_local
	t=$SECONDS
	check "dpkg -i the ringtrace package" dpkg -i "$deb"
	note "dpkg -i: $((SECONDS - t)) s"
	install -D -m 0644 "$BUILD/$KVER/ringtrace.ko" "/lib/modules/$KVER/updates/dkms/ringtrace.ko"
	# modules.* from the host's depmod over the same files (systemd.sh),
	# else depmod here: minutes of reading every module over 9p.
	t=$SECONDS
	if [[ -n ${RT_DEPMOD:-} && -s $RT_DEPMOD/lib/modules/$KVER/modules.dep.bin ]] &&
		cmp -s "$BUILD/$KVER/ringtrace.ko" "$RT_DEPMOD/lib/modules/$KVER/updates/dkms/ringtrace.ko"; then
		cp "$RT_DEPMOD/lib/modules/$KVER"/modules.* "/lib/modules/$KVER/"
		note "modules.* from the host's depmod: $((SECONDS - t)) s"
	else
		depmod "$KVER"
		note "depmod: $((SECONDS - t)) s"
	fi
	check "modprobe finds ringtrace where DKMS puts it" \
		test "$(modinfo -n ringtrace)" = "/lib/modules/$KVER/updates/dkms/ringtrace.ko"
	systemctl daemon-reload
	t=$SECONDS
	service_trigger
	note "--trigger: $((SECONDS - t)) s"
	t=$SECONDS
	service_handoff
	note "--on-chunk: $((SECONDS - t)) s"
	mkdir -p "$RT_VM_OUT/svc"
	echo "RINGTRACED_OPTS=\"--root $RT_VM_OUT/svc --max-total 64M -f 200\"" >/etc/default/ringtraced
	systemctl daemon-reload
	check "systemctl enable --now ringtraced" systemctl enable --now ringtraced
	check "the service is active" test "$(systemctl is-active ringtraced)" = active
	check "its ExecStartPre loaded the module" grep -q '^ringtrace ' /proc/modules
	for ((i = 1; i <= 100; i++)); do
		echo "svc $i" >/sys/kernel/debug/ringtrace/marker
	done
	# STATUS= comes at the start, then every 10 s: the one that counts
	# the markers' packet.
	check "STATUS= shows the figures" \
		wait_for 30 has_status ': [1-9][0-9]* packets.*written.*lost'
	systemctl show -p StatusText ringtraced | sed 's/^/# /'
	check "the unit is enabled for the next boot" systemctl is-enabled ringtraced
	systemctl status --no-pager ringtraced 2>&1 | head -12 | sed 's/^/# /'
	check_summary systemd
	# The shutdown that follows stops ringtraced (SIGTERM): systemd.sh
	# reads the trace it leaves.
}

main
