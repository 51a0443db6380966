// SPDX-License-Identifier: BSD-3-Clause

package pcap_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net/netip"
	"testing"
	"time"

	"github.com/iwarp/iwarp/internal/pcap"
	"github.com/iwarp/iwarp/internal/pcap/pcaptest"
)

var (
	addrA = netip.MustParseAddrPort("192.0.2.1:40000")
	addrB = netip.MustParseAddrPort("192.0.2.2:18515")
)

// smallConv is a handshake, two data segments and the close.
func smallConv(lt pcap.LinkType) *pcaptest.Conv {
	c := pcaptest.NewConv(lt, addrA, addrB, 100, 200)
	c.Handshake()
	c.Send(0, []byte("hello"))
	c.Send(1, []byte("world!"))
	c.Close()
	return c
}

func readAll(t *testing.T, file []byte) ([]*pcap.Packet, error) {
	t.Helper()
	r, err := pcap.NewReader(bytes.NewReader(file))
	if err != nil {
		return nil, err
	}
	var ps []*pcap.Packet
	for {
		p, err := r.Next()
		if err == io.EOF {
			return ps, nil
		}
		if err != nil {
			return ps, err
		}
		q := *p
		q.Data = bytes.Clone(p.Data)
		ps = append(ps, &q)
	}
}

