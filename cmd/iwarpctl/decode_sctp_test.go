// SPDX-License-Identifier: BSD-3-Clause

package main

import (
	"encoding/binary"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	"github.com/iwarp/iwarp/internal/pcap"
	"github.com/iwarp/iwarp/internal/pcap/pcaptest"
	"github.com/iwarp/iwarp/wire"
)

var (
	sctpActive  = netip.MustParseAddrPort("10.0.0.1:7000")
	sctpPassive = netip.MustParseAddrPort("10.0.0.2:7001")
)

// session returns a DDP Stream Session Control chunk's user message.
func session(ssn uint16, f wire.SessionFunc, pdata string) []byte {
	c := wire.SessionControl{SSN: ssn, Func: f}
	if pdata != "" {
		c.PrivateData = []byte(pdata)
	}
	return wire.AppendSessionControl(nil, &c)
}

// segment returns a DDP Segment chunk's user message.
func segment(ssn uint16, ddp []byte) []byte {
	return wire.AppendSegmentChunk(nil, &wire.SegmentChunk{SSN: ssn, DDP: ddp})
}

// corruptChecksum flips a bit of the SCTP checksum field of an Ethernet
// frame holding IPv4 and SCTP.
func corruptChecksum(p *pcaptest.Packet) { p.Data[14+20+8] ^= 0x80 }

// sctpAssociation is the main SCTP test capture: the handshake with the
// DDP indication on both sides, session Initiate and Accept with private
// data, a 40-octet RDMA Write in three DATA chunks (the last sent before
// the middle one, which comes bundled with a Send and a SACK, then again
// as a retransmission), a Send back whose packet has a bad checksum, a
// session Terminate, and a message of another PPID.
func sctpAssociation(lt pcap.LinkType, a, b netip.AddrPort) *pcaptest.Assoc {
	s := pcaptest.NewAssoc(lt, a, b, 0x11111111, 0x22222222, 100, 5000)
	s.Handshake([][]byte{pcaptest.Adaptation(wire.SCTPAdaptationDDP), pcaptest.Param(pcap.ParamSupportedExtensions, []byte{0xc0})},
		[][]byte{pcaptest.Adaptation(wire.SCTPAdaptationDDP)})
	s.Send(0, 1, wire.PPIDSessionControl, session(0, wire.FuncInitiate, "hello"))
	s.Send(1, 1, wire.PPIDSessionControl, session(0, wire.FuncAccept, "ok"))
	w := s.Message(0, 1, 0, wire.PPIDDDPSegment, true, segment(1, rdmaWrite(0x300, 0x10000, 40)), 20)
	s.Packet(0, w[0])
	s.Packet(0, w[2])
	snd := s.Message(0, 1, 0, wire.PPIDDDPSegment, true, segment(2, send(1, "ping")), 0)
	s.Packet(0, append([][]byte{w[1]}, append(snd, pcaptest.Chunk(uint8(pcap.ChunkSACK), 0, make([]byte, 12)))...)...)
	s.Packet(0, w[1])
	s.Send(1, 1, wire.PPIDDDPSegment, segment(1, send(1, "pong")))
	if lt == pcap.LinkTypeEthernet && a.Addr().Is4() {
		corruptChecksum(&s.Packets[len(s.Packets)-1])
	}
	s.Send(0, 1, wire.PPIDSessionControl, session(3, wire.FuncTerminate, ""))
	s.Send(0, 9, 99, []byte("not ddp"))
	return s
}

const sctpConn = "10.0.0.1:7000->10.0.0.2:7001"

