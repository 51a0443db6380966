// SPDX-License-Identifier: BSD-3-Clause

package main

import (
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
	if !strings.Contains(tab, "veth      write 64K   off  bw       1.500     0.290     2.000      5.17      0.75 Gb/s") {
		t.Errorf("table:\n%s", tab)
	}
	if !strings.Contains(tab, "veth      write 8     off  lat     30.500    33.050    24.400      0.92      1.25 us") {
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
	runs, _, err := parseRuns(out)
	if err != nil {
		t.Fatal(err)
	}
	rs, errs := rows(runs)
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
