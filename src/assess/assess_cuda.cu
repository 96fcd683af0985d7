// CUDA backend of the assessment metrics (docs/METRICS.md), fused by access
// pattern as cuZ-Checker designs them: one pass over both arrays for every
// sum, extreme and the Pearson/SNR moments, one for both PDFs (their bins need
// the error range), one tiled pass over the interior for all four derived
// fields, one fused tiled kernel for SSIM, and shared-memory tiles of the
// error field for the autocorrelation.  Each CTA writes partials (the structs
// of assess_math.hpp, shared with the CPU backend), combined in a fixed order
// (the reductions' on the device, between the passes; the rest on the host),
// so results do not depend on scheduling.
#include "assess/assess.hpp"
#include "assess/assess_finish.hpp"
#include "assess/assess_math.hpp"
#include "assess/assess_cuda.hpp"

#include "runtime/cuda/device_buffer.hpp"

#include <cub/block/block_reduce.cuh>
#include <cuda_pipeline.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
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

__device__ __forceinline__ bool same_bits(float a, float b) { return __float_as_uint(a) == __float_as_uint(b); }
__device__ __forceinline__ bool same_bits(double a, double b) {
    return __double_as_longlong(a) == __double_as_longlong(b);
}

// 16-byte loads of a chunk (float4 / double2), streaming past the caches.
template <class T>
struct Vec16;
template <>
struct Vec16<float> {
    using type = float4;
};
template <>
struct Vec16<double> {
    using type = double2;
};
template <class T>
__device__ __forceinline__ void load16(const T* p, T* out) {
    const auto v = __ldcs(reinterpret_cast<const typename Vec16<T>::type*>(p));
    if constexpr (sizeof(T) == 4) {
        out[0] = v.x, out[1] = v.y, out[2] = v.z, out[3] = v.w;
    } else {
        out[0] = v.x, out[1] = v.y;
    }
}

template <class T>
__device__ __forceinline__ void load_shared16(const T* p, T* out) {
    const auto v = *reinterpret_cast<const typename Vec16<T>::type*>(p);
    if constexpr (sizeof(T) == 4) {
        out[0] = v.x, out[1] = v.y, out[2] = v.z, out[3] = v.w;
    } else {
        out[0] = v.x, out[1] = v.y;
    }
}

// Calls take(x_i, y_i, i) for every i of chunk `chunk` (kChunk elements from
// chunk * kChunk), each thread a strided share.  kVector: both
// arrays are 16-byte aligned, so a thread loads 16 bytes at a time, two loads
// per array in flight; otherwise four scalar loads.
template <class T, bool kVector, class Take>
__device__ __forceinline__ void for_chunk(const T* __restrict__ x, const T* __restrict__ y, uint64_t n, uint64_t chunk,
                                          Take&& take) {
    constexpr int kVec = kVector ? static_cast<int>(16 / sizeof(T)) : 1;
    constexpr int kLoads = kVector ? 2 : 4;
    const uint64_t begin = chunk * kChunk;
    const uint64_t end = begin + kChunk < n ? begin + kChunk : n;
    const uint64_t vecs = (end - begin) / kVec;
    for (uint64_t v0 = threadIdx.x; v0 < vecs; v0 += kLoads * kThreads) {
        T xv[kLoads][kVec], yv[kLoads][kVec];
#pragma unroll
        for (int u = 0; u < kLoads; ++u) {
            const uint64_t v = v0 + u * kThreads;
            if (v >= vecs) continue;
            if constexpr (kVector) {
                load16(x + begin + v * kVec, xv[u]);
                load16(y + begin + v * kVec, yv[u]);
            } else {
                xv[u][0] = __ldcs(x + begin + v);
                yv[u][0] = __ldcs(y + begin + v);
            }
        }
#pragma unroll
        for (int u = 0; u < kLoads; ++u) {
            const uint64_t v = v0 + u * kThreads;
            if (v >= vecs) break;
#pragma unroll
            for (int j = 0; j < kVec; ++j) take(xv[u][j], yv[u][j], begin + v * kVec + j);
        }
    }
    for (uint64_t i = begin + vecs * kVec + threadIdx.x; i < end; i += kThreads) take(x[i], y[i], i);
}

// for_chunk for 16-byte-aligned arrays with the loads kept ahead of the
// arithmetic: each thread copies its next pieces (16 bytes of each array) into
// its own shared-memory slots with cp.async, kStages - 1 pieces ahead, and
// works on the oldest, so the memory system always has work in flight without
// registers held for it (the sums pass has too many accumulators for more than
// two CTAs a multiprocessor: with loads into registers it waited on memory).
// A thread reads back only what it copied itself, so no barrier is needed.
constexpr int kStages = 4;
template <class T>
struct StagedSlots {
    alignas(16) T v[kStages][2][kThreads * (16 / sizeof(T))];  // [stage][array][thread's 16 bytes]
};
template <class T, class Take>
__device__ __forceinline__ void for_chunk_staged(const T* __restrict__ x, const T* __restrict__ y, uint64_t n,
                                                 uint64_t chunk, StagedSlots<T>& slots, Take&& take) {
    constexpr int kVec = static_cast<int>(16 / sizeof(T));
    const uint64_t begin = chunk * kChunk;
    const uint64_t end = begin + kChunk < n ? begin + kChunk : n;
    const uint64_t vecs = (end - begin) / kVec, rounds = (vecs + kThreads - 1) / kThreads;
    T* const mine[2] = {&slots.v[0][0][threadIdx.x * kVec], &slots.v[0][1][threadIdx.x * kVec]};
    constexpr int kStageStride = 2 * kThreads * kVec;  // elements between a thread's slots of two stages
    auto issue = [&](uint64_t r) {  // round r: vector r * kThreads + thread of the chunk
        const uint64_t v = r * kThreads + threadIdx.x;
        if (v < vecs) {
            const int k = static_cast<int>(r % kStages) * kStageStride;
            __pipeline_memcpy_async(mine[0] + k, x + begin + v * kVec, 16);
            __pipeline_memcpy_async(mine[1] + k, y + begin + v * kVec, 16);
        }
        __pipeline_commit();  // empty groups too, so the count of groups in flight stays kStages - 1
    };
#pragma unroll
    for (int r = 0; r < kStages - 1; ++r) issue(r);
    for (uint64_t r = 0; r < rounds; ++r) {
        issue(r + kStages - 1);  // into the slot of round r - 1, consumed last iteration
        __pipeline_wait_prior(kStages - 1);
        const uint64_t v = r * kThreads + threadIdx.x;
        if (v < vecs) {
            const int k = static_cast<int>(r % kStages) * kStageStride;
            T xv[kVec], yv[kVec];
            load_shared16(mine[0] + k, xv);
            load_shared16(mine[1] + k, yv);
#pragma unroll
            for (int j = 0; j < kVec; ++j) take(xv[j], yv[j], begin + v * kVec + j);
        }
    }
    __pipeline_wait_prior(0);
    for (uint64_t i = begin + vecs * kVec + threadIdx.x; i < end; i += kThreads) take(x[i], y[i], i);
}

