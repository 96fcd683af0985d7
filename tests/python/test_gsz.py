"""The `gsz` Python module as a numpy user meets it.

Run by CTest with PYTHONPATH at the built module, GSZ_BIN at the command
line tool (the archives must be the tool's, byte for byte) and GSZ_SOURCE_DIR
at the repository (its bundled wmag field).  Exits 77 (CTest: skipped, with
the reason printed) where numpy is not installed.
"""
import os
import struct
import subprocess
import sys
import tempfile
import threading
import unittest

try:
    import numpy as np
except ImportError:  # pragma: no cover
    print("SKIPPED: numpy is not installed for", sys.executable)
    sys.exit(77)

import gsz

SOURCE = os.environ.get("GSZ_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
WMAG = os.path.join(SOURCE, "data", "sperr_wmag_91x91x91.f32")


def wmag():
    return np.fromfile(WMAG, dtype=np.float32).reshape(91, 91, 91)


def max_error(a, b):
    return float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))


def cli_archive(a, *args):
    """The archive the command line tool writes for `a` (dims fastest first)."""
    with tempfile.TemporaryDirectory() as tmp:
        raw, arc = os.path.join(tmp, "in.raw"), os.path.join(tmp, "out.gsz")
        np.ascontiguousarray(a).tofile(raw)
        dims = "x".join(str(d) for d in reversed(a.shape))
        dtype = "f64" if a.dtype == np.float64 else "f32"
        subprocess.run([os.environ["GSZ_BIN"], "compress", "-i", raw, "-o", arc, "-t", dtype, "-l", dims,
                        "--device", "cpu", *args], check=True, capture_output=True)
        with open(arc, "rb") as f:
            return f.read()


