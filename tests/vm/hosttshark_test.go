// SPDX-License-Identifier: BSD-3-Clause

package vm

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iwarp/iwarp/internal/pcap"
	"github.com/iwarp/iwarp/internal/pcap/pcaptest"
)

// request writes a request the way the guest does and waits for its
// answer: the exit code line, the reason and the output.
func request(t *testing.T, dir, id string, args []string) (code, why, out string) {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(dir, id)
	if err := os.WriteFile(base+".req.tmp", b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(base+".req.tmp", base+".req"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		done, err := os.ReadFile(base + ".done")
		if err == nil {
			code, why, _ = strings.Cut(string(done), "\n")
			o, _ := os.ReadFile(base + ".out")
			e, _ := os.ReadFile(base + ".err")
			return code, why + string(e), string(o)
		}
		if !errors.Is(err, fs.ErrNotExist) || time.Now().After(deadline) {
			t.Fatalf("no answer to %s: %v", id, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestHostTshark(t *testing.T) {
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	a, b := netip.MustParseAddr("10.11.0.1"), netip.MustParseAddr("10.11.0.2")
	var pkts []pcaptest.Packet
	for i := range 3 {
		seg := pcaptest.TCP(40000, 5001, uint32(i), 0, 0x18, []byte("hello"))
		pkts = append(pkts, pcaptest.Packet{Time: time.Unix(int64(i), 0),
			Data: pcaptest.Frame(pcap.LinkTypeEthernet, pcaptest.IPv4(a, b, 6, seg))})
	}
	if err := os.WriteFile(filepath.Join(dir, "c.pcapng"),
		pcaptest.PcapNG(pcap.LinkTypeEthernet, pkts, pcaptest.PcapNGOptions{}), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := make(chan struct{})
	served := make(chan struct{})
	go func() {
		defer close(served)
		serveTshark(ctx, dir, stop)
	}()

	code, why, out := request(t, dir, "ok", []string{"-r", "c.pcapng", "-n", "-T", "fields", "-e", "frame.number", "-e", "tcp.dstport"})
	if code != "0" || out != "1\t5001\n2\t5001\n3\t5001\n" {
		t.Errorf("answer: code %q (%s), output %q", code, why, out)
	}
	if code, _, _ := request(t, dir, "exit", []string{"-r", "c.pcapng", "-Y", "no.such.field"}); code == "0" || code == "-1" {
		t.Errorf("a bad filter: code %q, want tshark's own failure", code)
	}
	for id, args := range map[string][]string{
		"escape": {"-r", "../c.pcapng"},
		"hidden": {"-r", ".c.pcapng"},
		"none":   {"-n"},
		"two":    {"-r", "c.pcapng", "-r", "c.pcapng"},
		"last":   {"-n", "-r"},
	} {
		if code, why, _ := request(t, dir, id, args); code != "-1" || why == "" {
			t.Errorf("%s %q: code %q (%s), want -1 and a reason", id, args, code, why)
		}
	}
	close(stop)
	<-served
}
