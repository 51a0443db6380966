// SPDX-License-Identifier: BSD-3-Clause

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/internal/promtext"
)

// Output formats of iwarpctl stats -o.
const (
	formatText       = "text"
	formatJSON       = "json"
	formatPrometheus = "prometheus"
)

// statsOpts are the options of iwarpctl stats beyond the filters.
type statsOpts struct {
	output   string // -o as given
	format   string // what is printed: text, json or prometheus
	textfile string // --textfile PATH
	watch    bool
	interval string // -i as given
	every    time.Duration
	count    int
	ctx      context.Context // the command's
}

// flags adds the options to stats and its show command and checks them
// before anything is opened, so that a mistake is a usage error.
func (o *statsOpts) flags(a *app, cmd *cobra.Command) {
	fl := cmd.PersistentFlags()
	fl.StringVarP(&o.output, "output", "o", formatText, "output `FORMAT`: text, json (as -j) or prometheus")
	fl.StringVar(&o.textfile, "textfile", "", "write the prometheus output to `PATH` (through PATH.tmp and a rename), not stdout")
	fl.BoolVarP(&o.watch, "watch", "w", false, "print the counters' deltas and rates every interval until interrupted")
	fl.StringVarP(&o.interval, "interval", "i", "1", "with --watch: the `INTERVAL` between screens, in seconds or as a duration (0.5, 2s, 500ms)")
	fl.IntVarP(&o.count, "count", "c", 0, "with --watch: stop after `N` screens (0: until interrupted)")
	cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{formatText, formatJSON, formatPrometheus}, cobra.ShellCompDirectiveNoFileComp
	})
	check := func(c *cobra.Command, _ []string) error {
		if err := o.check(a, c); err != nil {
			return err
		}
		o.ctx = c.Context()
		return nil
	}
	cmd.PreRunE = check
	for _, sub := range cmd.Commands() {
		sub.PreRunE = check
	}
}

// check validates the combination of options and fills format and every.
func (o *statsOpts) check(a *app, c *cobra.Command) error {
	switch o.output {
	case formatText, formatJSON, formatPrometheus:
	default:
		return usageErr("stats: -o %q: want text, json or prometheus", o.output)
	}
	o.format = o.output
	if a.g.JSON {
		if c.Flags().Changed("output") && o.output != formatJSON {
			return usageErr("stats: -j and -o %s exclude each other", o.output)
		}
		o.format = formatJSON
	}
	if o.textfile != "" {
		if c.Flags().Changed("output") && o.format != formatPrometheus || a.g.JSON {
			return usageErr("stats: --textfile writes the prometheus format only")
		}
		o.format = formatPrometheus
	}
	if !o.watch {
		for _, f := range []string{"interval", "count"} {
			if c.Flags().Changed(f) {
				return usageErr("stats: --%s needs --watch", f)
			}
		}
		return nil
	}
	if o.format != formatText {
		return usageErr("stats: --watch prints text only (not -j, -o %s or --textfile)", o.format)
	}
	d, err := parseInterval(o.interval)
	if err != nil {
		return usageErr("stats: -i %q: %v", o.interval, err)
	}
	if o.count < 0 {
		return usageErr("stats: --count %d: want 0 or more", o.count)
	}
	o.every = d
	return nil
}

// parseInterval reads seconds (1, 0.5) or a Go duration (2s, 500ms); it
// must be positive.
func parseInterval(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || math.IsNaN(f) || math.IsInf(f, 0) || f > float64(math.MaxInt64)/float64(time.Second) {
			return 0, errors.New("not a number of seconds or a duration")
		}
		d = time.Duration(f * float64(time.Second))
	}
	if d <= 0 {
		return 0, errors.New("must be more than 0")
	}
	return d, nil
}

