// SPDX-License-Identifier: BSD-3-Clause

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/iwarp/iwarp/internal/pcap"
	"github.com/iwarp/iwarp/wire"
)

const decodeLong = `Decode iWARP traffic: a packet capture (pcap or pcapng, as dumpcap, tshark
and tcpdump write them; MPA over TCP and DDP over SCTP) or one direction of
a raw MPA byte stream. FILE "-"
reads standard input. A capture is recognised by its magic number; --raw
reads any FILE as a raw stream. docs/DECODE.md has the details.

Captures. Link types Ethernet, Linux cooked (SLL, SLL2) and raw IP; IPv4
and IPv6. Each TCP connection is put back in order (retransmitted and
overlapping octets dropped, out-of-order segments held, sequence numbers
wrapping); a hole the capture left is an error of that direction. The
initiator's stream must start with an MPA Request and the responder's with
an MPA Reply; other connections are skipped (listed in the summary, and on
stderr with --verbose, which also reports every packet ignored). Both
frames are printed (rev, M, C, R, Res, the RFC 6581 enhanced flag with IRD,
ORD and the P2P and RTR flags, private data) and checked against each other
("note" lines: IRD/ORD shortfall, RTR selection, reserved bits). They give
each direction's FPDU mode: markers toward a side whose frame has M, CRC
when either frame has C. Each direction is decoded from its first octet
after its frame: markers every 512 octets from there, CRC checked, and
with P2P the first FPDU checked to be the RTR the Reply selected.

Lines start with the connection (initiator->responder) and the direction,
i2r or r2i; frame=N is the capture packet that completed the FPDU
(Wireshark's frame number). A "fpdu_mode" line gives a direction's markers,
crc, stream offset, the TCP sequence number where FPDU mode starts, and
where the mode came from. A summary ends the output: per direction FPDUs,
opcodes, Terminates, CRC, marker and framing errors, holes and TCP
counters; skipped connections; totals.

SCTP (DDP over SCTP, RFC 5043). SCTP packets in the same captures (IPv4
protocol or IPv6 next header 132) are grouped into associations: by
verification tag, so packets of a multihomed association on other
addresses join it, else by addresses and ports; the initiator is the side
that sent the INIT. The INIT and INIT ACK are printed (tags, a_rwnd,
streams, initial TSN, parameters, adaptation indication); a missing
indication, or one other than 0x00000001, is a note: DDP is not expected
on that association. User messages are put back together from their DATA
chunks by TSN (retransmitted TSNs dropped, fragments out of order taken
within 32768 TSNs); each complete one is a line by PPID: 17 a session
control chunk (function, DDP-SSN, private data; an enhanced one, RFC 6581,
also its IRD, ORD and RTR flags p2p, send, write, read, the private data
then being the ULP's after them), 16 a DDP segment (DDP-SSN,
then the DDP and RDMAP headers as in an FPDU line), with the stream id
(sid), TSN range and U bit; other PPIDs are counted. There is no MPA,
marker or MPA CRC on SCTP. The SCTP checksum (CRC32c) is checked, and a
mismatch is counted (bad_checksums; --verbose names each packet), not an
error: captures on the sending host hold checksums left to offload.
Notes report chunks without U, DDP-SSNs repeated or missing (per stream,
from a session's first chunk) and I-DATA chunks (not decoded); a message
that never completed is an "incomplete" line. A malformed chunk is an
error (exit 1); the chunks before it and the rest of the capture are
decoded. Summaries per association and direction follow the TCP ones.

When the capture starts after a connection's negotiation, --crc and
--markers say how both its directions are framed (--offset is then the
FPDU-mode stream position of the first octet captured); without either
flag such connections are skipped. Where one frame is missing the flags
stand in for it; where both are captured the flags are ignored.

Exit status 1 when a CRC, marker or framing error, a hole in a stream, a
malformed SCTP chunk, an unsupported link type or a damaged capture file
was found, each reported in one line on stderr; decoding goes on with the
other directions. A capture that ends inside an FPDU is "incomplete", not
an error.

With -j each line is a JSON object: an FPDU has the keys below plus conn,
dir and frame; an MPA frame {conn, dir, frame, mpa}; a mode {conn, dir,
fpdu_mode}; a note {conn, dir, note}; a summary {conn, dir, summary}.
SCTP: an INIT or INIT ACK {conn, dir, frame, sctp_init}; a message {conn,
dir, frame, sctp: {sid, tsn, tsn_last, fragments, u, ppid, len, ddp_ssn}}
plus, for PPID 17, session {func, code, pd_length, pdata, error,
error_terminate; enhanced, ird, ord and rtr for RFC 6581 codes 5 to 7} or,
for PPID 16, the keys ddp, rdmap, error,
error_terminate and ulpdu below; an incomplete message {conn, dir, frame,
sctp_incomplete}; SCTP summaries have "transport": "sctp".

Raw stream. --offset is the stream position of the first octet counted from
the start of FPDU mode in this direction; it fixes where markers fall
(every 512 octets, with --markers). --crc checks the CRC32c of every FPDU;
without it the CRC field is not checked and is reported as "off".

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
	var opt pcapOptions
	var raw bool
	cmd := &cobra.Command{
		Use:   "decode [--markers] [--crc] [--offset N] [--payload] [--raw] [--verbose] FILE|-",
		Short: "Decode iWARP traffic in a capture (pcap, pcapng; TCP and SCTP) or a raw MPA stream",
		Long:  decodeLong,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return &exitError{code: 2, err: fmt.Errorf("decode: want one FILE or -, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			opt.flags = f.Changed("crc") || f.Changed("markers")
			return runDecode(cmd, g, opt, raw, args[0])
		},
	}
	f := cmd.Flags()
	f.BoolVar(&opt.Markers, "markers", false, "the stream carries MPA markers (capture: where the negotiation is not captured)")
	f.BoolVar(&opt.CRC, "crc", false, "check the CRC32c (capture: where the negotiation is not captured)")
	f.Uint64Var(&opt.Offset, "offset", 0, "stream position of the first octet, from the start of FPDU mode")
	f.BoolVar(&opt.Payload, "payload", false, "print each ULPDU in hex")
	f.BoolVar(&raw, "raw", false, "read FILE as a raw MPA stream even if it starts like a capture")
	f.BoolVar(&opt.verbose, "verbose", false, "capture: report ignored packets and skipped connections on stderr")
	return cmd
}

func runDecode(cmd *cobra.Command, g *globalFlags, opt pcapOptions, raw bool, name string) error {
	var in io.Reader = cmd.InOrStdin()
	if name != "-" {
		fh, err := os.Open(name)
		if err != nil {
			return &exitError{code: 1, err: err}
		}
		defer fh.Close()
		in = fh
	}
	br := bufio.NewReaderSize(in, 64<<10)
	out := cmd.OutOrStdout()
	if head, _ := br.Peek(4); !raw && pcap.Detect(head) != pcap.FormatUnknown {
		return runDecodePcap(br, out, cmd.ErrOrStderr(), g, opt, name)
	}
	enc := json.NewEncoder(out)
	if g.Pretty {
		enc.SetIndent("", "  ")
	}
	err := wire.DecodeStream(br, opt.StreamOptions, func(r wire.Record) error {
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
