// SPDX-License-Identifier: BSD-3-Clause

package main

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/iwarp/iwarp/ctl"
)

func newCMCmd(a *app) *cobra.Command {
	return newResourceCmd(a, "cm", "Show the listeners and connections",
		`Show the listeners and connections of the connection manager.

  iwarpctl cm [show|list] [ID] [qp QP] [pid PID]`+resourceLong+` qp QP keeps the
connection of that QP.

Text output is a table like ss(8), one row per listener or connection:
  ID       the object's id
  KIND     listener, active (this side connected) or passive (accepted by a
           listener)
  STATE    listen, connecting, mpa-wait-request, mpa-wait-reply,
           mpa-wait-accept, mpa-wait-rtr, established, closing, closed
  LOCAL    local address:port
  PEER     the peer's address:port ("*" for listeners)
  QP       the connection's QP ("-" for listeners and requests not
           accepted yet)
  MPA      negotiated MPA parameters: v and the revision, then crc,
           markers-tx (this side inserts markers), markers-rx (the peer
           does), p2p:RTR (RFC 6581 peer-to-peer mode and its
           ready-to-receive message), enhanced ("-" before negotiation)
  IRD/ORD  negotiated inbound/outbound RDMA Read depths
  PID COMM CTX  the context's owner, as for mr, cq and qp
Unknown values from a newer module appear as numbers (kind3, state12).

JSON (-j) prints an array of objects with the keys pid, comm, ctx, id,
kind, state, qp (null if none), local_addr, local_port, peer_addr,
peer_port (null for listeners), flags (list of "crc", "markers-tx",
"markers-rx", "p2p", "enhanced", "rfc7306"), mpa_rev (null before negotiation), rtr
("write", "read", "send"; null without p2p), ird, ord, and the counters
of iwarpctl stats: tx_bytes, rx_bytes, tx_fpdus, rx_fpdus, crc_errors,
term_sent, term_rcvd, rx_ooo, rx_ooo_max, rx_ooo_placed, rx_kept.`, filterSpec{bareID: true, keys: []string{"qp", "pid"}},
		func(c client, f filter) error {
			cms, err := c.CMs()
			if err != nil {
				return err
			}
			cms, err = apply(f, cms, func(m ctl.CM) uint32 { return m.ID }, func(m ctl.CM) bool {
				return f.pidIs(m.PID) && (f.qp == nil || m.QP == *f.qp && m.Kind != ctl.CMListener)
			})
			if err != nil {
				return err
			}
			if a.g.JSON {
				return a.printJSON(cms)
			}
			if len(cms) == 0 {
				return nil
			}
			t := newTable(a.stdout)
			t.row("ID", "KIND", "STATE", "LOCAL", "PEER", "QP", "MPA", "IRD/ORD", "PID", "COMM", "CTX")
			for _, m := range cms {
				t.row(u32s(m.ID), m.Kind.String(), m.State.String(), addrPort(m.Local, "-"), addrPort(m.Peer, "*"),
					optID(m.QP), mpaString(m), rdString(m), u32s(m.PID), m.Comm, u32s(m.Ctx))
			}
			return t.flush()
		})
}

// addrPort prints ap, or none if it is invalid (absent).
func addrPort(ap netip.AddrPort, none string) string {
	if !ap.IsValid() {
		return none
	}
	return ap.String()
}

// optID prints an id where 0 means none.
func optID(id uint32) string {
	if id == 0 {
		return "-"
	}
	return u32s(id)
}

// mpaString is the MPA column of cm show: "v2,crc,markers-rx,p2p:read";
// over SCTP the transport and the session's place, "sctp:assoc5/stream2".
func mpaString(m ctl.CM) string {
	var parts []string
	if s := m.SCTP; s != nil {
		p := "sctp"
		if s.Assoc != 0 {
			p = fmt.Sprintf("sctp:assoc%d/stream%d", s.Assoc, s.Stream)
		}
		parts = append(parts, p)
	}
	if m.MPARev != 0 {
		parts = append(parts, "v"+strconv.Itoa(int(m.MPARev)))
	}
	for _, n := range m.Flags.Names() {
		if n == "sctp" {
			continue // the transport leads
		}
		if n == "p2p" {
			n += ":" + m.RTR.String()
		}
		parts = append(parts, n)
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ",")
}

