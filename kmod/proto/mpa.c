// SPDX-License-Identifier: GPL-2.0-only
/*
 * MPA FPDU framing, transmit side: length, ULPDU, pad, CRC and markers.
 */
#include <linux/kernel.h>
#include <linux/string.h>
#include <linux/errno.h>

#include "mpa.h"
#include "crc.h"

/*
 * MPA-18/19: largest ULPDU that fits one EMSS-sized FPDU. With markers the
 * seed's worst-case formula; without, the largest ULPDU whose FPDU needs no
 * pad and fits EMSS. Floored at 128, capped at 64768.
 */
u32 iwp_mulpdu(u32 emss, bool markers)
{
	s64 m;

	if (markers)
		m = (s64)emss - (6 + 4 * (((s64)emss + 511) / 512) + emss % 4);
	else
		m = (s64)(emss & ~3U) - 6;
	if (m < IWP_MULPDU_MIN)
		m = IWP_MULPDU_MIN;
	if (m > IWP_MULPDU_MAX)
		m = IWP_MULPDU_MAX;
	return (u32)m;
}

/* Markers in [pos, pos + n): positions that are multiples of 512. */
static u32 iwp_markers_in(u32 pos, u32 n)
{
	u32 first = (IWP_MPA_MARKER_SPACING - (pos & 511)) & 511;

	if (first >= n)
		return 0;
	return 1 + (n - 1 - first) / IWP_MPA_MARKER_SPACING;
}

/*
 * Wire octets of an FPDU framed at stream position @pos, markers included.
 * Markers occupy stream space, so each one found pushes the end further.
 */
u32 iwp_fpdu_wire_len(u32 pos, u32 ulpdu_len, bool markers)
{
	u32 len = iwp_mpa_covered_len(ulpdu_len) + IWP_MPA_CRC_SIZE;
	u32 total = len, k = 0, nk;

	if (!markers)
		return len;
	/* Fixed point: every marker position within the FPDU's own span holds
	 * a marker (one at the position right after it belongs to the next).
	 */
	for (;;) {
		nk = iwp_markers_in(pos, total);
		if (nk == k)
			break;
		k = nk;
		total = len + 4 * k;
	}
	return total;
}

void iwp_mpa_tx_init(struct iwp_mpa_tx *tx, bool crc, bool markers, u32 pos)
{
	tx->pos = pos;
	tx->crc = crc;
	tx->markers = markers;
}

int iwp_fpdu_tx_begin(struct iwp_fpdu_tx *f, struct iwp_mpa_tx *tx,
		      u32 ulpdu_len)
{
	if (ulpdu_len > IWP_MPA_ULPDU_MAX)
		return -EMSGSIZE;
	f->tx = tx;
	f->start = tx->pos;
	f->li = 0;
	f->ulpdu_len = ulpdu_len;
	f->covered = iwp_mpa_covered_len(ulpdu_len);
	f->crc = iwp_crc32c_init();
	f->crc_fed = 0;
	f->out = NULL;
	memset(f->trailer, 0, sizeof(f->trailer));
	return 0;
}

int iwp_fpdu_tx_begin_buf(struct iwp_fpdu_tx *f, struct iwp_mpa_tx *tx,
			  u32 ulpdu_len, const u8 *out)
{
	int err = iwp_fpdu_tx_begin(f, tx, ulpdu_len);

	f->out = out;
	return err;
}

/* Octets until the next marker position, or U32_MAX without markers. */
static u32 iwp_tx_room(const struct iwp_fpdu_tx *f)
{
	if (!f->tx->markers)
		return U32_MAX;
	return IWP_MPA_MARKER_SPACING - (f->tx->pos & 511);
}

static void iwp_tx_emit(struct iwp_fpdu_tx *f, struct iwp_tx_piece *p,
			const u8 *src, u32 n, u8 what, bool covered)
{
	p->kind = IWP_TXP_BYTES;
	p->what = what;
	p->n = n;
	memcpy(p->bytes, src, n);
	if (covered && f->tx->crc && !f->out)
		f->crc = iwp_crc32c_update(f->crc, src, n);
	f->tx->pos += n;
}

/*
 * Produce the next piece of the FPDU. Returns the piece kind (IWP_TXP_DONE
 * once the FPDU is complete) or -EINVAL if the caller did not feed every
 * ULPDU octet to iwp_fpdu_tx_crc() before the CRC was due.
 */
