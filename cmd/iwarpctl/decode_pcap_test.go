// SPDX-License-Identifier: BSD-3-Clause

package main

import (
	"bytes"
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
	initiator = netip.MustParseAddrPort("10.0.0.1:5000")
	responder = netip.MustParseAddrPort("10.0.0.2:18515")
)

// seg builds a ULPDU.
func seg(s wire.Segment) []byte {
	s.DV, s.RV = wire.DDPVersion, wire.RDMAPVersion
	return wire.AppendSegment(nil, &s)
}

func send(msn uint32, payload string) []byte {
	return seg(wire.Segment{Last: true, Opcode: wire.OpSend, QN: wire.QNSend, MSN: msn, Payload: []byte(payload)})
}

func rdmaWrite(stag uint32, to uint64, n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i)
	}
	return seg(wire.Segment{Tagged: true, Last: true, Opcode: wire.OpWrite, STag: stag, TO: to, Payload: p})
}

func readRequest(msn uint32, size uint32) []byte {
	return seg(wire.Segment{Last: true, Opcode: wire.OpReadRequest, QN: wire.QNReadRequest, MSN: msn,
		ReadReq: wire.ReadRequest{SinkSTag: 0x100, SinkTO: 0x2000, Size: size, SrcSTag: 0x200, SrcTO: 0x3000}})
}

func readResponse(n int) []byte {
	p := bytes.Repeat([]byte{0xab}, n)
	return seg(wire.Segment{Tagged: true, Last: true, Opcode: wire.OpReadResponse, STag: 0x100, TO: 0x2000, Payload: p})
}

func terminate() []byte {
	return seg(wire.Segment{Last: true, Opcode: wire.OpTerminate, QN: wire.QNTerminate, MSN: 1,
		Terminate: wire.Terminate{Layer: wire.LayerRDMAP, EType: 2, ECode: 0xff}})
}

// fpdus frames ULPDUs with f and returns the stream octets.
func fpdus(f *wire.Framer, ulpdus ...[]byte) []byte {
	var b []byte
	for _, u := range ulpdus {
		b = f.Append(b, u)
	}
	return b
}

// mpaConversation is the main test capture: rev 2 enhanced negotiation with
// P2P and a Write RTR, CRC on (asked by the initiator), markers toward the
// initiator only; several FPDUs per segment, an FPDU over three segments,
// a retransmission, two segments out of order, and the initiator's
// sequence numbers wrapping.
// flt is applied to the Read Response.
func mpaConversation(lt pcap.LinkType, a, b netip.AddrPort, flt wire.Faults) *pcaptest.Conv {
	return mpaTraffic(pcaptest.NewConv(lt, a, b, 0xfffffd00, 7000), flt)
}

// mpaTraffic adds mpaConversation's packets to c.
func mpaTraffic(c *pcaptest.Conv, flt wire.Faults) *pcaptest.Conv {
	c.Handshake()
	req := wire.MPAFrame{Rev: 2, Markers: true, CRC: true, Enhanced: true, IRD: 16, ORD: 8, P2P: true,
		RTRWrite: true, RTRRead: true, PrivateData: []byte("hi")}
	rep := wire.MPAFrame{Reply: true, Rev: 2, Enhanced: true, IRD: 8, ORD: 16, P2P: true, RTRWrite: true}
	c.Send(0, wire.AppendMPAFrame(nil, &req))
	c.Send(1, wire.AppendMPAFrame(nil, &rep))

	i2r := &wire.Framer{CRC: true}
	r2i := &wire.Framer{CRC: true, Markers: true}
	// i2r: the RTR, a Send and a Read Request in one segment.
	c.Send(0, fpdus(i2r, rdmaWrite(1, 0, 0), send(1, "ping"), readRequest(1, 700)))
	// r2i: a Send (with the marker at 0), the 700-octet Read Response
	// (with the marker at 512) and Immediate Data in one segment.
	imm := seg(wire.Segment{Last: true, Opcode: wire.OpImmediateData, QN: wire.QNSend, MSN: 2, Imm: 0x1122334455667788})
	r := fpdus(r2i, send(1, "pong"))
	r = r2i.AppendFaults(r, readResponse(700), flt)
	c.Send(1, r2i.Append(r, imm))
	// i2r: a 600-octet Write over three segments; the third is sent
	// before the second, and the second twice.
	w := fpdus(i2r, rdmaWrite(0x300, 0x10000, 600))
	s0 := c.Seq[0]
	c.Send(0, w[:200])
	c.Raw(0, s0+400, pcaptest.ACK|pcaptest.PSH, w[400:])
	c.Raw(0, s0+200, pcaptest.ACK, w[200:400])
	c.Raw(0, s0+200, pcaptest.ACK, w[200:400])
	c.Seq[0] = s0 + uint32(len(w))
	// i2r: a Send whose segment overlaps the Write's last octets.
	sd := fpdus(i2r, send(2, "bye"))
	c.Raw(0, c.Seq[0]-8, pcaptest.ACK|pcaptest.PSH, append(append([]byte(nil), w[len(w)-8:]...), sd...))
	c.Seq[0] += uint32(len(sd))
	// r2i: a Terminate.
	c.Send(1, fpdus(r2i, terminate()))
	c.Close()
	return c
}

