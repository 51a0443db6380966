// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The NFS over RDMA setup of TestRDMACoreNFS, in the initial namespace.
const (
	nfsNetdev  = "nfsdum0"
	nfsAddr    = "10.33.0.1"
	nfsAddr6   = "fd00:33::1"
	nfsClients = "10.33.0.0/24" // who may mount the export
	nfsPort    = "20049"        // NFS over RDMA's port (RFC 8267)
	// The export, a tmpfs of its own, and the client's mount point.
	nfsExport   = "/tmp/iwarp-nfs-export"
	nfsMountDir = "/tmp/iwarp-nfs-mnt"
	// nfs-utils' state (etab, rmtab) and nfsd's NFSv4 recovery directory:
	// the host's, read-only in the guest, under a tmpfs of the test's.
	nfsStateDir = "/var/lib/nfs"
	nfsdFS      = "/proc/fs/nfsd" // nfsd's control filesystem
	nfsThreads  = "4"
	// soft: a request that gets no answer fails with EIO after timeo
	// (60 s on a connected transport) times retrans+1, where a hard mount
	// would retry forever and hang the test in the kernel.
	nfsMountOpts = "vers=4.2,proto=rdma,port=" + nfsPort + ",soft"
	nfsCmdLimit  = time.Minute // mount, umount, exportfs, rpc.mountd's exit
	svcRDMAStats = "/proc/sys/sunrpc/svc_rdma"
)

// nfsModuleList are the modules the test asks for; none may be loaded
// before it. sunrpc comes with them.
var nfsModuleList = []string{"nfsd", "rpcrdma", "nfsv4", "nfs", "sunrpc"}

// TestRDMACoreNFS runs the kernel's NFS server (nfsd, with svcrdma's
// listener) and client (the nfs module over xprtrdma) over an RDMA
// device, one subtest per device kind in the same boot: our iwarp device,
// and siw for comparison. Both ends are kernel consumers of the verbs,
// through rpcrdma.ko: rdma_cm connections, the client's fast
// registrations (IB_WR_REG_MR, invalidated by its IB_WR_LOCAL_INV or the
// server's Send With Invalidate), the server's RDMA Reads (rdma_rw: into
// a registered sink on iWARP) and Writes, and an RPC backchannel on the
// same connection. The export is a tmpfs. In each:
//
//  1. mount: the client mounts the export; its transport is rdma
//     (/proc/self/mountstats) and one rdma_cm connection on the device
//     under test (the client's and the server's connected cm_ids, a QP
//     for each). Files of 100 octets (inline in the RPCs' Sends), 4 KiB
//     (with the header, past the 4 KiB inline threshold), 300 KiB + 7 and
//     8 MiB (WRITEs whose data the server pulls by RDMA Read, READs whose
//     data it pushes by RDMA Write) go both ways: written
//     through the mount and found on the tmpfs, written on the tmpfs and
//     read through the mount with O_DIRECT (no client cache). The
//     client's Read and Write chunk counters and the server's RDMA Read
//     and Write counters grow with them, and the transport never
//     reconnected. umount ends the connection on both sides.
//  2. remount: a second mount, a new connection, reads every file back
//     (O_DIRECT) and removes them; the tmpfs is empty after.
//  3. teardown: the server stops (its threads and the listener go, the
//     export and rpc.mountd with them), nothing is left on the RDMA
//     device, and every module the test loaded unloads.
//
// NFS version: 4.2 only. NFSv4 needs neither rpcbind nor statd and lockd
// (NFSv3's MOUNT and NLM register with rpcbind, and without it nfsd's
// start fails in lockd_up), and from 4.1 on the server's callbacks ride
// the client's connection (xprtrdma's backchannel) where NFSv4.0 would
// open a TCP connection back to the client. What NFSv4 needs instead:
// the grace period, which would hold every OPEN for nfsv4gracetime
// (90 s; 10 s at least), ended at once through v4_end_grace, which
// takes effect only with client tracking in place (nfsd4_force_end_grace):
// the legacy recovery directory, /var/lib/nfs/v4recovery in the tmpfs
// (nfsdcld is not running, and the kernel runs nfsdcltrack in the
// initramfs's root, where it is not); rpc.mountd for the export caches'
// upcalls (-N 2 -N 3: no MOUNT protocol, so no rpcbind); and the export
// as the pseudo-root (fsid=0; a tmpfs has no UUID, so fsid= is needed
// anyway): with another fsid, mountd builds the NFSv4 pseudo-root from
// "/", which on the guest's 9p root it cannot export, and the mount
// fails with ENOENT. The server is set up through /proc/fs/nfsd as
// rpc.nfsd would (versions, "rdma 20049" in portlist, threads) but
// without its TCP and UDP listeners: the only way in is RDMA.
//
// Topology: as TestRDMACoreNVMe's, one dummy netdev in the initial
// namespace with 10.33.0.1/24 and one RDMA device on it; nfsd listens on
// the wildcard address and the client connects to 10.33.0.1, both ends on
// that device (nfsd's listener and the NFS client's transport live in
// init_net).
func TestRDMACoreNFS(t *testing.T) {
	for _, kind := range []string{"iwarp", "siw"} {
		t.Run(kind, func(t *testing.T) { nfsOverRDMA(t, kind) })
	}
}

