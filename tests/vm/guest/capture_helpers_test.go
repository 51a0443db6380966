// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// capture is a dumpcap recording of one interface in a namespace whose
// start and end are shown by marker datagrams, not waited out: it is live
// once a marker sent after dumpcap started is in the file, and holds
// everything that crossed the interface before a later marker once that
// one is in the file. A marker is a UDP datagram to port 9 (discard)
// broadcast out of the interface from its own namespace (nothing answers
// a broadcast, not even ICMP); the capture filter takes them besides what
// the test asked for. Both dissectors pass them over: tshark as UDP data,
// iwarpctl decode as packets that are neither TCP nor SCTP.
type capture struct {
	file   string
	cmd    *exec.Cmd
	errb   lockedBuffer
	marker int    // UDP socket bound to the interface, SO_BROADCAST
	id     uint64 // the capture's number in this process, in its markers
	seq    int    // markers sent
	seen   int64  // file octets searched for markers so far
	done   bool
}

// captureSeq numbers the captures of the process.
var captureSeq atomic.Uint64

// lockedBuffer is a bytes.Buffer for a writer and a reader at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// markerPort is where markers go: discard.
const markerPort = 9

// markerLimit bounds the wait for a marker to reach the file; one is
// sent every markerEvery until then (the first of a capture may go out
// before dumpcap's socket receives, and a packet may be lost).
const (
	markerLimit = 30 * time.Second
	markerEvery = 200 * time.Millisecond
)

// startCapture records the TCP traffic on iface in netns ns until stop
// (or the end of the test). The capture must start before the MPA Request
// for the dissectors to find the stream; it returns once the recording is
// live.
func startCapture(t *testing.T, ns, iface string) *capture {
	t.Helper()
	return startCaptureOf(t, ns, iface, "tcp")
}

// startCaptureOf is startCapture with a capture filter of its own
// ("sctp"); the markers are taken besides.
func startCaptureOf(t *testing.T, ns, iface, filter string) *capture {
	t.Helper()
	c := &capture{file: filepath.Join(t.TempDir(), iface+".pcapng"), marker: -1, id: captureSeq.Add(1)}
	if err := RunInNetns(ns, func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		c.marker = fd
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_BROADCAST, 1); err != nil {
			return err
		}
		return unix.BindToDevice(fd, iface)
	}); err != nil {
		if c.marker >= 0 {
			unix.Close(c.marker)
		}
		t.Fatalf("marker socket on %s in %s: %v", iface, ns, err)
	}
	t.Cleanup(func() { unix.Close(c.marker) })
	// -a filesize bounds a runaway capture (KB); -B keeps bursts.
	c.cmd = exec.Command("ip", "netns", "exec", ns, "dumpcap", "-i", iface,
		"-f", fmt.Sprintf("(%s) or udp port %d", filter, markerPort),
		"-w", c.file, "-a", "filesize:400000", "-B", "16")
	c.cmd.Stderr = &c.errb
	c.cmd.WaitDelay = 5 * time.Second // a child left holding stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("dumpcap: %v", err)
	}
	t.Cleanup(func() { c.stopQuiet() })
	if !waitUntil(markerLimit, func() bool { return strings.Contains(c.errb.String(), "Capturing on") }) {
		t.Fatalf("dumpcap did not start: %s", c.errb.String())
	}
	// dumpcap announces itself before its socket receives.
	if err := c.mark("start"); err != nil {
		t.Fatalf("capture on %s in %s not live: %v", iface, ns, err)
	}
	return c
}

// waitUntil polls cond every 20 ms until it holds or limit passes.
func waitUntil(limit time.Duration, cond func() bool) bool {
	for end := time.Now().Add(limit); ; time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}

