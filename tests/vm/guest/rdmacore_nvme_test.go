// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// The NVMe over RDMA setup of TestRDMACoreNVMe, in the initial namespace.
const (
	nvmeNetdev  = "nvmedum0"
	nvmeAddr    = "10.31.0.1"
	nvmeAddr6   = "fd00:31::1"
	nvmeSvcID   = "4420" // NVMe over Fabrics' port
	nvmePortID  = "1"    // nvmet's port directory
	nvmeNullBlk = "iwnvme0"
	nvmeSizeMiB = 64
	nvmeHostNQN = "nqn.2014-08.org.iwarp:nvme-host"
	// With a host NQN of its own the host needs a host ID of its own:
	// without hostid= the kernel takes its default host's ID, and 6.12
	// refuses that ID with another NQN than the default host's ("found
	// same hostid ... but different hostnqn", EINVAL).
	nvmeHostID   = "6e766d65-6977-6172-7000-000000000001"
	nvmeWait     = 15 * time.Second // a controller, a disk, a queue's end
	nvmeFioLimit = 3 * time.Minute  // one fio run
	nvmeCmdLimit = time.Minute      // nvme connect, nvme disconnect
	configfsDir  = "/sys/kernel/config"
)

// TestRDMACoreNVMe runs the kernel's NVMe over Fabrics target
// (nvmet, nvmet-rdma) and host (nvme-rdma) over an RDMA device, one
// subtest per device kind in the same boot: our iwarp device, and siw
// for comparison. Both ends are kernel consumers of the verbs (a kernel
// PD with its local DMA lkey, CQs polled in softirq or a workqueue, QPs
// through rdma_cm, fast registration: ib_alloc_mr, ib_map_mr_sg,
// IB_WR_REG_MR and IB_WR_LOCAL_INV, Send with Invalidate, and on the
// target rdma_rw's RDMA Writes and Reads With Invalidate, which on iWARP
// register the Read sink). The namespace is a memory-backed null_blk
// disk. In each:
//
//  1. nvme-cli's `nvme connect -t rdma`: the controller goes live with
//     its admin and I/O queues, each an rdma_cm connection on the device
//     under test (host and target cm_ids, QPs); fio writes 4 KiB blocks
//     at random (inline in the command's Send) and 128 KiB sequentially
//     (the target pulls them by RDMA Read), reads everything back (RDMA
//     Write) and verifies it; a pattern written through the controller is
//     on the target's disk, and one written on the disk reads back through
//     the controller; `nvme disconnect` ends every queue on both sides.
//  2. The option string written to /dev/nvme-fabrics (what nvme-cli
//     does), with a host NQN and ID of ours: the new controller reads the
//     pattern the first one wrote, a new pattern goes both ways again,
//     and the controller's delete_controller removes it.
//  3. Unplug under load: with a controller connected and fio's random
//     reads and writes flowing, `rdma link delete` of the device, then on
//     iwarp (connected again, the device back) `rmmod iwarp_rdma`. Each
//     returns promptly; the host's and the target's ib_clients delete
//     the controller and the target's queues, fio fails with an I/O
//     error rather than hang, and the controller, its namespace, the
//     device and nvmet_rdma's listener go. The device is made again and
//     the port relinked after each, for what follows.
//  4. Teardown, checked: the port unlinked from the subsystem (its
//     listener goes), the namespace, subsystem and port removed, nvmet's
//     configfs tree empty, the null_blk disk gone, nothing left on the
//     RDMA device, and every module the test loaded unloads.
//
// Topology: nvme-rdma and nvmet-rdma create their rdma_cm ids in the
// initial network namespace (init_net), so the RDMA device's netdev and
// address must be there; the guest tests' two-namespace veth topology
// would not do. One dummy netdev in the initial namespace with
// 10.31.0.1/24 carries one RDMA device, the target listens on that
// address and the host connects to it: rdma_cm resolves the local
// address to the device whose netdev owns it (a local route's dst is
// on lo, so addr_resolve translates the address itself), and both ends
// are on the one device, whose TCP connection takes the loopback path.
// The iwarp device does the same. Tried on siw: on lo,
// nvmet_rdma listens on 127.0.0.1 but the host's rdma_resolve_addr
// fails (-ENOENT); a veth pair in the initial namespace with siw on both
// ends works, but every connection has both its ends on the device of
// the netdev owning the target's address (the route to a local address
// is lo's), the other device idle; with a device on the other end only,
// nvmet_rdma cannot bind (-ENODEV) and the host's connect is reset.
func TestRDMACoreNVMe(t *testing.T) {
	for _, kind := range []string{"iwarp", "siw"} {
		t.Run(kind, func(t *testing.T) { nvmeOverRDMA(t, kind) })
	}
}

// gone waits for the controller and its namespace ns to go after how
// (begun at start), then for its queues on device dev.
func (c *nvmeCtrl) gone(t *testing.T, ns, dev, how string, start time.Time) {
	t.Helper()
	c.waitGone(t, ns)
	t.Logf("%s: %s gone in %v", how, c.name, time.Since(start).Round(time.Millisecond))
	waitQueuesGone(t, dev)
}