// conversationText is what decode prints for mpaConversation.
const conversationText = `10.0.0.1:5000->10.0.0.2:18515 i2r frame=4 mpa request rev=2 m=1 c=1 r=0 res=0x00 enhanced=1 ird=16 ord=8 p2p=1 rtr_send=0 rtr_write=1 rtr_read=1 pd_length=6 pdata=6869
10.0.0.1:5000->10.0.0.2:18515 r2i frame=5 mpa reply rev=2 m=0 c=0 r=0 res=0x00 enhanced=1 ird=8 ord=16 p2p=1 rtr_send=0 rtr_write=1 rtr_read=0 pd_length=4
10.0.0.1:5000->10.0.0.2:18515 i2r fpdu_mode markers=0 crc=1 offset=0 tcp_seq=4294966555 from=negotiation rtr=write
10.0.0.1:5000->10.0.0.2:18515 r2i fpdu_mode markers=1 crc=1 offset=0 tcp_seq=7025 from=negotiation
10.0.0.1:5000->10.0.0.2:18515 i2r frame=6 offset=0 len=14 pad=0 wire=20 markers=0 crc=ok crc_field=0x5f4cd3eb | ddp tagged last=1 dv=1 stag=0x00000001 to=0x0 | rdmap write rv=1 payload_len=0
10.0.0.1:5000->10.0.0.2:18515 i2r frame=6 offset=20 len=22 pad=0 wire=28 markers=0 crc=ok crc_field=0xa77f48a5 | ddp untagged last=1 dv=1 qn=0 msn=1 mo=0 | rdmap send rv=1 payload_len=4
10.0.0.1:5000->10.0.0.2:18515 i2r frame=6 offset=48 len=46 pad=0 wire=52 markers=0 crc=ok crc_field=0xde0bd148 | ddp untagged last=1 dv=1 qn=1 msn=1 mo=0 | rdmap read_request rv=1 sink_stag=0x00000100 sink_to=0x2000 size=700 src_stag=0x00000200 src_to=0x3000 payload_len=0
10.0.0.1:5000->10.0.0.2:18515 r2i frame=7 offset=0 len=22 pad=0 wire=32 markers=1 crc=ok crc_field=0x05fc9535 | ddp untagged last=1 dv=1 qn=0 msn=1 mo=0 | rdmap send rv=1 payload_len=4
10.0.0.1:5000->10.0.0.2:18515 r2i frame=7 offset=32 len=714 pad=0 wire=724 markers=1 crc=ok crc_field=0x4005a471 | ddp tagged last=1 dv=1 stag=0x00000100 to=0x2000 | rdmap read_response rv=1 payload_len=700
10.0.0.1:5000->10.0.0.2:18515 r2i frame=7 offset=756 len=26 pad=0 wire=32 markers=0 crc=ok crc_field=0xc6963655 | ddp untagged last=1 dv=1 qn=0 msn=2 mo=0 | rdmap immediate rv=1 imm=0x1122334455667788 payload_len=0
10.0.0.1:5000->10.0.0.2:18515 i2r frame=10 offset=100 len=614 pad=0 wire=620 markers=0 crc=ok crc_field=0x1977460a | ddp tagged last=1 dv=1 stag=0x00000300 to=0x10000 | rdmap write rv=1 payload_len=600
10.0.0.1:5000->10.0.0.2:18515 i2r frame=12 offset=720 len=21 pad=1 wire=28 markers=0 crc=ok crc_field=0x1afa275a | ddp untagged last=1 dv=1 qn=0 msn=2 mo=0 | rdmap send rv=1 payload_len=3
10.0.0.1:5000->10.0.0.2:18515 r2i frame=13 offset=788 len=22 pad=0 wire=28 markers=0 crc=ok crc_field=0x330daad0 | ddp untagged last=1 dv=1 qn=2 msn=1 mo=0 | rdmap terminate rv=1 layer=0(RDMAP) etype=2 ecode=0xff m=0 d=0 r=0 layout=rfc control=02ff0000 payload_len=0
`