// Pass 1: CTA c reduces chunk c (kChunk elements) into partials[c]: every sum,
// extreme and the shifted moments, so only the PDFs need a second pass.
template <class T, bool kVector>
__global__ void __launch_bounds__(kThreads, 2) sums_kernel(const T* __restrict__ x, const T* __restrict__ y, uint64_t n,
                                                           Sums* __restrict__ partials) {
    Sums s;
    s.set_shift(x[blockIdx.x * kChunk], y[blockIdx.x * kChunk]);
    // The extremes of x and y in T (single-precision min/max for float input: exact, and off the
    // double-precision pipe), added to the Sums at the end.
    const T kInf = static_cast<T>(HUGE_VAL);
    T x_lo = kInf, x_hi = -kInf, y_lo = kInf, y_hi = -kInf;
    auto take = [&](T xv, T yv, uint64_t i) {
        if (!finite_value(xv)) {
            ++s.nonfinite;
            s.mismatches += !same_bits(xv, yv);
        } else {
            s.template add_value<false>(xv, yv, i);
            x_lo = min(x_lo, xv), x_hi = max(x_hi, xv), y_lo = min(y_lo, yv), y_hi = max(y_hi, yv);
        }
    };
    if constexpr (kVector) {
        __shared__ StagedSlots<T> slots;
        for_chunk_staged<T>(x, y, n, blockIdx.x, slots, take);
    } else {
        for_chunk<T, false>(x, y, n, blockIdx.x, take);
    }
    s.add_extremes(x_lo, x_hi, y_lo, y_hi);
    using Reduce = cub::BlockReduce<Sums, kThreads, cub::BLOCK_REDUCE_WARP_REDUCTIONS>;
    __shared__ typename Reduce::TempStorage storage;
    const Sums total = Reduce(storage).Reduce(s, AddSums{});
    if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

// What the reductions leave on the device for the PDF pass and the host.
struct ReductionTotals {
    Sums sums;
    Moments moments;
    PassTwo pass_two;
};
constexpr int kCombineThreads = 512;  // a few chunks each: their loads, not the merges, take the time

// The chunk partials combined on the device (no round trip to the host
// between the two passes): thread t adds a contiguous run of chunks in order,
// then the runs merge in a fixed tree, so the result does not depend on
// scheduling (the CPU adds all chunks in order: the sums agree to rounding,
// the extremes, counts and PDF bins exactly). Also zeroes the histograms.
__global__ void __launch_bounds__(kCombineThreads)
    combine_sums_kernel(const Sums* __restrict__ parts, uint64_t chunks, uint32_t bins,
                        ReductionTotals* __restrict__ out, unsigned long long* __restrict__ hist) {
    extern __shared__ unsigned char combine_shared[];  // kCombineThreads Sums, then as many Moments
    Sums* sums = reinterpret_cast<Sums*>(combine_shared);
    Moments* moments = reinterpret_cast<Moments*>(sums + kCombineThreads);
    for (uint32_t i = threadIdx.x; i < 2 * bins; i += kCombineThreads) hist[i] = 0;
    const uint64_t per = (chunks + kCombineThreads - 1) / kCombineThreads;
    const uint64_t begin = threadIdx.x * per, end = begin + per < chunks ? begin + per : chunks;
    Sums t;
    Moments m;
    for (uint64_t c = begin; c < end; ++c) {
        t.add(parts[c]);
        m.add(Moments::of(parts[c].shifted, parts[c].finite));
    }
    sums[threadIdx.x] = t, moments[threadIdx.x] = m;
    __syncthreads();
    for (int stride = kCombineThreads / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) {
            sums[threadIdx.x].add(sums[threadIdx.x + stride]);
            moments[threadIdx.x].add(moments[threadIdx.x + stride]);
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        out->sums = sums[0], out->moments = moments[0];
        out->pass_two = pass_two_from(sums[0], bins);
    }
}

// Counts into one bin, a run at a time: a thread keeps adding to its current
// bin in a register and hands the run to the histogram when the bin changes
// (the point-wise relative PDF piles up in a few bins, whose shared-memory
// atomics would otherwise serialize).
struct BinRun {
    uint32_t bin = 0, count = 0;
    template <class Flush>
    __device__ __forceinline__ void add(uint32_t b, Flush&& flush) {
        if (b == bin) {
            ++count;
            return;
        }
        if (count) flush(bin, count);
        bin = b, count = 1;
    }
};

// Pass 2: both PDFs, in shared-memory histograms when they fit (integer
// atomics either way: counts do not depend on order).
template <class T, bool kVector, bool kShared>
__global__ void __launch_bounds__(kThreads)
    pdf_kernel(const T* __restrict__ x, const T* __restrict__ y, uint64_t n, const PassTwo* __restrict__ pass_two,
               unsigned long long* __restrict__ e_hist, unsigned long long* __restrict__ p_hist) {
    extern __shared__ uint32_t shared_hist[];
    const PassTwo q = *pass_two;
    if (q.bins == 0) return;  // no finite original
    if constexpr (kShared) {
        for (uint32_t b = threadIdx.x; b < 2 * q.bins; b += kThreads) shared_hist[b] = 0;
        __syncthreads();
    }
    auto flush_e = [&](uint32_t b, uint32_t c) {
        if constexpr (kShared) atomicAdd(&shared_hist[b], c);
        else atomicAdd(&e_hist[b], static_cast<unsigned long long>(c));
    };
    auto flush_p = [&](uint32_t b, uint32_t c) {
        if constexpr (kShared) atomicAdd(&shared_hist[q.bins + b], c);
        else atomicAdd(&p_hist[b], static_cast<unsigned long long>(c));
    };
    BinRun p_run;
    for_chunk<T, kVector>(x, y, n, blockIdx.x, [&](T xv, T yv, uint64_t) {
        if (!finite_value(xv)) return;
        uint32_t eb, pb;
        bool has_p;
        pdf_bins_of(xv, yv, q, eb, pb, has_p);
        flush_e(eb, 1);  // errors spread over the bins: runs are short
        if (has_p) p_run.add(pb, flush_p);
    });
    if (p_run.count) flush_p(p_run.bin, p_run.count);
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

// Stencils on any grid (the 4-D case): threads stride over (row, x) pairs of
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
        const int64_t i = static_cast<int64_t>(i0 + i1 * g.stride[1] + i2 * g.stride[2] + i3 * g.stride[3]);
        double dx[4], dy[4];
        derived_at(x, i, g.up, g.down, g.used, dx);
        derived_at(y, i, g.up, g.down, g.used, dy);
        for (int m = 0; m < 4; ++m) acc.d[m].add_value(dx[m], dy[m]);
    }
    using Reduce = cub::BlockReduce<DerivedPartial, kThreads, cub::BLOCK_REDUCE_WARP_REDUCTIONS>;
    __shared__ typename Reduce::TempStorage storage;
    const DerivedPartial sum = Reduce(storage).Reduce(acc, AddDerivedPartial{});
    if (threadIdx.x == 0) partials[blockIdx.x] = sum;
}

