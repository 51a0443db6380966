// SPDX-License-Identifier: BSD-3-Clause

package genl

import (
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/genetlink/genltest"
	"github.com/mdlayher/netlink"

	"github.com/iwarp/iwarp/netlinkproto"
)

var family = genetlink.Family{
	ID:      0x22,
	Version: netlinkproto.FamilyVersion,
	Name:    netlinkproto.FamilyName,
	Groups:  []genetlink.MulticastGroup{{ID: 9, Name: netlinkproto.GroupEvents}},
}

func TestBind(t *testing.T) {
	c, err := Bind(genltest.Dial(genltest.ServeFamily(family, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Family.ID != family.ID || c.GroupID(netlinkproto.GroupEvents) != 9 || c.GroupID("nope") != 0 {
		t.Fatalf("family %+v", c.Family)
	}

	_, err = Bind(genltest.Dial(func(genetlink.Message, netlink.Message) ([]genetlink.Message, error) {
		return nil, genltest.Error(int(syscall.ENOENT))
	}))
	if !errors.Is(err, ErrNotLoaded) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing family: %v", err)
	}

	// A later version only added things: served. An older one: refused.
	newer := family
	newer.Version = netlinkproto.FamilyVersion + 1
	c2, err := Bind(genltest.Dial(genltest.ServeFamily(newer, nil)))
	if err != nil {
		t.Fatalf("a newer family refused: %v", err)
	}
	c2.Close()
	older := family
	older.Version = MinFamilyVersion - 1
	if _, err := Bind(genltest.Dial(genltest.ServeFamily(older, nil))); !errors.Is(err, ErrFamilyVersion) {
		t.Fatalf("a family older than %d: %v, want ErrFamilyVersion", MinFamilyVersion, err)
	}
}

func TestExecute(t *testing.T) {
	c, err := Bind(genltest.Dial(genltest.ServeFamily(family, func(greq genetlink.Message, nreq netlink.Message) ([]genetlink.Message, error) {
		if greq.Header.Command != netlinkproto.CmdPDAlloc || greq.Header.Version != netlinkproto.FamilyVersion {
			t.Errorf("header %+v", greq.Header)
		}
		if nreq.Header.Flags&netlink.Request == 0 {
			t.Error("request without NLM_F_REQUEST")
		}
		if string(greq.Data) == "fail" {
			return nil, genltest.Error(int(syscall.EBADF))
		}
		return []genetlink.Message{{Data: greq.Data}}, nil
	})))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	msgs, err := c.Execute("pd alloc", netlinkproto.CmdPDAlloc, 0, []byte("abcd"))
	if err != nil || len(msgs) != 1 || string(msgs[0].Data) != "abcd" {
		t.Fatalf("execute: %v %+v", err, msgs)
	}
	_, err = c.Execute("pd alloc", netlinkproto.CmdPDAlloc, 0, []byte("fail"))
	var ke *Error
	if !errors.As(err, &ke) || ke.Op != "pd alloc" || !errors.Is(err, syscall.EBADF) {
		t.Fatalf("rejection: %#v", err)
	}
}

func TestMapError(t *testing.T) {
	err := MapError("mr reg", &netlink.OpError{Op: "receive", Err: syscall.ENOMEM,
		Message: "IWARP_A_MR_LENGTH: exceeds RLIMIT_MEMLOCK"})
	var ke *Error
	if !errors.As(err, &ke) || ke.Message != "IWARP_A_MR_LENGTH: exceeds RLIMIT_MEMLOCK" || !errors.Is(err, syscall.ENOMEM) {
		t.Fatalf("got %#v", err)
	}
	if got, want := err.Error(), "mr reg: IWARP_A_MR_LENGTH: exceeds RLIMIT_MEMLOCK (cannot allocate memory)"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	if got := MapError("pd free", &netlink.OpError{Err: syscall.ENOENT}); got.Error() != "pd free: no such file or directory" ||
		!errors.Is(got, os.ErrNotExist) {
		t.Fatalf("without message: %v", got)
	}
	other := errors.New("boom")
	if got := MapError("qp create", other); !errors.Is(got, other) || isKernel(got) {
		t.Fatalf("non-netlink error: %v", got)
	}
}

// isKernel reports whether err is a kernel rejection.
func isKernel(err error) bool {
	var e *Error
	return errors.As(err, &e)
}
