// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iwarp/iwarp/internal/sctpsock"
)

// TestSCTPKernel checks, against the guest kernel's own SCTP and with no
// iwarp code involved, the facts DDP over SCTP is designed on
// (docs/SCTP.md 2.1, 2.4, 3): how the Adaptation Layer Indication is
// carried and notified, the stream counts of INIT, INIT ACK and COMM_UP,
// SCTP_SNDINFO reaching the wire and SCTP_RCVINFO, and the default send
// buffer. Client in namespace A, listener in B (Topology).
func TestSCTPKernel(t *testing.T) {
	tp := newTopology(t)
	t.Run("adaptation", func(t *testing.T) { testSCTPAdaptation(t, tp) })
	t.Run("wire", func(t *testing.T) { testSCTPWire(t, tp) })
	t.Run("streams", func(t *testing.T) { testSCTPStreams(t, tp) })
	t.Run("sndbuf", func(t *testing.T) { testSCTPSndbuf(t, tp) })
}

// sctpTimeout bounds each wait of these tests (setup, a message).
const sctpTimeout = 30 * time.Second

var sctpEvents = []uint16{sctpsock.AssocChangeEvent, sctpsock.AdaptationEvent, sctpsock.ShutdownEvent}

// sctpAssoc sets an association up: a listener on TopoB4:port in B with
// srv, a client in A with cli. It returns both ends, closed when the test
// ends, with their deadlines set.
func sctpAssoc(t *testing.T, tp *Topology, port uint16, cli, srv sctpsock.Options) (c, s *sctpsock.Conn) {
	t.Helper()
	cli.Events, srv.Events = sctpEvents, sctpEvents
	cli.DialTimeout = sctpTimeout
	var l *sctpsock.Listener
	if err := tp.RunIn("b", func() (err error) {
		l, err = sctpsock.Listen(netip.AddrPortFrom(netip.MustParseAddr(TopoB4), port), srv)
		return err
	}); err != nil {
		t.Fatalf("listen: %v", err)
	}
	defer l.Close()
	deadline := time.Now().Add(sctpTimeout)
	l.SetDeadline(deadline)
	type accepted struct {
		c   *sctpsock.Conn
		err error
	}
	ac := make(chan accepted, 1)
	go func() {
		c, err := l.Accept()
		ac <- accepted{c, err}
	}()
	if err := tp.RunIn("a", func() (err error) {
		c, err = sctpsock.Dial(l.Addr(), cli)
		return err
	}); err != nil {
		t.Fatalf("dial %s: %v", l.Addr(), err)
	}
	t.Cleanup(func() { c.Close() })
	a := <-ac
	if a.err != nil {
		t.Fatalf("accept: %v", a.err)
	}
	s = a.c
	t.Cleanup(func() { s.Close() })
	c.SetDeadline(deadline)
	s.SetDeadline(deadline)
	return c, s
}

// sctpNext reads the next message or notification of end.
func sctpNext(t *testing.T, end string, c *sctpsock.Conn) *sctpsock.Message {
	t.Helper()
	m, err := c.Recv(make([]byte, 4096))
	if err != nil {
		t.Fatalf("%s: recv: %v", end, err)
	}
	return m
}

// sctpCommUp reads end's first notification, which must be COMM_UP.
func sctpCommUp(t *testing.T, end string, c *sctpsock.Conn) *sctpsock.AssocChange {
	t.Helper()
	m := sctpNext(t, end, c)
	up, ok := m.Notification.(*sctpsock.AssocChange)
	if !ok || up.State != sctpsock.CommUp {
		t.Fatalf("%s: first read %s, want COMM_UP", end, describe(m))
	}
	return up
}

func describe(m *sctpsock.Message) string {
	if m.Notification != nil {
		return fmt.Sprintf("notification %v", m.Notification)
	}
	if m.Info != nil {
		return fmt.Sprintf("%d octets of data (sid %d ppid %d flags 0x%x)", len(m.Data), m.Info.SID, m.Info.PPID, m.Info.Flags)
	}
	return fmt.Sprintf("%d octets of data without rcvinfo", len(m.Data))
}