// Stencils on grids whose axes 0 and 1 are used (and axis 2 where K = 3;
// any axis 2 for K = 2, whose planes are then independent), tiled: a tile is
// kTileX x kTileY interior points of up to kTileZ planes, walked up the planes.
// A thread owns one column of the tile (and 76 threads one halo column more)
// and keeps its values at the planes below, at and above in registers, as
// doubles (converted once). Each step it publishes the value at the plane and
// (K = 3) the central difference along z of its columns in shared memory, so
// a point reads only its in-plane neighbours and its neighbours' z
// differences there: the mixed x-z and y-z terms are differences of those
// (derived_raw's definition), 12 shared-memory loads per point and array
// instead of 19. The buffers alternate between steps, so one barrier a step
// suffices, and the next plane is loaded while this one is computed. CTAs
// stride over the tiles (as many CTAs as fit on the GPU), so the partials are
// few.
constexpr int kTileX = 32, kTileZ = 32;
constexpr int kRowW = kTileX + 2;  // columns per tile row, halo included

// Whether all eight values are finite: one test instead of one per value (the
// exponent bits of each high word, inverted, are zero for NaN and +-Inf).
__device__ __forceinline__ bool all_finite(const double (&a)[4], const double (&b)[4]) {
    uint32_t least = 0xffffffffu;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        least = min(least, ~static_cast<uint32_t>(__double2hiint(a[k])) & 0x7ff00000u);
        least = min(least, ~static_cast<uint32_t>(__double2hiint(b[k])) & 0x7ff00000u);
    }
    return least != 0;
}

// A tile is kTileY rows of kTileX points, a CTA of kTileY warps with a thread
// per point (four CTAs a multiprocessor at 128 registers; at 8 rows, two CTAs:
// 3% slower, with the barrier of a step holding more warps).
constexpr int kTileY = 4, kStencilThreads = kTileX * kTileY;
constexpr int kPlaneW = kRowW * (kTileY + 2);          // columns, halo included: 34 x 6
constexpr int kHaloColumns = kPlaneW - kStencilThreads;  // 76
static_assert(kHaloColumns <= kStencilThreads);
// Column of thread t's point, and of halo column h < kHaloColumns.
__device__ __forceinline__ int interior_column(int t) { return (t / kTileX + 1) * kRowW + t % kTileX + 1; }
__device__ __forceinline__ int halo_column(int h) {
    if (h < kRowW) return h;                                      // row above the tile
    if (h < 2 * kRowW) return (kTileY + 1) * kRowW + h - kRowW;   // row below
    const int k = h - 2 * kRowW;                                  // left and right edges
    return (k % kTileY + 1) * kRowW + (k < kTileY ? 0 : kRowW - 1);
}

struct TileGrid {
    int64_t lo[3], hi[3];  // interior bounds per axis
    int64_t tiles[3];      // tiles per axis
};

template <class T, int K>
__global__ void __launch_bounds__(kStencilThreads, 4)
    stencil_tiled_kernel(const T* __restrict__ x, const T* __restrict__ y, Grid g, TileGrid tg,
                         DerivedPartial* __restrict__ partials) {
    static_assert(K == 2 || K == 3);
    constexpr int kOwned = 2;  // columns a thread may own: its point's and a halo one
    constexpr int kSlots = K;     // planes kept per column: z - 1, z, z + 1 (K = 3) or z, z + 1 (K = 2)
    __shared__ double plane[2][2][kPlaneW];            // [buffer][array][column]: values at the plane
    __shared__ double dz[K == 3 ? 2 : 1][2][kPlaneW];  // [buffer][array][column]: central differences along z
    const int64_t n0 = static_cast<int64_t>(g.n[0]), n1 = static_cast<int64_t>(g.n[1]);
    const int64_t plane_stride = static_cast<int64_t>(g.stride[2]);
    const int tx = threadIdx.x % kTileX, ty = threadIdx.x / kTileX;
    const int column[kOwned] = {interior_column(threadIdx.x), threadIdx.x < kHaloColumns ? halo_column(threadIdx.x) : -1};
    const int64_t tiles = tg.tiles[0] * tg.tiles[1] * tg.tiles[2];
    DerivedPartial acc;
    uint32_t finite_points = 0;  // points whose eight derived values are all finite (counted once for all four)
    __shared__ unsigned long long some_points[4];  // points where only some are finite, per field
    if (threadIdx.x < 4) some_points[threadIdx.x] = 0;  // read after the walk's barriers
    for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const int64_t bx = t % tg.tiles[0], by = (t / tg.tiles[0]) % tg.tiles[1], bz = t / (tg.tiles[0] * tg.tiles[1]);
        const int64_t x0 = tg.lo[0] + bx * kTileX, y0 = tg.lo[1] + by * kTileY, z0 = tg.lo[2] + bz * kTileZ;
        const int steps = static_cast<int>(z0 + kTileZ < tg.hi[2] ? kTileZ : tg.hi[2] - z0);
        // Each owned column's place in a plane (-1: outside the array, reads as 0; planes hold
        // < 2^31 values here), and the next plane to load (the same for all threads).
        int32_t at[kOwned];
#pragma unroll
        for (int o = 0; o < kOwned; ++o) {
            const int64_t i0 = x0 - 1 + column[o] % kRowW, i1 = y0 - 1 + column[o] / kRowW;
            const bool in = column[o] >= 0 && i0 >= 0 && i0 < n0 && i1 >= 0 && i1 < n1;
            at[o] = in ? static_cast<int32_t>(i1 * n0 + i0) : -1;
        }
        const T* next_x = x + (K == 3 ? z0 - 1 : z0) * plane_stride;
        const T* next_y = y + (K == 3 ? z0 - 1 : z0) * plane_stride;
        auto load = [&](T (&vx)[kOwned], T (&vy)[kOwned]) {
#pragma unroll
            for (int o = 0; o < kOwned; ++o)
                vx[o] = at[o] >= 0 ? next_x[at[o]] : T(0), vy[o] = at[o] >= 0 ? next_y[at[o]] : T(0);
            next_x += plane_stride, next_y += plane_stride;
        };
        // ring[slot][array][column]: plane q in slot (q - z0 + K - 2) % kSlots, so no value moves between
        // registers as the walk goes up.
        double ring[kSlots][2][kOwned];
        constexpr int kPreload = K == 3 ? 3 : 1;  // planes z0 - 1 .. z0 + 1, or z0
#pragma unroll
        for (int k = 0; k < kPreload; ++k) {
            T vx[kOwned], vy[kOwned];
            load(vx, vy);
#pragma unroll
            for (int o = 0; o < kOwned; ++o) ring[k][0][o] = vx[o], ring[k][1][o] = vy[o];
        }
        const bool mine = x0 + tx < tg.hi[0] && y0 + ty < tg.hi[1];
        // Step k of the tile (plane z0 + k), whose phase k % kPeriod is known at compile time: the
        // ring slots and the shared-memory buffer are then constants, not indices.
        auto step = [&](auto phase, int k) {
            constexpr int P = decltype(phase)::value, kBuffer = P % 2;
            constexpr int kBelow = P % kSlots, kHere = (P + (K == 3 ? 1 : 0)) % kSlots, kAbove = (P + 2) % kSlots;
            constexpr int kIncoming = K == 3 ? kBelow : (P + 1) % kSlots;  // the plane loaded now: z + 2 or z + 1
            T incoming[2][kOwned];
            const bool more = k + 1 < steps;  // another step follows: load its new plane now
            if (more) load(incoming[0], incoming[1]);
#pragma unroll
            for (int o = 0; o < kOwned; ++o) {
                if (column[o] < 0) continue;
#pragma unroll
                for (int a = 0; a < 2; ++a) {
                    plane[kBuffer][a][column[o]] = ring[kHere][a][o];
                    if constexpr (K == 3) dz[kBuffer][a][column[o]] = central(ring[kAbove][a][o], ring[kBelow][a][o]);
                }
            }
            __syncthreads();
            if (mine) {
                const int c = column[0];
                double out[2][4];
#pragma unroll
                for (int a = 0; a < 2; ++a) {
                    const double* f = plane[kBuffer][a];
                    const double p[3] = {f[c + 1], f[c + kRowW], K == 3 ? ring[kAbove][a][0] : 0.0};
                    const double m[3] = {f[c - 1], f[c - kRowW], K == 3 ? ring[kBelow][a][0] : 0.0};
                    double mixed[3];
                    mixed[0] = central(f[c + 1 + kRowW], f[c + 1 - kRowW]) - central(f[c - 1 + kRowW], f[c - 1 - kRowW]);
                    if constexpr (K == 3) {
                        const double* d = dz[kBuffer][a];
                        mixed[1] = d[c + 1] - d[c - 1];
                        mixed[2] = d[c + kRowW] - d[c - kRowW];
                    }
                    derived_raw<K>(ring[kHere][a][0], p, m, mixed, out[a]);
                }
                if (all_finite(out[0], out[1])) {
                    ++finite_points;
#pragma unroll
                    for (int f = 0; f < 4; ++f) acc.d[f].add_finite(out[0][f], out[1][f]);
                } else {
#pragma unroll
                    for (int f = 0; f < 4; ++f)
                        if (finite_value(out[0][f]) && finite_value(out[1][f])) {
                            atomicAdd(&some_points[f], 1ull);  // rare: no register kept for it
                            acc.d[f].add_finite(out[0][f], out[1][f]);
                        }
                }
            }
            if (more) {
#pragma unroll
                for (int o = 0; o < kOwned; ++o)
#pragma unroll
                    for (int a = 0; a < 2; ++a) ring[kIncoming][a][o] = incoming[a][o];
            }
        };
        // The buffers alternate within a tile; a tile starts on buffer 0 after a barrier (the last
        // step of the previous tile may have used buffer 0 too).
        __syncthreads();
        constexpr int kPeriod = K == 3 ? 6 : 2;  // ring slots (kSlots) times the two buffers
        for (int k = 0; k < steps; k += kPeriod) {
            step(std::integral_constant<int, 0>{}, k);
            if (k + 1 < steps) step(std::integral_constant<int, 1>{}, k + 1);
            if constexpr (K == 3) {
                if (k + 2 < steps) step(std::integral_constant<int, 2>{}, k + 2);
                if (k + 3 < steps) step(std::integral_constant<int, 3>{}, k + 3);
                if (k + 4 < steps) step(std::integral_constant<int, 4>{}, k + 4);
                if (k + 5 < steps) step(std::integral_constant<int, 5>{}, k + 5);
            }
        }
    }
