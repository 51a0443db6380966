// SPDX-License-Identifier: BSD-3-Clause

package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/iwarp/iwarp/wire"
	"github.com/iwarp/iwarp/wire/vecfile"
)

// decodeVector returns the named vector from the golden files.
func decodeVector(t *testing.T, name string) vecfile.Vector {
	t.Helper()
	vs, err := vecfile.LoadDir("../../testdata/vectors")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if v.Name == name && (v.Kind == "fpdu" || v.Kind == "fpdu_error") {
			return v
		}
	}
	t.Fatalf("no fpdu vector %q", name)
	return vecfile.Vector{}
}

// decodeRun writes stream to a file and runs iwarpctl with args, where
// "FILE" is replaced by the file's name.
func decodeRun(t *testing.T, stream []byte, stdin []byte, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "stream.bin")
	if err := os.WriteFile(file, stream, 0o644); err != nil {
		t.Fatal(err)
	}
	for i, a := range args {
		if a == "FILE" {
			args[i] = file
		}
	}
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb}
	if stdin == nil {
		return run(a, args), out.String(), errb.String()
	}
	// run reads os.Stdin; give the command tree a reader instead.
	root := newRoot(a)
	root.SetIn(bytes.NewReader(stdin))
	root.SetArgs(args)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	if err := root.Execute(); err != nil {
		code = 1
		if ee, ok := err.(*exitError); ok {
			code = ee.code
		}
		errb.WriteString("iwarpctl: " + err.Error() + "\n")
	}
	return code, out.String(), errb.String()
}

func lines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func vectorArgs(t *testing.T, v vecfile.Vector) []string {
	t.Helper()
	var args []string
	if v.String("markers", "0") == "1" {
		args = append(args, "--markers")
	}
	if v.String("crc", "0") == "1" {
		args = append(args, "--crc")
	}
	return append(args, "--offset", v.String("offset", "0"))
}

func TestDecodeText(t *testing.T) {
	for _, name := range []string{"multi_fpdu_nomarkers", "many_small_fpdus", "seed_fig6_v1", "multi_fpdu_stream",
		"write8_nocrc", "terminate_siw_layout", "atomic_fetchadd_request", "immediate_data"} {
		t.Run(name, func(t *testing.T) {
			v := decodeVector(t, name)
			ulpdus, _ := v.AllBytes("ulpdu")
			args := append([]string{"decode"}, vectorArgs(t, v)...)
			code, out, errs := decodeRun(t, v.Hex, nil, append(args, "FILE")...)
			if code != 0 || errs != "" {
				t.Fatalf("exit %d, stderr %q", code, errs)
			}
			ls := lines(out)
			if len(ls) != len(ulpdus) {
				t.Fatalf("%d lines for %d FPDUs:\n%s", len(ls), len(ulpdus), out)
			}
			wantCRC := "crc=off"
			if v.String("crc", "0") == "1" {
				wantCRC = "crc=ok"
			}
			for i, l := range ls {
				if !strings.Contains(l, "len="+strconv.Itoa(len(ulpdus[i]))+" ") || !strings.Contains(l, wantCRC) {
					t.Errorf("line %d: %q", i, l)
				}
				if strings.Contains(l, "error=") {
					t.Errorf("line %d reports an error: %q", i, l)
				}
			}
		})
	}
}

func TestDecodeTextFields(t *testing.T) {
	v := decodeVector(t, "write8_crc")
	_, out, _ := decodeRun(t, v.Hex, nil, "decode", "--crc", "--payload", "FILE")
	want := "offset=0 len=22 pad=0 wire=28 markers=0 crc=ok crc_field=0x3b114c50 | ddp tagged last=1 dv=1 " +
		"stag=0x12345678 to=0x1000 | rdmap write rv=1 payload_len=8 | ulpdu=c1401234567800000000000010000102030405060708\n"
	if out != want {
		t.Errorf("got  %q\nwant %q", out, want)
	}
}

func TestDecodeJSON(t *testing.T) {
	v := decodeVector(t, "seed_fig5_fig6_stream_v0")
	ulpdus, _ := v.AllBytes("ulpdu")
	code, out, errs := decodeRun(t, v.Hex, nil, append(append([]string{"-j", "decode"}, vectorArgs(t, v)...),
		"--payload", "FILE")...)
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	ls := lines(out)
	if len(ls) != len(ulpdus) {
		t.Fatalf("%d lines for %d FPDUs", len(ls), len(ulpdus))
	}
	wantOffsets := []uint64{0, 0x1ec}
	for i, l := range ls {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %d: %v: %s", i, err, l)
		}
		for _, k := range []string{"offset", "wire_len", "len", "pad", "markers", "crc", "crc_field", "ulpdu"} {
			if _, ok := m[k]; !ok {
				t.Errorf("line %d: no key %q", i, k)
			}
		}
		var rec wire.Record
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Offset != wantOffsets[i] || rec.Len != len(ulpdus[i]) || rec.CRC != "ok" {
			t.Errorf("line %d: offset %d len %d crc %s", i, rec.Offset, rec.Len, rec.CRC)
		}
		if rec.ULPDU == nil || *rec.ULPDU != hex.EncodeToString(ulpdus[i]) {
			t.Errorf("line %d: ulpdu %v", i, rec.ULPDU)
		}
		// The seed figures use DDP/RDMAP version 0: decoded, and reported.
		if rec.DDP == nil || rec.DDP.DV != 0 || rec.RDMAP == nil || rec.RDMAP.Op != "send" {
			t.Errorf("line %d: ddp %+v rdmap %+v", i, rec.DDP, rec.RDMAP)
		}
		if rec.Error == "" || rec.ErrorTerminate == nil || *rec.ErrorTerminate != (wire.TermCode{Layer: 1, EType: 2, ECode: 6}) {
			t.Errorf("line %d: error %q %+v", i, rec.Error, rec.ErrorTerminate)
		}
	}
}

