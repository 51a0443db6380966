// SPDX-License-Identifier: BSD-3-Clause

package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

const sampleOutput = `@@topo veth
@@run topo=veth impl=tcp op=tcp size=65536 crc=off metric=bw
{
	"start": {},
	"end": {"sum_sent": {"bits_per_second": 2.2e9}, "sum_received": {"bits_per_second": 2.0e9}}
}
@@server
-----------------------------------------------------------
Server listening on 5201
@@end rc=0
@@run topo=veth impl=ours op=write size=65536 crc=off metric=bw
{"role":"client","mode":"write_bw","size":65536,"iterations":1536,"qps":1,"bytes":100663296,"seconds":0.8,"gbps":1.5,"msg_rate":1900}
@@server
{"role":"server","mode":"write_bw","gbps":1.49}
@@end rc=0
@@run topo=veth impl=siw op=write size=65536 crc=off metric=bw
---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
 Number of qps   : 1		Transport type : IW
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 65536      1536             0.31               0.29   		   0.000553
---------------------------------------------------------------------------------------
@@server
@@end rc=0
@@run topo=veth impl=siw op=send size=65536 crc=off metric=bw
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 65536      1536             0.00               0.00   		   0.000000
@@server
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 65536      1536             0.00               0.27   		   0.000515
@@end rc=0
@@run topo=veth impl=ours op=send size=65536 crc=off metric=bw
iwarp-perf: 10.9.0.2:18515: connection refused
@@server
@@end rc=1
@@run topo=veth impl=siw op=write size=8 crc=off metric=lat
 #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] 
 8       1000          25.10          300.2        33.05              35.11          8.22            60.01                  250.3
@@server
@@end rc=0
@@run topo=veth impl=ours op=write size=8 crc=off metric=lat
{"role":"client","mode":"write_lat","gbps":0.0001,"lat_us":{"min":20.1,"p50":30.5,"p99":80,"avg":31}}
@@server
@@end rc=0
@@run topo=veth impl=tcp op=tcp size=8 crc=off metric=lat
sockperf: == version #3.7-no.git ==
sockperf: [Total Run] RunTime=3.000 sec; Warm up time=400 msec; SentMessages=60000; ReceivedMessages=59999
sockperf: ====> avg-latency=24.829 (std-dev=6.311)
sockperf: Summary: Latency is 24.829 usec
sockperf: Total 59999 observations; each percentile contains 599.99 observations
sockperf: ---> <MAX> observation =  410.521
sockperf: ---> percentile 99.999 =  410.521
sockperf: ---> percentile 75.000 =   25.800
sockperf: ---> percentile 50.000 =   24.400
sockperf: ---> percentile 25.000 =   23.100
sockperf: ---> <MIN> observation =   20.004
@@server
@@end rc=0
@@note siw (CRC build) unavailable on veth
@@done
`

func TestRows(t *testing.T) {
	runs, notes, err := parseRuns(sampleOutput)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 8 || len(notes) != 1 || notes[0] != "siw (CRC build) unavailable on veth" {
		t.Fatalf("%d runs, notes %q", len(runs), notes)
	}
	rs, errs := rows(runs)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "exit status 1: iwarp-perf: 10.9.0.2:18515: connection refused") {
		t.Fatalf("errors %v", errs)
	}
	want := []string{
		"veth write 65536 off bw ours=1.5 siw=0.29 tcp=2",
		"veth send 65536 off bw ours=nil siw=0.27 tcp=2",
		"veth write 8 off lat ours=30.5 siw=33.05 tcp=24.4",
	}
	if len(rs) != len(want) {
		t.Fatalf("rows %+v", rs)
	}
	f := func(v *float64) string {
		if v == nil {
			return "nil"
		}
		return strings.TrimRight(strings.TrimRight(strings.Replace(figure(v), ".000", "", 1), "0"), ".")
	}
	for i, r := range rs {
		got := strings.Join([]string{r.Topo, r.Op, strconv.Itoa(r.Size), r.CRC, r.Metric,
			"ours=" + f(r.Ours), "siw=" + f(r.Siw), "tcp=" + f(r.TCP)}, " ")
		if got != want[i] {
			t.Errorf("row %d: %s, want %s", i, got, want[i])
		}
	}
	tab := table(rs)
	if strings.Contains(tab, "n/a") {
		t.Errorf("n/a without an atomic row:\n%s", tab)
	}
	if !strings.Contains(tab, "veth      write  64K   off  bw       1.500     0.290     2.000      5.17      0.75 Gb/s") {
		t.Errorf("table:\n%s", tab)
	}
	if !strings.Contains(tab, "veth      write  8     off  lat     30.500    33.050    24.400      0.92      1.25 us") {
		t.Errorf("table:\n%s", tab)
	}
}

