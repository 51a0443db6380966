// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"net/netip"
	"testing"

	"github.com/iwarp/iwarp/userlib"
)

// TestSCTPMatrix runs the operation matrix over a DDP session over SCTP
// (RFC 5043; SCTP-5..7, SCTP-13..15, SCTP-23, SCTP-24): every opcode at
// every size from 0 octets to 16 MiB, each octet verified, the octets
// after the message and the guard pages untouched, no Terminate either
// way, and segments counted on both ends.
func TestSCTPMatrix(t *testing.T) {
	sctpTrace(t)
	tp := newTopology(t)
	size := matrixSizes[len(matrixSizes)-1] + matrixTail
	a := newRdmaEnd(t, tp.A, size, rdmaAccess)
	b := newRdmaEnd(t, tp.B, size, rdmaAccess)
	connectPair(t, a, b, tp, netip.MustParseAddr(TopoB4), &userlib.ConnParams{SCTP: &userlib.SCTPParams{}})
	for _, ns := range []string{tp.A, tp.B} {
		if cm := connOf(t, ns); cm.SCTP == nil {
			t.Fatalf("%s: the session is not SCTP's: %+v", ns, cm)
		}
	}
	matrixAll(t, tp, a, b, matrixSizes)
	for _, ns := range []string{tp.A, tp.B} {
		cm := connOf(t, ns)
		if cm.TxFPDUs == 0 || cm.RxFPDUs == 0 {
			t.Fatalf("%s: no segments counted: %+v", ns, cm.Stats)
		}
	}
}
