#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The module's DKMS sources and the Debian packages (docs/INSTALL.md).
#
#   mkdeb.sh src DIR     the module's sources (Kbuild, kmod/, uapi/) and
#                        dist/dkms/dkms.conf, its version filled from
#                        VERSION, into DIR (make dkms: /usr/src/iwarp-VERSION)
#   mkdeb.sh deb OUTDIR  iwarp_VERSION_ARCH.deb (bin/iwarpctl, bin/iwarp-perf,
#                        which must be built and of VERSION, the completion,
#                        the systemd unit, /etc/iwarp/iwarp.conf, man/*.[18]
#                        when man/ exists) and iwarp-dkms_VERSION_all.deb
#                        into OUTDIR (make deb: build/deb)
#
# The packages are built with dpkg-deb alone, owned by root, their files'
# times the commit's (SOURCE_DATE_EPOCH). Maintainer: DEBFULLNAME and
# DEBEMAIL, else git's user.name and user.email.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
ver=$(cat VERSION)
umask 022
# git only when the tree is a checkout's top (not a copy inside one).
in_git=""
[ "$(git rev-parse --show-toplevel 2>/dev/null || true)" = "$top" ] && in_git=yes
die() {
	echo "mkdeb: $*" >&2
	exit 1
}

# src DIR: the module's sources, as scripts/ksrc.sh copies them, and dkms.conf.
src() {
	d=$1
	if [ -n "$in_git" ]; then
		files=$(git ls-files -co --exclude-standard -- Kbuild kmod uapi)
	else
		files=$(find Kbuild kmod uapi -type f)
	fi
	files=$(printf '%s\n' "$files" | grep -E '(^|/)(Kbuild|Makefile)$|\.[ch]$' | grep -v '\.mod\.c$' |
		while IFS= read -r f; do [ -f "$f" ] && printf '%s\n' "$f"; done)
	[ -n "$files" ] || die "no module sources"
	mkdir -p "$d"
	# shellcheck disable=SC2086
	tar -cf - $files | tar -xf - -C "$d" --no-same-owner
	sed "s/@VERSION@/$ver/g" dist/dkms/dkms.conf >"$d/dkms.conf"
	grep -q "^#define IWARP_VERSION[[:space:]]*\"$ver\"" "$d/kmod/version.h" ||
		die "kmod/version.h is not of VERSION $ver"
}

# fill TEMPLATE: @VERSION@, @ARCH@, @MAINTAINER@ filled in.
fill() {
	sed -e "s/@VERSION@/$ver/g" -e "s/@ARCH@/$arch/g" -e "s|@MAINTAINER@|$maint|g" "$1"
}

# control PKGROOT NAME: DEBIAN/control with Installed-Size, md5sums and the
# maintainer scripts dist/deb/NAME.{postinst,prerm,postrm} that exist.
control() {
	r=$1 n=$2
	mkdir -p "$r/DEBIAN"
	size=$(du -sk --apparent-size --exclude=DEBIAN "$r" | cut -f1)
	fill "dist/deb/$n.control" | sed "s/@SIZE@/$size/" >"$r/DEBIAN/control"
	(cd "$r" && find . -path ./DEBIAN -prune -o -type f -print | sed 's|^\./||' | LC_ALL=C sort |
		while IFS= read -r f; do md5sum "$f"; done) >"$r/DEBIAN/md5sums"
	for s in postinst prerm postrm; do
		if [ -f "dist/deb/$n.$s" ]; then
			fill "dist/deb/$n.$s" >"$r/DEBIAN/$s"
			chmod 0755 "$r/DEBIAN/$s"
		fi
	done
	chmod 0644 "$r/DEBIAN/control" "$r/DEBIAN/md5sums"
	! grep -rq '@[A-Z]*@' "$r/DEBIAN" || die "$n: a template field left unfilled"
}