func TestValueErrors(t *testing.T) {
	for _, r := range []benchRun{
		{impl: "tcp", client: `{"error": "unable to connect"}`},
		{impl: "tcp", client: "no json"},
		{impl: "tcp", metric: "lat", client: "sockperf: Summary: Latency is 24.829 usec"},
		{impl: "tcp", metric: "lat", client: "sockperf: ---> percentile 50.000 =   x"},
		{impl: "ours", metric: "lat", client: `{"gbps": 1}`},
		{impl: "siw", metric: "bw", client: "nothing"},
		{impl: "other"},
	} {
		if v, err := r.value(); err == nil {
			t.Errorf("%+v: value %v, want an error", r, v)
		}
	}
}

// Rounds of one row: each implementation's figure is the median of its
// successful rounds; a failed round is an error and counts for nothing.
func TestRowsRounds(t *testing.T) {
	lat := func(impl string, v string) string {
		out := `{"role":"client","lat_us":{"p50":` + v + `}}`
		if impl == "siw" {
			out = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n 8       1000          25.10          300.2        " + v + "              35.11          8.22            60.01                  250.3"
		}
		return "@@run topo=loopback impl=" + impl + " op=write size=8 crc=off metric=lat\n" + out + "\n@@server\n@@end rc=0\n"
	}
	out := lat("ours", "31") + lat("siw", "40") + lat("ours", "29") + lat("siw", "20") +
		"@@run topo=loopback impl=ours op=write size=8 crc=off metric=lat\nrefused\n@@server\n@@end rc=1\n" +
		lat("siw", "26") + lat("ours", "90")
	rs, errs := parseRows(t, out)
	if len(errs) != 1 || len(rs) != 1 {
		t.Fatalf("rows %+v, errors %v", rs, errs)
	}
	r := rs[0]
	if r.Ours == nil || *r.Ours != 31 || r.Siw == nil || *r.Siw != 26 || r.Rounds != 3 {
		t.Fatalf("ours %v siw %v rounds %d, want medians 31 and 26 of 3 rounds", figure(r.Ours), figure(r.Siw), r.Rounds)
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{5, 1}, 3},
		{[]float64{9, 1, 4}, 4},
		{[]float64{7, 1, 4, 2}, 3},
	} {
		if got := median(c.in); got == nil || *got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	if median(nil) != nil {
		t.Error("median of nothing is not nil")
	}
}

// ib_read_lat's client output (perftest 4.5 with -R on siw): the report is
// the latency table of ib_write_lat, its t_typical the whole Read. Its
// server prints the banner and no report.
const readLatClient = `---------------------------------------------------------------------------------------
                    RDMA_Read Latency Test
 Dual-port       : OFF		Device         : siw0
 Number of qps   : 1		Transport type : IW
 Connection type : RC		Using SRQ      : OFF
 PCIe relax order: OFF
 ibv_wr* API     : OFF
 TX depth        : 1
 Mtu             : 1024[B]
 Link type       : Ethernet
 GID index       : 0
 Outstand reads  : 16
 rdma_cm QPs	 : ON
 Data ex. method : rdma_cm
---------------------------------------------------------------------------------------
 local address: LID 0000 QPN 0x0001 PSN 0x3e7b1c
 GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:09:00:01
 remote address: LID 0000 QPN 0x0001 PSN 0x95a0d2
 GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:09:00:02
---------------------------------------------------------------------------------------
 #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] 
 8       1000          48.21          412.77       55.30   	       57.12     	12.40		98.51 		412.77
---------------------------------------------------------------------------------------
`

