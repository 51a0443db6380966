// SPDX-License-Identifier: BSD-3-Clause

package vm

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// PairResult is what each guest of RunPair left behind and why it did
// not finish.
type PairResult struct {
	A, B       *Result
	ErrA, ErrB error
}

// RunPair boots two guests at once, each with Run, joined by one Ethernet
// link: a virtio-net NIC in each on a QEMU "stream" netdev over a Unix
// socket in dir, on which a's QEMU listens and b's connects. A socket path
// rather than a TCP port on the host leaves nothing to race for. b starts
// once a's QEMU listens (read from /proc/net/unix), or not at all if a
// ends first. The NICs get the MAC addresses macA and macB; each Config's
// Net is set here. The guests find each other by themselves (their
// scripts): the link carries whatever they send, from boot to power-off.
func RunPair(ctx context.Context, dir string, a, b Config, macA, macB string) PairResult {
	sock := filepath.Join(dir, "net.sock")
	os.Remove(sock)
	a.Net = &NetConfig{Socket: sock, Listen: true, MAC: macA}
	b.Net = &NetConfig{Socket: sock, MAC: macB}

	var pr PairResult
	doneA := make(chan struct{})
	go func() {
		defer close(doneA)
		pr.A, pr.ErrA = Run(ctx, a)
	}()
	// a's QEMU binds the socket while it starts, before the guest runs.
	listening := false
	deadline := time.Now().Add(2 * time.Minute)
	for !listening && time.Now().Before(deadline) {
		var err error
		if listening, err = unixListening(sock); err != nil {
			<-doneA
			pr.ErrB = err
			return pr
		}
		if listening {
			break
		}
		select {
		case <-doneA:
			pr.ErrB = fmt.Errorf("vm: not started: the first guest ended before its QEMU listened on %s", sock)
			return pr
		case <-ctx.Done():
			<-doneA
			pr.ErrB = ctx.Err()
			return pr
		case <-time.After(50 * time.Millisecond):
		}
	}
	if !listening {
		<-doneA
		pr.ErrB = fmt.Errorf("vm: not started: nothing listened on %s after 2 minutes", sock)
		return pr
	}
	pr.B, pr.ErrB = Run(ctx, b)
	<-doneA
	return pr
}

// unixListening reports whether a Unix stream socket listens at path
// (/proc/net/unix: Num RefCount Protocol Flags Type St Inode Path; the
// flag __SO_ACCEPTCON, 00010000, marks a listener).
func unixListening(path string) (bool, error) {
	f, err := os.Open("/proc/net/unix")
	if err != nil {
		return false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) == 8 && fs[7] == path && fs[3] == "00010000" {
			return true, nil
		}
	}
	return false, sc.Err()
}
