// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package main

import "testing"

func TestWriteTargets(t *testing.T) {
	for _, c := range []struct{ s, n, want int }{
		{65536, 16, 16},
		{65536, 5, 5},
		{65536, 1000, writeSlots},
		{4 << 20, 100, 4}, // maxVerifyMem
		{64 << 20, 10, 1},
		{0, 7, 7},
		{4096, 0, 1},
	} {
		if got := writeTargets(c.s, c.n); got != c.want {
			t.Errorf("writeTargets(%d, %d) = %d, want %d", c.s, c.n, got, c.want)
		}
	}
}

func TestLastWrite(t *testing.T) {
	for _, k := range []int{1, 3, 16} {
		for n := k; n <= 40; n++ {
			last := map[int]int{}
			for i := range n {
				last[i%k] = i
			}
			for j := range k {
				if got := lastWrite(j, k, n); got != last[j] {
					t.Fatalf("lastWrite(%d, %d, %d) = %d, want %d", j, k, n, got, last[j])
				}
			}
		}
	}
}
