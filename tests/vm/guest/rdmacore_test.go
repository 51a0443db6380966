// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRDMACoreDevice: `rdma link add NAME type iwarp netdev DEV` gives an
// iwarp link NAME and an RDMA-core device NAME (docs/RDMA-CORE.md, stage
// 1), made by iwarp_rdma.ko on top of iwarp.ko. libibverbs binds libsiw to
// it, its port follows the netdev, every way it goes away tells a process
// that holds it open, concurrent ways leave nothing behind, and siw.ko
// beside it neither sees it nor keeps its module from working.
//
//	netns A: va 10.11.0.1 ── veth ── netns B: vb 10.11.0.2   rdma link add … netdev vb
func TestRDMACoreDevice(t *testing.T) {
	loadRDMACore(t)
	tp := newTopology(t)
	b := tp.B

	// iwarp.ko needs no RDMA core (the genetlink path loads without it);
	// iwarp_rdma.ko needs both, ib_core loads it by its alias on `rdma link
	// add ... type iwarp`, and it pins iwarp.ko while loaded.
	t.Run("modules", func(t *testing.T) {
		deps := func(path string) []string {
			return strings.Split(strings.TrimSpace(run(t, "modinfo", "-F", "depends", path)), ",")
		}
		// A dependency is named only when it is a module (loaded by now);
		// the debug kernel builds libcrc32c and ib_core in.
		module := func(m string) bool {
			_, err := os.Stat("/sys/module/" + m + "/initstate")
			return err == nil
		}
		if d := deps(os.Getenv("IWARP_KO")); slices.Contains(d, "ib_core") ||
			slices.Contains(d, "libcrc32c") != module("libcrc32c") {
			t.Errorf("iwarp.ko depends on %v: want libcrc32c (if a module) and no ib_core", d)
		}
		rko := os.Getenv("IWARP_RDMA_KO")
		if d := deps(rko); !slices.Contains(d, "iwarp") || slices.Contains(d, "ib_core") != module("ib_core") {
			t.Errorf("iwarp_rdma.ko depends on %v: want iwarp and ib_core (if a module)", d)
		}
		out, err := exec.Command("rmmod", "iwarp").CombinedOutput()
		if err == nil || !moduleLoaded() || !strings.Contains(string(out), "in use") {
			t.Fatalf("rmmod iwarp with iwarp_rdma loaded: %v %q, want it refused as in use", err, out)
		}
	})

	t.Run("add", func(t *testing.T) {
		name := rdmaIwarpAdd(t, b, "iwrc_add", "vb")
		// The device, an RNIC, and its port on vb (the netdev shows in
		// the netdev's namespace only).
		dev := rdmaJSON(t, b, "dev", "show", name)
		if len(dev) != 1 || dev[0]["ifname"] != name || dev[0]["node_type"] != "rnic" {
			t.Fatalf("rdma dev show %s: %v", name, dev)
		}
		port := rdmaJSON(t, b, "link", "show", name+"/1")
		if len(port) != 1 || port[0]["netdev"] != "vb" || port[0]["state"] != "ACTIVE" ||
			port[0]["physical_state"] != "LINK_UP" {
			t.Fatalf("rdma link show %s/1: %v", name, port)
		}
		// The iwarp link of the same name, with the default parameters.
		out, errs, code := iwarpctl(t, b, "link", "show", name)
		if code != 0 || !regexp.MustCompile(`^link `+name+` index \d+ +netdev vb ifindex \d+ state up flags none +mpa-rev 2 rtr write ird 16 +ord 16\n$`).MatchString(out) {
			t.Fatalf("iwarpctl link show %s: exit %d %q %q", name, code, out, errs)
		}
		// libibverbs lists it only if a provider (libsiw: driver id and
		// ABI version) matched; the node GUID is vb's MAC as EUI-64.
		mac := macOf(t, b, "vb")
		if guid, ok := ibvDevices(t)[name]; !ok || guid != eui64(mac) {
			t.Fatalf("ibv_devices: %v, want %s with GUID %s", ibvDevices(t), name, eui64(mac))
		}
		// The GID (the core's cache, from query_gid) is the MAC.
		waitGID(t, name, mac)
		info := ibvDevinfo(t, name)
		for _, re := range []string{`transport:\s+iWARP \(1\)`, `vendor_id:\s+0x697770`,
			`vendor_part_id:\s+1\n`, `\sstate:\s+PORT_ACTIVE \(4\)`, `link_layer:\s+Ethernet`} {
			if !regexp.MustCompile(re).MatchString(info) {
				t.Errorf("ibv_devinfo -d %s: no %q in\n%s", name, re, info)
			}
		}
	})

	t.Run("port", func(t *testing.T) {
		name := rdmaIwarpAdd(t, b, "iwrc_port", "vb")
		w := startAsyncWatch(t, name)
		t.Cleanup(func() { exec.Command("ip", "-n", b, "link", "set", "vb", "up").Run() })
		run(t, "ip", "-n", b, "link", "set", "vb", "down")
		w.expect(t, "IBV_EVENT_PORT_ERR")
		waitDevinfoState(t, name, "PORT_DOWN (1)")
		if port := rdmaJSON(t, b, "link", "show", name+"/1"); port[0]["state"] != "DOWN" {
			t.Fatalf("rdma link show after vb down: %v", port)
		}
		// A new MAC is a new GID. The module's IB_EVENT_GID_CHANGE
		// refreshes the core's GID cache (port events do not re-read
		// GIDs); the core passes it to no user on a port that is not
		// RoCE (ib_cache_event_task), so the cache is what shows it.
		run(t, "ip", "-n", b, "link", "set", "vb", "address", "02:00:00:00:0b:01")
		waitGID(t, name, net.HardwareAddr{2, 0, 0, 0, 0x0b, 1})
		run(t, "ip", "-n", b, "link", "set", "vb", "up")
		w.expect(t, "IBV_EVENT_PORT_ACTIVE")
		waitDevinfoState(t, name, "PORT_ACTIVE (4)")
	})

	// Every way the device goes: a process holding it open (ibv_asyncwatch)
	// gets IB_EVENT_DEVICE_FATAL, the device and the iwarp link are gone.
	for _, c := range []struct {
		name   string
		netdev string
		remove func(t *testing.T, name string)
	}{
		{"rdma-link-delete", "vb", func(t *testing.T, name string) {
			run(t, "rdma", "link", "delete", name)
		}},
		{"iwarpctl-link-del", "vb", func(t *testing.T, name string) {
			if _, errs, code := iwarpctl(t, b, "link", "del", name); code != 0 {
				t.Fatalf("iwarpctl link del %s: exit %d %s", name, code, errs)
			}
		}},
		{"netdev-delete", "vx0", func(t *testing.T, name string) {
			run(t, "ip", "-n", b, "link", "del", "vx0")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.netdev == "vx0" {
				run(t, "ip", "-n", b, "link", "add", "vx0", "type", "veth", "peer", "name", "vx1")
				run(t, "ip", "-n", b, "link", "set", "vx1", "up")
				run(t, "ip", "-n", b, "link", "set", "vx0", "up")
				t.Cleanup(func() { exec.Command("ip", "-n", b, "link", "del", "vx0").Run() })
			}
			name := rdmaIwarpAdd(t, b, "iwrc_"+strings.ReplaceAll(c.name, "-", "")[:6], c.netdev)
			w := startAsyncWatch(t, name)
			c.remove(t, name)
			w.expect(t, "IBV_EVENT_DEVICE_FATAL")
			waitRDMADevGone(t, name)
			if out := run(t, "rdma", "dev", "show"); strings.Contains(out, name+":") {
				t.Fatalf("rdma dev show still lists %s:\n%s", name, out)
			}
			if out, _, _ := iwarpctl(t, b, "link", "show"); strings.Contains(out, "link "+name+" ") {
				t.Fatalf("iwarp link %s survived its device:\n%s", name, out)
			}
		})
	}

	t.Run("mr", func(t *testing.T) { rdmaCoreMR(t, b) })
	t.Run("cq", func(t *testing.T) { rdmaCoreCQ(t, b) })
	t.Run("qp", func(t *testing.T) { rdmaCoreQP(t, b) })

	t.Run("refused", func(t *testing.T) {
		name := rdmaIwarpAdd(t, b, "iwrc_ref", "vb")
		a := tp.A
		if _, errs, code := iwarpctl(t, a, "link", "add", "iwctl0", "dev", "va"); code != 0 {
			t.Fatalf("iwarpctl link add: %s", errs)
		}
		t.Cleanup(func() { iwarpctl(t, a, "link", "del", "iwctl0") })
		for _, c := range []struct{ ns, name, netdev, want string }{
			{b, "iwrc_ref2", "vb", "busy"},                    // vb has an iwarp link (the rdma one)
			{a, "iwrc_ref3", "va", "busy"},                    // va has an iwarp link (iwarpctl's)
			{b, name, "vx9", "No such device"},                // no such netdev
			{a, name, "va", "exists"},                         // the device name is taken
			{b, "b@d", "vb", "Invalid argument"},              // not a link name
			{b, "iwrc_sixteen_chr", "vb", "Invalid argument"}, // 16 octets: too long for a link name
		} {
			out, err := exec.Command("ip", "netns", "exec", c.ns, "rdma", "link", "add", c.name,
				"type", "iwarp", "netdev", c.netdev).CombinedOutput()
			if err == nil || !strings.Contains(strings.ToLower(string(out)), strings.ToLower(c.want)) {
				t.Errorf("rdma link add %s netdev %s: %v %q, want a failure saying %q", c.name, c.netdev, err, out, c.want)
			}
			if c.name != name {
				if _, err := os.Stat("/sys/class/infiniband/" + c.name); err == nil {
					t.Errorf("refused %s is listed", c.name)
				}
			}
		}
		// Neither refusal touched the links that exist.
		if out, _, _ := iwarpctl(t, b, "link", "show"); strings.Count(out, "link ") != 1 || !strings.Contains(out, "link "+name+" ") {
			t.Fatalf("links in B after the refusals:\n%s", out)
		}
		ibvDevinfo(t, name)
	})

	// With siw.ko loaded, siw's netdev notifier must not find our device
	// (get_netdev, not ib_device_set_netdev); unloading siw unregisters
	// our devices too (same driver id): the iwarp link goes with its
	// device, and the module keeps working.
	t.Run("siw", func(t *testing.T) {
		loadSiw(t, "default")
		name := rdmaIwarpAdd(t, b, "iwrc_siw", "vb")
		siwDev := siwLinkAdd(t, tp.A, "va")
		devs := ibvDevices(t)
		if _, ok := devs[name]; !ok {
			t.Fatalf("ibv_devices: %v, no %s", devs, name)
		}
		if _, ok := devs[siwDev]; !ok {
			t.Fatalf("ibv_devices: %v, no %s", devs, siwDev)
		}
		w := startAsyncWatch(t, name)
		run(t, "ip", "-n", b, "link", "set", "vb", "down")
		w.expect(t, "IBV_EVENT_PORT_ERR")
		run(t, "ip", "-n", b, "link", "set", "vb", "up")
		w.expect(t, "IBV_EVENT_PORT_ACTIVE")
		if info := ibvDevinfo(t, siwDev); !regexp.MustCompile(`transport:\s+iWARP`).MatchString(info) {
			t.Fatalf("ibv_devinfo -d %s:\n%s", siwDev, info)
		}
		if err := unloadSiw(); err != nil {
			t.Fatal(err)
		}
		w.expect(t, "IBV_EVENT_DEVICE_FATAL")
		waitRDMADevGone(t, name)
		if out, _, _ := iwarpctl(t, b, "link", "show"); strings.Contains(out, "link "+name+" ") {
			t.Fatalf("iwarp link %s survived siw's unload of its device:\n%s", name, out)
		}
		again := rdmaIwarpAdd(t, b, "iwrc_siw2", "vb")
		waitDevinfoState(t, again, "PORT_ACTIVE (4)")
		run(t, "rdma", "link", "delete", again)
		waitRDMADevGone(t, again)
	})

	// Links made in every way at once, deleted in every way at once: each
	// round ends with no device, no link and no netdev left, and nothing
	// waiting (a netdev still held would keep `ip link del` from
	// returning, a device never unregistered would keep the module).
	t.Run("race", func(t *testing.T) {
		name := "iwrc_race"
		const rounds = 8
		// Which of the ways won, per round: the log shows the race was
		// run, not only survived.
		won := map[string]int{}
		for i := 0; i < rounds; i++ {
			run(t, "ip", "-n", b, "link", "add", "vr0", "type", "veth", "peer", "name", "vr1")
			run(t, "ip", "-n", b, "link", "set", "vr0", "up")
			// The deletions try again until one succeeds or the add has
			// returned (and once more then), so they meet it at every
			// stage of its registration.
			// One deletion of the device per round, in turn (the faster
			// would always win), and every other round the netdev too.
			dels := map[string][]string{}
			if i%4 < 2 {
				dels["rdma-del"] = []string{"rdma", "link", "delete", name}
			} else {
				dels["iwarpctl-del"] = []string{"ip", "netns", "exec", b, os.Getenv("IWARPCTL"), "link", "del", name}
			}
			if i%2 == 1 {
				dels["netdev-del"] = []string{"ip", "-n", b, "link", "del", "vr0"}
			}
			added := make(chan struct{})
			var wg sync.WaitGroup
			var mu sync.Mutex
			win := func(way string) {
				mu.Lock()
				won[way]++
				mu.Unlock()
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer close(added)
				if exec.Command("ip", "netns", "exec", b, "rdma", "link", "add", name,
					"type", "iwarp", "netdev", "vr0").Run() == nil {
					win("add")
				}
			}()
			for way, argv := range dels {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for last := false; !last; {
						select {
						case <-added:
							last = true
						default:
						}
						if exec.Command(argv[0], argv[1:]...).Run() == nil {
							win(way)
							return
						}
					}
				}()
			}
			wg.Wait()
			// Whatever survived the race goes the plain way.
			exec.Command("rdma", "link", "delete", name).Run()
			iwarpctl(t, b, "link", "del", name)
			exec.Command("ip", "-n", b, "link", "del", "vr0").Run()
			waitRDMADevGone(t, name)
			if out, _, _ := iwarpctl(t, b, "link", "show"); strings.Contains(out, "link "+name+" ") {
				t.Fatalf("round %d: iwarp link %s left:\n%s", i, name, out)
			}
			if out, err := exec.Command("ip", "-n", b, "link", "show", "vr0").CombinedOutput(); err == nil {
				t.Fatalf("round %d: vr0 left:\n%s", i, out)
			}
		}
		t.Logf("ways that succeeded, of %d rounds: %v", rounds, won)
		// Module exit against a running add: the add finishes or is
		// refused, the unload waits for it, and nothing is left.
		for i := 0; i < 3; i++ {
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				exec.Command("ip", "netns", "exec", b, "rdma", "link", "add", name,
					"type", "iwarp", "netdev", "vb").Run()
			}()
			if err := unloadRDMAModule(); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			// An add that ran after the unload loaded nothing: the guest's
			// modprobe does not know iwarp_rdma (not installed).
			exec.Command("rdma", "link", "delete", name).Run()
			waitRDMADevGone(t, name)
			if out, _, _ := iwarpctl(t, b, "link", "show"); strings.Contains(out, "link "+name+" ") {
				t.Fatalf("unload round %d: iwarp link %s left:\n%s", i, name, out)
			}
			if err := loadRDMAModule(); err != nil {
				t.Fatal(err)
			}
		}
	})

	// Last: unloads and reloads the modules. Unloading iwarp_rdma does not
	// wait for the process that holds the device open
	// (disassociate_ucontext); it deletes its links and no other.
	t.Run("rmmod", func(t *testing.T) {
		name := rdmaIwarpAdd(t, b, "iwrc_rmmod", "vb")
		if _, errs, code := iwarpctl(t, tp.A, "link", "add", "iwctl1", "dev", "va"); code != 0 {
			t.Fatalf("iwarpctl link add: %s", errs)
		}
		// Held open with a region registered and a CQ mapped: the
		// region goes too, and the mapping outlives the module that
		// made it (libsiw polls it; unmapping it at exit runs no code
		// of ours).
		h := startIbvmr(t, b, 0, name)
		base := h.statusKB(t, "VmLck")
		h.ok(t, "pd")
		h.ok(t, "reg 65536 1")
		h.ok(t, "cq 16")
		if err := unloadRDMAModule(); err != nil {
			t.Fatalf("with %s held open: %v", name, err)
		}
		h.expect(t, "event local catastrophic error")
		if got := h.statusKB(t, "VmLck"); got != base {
			t.Fatalf("VmLck %d kB after rmmod, want %d", got, base)
		}
		if got := h.ok(t, "poll"); got != "0" {
			t.Fatalf("poll after rmmod: %q", got)
		}
		h.quit(t)
		if _, err := os.Stat("/sys/class/infiniband/" + name); err == nil {
			t.Fatalf("%s is listed after rmmod", name)
		}
		if out, _, _ := iwarpctl(t, b, "link", "show"); out != "" {
			t.Fatalf("links in B after rmmod iwarp_rdma: %q", out)
		}
		if out, _, _ := iwarpctl(t, tp.A, "link", "show"); !strings.Contains(out, "link iwctl1 ") {
			t.Fatalf("rmmod iwarp_rdma took iwarpctl's link: %q", out)
		}
		// Both again, and iwarp.ko with a device on it: unloadModule
		// unloads iwarp_rdma first, then iwarp.
		if err := loadRDMAModule(); err != nil {
			t.Fatal(err)
		}
		name = rdmaIwarpAdd(t, b, "iwrc_rmmod2", "vb")
		w := startAsyncWatch(t, name)
		if err := unloadModule(); err != nil {
			t.Fatalf("with %s held open: %v", name, err)
		}
		w.expect(t, "IBV_EVENT_DEVICE_FATAL")
		if err := loadModule(os.Getenv("IWARP_KO")); err != nil {
			t.Fatal(err)
		}
		if out, _, _ := iwarpctl(t, b, "link", "show"); out != "" {
			t.Fatalf("links after the reload: %q", out)
		}
	})
}

