#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The kernels ringtrace.ko refuses to be built for, checked by building it.
#
# Kernels newer than the newest it is known to build and run on (6.12):
# Kbuild refuses them unless RINGTRACE_ALLOW_UNTESTED=1.  Debian's 6.12
# headers stand in for a newer kernel, VERSION and PATCHLEVEL given on
# make's command line (kbuild takes the version from them): 6.13 and 7.0
# must fail with Kbuild's error and no other, 6.13 with the flag must get
# past it (one object built), 6.12 itself too.
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
# gcc-s390x-linux-gnu, bc, flex and bison, the 6.12 headers
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

# ---- a kernel newer than 6.12 -----------------------------------------------------

readonly NEWER_REFUSAL="is newer than 6.12, the newest kernel ringtrace.ko is known to build and run on"
HEADERS=$(ls -d /usr/src/linux-headers-6.12.*-amd64 2>/dev/null | grep -v -- -rt- | tail -n1)
readonly HEADERS
readonly VBUILD=$CACHE/build-version

# too_new VERSION PATCHLEVEL: the top-level build fails with Kbuild's
# refusal naming that version, and with no other error.
too_new() {
	local log errors
	log=$(mktemp)
	if make -s modules KDIR="$HEADERS" BUILD="$VBUILD" VERSION="$1" \
		PATCHLEVEL="$2" >"$log" 2>&1; then
		echo "# $1.$2: the module built"
		rm -f "$log"
		return 1
	fi
	errors=$(grep -E '\*\*\*|(^|: )(fatal )?error:' "$log" | grep -v '^make.*Error [0-9]')
	rm -f "$log"
	echo "$errors" | sed 's/^/# /'
	[[ $(wc -l <<<"$errors") == 1 ]] &&
		grep -qF "Linux $1.$2 $NEWER_REFUSAL" <<<"$errors" &&
		grep -qF "RINGTRACE_ALLOW_UNTESTED=1" <<<"$errors"
}

# one_object [VAR=VALUE...]: module/ctf.o of the tree too_new mirrored,
# kbuild given VAR=VALUE.
one_object() {
	local kver
	kver=$(make -s -C "$HEADERS" kernelrelease) || return 1
	rm -f "$VBUILD/$kver/module/ctf.o"
	make -s -C "$HEADERS" M="$VBUILD/$kver" "$@" module/ctf.o >/dev/null 2>&1 &&
		test -s "$VBUILD/$kver/module/ctf.o"
}

if check "6.12 headers installed (${HEADERS:-none})" test -n "$HEADERS"; then
	check "6.13: build refused with \"$NEWER_REFUSAL\"" too_new 6 13
	check "7.0: build refused the same way" too_new 7 0
	check "6.13 with RINGTRACE_ALLOW_UNTESTED=1: built" \
		one_object VERSION=6 PATCHLEVEL=13 RINGTRACE_ALLOW_UNTESTED=1
	check "6.12: built" one_object
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