// sctpNothing checks end has nothing queued (EAGAIN).
func sctpNothing(t *testing.T, end, after string, c *sctpsock.Conn) {
	t.Helper()
	m, err := c.TryRecv(make([]byte, 4096))
	if err == nil {
		t.Fatalf("%s: after %s, %s; want nothing queued (EAGAIN)", end, after, describe(m))
	}
	if !errors.Is(err, unix.EAGAIN) {
		t.Fatalf("%s: after %s: %v, want EAGAIN", end, after, err)
	}
}

// testSCTPAdaptation: an indication set with SCTP_ADAPTATION_LAYER reaches
// the peer as SCTP_ADAPTATION_INDICATION with its value right after
// COMM_UP, queued with it (so a non-blocking read finds it at once); with
// none set on one side the other side reads nothing after COMM_UP, then
// the data sent to it (docs/SCTP.md 2.1: "data or -EAGAIN after COMM_UP
// means NONE"). Both roles, and a value other than 1 (byte order).
func testSCTPAdaptation(t *testing.T, tp *Topology) {
	for i, c := range []struct {
		name     string
		cli, srv uint32
	}{
		{"both-1", 1, 1},
		{"client-only", 1, 0},
		{"server-only", 0, 1},
		{"client-0x12345678", 0x12345678, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			cli, srv := sctpAssoc(t, tp, uint16(7100+i),
				sctpsock.Options{Adaptation: c.cli}, sctpsock.Options{Adaptation: c.srv})
			for _, e := range []struct {
				end       string
				conn      *sctpsock.Conn
				peer      *sctpsock.Conn
				peerValue uint32
			}{{"client", cli, srv, c.srv}, {"server", srv, cli, c.cli}} {
				sctpCommUp(t, e.end, e.conn)
				if e.peerValue == 0 {
					sctpNothing(t, e.end, "COMM_UP", e.conn)
					if _, err := e.peer.Send([]byte("after"), 0, 16, true); err != nil {
						t.Fatalf("send to %s: %v", e.end, err)
					}
					m := sctpNext(t, e.end, e.conn)
					if m.Notification != nil || string(m.Data) != "after" {
						t.Fatalf("%s: after COMM_UP without the peer's indication: %s, want the data sent", e.end, describe(m))
					}
					t.Logf("%s: COMM_UP, nothing queued, then data: no indication", e.end)
					continue
				}
				m, err := e.conn.TryRecv(make([]byte, 4096))
				if err != nil {
					t.Fatalf("%s: read right after COMM_UP: %v, want ADAPTATION_INDICATION queued with it", e.end, err)
				}
				ai, ok := m.Notification.(*sctpsock.AdaptationIndication)
				if !ok {
					t.Fatalf("%s: after COMM_UP %s, want ADAPTATION_INDICATION", e.end, describe(m))
				}
				if ai.Indication != e.peerValue {
					t.Fatalf("%s: indication 0x%08x, the peer set 0x%08x", e.end, ai.Indication, e.peerValue)
				}
				sctpNothing(t, e.end, "ADAPTATION_INDICATION", e.conn)
				t.Logf("%s: COMM_UP, then %v", e.end, ai)
			}
		})
	}
}