func TestReaderFormats(t *testing.T) {
	c := smallConv(pcap.LinkTypeEthernet)
	// Timestamps with nanoseconds, to see each resolution round.
	for i := range c.Packets {
		c.Packets[i].Time = time.Unix(1700000000+int64(i), 123456789)
	}
	for _, tc := range []struct {
		name   string
		file   []byte
		format pcap.Format
		res    time.Duration
	}{
		{"pcap-le-micro", pcaptest.Pcap(c.Link, c.Packets, binary.LittleEndian, false), pcap.FormatPcap, time.Microsecond},
		{"pcap-be-micro", pcaptest.Pcap(c.Link, c.Packets, binary.BigEndian, false), pcap.FormatPcap, time.Microsecond},
		{"pcap-le-nano", pcaptest.Pcap(c.Link, c.Packets, binary.LittleEndian, true), pcap.FormatPcap, time.Nanosecond},
		{"pcap-be-nano", pcaptest.Pcap(c.Link, c.Packets, binary.BigEndian, true), pcap.FormatPcap, time.Nanosecond},
		{"pcapng-le-epb", pcaptest.PcapNG(c.Link, c.Packets, pcaptest.PcapNGOptions{}), pcap.FormatPcapNG, time.Microsecond},
		{"pcapng-be-epb", pcaptest.PcapNG(c.Link, c.Packets, pcaptest.PcapNGOptions{Order: binary.BigEndian}), pcap.FormatPcapNG, time.Microsecond},
		{"pcapng-le-spb", pcaptest.PcapNG(c.Link, c.Packets, pcaptest.PcapNGOptions{SPB: true}), pcap.FormatPcapNG, 0},
		{"pcapng-be-spb", pcaptest.PcapNG(c.Link, c.Packets, pcaptest.PcapNGOptions{SPB: true, Order: binary.BigEndian}), pcap.FormatPcapNG, 0},
		{"pcapng-tsresol-nano", pcaptest.PcapNG(c.Link, c.Packets, pcaptest.PcapNGOptions{TsResol: 9}), pcap.FormatPcapNG, time.Nanosecond},
		{"pcapng-tsresol-2^-20", pcaptest.PcapNG(c.Link, c.Packets, pcaptest.PcapNGOptions{TsResol: 0x80 | 20}), pcap.FormatPcapNG, time.Microsecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if f := pcap.Detect(tc.file); f != tc.format {
				t.Errorf("Detect: %v", f)
			}
			r, err := pcap.NewReader(bytes.NewReader(tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if r.Format() != tc.format {
				t.Errorf("Format %v", r.Format())
			}
			ps, err := readAll(t, tc.file)
			if err != nil {
				t.Fatal(err)
			}
			if len(ps) != len(c.Packets) {
				t.Fatalf("%d packets, want %d", len(ps), len(c.Packets))
			}
			for i, p := range ps {
				want := c.Packets[i]
				if p.N != i+1 || p.LinkType != pcap.LinkTypeEthernet || !bytes.Equal(p.Data, want.Data) || p.OrigLen != len(want.Data) {
					t.Errorf("packet %d: N %d link %v len %d/%d", i, p.N, p.LinkType, len(p.Data), p.OrigLen)
				}
				if tc.res == 0 {
					continue // SPB: no timestamp
				}
				if d := want.Time.Sub(p.Time); d < 0 || d >= tc.res {
					t.Errorf("packet %d: time %v, want %v (resolution %v)", i, p.Time, want.Time, tc.res)
				}
			}
		})
	}
}

func TestReaderSections(t *testing.T) {
	// Two sections of different byte orders and link types, one file.
	a := smallConv(pcap.LinkTypeEthernet)
	b := smallConv(pcap.LinkTypeLinuxSLL)
	file := append(pcaptest.PcapNG(a.Link, a.Packets, pcaptest.PcapNGOptions{}),
		pcaptest.PcapNG(b.Link, b.Packets, pcaptest.PcapNGOptions{Order: binary.BigEndian, SPB: true})...)
	ps, err := readAll(t, file)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != len(a.Packets)+len(b.Packets) {
		t.Fatalf("%d packets", len(ps))
	}
	if ps[0].LinkType != pcap.LinkTypeEthernet || ps[len(ps)-1].LinkType != pcap.LinkTypeLinuxSLL {
		t.Errorf("link types %v, %v", ps[0].LinkType, ps[len(ps)-1].LinkType)
	}
}

func TestReaderErrors(t *testing.T) {
	c := smallConv(pcap.LinkTypeEthernet)
	pc := pcaptest.Pcap(c.Link, c.Packets, binary.LittleEndian, false)
	ng := pcaptest.PcapNG(c.Link, c.Packets, pcaptest.PcapNGOptions{})
	patch := func(b []byte, off int, v ...byte) []byte {
		b = bytes.Clone(b)
		copy(b[off:], v)
		return b
	}
	// The first EPB starts after the SHB (44), IDB (20) and ISB (24).
	const epb = 88
	if binary.LittleEndian.Uint32(ng[epb:]) != 6 {
		t.Fatalf("no EPB at %d", epb)
	}
	epbEnd := epb + int(binary.LittleEndian.Uint32(ng[epb+4:]))
	for _, tc := range []struct {
		name    string
		file    []byte
		open    error // from NewReader
		packets int   // read before err
		err     error // from Next
	}{
		{"empty", nil, pcap.ErrFormat, 0, nil},
		{"garbage", []byte("GET / HTTP/1.1\r\n"), pcap.ErrFormat, 0, nil},
		{"three-octets", pc[:3], pcap.ErrFormat, 0, nil},
		{"pcap-header-cut", pc[:20], pcap.ErrTruncated, 0, nil},
		{"pcap-version", patch(pc, 4, 3, 0), pcap.ErrVersion, 0, nil},
		{"pcap-record-header-cut", pc[:24+16+len(c.Packets[0].Data)+7], nil, 1, pcap.ErrTruncated},
		{"pcap-record-data-cut", pc[:len(pc)-1], nil, len(c.Packets) - 1, pcap.ErrTruncated},
		{"pcap-record-huge", patch(pc, 24+8, 0, 0, 0, 0x7f), nil, 0, pcap.ErrMalformed},
		{"pcapng-shb-cut", ng[:10], pcap.ErrTruncated, 0, nil},
		{"pcapng-bom", patch(ng, 8, 1, 2, 3, 4), pcap.ErrMalformed, 0, nil},
		{"pcapng-version", patch(ng, 12, 2, 0), pcap.ErrVersion, 0, nil},
		{"pcapng-shb-length", patch(ng, 4, 41), pcap.ErrMalformed, 0, nil},
		{"pcapng-block-cut", ng[:len(ng)-5], nil, len(c.Packets) - 1, pcap.ErrTruncated},
		{"pcapng-trailer", patch(ng, epbEnd-4, 0xff), nil, 0, pcap.ErrMalformed},
		{"pcapng-interface", patch(ng, epb+8, 7), nil, 0, pcap.ErrMalformed},
		{"pcapng-caplen", patch(ng, epb+8+12, 0xff, 0xff), nil, 0, pcap.ErrMalformed},
		{"pcapng-first-block", patch(ng, 0, 1, 0, 0, 0), pcap.ErrFormat, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := pcap.NewReader(bytes.NewReader(tc.file))
			if tc.open != nil {
				if !errors.Is(err, tc.open) {
					t.Fatalf("NewReader: %v, want %v", err, tc.open)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for {
				_, err = r.Next()
				if err != nil {
					break
				}
				n++
			}
			if n != tc.packets || !errors.Is(err, tc.err) {
				t.Fatalf("%d packets, then %v; want %d, %v", n, err, tc.packets, tc.err)
			}
			if _, err2 := r.Next(); err2 != err {
				t.Errorf("error not sticky: %v", err2)
			}
		})
	}
}
