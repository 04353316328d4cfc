# SPDX-License-Identifier: GPL-2.0
#
# The state dump's mappings of a process whose main thread has exited
# (sourced by tools/tests/profile_guest.sh): `umap-workload orphan` ends
# its main thread by pthread_exit() while another thread sleeps; the
# group leader is then a zombie without an mm (get_task_mm() of it gives
# NULL; /proc/PID/maps reads empty).  record --mmap -p PID started after
# that: the process's mappings come from the state dump (DUMP), each line
# of the maps the workload printed before, as the umap part checks them
# (umap_check.py), and no other process's.  Dump only: every kernel, the
# debug one (no kprobes) too.

leaderexit_wl=$REPO/tools/tests/umap-workload

# The state of thread TID of process PID (/proc/PID/task/TID/stat).
leaderexit_state() {
	sed -E 's/.*\) ([A-Za-z]) .*/\1/' "/proc/$1/task/$2/stat" 2>/dev/null
}

profile_leaderexit() {
	local pid out=$W/leaderexit
	"$leaderexit_wl" orphan 60 "$out.maps" &
	pid=$!
	setup "leaderexit: umap-workload orphan printed its mappings" \
		wait_for 10 grep -q "^pid $pid" "$out.maps" || { kill $pid; return; }
	setup "leaderexit: its main thread exited (zombie), another runs on" \
		wait_for 10 eval '[[ $(leaderexit_state $pid $pid) == Z &&
				     $(ls /proc/$pid/task | wc -l) -eq 2 ]]' ||
		{ kill $pid; return; }
	"$CLI" record --mmap -e sched_process_exec -p "$pid" --duration 1s \
		-o "$out" >"$out.out" 2>"$out.err"
	check "leaderexit: record --mmap -p $pid exits 0" test $? -eq 0
	sed 's/^/# stderr: /' "$out.err"
	kill $pid
	wait $pid 2>/dev/null
	"$CLI" report "$out" >"$out.txt" 2>"$out.report.err"
	check "leaderexit: report reads the trace" test $? -eq 0
	dump_maps_check leaderexit "$pid" umap-workload
}
