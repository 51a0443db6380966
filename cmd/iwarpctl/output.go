// SPDX-License-Identifier: BSD-3-Clause

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// jsonSchema is the version of the JSON iwarpctl prints, reported by
// iwarpctl version -j as json_schema. It rises when keys are added; a key
// once printed keeps its name, type and meaning (docs/CONTROL-PLANE.md,
// iwarpctl JSON).
const jsonSchema = 1

// printJSON writes v as one line of JSON, or indented with -p.
func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	if a.g.Pretty {
		enc.SetIndent("", "  ")
	}
	return enc.Encode(v)
}

// table prints rows of key/value pairs aligned in columns, the way
// `rdma link` prints one object per line.
type table struct {
	tw *tabwriter.Writer
}

func newTable(w io.Writer) *table {
	return &table{tw: tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)}
}

// row prints one object: a leading word, then key value pairs.
func (t *table) row(fields ...string) {
	fmt.Fprintln(t.tw, strings.Join(fields, "\t"))
}

func (t *table) flush() error { return t.tw.Flush() }
