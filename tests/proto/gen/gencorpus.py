#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Seed tests/proto/corpus/<target>/ from testdata/vectors/*.vec.

fuzz_rx: mode octet (CRC, markers, offset index) + the stream of every fpdu
and fpdu_error vector whose offset is in the target's table; fuzz_mpa: 9
policy octets + every mpa/mpa_error frame; fuzz_ddp: every ddp/ddp_error
ULPDU; fuzz_sctp: PPID octet (0: 16, 1: 17, 3: four PPID octets follow) +
every sctp/sctp_error chunk up to 4096 octets; fuzz_sctp_seq: arrival
patterns (record bound octet, then SSN offset and flags per arrival). Run
from the repository root: python3 tests/proto/gen/gencorpus.py
"""
import glob
import hashlib
import os
import re
import struct

ROOT = os.path.join(os.path.dirname(__file__), '..', '..', '..')
VEC = os.path.join(ROOT, 'testdata', 'vectors')
OUT = os.path.join(ROOT, 'tests', 'proto', 'corpus')
OFFSETS = [0, 4, 0x1ec, 464, 480, 488, 504, 508, 510, 511, 512, 465, 466, 467, 100, 0xfffffff0]


def hexbytes(s):
    out = bytearray()
    for t in re.split(r'[\s|.]+', s.strip()):
        if not t or t == '-':
            continue
        m = re.fullmatch(r'([0-9a-fA-F]{2})x(\d+)', t)
        if m:
            out += bytes([int(m.group(1), 16)]) * int(m.group(2))
            continue
        out += bytes.fromhex(t)
    return bytes(out)


def records(path):
    cur = None
    for line in open(path):
        line = line.split('#', 1)[0].strip()
        if not line:
            continue
        k, _, v = line.partition(' ')
        v = v.strip()
        if k == 'vector':
            cur = {'name': v, 'hex': b''}
        elif k == 'end':
            yield cur
            cur = None
        elif k == 'hex':
            cur['hex'] += hexbytes(v)
        elif cur is not None:
            cur.setdefault(k, v)


def write(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data)


def main():
    for path in sorted(glob.glob(os.path.join(VEC, '*.vec'))):
        base = os.path.basename(path)[:-4]
        for r in records(path):
            kind = r.get('kind')
            name = '%s-%s' % (base, r['name'])
            if kind in ('fpdu', 'fpdu_error'):
                off = int(r.get('offset', '0'), 0)
                if off not in OFFSETS or len(r['hex']) > 4096:
                    continue
                mode = int(r.get('crc', '0'), 0) | int(r.get('markers', '0'), 0) << 1 | OFFSETS.index(off) << 4
                write('fuzz_rx', name, bytes([mode]) + r['hex'])
                if kind == 'fpdu' and len(r['hex']) < 600:
                    write('fuzz_rx', name + '-ddp', bytes([mode | 4]) + r['hex'])
            elif kind in ('mpa', 'mpa_error'):
                pol = hashlib.sha256(r['name'].encode()).digest()[:9]
                write('fuzz_mpa', name, pol + r['hex'])
            elif kind in ('ddp', 'ddp_error'):
                write('fuzz_ddp', name, r['hex'])
            elif kind in ('sctp', 'sctp_error'):
                ppid = int(r['ppid'], 0)
                if len(r['hex']) > 4096:
                    continue
                pre = {16: b'\x00', 17: b'\x01'}.get(ppid, b'\x03' + struct.pack('>I', ppid))
                write('fuzz_sctp', name, pre + r['hex'])
    seq_corpus()


def arrivals(maxr, seq, absolute=False):
    """Record bound, then (offset, flags) per arrival."""
    out = bytes([maxr])
    for off, rec in seq:
        out += struct.pack('>HB', off & 0xFFFF, (1 if rec else 0) | (2 if absolute else 0))
    return out


def seq_corpus():
    pats = {
        'in_order': arrivals(4, [(0, 0)] * 64),
        'reversed8': arrivals(8, [(7 - i, 1) for i in range(7)] + [(0, 0)], True),
        'duplicates': arrivals(2, [(3, 1), (3, 1), (1, 0), (0, 0), (0xFFFF, 0), (1, 1), (2, 1), (2, 1)]),
        'window_edges': arrivals(1, [(32767, 0), (32768, 0), (0xFFFF, 0), (0, 0), (32766, 1), (32767, 1)]),
        'records_full': arrivals(2, [(1, 1), (2, 1), (3, 1), (3, 0), (0, 1)]),
        'behind': arrivals(0, [(0, 0)] * 5) + arrivals(0, [(2, 0), (4, 0), (5, 0)], True)[1:],
    }
    for name, data in pats.items():
        write('fuzz_sctp_seq', name, data)


if __name__ == '__main__':
    main()