// nfsOverRDMA is one device kind's run of TestRDMACoreNFS.
func nfsOverRDMA(t *testing.T, kind string) {
	nfsTools(t)
	dev := nfsRDMADevice(t, kind)
	mods := loadNFSModules(t)
	srv := startNFSServer(t, dev)

	var files []nfsFile
	t.Run("mount", func(t *testing.T) {
		m := mountNFS(t, dev)
		cli, svc := m.xprt(t), svcRDMACounters(t)
		files = append(nfsWriteThrough(t, m), nfsWriteOnServer(t)...)
		for _, f := range files {
			f.readThrough(t, m, "read through the mount")
		}
		m.checkChunks(t, cli, svc)
		m.unmount(t, dev)
	})
	if t.Failed() {
		return
	}
	t.Run("remount", func(t *testing.T) {
		m := mountNFS(t, dev)
		for _, f := range files {
			f.readThrough(t, m, "read through a second mount")
			f.remove(t, m)
		}
		if left := dirNames(t, nfsExport); len(left) != 0 {
			t.Errorf("removed through the mount, still on the server: %v", left)
		}
		m.unmount(t, dev)
	})
	if t.Failed() {
		return
	}
	t.Run("teardown", func(t *testing.T) {
		srv.stop(t)
		checkDevEmpty(t, dev)
		mods.count(t)
		mods.unload(t)
	})
}

// nfsTools checks for nfs-utils' programs the test runs.
func nfsTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"rpc.mountd", "exportfs", "mount.nfs"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s: %v (make deps installs nfs-kernel-server and nfs-common)", tool, err)
		}
	}
	if st, err := os.Stat(nfsStateDir); err != nil || !st.IsDir() {
		t.Fatalf("%s: %v (nfs-common and nfs-kernel-server make it)", nfsStateDir, err)
	}
}

// nfsRDMADevice puts the device kind's RDMA device on a dummy netdev with
// nfsAddr in the initial namespace and returns its name (ulpRDMADevice).
func nfsRDMADevice(t *testing.T, kind string) string {
	t.Helper()
	return ulpRDMADevice(t, kind, nfsNetdev, nfsAddr, nfsAddr6, "iwrp_nfs")
}

// loadNFSModules loads the server (nfsd), the RPC-over-RDMA transport of
// both ends (rpcrdma) and the NFSv4 client (nfsv4, which brings nfs),
// with what they depend on (sunrpc, lockd, grace, auth_rpcgss...). The
// RDMA device's modules are loaded before, so they are not the test's to
// unload here. What the test loaded is counted at its end: the server and
// the mount load more on demand (rpcsec_gss_krb5, dns_resolver). They
// are unloaded when the test ends if the test has not.
func loadNFSModules(t *testing.T) *nvmeModules {
	t.Helper()
	var early []string
	for _, mod := range nfsModuleList {
		if moduleFileLoaded(mod) {
			early = append(early, mod)
		}
	}
	if len(early) != 0 {
		t.Fatalf("already loaded before the test: %v", early)
	}
	m := &nvmeModules{before: procModules(t)}
	t.Cleanup(func() { m.unload(t) })
	for _, mod := range []string{"nfsd", "rpcrdma", "nfsv4"} {
		run(t, "modprobe", mod)
	}
	for _, mod := range nfsModuleList {
		if _, err := os.Stat("/sys/module/" + mod); err != nil {
			t.Fatalf("%s: neither loaded nor built in after modprobe", mod)
		}
	}
	return m
}

