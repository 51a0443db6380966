// SPDX-License-Identifier: BSD-3-Clause

//go:build linux

package userlib

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/genetlink/genltest"
	"github.com/mdlayher/netlink"
)

// TestOpenMissingDevice: without /dev/iwarp, Open tells a module not
// loaded (no family) from a device node missing in this mount namespace
// (the family answers), both matching os.ErrNotExist and the open's own
// error.
func TestOpenMissingDevice(t *testing.T) {
	openErr := &fs.PathError{Op: "open", Path: DevPath, Err: syscall.ENOENT}
	loaded := func() error { return familyOn(genltest.Dial(genltest.ServeFamily(fakeFamily, nil))) }
	absent := func() error {
		return familyOn(genltest.Dial(func(genetlink.Message, netlink.Message) ([]genetlink.Message, error) {
			return nil, genltest.Error(int(syscall.ENOENT))
		}))
	}
	noNetlink := func() error { return syscall.EAFNOSUPPORT }
	for _, tc := range []struct {
		name    string
		present func() error
		want    error
		other   error
		msg     string
	}{
		{"loaded", loaded, ErrNoDevice, ErrNotLoaded,
			"no /dev/iwarp in this mount namespace (the module is loaded): pass the device in, e.g. docker run --device /dev/iwarp"},
		{"not loaded", absent, ErrNotLoaded, ErrNoDevice, "iwarp kernel module not loaded (load it with: modprobe iwarp)"},
		{"no netlink", noNetlink, ErrNotLoaded, ErrNoDevice, "iwarp kernel module not loaded (load it with: modprobe iwarp)"},
	} {
		err := noDevice(openErr, tc.present)
		if !errors.Is(err, tc.want) || errors.Is(err, tc.other) || !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %v: want %v and os.ErrNotExist, not %v", tc.name, err, tc.want, tc.other)
		}
		var pe *fs.PathError
		if !errors.As(err, &pe) || pe != openErr {
			t.Errorf("%s: %v does not wrap the open's error", tc.name, err)
		}
		if err.Error() != tc.msg {
			t.Errorf("%s: %q, want %q", tc.name, err, tc.msg)
		}
	}
	if !errors.Is(ErrNoDevice, os.ErrNotExist) || !errors.Is(ErrNotLoaded, os.ErrNotExist) ||
		errors.Is(ErrNoDevice, ErrNotLoaded) || !strings.HasPrefix(ErrNoDevice.Error(), "no /dev/iwarp") {
		t.Errorf("sentinels: %v, %v", ErrNoDevice, ErrNotLoaded)
	}
}
