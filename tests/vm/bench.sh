#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# `make bench`: runs inside one guest (see tests/vm/cmd/bench). Measures
# iperf3 (one TCP stream, and one SCTP association with --sctp), sockperf
# (TCP ping-pong), sctpping (SCTP ping-pong), siw with perftest (-R),
# iwarp with iwarp-perf, and iwarp with perftest (-R) through libibverbs
# (iwarp_rdma.ko's devices, the same binaries and arguments as siw's) on
# two topologies in this one boot:
#   veth:     namespaces bl and br joined by a veth pair (MTU 1500)
#   loopback: one namespace bo with a dummy device (the loopback path)
# and, on a third topology, nvmf, NVMe over Fabrics with fio over iwarp,
# siw and NVMe/TCP (tests/vm/bench_nvmf.sh).
# Every measurement is one block on stdout, parsed by the host:
#   @@run topo=T impl=tcp|sctp|ours|siw|verbs|nvme-tcp op=tcp|sctp|write|read|send|atomic|randread|randwrite size=N crc=on|off metric=bw|lat|rate|iops
#   ...the tool's own output...
#   @@end rc=N
# Environment: IWARP_REPO; IWARP_SIW_DEFAULT and IWARP_SIW_CRC (siw.ko as
# shipped, and built to require CRC); BENCH_QUICK=1 for short runs;
# BENCH_TOPOS, the topologies to run (default "veth loopback nvmf").
set -u
repo=${IWARP_REPO:?}
ctl="$repo/bin/iwarpctl"
perf="$repo/bin/iwarp-perf"
sctpping="$repo/bin/sctpping"
siw_default=${IWARP_SIW_DEFAULT:-}
siw_crc=${IWARP_SIW_CRC:-}
quick=${BENCH_QUICK:-0}
topos=${BENCH_TOPOS:-veth loopback nvmf}

# Octets each bandwidth run moves, latency iterations, and rounds: every
# iwarp and siw row is measured that many times, ours and siw's in turn,
# and the host takes the median of each (timings under TCG drift within a
# boot; alternating keeps both on the same stretch of it).
if [ "$quick" = 1 ]; then
	bw_bytes=$((16 << 20)); lat_iters=200; tcp_secs=2; rounds=1
else
	bw_bytes=$((32 << 20)); lat_iters=1000; tcp_secs=4; rounds=3
fi
bw_sizes="4096 65536 1048576"
lat_sizes="8 4096"
# An atomic's operand (RFC 7306 FetchAdd): its row's TCP anchor is the
# sockperf run of lat_sizes at this size.
atomic_size=8
# FetchAdds per rate run (a window of them in flight, as Reads).
atomic_iters=20000
[ "$quick" = 1 ] && atomic_iters=4000

iters_for() { n=$((bw_bytes / $1)); [ "$n" -lt 16 ] && n=16; echo "$n"; }

load_deps() {
	for m in $(modinfo -F depends "$1" | tr ',' ' '); do
		modprobe "$m" || echo "bench: modprobe $m failed" >&2
	done
}

load_deps "$repo/build/iwarp.ko"
insmod "$repo/build/iwarp.ko" || exit 1
if [ -n "$siw_default" ]; then
	load_deps "$siw_default"
	modprobe rdma_ucm
fi
# The verbs rows: iwarp_rdma.ko (RDMA devices on iwarp links) and the
# RDMA core's user-space modules.
verbs=0
load_deps "$repo/build/iwarp_rdma.ko"
modprobe ib_uverbs && modprobe rdma_ucm && insmod "$repo/build/iwarp_rdma.ko" && verbs=1