# changelog PKGROOT NAME: the native package's changelog.gz.
changelog() {
	{
		printf '%s (%s) bookworm; urgency=medium\n\n' "$2" "$ver"
		printf '  * iwarp %s%s.\n\n' "$ver" "${commit:+, built from commit $commit}"
		printf ' -- %s  %s\n' "$maint" "$(LC_ALL=C date -u -R -d "@$SOURCE_DATE_EPOCH")"
	} | gzip -9n >"$1/usr/share/doc/$2/changelog.gz"
}

bsd_text() {
	sed -e 's/^$/./' -e 's/^/ /' LICENSES/BSD-3-Clause
}

# golicenses BIN...: the Go standard library's and each linked module's
# license, from the Go module cache (offline).
golicenses() {
	modcache=$(go env GOMODCACHE)
	goroot=$(go env GOROOT)
	gov=$(go version "$1" | sed 's/^[^:]*: //')
	printf '\nThe Go standard library (%s)\n\n' "$gov"
	cat "$goroot/LICENSE"
	# shellcheck disable=SC2086
	go version -m "$@" | awk '$1 == "dep" { print $2, $3 }' | LC_ALL=C sort -u |
		while read -r m v; do
			esc=$(printf '%s' "$m" | sed 's/[[:upper:]]/!&/g' | tr '[:upper:]' '[:lower:]')
			lic=$(find "$modcache/$esc@$v" -maxdepth 1 -type f \( -name 'LICENSE*' -o -name 'COPYING*' \) | LC_ALL=C sort | head -n1)
			[ -n "$lic" ] || die "no license file for Go module $m $v in $modcache"
			printf '\n%s %s\n\n' "$m" "$v"
			if grep -q 'Apache License' "$lic" && grep -q 'Version 2\.0, January 2004' "$lic"; then
				echo "Licensed under the Apache License, Version 2.0: /usr/share/common-licenses/Apache-2.0."
			else
				cat "$lic"
			fi
		done
}

