#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Checks the Debian packages and their DKMS install without touching the
# host (Makefile deb-check, part of make test):
#
#  1. builds iwarp_VERSION_ARCH.deb and iwarp-dkms_VERSION_all.deb
#     (scripts/mkdeb.sh) and checks their control data and contents: the
#     fields, conffiles, md5sums against the files, owners and modes, the
#     exact file list, the module sources against the tree, the unit and the
#     tools (which print VERSION and run the example configuration);
#     lintian finds nothing (no-manual-page aside while man/ does not exist);
#  2. runs the iwarp-dkms maintainer scripts as dpkg would, with `dkms`
#     pointed at private trees (--dkmstree, --sourcetree, --installtree,
#     --no-depmod; its MOK key and certificate in the work directory): the
#     postinst builds and installs iwarp.ko and iwarp_rdma.ko for every
#     kernel whose headers are installed; each module's vermagic is its
#     kernel's, its version VERSION; iwarp needs libcrc32c and not ib_core,
#     iwarp_rdma needs iwarp and ib_core (depmod run on the private tree
#     names them, and iwarp_rdma's alias rdma-link-iwarp)
#     and it is signed with the generated key; a second configure changes
#     nothing; the sources and each kernel's module are kept as dkms's
#     tarballs, WORKDIR/iwarp-dkms-prebuilt_VERSION_KERNEL.tar.gz (for
#     dkms ldtarball);
#  3. an upgrade to VERSION with its last number bumped, built from a copy
#     of the tree: the old prerm, the new files, the new postinst; dkms has
#     the new version built and installed for every kernel and nothing of
#     the old one; dkms's kernel hook (a kernel installed later) installs
#     the new one again once it is uninstalled from a kernel;
#  4. the prerm of a removal leaves neither dkms entries nor modules;
#  5. /var/lib/dkms, /usr/src, /lib/modules/*/updates and each kernel's
#     modules.dep are as they were before.
#
#   deb-check.sh [WORKDIR]   (default build/deb-check)
set -eu
PATH=$PATH:/usr/sbin:/sbin
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
w=${1:-build/deb-check}
case $w in /*) ;; *) w=$top/$w ;; esac
ver=$(cat VERSION)
arch=$(dpkg --print-architecture)
start=$(date +%s)
fail() {
	echo "deb-check: $*" >&2
	exit 1
}
for c in dpkg-deb dkms lintian depmod modinfo openssl; do
	command -v "$c" >/dev/null || fail "$c is missing (make deps)"
done
dkms_bin=$(command -v dkms)
[ "$(id -u)" -eq 0 ] || fail "dkms builds need root (its trees are private here; the host is not changed)"

# The kernels the postinst builds for: every one whose headers are installed.
kernels=""
for d in /lib/modules/*/; do
	k=${d%/}
	k=${k##*/}
	[ -e "/lib/modules/$k/build/include" ] && kernels="$kernels $k"
done
[ -n "$kernels" ] || fail "no kernel headers installed (make deps)"

# What dkms could change on the host, to compare at the end.
host_state() {
	find /var/lib/dkms /usr/src -maxdepth 2 | LC_ALL=C sort
	find /lib/modules/*/updates 2>/dev/null | LC_ALL=C sort
	md5sum /lib/modules/*/modules.dep
}
host_before=$(host_state)

rm -rf "$w"
mkdir -p "$w/bin"

# ---- 1. the packages ----
DEBFULLNAME=${DEBFULLNAME:-$(git config user.name || echo "iwarp deb-check")}
DEBEMAIL=${DEBEMAIL:-$(git config user.email || echo "deb-check@iwarp.invalid")}
export DEBFULLNAME DEBEMAIL
sh scripts/mkdeb.sh deb "$w/v1" >/dev/null
tools=$w/v1/iwarp_${ver}_$arch.deb
dkmsdeb=$w/v1/iwarp-dkms_${ver}_all.deb
[ -f "$tools" ] || fail "no $tools"
[ -f "$dkmsdeb" ] || fail "no $dkmsdeb"

field() { dpkg-deb -f "$1" "$2"; }
want_field() {
	v=$(field "$1" "$2")
	[ "$v" = "$3" ] || fail "${1##*/}: $2 is '$v', want '$3'"
}
want_field "$tools" Package iwarp
want_field "$tools" Version "$ver"
want_field "$tools" Architecture "$arch"
want_field "$tools" Depends kmod
want_field "$tools" Recommends "iwarp-dkms (= $ver)"
want_field "$dkmsdeb" Package iwarp-dkms
want_field "$dkmsdeb" Version "$ver"
want_field "$dkmsdeb" Architecture all
want_field "$dkmsdeb" Depends "dkms (>= 3.0)"
want_field "$dkmsdeb" Recommends linux-headers-amd64
for p in "$tools" "$dkmsdeb"; do
	for f in Maintainer Section Priority Installed-Size Description; do
		[ -n "$(field "$p" "$f")" ] || fail "${p##*/}: no $f"
	done
	field "$p" Maintainer | grep -Eq '^[^<>]+ <[^<>@ ]+@[^<>@ ]+>$' ||
		fail "${p##*/}: Maintainer '$(field "$p" Maintainer)' is not 'Name <address>'"
done

# contents PKG: "mode owner path" of every entry, path without the leading dot.
contents() {
	dpkg-deb -c "$1" | awk '{ p = $6; sub(/^\./, "", p); print $1, $2, p }'
}
# Every entry root's, nothing writable by group or others, directories 755,
# files 644 but the programs and nothing else setuid.
check_modes() {
	contents "$1" | while read -r mode owner path; do
		[ "$owner" = root/root ] || fail "${1##*/}: $path owned by $owner"
		case $mode in
		d*) [ "$mode" = drwxr-xr-x ] || fail "${1##*/}: $path is $mode" ;;
		-*)
			case $path in
			/usr/bin/*) want=-rwxr-xr-x ;;
			*) want=-rw-r--r-- ;;
			esac
			[ "$mode" = "$want" ] || fail "${1##*/}: $path is $mode, want $want"
			;;
		*) fail "${1##*/}: $path is neither a file nor a directory ($mode)" ;;
		esac
	done
}
check_modes "$tools"
check_modes "$dkmsdeb"

