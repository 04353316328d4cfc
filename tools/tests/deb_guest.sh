#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The .deb packages (tools/build-deb, in $RT_CACHE/deb) installed the way an
# SRE installs them, in the test guest (its writable overlay takes dpkg's
# changes; they vanish with the guest):
#
#   dpkg -i ringtrace-dkms ringtrace   DKMS builds ringtrace.ko for this
#                                      kernel; modprobe loads it; a newer
#                                      kernel outside 6.1 .. 6.12 (headers
#                                      posing as 6.13) is skipped, and the
#                                      install succeeds
#   ringtrace record -- CMD            records with the installed programs
#   systemd-analyze verify             the installed unit
#   ringtraced-recover                 the unit's ExecStartPre saves what the
#                                      region (region-args) kept, released
#   bash completion                    completes commands and options
#   dpkg -r, dpkg -P                   the module leaves every kernel; traces
#                                      in /var/lib/ringtrace stay until purge
#
# This guest's init is vmtest's own: the unit is checked with
# systemd-analyze verify here, and started under systemd by
# tools/tests/systemd.sh.  Ends with "deb: N passed, M failed".
#
# What this guest spends its time on is printed ("# dpkg -i: N s") and the
# install's log, each line with its second, kept in $RT_VM_OUT.

set -u
cd "$(dirname "$0")/../.."
readonly KVER=${RT_KVER:-$(uname -r)}
readonly DEB=${RT_DEB:-${RT_CACHE:-/var/cache/ringtrace}/deb}
readonly W=$(mktemp -d /tmp/rt-deb.XXXXXX)

. tools/tests/check.sh
. tools/tests/dkms-ccache
. tools/tests/guest-dpkg
. tools/tests/guest-modules
. tools/tests/posing-headers

note() { echo "# $*"; }

# Microseconds since the epoch, and whole seconds since such a time.
now_us() { echo "${EPOCHREALTIME/./}"; }
since() { echo $((($(now_us) - $1) / 1000000)); }

# stamp_lines T0: each line of the input after the seconds since T0.
stamp_lines() {
	local l t
	while IFS= read -r l; do
		t=$(((${EPOCHREALTIME/./} - $1) / 100000))
		printf '%4d.%d %s\n' $((t / 10)) $((t % 10)) "$l"
	done
}