#pragma unroll
    for (int k = 0; k < 4; ++k) acc.d[k].points = finite_points;
    using Reduce = cub::BlockReduce<DerivedPartial, kStencilThreads, cub::BLOCK_REDUCE_WARP_REDUCTIONS>;
    __shared__ typename Reduce::TempStorage storage;
    DerivedPartial sum = Reduce(storage).Reduce(acc, AddDerivedPartial{});
    if (threadIdx.x == 0) {
        for (int k = 0; k < 4; ++k) sum.d[k].points += some_points[k];
        partials[blockIdx.x] = sum;
    }
}

// CTAs that fit on the device at once for a kernel (at least 1).
template <class Kernel>
unsigned resident_ctas(Kernel kernel, int threads, size_t shared_bytes) {
    int device = 0, sms = 0, per_sm = 0;
    GSZ_CUDA(cudaGetDevice(&device));
    GSZ_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    GSZ_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, shared_bytes));
    return static_cast<unsigned>(std::max(1, sms * std::max(1, per_sm)));
}

template <class T>
void reductions_cuda(const T* x, const T* y, uint64_t n, const Options& o, Result& r, cudaStream_t s) {
    const uint64_t chunks = (n + kChunk - 1) / kChunk;
    GSZ_CHECK(chunks < (1u << 31), GSZ_STATUS_INVALID_ARGUMENT, "assess: array too large for one launch");
    const bool vec = reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
    const unsigned grid = static_cast<unsigned>(chunks);
    const uint32_t bins = o.pdf_bins;
    cuda::DeviceBuffer<Sums> d_sums(chunks, s);
    // The totals, then both histograms, in one buffer: one copy back at the end.
    constexpr size_t kTotalWords = (sizeof(ReductionTotals) + 7) / 8;
    static_assert(alignof(ReductionTotals) <= 8);
    cuda::DeviceBuffer<unsigned long long> d_out(kTotalWords + 2 * size_t{bins}, s);
    auto* totals = reinterpret_cast<ReductionTotals*>(d_out.data());
    unsigned long long *e_hist = d_out.data() + kTotalWords, *p_hist = e_hist + bins;
    if (vec) sums_kernel<T, true><<<grid, kThreads, 0, s>>>(x, y, n, d_sums.data());
    else sums_kernel<T, false><<<grid, kThreads, 0, s>>>(x, y, n, d_sums.data());
    GSZ_CUDA_LAUNCHED("sums_kernel");
    constexpr size_t kCombineShared = kCombineThreads * (sizeof(Sums) + sizeof(Moments));
    GSZ_CUDA(cudaFuncSetAttribute(combine_sums_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(kCombineShared)));  // more than the default 48 KiB
    combine_sums_kernel<<<1, kCombineThreads, kCombineShared, s>>>(d_sums.data(), chunks, bins, totals, e_hist);
    GSZ_CUDA_LAUNCHED("combine_sums_kernel");
    const PassTwo* q = &totals->pass_two;
    const size_t shared_bytes = 2 * size_t{bins} * sizeof(uint32_t);
    auto launch_pdf = [&](auto kernel, size_t smem) {  // a CTA per chunk (CTAs striding over chunks: 10% slower)
        kernel<<<grid, kThreads, smem, s>>>(x, y, n, q, e_hist, p_hist);
    };
    if (shared_bytes <= 32 * 1024) {
        if (vec) launch_pdf(pdf_kernel<T, true, true>, shared_bytes);
        else launch_pdf(pdf_kernel<T, false, true>, shared_bytes);
    } else {
        if (vec) launch_pdf(pdf_kernel<T, true, false>, 0);
        else launch_pdf(pdf_kernel<T, false, false>, 0);
    }
    GSZ_CUDA_LAUNCHED("pdf_kernel");
    std::vector<unsigned long long> out;
    cuda::copy_to_host(out, d_out.data(), kTotalWords + 2 * size_t{bins}, s);
    ReductionTotals back;
    std::memcpy(&back, out.data(), sizeof back);
    if (!finish_sums(back.sums, back.moments, r)) return;
    finish_moments(back.moments, back.sums, r);
    const std::vector<double> e_counts(out.begin() + kTotalWords, out.begin() + kTotalWords + bins),
        p_counts(out.begin() + kTotalWords + bins, out.end());
    finish_pdfs(back.sums, back.pass_two, e_counts, p_counts, r);
}

