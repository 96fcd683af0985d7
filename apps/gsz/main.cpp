// gsz: the command-line tool.  The only code that prints or picks exit codes.
//   0 success, 1 failure (one line on stderr naming the problem), 2 bad usage.
#include <gsz/gsz.h>

#include "H5Zgsz.h"
#include "hdf5_io.hpp"
#include "mirror_tile.hpp"
#include "assess/assess.hpp"
#include "pipeline/bench.hpp"
#include "pipeline/pipeline.hpp"
#include "runtime/status.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

struct CliError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

[[noreturn]] void die(const std::string& message) { throw CliError(message); }

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Ctx {
    gsz_ctx* ctx = nullptr;
    Ctx() {
        if (gsz_ctx_create(&ctx) != GSZ_STATUS_OK) die("cannot create a gsz context");
    }
    ~Ctx() { gsz_ctx_free(ctx); }
    void check(gsz_status status, const std::string& what) const {
        if (status != GSZ_STATUS_OK)
            die(what + ": " + gsz_status_string(status) + ": " + gsz_ctx_last_error(ctx));
    }
};

// "384x384x256" -> {384, 384, 256}; `option` names the flag in messages.
std::vector<uint64_t> parse_dims(const std::string& text, const std::string& option = "-l") {
    std::vector<uint64_t> dims;
    std::stringstream ss(text);
    std::string part;
    while (std::getline(ss, part, 'x')) {
        if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos)
            die(option + " " + text + ": dims must look like 384x384x256 (positive integers, fastest-varying first)");
        errno = 0;
        const unsigned long long v = std::strtoull(part.c_str(), nullptr, 10);
        if (errno || v == 0) die(option + " " + text + ": dimension '" + part + "' must be a positive integer");
        dims.push_back(v);
    }
    if (dims.empty() || dims.size() > GSZ_MAX_RANK) die(option + " " + text + ": give 1 to 4 dims");
    if (!text.empty() && text.back() == 'x') die(option + " " + text + ": trailing 'x'");
    return dims;
}

std::string dims_string(const uint64_t* dims, uint32_t rank) {
    std::string s;
    for (uint32_t d = 0; d < rank; ++d) {
        if (d) s += 'x';
        s += std::to_string(dims[d]);
    }
    return s;
}

// Phase lines on stderr for long runs ("gsz: compressing (interp, cuda) ... 0.82 s"),
// so whoever watches a multi-gigabyte job sees where it is; on a terminal the
// file phases count up in percent.  --progress auto (the default) shows them
// when stderr is a terminal and the data is at least 256 MiB; on / off force
// it.  Never on stdout, so --json output stays one parsable object.
class Progress {
public:
    Progress(const std::string& mode, uint64_t bytes) : tty_(::isatty(STDERR_FILENO) == 1) {
        if (mode == "on") on_ = true;
        else if (mode == "off") on_ = false;
        else if (mode == "auto") on_ = tty_ && bytes >= (uint64_t{256} << 20);
        else die("--progress " + mode + ": expected auto, on or off");
    }
    void begin(const std::string& what) {
        if (!on_) return;
        what_ = what;
        t0_ = Clock::now();
        std::fprintf(stderr, tty_ ? "gsz: %s ..." : "gsz: %s ...\n", what_.c_str());
        std::fflush(stderr);
    }
    void fraction(double f) {
        if (!on_ || !tty_) return;
        std::fprintf(stderr, "\rgsz: %s ... %3.0f%%", what_.c_str(), 100.0 * f);
        std::fflush(stderr);
    }
    void end() {
        if (!on_) return;
        const double s = seconds_since(t0_);
        if (tty_)
            std::fprintf(stderr, "\rgsz: %s ... %.2f s\n", what_.c_str(), s);
        else
            std::fprintf(stderr, "gsz: %s: %.2f s\n", what_.c_str(), s);
        std::fflush(stderr);
    }

private:
    bool tty_ = false, on_ = false;
    std::string what_;
    Clock::time_point t0_{};
};

// Files move in pieces of this size, so a phase can report how far it is.
constexpr size_t kFilePiece = size_t{64} << 20;

// A byte buffer that is not zero-filled: large inputs and outputs are
// overwritten anyway, and a memset of gigabytes would be pure cost.
struct Bytes {
    std::unique_ptr<uint8_t[]> ptr;
    size_t count = 0;
    Bytes() = default;
    explicit Bytes(size_t n) : ptr(new uint8_t[n ? n : 1]), count(n) {}
    uint8_t* data() const { return ptr.get(); }
    size_t size() const { return count; }
};

Bytes read_file(const std::string& path, Progress* progress = nullptr) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) die(path + ": no such file");
    std::ifstream in(path, std::ios::binary);
    if (!in) die(path + ": cannot open for reading");
    const auto size = fs::file_size(path, ec);
    if (ec) die(path + ": cannot read its size");
    Bytes bytes(size);
    for (size_t done = 0; done < size;) {
        const size_t piece = std::min(kFilePiece, static_cast<size_t>(size) - done);
        if (!in.read(reinterpret_cast<char*>(bytes.data() + done), static_cast<std::streamsize>(piece)))
            die(path + ": read failed");
        done += piece;
        if (progress) progress->fraction(static_cast<double>(done) / static_cast<double>(size));
    }
    return bytes;
}

// Refuse to clobber before any work is done.
void check_output(const std::string& out, const std::string& in, bool force) {
    std::error_code ec;
    if (fs::exists(out, ec)) {
        if (fs::equivalent(out, in, ec)) die(out + ": output would overwrite the input");
        if (!force) die(out + ": exists (use --force to overwrite)");
        if (fs::is_directory(out, ec)) die(out + ": is a directory");
    }
}

// `write` fills a temporary file beside the target, which is then renamed
// into place, so a failure never leaves a partial output behind (the
// temporary is removed whatever `write` throws).
template <class Write>
void write_atomic(const std::string& path, Write&& write) {
    const fs::path target(path);
    const fs::path tmp = target.string() + ".gsz-tmp." + std::to_string(::getpid());
    std::error_code ec;
    try {
        write(tmp);
    } catch (...) {
        fs::remove(tmp, ec);
        throw;
    }
    fs::rename(tmp, target, ec);
    if (ec) {
        fs::remove(tmp, ec);
        die(path + ": cannot move the finished file into place");
    }
}

void write_file_atomic(const std::string& path, const void* data, size_t size, Progress* progress = nullptr) {
    write_atomic(path, [&](const fs::path& tmp) {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) die(path + ": cannot open for writing");
        for (size_t done = 0; done < size && out;) {
            const size_t piece = std::min(kFilePiece, size - done);
            out.write(static_cast<const char*>(data) + done, static_cast<std::streamsize>(piece));
            done += piece;
            if (progress) progress->fraction(static_cast<double>(done) / static_cast<double>(size));
        }
        out.flush();
        if (!out) die(path + ": write failed (disk full?)");
    });
}

gsz_device parse_device(const std::string& s) {
    if (s == "auto") return GSZ_DEVICE_AUTO;
    if (s == "cpu") return GSZ_DEVICE_CPU;
    if (s == "cuda") return GSZ_DEVICE_CUDA;
    die("--device " + s + ": expected auto, cpu or cuda");
}

// The backend a call with this device runs on (the library's own choice for AUTO).
const char* backend_name(gsz_device device) {
    if (device == GSZ_DEVICE_AUTO) return gsz::pipeline::cuda_backend_available(nullptr) ? "cuda" : "cpu";
    return device == GSZ_DEVICE_CUDA ? "cuda" : "cpu";
}

const char* dtype_name(gsz_dtype t) { return t == GSZ_DTYPE_F64 ? "f64" : "f32"; }
const char* mode_name(gsz_error_mode m) { return m == GSZ_ERROR_REL ? "rel" : "abs"; }

const char* lossless_name(gsz_lossless l) {
    return l == GSZ_LOSSLESS_ANS ? "ans" : l == GSZ_LOSSLESS_RUNS ? "runs" : "none";
}
const char* pipeline_name(gsz_pipeline p) {
    switch (p) {
        case GSZ_PIPELINE_LORENZO: return "lorenzo";
        case GSZ_PIPELINE_FAST: return "fast";
        case GSZ_PIPELINE_INTERP: return "interp";
        case GSZ_PIPELINE_AUTO: return "auto";
        case GSZ_PIPELINE_STORE: break;
    }
    return "store";
}

json finite_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

// JSON has no infinity: "inf", "-inf" and "nan" as strings.
json finite_or_string(double v) {
    if (std::isfinite(v)) return v;
    return std::isnan(v) ? json("nan") : json(v > 0 ? "inf" : "-inf");
}

std::string human_bytes(double b) {
    const char* unit[] = {"B", "KB", "MB", "GB", "TB"};
    int u = 0;
    while (b >= 1000 && u < 4) b /= 1000, ++u;
    char buf[32];
    std::snprintf(buf, sizeof buf, u ? "%.2f %s" : "%.0f %s", b, unit[u]);
    return buf;
}

struct Quality {
    double max_abs_error = 0;
    double psnr = std::numeric_limits<double>::infinity();
    double mse = 0;
    uint64_t violations = 0;       // finite values outside the bound
    uint64_t nonfinite_mismatch = 0;  // NaN/Inf not restored bit-exactly
};

template <class T>
Quality measure(const T* orig, const T* dec, uint64_t n, double eb_abs, double vmin, double vmax) {
    Quality q;
    double sum_sq = 0;
    uint64_t count = 0;
    for (uint64_t i = 0; i < n; ++i) {
        if (std::isfinite(orig[i])) {
            const double e = std::fabs(static_cast<double>(dec[i]) - static_cast<double>(orig[i]));
            if (!(e <= eb_abs)) ++q.violations;
            q.max_abs_error = std::max(q.max_abs_error, std::isnan(e) ? std::numeric_limits<double>::infinity() : e);
            sum_sq += e * e;
            ++count;
        } else if (std::memcmp(&orig[i], &dec[i], sizeof(T)) != 0) {
            ++q.nonfinite_mismatch;
        }
    }
    q.mse = count ? sum_sq / static_cast<double>(count) : 0;
    const double range = vmax - vmin;
    q.psnr = q.mse > 0 ? 20 * std::log10(range) - 10 * std::log10(q.mse) : std::numeric_limits<double>::infinity();
    return q;
}

Quality measure_any(gsz_dtype t, const void* orig, const void* dec, uint64_t n, double eb, double lo, double hi) {
    if (t == GSZ_DTYPE_F64)
        return measure(static_cast<const double*>(orig), static_cast<const double*>(dec), n, eb, lo, hi);
    return measure(static_cast<const float*>(orig), static_cast<const float*>(dec), n, eb, lo, hi);
}

