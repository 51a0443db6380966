// SPDX-License-Identifier: BSD-3-Clause

package sctpsock

import (
	"bytes"
	"errors"
	"net/netip"
	"os"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The kernel's structures as Go lays them out: the same natural alignment
// as C on Linux, so their sizes and offsets check the hand-packed ones.
type (
	cInitMsg struct {
		numOstreams, maxInstreams, maxAttempts, maxInitTimeo uint16
	}
	cEvent struct {
		assocID int32
		typ     uint16
		on      uint8
	}
	cSndInfo struct {
		sid, flags    uint16
		ppid, context uint32
		assocID       int32
	}
	cRcvInfo struct {
		sid, ssn, flags            uint16
		ppid, tsn, cumtsn, context uint32
		assocID                    int32
	}
	cAssocChange struct {
		typ, flags                  uint16
		length                      uint32
		state, err, outbound, inbnd uint16
		assocID                     int32
	}
	cAdaptation struct {
		typ, flags uint16
		length     uint32
		ind        uint32
		assocID    int32
	}
)

func raw[T any](v *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v))
}

func TestSizes(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"sctp_initmsg", unsafe.Sizeof(cInitMsg{}), initMsgLen},
		{"sctp_event", unsafe.Sizeof(cEvent{}), eventLen},
		{"sctp_sndinfo", unsafe.Sizeof(cSndInfo{}), sndInfoLen},
		{"sctp_rcvinfo", unsafe.Sizeof(cRcvInfo{}), rcvInfoLen},
		{"sctp_assoc_change", unsafe.Sizeof(cAssocChange{}), assocChangeLen},
		{"sctp_adaptation_event", unsafe.Sizeof(cAdaptation{}), adaptationLen},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d octets laid out, %d packed", c.name, c.got, c.want)
		}
	}
}

func TestMarshalInitMsg(t *testing.T) {
	want := cInitMsg{numOstreams: 16, maxInstreams: 12, maxAttempts: 3, maxInitTimeo: 500}
	if got := marshalInitMsg(16, 12, 3, 500); !bytes.Equal(got, raw(&want)) {
		t.Fatalf("%x, want %x", got, raw(&want))
	}
}

func TestMarshalEvent(t *testing.T) {
	want := cEvent{typ: 0x8007, on: 1}
	if got := marshalEvent(AdaptationEvent, true); !bytes.Equal(got, raw(&want)) {
		t.Fatalf("%x, want %x", got, raw(&want))
	}
	want.on = 0
	if got := marshalEvent(AdaptationEvent, false); !bytes.Equal(got, raw(&want)) {
		t.Fatalf("off: %x, want %x", got, raw(&want))
	}
}

// The SCTP_SNDINFO control message as the kernel parses it
// (sctp_msghdr_parse(): level IPPROTO_SCTP, cmsg_len exactly
// CMSG_LEN(sizeof(struct sctp_sndinfo))), the PPID in network order.
func TestSndInfoCmsg(t *testing.T) {
	info := SndInfo{SID: 3, Flags: FlagUnordered, PPID: 16, Context: 7, AssocID: 9}
	b := cmsg(cmsgSndInfo, info.marshal())
	if len(b) != unix.CmsgSpace(sndInfoLen) {
		t.Fatalf("%d octets, want %d", len(b), unix.CmsgSpace(sndInfoLen))
	}
	cms, err := unix.ParseSocketControlMessage(b)
	if err != nil || len(cms) != 1 {
		t.Fatalf("parse: %v, %d messages", err, len(cms))
	}
	h := cms[0].Header
	if h.Level != 132 || h.Type != 2 || h.Len != uint64(unix.CmsgLen(sndInfoLen)) {
		t.Fatalf("header %+v", h)
	}
	want := cSndInfo{sid: 3, flags: 1, ppid: nativeOfBE(16), context: 7, assocID: 9}
	if !bytes.Equal(cms[0].Data, raw(&want)) {
		t.Fatalf("data %x, want %x", cms[0].Data, raw(&want))
	}
	if !bytes.Equal(cms[0].Data[4:8], []byte{0, 0, 0, 16}) {
		t.Fatalf("snd_ppid %x: not 16 in network order", cms[0].Data[4:8])
	}
}

