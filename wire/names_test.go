// SPDX-License-Identifier: BSD-3-Clause

package wire

import "testing"

// Every code the RFC tables define has a name, and only those do.
func TestTerminateCodeNames(t *testing.T) {
	for layer := 0; layer < 4; layer++ {
		for etype := 0; etype < 16; etype++ {
			for ecode := 0; ecode < 256; ecode++ {
				l, e, c := uint8(layer), uint8(etype), uint8(ecode)
				valid := ValidTerminateCode(l, e, c)
				named := ECodeName(l, e, c) != ""
				// The catastrophic types have only code 0, which has no
				// name; DDP etype 3 belongs to the LLP.
				unnamed := e == 0 && l != LayerLLP || l == LayerDDP && e == 3
				if named != (valid && !unnamed) {
					t.Errorf("%d/%d/0x%02x: valid %v, name %q", l, e, c, valid, ECodeName(l, e, c))
				}
				if valid && ETypeName(l, e) == "" {
					t.Errorf("%d/%d: valid without an etype name", l, e)
				}
			}
		}
	}
	for _, tc := range []struct {
		l, e, c uint8
		want    string
	}{
		{LayerDDP, 2, 0x01, "ddp/untagged-buffer/invalid-qn"},
		{LayerLLP, 0, MPACodeCRC, "llp/mpa/crc-error"},
		{LayerRDMAP, 0, 0, "rdmap/local-catastrophic/0x00"},
		{5, 3, 7, "layer5/etype3/0x07"},
	} {
		if got := TerminateName(tc.l, tc.e, tc.c); got != tc.want {
			t.Errorf("TerminateName(%d, %d, %d) = %q, want %q", tc.l, tc.e, tc.c, got, tc.want)
		}
	}
}