// rdmaIwarpAdd runs `rdma link add NAME type iwarp netdev DEV` in netns ns
// ("" for the initial namespace), checks the device is listed, and deletes
// it when the test ends if it is still there.
func rdmaIwarpAdd(t *testing.T, ns, name, netdev string) string {
	t.Helper()
	argv := nsArgv(ns, "rdma", "link", "add", name, "type", "iwarp", "netdev", netdev)
	run(t, argv[0], argv[1:]...)
	if _, err := os.Stat("/sys/class/infiniband/" + name); err != nil {
		t.Fatalf("rdma link add %s returned, the device is not listed: %v", name, err)
	}
	t.Cleanup(func() {
		if _, err := os.Stat("/sys/class/infiniband/" + name); err != nil {
			return
		}
		if out, err := exec.Command("rdma", "link", "delete", name).CombinedOutput(); err != nil {
			t.Errorf("rdma link delete %s: %v: %s", name, err, out)
		}
		waitRDMADevGone(t, name)
	})
	return name
}

// loadRDMACore loads the RDMA core's user-space modules and
// iwarp_rdma.ko, which it unloads when the test ends.
func loadRDMACore(t *testing.T) {
	t.Helper()
	for _, m := range rdmaUserModules {
		run(t, "modprobe", m)
	}
	if err := loadRDMAModule(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := unloadRDMAModule(); err != nil {
			t.Error(err)
		}
	})
}

