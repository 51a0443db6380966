// SPDX-License-Identifier: BSD-3-Clause

package guest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// tsharkDirEnv is set when the host decodes the captures
// (tests/vm/hosttshark.go has the protocol).
const tsharkDirEnv = "IWARP_VM_TSHARK"

// tsharkHostTimeout bounds the wait for the host's answer.
const tsharkHostTimeout = 5 * time.Minute

var tsharkSeq atomic.Uint64

// tsharkRun runs tshark with args, which read one capture ("-r FILE"),
// and returns its standard output and error. A non-zero exit is an error.
// With IWARP_VM_TSHARK set the host's tshark decodes a copy of the
// capture; the answer is the same, in a fraction of the emulated time.
func tsharkRun(args ...string) (stdout, stderr []byte, err error) {
	dir := os.Getenv(tsharkDirEnv)
	if dir == "" {
		cmd := exec.Command("tshark", args...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.Bytes(), errb.Bytes(), err
	}
	i := slices.Index(args, "-r")
	if i < 0 || i+1 == len(args) {
		return nil, nil, errors.New("tshark: no capture (-r) among the arguments")
	}
	id := fmt.Sprintf("g%d-%d", os.Getpid(), tsharkSeq.Add(1))
	base := filepath.Join(dir, id)
	defer func() {
		for _, ext := range []string{".pcapng", ".req", ".out", ".err", ".done"} {
			os.Remove(base + ext)
		}
	}()
	capture, err := os.ReadFile(args[i+1])
	if err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(base+".pcapng", capture, 0o644); err != nil {
		return nil, nil, err
	}
	hostArgs := slices.Clone(args)
	hostArgs[i+1] = id + ".pcapng"
	req, err := json.Marshal(hostArgs)
	if err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(base+".req.tmp", req, 0o644); err != nil {
		return nil, nil, err
	}
	if err := os.Rename(base+".req.tmp", base+".req"); err != nil {
		return nil, nil, err
	}
	var done []byte
	deadline := time.Now().Add(tsharkHostTimeout)
	for {
		done, err = os.ReadFile(base + ".done")
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, nil, err
		}
		if time.Now().After(deadline) {
			return nil, nil, fmt.Errorf("tshark: the host did not answer request %s within %v", id, tsharkHostTimeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
	codeText, why, _ := strings.Cut(string(done), "\n")
	code, err := strconv.Atoi(codeText)
	if err != nil {
		return nil, nil, fmt.Errorf("tshark: the host's answer %q", done)
	}
	if code < 0 {
		return nil, nil, fmt.Errorf("tshark on the host: %s", why)
	}
	if stdout, err = os.ReadFile(base + ".out"); err != nil {
		return nil, nil, err
	}
	if stderr, err = os.ReadFile(base + ".err"); err != nil {
		return nil, nil, err
	}
	if code != 0 {
		return stdout, stderr, fmt.Errorf("tshark on the host: exit status %d", code)
	}
	return stdout, stderr, nil
}
