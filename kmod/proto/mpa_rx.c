// SPDX-License-Identifier: GPL-2.0-only
/*
 * MPA FPDU receiver: markers, length, payload pieces, pad and CRC.
 */
#include <linux/kernel.h>
#include <linux/string.h>
#include <linux/errno.h>

#include "mpa_rx.h"
#include "mpa.h"
#include "crc.h"
#include "ddp.h"

static void iwp_rx_reset_fpdu(struct iwp_mpa_rx *rx)
{
	rx->crc = iwp_crc32c_init();
	rx->pend_n = 0;
	rx->li = 0;
	rx->covered = 0;
	rx->ulpdu_len = 0;
	rx->hdr_want = 0;
	rx->hdr_fill = 0;
	rx->in_fpdu = 0;
	rx->hdr_sent = 0;
	rx->short_ulpdu = 0;
}

void iwp_mpa_rx_init(struct iwp_mpa_rx *rx, u32 flags, u32 pos)
{
	memset(rx, 0, sizeof(*rx));
	rx->flags = flags;
	rx->pos = pos;
	iwp_rx_reset_fpdu(rx);
}

static int iwp_rx_fail(struct iwp_mpa_rx *rx, struct iwp_rx_ev *ev,
		       u8 layer, u8 etype, u8 ecode)
{
	rx->failed = 1;
	iwp_term_set(&rx->err, layer, etype, ecode);
	ev->term = rx->err;
	return IWP_RX_ERROR;
}

/*
 * CRC-covered input octets are not folded one field at a time: they are
 * gathered into runs of the caller's input (rx->pend) and folded, in order,
 * when what they cover ends (at the trailer) and when the input is used up,
 * unless the caller keeps its
 * input (IWP_RX_KEEP_INPUT) and folds with iwp_mpa_rx_fold(). An FPDU that
 * arrives whole is folded after its payload was placed.
 */
void iwp_mpa_rx_fold(struct iwp_mpa_rx *rx)
{
	u32 i;

	for (i = 0; i < rx->pend_n; i++)
		rx->crc = iwp_crc32c_update(rx->crc, rx->pend[i].p, rx->pend[i].n);
	rx->pend_n = 0;
}

static void iwp_rx_cover(struct iwp_mpa_rx *rx, const u8 *p, u32 n)
{
	struct iwp_rx_run *r;

	if (!(rx->flags & IWP_RX_CRC))
		return;
	if (rx->pend_n) {
		r = &rx->pend[rx->pend_n - 1];
		if (r->p + r->n == p) {
			r->n += n;
			return;
		}
	}
	if (rx->pend_n == IWP_RX_RUNS)
		iwp_mpa_rx_fold(rx);
	rx->pend[rx->pend_n].p = p;
	rx->pend[rx->pend_n].n = n;
	rx->pend_n++;
}

/* A marker is CRC covered up to the position right after the pad (MPA-11). */
static bool iwp_rx_marker_covered(const struct iwp_mpa_rx *rx)
{
	return !rx->covered || rx->li <= rx->covered;
}

/* Octets until the next marker position, or U32_MAX without markers. */
static u32 iwp_rx_room(const struct iwp_mpa_rx *rx)
{
	if (!(rx->flags & IWP_RX_MARKERS))
		return U32_MAX;
	return IWP_MPA_MARKER_SPACING - (rx->pos & 511);
}

/* The ULPDU length is known: decide how many header octets to gather. */
static void iwp_rx_got_length(struct iwp_mpa_rx *rx)
{
	rx->ulpdu_len = (u32)rx->len_buf[0] << 8 | rx->len_buf[1];
	rx->covered = iwp_mpa_covered_len(rx->ulpdu_len);
	if (rx->flags & IWP_RX_DDP) {
		/* first the two control octets, then the full header */
		rx->hdr_want = min_t(u32, rx->ulpdu_len, IWP_DDP_CTRL_SIZE);
		if (rx->ulpdu_len < IWP_DDP_CTRL_SIZE)
			rx->short_ulpdu = 1;
	}
}

/* IWP_RX_DDP: the control octets are in; size the header. */
static void iwp_rx_got_ctrl(struct iwp_mpa_rx *rx)
{
	u32 need, want;

	want = iwp_ddp_hdr_want(rx->hdr[0], rx->hdr[1], &need);
	if (rx->ulpdu_len < need)
		rx->short_ulpdu = 1;
	rx->hdr_want = min_t(u32, rx->ulpdu_len, min_t(u32, want, IWP_RX_HDR_MAX));
}

/* A complete marker sits in rx->mk; rx->pos is just past it. */
static bool iwp_rx_marker_ok(struct iwp_mpa_rx *rx)
{
	u32 mpos = rx->pos - IWP_MPA_MARKER_SIZE;
	u32 got = (u32)rx->mk[2] << 8 | rx->mk[3];
	u32 want;

	if (!rx->in_fpdu) {
		/* MPA-7: a marker between FPDUs starts the next one */
		rx->in_fpdu = 1;
		rx->start = mpos;
	}
	want = (mpos - rx->start) & 0xffff;
	/* MPA-8: the low 2 bits are treated as zero */
	return !((got ^ want) & ~(u32)IWP_MPA_FPDUPTR_IGNORE);
}