// nvmeOverRDMA is one device kind's run of TestRDMACoreNVMe.
func nvmeOverRDMA(t *testing.T, kind string) {
	for _, tool := range []string{"nvme", "fio"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s: %v (make deps installs nvme-cli and fio)", tool, err)
		}
	}
	mods := loadNVMeModules(t)
	dev := nvmeRDMADevice(t, kind)
	disk := newNullBlk(t, nvmeNullBlk, nvmeSizeMiB)
	nqn := "nqn.2014-08.org.iwarp:nvme-" + kind
	tgt := newNVMeTarget(t, nqn, disk, dev)

	var kept []nvmePattern
	t.Run("nvme-cli", func(t *testing.T) {
		start := time.Now()
		nvmeConnect(t, nqn)
		c := waitController(t, nqn)
		t.Logf("nvme connect: %s live in %v", c.name, time.Since(start).Round(time.Millisecond))
		defer c.remove(t)
		c.check(t, dev, "", "")
		ns := c.namespace(t, disk)
		fioVerify(t, ns, "randwrite", "4k", 16, 16)
		fioVerify(t, ns, "write", "128k", 32, 8)
		kept = nvmeCrossCheck(t, ns, disk, 40)
		start = time.Now()
		out, err := runIn(t, "", nvmeCmdLimit, "nvme", "disconnect", "-n", nqn)
		if err != nil {
			t.Fatalf("nvme disconnect: %v\n%s", err, out)
		}
		if !strings.Contains(out, "disconnected 1 controller") {
			t.Errorf("nvme disconnect: %q, want 1 controller disconnected", strings.TrimSpace(out))
		}
		c.gone(t, ns, dev, "nvme disconnect", start)
	})
	if t.Failed() {
		return
	}
	t.Run("nvme-fabrics", func(t *testing.T) {
		start := time.Now()
		c := connectFabrics(t, fmt.Sprintf("transport=rdma,traddr=%s,trsvcid=%s,nqn=%s,hostnqn=%s,hostid=%s",
			nvmeAddr, nvmeSvcID, nqn, nvmeHostNQN, nvmeHostID))
		t.Logf("/dev/nvme-fabrics: %s live in %v", c.name, time.Since(start).Round(time.Millisecond))
		defer c.remove(t)
		c.check(t, dev, nvmeHostNQN, nvmeHostID)
		ns := c.namespace(t, disk)
		for _, p := range kept {
			p.checkAt(t, ns, "through the second controller")
		}
		nvmeCrossCheck(t, ns, disk, 48)
		start = time.Now()
		if err := os.WriteFile(filepath.Join("/sys/class/nvme", c.name, "delete_controller"), []byte("1"), 0); err != nil {
			t.Fatalf("delete_controller: %v", err)
		}
		c.gone(t, ns, dev, "delete_controller", start)
	})
	if t.Failed() {
		return
	}
	t.Run("unplug", func(t *testing.T) {
		unplugUnderLoad(t, nqn, disk, dev, "rdma", "link", "delete", dev)
		nvmeDeviceAgain(t, kind, dev)
		tgt.relink(t, dev)
		// The driver's unload under load is iwarp's alone: siw's
		// module exit stops its transmit threads before it unregisters
		// its devices (6.1 and 6.12), a send posted after that leaves
		// its QP on a stopped thread's list with the reference
		// siw_sq_start took, and siw_destroy_qp, in nvmet_rdma's queue
		// release, waits for that reference forever: tried on 6.1,
		// `rmmod siw` hangs in ib_unregister_driver and the kernel
		// reports the blocked tasks.
		if kind != "iwarp" {
			return
		}
		unplugUnderLoad(t, nqn, disk, dev, "rmmod", "iwarp_rdma")
		if err := loadRDMAModule(); err != nil {
			t.Fatal(err)
		}
		nvmeDeviceAgain(t, kind, dev)
		tgt.relink(t, dev)
	})
	if t.Failed() {
		return
	}
	t.Run("teardown", func(t *testing.T) {
		if ctrls := nvmeControllers(t); len(ctrls) != 0 {
			t.Fatalf("controllers left: %v", ctrls)
		}
		tgt.teardown(t)
		for _, d := range []string{"ports", "subsystems", "hosts"} {
			if left := dirNames(t, filepath.Join(configfsDir, "nvmet", d)); len(left) != 0 {
				t.Errorf("nvmet %s left in configfs: %v", d, left)
			}
		}
		disk.remove(t)
		checkDevEmpty(t, dev)
		mods.unload(t)
	})
}

// The unplug subtest's fio load: random 4 KiB reads and writes that would
// run far longer than the test, so that only the device's going ends
// them, and the I/Os the target's disk must have completed before the
// device is taken away.
const (
	fioLoadRuntime = 10 * time.Minute
	fioLoadIOs     = 200
)

// unplugUnderLoad connects a controller of subsystem nqn over device dev,
// starts fio's load on its namespace, and once the load reaches the
// target's disk runs argv, a command that takes the device away (`rdma
// link delete`, rmmod of its driver). The command must succeed within
// nvmeCmdLimit. The RDMA core then removes the device's clients:
// nvme_rdma deletes the controller, nvmet_rdma disconnects the target's
// queues, rdma_cm's DEVICE_REMOVAL destroys the listener. So fio must end
// by itself with an I/O error, and the controller, its namespace, the
// device and every cm_id of the target's address must go.
func unplugUnderLoad(t *testing.T, nqn string, disk *nullBlk, dev string, argv ...string) {
	t.Helper()
	how := strings.Join(argv, " ")
	nvmeConnect(t, nqn)
	c := waitController(t, nqn)
	defer c.remove(t)
	c.check(t, dev, "", "")
	ns := c.namespace(t, disk)
	fio := startFioLoad(t, ns, disk)
	start := time.Now()
	if out, err := runBounded(t, nvmeCmdLimit, argv...); err != nil {
		t.Fatalf("%s under load: %v\n%s", how, err, out)
	}
	t.Logf("%s under load: returned in %v", how, time.Since(start).Round(time.Millisecond))
	fioFailed(t, fio, how, start)
	c.waitGone(t, ns)
	t.Logf("%s: %s and %s gone in %v", how, c.name, ns, time.Since(start).Round(time.Millisecond))
	waitRDMADevGone(t, dev)
	waitListenerGone(t)
}

// startFioLoad starts fio's load on the namespace ns and waits until the
// target's disk has completed fioLoadIOs more reads and writes than
// before: the load flows through the RDMA device. The target's disk
// counts them on every kernel; a multipath head's statistics stay at
// zero before 6.3, which added its I/O accounting.
func startFioLoad(t *testing.T, ns string, disk *nullBlk) *peerProc {
	t.Helper()
	before := blockIOs(t, disk.name)
	p := startIn(t, "", 2*fioLoadRuntime, "fio", "--name=unplug", "--filename="+ns,
		"--ioengine=libaio", "--direct=1", "--rw=randrw", "--bs=4k", "--iodepth=16",
		"--time_based", fmt.Sprintf("--runtime=%d", int(fioLoadRuntime.Seconds())),
		"--output-format=json")
	start := time.Now()
	waitFor(t, "fio's I/O on "+ns+" to reach the target's disk", func() (bool, string) {
		if p.exited() {
			out, err := p.wait()
			t.Fatalf("fio on %s exited before its device went: %v\n%s", ns, err, clip(out))
		}
		n := blockIOs(t, disk.name) - before
		return n >= fioLoadIOs, fmt.Sprintf("%d reads and writes completed", n)
	})
	t.Logf("fio on %s: %d I/Os on the target's disk in %v", ns, fioLoadIOs, time.Since(start).Round(time.Millisecond))
	return p
}

