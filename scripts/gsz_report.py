#!/usr/bin/env python3
"""Renders the report that `gsz assess --report DIR` prepares.

DIR holds report.json (the metrics, as `gsz assess --json` prints them, plus a "slice" entry), the middle
slice of the original, the decompressed array and the error as raw little-endian float64 files, and rd.jsonl
(one line per assessed archive: bit rate and PSNR). This script writes DIR/index.html with PNG images:
the three slices with colour bars, the error PDF, the error autocorrelation, and the rate-distortion curve.
Needs numpy and matplotlib.
"""
import html
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def main(out: Path) -> None:
    rep = json.loads((out / "report.json").read_text())
    sl = rep["slice"]
    shape = tuple(reversed(sl["dims"]))  # slowest first for numpy
    images = []

    def load(name):
        return np.fromfile(out / sl[name], dtype="<f8").reshape(shape)

    orig, dec, err = load("original"), load("decompressed"), load("error")
    if len(shape) == 2:
        vmin, vmax = np.nanmin(orig), np.nanmax(orig)
        elim = float(np.nanmax(np.abs(err))) or 1.0
        for name, data, cmap, lo, hi in [("original", orig, "viridis", vmin, vmax),
                                          ("decompressed", dec, "viridis", vmin, vmax),
                                          ("error", err, "RdBu_r", -elim, elim)]:
            fig, ax = plt.subplots(figsize=(6, 5))
            im = ax.imshow(data, cmap=cmap, vmin=lo, vmax=hi, origin="lower", aspect="auto")
            fig.colorbar(im, ax=ax, label="decompressed - original" if name == "error" else "value")
            ax.set_title(f"{name}: {sl['where']}")
            ax.set_xlabel("x (fastest)")
            ax.set_ylabel("y")
            fig.tight_layout()
            fig.savefig(out / f"{name}.png", dpi=100)
            plt.close(fig)
            images.append(f"{name}.png")
    else:
        fig, ax = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
        ax[0].plot(orig, lw=0.8, label="original")
        ax[0].plot(dec, lw=0.8, label="decompressed")
        ax[0].legend()
        ax[1].plot(err, lw=0.8, color="tab:red")
        ax[1].set_ylabel("error")
        fig.tight_layout()
        fig.savefig(out / "values.png", dpi=100)
        plt.close(fig)
        images.append("values.png")

    if "error_pdf" in rep:
        pdf = rep["error_pdf"]
        mass = np.array(pdf["mass"])
        edges = np.linspace(pdf["min"], pdf["max"], len(mass) + 1)
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.stairs(mass, edges, fill=True)
        ax.set_xlabel("error (decompressed - original)")
        ax.set_ylabel("probability mass per bin")
        ax.set_title("error PDF")
        fig.tight_layout()
        fig.savefig(out / "error_pdf.png", dpi=100)
        plt.close(fig)
        images.append("error_pdf.png")
    if rep.get("error_autocorr"):
        fig, ax = plt.subplots(figsize=(6, 4))
        lags = np.arange(1, len(rep["error_autocorr"]) + 1)
        ax.plot(lags, rep["error_autocorr"], label="flattened")
        for a, ac in enumerate(rep.get("error_autocorr_axis", [])):
            ax.plot(np.arange(1, len(ac) + 1), ac, lw=0.8, label=f"axis {a}")
        ax.axhline(0, color="gray", lw=0.5)
        ax.set_xlabel("lag")
        ax.set_ylabel("autocorrelation of the error")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / "autocorr.png", dpi=100)
        plt.close(fig)
        images.append("autocorr.png")
    rd_path = out / "rd.jsonl"
    if rd_path.exists():
        points = [json.loads(line) for line in rd_path.read_text().splitlines() if line.strip()]
        points = [p for p in points if isinstance(p.get("psnr"), (int, float))]
        if points:
            points.sort(key=lambda p: p["bit_rate"])
            fig, ax = plt.subplots(figsize=(6, 4))
            ax.plot([p["bit_rate"] for p in points], [p["psnr"] for p in points], "o-")
            for p in points:
                ax.annotate(p["label"], (p["bit_rate"], p["psnr"]), fontsize=7)
            ax.set_xlabel("bit rate (bits/value)")
            ax.set_ylabel("PSNR (dB)")
            ax.set_title("rate-distortion")
            fig.tight_layout()
            fig.savefig(out / "rate_distortion.png", dpi=100)
            plt.close(fig)
            images.append("rate_distortion.png")

    keys = ["num_elements", "value_range", "max_abs_error", "mean_abs_error", "max_rel_error", "max_pwr_error",
            "mse", "rmse", "nrmse", "psnr", "snr", "pearson", "ssim", "compression_ratio", "bit_rate"]
    rows = "".join(f"<tr><td>{k}</td><td>{html.escape(str(rep[k]))}</td></tr>" for k in keys if k in rep)
    for k in ["derivative1", "derivative2", "laplacian", "divergence"]:
        if rep.get(k):
            rows += f"<tr><td>{k} PSNR / max error</td><td>{rep[k]['psnr']} / {rep[k]['max_abs_error']}</td></tr>"
    figs = "".join(f'<figure><img src="{i}" alt="{i}"></figure>' for i in images)
    title = f"gsz assess: {html.escape(rep['decompressed'])} vs {html.escape(rep['original'])}"
    (out / "index.html").write_text(
        f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title>"
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td{border:1px solid #ccc;padding:2px 8px}figure{display:inline-block;margin:4px}</style></head>"
        f"<body><h1>{title}</h1><p>{html.escape(rep['dtype'])}, dims {rep['dims']} (fastest first); "
        f"error = decompressed - original; definitions in docs/METRICS.md.</p>"
        f"<table>{rows}</table>{figs}</body></html>")
    print(out / "index.html")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