// nfsServer is nfsd serving nfsExport over RDMA, with rpc.mountd. undo
// holds what stop does, last first.
type nfsServer struct {
	mountd *peerProc
	undo   []func(*testing.T)
}

// startNFSServer sets up and starts the server: the tmpfs over
// /var/lib/nfs with the recovery directory, the export's tmpfs, nfsd's
// filesystem, NFSv4.1 and 4.2 only, the export, rpc.mountd, the RDMA
// listener (which must be on dev), the threads, and the grace period's
// end. It stops the server when the test ends if the test has not.
func startNFSServer(t *testing.T, dev string) *nfsServer {
	t.Helper()
	s := &nfsServer{}
	t.Cleanup(func() { s.stop(t) })
	s.tmpfs(t, nfsStateDir, false)
	mkdir(t, filepath.Join(nfsStateDir, "v4recovery"))
	for _, f := range []string{"etab", "rmtab"} {
		if err := os.WriteFile(filepath.Join(nfsStateDir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s.tmpfs(t, nfsExport, true)
	s.mountNfsd(t)
	nfsdWrite(t, "versions", "-3 +4 -4.0 +4.1 +4.2")
	t.Logf("nfsd versions: %s", readAttr(t, nfsdFS, "versions"))
	s.export(t)
	s.startMountd(t)
	s.listen(t, dev)
	s.endGrace(t)
	return s
}

// nfsdWrite writes a line to a file of nfsd's control filesystem, as
// rpc.nfsd does (versions refuses a value without its newline).
func nfsdWrite(t *testing.T, name, v string) {
	t.Helper()
	writeAttr(t, nfsdFS, name, v+"\n")
}

// stop undoes the server's setup, last step first. A second call does
// nothing; after a step that failed the test, a second call resumes with
// the next.
func (s *nfsServer) stop(t *testing.T) {
	t.Helper()
	for len(s.undo) > 0 {
		f := s.undo[len(s.undo)-1]
		s.undo = s.undo[:len(s.undo)-1]
		f(t)
	}
}

// tmpfs mounts a tmpfs on dir, made first if mkdirFirst, and undoes both.
func (s *nfsServer) tmpfs(t *testing.T, dir string, mkdirFirst bool) {
	t.Helper()
	if mkdirFirst {
		mkdir(t, dir)
		s.undo = append(s.undo, func(t *testing.T) {
			if err := os.Remove(dir); err != nil {
				t.Errorf("rmdir %s: %v", dir, err)
			}
		})
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "mode=755"); err != nil {
		t.Fatalf("mount tmpfs on %s: %v", dir, err)
	}
	s.undo = append(s.undo, func(t *testing.T) { unmount(t, dir) })
}

// mountNfsd mounts nfsd's control filesystem (a mounted one holds the
// module).
func (s *nfsServer) mountNfsd(t *testing.T) {
	t.Helper()
	if fstypeAt(t, nfsdFS) != "" {
		t.Fatalf("%s is mounted before the test", nfsdFS)
	}
	if err := unix.Mount("nfsd", nfsdFS, "nfsd", 0, ""); err != nil {
		t.Fatalf("mount nfsd on %s: %v", nfsdFS, err)
	}
	s.undo = append(s.undo, func(t *testing.T) { unmount(t, nfsdFS) })
}

// export exports nfsExport to nfsClients as the NFSv4 pseudo-root
// (exportfs -i: not /etc/exports), and checks that etab has it. Undone,
// etab is empty again.
func (s *nfsServer) export(t *testing.T) {
	t.Helper()
	opts := "rw,sync,fsid=0,no_root_squash,no_subtree_check,insecure"
	if out, err := runBounded(t, nfsCmdLimit, "exportfs", "-i", "-o", opts, nfsClients+":"+nfsExport); err != nil {
		t.Fatalf("exportfs: %v\n%s", err, out)
	}
	s.undo = append(s.undo, func(t *testing.T) {
		if out, err := runBounded(t, nfsCmdLimit, "exportfs", "-u", "-a"); err != nil {
			t.Errorf("exportfs -ua: %v\n%s", err, out)
		}
		if etab := readAttr(t, nfsStateDir, "etab"); etab != "" {
			t.Errorf("exportfs -ua: etab still has %q", etab)
		}
	})
	etab := readAttr(t, nfsStateDir, "etab")
	if !strings.HasPrefix(etab, nfsExport+"\t"+nfsClients+"(") || !strings.Contains(etab, "fsid=0") {
		t.Fatalf("etab after exportfs: %q", etab)
	}
}

// The export caches whose upcalls rpc.mountd answers: it is ready once it
// holds their channels open.
var mountdChannels = []string{"auth.unix.ip", "nfsd.export", "nfsd.fh"}

// startMountd starts rpc.mountd in the foreground without the MOUNT
// protocol (NFSv4 has none) and waits until it reads the export caches'
// channels. Undone, it gets SIGTERM and must exit.
func (s *nfsServer) startMountd(t *testing.T) {
	t.Helper()
	p := startIn(t, "", 30*time.Minute, "rpc.mountd", "-F", "-N", "2", "-N", "3")
	s.mountd = p
	s.undo = append(s.undo, s.stopMountd)
	fds := fmt.Sprintf("/proc/%d/fd", p.cmd.Process.Pid)
	waitFor(t, "rpc.mountd to open the export caches' channels", func() (bool, string) {
		if p.exited() {
			out, err := p.wait()
			t.Fatalf("rpc.mountd exited: %v\n%s", err, out)
		}
		open := map[string]bool{}
		for _, fd := range dirNames(t, fds) {
			l, _ := os.Readlink(filepath.Join(fds, fd))
			for _, c := range mountdChannels {
				if strings.HasSuffix(l, "/net/rpc/"+c+"/channel") {
					open[c] = true
				}
			}
		}
		return len(open) == len(mountdChannels), fmt.Sprintf("open: %v", sortedKeys(open))
	})
}

// stopMountd sends rpc.mountd SIGTERM and waits for it to exit.
func (s *nfsServer) stopMountd(t *testing.T) {
	t.Helper()
	p := s.mountd
	if p.exited() {
		// Dead before its time, or killed by startIn's cleanup,
		// which runs first when the test fails before its teardown.
		out, err := p.wait()
		if !t.Failed() {
			t.Errorf("rpc.mountd exited before the server stopped: %v\n%s", err, out)
		}
		return
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Errorf("rpc.mountd: SIGTERM: %v", err)
	}
	awaitExit(t, p, nfsCmdLimit)
	if _, err := p.wait(); err != nil {
		t.Errorf("rpc.mountd after SIGTERM: %v", err)
	}
}

// listen has nfsd listen on the RDMA port (svcrdma's rdma_listen on the
// wildcard addresses, which rdma_cm binds to every device), checks that
// the listener is on dev, and starts the threads. Undone, no thread and
// no listener is left.
func (s *nfsServer) listen(t *testing.T, dev string) {
	t.Helper()
	s.undo = append(s.undo, func(t *testing.T) {
		nfsdWrite(t, "threads", "0")
		waitFor(t, "nfsd's listener to go", func() (bool, string) {
			ls := nfsListeners(t, "")
			return len(ls) == 0, fmt.Sprint(ls)
		})
		if p := readAttr(t, nfsdFS, "portlist"); p != "" {
			t.Errorf("nfsd stopped, portlist has %q", p)
		}
	})
	nfsdWrite(t, "portlist", "rdma "+nfsPort)
	// A listener per address family, IPv4's and IPv6's.
	for _, l := range strings.Split(readAttr(t, nfsdFS, "portlist"), "\n") {
		if l != "rdma "+nfsPort {
			t.Fatalf("portlist has %q, want rdma %s only", l, nfsPort)
		}
	}
	if ls := nfsListeners(t, dev); len(ls) == 0 {
		t.Fatalf("no cm_id listens on port %s on %s: %v", nfsPort, dev, rdmaAll(t, "cm_id"))
	}
	nfsdWrite(t, "threads", nfsThreads)
	if n := readAttr(t, nfsdFS, "threads"); n != nfsThreads {
		t.Fatalf("nfsd threads: %s, want %s", n, nfsThreads)
	}
}

// nfsListeners are the listening cm_ids of nfsd's port on dev, or on
// every device if dev is "".
func nfsListeners(t *testing.T, dev string) []map[string]any {
	t.Helper()
	var ls []map[string]any
	for _, id := range rdmaAll(t, "cm_id") {
		if (dev == "" || id["ifname"] == dev) && id["state"] == "LISTEN" &&
			strings.HasSuffix(fmt.Sprint(id["src-addr"]), ":"+nfsPort) {
			ls = append(ls, id)
		}
	}
	return ls
}

// endGrace ends the NFSv4 grace period, which started with the threads,
// and waits for it to end (the laundromat's work).
func (s *nfsServer) endGrace(t *testing.T) {
	t.Helper()
	start := time.Now()
	nfsdWrite(t, "v4_end_grace", "Y")
	waitFor(t, "nfsd's NFSv4 grace period to end", func() (bool, string) {
		v := readAttr(t, nfsdFS, "v4_end_grace")
		return v == "Y", "v4_end_grace: " + v
	})
	t.Logf("nfsd: %s threads, listening on rdma port %s, grace period ended in %v",
		nfsThreads, nfsPort, time.Since(start).Round(time.Millisecond))
}

// nfsMount is the client's mount of the export.
type nfsMount struct{ dir string }

// mountNFS mounts the export on nfsMountDir over RDMA and checks the
// mount (nfs4, version 4.2, transport rdma to our port) and its
// connection on dev. The mount, if still there, and the mount point go
// when the test ends.
func mountNFS(t *testing.T, dev string) *nfsMount {
	t.Helper()
	m := &nfsMount{dir: nfsMountDir}
	mkdir(t, m.dir)
	t.Cleanup(func() {
		if err := os.Remove(m.dir); err != nil {
			t.Errorf("rmdir %s: %v", m.dir, err)
		}
	})
	start := time.Now()
	if out, err := runBounded(t, nfsCmdLimit, "mount", "-t", "nfs", "-o", nfsMountOpts, nfsAddr+":/", m.dir); err != nil {
		t.Fatalf("mount -o %s: %v\n%s", nfsMountOpts, err, out)
	}
	t.Cleanup(func() { m.remove(t) })
	took := time.Since(start).Round(time.Millisecond)
	st := mountStats(t, m.dir)
	for _, o := range []string{"vers=4.2", "proto=rdma", "port=" + nfsPort} {
		if !st.opts[o] {
			t.Errorf("%s: mount options %v lack %s", m.dir, st.opts, o)
		}
	}
	if st.fstype != "nfs4" || len(st.xprt) == 0 || st.xprt[0] != "rdma" {
		t.Fatalf("%s: fstype %q, transport %v: want nfs4 over rdma", m.dir, st.fstype, st.xprt)
	}
	src := nfsConnection(t, dev)
	t.Logf("mount %s:/ on %s in %v: nfs4 over rdma, %s -> %s:%s on %s", nfsAddr, m.dir, took, src, nfsAddr, nfsPort, dev)
	return m
}

// nfsConnection asserts that the one rdma_cm connection on dev besides
// nfsd's listeners is the mount's: a connected cm_id of the client to
// the server's address and port, the server's connected cm_id with them at
// the other end, and a QP for each. It returns the client's address.
func nfsConnection(t *testing.T, dev string) string {
	t.Helper()
	server := nfsAddr + ":" + nfsPort
	var clients, servers []string
	var other []map[string]any
	for _, id := range rdmaOnDev(t, dev, "cm_id") {
		src, dst := fmt.Sprint(id["src-addr"]), fmt.Sprint(id["dst-addr"])
		switch {
		case id["state"] == "LISTEN" && strings.HasSuffix(src, ":"+nfsPort):
		case id["state"] == "CONNECT" && dst == server:
			clients = append(clients, src)
		case id["state"] == "CONNECT" && src == server:
			servers = append(servers, dst)
		default:
			other = append(other, id)
		}
	}
	if len(clients) != 1 || len(servers) != 1 || clients[0] != servers[0] || len(other) != 0 {
		t.Fatalf("connected cm_ids on %s: client ends %v, server ends %v, others %v; want one connection to %s",
			dev, clients, servers, other, server)
	}
	if qps := rdmaOnDev(t, dev, "qp"); len(qps) != 2 {
		t.Errorf("%d QPs on %s, want 2 (client and server): %v", len(qps), dev, qps)
	}
	return clients[0]
}

// unmount unmounts the export and waits until nothing but nfsd's
// listeners is left on dev: the client's cm_id and QP go with its
// transport, the server's when it sees the disconnect.
func (m *nfsMount) unmount(t *testing.T, dev string) {
	t.Helper()
	start := time.Now()
	if out, err := runBounded(t, nfsCmdLimit, "umount", m.dir); err != nil {
		t.Fatalf("umount %s: %v\n%s", m.dir, err, out)
	}
	if fs := fstypeAt(t, m.dir); fs != "" {
		t.Fatalf("umount %s returned, %s still mounted there", m.dir, fs)
	}
	waitConnsGone(t, dev, "the mount's")
	t.Logf("umount %s: its connection gone in %v", m.dir, time.Since(start).Round(time.Millisecond))
}

// remove unmounts the export if it is still mounted (a failed test).
func (m *nfsMount) remove(t *testing.T) {
	t.Helper()
	if fstypeAt(t, m.dir) != "" {
		unmount(t, m.dir)
	}
}

// nfsMountStat is a mount's entry in /proc/self/mountstats: its
// filesystem type, its options, and its transport's line, split ("rdma"
// first, then its counters).
type nfsMountStat struct {
	fstype string
	opts   map[string]bool
	xprt   []string
}

// mountStats reads the entry of the mount on dir.
func mountStats(t *testing.T, dir string) nfsMountStat {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountstats")
	if err != nil {
		t.Fatal(err)
	}
	var st nfsMountStat
	in := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) >= 8 && f[0] == "device":
			// device SRC mounted on DIR with fstype TYPE ...
			in = f[4] == dir
			if in {
				st.fstype = f[7]
			}
		case in && len(f) == 2 && f[0] == "opts:":
			st.opts = map[string]bool{}
			for _, o := range strings.Split(f[1], ",") {
				st.opts[o] = true
			}
		case in && len(f) > 1 && f[0] == "xprt:":
			st.xprt = f[1:]
		}
	}
	if st.fstype == "" {
		t.Fatalf("/proc/self/mountstats has no mount on %s", dir)
	}
	return st
}