// fioFailed waits for the load's fio to end by itself, nvmeFioLimit at
// most, and checks that it failed cleanly: a non-zero exit status (not a
// signal) and an error in its job's report. how (begun at start) is what
// took its device away.
func fioFailed(t *testing.T, p *peerProc, how string, start time.Time) {
	t.Helper()
	awaitExit(t, p, nvmeFioLimit)
	took := time.Since(start).Round(time.Millisecond)
	out, err := p.wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() <= 0 {
		t.Fatalf("fio after %s: %v, want a non-zero exit status\n%s", how, err, clip(out))
	}
	var rep struct {
		Jobs []struct {
			Error int `json:"error"`
		} `json:"jobs"`
	}
	i := strings.IndexByte(out, '{')
	if i < 0 || json.Unmarshal([]byte(out[i:]), &rep) != nil || len(rep.Jobs) != 1 || rep.Jobs[0].Error == 0 {
		t.Fatalf("fio after %s: exit status %d, no job error in its report:\n%s\n%s", how, ee.ExitCode(), clip(out), p.errOutput())
	}
	e := rep.Jobs[0].Error
	t.Logf("%s: fio failed after %v, exit status %d, job error %d (%s): %s",
		how, took, ee.ExitCode(), e, unix.ErrnoName(unix.Errno(e)), firstLine(p.errOutput(), "error"))
}

// firstLine is the first line of s containing sub, trimmed.
func firstLine(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// runBounded runs a command in the initial namespace to its end and
// returns its output, with its standard error in the error if it failed.
// A command still running after limit fails the test as a hang (a task
// blocked in the kernel does not die of the kill that follows).
func runBounded(t *testing.T, limit time.Duration, argv ...string) (string, error) {
	t.Helper()
	p := startIn(t, "", 2*limit, argv[0], argv[1:]...)
	awaitExit(t, p, limit)
	return p.wait()
}

// nvmeConnect runs `nvme connect -t rdma` to subsystem nqn and fails the
// test if it fails or has not returned within nvmeCmdLimit. A connect that
// hangs does so in the kernel until the host's admin timeout ends its
// queue, so the failure shows the NVMe port's TCP sockets and the RDMA
// QPs as they are at the limit, while the queue still exists: whether the
// command or answer that went missing sits unread in a receive queue,
// unsent or unacknowledged in a send queue, or in neither.
func nvmeConnect(t *testing.T, nqn string) {
	t.Helper()
	p := startIn(t, "", nvmeCmdLimit+3*time.Minute, "nvme", "connect", "-t", "rdma", "-a", nvmeAddr, "-s", nvmeSvcID, "-n", nqn)
	select {
	case <-p.done:
	case <-time.After(nvmeCmdLimit):
		var b strings.Builder
		for _, argv := range [][]string{
			{"ss", "-tanoi", "( sport = :" + nvmeSvcID + " or dport = :" + nvmeSvcID + " )"},
			{"rdma", "res", "show", "qp"},
		} {
			out, err := runIn(t, "", 30*time.Second, argv[0], argv[1:]...)
			fmt.Fprintf(&b, "%s (%v):\n%s\n", strings.Join(argv, " "), err, out)
		}
		t.Fatalf("nvme connect to %s: still running after %v: it hangs\n%s", nqn, nvmeCmdLimit, b.String())
	}
	if out, err := p.wait(); err != nil {
		t.Fatalf("nvme connect: %v\n%s", err, out)
	}
}

// awaitExit waits for p to exit, for limit at most: past it the test
// fails, p hangs.
func awaitExit(t *testing.T, p *peerProc, limit time.Duration) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(limit):
		t.Fatalf("%s: still running after %v: it hangs", strings.TrimPrefix(p.desc, "[] "), limit)
	}
}

// blockIOs is the number of reads and writes the block device name has
// completed: the first and fifth fields of /sys/block/NAME/stat.
func blockIOs(t *testing.T, name string) int64 {
	t.Helper()
	f := strings.Fields(readAttr(t, "/sys/block/"+name, "stat"))
	if len(f) < 5 {
		t.Fatalf("/sys/block/%s/stat: %q", name, f)
	}
	r, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		t.Fatalf("/sys/block/%s/stat: %v", name, err)
	}
	w, err := strconv.ParseInt(f[4], 10, 64)
	if err != nil {
		t.Fatalf("/sys/block/%s/stat: %v", name, err)
	}
	return r + w
}

// nvmeDeviceAgain makes the kind's RDMA device on nvmeNetdev again after
// the unplug subtest took it away, under its old name dev and with the
// raw command: nvmeRDMADevice's cleanup deletes the device by that name
// when the test ends, and the teardown subtest checks it by that name
// (rdmaIwarpAdd and siwLinkAdd would delete it when this subtest ends,
// and siwLinkAdd would pick a new name).
func nvmeDeviceAgain(t *testing.T, kind, dev string) {
	t.Helper()
	run(t, "rdma", "link", "add", dev, "type", kind, "netdev", nvmeNetdev)
	if _, err := os.Stat("/sys/class/infiniband/" + dev); err != nil {
		t.Fatalf("rdma link add %s returned, the device is not listed: %v", dev, err)
	}
}