# The tools package holds exactly this.
{
	printf '%s\n' /etc/iwarp/iwarp.conf /lib/systemd/system/iwarp.service \
		/usr/bin/iwarp-perf /usr/bin/iwarpctl \
		/usr/share/bash-completion/completions/iwarpctl \
		/usr/share/doc/iwarp/INSTALL.md /usr/share/doc/iwarp/changelog.gz \
		/usr/share/doc/iwarp/copyright /usr/share/lintian/overrides/iwarp
	for m in man/*.1 man/*.8; do
		[ -f "$m" ] && echo "/usr/share/man/man${m##*.}/${m##*/}.gz"
	done
} | LC_ALL=C sort >"$w/tools.want"
contents "$tools" | awk '$1 !~ /^d/ { print $3 }' | LC_ALL=C sort >"$w/tools.have"
diff -u "$w/tools.want" "$w/tools.have" >&2 || fail "iwarp: the files differ from the list above (- missing, + extra)"

# unpack PKG DIR: the control archive into DIR/DEBIAN, the files into DIR;
# md5sums lists every file with its sum, no more.
unpack() {
	dpkg-deb -x "$1" "$2"
	dpkg-deb -e "$1" "$2/DEBIAN"
	(cd "$2" && md5sum --quiet -c DEBIAN/md5sums) >&2 || fail "${1##*/}: md5sums do not match"
	(cd "$2" && find . -path ./DEBIAN -prune -o -type f -print | sed 's|^\./||' | LC_ALL=C sort) >"$w/files"
	awk '{ print $2 }' "$2/DEBIAN/md5sums" | LC_ALL=C sort >"$w/sums"
	cmp -s "$w/files" "$w/sums" || fail "${1##*/}: md5sums does not list exactly the files"
}
t=$w/tools
unpack "$tools" "$t"
[ "$(cat "$t/DEBIAN/conffiles")" = /etc/iwarp/iwarp.conf ] || fail "iwarp: conffiles is not /etc/iwarp/iwarp.conf"
for s in postinst postrm; do
	[ -x "$t/DEBIAN/$s" ] || fail "iwarp: no executable $s"
