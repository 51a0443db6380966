// SPDX-License-Identifier: BSD-3-Clause

package wire_test

import (
	"errors"
	"fmt"

	"github.com/iwarp/iwarp/wire"
)

func Example() {
	// An 8-octet RDMA Write (SPEC-NOTES §4.3), framed with CRC.
	seg := wire.Segment{Tagged: true, Last: true, DV: 1, RV: 1, Opcode: wire.OpWrite,
		STag: 0x12345678, TO: 0x1000, Payload: []byte{1, 2, 3, 4, 5, 6, 7, 8}}
	fr := wire.Framer{CRC: true}
	stream := fr.Append(nil, wire.AppendSegment(nil, &seg))
	fmt.Printf("% x\n", stream)

	// Receive it in two pieces.
	rx := wire.NewReceiver(wire.ReceiverConfig{CRC: true})
	rx.Write(stream[:5])
	rx.Write(stream[5:])
	f, _ := rx.Next()
	s, _ := wire.ParseSegment(f.ULPDU)
	fmt.Println(f.CRC, s.Opcode, len(s.Payload), wire.ValidateSegment(f.ULPDU))

	// A corrupted CRC stops the receiver with the Terminate it implies.
	bad := fr.AppendFaults(nil, f.ULPDU, wire.Faults{CRCXor: 1})
	_, err := wire.NewReceiver(wire.ReceiverConfig{CRC: true}).Write(bad)
	var te *wire.TerminateError
	fmt.Println(errors.Is(err, wire.ErrCRC), errors.As(err, &te), te)
	// Output:
	// 00 16 c1 40 12 34 56 78 00 00 00 00 00 00 10 00 01 02 03 04 05 06 07 08 50 4c 11 3b
	// ok write 8 <nil>
	// true true terminate layer 2 (LLP) etype 0 ecode 0x02
}