// sctpText is what decode prints for sctpAssociation before the totals.
const sctpText = sctpConn + ` i2r frame=1 sctp init init_tag=0x11111111 a_rwnd=106496 out_streams=16 in_streams=16 initial_tsn=100 adaptation=0x00000001 params=adaptation,supported_extensions
` + sctpConn + ` r2i frame=2 sctp init_ack init_tag=0x22222222 a_rwnd=106496 out_streams=16 in_streams=16 initial_tsn=5000 adaptation=0x00000001 params=state_cookie,adaptation
` + sctpConn + ` i2r frame=5 sctp sid=1 tsn=100 u=1 ppid=17 len=9 | session initiate ssn=0 pd_length=5 pdata=68656c6c6f
` + sctpConn + ` r2i frame=6 sctp sid=1 tsn=5000 u=1 ppid=17 len=6 | session accept ssn=0 pd_length=2 pdata=6f6b
` + sctpConn + ` i2r frame=9 sctp sid=1 tsn=101-103 u=1 ppid=16 len=56 | segment ssn=1 | ddp tagged last=1 dv=1 stag=0x00000300 to=0x10000 | rdmap write rv=1 payload_len=40
` + sctpConn + ` i2r frame=9 sctp sid=1 tsn=104 u=1 ppid=16 len=24 | segment ssn=2 | ddp untagged last=1 dv=1 qn=0 msn=1 mo=0 | rdmap send rv=1 payload_len=4
` + sctpConn + ` r2i frame=11 sctp sid=1 tsn=5001 u=1 ppid=16 len=24 | segment ssn=1 | ddp untagged last=1 dv=1 qn=0 msn=1 mo=0 | rdmap send rv=1 payload_len=4
` + sctpConn + ` i2r frame=12 sctp sid=1 tsn=105 u=1 ppid=17 len=4 | session terminate ssn=3 pd_length=0
` + sctpConn + ` i2r note: PPID 99 is not DDP's (16, 17): its messages are counted, not decoded
summary ` + sctpConn + ` sctp association ddp=expected adaptation=0x00000001,0x00000001 streams=16,16 tags=0x22222222,0x11111111 paths=1
summary ` + sctpConn + ` i2r sctp packets=9 bad_checksums=0 data_chunks=8 messages=4 session=initiate:1,terminate:1 ddp_segments=2 ops=write:1,send:1 terminates=0 ddp_errors=0 not_ddp=1 ordered=0 ssn_gaps=0 ssn_dups=0 incomplete=0 dup_tsns=1 out_of_order=1 i_data=0 chunks=data:8,init:1,sack:1,cookie_echo:1 status="ok"
summary ` + sctpConn + ` r2i sctp packets=4 bad_checksums=1 data_chunks=2 messages=2 session=accept:1 ddp_segments=1 ops=send:1 terminates=0 ddp_errors=0 not_ddp=0 ordered=0 ssn_gaps=0 ssn_dups=0 incomplete=0 dup_tsns=0 out_of_order=0 i_data=0 chunks=data:2,init_ack:1,cookie_ack:1 status="ok"
`

