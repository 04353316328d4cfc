#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Host tests of the trace decoder and the ringtrace CLI: builds the normal
# and the ASan/UBSan binaries, then runs tools/tests/test_decoder.py
# (options pass through: --fuzz N, -k NAME, -v, --keep).
# The last line is `decoder: N passed, M failed`.
set -e
cd "$(dirname "$0")"
# Frames named from the trace alone: no debuginfod server is asked
# (tests/debuginfod-host.sh tests those lookups).
unset DEBUGINFOD_URLS
make -s ringtrace asan
exec python3 tests/test_decoder.py "$@"