// conversationSummary ends the output for mpaConversation alone.
const conversationSummary = `summary 10.0.0.1:5000->10.0.0.2:18515 i2r fpdus=5 ops=write:2,read_request:1,send:2 terminates=0 crc_errors=0 marker_errors=0 framing_errors=0 gaps=0 ddp_errors=0 rtr=ok tcp_segments=11 tcp_octets=774 tcp_dup_octets=208 tcp_out_of_order=1 status="ok"
summary 10.0.0.1:5000->10.0.0.2:18515 r2i fpdus=4 ops=read_response:1,send:1,terminate:1,immediate:1 terminates=1 crc_errors=0 marker_errors=0 framing_errors=0 gaps=0 ddp_errors=0 tcp_segments=5 tcp_octets=840 tcp_dup_octets=0 tcp_out_of_order=0 status="ok"
summary total connections=1 mpa=1 skipped=0 fpdus=9 errors=0 packets=16 ignored_packets=0
`

func pcapLE(c *pcaptest.Conv) []byte {
	return pcaptest.Pcap(c.Link, c.Packets, binary.LittleEndian, false)
}

func checkOutput(t *testing.T, got, want string) {
	t.Helper()
	if got == want {
		return
	}
	g, w := lines(got), lines(want)
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			t.Errorf("line %d:\ngot  %s\nwant %s", i+1, gl, wl)
		}
	}
}

func TestDecodePcapConversation(t *testing.T) {
	want := conversationText + conversationSummary
	for _, tc := range []struct {
		name string
		lt   pcap.LinkType
		a, b netip.AddrPort
		ext  [][]byte
		file func(c *pcaptest.Conv) []byte
	}{
		{name: "pcap-le-ethernet", lt: pcap.LinkTypeEthernet, file: pcapLE},
		{name: "pcap-be-nano-raw", lt: pcap.LinkTypeRaw, file: func(c *pcaptest.Conv) []byte {
			return pcaptest.Pcap(c.Link, c.Packets, binary.BigEndian, true)
		}},
		{name: "pcapng-le-sll", lt: pcap.LinkTypeLinuxSLL, file: func(c *pcaptest.Conv) []byte {
			return pcaptest.PcapNG(c.Link, c.Packets, pcaptest.PcapNGOptions{})
		}},
		{name: "pcapng-be-sll2-spb", lt: pcap.LinkTypeSLL2, file: func(c *pcaptest.Conv) []byte {
			return pcaptest.PcapNG(c.Link, c.Packets, pcaptest.PcapNGOptions{Order: binary.BigEndian, SPB: true})
		}},
		{name: "pcapng-ipv6-ext", lt: pcap.LinkTypeEthernet, a: netip.MustParseAddrPort("[2001:db8::1]:5000"),
			b: netip.MustParseAddrPort("[2001:db8::2]:18515"), ext: [][]byte{pcaptest.HopByHop(), pcaptest.DestOpts()},
			file: func(c *pcaptest.Conv) []byte {
				return pcaptest.PcapNG(c.Link, c.Packets, pcaptest.PcapNGOptions{TsResol: 9})
			}},
		{name: "pcap-ipv6-sll", lt: pcap.LinkTypeLinuxSLL, a: netip.MustParseAddrPort("[fd00::a]:5000"),
			b: netip.MustParseAddrPort("[fd00::b]:18515"), file: pcapLE},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := initiator, responder
			if tc.a.IsValid() {
				a, b = tc.a, tc.b
			}
			c := pcaptest.NewConv(tc.lt, a, b, 0xfffffd00, 7000)
			c.Ext = tc.ext
			mpaTraffic(c, wire.Faults{})
			code, out, errs := decodeRun(t, tc.file(c), nil, "decode", "FILE")
			if code != 0 || errs != "" {
				t.Errorf("exit %d, stderr %q", code, errs)
			}
			w := strings.ReplaceAll(want, initiator.String(), a.String())
			w = strings.ReplaceAll(w, responder.String(), b.String())
			checkOutput(t, out, w)
		})
	}
}

