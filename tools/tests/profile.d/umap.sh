# SPDX-License-Identifier: GPL-2.0
#
# Part "umap" of tools/tests/profile_guest.sh: user_mmap (module/mmap.c),
# the executable mappings of traced processes with their build-ids.
#
#   hook     mmap_events 1 registers a kprobe on perf_event_mmap (in
#            debugfs' kprobes/list), 0 removes it; on a kernel without
#            kprobes (the debug kernel) 1 is refused with EOPNOTSUPP and
#            the file still reads 0
#   abi      mmap_events and mmap_dump refuse anything but 0 and 1, and
#            keep their value; mmap_stats refuses writes
#   list     ringtrace list shows user_mmap as record --mmap's (user space
#            only: not in RT_PROFILE_SCOPE=kernel)
#   exec     record --mmap -F of umap-workload (exec, dlopen of
#            libumap-test.so, exit within ms): an event for each line of
#            its /proc/self/maps -- the binary, ld.so, libc, the library,
#            [vdso] -- with its start, end, offset, device, inode and
#            path, and readelf's build-id; not DUMP; record puts
#            mmap_events and mmap_dump back; no entry left in flight, the
#            module's reference count back to 0
#   pool     the same with inject_mmap_pool_empty=1: every file's event
#            written at once, NO_PATH|NO_BUILD_ID with no path and no
#            build-id but the right range, offset, device and inode, and
#            counted in mmap_stats' no_path; nothing left in flight
#   dump     a umap-workload sleeping since before the recording, recorded
#            with --mmap -p PID: its mappings from the state dump (DUMP),
#            checked as in exec, and no other process's (on every kernel:
#            without kprobes too, where record says that later mappings
#            are not recorded)
#   tmpfs    the same of a copy of umap-workload in the guest's tmpfs
#            (a file system without ->read_folio: the build-id is read
#            from the pages already in its page cache)
#
# exec and pool need the kprobe: on a kernel without kprobes they are not
# run (hook checks the refusal there instead).

umap_wl=$REPO/tools/tests/umap-workload
umap_lib=$REPO/tools/tests/libumap-test.so
umap_need=(--need umap-workload ld-linux-x86-64.so.2 libc.so.6 libumap-test.so '[vdso]')

# The value of mmap_stats' line NAME.
umap_stat() {
	awk -v n="$1" '$1 == n { print $2 }' "$RT/mmap_stats"
}

# Writing VALUE to FILE fails with MESSAGE (strerror's) and FILE keeps BEFORE.
umap_refused() {
	local file=$1 value=$2 message=$3 before err
	before=$(<"$RT/$file")
	err=$( (printf '%s' "$value" >"$RT/$file") 2>&1) && return 1
	[[ $err == *"$message"* && $(<"$RT/$file") == "$before" ]] ||
		{ echo "# $file <- '$value': $err; now $(<"$RT/$file")"; return 1; }
}

# A kprobe on perf_event_mmap is listed ("+0x4" past an endbr64 with IBT).
umap_kprobed() {
	grep -Eq ' perf_event_mmap\+0x[0-9a-f]+ ' /sys/kernel/debug/kprobes/list
}

umap_hook() {
	if [[ -e /sys/kernel/debug/kprobes/list ]]; then
		check "umap hook: mmap_events 1 registers a kprobe on perf_event_mmap" \
			eval 'echo 1 >"$RT/mmap_events" && [[ $(<"$RT/mmap_events") == 1 ]] && umap_kprobed'
		grep perf_event_mmap /sys/kernel/debug/kprobes/list | sed 's/^/# /'
		check "umap hook: mmap_events 0 removes it" \
			eval 'echo 0 >"$RT/mmap_events" && [[ $(<"$RT/mmap_events") == 0 ]] && ! umap_kprobed'
	else
		check "umap hook: without kprobes mmap_events refuses 1 (EOPNOTSUPP), reads 0" \
			umap_refused mmap_events 1 "Operation not supported"
	fi
}

umap_abi() {
	local f v
	for f in mmap_events mmap_dump; do
		for v in 2 on -1 $'\n' "1 1" 01 " " x1; do
			check "umap abi: $f refuses $(printf %q "$v"), keeps its value" \
				umap_refused "$f" "$v" "Invalid argument"
		done
	done
	check "umap abi: mmap_dump takes 1 and 0" \
		eval 'echo 1 >"$RT/mmap_dump" && [[ $(<"$RT/mmap_dump") == 1 ]] &&
		      echo 0 >"$RT/mmap_dump" && [[ $(<"$RT/mmap_dump") == 0 ]]'
	check "umap abi: mmap_stats refuses writes" \
		eval '! (echo 0 >"$RT/mmap_stats") 2>/dev/null'
}

