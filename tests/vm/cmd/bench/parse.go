// SPDX-License-Identifier: BSD-3-Clause

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// benchRun is one measurement block of bench.sh's output.
type benchRun struct {
	topo, impl, op, crc, metric string
	size                        int
	client, server              string // the tools' output
	rc                          int
}

// parseRuns splits bench.sh's output into its blocks and notes.
func parseRuns(out string) (runs []benchRun, notes []string, err error) {
	var cur *benchRun
	inServer := false
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "@@run "):
			r := benchRun{}
			for _, kv := range strings.Fields(l[len("@@run "):]) {
				k, v, _ := strings.Cut(kv, "=")
				switch k {
				case "topo":
					r.topo = v
				case "impl":
					r.impl = v
				case "op":
					r.op = v
				case "crc":
					r.crc = v
				case "metric":
					r.metric = v
				case "size":
					if r.size, err = strconv.Atoi(v); err != nil {
						return nil, nil, fmt.Errorf("bad block header %q", l)
					}
				}
			}
			cur, inServer = &r, false
		case strings.HasPrefix(l, "@@server") && cur != nil:
			inServer = true
		case strings.HasPrefix(l, "@@end rc=") && cur != nil:
			cur.rc, _ = strconv.Atoi(strings.TrimPrefix(l, "@@end rc="))
			runs = append(runs, *cur)
			cur = nil
		case strings.HasPrefix(l, "@@note "):
			notes = append(notes, strings.TrimPrefix(l, "@@note "))
		case cur != nil && inServer:
			cur.server += l + "\n"
		case cur != nil:
			cur.client += l + "\n"
		}
	}
	return runs, notes, sc.Err()
}

// value extracts the figure of a run: Gb/s for bandwidth, millions of
// operations per second for a rate (ours only: iwarp-perf's msg_rate), µs
// (median, half round trip for write and send, whole round trip for read
// and atomic: wholeRoundTrip; half round trips for raw TCP and SCTP) for
// latency.
func (r *benchRun) value() (float64, error) {
	if r.rc != 0 {
		return 0, fmt.Errorf("exit status %d: %s", r.rc, lastLines(r.client+r.server, 3))
	}
	if r.topo == nvmfTopo {
		return fioValue(r.client, r.op, r.metric)
	}
	switch r.impl {
	case "tcp":
		if r.metric == "lat" {
			return sockperfMedian(r.client)
		}
		return iperf3Gbps(r.client)
	case "sctp":
		if r.metric == "lat" {
			return sctppingMedian(r.client)
		}
		return iperf3Gbps(r.client)
	case "ours", "ours-sctp":
		return oursValue(r.client, r.metric)
	case "siw", "verbs":
		v, err := perftestValue(r.client, r.metric)
		if err == nil && v == 0 && r.metric == "bw" {
			// perftest's send_bw sender may print 0: the receiver counts.
			return perftestValue(r.server, r.metric)
		}
		return v, err
	}
	return 0, fmt.Errorf("unknown implementation %q", r.impl)
}

func lastLines(s string, n int) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, " | ")
}

// jsonObject returns the first JSON object in s.
func jsonObject(s string, v any) error {
	i := strings.Index(s, "{")
	if i < 0 {
		return fmt.Errorf("no JSON object in %q", lastLines(s, 3))
	}
	return json.NewDecoder(strings.NewReader(s[i:])).Decode(v)
}