installed_ko() { ls /lib/modules/*/updates/dkms/ringtrace.ko* 2>/dev/null; }

# A kernel newer than ringtrace supports beside this one, as after the
# install of a 6.13 kernel and its headers: its /boot/config makes it the
# newest kernel, for which the postinst builds too; its headers are
# 6.12's posing as 6.13 (tools/tests/posing-headers), which the code
# before refused in Kbuild, failing the install with DKMS's status 10.
readonly NEWER=6.13.0-1-amd64
newer_kernel() {
	local h
	h=$(ls -d /usr/src/linux-headers-6.12.*-amd64 2>/dev/null | grep -v -- -rt- | tail -n1)
	[[ -n $h ]] && posing "$W/headers-6.13" 6 13 "$h" >/dev/null &&
		cp "/boot/config-${h#/usr/src/linux-headers-}" "/boot/config-$NEWER" &&
		mkdir -p "/lib/modules/$NEWER" && ln -s "$W/headers-6.13" "/lib/modules/$NEWER/build"
}

# The module's persistent region in this boot's command line
# (tools/vm/region-args: run-tests gives every boot one), as modprobe
# options; nothing without one.
region_opts() {
	local w size n
	for w in $(cat /proc/cmdline); do
		case $w in
		reserve_mem=*:ringtrace) echo persist=ringtrace; return ;;
		memmap=*\$*)
			size=${w#memmap=}; size=${size%%\$*}; n=${size%[KMG]}
			case $size in *K) n=$((n << 10)) ;; *M) n=$((n << 20)) ;; *G) n=$((n << 30)) ;; esac
			echo "persist_addr=${w#*\$} persist_size=$n"; return ;;
		esac
	done
}

# The unit's ExecStartPre saves the previous trace the region kept (issue
# 32): markers recorded into the region, the module reloaded (the rings
# kept as the previous trace's image, as after a warm reboot), then the
# installed ringtraced-recover as the unit runs it, its --root from
# RINGTRACED_OPTS: the directory, the markers last on their CPU, the region
# released; run again, "no previous trace".  Leaves the module loaded.
deb_unit_recovers() {
	local opts dir got
	opts=$(region_opts)
	if [[ -z $opts ]]; then
		check "a persistent region on the kernel's command line (RT_VM_KERNEL_ARGS=\$(region_args ...), tools/vm/region-args)" false
		return
	fi
	rmmod ringtrace
	# shellcheck disable=SC2086 # options are words
	check "modprobe ringtrace $opts" modprobe ringtrace $opts
	# An earlier suite of this boot may have left its trace in the region
	# (the daemon suite's test_persist_image ends loaded over it): gone
	# first, as a user who does not want it would release it.
	if grep -Eq '^state (previous|damaged|foreign)' /sys/kernel/debug/ringtrace/persist/info; then
		note "an earlier suite's image in the region: released"
		sed -n 's/^uuid //p' /sys/kernel/debug/ringtrace/persist/info \
			>/sys/kernel/debug/ringtrace/persist/release
	fi
	check "persist/info: the region is live" \
		grep -q '^state live' /sys/kernel/debug/ringtrace/persist/info
	(cd "$W" && ringtrace record -e marker -o "$W/live" -- sh -c \
		'for i in 1 2 3; do echo "unit-m$i" >/sys/kernel/debug/ringtrace/marker; done') \
		>"$W/live.out" 2>&1
	check "ringtrace record into the region: exit 0" test $? -eq 0
	rmmod ringtrace
	# shellcheck disable=SC2086
	modprobe ringtrace $opts
	check "reloaded: persist/info keeps the previous trace" \
		grep -q '^state previous' /sys/kernel/debug/ringtrace/persist/info
	RINGTRACED_OPTS="--max-size 32M --root $W/prev --max-total 4G" \
		/usr/lib/ringtrace/ringtraced-recover >"$W/prev.out" 2>&1
	check "ringtraced-recover: exit 0" test $? -eq 0
	sed 's/^/# /' "$W/prev.out" | head -8
	dir=$(ls -d "$W"/prev/*-previous-boot 2>/dev/null | head -1)
	check "the previous trace saved as ROOT/YYYYmmdd-HHMMSS-previous-boot" test -n "$dir"
	# Each CPU's last 3 markers: the three, whichever CPUs sh ran on.
	got=$(ringtrace report -e ringtrace_marker --tail 3 "$dir" 2>&1 |
		grep -o 'data="unit-m[0-9]' | sort | tr -d '\n')
	check "report --tail 3 -e ringtrace_marker: the markers (got '$got')" \
		test "$got" = 'data="unit-m1data="unit-m2data="unit-m3'
	[[ $got == 'data="unit-m1data="unit-m2data="unit-m3' ]] ||
		ringtrace report --tail 3 "$dir" 2>&1 | sed 's/^/# /' | head -20
	check "the region released: live again" \
		grep -q '^state live' /sys/kernel/debug/ringtrace/persist/info
	RINGTRACED_OPTS="--root $W/prev" /usr/lib/ringtrace/ringtraced-recover >"$W/prev2.out" 2>&1
	check "ringtraced-recover again: no previous trace" \
		eval 'grep -q "no previous trace" "$W/prev2.out" && test $(ls "$W/prev" | wc -l) -eq 1'
}

main() {
	local dkms_deb tools_deb t
	dkms_deb=$(ls "$DEB"/ringtrace-dkms_*_all.deb 2>/dev/null | head -1)
	tools_deb=$(ls "$DEB"/ringtrace_*_*.deb 2>/dev/null | head -1)
	if [[ -z $dkms_deb || -z $tools_deb ]]; then
		check "packages built in $DEB (make deb)" false
		check_summary deb
		return
	fi
	note "kernel $KVER; installing $(basename "$dkms_deb") $(basename "$tools_deb")"
	grep -q '^ringtrace ' /proc/modules && rmmod ringtrace
	# DKMS builds for the running kernel and the newest one with headers.
	# The guest of each kernel checks its own: the others' module trees
	# are hidden (a bind mount in the guest's overlay), which halves the
	# time DKMS takes under TCG where the newest kernel is another one.
	local k
	mkdir -p "$W/empty"
	for k in /lib/modules/*; do
		[[ ${k##*/} == "$KVER" ]] || mount --bind "$W/empty" "$k"
	done

	setup "a $NEWER kernel's headers beside $KVER" newer_kernel

	# man-db's dpkg trigger rebuilds the whole manual page index when
	# this file exists: minutes of reading /usr/share/man over 9p under
	# TCG, for an index this test never reads (it checks the installed
	# pages themselves).  Debian's man-db/auto-update=false does the same.
	rm -f /var/lib/man-db/auto-update

	# dpkg's database from the host's copy, in memory
	# (tools/tests/guest-dpkg): 9p reads it a file at a time.
	t=$(now_us)
	guest_dpkg_local
	note "dpkg's database: $(since "$t") s"
	# And the kernel's modules, which DKMS's depmod and sanity check read
	# (tools/tests/guest-modules).
	t=$(now_us)
	guest_modules_local "$KVER"
	note "the kernel's modules: $(since "$t") s"
	# DKMS signs with the key the host made once (tools/tests/dkms-ccache)
	# instead of making one in every guest.
	dkms_mok_install /var/lib/dkms

	# DKMS compiles through ccache, whose cache the host filled by the
	# same build (tools/tests/dkms-ccache, run by tools/run-tests): what
	# it does not hold is compiled here, as it would be anyway.
	t=$(now_us)
	(
		dkms_ccache_env
		ccache -z >/dev/null 2>&1
		dpkg -i "$dkms_deb" "$tools_deb" 2>&1 | stamp_lines "$t" >"$W/install.log"
		rc=${PIPESTATUS[0]}
		note "ccache: $(ccache --print-stats 2>/dev/null |
			awk '$1 ~ /^(direct|preprocessed)_cache_hit$/ { h += $2 }
			     $1 == "cache_miss" { m = $2 } END { printf "%d hits, %d misses", h, m }')"
		exit $rc
	)
	check "dpkg -i ringtrace-dkms ringtrace" test $? -eq 0
	note "dpkg -i: $(since "$t") s"
	[[ -d ${RT_VM_OUT:-} ]] && cp "$W/install.log" "$RT_VM_OUT/deb-install.log"
	grep -E 'Building|Installing|Error|error' "$W/install.log" | head -8 | sed 's/^ *[0-9.]* /# /'
	check "postinst: $NEWER skipped (dkms.conf's BUILD_EXCLUSIVE_KERNEL)" \
		eval 'sed -n "/Building initial module for $NEWER\$/,/Building initial\|Setting up/p" "$W/install.log" | grep -q " Skipped\.\$"'
	check "the installed dkms.conf's kernels are compat.h's (debian/dkms-kernels)" \
		grep -qxF "$(debian/dkms-kernels module/compat.h)" /usr/src/ringtrace-*/dkms.conf
	# What dkms 3.0.10 still does when that kernel is installed (README):
	# its hook fails, autoinstall counting the skip as a failure.
	/etc/kernel/postinst.d/dkms "$NEWER" >"$W/hook.log" 2>&1
	note "/etc/kernel/postinst.d/dkms $NEWER: status $? ($(grep -m1 -o 'One or more modules failed[^.]*' "$W/hook.log"))"
	dkms status ringtrace >"$W/dkms.status" 2>&1
	sed 's/^/# /' "$W/dkms.status"
	check "dkms status: ringtrace installed for $KVER" \
		eval 'grep -F ", $KVER, " "$W/dkms.status" | grep -q ": installed"' 
	check "modprobe ringtrace" modprobe ringtrace
	check "the loaded module is DKMS's" \
		grep -q "/updates/dkms/" <(modinfo -n ringtrace)
	check "ringtrace --version" grep -q "^ringtrace [0-9]" <(ringtrace --version)
	check "ringtraced --version" grep -q "^ringtraced [0-9]" <(ringtraced --version)
	check "man ringtrace and ringtraced are installed" \
		test -s /usr/share/man/man1/ringtrace.1.gz -a -s /usr/share/man/man8/ringtraced.8.gz

	# Recording with what the packages installed, from a directory
	# outside the source tree (ringtraced is found through PATH).
	(cd "$W" && ringtrace record -e syscalls -o "$W/trace" -- cat /proc/version) \
		>"$W/record.out" 2>"$W/record.err"
	check "ringtrace record -- cat: exit 0" test $? -eq 0
	check "report: cat's read system calls, named" \
		grep -qE ' cat-[0-9]+ syscall_entry: id=read\(' <(ringtrace report "$W/trace" 2>/dev/null)
	check "babeltrace2 reads the unpacked trace" \
		eval 'ringtrace unpack "$W/trace" "$W/ctf" >/dev/null && babeltrace2 "$W/ctf" | grep -q syscall_entry'

	systemd-analyze verify /lib/systemd/system/ringtraced.service >"$W/verify" 2>&1
	check "systemd-analyze verify ringtraced.service" test $? -eq 0
	sed 's/^/# /' "$W/verify" | head -5
	check "the unit is installed, not enabled" \
		test ! -e /etc/systemd/system/multi-user.target.wants/ringtraced.service
	t=$(now_us)
	deb_unit_recovers
	note "the unit's recovery: $(since "$t") s"

	if [[ -r /usr/share/bash-completion/bash_completion ]]; then
		local got
		got=$(bash -c '. /usr/share/bash-completion/bash_completion
			. /usr/share/bash-completion/completions/ringtrace
			COMP_WORDS=(ringtrace rep); COMP_CWORD=1; COMP_LINE="ringtrace rep"
			COMP_POINT=${#COMP_LINE}; _ringtrace; echo "${COMPREPLY[*]}"
			COMP_WORDS=(ringtrace record --dur); COMP_CWORD=2
			COMP_LINE="ringtrace record --dur"; COMP_POINT=${#COMP_LINE}
			_ringtrace; echo "${COMPREPLY[*]}"' 2>&1)
		check "bash completion: 'rep' -> report, 'record --dur' -> --duration" \
			test "$got" = $'report\n--duration'
		[[ $got == $'report\n--duration' ]] || note "completion gave: $got"
	else
		# tools/install-deps installs it: the completion must be tried.
		check "bash-completion is installed (tools/install-deps)" false
	fi

	rmmod ringtrace
	mkdir -p /var/lib/ringtrace/20260101-000000 && touch /var/lib/ringtrace/20260101-000000/metadata
	t=$(now_us)
	dpkg -r ringtrace ringtrace-dkms >"$W/remove.log" 2>&1
	check "dpkg -r ringtrace ringtrace-dkms" test $? -eq 0
	note "dpkg -r: $(since "$t") s"
	check "the module left every kernel" test -z "$(installed_ko)"
	check "dkms knows no ringtrace any more" test -z "$(dkms status ringtrace 2>/dev/null)"
	check "traces in /var/lib/ringtrace stay after a removal" \
		test -e /var/lib/ringtrace/20260101-000000/metadata
	t=$(now_us)
	dpkg -P ringtrace >/dev/null 2>&1
	check "a purge removes /var/lib/ringtrace" test ! -e /var/lib/ringtrace
	note "dpkg -P: $(since "$t") s"
	rm -rf "/lib/modules/$NEWER" "/boot/config-$NEWER"
	for k in /lib/modules/*; do
		[[ ${k##*/} == "$KVER" ]] || umount "$k"
	done
	! mountpoint -q /var/lib/dpkg || umount /var/lib/dpkg
	guest_modules_release "$KVER"
	check_summary deb
}

main