func TestDecodeSCTP(t *testing.T) {
	s := sctpAssociation(pcap.LinkTypeEthernet, sctpActive, sctpPassive)
	file := pcaptest.Pcap(s.Link, s.Packets, binary.LittleEndian, false)
	code, out, errs := decodeRun(t, file, nil, "decode", "FILE")
	if code != 0 || errs != "" {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	checkOutput(t, out, sctpText+"summary total connections=0 mpa=0 skipped=0 fpdus=0 errors=0 packets=13 ignored_packets=0 sctp_associations=1 sctp_ddp_chunks=6\n")
	// --verbose names the packet with the bad checksum.
	code, out2, errs := decodeRun(t, file, nil, "decode", "--verbose", "FILE")
	if el := lines(errs); code != 0 || out2 != out || len(el) != 1 ||
		!strings.HasSuffix(el[0], ": packet 11: SCTP checksum field 0x828ca283, computed 0x828ca203 (corrupt, or left to offload on the capturing host)") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
}

func TestDecodeSCTPJSON(t *testing.T) {
	s := sctpAssociation(pcap.LinkTypeEthernet, sctpActive, sctpPassive)
	code, out, errs := decodeRun(t, pcaptest.Pcap(s.Link, s.Packets, binary.LittleEndian, false), nil, "-j", "decode", "--payload", "FILE")
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	ls := lines(out)
	if len(ls) != 13 {
		t.Fatalf("%d lines:\n%s", len(ls), out)
	}
	const conn = `"conn":"` + sctpConn + `"`
	for i, want := range map[int]string{
		0: `{` + conn + `,"dir":"i2r","frame":1,"sctp_init":{"chunk":"init","init_tag":286331153,"a_rwnd":106496,"out_streams":16,` +
			`"in_streams":16,"initial_tsn":100,"adaptation":1,"params":["adaptation","supported_extensions"]}}`,
		2: `{` + conn + `,"dir":"i2r","frame":5,"sctp":{"sid":1,"tsn":100,"tsn_last":100,"fragments":1,"u":true,"ppid":17,"len":9,` +
			`"ddp_ssn":0},"session":{"func":"initiate","code":1,"pd_length":5,"pdata":"68656c6c6f"}}`,
		8:  `{` + conn + `,"dir":"i2r","note":"PPID 99 is not DDP's (16, 17): its messages are counted, not decoded"}`,
		9:  `{` + conn + `,"summary":{"transport":"sctp","ddp":"expected","adaptation":["0x00000001","0x00000001"],"streams":[16,16],"tags":[572662306,286331153],"paths":["10.0.0.1:7000->10.0.0.2:7001"]}}`,
		12: `{"summary":{"connections":0,"mpa":0,"skipped":0,"fpdus":0,"errors":0,"packets":13,"ignored_packets":0,"sctp_associations":1,"sctp_ddp_chunks":6}}`,
	} {
		if ls[i] != want {
			t.Errorf("line %d:\ngot  %s\nwant %s", i, ls[i], want)
		}
	}
	// The Write: the chunk's fields, then the DDP segment's keys as in
	// an FPDU line.
	var w struct {
		sctpLine
		ULPDU string `json:"ulpdu"`
	}
	if err := json.Unmarshal([]byte(ls[4]), &w); err != nil {
		t.Fatal(err)
	}
	c := w.SCTP
	if c.SID != 1 || c.TSN != 101 || c.TSNLast != 103 || c.Fragments != 3 || !c.U || c.PPID != 16 || c.Len != 56 ||
		c.SSN == nil || *c.SSN != 1 || w.Session != nil || w.DDP == nil || !w.DDP.Tagged || *w.DDP.STag != 0x300 ||
		w.RDMAP == nil || w.RDMAP.Op != "write" || w.RDMAP.PayloadLen != 40 || len(w.ULPDU) != 2*54 || w.Frame != 9 {
		t.Errorf("write line %s", ls[4])
	}
	var sum struct {
		Dir     string    `json:"dir"`
		Summary sctpStats `json:"summary"`
	}
	if err := json.Unmarshal([]byte(ls[11]), &sum); err != nil {
		t.Fatal(err)
	}
	if st := sum.Summary; sum.Dir != "r2i" || st.Transport != "sctp" || st.BadChecksums != 1 || st.Session["accept"] != 1 ||
		st.Ops["send"] != 1 || st.Chunks["init_ack"] != 1 || st.Status != "ok" {
		t.Errorf("summary %s", ls[11])
	}
}

// TestDecodeSCTPIndication: an IPv6 association whose INIT carries another
// adaptation indication and whose INIT ACK carries none is reported; its
// DDP chunks are still decoded, and noted.
func TestDecodeSCTPIndication(t *testing.T) {
	a := netip.MustParseAddrPort("[2001:db8::1]:7000")
	b := netip.MustParseAddrPort("[2001:db8::2]:7001")
	s := pcaptest.NewAssoc(pcap.LinkTypeLinuxSLL, a, b, 7, 8, 1, 1)
	s.Handshake([][]byte{pcaptest.Adaptation(0x12345678), pcaptest.AddrParam(a.Addr()),
		pcaptest.AddrParam(netip.MustParseAddr("2001:db8::11"))}, nil)
	s.Send(0, 0, wire.PPIDSessionControl, session(0, wire.FuncInitiate, ""))
	s.Send(1, 0, wire.PPIDSessionControl, session(0, wire.FuncReject, "no"))
	code, out, errs := decodeRun(t, pcaptest.PcapNG(s.Link, s.Packets, pcaptest.PcapNGOptions{}), nil, "decode", "FILE")
	conn := "[2001:db8::1]:7000->[2001:db8::2]:7001"
	want := conn + ` i2r frame=1 sctp init init_tag=0x00000007 a_rwnd=106496 out_streams=16 in_streams=16 initial_tsn=1 adaptation=0x12345678 params=adaptation,ipv6,ipv6 addrs=2001:db8::1,2001:db8::11
` + conn + ` i2r note: the INIT has adaptation indication 0x12345678, not DDP's 0x00000001: DDP is not expected on this association (RFC 5043 §11.1)
` + conn + ` r2i frame=2 sctp init_ack init_tag=0x00000008 a_rwnd=106496 out_streams=16 in_streams=16 initial_tsn=1 adaptation=none params=state_cookie
` + conn + ` r2i note: the INIT ACK has no Adaptation Layer Indication: DDP is not expected on this association (RFC 5043 §11.1)
` + conn + ` note: DDP chunks on an association whose INIT or INIT ACK lacks the DDP adaptation indication
` + conn + ` i2r frame=5 sctp sid=0 tsn=1 u=1 ppid=17 len=4 | session initiate ssn=0 pd_length=0
` + conn + ` r2i frame=6 sctp sid=0 tsn=1 u=1 ppid=17 len=6 | session reject ssn=0 pd_length=2 pdata=6e6f
summary ` + conn + ` sctp association ddp=not_expected adaptation=0x12345678,none streams=16,16 tags=0x00000008,0x00000007 paths=1
`
	if code != 0 || errs != "" || !strings.HasPrefix(out, want) {
		t.Errorf("exit %d, stderr %q", code, errs)
		checkOutput(t, out, want)
	}
}

// TestDecodeSCTPMalformed: an overlong chunk is an error naming the packet
// and offset; the chunks before it and the rest of the capture are
// decoded.
func TestDecodeSCTPMalformed(t *testing.T) {
	s := pcaptest.NewAssoc(pcap.LinkTypeEthernet, sctpActive, sctpPassive, 1, 2, 10, 20)
	s.Handshake([][]byte{pcaptest.Adaptation(1)}, [][]byte{pcaptest.Adaptation(1)})
	bad := pcaptest.Chunk(uint8(pcap.ChunkData), 3, make([]byte, 20))
	binary.BigEndian.PutUint16(bad[2:], 400)
	s.Packet(0, append(s.Message(0, 0, 0, wire.PPIDSessionControl, true, session(0, wire.FuncInitiate, "x"), 0), bad)...)
	s.Send(1, 0, wire.PPIDSessionControl, session(0, wire.FuncAccept, ""))
	code, out, errs := decodeRun(t, pcaptest.Pcap(s.Link, s.Packets, binary.LittleEndian, false), nil, "decode", "FILE")
	if code != 1 || !strings.HasSuffix(errs, ": "+sctpConn+" i2r: packet 5: malformed SCTP chunk at offset 36: data chunk of 400 octets runs past the 60-octet packet\n") ||
		len(lines(errs)) != 1 {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	for _, w := range []string{" i2r frame=5 sctp sid=0 tsn=10 u=1 ppid=17 len=5 | session initiate ssn=0 pd_length=1 pdata=78\n",
		" r2i frame=6 sctp sid=0 tsn=20 u=1 ppid=17 len=4 | session accept ssn=0 pd_length=0\n",
		"summary total connections=0 mpa=0 skipped=0 fpdus=0 errors=1 packets=6 ignored_packets=0 sctp_associations=1 sctp_ddp_chunks=2\n"} {
		if !strings.Contains(out, w) {
			t.Errorf("no %q in\n%s", w, out)
		}
	}
}

// TestDecodeSCTPMixed: TCP iWARP and SCTP in one capture.
func TestDecodeSCTPMixed(t *testing.T) {
	c := mpaConversation(pcap.LinkTypeEthernet, initiator, responder, wire.Faults{})
	s := sctpAssociation(pcap.LinkTypeEthernet, sctpActive, sctpPassive)
	var pkts []pcaptest.Packet
	for i := range max(len(c.Packets), len(s.Packets)) { // interleaved
		if i < len(c.Packets) {
			pkts = append(pkts, c.Packets[i])
		}
		if i < len(s.Packets) {
			pkts = append(pkts, s.Packets[i])
		}
	}
	code, out, errs := decodeRun(t, pcaptest.PcapNG(pcap.LinkTypeEthernet, pkts, pcaptest.PcapNGOptions{}), nil, "decode", "FILE")
	if code != 0 || errs != "" {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	var tcp, sctp []string
	for _, l := range lines(out) {
		switch {
		case strings.Contains(l, initiator.String()):
			tcp = append(tcp, l)
		case strings.Contains(l, sctpActive.String()):
			sctp = append(sctp, l)
		}
	}
	// The frame numbers follow the interleaving: compare without them.
	nf := func(ls []string) string {
		var b strings.Builder
		for _, l := range ls {
			f := strings.Fields(l)
			for i, w := range f {
				if strings.HasPrefix(w, "frame=") {
					f[i] = "frame=N"
				}
			}
			b.WriteString(strings.Join(f, " ") + "\n")
		}
		return b.String()
	}
	wantTCP := lines(conversationText + conversationSummary)
	wantSCTP := lines(sctpText)
	if got, want := nf(tcp), nf(wantTCP[:len(wantTCP)-1]); got != want {
		t.Errorf("TCP lines:\n%s\nwant\n%s", got, want)
	}
	if got, want := nf(sctp), nf(wantSCTP); got != want {
		t.Errorf("SCTP lines:\n%s\nwant\n%s", got, want)
	}
	if ls := lines(out); ls[len(ls)-1] != "summary total connections=1 mpa=1 skipped=0 fpdus=9 errors=0 packets=29 ignored_packets=0 sctp_associations=1 sctp_ddp_chunks=6" {
		t.Errorf("totals %s", ls[len(ls)-1])
	}
}

// TestDecodeSCTPSequence: a message whose middle fragment is lost is
// incomplete; a DDP-SSN repeated or skipped, and a chunk without U, are
// noted.
func TestDecodeSCTPSequence(t *testing.T) {
	s := pcaptest.NewAssoc(pcap.LinkTypeRaw, sctpActive, sctpPassive, 1, 2, 10, 20)
	s.Handshake([][]byte{pcaptest.Adaptation(1)}, [][]byte{pcaptest.Adaptation(1)})
	s.Send(0, 2, wire.PPIDSessionControl, session(0, wire.FuncInitiate, ""))
	s.Send(0, 2, wire.PPIDDDPSegment, segment(1, send(1, "a")))
	s.Send(0, 2, wire.PPIDDDPSegment, segment(1, send(1, "a"))) // SSN 1 again, new TSN
	s.Send(0, 2, wire.PPIDDDPSegment, segment(4, send(2, "b"))) // 2 and 3 skipped
	s.Send(0, 2, wire.PPIDDDPSegment, segment(4, send(2, "b"))) // 4 again, ahead of the next
	s.Packet(0, s.Message(0, 2, 0, wire.PPIDDDPSegment, false, segment(5, send(3, "c")), 0)...)
	w := s.Message(0, 2, 0, wire.PPIDDDPSegment, true, segment(6, rdmaWrite(1, 0, 100)), 40)
	s.Packet(0, w[0], w[2])                      // w[1] lost
	s.Send(0, 2, wire.PPIDDDPSegment, []byte{0}) // no DDP-SSN
	code, out, errs := decodeRun(t, pcaptest.Pcap(s.Link, s.Packets, binary.LittleEndian, true), nil, "decode", "FILE")
	if code != 0 || errs != "" {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	for _, w := range []string{
		sctpConn + " i2r note: stream 2: DDP-SSN 1 again (frame 7); the next new one is 2\n",
		sctpConn + " i2r note: stream 2: DDP-SSN 4 again (frame 9); the next new one is 2\n",
		sctpConn + " i2r note: a DDP chunk without U: RFC 5043 §10 wants every chunk unordered\n",
		sctpConn + ` i2r frame=12 sctp sid=2 tsn=19 u=1 ppid=16 len=1 | segment error="SCTP chunk too short: segment chunk of 1 octets, no DDP-SSN" terminate=2/0/0x05` + "\n",
		sctpConn + " i2r frame=11 sctp incomplete sid=2 tsn=16-16 frags=1 ppid=16 octets=40: the capture ends: no fragment after TSN 16\n",
		sctpConn + " i2r frame=11 sctp incomplete sid=2 tsn=18-18 frags=1 ppid=16 octets=36: the capture ends: no fragment before TSN 18\n",
		sctpConn + " i2r note: stream 2: 2 of the DDP-SSNs 2 to 4 missing (lost by the capture, or never sent)\n",
		" i2r sctp packets=10 bad_checksums=0 data_chunks=9 messages=7 session=initiate:1 ddp_segments=5 ops=send:5 terminates=0 ddp_errors=1 not_ddp=0 ordered=1 ssn_gaps=2 ssn_dups=2 incomplete=2 ",
		` status="incomplete"` + "\n",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("no %q in\n%s", w, out)
		}
	}
}

// enhancedSession returns an RFC 6581 session chunk's user message: the
// IRD/ORD words of d, then pdata.
func enhancedSession(ssn uint16, f wire.SessionFunc, d wire.RDMAConnData, pdata string) []byte {
	c := wire.SessionControl{SSN: ssn, Func: f, RDMA: &d}
	if pdata != "" {
		c.PrivateData = []byte(pdata)
	}
	return wire.AppendSessionControl(nil, &c)
}

// TestDecodeSCTPEnhanced: RFC 6581 session chunks print their IRD, ORD and
// flags (B, C, D as sent, also without A), the private data after them;
// the summary counts them under their own names; an enhanced chunk without
// room for IRD and ORD is an error in its line.
func TestDecodeSCTPEnhanced(t *testing.T) {
	s := pcaptest.NewAssoc(pcap.LinkTypeEthernet, sctpActive, sctpPassive, 1, 2, 10, 20)
	s.Handshake([][]byte{pcaptest.Adaptation(1)}, [][]byte{pcaptest.Adaptation(1)})
	s.Send(0, 1, wire.PPIDSessionControl, enhancedSession(0, wire.FuncEnhancedInitiate, wire.RDMAConnData{IRD: 16, ORD: 16}, ""))
	s.Send(1, 1, wire.PPIDSessionControl, enhancedSession(0, wire.FuncEnhancedAccept,
		wire.RDMAConnData{IRD: 0x3FFF, ORD: 4, P2P: true, RTRWrite: true}, "ok"))
	s.Send(0, 1, wire.PPIDDDPSegment, segment(1, send(1, "a")))
	s.Send(0, 2, wire.PPIDSessionControl, enhancedSession(0, wire.FuncEnhancedInitiate,
		wire.RDMAConnData{IRD: 1, ORD: 2, RTRSend: true, RTRRead: true}, ""))
	s.Send(1, 2, wire.PPIDSessionControl, enhancedSession(0, wire.FuncEnhancedReject,
		wire.RDMAConnData{IRD: 8, ORD: 0, P2P: true, RTRSend: true, RTRWrite: true, RTRRead: true}, "no"))
	s.Send(0, 3, wire.PPIDSessionControl, session(0, wire.FuncEnhancedInitiate, "xy")) // no room for IRD/ORD
	s.Send(0, 4, wire.PPIDSessionControl, session(0, wire.FuncInitiate, "hi"))
	file := pcaptest.Pcap(s.Link, s.Packets, binary.LittleEndian, false)
	code, out, errs := decodeRun(t, file, nil, "decode", "FILE")
	if code != 0 || errs != "" {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	want := sctpConn + ` i2r frame=1 sctp init init_tag=0x00000001 a_rwnd=106496 out_streams=16 in_streams=16 initial_tsn=10 adaptation=0x00000001 params=adaptation
` + sctpConn + ` r2i frame=2 sctp init_ack init_tag=0x00000002 a_rwnd=106496 out_streams=16 in_streams=16 initial_tsn=20 adaptation=0x00000001 params=state_cookie,adaptation
` + sctpConn + ` i2r frame=5 sctp sid=1 tsn=10 u=1 ppid=17 len=8 | session enhanced-initiate ssn=0 ird=16 ord=16 rtr=- pd_length=0
` + sctpConn + ` r2i frame=6 sctp sid=1 tsn=20 u=1 ppid=17 len=10 | session enhanced-accept ssn=0 ird=16383 ord=4 rtr=p2p,write pd_length=2 pdata=6f6b
` + sctpConn + ` i2r frame=7 sctp sid=1 tsn=11 u=1 ppid=16 len=21 | segment ssn=1 | ddp untagged last=1 dv=1 qn=0 msn=1 mo=0 | rdmap send rv=1 payload_len=1
` + sctpConn + ` i2r frame=8 sctp sid=2 tsn=12 u=1 ppid=17 len=8 | session enhanced-initiate ssn=0 ird=1 ord=2 rtr=send,read pd_length=0
` + sctpConn + ` r2i frame=9 sctp sid=2 tsn=21 u=1 ppid=17 len=10 | session enhanced-reject ssn=0 ird=8 ord=0 rtr=p2p,send,write,read pd_length=2 pdata=6e6f
` + sctpConn + ` i2r frame=10 sctp sid=3 tsn=13 u=1 ppid=17 len=6 | session error="enhanced DDP stream session control without IRD/ORD: EnhancedInitiate with 2 octets of private data, want at least 4" terminate=2/0/0x05
` + sctpConn + ` i2r frame=11 sctp sid=4 tsn=14 u=1 ppid=17 len=6 | session initiate ssn=0 pd_length=2 pdata=6869
summary ` + sctpConn + ` sctp association ddp=expected adaptation=0x00000001,0x00000001 streams=16,16 tags=0x00000002,0x00000001 paths=1
summary ` + sctpConn + ` i2r sctp packets=7 bad_checksums=0 data_chunks=5 messages=5 session=initiate:1,enhanced-initiate:2 ddp_segments=1 ops=send:1 terminates=0 ddp_errors=1 not_ddp=0 ordered=0 ssn_gaps=0 ssn_dups=0 incomplete=0 dup_tsns=0 out_of_order=0 i_data=0 chunks=data:5,init:1,cookie_echo:1 status="ok"
summary ` + sctpConn + ` r2i sctp packets=4 bad_checksums=0 data_chunks=2 messages=2 session=enhanced-accept:1,enhanced-reject:1 ddp_segments=0 ops=- terminates=0 ddp_errors=0 not_ddp=0 ordered=0 ssn_gaps=0 ssn_dups=0 incomplete=0 dup_tsns=0 out_of_order=0 i_data=0 chunks=data:2,init_ack:1,cookie_ack:1 status="ok"
summary total connections=0 mpa=0 skipped=0 fpdus=0 errors=0 packets=11 ignored_packets=0 sctp_associations=1 sctp_ddp_chunks=7
`
	checkOutput(t, out, want)

	code, out, errs = decodeRun(t, file, nil, "-j", "decode", "FILE")
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	ls := lines(out)
	if len(ls) != 13 {
		t.Fatalf("%d lines:\n%s", len(ls), out)
	}
	const conn = `"conn":"` + sctpConn + `"`
	for i, want := range map[int]string{
		2: `{` + conn + `,"dir":"i2r","frame":5,"sctp":{"sid":1,"tsn":10,"tsn_last":10,"fragments":1,"u":true,"ppid":17,"len":8,` +
			`"ddp_ssn":0},"session":{"func":"enhanced-initiate","code":5,"enhanced":true,"ird":16,"ord":16,"rtr":[],"pd_length":0}}`,
		3: `{` + conn + `,"dir":"r2i","frame":6,"sctp":{"sid":1,"tsn":20,"tsn_last":20,"fragments":1,"u":true,"ppid":17,"len":10,` +
			`"ddp_ssn":0},"session":{"func":"enhanced-accept","code":6,"enhanced":true,"ird":16383,"ord":4,"rtr":["p2p","write"],` +
			`"pd_length":2,"pdata":"6f6b"}}`,
		6: `{` + conn + `,"dir":"r2i","frame":9,"sctp":{"sid":2,"tsn":21,"tsn_last":21,"fragments":1,"u":true,"ppid":17,"len":10,` +
			`"ddp_ssn":0},"session":{"func":"enhanced-reject","code":7,"enhanced":true,"ird":8,"ord":0,` +
			`"rtr":["p2p","send","write","read"],"pd_length":2,"pdata":"6e6f"}}`,
		7: `{` + conn + `,"dir":"i2r","frame":10,"sctp":{"sid":3,"tsn":13,"tsn_last":13,"fragments":1,"u":true,"ppid":17,"len":6,` +
			`"ddp_ssn":0},"session":{"pd_length":0,"error":"enhanced DDP stream session control without IRD/ORD: EnhancedInitiate with 2 octets of private data, want at least 4",` +
			`"error_terminate":{"layer":2,"etype":0,"ecode":5}}}`,
		8: `{` + conn + `,"dir":"i2r","frame":11,"sctp":{"sid":4,"tsn":14,"tsn_last":14,"fragments":1,"u":true,"ppid":17,"len":6,` +
			`"ddp_ssn":0},"session":{"func":"initiate","code":1,"pd_length":2,"pdata":"6869"}}`,
	} {
		if ls[i] != want {
			t.Errorf("line %d:\ngot  %s\nwant %s", i, ls[i], want)
		}
	}
	var sum struct {
		Dir     string    `json:"dir"`
		Summary sctpStats `json:"summary"`
	}
	if err := json.Unmarshal([]byte(ls[10]), &sum); err != nil {
		t.Fatal(err)
	}
	if st := sum.Summary; sum.Dir != "i2r" || len(st.Session) != 2 || st.Session["enhanced-initiate"] != 2 || st.Session["initiate"] != 1 {
		t.Errorf("summary %s", ls[10])
	}
	// A session line reads back into sctpLine, the enhanced keys included.
	var l sctpLine
	if err := json.Unmarshal([]byte(ls[3]), &l); err != nil {
		t.Fatal(err)
	}
	if sj := l.Session; sj == nil || sj.EnhancedSession == nil || !sj.Enhanced || sj.IRD != 0x3FFF || sj.ORD != 4 ||
		strings.Join(sj.RTR, ",") != "p2p,write" || sj.PDLength != 2 {
		t.Errorf("session %+v", l.Session)
	}
}
