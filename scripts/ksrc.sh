#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Brings a copy of the module's sources (Kbuild, kmod/, uapi/) in DIR up to
# date with the tree, for a build against a kernel other than the default
# one (make kmod KVER=...): each kernel's objects live in their own copy, so
# switching kernels rebuilds nothing that did not change. Files keep their
# mtimes (unchanged ones are not rebuilt); sources gone from the tree go
# from the copy too.
#
#   ksrc.sh DIR
set -eu
[ $# -eq 1 ] || { echo "usage: ksrc.sh DIR" >&2; exit 1; }
top=$(cd "$(dirname "$0")/.." && pwd)
w=$1
cd "$top"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	files=$(git ls-files -co --exclude-standard -- Kbuild kmod uapi)
else
	files=$(find Kbuild kmod uapi -type f \( -name '*.[ch]' -o -name Kbuild -o -name Makefile \))
fi
mkdir -p "$w"
(cd "$w" && find . -type f \( -name '*.[ch]' -o -name Kbuild -o -name Makefile \) ! -name '*.mod.c' | sed 's|^\./||') |
	while IFS= read -r f; do
		printf '%s\n' "$files" | grep -qxF "$f" || rm -f "$w/$f"
	done
# shellcheck disable=SC2086
tar -cf - $files | tar -xf - -C "$w"