// rdmaJSON runs `rdma -j ARGS` in netns ns ("" for the initial namespace)
// and decodes its list.
func rdmaJSON(t *testing.T, ns string, args ...string) []map[string]any {
	t.Helper()
	argv := nsArgv(ns, "rdma", append([]string{"-j"}, args...)...)
	out := run(t, argv[0], argv[1:]...)
	var v []map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("rdma -j %v: %v: %q", args, err, out)
	}
	return v
}

// ibvDevices returns ibv_devices' list: device name → node GUID.
func ibvDevices(t *testing.T) map[string]string {
	t.Helper()
	devs := map[string]string{}
	for _, l := range strings.Split(run(t, "ibv_devices"), "\n") {
		f := strings.Fields(l)
		if len(f) == 2 && f[0] != "device" && !strings.HasPrefix(f[0], "---") {
			devs[f[0]] = f[1]
		}
	}
	return devs
}

// eui64 is the node GUID a MAC makes (addrconf_addr_eui48), as ibv_devices
// prints it.
func eui64(mac net.HardwareAddr) string {
	return fmt.Sprintf("%02x%02x%02xfffe%02x%02x%02x", mac[0]^2, mac[1], mac[2], mac[3], mac[4], mac[5])
}

// waitGID waits until the device's GID 0 (sysfs, from the core's GID
// cache) is mac followed by zeros.
func waitGID(t *testing.T, name string, mac net.HardwareAddr) {
	t.Helper()
	want := fmt.Sprintf("%02x%02x:%02x%02x:%02x%02x:0000:0000:0000:0000:0000", mac[0], mac[1], mac[2], mac[3], mac[4], mac[5])
	var got []byte
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		got, _ = os.ReadFile("/sys/class/infiniband/" + name + "/ports/1/gids/0")
		if strings.TrimSpace(string(got)) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s GID 0 %q, want %s", name, got, want)
		}
	}
}

