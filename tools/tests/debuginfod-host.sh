#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# User frames named from debug files fetched by build-id
# (tools/cli/debuginfod.c, the second step of tools/cli/usymbols.c),
# against Debian's debuginfod started here on loopback, and against a
# responder of our own that answers badly (debuginfod_responder.py).
#
# debuginfod_trace.py builds test_decoder.py's app (main -> a -> b, -g),
# splits its debug file off (objcopy --only-keep-debug), strips the binary
# (--add-gnu-debuglink) and writes a trace whose user stacks ran in it;
# `ringtrace symbols` stores the stripped binary, so the store alone names
# no user frame.  The server scans a directory holding both files.
# Checked: `ringtrace report` (ASan/UBSan build) names the frames through
# the server, in its events and --folded, from a store with the stripped
# binary and from none (the executable fetched too), and prints them
# unresolved with one warning (the reason the server or the connection
# gave) without the server, against a 404, garbage; --no-debuginfod and an
# unset DEBUGINFOD_URLS ask nothing.  Through tools/tests/rt-dbginfod (the
# lookups of one process): the files land in $DEBUGINFOD_CACHE_PATH, which
# answers when the server is gone; a missing build-id asked again is still
# one warning; a cut transfer, a cut ELF file and another binary's file are
# refused with a warning, never a crash; on a terminal a download prints
# one line.  Every server started is stopped on every way out; the
# server's database and every cache live in this test's directory.
#
# Ends with "debuginfod: N passed, M failed".

set -u
cd "$(dirname "$0")/../.."
readonly CLI=$PWD/tools/ringtrace-asan
readonly DRV=$PWD/tools/tests/rt-dbginfod
readonly W=$(mktemp -d /tmp/rt-dbginfod.XXXXXX)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

. tools/tests/check.sh

# Nothing of the caller's: no server but ours, no cache but the test's.
unset DEBUGINFOD_URLS DEBUGINFOD_CACHE_PATH DEBUGINFOD_PROGRESS DEBUGINFOD_VERBOSE
export HOME=$W/home ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1

build_id() { readelf -n "$1" 2>/dev/null | awk '/Build ID:/ { print $3; exit }'; }
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# http_code URL: the status of a GET (000: no answer).
http_code() {
	python3 - "$1" <<-'PY'
	import sys, urllib.request, urllib.error
	try:
	    print(urllib.request.urlopen(sys.argv[1], timeout=2).status)
	except urllib.error.HTTPError as e:
	    print(e.code)
	except Exception:
	    print("000")
	PY
}
answers() { [ "$(http_code "$1")" = 200 ]; }
# lookup CACHE URLS ARGS...: the driver; stdout in $W/out, stderr in $W/err.
lookup() {
	local cache=$1 urls=$2
	shift 2
	DEBUGINFOD_CACHE_PATH=$W/$cache DEBUGINFOD_URLS=$urls "$DRV" "$@" >"$W/out" 2>"$W/err"
}
# report CACHE URLS ARGS...: ringtrace report; its status in $rc.
report() {
	local cache=$1 urls=$2
	shift 2
	DEBUGINFOD_CACHE_PATH=$W/$cache DEBUGINFOD_URLS=$urls "$CLI" report "$@" >"$W/out" 2>"$W/err"
	rc=$?
}
# warned N WORDS: exactly N lines of stderr, each holding WORDS (grep -F).
warned() {
	local n=$1
	shift
	[ "$(wc -l <"$W/err")" -eq "$n" ] && [ "$(grep -cF -- "$*" "$W/err")" -eq "$n" ] && return 0
	sed 's/^/# stderr: /' "$W/err"
	return 1
}
quiet() { warned 0 ""; }
# The user frames under the app's switch-out, and the sample's, as report
# prints them (test_decoder.py's app_events()).
readonly NAMED='b+0x4 (app)|a+0x8 (app)|main+0x10 (app)|b+0x2 (app)|a+0x8 (app)|main+0x10 (app)|a+0x3 (app)|main+0x10 (app)'
user_frames() { grep -E '^    .*\((app)\)$|^    app\+0x' "$W/out" | sed 's/^    //' | paste -sd'|'; }
named() {
	[ "$(user_frames)" = "$NAMED" ] && [ "$rc" -eq 0 ] && return 0
	echo "# frames: $(user_frames) (status $rc)"
	return 1
}
unresolved() {
	local f
	f=$(user_frames)
	[ "$rc" -eq 0 ] && [ "$(echo "$f" | tr '|' '\n' | grep -c "^app+0x[0-9a-f]* \[bid:${BID:0:8}\]$")" -eq 8 ] &&
		return 0
	echo "# frames: $f (status $rc)"
	return 1
}

mkdir -p "$W/home"
BID=$(python3 tools/tests/debuginfod_trace.py "$W")
if ! setup "the app, its debug file, the stripped binary, the trace" test -n "$BID" ||
	! setup "the CLI and the driver" make -s -C tools ringtrace-asan tests/rt-dbginfod ||
	! setup "a binary of another build-id" \
		gcc -o "$W/other" "$W/app.c" -Wl,--build-id=0x0123456789abcdef0123456789abcdef01234567 ||
	! setup "ringtrace symbols stores the stripped binary" \
		bash -c '"$1" symbols "$2" | grep -q "^stored 1 binary"' _ "$CLI" "$W/trace"; then
	check_summary debuginfod
	exit 1