void put_quality(json& j, const Quality& q) {
    j["max_abs_error"] = q.max_abs_error;
    j["mse"] = q.mse;
    j["psnr"] = finite_or_null(q.psnr);
    j["bound_violations"] = q.violations;
    j["nonfinite_mismatches"] = q.nonfinite_mismatch;
}

json info_json(const gsz_archive_info& a) {
    json j;
    j["format_version"] = a.format_version;
    j["dtype"] = dtype_name(a.dtype);
    j["dims"] = std::vector<uint64_t>(a.dims, a.dims + a.rank);
    j["num_elements"] = a.num_elements;
    j["pipeline"] = pipeline_name(a.pipeline);
    j["error_mode"] = mode_name(a.error_mode);
    j["error_bound"] = a.error_bound;
    j["error_bound_abs"] = a.error_bound_abs;
    j["value_min"] = finite_or_null(a.value_min);
    j["value_max"] = finite_or_null(a.value_max);
    // lossy pipelines: the dim whose entries were predicted one component at a time, or null
    if (a.pipeline != GSZ_PIPELINE_STORE) j["component_dim"] = a.component_dim >= 0 ? json(a.component_dim) : json(nullptr);
    if (a.pipeline == GSZ_PIPELINE_LORENZO || a.pipeline == GSZ_PIPELINE_INTERP) {
        j["lossless"] = lossless_name(a.lossless);
        if (a.lossless == GSZ_LOSSLESS_RUNS) j["run_dominant_code"] = a.run_dominant_code;
        if (a.lossless != GSZ_LOSSLESS_ANS) j["huffman_symbols"] = a.huffman_symbols;
        if (a.lossless == GSZ_LOSSLESS_ANS) {
            j["ans_lanes"] = a.ans_lanes;
            j["ans_lane_symbols"] = a.ans_lane_symbols;
            j["ans_lanes_bytes"] = a.ans_lanes_bytes;
            j["ans_class_lag"] = a.ans_class_lag;
            j["ans_strip_width"] = a.ans_strip_width;
        }
    }
    if (a.pipeline == GSZ_PIPELINE_LORENZO) {
        j["radius"] = a.radius;
        j["num_outliers"] = a.num_outliers;
    }
    if (a.pipeline == GSZ_PIPELINE_INTERP) {
        j["radius"] = a.radius;
        j["num_outliers"] = a.num_outliers;
        j["interp_anchor_stride"] = a.interp_anchor_stride;
        j["interp_num_anchors"] = a.interp_num_anchors;
        j["interp_alpha"] = a.interp_alpha;
        j["interp_beta"] = a.interp_beta;
        j["interp_order"] = std::string(a.interp_order, strnlen(a.interp_order, sizeof a.interp_order));
        json splines = json::array();
        for (uint32_t d = 0; d < a.interp_rank; ++d)
            splines.push_back(a.interp_spline[d] == 'n' ? "natural" : "not-a-knot");
        j["interp_spline"] = splines;
        j["interp_anchors"] = a.interp_anchors == GSZ_INTERP_ANCHORS_RAW ? "raw" : "coded";
        j["interp_listed_anchors"] = a.interp_listed_anchors;
        j["interp_jump"] = a.interp_jump;   // 0: no jump guard recorded (off, or it decided nothing)
        j["interp_tiles"] = a.interp_tiles;
        j["interp_lorenzo_tiles"] = a.interp_lorenzo_tiles;
    }
    if (a.pipeline == GSZ_PIPELINE_LORENZO || a.pipeline == GSZ_PIPELINE_INTERP) {
        j["fill"] = a.has_fill != 0;
        if (a.has_fill) {
            j["fill_value"] = a.fill_value;
            j["fill_points"] = a.fill_points;
            j["fill_mask_bytes"] = a.fill_mask_bytes;
        }
    }
    if (a.pipeline == GSZ_PIPELINE_FAST) {
        j["block_size"] = a.block_size;
        j["num_blocks"] = a.num_blocks;
        j["num_constant_blocks"] = a.num_constant_blocks;
        j["num_raw_blocks"] = a.num_raw_blocks;
    }
    j["original_bytes"] = a.original_bytes;
    j["archive_bytes"] = a.archive_bytes;
    j["ratio"] = static_cast<double>(a.original_bytes) / static_cast<double>(a.archive_bytes);
    j["bits_per_value"] = 8.0 * static_cast<double>(a.archive_bytes) / static_cast<double>(a.num_elements);
    return j;
}

// What compress and bench share: the input array and how to compress it.
struct ArrayArgs {
    std::string input, dtype = "f32", dims, mode = "rel", pipeline = "lorenzo", device = "auto";
    double eb = -1;
    uint32_t radius = 0;
    uint32_t block = 128;
    double interp_alpha = 0, interp_beta = 0;
    std::string interp_spline = "auto", interp_order = "auto", interp_anchors = "auto", lossless = "auto";
    std::string interp_jump_guard = "on", interp_tiles = "auto", ans_strips = "auto", fill_value = "auto";
    std::string interp_anchor_stride = "auto";
    std::string components = "auto";
    std::string dataset;  // compress: the input is an HDF5 file, this its dataset
    int threads = 0;
    bool json = false;
};

// `hdf5_input`: compress, whose input may be an HDF5 dataset (--dataset),
// which then gives the type and dims.
void add_array_options(CLI::App* c, ArrayArgs& a, bool hdf5_input = false) {
    if (hdf5_input) {
        c->add_option("-i,--input", a.input, "Input file: raw values, or an HDF5 / netCDF-4 file with --dataset")
            ->required();
        c->add_option("-t,--type", a.dtype, "Element type: f32 or f64 (raw input; required without --dataset)");
        c->add_option("-l,--dims", a.dims,
                      "Dims, fastest-varying first, e.g. 384x384x256 (1 to 4 dims; raw input; required without "
                      "--dataset)");
        c->add_option("--dataset", a.dataset,
                      "The input is an HDF5 (or netCDF-4) file and this its float dataset, e.g. /tos: the type and "
                      "dims are the dataset's (dims of size 1 dropped)");
    } else {
        c->add_option("-i,--input", a.input, "Raw input file")->required();
        c->add_option("-t,--type", a.dtype, "Element type: f32 or f64")->required();
        c->add_option("-l,--dims", a.dims, "Dims, fastest-varying first, e.g. 384x384x256 (1 to 4 dims)")->required();
    }
    c->add_option("-m,--mode", a.mode,
                  "Error mode: abs (absolute) or rel (relative to max-min of the finite values, without the fill "
                  "value where one is kept: --fill-value)")
        ->capture_default_str();
    c->add_option("-e,--error-bound", a.eb, "Error bound (0 = lossless)")->required();
    c->add_option("-p,--pipeline", a.pipeline,
                  "Pipeline: lorenzo (cuSZ-style Lorenzo + Huffman or rANS: high ratio, fast), interp (cuSZ-i-style "
                  "anchored spline interpolation, Lorenzo where a tile codes smaller, + Huffman or rANS: highest ratio "
                  "and PSNR) or fast (SZx-style constant "
                  "blocks and leading-byte coding: highest speed, lower ratio); compress also takes auto (runs "
                  "lorenzo and interp and keeps the smaller archive: the best ratio of the two, twice the time)")
        ->capture_default_str();
    c->add_option("--block", a.block, "fast pipeline: values per block, 64, 128 or 256")->capture_default_str();
    c->add_option("--interp-alpha", a.interp_alpha,
                  "interp: level-wise bound factor alpha >= 1, e_l = eb / min(alpha^(l-1), beta) (0 = auto: "
                  "cuSZ-i's Eq. 1 of the range-relative bound)")
        ->capture_default_str();
    c->add_option("--interp-beta", a.interp_beta, "interp: cap beta >= 1 of the level factor (0 = auto: 4)")
        ->capture_default_str();
    c->add_option("--interp-spline", a.interp_spline,
                  "interp: cubic spline, auto (tuned per dimension), not-a-knot or natural")
        ->capture_default_str();
    c->add_option("--interp-order", a.interp_order,
                  "interp: dims in processing order, letters x (fastest), y, z of the dims of size > 1, e.g. zyx "
                  "(auto: least smooth first)")
        ->capture_default_str();
    c->add_option("--interp-anchors", a.interp_anchors,
                  "interp: anchors coded (quantized at half the coarsest level's bound, Lorenzo over the anchor grid, "
                  "Huffman), raw (stored exactly, as cuSZ-i), or auto (coded unless too many would be outliers)")
        ->capture_default_str();
    c->add_option("--interp-anchor-stride", a.interp_anchor_stride,
                  "interp, 1-D arrays: anchors every N points, a power of two 2..512 (512: the paper's 512-point "
                  "chunks, best on smooth series; shorter: rough ones such as mesh cells in storage order), or auto "
                  "(chosen on a sample; with --interp-tiles auto, rough records whose neighbours predict best take "
                  "every tile Lorenzo-coded at the full bound instead; 2-D and 3-D arrays keep 16 and 8)")
        ->capture_default_str();
    c->add_option("--interp-jump-guard", a.interp_jump_guard,
                  "interp: where neighbours differ by more than 95% of the value range (fill values next to data), "
                  "copy the nearer one across the jump and predict linearly next to it (on), or keep the paper's "
                  "splines everywhere as cuSZ-i does (off); an archive records the guard only where it decided a "
                  "prediction, so fields without such jumps compress to the same bytes and decompress at full speed")
        ->capture_default_str();
    c->add_option("--fill-value", a.fill_value,
                  "lorenzo, interp: a missing-value marker stored in place of data (land cells): its points are not coded but "
                  "kept exactly, by a mask of where they are (a few bits per coastline corner). auto: the minimum or "
                  "maximum where it is at least 1/64 of a sample of the values and lies apart from the others (4 "
                  "times their span away), or a NaN (by its bit pattern) that is at least 1/64 of the sample; off: "
                  "every point coded as data (NaNs as exact outliers); or the value itself (rounded to the dtype). "
                  "A relative bound then takes the range of the other values")
        ->capture_default_str();
    c->add_option("--interp-tiles", a.interp_tiles,
                  "interp: code every tile (32x8x8, 64x16 or 2048 points) by the spline hierarchy (spline), each "
                  "by the spline or by Lorenzo prediction, whichever is estimated smaller in bits and error (each: "
                  "higher ratio on rough data, masks and sensor records; GPU compression 10-35% slower), as each "
                  "where a sample of 256 tiles coded both ways saves at least 2.5% and else as spline (auto), or "
                  "every tile by Lorenzo (lorenzo); a Lorenzo tile keeps its anchors and the faces it shares with "
                  "lower tiles spline-coded")
        ->capture_default_str();
    c->add_option("--components", a.components,
                  "lorenzo, interp, fast: a dim of 2..8 entries that are separate quantities (x, y, z of N "
                  "particles stored N x 3, vector or complex components) is predicted (fast: blocked) one component "
                  "at a time when a sample of the data says that beats predicting one component from its neighbour "
                  "(auto), or never (off: every dim predicted across, as before format version 6)")
        ->capture_default_str();
    c->add_option("--radius", a.radius, "Quantization radius: residuals in (-radius, radius) get a Huffman code, "
                                        "others are stored exactly (1..32768; 0 = the pipeline's default: lorenzo 512, interp 32763)")
        ->capture_default_str();
    c->add_option("--lossless", a.lossless,
                  "lorenzo, interp: second lossless stage: auto (the smallest of the three below, by exact size "
                  "estimates), none (Huffman of the quant-codes, >= 1 bit per value), runs (runs of the most "
                  "frequent code folded into the Huffman alphabet; radius <= 32763) or ans (context-modelled rANS: "
                  "fractional bits per value, each code conditioned on its level, the code before it and a run of "
                  "zeros before it; on the GPU slower than Huffman at low bit rates)")
        ->capture_default_str();
    c->add_option("--ans-strips", a.ans_strips,
                  "interp with the ans stage: code the quant-codes in column strips of 32 to 128 columns, each "
                  "code also conditioned on the activity of the row above (2-D and 3-D arrays whose fastest dim "
                  "has such a power-of-two divisor; smooth fields, e.g. etopo5 rel 1e-2 -5% bytes): auto (where "
                  "the estimate on a sample of the codes is smaller), off (raster order) or on")
        ->capture_default_str();
    c->add_option("--device", a.device, "Backend: auto, cpu or cuda")->capture_default_str();
    c->add_option("--threads", a.threads, "CPU threads (0 = all); never changes the archive")->capture_default_str();
    c->add_flag("--json", a.json, "Print one JSON object instead of text");
}

