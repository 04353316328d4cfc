#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Debug files fetched by build-id (tools/cli/debuginfod.c), against
# Debian's debuginfod server started here on loopback, and against a
# responder of our own that answers badly (debuginfod_responder.py).
# A test binary is built with -g, its debug file split off (objcopy
# --only-keep-debug), the binary stripped; the server scans a directory
# holding both.  Checked through tools/tests/rt-dbginfod (the lookups of
# one process): the debug file arrives in $DEBUGINFOD_CACHE_PATH and names
# the stripped binary's functions; a build-id no server has is one warning
# with the server's reason, however often asked; 404, garbage, a cut
# transfer, a cut ELF file and another binary's file are warnings, never a
# crash (the driver runs under ASan/UBSan); lookups are off without
# DEBUGINFOD_URLS or with --no-debuginfod; on a terminal a download prints
# one line.  Every server started is stopped on every way out; the
# server's database and every cache live in this test's directory.
#
# Ends with "debuginfod: N passed, M failed".

set -u
cd "$(dirname "$0")/../.."
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
export HOME=$W/home

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
# lookup CACHE URLS ARGS...: the driver, its stdout in $W/out, stderr in $W/err.
lookup() {
	local cache=$1 urls=$2
	shift 2
	DEBUGINFOD_CACHE_PATH=$W/$cache DEBUGINFOD_URLS=$urls "$DRV" "$@" >"$W/out" 2>"$W/err"
}
# warned N WORDS: exactly N lines of stderr, each holding WORDS (grep -F).
warned() {
	local n=$1
	shift
	[ "$(wc -l <"$W/err")" -eq "$n" ] && [ "$(grep -cF -- "$*" "$W/err")" -eq "$n" ] && return 0
	sed 's/^/# stderr: /' "$W/err"
	return 1
}
quiet() {
	[ ! -s "$W/err" ] && return 0
	sed 's/^/# stderr: /' "$W/err"
	return 1
}

mkdir -p "$W/src" "$W/srv" "$W/home"
cat >"$W/src/app.c" <<'C'
#include <stdio.h>
__attribute__((noinline)) int dbgtest_leaf(int x) { return x * 3 + 1; }
__attribute__((noinline)) int dbgtest_mid(int x) { return dbgtest_leaf(x) + 2; }
int main(int argc, char **argv) { (void)argv; printf("%d\n", dbgtest_mid(argc)); return 0; }
C
setup "the test binary, its debug file split off, stripped" bash -c '
	cd "$1" && gcc -g -O1 -o app src/app.c &&
	objcopy --only-keep-debug app srv/app.debug &&
	strip --strip-all -o srv/app app && objcopy --add-gnu-debuglink=srv/app.debug srv/app &&
	gcc -O1 -o other src/app.c -Wl,--build-id=0x0123456789abcdef0123456789abcdef01234567' _ "$W" || {
	check_summary debuginfod
	exit 1
}
make -s -C tools tests/rt-dbginfod || { setup "make tests/rt-dbginfod" false; check_summary debuginfod; exit 1; }
BID=$(build_id "$W/srv/app")
check "the stripped binary names no function itself" \
	bash -c '! nm "$1" 2>/dev/null | grep -q dbgtest_' _ "$W/srv/app"
check "binary and debug file carry one build-id ($BID)" \
	test -n "$BID" -a "$BID" = "$(build_id "$W/srv/app.debug")"
readonly MISSING=feedfacefeedfacefeedfacefeedfacefeedface

# ---- Debian's debuginfod ---------------------------------------------------
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
debuginfod -p "$PORT" -d "$W/db.sqlite" -F -t 0 -g 0 -c 1 "$W/srv" >"$W/server.log" 2>&1 &
pids+=($!)
# The scan is asynchronous: asked until the file is served, at most 10 s.
if ! setup "debuginfod serves build-id $BID on $URL" \
	wait_for 10 answers "$URL/buildid/$BID/debuginfo"; then
	sed 's/^/# server: /' "$W/server.log" | tail -5
fi

lookup c1 "$URL" debuginfo:"$BID" executable:"$BID"
check "server: debug file and executable found in \$DEBUGINFOD_CACHE_PATH" \
	bash -c 'grep -qx "debuginfo $1 $2/c1/$1/debuginfo" "$3" &&
		 grep -qx "executable $1 $2/c1/$1/executable" "$3"' _ "$BID" "$W" "$W/out"
check "server: ... no word said" quiet
check "server: the debug file in the cache names the stripped binary's functions, at their addresses" \
	bash -c 'diff <(nm "$1" | grep dbgtest_) <(nm "$2" | grep dbgtest_) >/dev/null &&
		 [ "$(nm "$2" | grep -c dbgtest_)" -eq 2 ]' _ "$W/app" "$W/c1/$BID/debuginfo"
check "server: the executable is the stripped binary" cmp -s "$W/srv/app" "$W/c1/$BID/executable"