class RoundTrip(unittest.TestCase):
    def test_every_value_within_the_bound_and_the_clis_bytes(self):
        a = wmag()
        for pipeline in ["lorenzo", "interp", "fast", "auto"]:
            for mode, bound in [("rel", 1e-3), ("abs", 0.05)]:
                with self.subTest(pipeline=pipeline, mode=mode):
                    arc = gsz.compress(a, bound, mode=mode, pipeline=pipeline, device="cpu")
                    self.assertIsInstance(arc, bytes)
                    b = gsz.decompress(arc, device="cpu")
                    self.assertEqual(b.shape, a.shape)
                    self.assertEqual(b.dtype, np.float32)
                    info = gsz.info(arc)
                    self.assertLessEqual(max_error(a, b), info["bound_abs"])
                    if mode == "abs":
                        self.assertEqual(info["bound_abs"], bound)
                    self.assertEqual(arc, cli_archive(a, "-m", mode, "-e", repr(bound), "-p", pipeline))

    def test_options_are_the_command_lines(self):
        a = wmag()
        y, x = np.mgrid[0:300, 0:256]
        land = (np.sin(0.02 * x) + 0.3 * np.cos(0.05 * y) > 0.8)
        sst = np.where(land, np.float32(1e20), (280 + 10 * np.sin(0.01 * x) * np.cos(0.02 * y))).astype(np.float32)
        cases = [
            (a, dict(pipeline="interp", interp_alpha=1.5, interp_beta=3.0), ["--interp-alpha", "1.5", "--interp-beta", "3"]),
            (a, dict(pipeline="interp", interp_spline="natural", interp_order="xyz"),
             ["--interp-spline", "natural", "--interp-order", "xyz"]),
            (a, dict(pipeline="interp", interp_anchors="raw", interp_tiles="each", interp_jump_guard="off"),
             ["--interp-anchors", "raw", "--interp-tiles", "each", "--interp-jump-guard", "off"]),
            (a, dict(pipeline="fast", block_size=64), ["--block", "64"]),
            (a.ravel()[:100000], dict(pipeline="interp", interp_anchor_stride=16), ["--interp-anchor-stride", "16"]),
            (sst, dict(pipeline="interp", ans_strips="off"), ["--ans-strips", "off"]),
            (sst, dict(pipeline="lorenzo", fill_value="off"), ["--fill-value", "off"]),
            (sst, dict(pipeline="lorenzo", fill_value=1e20), ["--fill-value", "1e20"]),
            (sst, dict(pipeline="interp", components="off", lossless="none", radius=1024),
             ["--components", "off", "--lossless", "none", "--radius", "1024"]),
        ]
        for arr, kwargs, flags in cases:
            with self.subTest(**{k: str(v) for k, v in kwargs.items()}):
                arc = gsz.compress(arr, 1e-3, **kwargs)
                self.assertEqual(arc, cli_archive(arr, "-e", "0.001", "-p", kwargs["pipeline"], *flags))
        # The options change the archive (the comparison above is not of defaults).
        self.assertNotEqual(gsz.compress(a, 1e-3, pipeline="interp", interp_alpha=1.5, interp_beta=3.0),
                            gsz.compress(a, 1e-3, pipeline="interp"))
        info = gsz.info(gsz.compress(sst, 1e-3, pipeline="interp"))
        self.assertEqual(info["fill_value"], float(np.float32(1e20)))
        self.assertEqual(info["fill_points"], int(land.sum()))
        for kwargs in [dict(interp_spline="cubic"), dict(interp_order="wxyz"), dict(fill_value="none"),
                       dict(interp_tiles="some")]:
            with self.subTest(**kwargs):
                with self.assertRaises(ValueError):
                    gsz.compress(a, 1e-3, pipeline="interp", **kwargs)
        with self.assertRaises(TypeError):  # keyword-only
            gsz.compress(a, 1e-3, "rel", "interp", "auto", "cpu", 0, 0, 64)

    def test_shapes_keep_their_orientation(self):
        rng = np.random.default_rng(3)
        for shape in [(1000,), (50, 80), (7, 30, 40), (3, 4, 20, 30)]:
            with self.subTest(shape=shape):
                a = np.cumsum(rng.standard_normal(shape), axis=-1).astype(np.float32)
                arc = gsz.compress(a, 1e-3, mode="abs", device="cpu")
                b = gsz.decompress(arc)
                self.assertEqual(b.shape, a.shape)
                self.assertLessEqual(max_error(a, b), 1e-3)
                self.assertEqual(gsz.info(arc)["shape"], shape)
                # numpy's (50, 80) is the tool's 80x50 (fastest first).
                self.assertEqual(arc, cli_archive(a, "-m", "abs", "-e", "0.001"))

    def test_float64_nan_and_inf_come_back_bit_exact(self):
        y, x = np.mgrid[0:200, 0:300]
        a = np.sin(0.05 * x) * np.cos(0.03 * y) + 1e-3 * x
        payload_nan = struct.unpack("<d", struct.pack("<Q", 0x7FF8DEADBEEF0001))[0]
        a[3, 4], a[10, 10], a[100, 7], a[199, 299] = payload_nan, np.inf, -np.inf, np.nan
        arc = gsz.compress(a, 1e-6, mode="abs", pipeline="interp")
        b = gsz.decompress(arc)
        self.assertEqual(b.dtype, np.float64)
        finite = np.isfinite(a)
        self.assertLessEqual(float(np.max(np.abs(a[finite] - b[finite]))), 1e-6)
        self.assertTrue(np.array_equal(a[~finite].view(np.uint64), b[~finite].view(np.uint64)))
        self.assertEqual(int((~finite).sum()), 4)

    def test_a_strided_array_is_compressed_as_its_values(self):
        a = wmag()
        view = a[:, ::2, 1:]
        self.assertFalse(view.flags["C_CONTIGUOUS"])
        arc = gsz.compress(view, 1e-3)
        self.assertEqual(arc, gsz.compress(np.ascontiguousarray(view), 1e-3))
        self.assertEqual(gsz.decompress(arc).shape, view.shape)

    def test_threads_never_change_the_bytes(self):
        a = wmag()
        self.assertEqual(gsz.compress(a, 1e-4, pipeline="interp", threads=1),
                         gsz.compress(a, 1e-4, pipeline="interp", threads=2))

    def test_lossless_bound_zero(self):
        a = wmag()
        b = gsz.decompress(gsz.compress(a, 0.0))
        self.assertTrue(np.array_equal(a.view(np.uint32), b.view(np.uint32)))


class Buffers(unittest.TestCase):
    def test_decompress_reads_any_buffer_and_writes_into_out(self):
        a = wmag()
        arc = gsz.compress(a, 1e-3, pipeline="interp")
        ref = gsz.decompress(arc)
        for buf in [bytearray(arc), memoryview(arc), np.frombuffer(arc, dtype=np.uint8)]:
            with self.subTest(kind=type(buf).__name__):
                self.assertTrue(np.array_equal(gsz.decompress(buf), ref))
        out = np.empty_like(a)
        self.assertIs(gsz.decompress(arc, out=out), out)
        self.assertTrue(np.array_equal(out, ref))
        # A flat array of the right size and dtype is fine too; anything else is refused.
        flat = np.empty(a.size, dtype=np.float32)
        gsz.decompress(arc, out=flat)
        self.assertTrue(np.array_equal(flat, ref.ravel()))
        for bad in [np.empty(a.size, dtype=np.float64), np.empty(a.size - 1, dtype=np.float32),
                    np.empty((91, 91, 182), dtype=np.float32)[:, :, ::2], [0.0] * a.size]:
            with self.assertRaises(ValueError):
                gsz.decompress(arc, out=bad)

    def test_the_gil_is_released_and_threads_compress_alike(self):
        a = wmag()
        want = gsz.compress(a, 1e-3, pipeline="interp", threads=1)
        got = [None] * 4

        def work(k):
            got[k] = gsz.compress(a, 1e-3, pipeline="interp", threads=1)

        ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertTrue(all(g == want for g in got))


