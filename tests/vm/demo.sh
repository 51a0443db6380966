#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# `make demo`: runs inside the guest (see tests/vm). Loads iwarp.ko, builds two
# network namespaces joined by a veth pair, creates a link in each and shows
# them with iwarpctl, as text and as JSON; moves data with RDMA Write, Read
# and Send (iwarp-perf, every octet verified) and shows the connections and
# counters; then follows events while a netdev goes away.
set -eu
repo=${IWARP_REPO:?}
ctl="$repo/bin/iwarpctl"
say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
step() { say "$*"; "$@"; }

for dep in $(modinfo -F depends "$repo/build/iwarp.ko" | tr ',' ' '); do
	modprobe "$dep"
done
step insmod "$repo/build/iwarp.ko"
step "$ctl" version

say "ip netns add left; ip netns add right; veth left:va <-> right:vb"
ip netns add left
ip netns add right
ip link add va netns left type veth peer name vb netns right
ip -n left addr add 10.11.0.1/24 dev va
ip -n right addr add 10.11.0.2/24 dev vb
ip -n left link set va up
ip -n right link set vb up

step ip netns exec left "$ctl" link add iw0 dev va crc on
step ip netns exec right "$ctl" link add iw0 dev vb crc on p2p on
step ip netns exec left "$ctl" link show
step ip netns exec right "$ctl" link
step ip netns exec right "$ctl" -j -p link show iw0
say "the default namespace sees neither:"
"$ctl" link show
echo "(nothing)"

perf="$repo/bin/iwarp-perf"
# serve SERVER-ARGS -- CLIENT-ARGS: one iwarp-perf run, server in right,
# client in left; both print their line.
serve() {
	sargs=""
	while [ "$1" != "--" ]; do sargs="$sargs $1"; shift; done
	shift
	# shellcheck disable=SC2086
	ip netns exec right "$perf" $sargs &
	srv=$!
	sleep 0.5
	say "ip netns exec left iwarp-perf $* 10.11.0.2"
	ip netns exec left "$perf" "$@" 10.11.0.2
	wait "$srv"
}

say "RDMA between the namespaces: iwarp-perf server in right, client in left"
echo "(--verify checks every octet on both sides; CRC32c is on: left asks for it)"
serve -- -t write -s 64K -n 500 --verify
serve -- -t read -s 64K -n 500 --verify
serve -- -t send -s 64K -n 500 --verify
serve -- -t write -s 1M -n 16 -q 4 --verify
serve -- -t write --lat -s 8 -n 500
serve -- -t send --lat -s 8 -n 500

say "the connections while a run is going (left asks for markers too)"
ip netns exec right "$perf" &
srv=$!
sleep 0.5
ip netns exec left "$perf" -t write -s 64K -n 4000 --markers on 10.11.0.2 >/dev/null &
cli=$!
sleep 1.5
step ip netns exec left "$ctl" cm show
step ip netns exec left "$ctl" qp show
wait "$cli" "$srv"
step ip netns exec left "$ctl" stats

say "ip netns exec left iwarpctl monitor &   # then the netdev goes away"
ip netns exec left "$ctl" monitor &
mon=$!
sleep 1
ip -n left link set va down
sleep 0.3
ip -n left link del va
sleep 1
kill -INT "$mon"
wait "$mon" || true
step ip netns exec left "$ctl" link show
step ip netns exec right "$ctl" link show

step rmmod iwarp
echo
echo "demo: done"
