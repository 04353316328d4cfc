# SPDX-License-Identifier: GPL-2.0
#
# make            modules for every target kernel + daemon, tools, selftests
# make check      the whole test suite, in a TCG guest per kernel
# make bench      the benchmarks, in three guest boots per kernel
# make sparse     sparse over the module sources (C=2)
# make checkpatch checkpatch.pl --no-tree over our C sources
# make install    module, daemon, CLI, systemd unit, modules-load entry
# make deb        ringtrace-dkms and ringtrace .debs in $(RT_CACHE)/deb/
#
# Target kernels: KDIR=<kernel build dir> picks one; otherwise the running
# kernel if its build dir exists, else every kernel with headers installed.

SHELL := /bin/bash
RT_CACHE ?= /var/cache/ringtrace
# Per-kernel module trees land in $(BUILD)/<kver>/.
BUILD ?= $(RT_CACHE)/build
export RT_CACHE BUILD

ifneq ($(KDIR),)
KVERS := $(shell $(MAKE) -s -C $(KDIR) kernelrelease)
kdir = $(KDIR)
else
running := $(shell uname -r)
KVERS ?= $(if $(wildcard /lib/modules/$(running)/build),$(running),\
	   $(sort $(patsubst /lib/modules/%/build,%,$(wildcard /lib/modules/*/build))))
kdir = /lib/modules/$(1)/build
endif

# Sources kbuild needs, mirrored file by file as symlinks into
# $(BUILD)/<kver>/ (only sources: kbuild writes its output next to them):
# C files, Kbuild, and module/'s generator scripts.
KBUILD_SRCS := Kbuild module include selftests/kmod tools/bench

USER_DIRS := daemon tools selftests selftests/probes selftests/fuzz

# A module's DEFINE_PER_CPU data comes out of the kernel's reserve shared
# by every module (PERCPU_MODULE_RESERVE, 8 KiB): ringtrace's modules
# (ringtrace.ko with the bench's or the selftests') keep their share under
# an eighth of it, so that other modules (lttng_tracer) still load beside.
PERCPU_STATIC_MAX := 1024

.PHONY: all modules userspace check bench sparse checkpatch install deb clean $(USER_DIRS)

all: modules userspace

modules:
	@test -n "$(strip $(KVERS))" || { echo "no kernel headers found: run tools/install-deps" >&2; exit 1; }
	@set -e; for k in $(KVERS); do \
		d="$(BUILD)/$$k"; mkdir -p "$$d"; \
		cd "$(CURDIR)"; \
		find $(KBUILD_SRCS) \( -name '*.[ch]' -o -name Kbuild \
			-o -path 'module/*.sh' \) -print | \
		while read -r f; do \
			mkdir -p "$$d/$$(dirname "$$f")"; \
			ln -sfn "$(CURDIR)/$$f" "$$d/$$f"; \
		done; \
		echo "  MODULES $$k"; \
		$(MAKE) -s -C "$(call kdir,$$k)" M="$$d" W=1 modules; \
		pcpu=0; for ko in "$$d"/*.ko; do \
			h=$$(readelf -SW "$$ko" | awk '$$2 == ".data..percpu" { print $$6 }'); \
			pcpu=$$((pcpu + 0x$${h:-0})); \
		done; \
		if [ $$pcpu -gt $(PERCPU_STATIC_MAX) ]; then \
			echo "$$k: the modules have $$pcpu bytes of static per-CPU data (limit $(PERCPU_STATIC_MAX)): use alloc_percpu()" >&2; \
			exit 1; \
		fi; \
	done

userspace: $(USER_DIRS)
$(USER_DIRS):
	$(MAKE) -C $@

check:
	tools/run-tests

# make bench P=storm,pipeline: those parts only (make keeps -p for itself).
bench: all
	tools/bench/run-bench $(if $(P),-p $(P))

sparse:
	@set -e; for k in $(KVERS); do \
		$(MAKE) -s -C "$(call kdir,$$k)" M="$(BUILD)/$$k" W=1 C=2 modules; \
	done

checkpatch:
	tools/checkpatch

install: all
	tools/install-ringtrace

deb:
	tools/build-deb

clean:
	rm -rf build
	@for d in $(USER_DIRS); do $(MAKE) -C $$d clean; done
