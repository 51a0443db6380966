#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Installs what a fresh Debian 12 machine lacks to build and test iwarp:
# the guest kernel and its headers, QEMU, the initramfs tools, the C
# toolchains and checkers, and the interop peers the guest tests run (siw's
# userspace, rping, perftest, tshark, iperf3, sockperf, ethtool; perf and
# bpftrace for the tracepoint test, docs/TRACING.md; iproute2's rdma and
# ibverbs-utils' ibv_devices, ibv_devinfo and ibv_asyncwatch for the
# RDMA-core device test; fio and nvme-cli for NVMe over RDMA,
# TestRDMACoreNVMe; nfs-kernel-server's rpc.mountd and exportfs and
# nfs-common's mount.nfs for NFS over RDMA, TestRDMACoreNFS, which runs
# them in the guest only: on a host with systemd their install starts
# rpcbind (port 111) and an nfsd exporting nothing (2049), which the
# tests do not need: `systemctl disable --now nfs-server rpcbind.socket
# rpcbind` stops them), groff-base
# (install-check renders the man pages), and dkms and lintian for the
# package checks (scripts/deb-check.sh). Idempotent and
# non-interactive: it only calls apt when a package is missing.
# `deps.sh kdebug` adds what building the debug guest kernel needs
# (scripts/kdebug.sh, make test-debug).
set -eu

PKGS="
build-essential
bc
bpftrace
busybox-static
clang
cpio
dkms
ethtool
fio
groff-base
ibverbs-providers
ibverbs-utils
iperf3
iproute2
kmod
libclang-rt-14-dev
libibverbs-dev
librdmacm-dev
lintian
linux-source-6.1
linux-headers-amd64
linux-image-amd64
linux-perf
llvm
nfs-common
nfs-kernel-server
nvme-cli
openssl
perftest
qemu-system-x86
rdma-core
rdmacm-utils
sockperf
sparse
tshark
xz-utils
"
if [ "${1:-}" = kdebug ]; then
	PKGS="$PKGS
bison
flex
libelf-dev
libssl-dev
"
fi

missing=""
for p in $PKGS; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
		missing="$missing $p"
	fi
done

if [ -n "$missing" ]; then
	echo "deps: installing:$missing"
	SUDO=""
	[ "$(id -u)" -eq 0 ] || SUDO="sudo"
	export DEBIAN_FRONTEND=noninteractive
	# tshark's postinst asks whether non-root users may capture; answer
	# no up front so the install never prompts.
	case " $missing " in
	*" tshark "*)
		echo "wireshark-common wireshark-common/install-setuid boolean false" |
			$SUDO debconf-set-selections
		;;
	esac
	$SUDO apt-get update -q
	# shellcheck disable=SC2086
	$SUDO apt-get install -y -q --no-install-recommends $missing
fi

# The headers of the kernel the guest boots must be there, whatever the
# metapackage resolved to.
kver=$(sh "$(dirname "$0")/kver.sh")
if [ ! -d "/lib/modules/$kver/build" ]; then
	echo "deps: headers for $kver missing under /lib/modules/$kver/build" >&2
	exit 1
fi
if ! command -v go >/dev/null 2>&1; then
	echo "deps: Go is required (go.mod states the version)" >&2
	exit 1
fi
go mod download