// nvmeModules are the modules TestRDMACoreNVMe loads: null_blk, the
// target and its RDMA transport, the host's RDMA transport (which brings
// nvme-fabrics and nvme-core), and whatever they depend on that was not
// loaded yet (t10_pi and the CRCs; on 6.12 nvme-auth and nvme-keyring).
type nvmeModules struct {
	before       map[string][2]string // /proc/modules before the modprobes
	loaded       []string             // what the modprobes loaded, to unload
	counted      bool                 // loaded is known
	mountedCfgfs bool
}

// nvmeModuleList are the modules the test asks for; none may be loaded
// before it.
var nvmeModuleList = []string{"null_blk", "nvmet", "nvmet_rdma", "nvme_rdma", "nvme_fabrics", "nvme_core"}

// loadNVMeModules loads the modules (null_blk without its default
// device), mounts configfs unless it is (the guest's /init mounts it
// before anything loads configfs.ko, so it is not), and undoes both when
// the test ends if the test has not.
func loadNVMeModules(t *testing.T) *nvmeModules {
	t.Helper()
	m := &nvmeModules{}
	var early []string
	for _, mod := range nvmeModuleList {
		if moduleFileLoaded(mod) {
			early = append(early, mod)
		}
	}
	if len(early) != 0 {
		t.Fatalf("already loaded before the test: %v", early)
	}
	// The RDMA core (ib_core, rdma_cm, configfs...) first, outside what
	// the test loads: the RDMA device uses it too, and it stays, as
	// loadSiw leaves it.
	for _, mod := range rdmaUserModules {
		run(t, "modprobe", mod)
	}
	m.before = procModules(t)
	t.Cleanup(func() { m.unload(t) })
	run(t, "modprobe", "null_blk", "nr_devices=0")
	for _, mod := range []string{"nvmet", "nvmet_rdma", "nvme_rdma"} {
		run(t, "modprobe", mod)
	}
	m.count(t)
	for _, mod := range nvmeModuleList {
		if _, err := os.Stat("/sys/module/" + mod); err != nil {
			t.Fatalf("%s: neither loaded nor built in after modprobe", mod)
		}
	}
	if !configfsMounted(t) {
		if err := unix.Mount("none", configfsDir, "configfs", 0, ""); err != nil {
			t.Fatalf("mount configfs on %s: %v", configfsDir, err)
		}
		m.mountedCfgfs = true
	}
	for _, d := range []string{"nvmet/subsystems", "nullb"} {
		if _, err := os.Stat(filepath.Join(configfsDir, d)); err != nil {
			t.Fatalf("configfs: %v", err)
		}
	}
	return m
}

// count notes the modules loaded since m.before. After the modprobes
// that is what they loaded; siw and its dependencies come later.
func (m *nvmeModules) count(t *testing.T) {
	t.Helper()
	for mod := range procModules(t) {
		if _, ok := m.before[mod]; !ok {
			m.loaded = append(m.loaded, mod)
		}
	}
	sort.Strings(m.loaded)
	m.counted = true
}

// procModules reads /proc/modules: each module's reference count and
// the modules using it ("-" for none).
func procModules(t *testing.T) map[string][2]string {
	t.Helper()
	b, err := os.ReadFile("/proc/modules")
	if err != nil {
		t.Fatal(err)
	}
	mods := map[string][2]string{}
	for _, l := range strings.Split(string(b), "\n") {
		// name size refcount users state address
		if f := strings.Fields(l); len(f) > 3 {
			mods[f[0]] = [2]string{f[2], f[3]}
		}
	}
	return mods
}

// moduleFileLoaded: mod is loaded as a module (built-in ones have no
// initstate).
func moduleFileLoaded(mod string) bool {
	_, err := os.Stat("/sys/module/" + mod + "/initstate")
	return err == nil
}

func configfsMounted(t *testing.T) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 2 && f[1] == configfsDir && f[2] == "configfs" {
			return true
		}
	}
	return false
}

// unload removes the modules the test loaded, each of which must go, a
// module once nothing uses it (the order of dependencies differs between
// kernels: 6.12's nvmet uses nvme-core), and unmounts configfs if the
// test mounted it. A second call does nothing.
func (m *nvmeModules) unload(t *testing.T) {
	t.Helper()
	if !m.counted {
		m.count(t) // a modprobe failed: what the others loaded
	}
	left := m.loaded
	m.loaded = nil
	var errs, gone []string
	for progress := true; progress && len(left) > 0; {
		progress = false
		mods := procModules(t)
		var next []string
		for _, mod := range left {
			st, ok := mods[mod]
			switch {
			case !ok:
				progress = true
			case st[0] != "0" || st[1] != "-":
				next = append(next, mod)
			default:
				if err := rmmod(mod); err != nil {
					errs = append(errs, err.Error())
					next = append(next, mod)
				} else {
					gone = append(gone, mod)
					progress = true
				}
			}
		}
		left = next
	}
	if len(left) != 0 {
		mods := procModules(t)
		var l []string
		for _, mod := range left {
			l = append(l, fmt.Sprintf("%s (refcount %s, used by %s)", mod, mods[mod][0], mods[mod][1]))
		}
		t.Errorf("modules the test loaded do not unload: %s; %s", strings.Join(l, ", "), strings.Join(errs, "; "))
	} else if len(gone) != 0 {
		t.Logf("unloaded the %d modules the test loaded: %s", len(gone), strings.Join(gone, " "))
	}
	if m.mountedCfgfs {
		if err := unix.Unmount(configfsDir, 0); err != nil {
			t.Errorf("umount %s: %v", configfsDir, err)
		}
		m.mountedCfgfs = false
	}
}

// nvmeRDMADevice puts the device kind's RDMA device on a dummy netdev with
// nvmeAddr in the initial namespace and returns its name (ulpRDMADevice).
func nvmeRDMADevice(t *testing.T, kind string) string {
	t.Helper()
	return ulpRDMADevice(t, kind, nvmeNetdev, nvmeAddr, nvmeAddr6, "iwrp_nvme")
}