// The metrics of iwarpctl stats -o prometheus. Their names, types and
// labels are stable: docs/CONTROL-PLANE.md lists them.
var (
	linkCounters = []struct {
		name, help string
		get        func(linkStats) uint64
	}{
		{"tx_bytes", "Octets sent in FPDU mode by the link's connections, framing included.", func(r linkStats) uint64 { return r.TxBytes }},
		{"rx_bytes", "Octets received in FPDU mode by the link's connections, framing included.", func(r linkStats) uint64 { return r.RxBytes }},
		{"tx_fpdus", "FPDUs sent by the link's connections.", func(r linkStats) uint64 { return r.TxFPDUs }},
		{"rx_fpdus", "FPDUs received by the link's connections.", func(r linkStats) uint64 { return r.RxFPDUs }},
		{"crc_errors", "FPDUs the link's connections received with a bad CRC.", func(r linkStats) uint64 { return r.CRCErrors }},
	}
	qpCounters = []struct {
		name, help string
		typ        promtext.Type
		get        func(qpStats) uint64
	}{
		{"tx_bytes", "Octets the QP's connection sent in FPDU mode, framing included.", promtext.Counter, func(r qpStats) uint64 { return r.TxBytes }},
		{"rx_bytes", "Octets the QP's connection received in FPDU mode, framing included.", promtext.Counter, func(r qpStats) uint64 { return r.RxBytes }},
		{"tx_fpdus", "FPDUs the QP's connection sent.", promtext.Counter, func(r qpStats) uint64 { return r.TxFPDUs }},
		{"rx_fpdus", "FPDUs the QP's connection received.", promtext.Counter, func(r qpStats) uint64 { return r.RxFPDUs }},
		{"crc_errors", "FPDUs the QP's connection received with a bad CRC.", promtext.Counter, func(r qpStats) uint64 { return r.CRCErrors }},
		{"rx_ooo", "Over SCTP: DDP segments that arrived ahead of the DDP-SSN frontier (0 over TCP).", promtext.Counter, func(r qpStats) uint64 { return r.RxOOO }},
		{"rx_ooo_placed", "Over SCTP: RDMA Writes, Read Responses and Sends placed as they arrived ahead of the frontier (0 over TCP).", promtext.Counter, func(r qpStats) uint64 { return r.RxOOOPlaced }},
		{"rx_ooo_max", "Over SCTP: the farthest ahead of the frontier a segment arrived, in DDP-SSNs (0 over TCP).", promtext.Gauge, func(r qpStats) uint64 { return uint64(r.RxOOOMax) }},
		{"rx_kept", "Over SCTP: octets held now for segments ahead of the frontier, each charged 64 more (0 over TCP).", promtext.Gauge, func(r qpStats) uint64 { return uint64(r.RxKept) }},
	}
)

// metricName is iwarp_OBJECT_KEY, with _total for counters.
func metricName(object, key string, typ promtext.Type) string {
	n := "iwarp_" + object + "_" + key
	if typ == promtext.Counter {
		n += "_total"
	}
	return n
}