const readLatServer = `---------------------------------------------------------------------------------------
                    RDMA_Read Latency Test
 Number of qps   : 1		Transport type : IW
---------------------------------------------------------------------------------------
 local address: LID 0000 QPN 0x0001 PSN 0x95a0d2
---------------------------------------------------------------------------------------
`

func TestPerftestReadLat(t *testing.T) {
	r := benchRun{impl: "siw", op: "read", metric: "lat", size: 8, client: readLatClient, server: readLatServer}
	if v, err := r.value(); err != nil || v != 55.30 {
		t.Fatalf("ib_read_lat: %v, %v; want t_typical 55.30", v, err)
	}
	// The server's banner alone is no figure.
	r = benchRun{impl: "siw", op: "read", metric: "lat", client: readLatServer}
	if v, err := r.value(); err == nil {
		t.Fatalf("banner without a report: %v, want an error", v)
	}
}

// sockperf's output with the given median, for the TCP latency anchors.
func sockperfOut(median string) string {
	return "sockperf: == version #3.7-no.git ==\n" +
		"sockperf: ---> percentile 75.000 =   99.000\n" +
		"sockperf: ---> percentile 50.000 =   " + median + "\n" +
		"sockperf: ---> <MIN> observation =   1.000\n"
}

// Read and atomic latency rows: Read measured by both, atomic by ours only
// (siw has no RFC 7306 operation: its figure is null, shown as n/a), and
// the TCP anchor of both as a round trip, as their figures are.
func TestLatencyRows(t *testing.T) {
	block := func(header, client, server string) string {
		return "@@run " + header + "\n" + client + "@@server\n" + server + "@@end rc=0\n"
	}
	ours := func(p50 string) string {
		return `{"role":"client","mode":"x_lat","lat_us":{"min":1,"p50":` + p50 + `,"p99":200,"avg":70}}` + "\n"
	}
	readLat4K := strings.Replace(readLatClient, " 8       1000          48.21          412.77       55.30",
		" 4096    1000          90.00          500.10       120.50", 1)
	out := "@@topo veth\n" +
		block("topo=veth impl=tcp op=tcp size=8 crc=off metric=lat", sockperfOut("24.400"), "") +
		block("topo=veth impl=tcp op=tcp size=4096 crc=off metric=lat", sockperfOut("40.000"), "")
	for range 3 { // three rounds, alike
		for _, crc := range []string{"off", "on"} {
			out += block("topo=veth impl=ours op=write size=8 crc="+crc+" metric=lat", ours("26"), "") +
				block("topo=veth impl=siw op=write size=8 crc="+crc+" metric=lat", strings.Replace(readLatClient, "55.30", "27.00", 1), "") +
				block("topo=veth impl=ours op=read size=8 crc="+crc+" metric=lat", ours("50"), `{"role":"server"}`+"\n") +
				block("topo=veth impl=siw op=read size=8 crc="+crc+" metric=lat", readLatClient, readLatServer) +
				block("topo=veth impl=ours op=read size=4096 crc="+crc+" metric=lat", ours("100"), "") +
				block("topo=veth impl=siw op=read size=4096 crc="+crc+" metric=lat", readLat4K, readLatServer) +
				block("topo=veth impl=ours op=atomic size=8 crc="+crc+" metric=lat", ours("45"), "")
		}
	}
	// siw's CRC build missing: an implemented operation without its
	// figure is "-", not n/a.
	out += "@@note siw (CRC build) unavailable on loopback\n" +
		block("topo=loopback impl=tcp op=tcp size=8 crc=off metric=lat", sockperfOut("25.000"), "") +
		block("topo=loopback impl=ours op=read size=8 crc=on metric=lat", ours("52"), "") +
		block("topo=loopback impl=ours op=atomic size=8 crc=on metric=lat", ours("47"), "") +
		"@@done\n"
	rs, errs := parseRows(t, out)
	if len(errs) != 0 {
		t.Fatalf("errors %v", errs)
	}
	f := func(v *float64) string {
		if v == nil {
			return "nil"
		}
		return strconv.FormatFloat(*v, 'f', -1, 64)
	}
	want := []string{
		"veth write 8 off ours=26 siw=27 tcp=24.4 rounds=3",
		"veth write 8 on ours=26 siw=27 tcp=24.4 rounds=3",
		"veth read 8 off ours=50 siw=55.3 tcp=48.8 rounds=3",
		"veth read 4096 off ours=100 siw=120.5 tcp=80 rounds=3",
		"veth read 8 on ours=50 siw=55.3 tcp=48.8 rounds=3",
		"veth read 4096 on ours=100 siw=120.5 tcp=80 rounds=3",
		"veth atomic 8 off ours=45 siw=nil tcp=48.8 rounds=3",
		"veth atomic 8 on ours=45 siw=nil tcp=48.8 rounds=3",
		"loopback read 8 on ours=52 siw=nil tcp=50 rounds=1",
		"loopback atomic 8 on ours=47 siw=nil tcp=50 rounds=1",
	}
	var got []string
	for _, r := range rs {
		if r.Metric != "lat" || r.Unit != "us" {
			t.Errorf("row %+v: not a latency row in us", r)
		}
		got = append(got, strings.Join([]string{r.Topo, r.Op, strconv.Itoa(r.Size), r.CRC,
			"ours=" + f(r.Ours), "siw=" + f(r.Siw), "tcp=" + f(r.TCP), "rounds=" + strconv.Itoa(r.Rounds)}, " "))
	}
	sameRows(t, got, want)

	tab := table(rs)
	tableHas(t, tab,
		"veth      read   8     off  lat     50.000    55.300    48.800      0.90      1.02 us",
		"veth      read   4K    on   lat        100       120    80.000      0.83      1.25 us",
		"veth      atomic 8     off  lat     45.000       n/a    48.800       n/a      0.92 us",
		"loopback  read   8     on   lat     52.000         -    50.000         -      1.04 us",
		"loopback  atomic 8     on   lat     47.000       n/a    50.000       n/a      0.94 us",
		"n/a: siw implements no RFC 7306 operation (atomic: FetchAdd)",
	)

	// JSON: the same shape as every row, null where not measured.
	b, err := json.Marshal(rs[6])
	if err != nil {
		t.Fatal(err)
	}
	if w := `{"topo":"veth","op":"atomic","size":8,"crc":"off","metric":"lat","ours":45,"siw":null,"tcp":48.8,"unit":"us","rounds":3}`; string(b) != w {
		t.Errorf("JSON %s, want %s", b, w)
	}
}

