# SPDX-License-Identifier: GPL-2.0
#
# Sourced by the shell test suites: one "ok - ..." / "not ok - ..." line per
# check, and the "<suite>: N passed, M failed" line tools/run-tests adds up.
#
#   . tools/tests/check.sh
#   check "what is checked" COMMAND [ARGS...]   # passes if COMMAND succeeds
#   setup "what is done" COMMAND [ARGS...]      # a failure if COMMAND fails; no pass
#   check_output FILE STATUS                     # a checker's "ok"/"not ok" lines
#   check_summary SUITE                          # prints the line; status 1 on failures
#   one_line FILE                                # FILE (an error) is one line
#   same_state BEFORE                            # the suite's state() prints BEFORE again
#   ctl_lines FILE...                            # "FILE: value" of control files under $RT
#   wait_for SECONDS COMMAND [ARGS...]           # until COMMAND succeeds; false after SECONDS
#   nap SECONDS                                  # sleep SECONDS (a fraction too), no process
#   keep_files DIR NAME                          # DIR's files into $RT_VM_OUT/NAME (a guest's results)

passed=0
failed=0

check() {
	local desc=$1
	shift
	if "$@"; then
		echo "ok - $desc"
		passed=$((passed + 1))
	else
		echo "not ok - $desc"
		failed=$((failed + 1))
	fi
}

# setup DESCRIPTION COMMAND...: a step that prepares what the checks
# look at (markers written, a window chosen, a module loaded).  Its failure
# is a failure ("not ok - setup: ..."); its success is no check and adds
# nothing to the passed count.  Returns COMMAND's status.
setup() {
	local desc=$1
	shift
	"$@" && { echo "# setup: $desc"; return 0; }
	echo "not ok - setup: $desc"
	failed=$((failed + 1))
	return 1
}

# check_output FILE STATUS: the "ok - ..."/"not ok - ..." lines of a
# checker (a script that prints one per assertion), and its exit STATUS,
# as this suite's checks.  An "ok ... # SKIP" is a failure (what it
# skipped must be there); a checker that exits non-zero without a "not ok"
# line, or prints no result at all, is one failure more.
check_output() {
	local file=$1 status=$2 line n=0 bad=0
	while IFS= read -r line; do
		case $line in
		"ok "*"# SKIP"*)
			line=${line#ok }
			line=${line#- }
			echo "not ok - ${line%% # SKIP*}: skipped (${line#* # SKIP })"
			failed=$((failed + 1)) n=$((n + 1)) bad=1 ;;
		"ok - "*)
			echo "$line"
			passed=$((passed + 1)) n=$((n + 1)) ;;
		"not ok - "*)
			echo "$line"
			failed=$((failed + 1)) n=$((n + 1)) bad=1 ;;
		"#"*) echo "$line" ;;
		*) echo "# $line" ;;
		esac
	done <"$file"
	if ((n == 0)); then
		echo "not ok - $file: the checker printed no result (exit $status)"
		failed=$((failed + 1))
	elif ((status != 0 && !bad)); then
		echo "not ok - $file: the checker exited $status without a failed check"
		failed=$((failed + 1))
	fi
}

# nap SECONDS: sleeps in this shell: a read with a timeout on a FIFO that
# no one writes, opened for the read alone (no descriptor a command could
# inherit).  An exec of sleep costs 70-100 ms under TCG, and in a polling
# loop it takes the CPU from what the loop waits for.  The FIFO is made
# once, by the suite's own shell (check_summary removes it); a subshell's
# nap, or one where no FIFO can be made, is sleep(1).
NAP_FIFO=
nap() {
	if [[ -z $NAP_FIFO && $BASH_SUBSHELL == 0 ]]; then
		NAP_FIFO=$(mktemp -u /tmp/.rt-nap.XXXXXX) && mkfifo -m 600 "$NAP_FIFO" ||
			NAP_FIFO=none
	fi
	if [[ -z $NAP_FIFO || $NAP_FIFO == none ]]; then
		sleep "$1"
	else
		read -rt "$1" _ <>"$NAP_FIFO"
	fi
	return 0
}

# wait_for SECONDS COMMAND...: until COMMAND succeeds (tried every 50 ms);
# false once SECONDS have passed without it.
wait_for() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		((SECONDS < end)) || return 1
		nap 0.05
	done
}

check_summary() {
	[[ -p $NAP_FIFO ]] && rm -f "$NAP_FIFO"
	echo "$1: $passed passed, $failed failed"
	((failed == 0))
}

# one_line FILE: the error is exactly one line; else shows it.
one_line() {
	local n
	n=$(wc -l <"$1")
	((n == 1)) && return 0
	sed 's/^/# stderr: /' "$1"
	return 1
}

# same_state BEFORE: state() (the suite's: the control files it cares
# about, one line each) prints BEFORE again; else shows the difference.
same_state() {
	local now
	now=$(state)
	[[ $now == "$1" ]] && return 0
	diff <(echo "$1") <(echo "$now") | sed 's/^/# /'
	return 1
}

# ctl_lines FILE...: one "FILE: value" line per control file under $RT
# (a suite's state()), a value of several lines joined by blanks; bash's
# own reads, no process per file (an exec costs a second under the debug
# kernel, and every same_state() reads them all).
ctl_lines() {
	local f v
	for f in "$@"; do
		v=$(<"$RT/$f")
		printf '%s: %s\n' "$f" "${v//$'\n'/ }"
	done
}

# keep_files DIR NAME: the files of DIR (not its directories) into
# $RT_VM_OUT/NAME, the results vmtest brings back from the guest; nothing
# outside a guest.
keep_files() {
	[[ -n ${RT_VM_OUT:-} ]] || return 0
	# One cp for them all: an exec costs a second under the debug kernel.
	mkdir -p "$RT_VM_OUT/$2" &&
		find "$1" -maxdepth 1 -type f -exec cp -t "$RT_VM_OUT/$2/" {} +
}