gsz_params params_from(const ArrayArgs& a, const std::vector<uint64_t>& dims) {
    gsz_params p;
    gsz_params_init(&p);
    if (a.dtype == "f32") p.dtype = GSZ_DTYPE_F32;
    else if (a.dtype == "f64") p.dtype = GSZ_DTYPE_F64;
    else die("-t " + a.dtype + ": expected f32 or f64");
    p.rank = static_cast<uint32_t>(dims.size());
    for (size_t d = 0; d < dims.size(); ++d) p.dims[d] = dims[d];
    if (a.mode == "abs") p.error_mode = GSZ_ERROR_ABS;
    else if (a.mode == "rel") p.error_mode = GSZ_ERROR_REL;
    else die("-m " + a.mode + ": expected abs or rel");
    if (!(a.eb >= 0) || !std::isfinite(a.eb)) die("-e: the error bound must be a finite number >= 0");
    p.error_bound = a.eb;
    if (a.pipeline == "lorenzo") p.pipeline = GSZ_PIPELINE_LORENZO;
    else if (a.pipeline == "fast") p.pipeline = GSZ_PIPELINE_FAST;
    else if (a.pipeline == "interp") p.pipeline = GSZ_PIPELINE_INTERP;
    else if (a.pipeline == "auto") p.pipeline = GSZ_PIPELINE_AUTO;
    else die("-p " + a.pipeline + ": this gsz has the pipelines: lorenzo, interp, fast (and auto for compress)");
    p.interp_alpha = a.interp_alpha;
    p.interp_beta = a.interp_beta;
    if (a.interp_spline == "auto") p.interp_spline = GSZ_INTERP_SPLINE_AUTO;
    else if (a.interp_spline == "not-a-knot") p.interp_spline = GSZ_INTERP_SPLINE_NOT_A_KNOT;
    else if (a.interp_spline == "natural") p.interp_spline = GSZ_INTERP_SPLINE_NATURAL;
    else die("--interp-spline " + a.interp_spline + ": expected auto, not-a-knot or natural");
    if (a.interp_anchors == "auto") p.interp_anchors = GSZ_INTERP_ANCHORS_AUTO;
    else if (a.interp_anchors == "coded") p.interp_anchors = GSZ_INTERP_ANCHORS_CODED;
    else if (a.interp_anchors == "raw") p.interp_anchors = GSZ_INTERP_ANCHORS_RAW;
    else die("--interp-anchors " + a.interp_anchors + ": expected auto, coded or raw");
    if (a.interp_jump_guard == "on") p.interp_jump_guard = GSZ_INTERP_JUMP_GUARD_ON;
    else if (a.interp_jump_guard == "off") p.interp_jump_guard = GSZ_INTERP_JUMP_GUARD_OFF;
    else die("--interp-jump-guard " + a.interp_jump_guard + ": expected on or off");
    if (a.fill_value == "auto") p.fill = GSZ_FILL_AUTO;
    else if (a.fill_value == "off") p.fill = GSZ_FILL_OFF;
    else {
        p.fill = GSZ_FILL_VALUE;
        char* end = nullptr;
        p.fill_value = std::strtod(a.fill_value.c_str(), &end);
        if (a.fill_value.empty() || *end != '\0')
            die("--fill-value " + a.fill_value + ": expected auto, off or a number");
    }
    if (a.interp_tiles == "auto") p.interp_tiles = GSZ_INTERP_TILES_AUTO;
    else if (a.interp_tiles == "spline") p.interp_tiles = GSZ_INTERP_TILES_SPLINE;
    else if (a.interp_tiles == "lorenzo") p.interp_tiles = GSZ_INTERP_TILES_LORENZO;
    else if (a.interp_tiles == "each") p.interp_tiles = GSZ_INTERP_TILES_EACH;
    else die("--interp-tiles " + a.interp_tiles + ": expected auto, spline, lorenzo or each");
    if (a.ans_strips == "auto") p.ans_strips = GSZ_ANS_STRIPS_AUTO;
    else if (a.ans_strips == "off") p.ans_strips = GSZ_ANS_STRIPS_OFF;
    else if (a.ans_strips == "on") p.ans_strips = GSZ_ANS_STRIPS_ON;
    else die("--ans-strips " + a.ans_strips + ": expected auto, off or on");
    if (a.interp_anchor_stride != "auto") {
        char* end = nullptr;
        const unsigned long v = std::strtoul(a.interp_anchor_stride.c_str(), &end, 10);
        if (a.interp_anchor_stride.empty() || *end != '\0' || v < 2 || v > 512 || (v & (v - 1)) != 0)
            die("--interp-anchor-stride " + a.interp_anchor_stride + ": expected auto or a power of two from 2 to 512");
        p.interp_anchor_stride = static_cast<uint32_t>(v);
    }
    if (a.components == "auto") p.components = GSZ_COMPONENTS_AUTO;
    else if (a.components == "off") p.components = GSZ_COMPONENTS_OFF;
    else die("--components " + a.components + ": expected auto or off");
    if (a.interp_order != "auto") {
        if (a.interp_order.empty() || a.interp_order.size() > 3) die("--interp-order " + a.interp_order + ": expected auto or up to 3 letters x, y, z");
        std::snprintf(p.interp_order, sizeof p.interp_order, "%s", a.interp_order.c_str());
    }
    if (a.block != 64 && a.block != 128 && a.block != 256) die("--block " + std::to_string(a.block) + ": expected 64, 128 or 256");
    p.block_size = a.block;
    p.radius = a.radius;
    if (a.lossless == "auto") p.lossless = GSZ_LOSSLESS_AUTO;
    else if (a.lossless == "none") p.lossless = GSZ_LOSSLESS_NONE;
    else if (a.lossless == "runs") p.lossless = GSZ_LOSSLESS_RUNS;
    else if (a.lossless == "ans") p.lossless = GSZ_LOSSLESS_ANS;
    else die("--lossless " + a.lossless + ": expected auto, none, runs or ans");
    p.device = parse_device(a.device);
    p.num_threads = a.threads;
    return p;
}

uint64_t num_elements(const std::vector<uint64_t>& dims) {
    uint64_t n = 1;
    for (uint64_t d : dims) n *= d;
    return n;
}

// The raw input, checked against -t and -l.
Bytes read_array(const ArrayArgs& a, const std::vector<uint64_t>& dims, Progress* progress = nullptr) {
    Bytes input = read_file(a.input, progress);
    const uint64_t need = num_elements(dims) * (a.dtype == "f64" ? 8 : 4);
    if (input.size() != need)
        die(a.input + ": has " + std::to_string(input.size()) + " bytes, but -t " + a.dtype + " -l " + a.dims +
            " needs " + std::to_string(need));
    return input;
}

struct CompressArgs : ArrayArgs {
    std::string output, progress = "auto";
    bool force = false, verify = false;
};

// An HDF5 dataset's shape as -t and -l would give it; where the user gave
// either, it must agree.
void take_dataset_shape(const gsz::cli::Hdf5Shape& shape, const std::string& dataset, std::string& dtype,
                        std::string& dims) {
    const std::string t = dtype_name(shape.dtype);
    const std::string l = dims_string(shape.dims.data(), static_cast<uint32_t>(shape.dims.size()));
    if (!dtype.empty() && dtype != t) die("-t " + dtype + ": the dataset " + dataset + " holds " + t);
    if (!dims.empty() && parse_dims(dims) != shape.dims) die("-l " + dims + ": the dataset " + dataset + " is " + l);
    dtype = t;
    dims = l;
}

