// CPU backend of the assessment metrics (docs/METRICS.md).  Reductions are
// summed per fixed chunk of 65536 elements and the chunk partials added in
// order, so the numbers do not depend on the thread count; stencils are one
// pass over the interior points; SSIM uses separable box sums and sliding
// min/max of the original, one axis at a time.
#include "assess/assess.hpp"
#include "assess/assess_finish.hpp"
#include "assess/assess_math.hpp"

#include "runtime/parallel.hpp"
#include "runtime/status.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

namespace gsz::assess {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

template <class T>
void reductions(const T* x, const T* y, uint64_t n, const Options& o, Result& r) {
    // First pass: sums, extremes and shifted moments per chunk.
    const uint64_t chunks = (n + kChunk - 1) / kChunk;
    std::vector<Sums> part(chunks);
    const int threads = resolve_threads(o.num_threads);
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t c = 0; c < static_cast<int64_t>(chunks); ++c) {
        Sums s;
        const uint64_t begin = c * kChunk, end = std::min(n, begin + kChunk);
        s.set_shift(x[begin], y[begin]);
        for (uint64_t i = begin; i < end; ++i) {
            if (!std::isfinite(x[i])) {
                ++s.nonfinite;
                s.mismatches += std::memcmp(&x[i], &y[i], sizeof(T)) != 0;
                continue;
            }
            s.add_value(x[i], y[i], i);
        }
        part[c] = s;
    }
    Sums t;
    const Moments m = combine_chunks(part, t);
    if (!finish_sums(t, m, r)) return;
    finish_moments(m, t, r);

    // Second pass: the PDFs, whose bins need the error's range.
    const PassTwo q = pass_two_from(t, o.pdf_bins);
    const uint32_t bins = q.bins;
    std::vector<std::vector<uint64_t>> ehist(threads, std::vector<uint64_t>(bins, 0)), phist = ehist;
#pragma omp parallel num_threads(threads)
    {
        auto& eh = ehist[thread_index()];
        auto& ph = phist[thread_index()];
#pragma omp for schedule(static)
        for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) {
            if (!std::isfinite(x[i])) continue;
            uint32_t eb, pb;
            bool has_p;
            pdf_bins_of(x[i], y[i], q, eb, pb, has_p);
            ++eh[eb];
            if (has_p) ++ph[pb];
        }
    }
    std::vector<double> e_counts(bins, 0.0), p_counts(bins, 0.0);
    for (int t2 = 0; t2 < threads; ++t2) {
        for (uint32_t b = 0; b < bins; ++b) {
            e_counts[b] += static_cast<double>(ehist[t2][b]);
            p_counts[b] += static_cast<double>(phist[t2][b]);
        }
    }
    finish_pdfs(t, q, e_counts, p_counts, r);
}

template <class T>
void stencils(const T* x, const T* y, const Grid& g, const Options& o, Result& r) {
    if (!(g.used[0] || g.used[1] || g.used[2] || g.used[3])) return;
    auto lo = [&](int a) { return g.used[a] ? uint64_t{1} : uint64_t{0}; };
    auto hi = [&](int a) { return g.used[a] ? g.n[a] - 1 : g.n[a]; };  // exclusive
    const uint64_t outer = (hi(3) - lo(3)) * (hi(2) - lo(2)) * (hi(1) - lo(1));
    const int threads = resolve_threads(o.num_threads);
    std::vector<std::array<DerivedAccum, 4>> part(threads);
#pragma omp parallel num_threads(threads)
    {
        auto& acc = part[thread_index()];
#pragma omp for schedule(static)
        for (int64_t k = 0; k < static_cast<int64_t>(outer); ++k) {
            uint64_t rest = static_cast<uint64_t>(k);
            const uint64_t i1 = lo(1) + rest % (hi(1) - lo(1));
            rest /= hi(1) - lo(1);
            const uint64_t i2 = lo(2) + rest % (hi(2) - lo(2));
            const uint64_t i3 = lo(3) + rest / (hi(2) - lo(2));
            const uint64_t base = i1 * g.stride[1] + i2 * g.stride[2] + i3 * g.stride[3];
            for (uint64_t i0 = lo(0); i0 < hi(0); ++i0) {
                double dx[4], dy[4];
                const int64_t c = static_cast<int64_t>(base + i0);
                derived_at(x, c, g.up, g.down, g.used, dx);
                derived_at(y, c, g.up, g.down, g.used, dy);
                for (int m = 0; m < 4; ++m) acc[m].add_value(dx[m], dy[m]);
            }
        }
    }
    DerivedAccum total[4];
    for (const auto& p : part)
        for (int m = 0; m < 4; ++m) total[m].add(p[m]);
    finish_stencils(total, r);
}

// ac(d) = [sum_{pairs} (e_i - m)(e_j - m) / pairs] / [sum (e_i - m)^2 / N]
// (Z-checker's estimator for large N), with the mean m and variance over the
// whole error field (non-finite originals count as error 0).  Lags go in
// batches of kLagBatch per pass over the field, which is cut into fixed chunks
// whose partial sums are added in order: the result does not depend on the
// thread count.
constexpr uint32_t kLagBatch = 8;

