// SPDX-License-Identifier: BSD-3-Clause

// Command conformance classifies every requirement ID of the SPEC-NOTES
// checklist as e2e (named by a VM test), core (implemented in the C protocol
// core and named by its tests) or none (with the reason given in
// docs/conformance-notes.txt), and writes docs/CONFORMANCE.md.
//
//	go run ./tests/conformance -root . -spec ../shared/docs/SPEC-NOTES.md
//
// The test of this package checks that the committed document is the one
// this command writes.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
)

func main() {
	root := flag.String("root", ".", "repository root")
	spec := flag.String("spec", "", "SPEC-NOTES.md (default: "+defaultSpec+" from the root)")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("conformance: ")

	path := *spec
	if path == "" {
		path = filepath.Join(*root, defaultSpec)
	}
	doc, err := generate(*root, path)
	if err != nil {
		log.Fatal(err)
	}
	out := filepath.Join(*root, docFile)
	if err := os.WriteFile(out, doc, 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Println("wrote", out)
}

// generate returns docs/CONFORMANCE.md, or every problem found in the inputs.
func generate(root, spec string) ([]byte, error) {
	in, err := readInputs(root, spec)
	if err != nil {
		return nil, err
	}
	entries, err := classify(in)
	if err != nil {
		return nil, err
	}
	return render(entries), nil
}
