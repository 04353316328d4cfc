#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The kernels ringtrace.ko refuses to be built for, checked by building it.
#
# Kernels outside the range it is known to build and run on (6.1 to 6.12,
# module/compat.h): compat.h stops the build with a static_assert unless
# Kbuild is given RINGTRACE_ALLOW_UNTESTED=1 (exactly 1).  Debian's 6.12
# and 6.1 headers stand in for other kernels, posing as another version
# to the compiler and to make (tools/tests/posing-headers, trees in
# $RT_CACHE/cross/headers-V.P): 6.13 and 7.0 (over 6.12) and 6.0 (over
# 6.1) must fail with compat.h's message and no other error; 6.13 with
# the flag must get past it (one object that includes compat.h built),
# with RINGTRACE_ALLOW_UNTESTED=0 not; 6.12 itself builds;
# `make clean` for 6.13 prints no error (DKMS cleans before each build).
# The ringtrace-dkms package's dkms.conf limits DKMS to the same range
# (BUILD_EXCLUSIVE_KERNEL, made by debian/dkms-kernels from compat.h):
# its regex accepts the matrix's releases and refuses 6.0, 6.13, 7.0,
# agreeing with the builds above, and DKMS itself (private trees under
# $RT_CACHE/cross/dkms) skips 6.13 with status 77 and its message.
#
# ringtrace's buffer positions are unsigned longs that must never wrap, and
# it writes its CTF packets in native byte order under metadata that says
# little endian, so include/linux/ringtrace.h stops the build with an
# #error on 32-bit and on big-endian kernels.  This builds the module (the
# top-level `make modules`, as for any kernel) against two kernel trees
# prepared from Debian's linux-source-6.12:
#
#   i386   (ARCH=i386, the host compiler in 32-bit mode)   32-bit
#   s390   (ARCH=s390, s390x-linux-gnu-gcc)                 big endian
#
# and expects the build to fail with that #error and with no other error.
# The trees are tinyconfig + MODULES, prepared once (`modules_prepare`,
# about 15 s each) and cached in $RT_CACHE/cross/, again when this script
# or the source tarball changes.
#
# Ends with "arch-guard: N passed, M failed".  Needs linux-source-6.12,
# gcc-s390x-linux-gnu, bc, flex and bison, the 6.12 and 6.1 headers, dkms
# (tools/install-deps).

set -uo pipefail

cd "$(dirname "$0")/../.."
readonly CACHE=${RT_CACHE:-/var/cache/ringtrace}/cross
readonly TARBALL=/usr/src/linux-source-6.12.tar.xz
readonly SRC=$CACHE/linux-source-6.12
readonly ARCHES=(i386 s390)

declare -A CROSS=([i386]="" [s390]="s390x-linux-gnu-")
declare -A REFUSAL=(
	[i386]="ringtrace needs a 64-bit kernel"
	[s390]="big-endian kernels are not supported"
)

. tools/tests/check.sh
. tools/tests/posing-headers

# The inputs that a prepared tree depends on.
stamp() {
	{ sha256sum "$0"; stat -c '%s %Y' "$TARBALL"; } | sha256sum | cut -c1-16
}

# Unpack the source and prepare a tree per architecture, once.
prepare() {
	local arch=$1 obj=$CACHE/$1 want
	want=$(stamp)
	[[ -f $obj/.prepared && $(<"$obj/.prepared") == "$want" ]] && return 0
	if [[ ! -f $SRC/.unpacked || $(<"$SRC/.unpacked") != "$want" ]]; then
		rm -rf "$SRC"
		mkdir -p "$CACHE"
		tar -C "$CACHE" -xf "$TARBALL" || return 1
		echo "$want" > "$SRC/.unpacked"
	fi
	rm -rf "$obj"
	mkdir -p "$obj"
	local -a mk=(make -s -C "$SRC" O="$obj" ARCH="$arch"
		     CROSS_COMPILE="${CROSS[$arch]}")
	"${mk[@]}" tinyconfig >/dev/null &&
		"$SRC/scripts/config" --file "$obj/.config" -e MODULES &&
		"${mk[@]}" olddefconfig >/dev/null &&
		"${mk[@]}" -j"$(nproc)" modules_prepare >/dev/null || return 1
	echo "$want" > "$obj/.prepared"
}