fi
check "the stripped binary names no function itself" \
	bash -c '! nm "$1" 2>/dev/null | grep -q " main$"' _ "$W/srv/app"
check "binary and debug file carry one build-id ($BID)" \
	test "$BID" = "$(build_id "$W/srv/app")" -a "$BID" = "$(build_id "$W/srv/app.debug")"
# A copy without the store: the executable's segments come from debuginfod.
cp -r "$W/trace" "$W/nostore" && rm -rf "$W/nostore/.ringtrace-buildid"

report c0 "" "$W/trace"
check "no DEBUGINFOD_URLS: report prints the stripped binary's frames unresolved" unresolved
check "no DEBUGINFOD_URLS: one warning, the stored binary is stripped" \
	warned 1 "build-id $BID: no function in .symtab or .dynsym (stripped, or damaged): its frames print unresolved"
check "no DEBUGINFOD_URLS: no client cache made" test ! -e "$W/c0"

# ---- Debian's debuginfod ---------------------------------------------------
# served: the server has the build-id, or is gone (it could not listen).
served() { answers "$URL/buildid/$BID/debuginfo" || ! kill -0 "$SERVER" 2>/dev/null; }
# start_server: debuginfod on a free port (0.188 listens on every
# interface; it is asked on 127.0.0.1), tried again on another port if the
# one picked was taken before it listened.  Its scan is asynchronous: it is
# asked until it serves the debug file, at most 10 s.
start_server() {
	local try
	for try in 1 2 3; do
		PORT=$(free_port)
		URL=http://127.0.0.1:$PORT
		debuginfod -p "$PORT" -d "$W/db.sqlite" -F -t 0 -g 0 -c 1 "$W/srv" \
			>"$W/server.log" 2>&1 &
		SERVER=$!
		pids+=($SERVER)
		wait_for 10 served || break
		kill -0 "$SERVER" 2>/dev/null && return 0
	done
	sed 's/^/# server: /' "$W/server.log" | tail -5
	return 1
}
setup "debuginfod serves build-id $BID" start_server

report c1 "$URL" "$W/trace"
check "server: report names the stripped binary's frames from its debug file" named
check "server: ... nothing said" quiet
check "server: ... the debug file alone fetched (the store's binary maps the offsets)" \
	test -s "$W/c1/$BID/debuginfo" -a ! -e "$W/c1/$BID/executable"
report c1 "$URL" --folded "$W/trace"
check "server: report --folded names them" \
	grep -qx 'app;main;a;b;\[k\] entry_SYSCALL_64;\[k\] rtr_pid_filter_set \[ringtrace\];\[k\] do_nanosleep;\[k\] schedule 1' "$W/out"
report c2 "$URL" "$W/nostore"
check "server, no store: report names the frames (executable and debug file fetched)" named
check "server, no store: ... the one warning says the store is missing" \
	warned 1 "has no symbol store (.ringtrace-buildid): user frames print unresolved unless debuginfod has them"
check "server, no store: both files in the cache" \
	test -s "$W/c2/$BID/debuginfo" -a -s "$W/c2/$BID/executable"
report c3 "$URL" --no-debuginfod "$W/trace"
check "--no-debuginfod: report prints the frames unresolved" unresolved
check "--no-debuginfod: nothing asked (no client cache)" test ! -e "$W/c3"
check "--no-debuginfod: one warning, the stored binary is stripped" \
	warned 1 "build-id $BID: no function in .symtab or .dynsym (stripped, or damaged)"

lookup d1 "$URL" debuginfo:"$BID" executable:"$BID"
check "server: the driver finds debug file and executable in \$DEBUGINFOD_CACHE_PATH" \
	bash -c 'grep -qx "debuginfo $1 $2/d1/$1/debuginfo" "$3" &&
		 grep -qx "executable $1 $2/d1/$1/executable" "$3"' _ "$BID" "$W" "$W/out"
check "server: ... the debug file names the functions at the unstripped binary's addresses" \
	bash -c 'diff <(nm "$1" | grep -E " [Tt] (main|a|b)$") \
		      <(nm "$2" | grep -E " [Tt] (main|a|b)$") >/dev/null &&
		 [ "$(nm "$2" | grep -cE " [Tt] (main|a|b)$")" -eq 3 ]' _ "$W/app" "$W/d1/$BID/debuginfo"
check "server: ... the executable is the stripped binary" cmp -s "$W/srv/app" "$W/d1/$BID/executable"
readonly MISSING=feedfacefeedfacefeedfacefeedfacefeedface
lookup d2 "$URL" debuginfo:$MISSING debuginfo:$MISSING debuginfo:"$BID" debuginfo:$MISSING
check "server: a build-id it lacks, asked 3 times: 3 misses, the other found" \
	test "$(grep -c "^debuginfo $MISSING error -2$" "$W/out")" -eq 3 -a \
	     "$(grep -c "^debuginfo $BID $W/d2/" "$W/out")" -eq 1
