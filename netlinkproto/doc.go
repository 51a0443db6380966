// SPDX-License-Identifier: BSD-3-Clause

// Package netlinkproto holds the constants of the iwarp generic netlink
// family, generated from iwarp.yaml together with the C header uapi/iwarp.h
// and the module's policy code (see gen/). Tests check that the committed
// header and these constants agree.
package netlinkproto

//go:generate go run ./gen -spec iwarp.yaml -root ..
