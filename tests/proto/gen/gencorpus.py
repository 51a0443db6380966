#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Seed tests/proto/corpus/<target>/ from testdata/vectors/*.vec.

fuzz_rx: mode octet (CRC, markers, offset index) + the stream of every fpdu
and fpdu_error vector whose offset is in the target's table; fuzz_mpa: 9
policy octets + every mpa/mpa_error frame; fuzz_ddp: every ddp/ddp_error
ULPDU. Run from the repository root: python3 tests/proto/gen/gencorpus.py
"""
import glob
import hashlib
import os
import re

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


if __name__ == '__main__':
    main()