// ulpRDMADevice puts the device kind's RDMA device (siw's, or iwarp's
// named iwName) on a dummy netdev with addr/24 and addr6/64 in the initial
// namespace, where the kernel's RDMA ULPs make their connections, and
// returns its name. Everything goes when the test ends: the device, the
// netdev, and siw or iwarp_rdma.ko.
func ulpRDMADevice(t *testing.T, kind, netdev, addr, addr6, iwName string) string {
	t.Helper()
	switch kind {
	case "siw":
		loadSiw(t, "default")
	case "iwarp":
		loadRDMACore(t)
	default:
		t.Fatalf("device kind %q", kind)
	}
	initNS, err := netns.GetFromPath("/proc/1/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	defer initNS.Close()
	h, err := netlink.NewHandleAt(initNS, unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := h.LinkAdd(&netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: netdev}}); err != nil {
		t.Fatalf("dummy %s: %v", netdev, err)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "link", "del", netdev).CombinedOutput(); err != nil {
			t.Errorf("ip link del %s: %v: %s", netdev, err, out)
		}
	})
	if err := configureSide(initNS, netdev, addr+"/24", addr6+"/64"); err != nil {
		t.Fatal(err)
	}
	if kind == "siw" {
		return siwLinkAdd(t, "", netdev)
	}
	return rdmaIwarpAdd(t, "", iwName, netdev)
}

// nullBlk is a memory-backed null_blk disk made through configfs.
type nullBlk struct {
	item  string // configfs directory
	name  string // block device name
	bytes int64
}

func (d *nullBlk) path() string { return "/dev/" + d.name }

// newNullBlk makes a memory-backed null_blk disk of sizeMiB, waits for its
// device node, and removes it when the test ends if the test has not.
func newNullBlk(t *testing.T, name string, sizeMiB int) *nullBlk {
	t.Helper()
	d := &nullBlk{item: filepath.Join(configfsDir, "nullb", name), bytes: int64(sizeMiB) << 20}
	if err := os.Mkdir(d.item, 0o755); err != nil {
		t.Fatalf("null_blk: %v", err)
	}
	t.Cleanup(func() { d.remove(t) })
	writeAttr(t, d.item, "memory_backed", "1")
	writeAttr(t, d.item, "size", strconv.Itoa(sizeMiB))
	writeAttr(t, d.item, "power", "1")
	// The disk takes the configfs directory's name (6.1 and later do;
	// older kernels named it nullb<index>).
	d.name = name
	if _, err := os.Stat("/sys/block/" + name); err != nil {
		d.name = "nullb" + readAttr(t, d.item, "index")
	}
	waitBlockDev(t, d.name, d.bytes)
	return d
}

// remove powers the disk off and removes it, then waits for its node to
// go. A second call does nothing.
func (d *nullBlk) remove(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(d.item); err != nil {
		return
	}
	writeAttr(t, d.item, "power", "0")
	if err := os.Remove(d.item); err != nil {
		t.Errorf("rmdir %s: %v", d.item, err)
		return
	}
	waitPathGone(t, d.path())
}

// nvmeTarget is an nvmet subsystem with one namespace on a disk, exported
// on an RDMA port at nvmeAddr:nvmeSvcID.
type nvmeTarget struct {
	subsys, ns, port, link string
}

// newNVMeTarget sets up the subsystem (any host may connect), its
// namespace 1 on disk and the RDMA port, links them, and checks that
// nvmet_rdma listens on the device dev. It undoes everything when the
// test ends if the test has not.
func newNVMeTarget(t *testing.T, nqn string, disk *nullBlk, dev string) *nvmeTarget {
	t.Helper()
	root := filepath.Join(configfsDir, "nvmet")
	g := &nvmeTarget{
		subsys: filepath.Join(root, "subsystems", nqn),
		port:   filepath.Join(root, "ports", nvmePortID),
	}
	g.ns = filepath.Join(g.subsys, "namespaces", "1")
	g.link = filepath.Join(g.port, "subsystems", nqn)
	t.Cleanup(func() { g.teardown(t) })
	mkdir(t, g.subsys)
	writeAttr(t, g.subsys, "attr_allow_any_host", "1")
	mkdir(t, g.ns)
	writeAttr(t, g.ns, "device_path", disk.path())
	writeAttr(t, g.ns, "enable", "1")
	if got := readAttr(t, g.ns, "enable"); got != "1" {
		t.Fatalf("namespace 1 on %s: enable reads %q", disk.path(), got)
	}
	mkdir(t, g.port)
	for _, a := range [][2]string{{"addr_trtype", "rdma"}, {"addr_adrfam", "ipv4"},
		{"addr_traddr", nvmeAddr}, {"addr_trsvcid", nvmeSvcID}} {
		writeAttr(t, g.port, a[0], a[1])
	}
	// Linking enables the port: nvmet_rdma's rdma_listen, before the
	// symlink call returns.
	if err := os.Symlink(g.subsys, g.link); err != nil {
		t.Fatalf("link port %s to %s: %v", nvmePortID, nqn, err)
	}
	checkListener(t, dev)
	return g
}

// checkListener asserts that one cm_id listens on dev with the target's
// address and port: nvmet_rdma's, which the port's enabling made before
// the symlink call returned.
func checkListener(t *testing.T, dev string) {
	t.Helper()
	want := nvmeAddr + ":" + nvmeSvcID
	var ls []map[string]any
	for _, id := range rdmaOnDev(t, dev, "cm_id") {
		if id["state"] == "LISTEN" && id["src-addr"] == want {
			ls = append(ls, id)
		}
	}
	if len(ls) != 1 {
		t.Fatalf("listening cm_ids on %s for %s: %v, want one (nvmet_rdma's)", dev, want, ls)
	}
}

// relink disables the port and enables it again, removing its link to
// the subsystem and making it anew, and checks that nvmet_rdma listens on
// dev. After its device went nothing else brings the port's listener
// back: nvmet_rdma's handler of the listener's DEVICE_REMOVAL event has
// the RDMA core destroy that cm_id and leaves the port without one, and
// its repair work (a new listener, retried every 5 s) is queued on
// ADDR_CHANGE only (drivers/nvme/target/rdma.c, 6.1 and 6.12; on 6.1 no
// cm_id appeared on the new device in the 12 s it was watched); nvmet
// enables a port when its first subsystem link is made and disables it
// when its last goes, and has no other switch. Disabling cancels the
// repair work, so on a kernel that does repair the relink is harmless. The
// new device's GID is in the core's cache before `rdma link add` returns
// (ib_register_device fills it), so the new listener's bind finds it.
func (g *nvmeTarget) relink(t *testing.T, dev string) {
	t.Helper()
	if err := os.Remove(g.link); err != nil {
		t.Fatalf("unlink %s: %v", g.link, err)
	}
	if err := os.Symlink(g.subsys, g.link); err != nil {
		t.Fatalf("link port %s again after its device went: %v", nvmePortID, err)
	}
	checkListener(t, dev)
}