// TestRateRow: iwarp-perf's msg_rate of an atomic run is a rate row in
// millions per second, ours alone, without a TCP figure; one without a
// rate is an error, not a zero.
func TestRateRow(t *testing.T) {
	block := func(header, client string) string {
		return "@@run " + header + "\n" + client + "@@server\n@@end rc=0\n"
	}
	rate := func(r string) string {
		return `{"role":"client","mode":"atomic_bw","gbps":0.01,"msg_rate":` + r + "}\n"
	}
	out := "@@topo veth\n" +
		block("topo=veth impl=tcp op=tcp size=8 crc=off metric=lat", sockperfOut("24.400")) +
		block("topo=veth impl=ours op=atomic size=8 crc=off metric=rate", rate("41000")) +
		block("topo=veth impl=ours op=atomic size=8 crc=off metric=rate", rate("39000")) +
		block("topo=veth impl=ours op=atomic size=8 crc=off metric=rate", rate("45000")) +
		block("topo=veth impl=ours op=atomic size=8 crc=on metric=rate", `{"role":"client","gbps":0.01}`+"\n") +
		"@@done\n"
	rs, errs := parseRows(t, out)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "no message rate") {
		t.Fatalf("errors %v, want the CRC-on run's missing rate", errs)
	}
	if len(rs) != 2 {
		t.Fatalf("rows %+v", rs)
	}
	r := rs[0]
	if r.Op != "atomic" || r.Metric != "rate" || r.Unit != "M/s" || r.Ours == nil || *r.Ours != 0.041 ||
		r.Siw != nil || r.TCP != nil || r.Rounds != 3 {
		t.Fatalf("rate row %+v", r)
	}
	if rs[1].Ours != nil {
		t.Fatalf("failed rate row %+v", rs[1])
	}
	if tb := table(rs); !strings.Contains(tb, "rate") || !strings.Contains(tb, "M/s") || !strings.Contains(tb, "n/a") {
		t.Fatalf("table:\n%s", tb)
	}
}

