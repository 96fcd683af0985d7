// Full tiles of the default 2-D and 3-D geometries (interp_math.hpp), with the
// tile extents, the dimension order and so every stage's point set, stride and
// spline case known at compile time.  The generic kernels (interp_cuda.cu)
// spend ~480 instructions per point on runtime divisions, 64-bit indexing and
// clipping that a full tile does not need; here a stage point costs its
// neighbours, the spline and the quantizer.  Tiles at the array's far edges
// (missing their far face or part of the tile) stay with the generic kernels.
// The per-point math is interp_math.hpp's, so the codes are the CPU's.
#pragma once

#include "predict/interp/interp_math.hpp"

#include <cstdint>
#include <type_traits>
#include <utility>

namespace gsz::predict::full_tile {

template <uint32_t Rank>
struct Geometry;

template <>
struct Geometry<3> {
    static constexpr InterpGeometry g = kInterpGeometry3d;
    // 4 warps per tile: the stages fill more of the block's rounds than with
    // 8 (77% against 65% of the thread slots) and a barrier waits on fewer warps.
    static constexpr uint32_t rank = 3, threads = 128, min_blocks = 12;
};

template <>
struct Geometry<2> {
    static constexpr InterpGeometry g = kInterpGeometry2d;
    static constexpr uint32_t rank = 2, threads = 128, min_blocks = 12;
};

template <class G>
struct Shape {
    static constexpr uint32_t rank = G::rank, S = G::g.stride;
    static constexpr uint32_t tile0 = G::g.tile[0], tile1 = G::g.tile[1], tile2 = G::g.tile[2];
    static constexpr uint32_t w0 = tile0 + 1, w1 = tile1 + 1, w2 = rank == 3 ? tile2 + 1 : 1;
    static constexpr uint32_t ws_size = w0 * w1 * w2, tile_points = tile0 * tile1 * tile2;
    __host__ __device__ static constexpr uint32_t ws_stride(uint32_t d) { return d == 0 ? 1 : d == 1 ? w0 : w0 * w1; }
    __host__ __device__ static constexpr uint32_t tile(uint32_t d) { return d == 0 ? tile0 : d == 1 ? tile1 : tile2; }
    __host__ __device__ static constexpr uint32_t levels() {
        uint32_t l = 0;
        while ((1u << l) < S) ++l;
        return l;
    }
};

// A dimension order as a template argument: order[k] in bits 2k..2k+1.
__host__ __device__ constexpr uint32_t order_code(uint32_t a, uint32_t b, uint32_t c) { return a | b << 2 | c << 4; }
__host__ __device__ constexpr uint32_t order_at(uint32_t code, uint32_t k) { return (code >> (2 * k)) & 3; }
__host__ __device__ constexpr uint32_t order_position(uint32_t code, uint32_t d) {
    return order_at(code, 0) == d ? 0 : order_at(code, 1) == d ? 1 : 2;
}

// The points of stage k of level u, as interp_stage builds them for a
// workspace whose inclusive extents are the tile extents.
struct StageShape {
    uint32_t dim = 0, first[3] = {0, 0, 0}, step[3] = {0, 0, 0}, count[3] = {1, 1, 1}, total = 1;
};

template <class G>
__host__ __device__ constexpr StageShape stage_shape(uint32_t code, uint32_t k, uint32_t u) {
    using Sh = Shape<G>;
    StageShape s;
    s.dim = order_at(code, k);
    for (uint32_t d = 0; d < G::rank; ++d) {
        const uint32_t j = order_position(code, d), L = Sh::tile(d);
        if (j == k) {
            s.first[d] = u;
            s.step[d] = 2 * u;
            s.count[d] = (L / u + 1) / 2;
        } else if (j < k) {
            s.step[d] = u;
            s.count[d] = L / u + 1;
        } else {
            s.step[d] = 2 * u;
            s.count[d] = L / (2 * u) + 1;
        }
        s.total *= s.count[d];
    }
    return s;
}

template <uint32_t... I, class F>
__host__ __device__ __forceinline__ void static_for(std::integer_sequence<uint32_t, I...>, F&& f) {
    (f(std::integral_constant<uint32_t, I>{}), ...);
}

// Calls f(ws_offset, along) for this thread's points of stage K of the level
// with stride U: the stage's points are spread over the block, point i to
// thread i mod blockDim; every divisor is a constant.  Not unrolled: the
// kernels hold every stage of every level, and unrolled rounds overflow the
// instruction cache (ncu: 16% of the stalls waiting for instructions).
template <class G, uint32_t Code, uint32_t K, uint32_t U, class F>
__device__ __forceinline__ void for_each_stage_point(F&& f) {
    using Sh = Shape<G>;
    constexpr StageShape s = stage_shape<G>(Code, K, U);
#pragma unroll 1
    for (uint32_t i = threadIdx.x; i < s.total; i += G::threads) {
        const uint32_t i0 = i % s.count[0], rest = i / s.count[0];
        const uint32_t c0 = s.first[0] + i0 * s.step[0];
        const uint32_t c1 = s.first[1] + (rest % s.count[1]) * s.step[1];
        const uint32_t c2 = s.first[2] + (rest / s.count[1]) * s.step[2];
        const uint32_t along = s.dim == 0 ? c0 : s.dim == 1 ? c1 : c2;
        f(c0 + c1 * Sh::ws_stride(1) + c2 * Sh::ws_stride(2), along);
    }
}

// The prediction of a stage point: in a full tile every point has its +u
// neighbour (p is an odd multiple of u below the extent, an even multiple), so
// only the -3u and +3u neighbours depend on where the point sits.  Guard:
// whether the jump guard's tests run (a tile or archive where it cannot or
// did not decide anything skips them); `taken` as interp_spline's.
template <class T, uint32_t NS, uint32_t U, uint32_t Extent, bool Guard>
__device__ __forceinline__ double predict_full(const T* at, uint32_t p, uint32_t spline, double jump,
                                               float jump_below, bool& taken) {
    const bool has_a = p >= 3 * U, has_d = p + 3 * U <= Extent;
    // The reads a case does not use stay on the line (the value is ignored).
    const T ta = at[has_a ? -3 * static_cast<int32_t>(NS) : -static_cast<int32_t>(NS)];
    const T tb = at[-static_cast<int32_t>(NS)], tc = at[NS], td = at[has_d ? 3 * NS : NS];
    if constexpr (sizeof(T) == 4) {
        // One test for the four: a sum of magnitudes that is finite has finite
        // terms (NaN and Inf, rare, go through interp_neighbour one by one).
        if (::fabsf(ta) + ::fabsf(tb) + ::fabsf(tc) + ::fabsf(td) <= 3.4028234663852886e38f) {
            if constexpr (Guard) {
                // The jump guard's test in float first (interp_jump_below_f32):
                // the double one only where a float difference comes near the threshold.
                const float steps = ::fmaxf(::fabsf(tb - tc), ::fmaxf(has_a ? ::fabsf(ta - tb) : 0.0f,
                                                                     has_d ? ::fabsf(tc - td) : 0.0f));
                if (steps > jump_below) return interp_spline(ta, tb, tc, td, has_a, true, has_d, spline, jump, &taken);
            }
            return interp_spline_unguarded(ta, tb, tc, td, has_a, true, has_d, spline);
        }
    }
    const double a = interp_neighbour(ta), b = interp_neighbour(tb), c = interp_neighbour(tc),
                 d = interp_neighbour(td);
    if constexpr (Guard) return interp_spline(a, b, c, d, has_a, true, has_d, spline, jump, &taken);
    return interp_spline_unguarded(a, b, c, d, has_a, true, has_d, spline);
}

// Whether a tile may skip the jump guard's tests, decided while its
// workspace loads.  Each thread keeps the extremes of the values it loads (two
// NaN-propagating min/max per value).  The cheap test: every value lies
// within h of one reference r that all threads read (the value at the tile's
// origin), so no two differ by more than 2h, which interp_quiet_half_span
// chose so that no test can be taken; subtractions rounded up, combined by the
// barrier that ends the load (__syncthreads_or).  It is up to twice too strict
// (r need not be mid-span), so a tile it fails takes the exact one: the
// block's extremes, which every warp published before that barrier, against
// interp_jump_quiet.  A NaN or Inf among the values (or as r) fails both: such
// a tile is coded with the tests, never wrongly without them.
template <class T>
struct LoadSpan {
    // Shared memory for publish: 2 per warp (float: order-preserving integer keys).
    using Slot = std::conditional_t<sizeof(T) == 4, int32_t, double>;
    T lo = static_cast<T>(HUGE_VAL), hi = static_cast<T>(-HUGE_VAL);
    __device__ __forceinline__ void add(T v) {
        if constexpr (sizeof(T) == 4) {
            asm("min.NaN.f32 %0, %1, %2;" : "=f"(lo) : "f"(lo), "f"(v));
            asm("max.NaN.f32 %0, %1, %2;" : "=f"(hi) : "f"(hi), "f"(v));
        } else {
            lo = v < lo || v != v ? v : lo;
            hi = v > hi || v != v ? v : hi;
        }
    }
    // Whether every value added lies within h of r (false for NaN).
    __device__ __forceinline__ bool within(T r, T h) const {
        if constexpr (sizeof(T) == 4) return __fsub_ru(hi, r) <= h && __fsub_ru(r, lo) <= h;
        else return __dsub_ru(hi, r) <= h && __dsub_ru(r, lo) <= h;
    }
    // The warp's extremes into slots (all lanes call it; NaN as -+Inf).
    __device__ __forceinline__ void publish(Slot* slots) const {
        const bool nan = lo != lo || hi != hi;
        const T l = nan ? static_cast<T>(-HUGE_VAL) : lo, h = nan ? static_cast<T>(HUGE_VAL) : hi;
        Slot sl, sh;
        if constexpr (sizeof(T) == 4) {
            sl = __reduce_min_sync(~0u, key(l)), sh = __reduce_max_sync(~0u, key(h));
        } else {
            sl = l, sh = h;
#pragma unroll
            for (int k = 16; k > 0; k /= 2) {
                sl = ::fmin(sl, __shfl_xor_sync(~0u, sl, k));
                sh = ::fmax(sh, __shfl_xor_sync(~0u, sh, k));
            }
        }
        if (threadIdx.x % 32 == 0) slots[2 * (threadIdx.x / 32)] = sl, slots[2 * (threadIdx.x / 32) + 1] = sh;
    }
    // The exact test over the block's published extremes.
    static __device__ __forceinline__ bool quiet(const Slot* slots, uint32_t warps, double eb, double jump) {
        Slot sl = slots[0], sh = slots[1];
        for (uint32_t w = 1; w < warps; ++w) sl = min(sl, slots[2 * w]), sh = max(sh, slots[2 * w + 1]);
        if constexpr (sizeof(T) == 4) return interp_jump_quiet(value(sl), value(sh), eb, jump);
        else return interp_jump_quiet(sl, sh, eb, jump);
    }

private:
    // A float's bits as an int that orders as the float does (NaN aside), and back.
    static __device__ __forceinline__ int32_t key(float v) {
        const int32_t b = __float_as_int(v);
        return b ^ ((b >> 31) & 0x7fffffff);
    }
    static __device__ __forceinline__ double value(int32_t k) { return __int_as_float(k ^ ((k >> 31) & 0x7fffffff)); }
};

// Every stage of every level, coarsest first, a barrier after each stage:
// stage(K, U, level) with K and U compile-time.
template <class G, class F>
__device__ __forceinline__ void for_each_stage(F&& stage) {
    using Sh = Shape<G>;
    constexpr uint32_t levels = Sh::levels();
    static_for(std::make_integer_sequence<uint32_t, levels>{}, [&](auto li) {
        constexpr uint32_t l = levels - 1 - decltype(li)::value;
        static_for(std::make_integer_sequence<uint32_t, G::rank>{}, [&](auto k) {
            stage(std::integral_constant<uint32_t, decltype(k)::value>{}, std::integral_constant<uint32_t, 1u << l>{},
                  l);
            __syncthreads();
        });
    });
}

// Every stage point of a full tile, coarsest level first, a barrier after each
// stage: f(w, pred, lq) with point w's prediction from the workspace ws (Guard
// and taken as predict_full's) and its level's quantizer.  Cfg holds the
// level quantizers, splines per dim and the guard's threshold and pre-test.
template <class G, uint32_t Code, bool Guard, class T, class Cfg, class F>
__device__ __forceinline__ void predict_stages(const T* ws, const Cfg& cfg, bool& taken, F&& f) {
    using Sh = Shape<G>;
    for_each_stage<G>([&](auto k, auto u, uint32_t l) {
        constexpr uint32_t dim = order_at(Code, decltype(k)::value), U = decltype(u)::value;
        constexpr uint32_t NS = U * Sh::ws_stride(dim);
        const InterpLevelQuant lq = cfg.level[l];
        const uint32_t spline = cfg.spline[dim];
        for_each_stage_point<G, Code, decltype(k)::value, U>([&](uint32_t w, uint32_t along) {
            f(w, predict_full<T, NS, U, Sh::tile(dim), Guard>(ws + w, along, spline, cfg.jump, cfg.jump_below, taken),
              lq);
        });
    });
}

// The box of full tile k (interp_math.hpp's tile maps) with the geometry's extents.
template <class G>
__device__ __forceinline__ InterpLayout::TileBox full_tile_box(const InterpLayout& L, uint32_t k) {
    using Sh = Shape<G>;
    return interp_full_tile_box<G::rank>(L, k, Sh::tile0, Sh::tile1, Sh::tile2);
}

// Fills the workspace: write(ws_offset, read(global_index)) for every point
// but the anchors, then anchor(ws_offset, anchor_index) for the anchors.  A
// warp per row, its lanes along it; the reads of several rows are issued
// before their writes, so a warp waits on a batch of loads at once.  Any thread may take any point:
// the caller puts a barrier after.
template <class G, class Read, class Write, class Anchor>
__device__ __forceinline__ void load_workspace(const InterpLayout& L, const InterpLayout::TileBox& box, Read&& read,
                                               Write&& write, Anchor&& anchor) {
    using Sh = Shape<G>;
    using V = decltype(read(uint64_t{0}));
    constexpr uint32_t warps = G::threads / 32, rows = Sh::w1 * Sh::w2;
    constexpr uint32_t rounds = (rows + warps - 1) / warps, per_row = (Sh::w0 + 31) / 32;
    static_assert(warps < Sh::w1, "a row step wraps at most once");
    const uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const auto take = [&](uint32_t round, uint32_t j) {   // row warp + round·warps, x = lane + 32·j
        const uint32_t r = round * warps + warp, x = lane + 32 * j;
        const uint32_t c1 = r % Sh::w1, c2 = r / Sh::w1;
        return (rows % warps == 0 || r < rows) && x < Sh::w0 && !(x % Sh::S == 0 && c1 % Sh::S == 0 && c2 % Sh::S == 0);
    };
    const uint64_t row = L.dims[0], plane = L.dims[0] * L.dims[1];
    // The warp's next row is `warps` rows on: the same plane, or the next one when c1 wraps.
    uint32_t c1 = warp;
    uint64_t g_row = box.origin[2] * plane + (box.origin[1] + c1) * row + box.origin[0];
    const uint64_t step_same = warps * row, step_wrap = plane - (Sh::w1 - warps) * row;
    // Batches of rounds: the loads of a batch in flight together, in registers.
    constexpr uint32_t batch = 6;
#pragma unroll
    for (uint32_t b = 0; b < rounds; b += batch) {
        V v[batch][per_row];
#pragma unroll
        for (uint32_t round = b; round < b + batch && round < rounds; ++round) {
#pragma unroll
            for (uint32_t j = 0; j < per_row; ++j)
                if (take(round, j)) v[round - b][j] = read(g_row + lane + 32 * j);
            c1 += warps;
            const bool wrap = c1 >= Sh::w1;
            c1 = wrap ? c1 - Sh::w1 : c1;
            g_row += wrap ? step_wrap : step_same;
        }
#pragma unroll
        for (uint32_t round = b; round < b + batch && round < rounds; ++round)
#pragma unroll
            for (uint32_t j = 0; j < per_row; ++j)
                if (take(round, j)) write((round * warps + warp) * Sh::w0 + lane + 32 * j, v[round - b][j]);
    }
    // The anchors: (tile / S + 1) per used dim.
    constexpr uint32_t a0 = Sh::tile0 / Sh::S + 1, a1 = Sh::tile1 / Sh::S + 1, a2 = Sh::rank == 3 ? Sh::tile2 / Sh::S + 1 : 1;
    static_assert(a0 * a1 * a2 <= G::threads, "one anchor per thread");
    if (threadIdx.x < a0 * a1 * a2) {
        const uint32_t i0 = threadIdx.x % a0, i1 = threadIdx.x / a0 % a1, i2 = threadIdx.x / (a0 * a1);
        const uint64_t a = ((box.origin[2] / Sh::S + i2) * L.anchor_dims[1] + box.origin[1] / Sh::S + i1) *
                               L.anchor_dims[0] +
                           box.origin[0] / Sh::S + i0;
        anchor((i0 + i1 * Sh::w0 + i2 * Sh::w0 * Sh::w1) * Sh::S, a);
    }
}

// Calls f(k, ws_offset, global_index, x, y, z) for every point the tile
// owns, a warp per row of the tile; k numbers this thread's points from 0.
// Unroll: how many of a thread's rows a loop round takes (0: all of them);
// a pass that holds little per point takes a few, enough to keep loads in
// flight (all of them, the addresses of every point stay live and spill).
template <class G, uint32_t Unroll = 0, class F>
__device__ __forceinline__ void for_each_owned_point_at(const InterpLayout& L, const InterpLayout::TileBox& box,
                                                        F&& f) {
    using Sh = Shape<G>;
    constexpr uint32_t warps = G::threads / 32, rows = Sh::tile1 * Sh::tile2;
    static_assert(rows % warps == 0 && Sh::tile0 % 32 == 0, "whole rows per warp");
    const uint32_t lane = threadIdx.x % 32;
    const uint64_t row = L.dims[0], plane = L.dims[0] * L.dims[1];
    const uint64_t base = box.origin[2] * plane + box.origin[1] * row + box.origin[0];
    constexpr int unroll = Unroll ? Unroll : rows / warps;
#pragma unroll(unroll)
    for (uint32_t r0 = 0; r0 < rows; r0 += warps) {
        const uint32_t r = r0 + threadIdx.x / 32, c1 = r % Sh::tile1, c2 = r / Sh::tile1;
        const uint64_t g_row = base + c2 * plane + c1 * row;
        const uint32_t w_row = c1 * Sh::w0 + c2 * Sh::w0 * Sh::w1;
#pragma unroll
        for (uint32_t j = 0; j < Sh::tile0 / 32; ++j)
            f(r0 / warps * (Sh::tile0 / 32) + j, w_row + lane + 32 * j, g_row + lane + 32 * j, lane + 32 * j, c1, c2);
    }
}

// The points a thread takes in for_each_owned_point_at.
template <class G>
inline constexpr uint32_t kOwnedPerThread = Shape<G>::tile_points / G::threads;

// Calls f(ws_offset, global_index) for every point the tile owns, a warp per
// row of the tile.
template <class G, class F>
__device__ __forceinline__ void for_each_owned_point(const InterpLayout& L, const InterpLayout::TileBox& box, F&& f) {
    for_each_owned_point_at<G>(L, box, [&](uint32_t, uint32_t w, uint64_t g, uint32_t, uint32_t, uint32_t) { f(w, g); });
}

}  // namespace gsz::predict::full_tile
