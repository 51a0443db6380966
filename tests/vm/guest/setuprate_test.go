// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/iwarp/iwarp/userlib"
)

// Connection setup rate, iwarp beside siw, in one guest: N connections
// between netns A (client) and netns B (server) over the veth, with
// setupInFlight being set up at once. Each connection takes, on each side,
// a CQ of loadCQ entries and a QP (loadSQ, loadRQ) of its own, created as
// it is set up (the server's when the request arrives); one PD per side.
// The time runs from the client's first connection to its last one
// established. siw's side is tests/vm/connrate (librdmacm; address and
// route resolution are part of its setup), iwarp's is userlib here.
const (
	setupConns    = 300
	setupInFlight = 32
	setupRounds   = 3
)

func connrateBin(t *testing.T) string {
	t.Helper()
	p := filepath.Join(os.Getenv("IWARP_REPO"), "build", "connrate")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("connrate: %v (run make all)", err)
	}
	return p
}

var connrateLine = regexp.MustCompile(`connrate: (\d+) connections in ([0-9.]+) s`)

// siwSetupRate runs connrate on a siw pair and returns its figure.
func siwSetupRate(t *testing.T, n int) float64 {
	t.Helper()
	st := newSiwPair(t, "default")
	bin := connrateBin(t)
	port := peerPort()
	args := []string{"-a", TopoB4, "-p", strconv.Itoa(port), "-n", strconv.Itoa(n)}
	srv := startIn(t, st.B, 3*time.Minute, bin, append([]string{"-s"}, args...)...)
	waitListen(t, st.B, port, 30*time.Second, srv)
	warmNeighbour(t, st.Topology)
	out, err := runIn(t, st.A, 3*time.Minute, bin, append([]string{"-c", "-k", strconv.Itoa(setupInFlight)}, args...)...)
	if err != nil {
		t.Fatalf("siw client: %v\n%s", err, out)
	}
	if _, err := srv.wait(); err != nil {
		t.Fatalf("siw server: %v", err)
	}
	m := connrateLine.FindStringSubmatch(out)
	if m == nil || m[1] != strconv.Itoa(n) {
		t.Fatalf("siw client output: %q", out)
	}
	secs, _ := strconv.ParseFloat(m[2], 64)
	t.Logf("siw: %s", out)
	return float64(n) / secs
}

// iwarpSetupRate sets up n connections the way connrate does and returns
// the rate.
func iwarpSetupRate(t *testing.T, n int) float64 {
	t.Helper()
	tp := newTopology(t)
	linkUp(t, tp, 0)
	a := newRdmaSide(t, tp.A)
	b := newRdmaSide(t, tp.B)
	addr := netip.AddrPortFrom(netip.MustParseAddr(TopoB4), uint16(20000+rdmaPort.Add(1)))
	var l *userlib.Listener
	if err := RunInNetns(tp.B, func() error {
		var err error
		l, err = b.ctx.Listen(addr, userlib.MaxBacklog)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	warmNeighbour(t, tp)

	accErr := make(chan error, 1)
	go func() {
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			req, err := l.Accept(ctx)
			if err != nil {
				errs[i] = err
				break
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				qp, err := b.newQP()
				if err == nil {
					err = req.Accept(ctx, qp, nil)
				} else {
					req.Reject(nil)
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		accErr <- errors.Join(errs...)
	}()

	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, n)
	for range setupInFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				qp, err := a.newQP()
				if err == nil {
					_, err = qp.Dial(ctx, addr, nil)
				}
				errs[i] = err
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if err := <-accErr; err != nil {
		t.Fatal(err)
	}
	t.Logf("iwarp: %d connections in %.3f s: %.1f connections/s (%d in flight)",
		n, took.Seconds(), float64(n)/took.Seconds(), setupInFlight)
	return float64(n) / took.Seconds()
}

// warmNeighbour resolves B's address in A before a measurement (a TCP
// connection to a port nobody listens on, refused), so neither stack's
// figure carries the first ARP exchange.
func warmNeighbour(t *testing.T, tp *Topology) {
	t.Helper()
	err := tp.RunIn(tp.A, func() error {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(TopoB4, "9"), 5*time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			return nil
		}
		return err
	})
	if err != nil {
		t.Fatalf("reaching %s from %s: %v", TopoB4, tp.A, err)
	}
}

// rdmaSide is one side's context and PD; QPs come with their own CQ.
type rdmaSide struct {
	ctx *userlib.Context
	pd  *userlib.PD
}

func newRdmaSide(t *testing.T, ns string) *rdmaSide {
	t.Helper()
	s := &rdmaSide{}
	if err := RunInNetns(ns, func() error {
		var err error
		if s.ctx, err = userlib.Open(); err != nil {
			return err
		}
		s.pd, err = s.ctx.AllocPD()
		return err
	}); err != nil {
		t.Fatalf("%s: %v", ns, err)
	}
	t.Cleanup(func() { s.ctx.Close() })
	return s
}

func (s *rdmaSide) newQP() (*userlib.QP, error) {
	cq, err := s.ctx.CreateCQ(loadCQ)
	if err != nil {
		return nil, fmt.Errorf("CQ: %w", err)
	}
	qp, err := s.ctx.CreateQP(s.pd, cq, cq, userlib.QPConfig{SQEntries: loadSQ, RQEntries: loadRQ})
	if err != nil {
		return nil, fmt.Errorf("QP: %w", err)
	}
	return qp, nil
}

// TestSetupRate measures the connection setup rate of siw and of iwarp in
// this guest, setupRounds rounds each in turn (the order alternating from
// round to round: the guest's speed drifts within a boot), and reports the
// medians and their ratio (docs/PERFORMANCE.md). It asserts only that every
// connection came up on both.
func TestSetupRate(t *testing.T) {
	var siw, iw []float64
	for r := range setupRounds {
		runs := []func(){
			func() {
				t.Run(fmt.Sprintf("siw-%d", r), func(t *testing.T) { siw = append(siw, siwSetupRate(t, setupConns)) })
			},
			func() {
				t.Run(fmt.Sprintf("iwarp-%d", r), func(t *testing.T) { iw = append(iw, iwarpSetupRate(t, setupConns)) })
			},
		}
		if r%2 == 1 {
			runs[0], runs[1] = runs[1], runs[0]
		}
		for _, run := range runs {
			run()
		}
	}
	if len(siw) == setupRounds && len(iw) == setupRounds {
		ms, mi := median(siw), median(iw)
		t.Logf("connection setup, %d connections, %d in flight, %d rounds: iwarp %.1f/s (%.1f), siw %.1f/s (%.1f): medians %.2f x siw",
			setupConns, setupInFlight, setupRounds, mi, iw, ms, siw, mi/ms)
	}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