done
[ "$("$t/usr/bin/iwarpctl" -V)" = "iwarpctl $ver" ] || fail "iwarp: iwarpctl -V says '$("$t/usr/bin/iwarpctl" -V)'"
"$t/usr/bin/iwarp-perf" -h >/dev/null 2>&1 || fail "iwarp: iwarp-perf does not run"
"$t/usr/bin/iwarpctl" -b "$t/etc/iwarp/iwarp.conf" || fail "iwarp: the example configuration does not run"
unit=$t/lib/systemd/system/iwarp.service
grep -qx "ExecStartPre=/sbin/modprobe iwarp" "$unit" || fail "iwarp: the unit does not load the module"
grep -qx "ExecStart=/usr/bin/iwarpctl -b /etc/iwarp/iwarp.conf" "$unit" || fail "iwarp: the unit does not run /usr/bin/iwarpctl"
grep -qx "Documentation=file:/usr/share/doc/iwarp/INSTALL.md" "$unit" || fail "iwarp: the unit's Documentation is not the packaged INSTALL.md"
grep -q 'complete .*iwarpctl' "$t/usr/share/bash-completion/completions/iwarpctl" || fail "iwarp: no bash completion"
grep -q 'github.com/spf13/cobra' "$t/usr/share/doc/iwarp/copyright" || fail "iwarp: copyright lacks the linked Go modules"

r=$w/root
unpack "$dkmsdeb" "$w/dkms-v1"
for s in postinst prerm; do
	[ -x "$w/dkms-v1/DEBIAN/$s" ] || fail "iwarp-dkms: no executable $s"
done
# The sources are the tree's module sources with the filled dkms.conf.
sh scripts/mkdeb.sh src "$w/src" >/dev/null
diff -r "$w/src" "$w/dkms-v1/usr/src/iwarp-$ver" >&2 || fail "iwarp-dkms: the sources differ from the tree's"
[ "$(find "$w/dkms-v1" -path "$w/dkms-v1/DEBIAN" -prune -o -type f -print | grep -cv "^$w/dkms-v1/usr/src/iwarp-$ver/")" -eq 2 ] ||
	fail "iwarp-dkms: files beside /usr/src/iwarp-$ver other than changelog.gz and copyright"
conf=$w/dkms-v1/usr/src/iwarp-$ver/dkms.conf
for l in "PACKAGE_NAME=\"iwarp\"" "PACKAGE_VERSION=\"$ver\"" 'AUTOINSTALL="yes"' \
	'BUILT_MODULE_NAME[0]="iwarp"' 'DEST_MODULE_LOCATION[0]="/updates/dkms"'; do
	grep -qxF "$l" "$conf" || fail "dkms.conf lacks $l"
