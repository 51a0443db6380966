# SPDX-License-Identifier: BSD-3-Clause
# The NVMe over Fabrics rows of `make bench`, sourced by tests/vm/bench.sh
# (which defines block, rounds, quick, siw_default and verbs) and run in
# the same boot: the kernel's NVMe host (nvme-rdma, nvme-tcp) and target
# (nvmet-rdma, nvmet-tcp) on one memory-backed null_blk namespace, fio
# on the connected namespace, over
#   ours:     an iwarp RDMA device (iwarp_rdma.ko's kernel verbs)
#   siw:      a siw device (Debian's siw, the default build)
#   nvme-tcp: NVMe/TCP (no RDMA device; header and data digests off)
# on one topology, nvmf: a dummy netdev in the initial namespace (the
# kernel's NVMe host and target make their connections there), both ends
# on its address, the loopback path. One RDMA device at a time is on the
# netdev (rdma_cm would take either of two). MPA CRC is off on both RDMA
# devices (neither asks for it), as NVMe/TCP's digests are.
# Rows: IOPS of 4 KiB random reads and writes (iodepth 32), bandwidth of
# 128 KiB sequential reads and writes (iodepth 8), one fio job on 2 I/O
# queues each; every round runs ours, siw, nvme-tcp in turn.

nvmf_dev=nvmfdum0
nvmf_addr=10.32.0.1
nvmf_nqn=nqn.2014-08.org.iwarp:bench
nvmf_cfg=/sys/kernel/config
nvmf_disk=iwbench0
nvmf_size_mib=256
nvmf_runtime=10
[ "$quick" = 1 ] && nvmf_runtime=3

# nvmf_wait DESC CMD...: until CMD succeeds, 15 s at most.
nvmf_wait() {
	d=$1
	shift
	i=0
	while ! "$@" 2>/dev/null; do
		i=$((i + 1))
		if [ $i -ge 150 ]; then
			echo "bench: nvmf: $d did not happen" >&2
			return 1
		fi
		sleep 0.1
	done
}

# nvmf_up: the modules, configfs, the netdev, the null_blk disk and the
# subsystem with its namespace; the ports are made per transport.
nvmf_up() {
	modprobe null_blk nr_devices=0 || return 1
	for m in nvmet nvmet_rdma nvmet_tcp nvme_rdma nvme_tcp; do
		modprobe $m || return 1
	done
	if ! grep -q " $nvmf_cfg configfs " /proc/mounts; then
		mount -t configfs none $nvmf_cfg || return 1
	fi
	ip link add $nvmf_dev type dummy || return 1
	ip addr add $nvmf_addr/24 dev $nvmf_dev
	ip link set $nvmf_dev up
	b=$nvmf_cfg/nullb/$nvmf_disk
	mkdir $b || return 1
	echo 1 >$b/memory_backed
	echo $nvmf_size_mib >$b/size
	echo 1 >$b/power || return 1
	nvmf_wait "/dev/$nvmf_disk" test -b /dev/$nvmf_disk || return 1
	s=$nvmf_cfg/nvmet/subsystems/$nvmf_nqn
	mkdir $s || return 1
	echo 1 >$s/attr_allow_any_host
	mkdir $s/namespaces/1
	echo /dev/$nvmf_disk >$s/namespaces/1/device_path
	echo 1 >$s/namespaces/1/enable || return 1
	# Every block written once: a read of a memory-backed null_blk
	# block never written returns zeros without touching memory.
	dd if=/dev/zero of=/dev/$nvmf_disk bs=1M count=$nvmf_size_mib oflag=direct status=none
}

nvmf_down() {
	s=$nvmf_cfg/nvmet/subsystems/$nvmf_nqn
	rmdir $s/namespaces/1 $s 2>/dev/null
	b=$nvmf_cfg/nullb/$nvmf_disk
	if [ -d $b ]; then
		echo 0 >$b/power
		rmdir $b
	fi
	ip link del $nvmf_dev 2>/dev/null
	for m in nvme_tcp nvme_rdma nvmet_tcp nvmet_rdma nvmet nvme_fabrics null_blk; do
		rmmod $m 2>/dev/null
	done
}