# topo_up T: sets srv_ns, cli_ns, addr and the devices of topology T.
topo_up() {
	case $1 in
	veth)
		ip netns add bl
		ip netns add br
		# Distinct ifindexes: siw binds the listener of a wildcard
		# rdma_listen to its netdev's ifindex in the listening
		# namespace; with both veth ends at the same index (each
		# namespace counts its own) the two siw devices' listeners
		# collide and perftest's server fails in rdma_listen.
		ip link add va index 201 netns bl type veth peer name vb index 202 netns br
		ip -n bl addr add 10.9.0.1/24 dev va
		ip -n br addr add 10.9.0.2/24 dev vb
		for ns in bl br; do ip -n $ns link set lo up; done
		ip -n bl link set va up
		ip -n br link set vb up
		ip netns exec bl "$ctl" link add iwa dev va
		ip netns exec br "$ctl" link add iwb dev vb
		srv_ns=br srv_dev=vb cli_ns=bl addr=10.9.0.2
		siw_devs="bl:va br:vb"
		iw_links="bl:iwa:va br:iwb:vb"
		;;
	loopback)
		ip netns add bo
		ip -n bo link set lo up
		ip -n bo link add d0 type dummy
		ip -n bo addr add 10.9.1.1/24 dev d0
		ip -n bo link set d0 up
		ip netns exec bo "$ctl" link add iwd dev d0
		srv_ns=bo srv_dev=d0 cli_ns=bo addr=10.9.1.1
		siw_devs="bo:d0"
		iw_links="bo:iwd:d0"
		;;
	esac
	sleep 1
}

topo_down() {
	case $1 in
	veth) ip netns del bl; ip netns del br ;;
	loopback) ip netns del bo ;;
	esac
	sleep 1
}

# siw_up KO: loads siw from KO and adds a siw device on each netdev.
siw_up() {
	rmmod siw 2>/dev/null
	insmod "$1" || return 1
	siw_devs_add
}

siw_devs_add() {
	i=0
	for nd in $siw_devs; do
		ip netns exec "${nd%%:*}" rdma link add "siw$i" type siw netdev "${nd#*:}" || return 1
		i=$((i + 1))
	done
}

siw_devs_del() {
	i=0
	for nd in $siw_devs; do
		rdma link delete "siw$i" 2>/dev/null
		i=$((i + 1))
	done
}

siw_down() {
	siw_devs_del
	rmmod siw 2>/dev/null
}

# verbs_up CRC: the topology's iwarp links, made by iwarpctl for
# iwarp-perf, become RDMA devices of the same names (rdma link add: an
# iwarp link that is also an RDMA device; a netdev has one link), with
# MPA CRC asked on both ends for CRC on. No siw device may be on the
# netdevs meanwhile: rdma_cm would pick either device of a netdev.
verbs_up() {
	for l in $iw_links; do
		ns=${l%%:*} nd=${l##*:} name=${l#*:}
		name=${name%%:*}
		ip netns exec "$ns" "$ctl" link del "$name" || return 1
		ip netns exec "$ns" rdma link add "$name" type iwarp netdev "$nd" || return 1
		if [ "$1" = on ]; then
			ip netns exec "$ns" "$ctl" link set "$name" crc on || return 1
		fi
	done
}

# verbs_down: the iwarp links as iwarpctl made them, back.
verbs_down() {
	for l in $iw_links; do
		ns=${l%%:*} nd=${l##*:} name=${l#*:}
		name=${name%%:*}
		rdma link delete "$name" 2>/dev/null
		ip netns exec "$ns" "$ctl" link add "$name" dev "$nd" || return 1
	done
}

# block HEADER CMD...: runs CMD as one measurement block.
block() {
	echo "@@run $1"
	shift
	"$@" 2>&1
	echo "@@end rc=$?"
}

# wait_port PORT [PROTO]: until something listens on PORT in srv_ns (a
# user space server, or iwarp's and siw's kernel listeners) that takes
# connections to srv_dev, 20 s at most. PROTO is ss's protocol flag: t
# (TCP, the default) or S (SCTP). siw answers a wildcard rdma_listen
# with a listener per siw device, each bound to its netdev's ifindex, all
# in the server's namespace: on veth one of them is bound to the other
# namespace's index and takes nothing, so seeing it proves nothing about
# the listener the client needs.
wait_port() {
	i=0
	while [ $i -lt 200 ]; do
		ip netns exec "$srv_ns" ss -Hl"${2:-t}"n "sport = :$1" | awk -v dev="$srv_dev" '
			{ a = $4; sub(/:[0-9]+$/, "", a); if (a !~ /%/ || a ~ ("%" dev "$")) ok = 1 }
			END { exit !ok }' && return 0
		sleep 0.1
		i=$((i + 1))
	done
	echo "bench: nothing listens on port $1" >&2
	return 1
}

# wait_listen PORT: wait_port for a TCP port, or for sctp:PORT an SCTP
# one.
wait_listen() {
	case $1 in
	sctp:*) wait_port "${1#sctp:}" S ;;
	*) wait_port "$1" ;;
	esac
}

