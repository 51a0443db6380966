# SPDX-License-Identifier: BSD-3-Clause
#
# iwarp: build the kernel module for the guest kernel and the Go tools, and run
# the tests. `make help` lists the targets.

SHELL := /bin/bash
GO ?= go
# The guest kernel of the VM tests (scripts/kver.sh: the one Debian's
# linux-image-amd64 points at). `make kmod` builds for the running kernel
# when its headers are installed, else for that one; another: make kmod
# kmod-debug KVER=V, e.g. Debian's 6.12 LTS (docs/KERNELS.md). The targets
# that boot guests build for the guest kernel whatever runs.
KVER_GUEST := $(shell sh scripts/kver.sh 2>/dev/null)
KVER_RUNNING := $(shell uname -r)
KVER_DEFAULT := $(if $(wildcard /lib/modules/$(KVER_RUNNING)/build/Makefile),$(KVER_RUNNING),$(KVER_GUEST))
KVER ?= $(KVER_DEFAULT)
KDIR ?= /lib/modules/$(KVER)/build
GUEST := KVER=$(KVER_GUEST)
# The guest kernel's module builds in the tree (kmod/) into build/iwarp.ko;
# another kernel's in a copy of the sources, build/kver/$(KVER)/ (scripts/ksrc.sh),
# into build/iwarp-$(KVER).ko, where tests/vm looks for it. iwarp_rdma.ko,
# the RDMA-core front end, goes beside it (build/iwarp_rdma[-$(KVER)].ko).
ifeq ($(KVER),$(KVER_GUEST))
KSRC := $(CURDIR)
KO := build/iwarp
else
KSRC := $(CURDIR)/build/kver/$(KVER)
KO := build/iwarp-$(KVER)
endif
RKO := $(subst build/iwarp,build/iwarp_rdma,$(KO))
BIN := $(CURDIR)/bin
DEBUG ?=
GOFLAGS_BUILD := -trimpath
# Kbuild's jobs: one per CPU, unless this make was given -j (its jobserver
# is then shared with Kbuild).
KJOBS ?= $(if $(filter -j%,$(MAKEFLAGS)),,-j$(shell nproc))
VERSION := $(shell cat VERSION)
export CGO_ENABLED := 0

.PHONY: all help deps kmod kmod-debug ksrc go opcheck connrate ibvmr generate check-generated conformance test test-host \
	test-proto fuzz demo bench stress sparse checkpatch vet clean kdebug-kernel kmod-kdebug test-debug \
	deps-k612 kmod-k612 test-k612 install install-check dkms deb deb-check man

all: kmod go opcheck connrate ibvmr

help:
	@echo "make            build the module for $(KVER) (the running kernel if its headers are installed, else the guest kernel) and bin/*"
	@echo "make install    install the modules (modules_install, depmod: modprobe iwarp loads it and libcrc32c; rdma link add ... type iwarp loads iwarp_rdma and ib_core), iwarpctl, iwarp-perf, their man pages, bash completion, the iwarp systemd unit and /etc/iwarp/iwarp.conf (DESTDIR, PREFIX=/usr/local)"
	@echo "sudo make dkms  the module's sources to /usr/src/iwarp-$(VERSION), dkms builds and installs it for every kernel with headers, and again on kernel upgrades"
	@echo "make deb        build/deb/iwarp_$(VERSION)_amd64.deb (the tools, unit, configuration) and iwarp-dkms_$(VERSION)_all.deb (the module through DKMS)"
	@echo "make deb-check  the packages checked and their DKMS install, upgrade and removal run in private trees (part of make test)"
	@echo "make deps       install what a fresh Debian 12 machine lacks (apt)"
	@echo "make kmod kmod-debug sparse KVER=V  the module for another kernel (docs/KERNELS.md)"
	@echo "make test-k612  Debian's 6.12 LTS installed beside 6.1, the module built for it, VM tests on it"
	@echo "make demo       boot a guest and show iwarp at work"
	@echo "make bench      iwarp against siw and raw TCP, NVMe-oF over iwarp, siw, TCP (BENCH_FLAGS=-quick: short)"
	@echo "make test       all tests: C protocol tests, Go host tests, VM tests"
	@echo "make test-debug the VM tests on a debug kernel (KASAN, lockdep, kmemleak...; built once, ~1 h)"
	@echo "make test-proto the C protocol tests only"
	@echo "make stress     TestStress alone in a guest (STRESS_TIME=10m for a long run; default 60 s)"
	@echo "make fuzz       libFuzzer targets (FUZZ_TIME=seconds per target)"
	@echo "make sparse     sparse (C=2) over the module"
	@echo "make checkpatch checkpatch.pl over kmod/ and uapi/"
	@echo "make generate   regenerate uapi/iwarp.h, kmod/nl_gen.[ch], netlinkproto/ from netlinkproto/iwarp.yaml"
	@echo "make man        regenerate man/iwarpctl.8 and man/iwarp-perf.1 from the tools' own --help"
	@echo "make conformance regenerate docs/CONFORMANCE.md from SPEC-NOTES.md (SPEC_NOTES=path), the tests and docs/conformance-notes.txt"