func iperf3Gbps(s string) (float64, error) {
	var o struct {
		End struct {
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
		Error string `json:"error"`
	}
	if err := jsonObject(s, &o); err != nil {
		return 0, err
	}
	if o.Error != "" {
		return 0, fmt.Errorf("iperf3: %s", o.Error)
	}
	if o.End.SumReceived.BitsPerSecond <= 0 {
		return 0, fmt.Errorf("iperf3 reports no throughput")
	}
	return o.End.SumReceived.BitsPerSecond / 1e9, nil
}

// sockperfMedian reads the median of sockperf's ping-pong latencies (µs,
// half round trips) from its percentile lines.
func sockperfMedian(s string) (float64, error) {
	for _, l := range strings.Split(s, "\n") {
		_, rest, ok := strings.Cut(l, "percentile 50.000 =")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
		if err != nil {
			return 0, fmt.Errorf("sockperf median %q: %w", l, err)
		}
		if v <= 0 {
			return 0, fmt.Errorf("sockperf reports a median of %v", v)
		}
		return v, nil
	}
	return 0, fmt.Errorf("no sockperf median in %q", lastLines(s, 3))
}

// sctppingMedian reads the median half round trip (µs) of sctpping's
// report line ("sctpping: size=8 samples=N ... median_us=24.400 ...").
func sctppingMedian(s string) (float64, error) {
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, "sctpping: size=") {
			continue
		}
		for _, kv := range strings.Fields(l) {
			v, ok := strings.CutPrefix(kv, "median_us=")
			if !ok {
				continue
			}
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, fmt.Errorf("sctpping median %q: %w", l, err)
			}
			if f <= 0 {
				return 0, fmt.Errorf("sctpping reports a median of %v", f)
			}
			return f, nil
		}
		return 0, fmt.Errorf("no median in sctpping's line %q", l)
	}
	return 0, fmt.Errorf("no sctpping report in %q", lastLines(s, 3))
}

func oursValue(s, metric string) (float64, error) {
	var o struct {
		Gbps    float64 `json:"gbps"`
		MsgRate float64 `json:"msg_rate"`
		Lat     *struct {
			P50 float64 `json:"p50"`
		} `json:"lat_us"`
	}
	if err := jsonObject(s, &o); err != nil {
		return 0, err
	}
	if metric == "lat" {
		if o.Lat == nil || o.Lat.P50 <= 0 {
			return 0, fmt.Errorf("iwarp-perf reports no latency")
		}
		return o.Lat.P50, nil
	}
	if metric == "rate" {
		if o.MsgRate <= 0 {
			return 0, fmt.Errorf("iwarp-perf reports no message rate")
		}
		return o.MsgRate / 1e6, nil
	}
	return o.Gbps, nil
}

// nvmfTopo is the NVMe over Fabrics topology (tests/vm/bench_nvmf.sh):
// fio on a namespace over iwarp (impl ours), siw, and NVMe/TCP (impl
// nvme-tcp, the row's TCP figure).
const nvmfTopo = "nvmf"

// fioValue reads fio's JSON report of one job: thousands of I/Os per
// second (metric iops) or Gb/s (bw) of its reads (op read, randread) or
// writes.
func fioValue(s, op, metric string) (float64, error) {
	type dir struct {
		IOPS    float64 `json:"iops"`
		BWBytes float64 `json:"bw_bytes"`
	}
	var o struct {
		Jobs []struct {
			Error int `json:"error"`
			Read  dir `json:"read"`
			Write dir `json:"write"`
		} `json:"jobs"`
	}
	if err := jsonObject(s, &o); err != nil {
		return 0, err
	}
	if len(o.Jobs) != 1 {
		return 0, fmt.Errorf("fio reports %d jobs, want 1", len(o.Jobs))
	}
	j := o.Jobs[0]
	if j.Error != 0 {
		return 0, fmt.Errorf("fio reports error %d", j.Error)
	}
	d := j.Write
	if op == "read" || op == "randread" {
		d = j.Read
	}
	v := d.BWBytes * 8 / 1e9
	if metric == "iops" {
		v = d.IOPS / 1e3
	}
	if v <= 0 {
		return 0, fmt.Errorf("fio reports no %s %s", op, metric)
	}
	return v, nil
}

// perftestValue reads perftest's report: BW average [Gb/sec] (benchRun with
// --report_gbits) or t_typical [usec], from the row under the header. The
// latency tools share one table (ib_read_lat's t_typical is the whole
// Read, ib_write_lat's and ib_send_lat's half a round trip).
func perftestValue(s, metric string) (float64, error) {
	col, key := 3, "BW average"
	if metric == "lat" {
		col, key = 4, "t_typical"
	}
	ls := strings.Split(s, "\n")
	for i, l := range ls {
		if !strings.Contains(l, "#bytes") || !strings.Contains(l, key) {
			continue
		}
		for _, row := range ls[i+1:] {
			f := strings.Fields(row)
			if len(f) <= col {
				continue
			}
			if _, err := strconv.Atoi(f[0]); err != nil {
				continue
			}
			return strconv.ParseFloat(f[col], 64)
		}
	}
	return 0, fmt.Errorf("no perftest report in %q", lastLines(s, 3))
}