// promFamilies turns the rows of iwarpctl stats into metric families,
// every family present even without samples, so the set of names does
// not depend on what exists.
func promFamilies(st statsJSON) []promtext.Family {
	linkLabels := func(r linkStats) []promtext.Label {
		return []promtext.Label{{Name: "link", Value: r.Name}, {Name: "netdev", Value: r.Netdev}}
	}
	up := promtext.Family{Name: "iwarp_link_up", Type: promtext.Gauge,
		Help: "1 if the link is up (its netdev running with carrier), else 0."}
	for _, r := range st.Links {
		var v uint64
		if r.State == ctl.LinkUp {
			v = 1
		}
		up.Samples = append(up.Samples, promtext.Sample{Labels: linkLabels(r), Value: v})
	}
	fams := []promtext.Family{up}
	for _, c := range linkCounters {
		f := promtext.Family{Name: metricName("link", c.name, promtext.Counter), Type: promtext.Counter, Help: c.help}
		for _, r := range st.Links {
			f.Samples = append(f.Samples, promtext.Sample{Labels: linkLabels(r), Value: c.get(r)})
		}
		fams = append(fams, f)
	}
	for _, dir := range []string{"sent", "rcvd"} {
		what := map[string]string{"sent": "sent", "rcvd": "received"}[dir]
		f := promtext.Family{Name: metricName("link", "terminates_"+dir, promtext.Counter), Type: promtext.Counter,
			Help: "Terminates the link's connections " + what + ", by code (layer/etype/ecode; other: codes past the 16 kept)."}
		for _, r := range st.Links {
			for _, tc := range r.Terms {
				name := "other"
				if tc.Term != nil {
					name = tc.Term.String()
				}
				v := tc.Sent
				if dir == "rcvd" {
					v = tc.Rcvd
				}
				f.Samples = append(f.Samples, promtext.Sample{
					Labels: append(linkLabels(r), promtext.Label{Name: "terminate", Value: name}), Value: uint64(v)})
			}
		}
		fams = append(fams, f)
	}
	qpLabels := func(r qpStats) []promtext.Label {
		ls := []promtext.Label{{Name: "qp", Value: u32s(r.ID)}, {Name: "pid", Value: u32s(r.PID)}, {Name: "comm", Value: r.Comm}}
		if r.Transport != "" {
			ls = append(ls, promtext.Label{Name: "transport", Value: r.Transport})
		}
		return ls
	}
	info := promtext.Family{Name: "iwarp_qp_info", Type: promtext.Gauge,
		Help: "1 for each QP, its state, context, connection and Terminates in the labels."}
	for _, r := range st.QPs {
		ls := []promtext.Label{{Name: "qp", Value: u32s(r.ID)}, {Name: "pid", Value: u32s(r.PID)},
			{Name: "comm", Value: r.Comm}, {Name: "ctx", Value: u32s(r.Ctx)}, {Name: "state", Value: r.State.String()}}
		if r.Transport != "" {
			ls = append(ls, promtext.Label{Name: "transport", Value: r.Transport})
		}
		if r.CM != nil {
			ls = append(ls, promtext.Label{Name: "cm", Value: u32s(*r.CM)})
		}
		if r.LocalAddr != nil {
			ls = append(ls, promtext.Label{Name: "local_addr", Value: r.LocalAddr.String()},
				promtext.Label{Name: "local_port", Value: strconv.Itoa(int(*r.LocalPort))})
		}
		if r.PeerAddr != nil {
			ls = append(ls, promtext.Label{Name: "peer_addr", Value: r.PeerAddr.String()},
				promtext.Label{Name: "peer_port", Value: strconv.Itoa(int(*r.PeerPort))})
		}
		if r.TermSent != nil {
			ls = append(ls, promtext.Label{Name: "term_sent", Value: r.TermSent.String()})
		}
		if r.TermRcvd != nil {
			ls = append(ls, promtext.Label{Name: "term_rcvd", Value: r.TermRcvd.String()})
		}
		info.Samples = append(info.Samples, promtext.Sample{Labels: ls, Value: 1})
	}
	fams = append(fams, info)
	for _, c := range qpCounters {
		f := promtext.Family{Name: metricName("qp", c.name, c.typ), Type: c.typ, Help: c.help}
		for _, r := range st.QPs {
			f.Samples = append(f.Samples, promtext.Sample{Labels: qpLabels(r), Value: c.get(r)})
		}
		fams = append(fams, f)
	}
	return fams
}

// writePrometheus prints the rows in the text exposition format, or with
// a path writes them there atomically.
func (a *app) writePrometheus(st statsJSON, path string) error {
	var b bytes.Buffer
	if err := promtext.Write(&b, promFamilies(st)); err != nil {
		return err
	}
	if path == "" {
		_, err := a.stdout.Write(b.Bytes())
		return err
	}
	return writeFileAtomic(path, b.Bytes())
}

// writeFileAtomic replaces path with data: it writes PATH.tmp in the same
// directory, syncs it and renames it over path, so that a reader (the
// textfile collector of node_exporter) sees the old file or the new one,
// never a part. The file is 0644; on failure path is left as it was and
// PATH.tmp removed.
func writeFileAtomic(path string, data []byte) (err error) {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	// The rename itself survives a crash once the directory is synced.
	if d, derr := os.Open(filepath.Dir(path)); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// watchStats reads the counters, then every o.every prints what changed
// since the previous read, o.count times (0: until ctx ends or SIGINT or
// SIGTERM comes, which is not an error).
func (a *app) watchStats(ctx context.Context, c client, f filter, o statsOpts) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	prev, err := gatherStats(c, f)
	if err != nil {
		return err
	}
	t0 := a.clock()
	for tick := 1; o.count == 0 || tick <= o.count; tick++ {
		if err := a.wait(ctx, o.every); err != nil {
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		}
		cur, err := gatherStats(c, f)
		if err != nil {
			return err
		}
		t1 := a.clock()
		var b bytes.Buffer
		if isTerminal(a.stdout) {
			b.WriteString("\x1b[H\x1b[2J") // home, clear the screen
		}
		if err := watchScreen(&b, prev, cur, t1.Sub(t0), t1, tick, o); err != nil {
			return err
		}
		if _, err := a.stdout.Write(b.Bytes()); err != nil {
			return err
		}
		prev, t0 = cur, t1
	}
	return nil
}

