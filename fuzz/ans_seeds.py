#!/usr/bin/env python3
"""Seeds for ans_decode_fuzz from the lorenzo archives with rANS sections:
the fuzzer's 10-byte head (section sizes, levels 1, radius 512, code count)
followed by the archive's ans_tables, ans_lanes and ans_stream payloads.
Usage: ans_seeds.py OUT_DIR ARCHIVE..."""
import os
import struct
import sys

ANS_TABLES, ANS_LANES, ANS_STREAM = 14, 15, 16


def sections(blob):
    if blob[:3] != b"GSZ" or len(blob) < 128:
        return None
    rank, pipeline = blob[5], blob[7]
    dims = struct.unpack_from("<4Q", blob, 8)
    count = struct.unpack_from("<I", blob, 72)[0]
    found = {}
    for i in range(count):
        kind, _, offset, length, _ = struct.unpack_from("<IIQQQ", blob, 128 + 32 * i)
        found[kind] = blob[offset:offset + length]
    n = 1
    for d in dims[:rank]:
        n *= d
    return pipeline, n, found


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for path in sys.argv[2:]:
        parsed = sections(open(path, "rb").read())
        if not parsed:
            continue
        pipeline, n, found = parsed
        if pipeline != 1 or ANS_TABLES not in found or n > 1 << 18:
            continue
        tables, lanes, stream = found[ANS_TABLES], found[ANS_LANES], found[ANS_STREAM]
        head = struct.pack("<HHBBI", len(tables), len(lanes), 0, 2, n - 1)
        name = os.path.join(out, "ans_" + os.path.basename(path))
        open(name, "wb").write(head + tables + lanes + stream)


if __name__ == "__main__":
    main()