int run_compress(const CompressArgs& args) {
    // An HDF5 dataset gives the type and dims (-t / -l, where given, must agree).
    CompressArgs a = args;
    std::optional<gsz::cli::Hdf5Shape> h5;
    if (!a.dataset.empty()) {
        try {
            h5 = gsz::cli::hdf5_shape(a.input, a.dataset);
        } catch (const std::runtime_error& e) {
            die(e.what());
        }
        take_dataset_shape(*h5, a.dataset, a.dtype, a.dims);
    }  // else -t and -l were given (main checks)
    const auto dims = parse_dims(a.dims);
    const gsz_params p = params_from(a, dims);

    Ctx ctx;
    size_t capacity = 0;
    ctx.check(gsz_compress_bound(&p, &capacity), "compress");
    check_output(a.output, a.input, a.force);

    const uint64_t n = num_elements(dims);
    const uint64_t raw_bytes = n * (a.dtype == "f64" ? 8 : 4);
    Progress progress(a.progress, raw_bytes);
    const auto t_read = Clock::now();
    progress.begin("reading " + a.input + " (" + human_bytes(static_cast<double>(raw_bytes)) + ")");
    Bytes input;
    if (h5) {
        input = Bytes(raw_bytes);
        try {
            gsz::cli::hdf5_read(a.input, a.dataset, *h5, input.data());
        } catch (const std::runtime_error& e) {
            die(e.what());
        }
    } else {
        input = read_array(a, dims, &progress);
    }
    progress.end();
    const double read_s = seconds_since(t_read);

    Bytes archive(capacity);
    size_t archive_bytes = 0;
    progress.begin("compressing (" + a.pipeline + ", " + backend_name(p.device) + ")");
    const auto t0 = Clock::now();
    ctx.check(gsz_compress(ctx.ctx, &p, input.data(), archive.data(), archive.size(), &archive_bytes), "compress");
    const double compress_s = seconds_since(t0);
    progress.end();
    archive.count = archive_bytes;

    gsz_archive_info info;
    ctx.check(gsz_archive_inspect(ctx.ctx, archive.data(), archive.size(), &info), "compress");

    std::optional<Quality> quality;
    double verify_s = 0;
    if (a.verify) {
        Bytes back(input.size());
        progress.begin("verifying (decompressing and checking every value)");
        const auto t1 = Clock::now();
        ctx.check(gsz_decompress(ctx.ctx, archive.data(), archive.size(), back.data(), back.size(), p.device,
                                 p.num_threads),
                  "verify");
        verify_s = seconds_since(t1);
        quality = measure_any(p.dtype, input.data(), back.data(), n, info.error_bound_abs, info.value_min,
                              info.value_max);
        progress.end();
    }
    progress.begin("writing " + a.output + " (" + human_bytes(static_cast<double>(archive.size())) + ")");
    write_file_atomic(a.output, archive.data(), archive.size(), &progress);
    progress.end();

    const double ratio = static_cast<double>(input.size()) / static_cast<double>(archive_bytes);
    if (a.json) {
        json j;
        j["command"] = "compress";
        j["input"] = a.input;
        j["output"] = a.output;
        j["device"] = backend_name(p.device);
        j["threads"] = a.threads;
        j.update(info_json(info));
        j["read_s"] = read_s;
        j["compress_s"] = compress_s;
        j["compress_gbps"] = static_cast<double>(input.size()) / compress_s / 1e9;
        if (quality) {
            j["decompress_s"] = verify_s;
            j["decompress_gbps"] = static_cast<double>(input.size()) / verify_s / 1e9;
            put_quality(j, *quality);
        }
        std::cout << j.dump(2) << "\n";
    } else {
        std::printf("%s -> %s: %s -> %s, ratio %.2f (%.3f bits/value), %s, eb %s %g (abs %.6g), %.3f s (%.3f GB/s)\n",
                    a.input.c_str(), a.output.c_str(), human_bytes(static_cast<double>(input.size())).c_str(),
                    human_bytes(static_cast<double>(archive_bytes)).c_str(), ratio,
                    8.0 * static_cast<double>(archive_bytes) / static_cast<double>(n), pipeline_name(info.pipeline),
                    mode_name(p.error_mode), p.error_bound, info.error_bound_abs, compress_s,
                    static_cast<double>(input.size()) / compress_s / 1e9);
        if (quality)
            std::printf("verify: max abs error %.6g (bound %.6g, %s), PSNR %.2f dB, decompress %.3f s (%.3f GB/s)\n",
                        quality->max_abs_error, info.error_bound_abs,
                        quality->violations || quality->nonfinite_mismatch ? "VIOLATED" : "holds", quality->psnr,
                        verify_s, static_cast<double>(input.size()) / verify_s / 1e9);
    }
    if (quality && (quality->violations || quality->nonfinite_mismatch)) {
        std::fprintf(stderr, "gsz: error: verification failed: %llu values outside the bound, %llu NaN/Inf changed\n",
                     static_cast<unsigned long long>(quality->violations),
                     static_cast<unsigned long long>(quality->nonfinite_mismatch));
        return 1;
    }
    return 0;
}

struct DecompressArgs {
    std::string input, output, device = "auto", compare, progress = "auto", dataset;
    int threads = 0;
    bool json = false, force = false;
};

int run_decompress(const DecompressArgs& a) {
    Ctx ctx;
    const gsz_device device = parse_device(a.device);
    check_output(a.output, a.input, a.force);
    std::error_code size_ec;
    const uint64_t archive_size = fs::file_size(a.input, size_ec);
    // The phases' size is the output's, known once the header is read; the
    // archive alone decides whether reading it is shown.
    Progress reading(a.progress, size_ec ? 0 : archive_size);
    reading.begin("reading " + a.input);
    const Bytes archive = read_file(a.input, &reading);
    reading.end();
    gsz_archive_info info;
    ctx.check(gsz_archive_inspect(ctx.ctx, archive.data(), archive.size(), &info), a.input);
    Bytes out;
    try {
        out = Bytes(info.original_bytes);
    } catch (const std::exception&) {
        die(a.input + ": cannot allocate " + human_bytes(static_cast<double>(info.original_bytes)) + " for the output");
    }
    Progress progress(a.progress, info.original_bytes);
    progress.begin(std::string("decompressing (") + pipeline_name(info.pipeline) + ", " + backend_name(device) + ")");
    const auto t0 = Clock::now();
    ctx.check(gsz_decompress(ctx.ctx, archive.data(), archive.size(), out.data(), out.size(), device, a.threads),
              a.input);
    const double s = seconds_since(t0);
    progress.end();
    progress.begin("writing " + a.output + " (" + human_bytes(static_cast<double>(out.size())) + ")");
    if (a.dataset.empty()) {
        write_file_atomic(a.output, out.data(), out.size(), &progress);
    } else {
        // An HDF5 file, written beside the target and renamed into place as raw output is.
        const std::vector<uint64_t> dims(info.dims, info.dims + info.rank);
        write_atomic(a.output, [&](const fs::path& tmp) {
            try {
                gsz::cli::hdf5_write(tmp.string(), a.output, a.dataset, info.dtype, dims, out.data());
            } catch (const std::runtime_error& e) {
                die(e.what());
            }
        });
    }
    progress.end();
    // --compare: the basic assessment metrics against the original (docs/METRICS.md);
    // with --dataset the original is that dataset of an HDF5 file.
    std::optional<gsz::assess::Result> cmp;
    if (!a.compare.empty()) {
        Bytes orig;
        if (a.dataset.empty()) {
            orig = read_file(a.compare);
        } else {
            try {
                const gsz::cli::Hdf5Shape shape = gsz::cli::hdf5_shape(a.compare, a.dataset);
                if (shape.dtype != info.dtype || num_elements(shape.dims) != info.num_elements)
                    die(a.compare + ":" + a.dataset + ": " + dtype_name(shape.dtype) + " " +
                        dims_string(shape.dims.data(), static_cast<uint32_t>(shape.dims.size())) + ", the archive holds " +
                        dtype_name(info.dtype) + " " + dims_string(info.dims, info.rank));
                orig = Bytes(out.size());
                gsz::cli::hdf5_read(a.compare, a.dataset, shape, orig.data());
            } catch (const std::runtime_error& e) {
                die(e.what());
            }
        }
        if (orig.size() != out.size())
            die(a.compare + ": has " + std::to_string(orig.size()) + " bytes, the archive holds " +
                std::to_string(out.size()));
        gsz::assess::Shape shape;
        shape.rank = info.rank;
        for (uint32_t d = 0; d < info.rank; ++d) shape.dims[d] = info.dims[d];
        gsz::assess::Options o;
        o.stencils = o.autocorr = o.ssim = false;
        o.num_threads = a.threads;
        cmp = info.dtype == GSZ_DTYPE_F64
                  ? gsz::assess::assess_cpu(reinterpret_cast<const double*>(orig.data()),
                                            reinterpret_cast<const double*>(out.data()), shape, o)
                  : gsz::assess::assess_cpu(reinterpret_cast<const float*>(orig.data()),
                                            reinterpret_cast<const float*>(out.data()), shape, o);
    }
    if (a.json) {
        json j;
        j["command"] = "decompress";
        if (cmp) {
            j["compare"] = {{"original", a.compare},
                            {"max_abs_error", cmp->abs_err_max},
                            {"mse", cmp->mse},
                            {"rmse", cmp->rmse},
                            {"nrmse", cmp->nrmse},
                            {"psnr", finite_or_string(cmp->psnr)},
                            {"snr", finite_or_string(cmp->snr)},
                            {"pearson", cmp->pearson},
                            {"max_rel_error", cmp->max_rel_error},
                            {"max_pwr_error", cmp->pwr_err_max},
                            {"nonfinite_mismatches", cmp->nonfinite_mismatches}};
        }
        j["input"] = a.input;
        j["output"] = a.output;
        j["device"] = backend_name(device);
        j.update(info_json(info));
        j["decompress_s"] = s;
        j["decompress_gbps"] = static_cast<double>(out.size()) / s / 1e9;
        std::cout << j.dump(2) << "\n";
    } else {
        std::printf("%s -> %s: %s %s %s, %.3f s (%.3f GB/s)\n", a.input.c_str(), a.output.c_str(),
                    dtype_name(info.dtype), dims_string(info.dims, info.rank).c_str(),
                    human_bytes(static_cast<double>(out.size())).c_str(), s,
                    static_cast<double>(out.size()) / s / 1e9);
        if (cmp)
            std::printf("compare: max abs error %.6g (bound %.6g), PSNR %.4f dB, NRMSE %.6g, pearson %.9f\n",
                        cmp->abs_err_max, info.error_bound_abs, cmp->psnr, cmp->nrmse, cmp->pearson);
    }
    return 0;
}