std::vector<double> autocorr_along(const std::vector<double>& e, double mean, double var, const Grid& g, int axis,
                                   uint32_t lags, int threads) {
    const uint64_t n = e.size();
    const uint64_t extent = axis < 0 ? n : g.n[axis];
    const uint64_t stride = axis < 0 ? 1 : g.stride[axis];
    const uint32_t max_lag = static_cast<uint32_t>(std::min<uint64_t>(lags, extent > 0 ? extent - 1 : 0));
    std::vector<double> ac(max_lag, 0.0);
    if (var <= 0) return ac;
    const uint64_t chunks = (n + kChunk - 1) / kChunk;
    std::vector<std::array<double, kLagBatch>> part(chunks);
    for (uint32_t first = 1; first <= max_lag; first += kLagBatch) {
        const uint32_t count = std::min(kLagBatch, max_lag - first + 1);
#pragma omp parallel for schedule(static) num_threads(threads)
        for (int64_t c = 0; c < static_cast<int64_t>(chunks); ++c) {
            std::array<double, kLagBatch> acc{};
            const uint64_t begin = c * kChunk, end = std::min(n, begin + kChunk);
            // The coordinate along the axis, kept up to date without a division per element.
            uint64_t inner = begin % stride, coord = (begin / stride) % extent;
            for (uint64_t i = begin; i < end; ++i) {
                const double a = e[i] - mean;
                for (uint32_t l = 0; l < count; ++l) {
                    const uint64_t d = first + l;
                    if (coord + d < extent) acc[l] += a * (e[i + d * stride] - mean);
                }
                if (++inner == stride) {
                    inner = 0;
                    if (++coord == extent) coord = 0;
                }
            }
            part[c] = acc;
        }
        for (uint32_t l = 0; l < count; ++l) {
            double sum = 0;
            for (const auto& p : part) sum += p[l];
            ac[first + l - 1] = autocorr_of(sum, first + l, extent, n, var);
        }
    }
    return ac;
}

template <class T>
void autocorrelation(const T* x, const T* y, const Grid& g, const Options& o, Result& r) {
    const uint64_t n = g.n[0] * g.n[1] * g.n[2] * g.n[3];
    std::vector<double> e(n);
    const int threads = resolve_threads(o.num_threads);
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t i = 0; i < static_cast<int64_t>(n); ++i)
        e[i] = std::isfinite(x[i]) ? static_cast<double>(y[i]) - static_cast<double>(x[i]) : 0.0;
    double sum = 0, sq = 0;
    for (uint64_t c = 0; c < n; c += kChunk) {  // fixed chunks: thread-count independent
        double s = 0;
        for (uint64_t i = c; i < std::min(n, c + kChunk); ++i) s += e[i];
        sum += s;
    }
    const double mean = sum / static_cast<double>(n);
    for (uint64_t c = 0; c < n; c += kChunk) {
        double s = 0;
        for (uint64_t i = c; i < std::min(n, c + kChunk); ++i) s += (e[i] - mean) * (e[i] - mean);
        sq += s;
    }
    const double var = sq / static_cast<double>(n);
    r.error_autocorr = autocorr_along(e, mean, var, g, -1, o.autocorr_lags, threads);
    r.error_autocorr_axis.clear();
    for (uint32_t a = 0; a < g.rank; ++a)
        r.error_autocorr_axis.push_back(autocorr_along(e, mean, var, g, static_cast<int>(a), o.autocorr_lags, threads));
}

// Box sums (or min/max) of width w at positions 0, step, 2*step, ... along one
// axis; the other axes keep their extents.  in has extents n[], out m[].
template <class Op>
std::vector<double> window_along(const std::vector<double>& in, const uint64_t* n, int axis, uint64_t w,
                                 uint64_t step, uint64_t* m_out, Op op, double init, int threads) {
    uint64_t m[4];
    std::copy(n, n + 4, m);
    m[axis] = (n[axis] - w) / step + 1;
    uint64_t in_stride = 1, out_stride = 1;
    for (int a = 0; a < axis; ++a) in_stride *= n[a], out_stride *= m[a];
    const uint64_t inner = in_stride;  // elements per line segment below the axis
    uint64_t outer = 1;
    for (int a = axis + 1; a < 4; ++a) outer *= n[a];
    std::vector<double> out(inner * m[axis] * outer);
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t o = 0; o < static_cast<int64_t>(outer); ++o) {
        for (uint64_t p = 0; p < m[axis]; ++p) {
            for (uint64_t j = 0; j < inner; ++j) {
                double acc = init;
                const uint64_t src = (o * n[axis] + p * step) * inner + j;
                for (uint64_t k = 0; k < w; ++k) acc = op(acc, in[src + k * inner]);
                out[(o * m[axis] + p) * inner + j] = acc;
            }
        }
    }
    (void)out_stride;
    std::copy(m, m + 4, m_out);
    return out;
}

