// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package userlib_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
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
