# SPDX-License-Identifier: GPL-2.0
#
# Sourced by the suites that test triggers: tools/tests/cli_guest.sh
# (record --trigger) and daemon/tests/run_guest.sh (ringtraced --trigger).
# They define check and note.  The recorder under test runs with
# --mode overwrite --trigger 'ringtrace_marker: data == FAIL*' --max MAX
# and prints "snapshot K in DIR: ..." on its stdout, OUT, once snapshot K
# is saved.
#
#   trigger_writer FILE     the writer, into FILE; it runs as
#                           python3 FILE RT OUT LOG MAX [FILL] (RT:
#                           ringtrace's control directory; FILL: markers
#                           that fill the buffer, 4300 for 16 x 4 KiB),
#                           pinned to one CPU
#   trigger_seq CTF SEQ     the markers of an unpacked snapshot
#   check_trigger_snapshot WHAT K CTF LOG
#                           snapshot K against the writer's LOG

# The writer: numbered markers "trg N" from one CPU into an overwrite
# buffer (FILL of them fill it); at a random moment past the first wrap
# "FAIL 1", then 200 more (during --after) and nothing
# until OUT says "snapshot 1"; the same for "FAIL 2" ... "FAIL MAX" (a few
# hundred to a few thousand before each); then, once --max took the
# trigger away, "FAIL MAX+1" and 200 more.  Its log names each FAIL's
# predecessor, the last of the 200, and tracing_on after each snapshot.
trigger_writer() {
	cat >"$1" <<'PY'
import os, random, sys, time
rt, out, log, most = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
fill = int(sys.argv[5]) if len(sys.argv) > 5 else 4300
fd = os.open(rt + "/marker", os.O_WRONLY)
logf = open(log, "w")
n = 0
def mark(text):
    os.write(fd, text.encode())
def numbered(k):
    global n
    for _ in range(k):
        mark("trg %d" % n)
        n += 1
def wait_for(cond, what):
    end = time.monotonic() + 60
    while not cond():
        if time.monotonic() > end:
            logf.write("timeout: %s\n" % what)
            sys.exit(1)
        time.sleep(0.01)
def said(line):
    return lambda: line in open(out).read()
def tracing():
    return open(rt + "/tracing_on").read().strip()
for k in range(1, most + 1):
    numbered(random.randrange(fill + 700, fill + 2700) if k == 1 else random.randrange(300, 3000))
    logf.write("fail %d after %d\n" % (k, n - 1))
    mark("FAIL %d" % k)
    numbered(200)
    logf.write("after %d last %d\n" % (k, n - 1))
    logf.flush()
    wait_for(said("snapshot %d in " % k), "snapshot %d" % k)
    logf.write("tracing_on %d %s\n" % (k, tracing()))
wait_for(lambda: open(rt + "/events/ringtrace_marker/trigger").read().startswith("none"),
         "the trigger taken away")
mark("FAIL %d" % (most + 1))
numbered(200)
logf.write("done %d\n" % (n - 1))
PY
}

# trigger_seq CTF SEQ: babeltrace2's markers of an unpacked snapshot into
# SEQ, one a line: "N" for "trg N", "FAIL k", and "END" for the trigger's
# marker; babeltrace2's status.
trigger_seq() {
	babeltrace2 "$1" >"$2.bt" 2>"$2.bt-err" || return 1
	# awk's index(), not a regex after a leading .*, which backtracks
	# over each of the thousands of lines.
	awk 'index($0, " ringtrace_marker: ") && (i = index($0, "data = \"")) {
		d = substr($0, i + 8)
		if (d ~ /^trg [0-9]+"/ || d ~ /^FAIL [0-9]+"/) {
			sub(/^trg /, "", d)
			sub(/".*/, "", d)
			print d
		} else if (index(d, "ringtrace trigger: ringtrace_marker: data == FAIL*") == 1) {
			print "END"
		}
	}' "$2.bt" >"$2"
	rm -f "$2.bt"
}

# check_trigger_snapshot WHAT K CTF LOG: snapshot K (unpacked in CTF)
# holds FAIL K, right after the marker the writer wrote before it; the
# markers contiguous back as far as the buffer held (the first one not 0:
# it wrapped, or an earlier snapshot took the start); the 200 written
# during --after; the trigger's marker after them.  WHAT starts each line.
check_trigger_snapshot() {
	local what=$1 k=$2 ctf=$3 log=$4 seq=$3.seq before last gaps first
	trigger_seq "$ctf" "$seq"
	check "$what $k: babeltrace2 reads it" test $? -eq 0 -a -s "$seq"
	before=$(sed -n "s/^fail $k after //p" "$log")
	last=$(sed -n "s/^after $k last //p" "$log")
	first=$(grep -m1 -xE '[0-9]+' "$seq")
	gaps=$(grep -xE '[0-9]+' "$seq" | awk 'NR > 1 && $1 != prev + 1 { g++ } { prev = $1 } END { print g + 0 }')
	note "$what $k: trg $first..$(grep -xE '[0-9]+' "$seq" | tail -1), FAIL $k after trg $before, $(wc -l <"$seq") markers"
	check "$what $k: FAIL $k, right after trg $before" \
		test -n "$before" -a "$(grep -B1 -x "FAIL $k" "$seq" | head -1)" = "$before"
	check "$what $k: no other FAIL" test "$(grep -c FAIL "$seq")" -eq 1
	check "$what $k: markers contiguous ($gaps gaps)" test "$gaps" -eq 0
	check "$what $k: back as far as the buffer held (first trg $first, not 0)" \
		test "${first:-0}" -gt 0
	check "$what $k: the 200 of --after, up to trg $last" \
		grep -qx "$last" "$seq"
	check "$what $k: the trigger's marker, after them" \
		test "$(sed -n "/^$last\$/,\$p" "$seq" | grep -c '^END$')" -eq 1
}