// rdString is the IRD/ORD column of cm show.
func rdString(m ctl.CM) string {
	if m.MPARev == 0 && m.IRD == 0 && m.ORD == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d", m.IRD, m.ORD)
}

// termString prints a Terminate, "-" if there was none.
func termString(t *ctl.Terminate) string {
	if t == nil {
		return "-"
	}
	return t.String()
}

// cmString is the one-line text form of a CM used by monitor.
func cmString(m ctl.CM) string {
	s := fmt.Sprintf("%d kind %s state %s local %s peer %s qp %s mpa %s ird %d ord %d pid %d comm %s ctx %d",
		m.ID, m.Kind, m.State, addrPort(m.Local, "-"), addrPort(m.Peer, "*"), optID(m.QP), mpaString(m),
		m.IRD, m.ORD, m.PID, m.Comm, m.Ctx)
	if m.TermSent != nil {
		s += " term-sent " + m.TermSent.String()
	}
	if m.TermRcvd != nil {
		s += " term-rcvd " + m.TermRcvd.String()
	}
	return s
}

// qpStats is one row of iwarpctl stats: a QP's counters with its
// connection, if it has one. JSON keys are stable: id is the QP's id as in
// iwarpctl qp -j, qp the same id (the key of the first schema).
type qpStats struct {
	ctl.Owner
	ID        uint32      `json:"id"`
	QP        uint32      `json:"qp"`
	State     ctl.QPState `json:"state"`
	CM        *uint32     `json:"cm"`
	LocalAddr *netip.Addr `json:"local_addr"`
	LocalPort *uint16     `json:"local_port"`
	PeerAddr  *netip.Addr `json:"peer_addr"`
	PeerPort  *uint16     `json:"peer_port"`
	ctl.Stats
	// Transport is the connection's, "tcp" or "sctp"; "" without one.
	Transport string `json:"-"`
}

func splitAddrPort(ap netip.AddrPort) (*netip.Addr, *uint16) {
	if !ap.IsValid() {
		return nil, nil
	}
	a, p := ap.Addr(), ap.Port()
	return &a, &p
}

// collectStats joins the QP dump with the connections of the CM dump by
// QP id.
func collectStats(qps []ctl.QP, cms []ctl.CM) []qpStats {
	conn := map[uint32]ctl.CM{}
	for _, m := range cms {
		if m.QP != 0 && m.Kind != ctl.CMListener {
			conn[m.QP] = m
		}
	}
	out := make([]qpStats, 0, len(qps))
	for _, q := range qps {
		s := qpStats{Owner: q.Owner, ID: q.ID, QP: q.ID, State: q.State, Stats: q.Stats}
		if m, ok := conn[q.ID]; ok {
			id := m.ID
			s.CM = &id
			s.LocalAddr, s.LocalPort = splitAddrPort(m.Local)
			s.PeerAddr, s.PeerPort = splitAddrPort(m.Peer)
			s.Transport = "tcp"
			if m.SCTP != nil {
				s.Transport = "sctp"
			}
		}
		out = append(out, s)
	}
	return out
}

// linkStats is one link row of iwarpctl stats. JSON keys are stable:
// index and name as in iwarpctl link -j, link the name again (the key of
// the first schema).
type linkStats struct {
	Index     uint32          `json:"index"`
	Name      string          `json:"name"`
	Link      string          `json:"link"`
	Netdev    string          `json:"netdev"`
	TxBytes   uint64          `json:"tx_bytes"`
	RxBytes   uint64          `json:"rx_bytes"`
	TxFPDUs   uint64          `json:"tx_fpdus"`
	RxFPDUs   uint64          `json:"rx_fpdus"`
	CRCErrors uint64          `json:"crc_errors"`
	Terms     []ctl.TermCount `json:"terminates"`
	State     ctl.LinkState   `json:"-"`
}

// statsJSON is what iwarpctl -j stats prints.
type statsJSON struct {
	Links []linkStats `json:"links"`
	QPs   []qpStats   `json:"qps"`
}

