#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Write testdata/vectors/*.vec (format: testdata/vectors/FORMAT.md).

An independent model of MPA framing, DDP/RDMAP headers, MPA frames and the
RFC 7306 atomics. Every value that SPEC-NOTES.md section 4 prints is asserted
here, so a change that breaks a published vector fails before any file is
written. Run from the repository root: python3 tests/proto/gen/genvec.py
"""
import os
import struct
import sys

OUT = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'testdata', 'vectors')

# ---------------------------------------------------------------- CRC32c
_T = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    _T.append(c)


def crc32c(data, crc=0):
    c = crc ^ 0xFFFFFFFF
    for b in data:
        c = _T[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def crc_wire(v):
    return struct.pack('<I', v)


# ---------------------------------------------------------------- MPA framing
def frame(ulpdu, pos, crc=True, markers=False):
    """Frame one ULPDU at stream position pos; returns (wire, new_pos)."""
    start = pos
    ulen = len(ulpdu)
    pad = (4 - ((ulen + 2) % 4)) % 4
    covered = struct.pack('>H', ulen) + bytes(ulpdu) + bytes(pad)
    out = bytearray()
    crcbuf = bytearray()
    L = len(covered)
    body = covered + b'\0\0\0\0'   # placeholder CRC
    i = 0
    crc_at = None
    while i < L + 4:
        if markers and pos % 512 == 0:
            mk = struct.pack('>HH', 0, (pos - start) & 0xFFFF)
            out += mk
            if i <= L:
                crcbuf += mk
            pos += 4
            continue
        if i == L:
            crc_at = len(out)
            v = crc32c(bytes(crcbuf)) if crc else 0
            body = covered + crc_wire(v)
        b = body[i]
        out.append(b)
        if i < L:
            crcbuf.append(b)
        i += 1
        pos += 1
    return bytes(out), pos


def stream(ulpdus, offset=0, crc=True, markers=False):
    pos = offset
    out = b''
    for u in ulpdus:
        w, pos = frame(u, pos, crc, markers)
        out += w
    return out


def mulpdu(emss, markers):
    if markers:
        v = emss - (6 + 4 * ((emss + 511) // 512) + emss % 4)
    else:
        v = (emss & ~3) - 6
    return min(max(v, 128), 64768)


# ---------------------------------------------------------------- DDP/RDMAP
def ddp_ctrl(tagged, last, dv=1):
    return (0x80 if tagged else 0) | (0x40 if last else 0) | (dv & 3)


def rdmap_ctrl(op, rv=1):
    return ((rv & 3) << 6) | (op & 0xF)


def tagged_hdr(op, stag, to, last=1, dv=1, rv=1):
    return struct.pack('>BBIQ', ddp_ctrl(1, last, dv), rdmap_ctrl(op, rv), stag, to)


def untagged_hdr(op, qn, msn, mo, inv=0, last=1, dv=1, rv=1):
    return struct.pack('>BBIIII', ddp_ctrl(0, last, dv), rdmap_ctrl(op, rv), inv, qn, msn, mo)


def rreq_hdr(sink_stag, sink_to, size, src_stag, src_to):
    return struct.pack('>IQIIQ', sink_stag, sink_to, size, src_stag, src_to)


def term_hdr(layer, etype, ecode, m=0, d=0, r=0, seglen=None, tddp=b'', trdma=b''):
    out = struct.pack('>BBH', (layer << 4) | etype, ecode,
                      (0x8000 if m else 0) | (0x4000 if d else 0) | (0x2000 if r else 0))
    if d or m:
        out += struct.pack('>H', seglen or 0)
    return out + tddp + trdma


def atomic_req(aop, reqid, stag, to, add_swap, add_swap_mask, cmp, cmp_mask):
    return struct.pack('>IIIQQQQQ', aop & 0xF, reqid, stag, to, add_swap, add_swap_mask, cmp, cmp_mask)


def atomic_resp(reqid, orig):
    return struct.pack('>IQ', reqid, orig)


M64 = (1 << 64) - 1


def fetchadd(orig, add, mask):
    res = 0
    carry = 0
    for bit in range(64):
        loc = 1 << bit
        s = carry + (1 if orig & loc else 0) + (1 if add & loc else 0)
        carry = 1 if s & 2 else 0
        if s & 1:
            res |= loc
        carry = 1 if (carry and not (mask & loc)) else 0
    return res


def cmpswap(orig, cmp, cmp_mask, swap, swap_mask):
    if not ((cmp ^ orig) & cmp_mask):
        return (orig & ~swap_mask & M64) | (swap & swap_mask)
    return orig


# ---------------------------------------------------------------- MPA frames
KEY_REQ = b'MPA ID Req Frame'
KEY_REP = b'MPA ID Rep Frame'


def mpa_frame(rep, m=0, c=0, r=0, res=0, rev=1, enhanced=0, ird=0, ord_=0, p2p=0,
              rtr_send=0, rtr_write=0, rtr_read=0, pdata=b''):
    flags = (0x80 if m else 0) | (0x40 if c else 0) | (0x20 if r else 0) | \
            (0x10 if enhanced else 0) | res
    pd = b''
    if enhanced:
        pd = struct.pack('>HH', (ird & 0x3FFF) | (0x8000 if p2p else 0) | (0x4000 if rtr_send else 0),
                         (ord_ & 0x3FFF) | (0x8000 if rtr_write else 0) | (0x4000 if rtr_read else 0))
    pd += pdata
    return (KEY_REP if rep else KEY_REQ) + struct.pack('>BBH', flags, rev, len(pd)) + pd


# ---------------------------------------------------------------- output
def hx(b, per=16):
    b = bytes(b)
    if not b:
        return ['-']
    lines = []
    for i in range(0, len(b), per):
        lines.append(' '.join('%02x' % x for x in b[i:i + per]))
    return lines


def num(v):
    return '0x%x' % v if v > 9 else str(v)


ALL = []


def hx_rle(b, per=16):
    """hx() with runs of 8 or more equal octets written as HHxN."""
    b = bytes(b)
    if not b:
        return ['-']
    toks = []
    i = 0
    while i < len(b):
        j = i
        while j < len(b) and b[j] == b[i]:
            j += 1
        if j - i >= 8:
            toks.append('%02xx%d' % (b[i], j - i))
        else:
            toks.extend('%02x' % x for x in b[i:j])
        i = j
    return [' '.join(toks[k:k + per]) for k in range(0, len(toks), per)]


class VecFile:
    def __init__(self, name, title, rle=False):
        self.name = name
        self.lines = ['# SPDX-License-Identifier: GPL-2.0-only',
                      '# %s' % title,
                      '# Format: FORMAT.md in this directory. Regenerate with',
                      '#   python3 tests/proto/gen/genvec.py', '']
        self.names = set()
        self.hx = hx_rle if rle else hx

    def add(self, name, ids, kind, fields, hexbytes=None, comment=None):
        assert name not in self.names, name
        self.names.add(name)
        ALL.append((self.name, name, kind, fields, bytes(hexbytes) if hexbytes is not None else None))
        if comment:
            for c in comment.split('\n'):
                self.lines.append('# ' + c)
        self.lines.append('vector %s' % name)
        self.lines.append('ids %s' % ' '.join(ids))
        self.lines.append('kind %s' % kind)
        for k, v in fields:
            if isinstance(v, (bytes, bytearray)):
                # one line per key: only hex and data may repeat
                self.lines.append('%s %s' % (k, self.hx(v, 1 << 20)[0]))
            else:
                self.lines.append('%s %s' % (k, v if isinstance(v, str) else num(v)))
        if hexbytes is not None:
            for ln in self.hx(hexbytes):
                if ln == '-' and self.hx is hx:
                    continue
                self.lines.append('hex %s' % ln)
        self.lines.append('end')
        self.lines.append('')

    def write(self):
        with open(os.path.join(OUT, self.name), 'w') as f:
            f.write('\n'.join(self.lines))


def H(s):
    s = s.replace('|', ' ').split()
    out = bytearray()
    for t in s:
        if 'x' in t and not t.startswith('0x'):
            b, n = t.split('x')
            out += bytes([int(b, 16)]) * int(n)
        else:
            out += bytes.fromhex(t)
    return bytes(out)


# ================================================================ vectors
def gen_crc():
    f = VecFile('crc.vec', 'CRC32c (Castagnoli) vectors: SPEC-NOTES 4.1 and RFC 3720 B.4')
    iscsi = H('01 c0 00 00 00 00 00 00 00 00 00 00 00 00 00 00 14 00 00 00 00 00 04 00 '
              '00 00 00 14 00 00 00 18 28 00 00 00 00 00 00 00 02 00 00 00 00 00 00 00')
    cases = [
        ('check_123456789', b'123456789', 0xE3069283),
        ('rfc3720_zeros32', bytes(32), 0x8A9136AA),
        ('rfc3720_ones32', b'\xff' * 32, 0x62A8AB43),
        ('rfc3720_incr32', bytes(range(32)), 0x46DD794E),
        ('rfc3720_decr32', bytes(range(31, -1, -1)), 0x113FDB5C),
        ('rfc3720_iscsi_read10', iscsi, 0xD9963A56),
        ('empty', b'', 0),
        ('one_byte_00', b'\0', None),
        ('seed_fig5_covered', H('00 00 00 00 00 2a 40 03 00x8 00 00 00 01 00x4 00x24'), 0x84B3864C),
        ('seed_fig6_covered', H('00 2a 40 03 00x4 00x4 00 00 00 02 00x4 00 00 00 14 00x24'), 0x03D19CA1),
    ]
    for name, data, val in cases:
        v = crc32c(data)
        if val is not None:
            assert v == val, (name, hex(v))
        ids = ['MPA-11', 'MPA-13']
        f.add(name, ids, 'crc', [('data', data), ('value', '0x%08x' % v)], crc_wire(v))
    f.write()


def send_ulpdu(msn, payload, qn=0, mo=0, last=1, dv=1, rv=1, op=3, inv=0):
    return untagged_hdr(op, qn, msn, mo, inv, last, dv, rv) + payload


def gen_fpdu():
    f = VecFile('fpdu.vec', 'MPA FPDUs: seed 001 Fig. 5/6, SPEC-NOTES 4.2-4.4, CRC on/off')
    # Fig. 5 (version 0 headers 40 03), first FPDU, starts with a marker.
    u5 = send_ulpdu(1, bytes(24), dv=0, rv=0)
    assert u5[:2] == b'\x40\x03'
    w = stream([u5], 0, True, True)
    assert w[-4:] == H('4c 86 b3 84'), w[-4:].hex()
    f.add('seed_fig5_v0', ['MPA-1', 'MPA-3', 'MPA-5', 'MPA-7', 'MPA-11', 'MPA-13', 'MPA-26', 'DDP-42'],
          'fpdu', [('crc', 1), ('markers', 1), ('offset', 0), ('ulpdu', u5)], w,
          'seed 001 Fig. 5 exactly (DDP/RDMAP version 0 control octets 40 03)')
    u6 = send_ulpdu(2, bytes(24), dv=0, rv=0)
    w = stream([u6], 0x1EC, True, True)
    assert w[-4:] == H('a1 9c d1 03') and w[0x14:0x18] == H('00 00 00 14'), w.hex()
    f.add('seed_fig6_v0', ['MPA-5', 'MPA-7', 'MPA-8', 'MPA-9', 'MPA-11', 'MPA-13'],
          'fpdu', [('crc', 1), ('markers', 1), ('offset', 0x1EC), ('ulpdu', u6)], w,
          'seed 001 Fig. 6 exactly: second FPDU at stream offset 0x1EC, marker FPDUPTR 0x14')
    # Both figures as one stream: the first FPDU is 492 octets on the wire.
    first = send_ulpdu(1, bytes(492 - 4 - 2 - 18 - 4), dv=0, rv=0)
    w = stream([first, u6], 0, True, True)
    assert len(stream([first], 0, True, True)) == 0x1EC
    f.add('seed_fig5_fig6_stream_v0', ['MPA-7', 'MPA-9', 'MPA-14', 'MPA-22', 'MPA-23'],
          'fpdu', [('crc', 1), ('markers', 1), ('offset', 0), ('ulpdu', first), ('ulpdu', u6)], w,
          'a 492-octet first FPDU (leading marker) followed by Fig. 6')
    u5v1 = send_ulpdu(1, bytes(24))
    w = stream([u5v1], 0, True, True)
    assert w[-4:] == H('52 23 99 83'), w[-4:].hex()
    f.add('seed_fig5_v1', ['MPA-1', 'MPA-7', 'MPA-11', 'MPA-13', 'DDP-4', 'RDMAP-1'],
          'fpdu', [('crc', 1), ('markers', 1), ('offset', 0), ('ulpdu', u5v1)], w,
          'Fig. 5 with DV = RV = 1 (41 43)')
    u6v1 = send_ulpdu(2, bytes(24))
    w = stream([u6v1], 0x1EC, True, True)
    assert w[-4:] == H('84 92 58 98'), w[-4:].hex()
    f.add('seed_fig6_v1', ['MPA-7', 'MPA-8', 'MPA-11', 'MPA-13', 'DDP-4'],
          'fpdu', [('crc', 1), ('markers', 1), ('offset', 0x1EC), ('ulpdu', u6v1)], w,
          'Fig. 6 with DV = RV = 1 (41 43)')
    w = stream([u5v1], 0, True, False)
    assert w[-4:] == H('b7 24 3e c3'), w[-4:].hex()
    f.add('seed_fig5_v1_nomarkers', ['MPA-1', 'MPA-3', 'MPA-11', 'MPA-13'],
          'fpdu', [('crc', 1), ('markers', 0), ('ulpdu', u5v1)], w,
          'Fig. 5 v1 without the leading marker (what siw sends)')
    # 4.3
    uw = tagged_hdr(0, 0x12345678, 0x1000) + bytes(range(1, 9))
    w = stream([uw])
    assert w == H('00 16 c1 40 12 34 56 78 00 00 00 00 00 00 10 00 01 02 03 04 05 06 07 08 50 4c 11 3b')
    f.add('write8_crc', ['MPA-1', 'MPA-2', 'MPA-3', 'MPA-11', 'MPA-13', 'DDP-5', 'RDMAP-2'],
          'fpdu', [('crc', 1), ('markers', 0), ('ulpdu', uw)], w, 'SPEC-NOTES 4.3')
    w = stream([uw], crc=False)
    assert w[-4:] == bytes(4)
    f.add('write8_nocrc', ['MPA-36', 'MPA-1'],
          'fpdu', [('crc', 0), ('markers', 0), ('ulpdu', uw)], w, 'SPEC-NOTES 4.3 with CRC off: zero CRC field')
    # 4.4
    us = send_ulpdu(1, b'hello')
    w = stream([us])
    assert w == H('00 17 41 43 00 00 00 00 00 00 00 00 00 00 00 01 00 00 00 00 68 65 6c 6c 6f 00 00 00 b9 90 b1 0c')
    f.add('send_hello_pad3', ['MPA-3', 'MPA-11', 'DDP-9', 'RDMAP-2'],
          'fpdu', [('crc', 1), ('markers', 0), ('ulpdu', us)], w, 'SPEC-NOTES 4.4: pad 3')
    ur = untagged_hdr(1, 1, 1, 0) + rreq_hdr(0xAABBCC01, 0x2000, 4096, 0x12345678, 0x1000)
    w = stream([ur])
    assert w[-4:] == H('4e 2a 3f 56') and len(w) == 52
    f.add('read_request', ['MPA-1', 'RDMAP-4', 'DDP-9'],
          'fpdu', [('crc', 1), ('markers', 0), ('ulpdu', ur)], w, 'SPEC-NOTES 4.4')
    ut = untagged_hdr(7, 2, 1, 0) + term_hdr(2, 0, 2)
    w = stream([ut])
    assert w == H('00 16 41 47 00x4 00 00 00 02 00 00 00 01 00x4 20 02 00 00 7f e4 25 85')
    f.add('terminate_llp_crc', ['RDMAP-9', 'MPA-52', 'MPA-11'],
          'fpdu', [('crc', 1), ('markers', 0), ('ulpdu', ut)], w, 'SPEC-NOTES 4.4')
    uts = untagged_hdr(7, 2, 1, 0) + H('02 02 00 00')
    w = stream([uts])
    assert w[-4:] == H('75 d3 67 ed')
    f.add('terminate_siw_layout', ['RDMAP-9'],
          'fpdu', [('crc', 1), ('markers', 0), ('ulpdu', uts)], w,
          'SPEC-NOTES 4.4: control word as siw on x86 writes it')
    ua = untagged_hdr(10, 1, 1, 0) + atomic_req(0, 1, 0x12345678, 0x1000, 1, 0, 0, M64)
    w = stream([ua])
    assert len(w) == 76 and w[-4:] == H('2e 3d b0 0c'), w.hex()
    f.add('atomic_fetchadd_request', ['RDMAP-EXT-6', 'RDMAP-EXT-16', 'RDMAP-EXT-34'],
          'fpdu', [('crc', 1), ('markers', 0), ('ulpdu', ua)], w, 'SPEC-NOTES 4.4')
    uar = untagged_hdr(11, 3, 1, 0) + atomic_resp(1, 0xFFFFFFFF)
    w = stream([uar])
    assert len(w) == 36 and w[-4:] == H('c1 12 66 34')
    f.add('atomic_response', ['RDMAP-EXT-9', 'RDMAP-EXT-19', 'RDMAP-EXT-34'],
          'fpdu', [('crc', 1), ('markers', 0), ('ulpdu', uar)], w, 'SPEC-NOTES 4.4')
    ui = untagged_hdr(8, 0, 1, 0) + bytes(range(1, 9))
    w = stream([ui])
    assert len(w) == 32 and w[-4:] == H('06 c2 28 05')
    f.add('immediate_data', ['RDMAP-EXT-2', 'RDMAP-EXT-25', 'RDMAP-EXT-34'],
          'fpdu', [('crc', 1), ('markers', 0), ('ulpdu', ui)], w, 'SPEC-NOTES 4.4')
    # Others
    w = stream([b''])
    f.add('empty_ulpdu', ['MPA-1', 'MPA-3'], 'fpdu', [('crc', 1), ('markers', 0), ('ulpdu', '-')], w,
          'ULPDU_Length 0: length, two pad octets, CRC')
    for n in (1, 2, 3, 4):
        u = send_ulpdu(1, bytes(range(n)))
        f.add('send_pad_len%d' % n, ['MPA-3'], 'fpdu', [('crc', 1), ('markers', 0), ('ulpdu', u)], stream([u]))
    ulist = [send_ulpdu(i + 1, bytes([i]) * (i * 7)) for i in range(5)]
    f.add('multi_fpdu_nomarkers', ['MPA-14', 'MPA-22', 'MPA-23'],
          'fpdu', [('crc', 1), ('markers', 0)] + [('ulpdu', u) for u in ulist], stream(ulist))
    f.add('multi_fpdu_nocrc', ['MPA-36', 'MPA-14'],
          'fpdu', [('crc', 0), ('markers', 0)] + [('ulpdu', u) for u in ulist], stream(ulist, crc=False))
    big = tagged_hdr(0, 0xCAFE0001, 0x10000) + bytes((i * 7) & 0xFF for i in range(4000))
    f.add('write_4000_nomarkers', ['MPA-1', 'MPA-22'], 'fpdu', [('crc', 1), ('markers', 0), ('ulpdu', big)],
          stream([big]))
    f.write()


def gen_markers():
    f = VecFile('fpdu_markers.vec',
                'MPA markers at every position class (MPA-5..MPA-9, MPA-11). Offsets that are\n'
                '# not multiples of 4 exist only to put a marker into the pad, the CRC or the\n'
                '# length field; FPDUPTR is then the exact distance (see FORMAT.md notes).')

    def add(name, ids, offset, ulist, crc=1, comment=None, expect=None):
        w = stream(ulist, offset, bool(crc), True)
        if expect:
            expect(w)
        f.add(name, ids, 'fpdu', [('crc', crc), ('markers', 1), ('offset', offset)] +
              [('ulpdu', u if u else '-') for u in ulist], w, comment)

    u24 = send_ulpdu(1, bytes(range(24)))            # ULPDU 42, FPDU 48
    add('marker_first_octet', ['MPA-7', 'MPA-11', 'MPA-26', 'MPA-40'], 0, [u24],
        comment='first FPDU of the stream starts with a marker, FPDUPTR 0')
    add('marker_between_fpdus', ['MPA-7', 'MPA-11'], 512 - 48, [u24, send_ulpdu(2, bytes(24))],
        comment='second FPDU starts exactly at 512: marker FPDUPTR 0 belongs to it',
        expect=lambda w: w[48:52] == bytes(4) or sys.exit('between'))
    add('marker_in_ddp_header', ['MPA-7', 'MPA-8', 'DDP-42'], 512 - 8, [u24],
        comment='marker after the length and 4 octets of the DDP header')
    add('marker_in_payload', ['MPA-7', 'MPA-8'], 512 - 32, [u24])
    add('marker_after_pad', ['MPA-7', 'MPA-11'], 512 - 44, [send_ulpdu(1, b'hello!')],
        comment='marker right after the pad, before the CRC: covered by this FPDU\'s CRC')
    add('marker_before_crc_no_pad', ['MPA-7', 'MPA-11'], 512 - 44, [u24])
    add('marker_in_pad', ['MPA-7', 'MPA-11'], 512 - 22, [send_ulpdu(1, b'hello')],
        comment='unaligned offset: marker between the first and second pad octet')
    add('marker_in_crc', ['MPA-7', 'MPA-11'], 512 - 46, [u24],
        comment='unaligned offset: marker between CRC octets 2 and 3 (not CRC-covered)')
    add('marker_in_crc_1', ['MPA-7'], 512 - 45, [u24])
    add('marker_in_crc_3', ['MPA-7'], 512 - 47, [u24])
    add('marker_in_length_field', ['MPA-7', 'MPA-8'], 511, [u24],
        comment='unaligned offset: marker between the two ULPDU_Length octets (FPDUPTR 1)')
    add('marker_after_length', ['MPA-7'], 510, [u24])
    add('offset_508', ['MPA-9'], 508, [u24])
    add('offset_512', ['MPA-9', 'MPA-7'], 512, [u24])
    add('offset_516', ['MPA-9'], 516, [u24])
    add('offset_wrap', ['MPA-9'], 0xFFFFFFF0, [u24, u24],
        comment='stream position wraps modulo 2^32 inside the first FPDU')
    big = tagged_hdr(0, 0x01020304, 0) + bytes((i * 13) & 0xFF for i in range(1500))
    add('three_markers_in_one_fpdu', ['MPA-8', 'MPA-7', 'MPA-18'], 0, [big],
        comment='one FPDU spanning markers at 0, 512, 1024 and 1536: all point to its start')
    add('long_fpdu_mid_stream', ['MPA-8'], 100, [big])
    ulist = [send_ulpdu(i + 1, bytes((i * 5 + j) & 0xFF for j in range(i * 37 % 300))) for i in range(12)]
    add('multi_fpdu_stream', ['MPA-7', 'MPA-8', 'MPA-14', 'MPA-23'], 0, ulist,
        comment='12 FPDUs of mixed sizes from the start of FPDU mode')
    add('multi_fpdu_stream_nocrc', ['MPA-7', 'MPA-36'], 0, ulist, crc=0)
    small = [send_ulpdu(i + 1, b'') for i in range(40)]   # ULPDU 18, FPDU 24
    add('many_small_fpdus', ['MPA-7', 'MPA-14'], 0, small,
        comment='40 FPDUs of 24 octets (+ markers): markers between FPDUs and inside them')
    add('empty_ulpdu_with_marker', ['MPA-7'], 512 - 4, [b'', b''])
    f.write()


def gen_fpdu_error():
    f = VecFile('fpdu_error.vec', 'MPA streams the receiver must reject (MPA-12, MPA-28, MPA-29, MPA-52)')
    u24 = send_ulpdu(1, bytes(range(24)))
    u2 = send_ulpdu(2, b'second')

    def add(name, ids, w, crc, markers, offset, n, ecode, comment=None):
        f.add(name, ids, 'fpdu_error', [('crc', crc), ('markers', markers), ('offset', offset),
                                        ('ulpdus', n), ('layer', 2), ('etype', 0), ('ecode', ecode)],
              w, comment)

    w = bytearray(stream([u24]))
    w[-1] ^= 0x01
    add('crc_bad_last_octet', ['MPA-12', 'MPA-28', 'MPA-52'], w, 1, 0, 0, 0, 2)
    w = bytearray(stream([u24]))
    w[10] ^= 0x80
    add('crc_payload_corrupt', ['MPA-12', 'MPA-31'], w, 1, 0, 0, 0, 2)
    w = bytearray(stream([u24, u2, u24]))
    w[48 + 5] ^= 0xFF
    add('crc_bad_second_fpdu', ['MPA-12', 'MPA-29'], w, 1, 0, 0, 1, 2,
        'first FPDU delivered, the second fails, the third is never delivered')
    w = bytearray(stream([u24, u2], 0, True, True))
    w[-2] ^= 0x10
    add('crc_bad_with_markers', ['MPA-12'], w, 1, 1, 0, 1, 2)

    def bad_marker(ulist, offset, which_marker, value, crc=True):
        """Frame with markers, then rewrite marker number which_marker (0-based,
        counted in the whole stream) to FPDUPTR value and recompute CRCs."""
        # rebuild with a patched framer
        pos = offset
        out = bytearray()
        count = [0]

        def fr(ulpdu, pos):
            start = pos
            ulen = len(ulpdu)
            pad = (4 - ((ulen + 2) % 4)) % 4
            covered = struct.pack('>H', ulen) + bytes(ulpdu) + bytes(pad)
            L = len(covered)
            o = bytearray()
            crcbuf = bytearray()
            i = 0
            body = None
            while i < L + 4:
                if pos % 512 == 0:
                    v = (pos - start) & 0xFFFF
                    if count[0] == which_marker:
                        v = value
                    count[0] += 1
                    mk = struct.pack('>HH', 0, v)
                    o += mk
                    if i <= L:
                        crcbuf += mk
                    pos += 4
                    continue
                if i == L:
                    body = covered + crc_wire(crc32c(bytes(crcbuf)) if crc else 0)
                b = (body or covered)[i]
                o.append(b)
                if i < L:
                    crcbuf.append(b)
                i += 1
                pos += 1
            return o, pos
        for u in ulist:
            o, pos = fr(u, pos)
            out += o
        return out

    add('marker_ptr_wrong_in_payload', ['MPA-8', 'MPA-28', 'MPA-52'],
        bad_marker([u24], 512 - 32, 0, 0x24), 1, 1, 512 - 32, 0, 3,
        'FPDUPTR 0x24 where 0x20 is due; the CRC covers the wrong marker and is valid')
    add('marker_ptr_nonzero_between', ['MPA-7', 'MPA-28'],
        bad_marker([u24, u24], 512 - 48, 0, 0x30), 1, 1, 512 - 48, 1, 3,
        'marker exactly between FPDUs must be 0; 0x30 points at the previous FPDU')
    add('marker_ptr_zero_inside', ['MPA-8', 'MPA-28'],
        bad_marker([u24], 512 - 8, 0, 0), 1, 1, 512 - 8, 0, 3)
    add('marker_ptr_wrong_first', ['MPA-7', 'MPA-26'],
        bad_marker([u24], 0, 0, 4), 1, 1, 0, 0, 3)
    add('marker_ptr_wrong_in_crc', ['MPA-7', 'MPA-28'],
        bad_marker([u24], 512 - 46, 0, 0x40), 1, 1, 512 - 46, 0, 3,
        'marker inside the CRC field (unaligned offset) with the wrong FPDUPTR')
    add('marker_ptr_wrong_crc_off', ['MPA-8', 'MPA-36'],
        bad_marker([u24], 512 - 32, 0, 0x1c, crc=False), 0, 1, 512 - 32, 0, 3,
        'marker check also runs with CRC off')
    big = tagged_hdr(0, 1, 0) + bytes(1200)
    add('marker_ptr_wrong_second_in_fpdu', ['MPA-8'],
        bad_marker([big], 0, 2, 0x200), 1, 1, 0, 0, 3,
        'third marker of a long FPDU says 0x200 instead of 0x400')
    f.write()


def gen_mpa():
    f = VecFile('mpa.vec', 'MPA Request/Reply frames, rev 1 (RFC 5044) and rev 2 (RFC 6581)')

    def add(name, ids, rep, comment=None, **kw):
        b = mpa_frame(rep, **kw)
        fields = [('frame', 'rep' if rep else 'req')]
        for k in ('m', 'c', 'r', 'res', 'rev', 'enhanced'):
            kk = 'ord_' if k == 'ord' else k
            fields.append((k, kw.get(kk, 1 if k == 'rev' else 0)))
        if kw.get('enhanced'):
            for k in ('ird', 'ord', 'p2p', 'rtr_send', 'rtr_write', 'rtr_read'):
                kk = 'ord_' if k == 'ord' else k
                fields.append((k, kw.get(kk, 0)))
        fields.append(('pdata', kw.get('pdata') or '-'))
        f.add(name, ids, 'mpa', fields, b, comment)
        return b

    add('req_rev1_crc', ['MPA-32', 'MPA-34', 'MPA-36'], 0, c=1)
    add('req_rev1_plain', ['MPA-32', 'MPA-34'], 0)
    add('req_rev1_markers_crc', ['MPA-32', 'MPA-35', 'MPA-36'], 0, m=1, c=1)
    add('req_rev1_pdata', ['MPA-32', 'MPA-33'], 0, c=1, pdata=b'hello, iwarp')
    add('rep_rev1_crc', ['MPA-32', 'MPA-36'], 1, c=1)
    add('rep_rev1_reject', ['MPA-32', 'MPA-37'], 1, r=1, pdata=b'no')
    add('rep_rev1_markers', ['MPA-35'], 1, m=1, c=1)
    b = add('req_siw_default', ['MPA-42', 'MPA-43', 'MPA-47', 'MPA-48'], 0, rev=2, enhanced=1, ird=8, ord_=8,
            comment='SPEC-NOTES 4.4: what siw sends by default')
    assert b == H('4d 50 41 20 49 44 20 52 65 71 20 46 72 61 6d 65 10 02 00 04 00 08 00 08')
    b = add('req_p2p_write_read', ['MPA-43', 'MPA-44'], 0, rev=2, enhanced=1, ird=8, ord_=8, p2p=1,
            rtr_write=1, rtr_read=1)
    assert b[-4:] == H('80 08 c0 08')
    add('req_p2p_all_rtr_crc', ['MPA-43', 'MPA-44'], 0, c=1, rev=2, enhanced=1, ird=16, ord_=4, p2p=1,
        rtr_send=1, rtr_write=1, rtr_read=1, pdata=b'\x01\x02\x03')
    add('rep_rev2_enhanced', ['MPA-42', 'MPA-47'], 1, rev=2, enhanced=1, ird=8, ord_=8)
    add('rep_p2p_write', ['MPA-44', 'MPA-49'], 1, c=1, rev=2, enhanced=1, ird=4, ord_=16, p2p=1, rtr_write=1)
    add('rep_p2p_read', ['MPA-44'], 1, rev=2, enhanced=1, ird=1, ord_=1, p2p=1, rtr_read=1)
    add('rep_p2p_send', ['MPA-44'], 1, rev=2, enhanced=1, ird=0x3fff, ord_=0x3fff, p2p=1, rtr_send=1,
        comment='14-bit maximum IRD/ORD')
    add('rep_rev2_reject_pdata', ['MPA-37', 'MPA-42'], 1, r=1, rev=2, enhanced=1, ird=2, ord_=2,
        pdata=b'busy')
    add('req_res_bits', ['MPA-51'], 0, res=0x08, c=1, rev=2, enhanced=1, ird=8, ord_=8,
        comment='siw experimental 0x08 bit: parsers report it in res and otherwise ignore it')
    add('req_rev2_not_enhanced', ['MPA-34', 'MPA-42'], 0, rev=2, c=1,
        comment='Rev 2 without flag 0x10: no IRD/ORD words')
    add('req_rev0', ['MPA-34'], 0, rev=0, c=1, comment='Rev 0 is accepted on receive (as siw does)')
    add('req_pdata_252', ['MPA-33', 'MPA-48'], 0, rev=2, enhanced=1, ird=8, ord_=8,
        pdata=bytes(i & 0xFF for i in range(252)), comment='256 octets of private data in total')
    add('req_pdata_256', ['MPA-33'], 0, c=1, pdata=bytes((255 - i) & 0xFF for i in range(256)))
    f.write()


def gen_mpa_error():
    f = VecFile('mpa_error.vec', 'MPA frames the parser must reject with LLP code 0x04 (MPA-32..MPA-34, MPA-41)')

    def add(name, ids, frame, b, pdmax=256, comment=None):
        f.add(name, ids, 'mpa_error', [('frame', frame), ('pdmax', pdmax), ('ecode', 4)], b, comment)

    add('req_expected_rep_key', ['MPA-32', 'MPA-41'], 'req', mpa_frame(1, c=1),
        comment='a Reply where a Request is due')
    add('rep_expected_req_key', ['MPA-32', 'MPA-41'], 'rep', mpa_frame(0, c=1))
    add('bad_key_lowercase', ['MPA-32', 'MPA-41'], 'req', b'mpa id req frame' + H('40 01 00 00'))
    add('bad_key_first_octet', ['MPA-41'], 'req', b'XPA ID Req Frame' + H('40 01 00 00'))
    add('rev3', ['MPA-34'], 'req', mpa_frame(0, rev=3, c=1))
    add('rev255', ['MPA-34'], 'rep', mpa_frame(1, rev=255))
    add('pd_too_long_256', ['MPA-33'], 'req', mpa_frame(0, rev=1)[:18] + H('01 01'),
        comment='PD_Length 257 with the default limit: rejected on the header alone')
    add('pd_too_long_512', ['MPA-33'], 'req', mpa_frame(0, rev=1)[:18] + H('02 01'), pdmax=512)
    add('pd_513_even_if_limit_1024', ['MPA-33'], 'rep', mpa_frame(1, rev=1)[:18] + H('02 01'), pdmax=1024,
        comment='no limit above the RFC 5044 maximum of 512')
    add('enhanced_pd_short', ['MPA-42', 'MPA-47'], 'req', KEY_REQ + H('10 02 00 02 00 08'),
        comment='flag 0x10 with PD_Length 2: the IRD/ORD words do not fit')
    add('enhanced_pd_zero', ['MPA-42'], 'rep', KEY_REP + H('10 02 00 00'))
    f.write()


def gen_ddp():
    f = VecFile('ddp.vec', 'DDP segments with RDMAP headers (RFC 5040/5041/7306)')

    def add(name, ids, b, fields, comment=None):
        f.add(name, ids, 'ddp', fields, b, comment)

    def tg(op, stag, to, payload=b'', last=1):
        b = tagged_hdr(op, stag, to, last) + payload
        return b, [('tagged', 1), ('last', last), ('dv', 1), ('rv', 1), ('opcode', op), ('stag', '0x%08x' % stag),
                   ('to', '0x%x' % to)] + ([('payload', payload)] if payload else [])

    def ut(op, qn, msn, mo, payload=b'', last=1, inv=0, extra=None, hdr=b''):
        b = untagged_hdr(op, qn, msn, mo, inv, last) + hdr + payload
        fl = [('tagged', 0), ('last', last), ('dv', 1), ('rv', 1), ('opcode', op), ('qn', qn), ('msn', msn),
              ('mo', mo), ('inv_stag', '0x%x' % inv)]
        fl += extra or []
        if payload:
            fl.append(('payload', payload))
        return b, fl

    b, fl = tg(0, 0x12345678, 0x1000, bytes(range(1, 9)))
    add('write_8', ['DDP-1', 'DDP-5', 'RDMAP-1', 'RDMAP-2'], b, fl, 'SPEC-NOTES 4.3 ULPDU')
    b, fl = tg(0, 1, 0)
    add('write_zero_length_rtr', ['DDP-18', 'RDMAP-14', 'MPA-49'], b, fl, 'siw RTR: zero-length Write, STag 1, TO 0')
    b, fl = tg(0, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFF0, b'abc', last=0)
    add('write_not_last', ['DDP-3', 'DDP-8'], b, fl)
    b, fl = tg(2, 0xAABBCC01, 0x2000, bytes(16))
    add('read_response', ['RDMAP-5', 'DDP-5'], b, fl)
    b, fl = tg(2, 0, 0)
    add('read_response_zero', ['RDMAP-5', 'MPA-49'], b, fl)
    b, fl = ut(3, 0, 1, 0, b'hello')
    add('send_hello', ['DDP-9', 'DDP-12', 'DDP-13', 'RDMAP-2'], b, fl)
    b, fl = ut(3, 0, 7, 1482, bytes(10), last=0)
    add('send_middle_segment', ['DDP-13', 'DDP-16'], b, fl)
    b, fl = ut(5, 0, 2, 0, b'se')
    add('send_se', ['RDMAP-2', 'RDMAP-13'], b, fl)
    b, fl = ut(4, 0, 3, 0, b'inv', inv=0x1234ABCD)
    add('send_inv', ['RDMAP-3', 'RDMAP-8'], b, fl)
    b, fl = ut(6, 0, 0xFFFFFFFF, 0, b'x', inv=0xDEADBEEF)
    add('send_se_inv', ['RDMAP-3', 'DDP-12'], b, fl)
    b, fl = ut(3, 0, 1, 0)
    add('send_empty', ['RDMAP-14', 'DDP-14'], b, fl)
    rr = rreq_hdr(0xAABBCC01, 0x2000, 4096, 0x12345678, 0x1000)
    b, fl = ut(1, 1, 1, 0, hdr=rr, extra=[('sink_stag', '0xaabbcc01'), ('sink_to', '0x2000'),
                                          ('read_size', 4096), ('src_stag', '0x12345678'), ('src_to', '0x1000')])
    add('read_request', ['RDMAP-4', 'DDP-9'], b, fl, 'SPEC-NOTES 4.4 ULPDU')
    rr = rreq_hdr(0, 0, 0, 1, 0)
    b, fl = ut(1, 1, 1, 0, hdr=rr, extra=[('sink_stag', 0), ('sink_to', 0), ('read_size', 0),
                                          ('src_stag', 1), ('src_to', 0)])
    add('read_request_rtr', ['MPA-49', 'RDMAP-14'], b, fl, 'siw Read RTR')
    th = term_hdr(2, 0, 2)
    b, fl = ut(7, 2, 1, 0, hdr=th, extra=[('t_layer', 2), ('t_etype', 0), ('t_ecode', 2), ('t_m', 0), ('t_d', 0),
                                          ('t_r', 0)])
    add('terminate_llp_crc', ['RDMAP-9', 'RDMAP-10', 'MPA-52'], b, fl, 'SPEC-NOTES 4.4 ULPDU')
    tddp = untagged_hdr(3, 0, 5, 0)
    th = term_hdr(1, 2, 2, m=1, d=1, seglen=100, tddp=tddp)
    b, fl = ut(7, 2, 1, 0, hdr=th, extra=[('t_layer', 1), ('t_etype', 2), ('t_ecode', 2), ('t_m', 1), ('t_d', 1),
                                          ('t_r', 0), ('t_seglen', 100), ('t_ddp', tddp)])
    add('terminate_ddp_untagged_no_buffer', ['RDMAP-9', 'DDP-36'], b, fl)
    tddp = tagged_hdr(0, 0x99, 0x10)
    th = term_hdr(1, 1, 0, m=0, d=1, seglen=0, tddp=tddp)
    b, fl = ut(7, 2, 1, 0, hdr=th, extra=[('t_layer', 1), ('t_etype', 1), ('t_ecode', 0), ('t_m', 0), ('t_d', 1),
                                          ('t_r', 0), ('t_seglen', 0), ('t_ddp', tddp)])
    add('terminate_ddp_tagged_stag', ['RDMAP-9', 'DDP-36'], b, fl)
    tddp = untagged_hdr(1, 1, 3, 0)
    trd = rreq_hdr(5, 6, 7, 8, 9)
    th = term_hdr(0, 1, 2, m=1, d=1, r=1, seglen=46, tddp=tddp, trdma=trd)
    b, fl = ut(7, 2, 1, 0, hdr=th, extra=[('t_layer', 0), ('t_etype', 1), ('t_ecode', 2), ('t_m', 1), ('t_d', 1),
                                          ('t_r', 1), ('t_seglen', 46), ('t_ddp', tddp), ('t_rdma', trd)])
    add('terminate_rdmap_access_rreq', ['RDMAP-9', 'RDMAP-10', 'RDMAP-12'], b, fl)
    ah = atomic_req(0, 1, 0x12345678, 0x1000, 1, 0, 0, M64)
    b, fl = ut(10, 1, 1, 0, hdr=ah, extra=[('a_opcode', 0), ('a_reqid', 1), ('a_stag', '0x12345678'),
                                           ('a_to', '0x1000'), ('a_add_swap', 1), ('a_add_swap_mask', 0),
                                           ('a_cmp', 0), ('a_cmp_mask', '0xffffffffffffffff')])
    add('atomic_fetchadd', ['RDMAP-EXT-6', 'RDMAP-EXT-7', 'RDMAP-EXT-8'], b, fl, 'SPEC-NOTES 4.4 ULPDU')
    ah = atomic_req(1, 2, 0x100, 0x2008, 0x1122334455667788, M64, 0, M64)
    b, fl = ut(10, 1, 2, 0, hdr=ah, extra=[('a_opcode', 1), ('a_reqid', 2), ('a_stag', '0x100'),
                                           ('a_to', '0x2008'), ('a_add_swap', '0x1122334455667788'),
                                           ('a_add_swap_mask', '0xffffffffffffffff'),
                                           ('a_cmp', 0), ('a_cmp_mask', '0xffffffffffffffff')])
    add('atomic_swap', ['RDMAP-EXT-6', 'RDMAP-EXT-8'], b, fl)
    ah = atomic_req(2, 0xFFFFFFFF, 0x200, 0x18, 0xAAAAAAAAAAAAAAAA, 0xFFFFFFFF00000000, 0x55667788,
                    0xFFFFFFFF)
    b, fl = ut(10, 1, 3, 0, hdr=ah, extra=[('a_opcode', 2), ('a_reqid', '0xffffffff'), ('a_stag', '0x200'),
                                           ('a_to', '0x18'), ('a_add_swap', '0xaaaaaaaaaaaaaaaa'),
                                           ('a_add_swap_mask', '0xffffffff00000000'),
                                           ('a_cmp', '0x55667788'), ('a_cmp_mask', '0xffffffff')])
    add('atomic_cmpswap', ['RDMAP-EXT-6', 'RDMAP-EXT-13'], b, fl)
    ar = atomic_resp(1, 0xFFFFFFFF)
    b, fl = ut(11, 3, 1, 0, hdr=ar, extra=[('a_reqid', 1), ('a_orig', '0xffffffff')])
    add('atomic_response', ['RDMAP-EXT-9', 'RDMAP-EXT-19'], b, fl, 'SPEC-NOTES 4.4 ULPDU')
    im = struct.pack('>Q', 0x0102030405060708)
    b, fl = ut(8, 0, 1, 0, hdr=im, extra=[('imm', '0x102030405060708')])
    add('immediate', ['RDMAP-EXT-2', 'RDMAP-EXT-25'], b, fl, 'SPEC-NOTES 4.4 ULPDU')
    im = struct.pack('>Q', 0xFEDCBA9876543210)
    b, fl = ut(9, 0, 2, 0, hdr=im, extra=[('imm', '0xfedcba9876543210')])
    add('immediate_se', ['RDMAP-EXT-2', 'RDMAP-EXT-25'], b, fl)
    f.write()


def gen_ddp_error():
    f = VecFile('ddp_error.vec',
                'ULPDUs the header-only validator must reject (DDP-4, DDP-36, RDMAP-1, RDMAP-2,\n'
                '# RDMAP-10, RDMAP-EXT-*). The order of the checks is in FORMAT.md notes.')

    def add(name, ids, b, layer, etype, ecode, comment=None):
        f.add(name, ids, 'ddp_error', [('layer', layer), ('etype', etype), ('ecode', ecode)], b, comment)

    add('one_octet', ['DDP-14'], b'\xc1', 1, 0, 0)
    add('tagged_dv0', ['DDP-4', 'DDP-36'], tagged_hdr(0, 1, 0, dv=0), 1, 1, 4)
    add('tagged_dv2', ['DDP-4', 'DDP-36'], tagged_hdr(0, 1, 0, dv=2), 1, 1, 4)
    add('untagged_dv0_seed_fig5', ['DDP-4', 'DDP-36'], send_ulpdu(1, bytes(24), dv=0, rv=0), 1, 2, 6,
        'the seed Fig. 5 ULPDU (40 03): version 0 is rejected')
    add('untagged_dv3', ['DDP-4'], send_ulpdu(1, b'', dv=3), 1, 2, 6)
    add('rv0', ['RDMAP-1', 'RDMAP-10'], send_ulpdu(1, b'x', rv=0), 0, 2, 5)
    add('rv2_tagged', ['RDMAP-1'], tagged_hdr(0, 1, 0, rv=2), 0, 2, 5)
    add('rv3_short', ['RDMAP-1'], H('41 c3'), 0, 2, 5, 'versions are checked before the header length')
    for op in (0xC, 0xD, 0xE, 0xF):
        add('opcode_%x' % op, ['RDMAP-2', 'RDMAP-10'], untagged_hdr(op, 0, 1, 0), 0, 2, 6)
    add('write_untagged', ['RDMAP-2', 'DDP-2'], untagged_hdr(0, 0, 1, 0), 0, 2, 6)
    add('read_response_untagged', ['RDMAP-2'], untagged_hdr(2, 0, 1, 0), 0, 2, 6)
    add('send_tagged', ['RDMAP-2', 'DDP-2'], tagged_hdr(3, 0, 0) + bytes(4), 0, 2, 6)
    add('read_request_tagged', ['RDMAP-2'], tagged_hdr(1, 0, 0) + bytes(28), 0, 2, 6)
    add('terminate_tagged', ['RDMAP-2'], tagged_hdr(7, 0, 0) + bytes(4), 0, 2, 6)
    add('atomic_tagged', ['RDMAP-EXT-2'], tagged_hdr(10, 0, 0) + bytes(52), 0, 2, 6)
    add('imm_tagged', ['RDMAP-EXT-2'], tagged_hdr(8, 0, 0) + bytes(8), 0, 2, 6)
    add('tagged_short_13', ['DDP-5'], tagged_hdr(0, 1, 0)[:13], 1, 0, 0)
    add('untagged_short_17', ['DDP-9'], untagged_hdr(3, 0, 1, 0)[:17], 1, 0, 0)
    add('untagged_short_2', ['DDP-9'], H('41 43'), 1, 0, 0)
    add('send_qn1', ['DDP-11', 'DDP-36', 'DDP-33'], untagged_hdr(3, 1, 1, 0), 1, 2, 1)
    add('send_inv_qn2', ['DDP-11'], untagged_hdr(4, 2, 1, 0), 1, 2, 1)
    add('read_request_qn0', ['RDMAP-4', 'DDP-11'], untagged_hdr(1, 0, 1, 0) + bytes(28), 1, 2, 1)
    add('terminate_qn0', ['RDMAP-9'], untagged_hdr(7, 0, 1, 0) + bytes(4), 1, 2, 1)
    add('imm_qn1', ['RDMAP-EXT-2'], untagged_hdr(8, 1, 1, 0) + bytes(8), 1, 2, 1)
    add('atomic_req_qn3', ['RDMAP-EXT-16'], untagged_hdr(10, 3, 1, 0) + bytes(52), 1, 2, 1)
    add('atomic_resp_qn1', ['RDMAP-EXT-19'], untagged_hdr(11, 1, 1, 0) + bytes(12), 1, 2, 1)
    add('qn_huge', ['DDP-33'], untagged_hdr(3, 0x80000000, 1, 0), 1, 2, 1)
    add('read_request_short', ['RDMAP-4'], untagged_hdr(1, 1, 1, 0) + bytes(27), 0, 2, 0xFF)
    add('read_request_payload', ['RDMAP-4'], untagged_hdr(1, 1, 1, 0) + bytes(29), 0, 2, 0xFF,
        'no payload after the Read Request header')
    add('terminate_short', ['RDMAP-9'], untagged_hdr(7, 2, 1, 0) + bytes(3), 0, 2, 0xFF)
    add('imm_7', ['RDMAP-EXT-26'], untagged_hdr(8, 0, 1, 0) + bytes(7), 0, 2, 0xFF)
    add('imm_9', ['RDMAP-EXT-26', 'RDMAP-EXT-4'], untagged_hdr(9, 0, 1, 0) + bytes(9), 0, 2, 0xFF)
    add('atomic_req_short', ['RDMAP-EXT-6'], untagged_hdr(10, 1, 1, 0) + bytes(51), 0, 2, 0xFF)
    add('atomic_req_payload', ['RDMAP-EXT-4'], untagged_hdr(10, 1, 1, 0) + bytes(56), 0, 2, 0xFF)
    add('atomic_resp_long', ['RDMAP-EXT-9', 'RDMAP-EXT-4'], untagged_hdr(11, 3, 1, 0) + bytes(13), 0, 2, 0xFF)
    add('atomic_resp_short', ['RDMAP-EXT-9'], untagged_hdr(11, 3, 1, 0) + bytes(11), 0, 2, 0xFF)
    f.write()


def gen_atomic():
    f = VecFile('atomic.vec', 'RFC 7306 atomic arithmetic (seed 003 5.1 pseudo-code; SPEC-NOTES 4.5)')

    def add(name, ids, op, orig, add_swap=0, add_swap_mask=0, cmp=0, cmp_mask=M64, result=None, comment=None):
        if op == 'fetchadd':
            r = fetchadd(orig, add_swap, add_swap_mask)
        elif op == 'swap':
            r = add_swap
        else:
            r = cmpswap(orig, cmp, cmp_mask, add_swap, add_swap_mask)
        if result is not None:
            assert r == result, (name, hex(r))
        fl = [('op', op), ('orig', '0x%016x' % orig), ('add_swap', '0x%016x' % add_swap),
              ('add_swap_mask', '0x%016x' % add_swap_mask), ('cmp', '0x%016x' % cmp),
              ('cmp_mask', '0x%016x' % cmp_mask), ('result', '0x%016x' % r), ('ret', '0x%016x' % orig)]
        f.add(name, ids, 'atomic', fl, None, comment)

    add('fetchadd_carry32', ['RDMAP-EXT-11'], 'fetchadd', 0xFFFFFFFF, 1, 0, result=0x100000000)
    add('fetchadd_two_lanes', ['RDMAP-EXT-11'], 'fetchadd', 0xFFFFFFFF, 1, 0x80000000, result=0)
    add('fetchadd_four_lanes', ['RDMAP-EXT-11'], 'fetchadd', 0x00010002FFFF0004, 0x0001000100010001,
        0x8000800080008000, result=0x0002000300000005)
    add('fetchadd_wrap64', ['RDMAP-EXT-11'], 'fetchadd', M64, 1, 0, result=0)
    add('fetchadd_mask_msb_only', ['RDMAP-EXT-11'], 'fetchadd', M64, 1, 1 << 63, result=0,
        comment='a set mask bit 63 changes nothing for the 64-bit lane')
    add('fetchadd_byte_lanes', ['RDMAP-EXT-11'], 'fetchadd', 0xFF01FF01FF01FF01, 0x0101010101010101,
        0x8080808080808080, result=0x0002000200020002)
    add('fetchadd_mask_bit0', ['RDMAP-EXT-11'], 'fetchadd', 0x1, 0x1, 0x1, result=0x0,
        comment='mask bit 0: bit 0 is a one-bit lane, its carry is dropped')
    add('swap', ['RDMAP-EXT-12'], 'swap', 0x1122334455667788, 0xAAAAAAAAAAAAAAAA, M64, result=0xAAAAAAAAAAAAAAAA)
    add('cmpswap_match_masked', ['RDMAP-EXT-13'], 'cmpswap', 0x1122334455667788, 0xAAAAAAAAAAAAAAAA,
        0xFFFFFFFF00000000, 0x55667788, 0xFFFFFFFF, result=0xAAAAAAAA55667788)
    add('cmpswap_nomatch', ['RDMAP-EXT-13'], 'cmpswap', 0x1122334455667788, 0xAAAAAAAAAAAAAAAA,
        0xFFFFFFFF00000000, 0x55667789, 0xFFFFFFFF, result=0x1122334455667788)
    add('cmpswap_full', ['RDMAP-EXT-13'], 'cmpswap', 5, 9, M64, 5, M64, result=9)
    add('cmpswap_mask_zero_always', ['RDMAP-EXT-13'], 'cmpswap', 5, 9, M64, 77, 0, result=9)
    f.write()


def gen_mulpdu():
    f = VecFile('mulpdu.vec', 'MULPDU from EMSS (MPA-18, MPA-19; SPEC-NOTES 4.6)')
    cases = [(1460, 1, 1442), (8960, 1, 8882), (536, 1, 522), (1460, 0, None), (8960, 0, None), (536, 0, None),
             (1448, 0, None), (1448, 1, None), (1, 1, 128), (100, 0, 128), (140, 1, None), (130, 1, 128), (512, 1, None),
             (513, 1, None), (65535, 1, 64768), (65535, 0, 64768), (64776, 0, 64768), (64774, 0, None), (64772, 0, None),
             (1461, 1, None), (1463, 0, None)]
    for emss, mk, want in cases:
        v = mulpdu(emss, mk)
        if want is not None:
            assert v == want, (emss, mk, v)
        f.add('emss%d_%s' % (emss, 'markers' if mk else 'nomarkers'), ['MPA-18', 'MPA-19'], 'mulpdu',
              [('emss', emss), ('markers', mk), ('mulpdu', v)])
    f.write()


# ---------------------------------------------------------------- SCTP (RFC 5043)
# Written from seed 004 (RFC 5043) sections 5.2 and 9: a DDP Segment chunk
# (PPID 16) is DDP-SSN (16 bits) followed by the DDP segment; a DDP Stream
# Session Control chunk (PPID 17) is DDP-SSN (16), Function Code (16), private
# data. Codes 1 Initiate, 2 Accept, 3 Reject, 4 Terminate; private data at
# most 512 octets, none in a Terminate. Big-endian.
# RFC 6581 sections 7, 9 and 11 add 5 Enhanced Initiate, 6 Enhanced Accept
# and 7 Enhanced Reject: their private data starts with the 4 octets of
# enhanced RDMA connection establishment data (the IRD and ORD words of an
# enhanced MPA frame), which the 512 count; the Enhanced Reject carries them
# too (the initiator passes the responder's IRD/ORD to the ULP, RFC 6581 9.1).
PPID_SEG, PPID_CTL = 16, 17
SCTP_FUNCS = {1: 'initiate', 2: 'accept', 3: 'reject', 4: 'terminate',
              5: 'enhanced_initiate', 6: 'enhanced_accept', 7: 'enhanced_reject'}
SCTP_ENHANCED = (5, 6, 7)
SCTP_RX_MAX = 2 + 65536   # docs/SCTP.md 2.4: the largest chunk taken
# RFC 6581 9: A (0x8000) and B (0x4000) in the IRD word, C (0x8000) and D
# (0x4000) in the ORD word; the vectors' rtr list names them in this order.
RTR_FLAGS = (('p2p', 0, 0x8000), ('send', 0, 0x4000), ('write', 1, 0x8000), ('read', 1, 0x4000))


def sctp_seg(ssn, seg):
    return struct.pack('>H', ssn) + bytes(seg)


def sctp_ctl(ssn, func, pdata=b''):
    return struct.pack('>HH', ssn, func) + bytes(pdata)


def rdma_conn(ird, ord_, rtr):
    """RFC 6581 9: the IRD word, then the ORD word; rtr names the flags set."""
    words = [ird & 0x3FFF, ord_ & 0x3FFF]
    for name, w, bit in RTR_FLAGS:
        if name in rtr:
            words[w] |= bit
    return struct.pack('>HH', *words)


def rtr_text(rtr):
    names = [name for name, _, _ in RTR_FLAGS if name in rtr]
    return ','.join(names) if names else '-'


def sctp_error(ppid, chunk):
    """The first violation in the order of FORMAT.md, or None."""
    if ppid not in (PPID_SEG, PPID_CTL):
        return 'ppid'
    if len(chunk) > SCTP_RX_MAX:
        return 'long'
    if len(chunk) < (2 if ppid == PPID_SEG else 4):
        return 'short'
    if ppid == PPID_SEG:
        return None
    func = struct.unpack('>H', chunk[2:4])[0]
    if func not in SCTP_FUNCS:
        return 'func'
    if func == 4 and len(chunk) > 4:
        return 'termdata'
    if func in SCTP_ENHANCED and len(chunk) - 4 < 4:
        return 'enhshort'
    if len(chunk) - 4 > 512:
        return 'pdlen'
    return None


def sctp_mulpdu(frag_point):
    # docs/SCTP.md 2.4: max(516, frag_point - 2 (DDP-SSN) - 16 (SACK room)),
    # capped at the largest segment a receiver takes
    return min(max(516, frag_point - 18), 65536)


def gen_sctp():
    f = VecFile('sctp.vec', 'DDP over SCTP chunks (RFC 5043 5.2; docs/SCTP.md 2.2, 2.4)', rle=True)
    ctl_ids = ['SCTP-5', 'SCTP-6', 'SCTP-8', 'SCTP-9', 'SCTP-10']
    text = b'iwarp private data'
    pd512 = bytes((i * 7 + 3) & 0xFF for i in range(512))
    for func, fname in sorted(SCTP_FUNCS.items()):
        if func == 4 or func in SCTP_ENHANCED:
            continue
        for tag, pd in (('pd0', b''), ('pd1', b'\x5a'), ('text', text), ('pd512', pd512)):
            ssn = 0
            b = sctp_ctl(ssn, func, pd)
            assert sctp_error(PPID_CTL, b) is None
            f.add('%s_%s' % (fname, tag), ctl_ids, 'sctp',
                  [('ppid', str(PPID_CTL)), ('ssn', ssn), ('func', func), ('pdata', pd if pd else '-')], b)
    b = sctp_ctl(0, 1, b'')
    assert b == H('00 00 00 01')
    # SSN values of a Terminate: 0 (Initiate answered by Terminate), later, the wrap
    for tag, ssn, comment in (('ssn0', 0, 'the passive side refuses an Initiate without the ULP (RFC 5043 6.4)'),
                              ('ssn1', 1, 'after an Initiate or an Accept'),
                              ('ssn7fff', 0x7FFF, None), ('ssn8000', 0x8000, None),
                              ('ssnffff', 0xFFFF, 'the last SSN before the wrap')):
        b = sctp_ctl(ssn, 4)
        f.add('terminate_%s' % tag, ctl_ids, 'sctp', [('ppid', str(PPID_CTL)), ('ssn', num(ssn)), ('func', 4)], b,
              comment)
    b = sctp_ctl(0x1234, 2, b'ab')
    f.add('accept_ssn1234', ctl_ids, 'sctp', [('ppid', str(PPID_CTL)), ('ssn', num(0x1234)), ('func', 2),
                                             ('pdata', b'ab')], b, 'SSN and function code big-endian')

    # RFC 6581 7, 9: enhanced chunks. Each code with 0, 1 and 508 octets of
    # ULP private data (508: 512 with the IRD/ORD words), the IRD/ORD and
    # flag combinations rotated over the codes so that each code gets each.
    enh_ids = ctl_ids + ['SCTP-30']
    pd508 = bytes((i * 11 + 1) & 0xFF for i in range(508))
    combos = [(0, 0, ()), (16, 16, ('p2p', 'write')), (0x3FFF, 0x3FFF, ('p2p', 'send', 'write', 'read'))]

    def enh(name, ssn, func, ird, ord_, rtr, pd, comment=None):
        words = rdma_conn(ird, ord_, rtr)
        # the same octets as an enhanced MPA frame's first four of private data
        assert words == mpa_frame(0, rev=2, enhanced=1, ird=ird, ord_=ord_, p2p='p2p' in rtr,
                                  rtr_send='send' in rtr, rtr_write='write' in rtr,
                                  rtr_read='read' in rtr)[20:24]
        b = sctp_ctl(ssn, func, words + pd)
        assert sctp_error(PPID_CTL, b) is None, name
        f.add(name, enh_ids, 'sctp', [('ppid', str(PPID_CTL)), ('ssn', num(ssn)), ('func', func), ('ird', num(ird)),
                                      ('ord', num(ord_)), ('rtr', rtr_text(rtr)), ('pdata', pd if pd else '-')],
              b, comment)
        return b

    for i, func in enumerate(SCTP_ENHANCED):
        for j, (tag, pd) in enumerate((('pd0', b''), ('pd1', b'\xa5'), ('pd508', pd508))):
            ird, ord_, rtr = combos[(i + j) % len(combos)]
            b = enh('%s_%s' % (SCTP_FUNCS[func], tag), 0, func, ird, ord_, rtr, pd,
                    '512 octets of private data with the IRD/ORD words: the most a chunk has' if tag == 'pd508'
                    and func == 5 else None)
            assert len(b) == 4 + 4 + len(pd)
    b = enh('enhanced_initiate_siw_default', 0, 5, 16, 16, (), b'')
    assert b == H('00 00 00 05 00 10 00 10')
    b = enh('enhanced_initiate_rtr_no_p2p', 0, 5, 8, 8, ('send', 'write', 'read'), text,
            'B, C and D without A: a receiver ignores them (RFC 6581 9.2), the codec reports them as sent')
    assert b[4:8] == H('40 08 c0 08')
    enh('enhanced_accept_rtr_no_p2p', 0, 6, 4, 2, ('write',), b'ok')
    enh('enhanced_reject_rtr_no_p2p', 0, 7, 1, 1, ('send', 'read'), b'no')
    b = enh('enhanced_accept_ird3fff_ord0', 0, 6, 0x3FFF, 0, ('p2p', 'read'), b'\x01')
    assert b[4:8] == H('bf ff 40 00')
    b = enh('enhanced_initiate_ird0_ord3fff', 0x1234, 5, 0, 0x3FFF, ('p2p', 'send'), b'\x02\x03',
            'SSN, function code and both words big-endian')
    assert b[:8] == H('12 34 00 05 c0 00 3f ff')
    enh('enhanced_reject_ird16_ord0', 0, 7, 16, 0, ('p2p',), text,
        'a Reject names the IRD/ORD the responder wants (RFC 6581 9.1)')

    seg_ids = ['SCTP-5', 'SCTP-6', 'SCTP-7']
    segs = [
        ('send_hello', 1, untagged_hdr(3, 0, 1, 0) + b'hello', 'the first segment after the Initiate or Accept'),
        ('write_8', 2, tagged_hdr(0, 0x12345678, 0x1000) + bytes(range(1, 9)), None),
        ('read_request', 3, untagged_hdr(1, 1, 1, 0) + rreq_hdr(0xAABBCC01, 0x2000, 4096, 0x12345678, 0x1000),
         None),
        ('read_response_not_last', 0x7FFF, tagged_hdr(2, 0xAABBCC01, 0x2000, last=0) + bytes(16), None),
        ('terminate_rdmap', 0x8000, untagged_hdr(7, 2, 1, 0) + term_hdr(2, 0, 5),
         'an RDMAP Terminate LLP/0/0x05 is a DDP segment like any other (RFC 5043 6.2)'),
        ('send_ssnffff', 0xFFFF, untagged_hdr(3, 0, 9, 0) + b'x', 'the last SSN before the wrap'),
        ('send_ssn0_wrapped', 0, untagged_hdr(3, 0, 10, 0) + b'y', 'the SSN after 0xffff (65536 chunks in)'),
    ]
    for name, ssn, seg, comment in segs:
        b = sctp_seg(ssn, seg)
        assert b[2] == seg[0] and sctp_error(PPID_SEG, b) is None
        f.add('segment_%s' % name, seg_ids, 'sctp', [('ppid', str(PPID_SEG)), ('ssn', num(ssn)), ('ddp', seg)], b,
              comment)
    big = tagged_hdr(0, 0x100, 0) + bytes(65536 - 14)
    b = sctp_seg(5, big)
    assert len(b) == SCTP_RX_MAX and sctp_error(PPID_SEG, b) is None
    f.add('segment_largest', seg_ids + ['SCTP-23'], 'sctp', [('ppid', str(PPID_SEG)), ('ssn', 5), ('ddp', big)], b,
          'the largest chunk a receiver takes: 2 + 65536 octets')
    f.write()

    f = VecFile('sctp_error.vec', 'DDP over SCTP chunks a receiver must reject (RFC 5043 5.2; docs/SCTP.md 2.2)',
                rle=True)

    def bad(name, ids, ppid, chunk, comment=None):
        err = sctp_error(ppid, chunk)
        assert err is not None, name
        f.add(name, ids, 'sctp_error', [('ppid', str(ppid) if ppid < 0x100 else num(ppid)), ('error', err), ('layer', 2), ('etype', 0),
                                        ('ecode', 5)], chunk, comment)

    for n in range(4):
        bad('control_short_%d' % n, ['SCTP-8'], PPID_CTL, bytes([0, 0, 0, 1])[:n],
            'fewer than the 4 octets of DDP-SSN and function code' if n == 0 else None)
    for n in range(2):
        bad('segment_short_%d' % n, ['SCTP-7'], PPID_SEG, bytes([0, 1])[:n])
    for func in (0, 8, 0x0100, 0x0400, 0x0500, 0xFFFF):
        bad('control_func_%04x' % func, ['SCTP-9'], PPID_CTL, sctp_ctl(0, func, b'pd'),
            {0x0100: 'byte-swapped Initiate', 0x0500: 'byte-swapped Enhanced Initiate',
             8: 'the first code after the RFC 6581 ones'}.get(func))
    for func in (1, 2, 3):
        bad('%s_pd513' % SCTP_FUNCS[func], ['SCTP-10'], PPID_CTL, sctp_ctl(0, func, bytes(513)))
    # RFC 6581 7, 9: an enhanced chunk without room for the IRD/ORD words
    words = rdma_conn(16, 16, ('p2p', 'write'))
    for func in SCTP_ENHANCED:
        for n in range(4):
            bad('%s_short_%d' % (SCTP_FUNCS[func], n), ['SCTP-10', 'SCTP-30'], PPID_CTL,
                sctp_ctl(0, func, words[:n]),
                'fewer than the 4 octets of IRD and ORD' if n == 0 and func == 5 else None)
    bad('enhanced_initiate_pd513', ['SCTP-10', 'SCTP-30'], PPID_CTL, sctp_ctl(0, 5, words + bytes(509)),
        'the IRD/ORD words count in the 512 octets: 4 + 509')
    for func in (6, 7):
        bad('%s_pd513' % SCTP_FUNCS[func], ['SCTP-10', 'SCTP-30'], PPID_CTL, sctp_ctl(0, func, words + bytes(509)))
    for n in (1, 512, 513):
        bad('terminate_pd%d' % n, ['SCTP-10'], PPID_CTL, sctp_ctl(3, 4, bytes([0xEE]) * n),
            'a Terminate carries no private data, however short or long' if n == 1 else None)
    for ppid in (0, 15, 18, 0x10000000, 0x11000000, 0xFFFFFFFF):
        bad('ppid_%x' % ppid, ['SCTP-5'], ppid, sctp_seg(1, untagged_hdr(3, 0, 1, 0)),
            'PPID 16 in the wrong byte order' if ppid == 0x10000000 else None)
    bad('segment_long', ['SCTP-23'], PPID_SEG, sctp_seg(5, tagged_hdr(0, 0x100, 0) + bytes(65537 - 14)),
        'one octet above the largest chunk a receiver takes')
    bad('control_long', ['SCTP-10'], PPID_CTL, sctp_ctl(0, 1, bytes(SCTP_RX_MAX - 3)),
        'length is checked before the function code and private data')
    bad('control_short_func_bad', ['SCTP-8'], PPID_CTL, bytes([0, 0, 9]),
        'too short is found before a bad function code')
    bad('terminate_data_before_pdlen', ['SCTP-10'], PPID_CTL, sctp_ctl(0, 4, bytes(600)),
        'a Terminate with 600 octets: Terminate data, found before the length')
    f.write()

    f = VecFile('sctp_mulpdu.vec', 'MULPDU from the SCTP fragmentation point (SCTP-23; docs/SCTP.md 2.4)')
    # docs/SCTP.md 2.4's table: IPv4 path MTU 1500, 9000 and 576
    for fp, want in ((1452, 1434), (8952, 8934), (528, 516), (1432, 1414), (534, 516), (536, 518), (0, 516),
                     (18, 516), (65484, 65466), (65554, 65536), (70000, 65536), (0xFFFFFFFF, 65536)):
        got = sctp_mulpdu(fp)
        assert got == want, (fp, got)
        f.add('frag%d' % fp, ['SCTP-23'], 'sctp_mulpdu', [('frag_point', str(fp)), ('mulpdu', str(got))])
    f.write()


# ---------------------------------------------------------------- C table
ARRAYS = []


def cbytes(b):
    if not b:
        return 'NULL'
    name = 'iwp_vt_b%d' % len(ARRAYS)
    lines = ['static const u8 %s[] = {' % name]
    for i in range(0, len(b), 12):
        lines.append('\t' + ', '.join('0x%02x' % x for x in b[i:i + 12]) + ',')
    lines.append('};')
    ARRAYS.append('\n'.join(lines))
    return name


def clens(lens):
    name = 'iwp_vt_l%d' % len(ARRAYS)
    body = ''.join(('\n\t' if i % 16 == 0 else ' ') + '%d,' % x for i, x in enumerate(lens))
    ARRAYS.append('static const u32 %s[] = {%s\n};' % (name, body))
    return name


def fget(fields, key, default=None):
    for k, v in fields:
        if k == key:
            if isinstance(v, (bytes, bytearray)):
                return bytes(v)
            if v == '-':
                return b''
            if isinstance(v, str):
                return int(v, 0)
            return v
    return default


def write_c_table():
    out = ['/* SPDX-License-Identifier: GPL-2.0-only */',
           '/*',
           ' * Core test vectors for the in-module selftest (selftest.c) and the host',
           ' * tests: the same cases as the testdata/vectors files. Generated by',
           ' * tests/proto/gen/genvec.py; do not edit.',
           ' */',
           '#ifndef IWP_VECTORS_TABLE_H',
           '#define IWP_VECTORS_TABLE_H',
           '',
           '#include "selftest_types.h"',
           '']
    crc, fp, mpa, mpe, ddp, dde, ato, mul = [], [], [], [], [], [], [], []
    for fname, name, kind, fields, hexb in ALL:
        full = '"%s/%s"' % (fname[:-4], name)
        if kind == 'crc':
            data = b''.join(v for k, v in fields if k == 'data')
            crc.append('\t{ %s, %s, %d, 0x%08x },' % (full, cbytes(data), len(data), fget(fields, 'value')))
        elif kind in ('fpdu', 'fpdu_error'):
            uls = [bytes(v) if isinstance(v, (bytes, bytearray)) else b'' for k, v in fields if k == 'ulpdu']
            lens = clens([len(u) for u in uls]) if uls else 'NULL'
            err = kind == 'fpdu_error'
            fp.append('\t{ %s, %d, %d, 0x%x, %d, %s, %s, %s, %d, %d, %d, %d, %d, %d },' % (
                full, fget(fields, 'crc'), fget(fields, 'markers'), fget(fields, 'offset', 0),
                len(uls), lens, cbytes(b''.join(uls)), cbytes(hexb), len(hexb), err,
                fget(fields, 'ulpdus', 0), fget(fields, 'layer', 0), fget(fields, 'etype', 0),
                fget(fields, 'ecode', 0)))
        elif kind == 'mpa':
            pd = fget(fields, 'pdata', b'') or b''
            mpa.append('\t{ %s, { %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %s }, %s, %d },' % (
                full, 1 if ('frame', 'rep') in fields else 0,
                fget(fields, 'm'), fget(fields, 'c'), fget(fields, 'r'), fget(fields, 'res', 0),
                fget(fields, 'rev'), fget(fields, 'enhanced', 0), fget(fields, 'p2p', 0),
                fget(fields, 'rtr_send', 0), fget(fields, 'rtr_write', 0), fget(fields, 'rtr_read', 0),
                fget(fields, 'ird', 0), fget(fields, 'ord', 0), len(pd), cbytes(pd), cbytes(hexb), len(hexb)))
        elif kind == 'mpa_error':
            mpe.append('\t{ %s, %d, %d, %d, %s, %d },' % (
                full, 1 if ('frame', 'rep') in fields else 0, fget(fields, 'pdmax', 256),
                fget(fields, 'ecode'), cbytes(hexb), len(hexb)))
        elif kind == 'ddp':
            ddp.append('\t{ %s, %s, %d, %d, %d, %d, %d, 0 },' % (
                full, cbytes(hexb), len(hexb), fget(fields, 'opcode'), 0, 0, 0))
        elif kind == 'ddp_error':
            dde.append('\t{ %s, %s, %d, %d, %d, %d, %d, 1 },' % (
                full, cbytes(hexb), len(hexb), 0, fget(fields, 'layer'), fget(fields, 'etype'),
                fget(fields, 'ecode')))
        elif kind == 'atomic':
            op = {'fetchadd': 0, 'swap': 1, 'cmpswap': 2}[[v for k, v in fields if k == 'op'][0]]
            ato.append('\t{ %s, %d,\n\t  0x%016xULL, 0x%016xULL, 0x%016xULL,\n\t  0x%016xULL, 0x%016xULL, 0x%016xULL },' % (
                full, op, fget(fields, 'orig'), fget(fields, 'add_swap'), fget(fields, 'add_swap_mask'),
                fget(fields, 'cmp'), fget(fields, 'cmp_mask'), fget(fields, 'result')))
        elif kind == 'mulpdu':
            mul.append('\t{ %s, %d, %d, %d },' % (full, fget(fields, 'emss'), fget(fields, 'markers'),
                                                   fget(fields, 'mulpdu')))
    out.extend(a + '\n' for a in ARRAYS)
    for typ, arr, rows in (('iwp_vt_crc', 'iwp_vt_crc', crc), ('iwp_vt_fpdu', 'iwp_vt_fpdu', fp),
                           ('iwp_vt_mpa', 'iwp_vt_mpa', mpa), ('iwp_vt_mpa_error', 'iwp_vt_mpa_error', mpe),
                           ('iwp_vt_ddp', 'iwp_vt_ddp', ddp + dde), ('iwp_vt_atomic', 'iwp_vt_atomic', ato),
                           ('iwp_vt_mulpdu', 'iwp_vt_mulpdu', mul)):
        out.append('static const struct %s %s[] = {' % (typ, arr))
        for r in rows:
            if len(r.expandtabs(8)) > 100:
                i = r.index('", ') + 2
                r = r[:i] + '\n\t  ' + r[i + 1:]
            out.append(r)
        out.append('};')
        out.append('')
    out.append('#endif /* IWP_VECTORS_TABLE_H */')
    path = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'kmod', 'proto', 'vectors_table.h')
    with open(path, 'w') as f:
        f.write('\n'.join(out) + '\n')


if __name__ == '__main__':
    gen_crc()
    gen_fpdu()
    gen_markers()
    gen_fpdu_error()
    gen_mpa()
    gen_mpa_error()
    gen_ddp()
    gen_ddp_error()
    gen_atomic()
    gen_mulpdu()
    gen_sctp()
    write_c_table()