// Row is one line of the table and of bench/results.json. Each figure is
// the median of the rounds that measured it (Rounds: the larger count of
// ours and of siw's that succeeded; the rounds alternate ours and siw, so
// both see the same stretch of the boot). A figure not measured is null:
// Siw always in atomic rows (siwImplements).
//
// A raw transport row (Op "sctp") holds raw SCTP (iperf3 --sctp,
// sctpping) in SCTP beside raw TCP at the same size and metric, Ours and
// Siw null, Rounds SCTP's runs. The sctp key is absent from the other rows
// and from a transport row whose every run failed.
//
// In the NVMe over Fabrics rows (Topo nvmf; Op randread, randwrite, read,
// write; Metric iops, in thousands per second, or bw) Ours is fio over
// iwarp's RDMA device, Siw fio over siw, TCP fio over NVMe/TCP.
type Row struct {
	Topo   string   `json:"topo"`
	Op     string   `json:"op"`
	Size   int      `json:"size"`
	CRC    string   `json:"crc"`
	Metric string   `json:"metric"`
	Ours   *float64 `json:"ours"`
	Siw    *float64 `json:"siw"`
	TCP    *float64 `json:"tcp"`
	SCTP   *float64 `json:"sctp,omitempty"`
	// OursSCTP is ours over SCTP (iwarp-perf --transport sctp) in the
	// rows without CRC; absent elsewhere.
	OursSCTP *float64 `json:"ours_sctp,omitempty"`
	// Verbs is iwarp through libibverbs: perftest, as Siw's, on
	// iwarp_rdma.ko's devices. Absent where not measured (atomic rows).
	Verbs  *float64 `json:"verbs,omitempty"`
	Unit   string   `json:"unit"`
	Rounds int      `json:"rounds"`
}

// transportRow tells the raw transport rows (raw SCTP beside raw TCP).
func (r *Row) transportRow() bool { return r.Op == "sctp" }

// wholeRoundTrip tells the latency rows whose figures are whole round
// trips (a Read, a FetchAdd: request and response, as ib_read_lat reports
// it) rather than half a ping-pong's (Write, Send; sockperf's median).
func wholeRoundTrip(op string) bool {
	return op == "read" || op == "atomic"
}

// siwImplements tells the operations siw has: none of RFC 7306's.
func siwImplements(op string) bool {
	return op != "atomic"
}

// median of vs (nil for none): the middle value, or the mean of the two
// middle ones.
func median(vs []float64) *float64 {
	if len(vs) == 0 {
		return nil
	}
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + m) / 2
	}
	return &m
}