# pair PORT SERVER-CMD -- CLIENT-CMD: server in srv_ns, client in cli_ns
# once the server listens on PORT (sctp:N for an SCTP port).
pair() {
	port=$1
	shift
	s=""
	while [ "$1" != "--" ]; do s="$s $1"; shift; done
	shift
	# shellcheck disable=SC2086
	ip netns exec "$srv_ns" timeout 150 $s >/tmp/bench-server.txt 2>&1 &
	spid=$!
	wait_listen "$port"
	ip netns exec "$cli_ns" timeout 120 "$@"
	rc=$?
	wait "$spid"
	src=$?
	echo "@@server"
	cat /tmp/bench-server.txt
	[ $rc -eq 0 ] && rc=$src
	return $rc
}

# serve PORT SERVER-CMD -- CLIENT-CMD: like pair, for a server that runs
# until it is stopped (sockperf's), stopped once the client is done.
serve() {
	port=$1
	shift
	s=""
	while [ "$1" != "--" ]; do s="$s $1"; shift; done
	shift
	# shellcheck disable=SC2086
	ip netns exec "$srv_ns" $s >/tmp/bench-server.txt 2>&1 &
	spid=$!
	wait_listen "$port"
	ip netns exec "$cli_ns" timeout 120 "$@"
	rc=$?
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	echo "@@server"
	cat /tmp/bench-server.txt
	return $rc
}

run_tcp() {
	for s in $bw_sizes; do
		block "topo=$1 impl=tcp op=tcp size=$s crc=off metric=bw" \
			pair 5201 iperf3 -s -1 -- iperf3 -c "$addr" -t "$tcp_secs" -l "$s" -J
	done
	# TCP ping-pong, one message in flight: sockperf's median is half a
	# round trip, as perftest's and iwarp-perf's latencies are. Its
	# messages are 14 octets at least (its own header).
	for s in $lat_sizes; do
		m=$s
		[ "$m" -lt 14 ] && m=14
		block "topo=$1 impl=tcp op=tcp size=$s crc=off metric=lat" \
			serve 11111 sockperf sr --tcp -i "$addr" -p 11111 -- \
			sockperf pp --tcp --no-rdtsc -i "$addr" -p 11111 -m "$m" -t "$tcp_secs"
	done
}

# Raw SCTP, the ceiling of DDP over SCTP beside raw TCP's (docs/SCTP.md
# 6.4): iperf3 --sctp, one association, at the TCP rows' sizes, and
# sctpping, SCTP's sockperf ping-pong, at the latency sizes (8 octets
# exactly: sctpping has no header of its own). SCTP takes a message whole
# or fails with EMSGSIZE above the send buffer, by default
# net.core.wmem_default (208 KiB): iperf3 asks 4 MiB buffers (-w, as the
# module's sctp_sndbuf), which the core limits allow for these rows only.
run_sctp() {
	wmax=$(sysctl -n net.core.wmem_max)
	rmax=$(sysctl -n net.core.rmem_max)
	sysctl -qw net.core.wmem_max=$((8 << 20)) net.core.rmem_max=$((8 << 20))
	for s in $bw_sizes; do
		block "topo=$1 impl=sctp op=sctp size=$s crc=off metric=bw" \
			pair 5201 iperf3 -s -1 -- iperf3 --sctp -c "$addr" -t "$tcp_secs" -l "$s" -w 4M -J
	done
	sysctl -qw net.core.wmem_max="$wmax" net.core.rmem_max="$rmax"
	for s in $lat_sizes; do
		block "topo=$1 impl=sctp op=sctp size=$s crc=off metric=lat" \
			serve sctp:11112 "$sctpping" -s -B "$addr" -p 11112 -- \
			"$sctpping" -c "$addr" -p 11112 -m "$s" -t "$tcp_secs"
	done
}

