// CUDA backend of the assessment reductions and stencils (docs/METRICS.md),
// fused by access pattern as cuZ-Checker designs them: one pass over both
// arrays for every sum and extreme, one pass for the centered sums and both
// PDFs, one pass over the interior for all four derived fields.  Each CTA
// writes a partial (the same structs as the CPU backend, assess_math.hpp);
// the host combines them in CTA order.
#include "assess/assess.hpp"
#include "assess/assess_finish.hpp"
#include "assess/assess_math.hpp"
#include "assess/assess_cuda.hpp"

#include "runtime/cuda/device_buffer.hpp"

#include <cub/block/block_reduce.cuh>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace gsz::assess {

namespace {

constexpr int kThreads = 256;

struct AddSums {
    __device__ Sums operator()(Sums a, const Sums& b) const {
        a.add(b);
        return a;
    }
};
struct AddCentered {
    __device__ Centered operator()(Centered a, const Centered& b) const {
        a.add(b);
        return a;
    }
};

__device__ __forceinline__ bool same_bits(float a, float b) { return __float_as_uint(a) == __float_as_uint(b); }
__device__ __forceinline__ bool same_bits(double a, double b) {
    return __double_as_longlong(a) == __double_as_longlong(b);
}

// Pass 1: CTA c reduces chunk c (kChunk elements) into partials[c].
template <class T>
__global__ void __launch_bounds__(kThreads) sums_kernel(const T* __restrict__ x, const T* __restrict__ y, uint64_t n,
                                                        Sums* __restrict__ partials) {
    const uint64_t begin = blockIdx.x * kChunk;
    const uint64_t end = begin + kChunk < n ? begin + kChunk : n;
    Sums s;
    constexpr int kUnroll = 4;  // loads in flight per thread and array
    for (uint64_t base = begin + threadIdx.x; base < end; base += kUnroll * kThreads) {
        T xv[kUnroll], yv[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            const uint64_t i = base + u * kThreads;
            xv[u] = i < end ? __ldcs(x + i) : T(0);
            yv[u] = i < end ? __ldcs(y + i) : T(0);
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            const uint64_t i = base + u * kThreads;
            if (i >= end) break;
            if (!finite_value(xv[u])) {
                ++s.nonfinite;
                s.mismatches += !same_bits(xv[u], yv[u]);
            } else {
                s.add_value(xv[u], yv[u], i);
            }
        }
    }
    using Reduce = cub::BlockReduce<Sums, kThreads, cub::BLOCK_REDUCE_WARP_REDUCTIONS>;
    __shared__ typename Reduce::TempStorage storage;
    const Sums total = Reduce(storage).Reduce(s, AddSums{});
    if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

// Pass 2: centered sums per chunk, and both PDFs (shared-memory histograms
// when they fit, integer atomics either way: counts do not depend on order).
template <class T, bool kShared>
__global__ void __launch_bounds__(kThreads)
    centered_kernel(const T* __restrict__ x, const T* __restrict__ y, uint64_t n, PassTwo q,
                    Centered* __restrict__ partials, unsigned long long* __restrict__ e_hist,
                    unsigned long long* __restrict__ p_hist) {
    extern __shared__ uint32_t shared_hist[];
    if constexpr (kShared) {
        for (uint32_t b = threadIdx.x; b < 2 * q.bins; b += kThreads) shared_hist[b] = 0;
        __syncthreads();
    }
    const uint64_t begin = blockIdx.x * kChunk;
    const uint64_t end = begin + kChunk < n ? begin + kChunk : n;
    Centered s;
    constexpr int kUnroll = 4;  // loads in flight per thread and array
    for (uint64_t base = begin + threadIdx.x; base < end; base += kUnroll * kThreads) {
        T xl[kUnroll], yl[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            const uint64_t i = base + u * kThreads;
            xl[u] = i < end ? __ldcs(x + i) : T(0);
            yl[u] = i < end ? __ldcs(y + i) : T(0);
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            if (base + u * kThreads >= end) break;
            const double xv = xl[u], yv = yl[u];
            if (!finite_value(xv)) continue;
            s.add_value(xv, yv, q.mx, q.my, q.mid);
            const double e = yv - xv;
            const uint32_t eb = bin_of(e, q.e_lo, q.e_width, q.bins);
            if constexpr (kShared) atomicAdd(&shared_hist[eb], 1u);
            else atomicAdd(&e_hist[eb], 1ull);
            if (xv != 0) {
                const uint32_t pb = bin_of(clamp_pwr(e / xv), q.p_lo, q.p_width, q.bins);
                if constexpr (kShared) atomicAdd(&shared_hist[q.bins + pb], 1u);
                else atomicAdd(&p_hist[pb], 1ull);
            }
        }
    }
    using Reduce = cub::BlockReduce<Centered, kThreads, cub::BLOCK_REDUCE_WARP_REDUCTIONS>;
    __shared__ typename Reduce::TempStorage storage;
    const Centered total = Reduce(storage).Reduce(s, AddCentered{});
    if (threadIdx.x == 0) partials[blockIdx.x] = total;
    if constexpr (kShared) {
        __syncthreads();
        for (uint32_t b = threadIdx.x; b < q.bins; b += kThreads) {
            if (shared_hist[b]) atomicAdd(&e_hist[b], static_cast<unsigned long long>(shared_hist[b]));
            if (shared_hist[q.bins + b])
                atomicAdd(&p_hist[b], static_cast<unsigned long long>(shared_hist[q.bins + b]));
        }
    }
}

struct DerivedPartial {
    DerivedAccum d[4];
};
struct AddDerivedPartial {
    __device__ DerivedPartial operator()(DerivedPartial a, const DerivedPartial& b) const {
        for (int k = 0; k < 4; ++k) a.d[k].add(b.d[k]);
        return a;
    }
};

// One pass over the interior points: threads stride over (row, x) pairs of
// the interior, so short rows do not leave threads idle.
template <class T>
__global__ void __launch_bounds__(kThreads)
    stencil_kernel(const T* __restrict__ x, const T* __restrict__ y, Grid g, uint64_t rows, uint64_t extent1,
                   uint64_t extent2, DerivedPartial* __restrict__ partials) {
    DerivedPartial acc;
    const uint64_t lo0 = g.used[0] ? 1 : 0, width = g.used[0] ? g.n[0] - 2 : g.n[0];
    const uint64_t lo1 = g.used[1] ? 1 : 0, lo2 = g.used[2] ? 1 : 0, lo3 = g.used[3] ? 1 : 0;
    const uint64_t total = rows * width;
    for (uint64_t k = blockIdx.x * uint64_t{kThreads} + threadIdx.x; k < total; k += uint64_t{gridDim.x} * kThreads) {
        const uint64_t row = k / width, i0 = lo0 + (k - row * width);
        const uint64_t i1 = lo1 + row % extent1, i2 = lo2 + (row / extent1) % extent2, i3 = lo3 + row / (extent1 * extent2);
        const uint64_t i = i0 + i1 * g.stride[1] + i2 * g.stride[2] + i3 * g.stride[3];
        double dx[4], dy[4];
        derived_at(x, g, i, dx);
        derived_at(y, g, i, dy);
        for (int m = 0; m < 4; ++m) acc.d[m].add_value(dx[m], dy[m]);
    }
    using Reduce = cub::BlockReduce<DerivedPartial, kThreads, cub::BLOCK_REDUCE_WARP_REDUCTIONS>;
    __shared__ typename Reduce::TempStorage storage;
    const DerivedPartial sum = Reduce(storage).Reduce(acc, AddDerivedPartial{});
    if (threadIdx.x == 0) partials[blockIdx.x] = sum;
}

template <class T>
void reductions_cuda(const T* x, const T* y, uint64_t n, const Options& o, Result& r, cudaStream_t s) {
    const uint64_t chunks = (n + kChunk - 1) / kChunk;
    GSZ_CHECK(chunks < (1u << 31), GSZ_STATUS_INVALID_ARGUMENT, "assess: array too large for one launch");
    cuda::DeviceBuffer<Sums> d_sums(chunks, s);
    sums_kernel<T><<<static_cast<unsigned>(chunks), kThreads, 0, s>>>(x, y, n, d_sums.data());
    GSZ_CUDA_LAUNCHED("sums_kernel");
    std::vector<Sums> part;
    cuda::copy_to_host(part, d_sums.data(), chunks, s);
    Sums t;
    for (const Sums& p : part) t.add(p);
    if (!finish_sums(t, r)) return;
    const PassTwo q = pass_two_of(t, r, o.pdf_bins);
    cuda::DeviceBuffer<Centered> d_cent(chunks, s);
    cuda::DeviceBuffer<unsigned long long> d_hist(2 * size_t{q.bins}, s);
    d_hist.zero(s);
    const size_t shared_bytes = 2 * size_t{q.bins} * sizeof(uint32_t);
    if (shared_bytes <= 32 * 1024) {
        centered_kernel<T, true><<<static_cast<unsigned>(chunks), kThreads, shared_bytes, s>>>(
            x, y, n, q, d_cent.data(), d_hist.data(), d_hist.data() + q.bins);
    } else {
        centered_kernel<T, false><<<static_cast<unsigned>(chunks), kThreads, 0, s>>>(
            x, y, n, q, d_cent.data(), d_hist.data(), d_hist.data() + q.bins);
    }
    GSZ_CUDA_LAUNCHED("centered_kernel");
    std::vector<Centered> cpart;
    std::vector<unsigned long long> hist;
    cuda::copy_to_host(cpart, d_cent.data(), chunks, s);
    cuda::copy_to_host(hist, d_hist.data(), 2 * size_t{q.bins}, s);
    Centered ct;
    for (const Centered& p : cpart) ct.add(p);
    const std::vector<double> e_counts(hist.begin(), hist.begin() + q.bins), p_counts(hist.begin() + q.bins, hist.end());
    finish_centered(ct, t, q, e_counts, p_counts, r);
}

template <class T>
void stencils_cuda(const T* x, const T* y, const Grid& g, Result& r, cudaStream_t s) {
    if (!(g.used[0] || g.used[1] || g.used[2] || g.used[3])) return;
    auto interior = [&](int a) { return g.used[a] ? g.n[a] - 2 : g.n[a]; };
    const uint64_t e1 = interior(1), e2 = interior(2), rows = e1 * e2 * interior(3);
    const uint64_t points = rows * (g.used[0] ? g.n[0] - 2 : g.n[0]);
    const uint64_t want = (points + kThreads - 1) / kThreads;
    const unsigned ctas = static_cast<unsigned>(want < 8192 ? (want ? want : 1) : 8192);
    cuda::DeviceBuffer<DerivedPartial> d_part(ctas, s);
    stencil_kernel<T><<<ctas, kThreads, 0, s>>>(x, y, g, rows, e1, e2, d_part.data());
    GSZ_CUDA_LAUNCHED("stencil_kernel");
    std::vector<DerivedPartial> part;
    cuda::copy_to_host(part, d_part.data(), ctas, s);
    DerivedPartial t;
    for (const DerivedPartial& p : part)
        for (int k = 0; k < 4; ++k) t.d[k].add(p.d[k]);
    r.derivative1 = finish_derived(t.d[0]);
    r.derivative2 = finish_derived(t.d[1]);
    r.laplacian = finish_derived(t.d[2]);
    r.divergence = finish_derived(t.d[3]);
}

// ---- SSIM: separable box statistics, one axis per pass (as the CPU does) ------

// The seven per-window statistics, one array each: sums of x, y, x², y², xy,
// and the min and max of x.
struct Stats {
    double* v[7];
};
constexpr int kSumStats = 5;

// First pass (axis 0) straight from the arrays: thread = one output position.
template <class T>
__global__ void ssim_first_axis_kernel(const T* __restrict__ x, const T* __restrict__ y, uint64_t n0, uint64_t rest,
                                       uint64_t w, uint64_t step, uint64_t m0, Stats out) {
    const uint64_t k = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
    if (k >= m0 * rest) return;
    const uint64_t o = k / m0, p = k - o * m0;
    const uint64_t src = o * n0 + p * step;
    double acc[7] = {0, 0, 0, 0, 0, HUGE_VAL, -HUGE_VAL};
    for (uint64_t j = 0; j < w; ++j) {
        const double xv = x[src + j], yv = y[src + j];
        const bool ok = finite_value(xv) && finite_value(yv);
        const double a = ok ? xv : 0.0, b = ok ? yv : 0.0;
        acc[0] += a, acc[1] += b, acc[2] += a * a, acc[3] += b * b, acc[4] += a * b;
        acc[5] = min_of(acc[5], a), acc[6] = max_of(acc[6], a);
    }
    for (int s = 0; s < 7; ++s) out.v[s][k] = acc[s];
}

// Later passes: along an axis with `inner` elements below it.
__global__ void ssim_axis_kernel(Stats in, uint64_t n_axis, uint64_t inner, uint64_t outer, uint64_t w, uint64_t step,
                                 uint64_t m_axis, Stats out) {
    const uint64_t k = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
    if (k >= inner * m_axis * outer) return;
    const uint64_t j = k % inner, p = (k / inner) % m_axis, o = k / (inner * m_axis);
    const uint64_t src = (o * n_axis + p * step) * inner + j;
    for (int s = 0; s < 7; ++s) {
        double acc = s < kSumStats ? 0.0 : (s == 5 ? HUGE_VAL : -HUGE_VAL);
        for (uint64_t t = 0; t < w; ++t) {
            const double v = in.v[s][src + t * inner];
            acc = s < kSumStats ? acc + v : (s == 5 ? min_of(acc, v) : max_of(acc, v));
        }
        out.v[s][k] = acc;
    }
}

__device__ __forceinline__ double ssim_of_window(const Stats& st, uint64_t i, double count) {
    constexpr double k1 = 0.01, k2 = 0.03;
    const double mx = st.v[0][i] / count, my = st.v[1][i] / count;
    const double vx0 = st.v[2][i] / count - mx * mx, vy0 = st.v[3][i] / count - my * my;
    const double vx = vx0 > 0 ? vx0 : 0.0, vy = vy0 > 0 ? vy0 : 0.0;
    const double cxy = st.v[4][i] / count - mx * my;
    const double range = st.v[6][i] - st.v[5][i];
    const double c1 = range > 0 ? (k1 * range) * (k1 * range) : k1 * k1;
    const double c2 = range > 0 ? (k2 * range) * (k2 * range) : k2 * k2;
    const double c3 = c2 / 2;
    const double sx = sqrt(vx), sy = sqrt(vy);
    return (2 * mx * my + c1) / (mx * mx + my * my + c1) * ((2 * sx * sy + c2) / (vx + vy + c2)) *
           ((cxy + c3) / (sx * sy + c3));
}

__global__ void __launch_bounds__(kThreads) ssim_mean_kernel(Stats st, uint64_t windows, double count,
                                                             double* __restrict__ partials) {
    double sum = 0;
    for (uint64_t i = blockIdx.x * uint64_t{kThreads} + threadIdx.x; i < windows; i += uint64_t{gridDim.x} * kThreads)
        sum += ssim_of_window(st, i, count);
    using Reduce = cub::BlockReduce<double, kThreads>;
    __shared__ typename Reduce::TempStorage storage;
    const double total = Reduce(storage).Sum(sum);
    if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

unsigned blocks_for(uint64_t items) {
    const uint64_t b = (items + kThreads - 1) / kThreads;
    GSZ_CHECK(b < (1ull << 31), GSZ_STATUS_INVALID_ARGUMENT, "assess: SSIM grid too large");
    return static_cast<unsigned>(b ? b : 1);
}

template <class T>
void ssim_cuda(const T* x, const T* y, const Grid& g, const Options& o, Result& r, cudaStream_t s) {
    uint64_t ext[4] = {g.n[0], g.n[1], g.n[2], g.n[3]}, w[4];
    for (int a = 0; a < 4; ++a) {
        w[a] = o.ssim_window < g.n[a] ? o.ssim_window : g.n[a];
        r.ssim_window_used[a] = a < static_cast<int>(g.rank) ? static_cast<uint32_t>(w[a]) : 0;
    }
    auto step_of = [&](int a) { return g.n[a] > 1 ? uint64_t{o.ssim_step} : uint64_t{1}; };
    cuda::DeviceBuffer<double> bufs[2][7];
    auto stats_of = [&](int which) {
        Stats st;
        for (int k = 0; k < 7; ++k) st.v[k] = bufs[which][k].data();
        return st;
    };
    // axis 0
    uint64_t m = (ext[0] - w[0]) / step_of(0) + 1, rest = ext[1] * ext[2] * ext[3];
    for (int k = 0; k < 7; ++k) bufs[0][k].allocate(m * rest, s);
    ssim_first_axis_kernel<T><<<blocks_for(m * rest), kThreads, 0, s>>>(x, y, ext[0], rest, w[0], step_of(0), m,
                                                                        stats_of(0));
    GSZ_CUDA_LAUNCHED("ssim_first_axis_kernel");
    ext[0] = m;
    int cur = 0;
    for (int a = 1; a < 4; ++a) {
        if (g.n[a] == 1) continue;
        const uint64_t ma = (ext[a] - w[a]) / step_of(a) + 1;
        uint64_t inner = 1, outer = 1;
        for (int b = 0; b < a; ++b) inner *= ext[b];
        for (int b = a + 1; b < 4; ++b) outer *= ext[b];
        for (int k = 0; k < 7; ++k) bufs[1 - cur][k].allocate(inner * ma * outer, s);
        ssim_axis_kernel<<<blocks_for(inner * ma * outer), kThreads, 0, s>>>(stats_of(cur), ext[a], inner, outer, w[a],
                                                                             step_of(a), ma, stats_of(1 - cur));
        GSZ_CUDA_LAUNCHED("ssim_axis_kernel");
        for (int k = 0; k < 7; ++k) bufs[cur][k].release();
        ext[a] = ma;
        cur = 1 - cur;
    }
    const uint64_t windows = ext[0] * ext[1] * ext[2] * ext[3];
    const unsigned ctas = blocks_for(windows) < 4096 ? blocks_for(windows) : 4096;
    cuda::DeviceBuffer<double> d_part(ctas, s);
    ssim_mean_kernel<<<ctas, kThreads, 0, s>>>(stats_of(cur), windows, static_cast<double>(w[0] * w[1] * w[2] * w[3]),
                                               d_part.data());
    GSZ_CUDA_LAUNCHED("ssim_mean_kernel");
    std::vector<double> part;
    cuda::copy_to_host(part, d_part.data(), ctas, s);
    double total = 0;
    for (double v : part) total += v;
    r.ssim_computed = windows > 0;
    r.ssim_windows = windows;
    r.ssim = windows ? total / static_cast<double>(windows) : 0;
}

// ---- error autocorrelation --------------------------------------------------

// e_i = y_i - x_i in double (0 where the original is not finite), as the CPU forms it.
template <class T>
__global__ void error_field_kernel(const T* __restrict__ x, const T* __restrict__ y, uint64_t n, double* __restrict__ e) {
    for (uint64_t i = blockIdx.x * uint64_t{kThreads} + threadIdx.x; i < n; i += uint64_t{gridDim.x} * kThreads) {
        const double xv = x[i];
        e[i] = finite_value(xv) ? static_cast<double>(y[i]) - xv : 0.0;
    }
}

// Per CTA: sum of (e_i - shift)^power for power 1 or 2.
__global__ void __launch_bounds__(kThreads) moment_kernel(const double* __restrict__ e, uint64_t n, double shift,
                                                          int power, double* __restrict__ partials) {
    double sum = 0;
    for (uint64_t i = blockIdx.x * uint64_t{kThreads} + threadIdx.x; i < n; i += uint64_t{gridDim.x} * kThreads) {
        const double d = e[i] - shift;
        sum += power == 1 ? d : d * d;
    }
    using Reduce = cub::BlockReduce<double, kThreads>;
    __shared__ typename Reduce::TempStorage storage;
    const double total = Reduce(storage).Sum(sum);
    if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

constexpr int kLagBatch = 8;

// Per CTA and lag of a batch: sum over the pairs (i, i + d*stride) that stay
// inside the axis (extent along it) of (e_i - mean)(e_j - mean).
__global__ void __launch_bounds__(kThreads)
    autocorr_kernel(const double* __restrict__ e, uint64_t n, double mean, uint64_t stride, uint64_t extent,
                    uint32_t first_lag, uint32_t lags, double* __restrict__ partials) {
    double acc[kLagBatch] = {};
    for (uint64_t i = blockIdx.x * uint64_t{kThreads} + threadIdx.x; i < n; i += uint64_t{gridDim.x} * kThreads) {
        const uint64_t coord = (i / stride) % extent;
        const double a = e[i] - mean;
#pragma unroll
        for (int l = 0; l < kLagBatch; ++l) {
            const uint64_t d = first_lag + l;
            if (static_cast<uint32_t>(l) < lags && coord + d < extent) acc[l] += a * (e[i + d * stride] - mean);
        }
    }
    using Reduce = cub::BlockReduce<double, kThreads>;
    __shared__ typename Reduce::TempStorage storage;
#pragma unroll
    for (int l = 0; l < kLagBatch; ++l) {
        const double total = Reduce(storage).Sum(acc[l]);
        if (threadIdx.x == 0) partials[blockIdx.x * kLagBatch + l] = total;
        __syncthreads();
    }
}

template <class T>
void autocorr_cuda(const T* x, const T* y, const Grid& g, const Options& o, Result& r, cudaStream_t s) {
    const uint64_t n = g.n[0] * g.n[1] * g.n[2] * g.n[3];
    const unsigned ctas = blocks_for(n) < 2048 ? blocks_for(n) : 2048;
    cuda::DeviceBuffer<double> e(n, s), part(size_t{ctas} * kLagBatch, s);
    error_field_kernel<T><<<ctas, kThreads, 0, s>>>(x, y, n, e.data());
    GSZ_CUDA_LAUNCHED("error_field_kernel");
    auto moment = [&](double shift, int power) {
        moment_kernel<<<ctas, kThreads, 0, s>>>(e.data(), n, shift, power, part.data());
        GSZ_CUDA_LAUNCHED("moment_kernel");
        std::vector<double> p;
        cuda::copy_to_host(p, part.data(), ctas, s);
        double sum = 0;
        for (double v : p) sum += v;
        return sum;
    };
    const double mean = moment(0.0, 1) / static_cast<double>(n);
    const double var = moment(mean, 2) / static_cast<double>(n);
    auto along = [&](int axis) {
        const uint64_t extent = axis < 0 ? n : g.n[axis], stride = axis < 0 ? 1 : g.stride[axis];
        const uint32_t max_lag = static_cast<uint32_t>(o.autocorr_lags < extent - 1 ? o.autocorr_lags : extent - 1);
        std::vector<double> ac(max_lag, 0.0);
        if (var <= 0) return ac;
        for (uint32_t first = 1; first <= max_lag; first += kLagBatch) {
            const uint32_t lags = max_lag - first + 1 < kLagBatch ? max_lag - first + 1 : kLagBatch;
            autocorr_kernel<<<ctas, kThreads, 0, s>>>(e.data(), n, mean, stride, extent, first, lags, part.data());
            GSZ_CUDA_LAUNCHED("autocorr_kernel");
            std::vector<double> p;
            cuda::copy_to_host(p, part.data(), size_t{ctas} * kLagBatch, s);
            for (uint32_t l = 0; l < lags; ++l) {
                double sum = 0;
                for (unsigned c = 0; c < ctas; ++c) sum += p[size_t{c} * kLagBatch + l];
                const uint64_t d = first + l, pairs = (extent - d) * (n / extent);
                ac[d - 1] = pairs ? (sum / static_cast<double>(pairs)) / var : 0;
            }
        }
        return ac;
    };
    r.error_autocorr = along(-1);
    r.error_autocorr_axis.clear();
    for (uint32_t a = 0; a < g.rank; ++a) r.error_autocorr_axis.push_back(along(static_cast<int>(a)));
}

}  // namespace

template <class T>
Result assess_cuda(const T* d_original, const T* d_decompressed, const Shape& shape, const Options& options,
                   cudaStream_t stream) {
    validate(shape, options);
    Shape sh = shape;
    for (uint32_t a = shape.rank; a < 4; ++a) sh.dims[a] = 1;
    Grid g;
    g.rank = sh.rank;
    uint64_t st = 1;
    for (int a = 0; a < 4; ++a) g.n[a] = sh.dims[a], g.stride[a] = st, st *= g.n[a], g.used[a] = g.n[a] >= 3;
    Result r;
    r.num_elements = sh.count();
    if (options.reductions) reductions_cuda(d_original, d_decompressed, r.num_elements, options, r, stream);
    if (options.stencils) stencils_cuda(d_original, d_decompressed, g, r, stream);
    if (options.ssim) ssim_cuda(d_original, d_decompressed, g, options, r, stream);
    if (options.autocorr && options.autocorr_lags > 0) autocorr_cuda(d_original, d_decompressed, g, options, r, stream);
    return r;
}

template <class T>
Result assess_cuda_host(const T* original, const T* decompressed, const Shape& shape, const Options& options,
                        int repeat, double* kernel_seconds) {
    validate(shape, options);
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        cudaGetLastError();
        fail(GSZ_STATUS_NO_DEVICE, "assess: no usable CUDA device");
    }
    uint64_t n = 1;
    for (uint32_t a = 0; a < shape.rank; ++a) n *= shape.dims[a];
    cudaStream_t s = nullptr;
    cuda::DeviceBuffer<T> dx(n, s), dy(n, s);
    GSZ_CUDA(cudaMemcpyAsync(dx.data(), original, n * sizeof(T), cudaMemcpyHostToDevice, s));
    GSZ_CUDA(cudaMemcpyAsync(dy.data(), decompressed, n * sizeof(T), cudaMemcpyHostToDevice, s));
    cudaEvent_t start, stop;
    GSZ_CUDA(cudaEventCreate(&start));
    GSZ_CUDA(cudaEventCreate(&stop));
    Result r;
    std::vector<double> times;
    for (int it = 0; it < (repeat > 0 ? repeat : 1); ++it) {
        GSZ_CUDA(cudaEventRecord(start, s));
        r = assess_cuda(dx.data(), dy.data(), shape, options, s);
        GSZ_CUDA(cudaEventRecord(stop, s));
        GSZ_CUDA(cudaEventSynchronize(stop));
        float ms = 0;
        GSZ_CUDA(cudaEventElapsedTime(&ms, start, stop));
        times.push_back(ms / 1e3);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    std::sort(times.begin(), times.end());
    if (kernel_seconds) *kernel_seconds = times[times.size() / 2];
    return r;
}

template <class T>
Result assess_cuda_device(const T* d_original, const T* d_decompressed, const Shape& shape, const Options& options,
                          void* stream) {
    validate(shape, options);
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        cudaGetLastError();
        fail(GSZ_STATUS_NO_DEVICE, "assess: no usable CUDA device");
    }
    const cudaStream_t s = static_cast<cudaStream_t>(stream);
    Result r = assess_cuda(d_original, d_decompressed, shape, options, s);
    GSZ_CUDA(cudaStreamSynchronize(s));
    return r;
}

template Result assess_cuda_device<float>(const float*, const float*, const Shape&, const Options&, void*);
template Result assess_cuda_device<double>(const double*, const double*, const Shape&, const Options&, void*);
template Result assess_cuda<float>(const float*, const float*, const Shape&, const Options&, cudaStream_t);
template Result assess_cuda<double>(const double*, const double*, const Shape&, const Options&, cudaStream_t);
template Result assess_cuda_host<float>(const float*, const float*, const Shape&, const Options&, int, double*);
template Result assess_cuda_host<double>(const double*, const double*, const Shape&, const Options&, int, double*);

}  // namespace gsz::assess
