// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package userlib_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/netip"
	"os"
	"syscall"
	"time"

	"github.com/iwarp/iwarp/userlib"
)

// Open a context, register memory and create the queues of one QP.
func ExampleOpen() {
	c, err := userlib.Open()
	if errors.Is(err, os.ErrNotExist) {
		log.Fatal("the iwarp module is not loaded")
	}
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close() // frees the PD, MR, CQ and QP below too

	pd, err := c.AllocPD()
	if err != nil {
		log.Fatal(err)
	}
	buf, err := userlib.Alloc(1 << 20)
	if err != nil {
		log.Fatal(err)
	}
	defer buf.Free()
	mr, err := pd.RegisterMR(buf.Bytes(), userlib.LocalWrite|userlib.RemoteWrite)
	if err != nil {
		log.Fatal(err) // e.g. "mr reg: IWARP_A_MR_LENGTH: ... (cannot allocate memory)"
	}
	cq, err := c.CreateCQ(256)
	if err != nil {
		log.Fatal(err)
	}
	qp, err := c.CreateQP(pd, cq, cq, userlib.QPConfig{SQEntries: 64, RQEntries: 64})
	if err != nil {
		log.Fatal(err)
	}
	// Receive buffers of 4 KiB each.
	for i := 0; i < qp.RQEntries(); i++ {
		if err := qp.PostRecv(uint64(i), mr.SGE(i*4096, 4096)); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Printf("QP %d, STag %#x\n", qp.ID(), mr.STag())
}

// Post an RDMA Write of a registered buffer and a small inline Send.
func ExampleQP_PostSend() {
	var (
		qp       *userlib.QP
		mr       *userlib.MR
		peerAddr uint64 // the peer's tagged offset
		peerSTag uint32 // the peer's STag, with RemoteWrite
	)
	err := qp.PostSend(userlib.SendWR{
		WRID:       1,
		Op:         userlib.OpWrite,
		SGEs:       []userlib.SGE{mr.SGE(0, 8192)},
		RemoteAddr: peerAddr,
		RKey:       peerSTag,
	})
	switch {
	case errors.Is(err, userlib.ErrQueueFull):
		// The SQ is full: poll the send CQ, then post again.
	case err != nil:
		log.Fatal(err)
	}
	err = qp.PostSend(userlib.SendWR{
		WRID:   2,
		Op:     userlib.OpSend,
		Flags:  userlib.Signaled,
		Inline: []byte("done"),
	})
	if err != nil {
		log.Fatal(err)
	}
}

// Drain a CQ, sleeping in the netpoller while it is empty.
func ExampleCQ_Wait() {
	var cq *userlib.CQ
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	wcs := make([]userlib.WC, 16)
	for {
		n := cq.Poll(wcs)
		for _, wc := range wcs[:n] {
			if err := wc.Err(); err != nil {
				var te *userlib.TerminateError
				if errors.As(err, &te) {
					log.Printf("WR %d: connection terminated by layer %d", wc.WRID, te.Layer)
				}
				log.Printf("WR %d failed: %v", wc.WRID, err)
				continue
			}
			fmt.Printf("WR %d: %v of %d octets\n", wc.WRID, wc.Op, wc.ByteLen)
		}
		if n > 0 {
			continue
		}
		if err := cq.Wait(ctx); err != nil {
			log.Fatal(err) // context.DeadlineExceeded after 5 s without completions
		}
	}
}

// Memory to register comes from Alloc, outside the Go heap.
func ExampleAlloc() {
	buf, err := userlib.Alloc(64 << 10)
	if err != nil {
		log.Fatal(err)
	}
	defer buf.Free()
	copy(buf.Bytes(), "payload")
}

// A server: listen, take one connection request, accept it on a QP whose
// receives are posted, and exchange messages once it is established.
func ExampleListener_Accept() {
	var (
		c  *userlib.Context
		qp *userlib.QP // created as in ExampleOpen, receives posted
	)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := c.Listen(netip.MustParseAddrPort("0.0.0.0:18515"), 0)
	if err != nil {
		log.Fatal(err) // e.g. "listen: ... (address already in use)"
	}
	defer l.Close()
	req, err := l.Accept(ctx)
	if err != nil {
		log.Fatal(err)
	}
	if string(req.PrivateData) != "hello" {
		req.Reject([]byte("unknown client"))
		return
	}
	if err := req.Accept(ctx, qp, &userlib.ConnParams{PrivateData: []byte("welcome")}); err != nil {
		log.Fatal(err)
	}
	fmt.Println("connected to", req.Peer)
	// ... PostSend, PostRecv, Poll ...
	if err := qp.Disconnect(false); err != nil {
		log.Fatal(err)
	}
}

// A client: connect a QP, asking for CRC, and tell the possible outcomes
// apart.
func ExampleQP_Dial() {
	var qp *userlib.QP // created as in ExampleOpen, receives posted
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	reply, err := qp.Dial(ctx, netip.MustParseAddrPort("192.0.2.1:18515"), &userlib.ConnParams{
		PrivateData: []byte("hello"),
		Timeout:     5 * time.Second,
		MPA:         &userlib.MPAParams{Rev: 2, CRC: true},
	})
	var rejected *userlib.RejectedError
	switch {
	case errors.As(err, &rejected):
		log.Fatalf("rejected: %q", rejected.PrivateData)
	case errors.Is(err, syscall.ECONNREFUSED):
		log.Fatal("nobody listens there")
	case errors.Is(err, userlib.ErrUnreachable):
		log.Fatal(err) // timeout, MPA failure...
	case err != nil:
		log.Fatal(err)
	}
	fmt.Printf("connected, the server said %q\n", reply)
	// Later, after work completed with errors:
	if err := qp.Err(); err != nil {
		var te *userlib.TerminateError
		if errors.As(err, &te) {
			log.Printf("terminated by layer %d", te.Layer)
		}
	}
}
