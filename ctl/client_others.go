// SPDX-License-Identifier: BSD-3-Clause

//go:build !linux

package ctl

import (
	"fmt"
	"runtime"
)

func newOSClient(options) (osClient, error) {
	return nil, fmt.Errorf("iwarp: not supported on %s", runtime.GOOS)
}
