# SPDX-License-Identifier: GPL-2.0
#
# Sourced by the guest suites that start a command as a terminal's shell
# would (cli, dynprobes):
#
#   . tools/tests/job.sh
#   as_job CMD... &      # run with "&" only: it execs

# as_job CMD...: CMD as a terminal starts a job: a process group of its
# own, SIGINT and SIGQUIT not ignored (a script's "&" ignores them) and
# SIGPIPE as the kernel starts it.  setsid and env, not a python: two
# small execs where python takes a second to start under TCG.
as_job() {
	exec setsid env --default-signal=INT,QUIT,PIPE "$@"
}