class Info(unittest.TestCase):
    def test_what_an_archive_holds(self):
        a = wmag()
        arc = gsz.compress(a, 1e-3, pipeline="interp")
        info = gsz.info(arc)
        self.assertEqual(info["shape"], (91, 91, 91))
        self.assertEqual(info["dtype"], "float32")
        self.assertEqual(info["pipeline"], "interp")
        self.assertEqual(info["mode"], "rel")
        self.assertEqual(info["bound"], 1e-3)
        self.assertAlmostEqual(info["bound_abs"], 1e-3 * (float(a.max()) - float(a.min())), delta=1e-12)
        self.assertEqual(info["archive_bytes"], len(arc))
        self.assertEqual(info["original_bytes"], a.nbytes)
        self.assertAlmostEqual(info["ratio"], a.nbytes / len(arc))
        self.assertIn(info["lossless"], ["none", "runs", "ans"])
        self.assertEqual(info["header_bytes"] + sum(info["sections"].values()), len(arc))


class Assess(unittest.TestCase):
    def test_the_metrics_are_the_tools_and_numpys(self):
        a = wmag()
        b = gsz.decompress(gsz.compress(a, 1e-3, pipeline="interp"))
        r = gsz.assess(a, b)
        e = b.astype(np.float64) - a.astype(np.float64)
        rng = float(a.max()) - float(a.min())
        self.assertEqual(r["num_elements"], a.size)
        self.assertEqual(r["max_abs_error"], float(np.max(np.abs(e))))
        self.assertAlmostEqual(r["mse"], float(np.mean(e * e)), delta=1e-12 * rng * rng)
        self.assertAlmostEqual(r["psnr"], 20 * np.log10(rng) - 10 * np.log10(np.mean(e * e)), places=9)
        self.assertEqual(r["error_pdf"].shape, (2000,))
        self.assertAlmostEqual(float(r["error_pdf"].sum()), 1.0, places=9)
        self.assertEqual(r["error_autocorr"].shape, (100,))
        # The command line tool's numbers, from the same arrays.
        with tempfile.TemporaryDirectory() as tmp:
            orig, dec = os.path.join(tmp, "a.f32"), os.path.join(tmp, "b.f32")
            a.tofile(orig)
            b.tofile(dec)
            out = subprocess.run([os.environ["GSZ_BIN"], "assess", "--orig", orig, "--dec", dec, "-t", "f32", "-l",
                                  "91x91x91", "--json"], check=True, capture_output=True, text=True).stdout
        import json
        cli = json.loads(out)
        for key in ["psnr", "ssim", "pearson", "max_abs_error", "nrmse", "snr"]:
            with self.subTest(key=key):
                self.assertEqual(r[key], cli[key])
        basic = gsz.assess(a, b, metrics="basic", pdf_bins=10)
        self.assertNotIn("ssim", basic)
        self.assertEqual(basic["error_pdf"].shape, (10,))
        self.assertEqual(basic["psnr"], r["psnr"])
        with self.assertRaises(ValueError):
            gsz.assess(a, b[:-1])
        with self.assertRaises(ValueError):
            gsz.assess(a, b.astype(np.float64))


class Errors(unittest.TestCase):
    def test_damaged_archives_raise_gsz_error(self):
        arc = gsz.compress(wmag(), 1e-3)
        flipped = bytearray(arc)
        flipped[len(arc) // 2] ^= 0x40
        for bad in [bytes(flipped), arc[: len(arc) // 2], arc[:10], b"", b"GSZ" + bytes(100)]:
            with self.subTest(size=len(bad)):
                with self.assertRaises(gsz.Error) as e:
                    gsz.decompress(bad)
                self.assertIn("gsz.decompress", e.exception.args[0])
                self.assertIn(e.exception.args[1], (2, 3))  # corrupt or unsupported
                with self.assertRaises(gsz.Error):
                    gsz.info(bad)

    def test_what_gsz_cannot_compress(self):
        a = wmag()
        for bad in [a.astype(np.int32), a.astype(np.float16), np.zeros((2,) * 5, np.float32), np.float32(1.0),
                    np.zeros((0, 4), np.float32)]:
            with self.subTest(dtype=str(np.asarray(bad).dtype), shape=np.shape(bad)):
                with self.assertRaises((TypeError, ValueError)):
                    gsz.compress(bad, 1e-3)
        for kwargs in [{"mode": "relative"}, {"pipeline": "zfp"}, {"lossless": "zstd"}, {"device": "gpu"}]:
            with self.subTest(**kwargs):
                with self.assertRaises(ValueError):
                    gsz.compress(a, 1e-3, **kwargs)
        for bound in [-1.0, float("inf"), float("nan")]:
            with self.subTest(bound=bound):
                with self.assertRaises(gsz.Error) as e:
                    gsz.compress(a, bound)
                self.assertEqual(e.exception.args[1], 1)  # invalid argument


if __name__ == "__main__":
    unittest.main(verbosity=2)