deps:
	@sh scripts/deps.sh

kmod: ksrc
	$(MAKE) $(KJOBS) -C $(KDIR) M=$(KSRC) W=1 KCFLAGS=-Werror $(if $(DEBUG),IWARP_DEBUG=1) modules
	@mkdir -p build && cp $(KSRC)/kmod/iwarp.ko $(KO)$(if $(DEBUG),-debug).ko
	@# iwarp_rdma.ko, the RDMA-core front end, beside it (kernels with the RDMA core).
	@rm -f $(RKO)$(if $(DEBUG),-debug).ko
	@if [ -f $(KSRC)/kmod/iwarp_rdma.ko ]; then cp $(KSRC)/kmod/iwarp_rdma.ko $(RKO)$(if $(DEBUG),-debug).ko; fi

kmod-debug:
	$(MAKE) kmod DEBUG=1

# Checks the kernel's headers and, for a kernel other than the default one,
# brings its copy of the sources up to date.
ksrc:
	@test -n "$(KVER)" || { echo "no kernel headers: install linux-headers-$(KVER_RUNNING) for the running kernel (apt-get install linux-headers-$(KVER_RUNNING)), or run 'make deps' for the guest kernel of the tests"; exit 1; }
	@test -f $(KDIR)/Makefile || { echo "no headers for $(KVER) in $(KDIR): apt-get install linux-headers-$(KVER)"; exit 1; }
	@$(if $(filter-out $(CURDIR),$(KSRC)),sh scripts/ksrc.sh $(KSRC))

go:
	@mkdir -p $(BIN)
	$(GO) build $(GOFLAGS_BUILD) -o $(BIN)/ ./cmd/... ./examples/... ./tests/vm/cmd/sctpping

# siw's side of the operation interop cells (tests/vm/guest/opcheck_test.go):
# a libibverbs/librdmacm program; the guest runs it from the shared tree.
opcheck: build/opcheck

build/opcheck: tests/vm/opcheck/opcheck.c
	@mkdir -p build
	$(CC) -O2 -g -Wall -Wextra -Werror -o $@ $< -libverbs -lrdmacm

# PDs and MRs through libibverbs on an RDMA-core device
# (tests/vm/guest/rdmacore_test.go).
ibvmr: build/ibvmr

build/ibvmr: tests/vm/ibvmr/ibvmr.c
	@mkdir -p build
	$(CC) -O2 -g -Wall -Wextra -Werror -o $@ $< -libverbs

# siw's side of the connection setup rate (tests/vm/guest/setuprate_test.go).
connrate: build/connrate

build/connrate: tests/vm/connrate/connrate.c
	@mkdir -p build
	$(CC) -O2 -g -Wall -Wextra -Werror -o $@ $< -libverbs -lrdmacm

generate:
	$(GO) run ./netlinkproto/gen -spec netlinkproto/iwarp.yaml -root .

# docs/CONFORMANCE.md: every SPEC-NOTES checklist ID as e2e, core or none
# (tests/conformance; its test, run by `go test ./...`, fails when the file is
# stale).
SPEC_NOTES ?= ../shared/docs/SPEC-NOTES.md

conformance:
	$(GO) run ./tests/conformance -root . -spec $(SPEC_NOTES)

# The man pages: internal/mangen runs the built tools with --help, down
# their command trees, and writes roff from what they print.

