// SPDX-License-Identifier: BSD-3-Clause

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/iwarp/iwarp/wire"
)

const decodeLong = `Decode one direction of a raw MPA byte stream in FPDU mode, for example
the TCP payload of one direction of a capture after the MPA Request or Reply
frame. FILE "-" reads standard input.

--offset is the stream position of the first octet counted from the start
of FPDU mode in this direction; it fixes where markers fall (every 512
octets, with --markers). --crc checks the CRC32c of every FPDU; without it
the CRC field is not checked and is reported as "off".

Output is one line per FPDU. A framing error (bad CRC with --crc, a marker
that does not point at its FPDU, or a stream ending inside an FPDU) prints
the FPDUs before it, then one line on stderr with the Terminate it implies,
and exits 1; with a bad CRC the offending FPDU is printed first with crc
"bad". A ULPDU that is not a valid DDP segment is reported in its line and
decoding goes on.

With -j each line is a JSON object with these keys (numbers are decimal):
  offset      stream position of the FPDU's first octet (a leading marker
              counts as part of the FPDU)
  wire_len    stream octets of the FPDU, markers included
  len         ULPDU_Length
  pad         pad octets
  markers     markers that belong to the FPDU
  crc         "ok", "bad" or "off"
  crc_field   CRC field as received
  ddp         DDP header: tagged, last, dv, rsvd, and stag, to (tagged) or
              qn, msn, mo (untagged); absent if the ULPDU is shorter than
              a DDP header
  rdmap       RDMAP: rv, rsvd, opcode, op (write, read_request,
              read_response, send, send_inv, send_se, send_se_inv,
              terminate, immediate, immediate_se, atomic_request,
              atomic_response, reserved_0xN), inv_stag (untagged),
              payload_len, no_header (too short for the opcode's header),
              and by opcode one of:
                read_request     sink_stag sink_to size src_stag src_to
                terminate        layer etype ecode m d r layout ("rfc" or
                                 "siw") control (hex) seg_len ddp_hdr
                                 rdma_hdr (hex) short
                atomic_request   aopcode aop req_id stag to add_swap
                                 add_swap_mask cmp cmp_mask
                atomic_response  req_id orig
                imm              immediate data value
  error       why the ULPDU is not a valid DDP segment, with
  error_terminate  {layer, etype, ecode} of the Terminate it implies
  ulpdu       the ULPDU in hex (with --payload)`

// newDecodeCmd returns `iwarpctl decode`.
func newDecodeCmd(g *globalFlags) *cobra.Command {
	var opt wire.StreamOptions
	cmd := &cobra.Command{
		Use:   "decode [--markers] [--crc] [--offset N] [--payload] FILE|-",
		Short: "Decode a captured MPA stream (one direction, FPDU mode)",
		Long:  decodeLong,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return &exitError{code: 2, err: fmt.Errorf("decode: want one FILE or -, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDecode(cmd, g, opt, args[0])
		},
	}
	f := cmd.Flags()
	f.BoolVar(&opt.Markers, "markers", false, "the stream carries MPA markers")
	f.BoolVar(&opt.CRC, "crc", false, "check the CRC32c (a bad CRC is a framing error)")
	f.Uint64Var(&opt.Offset, "offset", 0, "stream position of the first octet, from the start of FPDU mode")
	f.BoolVar(&opt.Payload, "payload", false, "print each ULPDU in hex")
	return cmd
}

func runDecode(cmd *cobra.Command, g *globalFlags, opt wire.StreamOptions, name string) error {
	var in io.Reader = cmd.InOrStdin()
	if name != "-" {
		fh, err := os.Open(name)
		if err != nil {
			return &exitError{code: 1, err: err}
		}
		defer fh.Close()
		in = fh
	}
	out := cmd.OutOrStdout()
	enc := json.NewEncoder(out)
	if g.Pretty {
		enc.SetIndent("", "  ")
	}
	err := wire.DecodeStream(in, opt, func(r wire.Record) error {
		if g.JSON {
			return enc.Encode(&r)
		}
		_, err := fmt.Fprintln(out, r.Text())
		return err
	})
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("decode %s: %w", name, err)}
	}
	return nil
}