// teardown removes the target in the order configfs allows: the port's
// link to the subsystem (which disables the port: its listener must go),
// the namespace, the subsystem, the port. Each step is skipped if done.
func (g *nvmeTarget) teardown(t *testing.T) {
	t.Helper()
	if _, err := os.Lstat(g.link); err == nil {
		if err := os.Remove(g.link); err != nil {
			t.Errorf("unlink %s: %v", g.link, err)
		}
		waitListenerGone(t)
	}
	if _, err := os.Stat(g.ns); err == nil {
		writeAttr(t, g.ns, "enable", "0")
	}
	for _, d := range []string{g.ns, g.subsys, g.port} {
		if _, err := os.Stat(d); err != nil {
			continue
		}
		if err := os.Remove(d); err != nil {
			t.Errorf("rmdir %s: %v", d, err)
		}
	}
}

// waitListenerGone waits until no cm_id of any device has the target's
// address and port: nvmet_rdma's listener, and the target's ends of the
// queues, are gone.
func waitListenerGone(t *testing.T) {
	t.Helper()
	listen := nvmeAddr + ":" + nvmeSvcID
	waitFor(t, "nvmet_rdma's listener to go", func() (bool, string) {
		for _, id := range rdmaAll(t, "cm_id") {
			if id["src-addr"] == listen {
				return false, fmt.Sprint(id)
			}
		}
		return true, ""
	})
}

// nvmeCtrl is a host controller, /sys/class/nvme/NAME.
type nvmeCtrl struct {
	name, nqn string
	queues    int
}

func (c *nvmeCtrl) dir() string { return filepath.Join("/sys/class/nvme", c.name) }

// nvmeControllers lists /sys/class/nvme.
func nvmeControllers(t *testing.T) []string {
	t.Helper()
	return dirNames(t, "/sys/class/nvme")
}

// waitController waits for a controller of subsystem nqn to go live.
func waitController(t *testing.T, nqn string) *nvmeCtrl {
	t.Helper()
	var c *nvmeCtrl
	waitFor(t, "a live controller of "+nqn, func() (bool, string) {
		var seen []string
		for _, n := range nvmeControllers(t) {
			d := filepath.Join("/sys/class/nvme", n)
			if attrOr(d, "subsysnqn") != nqn {
				continue
			}
			state := attrOr(d, "state")
			seen = append(seen, n+": "+state)
			if state == "live" {
				c = &nvmeCtrl{name: n, nqn: nqn}
				return true, ""
			}
		}
		return false, strings.Join(seen, ", ")
	})
	return c
}

