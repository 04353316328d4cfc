# SPDX-License-Identifier: GPL-2.0
#
# Sourced by the guest suites whose tests of their program's own logic run
# in one boot only (tools/run-tests passes RT_*_SCOPE=kernel to the others):
#
#   . tools/tests/scope.sh
#   scoped_tests SCOPE "ALL" "ONLY"   # ALL's names in order, each on a line;
#                                     # ONLY's left out when SCOPE is kernel
#   user_logic                        # whether the checks of user space's
#                                     # own logic run within a test: $SCOPE
#                                     # (the suite's RT_*_SCOPE) not kernel

user_logic() { [[ ${SCOPE:-all} != kernel ]]; }

scoped_tests() {
	local t d
	for t in $2; do
		if [[ $1 == kernel ]]; then
			for d in $3; do
				[[ $t == "$d" ]] && continue 2
			done
		fi
		echo "$t"
	done
}