int run_info(const std::string& input, bool as_json) {
    Ctx ctx;
    const Bytes archive = read_file(input);
    gsz_archive_info info;
    ctx.check(gsz_archive_inspect(ctx.ctx, archive.data(), archive.size(), &info), input);
    // Where the bytes go: the header and section table, then each section in
    // archive order (an archive has at most 64).
    uint32_t num_sections = 0;
    uint64_t header_bytes = 0;
    std::array<gsz_section_info, 64> all{};
    ctx.check(gsz_archive_sections(ctx.ctx, archive.data(), archive.size(), all.data(), all.size(), &num_sections,
                                   &header_bytes),
              input);
    const std::span<const gsz_section_info> sections(all.data(), std::min<size_t>(num_sections, all.size()));
    if (as_json) {
        json out{{"command", "info"}, {"input", input}};
        out.update(info_json(info));
        out["header_bytes"] = header_bytes;
        json list = json::array();
        for (const gsz_section_info& sec : sections) list.push_back({{"name", sec.name}, {"bytes", sec.bytes}});
        out["sections"] = list;
        std::cout << out.dump(2) << "\n";
        return 0;
    }
    std::printf("file            %s\n", input.c_str());
    std::printf("format version  %u\n", info.format_version);
    std::printf("data            %s, dims %s (fastest first), %llu values\n", dtype_name(info.dtype),
                dims_string(info.dims, info.rank).c_str(), static_cast<unsigned long long>(info.num_elements));
    std::printf("pipeline        %s\n", pipeline_name(info.pipeline));
    std::printf("error bound     %s %g -> absolute %.9g%s\n", mode_name(info.error_mode), info.error_bound,
                info.error_bound_abs, info.error_bound_abs == 0 ? " (lossless)" : "");
    std::printf("value range     [%.9g, %.9g]\n", info.value_min, info.value_max);
    if (info.component_dim >= 0)
        std::printf("components      dim %c (%llu entries) predicted one component at a time\n",
                    "xyzw"[info.component_dim], static_cast<unsigned long long>(info.dims[info.component_dim]));
    if (info.pipeline == GSZ_PIPELINE_LORENZO)
        std::printf("lorenzo         radius %u, %llu outliers stored exactly\n", info.radius,
                    static_cast<unsigned long long>(info.num_outliers));
    if (info.pipeline == GSZ_PIPELINE_INTERP) {
        std::printf("interp          radius %u, %llu outliers stored exactly, %llu anchors (every %u points)\n",
                    info.radius, static_cast<unsigned long long>(info.num_outliers),
                    static_cast<unsigned long long>(info.interp_num_anchors), info.interp_anchor_stride);
        if (info.interp_anchors == GSZ_INTERP_ANCHORS_RAW)
            std::printf("interp anchors  raw (stored exactly)\n");
        else
            std::printf("interp anchors  coded (Lorenzo over the anchor grid), %llu of them outliers\n",
                        static_cast<unsigned long long>(info.interp_listed_anchors));
        std::printf("interp tuning   alpha %g, beta %g, order %s (first to last), cubic", info.interp_alpha,
                    info.interp_beta, std::string(info.interp_order, strnlen(info.interp_order, 4)).c_str());
        for (uint32_t d = 0; d < info.interp_rank; ++d)
            std::printf(" %c:%s", 'x' + d, info.interp_spline[d] == 'n' ? "natural" : "not-a-knot");
        std::printf("\n");
        if (info.interp_jump > 0)
            std::printf("interp jumps    guarded: neighbours more than %.9g apart are a jump\n", info.interp_jump);
        else
            std::printf("interp jumps    not guarded (the paper's splines everywhere)\n");
        std::printf("interp tiles    %llu, of which %llu Lorenzo-coded\n",
                    static_cast<unsigned long long>(info.interp_tiles),
                    static_cast<unsigned long long>(info.interp_lorenzo_tiles));
    }
    if (info.pipeline == GSZ_PIPELINE_LORENZO || info.pipeline == GSZ_PIPELINE_INTERP) {
        if (info.has_fill)
            std::printf("fill value      %.9g at %llu points, kept exactly (their mask: %llu bytes)\n", info.fill_value,
                        static_cast<unsigned long long>(info.fill_points),
                        static_cast<unsigned long long>(info.fill_mask_bytes));
        else
            std::printf("fill value      none\n");
        if (info.lossless == GSZ_LOSSLESS_ANS)
            std::printf("lossless        ans: context-modelled rANS of the %llu quant-codes in %llu lanes of %u "
                        "(their states and word counts: %llu bytes), contexts from the code %s%s\n",
                        static_cast<unsigned long long>(info.num_elements),
                        static_cast<unsigned long long>(info.ans_lanes), info.ans_lane_symbols,
                        static_cast<unsigned long long>(info.ans_lanes_bytes),
                        info.ans_class_lag == 2 ? "two back" : "before",
                        info.ans_strip_width ? (" and the row above, in strips of " +
                                                std::to_string(info.ans_strip_width) + " columns").c_str()
                                             : "");
        else if (info.lossless == GSZ_LOSSLESS_RUNS)
            std::printf("lossless        runs of code %u folded into Huffman: %llu symbols for %llu codes\n",
                        info.run_dominant_code, static_cast<unsigned long long>(info.huffman_symbols),
                        static_cast<unsigned long long>(info.num_elements));
        else
            std::printf("lossless        none: Huffman of the %llu quant-codes\n",
                        static_cast<unsigned long long>(info.huffman_symbols));
    }
    if (info.pipeline == GSZ_PIPELINE_FAST)
        std::printf("fast            blocks of %u: %llu blocks, %llu constant, %llu raw\n", info.block_size,
                    static_cast<unsigned long long>(info.num_blocks),
                    static_cast<unsigned long long>(info.num_constant_blocks),
                    static_cast<unsigned long long>(info.num_raw_blocks));
    std::printf("size            %s -> %s, ratio %.3f, %.4f bits/value\n",
                human_bytes(static_cast<double>(info.original_bytes)).c_str(),
                human_bytes(static_cast<double>(info.archive_bytes)).c_str(),
                static_cast<double>(info.original_bytes) / static_cast<double>(info.archive_bytes),
                8.0 * static_cast<double>(info.archive_bytes) / static_cast<double>(info.num_elements));
    const auto share = [&](uint64_t bytes) {
        return 100.0 * static_cast<double>(bytes) / static_cast<double>(info.archive_bytes);
    };
    std::printf("sections        %-26s %14llu B %6.2f%%\n", "header, section table",
                static_cast<unsigned long long>(header_bytes), share(header_bytes));
    for (const gsz_section_info& sec : sections)
        std::printf("                %-26s %14llu B %6.2f%%\n", sec.name, static_cast<unsigned long long>(sec.bytes),
                    share(sec.bytes));
    return 0;
}

struct BenchArgs : ArrayArgs {
    std::string tile;
    int repeat = 10, warmup = 2;
};