// nativeOfBE is the host integer whose memory holds v big-endian.
func nativeOfBE(v uint32) uint32 {
	var b [4]byte
	b[0], b[1], b[2], b[3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
	return ne.Uint32(b[:])
}

func TestParseRcvInfo(t *testing.T) {
	in := cRcvInfo{sid: 3, ssn: 5, flags: 1, ppid: nativeOfBE(17), tsn: 100, cumtsn: 99, context: 4, assocID: 2}
	got, err := parseRcvInfo(raw(&in))
	if err != nil {
		t.Fatal(err)
	}
	want := RcvInfo{SID: 3, SSN: 5, Flags: FlagUnordered, PPID: 17, TSN: 100, CumTSN: 99, Context: 4, AssocID: 2}
	if got != want {
		t.Fatalf("%+v, want %+v", got, want)
	}
	if _, err := parseRcvInfo(raw(&in)[:27]); !errors.Is(err, ErrShort) {
		t.Fatalf("27 octets: %v", err)
	}
}

func TestParseNotification(t *testing.T) {
	ac := cAssocChange{typ: 0x8001, length: 20 + 2, state: 0, err: 0, outbound: 4, inbnd: 6, assocID: 3}
	acb := append(append([]byte(nil), raw(&ac)...), 0x80, 0x08) // sac_info: one feature
	n, err := ParseNotification(acb)
	if err != nil {
		t.Fatal(err)
	}
	a, ok := n.(*AssocChange)
	if !ok || a.Type() != AssocChangeEvent || a.State != CommUp || a.OutboundStreams != 4 ||
		a.InboundStreams != 6 || a.AssocID != 3 || !bytes.Equal(a.Info, []byte{0x80, 0x08}) {
		t.Fatalf("%#v", n)
	}
	if s := a.String(); s != "ASSOC_CHANGE COMM_UP error 0 streams out 4 in 6 assoc 3" {
		t.Errorf("String %q", s)
	}

	ad := cAdaptation{typ: 0x8007, length: 16, ind: 1, assocID: 3}
	n, err = ParseNotification(raw(&ad))
	if ai, ok := n.(*AdaptationIndication); err != nil || !ok || ai.Indication != 1 || ai.AssocID != 3 {
		t.Fatalf("adaptation: %#v, %v", n, err)
	}

	sd := make([]byte, 12)
	ne.PutUint16(sd, 0x8005)
	ne.PutUint32(sd[4:], 12)
	ne.PutUint32(sd[8:], 5)
	n, err = ParseNotification(sd)
	if s, ok := n.(*Shutdown); err != nil || !ok || s.AssocID != 5 {
		t.Fatalf("shutdown: %#v, %v", n, err)
	}

	dry := make([]byte, 12)
	ne.PutUint16(dry, 0x8009)
	ne.PutUint32(dry[4:], 12)
	n, err = ParseNotification(append(dry, 0xff)) // sn_length bounds it
	if o, ok := n.(*OtherNotification); err != nil || !ok || o.Type() != SenderDryEvent || len(o.Raw) != 12 {
		t.Fatalf("sender dry: %#v, %v", n, err)
	}

	for name, b := range map[string][]byte{
		"header":            acb[:7],
		"sn_length > data":  raw(&ac),
		"sn_length < 8":     append([]byte{1, 0x80, 0, 0}, 4, 0, 0, 0),
		"assoc change":      func() []byte { c := ac; c.length = 16; return raw(&c)[:16] }(),
		"adaptation":        func() []byte { c := ad; c.length = 12; return raw(&c)[:12] }(),
		"shutdown (8 only)": func() []byte { b := append([]byte(nil), sd[:8]...); ne.PutUint32(b[4:], 8); return b }(),
	} {
		if n, err := ParseNotification(b); !errors.Is(err, ErrShort) {
			t.Errorf("%s: %#v, %v; want ErrShort", name, n, err)
		}
	}
}

func TestParseMessage(t *testing.T) {
	in := cRcvInfo{sid: 3, flags: 1, ppid: nativeOfBE(16)}
	oob := cmsg(cmsgRcvInfo, raw(&in))
	m, err := parseMessage([]byte("abc"), oob, unix.MSG_EOR)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Data) != "abc" || !m.EOR || m.Notification != nil || m.Info == nil ||
		m.Info.SID != 3 || m.Info.PPID != 16 || m.Info.Flags != FlagUnordered {
		t.Fatalf("%+v %+v", m, m.Info)
	}
	if m, err = parseMessage([]byte("ab"), nil, 0); err != nil || m.EOR || m.Info != nil {
		t.Fatalf("part without rcvinfo: %+v, %v", m, err)
	}
	ad := cAdaptation{typ: 0x8007, length: 16, ind: 1}
	m, err = parseMessage(raw(&ad), nil, MsgNotification|unix.MSG_EOR)
	if err != nil || m.Notification == nil || m.Notification.Type() != AdaptationEvent {
		t.Fatalf("notification: %+v, %v", m, err)
	}
	if _, err = parseMessage(nil, nil, 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("empty read: %v, want ErrClosed", err)
	}
	if _, err = parseMessage([]byte("x"), oob, unix.MSG_CTRUNC); err == nil {
		t.Fatal("truncated control data taken")
	}
}

