// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	var rtts []time.Duration
	for i := 1; i <= 100; i++ { // round trips of 2..200 µs: halves 1..100
		rtts = append(rtts, time.Duration(2*i)*time.Microsecond)
	}
	s, err := summarize(rtts)
	if err != nil {
		t.Fatal(err)
	}
	if s.n != 100 || s.min != 1 || s.max != 100 || s.median != 50.5 || s.avg != 50.5 || s.p99 != 99 {
		t.Fatalf("%+v", s)
	}
	want := "sctpping: size=8 samples=100 min_us=1.000 median_us=50.500 avg_us=50.500 p99_us=99.000 max_us=100.000"
	if got := s.line(8); got != want {
		t.Fatalf("%q\nwant %q", got, want)
	}
	s, _ = summarize([]time.Duration{30 * time.Microsecond, 10 * time.Microsecond, 50 * time.Microsecond})
	if s.median != 15 || s.p99 != 25 || s.min != 5 {
		t.Fatalf("odd count: %+v", s)
	}
	if _, err := summarize(nil); err == nil {
		t.Fatal("no samples: no error")
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-s", "-c", "10.0.0.1"},
		{"-c", "10.0.0.1", "-m", "0"},
		{"-c", "10.0.0.1", "-m", "65537"},
		{"-c", "10.0.0.1", "-t", "0s"},
		{"-c", "10.0.0.1", "-t", "0"},
		{"-c", "10.0.0.1", "-t", "2x"},
		{"-c", "10.0.0.1", "-w", "-1"},
		{"-s", "-p", "0"},
		{"-s", "extra"},
	} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 || !strings.Contains(errb.String(), "sctpping") && !strings.Contains(errb.String(), "flag") {
			t.Errorf("%q: exit %d, stderr %q", args, code, errb.String())
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"-c", "not-an-address"}, &out, &errb); code != 1 {
		t.Errorf("bad address: exit %d, %q", code, errb.String())
	}
}

func TestSeconds(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"2": 2 * time.Second, "0.5": 500 * time.Millisecond, "4s": 4 * time.Second, "150ms": 150 * time.Millisecond,
	} {
		c, err := parse([]string{"-c", "10.0.0.1", "-t", in, "-w", in}, &bytes.Buffer{})
		if err != nil || c.duration != want || c.warmup != want {
			t.Errorf("-t %s: %+v, %v; want %v", in, c, err, want)
		}
	}
}