// The counters of an rdma transport's line in /proc/self/mountstats
// (xprt_rdma_print_stats, 6.1 and 6.12), as indexes of nfsMountStat.xprt.
// failed_marshal_count is left alone: a call that finds no free MR
// counts as failed and waits for one (-EAGAIN), on siw as on iwarp.
const (
	xprtConnects    = 3  // connect_count
	xprtReadChunks  = 11 // calls with a Read list: the server pulls their data
	xprtWriteChunks = 12 // calls with a Write list: the server pushes the reply's data
	xprtBadReplies  = 20 // bad_reply_count
	xprtFields      = 28 // "rdma" and 27 counters
)

// xprt reads the mount's transport counters.
func (m *nfsMount) xprt(t *testing.T) []int64 {
	t.Helper()
	st := mountStats(t, m.dir)
	if len(st.xprt) < xprtFields || st.xprt[0] != "rdma" {
		t.Fatalf("%s: transport %v, want rdma and %d counters", m.dir, st.xprt, xprtFields-1)
	}
	c := make([]int64, len(st.xprt))
	for i, f := range st.xprt[1:] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			t.Fatalf("%s: transport counter %d: %q", m.dir, i+1, f)
		}
		c[i+1] = n
	}
	return c
}

// svcRDMACounters reads svcrdma's counters of RDMA Read and Write
// segments the server posted (module-wide; nothing else uses svcrdma).
func svcRDMACounters(t *testing.T) [2]int64 {
	t.Helper()
	var c [2]int64
	for i, name := range []string{"rdma_stat_read", "rdma_stat_write"} {
		n, err := strconv.ParseInt(readAttr(t, svcRDMAStats, name), 10, 64)
		if err != nil {
			t.Fatalf("%s/%s: %v", svcRDMAStats, name, err)
		}
		c[i] = n
	}
	return c
}

