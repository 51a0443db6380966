// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package userlib

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
	"unsafe"

	"github.com/iwarp/iwarp/netlinkproto"
)

func TestEncodeSendValidation(t *testing.T) {
	sge := SGE{Addr: 0x1000, Length: 8, LKey: 0x100}
	sges := func(n int) []SGE {
		s := make([]SGE, n)
		for i := range s {
			s[i] = sge
		}
		return s
	}
	for _, c := range []struct {
		name string
		wr   SendWR
		ok   bool
	}{
		{"send 0 SGEs", SendWR{Op: OpSend}, true},
		{"send 4 SGEs", SendWR{Op: OpSend, SGEs: sges(4)}, true},
		{"send 5 SGEs", SendWR{Op: OpSend, SGEs: sges(5)}, false},
		{"write 5 SGEs", SendWR{Op: OpWrite, SGEs: sges(5)}, false},
		{"inline 64", SendWR{Op: OpSend, Inline: make([]byte, 64)}, true},
		{"inline 65", SendWR{Op: OpSend, Inline: make([]byte, 65)}, false},
		{"inline write", SendWR{Op: OpWrite, Inline: []byte("x")}, true},
		{"inline send-inv", SendWR{Op: OpSendInv, Inline: []byte("x")}, true},
		{"inline and SGEs", SendWR{Op: OpSend, Inline: []byte("x"), SGEs: sges(1)}, false},
		{"inline flag and SGEs", SendWR{Op: OpSend, Flags: Inline, SGEs: sges(1)}, false},
		{"inline read", SendWR{Op: OpRead, Inline: []byte("x")}, false},
		{"inline atomic", SendWR{Op: OpFetchAdd, Inline: []byte("x")}, false},
		{"read 1 SGE", SendWR{Op: OpRead, SGEs: sges(1)}, true},
		{"read 0 SGEs", SendWR{Op: OpRead}, false},
		{"read 2 SGEs", SendWR{Op: OpRead, SGEs: sges(2)}, false},
		{"fetch-add", SendWR{Op: OpFetchAdd, SGEs: sges(1)}, true},
		{"cmp-swap", SendWR{Op: OpCmpSwap, SGEs: sges(1)}, true},
		{"swap 2 SGEs", SendWR{Op: OpSwap, SGEs: sges(2)}, false},
		{"atomic short sink", SendWR{Op: OpSwap, SGEs: []SGE{{Addr: 1, Length: 4}}}, false},
		{"imm", SendWR{Op: OpImm, ImmData: 1}, true},
		{"imm with payload", SendWR{Op: OpImm, SGEs: sges(1)}, false},
		{"local-inv", SendWR{Op: OpLocalInv, InvSTag: 5}, true},
		{"local-inv with payload", SendWR{Op: OpLocalInv, SGEs: sges(1)}, false},
		{"unknown opcode", SendWR{Op: Opcode(netlinkproto.WRMax)}, false},
		{"unknown flag", SendWR{Op: OpSend, Flags: 1 << 5}, false},
		{"all flags", SendWR{Op: OpSend, Flags: Signaled | Solicited | Fence}, true},
	} {
		_, err := encodeSend(&c.wr)
		if c.ok && err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		if !c.ok && !errors.Is(err, ErrInvalidWR) {
			t.Errorf("%s: %v, want ErrInvalidWR", c.name, err)
		}
	}
}

func TestEncodeSendFields(t *testing.T) {
	e := sendEntry(t, SendWR{WRID: 42, Op: OpSendInv, Flags: Signaled | Solicited, InvSTag: 0x3301,
		Inline: []byte("hello")})
	if e.WRID != 42 || e.Opcode != netlinkproto.WRSendInv || e.InvSTag != 0x3301 || e.NumSGE != 5 ||
		e.Flags != netlinkproto.WRFSignaled|netlinkproto.WRFSolicited|netlinkproto.WRFInline {
		t.Fatalf("inline send-inv: %+v", e)
	}
	if !bytes.Equal(e.InlineData()[:5], []byte("hello")) || e.InlineData()[5] != 0 {
		t.Fatalf("inline data %q", e.InlineData()[:8])
	}

	e = sendEntry(t, SendWR{WRID: 1, Op: OpCmpSwap, RemoteAddr: 0x7000, RKey: 0x501, Swap: 9, Compare: 8,
		AddSwapMask: 7, CompareMask: 6, Add: 99, SGEs: []SGE{{Addr: 0x2000, Length: 8, LKey: 0x600}}})
	want := netlinkproto.SQE{WRID: 1, Opcode: netlinkproto.WRAtomicCmpSwap, NumSGE: 1, RemoteAddr: 0x7000,
		RKey: 0x501, ImmData: 9, AddSwapMask: 7, Compare: 8, CompareMask: 6}
	want.SGE[0] = netlinkproto.SGE{Addr: 0x2000, Length: 8, LKey: 0x600}
	if *e != want {
		t.Fatalf("cmp-swap:\n got %+v\nwant %+v", *e, want)
	}
	if e := sendEntry(t, SendWR{Op: OpFetchAdd, Add: 5, Swap: 6, SGEs: []SGE{{Length: 8}}}); e.ImmData != 5 {
		t.Fatalf("fetch-add data %d, want 5", e.ImmData)
	}
	if e := sendEntry(t, SendWR{Op: OpImm, ImmData: 0xfeed}); e.ImmData != 0xfeed || e.NumSGE != 0 {
		t.Fatalf("imm: %+v", e)
	}
}