# umap_record NAME ARGS...: record --mmap ARGS into $W/NAME, report it.
umap_record() {
	local name=$1
	shift
	"$CLI" record --mmap -e sched_process_exec -o "$W/$name" "$@" \
		>"$W/$name.out" 2>"$W/$name.err" &&
		"$CLI" report "$W/$name" >"$W/$name.txt" 2>"$W/$name.report.err" ||
		{ sed 's/^/# /' "$W/$name.err" "$W/$name.report.err" 2>/dev/null; return 1; }
}

umap_exec() {
	local before
	before=$(umap_stat mapped)
	setup "umap exec: record --mmap -F of umap-workload" \
		umap_record umap-exec -F -- "$umap_wl" run "$umap_lib" \
		"$W/umap-exec.maps" || return
	python3 -S "$REPO/tools/tests/umap_check.py" "$W/umap-exec.txt" "$W/umap-exec.maps" \
		--flags-clear 0xd "${umap_need[@]}" >"$W/umap-exec.check" 2>&1
	check_output "$W/umap-exec.check" $?
	check "umap exec: mmap_stats counts the events written from the task_work" \
		test "$(umap_stat mapped)" -ge $((before + 4))
	check "umap exec: record put mmap_events and mmap_dump back (0)" \
		test "$(<"$RT/mmap_events") $(<"$RT/mmap_dump")" = "0 0"
	check "umap exec: no pool entry in flight, module references back to 0" \
		test "$(umap_stat in_flight) $(</sys/module/ringtrace/refcnt)" = "0 0"
}

umap_pool() {
	local before param=/sys/module/ringtrace/parameters/inject_mmap_pool_empty
	before=$(umap_stat no_path)
	setup "umap pool: inject_mmap_pool_empty=1" eval 'echo 1 >"$param"' || return
	setup "umap pool: record --mmap -F of umap-workload, the pool empty" \
		umap_record umap-pool -F -- "$umap_wl" run "$umap_lib" \
		"$W/umap-pool.maps"
	echo 0 >"$param"
	python3 -S "$REPO/tools/tests/umap_check.py" "$W/umap-pool.txt" "$W/umap-pool.maps" \
		--no-path --flags-set 0x2 --flags-clear 0x5 "${umap_need[@]}" \
		>"$W/umap-pool.check" 2>&1
	check_output "$W/umap-pool.check" $?
	check "umap pool: the events of files have NO_PATH (flags 0xa)" \
		eval '[[ $(grep -c " user_mmap: .*flags=10, " "$W/umap-pool.txt") -ge 4 ]]'
	check "umap pool: mmap_stats counts them in no_path" \
		test "$(umap_stat no_path)" -ge $((before + 4))
	check "umap pool: no pool entry in flight, module references back to 0" \
		test "$(umap_stat in_flight) $(</sys/module/ringtrace/refcnt)" = "0 0"
}

# umap_sleeper PART WORKLOAD: WORKLOAD (umap-workload or a copy) sleeping
# since before a recording with --mmap -p of it, into $W/umap-PART: its
# mappings from the state dump, and no other process's (dump_maps_check).
# 1 if it did not start.
umap_sleeper() {
	local part=$1 wl=$2 pid
	"$wl" sleep 60 "$W/umap-$part.maps" &
	pid=$!
	setup "umap $part: ${wl##*/} sleeping before the recording" \
		wait_for 10 grep -q "^pid $pid" "$W/umap-$part.maps" ||
		{ kill $pid; return 1; }
	sleep 0.2
	setup "umap $part: record --mmap -p $pid" \
		umap_record "umap-$part" -p "$pid" --duration 1s
	kill $pid
	wait $pid 2>/dev/null
	dump_maps_check "umap-$part" "$pid" "${wl##*/}"
}

umap_dump() {
	umap_sleeper dump "$umap_wl" || return
	[[ -e /sys/kernel/debug/kprobes/list ]] ||
		check "umap dump: without kprobes, record --mmap says later mappings are not recorded" \
			grep -q "mappings after the start are not recorded on this kernel" \
			"$W/umap-dump.err"
}

umap_tmpfs() {
	local wl=$W/umap-tmpfs-wl
	check "umap tmpfs: the copy's directory is tmpfs" \
		test "$(stat -f -c %T "$W")" = tmpfs
	cp "$umap_wl" "$wl"
	umap_sleeper tmpfs "$wl"
}

umap_list() {
	"$CLI" list user_mmap >"$W/umap-list.txt" 2>&1
	check "umap list: user_mmap is listed as record --mmap's, with its build_id" \
		eval 'grep -q "^user_mmap .*(with mmap_dump and mmap_events: record --mmap)" "$W/umap-list.txt" &&
		      grep -q "^    build_id " "$W/umap-list.txt"'
}

profile_umap() {
	umap_hook
	umap_abi
	user_logic && umap_list
	if [[ -e /sys/kernel/debug/kprobes/list ]]; then
		umap_exec
		umap_pool
	fi
	umap_dump
	umap_tmpfs
}
