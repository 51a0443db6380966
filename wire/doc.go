// SPDX-License-Identifier: BSD-3-Clause

// Package wire encodes and decodes the iWARP wire formats spoken by the iwarp
// kernel module: MPA framing on TCP (RFC 5044, seed 001) with markers and
// CRC32c, MPA Request/Reply frames revision 1 and 2 (RFC 5044, RFC 6581), DDP
// segments (RFC 5041), RDMAP messages (RFC 5040), the RFC 7306 extensions
// (atomics and immediate data) and the DDP over SCTP chunks (RFC 5043, with
// RFC 6581's enhanced session control codes).
//
// The package has no state beyond what a caller creates. Builders accept any
// field value, including invalid ones, so that test peers can send malformed
// traffic; parsers are lenient where the checklist asks for it (Terminate
// control words, reserved bits) and strict where a violation implies a
// Terminate. Every protocol violation is reported as a *ProtocolError that
// matches one of the Err* sentinels with errors.Is and yields the Terminate
// code it implies with errors.As into a *TerminateError.
//
// Requirement IDs (MPA-n, DDP-n, RDMAP-n, RDMAP-EXT-n, SCTP-n) refer to the
// project's SPEC-NOTES checklist.
//
// The main entry points:
//
//   - CRC32c and AppendCRC for the MPA digest (MPA-11, MPA-13);
//   - Framer builds FPDUs with pad, CRC and markers (MPA-1..MPA-9);
//   - Receiver takes stream octets in any chunking and yields FPDUs, or the
//     framing error and its Terminate code (MPA-12, MPA-28, MPA-29);
//   - MPAFrame with AppendMPAFrame and ParseMPAFrame (MPA-32..MPA-52);
//   - RDMAConnData with AppendRDMAConnData and ParseRDMAConnData, the
//     IRD/ORD words of enhanced MPA frames and SCTP session chunks (RFC 6581
//     §9);
//   - Segment with AppendSegment, ParseSegment and ValidateSegment for DDP and
//     RDMAP headers (DDP-1..DDP-14, DDP-36, RDMAP-1..RDMAP-10, RDMAP-EXT-*);
//   - FetchAdd, Swap and CmpSwap for the atomic arithmetic (RDMAP-EXT-11..13);
//   - MULPDU (MPA-18, MPA-19);
//   - SessionControl and SegmentChunk with ParseSCTPChunk, the Append
//     functions, SCTPMULPDU and DDP-SSN arithmetic for DDP over SCTP
//     (SCTP-5..SCTP-10, SCTP-23, SCTP-30);
//   - DecodeStream turns one direction of a captured stream into Records.
package wire