double median(std::vector<double> v) {
    if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
    std::sort(v.begin(), v.end());
    const size_t h = v.size() / 2;
    return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

// The --tile factors (all 1 without it), checked against the dims.
std::vector<uint64_t> parse_tiles(const BenchArgs& a, const std::vector<uint64_t>& dims) {
    if (a.tile.empty()) return std::vector<uint64_t>(dims.size(), 1);
    const auto tiles = parse_dims(a.tile, "--tile");
    if (tiles.size() != dims.size())
        die("--tile " + a.tile + ": give one factor per dim of -l " + a.dims + " (" + std::to_string(dims.size()) +
            ")");
    uint64_t n = 1, extent = 0;
    for (size_t d = 0; d < dims.size(); ++d)
        if (__builtin_mul_overflow(dims[d], tiles[d], &extent) || __builtin_mul_overflow(n, extent, &n))
            die("--tile " + a.tile + ": the tiled field is too large");
    if (n > (uint64_t{1} << 62) / 8) die("--tile " + a.tile + ": the tiled field is too large");
    return tiles;
}

// The input, mirror-tiled when --tile asks for it; `dims` becomes the tiled dims.
Bytes tiled_input(const BenchArgs& a, const std::vector<uint64_t>& tiles, std::vector<uint64_t>& dims) {
    Bytes input = read_array(a, dims);
    if (a.tile.empty()) return input;
    const uint64_t elem = a.dtype == "f64" ? 8 : 4;
    Bytes out(num_elements(gsz::cli::mirror_tiled_dims(dims, tiles)) * elem);
    if (a.dtype == "f64")
        gsz::cli::mirror_tile(reinterpret_cast<const double*>(input.data()), dims, tiles,
                              reinterpret_cast<double*>(out.data()));
    else
        gsz::cli::mirror_tile(reinterpret_cast<const float*>(input.data()), dims, tiles,
                              reinterpret_cast<float*>(out.data()));
    dims = gsz::cli::mirror_tiled_dims(dims, tiles);
    return out;
}

int run_bench(const BenchArgs& a) {
    auto dims = parse_dims(a.dims);
    gsz_params p = params_from(a, dims);
    if (p.pipeline == GSZ_PIPELINE_AUTO) die("-p auto: bench times one pipeline; bench lorenzo and interp instead");
    if (a.repeat < 1) die("--repeat " + std::to_string(a.repeat) + ": must be at least 1");
    if (a.warmup < 0) die("--warmup " + std::to_string(a.warmup) + ": must be >= 0");
    const auto tiles = parse_tiles(a, dims);

    // Pick the backend first: a missing GPU should fail before any work.
    std::string why;
    const bool have_cuda = p.device != GSZ_DEVICE_CPU && gsz::pipeline::cuda_backend_available(&why);
    if (p.device == GSZ_DEVICE_CUDA && !have_cuda) die("--device cuda: " + why);
    if (p.device == GSZ_DEVICE_AUTO && !have_cuda)
        std::fprintf(stderr, "gsz: no usable GPU (%s); benchmarking the CPU backend\n", why.c_str());
    p.device = have_cuda ? GSZ_DEVICE_CUDA : GSZ_DEVICE_CPU;

    const Bytes input = tiled_input(a, tiles, dims);
    p.rank = static_cast<uint32_t>(dims.size());
    for (size_t d = 0; d < dims.size(); ++d) p.dims[d] = dims[d];
    const uint64_t n = num_elements(dims);

    gsz::pipeline::BenchOptions options;
    options.params = p;
    options.warmup = a.warmup;
    options.repeat = a.repeat;
    gsz::pipeline::BenchResult r;
    try {
        r = have_cuda ? gsz::pipeline::bench_cuda(options, input.data())
                      : gsz::pipeline::bench_cpu(options, input.data());
    } catch (const gsz::Error& e) {
        die(std::string("bench: ") + gsz_status_string(e.status()) + ": " + e.what());
    }
    if (r.decoded.size() != input.size() || r.archive.size() != r.archive_bytes || r.original_bytes != input.size() ||
        r.compress_s.empty() || r.decompress_s.empty() || r.compress_e2e_s.empty() || r.decompress_e2e_s.empty())
        die("bench: the " + std::string(have_cuda ? "cuda" : "cpu") + " backend returned an incomplete result");

    // The bound the user asked for, from the original values (as compress
    // derives it), and the error of what came back.
    using gsz::pipeline::finite_range_cpu;
    const auto range = p.dtype == GSZ_DTYPE_F64
                           ? finite_range_cpu(reinterpret_cast<const double*>(input.data()), n, a.threads)
                           : finite_range_cpu(reinterpret_cast<const float*>(input.data()), n, a.threads);
    double eb_abs = p.error_bound;
    if (p.error_mode == GSZ_ERROR_REL) eb_abs = range.any ? p.error_bound * (range.max - range.min) : 0.0;
    const Quality q = measure_any(p.dtype, input.data(), r.decoded.data(), n, eb_abs, range.min, range.max);
    if (q.violations || q.nonfinite_mismatch)
        die(gsz::format_message("bench: the %s backend broke the bound: %llu values outside %.9g (max error %.9g), "
                                "%llu NaN/Inf changed",
                                have_cuda ? "cuda" : "cpu", static_cast<unsigned long long>(q.violations), eb_abs,
                                q.max_abs_error, static_cast<unsigned long long>(q.nonfinite_mismatch)));

    // What the archive holds (the pipeline may be store: lossless bound, or incompressible data).
    Ctx ctx;
    gsz_archive_info info;
    ctx.check(gsz_archive_inspect(ctx.ctx, r.archive.data(), r.archive.size(), &info), "bench");

    const double bytes = static_cast<double>(input.size());
    const double ratio = bytes / static_cast<double>(r.archive_bytes);
    const double bits = 8.0 * static_cast<double>(r.archive_bytes) / static_cast<double>(n);
    const double c_s = median(r.compress_s), d_s = median(r.decompress_s);
    const double ce_s = median(r.compress_e2e_s), de_s = median(r.decompress_e2e_s);
    const double err_over_eb = eb_abs > 0 ? q.max_abs_error / eb_abs : 0.0;
    if (a.json) {
        json j;
        j["command"] = "bench";
        j["input"] = a.input;
        j["tile"] = a.tile.empty() ? json(nullptr) : json(a.tile);
        j["device"] = r.device;
        j["backend"] = have_cuda ? "cuda" : "cpu";
        j["dtype"] = a.dtype;
        j["dims"] = dims;
        j["num_elements"] = n;
        j["pipeline"] = pipeline_name(info.pipeline);
        j["error_mode"] = mode_name(p.error_mode);
        j["error_bound"] = p.error_bound;
        j["eb_abs"] = eb_abs;
        j["radius"] = gsz::pipeline::quant_radius(p);
        if (info.pipeline == GSZ_PIPELINE_LORENZO || info.pipeline == GSZ_PIPELINE_INTERP)
            j["lossless"] = lossless_name(info.lossless);
        j["threads"] = a.threads;
        j["warmup"] = a.warmup;
        j["repeat"] = a.repeat;
        j["original_bytes"] = r.original_bytes;
        j["archive_bytes"] = r.archive_bytes;
        j["ratio"] = ratio;
        j["bits_per_value"] = bits;
        put_quality(j, q);
        j["max_error_over_eb"] = err_over_eb;
        j["compress_gbps"] = bytes / c_s / 1e9;
        j["decompress_gbps"] = bytes / d_s / 1e9;
        j["compress_e2e_gbps"] = bytes / ce_s / 1e9;
        j["decompress_e2e_gbps"] = bytes / de_s / 1e9;
        j["compress_s"] = r.compress_s;
        j["decompress_s"] = r.decompress_s;
        j["compress_e2e_s"] = r.compress_e2e_s;
        j["decompress_e2e_s"] = r.decompress_e2e_s;
        std::cout << j.dump() << "\n";   // one line, so runs append to a .jsonl file
        return 0;
    }
    std::printf("input       %s%s%s: %s %s, %s\n", a.input.c_str(), a.tile.empty() ? "" : " mirror-tiled ",
                a.tile.c_str(), a.dtype.c_str(), dims_string(dims.data(), p.rank).c_str(),
                human_bytes(bytes).c_str());
    std::printf("device      %s, %s, eb %s %g (abs %.6g), warmup %d, medians of %d\n", r.device.c_str(),
                pipeline_name(info.pipeline), mode_name(p.error_mode), p.error_bound, eb_abs, a.warmup, a.repeat);
    std::printf("size        %s -> %s, ratio %.2f (%.3f bits/value)%s\n", human_bytes(bytes).c_str(),
                human_bytes(static_cast<double>(r.archive_bytes)).c_str(), ratio, bits,
                info.lossless == GSZ_LOSSLESS_RUNS ? ", run tokens" : "");
    if (eb_abs > 0)
        std::printf("error       max abs %.6g (%.4f of the bound, holds), PSNR %.2f dB\n", q.max_abs_error,
                    err_over_eb, q.psnr);
    else
        std::printf("error       none (lossless)\n");
    std::printf("compress    %8.3f GB/s device-resident, %8.3f GB/s end-to-end (%.4f s, %.4f s)\n", bytes / c_s / 1e9,
                bytes / ce_s / 1e9, c_s, ce_s);
    std::printf("decompress  %8.3f GB/s device-resident, %8.3f GB/s end-to-end (%.4f s, %.4f s)\n", bytes / d_s / 1e9,
                bytes / de_s / 1e9, d_s, de_s);
    return 0;
}

// ---- gsz assess ---------------------------------------------------------------

struct AssessArgs {
    std::string original, decompressed, dtype, dims, metrics = "all", archive, dataset;
    uint32_t pdf_bins = 2000, lags = 100, ssim_window = 7, ssim_step = 1;
    std::string ssim_variant = "box", device = "cpu", tile, report;
    int threads = 0, repeat = 1;
    bool json = false;
};

json derived_json(const gsz::assess::DerivedComparison& d) {
    if (!d.computed) return nullptr;
    return {{"points", d.points}, {"max_abs_error", d.max_abs_error}, {"psnr", finite_or_string(d.psnr)}};
}

// --report DIR: the data for scripts/gsz_report.py (metrics, the middle slice
// of both arrays and of the error as float64, rate-distortion points), then
// the script renders DIR/index.html with matplotlib.
template <class T>
void write_report(const std::string& dir, json j, const T* x, const T* y, const std::vector<uint64_t>& dims,
                  const std::string& archive) {
    std::error_code ec;
    if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) die("--report " + dir + ": exists and is not a directory");
    fs::create_directories(dir, ec);
    if (ec) die("--report " + dir + ": cannot create it: " + ec.message());
    const uint64_t n0 = dims[0], n1 = dims.size() > 1 ? dims[1] : 1;
    uint64_t plane = 0;  // the middle of the slower axes
    std::string where = "all values";
    if (dims.size() > 2) {
        uint64_t stride = n0 * n1;
        where.clear();
        for (size_t d = 2; d < dims.size(); ++d) {
            plane += (dims[d] / 2) * stride;
            stride *= dims[d];
            where += (where.empty() ? "" : ", ") + std::string("axis ") + std::to_string(d) + " = " +
                     std::to_string(dims[d] / 2);
        }
    }
    const uint64_t limit = dims.size() == 1 ? 100000 : 1024;  // at most this many points per side
    const uint64_t step = std::max<uint64_t>(1, (std::max(n0, n1) + limit - 1) / limit);
    const uint64_t w = (n0 + step - 1) / step, h = dims.size() == 1 ? 1 : (n1 + step - 1) / step;
    std::vector<double> so, sd, se;
    for (uint64_t r = 0; r < h; ++r)
        for (uint64_t c = 0; c < w; ++c) {
            const uint64_t i = plane + r * step * n0 + c * step;
            const double xv = x[i], yv = y[i];
            so.push_back(xv), sd.push_back(yv), se.push_back(std::isfinite(xv) ? yv - xv : NAN);
        }
    auto dump = [&](const char* name, const std::vector<double>& v) {
        write_file_atomic((fs::path(dir) / name).string(), v.data(), v.size() * sizeof(double));
    };
    dump("original.f64", so);
    dump("decompressed.f64", sd);
    dump("error.f64", se);
    if (step > 1) where += ", every " + std::to_string(step) + "th point";
    j["slice"] = {{"dims", dims.size() == 1 ? std::vector<uint64_t>{w} : std::vector<uint64_t>{w, h}},
                  {"where", where},
                  {"original", "original.f64"},
                  {"decompressed", "decompressed.f64"},
                  {"error", "error.f64"}};
    const std::string text = j.dump(2);
    write_file_atomic((fs::path(dir) / "report.json").string(), text.data(), text.size());
    if (!archive.empty() && j.contains("bit_rate")) {
        std::ofstream rd(fs::path(dir) / "rd.jsonl", std::ios::app);
        rd << json{{"label", fs::path(archive).filename().string()}, {"bit_rate", j["bit_rate"]},
                   {"ratio", j["compression_ratio"]}, {"psnr", j.value("psnr", json(nullptr))}}
                  .dump()
           << "\n";
    }
    const char* env = std::getenv("GSZ_REPORT_SCRIPT");
    const std::string script = env ? env : GSZ_REPORT_SCRIPT_DEFAULT;
    for (const std::string& part : {script, dir})
        if (part.find('\'') != std::string::npos) die("--report: paths with a single quote are not supported");
    const std::string cmd = "python3 '" + script + "' '" + dir + "' >/dev/null";
    if (std::system(cmd.c_str()) != 0)
        die("--report: rendering failed (it runs " + script +
            " and needs python3 with numpy and matplotlib: pip install matplotlib); the data is in " + dir);
}