// testSCTPWire: what the sockets set shows on the wire, read by tshark
// from a capture on B's veth: INIT and INIT ACK carry the Adaptation Layer
// Indication (parameter 0xC006) with value 1 and as many outbound as
// inbound streams (SCTP_INITMSG with sinit_num_ostreams ==
// sinit_max_instreams); a message sent with SCTP_SNDINFO (unordered, PPID
// 16, stream 3) is a DATA chunk with U = 1, PPID 16, stream 3 and arrives
// with those in SCTP_RCVINFO; an ordered one (PPID 17, stream 2) has U = 0.
func testSCTPWire(t *testing.T, tp *Topology) {
	const port = 7200
	capt := startCaptureOf(t, tp.NS("b"), "vb", fmt.Sprintf("sctp port %d", port))
	cli, srv := sctpAssoc(t, tp, port,
		sctpsock.Options{Adaptation: 1, OutStreams: 16, InStreams: 16, NoDelay: true},
		sctpsock.Options{Adaptation: 1, OutStreams: 8, InStreams: 8, NoDelay: true})
	for _, e := range []struct {
		end  string
		conn *sctpsock.Conn
	}{{"client", cli}, {"server", srv}} {
		up := sctpCommUp(t, e.end, e.conn)
		if up.OutboundStreams != 8 || up.InboundStreams != 8 {
			t.Errorf("%s: COMM_UP streams out %d in %d, want 8 and 8 (min of 16 and 8)", e.end, up.OutboundStreams, up.InboundStreams)
		}
		if m := sctpNext(t, e.end, e.conn); m.Notification == nil || m.Notification.Type() != sctpsock.AdaptationEvent {
			t.Fatalf("%s: after COMM_UP %s", e.end, describe(m))
		}
	}
	type sent struct {
		data      string
		sid       uint16
		ppid      uint32
		unordered bool
	}
	msgs := []sent{{"ddp-segment", 3, 16, true}, {"ddp-control", 2, 17, false}}
	for _, m := range msgs {
		if _, err := cli.Send([]byte(m.data), m.sid, m.ppid, m.unordered); err != nil {
			t.Fatalf("send %q: %v", m.data, err)
		}
	}
	// Unordered and ordered on different streams: either may come first.
	got := map[string]*sctpsock.RcvInfo{}
	for range msgs {
		m := sctpNext(t, "server", srv)
		if m.Notification != nil || m.Info == nil || !m.EOR {
			t.Fatalf("server: %s, want a whole message with rcvinfo", describe(m))
		}
		got[string(m.Data)] = m.Info
	}
	for _, m := range msgs {
		info := got[m.data]
		if info == nil {
			t.Fatalf("server: %q not received (got %v)", m.data, got)
		}
		if info.SID != m.sid || info.PPID != m.ppid || (info.Flags&sctpsock.FlagUnordered != 0) != m.unordered {
			t.Errorf("server: %q came with sid %d ppid %d flags 0x%x; sent sid %d ppid %d unordered %v",
				m.data, info.SID, info.PPID, info.Flags, m.sid, m.ppid, m.unordered)
		}
	}
	t.Logf("rcvinfo: %+v %+v", *got["ddp-segment"], *got["ddp-control"])

	// SHUTDOWN from the client: the server reads SHUTDOWN_EVENT, queued
	// with the SHUTDOWN that also ends its receive side, then either
	// SHUTDOWN_COMP (the last chunk, SHUTDOWN COMPLETE, came already) or
	// the end of its receive side (a read before it came: recvmsg returns
	// 0 once the queue is empty after a SHUTDOWN).
	if err := cli.Shutdown(); err != nil {
		t.Fatal(err)
	}
	sawShutdown := false
	for {
		m, err := srv.Recv(make([]byte, 4096))
		if errors.Is(err, sctpsock.ErrClosed) {
			if !sawShutdown {
				t.Fatal("server: association ended without SHUTDOWN_EVENT")
			}
			break
		}
		if err != nil {
			t.Fatalf("server: waiting for the end of the association: %v", err)
		}
		if _, ok := m.Notification.(*sctpsock.Shutdown); ok {
			sawShutdown = true
		}
		if ac, ok := m.Notification.(*sctpsock.AssocChange); ok && ac.State == sctpsock.ShutdownComp {
			if !sawShutdown {
				t.Fatal("server: SHUTDOWN_COMP without SHUTDOWN_EVENT first")
			}
			break
		}
	}
	file := capt.stop(t)
	defer keepCapture(t, file)

	// INIT (chunk type 1) and INIT ACK (2).
	rows := tsharkRows(t, file, "sctp.chunk_type == 1 || sctp.chunk_type == 2",
		"sctp.chunk_type", "sctp.init_nr_out_streams", "sctp.init_nr_in_streams",
		"sctp.initack_nr_out_streams", "sctp.initack_nr_in_streams",
		"sctp.parameter_type", "sctp.adaptation_layer_indication")
	seen := map[string]bool{}
	for _, r := range rows {
		var kind, out, in string
		switch r[0] {
		case "1":
			kind, out, in = "INIT", r[1], r[2]
		case "2":
			kind, out, in = "INIT ACK", r[3], r[4]
		default:
			t.Errorf("chunk types %q in one packet with an INIT or INIT ACK", r[0])
			continue
		}
		want := map[string]string{"INIT": "16", "INIT ACK": "8"}[kind]
		if out != want || in != want {
			t.Errorf("%s: outbound streams %q inbound %q, want %s and %s", kind, out, in, want, want)
		}
		if !hasValue(r[5], 0xc006) {
			t.Errorf("%s: parameters %q, no 0xc006 (Adaptation Layer Indication)", kind, r[5])
		}
		if v, err := strconv.ParseUint(r[6], 0, 32); err != nil || v != 1 {
			t.Errorf("%s: adaptation layer indication %q, want 1", kind, r[6])
		}
		seen[kind] = true
		t.Logf("%s: streams out %s in %s, parameters %s, indication %s", kind, out, in, r[5], r[6])
	}
	if !seen["INIT"] || !seen["INIT ACK"] || len(rows) != 2 {
		t.Errorf("%d INIT/INIT ACK packets (%v), want one of each", len(rows), rows)
	}

	// DATA (chunk type 0): one chunk per message here, retransmissions
	// aside (alike).
	rows = tsharkRows(t, file, "sctp.chunk_type == 0",
		"sctp.data_sid", "sctp.data_payload_proto_id", "sctp.data_u_bit", "sctp.data_tsn")
	chunks := map[string]string{}
	for _, r := range rows {
		sids, ppids, us := strings.Split(r[0], ";"), strings.Split(r[1], ";"), strings.Split(r[2], ";")
		if len(sids) != len(ppids) || len(sids) != len(us) {
			t.Fatalf("DATA fields misaligned: %q", r)
		}
		for i := range sids {
			u := us[i]
			if u == "True" {
				u = "1"
			} else if u == "False" {
				u = "0"
			}
			sid, err1 := strconv.ParseUint(sids[i], 0, 16) // tshark prints it in hex
			ppid, err2 := strconv.ParseUint(ppids[i], 0, 32)
			if err1 != nil || err2 != nil {
				t.Fatalf("DATA chunk: sid %q ppid %q", sids[i], ppids[i])
			}
			chunks[fmt.Sprintf("%d/%d", sid, ppid)] = u
		}
	}
	want := map[string]string{"3/16": "1", "2/17": "0"}
	if fmt.Sprint(chunks) != fmt.Sprint(want) {
		t.Errorf("DATA chunks (sid/ppid: U) %v, want %v", chunks, want)
	}
	t.Logf("DATA chunks (sid/ppid: U): %v", chunks)
}