done
# BUILD_EXCLUSIVE_KERNEL: 6.1 and later, nothing older.
# shellcheck disable=SC2016
bash -c '. "$1"; shift
	for k in "$@"; do
		case $k in !*) [[ ! ${k#!} =~ $BUILD_EXCLUSIVE_KERNEL ]] ;; *) [[ $k =~ $BUILD_EXCLUSIVE_KERNEL ]] ;; esac ||
			{ echo "deb-check: BUILD_EXCLUSIVE_KERNEL wrong for $k" >&2; exit 1; }
	done' sh "$conf" 6.1.0-56-amd64 6.12.117+deb12-amd64 6.19.0 7.0.1 10.1.0 \
	'!5.10.0-30-amd64' '!6.0.12' '!4.19.0-27-amd64' || exit 1

if [ -d man ]; then
	lintian --fail-on error,warning "$tools" "$dkmsdeb" 2>/dev/null >&2 || fail "lintian reports the above"
else
	lintian --fail-on error,warning --suppress-tags no-manual-page "$tools" "$dkmsdeb" 2>/dev/null >&2 ||
		fail "lintian reports the above"
fi
echo "deb-check: packages: fields, files, modes, md5sums, sources, tools and lintian clean ($(($(date +%s) - start)) s)"

# ---- 2. the dkms install, private trees ----
inst=$w/lib/modules
for k in $kernels; do
	mkdir -p "$inst/$k"
	# depmod on the private tree resolves iwarp's dependencies among the
	# kernel's own modules (read through the link).
	ln -s "/lib/modules/$k/kernel" "$inst/$k/kernel"
	for f in modules.order modules.builtin modules.builtin.modinfo; do
		[ -f "/lib/modules/$k/$f" ] && cp "/lib/modules/$k/$f" "$inst/$k/"
	done
done
# dkms reads the signing key's paths from the environment when
# /etc/dkms/framework.conf sets none, and generates the pair there.
cat >"$w/bin/dkms" <<EOF
#!/bin/sh
export mok_signing_key='$w/mok.key' mok_certificate='$w/mok.pub'
exec '$dkms_bin' "\$@" --dkmstree '$w/dkms' --sourcetree '$r/usr/src' --installtree '$inst' --no-depmod
EOF
chmod 0755 "$w/bin/dkms"
mkdir -p "$w/dkms" "$r"
PATH="$w/bin:$PATH"
export PATH

# maint VERSIONDIR SCRIPT ARGS...: a maintainer script of the unpacked
# iwarp-dkms, its output in the log.
maint() {
	d=$1 s=$2
	shift 2
	echo "== $s $*" >>"$w/maint.log"
	sh "$d/DEBIAN/$s" "$@" >>"$w/maint.log" 2>&1 || {
		tail -n 40 "$w/maint.log" >&2
		fail "$s $* failed (log: $w/maint.log)"
	}
}

# check_installed VER: dkms has VER installed for every kernel and no other
# version; each kernel has one iwarp.ko and one iwarp_rdma.ko, of VER, for
# that kernel, signed with the key in $w, and in modules.dep with their
# dependencies: iwarp needs libcrc32c (and not ib_core: the genetlink path
# loads without the RDMA core), iwarp_rdma needs iwarp and ib_core and has
# the alias by which `rdma link add ... type iwarp` loads it.
check_installed() {
	v=$1
	st=$(dkms status -m iwarp 2>/dev/null)
	n=0
	for k in $kernels; do
		printf '%s\n' "$st" | grep -qx "iwarp/$v, $k, x86_64: installed" ||
			fail "dkms status has no 'iwarp/$v, $k, x86_64: installed':
$st"
		n=$((n + 1))
		depmod -b "$w" "$k"
		for m in iwarp iwarp_rdma; do
			mods=$(find "$inst/$k" -path "$inst/$k/kernel" -prune -o -name "$m.ko*" -print)
			[ "$(printf '%s\n' "$mods" | grep -c .)" -eq 1 ] || fail "$k: not one $m module: $mods"
			case $mods in "$inst/$k/updates/dkms/$m.ko"*) ;; *) fail "$k: $mods not under updates/dkms" ;; esac
			mv=$(modinfo -F vermagic "$mods")
			[ "${mv%% *}" = "$k" ] || fail "$k: $mods vermagic '$mv'"
			[ "$(modinfo -F version "$mods")" = "$v" ] || fail "$k: $mods version '$(modinfo -F version "$mods")', want $v"
			[ "$(modinfo -F signer "$mods")" = "DKMS module signing key" ] ||
				fail "$k: $mods signer '$(modinfo -F signer "$mods")', want dkms's key"
			serial=$(openssl x509 -inform DER -in "$w/mok.pub" -noout -serial | sed 's/^serial=//')
			sk=$(modinfo -F sig_key "$mods" | tr -d ':')
			[ "$sk" = "$serial" ] || fail "$k: $mods signed by key $sk, the certificate's serial is $serial"
			deps="lib/libcrc32c"
			if [ "$m" = iwarp_rdma ]; then
				deps="updates/dkms/iwarp drivers/infiniband/core/ib_core"
				grep -qx "alias rdma-link-iwarp iwarp_rdma" "$inst/$k/modules.alias" ||
					fail "$k: modules.alias has no rdma-link-iwarp for iwarp_rdma"
			elif grep -Eq "^${mods#"$inst/$k/"}: .*ib_core\.ko" "$inst/$k/modules.dep"; then
				fail "$k: $mods needs ib_core"
			fi
			for dep in $deps; do
				grep -Eq "^${mods#"$inst/$k/"}: .*(kernel/)?$dep\.ko" "$inst/$k/modules.dep" ||
					fail "$k: modules.dep: $m lacks $dep: $(grep "$m" "$inst/$k/modules.dep" || echo no $m entry)"
			done
			echo "deb-check: $k: ${mods#"$inst/$k/"} $v, vermagic $k, needs $deps, signed by dkms's key"
		done
	done
	[ "$(printf '%s\n' "$st" | grep -c .)" -eq "$n" ] || fail "dkms status lists more than iwarp/$v on$kernels:
$st"
}

dpkg-deb -x "$dkmsdeb" "$r"
maint "$w/dkms-v1" postinst configure
check_installed "$ver"
running=$(uname -r)
if [ -e "/lib/modules/$running/build/include" ]; then
	! grep -q "no headers for the running kernel" "$w/maint.log" || fail "postinst: headers of $running reported missing"
else
	grep -q "no headers for the running kernel $running: apt-get install linux-headers-$running" "$w/maint.log" ||
		fail "postinst: did not name the missing headers of the running kernel $running"
fi
# A second configure (dpkg-reconfigure) rebuilds nothing and changes nothing.
sums=$(find "$inst" -path '*/kernel' -prune -o -name 'iwarp*.ko*' -print | LC_ALL=C sort | xargs md5sum)
maint "$w/dkms-v1" postinst configure
check_installed "$ver" >/dev/null
[ "$sums" = "$(find "$inst" -path '*/kernel' -prune -o -name 'iwarp*.ko*' -print | LC_ALL=C sort | xargs md5sum)" ] ||
	fail "a second configure changed the modules"
echo "deb-check: dkms: iwarp $ver built and installed for$kernels ($(($(date +%s) - start)) s)"

# The sources and the module dkms built for each kernel, as dkms's own
# tarballs: a host loads them with `dkms ldtarball` before it installs the
# packages, and the postinst then installs these modules without
# compiling (docs/INSTALL.md, "Prebuilt modules"; TestTwoHosts installs
# so). One per kernel: dkms 3.0.10's mktarball and ldtarball handle the
# first kernel of several only (a readonly local in their loops).
for k in $kernels; do
	t=$w/iwarp-dkms-prebuilt_${ver}_$k.tar.gz
	dkms mktarball -m iwarp -v "$ver" -k "$k" --archive "$t" >>"$w/maint.log" 2>&1 ||
		fail "dkms mktarball -k $k failed (log: $w/maint.log)"
	for m in iwarp iwarp_rdma; do
		tar -tzf "$t" | grep -Fq "dkms_main_tree/$k/x86_64/module/$m.ko" || fail "$t has no $m module for $k"
	done
	tar -tzf "$t" | grep -Fq "dkms_source_tree/dkms.conf" || fail "$t has no sources"
	echo "deb-check: ${t#"$w/"}: the sources and the module for $k"
done

# ---- 3. the upgrade ----
next=$(echo "$ver" | awk -F. -v OFS=. '{ $NF = $NF + 1; print }')
n=$w/next
mkdir -p "$n"
git ls-files -co --exclude-standard | grep -v '^bin/' | tar -cf - -T - | tar -xf - -C "$n"
printf '%s\n' "$next" >"$n/VERSION"
sed -i "s/^#define IWARP_VERSION\t\"$ver\"$/#define IWARP_VERSION\t\"$next\"/" "$n/kmod/version.h"
sed -i "s/^const Version = \"$ver\"$/const Version = \"$next\"/" "$n/internal/version/version.go"
for f in kmod/version.h internal/version/version.go; do
	grep -q "\"$next\"" "$n/$f" || fail "could not bump the version in the copy's $f"
done
(cd "$n" && CGO_ENABLED=0 "${GO:-go}" build -trimpath -o bin/ ./cmd/iwarpctl ./cmd/iwarp-perf)
sh "$n/scripts/mkdeb.sh" deb "$w/v2" >/dev/null
dkmsdeb2=$w/v2/iwarp-dkms_${next}_all.deb
want_field "$dkmsdeb2" Version "$next"
unpack "$dkmsdeb2" "$w/dkms-v2"
# dpkg's order: old prerm upgrade, the new files replace the old ones,
# new postinst configure.
maint "$w/dkms-v1" prerm upgrade "$next"
rm -rf "$r/usr/src/iwarp-$ver" "$r/usr/share/doc/iwarp-dkms"
dpkg-deb -x "$dkmsdeb2" "$r"
maint "$w/dkms-v2" postinst configure "$ver"
check_installed "$next"
[ ! -e "$w/dkms/iwarp/$ver" ] || fail "the dkms tree still has iwarp/$ver"
# A kernel installed later: the hook its package runs
# (/etc/kernel/postinst.d/dkms, dkms autoinstall) installs iwarp for it
# (AUTOINSTALL). Uninstalled first, not unbuilt: the hook installs the
# build it finds.
k1=${kernels# }
k1=${k1%% *}
dkms uninstall -m iwarp -v "$next" -k "$k1" >>"$w/maint.log" 2>&1
[ -z "$(find "$inst/$k1" -path "$inst/$k1/kernel" -prune -o -name 'iwarp*.ko*' -print)" ] || fail "$k1: dkms uninstall left iwarp"
[ -x /etc/kernel/postinst.d/dkms ] || fail "no /etc/kernel/postinst.d/dkms (dkms's kernel hook)"
/etc/kernel/postinst.d/dkms "$k1" >>"$w/maint.log" 2>&1 || fail "/etc/kernel/postinst.d/dkms $k1 failed (log: $w/maint.log)"
check_installed "$next" >/dev/null
echo "deb-check: upgrade: iwarp $next replaced $ver for$kernels ($(($(date +%s) - start)) s)"

# ---- 4. removal ----
maint "$w/dkms-v2" prerm remove
[ -z "$(dkms status -m iwarp)" ] || fail "dkms status after the removal: $(dkms status -m iwarp)"
left=$(find "$inst" -path '*/kernel' -prune -o -name 'iwarp*.ko*' -print)
[ -z "$left" ] || fail "modules left after the removal: $left"
[ ! -e "$w/dkms/iwarp/$next" ] || fail "the dkms tree still has iwarp/$next"

# ---- 5. the host ----
host_after=$(host_state)
if [ "$host_before" != "$host_after" ]; then
	printf '%s\n' "$host_before" >"$w/host.before"
	printf '%s\n' "$host_after" >"$w/host.after"
	diff -u "$w/host.before" "$w/host.after" >&2 || true
	fail "the host's dkms tree, /usr/src or /lib/modules changed (above)"
fi
echo "deb-check: removal leaves nothing; the host unchanged; $(($(date +%s) - start)) s"