func TestEncodeRecv(t *testing.T) {
	e, err := encodeRecv(7, []SGE{{Addr: 1, Length: 2, LKey: 3}, {Addr: 4, Length: 5, LKey: 6}})
	if err != nil {
		t.Fatal(err)
	}
	if e.WRID != 7 || e.NumSGE != 2 || e.SGE[1] != (netlinkproto.SGE{Addr: 4, Length: 5, LKey: 6}) {
		t.Fatalf("%+v", e)
	}
	if _, err := encodeRecv(1, make([]SGE, MaxRecvSGE+1)); !errors.Is(err, ErrInvalidWR) {
		t.Fatalf("4 receive SGEs: %v", err)
	}
}

func TestWCErr(t *testing.T) {
	for _, c := range []struct {
		status Status
		want   error
	}{
		{StatusFlushErr, ErrFlushed},
		{StatusLocLenErr, ErrLocalLength},
		{StatusLocProtErr, ErrLocalProtection},
		{StatusLocQPErr, ErrLocalQP},
		{StatusRemAccessErr, ErrRemoteAccess},
		{StatusRemOpErr, ErrRemoteOperation},
		{StatusTerminated, ErrTerminated},
		{StatusGeneralErr, ErrGeneral},
		{Status(200), ErrGeneral},
	} {
		wc := WC{Status: c.status}
		if err := wc.Err(); !errors.Is(err, c.want) {
			t.Errorf("status %d: %v, want %v", c.status, err, c.want)
		}
		var te *TerminateError
		if errors.As(wc.Err(), &te) {
			t.Errorf("status %d without term flags gave a TerminateError", c.status)
		}
	}
	if err := (&WC{}).Err(); err != nil {
		t.Fatalf("success: %v", err)
	}
	if err := (&WC{Flags: WCTermRcvd, Term: 0x1203}).Err(); err != nil {
		t.Fatalf("success with term flags: %v", err)
	}

	wc := WC{Status: StatusRemAccessErr, Flags: WCTermRcvd, Term: 1<<12 | 2<<8 | 0x04}
	err := wc.Err()
	var te *TerminateError
	if !errors.As(err, &te) || !errors.Is(err, ErrRemoteAccess) || errors.Is(err, ErrTerminated) {
		t.Fatalf("terminate received: %v", err)
	}
	if te.Layer != LayerDDP || te.EType != 2 || te.ECode != 4 || te.Sent {
		t.Fatalf("decoded %+v", te)
	}
	if got, want := err.Error(), "iwarp: terminate received (DDP, etype 2, ecode 0x04): iwarp: remote access error"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	wc = WC{Status: StatusTerminated, Flags: WCTermSent, Term: 0x0102}
	if !errors.As(wc.Err(), &te) || !te.Sent || te.Layer != LayerRDMAP || te.EType != 1 || te.ECode != 2 ||
		!errors.Is(wc.Err(), ErrTerminated) {
		t.Fatalf("terminate sent: %+v", te)
	}
}

func TestAlloc(t *testing.T) {
	page := os.Getpagesize()
	for _, n := range []int{1, page - 1, page, page + 1, 3*page + 17, 1 << 20} {
		b, err := Alloc(n)
		if err != nil {
			t.Fatal(err)
		}
		mem := b.Bytes()
		if len(mem) != n || cap(mem)%page != 0 || cap(mem) < n || cap(mem)-n >= page {
			t.Errorf("Alloc(%d): len %d cap %d", n, len(mem), cap(mem))
		}
		if p := uintptr(unsafe.Pointer(&mem[0])); p%uintptr(page) != 0 {
			t.Errorf("Alloc(%d) at %#x: not page-aligned", n, p)
		}
		for i := range mem {
			if mem[i] != 0 {
				t.Fatalf("Alloc(%d): octet %d not zero", n, i)
			}
		}
		mem[0], mem[n-1] = 1, 2
		if err := b.Free(); err != nil {
			t.Fatal(err)
		}
		if err := b.Free(); err != nil {
			t.Fatalf("second Free: %v", err)
		}
		if b.Bytes() != nil {
			t.Fatal("Bytes after Free")
		}
	}
	for _, n := range []int{0, -1} {
		if _, err := Alloc(n); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("Alloc(%d): %v, want EINVAL", n, err)
		}
	}
}

func TestAccessString(t *testing.T) {
	for a, want := range map[Access]string{
		0:                        "local-read",
		LocalWrite | RemoteWrite: "local-write,remote-write",
		RemoteAtomic | 1<<7:      "remote-atomic,0x80",
	} {
		if got := a.String(); got != want {
			t.Errorf("%d: %q, want %q", uint32(a), got, want)
		}
	}
	if fmt.Sprint(OpCmpSwap, " ", WCRecvImm) != "cmp-swap recv-imm" {
		t.Errorf("opcode names: %v %v", OpCmpSwap, WCRecvImm)
	}
}