// checkChunks compares the transport's counters and svcrdma's with
// theirs before the files went through (cli, svc): the 8 MiB file
// written went in WRITEs of wsize with Read chunks, which the server
// pulled by RDMA Read, and the two read back in READs of rsize with
// Write chunks, which it filled by RDMA Write (a READ at the end of a
// file leaves its chunk unused, so the client counts more Write chunks
// than the server posts Writes); no reply was bad, and the transport
// connected once.
func (m *nfsMount) checkChunks(t *testing.T, cli []int64, svc [2]int64) {
	t.Helper()
	now, svcNow := m.xprt(t), svcRDMACounters(t)
	st := mountStats(t, m.dir)
	wantReads, wantWrites := nfsLarge/mountOptInt(t, st, "wsize"), 2*nfsLarge/mountOptInt(t, st, "rsize")
	reads, writes := now[xprtReadChunks]-cli[xprtReadChunks], now[xprtWriteChunks]-cli[xprtWriteChunks]
	svcReads, svcWrites := svcNow[0]-svc[0], svcNow[1]-svc[1]
	if reads < wantReads || svcReads < wantReads {
		t.Errorf("%d calls with Read chunks, %d RDMA Reads on the server: want %d at least", reads, svcReads, wantReads)
	}
	if writes < wantWrites || svcWrites < wantWrites {
		t.Errorf("%d calls with Write chunks, %d RDMA Writes on the server: want %d at least", writes, svcWrites, wantWrites)
	}
	if now[xprtConnects] != 1 || now[xprtBadReplies] != 0 {
		t.Errorf("transport: %d connects, %d bad replies; want 1 and 0", now[xprtConnects], now[xprtBadReplies])
	}
	t.Logf("client: %d calls with Read chunks, %d with Write chunks; server: %d RDMA Read and %d RDMA Write segments",
		reads, writes, svcReads, svcWrites)
}

