#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Checks what `make install DESTDIR=D` staged in D (Makefile install-check):
# the modules for KVER under updates/ with the project's version and their
# dependencies (modinfo: iwarp needs libcrc32c and not the RDMA core,
# iwarp_rdma needs iwarp and ib_core), depmod's entries for them and the
# alias by which ib_core loads iwarp_rdma on `rdma link add`, the tools
# (which print the same version), their man pages (which groff, or man,
# renders without a warning), iwarpctl's bash completion, the systemd
# unit and the example configuration (which iwarpctl -b runs).
#
#   install-check.sh D KVER PREFIX
set -eu
d=$1 kver=$2 prefix=$3
top=$(cd "$(dirname "$0")/.." && pwd)
want=$(cat "$top/VERSION")
fail() { echo "install-check: $*" >&2; exit 1; }

mods="$d/lib/modules/$kver"
ko=$(cd "$mods" && find updates -name iwarp.ko | head -n1)
[ -n "$ko" ] || fail "no iwarp.ko under $mods/updates"
ver=$(/sbin/modinfo -F version "$mods/$ko")
[ "$ver" = "$want" ] || fail "modinfo version '$ver', VERSION '$want'"
# needs KO DEP...: modinfo lists every DEP among KO's dependencies.
needs() {
	m=$1
	shift
	for dep; do
		/sbin/modinfo -F depends "$mods/$m" | tr ',' '\n' | grep -qx "$dep" ||
			fail "$m: modinfo depends '$(/sbin/modinfo -F depends "$mods/$m")' lacks $dep (modprobe would not load it first)"
	done
}
needs "$ko" libcrc32c
! /sbin/modinfo -F depends "$mods/$ko" | tr ',' '\n' | grep -qx ib_core ||
	fail "$ko depends on ib_core: the genetlink path must load without the RDMA core"
grep -q "^$ko:" "$mods/modules.dep" || fail "depmod wrote no entry for $ko in modules.dep"
rko=$(cd "$mods" && find updates -name iwarp_rdma.ko | head -n1)
[ -n "$rko" ] || fail "no iwarp_rdma.ko under $mods/updates"
rver=$(/sbin/modinfo -F version "$mods/$rko")
[ "$rver" = "$want" ] || fail "$rko: modinfo version '$rver', VERSION '$want'"
needs "$rko" iwarp ib_core
grep -q "^$rko:" "$mods/modules.dep" || fail "depmod wrote no entry for $rko in modules.dep"
grep -qx "alias rdma-link-iwarp iwarp_rdma" "$mods/modules.alias" ||
	fail "modules.alias has no rdma-link-iwarp for iwarp_rdma (rdma link add would not load it)"
for t in iwarpctl iwarp-perf; do
	[ -x "$d$prefix/bin/$t" ] || fail "$prefix/bin/$t not installed"
done
v=$("$d$prefix/bin/iwarpctl" -V)
[ "$v" = "iwarpctl $want" ] || fail "iwarpctl -V says '$v'"
# The man pages, rendered as man would, every warning on (-ww): any
# output on stderr fails.
for page in man8/iwarpctl.8 man1/iwarp-perf.1; do
	f="$d$prefix/share/man/$page"
	[ -f "$f" ] || fail "$prefix/share/man/$page not installed"
	name=$(basename "$page" | sed 's/\.[0-9]$//')
	if command -v groff >/dev/null 2>&1; then
		warn=$(groff -man -Tutf8 -ww -z "$f" 2>&1)
		text=$(groff -man -Tascii "$f" 2>/dev/null)
	elif command -v man >/dev/null 2>&1; then
		warn=$(MANWIDTH=80 man --warnings -l "$f" 2>&1 >/dev/null)
		text=$(MANWIDTH=80 man -l "$f" 2>/dev/null)
	else
		fail "neither groff nor man to render the man pages (apt-get install groff-base)"
	fi
	[ -z "$warn" ] || fail "$page: warnings when rendered: $warn"
	printf '%s\n' "$text" | grep -q "^ *$name - " || fail "$page: no NAME line for $name when rendered"
done
grep -q 'iwarpctl' "$d$prefix/share/bash-completion/completions/iwarpctl" ||
	fail "no bash completion for iwarpctl"
unit="$d/etc/systemd/system/iwarp.service"
grep -qx "ExecStartPre=/sbin/modprobe iwarp" "$unit" || fail "the unit does not load the module"
grep -qx "ExecStart=$prefix/bin/iwarpctl -b /etc/iwarp/iwarp.conf" "$unit" ||
	fail "the unit does not run $prefix/bin/iwarpctl -b /etc/iwarp/iwarp.conf"
! grep -q '@PREFIX@' "$unit" || fail "the unit still has @PREFIX@"
[ -f "$d/etc/iwarp/iwarp.conf" ] || fail "no /etc/iwarp/iwarp.conf"
# The example configuration is a valid batch (comments only) for the tool.
"$d$prefix/bin/iwarpctl" -b "$d/etc/iwarp/iwarp.conf" || fail "the example configuration does not run"
echo "install-check: $ko ($ver, needs libcrc32c) and $rko (needs iwarp and ib_core, alias rdma-link-iwarp) in modules.dep, iwarpctl, iwarp-perf, their man pages, the completion and the iwarp unit staged for $kver"