int iwp_fpdu_tx_next(struct iwp_fpdu_tx *f, struct iwp_tx_piece *p)
{
	u32 covered = f->covered;
	u32 room, n;
	u8 buf[4];

	memset(p, 0, sizeof(*p));
	p->pos = f->tx->pos;
	if (f->li >= covered + IWP_MPA_CRC_SIZE)
		return IWP_TXP_DONE;

	/* MPA-7/MPA-11: a marker due here belongs to this FPDU; it is CRC
	 * covered up to and including the position right after the pad.
	 */
	if (f->tx->markers && iwp_mpa_marker_at(f->tx->pos)) {
		u32 ptr = (f->tx->pos - f->start) & 0xffff;

		buf[0] = 0;
		buf[1] = 0;
		buf[2] = ptr >> 8;
		buf[3] = ptr & 0xff;
		iwp_tx_emit(f, p, buf, 4, IWP_TXP_MARKER, f->li <= covered);
		return IWP_TXP_BYTES;
	}

	room = iwp_tx_room(f);
	if (f->li < IWP_MPA_LEN_SIZE) {
		buf[0] = f->ulpdu_len >> 8;
		buf[1] = f->ulpdu_len & 0xff;
		n = min_t(u32, IWP_MPA_LEN_SIZE - f->li, room);
		iwp_tx_emit(f, p, buf + f->li, n, IWP_TXP_LENGTH, true);
		f->li += n;
		return IWP_TXP_BYTES;
	}
	if (f->li < IWP_MPA_LEN_SIZE + f->ulpdu_len) {
		n = min_t(u32, IWP_MPA_LEN_SIZE + f->ulpdu_len - f->li, room);
		p->kind = IWP_TXP_ULPDU;
		p->what = IWP_TXP_DATA;
		p->off = f->li - IWP_MPA_LEN_SIZE;
		p->len = n;
		f->li += n;
		f->tx->pos += n;
		return IWP_TXP_ULPDU;
	}
	if (f->li < covered) {
		memset(buf, 0, sizeof(buf));
		n = min_t(u32, covered - f->li, room);
		iwp_tx_emit(f, p, buf, n, IWP_TXP_PAD, true);
		f->li += n;
		return IWP_TXP_BYTES;
	}
	if (f->li == covered) {
		if (f->tx->crc) {
			if (f->crc_fed != f->ulpdu_len)
				return -EINVAL;
			/* everything written so far is covered (MPA-11) */
			if (f->out)
				f->crc = iwp_crc32c_update(f->crc, f->out,
							   f->tx->pos - f->start);
			iwp_crc32c_put(iwp_crc32c_final(f->crc), f->trailer);
		}
	}
	n = min_t(u32, covered + IWP_MPA_CRC_SIZE - f->li, room);
	iwp_tx_emit(f, p, f->trailer + (f->li - covered), n, IWP_TXP_CRC,
		    false);
	f->li += n;
	return IWP_TXP_BYTES;
}

/* Fold ULPDU octets just handed out as an IWP_TXP_ULPDU piece into the CRC. */
void iwp_fpdu_tx_crc(struct iwp_fpdu_tx *f, const void *data, size_t len)
{
	if (f->tx->crc && !f->out)
		f->crc = iwp_crc32c_update(f->crc, data, len);
	f->crc_fed += len;
}

/*
 * Frame one ULPDU given as a gather list into @dst. The CRC runs once over
 * the framed octets, after the copy. Returns the number of wire octets
 * written, -ENOSPC if @cap is too small (nothing is framed and tx->pos is
 * unchanged), or -EMSGSIZE for a ULPDU above 65535 octets.
 */
int iwp_fpdu_frame_iov(struct iwp_mpa_tx *tx, const struct iwp_iov *iov,
		       unsigned int niov, u8 *dst, size_t cap)
{
	struct iwp_fpdu_tx f;
	struct iwp_tx_piece p;
	unsigned int vi = 0;
	size_t voff = 0, total = 0, out = 0;
	unsigned int i;
	int kind, ret;

	for (i = 0; i < niov; i++) {
		if (iov[i].len > IWP_MPA_ULPDU_MAX - total)
			return -EMSGSIZE;
		total += iov[i].len;
	}
	if (iwp_fpdu_wire_len(tx->pos, total, tx->markers) > cap)
		return -ENOSPC;
	ret = iwp_fpdu_tx_begin_buf(&f, tx, total, dst);
	if (ret)
		return ret;

	while ((kind = iwp_fpdu_tx_next(&f, &p)) != IWP_TXP_DONE) {
		if (kind < 0)
			return kind;
		if (kind == IWP_TXP_BYTES) {
			memcpy(dst + out, p.bytes, p.n);
			out += p.n;
			continue;
		}
		while (p.len) {
			size_t n;

			while (voff == iov[vi].len) {
				vi++;
				voff = 0;
			}
			n = min_t(size_t, p.len, iov[vi].len - voff);
			memcpy(dst + out, (const u8 *)iov[vi].base + voff, n);
			f.crc_fed += n;
			out += n;
			voff += n;
			p.len -= n;
		}
	}
	return (int)out;
}

/* Frame one contiguous ULPDU into @dst (see iwp_fpdu_frame_iov()). */
int iwp_fpdu_frame(struct iwp_mpa_tx *tx, const void *ulpdu, u32 len,
		   u8 *dst, size_t cap)
{
	struct iwp_iov v = { .base = ulpdu, .len = len };

	return iwp_fpdu_frame_iov(tx, &v, len ? 1 : 0, dst, cap);
}
