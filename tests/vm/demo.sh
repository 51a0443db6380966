#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# `make demo`: runs inside the guest (see tests/vm). Loads iwarp.ko, builds two
# network namespaces joined by a veth pair, creates a link in each and shows
# them with iwarpctl, as text and as JSON, then follows events while a netdev
# goes away.
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