int run_assess(const AssessArgs& args) {
    // With --dataset both arrays are that dataset of two HDF5 files, which give the type and dims.
    AssessArgs a = args;
    std::optional<gsz::cli::Hdf5Shape> h5;
    if (!a.dataset.empty()) {
        try {
            h5 = gsz::cli::hdf5_shape(a.original, a.dataset);
            const gsz::cli::Hdf5Shape other = gsz::cli::hdf5_shape(a.decompressed, a.dataset);
            if (other.dtype != h5->dtype || other.dims != h5->dims)
                die(a.decompressed + ":" + a.dataset + ": " + dtype_name(other.dtype) + " " +
                    dims_string(other.dims.data(), static_cast<uint32_t>(other.dims.size())) + ", the original is " +
                    dtype_name(h5->dtype) + " " + dims_string(h5->dims.data(), static_cast<uint32_t>(h5->dims.size())));
        } catch (const std::runtime_error& e) {
            die(e.what());
        }
        take_dataset_shape(*h5, a.dataset, a.dtype, a.dims);
    }  // else -t and -l were given (main checks)
    const std::vector<uint64_t> dims = parse_dims(a.dims);
    if (a.dtype != "f32" && a.dtype != "f64") die("-t " + a.dtype + ": expected f32 or f64");
    const size_t esize = a.dtype == "f64" ? 8 : 4;
    uint64_t n = 1;
    for (uint64_t d : dims) n *= d;
    Bytes x, y;
    if (h5) {
        x = Bytes(n * esize);
        y = Bytes(n * esize);
        try {
            gsz::cli::hdf5_read(a.original, a.dataset, *h5, x.data());
            gsz::cli::hdf5_read(a.decompressed, a.dataset, *h5, y.data());
        } catch (const std::runtime_error& e) {
            die(e.what());
        }
    } else {
        x = read_file(a.original);
        y = read_file(a.decompressed);
    }
    for (const auto* f : {&x, &y}) {
        const std::string& name = f == &x ? a.original : a.decompressed;
        if (f->size() != n * esize)
            die(name + ": has " + std::to_string(f->size()) + " bytes, but -t " + a.dtype + " -l " + a.dims + " needs " +
                std::to_string(n * esize));
    }
    std::vector<uint64_t> tiled_dims = dims;
    if (!a.tile.empty()) {  // both arrays mirror-tiled alike, as gsz bench --tile does
        const std::vector<uint64_t> factors = parse_dims(a.tile, "--tile");
        if (factors.size() != dims.size()) die("--tile " + a.tile + ": one factor per dim of -l " + a.dims);
        for (size_t d = 0; d < dims.size(); ++d) tiled_dims[d] = dims[d] * factors[d];
        uint64_t tn = 1;
        for (uint64_t d : tiled_dims) tn *= d;
        Bytes tx(tn * esize), ty(tn * esize);
        if (esize == 8) {
            gsz::cli::mirror_tile(reinterpret_cast<const double*>(x.data()), dims, factors, reinterpret_cast<double*>(tx.data()));
            gsz::cli::mirror_tile(reinterpret_cast<const double*>(y.data()), dims, factors, reinterpret_cast<double*>(ty.data()));
        } else {
            gsz::cli::mirror_tile(reinterpret_cast<const float*>(x.data()), dims, factors, reinterpret_cast<float*>(tx.data()));
            gsz::cli::mirror_tile(reinterpret_cast<const float*>(y.data()), dims, factors, reinterpret_cast<float*>(ty.data()));
        }
        x = std::move(tx), y = std::move(ty), n = tn;
    }
    gsz::assess::Options o;
    o.pdf_bins = a.pdf_bins;
    o.autocorr_lags = a.lags;
    o.ssim_window = a.ssim_window;
    o.ssim_step = a.ssim_step;
    if (a.ssim_variant == "qcat") o.ssim_step = 2;
    else if (a.ssim_variant != "box") die("--ssim-variant " + a.ssim_variant + ": expected box or qcat");
    o.num_threads = a.threads;
    if (a.metrics == "basic") {
        o.stencils = o.autocorr = o.ssim = false;
    } else if (a.metrics != "all") {
        o.reductions = o.stencils = o.autocorr = o.ssim = false;
        std::stringstream list(a.metrics);
        for (std::string item; std::getline(list, item, ',');) {
            if (item == "reductions") o.reductions = true;
            else if (item == "stencils") o.stencils = true;
            else if (item == "autocorr") o.autocorr = true;
            else if (item == "ssim") o.ssim = true;
            else die("--metrics " + item + ": expected basic, all, or a list of reductions,stencils,autocorr,ssim");
        }
    }
    gsz::assess::Shape shape;
    shape.rank = static_cast<uint32_t>(tiled_dims.size());
    for (size_t d = 0; d < tiled_dims.size(); ++d) shape.dims[d] = tiled_dims[d];
    auto run = [&](auto tag, bool on_gpu, const gsz::assess::Options& opts, double* kernel_s) {
        using T = decltype(tag);
        const T* xp = reinterpret_cast<const T*>(x.data());
        const T* yp = reinterpret_cast<const T*>(y.data());
        return on_gpu ? gsz::assess::assess_cuda_host(xp, yp, shape, opts, a.repeat, kernel_s)
                      : gsz::assess::assess_cpu(xp, yp, shape, opts);
    };
    if (a.device != "cpu" && a.device != "cuda") die("--device " + a.device + ": expected cpu or cuda");
    const bool gpu = a.device == "cuda";
    const auto t0 = Clock::now();
    double kernel_s = 0;
    gsz::assess::Result r;
    if (gpu) {
        r = a.dtype == "f64" ? run(double{}, true, o, &kernel_s) : run(float{}, true, o, &kernel_s);
    } else {
        r = a.dtype == "f64" ? run(double{}, false, o, nullptr) : run(float{}, false, o, nullptr);
    }
    const double seconds = seconds_since(t0);
    double ratio = 0, bit_rate = 0;
    if (!a.archive.empty()) {
        std::error_code ec;
        const auto bytes = fs::file_size(a.archive, ec);
        if (ec || bytes == 0) die(a.archive + ": cannot read its size");
        ratio = static_cast<double>(n * esize) / static_cast<double>(bytes);
        bit_rate = 8.0 * static_cast<double>(bytes) / static_cast<double>(n);
    }

    json j{{"command", "assess"}, {"original", a.original}, {"decompressed", a.decompressed},
           {"dtype", a.dtype}, {"dims", dims}, {"num_elements", r.num_elements},
           {"error_sign", "decompressed - original"}, {"num_nonfinite", r.num_nonfinite},
           {"nonfinite_mismatches", r.nonfinite_mismatches}, {"seconds", seconds}, {"device", a.device}};
    if (!a.tile.empty()) j["tile"] = a.tile, j["dims"] = tiled_dims;
    if (gpu) {
        j["gpu_kernel_seconds"] = kernel_s;  // the selected metrics, device-resident, median of --repeat
        j["gpu_gbps"] = static_cast<double>(n * esize) / kernel_s / 1e9;
    }
    if (!a.archive.empty()) j["compression_ratio"] = ratio, j["bit_rate"] = bit_rate;
    if (o.reductions) {
        j["value_min"] = r.orig_min, j["value_max"] = r.orig_max, j["value_range"] = r.value_range;
        j["value_mean"] = r.orig_mean;
        j["decompressed_min"] = r.dec_min, j["decompressed_max"] = r.dec_max, j["decompressed_mean"] = r.dec_mean;
        j["min_error"] = r.err_min, j["max_error"] = r.err_max, j["mean_error"] = r.err_mean;
        j["min_abs_error"] = r.abs_err_min, j["max_abs_error"] = r.abs_err_max, j["mean_abs_error"] = r.abs_err_mean;
        j["max_abs_error_index"] = r.max_abs_err_index;
        j["max_rel_error"] = r.max_rel_error;
        j["pwr_count"] = r.pwr_count;
        j["min_pwr_error"] = r.pwr_err_min, j["max_pwr_error"] = r.pwr_err_max, j["mean_pwr_error"] = r.pwr_err_mean;
        j["mse"] = r.mse, j["rmse"] = r.rmse, j["nrmse"] = r.nrmse;
        j["psnr"] = finite_or_string(r.psnr), j["snr"] = finite_or_string(r.snr);
        j["pearson"] = r.pearson;
        j["l2_error"] = r.l2_error, j["l2_error_normalized"] = r.l2_error_normalized;
        j["error_pdf"] = {{"min", r.err_min}, {"max", r.err_max}, {"mass", r.error_pdf}};
        j["pwr_error_pdf"] = {{"min", r.pwr_pdf_min}, {"max", r.pwr_pdf_max}, {"mass", r.pwr_error_pdf}};
    }
    if (o.stencils) {
        j["derivative1"] = derived_json(r.derivative1);
        j["derivative2"] = derived_json(r.derivative2);
        j["laplacian"] = derived_json(r.laplacian);
        j["divergence"] = derived_json(r.divergence);
    }
    if (o.autocorr) {
        j["error_autocorr"] = r.error_autocorr;
        j["error_autocorr_axis"] = r.error_autocorr_axis;
    }
    if (o.ssim) {
        j["ssim"] = r.ssim_computed ? json(r.ssim) : json(nullptr);
        j["ssim_windows"] = r.ssim_windows;
        j["ssim_window"] = std::vector<uint32_t>(r.ssim_window_used, r.ssim_window_used + shape.rank);
        j["ssim_step"] = o.ssim_step;
    }
    if (!a.report.empty()) {
        if (a.dtype == "f64")
            write_report(a.report, j, reinterpret_cast<const double*>(x.data()), reinterpret_cast<const double*>(y.data()),
                         tiled_dims, a.archive);
        else
            write_report(a.report, j, reinterpret_cast<const float*>(x.data()), reinterpret_cast<const float*>(y.data()),
                         tiled_dims, a.archive);
        j["report"] = (fs::path(a.report) / "index.html").string();
    }
    if (a.json) {
        std::cout << j.dump(2) << "\n";
        return 0;
    }
    if (!a.report.empty()) std::printf("report          %s\n", (fs::path(a.report) / "index.html").c_str());
    std::printf("%s vs %s: %s %s, %llu values (%llu non-finite originals, %llu not restored exactly)\n",
                a.decompressed.c_str(), a.original.c_str(), a.dtype.c_str(),
                dims_string(tiled_dims.data(), static_cast<uint32_t>(tiled_dims.size())).c_str(),
                static_cast<unsigned long long>(r.num_elements), static_cast<unsigned long long>(r.num_nonfinite),
                static_cast<unsigned long long>(r.nonfinite_mismatches));
    if (!a.archive.empty()) std::printf("ratio           %.3f (%.4f bits/value)\n", ratio, bit_rate);
    if (o.reductions) {
        std::printf("value range     [%.9g, %.9g], range %.9g\n", r.orig_min, r.orig_max, r.value_range);
        std::printf("error (y - x)   min %.6g, max %.6g, mean %.6g\n", r.err_min, r.err_max, r.err_mean);
        std::printf("abs error       max %.6g (at %llu), mean %.6g; max/range %.6g\n", r.abs_err_max,
                    static_cast<unsigned long long>(r.max_abs_err_index), r.abs_err_mean, r.max_rel_error);
        std::printf("pw rel error    max %.6g, mean %.6g (%llu nonzero originals)\n", r.pwr_err_max, r.pwr_err_mean,
                    static_cast<unsigned long long>(r.pwr_count));
        std::printf("MSE %.6g, RMSE %.6g, NRMSE %.6g, PSNR %.4f dB, SNR %.4f dB\n", r.mse, r.rmse, r.nrmse, r.psnr,
                    r.snr);
        std::printf("pearson         %.9f; L2 error %.6g (normalized by |y|: %.6g)\n", r.pearson, r.l2_error,
                    r.l2_error_normalized);
    }
    if (o.stencils) {
        const std::pair<const char*, const gsz::assess::DerivedComparison*> rows[] = {
            {"derivative 1", &r.derivative1}, {"derivative 2", &r.derivative2}, {"laplacian", &r.laplacian},
            {"divergence", &r.divergence}};
        for (const auto& [name, d] : rows)
            if (d->computed) std::printf("%-15s PSNR %.4f dB, max abs error %.6g\n", name, d->psnr, d->max_abs_error);
    }
    if (o.autocorr && !r.error_autocorr.empty())
        std::printf("error autocorr  lag 1 %.6f, lag %zu %.6f\n", r.error_autocorr[0], r.error_autocorr.size(),
                    r.error_autocorr.back());
    if (o.ssim && r.ssim_computed)
        std::printf("SSIM            %.9f (window %u, step %u, %llu windows)\n", r.ssim, o.ssim_window, o.ssim_step,
                    static_cast<unsigned long long>(r.ssim_windows));
    std::printf("time            %.3f s\n", seconds);
    return 0;
}

}  // namespace

// gsz h5z: the HDF5 filter's values for a bound and pipeline, as h5repack and
// h5py take them (bindings/hdf5/H5Zgsz.h: the bound is a double in two words).
struct H5zArgs {
    std::string mode = "rel", pipeline = "lorenzo";
    double eb = -1;
    bool json = false;
};