// TestLoopback runs an association over 127.0.0.1 where the host kernel
// has SCTP (the guest's VM test TestSCTPKernel covers it otherwise).
func TestLoopback(t *testing.T) {
	opts := Options{OutStreams: 8, InStreams: 8, Adaptation: 1, NoDelay: true,
		Events: []uint16{AssocChangeEvent, AdaptationEvent}}
	l, err := Listen(netip.MustParseAddrPort("127.0.0.1:0"), opts)
	if errors.Is(err, unix.EPROTONOSUPPORT) || errors.Is(err, unix.ESOCKTNOSUPPORT) {
		t.Skipf("the host kernel has no SCTP (socket: %v); TestSCTPKernel runs this in the VM", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	deadline := time.Now().Add(10 * time.Second)
	l.SetDeadline(deadline)
	type accepted struct {
		c   *Conn
		err error
	}
	ac := make(chan accepted, 1)
	go func() {
		c, err := l.Accept()
		ac <- accepted{c, err}
	}()
	c, err := Dial(l.Addr(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a := <-ac
	if a.err != nil {
		t.Fatal(a.err)
	}
	s := a.c
	defer s.Close()
	c.SetDeadline(deadline)
	s.SetDeadline(deadline)
	buf := make([]byte, 256)
	for _, side := range []*Conn{c, s} {
		m, err := side.Recv(buf)
		if err != nil {
			t.Fatal(err)
		}
		if up, ok := m.Notification.(*AssocChange); !ok || up.State != CommUp || up.OutboundStreams != 8 || up.InboundStreams != 8 {
			t.Fatalf("first: %+v", m.Notification)
		}
		m, err = side.Recv(buf)
		if err != nil {
			t.Fatal(err)
		}
		if ai, ok := m.Notification.(*AdaptationIndication); !ok || ai.Indication != 1 {
			t.Fatalf("second: %+v", m.Notification)
		}
		if _, err := side.TryRecv(buf); !errors.Is(err, unix.EAGAIN) {
			t.Fatalf("nothing queued: %v, want EAGAIN", err)
		}
	}
	if _, err := c.Send([]byte("ping"), 3, 16, true); err != nil {
		t.Fatal(err)
	}
	m, err := s.Recv(buf)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Data) != "ping" || !m.EOR || m.Info == nil || m.Info.SID != 3 || m.Info.PPID != 16 || m.Info.Flags&FlagUnordered == 0 {
		t.Fatalf("%+v %+v", m, m.Info)
	}
	s.SetReadDeadline(time.Now())
	if _, err := s.Recv(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("past deadline: %v", err)
	}
	// Blocking mode: the kernel waits; TryRecv still does not.
	if err := s.SetBlocking(true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TryRecv(buf); !errors.Is(err, unix.EAGAIN) {
		t.Fatalf("blocking, nothing queued: %v, want EAGAIN", err)
	}
	if _, err := c.Send([]byte("pong"), 0, 17, false); err != nil {
		t.Fatal(err)
	}
	if m, err = s.Recv(buf); err != nil || string(m.Data) != "pong" || m.Info.PPID != 17 || m.Info.Flags&FlagUnordered != 0 {
		t.Fatalf("blocking recv: %+v, %v", m, err)
	}
}