// TestSCTPRows: raw SCTP (iperf3 --sctp, sctpping) makes rows of its own
// with the raw TCP figure of the same size beside it, in a table under the
// main one; the other rows keep their shape (no sctp key).
func TestSCTPRows(t *testing.T) {
	block := func(header, client string, rc int) string {
		return "@@run " + header + "\n" + client + "@@server\n@@end rc=" + strconv.Itoa(rc) + "\n"
	}
	iperf := func(bps string) string {
		return `{"start": {}, "end": {"sum_received": {"bits_per_second": ` + bps + `}}}` + "\n"
	}
	ping := func(median string) string {
		return "sctpping: size=8 samples=4000 min_us=20.000 median_us=" + median + " avg_us=31.000 p99_us=80.000 max_us=400.000\n"
	}
	out := "@@topo veth\n" +
		block("topo=veth impl=tcp op=tcp size=4096 crc=off metric=bw", iperf("2.0e9"), 0) +
		block("topo=veth impl=tcp op=tcp size=8 crc=off metric=lat", sockperfOut("24.400"), 0) +
		block("topo=veth impl=tcp op=tcp size=4096 crc=off metric=lat", sockperfOut("40.000"), 0) +
		block("topo=veth impl=sctp op=sctp size=4096 crc=off metric=bw", iperf("0.5e9"), 0) +
		block("topo=veth impl=sctp op=sctp size=8 crc=off metric=lat", ping("30.500"), 0) +
		block("topo=veth impl=sctp op=sctp size=4096 crc=off metric=lat", "sctpping: connect: connection refused\n", 1) +
		block("topo=veth impl=ours op=write size=8 crc=off metric=lat", `{"role":"client","lat_us":{"p50":26}}`+"\n", 0) +
		"@@done\n"
	rs, errs := parseRows(t, out)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "veth sctp sctp 4096 crc off lat: exit status 1") {
		t.Fatalf("errors %v", errs)
	}
	var got []string
	for _, r := range rs {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(b))
	}
	want := []string{
		`{"topo":"veth","op":"sctp","size":4096,"crc":"off","metric":"bw","ours":null,"siw":null,"tcp":2,"sctp":0.5,"unit":"Gb/s","rounds":1}`,
		`{"topo":"veth","op":"write","size":8,"crc":"off","metric":"lat","ours":26,"siw":null,"tcp":24.4,"unit":"us","rounds":1}`,
		`{"topo":"veth","op":"sctp","size":8,"crc":"off","metric":"lat","ours":null,"siw":null,"tcp":24.4,"sctp":30.5,"unit":"us","rounds":1}`,
		`{"topo":"veth","op":"sctp","size":4096,"crc":"off","metric":"lat","ours":null,"siw":null,"tcp":40,"unit":"us","rounds":0}`,
	}
	sameRows(t, got, want)
	tab := table(rs)
	tableHas(t, tab,
		"veth      write  8     off  lat     26.000         -    24.400         -      1.07 us",
		"TOPO      TRANSPORT SIZE  KIND       TCP      SCTP  SCTP/TCP UNIT",
		"veth      raw       4K    bw       2.000     0.500      0.25 Gb/s",
		"veth      raw       8     lat     24.400    30.500      1.25 us",
		"veth      raw       4K    lat     40.000         -         - us",
	)
	if strings.Count(tab, "sctp") != 0 {
		t.Errorf("a transport row in the main table:\n%s", tab)
	}
}