man: go
	@mkdir -p man
	$(GO) run ./internal/mangen -o man $(BIN)/iwarpctl:8 $(BIN)/iwarp-perf:1

check-generated: generate man
	@git diff --exit-code -- uapi/iwarp.h kmod/nl_gen.c kmod/nl_gen.h netlinkproto/zz_generated.go \
		|| { echo "generated files are stale: run 'make generate' and commit"; exit 1; }
	@git diff --exit-code -- man/ && test -z "$$(git status --porcelain -- man/)" \
		|| { git status --short -- man/; echo "man pages are stale: run 'make man' and commit"; exit 1; }

# Fails on any sparse report (endianness included). -Wno-flexible-array-array:
# the kernel's own include/net/sctp/structs.h (read by kmod/sctp_assoc.c for
# the association's send queue) has an array of flexible structures.
sparse: ksrc
	@mkdir -p build
	@$(MAKE) $(KJOBS) -s -C $(KDIR) M=$(KSRC) W=1 KCFLAGS=-Werror C=2 CF="-D__CHECK_ENDIAN__ -Wno-flexible-array-array" modules 2>&1 \
		| tee build/sparse-$(KVER).log | grep -E "warning:|error:" && { echo "sparse: reports above"; exit 1; } || echo "sparse: clean ($(KVER))"

checkpatch:
	@KVER=$(KVER) sh scripts/checkpatch.sh

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }

test-proto:
	$(MAKE) -C tests/proto test

fuzz:
	$(MAKE) -C tests/proto fuzz FUZZ_TIME=$(or $(FUZZ_TIME),10)

# Installs what a user runs: the modules for $(KVER) under updates/ with
# depmod (so modprobe finds iwarp and the libcrc32c it needs, and ib_core
# finds iwarp_rdma by its alias rdma-link-iwarp), the tools and
# their man pages, iwarpctl's bash completion, and the iwarp systemd unit with an example
# /etc/iwarp/iwarp.conf (kept if one exists). DESTDIR stages it elsewhere.
PREFIX ?= /usr/local
install: kmod go
	$(MAKE) -C $(KDIR) M=$(KSRC) $(if $(DESTDIR),INSTALL_MOD_PATH=$(DESTDIR)) INSTALL_MOD_DIR=updates modules_install
	/sbin/depmod $(if $(DESTDIR),-b $(DESTDIR)) $(KVER)
	install -D -m 0755 $(BIN)/iwarpctl $(DESTDIR)$(PREFIX)/bin/iwarpctl
	install -D -m 0755 $(BIN)/iwarp-perf $(DESTDIR)$(PREFIX)/bin/iwarp-perf
	@mkdir -p $(DESTDIR)$(PREFIX)/share/bash-completion/completions
	$(BIN)/iwarpctl completion bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/iwarpctl
	install -D -m 0644 man/iwarpctl.8 $(DESTDIR)$(PREFIX)/share/man/man8/iwarpctl.8
	install -D -m 0644 man/iwarp-perf.1 $(DESTDIR)$(PREFIX)/share/man/man1/iwarp-perf.1
	install -D -m 0644 docs/INSTALL.md $(DESTDIR)$(PREFIX)/share/doc/iwarp/INSTALL.md
	@mkdir -p $(DESTDIR)/etc/systemd/system
	sed 's|@PREFIX@|$(PREFIX)|g' dist/iwarp.service > $(DESTDIR)/etc/systemd/system/iwarp.service
	@# The configuration is the administrator's: an example only where there is none.
	test -e $(DESTDIR)/etc/iwarp/iwarp.conf || install -D -m 0644 dist/iwarp.conf $(DESTDIR)/etc/iwarp/iwarp.conf

# `make install` staged in a scratch DESTDIR and checked: the modules with
# the project's version and their dependencies as modinfo reads them
# (iwarp: libcrc32c, not ib_core; iwarp_rdma: iwarp and ib_core), depmod's
# entries and alias for them, the tools, the man pages (rendered without a
# warning) and the completion.
install-check:
	@rm -rf build/install-check
	$(MAKE) -s install DESTDIR=$(CURDIR)/build/install-check
	@sh scripts/install-check.sh build/install-check $(KVER) $(PREFIX)

