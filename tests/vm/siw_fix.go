// SPDX-License-Identifier: BSD-3-Clause

package vm

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// siwFix is a correction to siw's source that every variant is built
// with: Old must occur exactly once in File, and becomes New. A fix that
// no longer applies (siw changed) stops the build instead of being
// skipped.
type siwFix struct {
	Name, File, Old, New string
}

// siwFixes are the bugs of siw (6.1 and 6.12 alike) that the interop tests
// would otherwise meet by chance. tests/vm/README.md ("siw, the reference
// peer") and docs/INTEROP.md say what each one does on the wire.
var siwFixes = []siwFix{
	// siw_create_listen (siw_listen_address in newer trees) calls
	// listen() before it marks its endpoint LISTENING. A connection whose
	// handshake completes in between has its accept work see the
	// endpoint not LISTENING: the socket stays in the accept queue, its
	// MPA Request unread, and when the peer gives up and closes it, the
	// close event (on the listener's endpoint, which the child socket
	// still names) releases the listening socket. The peer's Dial times
	// out, and siw's later destroy of the listener puts the endpoint once
	// more (refcount WARNING in siw_cep_put). The fix marks the endpoint
	// LISTENING, with its cm_id, before listen(); the error path already
	// undoes both.
	{
		Name: "listen-before-listening",
		File: "siw_cm.c",
		Old: "\tlist_add_tail(&cep->listenq, (struct list_head *)id->provider_data);\n" +
			"\tcep->state = SIW_EPSTATE_LISTENING;\n",
		New: "\tlist_add_tail(&cep->listenq, (struct list_head *)id->provider_data);\n",
	},
	{
		Name: "listen-before-listening",
		File: "siw_cm.c",
		Old: "\trv = s->ops->listen(s, backlog);\n" +
			"\tif (rv) {\n" +
			"\t\tsiw_dbg(id->device, \"listen error %d\\n\", rv);\n" +
			"\t\tgoto error;\n" +
			"\t}\n" +
			"\tcep->cm_id = id;\n" +
			"\tid->add_ref(id);\n",
		New: "\tcep->cm_id = id;\n" +
			"\tid->add_ref(id);\n" +
			"\tcep->state = SIW_EPSTATE_LISTENING;\n" +
			"\n" +
			"\trv = s->ops->listen(s, backlog);\n" +
			"\tif (rv) {\n" +
			"\t\tsiw_dbg(id->device, \"listen error %d\\n\", rv);\n" +
			"\t\tgoto error;\n" +
			"\t}\n",
	},
	// siw_sqe_complete and siw_rqe_complete store the CQ's producer
	// index and then load its arm flag, with no barrier between;
	// siw_req_notify_cq stores the arm (smp_store_mb) and then loads the
	// producer index to report a missed event. Store buffering lets both
	// loads see the old values: the completion is neither notified nor
	// reported, and ib_core's poller, which re-arms after each batch,
	// sleeps on it. A kernel ULP waiting for that one completion (an
	// NVMe admin command) waits until its own timeout. The fix puts a
	// full barrier between the producer's store and its load, pairing
	// with the consumer's.
	siwCQArmFix("sqe_flags"),
	siwCQArmFix("SIW_WQE_SIGNALLED"),
}

// siwCQArmFix is the CQ arm fix for the completion whose notify test
// takes flags.
func siwCQArmFix(flags string) siwFix {
	return siwFix{
		Name: "cq-arm-barrier",
		File: "siw_qp.c",
		Old: "\t\t\tcq->cq_put++;\n" +
			"\t\t\tnotify = siw_cq_notify_now(cq, " + flags + ");\n",
		New: "\t\t\tcq->cq_put++;\n" +
			"\t\t\t/* cq_put before the arm load; pairs with siw_req_notify_cq */\n" +
			"\t\t\tsmp_mb();\n" +
			"\t\t\tnotify = siw_cq_notify_now(cq, " + flags + ");\n",
	}
}

// applySiwFix applies one fix to src.
func applySiwFix(src string, f siwFix) (string, error) {
	if n := strings.Count(src, f.Old); n != 1 {
		return "", fmt.Errorf("vm: siw: fix %s: %s has its text %d times, want once", f.Name, f.File, n)
	}
	return strings.Replace(src, f.Old, f.New, 1), nil
}

// applySiwFixes applies siwFixes to the siw sources in dir.
func applySiwFixes(dir string) error {
	for _, f := range siwFixes {
		p := filepath.Join(dir, f.File)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out, err := applySiwFix(string(b), f)
		if err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
			return err
		}
	}
	return nil
}
