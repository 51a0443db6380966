// SPDX-License-Identifier: BSD-3-Clause

package vm

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// A file shaped like the part of siw_main.c the variants edit.
const siwMainSample = `/* tunables */
const bool zcopy_tx = true;

/* comment mentioning peer_to_peer; */
const bool mpa_crc_required;
const bool mpa_crc_strict;

u_char mpa_version = MPA_REVISION_2;

static const unsigned int some_count = 4;

const bool peer_to_peer;

static int f(void)
{
	return peer_to_peer ? mpa_version : 0;
}
`

func TestEditSiwConsts(t *testing.T) {
	out, err := editSiwConsts([]byte(siwMainSample), []siwConst{
		{"mpa_crc_required", "true"},
		{"mpa_version", "MPA_REVISION_1"},
		{"peer_to_peer", "true"},
		{"some_count", "8"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.NewReplacer(
		"const bool mpa_crc_required;", "const bool mpa_crc_required = true;",
		"u_char mpa_version = MPA_REVISION_2;", "u_char mpa_version = MPA_REVISION_1;",
		"const bool peer_to_peer;\n", "const bool peer_to_peer = true;\n",
		"some_count = 4;", "some_count = 8;",
	).Replace(siwMainSample)
	if string(out) != want {
		t.Errorf("edited:\n%s\nwant:\n%s", out, want)
	}
	if out, err := editSiwConsts([]byte(siwMainSample), nil); err != nil || string(out) != siwMainSample {
		t.Errorf("no edits changed the file: %v", err)
	}

	for _, c := range []struct {
		src   string
		edit  siwConst
		error string
	}{
		{siwMainSample, siwConst{"mpa_crc_requested", "true"}, "no declaration of mpa_crc_requested"},
		{siwMainSample, siwConst{"f", "1"}, "no declaration of f"},
		{siwMainSample + "const bool mpa_crc_strict = true;\n", siwConst{"mpa_crc_strict", "false"}, "2 declarations"},
		{siwMainSample, siwConst{"peer_to_peer", "true; int x"}, "bad edit"},
		{siwMainSample, siwConst{"peer to peer", "true"}, "bad edit"},
		{siwMainSample, siwConst{"peer_to_peer", ""}, "bad edit"},
	} {
		_, err := editSiwConsts([]byte(c.src), []siwConst{c.edit})
		if err == nil || !strings.Contains(err.Error(), c.error) {
			t.Errorf("edit %+v: %v, want an error with %q", c.edit, err, c.error)
		}
	}
}

// Every variant's edits apply to the sample: a variant naming a constant
// that does not exist would fail only at build time otherwise.
func TestSiwVariantsApply(t *testing.T) {
	for _, name := range SiwVariantNames() {
		if _, err := editSiwConsts([]byte(siwMainSample), SiwVariants[name]); err != nil {
			t.Errorf("variant %s: %v", name, err)
		}
	}
	if _, ok := SiwVariants["default"]; !ok {
		t.Error("no default variant")
	}
}

func TestSiwKbuild(t *testing.T) {
	mk := "# comment\nobj-$(CONFIG_RDMA_SIW) += siw.o\n\nsiw-y := \\\n\tsiw_a.o \\\n\tsiw_b.o\nsiw-y += siw_c.o\n"
	got, err := siwKbuild([]byte(mk))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), "obj-m := siw.o\nsiw-y := siw_a.o siw_b.o siw_c.o\n") {
		t.Errorf("Kbuild:\n%s", got)
	}
	if _, err := siwKbuild([]byte("obj-m += siw.o\n")); err == nil {
		t.Error("Makefile without siw-y accepted")
	}
	if _, err := siwKbuild([]byte("siw-y := siw_a.o $(EXTRA)\n")); err == nil {
		t.Error("non-object in siw-y accepted")
	}
}

func TestSiwSourceTarball(t *testing.T) {
	t.Setenv("IWARP_SIW_SOURCE", "")
	os.Unsetenv("IWARP_SIW_SOURCE")
	p, top, err := siwSourceTarball("6.1.0-56-amd64")
	if err != nil || p != "/usr/src/linux-source-6.1.tar.xz" || top != "linux-source-6.1" {
		t.Errorf("6.1.0-56-amd64: %q %q %v", p, top, err)
	}
	if _, _, err := siwSourceTarball("amd64"); err == nil {
		t.Error("version without major.minor accepted")
	}
	t.Setenv("IWARP_SIW_SOURCE", "/tmp/linux-source-6.12.tar.xz")
	if p, top, _ := siwSourceTarball("6.1.0-56-amd64"); p != "/tmp/linux-source-6.12.tar.xz" || top != "linux-source-6.12" {
		t.Errorf("IWARP_SIW_SOURCE: %q %q", p, top)
	}
}

func TestSiwKey(t *testing.T) {
	seen := map[string]string{}
	for _, name := range SiwVariantNames() {
		k := siwKey("6.1.0-56-amd64", 1, 2, SiwVariants[name])
		if other, dup := seen[k]; dup {
			t.Errorf("variants %s and %s share the cache key %s", name, other, k)
		}
		seen[k] = name
	}
	if siwKey("a", 1, 2, nil) == siwKey("a", 1, 3, nil) || siwKey("a", 1, 2, nil) == siwKey("b", 1, 2, nil) {
		t.Error("cache key ignores the tarball size or the kernel version")
	}
}

// TestBuildSiw builds (or finds in the cache) every variant and checks each
// module was built for the guest kernel.
func TestBuildSiw(t *testing.T) {
	kver, err := KernelVersion()
	if err != nil {
		t.Skip(err)
	}
	tarball, _, _ := siwSourceTarball(kver)
	if _, err := os.Stat(tarball); err != nil {
		t.Skip(err)
	}
	if _, err := os.Stat(kernelBuildDir(kver) + "/Makefile"); err != nil {
		t.Skip(err)
	}
	paths, err := BuildSiw(kver)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != len(SiwVariants) {
		t.Fatalf("built %d variants, want %d: %v", len(paths), len(SiwVariants), paths)
	}
	for name, p := range paths {
		out, err := exec.Command("modinfo", "-F", "vermagic", p).Output()
		if err != nil {
			t.Fatalf("modinfo %s: %v", p, err)
		}
		if !strings.HasPrefix(string(out), kver+" ") {
			t.Errorf("variant %s: vermagic %q, want %s", name, out, kver)
		}
	}
}

func TestApplySiwFix(t *testing.T) {
	f := siwFix{Name: "x", File: "f.c", Old: "a();\n", New: "b();\n"}
	if got, err := applySiwFix("x();\na();\ny();\n", f); err != nil || got != "x();\nb();\ny();\n" {
		t.Errorf("once: %q %v", got, err)
	}
	for _, src := range []string{"x();\n", "a();\na();\n"} {
		if _, err := applySiwFix(src, f); err == nil {
			t.Errorf("%q: fix applied, want an error", src)
		}
	}
}

// A function shaped like siw_create_listen of Debian's 6.1 and 6.12 trees
// (BuildSiw applies the fixes to the real ones, for both guest kernels).
const siwListenSample = `static int siw_listen_address(struct iw_cm_id *id, int backlog)
{
	siw_cep_socket_assoc(cep, s);

	rv = siw_cm_alloc_work(cep, backlog);
	if (rv) {
		goto error;
	}
	rv = s->ops->listen(s, backlog);
	if (rv) {
		siw_dbg(id->device, "listen error %d\n", rv);
		goto error;
	}
	cep->cm_id = id;
	id->add_ref(id);

	if (!id->provider_data) {
		INIT_LIST_HEAD((struct list_head *)id->provider_data);
	}
	list_add_tail(&cep->listenq, (struct list_head *)id->provider_data);
	cep->state = SIW_EPSTATE_LISTENING;

	return 0;
}
`

// TestSiwFixesApply checks the listener is LISTENING, with its cm_id,
// before it listens.
func TestSiwFixesApply(t *testing.T) {
	src := applySiwFixesTo(t, "siw_cm.c", siwListenSample)
	state := strings.Index(src, "\tcep->state = SIW_EPSTATE_LISTENING;\n")
	ref := strings.Index(src, "\tcep->cm_id = id;\n\tid->add_ref(id);\n\tcep->state")
	listen := strings.Index(src, "rv = s->ops->listen(s, backlog);")
	if strings.Count(src, "cep->state = SIW_EPSTATE_LISTENING;") != 1 || ref < 0 || state > listen {
		t.Errorf("LISTENING at %d, cm_id at %d, listen() at %d:\n%s", state, ref, listen, src)
	}
}

// applySiwFixesTo applies the fixes of file to src.
func applySiwFixesTo(t *testing.T, file, src string) string {
	t.Helper()
	for _, f := range siwFixes {
		if f.File != file {
			continue
		}
		var err error
		if src, err = applySiwFix(src, f); err != nil {
			t.Fatal(err)
		}
	}
	return src
}

// The completion functions of Debian's 6.1 and 6.12 siw_qp.c, in part.
const siwCompleteSample = `int siw_sqe_complete(struct siw_qp *qp, struct siw_sqe *sqe, u32 bytes,
		     enum siw_wc_status status)
{
		if (!READ_ONCE(cqe->flags)) {
			bool notify;

			WRITE_ONCE(cqe->flags, SIW_WQE_VALID);
			smp_store_mb(sqe->flags, 0);

			cq->cq_put++;
			notify = siw_cq_notify_now(cq, sqe_flags);

			spin_unlock_irqrestore(&cq->lock, flags);
		}
}

int siw_rqe_complete(struct siw_qp *qp, struct siw_rqe *rqe, u32 bytes,
		     u32 inval_stag, enum siw_wc_status status)
{
		if (!READ_ONCE(cqe->flags)) {
			bool notify;

			WRITE_ONCE(cqe->flags, SIW_WQE_VALID);
			smp_store_mb(rqe->flags, 0);

			cq->cq_put++;
			notify = siw_cq_notify_now(cq, SIW_WQE_SIGNALLED);

			spin_unlock_irqrestore(&cq->lock, flags);
		}
}
`

// TestSiwCQArmFix checks both completions have a full barrier between
// their producer index store and their arm load.
func TestSiwCQArmFix(t *testing.T) {
	src := applySiwFixesTo(t, "siw_qp.c", siwCompleteSample)
	if n := strings.Count(src, "smp_mb();"); n != 2 {
		t.Fatalf("%d barriers, want 2:\n%s", n, src)
	}
	for _, fn := range strings.SplitAfter(src, "\n}\n")[:2] {
		put := strings.Index(fn, "cq->cq_put++;")
		mb := strings.Index(fn, "smp_mb();")
		arm := strings.Index(fn, "notify = siw_cq_notify_now(")
		if put < 0 || !(put < mb && mb < arm) {
			t.Errorf("cq_put at %d, barrier at %d, arm load at %d:\n%s", put, mb, arm, fn)
		}
	}
}