deb() {
	out=$1
	command -v dpkg-deb >/dev/null || die "dpkg-deb is missing (apt-get install dpkg)"
	arch=$(dpkg --print-architecture)
	[ "$(go env GOARCH)" = "$arch" ] || die "Go builds for $(go env GOARCH), dpkg's architecture is $arch"
	for t in iwarpctl iwarp-perf; do
		[ -x "bin/$t" ] || die "bin/$t is missing: make go"
	done
	[ "$(bin/iwarpctl -V)" = "iwarpctl $ver" ] || die "bin/iwarpctl is not of VERSION $ver: make go"
	name=${DEBFULLNAME:-$(git config user.name 2>/dev/null || true)}
	mail=${DEBEMAIL:-$(git config user.email 2>/dev/null || true)}
	commit="" first=""
	if [ -n "$in_git" ]; then
		commit=$(git rev-parse --short HEAD)
		[ -z "$(git status --porcelain -- Kbuild kmod uapi cmd internal dist)" ] || commit="$commit, modified"
		first=$(git log --reverse --format=%cd --date=format:%Y | head -n1)
		: "${SOURCE_DATE_EPOCH:=$(git log -1 --format=%ct)}"
	fi
	: "${SOURCE_DATE_EPOCH:=$(date +%s)}"
	if [ -z "$name" ] || [ -z "$mail" ]; then
		die "no maintainer: set DEBFULLNAME and DEBEMAIL"
	fi
	maint="$name <$mail>"
	export SOURCE_DATE_EPOCH
	last=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y)
	years=${first:-$last}
	[ "$years" = "$last" ] || years="$years-$last"

	stage=$out/stage
	rm -rf "$stage"
	mkdir -p "$out"
	rm -f "$out/iwarp_${ver}_$arch.deb" "$out/iwarp-dkms_${ver}_all.deb"

	# iwarp: what `make install` installs but the module, under /usr.
	r=$stage/iwarp
	for t in iwarpctl iwarp-perf; do
		install -D -m 0755 "bin/$t" "$r/usr/bin/$t"
		strip --remove-section=.comment --remove-section=.note "$r/usr/bin/$t"
	done
	mkdir -p "$r/usr/share/bash-completion/completions"
	bin/iwarpctl completion bash >"$r/usr/share/bash-completion/completions/iwarpctl"
	mkdir -p "$r/lib/systemd/system"
	sed 's|@PREFIX@|/usr|g' dist/iwarp.service >"$r/lib/systemd/system/iwarp.service"
	install -D -m 0644 dist/iwarp.conf "$r/etc/iwarp/iwarp.conf"
	install -D -m 0644 docs/INSTALL.md "$r/usr/share/doc/iwarp/INSTALL.md"
	for m in man/*.1 man/*.8; do
		[ -f "$m" ] || continue
		s=${m##*.}
		mkdir -p "$r/usr/share/man/man$s"
		gzip -9n <"$m" >"$r/usr/share/man/man$s/${m##*/}.gz"
	done
	{
		echo "iwarp: software iWARP for Linux"
		echo
		echo "Copyright (c) $years The iwarp authors."
		echo
		echo "iwarpctl and iwarp-perf are under the BSD-3-Clause license:"
		echo
		cat LICENSES/BSD-3-Clause
		echo
		echo "They are statically linked Go programs: they include the Go standard"
		echo "library and the Go modules below, each under its own license."
		golicenses bin/iwarpctl bin/iwarp-perf
	} >"$r/usr/share/doc/iwarp/copyright"
	install -D -m 0644 dist/deb/iwarp.lintian-overrides "$r/usr/share/lintian/overrides/iwarp"
	changelog "$r" iwarp
	control "$r" iwarp
	echo /etc/iwarp/iwarp.conf >"$r/DEBIAN/conffiles"
	chmod 0644 "$r/DEBIAN/conffiles"

	# iwarp-dkms: the module's sources for dkms.
	r=$stage/iwarp-dkms
	src "$r/usr/src/iwarp-$ver"
	mkdir -p "$r/usr/share/doc/iwarp-dkms"
	{
		echo "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"
		echo "Upstream-Name: iwarp"
		echo
		echo "Files: *"
		echo "Copyright: $years The iwarp authors"
		echo "License: GPL-2.0-only"
		echo
		echo "Files: usr/src/iwarp-$ver/uapi/*"
		echo "Copyright: $years The iwarp authors"
		echo "License: GPL-2.0-only WITH Linux-syscall-note or BSD-3-Clause"
		echo "Comment: as the kernel's own headers for programs, GPL-2.0 with the"
		echo " Linux syscall note (the kernel's LICENSES/exceptions/Linux-syscall-note)"
		echo " or BSD-3-Clause, at the user's choice."
		echo
		echo "License: GPL-2.0-only"
		echo " This program is free software; you can redistribute it and/or modify it"
		echo " under the terms of the GNU General Public License version 2 as published"
		echo " by the Free Software Foundation."
		echo " ."
		echo " On Debian systems the license is in /usr/share/common-licenses/GPL-2."
		echo
		echo "License: BSD-3-Clause"
		bsd_text
	} >"$r/usr/share/doc/iwarp-dkms/copyright"
	changelog "$r" iwarp-dkms
	control "$r" iwarp-dkms

	find "$stage" -type d -exec chmod 0755 {} +
	find "$stage" -path '*/DEBIAN' -prune -o -type f ! -perm -u+x -exec chmod 0644 {} +
	find "$stage" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
	dpkg-deb -Zxz --root-owner-group --build "$stage/iwarp" "$out/iwarp_${ver}_$arch.deb" >/dev/null
	dpkg-deb -Zxz --root-owner-group --build "$stage/iwarp-dkms" "$out/iwarp-dkms_${ver}_all.deb" >/dev/null
	rm -rf "$stage"
	echo "$out/iwarp_${ver}_$arch.deb"
	echo "$out/iwarp-dkms_${ver}_all.deb"
}

[ $# -eq 2 ] || die "usage: mkdeb.sh src DIR | deb OUTDIR"
case $1 in
src) src "$2" ;;
deb) deb "$2" ;;
*) die "usage: mkdeb.sh src DIR | deb OUTDIR" ;;
esac
