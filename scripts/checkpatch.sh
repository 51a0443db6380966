#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Runs the kernel's checkpatch.pl over the module's C sources and the uapi
# headers. checkpatch comes from Debian's linux-source package of the
# kernel the module is built for ($KVER, by default the guest kernel of
# scripts/kver.sh: 6.1.0-56-amd64 -> linux-source-6.1), extracted once into
# .cache/checkpatch-<major.minor>/.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
kver=${KVER:-$(sh "$top/scripts/kver.sh")}
mm=$(printf '%s\n' "$kver" | sed -n 's/^\([0-9]*\.[0-9]*\)[.-].*/\1/p')
[ -n "$mm" ] || { echo "checkpatch: no major.minor in kernel version '$kver'" >&2; exit 1; }
cache="$top/.cache/checkpatch-$mm"
tarball=/usr/src/linux-source-$mm.tar.xz
if [ ! -x "$cache/scripts/checkpatch.pl" ]; then
	if [ ! -f "$tarball" ]; then
		echo "checkpatch: no $tarball (run 'make deps', or scripts/k612.sh for 6.12)" >&2
		exit 1
	fi
	mkdir -p "$cache"
	base=$(basename "$tarball" .tar.xz)
	tar -xJf "$tarball" -C "$cache" --strip-components=1 \
		"$base/scripts/checkpatch.pl" "$base/scripts/spelling.txt" \
		"$base/scripts/const_structs.checkpatch"
fi
cd "$top"
files=$(git ls-files 'kmod/*.c' 'kmod/*.h' 'uapi/*.h' | grep -vxF kmod/compat.h)
# nl_gen.c is generated with long message strings on one line, which
# checkpatch allows for user-visible strings.
ignore=FILE_PATH_CHANGES,SPDX_LICENSE_TAG,CONCATENATED_STRING,LONG_LINE_STRING
# checkpatch takes each file alone: the files are dealt out to one perl per
# CPU, and their reports printed in that order once all have ended.
jobs=$(nproc 2>/dev/null || echo 1)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
i=0
for f in $files; do
	echo "$f" >>"$tmp/list.$((i % jobs))"
	i=$((i + 1))
done
pids=
for l in "$tmp"/list.*; do
	# shellcheck disable=SC2046
	perl "$cache/scripts/checkpatch.pl" --no-tree --strict --terse --show-types \
		--ignore "$ignore" -f $(cat "$l") >"$l.out" 2>&1 &
	pids="$pids $!"
done
rc=0
for p in $pids; do
	wait "$p" || rc=1
done
cat "$tmp"/list.*.out
[ "$rc" -eq 0 ] || exit 1
# kmod/compat.h exists to compare LINUX_VERSION_CODE with KERNEL_VERSION(),
# which checkpatch flags twice (in-tree code has no use for it, and takes
# LINUX_VERSION_CODE for a constant on the left of a comparison); only
# there are those two allowed.
perl "$cache/scripts/checkpatch.pl" --no-tree --strict --terse --show-types \
	--ignore "$ignore,LINUX_VERSION_CODE,CONSTANT_COMPARISON" -f kmod/compat.h
