// SPDX-License-Identifier: BSD-3-Clause

package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

func newDevCmd(a *app) *cobra.Command {
	show := func(*cobra.Command, []string) error {
		return a.withClient(func(c client) error {
			d, err := c.Dev()
			if err != nil {
				return err
			}
			if a.g.JSON {
				return a.printJSON(d)
			}
			caps := strings.Join(d.Caps.Names(), ",")
			if caps == "" {
				caps = "none"
			}
			_, err = fmt.Fprintf(a.stdout, "dev iwarp version %s abi %d\n"+
				"    max_qp_wr %d max_cqe %d max_send_sge %d max_recv_sge %d max_inline %d\n"+
				"    max_mr_size %d max_mr %d max_obj %d max_ird %d max_ord %d\n"+
				"    caps %s\n",
				d.Version, d.ABIVersion, d.MaxQPWR, d.MaxCQE, d.MaxSendSGE, d.MaxRecvSGE, d.MaxInline,
				d.MaxMRSize, d.MaxMR, d.MaxObjects, d.MaxIRD, d.MaxORD, caps)
			return err
		})
	}
	long := `Show the device attributes of the loaded module, as ibv_devinfo shows an
RDMA device's: its release and the ABI of /dev/iwarp; the limits it
enforces (max_qp_wr: SQ and RQ entries; max_cqe: CQ entries; SGEs of a
send and a receive work request; max_inline: octets of inline payload;
max_mr_size: octets of a memory region; max_mr: memory regions of the
module; max_obj: QPs, CQs and PDs each of a context; max_ird, max_ord);
and caps: rfc7306 (atomics, Immediate Data), mpa-crc, mpa-markers, p2p,
sctp (DDP over SCTP).

JSON (-j) prints one object with the keys version, abi_version,
max_qp_wr, max_cqe, max_send_sge, max_recv_sge, max_inline, max_mr_size,
max_ird, max_ord, max_obj, max_mr and caps (a list of names).`
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Show the device attributes (limits, capabilities)",
		Long:  long,
		Args:  cobra.NoArgs,
		RunE:  show,
	}
	cmd.AddCommand(&cobra.Command{Use: "show", Aliases: []string{"list", "ls"}, Short: "Show the device attributes",
		Long: long, Args: cobra.NoArgs, RunE: show})
	return cmd
}