// mountOptInt is the value of the numeric mount option name.
func mountOptInt(t *testing.T, st nfsMountStat, name string) int64 {
	t.Helper()
	for o := range st.opts {
		if v, ok := strings.CutPrefix(o, name+"="); ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
				return n
			}
		}
	}
	t.Fatalf("mount options %v: no %s", st.opts, name)
	return 0
}

// nfsLarge is the size of the large files, which take RDMA Read and
// Write chunks.
const nfsLarge = 8 << 20

// nfsSizes are the files' sizes: within the inline threshold (4 KiB),
// at it (the RPC's header makes the call or reply larger: a chunk), two
// WRITEs and READs with an unaligned end, and nfsLarge.
var nfsSizes = []struct {
	name string
	size int
}{{"tiny", 100}, {"page", 4096}, {"odd", 300<<10 + 7}, {"large", nfsLarge}}

// nfsFile is a file of random data, name under the export.
type nfsFile struct {
	name string
	data []byte
}

func newNFSFile(t *testing.T, name string, size int) nfsFile {
	t.Helper()
	f := nfsFile{name: name, data: make([]byte, size)}
	if _, err := rand.Read(f.data); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f nfsFile) onServer() string { return filepath.Join(nfsExport, f.name) }

// nfsWriteThrough writes a file of each size through the mount (closed
// after fsync: every WRITE and the COMMIT answered) and finds it on the
// server's tmpfs.
func nfsWriteThrough(t *testing.T, m *nfsMount) []nfsFile {
	t.Helper()
	var l []nfsFile
	for _, sz := range nfsSizes {
		f := newNFSFile(t, "client-"+sz.name, sz.size)
		start := time.Now()
		writeSynced(t, filepath.Join(m.dir, f.name), f.data)
		if sz.size == nfsLarge {
			t.Logf("%s: %d MiB written through the mount and synced in %v",
				f.name, sz.size>>20, time.Since(start).Round(time.Millisecond))
		}
		f.compare(t, f.onServer(), "written through the mount, read on the server")
		l = append(l, f)
	}
	return l
}