template <class T, int K>
void launch_stencil_tiled(const T* x, const T* y, const Grid& g, cuda::DeviceBuffer<DerivedPartial>& d_part,
                          uint64_t& ctas, cudaStream_t s) {
    TileGrid tg;
    const int tile_extent[3] = {kTileX, kTileY, kTileZ};
    for (int a = 0; a < 3; ++a) {
        tg.lo[a] = g.used[a] ? 1 : 0;
        tg.hi[a] = static_cast<int64_t>(g.used[a] ? g.n[a] - 1 : g.n[a]);
        tg.tiles[a] = (tg.hi[a] - tg.lo[a] + tile_extent[a] - 1) / tile_extent[a];
    }
    const uint64_t tiles = static_cast<uint64_t>(tg.tiles[0] * tg.tiles[1] * tg.tiles[2]);
    const unsigned fit = resident_ctas(stencil_tiled_kernel<T, K>, kStencilThreads, 0);
    ctas = tiles < fit ? tiles : fit;
    d_part.allocate(ctas, s);
    stencil_tiled_kernel<T, K><<<static_cast<unsigned>(ctas), kStencilThreads, 0, s>>>(x, y, g, tg, d_part.data());
    GSZ_CUDA_LAUNCHED("stencil_tiled_kernel");
}

template <class T>
void stencils_cuda(const T* x, const T* y, const Grid& g, Result& r, cudaStream_t s) {
    if (!(g.used[0] || g.used[1] || g.used[2] || g.used[3])) return;
    auto interior = [&](int a) { return g.used[a] ? g.n[a] - 2 : g.n[a]; };
    cuda::DeviceBuffer<DerivedPartial> d_part;
    uint64_t ctas = 0;
    if (g.n[3] == 1 && g.used[0] && g.used[1] && g.n[0] * g.n[1] < (uint64_t{1} << 31)) {
        if (g.used[2]) launch_stencil_tiled<T, 3>(x, y, g, d_part, ctas, s);
        else launch_stencil_tiled<T, 2>(x, y, g, d_part, ctas, s);
    } else {
        const uint64_t e1 = interior(1), e2 = interior(2), rows = e1 * e2 * interior(3);
        const uint64_t points = rows * interior(0);
        const uint64_t want = (points + kThreads - 1) / kThreads;
        ctas = want < 8192 ? (want ? want : 1) : 8192;
        d_part.allocate(ctas, s);
        stencil_kernel<T><<<static_cast<unsigned>(ctas), kThreads, 0, s>>>(x, y, g, rows, e1, e2, d_part.data());
        GSZ_CUDA_LAUNCHED("stencil_kernel");
    }
    std::vector<DerivedPartial> part;
    cuda::copy_to_host(part, d_part.data(), ctas, s);
    DerivedPartial t;
    for (const DerivedPartial& p : part)
        for (int k = 0; k < 4; ++k) t.d[k].add(p.d[k]);
    finish_stencils(t.d, r);
}

// ---- SSIM -------------------------------------------------------------------
//
// The window sums are separable and computed in the CPU's order: along axis 0,
// then 1, then 2 (and 3), each a plain sum of w terms from the first.  Grids
// of up to three axes with a window of 1 or 7 along axis 2 take the fused
// kernel; the rest the generic one, one axis per pass through memory.

// The seven per-window statistics: sums of x, y, x², y², xy, and the min and
// max of x (for the window's range).
constexpr int kStats = 7, kSumStats = 5;

GSZ_HD void stats_init(double* s) {
    for (int k = 0; k < kSumStats; ++k) s[k] = 0;
    s[5] = HUGE_VAL, s[6] = -HUGE_VAL;
}
// The terms of one point: a is the original, b the decompressed (ssim_terms).
__device__ __forceinline__ void stats_add_point(double* s, double a, double b) {
    s[0] += a, s[1] += b, s[2] += a * a, s[3] += b * b, s[4] += a * b;
    s[5] = min_of(s[5], a), s[6] = max_of(s[6], a);
}
__device__ __forceinline__ void stats_add(double* s, const double* o) {
    for (int k = 0; k < kSumStats; ++k) s[k] += o[k];
    s[5] = min_of(s[5], o[5]), s[6] = max_of(s[6], o[6]);
}

// Fused SSIM: a CTA owns kSsimX x kSsimY windows (along axes 0 and 1) of a
// run of kSsimZ window positions along axis 2.  Per input plane: the tile of
// both arrays arrives in shared memory (copied asynchronously while the
// previous plane is worked on) and is turned into SSIM terms; the axis-0 sums
// of every tile row go to shared memory; each thread sums kWy of them into its
// window's plane statistics, kept in a ring of registers over the last kWz
// planes; once a window's last plane is in, the ring's sum (axis 2) gives its
// SSIM.  The ring's five sums live in registers indexed by compile-time slots
// (the plane loop is unrolled kWz times), its min and max in shared memory,
// so that two CTAs fit on a multiprocessor.
constexpr int kSsimX = 32, kSsimY = 8, kSsimZ = 64, kSsimThreads = kSsimX * kSsimY;

struct SsimGeometry {
    int64_t n[3];     // array extents
    int64_t m[3];     // windows per axis
    int w[3], step[3];
    int fx, fy;       // tile extents in the input plane
};