# Build the module for @arch: it must fail, with our #error and nothing else.
refused() {
	local arch=$1 log errors
	log=$(mktemp)
	if ARCH=$arch CROSS_COMPILE=${CROSS[$arch]} make -s modules \
		KDIR="$CACHE/$arch" BUILD="$CACHE/build-$arch" >"$log" 2>&1; then
		echo "# $arch: the module built"
		rm -f "$log"
		return 1
	fi
	errors=$(grep -E '(^|: )(fatal )?error:' "$log")
	rm -f "$log"
	echo "$errors" | sed 's/^/# /'
	[[ -n $errors ]] && ! grep -qv -- "#error \".*${REFUSAL[$arch]}" <<<"$errors"
}

# ---- kernels outside 6.1 .. 6.12 -----------------------------------------------

newest() { ls -d /usr/src/linux-headers-"$1".*-amd64 2>/dev/null | grep -v -- -rt- | tail -n1; }
H612=$(newest 6.12)
H61=$(newest 6.1)
readonly H612 H61
readonly VBUILD=$CACHE/build-version

# refused KDIR WHAT [VAR=VALUE...]: the top-level build for KDIR fails, and
# every error it prints is compat.h's refusal naming WHAT (and the flag).
refused_version() {
	local kdir=$1 what=$2 log errors
	shift 2
	log=$(mktemp)
	if make -s modules KDIR="$kdir" BUILD="$VBUILD" "$@" >"$log" 2>&1; then
		echo "# $what: the module built"
		rm -f "$log"
		return 1
	fi
	errors=$(grep -E '\*\*\*|(^|: )(fatal )?error:' "$log" | grep -v '^make.*Error [0-9]')
	rm -f "$log"
	echo "$errors" | sed 's/^/# /' | sort -u
	[[ -n $errors ]] &&
		! grep -qvF "static assertion failed: \"ringtrace: Linux $what" <<<"$errors" &&
		! grep -qvF "RINGTRACE_ALLOW_UNTESTED=1 builds it anyway" <<<"$errors"
}

# one_object KDIR [VAR=VALUE...]: module/files.o (it includes compat.h)
# of the tree the top-level build mirrored for KDIR's release, kbuild
# given VAR=VALUE.  refused_version() mirrored it for a 6.12 tree posing
# as another version: 6.12's release is its include/config's, whatever it
# poses as (6.1's is made from the version, so no 6.1 here: every `make`
# of the matrix builds 6.1).
one_object() {
	local kdir=$1 kver
	shift
	kver=$(make -s -C "$kdir" kernelrelease) || return 1
	rm -f "$VBUILD/$kver/module/files.o"
	make -s -C "$kdir" M="$VBUILD/$kver" "$@" module/files.o \
		>/dev/null 2>&1 &&
		test -s "$VBUILD/$kver/module/files.o"
}

# cleaned KDIR: kbuild's clean of the mirrored tree ends well, silently.
cleaned() {
	local kver out
	kver=$(make -s -C "$1" kernelrelease) || return 1
	out=$(make -s -C "$1" M="$VBUILD/$kver" clean 2>&1)
	[[ -z $out ]] || { echo "$out" | sed 's/^/# /'; return 1; }
}

# ---- DKMS's range ----------------------------------------------------------------

readonly DKMS=$CACHE/dkms

# The dkms.conf that ringtrace-dkms installs: the template, the version
# dh_dkms puts in, and the line debian/rules appends.
dkms_conf() {
	sed 's/#MODULE_VERSION#/0.0-test/' debian/ringtrace-dkms.dkms &&
		debian/dkms-kernels module/compat.h
}

# dkms_takes RELEASE: dkms.conf's BUILD_EXCLUSIVE_KERNEL matches RELEASE,
# tested as DKMS tests it (the file sourced, bash's =~).
dkms_takes() {
	bash -c '. "$1" && [[ -n $BUILD_EXCLUSIVE_KERNEL && $2 =~ $BUILD_EXCLUSIVE_KERNEL ]]' \
		_ "$DKMS/dkms.conf" "$1"
}