// macOf returns the MAC of netdev in netns ns.
func macOf(t *testing.T, ns, netdev string) net.HardwareAddr {
	t.Helper()
	var mac net.HardwareAddr
	if err := RunInNetns(ns, func() error {
		ifi, err := net.InterfaceByName(netdev)
		if err == nil {
			mac = ifi.HardwareAddr
		}
		return err
	}); err != nil || len(mac) != 6 {
		t.Fatalf("MAC of %s: %v %v", netdev, mac, err)
	}
	return mac
}

func ibvDevinfo(t *testing.T, name string) string {
	t.Helper()
	return run(t, "ibv_devinfo", "-d", name)
}

// waitDevinfoState waits until ibv_devinfo shows the port in state.
func waitDevinfoState(t *testing.T, name, state string) {
	t.Helper()
	re := regexp.MustCompile(`\n\s+state:\s+` + regexp.QuoteMeta(state))
	var info string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if info = ibvDevinfo(t, name); re.MatchString(info) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("ibv_devinfo -d %s: no port state %s:\n%s", name, state, info)
		}
	}
}

// waitRDMADevGone waits until the device is no longer listed (an
// unregistration queued by the module ends in a work item).
func waitRDMADevGone(t *testing.T, name string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat("/sys/class/infiniband/" + name); err != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still listed after 10s", name)
		}
	}
}

