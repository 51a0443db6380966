#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# The debug guest kernel (KASAN, lockdep, kmemleak, debug objects, hung task
# detection...) for `make test-debug`, built from Debian's linux-source
# tarball with tests/vm/debug-kernel.config, and iwarp.ko built against it.
#
#   kdebug.sh dir      print the kernel's cache directory (built or not)
#   kdebug.sh config   extract the sources and write and check .config only
#   kdebug.sh kernel   build the kernel unless cached; print its directory
#   kdebug.sh kmod     build build/iwarp-kdebug.ko and build/iwarp-kdebug-debug.ko
#
# The kernel lives outside the clone, in $XDG_CACHE_HOME/iwarp-vm (or
# ~/.cache/iwarp-vm) under kdebug-<tarball>-<key>, the key hashing the
# tarball's mtime and size, the fragment's settings (not its comments), the
# compiler and the recipe below; a second run with nothing changed builds
# nothing. The directory holds src/ (the extracted and built tree, with
# src/vmlinux for symbols: out-of-tree modules build with
# `make -C DIR/src M=...`), bzImage (what QEMU boots: the PVH entry of the
# ELF vmlinux runs KASAN-instrumented C code before KASAN's shadow exists
# and triple-faults), kernel.release, mod/lib/modules/<release>/
# (modules_install), config, build.log, build-seconds and the stamp `ok`,
# written last. tests/vm reads it through IWARP_VM_KERNEL_DIR.
#
# Environment: IWARP_KDEBUG_SOURCE (default /usr/src/linux-source-6.1.tar.xz),
# IWARP_KDEBUG_JOBS (default: the number of CPUs), IWARP_KDEBUG_NICE (default
# 10: the build runs beside other people's guests).
set -eu

# Bump when the steps below change what ends up in the directory.
recipe=kdebug-2

top=$(cd "$(dirname "$0")/.." && pwd)
frag="$top/tests/vm/debug-kernel.config"
tarball=${IWARP_KDEBUG_SOURCE:-/usr/src/linux-source-6.1.tar.xz}
jobs=${IWARP_KDEBUG_JOBS:-$(nproc)}
niceness=${IWARP_KDEBUG_NICE:-10}

die() {
	echo "kdebug: $*" >&2
	exit 1
}

cachedir() {
	base=${XDG_CACHE_HOME:-}
	[ -n "$base" ] || base="$HOME/.cache"
	printf '%s/iwarp-vm\n' "$base"
}

# kdir prints the kernel's directory for the current inputs.
kdir() {
	[ -f "$tarball" ] || die "no kernel source $tarball (run 'make deps')"
	[ -f "$frag" ] || die "no $frag"
	key=$({
		echo "$recipe"
		stat -c '%Y %s' "$tarball"
		${CC:-gcc} --version | head -n1
		grep -E '^(CONFIG_|# CONFIG_.* is not set$)' "$frag"
	} | sha256sum | cut -c1-12)
	printf '%s/kdebug-%s-%s\n' "$(cachedir)" "$(basename "$tarball" .tar.xz)" "$key"
}

# check_config fails unless every line of the fragment holds in .config.
check_config() {
	bad=0
	while IFS= read -r line; do
		case "$line" in
		CONFIG_*=*)
			grep -qxF "$line" .config || {
				echo "kdebug: $line requested, .config has: $(grep -E "^(# )?${line%%=*}[= ]" .config || echo nothing)" >&2
				bad=1
			}
			;;
		"# CONFIG_"*" is not set")
			sym=${line#"# "}
			sym=${sym%" is not set"}
			if grep -qE "^$sym=" .config; then
				echo "kdebug: $sym off requested, .config has: $(grep -E "^$sym=" .config)" >&2
				bad=1
			fi
			;;
		esac
	done <"$frag"
	[ "$bad" -eq 0 ] || die "the config fragment did not survive olddefconfig (see above)"
}

