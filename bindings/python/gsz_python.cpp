// The `gsz` Python module (pybind11) over the C API: numpy arrays in and
// out, archives as bytes.  C-contiguous arrays are read and written in place;
// the GIL is released while gsz works.
#include "gsz/gsz.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace py = pybind11;

namespace {

// gsz's failures as one exception type, carrying the status.
PyObject* g_error = nullptr;

[[noreturn]] void raise(gsz_status st, const gsz_ctx* ctx, const char* what) {
    std::string msg = std::string(what) + ": " + gsz_status_string(st);
    if (ctx && *gsz_ctx_last_error(ctx)) msg += std::string(": ") + gsz_ctx_last_error(ctx);
    PyObject* args = Py_BuildValue("(si)", msg.c_str(), static_cast<int>(st));
    PyErr_SetObject(g_error, args);
    Py_XDECREF(args);
    throw py::error_already_set();
}

struct Context {
    gsz_ctx* ctx = nullptr;
    Context() {
        const gsz_status st = gsz_ctx_create(&ctx);
        if (st != GSZ_STATUS_OK) raise(st, nullptr, "gsz context");
    }
    ~Context() { gsz_ctx_free(ctx); }
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;
};

template <class E>
E choose(const std::string& name, std::initializer_list<std::pair<const char*, E>> options, const char* what) {
    std::string known;
    for (const auto& [n, v] : options) {
        if (name == n) return v;
        known += known.empty() ? n : std::string(", ") + n;
    }
    throw py::value_error(std::string(what) + " '" + name + "': one of " + known);
}

gsz_device device_of(const std::string& d) {
    return choose<gsz_device>(d, {{"auto", GSZ_DEVICE_AUTO}, {"cpu", GSZ_DEVICE_CPU}, {"cuda", GSZ_DEVICE_CUDA}},
                              "device");
}

const char* pipeline_name(gsz_pipeline p) {
    switch (p) {
        case GSZ_PIPELINE_STORE: return "store";
        case GSZ_PIPELINE_LORENZO: return "lorenzo";
        case GSZ_PIPELINE_FAST: return "fast";
        case GSZ_PIPELINE_INTERP: return "interp";
        default: return "auto";
    }
}

const char* lossless_name(gsz_lossless l) {
    switch (l) {
        case GSZ_LOSSLESS_NONE: return "none";
        case GSZ_LOSSLESS_RUNS: return "runs";
        case GSZ_LOSSLESS_ANS: return "ans";
        default: return "";
    }
}

// The dtype gsz codes, or an error naming the array's.
gsz_dtype dtype_of(const py::array& a) {
    if (a.dtype().is(py::dtype::of<float>())) return GSZ_DTYPE_F32;
    if (a.dtype().is(py::dtype::of<double>())) return GSZ_DTYPE_F64;
    throw py::type_error("gsz compresses float32 and float64 arrays, not " + py::str(py::object(a.dtype())).cast<std::string>());
}

// compress's options past the common ones, as the command line names them.
struct Tuning {
    unsigned block_size = 0;
    double interp_alpha = 0, interp_beta = 0;
    std::string interp_spline = "auto", interp_order = "auto", interp_anchors = "auto", interp_tiles = "auto";
    unsigned interp_anchor_stride = 0;
    std::string interp_jump_guard = "auto", ans_strips = "auto", components = "auto";
    py::object fill_value;