// clock is the time now (a.now in tests).
func (a *app) clock() time.Time {
	if a.now != nil {
		return a.now()
	}
	return time.Now()
}

// wait returns after d, or ctx's error if it ends first (a.sleep in tests).
func (a *app) wait(ctx context.Context, d time.Duration) error {
	if a.sleep != nil {
		return a.sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// delta is what a counter grew by; a counter that went back (the module
// was reloaded) counts from 0.
func delta(prev, cur uint64) uint64 {
	if cur < prev {
		return cur
	}
	return cur - prev
}

// rate is n per second over d, rounded.
func rate(n uint64, d time.Duration) uint64 {
	if d <= 0 {
		return 0
	}
	return uint64(math.Round(float64(n) / d.Seconds()))
}

func plus(n uint64) string { return "+" + u64s(n) }

// watchScreen prints one screen of iwarpctl stats --watch: the deltas of
// the counters over the last interval d and the octet rates, per link and
// per QP. Rows new since the last screen count from 0.
func watchScreen(w io.Writer, prev, cur statsJSON, d time.Duration, now time.Time, tick int, o statsOpts) error {
	n := strconv.Itoa(tick)
	if o.count > 0 {
		n += "/" + strconv.Itoa(o.count)
	}
	fmt.Fprintf(w, "Every %v: iwarpctl stats   tick %s   %s   (changes over %.3fs; rates per second)\n\n",
		o.every, n, now.Format("2006-01-02 15:04:05"), d.Seconds())
	plinks := map[string]linkStats{}
	for _, r := range prev.Links {
		plinks[r.Name] = r
	}
	if len(cur.Links) > 0 {
		t := newTable(w)
		t.row("LINK", "NETDEV", "TX-BYTES", "RX-BYTES", "TX-FPDUS", "RX-FPDUS", "CRC-ERRORS",
			"TERM-SENT", "TERM-RCVD", "TX-BYTES/S", "RX-BYTES/S")
		for _, r := range cur.Links {
			p := plinks[r.Name]
			if p.Index != r.Index {
				p = linkStats{} // another link of that name
			}
			ps, pr := termSums(p.Terms)
			cs, cr := termSums(r.Terms)
			tx, rx := delta(p.TxBytes, r.TxBytes), delta(p.RxBytes, r.RxBytes)
			t.row(r.Name, r.Netdev, plus(tx), plus(rx), plus(delta(p.TxFPDUs, r.TxFPDUs)),
				plus(delta(p.RxFPDUs, r.RxFPDUs)), plus(delta(p.CRCErrors, r.CRCErrors)),
				plus(delta(ps, cs)), plus(delta(pr, cr)), u64s(rate(tx, d)), u64s(rate(rx, d)))
		}
		if err := t.flush(); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	pqps := map[uint32]qpStats{}
	for _, r := range prev.QPs {
		pqps[r.ID] = r
	}
	t := newTable(w)
	t.row("QP", "STATE", "PEER", "TX-BYTES", "RX-BYTES", "TX-FPDUS", "RX-FPDUS", "CRC-ERRORS",
		"TX-BYTES/S", "RX-BYTES/S", "TERM-SENT", "TERM-RCVD", "PID", "COMM")
	for _, r := range cur.QPs {
		p := pqps[r.ID]
		tx, rx := delta(p.TxBytes, r.TxBytes), delta(p.RxBytes, r.RxBytes)
		t.row(u32s(r.ID), r.State.String(), peerCol(r), plus(tx), plus(rx), plus(delta(p.TxFPDUs, r.TxFPDUs)),
			plus(delta(p.RxFPDUs, r.RxFPDUs)), plus(delta(p.CRCErrors, r.CRCErrors)),
			u64s(rate(tx, d)), u64s(rate(rx, d)), termString(r.TermSent), termString(r.TermRcvd),
			u32s(r.PID), r.Comm)
	}
	return t.flush()
}

// termSums adds up a link's Terminates sent and received over all codes.
func termSums(tcs []ctl.TermCount) (sent, rcvd uint64) {
	for _, tc := range tcs {
		sent += uint64(tc.Sent)
		rcvd += uint64(tc.Rcvd)
	}
	return sent, rcvd
}