template <class T, int kWz>
__global__ void __launch_bounds__(kSsimThreads, 2)
    ssim_fused_kernel(const T* __restrict__ x, const T* __restrict__ y, SsimGeometry geo, double* __restrict__ partials) {
    extern __shared__ double smem[];
    const int tile = geo.fx * geo.fy;
    double* terms = smem;                               // [2][tile]: a, b
    double* rows = terms + 2 * tile;                    // [kStats][fy][kSsimX]: axis-0 sums
    double* extremes = rows + kStats * geo.fy * kSsimX;  // [kWz slots][min, max][kSsimThreads]
    T* raw = reinterpret_cast<T*>(extremes + 2 * kWz * kSsimThreads);  // [2 buffers][2 arrays][tile]
    const int64_t ox0 = int64_t{blockIdx.x} * kSsimX, oy0 = int64_t{blockIdx.y} * kSsimY;
    const int64_t oz0 = int64_t{blockIdx.z} * kSsimZ;
    const int64_t oz1 = oz0 + kSsimZ < geo.m[2] ? oz0 + kSsimZ : geo.m[2];
    const int64_t ix0 = ox0 * geo.step[0], iy0 = oy0 * geo.step[1];
    const int64_t p_begin = oz0 * geo.step[2], p_end = (oz1 - 1) * geo.step[2] + kWz;  // planes [p_begin, p_end)
    const int tx = threadIdx.x % kSsimX, ty = threadIdx.x / kSsimX;
    const bool mine = ox0 + tx < geo.m[0] && oy0 + ty < geo.m[1];

    // Plane p of the tile into raw buffer `buf`, asynchronously (zeros outside the array).
    auto issue = [&](int64_t p, int buf) {
        T* dx = raw + (2 * buf) * tile;
        T* dy = dx + tile;
        const int64_t plane = p * geo.n[0] * geo.n[1];
        for (int e = threadIdx.x; e < tile; e += kSsimThreads) {
            const int64_t i0 = ix0 + e % geo.fx, i1 = iy0 + e / geo.fx;
            if (i0 < geo.n[0] && i1 < geo.n[1]) {
                const int64_t i = plane + i1 * geo.n[0] + i0;
                __pipeline_memcpy_async(dx + e, x + i, sizeof(T));
                __pipeline_memcpy_async(dy + e, y + i, sizeof(T));
            } else {
                dx[e] = T(0), dy[e] = T(0);
            }
        }
        __pipeline_commit();
    };

    double ring[kWz][kSumStats];
    double ssim_sum = 0;
    issue(p_begin, 0);
    for (int64_t p0 = p_begin; p0 < p_end; p0 += kWz) {
#pragma unroll
        for (int slot = 0; slot < kWz; ++slot) {
            const int64_t p = p0 + slot;
            if (p >= p_end) break;
            const int buf = static_cast<int>((p - p_begin) & 1);
            __pipeline_wait_prior(0);
            __syncthreads();  // plane p has landed; every thread is done with the last plane's rows
            if (p + 1 < p_end) issue(p + 1, buf ^ 1);
            const T* rx = raw + (2 * buf) * tile;
            const T* ry = rx + tile;
            for (int e = threadIdx.x; e < tile; e += kSsimThreads) ssim_terms(rx[e], ry[e], terms[e], terms[tile + e]);
            __syncthreads();
            // Axis 0: the sums of w[0] terms for every tile row and window column.
            for (int e = threadIdx.x; e < geo.fy * kSsimX; e += kSsimThreads) {
                const int r = e / kSsimX, c = e % kSsimX;
                const double* ta = terms + r * geo.fx + c * geo.step[0];
                const double* tb = ta + tile;
                double st[kStats];
                stats_init(st);
                for (int k = 0; k < geo.w[0]; ++k) stats_add_point(st, ta[k], tb[k]);
#pragma unroll
                for (int k = 0; k < kStats; ++k) rows[(k * geo.fy + r) * kSsimX + c] = st[k];
            }
            __syncthreads();
            // Axis 1: this thread's window over w[1] rows, into the ring.
            double st[kStats];
            stats_init(st);
            for (int k = 0; k < geo.w[1]; ++k) {
                const int r = ty * geo.step[1] + k;
                if (r >= geo.fy) break;
                double o[kStats];
#pragma unroll
                for (int j = 0; j < kStats; ++j) o[j] = rows[(j * geo.fy + r) * kSsimX + tx];
                stats_add(st, o);
            }
#pragma unroll
            for (int j = 0; j < kSumStats; ++j) ring[slot][j] = st[j];
            extremes[(2 * slot) * kSsimThreads + threadIdx.x] = st[5];
            extremes[(2 * slot + 1) * kSsimThreads + threadIdx.x] = st[6];
            // Axis 2: a window ends at plane p when its first plane p - kWz + 1 is a window start.
            const int64_t first = p - (kWz - 1);
            if (first >= p_begin && (first - p_begin) % geo.step[2] == 0 && mine) {
                double sum[kStats];
                stats_init(sum);
#pragma unroll
                for (int t = 0; t < kWz; ++t) {
                    const int r = (slot + 1 + t) % kWz;
                    const double o[kStats] = {ring[r][0], ring[r][1], ring[r][2], ring[r][3], ring[r][4],
                                              extremes[(2 * r) * kSsimThreads + threadIdx.x],
                                              extremes[(2 * r + 1) * kSsimThreads + threadIdx.x]};
                    stats_add(sum, o);
                }
                const double count = static_cast<double>(geo.w[0]) * geo.w[1] * kWz;
                ssim_sum += ssim_of_window(sum[0], sum[1], sum[2], sum[3], sum[4], sum[6] - sum[5], count);
            }
        }
    }
    using Reduce = cub::BlockReduce<double, kSsimThreads>;
    __shared__ typename Reduce::TempStorage storage;
    const double total = Reduce(storage).Sum(ssim_sum);
    const uint64_t cta = blockIdx.x + uint64_t{gridDim.x} * (blockIdx.y + uint64_t{gridDim.y} * blockIdx.z);
    if (threadIdx.x == 0) partials[cta] = total;
}

// Generic SSIM, first pass (axis 0) straight from the arrays: thread = one output position.
struct Stats {
    double* v[kStats];
};

template <class T>
__global__ void ssim_first_axis_kernel(const T* __restrict__ x, const T* __restrict__ y, uint64_t n0, uint64_t rest,
                                       uint64_t w, uint64_t step, uint64_t m0, Stats out) {
    const uint64_t k = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
    if (k >= m0 * rest) return;
    const uint64_t o = k / m0, p = k - o * m0;
    const uint64_t src = o * n0 + p * step;
    double acc[kStats];
    stats_init(acc);
    for (uint64_t j = 0; j < w; ++j) {
        double a, b;
        ssim_terms(x[src + j], y[src + j], a, b);
        stats_add_point(acc, a, b);
    }
    for (int s = 0; s < kStats; ++s) out.v[s][k] = acc[s];
}

// Later passes: along an axis with `inner` elements below it.
__global__ void ssim_axis_kernel(Stats in, uint64_t n_axis, uint64_t inner, uint64_t outer, uint64_t w, uint64_t step,
                                 uint64_t m_axis, Stats out) {
    const uint64_t k = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
    if (k >= inner * m_axis * outer) return;
    const uint64_t j = k % inner, p = (k / inner) % m_axis, o = k / (inner * m_axis);
    const uint64_t src = (o * n_axis + p * step) * inner + j;
    for (int s = 0; s < kStats; ++s) {
        double acc = s < kSumStats ? 0.0 : (s == 5 ? HUGE_VAL : -HUGE_VAL);
        for (uint64_t t = 0; t < w; ++t) {
            const double v = in.v[s][src + t * inner];
            acc = s < kSumStats ? acc + v : (s == 5 ? min_of(acc, v) : max_of(acc, v));
        }
        out.v[s][k] = acc;
    }
}