static int iwp_rx_finish(struct iwp_mpa_rx *rx, struct iwp_rx_ev *ev)
{
	if (rx->flags & IWP_RX_CRC) {
		u32 want = iwp_crc32c_final(rx->crc);

		if (iwp_crc32c_get(rx->trailer) != want)
			return iwp_rx_fail(rx, ev, IWP_LAYER_LLP,
					   IWP_LLP_ET_MPA, IWP_LLP_EC_CRC);
	}
	if (rx->short_ulpdu) {
		struct iwp_term t;

		/* The whole ULPDU is in rx->hdr: let the validator name it. */
		if (iwp_ddp_check(rx->hdr, rx->ulpdu_len, &t) == 0)
			iwp_term_set(&t, IWP_LAYER_DDP, IWP_DDP_ET_CATASTROPHIC,
				     IWP_DDP_EC_CATASTROPHIC);
		return iwp_rx_fail(rx, ev, t.layer, t.etype, t.ecode);
	}
	ev->ulpdu_len = rx->ulpdu_len;
	rx->fpdus++;
	iwp_rx_reset_fpdu(rx);
	return IWP_RX_END;
}

int iwp_mpa_rx_next(struct iwp_mpa_rx *rx, const u8 *buf, size_t len,
		    struct iwp_rx_ev *ev)
{
	size_t used = 0;
	u32 n, room;
	int ret;

	memset(ev, 0, sizeof(*ev));
	if (rx->failed) {
		ev->term = rx->err;
		return IWP_RX_ERROR;
	}

	for (;;) {
		ev->used = used;
		ev->fpdu_start = rx->start;
		ev->ulpdu_len = rx->ulpdu_len;

		/* ULPDU header gathered (or none wanted): report it */
		if (rx->covered && !rx->hdr_sent &&
		    rx->hdr_fill == rx->hdr_want) {
			rx->hdr_sent = 1;
			ev->hdr = rx->hdr;
			ev->hdr_len = rx->hdr_fill;
			return IWP_RX_HDR;
		}
		if (used == len) {
			/* the input is the caller's again */
			if (!(rx->flags & IWP_RX_KEEP_INPUT))
				iwp_mpa_rx_fold(rx);
			return IWP_RX_NEED;
		}

		/* marker (MPA-5..9) */
		if ((rx->flags & IWP_RX_MARKERS) &&
		    (rx->mk_fill || iwp_mpa_marker_at(rx->pos))) {
			n = min_t(size_t, IWP_MPA_MARKER_SIZE - rx->mk_fill,
				  len - used);
			memcpy(rx->mk + rx->mk_fill, buf + used, n);
			if (iwp_rx_marker_covered(rx))
				iwp_rx_cover(rx, buf + used, n);
			rx->mk_fill += n;
			rx->pos += n;
			used += n;
			if (rx->mk_fill < IWP_MPA_MARKER_SIZE)
				continue;
			rx->mk_fill = 0;
			if (!iwp_rx_marker_ok(rx)) {
				ev->used = used;
				return iwp_rx_fail(rx, ev, IWP_LAYER_LLP,
						   IWP_LLP_ET_MPA,
						   IWP_LLP_EC_MARKER);
			}
			continue;
		}

		if (!rx->in_fpdu) {
			rx->in_fpdu = 1;
			rx->start = rx->pos;
		}
		room = iwp_rx_room(rx);
		n = (u32)min_t(size_t, len - used, room);

		if (rx->li < IWP_MPA_LEN_SIZE) {
			/* ULPDU_Length (MPA-1, MPA-2) */
			n = min_t(u32, n, IWP_MPA_LEN_SIZE - rx->li);
			memcpy(rx->len_buf + rx->li, buf + used, n);
			iwp_rx_cover(rx, buf + used, n);
			rx->li += n;
			if (rx->li == IWP_MPA_LEN_SIZE)
				iwp_rx_got_length(rx);
		} else if (rx->li < IWP_MPA_LEN_SIZE + rx->ulpdu_len) {
			u32 off = rx->li - IWP_MPA_LEN_SIZE;

			n = min_t(u32, n, rx->ulpdu_len - off);
			if (!rx->hdr_sent) {
				/* gather header octets */
				n = min_t(u32, n, rx->hdr_want - rx->hdr_fill);
				memcpy(rx->hdr + rx->hdr_fill, buf + used, n);
				iwp_rx_cover(rx, buf + used, n);
				rx->hdr_fill += n;
				rx->li += n;
				rx->pos += n;
				used += n;
				if ((rx->flags & IWP_RX_DDP) &&
				    rx->hdr_fill == IWP_DDP_CTRL_SIZE &&
				    rx->hdr_want == IWP_DDP_CTRL_SIZE)
					iwp_rx_got_ctrl(rx);
				continue;
			}
			/*
			 * Payload piece, handed out without copying; the CRC
			 * reads it after the caller placed it.
			 */
			iwp_rx_cover(rx, buf + used, n);
			ev->data = buf + used;
			ev->data_len = n;
			ev->data_off = off;
			rx->li += n;
			rx->pos += n;
			used += n;
			ev->used = used;
			return IWP_RX_DATA;
		} else if (rx->li < rx->covered) {
			/* pad: ignored except for the CRC (MPA-3) */
			n = min_t(u32, n, rx->covered - rx->li);
			iwp_rx_cover(rx, buf + used, n);
			rx->li += n;
		} else {
			/* CRC trailer (MPA-12): what it covers ends here */
			u32 t = rx->li - rx->covered;

			iwp_mpa_rx_fold(rx);
			n = min_t(u32, n, IWP_MPA_CRC_SIZE - t);
			memcpy(rx->trailer + t, buf + used, n);
			rx->li += n;
			rx->pos += n;
			used += n;
			if (rx->li == rx->covered + IWP_MPA_CRC_SIZE) {
				ev->used = used;
				ret = iwp_rx_finish(rx, ev);
				ev->used = used;
				return ret;
			}
			continue;
		}
		rx->pos += n;
		used += n;
	}
}
