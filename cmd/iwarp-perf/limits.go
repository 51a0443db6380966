// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package main

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// Every connection's rings and registered buffers are pinned memory,
// charged to RLIMIT_MEMLOCK (CAP_IPC_LOCK lifts the limit): a run of many
// connections needs more than the usual soft limit.

// raiseMemlock raises the soft RLIMIT_MEMLOCK to the hard limit.
func raiseMemlock() {
	var r unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_MEMLOCK, &r) == nil && r.Cur < r.Max {
		r.Cur = r.Max
		// On failure the soft limit stays; memlockHint tells.
		_ = unix.Setrlimit(unix.RLIMIT_MEMLOCK, &r)
	}
}

// memlockHint explains an ENOMEM from creating a queue or registering
// memory, whose usual cause is RLIMIT_MEMLOCK.
func memlockHint(err error) error {
	if !errors.Is(err, syscall.ENOMEM) {
		return err
	}
	var r unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_MEMLOCK, &r) != nil {
		return err
	}
	limit := "unlimited"
	if r.Cur != unix.RLIM_INFINITY {
		limit = fmt.Sprintf("%d KiB", r.Cur>>10)
	}
	return fmt.Errorf("%w (rings and registered buffers count against RLIMIT_MEMLOCK, %s here: raise it with ulimit -l, or run fewer connections)", err, limit)
}
