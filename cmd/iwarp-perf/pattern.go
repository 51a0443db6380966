// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package main

import "fmt"

// patternByte is octet i of the fill pattern of connection qp with seed
// seed: different connections, seeds and positions give different octets,
// so misplaced, stale or mixed-up data shows.
func patternByte(qp, seed, i int) byte {
	x := uint32(i) + uint32(qp)<<20 + uint32(seed)<<26
	x *= 2654435761 // Knuth's multiplicative hash
	return byte(x>>24) ^ byte(i)
}

// fill writes the pattern of (qp, seed) into b.
func fill(b []byte, qp, seed int) {
	for i := range b {
		b[i] = patternByte(qp, seed, i)
	}
}

// verify checks b against the pattern of (qp, seed).
func verify(b []byte, qp, seed int) error {
	for i := range b {
		if want := patternByte(qp, seed, i); b[i] != want {
			return fmt.Errorf("connection %d: octet %d of %d is %#02x, want %#02x (pattern %d)", qp, i, len(b), b[i], want, seed)
		}
	}
	return nil
}

// marker is the value of the last octet a write-latency ping or pong of
// iteration it carries: never 0 (fresh buffers), never the previous one.
func marker(it int) byte { return byte(it%255) + 1 }
