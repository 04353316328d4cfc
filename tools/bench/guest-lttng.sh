# SPDX-License-Identifier: GPL-2.0
#
# guest-lttng.sh - LTTng helpers for the guest scripts of `make bench`;
# sourced, not run.  LTTng's kernel modules come from build-lttng's tree
# for this kernel; run-bench hands the guest $RT_LTTNG, a directory where
# $RT_LTTNG/$RT_KVER is either that tree (a symlink) or a file
# $RT_LTTNG/$RT_KVER.unavailable saying why there is none.
#
#   lttng_start OUT     copy the modules over /lib/modules/$(uname -r) (the
#                       guest's writable overlay), start lttng-sessiond,
#                       which modprobes them; on failure say why in
#                       OUT/lttng.unavailable and return 1
#   lttng_ok            true when lttng_start succeeded in this boot (also
#                       in a child script: it checks the running sessiond)
#   lttng_why           the reason LTTng is not available
#   lttng_pin CPUS      affinity of every thread of lttng-sessiond and
#                       lttng-consumerd (a kernel session's consumer is a
#                       child of the session daemon, started on first use)
#   lttng_consumer_pids the pids of lttng-consumerd
#   lttng_lost SESSION  events the session's channels discarded plus the
#                       packets they lost, from `lttng list SESSION`
#   lttng_stop OUT      destroy every session, stop the session daemon

# (The guest has no pgrep -x on busybox paths; ps is procps.)
lttng_pids_of() {
	local p comm
	for p in /proc/[0-9]*; do
		comm=$(cat "$p/comm" 2>/dev/null) || continue
		[[ $comm == "$1" ]] && echo "${p#/proc/}"
	done
	return 0
}

lttng_start() {
	local out=$1 tree kver
	kver=$(uname -r)
	tree=${RT_LTTNG:-}/$kver/modtree/lib/modules/$kver
	if [[ -z ${RT_LTTNG:-} ]]; then
		echo "run-bench gave no LTTng modules (RT_LTTNG unset)" >"$out/lttng.unavailable"
		return 1
	fi
	if [[ -e $RT_LTTNG/$kver.unavailable ]]; then
		cp -- "$RT_LTTNG/$kver.unavailable" "$out/lttng.unavailable"
		return 1
	fi
	if ! command -v lttng-sessiond >/dev/null; then
		echo "lttng-tools is not installed (tools/install-deps)" >"$out/lttng.unavailable"
		return 1
	fi
	if [[ ! -d $tree/updates/lttng ]]; then
		echo "no module tree $tree" >"$out/lttng.unavailable"
		return 1
	fi
	cp -r -- "$tree/updates" "/lib/modules/$kver/"
	cp -- "$tree"/modules.* "/lib/modules/$kver/"
	# --daemonize returns once the daemon is ready.  It loads every
	# module it knows of; those whose subsystem is absent fail quietly.
	# Our probe for ringtrace_bench's tracepoint is not in its list.
	if ! lttng-sessiond --daemonize --extra-kmod-probes=ringtrace-bench \
		>"$out/lttng-sessiond.log" 2>&1; then
		echo "lttng-sessiond failed: $(tail -1 "$out/lttng-sessiond.log")" >"$out/lttng.unavailable"
		return 1
	fi
	if ! lttng list -k >"$out/lttng-events.txt" 2>&1 ||
		! grep -q sched_switch "$out/lttng-events.txt"; then
		echo "lttng-sessiond runs but lists no kernel events: $(head -3 "$out/lttng-events.txt" | tr '\n' ' ')" \
			>"$out/lttng.unavailable"
		return 1
	fi
	{ lttng --version; modinfo -F version "/lib/modules/$kver/updates/lttng/lttng-tracer.ko"; } \
		>"$out/lttng-version.txt" 2>&1 || true
	return 0
}

lttng_ok() {
	[[ -n $(lttng_pids_of lttng-sessiond) ]]
}

lttng_why() {
	if [[ -s ${RT_VM_OUT:-}/lttng.unavailable ]]; then
		cat -- "$RT_VM_OUT/lttng.unavailable"
	else
		echo "lttng-sessiond is not running"
	fi
}

lttng_consumer_pids() {
	lttng_pids_of lttng-consumerd
}

lttng_pin() {
	local p
	for p in $(lttng_pids_of lttng-sessiond) $(lttng_pids_of lttng-consumerd); do
		taskset -a -p -c "$1" "$p" >/dev/null
	done
}

# "Discarded events: N" (discard mode) and "Lost packets: N" (overwrite
# mode) per channel.
lttng_lost() {
	lttng list "$1" | awk '
		/Discarded events:/ { n += $NF }
		/Lost packets:/ { n += $NF }
		END { print n + 0 }'
}

lttng_stop() {
	lttng destroy --all >/dev/null 2>&1 || true
	local p
	for p in $(lttng_pids_of lttng-sessiond); do
		kill -TERM "$p" 2>/dev/null || true
	done
}