// tsharkRows runs tshark's field output on the packets of file matching
// filter: one row per packet, a field's occurrences joined with ";".
func tsharkRows(t *testing.T, file, filter string, fields ...string) [][]string {
	t.Helper()
	args := []string{"-r", file, "-n", "-Y", filter, "-T", "fields",
		"-E", "separator=/t", "-E", "occurrence=a", "-E", "aggregator=;"}
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	out, errb, err := tsharkRun(args...)
	if err != nil {
		t.Fatalf("tshark %s: %v: %s", strings.Join(args, " "), err, errb)
	}
	var rows [][]string
	for _, l := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if l == "" {
			continue
		}
		r := strings.Split(l, "\t")
		for len(r) < len(fields) {
			r = append(r, "")
		}
		rows = append(rows, r)
	}
	return rows
}

// hasValue tells whether a ";"-joined field holds v (decimal or 0x hex).
func hasValue(field string, v uint64) bool {
	for _, s := range strings.Split(field, ";") {
		if n, err := strconv.ParseUint(strings.TrimSpace(s), 0, 64); err == nil && n == v {
			return true
		}
	}
	return false
}

// testSCTPStreams: COMM_UP's sac_outbound_streams is the minimum of this
// side's sinit_num_ostreams and the peer's sinit_max_instreams, and
// sac_inbound_streams the minimum of this side's sinit_max_instreams and
// the peer's sinit_num_ostreams (sctp_process_init()); with each side's
// two counts equal, as the module sets them (docs/SCTP.md 2.1), both are
// the smaller side's N.
func testSCTPStreams(t *testing.T, tp *Topology) {
	for i, c := range []struct {
		name              string
		cliOut, cliIn     uint16
		srvOut, srvIn     uint16
		cliUpOut, cliUpIn uint16
		srvUpOut, srvUpIn uint16
	}{
		{"16-4", 16, 16, 4, 4, 4, 4, 4, 4},
		{"1-1024", 1, 1, 1024, 1024, 1, 1, 1, 1},
		{"asymmetric", 10, 7, 5, 12, 10, 5, 5, 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			cli, srv := sctpAssoc(t, tp, uint16(7300+i),
				sctpsock.Options{OutStreams: c.cliOut, InStreams: c.cliIn},
				sctpsock.Options{OutStreams: c.srvOut, InStreams: c.srvIn})
			for _, e := range []struct {
				end     string
				conn    *sctpsock.Conn
				out, in uint16
			}{{"client", cli, c.cliUpOut, c.cliUpIn}, {"server", srv, c.srvUpOut, c.srvUpIn}} {
				up := sctpCommUp(t, e.end, e.conn)
				if up.OutboundStreams != e.out || up.InboundStreams != e.in {
					t.Errorf("%s: COMM_UP streams out %d in %d, want %d and %d",
						e.end, up.OutboundStreams, up.InboundStreams, e.out, e.in)
				}
			}
			// The last outbound stream is usable, the next is not.
			last := c.cliUpOut - 1
			if _, err := cli.Send([]byte("x"), last, 16, true); err != nil {
				t.Errorf("client: send on stream %d of %d: %v", last, c.cliUpOut, err)
			}
			if _, err := cli.Send([]byte("x"), c.cliUpOut, 16, true); !errors.Is(err, unix.EINVAL) {
				t.Errorf("client: send on stream %d of %d: %v, want EINVAL", c.cliUpOut, c.cliUpOut, err)
			}
		})
	}
}