// nfsWriteOnServer writes a file of each size on the server's tmpfs.
func nfsWriteOnServer(t *testing.T) []nfsFile {
	t.Helper()
	var l []nfsFile
	for _, sz := range nfsSizes {
		f := newNFSFile(t, "server-"+sz.name, sz.size)
		if err := os.WriteFile(f.onServer(), f.data, 0o644); err != nil {
			t.Fatal(err)
		}
		l = append(l, f)
	}
	return l
}

// writeSynced creates path with data, fsyncs and closes it.
func writeSynced(t *testing.T, path string, data []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		t.Fatalf("write %s: %v", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		t.Fatalf("fsync %s: %v", path, err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("close %s: %v", path, err)
	}
}

// compare reads path (the server's copy: no NFS in between) and compares
// it with the file's data.
func (f nfsFile) compare(t *testing.T, path, how string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s, %s: %v", f.name, how, err)
	}
	f.same(t, got, how)
}

// readThrough reads the file through the mount with O_DIRECT (READs
// from the server, whatever the client cached) and compares it with the
// file's data and with the server's copy.
func (f nfsFile) readThrough(t *testing.T, m *nfsMount, how string) {
	t.Helper()
	start := time.Now()
	got := readDirect(t, filepath.Join(m.dir, f.name))
	if len(f.data) == nfsLarge {
		t.Logf("%s: %d MiB %s with O_DIRECT in %v", f.name, nfsLarge>>20, how, time.Since(start).Round(time.Millisecond))
	}
	f.same(t, got, how+" with O_DIRECT")
	f.compare(t, f.onServer(), "on the server")
}