func TestSctppingMedian(t *testing.T) {
	for _, c := range []struct {
		out  string
		want float64
		ok   bool
	}{
		{"x\nsctpping: size=8 samples=3 min_us=1.000 median_us=2.500 avg_us=2.000 p99_us=3.000 max_us=3.000\n", 2.5, true},
		{"sctpping: listening on 10.9.0.2:11112\n", 0, false},
		{"sctpping: size=8 samples=3 median_us=x\n", 0, false},
		{"sctpping: size=8 samples=3 median_us=0.000\n", 0, false},
		{"sctpping: size=8 samples=3 avg_us=1.000\n", 0, false},
	} {
		v, err := sctppingMedian(c.out)
		if (err == nil) != c.ok || v != c.want {
			t.Errorf("%q: %v, %v; want %v", c.out, v, err, c.want)
		}
	}
}

// TestOursSCTPRows: ours over SCTP joins ours over TCP's row (no CRC) and
// gets a table of its own beside raw SCTP at the same size.
func TestOursSCTPRows(t *testing.T) {
	block := func(header, client string) string {
		return "@@run " + header + "\n" + client + "@@server\n@@end rc=0\n"
	}
	bw := func(gbps string) string { return `{"role":"client","gbps":` + gbps + `}` + "\n" }
	out := "@@topo veth\n" +
		block("topo=veth impl=sctp op=sctp size=4096 crc=off metric=bw", `{"start": {}, "end": {"sum_received": {"bits_per_second": 0.5e9}}}`+"\n") +
		block("topo=veth impl=ours-sctp op=write size=4096 crc=off metric=bw", bw("0.2")) +
		block("topo=veth impl=ours-sctp op=write size=4096 crc=off metric=bw", bw("0.3")) +
		block("topo=veth impl=ours op=write size=4096 crc=off metric=bw", bw("1.0")) +
		block("topo=veth impl=ours op=write size=4096 crc=on metric=bw", bw("0.8")) +
		block("topo=veth impl=ours-sctp op=read size=8 crc=off metric=lat", `{"role":"client","lat_us":{"p50":150}}`+"\n") +
		"@@done\n"
	rs, got := rowsJSON(t, out)
	want := []string{
		`{"topo":"veth","op":"write","size":4096,"crc":"off","metric":"bw","ours":1,"siw":null,"tcp":null,"ours_sctp":0.25,"unit":"Gb/s","rounds":2}`,
		`{"topo":"veth","op":"write","size":4096,"crc":"on","metric":"bw","ours":0.8,"siw":null,"tcp":null,"unit":"Gb/s","rounds":1}`,
		`{"topo":"veth","op":"sctp","size":4096,"crc":"off","metric":"bw","ours":null,"siw":null,"tcp":null,"sctp":0.5,"unit":"Gb/s","rounds":1}`,
		`{"topo":"veth","op":"read","size":8,"crc":"off","metric":"lat","ours":null,"siw":null,"tcp":null,"ours_sctp":150,"unit":"us","rounds":1}`,
	}
	sameRows(t, got, want)
	tab := table(rs)
	tableHas(t, tab,
		"TOPO      OP     SIZE  KIND  OURS/TCP OURS/SCTP  RAW-SCTP  SCTP/TCP  OURS/RAW UNIT",
		"veth      write  4K    bw       1.000     0.250     0.500      0.25      0.50 Gb/s",
		"veth      read   8     lat          -       150         -         -         - us",
	)
}

