#!/usr/bin/env python3
"""NVIDIA's proprietary GPU lossless coders (nvCOMP Bitcomp, and ANS and Zstd for context) over gsz archives
written with `--lossless none` (Huffman output only), for comparison with gsz's own second lossless stage
(`--lossless auto`, run tokens folded into the Huffman alphabet).  Issue 5 asks for this side-by-side.

    python3 bench/bitcomp_compare.py DIR|FILE... [--coders Bitcomp,ANS,Zstd]
                                    # every DIR/*.gsz; needs a GPU, torch and nvidia-nvcomp-cu13

Prints one JSON object per archive and coder: the archive's size, the coder's output size, and the coder's
compress and decompress throughput on the GPU (medians of 7, the archive tiled to at least 256 MB so the GPU
is busy; GB/s of archive bytes).  The round trip is checked byte for byte.
"""
import glob
import json
import os
import statistics
import sys
import time

import torch
from nvidia import nvcomp

TILE_BYTES = 256 * 1000 * 1000
REPEATS = 7


def to_torch(arr):
    try:
        return torch.from_dlpack(arr)
    except Exception:  # older nvcomp: the CUDA array interface only
        return torch.as_tensor(arr, device="cuda")


def timed(fn):
    times = []
    out = None
    for _ in range(REPEATS):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return out, statistics.median(times)


def size_of(arr):
    size = getattr(arr, "buffer_size", None)
    return int(size) if size is not None else int(to_torch(arr).numel() * to_torch(arr).element_size())


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--coders")]
    coders = ["Bitcomp", "ANS", "Zstd"]
    for a in sys.argv[1:]:
        if a.startswith("--coders="):
            coders = a.split("=", 1)[1].split(",")
    paths = []
    for a in args or [".bitcomp"]:
        paths += sorted(glob.glob(os.path.join(a, "*.gsz"))) if os.path.isdir(a) else [a]
    print(json.dumps({"nvcomp": getattr(nvcomp, "__version__", "?"), "gpu": torch.cuda.get_device_name(0)}),
          flush=True)
    for path in paths:
        data = open(path, "rb").read()
        one = torch.frombuffer(bytearray(data), dtype=torch.uint8).cuda()
        copies = max(1, -(-TILE_BYTES // len(data)))
        tiled = one.repeat(copies)
        for algorithm in coders:
            row = {"archive": os.path.basename(path), "archive_bytes": len(data), "coder": algorithm}
            try:
                codec = nvcomp.Codec(algorithm=algorithm)
                small = codec.encode(nvcomp.as_array(one))
                row["coded_bytes"] = size_of(small)
                back = to_torch(codec.decode(small)).view(torch.uint8).reshape(-1)
                row["round_trip"] = bool(torch.equal(back, one))
                big_in = nvcomp.as_array(tiled)
                big, t_enc = timed(lambda: codec.encode(big_in))
                dec, t_dec = timed(lambda: codec.decode(big))
                row["round_trip"] = row["round_trip"] and bool(
                    torch.equal(to_torch(dec).view(torch.uint8).reshape(-1), tiled))
                row["tiled_bytes"] = tiled.numel()
                row["tiled_coded_bytes"] = size_of(big)
                row["compress_gbps"] = tiled.numel() / t_enc / 1e9
                row["decompress_gbps"] = tiled.numel() / t_dec / 1e9
            except Exception as e:  # report and go on with the next coder
                row["error"] = f"{type(e).__name__}: {e}"[:300]
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