check "server: ... one warning, with the server's answer" \
	warned 1 "build-id $MISSING: no debug file from debuginfod: the server answered 404"
# The progress line, on a terminal only (script(1) gives the driver a pty).
script -qec "env DEBUGINFOD_CACHE_PATH=$W/d3 DEBUGINFOD_URLS=$URL $DRV debuginfo:$BID executable:$BID debuginfo:$BID" \
	/dev/null >"$W/tty" 2>&1
check "server: on a terminal, one line per download (2 downloads, 3 lookups)" \
	test "$(grep -c "downloading the .* of build-id $BID from $URL" "$W/tty")" -eq 2
check "server: not on a terminal, none" bash -c '! grep -q downloading "$1"' _ "$W/err"

kill "$SERVER" && wait "$SERVER" 2>/dev/null
check "server stopped: refused at $URL" test "$(http_code "$URL/buildid/$BID/debuginfo")" = 000
report c4 "$URL" "$W/trace"
check "server stopped: report prints the frames unresolved" unresolved
check "server stopped: ... and one warning, the connection's error" \
	warned 1 "build-id $BID: no debug file from debuginfod: Failed to connect to 127.0.0.1 port $PORT"
report c1 "$URL" "$W/trace"
check "server stopped: the client's cache still names them" named
lookup d4 "$URL" debuginfo:"$BID" executable:"$BID" debuginfo:"$BID"
check "server stopped: the driver's 3 lookups fail (-ECONNREFUSED)" \
	test "$(grep -c "error -111$" "$W/out")" -eq 3
check "server stopped: one warning per build-id and kind" warned 2 "Failed to connect to 127.0.0.1 port $PORT"
lookup d5 "" debuginfo:"$BID"
check "no DEBUGINFOD_URLS: the driver's lookup is off (-ENOSYS), nothing said" \
	bash -c 'grep -qx "debuginfo $1 error -38" "$2" && ! [ -s "$3" ]' _ "$BID" "$W/out" "$W/err"
lookup d5 "$URL" --no-debuginfod debuginfo:"$BID"
check "--no-debuginfod: the driver's lookup is off, nothing said" \
	bash -c 'grep -qx "debuginfo $1 error -38" "$2" && ! [ -s "$3" ]' _ "$BID" "$W/out" "$W/err"

# ---- a responder that answers badly ----------------------------------------
# The interpreter itself, not a wrapper (pyenv's shim) whose death would
# leave the responder running.
"$(python3 -c 'import sys; print(sys.executable)')" tools/tests/debuginfod_responder.py \
	"$W/rport" "$W/srv/app.debug" "$W/other" &
pids+=($!)
setup "the test responder listens" wait_for 10 test -s "$W/rport"
RURL=http://127.0.0.1:$(cat "$W/rport")

report r1 "$RURL/404" "$W/trace"
check "404: report prints the frames unresolved" unresolved
check "404: ... one warning, with the server's own reason" \
	warned 1 "build-id $BID: no debug file from debuginfod: the server answered 404 no debug file here (test responder)"
report r2 "$RURL/garbage" "$W/trace"
check "garbage: report prints the frames unresolved" unresolved
check "garbage: ... one warning, saying it is not ELF" \
	warned 1 "build-id $BID: debuginfod's debug file $W/r2/$BID/debuginfo is not an ELF file"
check "garbage: removed from the cache" test ! -e "$W/r2/$BID/debuginfo"
report r3 "$RURL/garbage" "$W/nostore"
check "garbage, no store: report prints the frames unresolved" unresolved

lookup d6 "$RURL/404" debuginfo:"$BID" debuginfo:"$BID"
check "404: the driver: not found (-ENOENT) twice, one warning" \
	bash -c '[ "$(grep -c "^debuginfo $1 error -2$" "$2")" -eq 2 ] && [ "$(wc -l <"$3")" -eq 1 ]' \
	_ "$BID" "$W/out" "$W/err"
lookup d7 "$RURL/partial" debuginfo:"$BID"
check "a transfer cut short: not found, one warning with the transfer's error" \
	bash -c 'grep -q "^debuginfo $1 error -" "$2"' _ "$BID" "$W/out"
check "a transfer cut short: ... one warning" \
	warned 1 "build-id $BID: no debug file from debuginfod: transfer closed with"
lookup d8 "$RURL/head" debuginfo:"$BID"
check "a cut ELF file (its first 512 bytes): refused (-EINVAL)" \
	grep -qx "debuginfo $BID error -22" "$W/out"
check "a cut ELF file: one warning" warned 1 "build-id $BID: debuginfod's debug file"
lookup d9 "$RURL/other" executable:"$BID"
check "another binary's ELF file: refused (-EINVAL)" grep -qx "executable $BID error -22" "$W/out"
check "another binary's ELF file: one warning saying so" \
	warned 1 "is the ELF file of another build-id"

check_summary debuginfod