func TestDecodeJSONRDMAP(t *testing.T) {
	v := decodeVector(t, "read_request")
	code, out, _ := decodeRun(t, v.Hex, nil, "-j", "decode", "--crc", "FILE")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var rec wire.Record
	if err := json.Unmarshal([]byte(out), &rec); err != nil {
		t.Fatal(err)
	}
	q := rec.RDMAP.ReadReq
	if rec.RDMAP.Op != "read_request" || q == nil || q.SinkSTag != 0xAABBCC01 || q.Size != 4096 || q.SrcTO != 0x1000 ||
		*rec.DDP.QN != 1 || rec.Error != "" || rec.ULPDU != nil {
		t.Errorf("record %+v rdmap %+v", rec, rec.RDMAP)
	}
}

func TestDecodeStdinPretty(t *testing.T) {
	v := decodeVector(t, "immediate_data")
	code, out, _ := decodeRun(t, nil, v.Hex, "-j", "-p", "decode", "--crc", "-")
	if code != 0 || !strings.Contains(out, "\n  \"offset\": 0,\n") || !strings.Contains(out, `"imm": 72623859790382856`) {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
}

func TestDecodeFramingError(t *testing.T) {
	for _, tc := range []struct {
		vector     string
		lines      int    // FPDUs printed
		badCRCLine bool   // the last line is the bad FPDU
		stderr     string // in the stderr line
	}{
		{"crc_bad_second_fpdu", 2, true, "terminate layer 2 (LLP) etype 0 ecode 0x02"},
		{"marker_ptr_nonzero_between", 1, false, "terminate layer 2 (LLP) etype 0 ecode 0x03"},
		{"marker_ptr_wrong_crc_off", 0, false, "ecode 0x03"},
	} {
		t.Run(tc.vector, func(t *testing.T) {
			v := decodeVector(t, tc.vector)
			for _, json := range []bool{false, true} {
				args := []string{"decode"}
				if json {
					args = []string{"-j", "decode"}
				}
				code, out, errs := decodeRun(t, v.Hex, nil, append(append(args, vectorArgs(t, v)...), "FILE")...)
				if code != 1 {
					t.Errorf("exit %d, want 1", code)
				}
				if ls := lines(errs); len(ls) != 1 || !strings.Contains(ls[0], tc.stderr) {
					t.Errorf("stderr %q, want one line with %q", errs, tc.stderr)
				}
				ls := lines(out)
				if len(ls) != tc.lines {
					t.Fatalf("%d lines, want %d:\n%s", len(ls), tc.lines, out)
				}
				for i, l := range ls {
					bad := tc.badCRCLine && i == len(ls)-1
					want := "crc=ok"
					if json {
						want = `"crc":"ok"`
					}
					if bad {
						want = strings.ReplaceAll(want, "ok", "bad")
					}
					if v.String("crc", "0") == "0" {
						want = strings.ReplaceAll(want, "ok", "off")
					}
					if !strings.Contains(l, want) {
						t.Errorf("line %d %q lacks %q", i, l, want)
					}
				}
			}
		})
	}
}

func TestDecodeTruncated(t *testing.T) {
	v := decodeVector(t, "multi_fpdu_nomarkers")
	code, out, errs := decodeRun(t, v.Hex[:len(v.Hex)-3], nil, "decode", "--crc", "FILE")
	if code != 1 || len(lines(out)) != 4 || !strings.Contains(errs, "ends inside the FPDU") {
		t.Errorf("exit %d, %d lines, stderr %q", code, len(lines(out)), errs)
	}
}

func TestDecodeUsage(t *testing.T) {
	if code, _, _ := decodeRun(t, nil, nil, "decode"); code != 2 {
		t.Errorf("no FILE: exit %d, want 2", code)
	}
	if code, _, _ := decodeRun(t, nil, nil, "decode", "--offset", "x", "-"); code != 2 {
		t.Errorf("bad --offset: exit %d, want 2", code)
	}
	if code, _, errs := decodeRun(t, nil, nil, "decode", filepath.Join(t.TempDir(), "missing")); code != 1 || errs == "" {
		t.Errorf("missing file: exit %d, stderr %q", code, errs)
	}
	// --offset takes hex.
	v := decodeVector(t, "seed_fig6_v1")
	if code, out, errs := decodeRun(t, v.Hex, nil, "decode", "--markers", "--crc", "--offset", "0x1ec", "FILE"); code != 0 ||
		!strings.HasPrefix(out, "offset=492 ") {
		t.Errorf("exit %d, out %q, stderr %q", code, out, errs)
	}
}
