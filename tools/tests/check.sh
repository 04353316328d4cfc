# SPDX-License-Identifier: GPL-2.0
#
# Sourced by the shell test suites: one "ok - ..." / "not ok - ..." line per
# check, and the "<suite>: N passed, M failed" line tools/run-tests adds up.
#
#   . tools/tests/check.sh
#   check "what is checked" COMMAND [ARGS...]   # passes if COMMAND succeeds
#   check_summary SUITE                          # prints the line; status 1 on failures
#   one_line FILE                                # FILE (an error) is one line
#   same_state BEFORE                            # the suite's state() prints BEFORE again
#   wait_for SECONDS COMMAND [ARGS...]           # until COMMAND succeeds; false after SECONDS

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

# wait_for SECONDS COMMAND...: until COMMAND succeeds (tried every 50 ms);
# false once SECONDS have passed without it.
wait_for() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		((SECONDS < end)) || return 1
		sleep 0.05
	done
}

check_summary() {
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
