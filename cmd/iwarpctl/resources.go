// SPDX-License-Identifier: BSD-3-Clause

package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/iwarp/iwarp/ctl"
)

// newResourceCmd returns `iwarpctl OBJECT [show|list] [FILTERS]` for a
// verbs resource kind, whose only command is show; spec says which
// filters show takes (filter.go); its op and rows default to "OBJECT show"
// and OBJECT.
func newResourceCmd(a *app, object, short, long string, spec filterSpec,
	show func(client, filter) error) *cobra.Command {
	if spec.op == "" {
		spec.op = object + " show"
	}
	if spec.rows == "" {
		spec.rows = object
	}
	showCmd := &cobra.Command{
		Use:     "show " + spec.usage(),
		Aliases: []string{"list", "ls"},
		Short:   short,
		Args:    cobra.ArbitraryArgs,
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			// A keyword where one may stand; numbers are not completed.
			if len(args) > 0 && spec.bareID {
				if _, err := strconv.ParseUint(args[0], 10, 32); err == nil {
					args = args[1:]
				}
			}
			if len(args)%2 == 1 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return spec.keys, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(_ *cobra.Command, args []string) error {
			f, err := parseFilter(spec, args)
			if err != nil {
				return err
			}
			return a.withClient(func(c client) error { return show(c, f) })
		},
	}
	cmd := &cobra.Command{
		Use:   object,
		Short: short,
		Long:  long,
		Args:  cobra.NoArgs,
		RunE:  showCmd.RunE,
	}
	cmd.AddCommand(showCmd)
	return cmd
}

const resourceLong = `

Lists the objects of the verbs contexts opened in this network namespace
(each open of /dev/iwarp, and each ibv_open_device() of an iwarp RDMA
device): with CAP_NET_ADMIN all of them, otherwise only those of contexts
opened with the caller's effective uid. pid is the process that opened the
context (0 if it is not visible in this PID namespace), comm its command
name then, ctx the context's id.

pid PID keeps the objects of the contexts that process opened; a filter
that keeps nothing prints nothing and exits 0. For qp and cm a number
after show names one object, which must exist (else "qp show: no such qp
5", exit 1). Filters combine. Objects, commands and keywords may be
abbreviated (iwarpctl q s p 42 is qp show pid 42).`

func newMRCmd(a *app) *cobra.Command {
	return newResourceCmd(a, "mr", "Show the registered memory regions",
		`Show the registered memory regions.

  iwarpctl mr [show|list] [pid PID]`+resourceLong+`

The STag (the remote access key) and the address are shown only with
CAP_NET_ADMIN, even for the caller's own regions; otherwise they are "-".

JSON (-j) prints an array of objects with the keys pid, comm, ctx, stag, pd,
addr, length and access (list of "local-write", "remote-read",
"remote-write", "remote-atomic"; local read is implied); stag and addr are
null when not shown.`, filterSpec{keys: []string{"pid"}},
		func(c client, f filter) error {
			mrs, err := c.MRs()
			if err != nil {
				return err
			}
			mrs, _ = apply(f, mrs, nil, func(m ctl.MR) bool { return f.pidIs(m.PID) })
			if a.g.JSON {
				return a.printJSON(mrs)
			}
			t := newTable(a.stdout)
			for _, m := range mrs {
				stag, addr := "-", "-"
				if m.STag != nil {
					stag = fmt.Sprintf("0x%08x", *m.STag)
				}
				if m.Addr != nil {
					addr = fmt.Sprintf("0x%x", *m.Addr)
				}
				t.row(append([]string{"mr", "stag", stag}, append(ownerFields(m.Owner),
					"pd", u32s(m.PD), "addr", addr,
					"length", strconv.FormatUint(m.Length, 10), "access", m.Access.String())...)...)
			}
			return t.flush()
		})
}

func newCQCmd(a *app) *cobra.Command {
	return newResourceCmd(a, "cq", "Show the completion queues",
		`Show the completion queues.

  iwarpctl cq [show|list] [pid PID]`+resourceLong+` head is the kernel's producer
index, tail the consumer index as the owner last wrote it.

JSON (-j) prints an array of objects with the keys pid, comm, ctx, id,
entries, head and tail.`, filterSpec{keys: []string{"pid"}},
		func(c client, f filter) error {
			cqs, err := c.CQs()
			if err != nil {
				return err
			}
			cqs, _ = apply(f, cqs, nil, func(q ctl.CQ) bool { return f.pidIs(q.PID) })
			if a.g.JSON {
				return a.printJSON(cqs)
			}
			t := newTable(a.stdout)
			for _, q := range cqs {
				t.row(append([]string{"cq", "id", u32s(q.ID)}, append(ownerFields(q.Owner),
					"entries", u32s(q.Entries), "head", u32s(q.Head), "tail", u32s(q.Tail))...)...)
			}
			return t.flush()
		})
}

func newQPCmd(a *app) *cobra.Command {
	return newResourceCmd(a, "qp", "Show the queue pairs",
		`Show the queue pairs.

  iwarpctl qp [show|list] [ID] [pid PID]`+resourceLong+`

fpdus is the number of FPDUs sent/received; iwarpctl stats shows all the
counters.

JSON (-j) prints an array of objects with the keys pid, comm, ctx, id, pd,
send_cq, recv_cq, sq_entries, rq_entries, state ("idle", "rts",
"closing", "terminate", "error") and the counters of iwarpctl stats:
tx_bytes, rx_bytes, tx_fpdus, rx_fpdus, crc_errors, term_sent and
term_rcvd.`, filterSpec{bareID: true, keys: []string{"pid"}},
		func(c client, f filter) error {
			qps, err := c.QPs()
			if err != nil {
				return err
			}
			if qps, err = apply(f, qps, qpID, func(q ctl.QP) bool { return f.pidIs(q.PID) }); err != nil {
				return err
			}
			if a.g.JSON {
				return a.printJSON(qps)
			}
			t := newTable(a.stdout)
			for _, q := range qps {
				t.row(append([]string{"qp", "id", u32s(q.ID)}, append(ownerFields(q.Owner),
					"pd", u32s(q.PD), "send-cq", u32s(q.SendCQ), "recv-cq", u32s(q.RecvCQ),
					"sq-entries", u32s(q.SQEntries), "rq-entries", u32s(q.RQEntries),
					"state", q.State.String(), "fpdus", u64s(q.TxFPDUs)+"/"+u64s(q.RxFPDUs))...)...)
			}
			return t.flush()
		})
}

func qpID(q ctl.QP) uint32 { return q.ID }

func ownerFields(o ctl.Owner) []string {
	return []string{"pid", u32s(o.PID), "comm", o.Comm, "ctx", u32s(o.Ctx)}
}

func u32s(v uint32) string { return strconv.FormatUint(uint64(v), 10) }