    void apply(gsz_params& p) const {
        p.block_size = block_size;
        p.interp_alpha = interp_alpha;
        p.interp_beta = interp_beta;
        p.interp_spline = choose<gsz_interp_spline>(
            interp_spline,
            {{"auto", GSZ_INTERP_SPLINE_AUTO}, {"not-a-knot", GSZ_INTERP_SPLINE_NOT_A_KNOT}, {"natural", GSZ_INTERP_SPLINE_NATURAL}},
            "interp_spline");
        if (interp_order != "auto") {
            if (interp_order.empty() || interp_order.size() > 3)
                throw py::value_error("interp_order '" + interp_order + "': 'auto' or letters x, y, z, e.g. 'zyx'");
            std::memcpy(p.interp_order, interp_order.c_str(), interp_order.size() + 1);
        }
        p.interp_anchors = choose<gsz_interp_anchors>(
            interp_anchors,
            {{"auto", GSZ_INTERP_ANCHORS_AUTO}, {"coded", GSZ_INTERP_ANCHORS_CODED}, {"raw", GSZ_INTERP_ANCHORS_RAW}},
            "interp_anchors");
        p.interp_anchor_stride = interp_anchor_stride;
        p.interp_tiles = choose<gsz_interp_tiles>(interp_tiles,
                                                  {{"auto", GSZ_INTERP_TILES_AUTO},
                                                   {"spline", GSZ_INTERP_TILES_SPLINE},
                                                   {"each", GSZ_INTERP_TILES_EACH},
                                                   {"lorenzo", GSZ_INTERP_TILES_LORENZO}},
                                                  "interp_tiles");
        p.interp_jump_guard = choose<gsz_interp_jump_guard>(
            interp_jump_guard,
            {{"auto", GSZ_INTERP_JUMP_GUARD_AUTO}, {"on", GSZ_INTERP_JUMP_GUARD_ON}, {"off", GSZ_INTERP_JUMP_GUARD_OFF}},
            "interp_jump_guard");
        p.ans_strips = choose<gsz_ans_strips>(
            ans_strips, {{"auto", GSZ_ANS_STRIPS_AUTO}, {"off", GSZ_ANS_STRIPS_OFF}, {"on", GSZ_ANS_STRIPS_ON}},
            "ans_strips");
        p.components = choose<gsz_components>(components, {{"auto", GSZ_COMPONENTS_AUTO}, {"off", GSZ_COMPONENTS_OFF}},
                                              "components");
        if (fill_value.is_none() || (py::isinstance<py::str>(fill_value) && fill_value.cast<std::string>() == "auto")) {
            p.fill = GSZ_FILL_AUTO;
        } else if (py::isinstance<py::str>(fill_value)) {
            if (fill_value.cast<std::string>() != "off")
                throw py::value_error("fill_value: 'auto', 'off' or a number");
            p.fill = GSZ_FILL_OFF;
        } else {
            p.fill = GSZ_FILL_VALUE;
            p.fill_value = fill_value.cast<double>();
        }
    }
};

py::bytes compress(py::array a, double bound, const std::string& mode, const std::string& pipeline,
                   const std::string& lossless, const std::string& device, int threads, unsigned radius,
                   const Tuning& tuning) {
    gsz_params p;
    gsz_params_init(&p);
    p.dtype = dtype_of(a);
    if (a.ndim() < 1 || a.ndim() > GSZ_MAX_RANK)
        throw py::value_error("gsz takes arrays of 1 to 4 dims, not " + std::to_string(a.ndim()));
    // numpy's shape is slowest first, gsz's dims fastest first.
    p.rank = static_cast<uint32_t>(a.ndim());
    for (py::ssize_t d = 0; d < a.ndim(); ++d) p.dims[p.rank - 1 - d] = static_cast<uint64_t>(a.shape(d));
    if (a.size() == 0) throw py::value_error("gsz does not compress an empty array");
    p.error_mode = choose<gsz_error_mode>(mode, {{"rel", GSZ_ERROR_REL}, {"abs", GSZ_ERROR_ABS}}, "mode");
    p.error_bound = bound;
    p.pipeline = choose<gsz_pipeline>(pipeline,
                                      {{"lorenzo", GSZ_PIPELINE_LORENZO},
                                       {"interp", GSZ_PIPELINE_INTERP},
                                       {"fast", GSZ_PIPELINE_FAST},
                                       {"auto", GSZ_PIPELINE_AUTO}},
                                      "pipeline");
    p.lossless = choose<gsz_lossless>(
        lossless,
        {{"auto", GSZ_LOSSLESS_AUTO}, {"none", GSZ_LOSSLESS_NONE}, {"runs", GSZ_LOSSLESS_RUNS}, {"ans", GSZ_LOSSLESS_ANS}},
        "lossless");
    p.device = device_of(device);
    p.num_threads = threads;
    p.radius = radius;
    tuning.apply(p);
    // Read in place when C-contiguous; any other layout is copied once.
    const py::array data = py::array::ensure(a, py::array::c_style);
    if (!data) throw py::error_already_set();
    Context c;
    size_t capacity = 0;
    gsz_status st = gsz_compress_bound(&p, &capacity);
    if (st != GSZ_STATUS_OK) raise(st, c.ctx, "gsz.compress");
    std::string archive(capacity, '\0');
    size_t written = 0;
    {
        py::gil_scoped_release release;
        st = gsz_compress(c.ctx, &p, data.data(), archive.data(), capacity, &written);
    }
    if (st != GSZ_STATUS_OK) raise(st, c.ctx, "gsz.compress");
    archive.resize(written);
    return py::bytes(archive);
}

// The archive's bytes without a copy (bytes, bytearray, memoryview, numpy uint8...).
struct ArchiveView {
    py::buffer_info info;
    explicit ArchiveView(const py::buffer& b) : info(b.request()) {
        if (info.ndim != 1 && info.size > 0) throw py::value_error("an archive is a flat buffer of bytes");
    }
    const void* data() const { return info.ptr; }
    size_t size() const { return static_cast<size_t>(info.size * info.itemsize); }
};

gsz_archive_info inspect(const ArchiveView& v, Context& c, const char* what) {
    gsz_archive_info info;
    const gsz_status st = gsz_archive_inspect(c.ctx, v.data(), v.size(), &info);
    if (st != GSZ_STATUS_OK) raise(st, c.ctx, what);
    return info;
}

py::array decompress(const py::buffer& buffer, const std::string& device, int threads, py::object out) {
    const ArchiveView v(buffer);
    Context c;
    const gsz_archive_info info = inspect(v, c, "gsz.decompress");
    py::tuple shape(info.rank);
    for (uint32_t d = 0; d < info.rank; ++d) shape[info.rank - 1 - d] = info.dims[d];
    const py::dtype dtype = info.dtype == GSZ_DTYPE_F64 ? py::dtype::of<double>() : py::dtype::of<float>();
    py::array result;
    if (out.is_none()) {
        // numpy.empty: C order, the archive's shape (numpy's, slowest first); not
        // pybind11's constructor (see assess).
        result = py::module_::import("numpy").attr("empty")(shape, dtype);
    } else {
        const auto fits = [&](const py::array& a) {
            return a.dtype().is(dtype) && static_cast<uint64_t>(a.size()) == info.num_elements &&
                   (a.flags() & py::array::c_style) && a.writeable();
        };
        if (!py::isinstance<py::array>(out) || !fits(py::reinterpret_borrow<py::array>(out)))
            throw py::value_error(std::string("out: a writeable C-contiguous ") +
                                  (info.dtype == GSZ_DTYPE_F64 ? "float64" : "float32") + " array of " +
                                  std::to_string(info.num_elements) + " values");
        result = py::reinterpret_borrow<py::array>(out);
    }
    const gsz_device dev = device_of(device);
    gsz_status st;
    {
        py::gil_scoped_release release;
        st = gsz_decompress(c.ctx, v.data(), v.size(), result.mutable_data(), static_cast<size_t>(info.original_bytes),
                            dev, threads);
    }
    if (st != GSZ_STATUS_OK) raise(st, c.ctx, "gsz.decompress");
    return result;
}

py::dict info(const py::buffer& buffer) {
    const ArchiveView v(buffer);
    Context c;
    const gsz_archive_info i = inspect(v, c, "gsz.info");
    py::dict d;
    d["format_version"] = i.format_version;
    d["dtype"] = i.dtype == GSZ_DTYPE_F64 ? "float64" : "float32";
    py::tuple shape(i.rank);
    for (uint32_t k = 0; k < i.rank; ++k) shape[i.rank - 1 - k] = i.dims[k];
    d["shape"] = shape;
    d["pipeline"] = pipeline_name(i.pipeline);
    d["mode"] = i.error_mode == GSZ_ERROR_ABS ? "abs" : "rel";
    d["bound"] = i.error_bound;
    d["bound_abs"] = i.error_bound_abs;
    d["value_min"] = i.value_min;
    d["value_max"] = i.value_max;
    d["archive_bytes"] = i.archive_bytes;
    d["original_bytes"] = i.original_bytes;
    d["ratio"] = static_cast<double>(i.original_bytes) / static_cast<double>(i.archive_bytes);
    d["outliers"] = i.num_outliers;
    if (i.pipeline == GSZ_PIPELINE_LORENZO || i.pipeline == GSZ_PIPELINE_INTERP)
        d["lossless"] = lossless_name(i.lossless);
    if (i.has_fill) {
        d["fill_value"] = i.fill_value;
        d["fill_points"] = i.fill_points;
    }
    gsz_section_info sections[64];
    uint32_t count = 0;
    uint64_t header = 0;
    const gsz_status st = gsz_archive_sections(c.ctx, v.data(), v.size(), sections, 64, &count, &header);
    if (st != GSZ_STATUS_OK) raise(st, c.ctx, "gsz.info");
    py::dict s;
    for (uint32_t k = 0; k < count && k < 64; ++k) s[sections[k].name] = sections[k].bytes;
    d["header_bytes"] = header;
    d["sections"] = s;
    return d;
}

// The assessment metrics (docs/METRICS.md) of `decompressed` against `original`.
py::dict assess(py::array original, py::array decompressed, const std::string& metrics, unsigned pdf_bins,
                unsigned autocorr_lags, unsigned ssim_window, unsigned ssim_step, int threads) {
    const gsz_dtype dtype = dtype_of(original);
    if (!original.dtype().is(decompressed.dtype()) || original.ndim() != decompressed.ndim() ||
        !std::equal(original.shape(), original.shape() + original.ndim(), decompressed.shape()))
        throw py::value_error("original and decompressed must have the same shape and dtype");
    if (original.ndim() < 1 || original.ndim() > GSZ_MAX_RANK || original.size() == 0)
        throw py::value_error("gsz assesses non-empty arrays of 1 to 4 dims");
    uint64_t dims[GSZ_MAX_RANK] = {};
    const uint32_t rank = static_cast<uint32_t>(original.ndim());
    for (uint32_t d = 0; d < rank; ++d) dims[rank - 1 - d] = static_cast<uint64_t>(original.shape(d));
    gsz_assess_options o;
    gsz_assess_options_init(&o);
    o.metrics = choose<uint32_t>(metrics, {{"all", GSZ_ASSESS_ALL}, {"basic", GSZ_ASSESS_REDUCTIONS}}, "metrics");
    if (pdf_bins) o.pdf_bins = pdf_bins;
    if (autocorr_lags) o.autocorr_lags = autocorr_lags;
    if (ssim_window) o.ssim_window = ssim_window;
    if (ssim_step) o.ssim_step = ssim_step;
    o.num_threads = threads;
    const py::array a = py::array::ensure(original, py::array::c_style);
    const py::array b = py::array::ensure(decompressed, py::array::c_style);
    if (!a || !b) throw py::error_already_set();
    // Arrays are made by numpy itself: pybind11 2.10 sizes the strides of the
    // arrays it makes from numpy 1's dtype layout, which numpy 2 changed.
    const py::object zeros = py::module_::import("numpy").attr("zeros");
    py::array_t<double> pdf = zeros(o.pdf_bins, "float64"), autocorr = zeros(o.autocorr_lags, "float64");
    gsz_assess_result r;
    std::memset(&r, 0, sizeof r);
    r.error_pdf = pdf.mutable_data();
    r.error_autocorr = (o.metrics & GSZ_ASSESS_AUTOCORR) ? autocorr.mutable_data() : nullptr;
    Context c;
    gsz_status st;
    {
        py::gil_scoped_release release;
        st = gsz_assess(c.ctx, dtype, rank, dims, a.data(), b.data(), 0, nullptr, &o, &r);
    }
    if (st != GSZ_STATUS_OK) raise(st, c.ctx, "gsz.assess");
    py::dict d;
    d["num_elements"] = r.num_elements;
    d["num_nonfinite"] = r.num_nonfinite;
    d["nonfinite_mismatches"] = r.nonfinite_mismatches;
    d["value_min"] = r.value_min;
    d["value_max"] = r.value_max;
    d["value_range"] = r.value_range;
    d["min_error"] = r.min_error;
    d["max_error"] = r.max_error;
    d["mean_error"] = r.mean_error;
    d["max_abs_error"] = r.max_abs_error;
    d["mean_abs_error"] = r.mean_abs_error;
    d["max_abs_error_index"] = r.max_abs_error_index;
    d["max_rel_error"] = r.max_rel_error;
    d["max_pwr_error"] = r.max_pwr_error;
    d["mse"] = r.mse;
    d["rmse"] = r.rmse;
    d["nrmse"] = r.nrmse;
    d["psnr"] = r.psnr;
    d["snr"] = r.snr;
    d["pearson"] = r.pearson;
    d["l2_error"] = r.l2_error;
    d["error_pdf"] = pdf;
    if (o.metrics & GSZ_ASSESS_STENCILS) {
        d["derivative1_psnr"] = r.derivative1_psnr;
        d["derivative2_psnr"] = r.derivative2_psnr;
        d["laplacian_psnr"] = r.laplacian_psnr;
        d["divergence_psnr"] = r.divergence_psnr;
    }
    if (o.metrics & GSZ_ASSESS_AUTOCORR) d["error_autocorr"] = autocorr;
    if (o.metrics & GSZ_ASSESS_SSIM) d["ssim"] = r.ssim;
    return d;
}

}  // namespace