// mark sends the markers of phase, one every markerEvery, until dumpcap
// has written one of them to the file (it writes packets out at its count
// updates, every half second while packets come). Any of them will do:
// each went out after what the phase follows.
func (c *capture) mark(phase string) error {
	dst := &unix.SockaddrInet4{Port: markerPort, Addr: [4]byte{255, 255, 255, 255}}
	prefix := fmt.Sprintf("iwarp-capture-marker-%d-%d-%s-", os.Getpid(), c.id, phase)
	sent := 0
	for end := time.Now().Add(markerLimit); time.Now().Before(end); {
		c.seq++
		sent++
		if err := unix.Sendto(c.marker, []byte(fmt.Sprintf("%s%d.", prefix, c.seq)), 0, dst); err != nil {
			return fmt.Errorf("marker: %w", err)
		}
		var err error
		if waitUntil(markerEvery, func() bool {
			var found bool
			found, err = c.written(prefix)
			return found || err != nil
		}) && err == nil {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return fmt.Errorf("none of %d %s markers reached the file in %v: %s", sent, phase, markerLimit, c.errb.String())
}

// written reports whether token is in the part of the file not searched
// before (and the token's length back, for one cut at the last search).
// A phase's markers start with their token; the phases differ in it.
func (c *capture) written(token string) (bool, error) {
	f, err := os.Open(c.file)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	from := max(c.seen-int64(len(token)), 0)
	b, err := io.ReadAll(io.NewSectionReader(f, from, 1<<62))
	if err != nil {
		return false, err
	}
	c.seen = from + int64(len(b))
	return bytes.Contains(b, []byte(token)), nil
}

func (c *capture) stopQuiet() error {
	if c.done {
		return nil
	}
	c.done = true
	c.cmd.Process.Signal(syscall.SIGINT)
	// A dumpcap interrupted while it was still starting has been seen
	// never to exit (a test cleanup then waited until the boot's
	// timeout): it is killed if SIGINT did not end it.
	kill := time.AfterFunc(captureStopTimeout, func() { c.cmd.Process.Kill() })
	defer kill.Stop()
	return c.cmd.Wait()
}

// captureStopTimeout bounds dumpcap's exit after SIGINT, writing out what
// it has read included.
const captureStopTimeout = 30 * time.Second

// stop marks the end, stops dumpcap once the marker is in the file and
// returns the file: everything that crossed the interface before the
// marker is in it (dumpcap writes in the order its socket received, and
// it trails the traffic by seconds under emulation). The caller's
// traffic must be over, the far end having taken it (its processes
// done): a packet still on its way may or may not be recorded.
func (c *capture) stop(t *testing.T) string {
	t.Helper()
	if err := c.mark("end"); err != nil {
		t.Fatalf("capture end: %v", err)
	}
	if err := c.stopQuiet(); err != nil {
		t.Fatalf("dumpcap (stopped with SIGINT): %v: %s", err, c.errb.String())
	}
	return c.file
}

// wireReport is what Wireshark's iWARP dissectors make of a capture.
type wireReport struct {
	Frames     int
	MPAReq     int            // MPA Request frames
	MPARep     int            // MPA Reply frames
	FPDUs      int            // FPDUs decoded
	CRCChecked int            // FPDUs whose CRC tshark computed
	CRCBad     int            // FPDUs whose CRC field differs from tshark's
	Malformed  int            // frames tshark calls malformed
	Opcodes    map[string]int // RDMAP opcodes by name
	Problems   []string       // expert errors other than RFC 5044-only checks
}

// rdmapNames are the RDMAP opcodes as tshark prints them (decimal).
var rdmapNames = map[uint64]string{
	0: "write", 1: "read_request", 2: "read_response", 3: "send",
	4: "send_inv", 5: "send_se", 6: "send_se_inv", 7: "terminate",
	8: "immediate", 9: "immediate_se", 10: "atomic_request", 11: "atomic_response",
}

// tsharkPrefs make tshark follow an MPA stream however it was segmented:
// reassembly across segments, also when the capture recorded two segments
// in the wrong order (a veth capture does now and then, and siw splits an
// FPDU into header, payload and CRC segments at times), and the MPA
// heuristic tried before port-based dissectors (port 27017, which the
// tests use, belongs to MongoDB's). Every FPDU a frame completes is one
// protocol layer of that frame to tshark, and tshark calls a frame with
// more than gui.max_tree_depth layers (500 by default) a dissector bug: a
// segment that fills a gap of out-of-order data completes the FPDUs of
// everything queued behind it, 626 in one capture of 64 KiB sends. The
// layers follow one another, they do not nest, so a high limit costs no
// stack; 100000 exceeds any TCP window's worth of 28-octet FPDUs we send.
var tsharkPrefs = []string{
	"-o", "tcp.desegment_tcp_streams:TRUE",
	"-o", "tcp.reassemble_out_of_order:TRUE",
	"-o", "tcp.try_heuristic_first:TRUE",
	"-o", "gui.max_tree_depth:100000",
}

// wireCheck decodes file with tshark. MPA revision 2 and the RFC 6581
// flag are errors to tshark (it knows RFC 5044 only); those are not
// problems here.
func wireCheck(t *testing.T, file string) *wireReport {
	t.Helper()
	r, err := tsharkReport(file)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// tsharkReport runs tshark's two passes over file side by side.
func tsharkReport(file string) (*wireReport, error) {
	args := append([]string{"-r", file, "-n", "--disable-heuristic", "rpcrdma_iwarp"}, tsharkPrefs...)
	var checked, bad int
	var crcErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		checked, bad, crcErr = tsharkCRC(args)
	}()
	r, err := tsharkFields(args)
	<-done
	if err != nil {
		return nil, err
	}
	if crcErr != nil {
		return nil, crcErr
	}
	r.CRCChecked, r.CRCBad = checked, bad
	return r, nil
}

// tsharkFields counts frames, MPA frames, FPDUs, opcodes, malformed frames
// and expert errors.
func tsharkFields(args []string) (*wireReport, error) {
	out, errb, err := tsharkRun(append(slices.Clone(args),
		"-T", "fields", "-E", "separator=\t", "-E", "occurrence=a", "-E", "aggregator=;",
		"-e", "frame.number", "-e", "iwarp_mpa.key.req", "-e", "iwarp_mpa.key.rep",
		"-e", "iwarp_mpa.ulpdulength", "-e", "iwarp_mpa.crc", "-e", "iwarp_mpa.crc_check",
		"-e", "iwarp_rdma.opcode", "-e", "_ws.malformed", "-e", "_ws.expert.message",
		"-e", "_ws.expert.severity")...)
	if err != nil {
		return nil, fmt.Errorf("tshark %s: %v: %s", strings.Join(args, " "), err, errb)
	}
	r := &wireReport{Opcodes: map[string]int{}}
	split := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(s, ";")
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		for len(f) < 10 {
			f = append(f, "")
		}
		r.Frames++
		r.MPAReq += len(split(f[1]))
		r.MPARep += len(split(f[2]))
		r.FPDUs += len(split(f[3]))
		for _, op := range split(f[6]) {
			name := "opcode_" + op
			if v, err := strconv.ParseUint(op, 0, 8); err == nil && rdmapNames[v] != "" {
				name = rdmapNames[v]
			}
			r.Opcodes[name]++
		}
		if f[7] != "" {
			r.Malformed++
		}
		msgs, sevs := split(f[8]), split(f[9])
		for i, m := range msgs {
			sev := ""
			if i < len(sevs) {
				sev = sevs[i]
			}
			if !isExpertError(sev) || rfc5044Only(m) {
				continue
			}
			r.Problems = append(r.Problems, fmt.Sprintf("frame %s: %s", f[0], m))
		}
	}
	return r, sc.Err()
}

// tsharkCRC counts the FPDUs whose CRC tshark checked and those it found
// bad: the dissector puts its verdict in the text of the CRC field only
// ("Good CRC32" or "Bad CRC32, should be ...").
func tsharkCRC(args []string) (checked, bad int, err error) {
	out, errb, err := tsharkRun(append(slices.Clone(args), "-O", "iwarp_mpa", "-V")...)
	if err != nil {
		return 0, 0, fmt.Errorf("tshark -V %s: %v: %s", strings.Join(args, " "), err, errb)
	}
	vs := bufio.NewScanner(bytes.NewReader(out))
	vs.Buffer(make([]byte, 1<<20), 64<<20)
	for vs.Scan() {
		l := vs.Bytes()
		switch {
		case bytes.Contains(l, []byte("(Good CRC32)")):
			checked++
		case bytes.Contains(l, []byte("(Bad CRC32")):
			checked++
			bad++
		}
	}
	return checked, bad, vs.Err()
}

// isExpertError: tshark's severity field is PI_ERROR (0x00800000) for
// errors, in decimal or hex.
func isExpertError(sev string) bool {
	v, err := strconv.ParseUint(sev, 0, 32)
	return err == nil && v >= 0x00800000
}

func rfc5044Only(m string) bool {
	return strings.Contains(m, "RFC 5044") || strings.Contains(m, "Res field") || strings.Contains(m, "Rev field")
}

func (r *wireReport) String() string {
	ops := make([]string, 0, len(r.Opcodes))
	for k, v := range r.Opcodes {
		ops = append(ops, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(ops)
	return fmt.Sprintf("%d frames, MPA req %d rep %d, %d FPDUs, CRC checked %d bad %d, malformed %d, opcodes [%s], problems %q",
		r.Frames, r.MPAReq, r.MPARep, r.FPDUs, r.CRCChecked, r.CRCBad, r.Malformed, strings.Join(ops, " "), r.Problems)
}

// expectClean fails the test unless the capture decodes without malformed
// frames, CRC errors or expert errors, with the MPA negotiation in it, CRC
// checked on every FPDU when crc is set, and exactly the opcodes want.
func (r *wireReport) expectClean(t *testing.T, crc bool, want ...string) {
	t.Helper()
	if r.MPAReq == 0 || r.MPARep == 0 || r.FPDUs == 0 {
		t.Fatalf("capture lacks the MPA exchange or FPDUs: %v", r)
	}
	if r.Malformed != 0 || r.CRCBad != 0 || len(r.Problems) != 0 {
		t.Fatalf("capture not clean: %v", r)
	}
	if crc && r.CRCChecked != r.FPDUs {
		t.Fatalf("CRC negotiated but tshark checked %d of %d FPDUs: %v", r.CRCChecked, r.FPDUs, r)
	}
	if !crc && r.CRCChecked != 0 {
		t.Fatalf("no CRC negotiated but tshark checked %d FPDUs: %v", r.CRCChecked, r)
	}
	if got, ok := sameOps(r.Opcodes, want); !ok {
		t.Fatalf("opcodes %v, want exactly %v (%v)", got, want, r)
	}
}

// keepCapture copies a capture next to the guest's output when
// IWARP_VM_OUT is set, for a look with Wireshark after a failure.
func keepCapture(t *testing.T, file string) {
	dir := os.Getenv("IWARP_VM_OUT")
	if dir == "" || !t.Failed() {
		return
	}
	b, err := os.ReadFile(file)
	if err == nil {
		name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()) + ".pcapng"
		err = os.WriteFile(filepath.Join(dir, name), b, 0o644)
	}
	if err != nil {
		t.Logf("keeping the capture: %v", err)
	} else {
		t.Logf("capture kept in %s", dir)
	}
}

// decodeReport is what `iwarpctl decode` makes of a capture: the totals of
// its summary and the opcodes and errors summed over the directions.
type decodeReport struct {
	Exit         int
	FPDUs        int
	Errors       int
	CRCErrors    int
	MarkerErrors int
	Framing      int
	Gaps         int
	Terminates   int
	Opcodes      map[string]int
	Stderr       string
}

func (r *decodeReport) String() string {
	return fmt.Sprintf("exit %d, %d FPDUs, errors %d (crc %d, marker %d, framing %d, gaps %d), terminates %d, opcodes %v, stderr %q",
		r.Exit, r.FPDUs, r.Errors, r.CRCErrors, r.MarkerErrors, r.Framing, r.Gaps, r.Terminates, r.Opcodes, r.Stderr)
}

// decodeCapture runs `iwarpctl -j decode` over file.
func decodeCapture(t *testing.T, file string) *decodeReport {
	t.Helper()
	r, err := decodeReportOf(file)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func decodeReportOf(file string) (*decodeReport, error) {
	cmd := exec.Command(os.Getenv("IWARPCTL"), "-j", "decode", file)
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	r := &decodeReport{Opcodes: map[string]int{}}
	sc := bufio.NewScanner(pipe)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		l := sc.Bytes()
		if !bytes.Contains(l, []byte(`"summary"`)) {
			continue
		}
		var o struct {
			Dir     string `json:"dir"`
			Summary struct {
				FPDUs         int            `json:"fpdus"`
				Ops           map[string]int `json:"ops"`
				Terminates    int            `json:"terminates"`
				CRCErrors     int            `json:"crc_errors"`
				MarkerErrors  int            `json:"marker_errors"`
				FramingErrors int            `json:"framing_errors"`
				Gaps          int            `json:"gaps"`
				Connections   *int           `json:"connections"`
				Errors        int            `json:"errors"`
			} `json:"summary"`
		}
		if err := json.Unmarshal(l, &o); err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			return nil, fmt.Errorf("iwarpctl decode -j line %q: %v", l, err)
		}
		s := o.Summary
		switch {
		case s.Connections != nil: // totals
			r.FPDUs, r.Errors = s.FPDUs, s.Errors
		case o.Dir != "":
			r.CRCErrors += s.CRCErrors
			r.MarkerErrors += s.MarkerErrors
			r.Framing += s.FramingErrors
			r.Gaps += s.Gaps
			r.Terminates += s.Terminates
			for k, v := range s.Ops {
				r.Opcodes[k] += v
			}
		}
	}
	err = cmd.Wait()
	r.Stderr = strings.TrimSpace(errb.String())
	if ee, ok := err.(*exec.ExitError); ok {
		r.Exit = ee.ExitCode()
	} else if err != nil {
		return nil, fmt.Errorf("iwarpctl decode: %v", err)
	}
	return r, nil
}

// expectClean fails unless the decode found no error and the opcodes are
// exactly want.
func (r *decodeReport) expectClean(t *testing.T, want ...string) {
	t.Helper()
	if r.Exit != 0 || r.Errors != 0 || r.FPDUs == 0 {
		t.Fatalf("iwarpctl decode: %v", r)
	}
	if got, ok := sameOps(r.Opcodes, want); !ok {
		t.Fatalf("iwarpctl decode: opcodes %v, want exactly %v (%v)", got, want, r)
	}
}

// sameOps reports whether the opcodes counted are exactly want, and
// returns them sorted.
func sameOps(counted map[string]int, want []string) ([]string, bool) {
	got := make([]string, 0, len(counted))
	for k := range counted {
		got = append(got, k)
	}
	sort.Strings(got)
	w := slices.Clone(want)
	sort.Strings(w)
	return got, slices.Equal(got, w)
}

// checkCell stops the capture of an interop cell and checks it with tshark
// and with iwarpctl decode: no malformed frame, no CRC or expert error, CRC
// on every FPDU exactly when crc, exactly the opcodes ops, and both
// counting the same FPDUs. After an earlier failure it only keeps the
// capture.
func (c *capture) checkCell(t *testing.T, crc bool, ops ...string) {
	t.Helper()
	file := c.stop(t)
	defer keepCapture(t, file)
	if t.Failed() {
		return
	}
	// tshark's two passes and the decode side by side: the checks are
	// a good part of a cell's time under emulation.
	var dec *decodeReport
	var decErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		dec, decErr = decodeReportOf(file)
	}()
	rep, err := tsharkReport(file)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if decErr != nil {
		t.Fatal(decErr)
	}
	t.Logf("tshark: %v", rep)
	rep.expectClean(t, crc, ops...)
	t.Logf("iwarpctl decode: %v", dec)
	dec.expectClean(t, ops...)
	if dec.FPDUs != rep.FPDUs {
		t.Fatalf("iwarpctl decode counts %d FPDUs, tshark %d", dec.FPDUs, rep.FPDUs)
	}
}
