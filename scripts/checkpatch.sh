#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Runs the kernel's checkpatch.pl over the module's C sources and the uapi
# headers. checkpatch comes from Debian's linux-source package (the same
# kernel the guest runs), extracted once into .cache/.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cache="$top/.cache/checkpatch"
tarball=$(ls /usr/src/linux-source-*.tar.xz 2>/dev/null | sort -V | tail -n1 || true)
if [ ! -x "$cache/scripts/checkpatch.pl" ]; then
	if [ -z "$tarball" ]; then
		echo "checkpatch: no /usr/src/linux-source-*.tar.xz (run 'make deps')" >&2
		exit 1
	fi
	mkdir -p "$cache"
	base=$(basename "$tarball" .tar.xz)
	tar -xJf "$tarball" -C "$cache" --strip-components=1 \
		"$base/scripts/checkpatch.pl" "$base/scripts/spelling.txt" \
		"$base/scripts/const_structs.checkpatch"
fi
cd "$top"
files=$(git ls-files 'kmod/*.c' 'kmod/*.h' 'uapi/*.h')
# nl_gen.c is generated with long message strings on one line, which
# checkpatch allows for user-visible strings.
# shellcheck disable=SC2086
perl "$cache/scripts/checkpatch.pl" --no-tree --strict --terse --show-types \
	--ignore FILE_PATH_CHANGES,SPDX_LICENSE_TAG,CONCATENATED_STRING,LONG_LINE_STRING \
	-f $files