// same compares got with the file's data.
func (f nfsFile) same(t *testing.T, got []byte, how string) {
	t.Helper()
	if bytes.Equal(got, f.data) {
		return
	}
	i := 0
	for i < len(got) && i < len(f.data) && got[i] == f.data[i] {
		i++
	}
	t.Errorf("%s, %s: %d octets, want %d; they differ from octet %d on", f.name, how, len(got), len(f.data), i)
}

// remove removes the file through the mount and checks it is gone from
// the server's tmpfs.
func (f nfsFile) remove(t *testing.T, m *nfsMount) {
	t.Helper()
	if err := os.Remove(filepath.Join(m.dir, f.name)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f.onServer()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s removed through the mount, on the server: %v", f.name, err)
	}
}

// readDirect reads the file at path with O_DIRECT, a page-aligned MiB at
// a time.
func readDirect(t *testing.T, path string) []byte {
	t.Helper()
	f := openDirect(t, path, os.O_RDONLY)
	defer f.Close()
	buf := directBuf(t)
	var data []byte
	for {
		n, err := f.Read(buf)
		data = append(data, buf[:n]...)
		if err == io.EOF {
			return data
		}
		if err != nil {
			t.Fatalf("read %s with O_DIRECT at %d: %v", path, len(data), err)
		}
	}
}

// fstypeAt is the type of the filesystem mounted on dir, "" if none.
func fstypeAt(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	fstype := ""
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 2 && f[1] == dir {
			fstype = f[2] // the last one mounted there
		}
	}
	return fstype
}

// unmount unmounts dir, bounded by nfsCmdLimit.
func unmount(t *testing.T, dir string) {
	t.Helper()
	if out, err := runBounded(t, nfsCmdLimit, "umount", dir); err != nil {
		t.Errorf("umount %s: %v\n%s", dir, err, out)
	}
}