// testSCTPSndbuf: a new SCTP socket's send buffer is net.core.wmem_default
// (sock_init_data(); SCTP sets none of its own, net.sctp.sctp_wmem's
// default is not used), and a message above it fails whole with EMSGSIZE
// (sctp_sendmsg_parse()), one of its size passes and is read in parts.
func testSCTPSndbuf(t *testing.T, tp *Topology) {
	b, err := os.ReadFile("/proc/sys/net/core/wmem_default")
	if err != nil {
		t.Fatal(err)
	}
	def, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	cli, srv := sctpAssoc(t, tp, 7400, sctpsock.Options{}, sctpsock.Options{})
	sctpCommUp(t, "client", cli)
	sctpCommUp(t, "server", srv)
	var sndbuf int
	if err := tp.RunIn("a", func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_SCTP)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		sndbuf, err = unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	wmem, _ := os.ReadFile("/proc/sys/net/sctp/sctp_wmem")
	t.Logf("SO_SNDBUF of a new SCTP socket %d; net.core.wmem_default %d; net.sctp.sctp_wmem %s",
		sndbuf, def, strings.Join(strings.Fields(string(wmem)), " "))
	if sndbuf != def {
		t.Errorf("SO_SNDBUF %d, want net.core.wmem_default %d", sndbuf, def)
	}
	if _, err := cli.Send(make([]byte, def+1), 0, 16, true); !errors.Is(err, unix.EMSGSIZE) {
		t.Errorf("send of %d octets: %v, want EMSGSIZE", def+1, err)
	}
	// Whole or nothing: the server reads its first message, whole.
	if _, err := cli.Send(make([]byte, def), 0, 16, true); err != nil {
		t.Fatalf("send of %d octets: %v", def, err)
	}
	// Read with a 64 KiB buffer: the message comes in parts, MSG_EOR on
	// the last only (docs/SCTP.md 3.2).
	n, parts := 0, 0
	buf := make([]byte, 1<<16)
	for {
		m, err := srv.Recv(buf)
		if err != nil {
			t.Fatalf("server: after %d octets: %v", n, err)
		}
		if m.Notification != nil {
			t.Fatalf("server: %s", describe(m))
		}
		n += len(m.Data)
		parts++
		if m.EOR {
			break
		}
	}
	if n != def || parts < 2 {
		t.Errorf("server: message of %d octets in %d parts, sent %d (read %d at a time)", n, parts, def, len(buf))
	}
	t.Logf("server: %d octets in %d parts, MSG_EOR on the last", n, parts)
}