// rows joins the runs into rows, a figure per implementation being the
// median of its rounds; failed runs become errors (a row whose every run
// of one implementation failed keeps a null figure).
func rows(runs []benchRun) ([]Row, []error) {
	type key struct {
		topo, op, crc, metric string
		size                  int
	}
	type entry struct {
		row                                       Row
		ours, siw, sctp, oursSCTP, verbs, nvmeTCP []float64
	}
	tcp := map[string][]float64{} // topo/metric/size -> Gb/s or µs
	byKey := map[key]*entry{}
	var order []key
	var errs []error
	for i := range runs {
		r := &runs[i]
		v, err := r.value()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s %s %d crc %s %s: %w", r.topo, r.impl, r.op, r.size, r.crc, r.metric, err))
		}
		if r.impl == "tcp" {
			if err == nil {
				k := fmt.Sprint(r.topo, "/", r.metric, "/", r.size)
				tcp[k] = append(tcp[k], v)
			}
			continue
		}
		// Raw SCTP: a row of its own, the TCP figure beside it.
		k := key{r.topo, r.op, r.crc, r.metric, r.size}
		e := byKey[k]
		if e == nil {
			unit := map[string]string{"bw": "Gb/s", "lat": "us", "rate": "M/s", "iops": "kIOPS"}[r.metric]
			e = &entry{row: Row{Topo: r.topo, Op: r.op, Size: r.size, CRC: r.crc, Metric: r.metric, Unit: unit}}
			byKey[k] = e
			order = append(order, k)
		}
		if err != nil {
			continue
		}
		switch r.impl {
		case "ours":
			e.ours = append(e.ours, v)
		case "siw":
			e.siw = append(e.siw, v)
		case "sctp":
			e.sctp = append(e.sctp, v)
		case "ours-sctp":
			e.oursSCTP = append(e.oursSCTP, v)
		case "verbs":
			e.verbs = append(e.verbs, v)
		case "nvme-tcp":
			e.nvmeTCP = append(e.nvmeTCP, v)
		}
	}
	out := make([]Row, 0, len(order))
	for _, k := range order {
		e := byKey[k]
		row := e.row
		row.Ours, row.Siw, row.OursSCTP, row.Verbs = median(e.ours), median(e.siw), median(e.oursSCTP), median(e.verbs)
		row.Rounds = max(len(e.ours), len(e.siw), len(e.sctp), len(e.oursSCTP), len(e.verbs), len(e.nvmeTCP))
		row.TCP = median(tcp[fmt.Sprint(row.Topo, "/", row.Metric, "/", row.Size)])
		if row.Topo == nvmfTopo {
			row.TCP = median(e.nvmeTCP)
		}
		if row.transportRow() {
			row.SCTP = median(e.sctp)
		}
		if row.TCP != nil && row.Metric == "lat" && wholeRoundTrip(row.Op) {
			// sockperf's round trip, as the row's other figures.
			rt := 2 * *row.TCP
			row.TCP = &rt
		}
		out = append(out, row)
	}
	metricRank := map[string]int{"bw": 0, "rate": 1, "lat": 2, "iops": 3}
	opRank := map[string]int{"write": 0, "read": 1, "send": 2, "atomic": 3, "sctp": 4, "randwrite": 5, "randread": 6}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		switch {
		case a.Topo != b.Topo:
			return a.Topo > b.Topo // veth first
		case a.Metric != b.Metric:
			return metricRank[a.Metric] < metricRank[b.Metric]
		case a.Op != b.Op:
			return opRank[a.Op] < opRank[b.Op]
		case a.CRC != b.CRC:
			return a.CRC < b.CRC // off first
		}
		return a.Size < b.Size
	})
	return out, errs
}

// ratio is a/b as text, "-" when either is missing.
func ratio(a, b *float64) string {
	if a == nil || b == nil || *b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", *a / *b)
}

func figure(v *float64) string {
	if v == nil {
		return "-"
	}
	if *v >= 100 {
		return fmt.Sprintf("%.0f", *v)
	}
	return fmt.Sprintf("%.3f", *v)
}

func sizeText(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dM", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dK", n>>10)
	}
	return strconv.Itoa(n)
}