// parseRows parses bench.sh's output out into rows and their errors.
func parseRows(t *testing.T, out string) ([]Row, []error) {
	t.Helper()
	runs, _, err := parseRuns(out)
	if err != nil {
		t.Fatal(err)
	}
	return rows(runs)
}

// rowsJSON parses bench.sh's output out into rows, which must have no
// error, and returns them with each one's JSON.
func rowsJSON(t *testing.T, out string) ([]Row, []string) {
	t.Helper()
	rs, errs := parseRows(t, out)
	if len(errs) != 0 {
		t.Fatalf("errors %v", errs)
	}
	var got []string
	for _, r := range rs {
		b, _ := json.Marshal(r)
		got = append(got, string(b))
	}
	return rs, got
}

// sameRows fails the test unless the rows, one text each, are want.
func sameRows(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// tableHas fails the test for each of lines missing from the table tab.
func tableHas(t *testing.T, tab string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(tab, l+"\n") {
			t.Errorf("no line %q in the table:\n%s", l, tab)
		}
	}
}

// The verbs rows: perftest on iwarp's RDMA devices, read as siw's
// (send_bw's receiver counting when the sender printed 0), beside siw and
// ours in a table of their own; rounds count them too.
func TestVerbsRows(t *testing.T) {
	block := func(header, client, server string) string {
		return "@@run " + header + "\n" + client + "@@server\n" + server + "@@end rc=0\n"
	}
	pt := func(gbps string) string {
		return " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n" +
			" 65536      512             0.50               " + gbps + "   		   0.000553\n"
	}
	lat := " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]\n" +
		" 8       1000          25.10          300.2        41.00              45.11\n"
	out := "@@topo veth\n" +
		block("topo=veth impl=ours op=write size=65536 crc=off metric=bw", `{"role":"client","gbps":1.2}`+"\n", "") +
		block("topo=veth impl=siw op=write size=65536 crc=off metric=bw", pt("0.40"), "") +
		block("topo=veth impl=verbs op=write size=65536 crc=off metric=bw", pt("0.90"), "") +
		block("topo=veth impl=verbs op=write size=65536 crc=off metric=bw", pt("1.10"), "") +
		block("topo=veth impl=verbs op=send size=65536 crc=on metric=bw", pt("0.00"), pt("0.70")) +
		block("topo=veth impl=verbs op=write size=8 crc=off metric=lat", lat, "") +
		"@@done\n"
	rs, got := rowsJSON(t, out)
	want := []string{
		`{"topo":"veth","op":"write","size":65536,"crc":"off","metric":"bw","ours":1.2,"siw":0.4,"tcp":null,"verbs":1,"unit":"Gb/s","rounds":2}`,
		`{"topo":"veth","op":"send","size":65536,"crc":"on","metric":"bw","ours":null,"siw":null,"tcp":null,"verbs":0.7,"unit":"Gb/s","rounds":1}`,
		`{"topo":"veth","op":"write","size":8,"crc":"off","metric":"lat","ours":null,"siw":null,"tcp":null,"verbs":41,"unit":"us","rounds":1}`,
	}
	sameRows(t, got, want)
	tableHas(t, table(rs),
		"TOPO      OP     SIZE  CRC  KIND     VERBS       SIW      OURS VERBS/SIW VERBS/OURS UNIT",
		"veth      write  64K   off  bw       1.000     0.400     1.200      2.50      0.83 Gb/s",
		"veth      send   64K   on   bw       0.700         -         -         -         - Gb/s",
		"veth      write  8     off  lat     41.000         -         -         -         - us",
	)
}

