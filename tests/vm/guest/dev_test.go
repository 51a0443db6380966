// SPDX-License-Identifier: BSD-3-Clause

//go:build vmguest

package guest

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/iwarp/iwarp/ctl"
	"github.com/iwarp/iwarp/internal/version"
	"github.com/iwarp/iwarp/userlib"
)

// TestDevAttr: the device attributes (IWARP_CMD_DEV_GET) as ctl and
// userlib read them agree, name the project's release and the ring ABI,
// match the limits userlib knows from the ABI headers, and are the ones
// the module enforces: a CQ and a QP of the largest size are made, one
// entry more is refused.
func TestDevAttr(t *testing.T) {
	tp := newTopology(t)
	d, err := ctlIn(t, tp.A).Dev()
	if err != nil {
		t.Fatal(err)
	}
	e := newRdmaEnd(t, tp.A, 4096, rdmaAccess)
	u, err := e.ctx.Attr()
	if err != nil {
		t.Fatal(err)
	}
	if *d != u {
		t.Fatalf("ctl %+v, userlib %+v", *d, u)
	}
	t.Logf("device attributes: %+v, caps %v", u, u.Caps.Names())
	out, errs, code := iwarpctl(t, tp.A, "-j", "dev", "show")
	var j ctl.Dev
	if code != 0 || errs != "" {
		t.Fatalf("iwarpctl -j dev show: exit %d %q", code, errs)
	}
	if err := json.Unmarshal([]byte(strings.ReplaceAll(out, `"caps":[`, `"caps_names":[`)), &j); err != nil {
		t.Fatalf("iwarpctl -j dev show: %v: %q", err, out)
	}
	j.Caps = u.Caps // names, not the number, in JSON (checked below)
	if j != u || !strings.Contains(out, `"caps":["rfc7306","mpa-crc","mpa-markers","p2p","sctp"]`) {
		t.Fatalf("iwarpctl -j dev show %q, userlib %+v", out, u)
	}
	if u.Version != version.Version || u.MaxSendSGE != userlib.MaxSendSGE || u.MaxRecvSGE != userlib.MaxRecvSGE ||
		u.MaxInline != userlib.MaxInline || u.MaxIRD != userlib.MaxIRDORD || u.MaxORD != userlib.MaxIRDORD ||
		u.ABIVersion == 0 || u.MaxMRSize == 0 || u.MaxObjects == 0 || u.MaxMR == 0 {
		t.Fatalf("attributes %+v", u)
	}
	for _, want := range []string{"rfc7306", "mpa-crc", "mpa-markers", "p2p", "sctp"} {
		if !slices.Contains(u.Caps.Names(), want) {
			t.Fatalf("caps %v lack %s", u.Caps.Names(), want)
		}
	}
	cq, err := e.ctx.CreateCQ(int(u.MaxCQE))
	if err != nil {
		t.Fatalf("a CQ of max_cqe %d: %v", u.MaxCQE, err)
	}
	qp, err := e.ctx.CreateQP(e.pd, cq, cq, userlib.QPConfig{SQEntries: int(u.MaxQPWR), RQEntries: int(u.MaxQPWR)})
	if err != nil {
		t.Fatalf("a QP of max_qp_wr %d: %v", u.MaxQPWR, err)
	}
	qp.Close()
	if _, err := e.ctx.CreateCQ(int(u.MaxCQE) + 1); err == nil {
		t.Fatalf("a CQ of max_cqe+1 made")
	}
	if _, err := e.ctx.CreateQP(e.pd, cq, cq, userlib.QPConfig{SQEntries: int(u.MaxQPWR) + 1, RQEntries: 1}); err == nil {
		t.Fatalf("a QP of max_qp_wr+1 made")
	}
	cq.Close()
}
