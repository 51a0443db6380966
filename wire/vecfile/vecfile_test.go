// SPDX-License-Identifier: BSD-3-Clause

package vecfile

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	src := `# comment
vector a.b-1   # trailing comment
ids MPA-1 MPA-13
ids DDP-4
kind fpdu
crc 1
offset 0x1ec
ulpdu 41 43 | 00x3
ulpdu -
hex 00 2A | 40.03
hex 002a4003 ffx2
end
`
	vs, err := Parse(strings.NewReader(src), "t.vec")
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 1 {
		t.Fatalf("%d vectors", len(vs))
	}
	v := vs[0]
	if v.Name != "a.b-1" || v.Kind != "fpdu" || v.Line != 2 || strings.Join(v.IDs, ",") != "MPA-1,MPA-13,DDP-4" {
		t.Errorf("%+v", v)
	}
	if want := []byte{0, 0x2a, 0x40, 3, 0, 0x2a, 0x40, 3, 0xff, 0xff}; !bytes.Equal(v.Hex, want) || !v.HasHex {
		t.Errorf("hex % x", v.Hex)
	}
	f := Fields{V: &v}
	if f.Uint("offset", 0) != 0x1ec || !f.Bool("crc", false) || f.Bool("markers", false) {
		t.Error("fields")
	}
	us := f.AllBytes("ulpdu")
	if len(us) != 2 || !bytes.Equal(us[0], []byte{0x41, 0x43, 0, 0, 0}) || len(us[1]) != 0 || f.Err != nil {
		t.Errorf("ulpdus %x %v", us, f.Err)
	}
	if f.Uint("crc", 0); f.Err != nil {
		t.Error(f.Err)
	}
	if strings.Join(v.Keys(), " ") != "crc offset ulpdu" {
		t.Error(v.Keys())
	}
}

func TestParseErrors(t *testing.T) {
	for _, src := range []string{
		"vector a\nkind nosuchkind\nend\n",
		"vector a\nkind crc\nbogus 1\nend\n",
		"vector a\nkind crc\nvalue 1\nvalue 2\nend\n",
		"vector a\nkind crc\n",
		"vector a\nvalue 1\nkind crc\nend\n",
		"vector A\nkind crc\nend\n",
		"vector a\nkind crc\nend\nvector a\nkind crc\nend\n",
		"kind crc\n",
		"vector a\nend\n",
		"vector a\nkind crc\nhex 0g\nend\n",
		"vector a\nkind crc\nhex 0\nend\n",
		"vector a\nkind crc\nhex 00xz\nend\n",
		"vector a\nkind crc\nvalue\nend\n",
	} {
		if _, err := Parse(strings.NewReader(src), "t.vec"); err == nil {
			t.Errorf("accepted %q", src)
		}
	}
}

func TestLoadDirEmpty(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadDir(dir); err == nil {
		t.Fatal("empty directory accepted")
	}
	os.WriteFile(filepath.Join(dir, "x.vec"), []byte("vector a\nkind mulpdu\nemss 1460\nend\n"), 0o644)
	vs, err := LoadDir(dir)
	if err != nil || len(vs) != 1 || vs[0].File != "x.vec" {
		t.Fatalf("%v %v", vs, err)
	}
}

func TestParseUint(t *testing.T) {
	for s, want := range map[string]uint64{"0": 0, "10": 10, "0x10": 16, "0xffffffffffffffff": 1<<64 - 1} {
		if got, err := ParseUint(s); err != nil || got != want {
			t.Errorf("%s: %d %v", s, got, err)
		}
	}
	for _, s := range []string{"", "-1", "0x", "1e3", "0x1ffffffffffffffff", "abc"} {
		if _, err := ParseUint(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}
