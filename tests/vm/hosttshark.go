// SPDX-License-Identifier: BSD-3-Clause

package vm

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// The guest's captures are decoded by the host's tshark: the same binary
// the guest would run (the guest's root is the host's), but native instead
// of emulated, where starting it alone (loading every dissector) takes
// seconds of TCG time per capture. Run starts the service for every boot
// and passes its directory as IWARP_VM_TSHARK; the guest side is
// tests/vm/guest/tshark_test.go.
//
// Protocol, all inside that directory: the guest copies a capture in as
// ID.pcapng and writes the request ID.req (renamed into place), a JSON
// array of tshark's arguments whose "-r" names the capture by its base
// name. The service runs tshark there and writes ID.out (stdout), ID.err
// (stderr) and last ID.done (renamed into place): the exit code, or -1 and
// why tshark did not run. The guest removes the files when it has read
// them.

// TsharkDirEnv names the service directory in the guest's environment.
const TsharkDirEnv = "IWARP_VM_TSHARK"

// tsharkPoll is how often the service looks for new requests.
const tsharkPoll = 10 * time.Millisecond

// serveTshark answers requests in dir until stop is closed, then waits for
// the tshark runs under way (ctx kills them).
func serveTshark(ctx context.Context, dir string, stop <-chan struct{}) {
	var wg sync.WaitGroup
	defer wg.Wait()
	seen := map[string]bool{}
	tick := time.NewTicker(tsharkPoll)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		reqs, _ := filepath.Glob(filepath.Join(dir, "*.req"))
		for _, r := range reqs {
			if seen[r] {
				continue
			}
			seen[r] = true
			wg.Add(1)
			go func() {
				defer wg.Done()
				answerTshark(ctx, dir, strings.TrimSuffix(filepath.Base(r), ".req"))
			}()
		}
	}
}

// answerTshark runs one request and writes its answer.
func answerTshark(ctx context.Context, dir, id string) {
	code, why := -1, ""
	args, err := tsharkRequest(filepath.Join(dir, id+".req"))
	if err == nil {
		cmd := exec.CommandContext(ctx, "tshark", args...)
		cmd.Dir = dir
		var out, errf *os.File
		if out, err = os.Create(filepath.Join(dir, id+".out")); err == nil {
			defer out.Close()
			if errf, err = os.Create(filepath.Join(dir, id+".err")); err == nil {
				defer errf.Close()
				cmd.Stdout, cmd.Stderr = out, errf
				err = cmd.Run()
				if ee, ok := err.(*exec.ExitError); ok {
					code, err = ee.ExitCode(), nil
				} else if err == nil {
					code = 0
				}
			}
		}
	}
	if err != nil {
		why = err.Error()
	}
	done := fmt.Sprintf("%d\n%s", code, why)
	tmp := filepath.Join(dir, id+".done.tmp")
	if os.WriteFile(tmp, []byte(done), 0o644) == nil {
		os.Rename(tmp, filepath.Join(dir, id+".done"))
	}
}

// tsharkRequest reads a request: tshark's arguments, whose one "-r" must
// name a capture in the service directory by its base name.
func tsharkRequest(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var args []string
	if err := json.Unmarshal(b, &args); err != nil {
		return nil, fmt.Errorf("request %s: %w", filepath.Base(path), err)
	}
	files := 0
	for i, a := range args {
		if a != "-r" {
			continue
		}
		files++
		if i+1 == len(args) || args[i+1] != filepath.Base(args[i+1]) || strings.HasPrefix(args[i+1], ".") {
			return nil, fmt.Errorf("request %s: -r must name a capture of the directory", filepath.Base(path))
		}
	}
	if files != 1 {
		return nil, fmt.Errorf("request %s: %d captures (-r), want 1", filepath.Base(path), files)
	}
	return args, nil
}