int run_h5z(const H5zArgs& a) {
    const gsz_error_mode mode = a.mode == "abs"   ? GSZ_ERROR_ABS
                                : a.mode == "rel" ? GSZ_ERROR_REL
                                                  : (die("-m " + a.mode + ": expected abs or rel"), GSZ_ERROR_REL);
    gsz_pipeline pipeline = GSZ_PIPELINE_LORENZO;
    if (a.pipeline == "lorenzo") pipeline = GSZ_PIPELINE_LORENZO;
    else if (a.pipeline == "interp") pipeline = GSZ_PIPELINE_INTERP;
    else if (a.pipeline == "fast") pipeline = GSZ_PIPELINE_FAST;
    else if (a.pipeline == "auto") pipeline = GSZ_PIPELINE_AUTO;
    else die("-p " + a.pipeline + ": expected lorenzo, interp, fast or auto");
    if (!(a.eb >= 0) || !std::isfinite(a.eb)) die("-e: a finite bound >= 0");
    unsigned cd[GSZ_H5Z_USER_VALUES];
    gsz_h5z_set_values(cd, mode, a.eb, pipeline);
    std::string values, comma;
    for (const unsigned v : cd) {
        values += comma + std::to_string(v);
        comma = ",";
    }
    if (a.json) {
        json j;
        j["filter_id"] = GSZ_H5Z_FILTER_ID;
        j["cd_values"] = std::vector<unsigned>(cd, cd + GSZ_H5Z_USER_VALUES);
        j["h5repack"] = "UD=" + std::to_string(GSZ_H5Z_FILTER_ID) + ",0," + std::to_string(GSZ_H5Z_USER_VALUES) + "," +
                        values;
        std::cout << j.dump(2) << "\n";
        return 0;
    }
    std::printf("gsz HDF5 filter %d, %s %g, %s: cd_values %s\n", GSZ_H5Z_FILTER_ID, a.mode.c_str(), a.eb,
                a.pipeline.c_str(), values.c_str());
    std::printf("  h5repack -f UD=%d,0,%d,%s in.h5 out.h5   (HDF5_PLUGIN_PATH: the directory of libH5Zgsz.so)\n",
                GSZ_H5Z_FILTER_ID, GSZ_H5Z_USER_VALUES, values.c_str());
    std::printf("  h5py: create_dataset(..., chunks=..., compression=%d, compression_opts=(%s))\n", GSZ_H5Z_FILTER_ID,
                values.c_str());
    return 0;
}

int main(int argc, char** argv) {
    CLI::App app{
        "gsz: error-bounded lossy compression of float32/float64 arrays.\n"
        "Every finite value comes back within the bound; NaN and Inf come back bit-exact.\n"
        "Dims (-l) are listed fastest-varying first, as in cuSZ and SZ3: a C array\n"
        "float a[256][384][384] is -l 384x384x256.",
        "gsz"};
    app.require_subcommand(1);
    app.set_version_flag("--version", std::string("gsz ") + gsz_version_string() + " (CUDA backend: " +
                                          (GSZ_HAVE_CUDA ? "built in" : "not built") + ", HDF5 datasets: " +
                                          (gsz::cli::hdf5_available() ? "yes" : "no") + ")");
    app.footer(
        "Examples:\n"
        "  gsz compress -i field.f32 -t f32 -l 384x384x256 -m rel -e 1e-4 -o field.gsz\n"
        "  gsz decompress -i field.gsz -o field.out.f32\n"
        "  gsz compress -i ocean.nc --dataset /tos -e 1e-3 -p interp -o tos.gsz   (HDF5 / netCDF-4 input)\n"
        "  gsz decompress -i tos.gsz -o tos.h5 --dataset /tos\n"
        "  gsz info -i field.gsz\n"
        "  gsz bench -i field.f32 -t f32 -l 384x384x256 -e 1e-4 --device cuda --tile 2x2x2\n"
        "  gsz assess --orig field.f32 --dec field.out.f32 -t f32 -l 384x384x256 --json\n"
        "Exit status: 0 success, 1 failure, 2 bad usage.");

    CompressArgs ca;
    auto* c = app.add_subcommand("compress", "Compress a raw binary array (little-endian, C order) or an HDF5 dataset");
    ca.dtype.clear();  // given, or the dataset's
    add_array_options(c, ca, true);
    c->add_option("-o,--output", ca.output, "Archive to write")->required();
    c->add_flag("--verify", ca.verify, "Decompress in memory and report max error and PSNR; fail if the bound breaks");
    c->add_flag("-f,--force", ca.force, "Overwrite the output if it exists");
    c->add_option("--progress", ca.progress,
                  "Phase lines on stderr (reading, compressing, verifying, writing): auto (when stderr is a "
                  "terminal and the data is >= 256 MiB), on or off")
        ->capture_default_str();

    DecompressArgs da;
    auto* d = app.add_subcommand("decompress", "Decompress an archive to a raw binary array");
    d->add_option("-i,--input", da.input, "Archive to read")->required();
    d->add_option("-o,--output", da.output, "Output file: raw values, or an HDF5 file with --dataset")->required();
    d->add_option("--dataset", da.dataset,
                  "Write an HDF5 file holding this dataset (e.g. /tos; groups created), IEEE little-endian float32 "
                  "or float64 of the archive's dims; with --compare the original is this dataset of that HDF5 file");
    d->add_option("--device", da.device, "Backend: auto, cpu or cuda")->capture_default_str();
    d->add_option("--threads", da.threads, "CPU threads (0 = all)")->capture_default_str();
    d->add_flag("--json", da.json, "Print one JSON object instead of text");
    d->add_option("--compare", da.compare, "Original raw array: also print max error, PSNR, NRMSE, Pearson");
    d->add_flag("-f,--force", da.force, "Overwrite the output if it exists");
    d->add_option("--progress", da.progress,
                  "Phase lines on stderr (reading, decompressing, writing): auto (when stderr is a terminal and "
                  "the data is >= 256 MiB), on or off")
        ->capture_default_str();

    std::string info_input;
    bool info_json_flag = false;
    auto* in = app.add_subcommand("info", "Validate an archive and show what it holds");
    in->add_option("-i,--input", info_input, "Archive to read")->required();
    in->add_flag("--json", info_json_flag, "Print one JSON object instead of text");

    BenchArgs ba;
    auto* b = app.add_subcommand("bench", "Time compression and decompression in memory (medians; checks the bound)");
    add_array_options(b, ba);
    b->add_option("--repeat", ba.repeat, "Timed repetitions")->capture_default_str();
    b->add_option("--warmup", ba.warmup, "Untimed runs first")->capture_default_str();
    b->add_option("--tile", ba.tile,
                  "Mirror-tile the input to a larger field, one factor per dim (fastest first): "
                  "91x91x91 tiled 2x2x1 is 182x182x91; odd copies are flipped, so there are no seams");

    AssessArgs aa;
    auto* as = app.add_subcommand("assess", "Compare a decompressed array with its original: error statistics, "
                                            "PSNR, derivatives, autocorrelation, SSIM (docs/METRICS.md)");
    as->add_option("--orig", aa.original, "Original array: raw, or an HDF5 file with --dataset")->required();
    as->add_option("--dec", aa.decompressed, "Decompressed array: raw, or an HDF5 file with --dataset")->required();
    as->add_option("-t,--type", aa.dtype, "Element type: f32 or f64 (raw arrays; required without --dataset)");
    as->add_option("-l,--dims", aa.dims, "Dims, fastest-varying first (raw arrays; required without --dataset)");
    as->add_option("--dataset", aa.dataset,
                   "Both arrays are this float dataset of two HDF5 (or netCDF-4) files, which gives the type and dims");
    as->add_option("--metrics", aa.metrics,
                   "basic (error statistics, MSE, PSNR, Pearson, PDFs), all, or a comma list of "
                   "reductions,stencils,autocorr,ssim")
        ->capture_default_str();
    as->add_option("--archive", aa.archive, "The archive, for the compression ratio and bit rate");
    as->add_option("--pdf-bins", aa.pdf_bins, "Bins of the error PDFs")->capture_default_str();
    as->add_option("--autocorr-lags", aa.lags, "Lags of the error autocorrelation")->capture_default_str();
    as->add_option("--ssim-window", aa.ssim_window, "SSIM box window per axis")->capture_default_str();
    as->add_option("--ssim-step", aa.ssim_step, "SSIM window step per axis")->capture_default_str();
    as->add_option("--ssim-variant", aa.ssim_variant, "box (Z-checker, step as given) or qcat (step 2)")
        ->capture_default_str();
    as->add_option("--threads", aa.threads, "CPU threads (0 = all)")->capture_default_str();
    as->add_option("--device", aa.device,
                   "cpu, or cuda (every metric on the GPU)")
        ->capture_default_str();
    as->add_option("--repeat", aa.repeat, "With --device cuda: time the GPU metrics this many times (median)")
        ->capture_default_str();
    as->add_option("--tile", aa.tile, "Mirror-tile both arrays first (as gsz bench --tile), e.g. 5x5x5");
    as->add_option("--report", aa.report,
                   "Write DIR/index.html: the numbers, middle slices of original, decompressed and error, the error "
                   "PDF, the autocorrelation and (over several runs with --archive into the same DIR) a "
                   "rate-distortion plot; needs python3 with matplotlib");
    as->add_flag("--json", aa.json, "Print one JSON object instead of text");

    H5zArgs ha;
    auto* hz = app.add_subcommand("h5z", "Print the HDF5 filter's values (cd_values) for a bound and pipeline, as "
                                         "h5repack and h5py take them");
    hz->add_option("-m,--mode", ha.mode, "Error mode: abs or rel (relative to each chunk's value range)")
        ->capture_default_str();
    hz->add_option("-e,--error-bound", ha.eb, "Error bound")->required();
    hz->add_option("-p,--pipeline", ha.pipeline, "lorenzo, interp, fast or auto")->capture_default_str();
    hz->add_flag("--json", ha.json, "Print one JSON object instead of text");

    try {
        app.parse(argc, argv);
    } catch (const CLI::Success& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        app.exit(e);
        return 2;
    }

    if (*as && aa.dataset.empty() && (aa.dtype.empty() || aa.dims.empty())) {
        std::fprintf(stderr, "gsz: error: assess: -t and -l are required for raw arrays (or name an HDF5 dataset "
                             "with --dataset)\nRun with --help for more information.\n");
        return 2;
    }
    if (*c && ca.dataset.empty() && (ca.dtype.empty() || ca.dims.empty())) {
        std::fprintf(stderr, "gsz: error: compress: -t and -l are required for raw input (or name an HDF5 dataset "
                             "with --dataset)\nRun with --help for more information.\n");
        return 2;
    }
    try {
        if (*c) return run_compress(ca);
        if (*d) return run_decompress(da);
        if (*in) return run_info(info_input, info_json_flag);
        if (*b) return run_bench(ba);
        if (*as) return run_assess(aa);
        if (*hz) return run_h5z(ha);
    } catch (const CliError& e) {
        std::fprintf(stderr, "gsz: error: %s\n", e.what());
        return 1;
    } catch (const std::bad_alloc&) {
        std::fprintf(stderr, "gsz: error: out of memory\n");
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gsz: error: %s\n", e.what());
        return 1;
    }
    return 2;
}