// termCounts renders a link's Terminates as name:sent/rcvd, comma
// separated, "-" if none.
func termCounts(tcs []ctl.TermCount) string {
	if len(tcs) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(tcs))
	for _, tc := range tcs {
		name := "other"
		if tc.Term != nil {
			name = tc.Term.String()
		}
		parts = append(parts, fmt.Sprintf("%s:%d/%d", name, tc.Sent, tc.Rcvd))
	}
	return strings.Join(parts, ",")
}

// gatherStats reads the rows of iwarpctl stats that f keeps: the links
// (none when f selects QPs) and the QPs with their connections.
func gatherStats(c client, f filter) (statsJSON, error) {
	links, err := c.Links()
	if err != nil {
		return statsJSON{}, err
	}
	if f.selects() {
		links = nil // the filters select QPs
	}
	qps, err := c.QPs()
	if err != nil {
		return statsJSON{}, err
	}
	if qps, err = apply(f, qps, qpID, func(q ctl.QP) bool { return f.pidIs(q.PID) }); err != nil {
		return statsJSON{}, err
	}
	cms, err := c.CMs()
	if err != nil {
		return statsJSON{}, err
	}
	lrows := make([]linkStats, 0, len(links))
	for _, l := range links {
		st := l.Stats
		if st.Terms == nil {
			st.Terms = []ctl.TermCount{}
		}
		lrows = append(lrows, linkStats{Index: l.Index, Name: l.Name, Link: l.Name, Netdev: l.Netdev, TxBytes: st.TxBytes,
			RxBytes: st.RxBytes, TxFPDUs: st.TxFPDUs, RxFPDUs: st.RxFPDUs, CRCErrors: st.CRCErrors,
			Terms: st.Terms, State: l.State})
	}
	return statsJSON{Links: lrows, QPs: collectStats(qps, cms)}, nil
}