ours_bw() { # topo op size crc
	block "topo=$1 impl=ours op=$2 size=$3 crc=$4 metric=bw" \
		pair 18515 "$perf" -j -- "$perf" -j -t "$2" -s "$3" -n "$(iters_for "$3")" --crc "$4" "$addr"
}

ours_rate() { # topo op size crc: operations per second (msg_rate)
	block "topo=$1 impl=ours op=$2 size=$3 crc=$4 metric=rate" \
		pair 18515 "$perf" -j -- "$perf" -j -t "$2" -s "$3" -n "$atomic_iters" --crc "$4" "$addr"
}

ours_lat() { # topo op size crc
	block "topo=$1 impl=ours op=$2 size=$3 crc=$4 metric=lat" \
		pair 18515 "$perf" -j -- "$perf" -j --lat -t "$2" -s "$3" -n "$lat_iters" --crc "$4" "$addr"
}

# Ours over SCTP (RFC 5043; docs/SCTP.md 6.4): the bandwidth and latency
# rows of Write, Read and Send without MPA (SCTP's own CRC32c), beside
# ours over TCP in the same rows (impl ours-sctp). The SCTP server binds
# the topology's address.
run_ours_sctp() {
	for op in write read send; do
		for sz in $bw_sizes; do
			block "topo=$1 impl=ours-sctp op=$op size=$sz crc=off metric=bw" \
				pair sctp:18515 "$perf" -j --transport sctp -B "$addr" -- \
				"$perf" -j --transport sctp -t $op -s "$sz" -n "$(iters_for "$sz")" "$addr"
		done
		for sz in $lat_sizes; do
			block "topo=$1 impl=ours-sctp op=$op size=$sz crc=off metric=lat" \
				pair sctp:18515 "$perf" -j --transport sctp -B "$addr" -- \
				"$perf" -j --transport sctp --lat -t $op -s "$sz" -n "$lat_iters" "$addr"
		done
	done
}

# siw_pair HEADER PAIR-ARGS...: pair for perftest on siw. Its client now
# and then has its connection refused although siw listens on the right
# device (about one veth run in forty; cause not found), and then crashes
# in librdmacm; such a run is repeated once, with a note, and never
# counted (no figure is taken from a failed run).
siw_pair() {
	h=$1
	shift
	pair "$@" >/tmp/bench-siw.txt 2>&1
	rc=$?
	if [ $rc -ne 0 ] && grep -q "Connection refused" /tmp/bench-siw.txt; then
		echo "@@note $h: perftest's connection was refused (exit $rc), run repeated"
		sleep 1
		pair "$@" >/tmp/bench-siw.txt 2>&1
		rc=$?
	fi
	cat /tmp/bench-siw.txt
	return $rc
}

siw_bw() { # topo op size crc
	n=$(iters_for "$3")
	h="topo=$1 impl=siw op=$2 size=$3 crc=$4 metric=bw"
	block "$h" siw_pair "$h" 18515 "ib_$2_bw" -R -F --report_gbits -s "$3" -n "$n" -- \
		"ib_$2_bw" -R -F --report_gbits -s "$3" -n "$n" "$addr"
}

siw_lat() { # topo op size crc
	h="topo=$1 impl=siw op=$2 size=$3 crc=$4 metric=lat"
	block "$h" siw_pair "$h" 18515 "ib_$2_lat" -R -F -s "$3" -n "$lat_iters" -- \
		"ib_$2_lat" -R -F -s "$3" -n "$lat_iters" "$addr"
}