# DKMS (docs/INSTALL.md): the module's sources and dist/dkms/dkms.conf in
# /usr/src/iwarp-$(VERSION), then what the iwarp-dkms package's postinst
# does: dkms add, and build and install for every kernel with headers.
# Run again, it replaces that version's build with the tree's.
dkms:
	@test "$$(id -u)" = 0 || { echo "make dkms: run as root (sudo make dkms)"; exit 1; }
	@PATH=$$PATH:/usr/sbin command -v dkms >/dev/null || { echo "make dkms: dkms is missing: apt-get install dkms"; exit 1; }
	@! dpkg-query -W -f='$${Status}' iwarp-dkms 2>/dev/null | grep -q "ok installed" || \
		{ echo "make dkms: the iwarp-dkms package is installed: upgrade it (make deb) or remove it first"; exit 1; }
	@if [ -n "$$(PATH=$$PATH:/usr/sbin dkms status -m iwarp -v $(VERSION))" ]; then \
		PATH=$$PATH:/usr/sbin dkms remove -m iwarp -v $(VERSION) --all; fi
	rm -rf /usr/src/iwarp-$(VERSION)
	sh scripts/mkdeb.sh src /usr/src/iwarp-$(VERSION)
	sed 's/@VERSION@/$(VERSION)/g' dist/deb/iwarp-dkms.postinst | PATH=$$PATH:/usr/sbin sh -s configure

# build/deb/iwarp_$(VERSION)_ARCH.deb and iwarp-dkms_$(VERSION)_all.deb
# (scripts/mkdeb.sh; dpkg-deb only).
deb: go
	sh scripts/mkdeb.sh deb build/deb

# The packages' contents and lintian, and the iwarp-dkms maintainer
# scripts run with dkms on private trees: install for every kernel with
# headers, an upgrade, a removal (scripts/deb-check.sh; the host unchanged).
deb-check: go
	@sh scripts/deb-check.sh build/deb-check

# Host tests and VM tests in one `go test` run, so its summary closes the output.
test: deps
	$(MAKE) kmod-debug $(GUEST)
	$(MAKE) all $(GUEST)
	$(MAKE) sparse checkpatch $(GUEST)
	$(MAKE) kmod-k612
	$(MAKE) checkpatch KVER=$$(sh scripts/k612.sh --no-install)
	$(MAKE) install-check $(GUEST)
	$(MAKE) deb-check
	$(MAKE) test-proto
	$(MAKE) -C tests/proto fuzz-smoke
	$(MAKE) vet check-generated
	IWARP_VM_REQUIRED=1 $(GO) test -count=1 -timeout 60m ./...
	IWARP_KVER=$$(sh scripts/k612.sh --no-install) IWARP_VM_REQUIRED=1 IWARP_VM_RUN='$(K612_CI_RUN)' \
		$(GO) test -count=1 -timeout 30m -run TestVM ./tests/vm/

# The debug guest kernel (tests/vm/debug-kernel.config, scripts/kdebug.sh),
# cached outside the clone; iwarp.ko built against it into
# build/iwarp-kdebug.ko and build/iwarp-kdebug-debug.ko; the VM suite on it.
# Not part of `make test` (too slow for CI): run it before a kmod change is
# called done (tests/vm/README.md, "Debug kernel").
KDEBUG_VM_TIMEOUT ?= 170m
KDEBUG_GO_TIMEOUT ?= 180m

kdebug-kernel:
	@sh scripts/deps.sh kdebug
	@sh scripts/kdebug.sh kernel >/dev/null

kmod-kdebug: kdebug-kernel
	@sh scripts/kdebug.sh kmod

# Three boots: lockdep stops at its first report, and siw sets off two
# that are not the module's (docs/SECURITY.md): its peer-to-peer mode one
# of its own, and its receive upcall one against any userspace SCTP
# socket's close. So siw's peer-to-peer cells run in a boot of their own,
# and so do the tests with userspace SCTP sockets (no siw there), after
# everything else. The debug kernel is built without BTF, which bpftrace
# needs for the tracepoints' argument types: TestTracepoints' bpftrace
# cells run on Debian's kernels (make test) only.
KDEBUG_LAST := ^TestSiwRpingModes$$/^p2p$$
KDEBUG_SCTP := ^(TestSCTPDeath|TestSCTPHostile|TestSCTPKernel|TestSCTPSession|TestSCTPAdaptation|TestSCTPStreamReuse)$$
KDEBUG_SKIP := $(KDEBUG_SCTP)|^(TestSiwRpingModes|TestTracepoints)$$/^(p2p|bpftrace|bpftrace-docs)$$

