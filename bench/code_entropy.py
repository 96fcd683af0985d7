#!/usr/bin/env python3
"""How far a context-modelled entropy stage could take the lorenzo quant-codes of a 2-D field.

Recomputes gsz's 2-D Lorenzo codes (dual quantization on the lattice of step 2*eb, prediction from the
west, north and north-west lattice values inside 32x32 chunks, zero outside a chunk) in numpy and prints
empirical entropies of the residuals under several contexts: order 0 (what Huffman + run tokens approach),
the previous code, the code above (north), both, and three neighbours.  Empirical conditional entropies
leave out the cost of the model, so they are upper bounds on what a context coder reaches.

  python3 bench/code_entropy.py FIELD.f32|FIELD.f64 NX NY [REL ...]     (NX fastest, as gsz's -l NXxNY)
"""
import sys

import numpy as np


def entropy(a):
    counts = np.unique(a, return_counts=True)[1]
    p = counts / counts.sum()
    return float(-(p * np.log2(p)).sum())


def conditional_entropy(a, context):
    return entropy(context.astype(np.int64) * 1000003 + a) - entropy(context)


def lorenzo_residuals(q, chunk=32):
    res = np.zeros_like(q)
    for cy in range(0, q.shape[0], chunk):
        for cx in range(0, q.shape[1], chunk):
            b = q[cy:cy + chunk, cx:cx + chunk]
            p = np.zeros((b.shape[0] + 1, b.shape[1] + 1), dtype=np.int64)
            p[1:, 1:] = b
            res[cy:cy + chunk, cx:cx + chunk] = p[1:, 1:] - p[1:, :-1] - p[:-1, 1:] + p[:-1, :-1]
    return res


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    nx, ny = int(sys.argv[2]), int(sys.argv[3])
    dtype = np.float64 if sys.argv[1].endswith(".f64") else np.float32
    x_bytes = np.dtype(dtype).itemsize
    x = np.fromfile(sys.argv[1], dtype=dtype).reshape(ny, nx).astype(np.float64)
    finite = x[np.isfinite(x)]
    for rel in [float(r) for r in sys.argv[4:]] or [1e-2, 1e-3, 1e-4]:
        eb = rel * (finite.max() - finite.min())
        res = lorenzo_residuals(np.rint(x / (2 * eb)).astype(np.int64))
        r = res.ravel()
        west = np.concatenate([[0], r[:-1]])
        north = np.vstack([np.zeros((1, nx), dtype=np.int64), res[:-1]]).ravel()
        northeast = np.vstack([np.zeros((1, nx), dtype=np.int64),
                               np.hstack([res[:-1, 1:], np.zeros((ny - 1, 1), dtype=np.int64)])]).ravel()
        rows = [
            ("order 0", entropy(r)),
            ("previous code (clipped to +-8)", conditional_entropy(r, np.clip(west, -8, 8))),
            ("code above (clipped to +-8)", conditional_entropy(r, np.clip(north, -8, 8))),
            ("previous and above (+-4 each)", conditional_entropy(r, np.clip(west, -4, 4) * 9 + np.clip(north, -4, 4))),
            ("west, north, north-east (+-2 each)",
             conditional_entropy(r, (np.clip(west, -2, 2) * 5 + np.clip(north, -2, 2)) * 5 + np.clip(northeast, -2, 2))),
        ]
        print(f"rel {rel:g}: {np.mean(r == 0):.1%} zero residuals")
        for name, bits in rows:
            print(f"  {name:38s} {bits:6.3f} bits/value -> ratio {8 * x_bytes / bits:6.1f}")


if __name__ == "__main__":
    main()