# dkms_all RELEASE...: each taken; dkms_none: none taken.
dkms_all() { local k; for k; do dkms_takes "$k" || { echo "# refused: $k"; return 1; }; done; }
dkms_none() { local k; for k; do ! dkms_takes "$k" || { echo "# taken: $k"; return 1; }; done; }

# dkms_skips RELEASE HEADERS: `dkms build` for RELEASE (its headers
# HEADERS), with trees of its own, ends with 77 and DKMS's message.
dkms_skips() {
	local out rc src=$DKMS/src/ringtrace-0.0-test
	rm -rf "$DKMS/tree" "$DKMS/src" "$DKMS/inst"
	mkdir -p "$src" "$DKMS/tree" "$DKMS/inst"
	cp -r Kbuild module include "$src"/ && cp "$DKMS/dkms.conf" "$src"/ || return 1
	out=$(dkms build -m ringtrace -v 0.0-test -k "$1" --dkmstree "$DKMS/tree" \
		--sourcetree "$DKMS/src" --installtree "$DKMS/inst" \
		--kernelsourcedir "$2" 2>&1)
	rc=$?
	echo "# dkms build -k $1: $rc"
	[[ $rc == 77 ]] && grep -q "BUILD_EXCLUSIVE directive which does not match" <<<"$out"
}

if check "6.12 and 6.1 headers installed (${H612:-none}, ${H61:-none})" \
	test -n "$H612" -a -n "$H61"; then
	setup "headers posing as 6.13, 7.0 and 6.0" eval \
		'P613=$(posing "$CACHE/headers-6.13" 6 13 "$H612") &&
		 P70=$(posing "$CACHE/headers-7.0" 7 0 "$H612") &&
		 P60=$(posing "$CACHE/headers-6.0" 6 0 "$H61")'
	check "6.13: build refused with \"Linux 6.13 is newer than 6.12\" alone" \
		refused_version "$P613" "6.13 is newer than 6.12, the newest kernel"
	check "7.0: build refused the same way" \
		refused_version "$P70" "7.0 is newer than 6.12, the newest kernel"
	check "6.0: build refused with \"Linux 6.0 is older than 6.1\" alone" \
		refused_version "$P60" "6.0 is older than 6.1, the oldest kernel"
	check "6.13 with RINGTRACE_ALLOW_UNTESTED=1: built" \
		one_object "$P613" RINGTRACE_ALLOW_UNTESTED=1
	check "6.13 with RINGTRACE_ALLOW_UNTESTED=0: refused" \
		refused_version "$P613" "6.13 is newer than 6.12, the newest kernel" \
		RINGTRACE_ALLOW_UNTESTED=0
	check "6.13: make clean says nothing and succeeds" cleaned "$P613"
	check "6.12: built" one_object "$H612"

	mkdir -p "$DKMS"
	setup "dkms.conf as packaged" eval 'dkms_conf >"$DKMS/dkms.conf"'
	sed -n 's/^BUILD_EXCLUSIVE_KERNEL=/# &/p' "$DKMS/dkms.conf"
	check "dkms.conf takes the matrix's kernels and 6.1 .. 6.12" dkms_all \
		6.1.0-56-amd64 6.12.117+deb12-amd64 6.12.117+deb12-rt-amd64 \
		6.1.0 6.5.13-1-amd64 6.9.0 6.10.0-rc1 6.11.2 6.12.0
	check "dkms.conf refuses 6.0, 6.13, 7.0 and their look-alikes" dkms_none \
		6.0.19-amd64 6.13.0-1-amd64 6.13 7.0.0 7.1.0 5.10.0-28-amd64 \
		16.1.0 6.120.0 66.1.0 6.0
	if command -v dkms >/dev/null; then
		check "dkms build for 6.13: skipped, status 77" \
			dkms_skips 6.13.0-1-amd64 "$P613"
	else
		check "dkms installed (tools/install-deps)" false
	fi
fi

for arch in "${ARCHES[@]}"; do
	if ! command -v "${CROSS[$arch]}gcc" >/dev/null; then
		check "$arch: compiler ${CROSS[$arch]}gcc installed" false
		continue
	fi
	setup "$arch: kernel tree prepared" prepare "$arch" || continue
	check "$arch: build refused with \"${REFUSAL[$arch]}\"" refused "$arch"
done

check_summary arch-guard