__global__ void __launch_bounds__(kThreads) ssim_mean_kernel(Stats st, uint64_t windows, double count,
                                                             double* __restrict__ partials) {
    double sum = 0;
    for (uint64_t i = blockIdx.x * uint64_t{kThreads} + threadIdx.x; i < windows; i += uint64_t{gridDim.x} * kThreads)
        sum += ssim_of_window(st.v[0][i], st.v[1][i], st.v[2][i], st.v[3][i], st.v[4][i], st.v[6][i] - st.v[5][i],
                              count);
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

// The fused kernel's shared memory for a geometry (0 when it does not apply).
template <class T, int kWz>
size_t ssim_fused_bytes(const SsimGeometry& geo) {
    const size_t tile = size_t(geo.fx) * geo.fy;
    return 2 * tile * sizeof(double) + size_t{kStats} * geo.fy * kSsimX * sizeof(double) +
           2 * size_t{kWz} * kSsimThreads * sizeof(double) + 4 * tile * sizeof(T);
}

template <class T, int kWz>
void launch_ssim_fused(const T* x, const T* y, const SsimGeometry& geo, size_t bytes, double* partials, dim3 grid,
                       cudaStream_t s) {
    GSZ_CUDA(cudaFuncSetAttribute(ssim_fused_kernel<T, kWz>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(bytes)));
    ssim_fused_kernel<T, kWz><<<grid, kSsimThreads, bytes, s>>>(x, y, geo, partials);
    GSZ_CUDA_LAUNCHED("ssim_fused_kernel");
}

template <class T>
void ssim_cuda(const T* x, const T* y, const Grid& g, const Options& o, Result& r, cudaStream_t s) {
    uint64_t ext[4] = {g.n[0], g.n[1], g.n[2], g.n[3]}, w[4], m[4];
    auto step_of = [&](int a) { return g.n[a] > 1 ? uint64_t{o.ssim_step} : uint64_t{1}; };
    for (int a = 0; a < 4; ++a) {
        w[a] = o.ssim_window < g.n[a] ? o.ssim_window : g.n[a];
        r.ssim_window_used[a] = a < static_cast<int>(g.rank) ? static_cast<uint32_t>(w[a]) : 0;
        m[a] = (g.n[a] - w[a]) / step_of(a) + 1;
    }
    const uint64_t windows = m[0] * m[1] * m[2] * m[3];
    r.ssim_computed = windows > 0;
    r.ssim_windows = windows;
    const double count = static_cast<double>(w[0] * w[1] * w[2] * w[3]);

    // The fused kernel where it applies.
    SsimGeometry geo{};
    for (int a = 0; a < 3; ++a) {
        geo.n[a] = static_cast<int64_t>(g.n[a]), geo.m[a] = static_cast<int64_t>(m[a]);
        geo.w[a] = static_cast<int>(w[a]), geo.step[a] = static_cast<int>(step_of(a));
    }
    geo.fx = static_cast<int>((kSsimX - 1) * step_of(0) + w[0]);
    geo.fy = static_cast<int>((kSsimY - 1) * step_of(1) + w[1]);
    const size_t fused_bytes = w[2] == 1 ? ssim_fused_bytes<T, 1>(geo) : ssim_fused_bytes<T, 7>(geo);
    const uint64_t gx = (m[0] + kSsimX - 1) / kSsimX, gy = (m[1] + kSsimY - 1) / kSsimY, gz = (m[2] + kSsimZ - 1) / kSsimZ;
    if (g.n[3] == 1 && (w[2] == 1 || w[2] == 7) && fused_bytes <= 100 * 1024 && gy < 65536 && gz < 65536) {
        cuda::DeviceBuffer<double> d_part(gx * gy * gz, s);
        const dim3 grid(static_cast<unsigned>(gx), static_cast<unsigned>(gy), static_cast<unsigned>(gz));
        if (w[2] == 1) launch_ssim_fused<T, 1>(x, y, geo, fused_bytes, d_part.data(), grid, s);
        else launch_ssim_fused<T, 7>(x, y, geo, fused_bytes, d_part.data(), grid, s);
        std::vector<double> part;
        cuda::copy_to_host(part, d_part.data(), gx * gy * gz, s);
        double total = 0;
        for (double v : part) total += v;
        r.ssim = windows ? total / static_cast<double>(windows) : 0;
        return;
    }

    cuda::DeviceBuffer<double> bufs[2][kStats];
    auto stats_of = [&](int which) {
        Stats st;
        for (int k = 0; k < kStats; ++k) st.v[k] = bufs[which][k].data();
        return st;
    };
    // axis 0
    uint64_t rest = ext[1] * ext[2] * ext[3];
    for (int k = 0; k < kStats; ++k) bufs[0][k].allocate(m[0] * rest, s);
    ssim_first_axis_kernel<T><<<blocks_for(m[0] * rest), kThreads, 0, s>>>(x, y, ext[0], rest, w[0], step_of(0), m[0],
                                                                           stats_of(0));
    GSZ_CUDA_LAUNCHED("ssim_first_axis_kernel");
    ext[0] = m[0];
    int cur = 0;
    for (int a = 1; a < 4; ++a) {
        if (g.n[a] == 1) continue;
        uint64_t inner = 1, outer = 1;
        for (int b = 0; b < a; ++b) inner *= ext[b];
        for (int b = a + 1; b < 4; ++b) outer *= ext[b];
        for (int k = 0; k < kStats; ++k) bufs[1 - cur][k].allocate(inner * m[a] * outer, s);
        ssim_axis_kernel<<<blocks_for(inner * m[a] * outer), kThreads, 0, s>>>(stats_of(cur), ext[a], inner, outer,
                                                                               w[a], step_of(a), m[a], stats_of(1 - cur));
        GSZ_CUDA_LAUNCHED("ssim_axis_kernel");
        for (int k = 0; k < kStats; ++k) bufs[cur][k].release();
        ext[a] = m[a];
        cur = 1 - cur;
    }
    const unsigned ctas = blocks_for(windows) < 4096 ? blocks_for(windows) : 4096;
    cuda::DeviceBuffer<double> d_part(ctas, s);
    ssim_mean_kernel<<<ctas, kThreads, 0, s>>>(stats_of(cur), windows, count, d_part.data());
    GSZ_CUDA_LAUNCHED("ssim_mean_kernel");
    std::vector<double> part;
    cuda::copy_to_host(part, d_part.data(), ctas, s);
    double total = 0;
    for (double v : part) total += v;
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

constexpr int kLagBatch = 32;  // lags per pass over the error field, past kTileLags

// Per chunk (a CTA: kChunk elements, as the CPU cuts them) and lag of a batch:
// the sum over the pairs (i, i + d*stride) inside the axis (extent along it)
// of (e_i - mean)(e_j - mean).  The coordinate along the axis is carried from
// element to element (the thread strides by kThreads = q_mod lines of the
// axis plus r_inner elements) rather than divided out.
__global__ void __launch_bounds__(kThreads)
    autocorr_kernel(const double* __restrict__ e, uint64_t n, double mean, uint64_t stride, uint64_t extent,
                    uint64_t q_mod, uint64_t r_inner, uint32_t first_lag, uint32_t lags, double* __restrict__ partials) {
    const uint64_t begin = blockIdx.x * kChunk, end = begin + kChunk < n ? begin + kChunk : n;
    double acc[kLagBatch] = {};
    uint64_t i = begin + threadIdx.x;
    uint64_t inner = i % stride, coord = (i / stride) % extent;
    for (; i < end; i += kThreads) {
        const double a = e[i] - mean;
#pragma unroll
        for (int l = 0; l < kLagBatch; ++l) {
            const uint64_t d = first_lag + l;
            if (static_cast<uint32_t>(l) < lags && coord + d < extent) acc[l] += a * (e[i + d * stride] - mean);
        }
        inner += r_inner, coord += q_mod;
        if (inner >= stride) inner -= stride, ++coord;
        if (coord >= extent) coord -= extent;
    }
    using Reduce = cub::BlockReduce<double, kThreads>;
    __shared__ typename Reduce::TempStorage storage;
#pragma unroll
    for (int l = 0; l < kLagBatch; ++l) {
        const double total = Reduce(storage).Sum(acc[l]);
        if (threadIdx.x == 0) partials[blockIdx.x * uint64_t{kLagBatch} + l] = total;
        __syncthreads();
    }
}

// Up to kTileLags lags, the pairs come from shared-memory tiles of (e - mean),
// each element read from memory about once a direction instead of once a lag.
// A tile covers a stretch of positions along the axis plus the kTileLags
// that follow (zeros past the line's end, which add nothing).  CTAs stride
// over the tiles and keep one partial per lag.
constexpr int kTileLags = 128;
constexpr int kRowPositions = 2048;  // stride 1: positions per tile
constexpr int kColPositions = 128;   // stride > 1: positions per tile, for 32 neighbouring columns

// Stride 1 (the flattened array, axis 0): a tile is one stretch of a line;
// thread t takes lag t % 128 + 1 over half of the stretch.
__global__ void __launch_bounds__(kThreads)
    autocorr_rows_kernel(const double* __restrict__ e, double mean, uint64_t extent, uint64_t lines, uint32_t lags,
                         double* __restrict__ partials) {
    __shared__ double a[kRowPositions + kTileLags];
    __shared__ double other_half[kTileLags];
    const uint32_t d = threadIdx.x % kTileLags + 1, half = threadIdx.x / kTileLags;
    const uint64_t tiles_per_line = (extent + kRowPositions - 1) / kRowPositions, tiles = tiles_per_line * lines;
    double acc = 0;
    for (uint64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const uint64_t line = t / tiles_per_line, c0 = (t % tiles_per_line) * kRowPositions;
        const double* src = e + line * extent;
        const uint32_t valid = static_cast<uint32_t>(extent - c0 < kRowPositions ? extent - c0 : kRowPositions);
        __syncthreads();  // the last tile is done with
        for (uint32_t k = threadIdx.x; k < valid + lags; k += kThreads) a[k] = c0 + k < extent ? src[c0 + k] - mean : 0.0;
        __syncthreads();
        if (d <= lags) {
            const uint32_t mid = (valid + 1) / 2, begin = half ? mid : 0, end = half ? valid : mid;
            for (uint32_t k = begin; k < end; ++k) acc += a[k] * a[k + d];
        }
    }
    if (half == 1) other_half[d - 1] = acc;
    __syncthreads();
    if (half == 0) partials[blockIdx.x * uint64_t{kTileLags} + d - 1] = acc + other_half[d - 1];
}

// Stride > 1: a tile is kColPositions positions of 32 neighbouring columns
// (consecutive inner indices, so loads coalesce); warp w takes lags w + 1,
// w + 9, ... for its lane's column, then the lanes' sums are added.
constexpr int kColLagsPerThread = kTileLags / (kThreads / 32);

__global__ void __launch_bounds__(kThreads)
    autocorr_columns_kernel(const double* __restrict__ e, double mean, uint64_t stride, uint64_t extent,
                            uint64_t outer, uint32_t lags, double* __restrict__ partials) {
    extern __shared__ double tile[];  // [kColPositions + lags][32]
    const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const uint64_t col_tiles = (stride + 31) / 32, pos_tiles = (extent + kColPositions - 1) / kColPositions;
    const uint64_t tiles = outer * pos_tiles * col_tiles;
    double acc[kColLagsPerThread] = {};
    for (uint64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const uint64_t jt = t % col_tiles, ct = (t / col_tiles) % pos_tiles, o = t / (col_tiles * pos_tiles);
        const uint64_t j0 = jt * 32, c0 = ct * kColPositions;
        const uint32_t valid = static_cast<uint32_t>(extent - c0 < kColPositions ? extent - c0 : kColPositions);
        __syncthreads();
        for (uint32_t k = threadIdx.x; k < (valid + lags) * 32; k += kThreads) {
            const uint64_t c = c0 + k / 32, j = j0 + k % 32;
            tile[k] = c < extent && j < stride ? e[(o * extent + c) * stride + j] - mean : 0.0;
        }
        __syncthreads();
        for (uint32_t k = 0; k < valid; ++k) {
            const double v = tile[k * 32 + lane];
#pragma unroll
            for (int m = 0; m < kColLagsPerThread; ++m) {
                const uint32_t d = warp + 1 + m * (kThreads / 32);
                if (d <= lags) acc[m] += v * tile[(k + d) * 32 + lane];
            }
        }
    }
#pragma unroll
    for (int m = 0; m < kColLagsPerThread; ++m) {
        double v = acc[m];
        for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
        const uint32_t d = warp + 1 + m * (kThreads / 32);
        if (lane == 0) partials[blockIdx.x * uint64_t{kTileLags} + d - 1] = v;
    }
}

template <class T>
void autocorr_cuda(const T* x, const T* y, const Grid& g, const Options& o, Result& r, cudaStream_t s) {
    const uint64_t n = g.n[0] * g.n[1] * g.n[2] * g.n[3];
    const unsigned ctas = blocks_for(n) < 2048 ? blocks_for(n) : 2048;
    const uint64_t chunks = (n + kChunk - 1) / kChunk;
    GSZ_CHECK(chunks < (1u << 31), GSZ_STATUS_INVALID_ARGUMENT, "assess: array too large for one launch");
    cuda::DeviceBuffer<double> e(n, s), part(std::max<uint64_t>(chunks * kLagBatch, ctas), s), tiled;
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
        if (max_lag <= static_cast<uint32_t>(kTileLags)) {
            unsigned tiled_ctas;
            if (stride == 1) {
                tiled_ctas = resident_ctas(autocorr_rows_kernel, kThreads, 0);
                tiled.allocate(size_t{tiled_ctas} * kTileLags, s);
                autocorr_rows_kernel<<<tiled_ctas, kThreads, 0, s>>>(e.data(), mean, extent, n / extent, max_lag, tiled.data());
                GSZ_CUDA_LAUNCHED("autocorr_rows_kernel");
            } else {
                const size_t bytes = size_t{kColPositions + max_lag} * 32 * sizeof(double);
                GSZ_CUDA(cudaFuncSetAttribute(autocorr_columns_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              static_cast<int>(bytes)));
                tiled_ctas = resident_ctas(autocorr_columns_kernel, kThreads, bytes);
                tiled.allocate(size_t{tiled_ctas} * kTileLags, s);
                autocorr_columns_kernel<<<tiled_ctas, kThreads, bytes, s>>>(e.data(), mean, stride, extent,
                                                                      n / (extent * stride), max_lag, tiled.data());
                GSZ_CUDA_LAUNCHED("autocorr_columns_kernel");
            }
            std::vector<double> p;
            cuda::copy_to_host(p, tiled.data(), size_t{tiled_ctas} * kTileLags, s);
            for (uint32_t l = 0; l < max_lag; ++l) {
                double sum = 0;
                for (unsigned c = 0; c < tiled_ctas; ++c) sum += p[size_t{c} * kTileLags + l];
                ac[l] = autocorr_of(sum, l + 1, extent, n, var);
            }
            return ac;
        }
        // More lags: batches of kLagBatch, each a pass over the field.
        const uint64_t q_mod = (kThreads / stride) % extent, r_inner = kThreads % stride;
        for (uint32_t first = 1; first <= max_lag; first += kLagBatch) {
            const uint32_t lags = max_lag - first + 1 < kLagBatch ? max_lag - first + 1 : kLagBatch;
            autocorr_kernel<<<static_cast<unsigned>(chunks), kThreads, 0, s>>>(e.data(), n, mean, stride, extent, q_mod,
                                                                              r_inner, first, lags, part.data());
            GSZ_CUDA_LAUNCHED("autocorr_kernel");
            std::vector<double> p;
            cuda::copy_to_host(p, part.data(), chunks * kLagBatch, s);
            for (uint32_t l = 0; l < lags; ++l) {
                double sum = 0;
                for (uint64_t c = 0; c < chunks; ++c) sum += p[c * kLagBatch + l];
                ac[first + l - 1] = autocorr_of(sum, first + l, extent, n, var);
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
    const Grid g = make_grid(sh);
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