template <class T>
void ssim(const T* x, const T* y, const Grid& g, const Options& o, Result& r) {
    const uint64_t n = g.n[0] * g.n[1] * g.n[2] * g.n[3];
    const int threads = resolve_threads(o.num_threads);
    std::vector<double> fx(n), fy(n), fxx(n), fyy(n), fxy(n), fmin(n), fmax(n);
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) {
        double a, b;
        ssim_terms(x[i], y[i], a, b);
        fx[i] = a, fy[i] = b, fxx[i] = a * a, fyy[i] = b * b, fxy[i] = a * b, fmin[i] = a, fmax[i] = a;
    }
    uint64_t ext[4] = {g.n[0], g.n[1], g.n[2], g.n[3]}, w[4];
    uint64_t windows_per_axis[4];
    const auto plus = [](double a, double b) { return a + b; };
    const auto lo = [](double a, double b) { return std::min(a, b); };
    const auto hi = [](double a, double b) { return std::max(a, b); };
    for (int a = 0; a < 4; ++a) {
        w[a] = std::min<uint64_t>(o.ssim_window, g.n[a]);
        r.ssim_window_used[a] = a < static_cast<int>(g.rank) ? static_cast<uint32_t>(w[a]) : 0;
        const uint64_t step = g.n[a] > 1 ? o.ssim_step : 1;
        uint64_t m[4];
        fx = window_along(fx, ext, a, w[a], step, m, plus, 0.0, threads);
        fy = window_along(fy, ext, a, w[a], step, m, plus, 0.0, threads);
        fxx = window_along(fxx, ext, a, w[a], step, m, plus, 0.0, threads);
        fyy = window_along(fyy, ext, a, w[a], step, m, plus, 0.0, threads);
        fxy = window_along(fxy, ext, a, w[a], step, m, plus, 0.0, threads);
        fmin = window_along(fmin, ext, a, w[a], step, m, lo, kInf, threads);
        fmax = window_along(fmax, ext, a, w[a], step, m, hi, -kInf, threads);
        std::copy(m, m + 4, ext);
        windows_per_axis[a] = m[a];
    }
    (void)windows_per_axis;
    const double count = static_cast<double>(w[0] * w[1] * w[2] * w[3]);
    double total = 0;
    const uint64_t windows = fx.size();
    for (uint64_t c = 0; c < windows; c += kChunk) {  // fixed chunks: thread-count independent
        double s = 0;
        for (uint64_t i = c; i < std::min(windows, c + kChunk); ++i)
            s += ssim_of_window(fx[i], fy[i], fxx[i], fyy[i], fxy[i], fmax[i] - fmin[i], count);
        total += s;
    }
    r.ssim_computed = windows > 0;
    r.ssim_windows = windows;
    r.ssim = windows ? total / static_cast<double>(windows) : 0;
}

}  // namespace

void validate(const Shape& shape, const Options& options) {
    GSZ_CHECK(shape.rank >= 1 && shape.rank <= 4, GSZ_STATUS_INVALID_ARGUMENT, "assess: rank %u is not 1..4",
              shape.rank);
    for (uint32_t a = 0; a < shape.rank; ++a)
        GSZ_CHECK(shape.dims[a] >= 1, GSZ_STATUS_INVALID_ARGUMENT, "assess: dimension %u is 0", a);
    GSZ_CHECK(options.pdf_bins >= 1 && options.pdf_bins <= (1u << 24), GSZ_STATUS_INVALID_ARGUMENT,
              "assess: %u PDF bins (1..16777216)", options.pdf_bins);
    GSZ_CHECK(options.ssim_window >= 1 && options.ssim_window <= 64, GSZ_STATUS_INVALID_ARGUMENT,
              "assess: SSIM window %u is not 1..64", options.ssim_window);
    GSZ_CHECK(options.ssim_step >= 1 && options.ssim_step <= 64, GSZ_STATUS_INVALID_ARGUMENT,
              "assess: SSIM step %u is not 1..64", options.ssim_step);
}

template <class T>
Result assess_cpu(const T* original, const T* decompressed, const Shape& shape, const Options& options) {
    validate(shape, options);
    Shape s = shape;
    for (uint32_t a = shape.rank; a < 4; ++a) s.dims[a] = 1;
    const Grid g = make_grid(s);
    Result r;
    r.num_elements = s.count();
    if (options.reductions) reductions(original, decompressed, r.num_elements, options, r);
    if (options.stencils) stencils(original, decompressed, g, options, r);
    if (options.autocorr && options.autocorr_lags > 0) autocorrelation(original, decompressed, g, options, r);
    if (options.ssim) ssim(original, decompressed, g, options, r);
    return r;
}

template Result assess_cpu<float>(const float*, const float*, const Shape&, const Options&);
template Result assess_cpu<double>(const double*, const double*, const Shape&, const Options&);

}  // namespace gsz::assess
