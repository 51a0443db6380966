// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"time"
)

// result is what a run reports; with -j it is printed as one JSON object.
type result struct {
	Role       string  `json:"role"` // client or server
	Mode       string  `json:"mode"` // write_bw, read_lat...
	Size       int     `json:"size"`
	Iterations int     `json:"iterations"`
	QPs        int     `json:"qps"`
	Bytes      uint64  `json:"bytes"`
	Seconds    float64 `json:"seconds"`
	Gbps       float64 `json:"gbps"`
	MsgRate    float64 `json:"msg_rate"` // messages per second
	// Verified is the number of octets this side compared with the
	// pattern (--verify): Read sinks on the client, Send messages and
	// Write targets on the server, both sides of the latency tests.
	Verified uint64    `json:"verified"`
	Lat      *latStats `json:"lat_us,omitempty"`
}

// latStats are latencies in microseconds.
type latStats struct {
	Min float64 `json:"min"`
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Avg float64 `json:"avg"`
}

func newResult(cfg *config, role string) *result {
	return &result{
		Role:       role,
		Mode:       cfg.mode(),
		Size:       cfg.size,
		Iterations: cfg.iters,
		QPs:        cfg.qps,
		Bytes:      uint64(cfg.size) * uint64(cfg.iters) * uint64(cfg.qps),
	}
}

// setTime sets the duration and the rates derived from it.
func (r *result) setTime(d time.Duration) {
	r.Seconds = d.Seconds()
	if r.Seconds > 0 {
		r.Gbps = float64(r.Bytes) * 8 / r.Seconds / 1e9
		r.MsgRate = float64(r.Iterations) * float64(r.QPs) / r.Seconds
	}
}

// latency summarises samples: nearest-rank percentiles.
func latency(samples []time.Duration) *latStats {
	if len(samples) == 0 {
		return &latStats{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	rank := func(p float64) time.Duration {
		i := int(math.Ceil(p/100*float64(len(s)))) - 1
		return s[max(i, 0)]
	}
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return &latStats{Min: us(s[0]), P50: us(rank(50)), P99: us(rank(99)), Avg: us(sum) / float64(len(s))}
}

// print writes the result: one JSON object, or one line like perftest's.
func (r *result) print(w io.Writer, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(r)
	}
	who := ""
	if r.Role == "server" {
		who = "server "
	}
	line := fmt.Sprintf("%s%-9s #bytes %-8d #iterations %-7d #qps %-3d", who, r.Mode, r.Size, r.Iterations, r.QPs)
	if r.Lat != nil {
		line += fmt.Sprintf(" t_min %.2f us  t_p50 %.2f us  t_p99 %.2f us  t_avg %.2f us", r.Lat.Min, r.Lat.P50, r.Lat.P99, r.Lat.Avg)
	} else {
		line += fmt.Sprintf(" BW %.3f Gb/s  MsgRate %.4f Mpps", r.Gbps, r.MsgRate/1e6)
	}
	_, err := fmt.Fprintf(w, "%s  (%d bytes in %.4f s)\n", line, r.Bytes, r.Seconds)
	return err
}