# nvmf_port_up ID TRTYPE SVCID: an nvmet port on the address, linked to
# the subsystem (which enables it: nvmet listens before the link
# returns).
nvmf_port_up() {
	p=$nvmf_cfg/nvmet/ports/$1
	mkdir $p || return 1
	echo "$2" >$p/addr_trtype
	echo ipv4 >$p/addr_adrfam
	echo $nvmf_addr >$p/addr_traddr
	echo "$3" >$p/addr_trsvcid
	ln -s $nvmf_cfg/nvmet/subsystems/$nvmf_nqn $p/subsystems/$nvmf_nqn
}

nvmf_port_down() {
	p=$nvmf_cfg/nvmet/ports/$1
	rm -f $p/subsystems/$nvmf_nqn
	rmdir $p 2>/dev/null
}

# nvmf_ns: the block device of the connected namespace (the multipath
# head under the subsystem, or the controller's own), on stdout.
nvmf_ns() {
	for s in /sys/class/nvme-subsystem/*; do
		[ "$(cat "$s/subsysnqn" 2>/dev/null)" = $nvmf_nqn ] || continue
		for d in "$s" "$s"/nvme[0-9]*; do
			for n in "$d"/nvme[0-9]*n1; do
				[ -e "$n" ] && [ -b "/dev/${n##*/}" ] && echo "/dev/${n##*/}" && return 0
			done
		done
	done
	return 1
}

# nvmf_connect TRTYPE SVCID: the host's controller, its namespace in
# nvmf_path.
nvmf_connect() {
	nvme connect -t "$1" -a $nvmf_addr -s "$2" -n $nvmf_nqn -i 2 >/dev/null || return 1
	nvmf_wait "the namespace" nvmf_ns || return 1
	nvmf_path=$(nvmf_ns)
}

# nvmf_fio IMPL: the four rows on the connected namespace.
nvmf_fio() {
	for job in "randread 4096 32 iops" "randwrite 4096 32 iops" \
		"read 131072 8 bw" "write 131072 8 bw"; do
		# shellcheck disable=SC2086
		set -- $job
		block "topo=nvmf impl=$impl op=$1 size=$2 crc=off metric=$4" \
			fio --name="nvmf-$1" --filename="$nvmf_path" --ioengine=libaio \
			--direct=1 --rw="$1" --bs="$2" --iodepth="$3" --numjobs=1 \
			--time_based --runtime="$nvmf_runtime" --ramp_time=1 \
			--output-format=json
	done
}

# nvmf_impl IMPL: one round of IMPL's rows: its device and port, the
# controller, fio, and all of it undone.
nvmf_impl() {
	impl=$1
	trtype=rdma svc=4420 rdev=""
	case $impl in
	ours)
		rdev=iwnvmf0
		rdma link add $rdev type iwarp netdev $nvmf_dev || return 1
		;;
	siw)
		rdev=siwnvmf0
		rdma link add $rdev type siw netdev $nvmf_dev || return 1
		;;
	nvme-tcp) trtype=tcp svc=4421 ;;
	esac
	if nvmf_port_up 1 $trtype $svc && nvmf_connect $trtype $svc; then
		nvmf_fio
	else
		echo "@@note nvmf: $impl: no controller, its rows are missing this round"
	fi
	nvme disconnect -n $nvmf_nqn >/dev/null 2>&1
	nvmf_port_down 1
	[ -n "$rdev" ] && rdma link delete $rdev
}

# run_nvmf: the rows, round by round; siw's only with siw.ko loaded and
# ours only with iwarp_rdma.ko.
run_nvmf() {
	if ! nvmf_up; then
		echo "@@note nvmf: the NVMe over Fabrics setup failed: no nvmf rows"
		nvmf_down
		return
	fi
	siw=0
	if [ -n "$siw_default" ]; then
		rmmod siw 2>/dev/null
		insmod "$siw_default" && siw=1
	fi
	[ $siw = 1 ] || echo "@@note nvmf: siw unavailable: no siw figures"
	echo "@@info nvmf: $(nvme version) $(fio --version)"
	r=0
	while [ $r -lt "$rounds" ]; do
		[ "$verbs" = 1 ] && nvmf_impl ours
		[ $siw = 1 ] && nvmf_impl siw
		nvmf_impl nvme-tcp
		r=$((r + 1))
	done
	[ $siw = 1 ] && rmmod siw
	nvmf_down
}