func TestDecodePcapStdin(t *testing.T) {
	c := mpaConversation(pcap.LinkTypeEthernet, initiator, responder, wire.Faults{})
	code, out, errs := decodeRun(t, nil, pcaptest.PcapNG(c.Link, c.Packets, pcaptest.PcapNGOptions{}), "decode", "-")
	if code != 0 || errs != "" {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	checkOutput(t, out, conversationText+conversationSummary)
}

func TestDecodePcapJSON(t *testing.T) {
	c := mpaConversation(pcap.LinkTypeEthernet, initiator, responder, wire.Faults{})
	code, out, errs := decodeRun(t, pcapLE(c), nil, "-j", "decode", "--payload", "FILE")
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	ls := lines(out)
	if len(ls) != 16 {
		t.Fatalf("%d lines:\n%s", len(ls), out)
	}
	const conn = `"conn":"10.0.0.1:5000->10.0.0.2:18515"`
	for i, want := range map[int]string{
		0: `{` + conn + `,"dir":"i2r","frame":4,"mpa":{"frame":"request","rev":2,"m":true,"c":true,"r":false,"res":0,` +
			`"enhanced":true,"ird_ord":{"ird":16,"ord":8,"p2p":true,"rtr_send":false,"rtr_write":true,"rtr_read":true},` +
			`"pd_length":6,"pdata":"6869"}}`,
		1: `{` + conn + `,"dir":"r2i","frame":5,"mpa":{"frame":"reply","rev":2,"m":false,"c":false,"r":false,"res":0,` +
			`"enhanced":true,"ird_ord":{"ird":8,"ord":16,"p2p":true,"rtr_send":false,"rtr_write":true,"rtr_read":false},` +
			`"pd_length":4}}`,
		2:  `{` + conn + `,"dir":"i2r","fpdu_mode":{"markers":false,"crc":true,"offset":0,"tcp_seq":4294966555,"from":"negotiation","rtr":"write"}}`,
		3:  `{` + conn + `,"dir":"r2i","fpdu_mode":{"markers":true,"crc":true,"offset":0,"tcp_seq":7025,"from":"negotiation"}}`,
		15: `{"summary":{"connections":1,"mpa":1,"skipped":0,"fpdus":9,"errors":0,"packets":16,"ignored_packets":0}}`,
	} {
		if ls[i] != want {
			t.Errorf("line %d:\ngot  %s\nwant %s", i, ls[i], want)
		}
	}
	// The FPDU lines: the record of raw decode plus conn, dir and frame.
	wantOps := []string{"write", "send", "read_request", "send", "read_response", "immediate", "write", "send", "terminate"}
	wantDirs := "iiirrriir"
	for i, l := range ls[4:13] {
		var rec struct {
			Conn  string `json:"conn"`
			Dir   string `json:"dir"`
			Frame int    `json:"frame"`
			wire.Record
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		if rec.Conn != "10.0.0.1:5000->10.0.0.2:18515" || rec.Dir[0] != wantDirs[i] || rec.Frame < 6 ||
			rec.RDMAP == nil || rec.RDMAP.Op != wantOps[i] || rec.CRC != "ok" || rec.ULPDU == nil {
			t.Errorf("FPDU %d: %s", i, l)
		}
	}
	var sum struct {
		Conn    string   `json:"conn"`
		Dir     string   `json:"dir"`
		Summary dirStats `json:"summary"`
	}
	if err := json.Unmarshal([]byte(ls[14]), &sum); err != nil {
		t.Fatal(err)
	}
	s := sum.Summary
	if sum.Dir != "r2i" || s.FPDUs != 4 || s.Terminates != 1 || s.Ops["read_response"] != 1 || s.Status != "ok" || s.TCP.Octets != 840 {
		t.Errorf("summary %s", ls[14])
	}
}

// TestDecodePcapFramingErrors: a bad CRC or a bad marker in the Read
// Response stops that direction (exit 1, one error line); the other goes on.
func TestDecodePcapFramingErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		flt     wire.Faults
		line    string // the r2i FPDU line printed for the bad FPDU, or ""
		stderr  string
		summary string
	}{
		{"crc", wire.Faults{CRCXor: 1},
			"10.0.0.1:5000->10.0.0.2:18515 r2i frame=7 offset=32 len=714 pad=0 wire=724 markers=1 crc=bad crc_field=0x4005a470 | ddp tagged last=1 dv=1 stag=0x00000100 to=0x2000 | rdmap read_response rv=1 payload_len=700",
			"iwarpctl: decode FILE: 10.0.0.1:5000->10.0.0.2:18515 r2i: MPA CRC mismatch: CRC field 0x4005a470, computed 0x4005a471 at offset 32 (0x20) (terminate layer 2 (LLP) etype 0 ecode 0x02)",
			`summary 10.0.0.1:5000->10.0.0.2:18515 r2i fpdus=2 ops=read_response:1,send:1 terminates=0 crc_errors=1 marker_errors=0 framing_errors=0 gaps=0 ddp_errors=0 tcp_segments=5 tcp_octets=840 tcp_dup_octets=0 tcp_out_of_order=0 status="error"`},
		{"marker", wire.Faults{MarkerXor: 0x100}, "",
			"iwarpctl: decode FILE: 10.0.0.1:5000->10.0.0.2:18515 r2i: MPA marker does not match the FPDU start: FPDUPTR 0x00e0, FPDU starts 0x01e0 octets before the marker at offset 512 (0x200) (terminate layer 2 (LLP) etype 0 ecode 0x03)",
			`summary 10.0.0.1:5000->10.0.0.2:18515 r2i fpdus=1 ops=send:1 terminates=0 crc_errors=0 marker_errors=1 framing_errors=0 gaps=0 ddp_errors=0 tcp_segments=5 tcp_octets=840 tcp_dup_octets=0 tcp_out_of_order=0 status="error"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mpaConversation(pcap.LinkTypeEthernet, initiator, responder, tc.flt)
			code, out, errs := decodeRun(t, pcapLE(c), nil, "decode", "FILE")
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			// decodeRun's FILE is a temporary file: compare after its name.
			if el := lines(errs); len(el) != 1 || !strings.HasPrefix(el[0], "iwarpctl: decode ") ||
				!strings.HasSuffix(el[0], strings.TrimPrefix(tc.stderr, "iwarpctl: decode FILE")) {
				t.Errorf("stderr:\n%s\nwant\n%s", errs, tc.stderr)
			}
			// Every i2r line as without the fault; r2i up to the bad FPDU.
			var want []string
			for _, l := range lines(conversationText) {
				if strings.Contains(l, " r2i frame=7 offset=32 ") {
					if tc.line != "" {
						want = append(want, tc.line)
					}
					continue
				}
				if strings.Contains(l, " r2i frame=") && !strings.Contains(l, " mpa ") && !strings.Contains(l, "offset=0 ") {
					continue
				}
				want = append(want, l)
			}
			sum := lines(conversationSummary)
			want = append(want, sum[0], tc.summary, strings.Replace(sum[2], "fpdus=9 errors=0", "fpdus="+
				map[string]string{"crc": "7", "marker": "6"}[tc.name]+" errors=1", 1))
			checkOutput(t, out, strings.Join(want, "\n")+"\n")
		})
	}
}

func TestDecodePcapTruncated(t *testing.T) {
	c := mpaConversation(pcap.LinkTypeEthernet, initiator, responder, wire.Faults{})
	// Cut inside the block of packet 9 (the Write's third segment): the
	// Write is left incomplete, and the file error makes the exit 1.
	ng := pcaptest.PcapNG(c.Link, c.Packets[:9], pcaptest.PcapNGOptions{})
	code, out, errs := decodeRun(t, ng[:len(ng)-30], nil, "decode", "FILE")
	if code != 1 || !strings.HasSuffix(errs, ": capture file truncated: pcapng block 0x00000006 at offset 1928: 278 of 308 octets\n") || len(lines(errs)) != 1 {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	ls := lines(out)
	if len(ls) != 13 || !strings.HasPrefix(ls[len(ls)-3], `summary 10.0.0.1:5000->10.0.0.2:18515 i2r fpdus=3 `) ||
		!strings.HasSuffix(ls[len(ls)-3], ` status="incomplete: the capture ends inside the FPDU at offset 100"`) ||
		ls[len(ls)-1] != "summary total connections=1 mpa=1 skipped=0 fpdus=6 errors=0 packets=8 ignored_packets=0" {
		t.Errorf("output:\n%s", out)
	}
	// A file cut inside its header.
	code, out, errs = decodeRun(t, pcapLE(c)[:20], nil, "decode", "FILE")
	if code != 1 || out != "" || !strings.Contains(errs, "capture file truncated: pcap file header at offset 0: 20 of 24 octets") {
		t.Errorf("exit %d, out %q, stderr %q", code, out, errs)
	}
}

func TestDecodePcapSkipped(t *testing.T) {
	c := mpaConversation(pcap.LinkTypeEthernet, initiator, responder, wire.Faults{})
	web := pcaptest.NewConv(pcap.LinkTypeEthernet, netip.MustParseAddrPort("10.0.0.1:40000"),
		netip.MustParseAddrPort("10.0.0.2:80"), 1, 2)
	web.Handshake()
	web.Send(0, []byte("GET / HTTP/1.0\r\n\r\n"))
	web.Send(1, []byte("HTTP/1.0 200 OK\r\n\r\n"))
	web.Close()
	scan := pcaptest.NewConv(pcap.LinkTypeEthernet, netip.MustParseAddrPort("10.0.0.9:1234"),
		netip.MustParseAddrPort("10.0.0.2:22"), 1, 2)
	scan.Raw(0, 1, pcaptest.SYN, nil)
	scan.Raw(1, 0, pcaptest.RST|pcaptest.ACK, nil)
	pkts := append(append(c.Packets, web.Packets...), scan.Packets...)
	// A UDP packet is ignored.
	pkts = append(pkts, pcaptest.Packet{Data: pcaptest.Frame(pcap.LinkTypeEthernet,
		pcaptest.IPv4(initiator.Addr(), responder.Addr(), 17, make([]byte, 8)))})
	file := pcaptest.Pcap(pcap.LinkTypeEthernet, pkts, binary.LittleEndian, false)
	want := conversationText + strings.Join(lines(conversationSummary)[:2], "\n") + "\n" +
		`summary 10.0.0.1:40000->10.0.0.2:80 skipped: not MPA: i2r does not start with an MPA Request ("GET / HTTP/1.0\r\n")` + "\n" +
		`summary 10.0.0.9:1234->10.0.0.2:22 skipped: no TCP payload` + "\n" +
		`summary total connections=3 mpa=1 skipped=2 fpdus=9 errors=0 packets=27 ignored_packets=1` + "\n"
	code, out, errs := decodeRun(t, file, nil, "decode", "FILE")
	if code != 0 || errs != "" {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	checkOutput(t, out, want)
	code, out, errs = decodeRun(t, file, nil, "decode", "--verbose", "FILE")
	el := lines(errs)
	if code != 0 || out != want || len(el) != 3 || !strings.HasSuffix(el[0], `: 10.0.0.1:40000->10.0.0.2:80 skipped: not MPA: i2r does not start with an MPA Request ("GET / HTTP/1.0\r\n")`) ||
		!strings.HasSuffix(el[1], ": packet 27 ignored: not a TCP segment: IP protocol 17") ||
		!strings.HasSuffix(el[2], ": 10.0.0.9:1234->10.0.0.2:22 skipped: no TCP payload") {
		t.Errorf("exit %d, stderr:\n%s", code, errs)
	}
}

// simpleConv is a rev 1 negotiation with CRC asked by the responder, no
// markers, and FPDUs each way; isn chooses the initiator's ISN.
func simpleConv(isn uint32) *pcaptest.Conv {
	c := pcaptest.NewConv(pcap.LinkTypeEthernet, initiator, responder, isn, 100)
	c.Handshake()
	c.Send(0, wire.AppendMPAFrame(nil, &wire.MPAFrame{Rev: 1}))
	c.Send(1, wire.AppendMPAFrame(nil, &wire.MPAFrame{Reply: true, Rev: 1, CRC: true, PrivateData: []byte("ok")}))
	i2r, r2i := &wire.Framer{CRC: true}, &wire.Framer{CRC: true}
	c.Send(0, fpdus(i2r, send(1, "a")))
	c.Send(1, fpdus(r2i, send(1, "b")))
	c.Send(0, fpdus(i2r, rdmaWrite(5, 0, 8), send(2, "c")))
	return c
}

// TestDecodePcapNoNegotiation: a capture that starts after the MPA Reply
// is skipped unless --crc or --markers say how to decode it.
func TestDecodePcapNoNegotiation(t *testing.T) {
	c := simpleConv(1000)
	file := pcapLE(&pcaptest.Conv{Link: c.Link, Packets: c.Packets[5:]})
	code, out, errs := decodeRun(t, file, nil, "decode", "FILE")
	if code != 0 || errs != "" || out != "summary 10.0.0.1:5000->10.0.0.2:18515 skipped: no MPA negotiation in the capture "+
		"(it starts after the connection's MPA Request and Reply); --crc or --markers decode such connections from the first captured octet\n"+
		"summary total connections=1 mpa=0 skipped=1 fpdus=0 errors=0 packets=3 ignored_packets=0\n" {
		t.Errorf("exit %d, stderr %q, out:\n%s", code, errs, out)
	}
	code, out, errs = decodeRun(t, file, nil, "decode", "--crc", "FILE")
	want := `10.0.0.1:5000->10.0.0.2:18515 i2r fpdu_mode markers=0 crc=1 offset=0 tcp_seq=1021 from=flags
10.0.0.1:5000->10.0.0.2:18515 i2r frame=1 offset=0 len=19 pad=3 wire=28 markers=0 crc=ok crc_field=0x4e54827a | ddp untagged last=1 dv=1 qn=0 msn=1 mo=0 | rdmap send rv=1 payload_len=1
10.0.0.1:5000->10.0.0.2:18515 r2i fpdu_mode markers=0 crc=1 offset=0 tcp_seq=123 from=flags
10.0.0.1:5000->10.0.0.2:18515 r2i frame=2 offset=0 len=19 pad=3 wire=28 markers=0 crc=ok crc_field=0x2c760b43 | ddp untagged last=1 dv=1 qn=0 msn=1 mo=0 | rdmap send rv=1 payload_len=1
10.0.0.1:5000->10.0.0.2:18515 i2r frame=3 offset=28 len=22 pad=0 wire=28 markers=0 crc=ok crc_field=0x0c2ea515 | ddp tagged last=1 dv=1 stag=0x00000005 to=0x0 | rdmap write rv=1 payload_len=8
10.0.0.1:5000->10.0.0.2:18515 i2r frame=3 offset=56 len=19 pad=3 wire=28 markers=0 crc=ok crc_field=0xe89cadd2 | ddp untagged last=1 dv=1 qn=0 msn=2 mo=0 | rdmap send rv=1 payload_len=1
summary 10.0.0.1:5000->10.0.0.2:18515 i2r fpdus=3 ops=write:1,send:2 terminates=0 crc_errors=0 marker_errors=0 framing_errors=0 gaps=0 ddp_errors=0 tcp_segments=2 tcp_octets=84 tcp_dup_octets=0 tcp_out_of_order=0 status="ok"
summary 10.0.0.1:5000->10.0.0.2:18515 r2i fpdus=1 ops=send:1 terminates=0 crc_errors=0 marker_errors=0 framing_errors=0 gaps=0 ddp_errors=0 tcp_segments=1 tcp_octets=28 tcp_dup_octets=0 tcp_out_of_order=0 status="ok"
summary total connections=1 mpa=1 skipped=0 fpdus=4 errors=0 packets=3 ignored_packets=0
`
	if code != 0 || errs != "" {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	checkOutput(t, out, want)
	// Without the CRC the FPDUs still split, with crc=off.
	code, out, _ = decodeRun(t, file, nil, "decode", "--markers=false", "FILE")
	if code != 0 || strings.Count(out, " crc=off ") != 4 {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

func TestDecodePcapRev1(t *testing.T) {
	c := simpleConv(1000)
	code, out, errs := decodeRun(t, pcapLE(c), nil, "decode", "FILE")
	want := `10.0.0.1:5000->10.0.0.2:18515 i2r frame=4 mpa request rev=1 m=0 c=0 r=0 res=0x00 enhanced=0 pd_length=0
10.0.0.1:5000->10.0.0.2:18515 r2i frame=5 mpa reply rev=1 m=0 c=1 r=0 res=0x00 enhanced=0 pd_length=2 pdata=6f6b
10.0.0.1:5000->10.0.0.2:18515 i2r fpdu_mode markers=0 crc=1 offset=0 tcp_seq=1021 from=negotiation
10.0.0.1:5000->10.0.0.2:18515 r2i fpdu_mode markers=0 crc=1 offset=0 tcp_seq=123 from=negotiation
`
	if code != 0 || errs != "" || !strings.HasPrefix(out, want) || strings.Count(out, "crc=ok") != 4 {
		t.Errorf("exit %d, stderr %q, out:\n%s", code, errs, out)
	}
}

func TestDecodePcapGap(t *testing.T) {
	c := simpleConv(1000)
	pkts := append(append([]pcaptest.Packet{}, c.Packets[:5]...), c.Packets[6:]...) // the i2r Send is lost
	code, out, errs := decodeRun(t, pcapLE(&pcaptest.Conv{Link: c.Link, Packets: pkts}), nil, "decode", "FILE")
	if code != 1 || !strings.HasSuffix(errs, ": 10.0.0.1:5000->10.0.0.2:18515 i2r: 28 octets missing from the capture at stream offset 20 (TCP seq 1021)\n") ||
		!strings.Contains(out, "summary 10.0.0.1:5000->10.0.0.2:18515 i2r fpdus=0 ops=- terminates=0 crc_errors=0 marker_errors=0 framing_errors=0 gaps=1 ") ||
		!strings.Contains(out, " r2i frame=6 offset=0 len=19 ") {
		t.Errorf("exit %d, stderr %q, out:\n%s", code, errs, out)
	}
}

func TestDecodePcapStreamEnds(t *testing.T) {
	// The initiator closes inside an FPDU: a framing error. A capture
	// that ends inside one is only incomplete.
	for _, fin := range []bool{true, false} {
		c := simpleConv(1000)
		f := fpdus(&wire.Framer{CRC: true, Pos: 84}, send(3, "cut"))
		c.Send(0, f[:10])
		if fin {
			c.Close()
		}
		code, out, errs := decodeRun(t, pcapLE(c), nil, "decode", "FILE")
		if fin {
			if code != 1 || !strings.HasSuffix(errs, "i2r: connection closed: input too short: stream ends inside the FPDU that starts there at offset 84 (0x54) (terminate layer 2 (LLP) etype 0 ecode 0x01)\n") ||
				!strings.Contains(out, " framing_errors=1 ") {
				t.Errorf("exit %d, stderr %q, out:\n%s", code, errs, out)
			}
			continue
		}
		if code != 0 || errs != "" || !strings.Contains(out, `status="incomplete: the capture ends inside the FPDU at offset 84"`) {
			t.Errorf("exit %d, stderr %q, out:\n%s", code, errs, out)
		}
	}
}

// TestDecodePcapNegotiationChecks: the RFC 6581 fields checked against each
// other, and the RTR.
func TestDecodePcapNegotiationChecks(t *testing.T) {
	c := pcaptest.NewConv(pcap.LinkTypeEthernet, initiator, responder, 1, 1)
	c.Handshake()
	c.Send(0, wire.AppendMPAFrame(nil, &wire.MPAFrame{Rev: 2, Enhanced: true, IRD: 4, ORD: 32, P2P: true, RTRWrite: true, Res: 0x08}))
	c.Send(1, wire.AppendMPAFrame(nil, &wire.MPAFrame{Reply: true, Rev: 2, Enhanced: true, IRD: 16, ORD: 8, P2P: true, RTRRead: true}))
	c.Send(0, fpdus(&wire.Framer{}, send(1, "not an RTR")))
	c.Send(1, fpdus(&wire.Framer{}, send(1, "x")))
	code, out, errs := decodeRun(t, pcapLE(c), nil, "decode", "FILE")
	want := []string{
		`10.0.0.1:5000->10.0.0.2:18515 i2r note: the Request has reserved flag bits 0x08 set`,
		`10.0.0.1:5000->10.0.0.2:18515 note: initiator ORD 32 above responder IRD 16: the initiator must lower its ORD or terminate (LLP 0x06)`,
		`10.0.0.1:5000->10.0.0.2:18515 note: responder ORD 8 above initiator IRD 4 (LLP 0x06)`,
		`10.0.0.1:5000->10.0.0.2:18515 r2i note: the Reply selects the read RTR, which the Request did not offer`,
		`10.0.0.1:5000->10.0.0.2:18515 i2r fpdu_mode markers=0 crc=0 offset=0 tcp_seq=26 from=negotiation rtr=read`,
		`10.0.0.1:5000->10.0.0.2:18515 r2i fpdu_mode markers=0 crc=0 offset=0 tcp_seq=26 from=negotiation rtr=read_response`,
		`10.0.0.1:5000->10.0.0.2:18515 i2r note: the first FPDU is a send with 10 payload octets, not the zero-length read RTR the Reply selected (RFC 6581)`,
		`10.0.0.1:5000->10.0.0.2:18515 r2i note: the first FPDU is a send with 1 payload octets, not the zero-length read_response that answers the read RTR (RFC 6581)`,
	}
	for _, w := range want {
		if !strings.Contains(out, w+"\n") {
			t.Errorf("no line %q", w)
		}
	}
	if code != 0 || errs != "" || strings.Count(out, " note: ") != len(want)-2 || strings.Count(out, " rtr=wrong ") != 2 {
		t.Errorf("exit %d, stderr %q, out:\n%s", code, errs, out)
	}
}

func TestDecodePcapRejected(t *testing.T) {
	c := pcaptest.NewConv(pcap.LinkTypeEthernet, initiator, responder, 1, 1)
	c.Handshake()
	c.Send(0, wire.AppendMPAFrame(nil, &wire.MPAFrame{Rev: 1, Markers: true}))
	c.Send(1, wire.AppendMPAFrame(nil, &wire.MPAFrame{Reply: true, Rev: 1, Reject: true}))
	c.Close()
	code, out, errs := decodeRun(t, pcapLE(c), nil, "decode", "FILE")
	if code != 0 || errs != "" || !strings.Contains(out, " r2i frame=5 mpa reply rev=1 m=0 c=0 r=1 ") ||
		strings.Count(out, `status="not decoded: the Reply rejects the connection"`) != 2 || strings.Contains(out, "fpdu_mode") {
		t.Errorf("exit %d, stderr %q, out:\n%s", code, errs, out)
	}
}

func TestDecodePcapBadFrame(t *testing.T) {
	c := pcaptest.NewConv(pcap.LinkTypeEthernet, initiator, responder, 1, 1)
	c.Handshake()
	c.Send(0, wire.AppendMPAFrame(nil, &wire.MPAFrame{Rev: 1}))
	c.Send(1, wire.AppendMPAFrame(nil, &wire.MPAFrame{Reply: true, Rev: 3}))
	code, out, errs := decodeRun(t, pcapLE(c), nil, "decode", "FILE")
	if code != 1 || !strings.HasSuffix(errs, "r2i: MPA Reply: invalid MPA Request/Reply frame: revision 3 at offset 17 (0x11) (terminate layer 2 (LLP) etype 0 ecode 0x04)\n") ||
		!strings.Contains(out, " r2i fpdus=0 ops=- terminates=0 crc_errors=0 marker_errors=0 framing_errors=1 ") {
		t.Errorf("exit %d, stderr %q, out:\n%s", code, errs, out)
	}
}

func TestDecodePcapRawFlag(t *testing.T) {
	// --raw reads a capture file as an MPA stream (which it is not).
	c := simpleConv(1000)
	code, out, errs := decodeRun(t, pcapLE(c), nil, "decode", "--raw", "FILE")
	if code != 1 || strings.Contains(out, "summary") || !strings.Contains(errs, "ends inside the FPDU") {
		t.Errorf("exit %d, stderr %q, out:\n%s", code, errs, out)
	}
}

func TestDecodePcapLinkType(t *testing.T) {
	c := simpleConv(1000)
	file := pcaptest.Pcap(147, c.Packets, binary.LittleEndian, false)
	code, out, errs := decodeRun(t, file, nil, "decode", "FILE")
	if code != 1 || !strings.HasSuffix(errs, ": 8 packets ignored: unsupported link type 147\n") ||
		!strings.HasSuffix(out, "summary total connections=0 mpa=0 skipped=0 fpdus=0 errors=0 packets=8 ignored_packets=8\n") {
		t.Errorf("exit %d, stderr %q, out:\n%s", code, errs, out)
	}
}