// connectFabrics writes opts to /dev/nvme-fabrics, as nvme-cli does, and
// reads back the new controller's instance ("instance=N,cntlid=M"). It
// returns the controller once it is live.
func connectFabrics(t *testing.T, opts string) *nvmeCtrl {
	t.Helper()
	f, err := os.OpenFile("/dev/nvme-fabrics", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write([]byte(opts)); err != nil {
		t.Fatalf("/dev/nvme-fabrics %q: %v", opts, err)
	}
	buf := make([]byte, 256)
	n, err := f.Read(buf)
	if err != nil {
		t.Fatalf("/dev/nvme-fabrics: reading the new controller: %v", err)
	}
	m := regexp.MustCompile(`^instance=(\d+),cntlid=(\d+)`).FindStringSubmatch(string(buf[:n]))
	if m == nil {
		t.Fatalf("/dev/nvme-fabrics answered %q", buf[:n])
	}
	c := &nvmeCtrl{name: "nvme" + m[1], nqn: opts[strings.Index(opts, "nqn=")+4:]}
	c.nqn = c.nqn[:strings.IndexByte(c.nqn, ',')]
	got := waitController(t, c.nqn)
	if got.name != c.name {
		t.Fatalf("/dev/nvme-fabrics made instance %s, the live controller of %s is %s", m[1], c.nqn, got.name)
	}
	if cntlid := attrOr(c.dir(), "cntlid"); cntlid != m[2] {
		t.Errorf("%s: cntlid %s, /dev/nvme-fabrics said %s", c.name, cntlid, m[2])
	}
	return c
}

// check asserts what the controller says of itself (transport rdma, our
// address, the host NQN and ID when given, an admin queue and at least one I/O
// queue) and that every queue is an rdma_cm connection on dev: a
// connected cm_id of nvme_rdma to the target's address and port per
// queue, the target's connected cm_id with that address and port at the
// other end, and a QP for each end.
func (c *nvmeCtrl) check(t *testing.T, dev, hostnqn, hostid string) {
	t.Helper()
	d := c.dir()
	if v := attrOr(d, "transport"); v != "rdma" {
		t.Errorf("%s: transport %q", c.name, v)
	}
	want := "traddr=" + nvmeAddr + ",trsvcid=" + nvmeSvcID
	if v := attrOr(d, "address"); v != want && !strings.HasPrefix(v, want+",") {
		t.Errorf("%s: address %q, want %s", c.name, v, want)
	}
	if hostnqn != "" {
		if v := attrOr(d, "hostnqn"); v != hostnqn {
			t.Errorf("%s: hostnqn %q, want %s", c.name, v, hostnqn)
		}
		if v := attrOr(d, "hostid"); v != hostid {
			t.Errorf("%s: hostid %q, want %s", c.name, v, hostid)
		}
	}
	q, err := strconv.Atoi(attrOr(d, "queue_count"))
	if err != nil || q < 2 {
		t.Fatalf("%s: queue_count %q: want the admin queue and I/O queues", c.name, attrOr(d, "queue_count"))
	}
	c.queues = q
	target := nvmeAddr + ":" + nvmeSvcID
	hosts, tgts := map[string]bool{}, map[string]bool{}
	var other []map[string]any
	for _, id := range rdmaOnDev(t, dev, "cm_id") {
		switch {
		case id["state"] == "LISTEN":
		case id["state"] == "CONNECT" && id["dst-addr"] == target:
			hosts[fmt.Sprint(id["src-addr"])] = true
		case id["state"] == "CONNECT" && id["src-addr"] == target:
			tgts[fmt.Sprint(id["dst-addr"])] = true
		default:
			other = append(other, id)
		}
	}
	if len(hosts) != q || len(tgts) != q || len(other) != 0 {
		t.Fatalf("%s with %d queues: connected cm_ids on %s: host ends %v, target ends %v, others %v",
			c.name, q, dev, sortedKeys(hosts), sortedKeys(tgts), other)
	}
	for h := range hosts {
		if !tgts[h] {
			t.Errorf("host cm_id %s -> %s has no target cm_id at the other end (%v)", h, target, sortedKeys(tgts))
		}
	}
	if qps := rdmaOnDev(t, dev, "qp"); len(qps) != 2*q {
		t.Errorf("%d QPs on %s, want %d (host and target, %d queues): %v", len(qps), dev, 2*q, q, qps)
	}
	t.Logf("%s: %d queues (admin and %d I/O), each a connection on %s", c.name, q, q-1, dev)
}

// namespace waits for the block device of namespace 1 (the multipath
// head nvmeSnN under the controller's subsystem, or nvmeCnN under the
// controller without multipath) with disk's size, and returns its path.
func (c *nvmeCtrl) namespace(t *testing.T, disk *nullBlk) string {
	t.Helper()
	re := regexp.MustCompile(`^nvme\d+n1$`)
	var name string
	waitFor(t, c.name+"'s namespace 1", func() (bool, string) {
		dirs := []string{c.dir()}
		if subs, err := filepath.Glob("/sys/class/nvme-subsystem/*/" + c.name); err == nil {
			for _, s := range subs {
				dirs = append(dirs, filepath.Dir(s))
			}
		}
		for _, d := range dirs {
			for _, n := range dirNames(t, d) {
				if re.MatchString(n) {
					name = n
					return true, ""
				}
			}
		}
		return false, fmt.Sprint(dirs)
	})
	waitBlockDev(t, name, disk.bytes)
	return "/dev/" + name
}

// remove deletes the controller if it is still there (a failed test).
func (c *nvmeCtrl) remove(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(c.dir()); err != nil {
		return
	}
	if err := os.WriteFile(filepath.Join(c.dir(), "delete_controller"), []byte("1"), 0); err != nil {
		t.Errorf("%s: delete_controller: %v", c.name, err)
	}
}

// waitGone waits for the controller and its namespace's node to go.
func (c *nvmeCtrl) waitGone(t *testing.T, ns string) {
	t.Helper()
	waitPathGone(t, c.dir())
	waitPathGone(t, ns)
}

// waitQueuesGone waits until nothing but nvmet_rdma's listener is left on
// dev: the host's cm_ids and QPs go with its controller, the target's in
// its release work.
func waitQueuesGone(t *testing.T, dev string) {
	t.Helper()
	waitConnsGone(t, dev, "the queues'")
}

// checkDevEmpty fails the test for each cm_id and QP left on dev.
func checkDevEmpty(t *testing.T, dev string) {
	t.Helper()
	if ids := rdmaOnDev(t, dev, "cm_id"); len(ids) != 0 {
		t.Errorf("cm_ids left on %s: %v", dev, ids)
	}
	if qps := rdmaOnDev(t, dev, "qp"); len(qps) != 0 {
		t.Errorf("QPs left on %s: %v", dev, qps)
	}
}

// waitConnsGone waits until nothing but listeners is left on dev: no
// connected cm_id, no QP. whose names them in the wait's description.
func waitConnsGone(t *testing.T, dev, whose string) {
	t.Helper()
	waitFor(t, whose+" cm_ids and QPs on "+dev+" to go", func() (bool, string) {
		var left []map[string]any
		for _, id := range rdmaOnDev(t, dev, "cm_id") {
			if id["state"] != "LISTEN" {
				left = append(left, id)
			}
		}
		left = append(left, rdmaOnDev(t, dev, "qp")...)
		return len(left) == 0, fmt.Sprint(left)
	})
}

// fioVerify runs fio on the namespace: sizeMiB written with rw ("write",
// "randwrite") in blocks of bs at iodepth, then read back and verified
// (crc32c in every block with its offset; the first bad block fails the
// run). Its JSON report must show no error and every octet written and
// read.
func fioVerify(t *testing.T, ns, rw, bs string, sizeMiB, iodepth int) {
	t.Helper()
	start := time.Now()
	out, err := runIn(t, "", nvmeFioLimit, "fio", "--name=nvme-"+rw, "--filename="+ns,
		"--ioengine=libaio", "--direct=1", "--rw="+rw, "--bs="+bs,
		fmt.Sprintf("--size=%dM", sizeMiB), fmt.Sprintf("--iodepth=%d", iodepth),
		"--verify=crc32c", "--do_verify=1", "--verify_fatal=1", "--verify_state_save=0",
		"--output-format=json")
	if err != nil {
		t.Fatalf("fio %s %s: %v\n%s", rw, bs, err, clip(out))
	}
	var rep struct {
		Jobs []struct {
			Error int `json:"error"`
			Read  struct {
				IOBytes int64   `json:"io_bytes"`
				BW      float64 `json:"bw_bytes"`
			} `json:"read"`
			Write struct {
				IOBytes int64   `json:"io_bytes"`
				BW      float64 `json:"bw_bytes"`
			} `json:"write"`
		} `json:"jobs"`
	}
	i := strings.IndexByte(out, '{')
	if i < 0 {
		t.Fatalf("fio %s %s: no JSON report:\n%s", rw, bs, clip(out))
	}
	if err := json.Unmarshal([]byte(out[i:]), &rep); err != nil || len(rep.Jobs) != 1 {
		t.Fatalf("fio %s %s: report: %v, %d jobs\n%s", rw, bs, err, len(rep.Jobs), clip(out))
	}
	j := rep.Jobs[0]
	size := int64(sizeMiB) << 20
	if j.Error != 0 || j.Write.IOBytes != size || j.Read.IOBytes != size {
		t.Fatalf("fio %s %s: error %d, %d octets written and %d read and verified, want %d",
			rw, bs, j.Error, j.Write.IOBytes, j.Read.IOBytes, size)
	}
	t.Logf("fio %s %s, %d MiB at depth %d: written at %.1f MB/s, read and verified at %.1f MB/s (%v)",
		rw, bs, sizeMiB, iodepth, j.Write.BW/1e6, j.Read.BW/1e6, time.Since(start).Round(time.Millisecond))
}

// nvmePattern is random data written at an offset of a block device.
type nvmePattern struct {
	off  int64
	data []byte
}

const patternLen = 1 << 20

// newPattern writes a fresh random MiB at offMiB of path (O_DIRECT).
func newPattern(t *testing.T, path string, offMiB int) nvmePattern {
	t.Helper()
	p := nvmePattern{off: int64(offMiB) << 20, data: make([]byte, patternLen)}
	if _, err := rand.Read(p.data); err != nil {
		t.Fatal(err)
	}
	buf := directBuf(t)
	copy(buf, p.data)
	f := openDirect(t, path, os.O_WRONLY)
	defer f.Close()
	if n, err := f.WriteAt(buf, p.off); err != nil || n != len(buf) {
		t.Fatalf("write %d octets at %d of %s: %d, %v", len(buf), p.off, path, n, err)
	}
	return p
}

// checkAt reads the pattern's octets from path (O_DIRECT: from the
// device, not the page cache) and compares them.
func (p nvmePattern) checkAt(t *testing.T, path, how string) {
	t.Helper()
	buf := directBuf(t)
	f := openDirect(t, path, os.O_RDONLY)
	defer f.Close()
	if n, err := f.ReadAt(buf, p.off); err != nil || n != len(buf) {
		t.Fatalf("read %d octets at %d of %s: %d, %v", len(buf), p.off, path, n, err)
	}
	if !bytes.Equal(buf, p.data) {
		i := 0
		for i < len(buf) && buf[i] == p.data[i] {
			i++
		}
		t.Errorf("%s at %d MiB, %s: differs from octet %d on", path, p.off>>20, how, i)
	}
}

// nvmeCrossCheck writes a pattern at offMiB through the namespace and finds
// it on the target's disk, and one at offMiB+1 on the disk and finds it
// through the namespace. It returns both.
func nvmeCrossCheck(t *testing.T, ns string, disk *nullBlk, offMiB int) []nvmePattern {
	t.Helper()
	a := newPattern(t, ns, offMiB)
	a.checkAt(t, disk.path(), "written through "+ns+", read on the target's disk")
	b := newPattern(t, disk.path(), offMiB+1)
	b.checkAt(t, ns, "written on the target's disk, read through "+ns)
	return []nvmePattern{a, b}
}

func openDirect(t *testing.T, path string, flag int) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, flag|unix.O_DIRECT, 0)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// directBuf is a page-aligned buffer of patternLen for O_DIRECT.
func directBuf(t *testing.T) []byte {
	t.Helper()
	b, err := unix.Mmap(-1, 0, patternLen, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(b) })
	return b
}