# prepare extracts the sources (once) and writes .config.
prepare() {
	d=$1
	mkdir -p "$d"
	if [ ! -f "$d/.src-ok" ]; then
		echo "kdebug: extracting $tarball" >&2
		rm -rf "$d/src" "$d/.src-tmp"
		mkdir -p "$d/.src-tmp"
		tar -xJf "$tarball" -C "$d/.src-tmp"
		mv "$d/.src-tmp/$(basename "$tarball" .tar.xz)" "$d/src"
		rm -rf "$d/.src-tmp"
		touch "$d/.src-ok"
	fi
	cd "$d/src"
	{
		make x86_64_defconfig
		make kvm_guest.config
		scripts/kconfig/merge_config.sh -m .config "$frag"
		make olddefconfig
	} >"$d/config.log" 2>&1 || { tail -n 30 "$d/config.log" >&2; die "configuring failed ($d/config.log)"; }
	check_config
}

build_kernel() {
	d=$(kdir)
	if [ -f "$d/ok" ]; then
		echo "$d"
		return
	fi
	mkdir -p "$(dirname "$d")"
	# One build per directory at a time; a second caller waits, then finds it.
	exec 9>"$d.lock"
	flock 9
	if [ -f "$d/ok" ]; then
		echo "$d"
		return
	fi
	start=$(date +%s)
	prepare "$d"
	echo "kdebug: building the debug kernel in $d/src with $jobs jobs (log: $d/build.log)" >&2
	nice -n "$niceness" make -j"$jobs" bzImage modules >"$d/build.log" 2>&1 ||
		{ tail -n 40 "$d/build.log" >&2; die "kernel build failed ($d/build.log)"; }
	rm -rf "$d/mod"
	make INSTALL_MOD_PATH="$d/mod" modules_install >>"$d/build.log" 2>&1 ||
		{ tail -n 20 "$d/build.log" >&2; die "modules_install failed ($d/build.log)"; }
	rel=$(make -s kernelrelease)
	[ -f "$d/mod/lib/modules/$rel/modules.dep" ] || die "no modules.dep for $rel"
	cp arch/x86/boot/bzImage "$d/bzImage.tmp" && mv "$d/bzImage.tmp" "$d/bzImage"
	cp .config "$d/config"
	echo "$rel" >"$d/kernel.release"
	end=$(date +%s)
	echo "$((end - start))" >"$d/build-seconds"
	touch "$d/ok"
	echo "kdebug: built $rel in $((end - start)) s" >&2
	echo "$d"
}

# build_kmod builds iwarp.ko and iwarp_rdma.ko against the debug kernel from a copy of the
# module's sources in build/kdebug/, so the objects of the normal build in
# kmod/ are left alone and both stay incremental.
build_kmod() {
	d=$(kdir)
	[ -f "$d/ok" ] || die "no debug kernel in $d (run 'make kdebug-kernel')"
	cd "$top"
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		files=$(git ls-files -co --exclude-standard -- Kbuild kmod uapi)
	else
		files=$(find Kbuild kmod uapi -type f \( -name '*.[ch]' -o -name Kbuild -o -name Makefile \))
	fi
	for variant in plain debug; do
		w="$top/build/kdebug/$variant"
		mkdir -p "$w"
		# Sources removed from the tree go from the copy too.
		(cd "$w" && find . -type f \( -name '*.[ch]' -o -name Kbuild -o -name Makefile \) | sed 's|^\./||') |
			while IFS= read -r f; do
				printf '%s\n' "$files" | grep -qxF "$f" || rm -f "$w/$f"
			done
		# tar keeps the mtimes: unchanged files are not rebuilt.
		# shellcheck disable=SC2086
		tar -cf - $files | tar -xf - -C "$w"
		dbg=
		suffix=
		if [ "$variant" = debug ]; then
			dbg=IWARP_DEBUG=1
			suffix=-debug
		fi
		# -g: the module's frames in a splat resolve to lines
		# (scripts/faddr2line build/iwarp-kdebug.ko func+0x12/0x340).
		# shellcheck disable=SC2086
		make -C "$d/src" M="$w" W=1 KCFLAGS=-g $dbg modules
		cp "$w/kmod/iwarp.ko" "$top/build/iwarp-kdebug$suffix.ko"
		cp "$w/kmod/iwarp_rdma.ko" "$top/build/iwarp_rdma-kdebug$suffix.ko"
	done
}

case "${1:-}" in
dir) kdir ;;
config)
	d=$(kdir)
	prepare "$d"
	echo "kdebug: $d/src/.config checked" >&2
	;;
kernel) build_kernel ;;
kmod) build_kmod ;;
*) die "usage: kdebug.sh dir|config|kernel|kmod" ;;
esac