// asyncWatch is ibv_asyncwatch holding a device open, its lines as they
// come (line-buffered through stdbuf: it does not flush a pipe itself).
type asyncWatch struct {
	name  string
	lines chan string
	seen  []string
	errs  *bytes.Buffer
}

// startAsyncWatch opens the device with ibv_asyncwatch, waits until it
// holds it, and kills it when the test ends.
func startAsyncWatch(t *testing.T, name string) *asyncWatch {
	t.Helper()
	cmd := exec.Command("stdbuf", "-oL", "ibv_asyncwatch", "-d", name)
	w := &asyncWatch{name: name, lines: make(chan string, 64), errs: &bytes.Buffer{}}
	cmd.Stderr = w.errs
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("ibv_asyncwatch: %v", err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			w.lines <- sc.Text()
		}
		close(w.lines)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	w.expect(t, name+": async event FD")
	return w
}

// expect waits up to 10 s for a line containing want.
func (w *asyncWatch) expect(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case l, ok := <-w.lines:
			if !ok {
				t.Fatalf("ibv_asyncwatch -d %s exited before %q; lines %q, stderr %q", w.name, want, w.seen, w.errs.String())
			}
			w.seen = append(w.seen, l)
			if strings.Contains(l, want) {
				return
			}
		case <-timeout:
			t.Fatalf("ibv_asyncwatch -d %s: no %q after 10s; lines %q", w.name, want, w.seen)
		}
	}
}