test-debug: kmod-kdebug go opcheck connrate ibvmr
	IWARP_VM_KERNEL_DIR=$$(sh scripts/kdebug.sh dir) IWARP_VM_REQUIRED=1 \
		IWARP_VM_TIMEOUT=$(KDEBUG_VM_TIMEOUT) IWARP_VM_SKIP='$(KDEBUG_SKIP)' \
		$(GO) test -count=1 -timeout $(KDEBUG_GO_TIMEOUT) ./tests/vm/
	IWARP_VM_KERNEL_DIR=$$(sh scripts/kdebug.sh dir) IWARP_VM_REQUIRED=1 \
		IWARP_VM_RUN='$(KDEBUG_SCTP)' \
		$(GO) test -count=1 -timeout 40m ./tests/vm/
	IWARP_VM_KERNEL_DIR=$$(sh scripts/kdebug.sh dir) IWARP_VM_REQUIRED=1 \
		IWARP_VM_RUN='$(KDEBUG_LAST)' \
		$(GO) test -count=1 -timeout 30m ./tests/vm/

# Debian's 6.12 LTS beside the default kernel (docs/KERNELS.md):
# scripts/k612.sh installs its image, headers and linux-source-6.12 (siw)
# when missing; the module builds into build/iwarp-<version>.ko; test-k612
# runs K612_RUN of the VM suite on it (all of it with K612_RUN=.).
K612_RUN ?= ^(TestHarness.*|TestModule.*|TestLink.*|TestRDMAMatrix|TestRDMACoreDevice|TestRDMACoreRping|TestMalformed|TestPerf.*|TestSCTP.*)$$
# What `make test` runs on 6.12 after the whole suite on 6.1: load and
# unload, links, the RDMA matrix, the RDMA-core device, NVMe and NFS over
# RDMA on it, malformed traffic,
# perf against siw and TCP, the siw interop cells, DDP over SCTP,
# persistence.
K612_CI_RUN := ^(TestHarness.*|TestModule.*|TestLinkCLI|TestLinkCtl|TestRDMAMatrix|TestRDMACoreDevice|TestRDMACoreNVMe|TestRDMACoreNFS|TestMalformed|TestPerf|TestSiwSanity|TestSiwOps|TestSCTPMatrix|TestSCTPSession|TestPersistence)$$

deps-k612:
	@sh scripts/deps.sh
	@sh scripts/k612.sh >/dev/null

kmod-k612: deps-k612
	$(MAKE) kmod-debug kmod sparse KVER=$$(sh scripts/k612.sh --no-install)

test-k612: kmod-k612 go opcheck connrate ibvmr
	IWARP_KVER=$$(sh scripts/k612.sh --no-install) IWARP_VM_REQUIRED=1 IWARP_VM_RUN='$(K612_RUN)' \
		$(GO) test -count=1 -timeout 60m -run TestVM -v ./tests/vm/

# TestStress alone in one guest boot (tests/vm/README.md): STRESS_TIME of
# racing (a Go duration or seconds; 60 s by default, as in the suite).
stress:
	$(MAKE) all $(GUEST)
	IWARP_VM_REQUIRED=1 IWARP_VM_RUN='^TestStress$$' $(if $(STRESS_TIME),IWARP_STRESS_TIME=$(STRESS_TIME)) \
		$(GO) test -count=1 -timeout 0 -v -run TestVM ./tests/vm/

demo: deps
	$(MAKE) all $(GUEST)
	$(GO) run ./tests/vm/cmd/vmrun -demo

# One guest boot: iperf3, siw with perftest and iwarp-perf, side by side
# (tests/vm/bench.sh); the table goes to stdout, the rows to bench/results.json.
bench: deps
	$(MAKE) all $(GUEST)
	$(GO) run ./tests/vm/cmd/bench -o bench/results.json $(BENCH_FLAGS)

clean:
	-$(MAKE) -C $(KDIR) M=$(KSRC) clean
	rm -rf $(BIN) build tests/proto/build
