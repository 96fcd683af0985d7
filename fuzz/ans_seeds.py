#!/usr/bin/env python3
"""Seeds for ans_decode_fuzz from the lorenzo archives with rANS sections,
and from the interp archives whose rANS is in column strips (format version 12):
the fuzzer's 10-byte head (section sizes, levels 1, radius 512, the lanes'
and tables' layouts, code count; one row of codes, no strip shape)
followed by the archive's ans_tables, ans_lanes and ans_stream payloads.
Usage: ans_seeds.py OUT_DIR ARCHIVE..."""
import os
import struct
import sys

ANS_TABLES, ANS_LANES, ANS_STREAM = 14, 15, 16


def varint(blob, pos):
    value, shift = 0, 0
    while True:
        b = blob[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, pos


def sections(blob):
    """(version, pipeline, element count, {kind: payload}) of a gsz archive
    of either container (docs/FORMAT.md "Structure")."""
    if blob[:3] != b"GSZ" or len(blob) < 16:
        return None
    version, rank, pipeline = blob[3], blob[5], blob[7]
    found = {}
    if version >= 8:   # compact: varint dims and lengths, payloads after two checksums
        pos = 9 + (blob[8] & 1)
        dims = []
        for _ in range(rank):
            d, pos = varint(blob, pos)
            dims.append(d)
        pos += 32
        count = blob[pos]
        pos += 1
        table = []
        for _ in range(count):
            kind = blob[pos]
            length, pos = varint(blob, pos + 1)
            table.append((kind, length))
        offset = pos + 16
        for kind, length in table:
            found[kind] = blob[offset:offset + length]
            offset += length
    else:              # fixed: 128-byte header, 32-byte entries
        dims = struct.unpack_from("<4Q", blob, 8)[:rank]
        count = struct.unpack_from("<I", blob, 72)[0]
        for i in range(count):
            kind, _, offset, length, _ = struct.unpack_from("<IIQQQ", blob, 128 + 32 * i)
            found[kind] = blob[offset:offset + length]
    n = 1
    for d in dims:
        n *= d
    return version, pipeline, n, found


def tag(path):
    """The archive's folder (tests/golden/v<N>) and name: each version's archive its own seed."""
    return os.path.basename(os.path.dirname(os.path.abspath(path))) + "_" + os.path.basename(path)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for path in sys.argv[2:]:
        parsed = sections(open(path, "rb").read())
        if not parsed:
            continue
        version, pipeline, n, found = parsed
        if ANS_TABLES not in found or n > 1 << 18:
            continue
        tables, lanes, stream = found[ANS_TABLES], found[ANS_LANES], found[ANS_STREAM]
        if version >= 12 and tables[9] != 0:
            # strips (interp): the fuzzer's strip shape (byte 5 bit 6) of rows of 32 << (byte 4 / 8 % 3)
            # codes and 1 + byte 4 % 8 levels, radius 32768 (3), lanes from state 1, version 12's tables
            levels, log = tables[4], tables[9]
            head = struct.pack("<HHBBI", len(tables), len(lanes), 8 * (log - 5) + levels - 1, 3 | 64, n - 1)
            name = os.path.join(out, "ans_strips_" + tag(path))
            open(name, "wb").write(head + tables + lanes + stream)
            continue
        if pipeline != 1:
            continue
        # byte 5: radius 512 (2), bit 2 for the fixed lanes of versions 3 to 6, bit 3 for the tables
        # of versions 3 to 7 (no class lag byte, no references), bit 4 for the packed lanes from
        # state 2^16 of versions 7 to 10 (version 11 on: from state 1), bit 5 for the tables of
        # versions 8 to 11 (version 12 on: with the strip width's byte)
        flags = (2 | (4 if version < 7 else 0) | (8 if version < 8 else 0) | (16 if 7 <= version < 11 else 0)
                 | (32 if 8 <= version < 12 else 0))
        head = struct.pack("<HHBBI", len(tables), len(lanes), 0, flags, n - 1)
        name = os.path.join(out, "ans_" + tag(path))
        open(name, "wb").write(head + tables + lanes + stream)


if __name__ == "__main__":
    main()