// fioReport is fio's JSON report of one job, cut to what bench reads and
// a few fields around it.
func fioReport(rdIOPS, rdBW, wrIOPS, wrBW float64) string {
	dir := func(iops, bw float64) string {
		return `{"io_bytes":209104896,"bw_bytes":` + strconv.FormatFloat(bw, 'f', -1, 64) +
			`,"bw":204000,"iops":` + strconv.FormatFloat(iops, 'f', 6, 64) + `,"runtime":1001}`
	}
	return "note: both iodepth >= 1 and synchronous I/O engine are selected\n" +
		`{"fio version":"fio-3.33","jobs":[{"jobname":"nvmf-randread","error":0,` +
		`"read":` + dir(rdIOPS, rdBW) + `,"write":` + dir(wrIOPS, wrBW) + `}]}` + "\n"
}

// The NVMe over Fabrics rows: fio's IOPS (thousands) or bandwidth of the
// direction the row names, iwarp, siw and NVMe/TCP in one row and a table
// of their own (not the main one); a failed job is an error.
func TestNVMfRows(t *testing.T) {
	block := func(header, client string) string {
		return "@@run " + header + "\n" + client + "@@end rc=0\n"
	}
	out := "@@info nvmf: nvme version 2.4 fio-3.33\n" +
		block("topo=nvmf impl=ours op=randread size=4096 crc=off metric=iops", fioReport(12000, 49152000, 0, 0)) +
		block("topo=nvmf impl=siw op=randread size=4096 crc=off metric=iops", fioReport(8000, 32768000, 0, 0)) +
		block("topo=nvmf impl=nvme-tcp op=randread size=4096 crc=off metric=iops", fioReport(16000, 65536000, 0, 0)) +
		block("topo=nvmf impl=ours op=randread size=4096 crc=off metric=iops", fioReport(14000, 57344000, 0, 0)) +
		block("topo=nvmf impl=ours op=write size=131072 crc=off metric=bw", fioReport(0, 0, 1000, 131072000)) +
		block("topo=nvmf impl=siw op=write size=131072 crc=off metric=bw", fioReport(0, 0, 500, 65536000)) +
		block("topo=nvmf impl=nvme-tcp op=write size=131072 crc=off metric=bw",
			`{"jobs":[{"error":5,"read":{"iops":0,"bw_bytes":0},"write":{"iops":1,"bw_bytes":1}}]}`+"\n") +
		"@@done\n"
	runs, _, err := parseRuns(out)
	if err != nil {
		t.Fatal(err)
	}
	rs, errs := rows(runs)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "fio reports error 5") {
		t.Errorf("errors %v, want the failed NVMe/TCP job's", errs)
	}
	var got []string
	for _, r := range rs {
		b, _ := json.Marshal(r)
		got = append(got, string(b))
	}
	want := []string{
		`{"topo":"nvmf","op":"write","size":131072,"crc":"off","metric":"bw","ours":1.048576,"siw":0.524288,"tcp":null,"unit":"Gb/s","rounds":1}`,
		`{"topo":"nvmf","op":"randread","size":4096,"crc":"off","metric":"iops","ours":13,"siw":8,"tcp":16,"unit":"kIOPS","rounds":2}`,
	}
	sameRows(t, got, want)
	tab := table(rs)
	tableHas(t, tab,
		"TOPO      FIO       SIZE  KIND     IWARP       SIW  NVME/TCP IWARP/SIW IWARP/TCP UNIT",
		"nvmf      write     128K  bw       1.049     0.524         -      2.00         - Gb/s",
		"nvmf      randread  4K    iops    13.000     8.000    16.000      1.62      0.81 kIOPS",
	)
	if !strings.HasPrefix(tab, "TOPO      FIO ") {
		t.Errorf("the NVMe over Fabrics table does not come first with no other row:\n%s", tab)
	}
	main, _ := rows(append(runs, benchRun{topo: "veth", impl: "ours", op: "write", size: 8, crc: "off", metric: "lat",
		client: `{"lat_us":{"p50":30.5}}`}))
	if head, _, _ := strings.Cut(table(main), "\n\n"); strings.Contains(head, "nvmf") {
		t.Errorf("nvmf rows in the main table:\n%s", head)
	}
}