# The verbs rows: perftest on iwarp's RDMA devices, as siw's rows run it.
verbs_bw() { # topo op size crc
	n=$(iters_for "$3")
	block "topo=$1 impl=verbs op=$2 size=$3 crc=$4 metric=bw" \
		pair 18515 "ib_$2_bw" -R -F --report_gbits -s "$3" -n "$n" -- \
		"ib_$2_bw" -R -F --report_gbits -s "$3" -n "$n" "$addr"
}

verbs_lat() { # topo op size crc
	block "topo=$1 impl=verbs op=$2 size=$3 crc=$4 metric=lat" \
		pair 18515 "ib_$2_lat" -R -F -s "$3" -n "$lat_iters" -- \
		"ib_$2_lat" -R -F -s "$3" -n "$lat_iters" "$addr"
}

# verbs_rows TOPO CRC SIW: one round of the verbs rows, siw's devices
# (SIW 1) set aside meanwhile. The round comes right after the same
# round's siw rows, so rounds alternate siw and verbs as ours and siw.
verbs_rows() {
	[ "$3" = 1 ] && siw_devs_del
	if verbs_up "$2"; then
		for op in write read send; do
			for sz in $bw_sizes; do
				verbs_bw "$1" $op "$sz" "$2"
			done
		done
		for op in write read send; do
			for sz in $lat_sizes; do
				verbs_lat "$1" $op "$sz" "$2"
			done
		done
	else
		echo "@@note verbs: the RDMA devices could not be made on $1"
	fi
	verbs_down
	[ "$3" = 1 ] && siw_devs_add
}

# run_rows TOPO CRC SIW: every row of one CRC setting, ours then siw's
# (when SIW is 1: its build for that setting is loaded), then the verbs
# rows, round by round.
# (sh has no locals: the loop variables are named apart from pair's.)
run_rows() {
	r=0
	while [ $r -lt "$rounds" ]; do
		for op in write read send; do
			for sz in $bw_sizes; do
				ours_bw "$1" $op "$sz" "$2"
				[ "$3" = 1 ] && siw_bw "$1" $op "$sz" "$2"
			done
		done
		# Write and Send: half a round trip; Read: the whole Read
		# (ib_read_lat's figure too).
		for op in write read send; do
			for sz in $lat_sizes; do
				ours_lat "$1" $op "$sz" "$2"
				[ "$3" = 1 ] && siw_lat "$1" $op "$sz" "$2"
			done
		done
		# FetchAdd, the whole round trip and the rate: ours alone, siw
		# implements no RFC 7306 operation.
		ours_lat "$1" atomic "$atomic_size" "$2"
		ours_rate "$1" atomic "$atomic_size" "$2"
		[ "$verbs" = 1 ] && verbs_rows "$1" "$2" "$3"
		r=$((r + 1))
	done
}

# topo_wanted T: T is among the topologies asked for.
topo_wanted() {
	case " $topos " in *" $1 "*) return 0 ;; esac
	return 1
}

. "$repo/tests/vm/bench_nvmf.sh"

for topo in veth loopback; do
	topo_wanted $topo || continue
	topo_up $topo
	echo "@@topo $topo"
	ip netns exec "$cli_ns" ip -o link | sed 's/^/@@info /'
	run_tcp $topo
	run_sctp $topo
	run_ours_sctp $topo
	if [ -n "$siw_default" ] && siw_up "$siw_default"; then
		run_rows $topo off 1
	else
		echo "@@note siw (default build) unavailable on $topo"
		run_rows $topo off 0
	fi
	siw_down
	if [ -n "$siw_crc" ] && siw_up "$siw_crc"; then
		run_rows $topo on 1
	else
		echo "@@note siw (CRC build) unavailable on $topo"
		run_rows $topo on 0
	fi
	siw_down
	topo_down $topo
done
topo_wanted nvmf && run_nvmf
[ "$verbs" = 1 ] || echo "@@note iwarp_rdma.ko could not be loaded: no verbs rows"
[ "$verbs" = 1 ] && rmmod iwarp_rdma
rmmod iwarp
echo "@@done"