lookup c2 "$URL" debuginfo:"$MISSING" debuginfo:"$MISSING" debuginfo:"$BID" debuginfo:"$MISSING"
check "server: a build-id it lacks, asked 3 times: 3 misses, the others found" \
	test "$(grep -c "^debuginfo $MISSING error -2$" "$W/out")" -eq 3 -a \
	     "$(grep -c "^debuginfo $BID $W/c2/" "$W/out")" -eq 1
check "server: ... and one warning, with the server's answer" \
	warned 1 "build-id $MISSING: no debug file from debuginfod: the server answered 404"

# The progress line, on a terminal only (script(1) gives the driver a pty).
script -qec "env DEBUGINFOD_CACHE_PATH=$W/c3 DEBUGINFOD_URLS=$URL $DRV debuginfo:$BID executable:$BID debuginfo:$BID" /dev/null >"$W/tty" 2>&1
check "server: on a terminal, one line per download (2 downloads, 3 lookups)" \
	test "$(grep -c "downloading the .* of build-id $BID from $URL" "$W/tty")" -eq 2
check "server: not on a terminal, none" bash -c '! grep -q downloading "$1"' _ "$W/err"

kill "${pids[0]}" && wait "${pids[0]}" 2>/dev/null
check "server stopped: refused at $URL" test "$(http_code "$URL/buildid/$BID/debuginfo")" = 000
lookup c1 "$URL" debuginfo:"$BID"
check "server stopped: the client's cache still answers" \
	bash -c '[ ! -s "$1" ] && grep -qx "debuginfo $2 $3/c1/$2/debuginfo" "$4"' _ "$W/err" "$BID" "$W" "$W/out"
lookup c4 "$URL" debuginfo:"$BID" executable:"$BID" debuginfo:"$BID"
check "server stopped: not found" \
	test "$(grep -c "error -111$" "$W/out")" -eq 3
check "server stopped: one warning per build-id and kind, saying why" \
	warned 2 "build-id $BID: no "
check "server stopped: ... the connection's error" \
	test "$(grep -c "Failed to connect to 127.0.0.1 port $PORT" "$W/err")" -eq 2

lookup c5 "" debuginfo:"$BID"
check "no DEBUGINFOD_URLS: off (-ENOSYS), nothing said" \
	bash -c 'grep -qx "debuginfo $1 error -38" "$2"' _ "$BID" "$W/out"
check "no DEBUGINFOD_URLS: quiet" quiet
lookup c5 "$URL" --no-debuginfod debuginfo:"$BID"
check "--no-debuginfod: off, nothing said" \
	bash -c 'grep -qx "debuginfo $1 error -38" "$2" && ! [ -s "$3" ]' _ "$BID" "$W/out" "$W/err"

# ---- a responder that answers badly ----------------------------------------
B404=4040404040404040404040404040404040404040
BGARB=6a6a6a6a6a6a6a6a6a6a6a6a6a6a6a6a6a6a6a6a
BPART=7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a
BHEAD=$BID
BOTHER=0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e
python3 tools/tests/debuginfod_responder.py "$W/rport" "$B404=404" "$BGARB=garbage" \
	"$BPART=partial" "$BHEAD=head:$W/srv/app.debug" "$BOTHER=file:$W/other" &
pids+=($!)
setup "the test responder listens" wait_for 10 test -s "$W/rport"
RURL=http://127.0.0.1:$(cat "$W/rport")

lookup r1 "$RURL" debuginfo:$B404 debuginfo:$B404
check "404: not found (-ENOENT), asked twice" test "$(grep -c "^debuginfo $B404 error -2$" "$W/out")" -eq 2
check "404: one warning with the server's own reason" \
	warned 1 "build-id $B404: no debug file from debuginfod: the server answered 404 no debug file here (test responder)"

lookup r2 "$RURL" debuginfo:$BGARB debuginfo:$BGARB
check "garbage: refused, asked twice" test "$(grep -c "^debuginfo $BGARB error -22$" "$W/out")" -eq 2
check "garbage: one warning, not an ELF file" warned 1 "build-id $BGARB: debuginfod's debug file"
check "garbage: ... saying so" grep -q "is not an ELF file" "$W/err"
check "garbage: removed from the cache" test ! -e "$W/r2/$BGARB/debuginfo"

lookup r3 "$RURL" debuginfo:$BPART
check "a transfer cut short: not found, one warning with the transfer's error" \
	bash -c 'grep -q "^debuginfo $1 error -" "$2" && [ "$(wc -l <"$3")" -eq 1 ] &&
		 grep -q "build-id $1: no debug file from debuginfod: transfer closed with" "$3"' \
	_ $BPART "$W/out" "$W/err"

lookup r4 "$RURL" debuginfo:$BHEAD
check "a cut ELF file (its first 512 bytes): refused" \
	bash -c 'grep -qx "debuginfo $1 error -22" "$2"' _ $BHEAD "$W/out"
check "a cut ELF file: one warning" warned 1 "build-id $BHEAD: debuginfod's debug file"

lookup r5 "$RURL" executable:$BOTHER
check "another binary's ELF file: refused" \
	bash -c 'grep -qx "executable $1 error -22" "$2"' _ $BOTHER "$W/out"
check "another binary's ELF file: one warning saying so" \
	warned 1 "is the ELF file of another build-id"

check_summary debuginfod
