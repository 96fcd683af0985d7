#!/usr/bin/env python3
"""CPU benchmarks for bench/RESULTS.md.

  python3 bench/cpu_bench.py ratios [lorenzo|fast]  # every shared field at rel 1e-2/1e-3/1e-4: ratio, PSNR, max error
  python3 bench/cpu_bench.py throughput             # etopo5 at rel 1e-2/1e-3/1e-4, in-process (gsz bench,
                                                    # medians), 1 and all threads, both pipelines, with SZ3
                                                    # (pysz, single thread, in process) measured in the same run

Prints Markdown tables. Needs build/gsz (Release) and ../shared/data.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GSZ = ROOT / "build" / "gsz"
DATA = Path(os.environ.get("GSZ_DATA_DIR", ROOT.parent / "shared" / "data"))
BOUNDS = [1e-2, 1e-3, 1e-4]


def fields():
    for p in sorted(DATA.glob("*.f[36][24]")):
        dims = p.stem.rsplit("_", 1)[1].split("x")
        yield p, ("f64" if p.suffix == ".f64" else "f32"), "x".join(reversed(dims))


def gsz(*args):
    out = subprocess.run([str(GSZ), *args], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def ratios(pipeline="lorenzo"):
    print(f"pipeline {pipeline}")
    print()
    print("| field | ratio 1e-2 | ratio 1e-3 | ratio 1e-4 | PSNR 1e-2 / 1e-3 / 1e-4 | max err / eb (worst) | outliers 1e-3 |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        arc = Path(tmp) / "a.gsz"
        for path, dtype, dims in fields():
            rs, ps, worst, outl = [], [], 0.0, ""
            for eb in BOUNDS:
                j = gsz("compress", "-i", str(path), "-o", str(arc), "-t", dtype, "-l", dims, "-m", "rel",
                        "-e", str(eb), "-p", pipeline, "--device", "cpu", "--verify", "--json", "--force")
                assert j["bound_violations"] == 0 and j["nonfinite_mismatches"] == 0, j
                rs.append(f"{j['ratio']:.2f}")
                ps.append("inf" if j["psnr"] is None else f"{j['psnr']:.1f}")
                if j["error_bound_abs"] > 0:
                    worst = max(worst, j["max_abs_error"] / j["error_bound_abs"])
                if eb == 1e-3:
                    outl = str(j.get("num_outliers", 0))
            print(f"| {path.stem} | {' | '.join(rs)} | {' / '.join(ps)} | {worst:.6f} | {outl} |")


def median_time(cmd, repeat=5):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def throughput():
    path = DATA / "etopo5_relief_2161x4320.f32"
    nbytes = path.stat().st_size
    rows = []
    for pipeline in ["lorenzo", "fast"]:
        for threads in [1, os.cpu_count()]:
            for eb in BOUNDS:
                j = gsz("bench", "-i", str(path), "-t", "f32", "-l", "4320x2161", "-m", "rel", "-e", str(eb),
                        "-p", pipeline, "--device", "cpu", "--threads", str(threads), "--repeat", "5", "--json")
                rows.append((f"gsz {pipeline}, {threads} thread(s)", eb, j["compress_gbps"], j["decompress_gbps"],
                             j["ratio"]))
    # Whole process (read file, compress, write archive / read, decompress, write), rel 1e-3.
    whole = []
    with tempfile.TemporaryDirectory() as tmp:
        arc, out = Path(tmp) / "e.gsz", Path(tmp) / "e.out"
        for pipeline in ["lorenzo", "fast"]:
            for threads in [1, os.cpu_count()]:
                c = median_time([str(GSZ), "compress", "-i", str(path), "-o", str(arc), "-t", "f32", "-l", "4320x2161",
                                 "-m", "rel", "-e", "1e-3", "-p", pipeline, "--device", "cpu", "--force",
                                 "--threads", str(threads)])
                d = median_time([str(GSZ), "decompress", "-i", str(arc), "-o", str(out), "--force", "--device", "cpu",
                                 "--threads", str(threads)])
                whole.append((f"gsz {pipeline}, {threads} thread(s), whole process", 1e-3, nbytes / c / 1e9,
                              nbytes / d / 1e9, nbytes / arc.stat().st_size))
    try:
        import numpy as np
        from pysz import sz, szConfig, szErrorBoundMode
        data = np.fromfile(path, dtype=np.float32).reshape(2161, 4320)
        for eb in BOUNDS:
            conf = szConfig()
            conf.errorBoundMode = szErrorBoundMode.REL
            conf.relErrorBound = eb
            conf.openmp = False
            ct, dt = [], []
            for _ in range(5):
                t0 = time.perf_counter()
                comp, ratio = sz.compress(data, conf)
                ct.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                sz.decompress(comp, np.float32, data.shape)
                dt.append(time.perf_counter() - t0)
            rows.append(("SZ3 (pysz), 1 thread", eb, nbytes / statistics.median(ct) / 1e9,
                         nbytes / statistics.median(dt) / 1e9, ratio))
    except Exception as e:  # pysz is optional
        print(f"(SZ3 baseline skipped: {e})", file=sys.stderr)
    print(f"etopo5_relief_2161x4320.f32 ({nbytes/1e6:.1f} MB), {os.cpu_count()} cores, in-process medians of 5")
    print()
    print("| run | rel bound | compress GB/s | decompress GB/s | ratio |")
    print("|---|---|---|---|---|")
    for name, eb, c, d, r in rows + whole:
        print(f"| {name} | {eb:g} | {c:.3f} | {d:.3f} | {r:.2f} |")


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else "ratios"
    {"ratios": ratios, "throughput": throughput}[command](*sys.argv[2:])