// table formats the rows. For latency lower is better, so the ratios are
// still ours/other: below 1 means ours is faster. A figure missing is "-"
// (not measured, or every run failed), siw's in a row of an operation siw
// does not implement "n/a", and so its ratio, explained under the table.
// The rows measured through libibverbs follow: perftest on iwarp's RDMA
// devices beside perftest on siw (the same binaries) and iwarp-perf on
// iwarp (the userlib path). The raw transport rows follow in a table of
// their own: SCTP beside TCP and SCTP/TCP; then the NVMe over Fabrics
// rows: fio over iwarp, siw and NVMe/TCP.
func table(rs []Row) string {
	var b strings.Builder
	na := false
	var verbs, raw, overSCTP, nvmf []Row
	head := false
	for _, r := range rs {
		if r.transportRow() {
			raw = append(raw, r)
			continue
		}
		if r.Topo == nvmfTopo {
			nvmf = append(nvmf, r)
			continue
		}
		if r.OursSCTP != nil {
			overSCTP = append(overSCTP, r)
		}
		if r.Verbs != nil {
			verbs = append(verbs, r)
		}
		if !head {
			fmt.Fprintf(&b, "%-9s %-6s %-5s %-4s %-4s %9s %9s %9s %9s %9s %s\n",
				"TOPO", "OP", "SIZE", "CRC", "KIND", "OURS", "SIW", "TCP", "OURS/SIW", "OURS/TCP", "UNIT")
			head = true
		}
		siw, oursSiw := figure(r.Siw), ratio(r.Ours, r.Siw)
		if r.Siw == nil && !siwImplements(r.Op) {
			siw, oursSiw, na = "n/a", "n/a", true
		}
		fmt.Fprintf(&b, "%-9s %-6s %-5s %-4s %-4s %9s %9s %9s %9s %9s %s\n",
			r.Topo, r.Op, sizeText(r.Size), r.CRC, r.Metric, figure(r.Ours), siw, figure(r.TCP),
			oursSiw, ratio(r.Ours, r.TCP), r.Unit)
	}
	if na {
		b.WriteString("n/a: siw implements no RFC 7306 operation (atomic: FetchAdd)\n")
	}
	if len(verbs) > 0 {
		fmt.Fprintf(&b, "\n%-9s %-6s %-5s %-4s %-4s %9s %9s %9s %9s %9s %s\n",
			"TOPO", "OP", "SIZE", "CRC", "KIND", "VERBS", "SIW", "OURS", "VERBS/SIW", "VERBS/OURS", "UNIT")
		for _, r := range verbs {
			fmt.Fprintf(&b, "%-9s %-6s %-5s %-4s %-4s %9s %9s %9s %9s %9s %s\n",
				r.Topo, r.Op, sizeText(r.Size), r.CRC, r.Metric, figure(r.Verbs), figure(r.Siw), figure(r.Ours),
				ratio(r.Verbs, r.Siw), ratio(r.Verbs, r.Ours), r.Unit)
		}
		b.WriteString("VERBS: perftest through libibverbs on iwarp's RDMA devices; SIW: the same on siw; OURS: iwarp-perf\n")
	}
	if len(overSCTP) > 0 {
		// Raw SCTP at the same size and kind, where it was measured.
		rawSCTP := map[string]*float64{}
		for _, r := range raw {
			rawSCTP[fmt.Sprint(r.Topo, "/", r.Metric, "/", r.Size)] = r.SCTP
		}
		fmt.Fprintf(&b, "\n%-9s %-6s %-5s %-4s %9s %9s %9s %9s %9s %s\n",
			"TOPO", "OP", "SIZE", "KIND", "OURS/TCP", "OURS/SCTP", "RAW-SCTP", "SCTP/TCP", "OURS/RAW", "UNIT")
		for _, r := range overSCTP {
			rs := rawSCTP[fmt.Sprint(r.Topo, "/", r.Metric, "/", r.Size)]
			if r.Metric == "lat" && wholeRoundTrip(r.Op) {
				rs = nil // sctpping's half round trip is not a Read's
			}
			fmt.Fprintf(&b, "%-9s %-6s %-5s %-4s %9s %9s %9s %9s %9s %s\n",
				r.Topo, r.Op, sizeText(r.Size), r.Metric, figure(r.Ours), figure(r.OursSCTP), figure(rs),
				ratio(r.OursSCTP, r.Ours), ratio(r.OursSCTP, rs), r.Unit)
		}
	}
	if len(raw) > 0 {
		fmt.Fprintf(&b, "\n%-9s %-9s %-5s %-4s %9s %9s %9s %s\n",
			"TOPO", "TRANSPORT", "SIZE", "KIND", "TCP", "SCTP", "SCTP/TCP", "UNIT")
		for _, r := range raw {
			fmt.Fprintf(&b, "%-9s %-9s %-5s %-4s %9s %9s %9s %s\n",
				r.Topo, "raw", sizeText(r.Size), r.Metric, figure(r.TCP), figure(r.SCTP), ratio(r.SCTP, r.TCP), r.Unit)
		}
	}
	if len(nvmf) > 0 {
		fmt.Fprintf(&b, "\n%-9s %-9s %-5s %-4s %9s %9s %9s %9s %9s %s\n",
			"TOPO", "FIO", "SIZE", "KIND", "IWARP", "SIW", "NVME/TCP", "IWARP/SIW", "IWARP/TCP", "UNIT")
		for _, r := range nvmf {
			fmt.Fprintf(&b, "%-9s %-9s %-5s %-4s %9s %9s %9s %9s %9s %s\n",
				r.Topo, r.Op, sizeText(r.Size), r.Metric, figure(r.Ours), figure(r.Siw), figure(r.TCP),
				ratio(r.Ours, r.Siw), ratio(r.Ours, r.TCP), r.Unit)
		}
		b.WriteString("NVMe over Fabrics, fio on one namespace: IWARP over iwarp's RDMA device, SIW over siw, NVME/TCP over TCP\n")
	}
	return strings.TrimPrefix(b.String(), "\n")
}