func newStatsCmd(a *app) *cobra.Command {
	var o statsOpts
	show := func(c client, f filter) error {
		if o.watch {
			return a.watchStats(o.ctx, c, f, o)
		}
		st, err := gatherStats(c, f)
		if err != nil {
			return err
		}
		switch {
		case o.format == formatPrometheus:
			return a.writePrometheus(st, o.textfile)
		case o.format == formatJSON:
			return a.printJSON(st)
		}
		lrows, rows := st.Links, st.QPs
		t := newTable(a.stdout)
		if len(lrows) > 0 {
			t.row("LINK", "NETDEV", "TX-BYTES", "RX-BYTES", "TX-FPDUS", "RX-FPDUS", "CRC-ERRORS",
				"TERMINATES(SENT/RCVD)")
			for _, r := range lrows {
				t.row(r.Link, r.Netdev, u64s(r.TxBytes), u64s(r.RxBytes), u64s(r.TxFPDUs),
					u64s(r.RxFPDUs), u64s(r.CRCErrors), termCounts(r.Terms))
			}
			if err := t.flush(); err != nil {
				return err
			}
		}
		if len(rows) == 0 {
			return nil
		}
		if len(lrows) > 0 {
			fmt.Fprintln(a.stdout)
		}
		t = newTable(a.stdout)
		t.row("QP", "STATE", "CM", "PEER", "TX-BYTES", "RX-BYTES", "TX-FPDUS", "RX-FPDUS", "CRC-ERRORS",
			"TERM-SENT", "TERM-RCVD", "PID", "COMM")
		for _, r := range rows {
			t.row(u32s(r.QP), r.State.String(), cmCol(r), peerCol(r), u64s(r.TxBytes), u64s(r.RxBytes),
				u64s(r.TxFPDUs), u64s(r.RxFPDUs), u64s(r.CRCErrors), termString(r.TermSent),
				termString(r.TermRcvd), u32s(r.PID), r.Comm)
		}
		return t.flush()
	}
	cmd := newResourceCmd(a, "stats", "Show the counters of the links and of the queue pairs",
		`Show the counters of every link and of every queue pair and its connection.

  iwarpctl stats [show|list] [qp QP] [pid PID] [-o text|json|prometheus]
                 [--textfile PATH] [--watch [-i INTERVAL] [-c N]]`+resourceLong+`

First one row per link: octets and FPDUs sent and received (octets with
their MPA framing), FPDUs received with a bad CRC, and the Terminates sent
and received by code, as name:sent/rcvd ("other" counts the codes beyond
the 16 the module keeps per link). A link's counters sum its connections,
closed and open; a connection counts toward the link its route left
through when it was set up.

Then one row per QP the caller may see (with CAP_NET_ADMIN all of the
namespace, otherwise those of contexts opened with the caller's effective
uid): its state, its connection (CM id and peer, "-" if it has none), the same counters for that connection, and the Terminate sent
and received, named after the tables of RFC 5040 §7.2 as layer/etype/ecode,
for example "ddp/untagged-buffer/invalid-qn" or "llp/mpa/crc-error" (codes
without a name are hex, "-" means none). A QP has at most one connection.

With qp QP or pid PID only QP rows are printed: qp QP names one QP, which
must exist (else "stats show: no such qp 5", exit 1).

JSON (-j) prints an object with two arrays. "links": objects with the keys
index and name (as in iwarpctl link -j), link (the name again), netdev,
tx_bytes, rx_bytes, tx_fpdus, rx_fpdus, crc_errors and terminates (an
array of objects with terminate - null for "other", else an object with
the numbers layer, etype, ecode and the text name - sent and rcvd). "qps": objects with the keys pid, comm, ctx, id (as in iwarpctl
qp -j), qp (the id again), state, cm (the connection's id, null
without a connection), local_addr, local_port, peer_addr, peer_port (null
without a connection), tx_bytes, rx_bytes, tx_fpdus, rx_fpdus, crc_errors,
term_sent and term_rcvd (null, or a Terminate object as above), rx_ooo,
rx_ooo_max and rx_ooo_placed: over SCTP, the DDP segments that arrived
ahead of the DDP-SSN frontier, the farthest ahead one came, and the RDMA
Writes, Read Responses and Sends among them placed as they came, and
rx_kept, the octets held for them now (each charged 64 more; 0 over
TCP).

-o prometheus prints the same counters in Prometheus' text exposition
format 0.0.4, every metric with its HELP and TYPE lines, even without
samples. Per link (labels link and netdev): iwarp_link_up (gauge, 1 if
up), iwarp_link_tx_bytes_total, iwarp_link_rx_bytes_total,
iwarp_link_tx_fpdus_total, iwarp_link_rx_fpdus_total,
iwarp_link_crc_errors_total, and iwarp_link_terminates_sent_total and
iwarp_link_terminates_rcvd_total with a label terminate (the code's name,
or "other"). Per QP (labels qp, pid, comm, and transport, "tcp" or
"sctp", once it has a connection): iwarp_qp_info (1, with the labels
ctx, state, cm, local_addr, local_port, peer_addr, peer_port, term_sent
and term_rcvd where they have a value), iwarp_qp_tx_bytes_total,
iwarp_qp_rx_bytes_total, iwarp_qp_tx_fpdus_total,
iwarp_qp_rx_fpdus_total, iwarp_qp_crc_errors_total,
iwarp_qp_rx_ooo_total, iwarp_qp_rx_ooo_placed_total, and the gauges
iwarp_qp_rx_ooo_max and iwarp_qp_rx_kept. --textfile PATH writes that
output to PATH instead, for node_exporter's textfile collector: to
PATH.tmp in the same directory, then renamed over PATH, so that a reader
sees the old file or the new one, never a part; on an error PATH is left
as it was.

--watch prints, every interval (-i, 1 second by default), what the
counters of the rows grew by since the previous screen ("+N") and the
octets per second sent and received, until interrupted (SIGINT or
SIGTERM: exit 0) or after -c N screens. The first screen comes after one
interval. On a terminal each screen clears the one before. A row that
appeared since the previous screen counts from 0.`,
		filterSpec{rows: "qp", keys: []string{"qp", "pid"}}, show)
	o.flags(a, cmd)
	return cmd
}

// cmCol is the CM column of a stats row: the connection's id, "-" if none.
func cmCol(r qpStats) string {
	if r.CM == nil {
		return "-"
	}
	return u32s(*r.CM)
}

// peerCol is the PEER column of a stats row: address:port, "-" if none.
func peerCol(r qpStats) string {
	if r.CM == nil || r.PeerAddr == nil {
		return "-"
	}
	return netip.AddrPortFrom(*r.PeerAddr, *r.PeerPort).String()
}

func u64s(v uint64) string { return strconv.FormatUint(v, 10) }
