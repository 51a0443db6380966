#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Prints the version of Debian's 6.12 LTS kernel for bookworm
# (linux-image-6.12.N+deb12-amd64), installing its image and headers and
# the matching linux-source-6.12 (siw, the interop peer, is built from it)
# first when they are missing. The default guest kernel (scripts/kver.sh:
# the one bookworm's linux-image-amd64 metapackage points at) is left
# alone: only versioned packages are installed, never a metapackage.
#
#   k612.sh               print the version, installing when missing
#   k612.sh --no-install  print the installed version; fail if there is none
#
# bookworm-security carries the 6.12 kernels and linux-source-6.12; when
# no configured source has them, the bookworm-backports suite is added
# (/etc/apt/sources.list.d/iwarp-backports.sources). The version installed
# is the one linux-source-6.12 has, so siw's sources match the kernel.
# Messages go to stderr, the version to stdout.
set -eu

die() {
	echo "k612: $*" >&2
	exit 1
}

# installed prints the newest 6.12 kernel whose image and headers are both
# there.
installed() {
	dpkg-query -W -f='${Status} ${Package}\n' 'linux-image-6.12.*+deb12-amd64' 2>/dev/null |
		sed -n 's/^install ok installed linux-image-\(6\.12\.[^ ]*+deb12-amd64\)$/\1/p' |
		sort -V | while IFS= read -r v; do
			[ -d "/lib/modules/$v/build" ] && [ -f "/boot/vmlinuz-$v" ] && echo "$v"
		done | tail -n1
}

# candidate prints the 6.12 kernel linux-source-6.12's candidate matches
# ("6.12.117-1~deb12u1" -> 6.12.117+deb12-amd64), if apt has its image.
candidate() {
	src=$(apt-cache policy linux-source-6.12 2>/dev/null | sed -n 's/^ *Candidate: \(6\.12\.[0-9]*\)-.*/\1/p')
	[ -n "$src" ] || return 0
	apt-cache show "linux-image-$src+deb12-amd64" >/dev/null 2>&1 || return 0
	printf '%s+deb12-amd64\n' "$src"
}

v=$(installed)
if [ -n "$v" ] && [ -f /usr/src/linux-source-6.12.tar.xz ]; then
	printf '%s\n' "$v"
	exit 0
fi
[ "${1:-}" != --no-install ] || die "no 6.12 kernel with linux-source-6.12 installed (run 'sh scripts/k612.sh')"

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive

v=$(candidate)
if [ -z "$v" ]; then
	$SUDO apt-get update -q >&2
	v=$(candidate)
fi
if [ -z "$v" ] && ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
	echo "k612: no 6.12 kernel in apt's sources: adding bookworm-backports" >&2
	printf '%s\n' \
		'Types: deb' \
		'URIs: http://deb.debian.org/debian' \
		'Suites: bookworm-backports' \
		'Components: main' \
		'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg' |
		$SUDO tee /etc/apt/sources.list.d/iwarp-backports.sources >/dev/null
	$SUDO apt-get update -q >&2
	v=$(candidate)
fi
[ -n "$v" ] || die "apt has no linux-source-6.12 with a matching linux-image-6.12.*+deb12-amd64"

# No `-t SUITE`: with a target release apt also upgrades every installed
# package built from the same sources (linux-image-amd64,
# linux-headers-amd64, linux-libc-dev, linux-perf), which moves the
# default kernel. The versioned packages are named exactly instead.
before=$(sh "$(dirname "$0")/kver.sh" 2>/dev/null || true)
echo "k612: installing linux-image-$v, linux-headers-$v, linux-source-6.12" >&2
$SUDO apt-get install -y -q --no-install-recommends \
	-o APT::Get::Upgrade-By-Source-Package=false \
	"linux-image-$v" "linux-headers-$v" linux-source-6.12 >&2
after=$(sh "$(dirname "$0")/kver.sh" 2>/dev/null || true)
[ "$before" = "$after" ] || die "the default kernel moved from '$before' to '$after'"
[ -d "/lib/modules/$v/build" ] && [ -f "/boot/vmlinuz-$v" ] ||
	die "linux-image-$v installed, but /boot/vmlinuz-$v or /lib/modules/$v/build is missing"
printf '%s\n' "$v"
