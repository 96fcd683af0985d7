#!/usr/bin/env python3
"""CPU benchmarks for bench/RESULTS.md.

  python3 bench/cpu_bench.py ratios [lorenzo|fast]  # every shared field at rel 1e-2/1e-3/1e-4: ratio, PSNR, max error
  python3 bench/cpu_bench.py peers                  # issue 5's table (interp against SZ3's ratio and PSNR
                                                    # from PEERS.md, fields without fill) and issue 4's row
                                                    # (interp ratio >= lorenzo ratio, every field, rel 1e-3/1e-4)
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
GSZ = Path(os.environ.get("GSZ_BIN", ROOT / "build" / "gsz"))
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


def sz3_peers():
    """SZ3's ratio and PSNR per field and bound from PEERS.md's first table."""
    peers = {}
    lines = (DATA / "PEERS.md").read_text().splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("## SZ3"))
    for line in lines[start + 1:]:
        if line.startswith("## "):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 7 and cells[0].endswith((".f32", ".f64")):
            peers[cells[0]] = ([float(c) for c in cells[1:4]], [float(c) for c in cells[4:7]])
    return peers


def peers():
    readme = (DATA / "README.md").read_text()
    filled = {l.split("|")[1].strip() for l in readme.splitlines()
              if l.startswith("| ") and "none" not in l.split("|")[7] and l.split("|")[1].strip().endswith(("f32", "f64"))}
    sz3 = sz3_peers()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for path, dtype, dims in fields():
            for eb in BOUNDS:
                for pipeline in ("interp", "lorenzo"):
                    r = gsz("compress", "-i", str(path), "-t", dtype, "-l", dims, "-p", pipeline, "-m", "rel",
                            "-e", str(eb), "--verify", "--json", "-f", "-o", os.path.join(tmp, "a.gsz"))
                    assert r["bound_violations"] == 0 and r["nonfinite_mismatches"] == 0, (path, eb, pipeline)
                    results[path.name, eb, pipeline] = r
    print("Issue 5: interp (default options) against SZ3, fields without fill values")
    print()
    print("| field | rel | SZ3 ratio (PSNR) | interp: stage, ratio (PSNR) | interp / SZ3 | PSNR - SZ3's |")
    print("|---|---|---|---|---|---|")
    met = total = 0
    for path, _, _ in fields():
        if path.name in filled or path.name not in sz3:
            continue
        for k, eb in enumerate(BOUNDS):
            r = results[path.name, eb, "interp"]
            share = r["ratio"] / sz3[path.name][0][k]
            dpsnr = r["psnr"] - sz3[path.name][1][k]
            ok = share >= 0.9 and dpsnr >= -1
            met += ok
            total += 1
            print(f"| {path.stem} | {eb:g} | {sz3[path.name][0][k]:.2f} ({sz3[path.name][1][k]:.1f}) | "
                  f"{r['lossless']} {r['ratio']:.2f} ({r['psnr']:.1f}) | {'' if ok else '**'}{100 * share:.0f}%"
                  f"{'' if ok else '**'} | {dpsnr:+.1f} |")
    print()
    print(f"met (>= 90% of SZ3's ratio, PSNR >= SZ3's - 1 dB): {met} of {total}")
    print()
    print("Issue 4: interp ratio >= lorenzo ratio (default options), every field")
    print()
    print("| field | rel 1e-3 interp / lorenzo | rel 1e-4 interp / lorenzo |")
    print("|---|---|---|")
    wins = {1e-3: 0, 1e-4: 0}
    n = 0
    for path, _, _ in fields():
        n += 1
        cells = []
        for eb in (1e-3, 1e-4):
            i, l = results[path.name, eb, "interp"]["ratio"], results[path.name, eb, "lorenzo"]["ratio"]
            wins[eb] += i >= l
            cells.append(f"{i:.2f} / {l:.2f} ({100 * (i / l - 1):+.1f}%)")
        print(f"| {path.stem} | {cells[0]} | {cells[1]} |")
    print()
    print(f"interp >= lorenzo: rel 1e-3 {wins[1e-3]} of {n}, rel 1e-4 {wins[1e-4]} of {n} (80% = {0.8 * n:.1f})")


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else "ratios"
    {"ratios": ratios, "peers": peers, "throughput": throughput}[command](*sys.argv[2:])