PYBIND11_MODULE(gsz, m) {
    m.doc() =
        "gsz: error-bounded lossy compression of float32 and float64 arrays (1 to 4 dims).\n\n"
        "    arc = gsz.compress(a, 1e-4, mode='rel', pipeline='interp')   # bytes\n"
        "    b = gsz.decompress(arc)                                      # numpy array, a's shape and dtype\n"
        "    gsz.info(arc)                                                # dict: shape, bound, ratio, sections\n\n"
        "Every finite value comes back within the bound; NaN and +-Inf bit-exact.  The archive is the\n"
        "file format of the gsz command line tool and C API (either backend reads it).";
    m.attr("__version__") = gsz_version_string();
    static py::exception<std::runtime_error> error(m, "Error");
    g_error = error.ptr();
    error.doc() = "A gsz failure: args[0] the message, args[1] the gsz_status code";
    m.def(
        "compress",
        [](py::array a, double bound, const std::string& mode, const std::string& pipeline,
           const std::string& lossless, const std::string& device, int threads, unsigned radius, unsigned block_size,
           double interp_alpha, double interp_beta, const std::string& interp_spline, const std::string& interp_order,
           const std::string& interp_anchors, unsigned interp_anchor_stride, const std::string& interp_tiles,
           const std::string& interp_jump_guard, const std::string& ans_strips, const std::string& components,
           py::object fill_value) {
            const Tuning t{block_size,        interp_alpha,        interp_beta,  interp_spline,
                           interp_order,      interp_anchors,      interp_tiles, interp_anchor_stride,
                           interp_jump_guard, ans_strips,          components,   std::move(fill_value)};
            return compress(std::move(a), bound, mode, pipeline, lossless, device, threads, radius, t);
        },
        py::arg("array"), py::arg("bound"), py::arg("mode") = "rel", py::arg("pipeline") = "lorenzo",
        py::arg("lossless") = "auto", py::arg("device") = "auto", py::arg("threads") = 0, py::arg("radius") = 0u,
        py::kw_only(), py::arg("block_size") = 0u, py::arg("interp_alpha") = 0.0, py::arg("interp_beta") = 0.0,
        py::arg("interp_spline") = "auto", py::arg("interp_order") = "auto", py::arg("interp_anchors") = "auto",
        py::arg("interp_anchor_stride") = 0u, py::arg("interp_tiles") = "auto", py::arg("interp_jump_guard") = "auto",
        py::arg("ans_strips") = "auto", py::arg("components") = "auto", py::arg("fill_value") = py::none(),
          "Compress a float32 or float64 array of 1 to 4 dims; returns the archive as bytes.\n\n"
          "bound: the error bound, relative to the value range (mode='rel') or absolute (mode='abs'); 0 = lossless.\n"
          "pipeline: 'lorenzo', 'interp', 'fast' or 'auto' (lorenzo and interp, the smaller kept).\n"
          "lossless: 'auto', 'none', 'runs' or 'ans' (lorenzo and interp).  device: 'auto', 'cpu' or 'cuda'.\n"
          "threads: CPU threads (0 = all); never changes the bytes.  radius: quantization radius (0 = default).\n"
          "A C-contiguous array is read in place; other layouts are copied once.\n"
          "Keyword-only, as the command line's options of the same names (0 / 'auto' = tuned or default):\n"
          "block_size (fast), interp_alpha, interp_beta, interp_spline, interp_order ('zyx'...), interp_anchors,\n"
          "interp_anchor_stride (1-D), interp_tiles, interp_jump_guard ('auto' = 'on', 'off'), ans_strips, components,\n"
          "fill_value (None or 'auto', 'off', or the value).");
    m.def("decompress", &decompress, py::arg("archive"), py::arg("device") = "auto", py::arg("threads") = 0,
          py::arg("out") = py::none(),
          "Decompress an archive (bytes, bytearray, memoryview...) into a new array of its shape and dtype,\n"
          "or into `out`, a writeable C-contiguous array of that dtype and size.  The archive is validated\n"
          "in full (checksums included) first; a damaged one raises gsz.Error.");
    m.def("assess", &assess, py::arg("original"), py::arg("decompressed"), py::arg("metrics") = "all",
          py::arg("pdf_bins") = 0u, py::arg("autocorr_lags") = 0u, py::arg("ssim_window") = 0u,
          py::arg("ssim_step") = 0u, py::arg("threads") = 0,
          "What the loss did: error statistics, MSE, PSNR, SNR, Pearson, the error PDF (pdf_bins over\n"
          "[min_error, max_error]), and with metrics='all' (default; 'basic' skips them) derivative and\n"
          "Laplacian PSNRs, the error's autocorrelation (lags 1..autocorr_lags) and SSIM, as `gsz assess`\n"
          "computes them (docs/METRICS.md; 0 = its defaults: 2000 bins, 100 lags, SSIM window 7 step 1).\n"
          "e = decompressed - original; non-finite originals are left out and counted.");
    m.def("info", &info, py::arg("archive"),
          "What an archive holds (validated in full): shape, dtype, pipeline, bounds, sizes, ratio, sections.");
}