// rdmaAll lists `rdma res show KIND` (cm_id, qp) of every device.
func rdmaAll(t *testing.T, kind string) []map[string]any {
	t.Helper()
	return rdmaJSON(t, "", "res", "show", kind)
}

// rdmaOnDev lists `rdma res show KIND` of device dev.
func rdmaOnDev(t *testing.T, dev, kind string) []map[string]any {
	t.Helper()
	var l []map[string]any
	for _, r := range rdmaAll(t, kind) {
		if r["ifname"] == dev {
			l = append(l, r)
		}
	}
	return l
}

// waitBlockDev waits for /dev/name, a block device, whose disk has size
// octets.
func waitBlockDev(t *testing.T, name string, size int64) {
	t.Helper()
	waitFor(t, "block device /dev/"+name, func() (bool, string) {
		st, err := os.Stat("/dev/" + name)
		if err != nil {
			return false, err.Error()
		}
		if st.Mode()&fs.ModeDevice == 0 || st.Mode()&fs.ModeCharDevice != 0 {
			return false, "not a block device: " + st.Mode().String()
		}
		return true, ""
	})
	// /sys/block/NAME/size counts 512-octet sectors.
	if s := attrOr("/sys/block/"+name, "size"); s != strconv.FormatInt(size/512, 10) {
		t.Fatalf("/dev/%s: %s sectors, want %d", name, s, size/512)
	}
}

// waitPathGone waits for path to disappear.
func waitPathGone(t *testing.T, path string) {
	t.Helper()
	waitFor(t, path+" to go", func() (bool, string) {
		_, err := os.Lstat(path)
		return errors.Is(err, fs.ErrNotExist), fmt.Sprint(err)
	})
}

// waitFor polls cond every 50 ms until it holds, for nvmeWait at most;
// the last state cond reported goes in the failure.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(nvmeWait); ; time.Sleep(50 * time.Millisecond) {
		var ok bool
		if ok, last = cond(); ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s: %s", nvmeWait, what, last)
		}
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func writeAttr(t *testing.T, dir, name, v string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0); err != nil {
		t.Fatalf("%s = %q: %v", filepath.Join(dir, name), v, err)
	}
}

func readAttr(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// attrOr reads a sysfs attribute, "" if it cannot.
func attrOr(dir, name string) string {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// dirNames lists a directory, none if it does not exist.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var l []string
	for _, e := range es {
		l = append(l, e.Name())
	}
	return l
}

func sortedKeys(m map[string]bool) []string {
	var l []string
	for k := range m {
		l = append(l, k)
	}
	sort.Strings(l)
	return l
}
