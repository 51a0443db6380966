#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Prints the version of the guest kernel: the one Debian's linux-image-amd64
# metapackage depends on. Nothing is hard-coded: a security update that moves
# the ABI number moves this too.
set -eu
dep=$(dpkg-query -W -f='${Depends}' linux-image-amd64 2>/dev/null || true)
ver=$(printf '%s\n' "$dep" | tr ',|' '\n\n' | sed -n 's/^ *linux-image-\([0-9][^ ]*-amd64\).*/\1/p' | head -n1)
if [ -z "$ver" ]; then
	echo "kver.sh: linux-image-amd64 is not installed (run 'make deps')" >&2
	exit 1
fi
printf '%s\n' "$ver"
