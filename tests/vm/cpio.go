// SPDX-License-Identifier: BSD-3-Clause

package vm

import (
	"fmt"
	"io"
	"strings"
)

// cpioWriter writes a cpio archive in the "newc" format (SVR4 without
// checksums), the format the kernel unpacks as an initramfs.
type cpioWriter struct {
	w   io.Writer
	n   int64 // octets written so far, for padding
	ino uint32
	err error
}

// cpio mode bits.
const (
	cpioDir     = 0o040000
	cpioRegular = 0o100000
	cpioSymlink = 0o120000
)

const cpioTrailer = "TRAILER!!!"

func newCPIOWriter(w io.Writer) *cpioWriter { return &cpioWriter{w: w} }

func (c *cpioWriter) write(b []byte) {
	if c.err != nil {
		return
	}
	n, err := c.w.Write(b)
	c.n += int64(n)
	c.err = err
}

func (c *cpioWriter) pad() {
	if r := c.n % 4; r != 0 {
		c.write(make([]byte, 4-r))
	}
}

// entry writes one header, the name and the data. mode holds the type and
// permission bits.
func (c *cpioWriter) entry(name string, mode uint32, data []byte) error {
	name = strings.TrimPrefix(name, "/")
	if name == "" || strings.ContainsRune(name, 0) {
		return fmt.Errorf("cpio: bad name %q", name)
	}
	ino := uint32(0)
	if name != cpioTrailer {
		c.ino++
		ino = c.ino
	}
	nlink := 1
	if mode&0o170000 == cpioDir {
		nlink = 2
	}
	hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		ino, mode, 0, 0, nlink, 0, len(data), 0, 0, 0, 0, len(name)+1, 0)
	c.write([]byte(hdr))
	c.write(append([]byte(name), 0))
	c.pad()
	c.write(data)
	c.pad()
	return c.err
}

// Dir adds a directory.
func (c *cpioWriter) Dir(name string, perm uint32) error {
	return c.entry(name, cpioDir|perm&0o7777, nil)
}

// File adds a regular file.
func (c *cpioWriter) File(name string, perm uint32, data []byte) error {
	return c.entry(name, cpioRegular|perm&0o7777, data)
}

// Symlink adds a symbolic link name pointing to target.
func (c *cpioWriter) Symlink(name, target string) error {
	return c.entry(name, cpioSymlink|0o777, []byte(target))
}

// Close writes the trailer. It does not close the underlying writer.
func (c *cpioWriter) Close() error {
	c.entry(cpioTrailer, 0, nil)
	return c.err
}
