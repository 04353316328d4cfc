# SPDX-License-Identifier: GPL-2.0
#
# Sourced by the shell test suites: one "ok - ..." / "not ok - ..." line per
# check, and the "<suite>: N passed, M failed" line tools/run-tests adds up.
#
#   . tools/tests/check.sh
#   check "what is checked" COMMAND [ARGS...]   # passes if COMMAND succeeds
#   check_summary SUITE                          # prints the line; status 1 on failures

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

check_summary() {
	echo "$1: $passed passed, $failed failed"
	((failed == 0))
}
