// CUDA backend of the G-Interp predictor.  A thread block owns one tile: it
// loads the workspace (tile plus far faces) into shared memory, runs the
// stages with a barrier between them (the points of one stage never read each
// other), and writes back only the points it owns.  Encoding reads the input
// and writes codes; decoding reads codes, anchors and outliers and writes the
// output: no block reads what another block writes in the same launch.
#include "predict/interp/interp_cuda.hpp"

#include "predict/interp/interp_full_tile.cuh"
#include "runtime/cuda/cuda_check.hpp"
#include "runtime/status.hpp"

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <type_traits>

namespace gsz::predict {

namespace {

// What the kernels need of an InterpConfig, with the level quantizers derived.
struct KernelConfig {
    InterpLevelQuant level[kInterpMaxLevels];
    uint8_t order[3];
    uint8_t spline[3];
    double jump;        // jump guard threshold (interp_spline)
    float jump_below;   // its float pre-test (interp_jump_below_f32)
    // A tile whose values lie within this of its origin's skips the guard's
    // tests (interp_quiet_half_span; full_tile::LoadSpan), as float and double.
    float quiet_half_f;
    double quiet_half;
    // Lorenzo tiles (interp_lorenzo_tiles.hpp): the request, the finest
    // level's bound, the Lorenzo points' quantizer and the per-tile choices
    // (encoder: written; decoder: read), null where every tile is spline-coded.
    uint8_t tiles;
    double inv_eb0;
    QuantParams lorenzo;
    uint8_t* lorenzo_tiles;
    // kTilesAuto's gate (lorenzo_tiles_gate): where set, the generic phase
    // adds each tile's InterpGateSums (spline cost, saving) here.
    unsigned long long* gate;
    // The gate's sums, read by the main launches: where set, a tile takes the
    // Lorenzo phase only if they say it pays (lorenzo_phase), so the decision
    // stays on the device.
    const unsigned long long* gate_sums;
    FillValue fill;   // InterpConfig's: fill points take their prediction
    // Encoder with a fill value: what the stages load (the original values;
    // `data` then holds the stand-ins the Lorenzo phase codes), else null.
    const void* original;
};

// The encoders are compiled twice, Fill = whether the array has a fill value.
// Without one, the fill tests are constant-false and compile away: they had
// made the 3-D full-tile encoder 21% longer (4,800 -> 5,816 SASS instructions),
// and these kernels are issue-bound (bench/NOTES.md, session 56).
template <bool Fill>
__device__ __forceinline__ FillValue kernel_fill(const KernelConfig& cfg) {
    if constexpr (Fill) return cfg.fill;
    else return FillValue{};
}

// The values a tile's stages load: the original ones where a fill value has stand-ins.
template <bool Fill, class T>
__device__ __forceinline__ const T* stage_loads(const KernelConfig& cfg, const T* data) {
    if constexpr (Fill) return cfg.original ? static_cast<const T*>(cfg.original) : data;
    else return data;
}

// A load's value for the quiet test: a fill point's prediction is not
// bounded by the loaded values, so it makes the tile loud (NaN fails the test).
template <class T>
__device__ __forceinline__ T span_value(const FillValue& fill, T v) {
    return fill_holds(fill, v) ? static_cast<T>(NAN) : v;
}

// Whether the encoder's tiles take the Lorenzo phase (lorenzo_tile_encode).
__device__ __forceinline__ bool lorenzo_phase(const KernelConfig& cfg) {
    return cfg.lorenzo_tiles && (!cfg.gate_sums || interp_lorenzo_tiles_pay(InterpGateSums{cfg.gate_sums[0],
                                                                                           cfg.gate_sums[1]}));
}

KernelConfig kernel_config(const InterpLayout& L, const InterpConfig& cfg) {
    KernelConfig k{};
    for (uint32_t l = 0; l < L.num_levels; ++l) k.level[l] = InterpLevelQuant::from_bound(cfg.level_eb[l]);
    for (int d = 0; d < 3; ++d) {
        k.order[d] = cfg.order[d];
        k.spline[d] = cfg.spline[d];
    }
    k.jump = cfg.jump;
    k.jump_below = interp_jump_below_f32(cfg.jump);
    k.tiles = cfg.tiles;
    k.inv_eb0 = 1.0 / cfg.level_eb[0];
    k.lorenzo = QuantParams::from_bound(cfg.lorenzo_eb > 0 ? cfg.lorenzo_eb : cfg.level_eb[0], 0);
    k.lorenzo_tiles = nullptr;
    k.gate = nullptr;
    k.gate_sums = nullptr;
    k.fill = cfg.fill;
    k.original = nullptr;
    return k;
}

// kernel_config's with the quiet test's half span for bound eb.
KernelConfig kernel_config(const InterpLayout& L, const InterpConfig& cfg, double eb) {
    KernelConfig k = kernel_config(L, cfg);
    k.quiet_half = interp_quiet_half_span(cfg.jump, eb);
    k.quiet_half_f = interp_quiet_half_span_f32(k.quiet_half);
    return k;
}

template <class T>
__device__ __forceinline__ T quiet_half(const KernelConfig& cfg) {
    if constexpr (sizeof(T) == 4) return cfg.quiet_half_f;
    else return cfg.quiet_half;
}

// Edge tiles (edge_only) are mostly thin slabs whose stages hold few points
// each: smaller blocks keep more of them in flight per multiprocessor.
unsigned threads_for(const InterpLayout& L, bool edge_only) { return L.rank == 2 || edge_only ? 128 : 256; }

// Runs f(ws_offset, x, y, z) over the workspace points inside tile box
// `box` (its far faces where the array has them), a warp per row so the
// global accesses of a row are contiguous (one row: the block spreads over
// it).  Edge tiles are mostly thin slabs (wmagT's last tile along x is 7 of
// 32 wide): walking the whole workspace wasted most of their load.
template <class F>
__device__ void for_each_ws_point(const InterpLayout& L, const InterpLayout::TileBox& box, F&& f) {
    const uint32_t w0 = L.ws_extent(0), w1 = L.ws_extent(1);
    const uint32_t e0 = box.last[0] + 1, e1 = box.last[1] + 1, rows = e1 * (box.last[2] + 1);
    if (rows == 1) {
        for (uint32_t x = threadIdx.x; x < e0; x += blockDim.x) f(x, x, 0u, 0u);
        return;
    }
    const uint32_t lane = threadIdx.x % 32, warps = blockDim.x / 32;
    for (uint32_t r = threadIdx.x / 32; r < rows; r += warps) {
        const uint32_t y = r % e1, z = r / e1, row = (z * w1 + y) * w0;
        for (uint32_t x = lane; x < e0; x += 32) f(row + x, x, y, z);
    }
}

// Runs f(k, x, y, z) over the points tile box `box` owns (below the tile's
// extents and inside the array), spread over the block in raster order; k
// counts the calling thread's points (0, 1, ...).  Coordinates by
// multiply-high (InterpDivisor: owned points are fewer than 2^16).
template <class F>
__device__ void for_each_box_point(const InterpLayout& L, const InterpLayout::TileBox& box, F&& f) {
    const uint32_t e0 = min(box.last[0] + 1, L.tile[0]), e1 = min(box.last[1] + 1, L.tile[1]),
                   e2 = min(box.last[2] + 1, L.tile[2]);
    const InterpDivisor by0 = InterpDivisor::of(e0), by1 = InterpDivisor::of(e1);
    uint32_t k = 0;
    for (uint32_t i = threadIdx.x; i < e0 * e1 * e2; i += blockDim.x, ++k) {
        const uint32_t r = by0.divide(i), z = by1.divide(r);
        f(k, i - r * e0, r - z * e1, z);
    }
}

__device__ uint64_t raster_tile_id(const InterpLayout& L, const InterpLayout::TileBox& box) {
    return (box.origin[2] / L.tile[2] * L.grid[1] + box.origin[1] / L.tile[1]) * L.grid[0] + box.origin[0] / L.tile[0];
}

// A block's sum of v (every thread calls it; blockDim a multiple of 32, at
// most 32 warps): warp shuffles, then the warps' sums in shared memory.
__device__ unsigned long long block_sum(unsigned long long v, unsigned long long* scratch) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
    __syncthreads();
    unsigned long long s = 0;
    for (uint32_t k = 0; k < blockDim.x / 32; ++k) s += scratch[k];
    __syncthreads();   // scratch may be reused at once
    return s;
}

// Lorenzo tiles (interp_lorenzo_tiles.hpp), the encoder's side: after a
// tile's stages (ws: reconstructions, tile_codes: spline codes), the block
// computes the tile's Lorenzo codes, compares the two codings as the CPU does
// (integer sums, so the same choice), records it and, for a Lorenzo tile,
// replaces the Lorenzo points' codes.  A tile without Lorenzo points
// (interp_lorenzo_may_win) is left at once, one whose estimate (from the tile
// as loaded) says spline (interp_lorenzo_skip) next.
// The lattice values overwrite ws in place (int32 for float, whose lattice
// stays below 2^23; int64 for double).
template <class T>
__device__ void lorenzo_tile_encode(const T* __restrict__ data, const InterpLayout& L,
                                    const InterpLayout::TileBox& box, T* ws, uint16_t* tile_codes,
                                    const KernelConfig& cfg, uint64_t tile_id, int64_t radius) {
    using Q = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
    static_assert(sizeof(Q) == sizeof(T), "lattice values overwrite the workspace");
    __shared__ unsigned long long scratch[32];
    const QuantParams& qp = cfg.lorenzo;
    if (L.tile_points() > 16 * blockDim.x) __trap();   // q_own's size (the launches give at most 16 points a thread)
    const bool autos = interp_tiles_choose(cfg.tiles);
    // Sums two to a word: a tile's costs stay below 2^28 (2048 codes of at most
    // 96·256), its error units below 2^35, its points below 2^12.
    constexpr int kHigh = 28;
    constexpr unsigned long long kLow = (1ull << kHigh) - 1;
    unsigned long long spline_cost = 0, spline_error = 0, n = 0;
    if (autos) {   // the spline's cost first: where Lorenzo cannot win, nothing else is computed
        unsigned long long cost_and_n = 0;
        for_each_box_point(L, box, [&](uint32_t, uint32_t x, uint32_t y, uint32_t z) {
            const uint32_t c[3] = {x, y, z};
            if (interp_lorenzo_point(L, box, c))
                cost_and_n += interp_code_cost(tile_codes[interp_ws_offset(L, c)], radius) + (1ull << kHigh);
        });
        cost_and_n = block_sum(cost_and_n, scratch);
        spline_cost = cost_and_n & kLow;
        n = cost_and_n >> kHigh;
        if (cfg.gate && threadIdx.x == 0) atomicAdd(cfg.gate, spline_cost);
        if (!interp_lorenzo_may_win(spline_cost, n)) {
            if (threadIdx.x == 0) cfg.lorenzo_tiles[tile_id] = 0;
            return;
        }
        // The estimate (interp_lorenzo_skip): most tiles end here.
        unsigned long long estimate = 0;
        for_each_box_point(L, box, [&](uint32_t, uint32_t x, uint32_t y, uint32_t z) {
            const uint32_t c[3] = {x, y, z};
            if (interp_lorenzo_point(L, box, c))
                estimate += interp_lorenzo_estimate(data, L.global_index(box.origin, c), ws, interp_ws_offset(L, c),
                                                    c, L, qp.r);
        });
        if (interp_lorenzo_skip(spline_cost, block_sum(estimate, scratch))) {
            if (threadIdx.x == 0) cfg.lorenzo_tiles[tile_id] = 0;
            return;
        }
    }
    // Lattice values, and the spline's error while ws holds the reconstructions.
    Q q_own[16];   // this thread's points' lattice values, written after a barrier
    for_each_box_point(L, box, [&](uint32_t k, uint32_t x, uint32_t y, uint32_t z) {
        const uint32_t c[3] = {x, y, z};
        const uint32_t w = interp_ws_offset(L, c);
        const bool mine = interp_lorenzo_point(L, box, c);
        const T v = mine ? data[L.global_index(box.origin, c)] : ws[w];
        if (mine && autos) spline_error += interp_error_units(v, ws[w], tile_codes[w], cfg.inv_eb0);
        q_own[k] = static_cast<Q>(interp_lattice(v, qp.r));
    });
    bool lorenzo = cfg.tiles == kTilesLorenzo;
    if (autos) {
        spline_error = block_sum(spline_error, scratch);   // its barrier: every reconstruction read
    } else {
        __syncthreads();   // every reconstruction read: ws takes the lattice values
    }
    Q* q = reinterpret_cast<Q*>(ws);
    for_each_box_point(L, box, [&](uint32_t k, uint32_t x, uint32_t y, uint32_t z) {
        const uint32_t c[3] = {x, y, z};
        q[interp_ws_offset(L, c)] = q_own[k];
    });
    __syncthreads();
    const uint32_t s1 = L.ws_stride(1), s2 = L.ws_stride(2);
    const auto code_at = [&](uint32_t w, const uint32_t* c, T x) {
        int64_t own;
        const bool ok = quantize(x, qp, own);
        return ok ? lorenzo_code(own - interp_lorenzo_prediction(L.rank, c, w, s1, s2, q), radius) : uint16_t{0};
    };
    if (autos) {
        unsigned long long cost_and_error = 0;
        for_each_box_point(L, box, [&](uint32_t, uint32_t x0, uint32_t y0, uint32_t z0) {
            const uint32_t c[3] = {x0, y0, z0};
            if (!interp_lorenzo_point(L, box, c)) return;
            const uint32_t w = interp_ws_offset(L, c);
            const T x = data[L.global_index(box.origin, c)];
            const uint16_t code = code_at(w, c, x);
            cost_and_error += interp_code_cost(code, radius) +
                              (static_cast<unsigned long long>(
                                   interp_error_units(x, lattice_value<T>(q[w], qp.ebx2), code, cfg.inv_eb0))
                               << kHigh);
        });
        cost_and_error = block_sum(cost_and_error, scratch);
        lorenzo = interp_prefer_lorenzo(spline_cost, cost_and_error & kLow, spline_error, cost_and_error >> kHigh, n);
        if (cfg.gate && lorenzo && threadIdx.x == 0) atomicAdd(cfg.gate + 1, spline_cost - (cost_and_error & kLow));
    }
    if (threadIdx.x == 0) cfg.lorenzo_tiles[tile_id] = lorenzo;
    if (!lorenzo) return;
    for_each_box_point(L, box, [&](uint32_t, uint32_t x, uint32_t y, uint32_t z) {
        const uint32_t c[3] = {x, y, z};
        if (!interp_lorenzo_point(L, box, c)) return;
        const uint32_t w = interp_ws_offset(L, c);
        tile_codes[w] = code_at(w, c, data[L.global_index(box.origin, c)]);
    });
    __syncthreads();
}

// A Lorenzo prediction from the lattice values of a workspace holding them,
// in Q's width (int32 for float: |q| < 2^23, so every sum is exact and equals
// interp_lorenzo_prediction's); backward neighbours at local coordinate -1
// count 0.
template <uint32_t Rank, uint32_t S1, uint32_t S2, class Q>
__device__ __forceinline__ Q lorenzo_prediction_q(const Q* q, uint32_t w, bool x, bool y, bool z) {
    using U = std::make_unsigned_t<Q>;
    const auto at = [&](bool has, uint32_t back) -> U { return has ? static_cast<U>(q[w - back]) : U{0}; };
    if constexpr (Rank == 2) return static_cast<Q>(at(x, 1) + at(y, S1) - at(x && y, 1 + S1));
    else
        return static_cast<Q>(at(x, 1) + at(y, S1) + at(z, S2) - at(x && y, 1 + S1) - at(x && z, 1 + S2) -
                              at(y && z, S1 + S2) + at(x && y && z, 1 + S1 + S2));
}

// Sums of a full tile's block: two per-thread values below 2^28 each (a
// thread holds at most 16 points of at most 2^24 error units or 2^14 cost
// units), every lane's by the warp's integer reductions in 16-bit halves
// (exact), then the warps' from shared memory.  Each call its own slots of
// scratch, so one barrier suffices.
template <uint32_t Warps>
__device__ __forceinline__ void full_tile_sum2(uint32_t& a, uint32_t& b, unsigned long long* slots,
                                               unsigned long long& sum_a, unsigned long long& sum_b) {
    const uint32_t a_lo = __reduce_add_sync(~0u, a & 0xffffu), a_hi = __reduce_add_sync(~0u, a >> 16);
    const uint32_t b_lo = __reduce_add_sync(~0u, b & 0xffffu), b_hi = __reduce_add_sync(~0u, b >> 16);
    if (threadIdx.x % 32 == 0) {
        slots[threadIdx.x / 32] = (static_cast<unsigned long long>(a_hi) << 16) + a_lo;
        slots[Warps + threadIdx.x / 32] = (static_cast<unsigned long long>(b_hi) << 16) + b_lo;
    }
    __syncthreads();
    sum_a = sum_b = 0;
#pragma unroll
    for (uint32_t k = 0; k < Warps; ++k) sum_a += slots[k], sum_b += slots[Warps + k];
}

// Whether local point (x, y, z) of a full tile is one of its Lorenzo points
// (interp_lorenzo_point with the geometry's constants).
template <class G>
__device__ __forceinline__ bool full_tile_lorenzo_point(const InterpLayout::TileBox& box, uint32_t x, uint32_t y,
                                                        uint32_t z) {
    const bool anchor = (x | y | z) % full_tile::Shape<G>::S == 0;
    return !anchor && !(x == 0 && box.origin[0] > 0) && !(y == 0 && box.origin[1] > 0) &&
           !(z == 0 && box.origin[2] > 0);
}

// The pre-test's estimate (interp_lorenzo_estimate_of) of a full tile, read
// from its workspace between the load and the first stage, where it holds
// what the estimate is defined on (original values, anchors at their start
// values): shared loads at constant strides instead of the array's.  A warp's
// sum goes to slots[warp] (below 2^32: 32 threads of at most 16 points of at
// most 96·256), which the phase reads after the stages' barriers; the block
// waits for every warp before the first stage overwrites the workspace.
// With a fill value the workspace holds the original values where the
// estimate is defined on the stand-ins (interp_lorenzo_estimate reads the
// encoder's `data`): a point that is not an anchor is read through
// fill_stand_in (a Lorenzo point never is one; anchors hold their start values).
template <class G, class T>
__device__ __forceinline__ void full_tile_lorenzo_estimate(const InterpLayout& L, const InterpLayout::TileBox& box,
                                                           const T* ws, double r, const FillValue& fill,
                                                           uint32_t* slots) {
    using Sh = full_tile::Shape<G>;
    constexpr uint32_t S1 = Sh::ws_stride(1), S2 = Sh::ws_stride(2);
    uint32_t estimate = 0;
    full_tile::for_each_owned_point_at<G, 1>(L, box, [&](uint32_t, uint32_t w, uint64_t, uint32_t x, uint32_t y,
                                                      uint32_t z) {
        if (!full_tile_lorenzo_point<G>(box, x, y, z)) return;
        const uint32_t c[3] = {x, y, z};
        const auto at = [&](bool has, uint32_t dx, uint32_t dy, uint32_t dz) -> T {
            if (!has) return T(0);
            const T v = ws[w - dx - dy * S1 - dz * S2];
            if (!fill.on) return v;
            const bool anchor = (x - dx) % Sh::S == 0 && (y - dy) % Sh::S == 0 && (z - dz) % Sh::S == 0;
            return anchor ? v : fill_stand_in(fill, v);
        };
        estimate += interp_lorenzo_estimate_of(fill_stand_in(fill, ws[w]), c, G::rank, at, r);
    });
    estimate = __reduce_add_sync(~0u, estimate);
    if (threadIdx.x % 32 == 0) slots[threadIdx.x / 32] = estimate;
    __syncthreads();   // the first stage writes over what other warps read here
}

// lorenzo_tile_encode inside the full-tile kernels (after their last stage's
// barrier), with the geometry's extents as constants: the same sums and so the
// same choices, in passes over a thread's own points
// (full_tile::for_each_owned_point_at's, the order the caller writes codes in):
// (1) the spline's cost, then the estimate made at load (interp_lorenzo_skip),
// leaving where Lorenzo is not tried; (2) each point's
// lattice value, written over its own reconstruction (no other thread reads
// it), and the spline's error; (3) after a barrier, the Lorenzo codes' cost.
// Lorenzo's error only adds to its side of interp_prefer_lorenzo, so where
// the costs alone say spline (most tiles that lose) nothing more is computed;
// else (4) Lorenzo's error over its points on the lattice with a code (the
// bit of a point out of the radius, an exact outlier, was cleared in (3)).
// A Lorenzo tile's codes are formed again in a last pass.  Float lattices by
// the float shortcut and in int32.  The phase is issue-bound (the kernel's
// issue slots 78-85% busy): with these sums and the error only where it can
// matter, ~190 -> ~146 instructions a point (ncu, etopoT rel 1e-4, run 63).
template <class G, class T>
__device__ __forceinline__ void full_tile_lorenzo_encode(const T* __restrict__ data, const InterpLayout& L,
                                                         const InterpLayout::TileBox& box, T* ws,
                                                         uint16_t* tile_codes, const KernelConfig& cfg,
                                                         uint64_t tile_id, int64_t radius,
                                                         const uint32_t* estimate_slots) {
    using Sh = full_tile::Shape<G>;
    using Q = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
    static_assert(sizeof(Q) == sizeof(T), "lattice values overwrite the workspace");
    static_assert(full_tile::kOwnedPerThread<G> <= 16, "a bit per point; per-thread sums below 2^28");
    constexpr uint32_t S1 = Sh::ws_stride(1), S2 = Sh::ws_stride(2), kWarps = G::threads / 32;
    __shared__ unsigned long long scratch[3][2 * kWarps];   // a row per sum: one barrier each
    const QuantParams& qp = cfg.lorenzo;
    const bool autos = interp_tiles_choose(cfg.tiles);
    const auto lorenzo_point = [&](uint32_t x, uint32_t y, uint32_t z) {
        return full_tile_lorenzo_point<G>(box, x, y, z);
    };
    unsigned long long spline_cost = 0, n = 0;
    if (autos) {
        uint32_t cost = 0, count = 0;
        full_tile::for_each_owned_point_at<G, 1>(L, box, [&](uint32_t, uint32_t w, uint64_t, uint32_t x, uint32_t y,
                                                          uint32_t z) {
            if (lorenzo_point(x, y, z)) cost += interp_code_cost(tile_codes[w], radius), ++count;
        });
        full_tile_sum2<kWarps>(cost, count, scratch[0], spline_cost, n);
        if (!interp_lorenzo_may_win(spline_cost, n)) {
            if (threadIdx.x == 0) cfg.lorenzo_tiles[tile_id] = 0;
            return;
        }
        // The estimate made at load (full_tile_lorenzo_estimate; interp_lorenzo_skip).
        unsigned long long estimate = 0;
#pragma unroll
        for (uint32_t k = 0; k < kWarps; ++k) estimate += estimate_slots[k];
        if (interp_lorenzo_skip(spline_cost, estimate)) {
            if (threadIdx.x == 0) cfg.lorenzo_tiles[tile_id] = 0;
            return;
        }
    }
    // (2) Lattice values; which Lorenzo points the bound lets on the lattice (bit k).
    uint32_t on_lattice = 0, spline_error = 0;
    Q* q = reinterpret_cast<Q*>(ws);
    full_tile::for_each_owned_point_at<G, 4>(L, box, [&](uint32_t k, uint32_t w, uint64_t g, uint32_t x, uint32_t y,
                                                      uint32_t z) {
        const bool mine = lorenzo_point(x, y, z);
        const T recon = ws[w];
        const T own = data[g];   // every owned point is in the array: no branch around the load
        const T v = mine ? own : recon;
        int64_t qv;
        bool ok;
        if constexpr (sizeof(T) == 4) {
            int32_t q32;
            if (lattice_of_float(v, qp, q32)) {   // on the lattice within the bound
                qv = q32;
                ok = true;
            } else {
                ok = quantize_double(v, qp, qv);
            }
        } else {
            ok = quantize_double(v, qp, qv);
        }
        if (mine && autos) spline_error += interp_error_units(v, recon, tile_codes[w], cfg.inv_eb0);
        on_lattice |= (mine && ok ? 1u : 0u) << k;
        q[w] = static_cast<Q>(qv);
    });
    __syncthreads();   // every lattice value written
    const auto code_of = [&](uint32_t k, uint32_t w, uint32_t x, uint32_t y, uint32_t z) -> uint16_t {
        if (!(on_lattice >> k & 1)) return 0;
        const Q delta = q[w] - lorenzo_prediction_q<G::rank, S1, S2>(q, w, x > 0, y > 0, z > 0);
        if constexpr (sizeof(T) == 4) return lorenzo_code(delta, static_cast<int32_t>(radius));
        else return lorenzo_code(delta, radius);
    };
    bool lorenzo = cfg.tiles == kTilesLorenzo;
    if (autos) {
        // (3) The codes' cost; a point out of the radius (an outlier, exact) leaves the error's set.
        uint32_t cost = 0;
        full_tile::for_each_owned_point_at<G, 1>(L, box, [&](uint32_t k, uint32_t w, uint64_t, uint32_t x, uint32_t y,
                                                          uint32_t z) {
            if (!lorenzo_point(x, y, z)) return;
            const uint16_t code = code_of(k, w, x, y, z);
            cost += interp_code_cost(code, radius);
            if (code == 0) on_lattice &= ~(1u << k);
        });
        unsigned long long lorenzo_cost, spline_error_sum;
        full_tile_sum2<kWarps>(cost, spline_error, scratch[1], lorenzo_cost, spline_error_sum);
        // interp_prefer_lorenzo adds Lorenzo's distortion (>= 0) to its cost: this test alone says no.
        if (lorenzo_cost * 64 < spline_cost * 61) {
            // (4) Lorenzo's error (the CPU's sum: its points on the lattice with a code).
            uint32_t error = 0, unused = 0;
            full_tile::for_each_owned_point_at<G, 1>(L, box, [&](uint32_t k, uint32_t w, uint64_t g, uint32_t,
                                                              uint32_t, uint32_t) {
                if (on_lattice >> k & 1)
                    error += interp_error_units(data[g], lattice_value<T>(q[w], qp.ebx2), 1, cfg.inv_eb0);
            });
            unsigned long long lorenzo_error, none;
            full_tile_sum2<kWarps>(error, unused, scratch[2], lorenzo_error, none);
            lorenzo = interp_prefer_lorenzo(spline_cost, lorenzo_cost, spline_error_sum, lorenzo_error, n);
        }
    }
    if (threadIdx.x == 0) cfg.lorenzo_tiles[tile_id] = lorenzo;
    if (!lorenzo) return;
    // (5) The caller writes the codes of the points each thread takes here: no barrier.
    full_tile::for_each_owned_point_at<G, 1>(L, box, [&](uint32_t k, uint32_t w, uint64_t, uint32_t x, uint32_t y,
                                                      uint32_t z) {
        if (lorenzo_point(x, y, z)) tile_codes[w] = code_of(k, w, x, y, z);
    });
}

// What the decoder adds along a row besides the west neighbour
// (interp_lorenzo_rest), in Q's width (exact for float lattices, as
// lorenzo_prediction_q; wrapping, never undefined, on a hostile archive).
template <class Q>
__device__ __forceinline__ Q lorenzo_rest_q(uint32_t rank, const Q* q, uint32_t w, uint32_t s1, uint32_t s2,
                                            bool x, bool y, bool z) {
    using U = std::make_unsigned_t<Q>;
    const auto at = [&](bool has, uint32_t back) -> U { return has ? static_cast<U>(q[w - back]) : U{0}; };
    if (rank == 1) return 0;
    if (rank == 2) return static_cast<Q>(at(y, s1) - at(x && y, 1 + s1));
    return static_cast<Q>(at(y, s1) + at(z, s2) - at(x && y, 1 + s1) - at(x && z, 1 + s2) - at(y && z, s1 + s2) +
                          at(x && y && z, 1 + s1 + s2));
}

// The decoder's side, after the tiles' kernels: a block per Lorenzo tile
// (their ids listed by a select, blocks striding over the list).  The tile's
// lattice values go to shared memory (int32 for float), those of the Lorenzo
// points with a nonzero code as their residuals.  A row needs the rows before
// it along y and z, so the rows go in wavefronts of equal y + z, a warp per
// row (3-D tiles: up to 8 rows at once).  Along a row a Lorenzo point's value
// is its west neighbour's plus what the rows before and its residual give (B):
// a prefix sum of B that restarts at every point whose value is known
// (anchors, shared faces, outliers), one chunk of the row per lane and a
// segmented scan of the chunks across the warp.
template <class T>
__global__ void lorenzo_tiles_decode_kernel(const uint16_t* __restrict__ codes, const uint32_t* __restrict__ tiles,
                                            const uint32_t* __restrict__ num_tiles, InterpLayout L, KernelConfig cfg,
                                            int64_t radius, T* __restrict__ out) {
    using Q = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
    using U = std::make_unsigned_t<Q>;
    extern __shared__ unsigned char smem_raw[];
    Q* q = reinterpret_cast<Q*>(smem_raw);
    uint8_t* decode = reinterpret_cast<uint8_t*>(q + L.ws_size());
    const QuantParams& qp = cfg.lorenzo;
    const uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    const uint32_t s1 = L.ws_stride(1), s2 = L.ws_stride(2);
    for (uint32_t j = blockIdx.x; j < *num_tiles; j += gridDim.x) {
        const auto box = L.tile_box(tiles[j]);
        const uint32_t e0 = min(box.last[0] + 1, L.tile[0]), e1 = min(box.last[1] + 1, L.tile[1]),
                       e2 = min(box.last[2] + 1, L.tile[2]);
        for (uint32_t r = warp; r < e1 * e2; r += warps) {
            const uint32_t y = r % e1, z = r / e1;
            for (uint32_t x = lane; x < e0; x += 32) {
                const uint32_t c[3] = {x, y, z};
                const uint32_t w = x + y * s1 + z * s2;
                const uint64_t g = L.global_index(box.origin, c);
                const uint16_t code = codes[g];
                const bool mine = code != 0 && interp_lorenzo_point(L, box, c);
                decode[w] = mine;
                q[w] = mine ? static_cast<Q>(static_cast<int64_t>(code) - radius)
                            : static_cast<Q>(interp_lattice(out[g], qp.r));
            }
        }
        __syncthreads();
        const uint32_t per = (e0 + 31) / 32, x0 = min(lane * per, e0), x1 = min(x0 + per, e0);
        for (uint32_t d = 0; d + 1 < e1 + e2; ++d) {
            for (uint32_t z = warp; z < e2 && z <= d; z += warps) {
                const uint32_t y = d - z;
                if (y >= e1) continue;   // warp-uniform
                const uint32_t row = y * s1 + z * s2;
                // This lane's chunk as one element of the scan: (a known value in it, what it adds).
                bool known = false;
                U sum = 0;
                for (uint32_t x = x0; x < x1; ++x) {
                    const uint32_t w = row + x;
                    if (!decode[w]) {
                        known = true;
                        sum = static_cast<U>(q[w]);
                    } else {
                        sum += static_cast<U>(q[w]) + static_cast<U>(lorenzo_rest_q(L.rank, q, w, s1, s2, x > 0, y > 0, z > 0));
                    }
                }
                // Inclusive scan across the lanes: (a, b) -> (a.known | b.known, b.known ? b.sum : a.sum + b.sum).
                for (uint32_t o = 1; o < 32; o <<= 1) {
                    const bool k_up = __shfl_up_sync(0xffffffffu, known, o);
                    const U s_up = __shfl_up_sync(0xffffffffu, sum, o);
                    if (lane >= o && !known) {
                        sum += s_up;
                        known = k_up;
                    }
                }
                // What comes before the chunk: the value at x0 - 1 (0 before the row's start).
                U run = __shfl_up_sync(0xffffffffu, sum, 1);
                if (lane == 0) run = 0;
                for (uint32_t x = x0; x < x1; ++x) {
                    const uint32_t w = row + x;
                    if (!decode[w]) {
                        run = static_cast<U>(q[w]);
                    } else {
                        run += static_cast<U>(q[w]) + static_cast<U>(lorenzo_rest_q(L.rank, q, w, s1, s2, x > 0, y > 0, z > 0));
                        q[w] = static_cast<Q>(run);
                    }
                }
            }
            __syncthreads();   // the wavefront's rows, before the next reads them
        }
        for (uint32_t r = warp; r < e1 * e2; r += warps) {
            const uint32_t y = r % e1, z = r / e1;
            for (uint32_t x = lane; x < e0; x += 32) {
                const uint32_t w = x + y * s1 + z * s2, c[3] = {x, y, z};
                if (decode[w]) out[L.global_index(box.origin, c)] = lattice_value<T>(q[w], qp.ebx2);
            }
        }
        __syncthreads();   // the next tile reuses the shared memory
    }
}

// The generic kernels' stage walk: every stage of every level, coarsest
// first, a barrier after each; f(s, i, w, along, u, spline, level) for this
// thread's points i of stage s (workspace offset w, coordinate along the
// stage's dim).
template <class F>
__device__ void for_each_stage_point(const InterpLayout& L, const KernelConfig& cfg,
                                     const InterpLayout::TileBox& box, F&& f) {
    const InterpOrder order{{cfg.order[0], cfg.order[1], cfg.order[2]}};
    for (uint32_t l = L.num_levels; l-- > 0;) {
        const uint32_t u = 1u << l;
        for (uint32_t k = 0; k < L.rank; ++k) {
            const InterpStage s = interp_stage(L, order, k, u, box.last);
            const uint32_t spline = cfg.spline[s.dim];
            for (uint32_t i = threadIdx.x; i < s.total; i += blockDim.x) {
                uint32_t w, along;
                s.locate(i, w, along);
                f(s, i, w, along, u, spline, l);
            }
            __syncthreads();
        }
    }
}

// The tiles the full-tile kernels do not take (or all, without them).
// Guard = false: block k codes tile k without the jump guard's tests, unless
// the values it loads may reach the guard's threshold (full_tile::LoadSpan):
// such a "loud" tile is listed in `loud` (the count in zero_codes[3]) and
// left.  Guard = true, launched after: blocks stride over the loud tiles,
// code them with the guard and report in zero_codes[1] whether it decided a
// prediction (as interp_encode_full_kernel).
template <class T, bool Guard, bool Fill>
__global__ void interp_encode_kernel(const T* __restrict__ data, const T* __restrict__ anchor_start,
                                     const uint16_t* __restrict__ anchor_codes, InterpLayout L, KernelConfig cfg,
                                     double eb, int64_t radius, uint16_t* __restrict__ codes,
                                     unsigned long long* __restrict__ zero_codes, bool edge_only,
                                     uint32_t* __restrict__ loud) {
    extern __shared__ unsigned char smem_raw[];
    T* ws = reinterpret_cast<T*>(smem_raw);
    uint16_t* tile_codes = reinterpret_cast<uint16_t*>(ws + L.ws_size());
    using Span = full_tile::LoadSpan<T>;
    __shared__ typename Span::Slot extremes[2 * 32];   // the warps' (Span::publish)
    bool taken = false;   // the jump guard decided a prediction
    const FillValue fill = kernel_fill<Fill>(cfg);
    const T* const loads = stage_loads<Fill>(cfg, data);
    const auto code_tile = [&](uint64_t k) {
        const auto box = L.tile_box(k);
        const uint32_t origin[3] = {0, 0, 0};
        // The quiet test's reference: guard off, every tile is quiet.
        const bool test = !Guard && cfg.jump != kInterpNoJump;
        const T reference = test ? data[L.global_index(box.origin, origin)] : T(0);
        Span span;
        for_each_ws_point(L, box, [&](uint32_t i, uint32_t x, uint32_t y, uint32_t z) {
            const uint32_t c[3] = {x, y, z};
            tile_codes[i] = static_cast<uint16_t>(radius);   // raw anchors keep the zero-residual code
            T v;
            if (L.is_anchor(c)) {
                const uint64_t a = L.anchor_index(box.origin, c);
                v = anchor_start[a];
                if (anchor_codes) tile_codes[i] = anchor_codes[a];
            } else {
                v = loads[L.global_index(box.origin, c)];
            }
            ws[i] = v;
            if constexpr (!Guard) span.add(span_value(fill, v));
        });
        if constexpr (!Guard) {
            if (test) span.publish(extremes);
            if (__syncthreads_or(test && !span.within(reference, quiet_half<T>(cfg))) &&
                !Span::quiet(extremes, blockDim.x / 32, eb, cfg.jump)) {
                if (threadIdx.x == 0) loud[atomicAdd(zero_codes + 3, 1ull)] = static_cast<uint32_t>(k);
                return;
            }
        } else {
            __syncthreads();
        }
        for_each_stage_point(L, cfg, box,
                             [&](const InterpStage& s, uint32_t, uint32_t w, uint32_t along, uint32_t u,
                                 uint32_t spline, uint32_t l) {
                                 tile_codes[w] = interp_encode_point(ws, s, w, along, u, spline,
                                                                     Guard ? cfg.jump : kInterpNoJump, cfg.level[l],
                                                                     eb, radius, fill, Guard ? &taken : nullptr);
                             });
        if (lorenzo_phase(cfg)) lorenzo_tile_encode(data, L, box, ws, tile_codes, cfg, k, radius);
        // Written codes, counting the zeros (a warp adds its count once): with
        // none, the caller skips the outlier selection.
        for_each_box_point(L, box, [&](uint32_t, uint32_t x, uint32_t y, uint32_t z) {
            const uint32_t c[3] = {x, y, z};
            const uint16_t code = tile_codes[interp_ws_offset(L, c)];
            codes[L.global_index(box.origin, c)] = code;
            const unsigned active = __activemask(), zeros = __ballot_sync(active, code == 0);
            if (zeros && threadIdx.x % 32 == static_cast<unsigned>(__ffs(active) - 1))
                atomicAdd(zero_codes, static_cast<unsigned long long>(__popc(zeros)));
        });
    };
    if constexpr (!Guard) {
        // edge_only: the full tiles are interp_encode_full_kernel's.
        code_tile(edge_only ? interp_edge_tile_id(L, blockIdx.x) : blockIdx.x);
    } else {
        for (uint64_t j = blockIdx.x; j < zero_codes[3]; j += gridDim.x) {
            code_tile(loud[j]);
            __syncthreads();   // the next tile reuses the workspace
        }
        if (__syncthreads_or(taken) && threadIdx.x == 0) atomicOr(zero_codes + 1, 1ull);
    }
}

// Full tiles of the default geometries (interp_full_tile.cuh): the same
// stages as interp_encode_kernel with every extent a constant.  Guard = false:
// block k takes full tile k and codes it without the jump guard's tests,
// unless its values may reach the guard's threshold (full_tile::LoadSpan,
// found while it loads): such a "loud" tile is listed in `loud` (the count in
// zero_codes[2]) and left.  Guard = true, launched after: blocks stride over
// the loud tiles, code them with the guard and report in zero_codes[1]
// whether it decided a prediction.  Fields without fill values have few loud
// tiles (those that span nearly the whole value range).
template <class T, uint32_t Rank, uint32_t Code, bool Guard, bool Fill>
__global__ void __launch_bounds__(full_tile::Geometry<Rank>::threads, full_tile::Geometry<Rank>::min_blocks)
    interp_encode_full_kernel(const T* __restrict__ data, const T* __restrict__ anchor_start,
                              const uint16_t* __restrict__ anchor_codes, InterpLayout L, KernelConfig cfg, double eb,
                              int64_t radius, uint16_t* __restrict__ codes, unsigned long long* __restrict__ zero_codes,
                              uint32_t* __restrict__ loud) {
    using G = full_tile::Geometry<Rank>;
    using Sh = full_tile::Shape<G>;
    __shared__ T ws[Sh::ws_size];
    __shared__ uint16_t tile_codes[Sh::ws_size];
    using Span = full_tile::LoadSpan<T>;
    __shared__ typename Span::Slot extremes[2 * G::threads / 32];   // the warps' (Span::publish)
    __shared__ uint32_t estimate_slots[G::threads / 32];              // full_tile_lorenzo_estimate's
    bool taken = false;
    const FillValue fill = kernel_fill<Fill>(cfg);
    const T* const loads = stage_loads<Fill>(cfg, data);
    const auto code_tile = [&](uint32_t k) {
        const auto box = full_tile::full_tile_box<G>(L, k);
        // The quiet test's reference: guard off, every tile is quiet.
        const bool test = !Guard && cfg.jump != kInterpNoJump;
        const uint32_t origin[3] = {0, 0, 0};
        const T reference = test ? data[L.global_index(box.origin, origin)] : T(0);
        // Every point but the anchors gets its code from its stage.
        Span span;
        full_tile::load_workspace<G>(
            L, box, [&](uint64_t g) { return loads[g]; },
            [&](uint32_t i, T v) {
                ws[i] = v;
                if constexpr (!Guard) span.add(span_value(fill, v));
            },
            [&](uint32_t i, uint64_t a) {
                const T v = anchor_start[a];
                ws[i] = v;
                if constexpr (!Guard) span.add(v);
                tile_codes[i] = anchor_codes ? anchor_codes[a] : static_cast<uint16_t>(radius);
            });
        if constexpr (!Guard) {
            if (test) span.publish(extremes);
            if (__syncthreads_or(test && !span.within(reference, quiet_half<T>(cfg))) &&
                !Span::quiet(extremes, G::threads / 32, eb, cfg.jump)) {
                if (threadIdx.x == 0) loud[atomicAdd(zero_codes + 2, 1ull)] = k;
                return;
            }
        } else {
            __syncthreads();
        }
        // The phase's pre-test reads the workspace as loaded; the stages' barriers publish its sums.
        if (lorenzo_phase(cfg) && interp_tiles_choose(cfg.tiles))
            full_tile_lorenzo_estimate<G>(L, box, ws, cfg.lorenzo.r, fill, estimate_slots);
        full_tile::predict_stages<G, Code, Guard>(ws, cfg, taken, [&](uint32_t w, double pred, InterpLevelQuant lq) {
            T recon;
            tile_codes[w] = interp_quantize(ws[w], pred, lq, eb, radius, recon, fill);
            ws[w] = recon;
        });
        if (lorenzo_phase(cfg))   // after the last stage's barrier
            full_tile_lorenzo_encode<G>(data, L, box, ws, tile_codes, cfg, raster_tile_id(L, box), radius,
                                        estimate_slots);
        uint32_t zeros = 0;
        full_tile::for_each_owned_point<G>(L, box, [&](uint32_t w, uint64_t g) {
            const uint16_t code = tile_codes[w];
            codes[g] = code;
            zeros += __popc(__ballot_sync(~0u, code == 0));
        });
        if (zeros && threadIdx.x % 32 == 0) atomicAdd(zero_codes, static_cast<unsigned long long>(zeros));
    };
    if constexpr (!Guard) {
        code_tile(blockIdx.x);
    } else {
        for (uint64_t j = blockIdx.x; j < zero_codes[2]; j += gridDim.x) {
            code_tile(loud[j]);
            __syncthreads();   // the next tile reuses the workspace
        }
        if (__syncthreads_or(taken) && threadIdx.x == 0) atomicOr(zero_codes + 1, 1ull);
    }
}

template <class T>
__global__ void anchor_raw_kernel(const T* __restrict__ data, InterpLayout L, InterpAnchorGrid g,
                                  T* __restrict__ start) {
    const uint64_t a = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
    if (a < g.count()) start[a] = data[g.element(a, L)];
}

template <class T>
__global__ void anchor_lattice_kernel(const T* __restrict__ data, InterpLayout L, InterpAnchorGrid g,
                                      InterpLevelQuant aq, int64_t* __restrict__ q) {
    const uint64_t a = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
    if (a < g.count()) q[a] = interp_anchor_lattice(data[g.element(a, L)], aq);
}

template <class T>
__global__ void anchor_code_kernel(const T* __restrict__ data, const int64_t* __restrict__ q, InterpLayout L,
                                   InterpAnchorGrid g, InterpLevelQuant aq, double eb, int64_t radius,
                                   uint16_t* __restrict__ codes, uint64_t* __restrict__ residual,
                                   T* __restrict__ start) {
    const uint64_t a = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
    if (a >= g.count()) return;
    const uint64_t r = interp_anchor_residual(q, g, a);
    residual[a] = r;
    codes[a] = interp_anchor_code(data[g.element(a, L)], q[a], r, aq, eb, radius, start[a]);
}

// Decoding coded anchors: residuals from the codes (code 0 counted), then the
// listed residuals put in place (each must sit on a code 0), then prefix sums.
__global__ void anchor_residual_kernel(const uint16_t* __restrict__ codes, InterpLayout L, InterpAnchorGrid g,
                                       int64_t radius, uint64_t* __restrict__ q, unsigned long long* zeros) {
    const uint64_t a = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
    if (a >= g.count()) return;
    const uint16_t code = codes[g.element(a, L)];
    q[a] = static_cast<uint64_t>(static_cast<int64_t>(code) - radius);
    if (code == 0) atomicAdd(zeros, 1ull);
}

__global__ void anchor_listed_kernel(const uint16_t* __restrict__ codes, InterpLayout L, InterpAnchorGrid g,
                                     const uint64_t* __restrict__ listed, const uint64_t* __restrict__ residual,
                                     uint64_t num_listed, uint64_t* __restrict__ q, uint32_t* corrupt) {
    const uint64_t k = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
    if (k >= num_listed) return;
    const uint64_t a = listed[k];   // < g.count(), checked on the host
    if (codes[g.element(a, L)] != 0) atomicOr(corrupt, 1u);
    q[a] = residual[k];
}

__global__ void anchor_count_kernel(const unsigned long long* zeros, uint64_t num_listed, uint32_t* corrupt) {
    if (*zeros != num_listed) atomicOr(corrupt, 1u);
}

// Prefix sums of the lines along dim d (1 or 2), one thread per line (the
// lines along dim 0 are scanned by CUB); wrapping arithmetic.  A line is
// read kBatch values at a time, all loads in flight before the sums: one
// dependent load after another took 115 us on etopoT's 1,081 columns of 271
// anchors (ncu, H200), a tenth of its decompression.
__global__ void anchor_sum_kernel(uint64_t* __restrict__ q, InterpAnchorGrid g, int d) {
    constexpr uint64_t kBatch = 16;
    const uint64_t n0 = g.dims[0], n01 = g.dims[0] * g.dims[1];
    const uint64_t lines = d == 1 ? n0 * g.dims[2] : n01;
    const uint64_t t = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
    if (t >= lines) return;
    const uint64_t first = d == 1 ? (t / n0) * n01 + t % n0 : t;
    const uint64_t step = d == 1 ? n0 : n01, count = g.dims[d];
    uint64_t sum = 0;
    for (uint64_t i = 0; i < count; i += kBatch) {
        uint64_t v[kBatch];
#pragma unroll
        for (uint64_t k = 0; k < kBatch; ++k) v[k] = i + k < count ? q[first + (i + k) * step] : 0;
#pragma unroll
        for (uint64_t k = 0; k < kBatch; ++k) {
            sum += v[k];
            if (i + k < count) q[first + (i + k) * step] = sum;
        }
    }
}

// Position of `key` in the increasing array, or false.
__device__ bool find_index(const uint64_t* __restrict__ index, uint64_t n, uint64_t key, uint64_t& pos) {
    uint64_t lo = 0, hi = n;
    while (lo < hi) {
        const uint64_t mid = lo + (hi - lo) / 2;
        if (index[mid] < key) lo = mid + 1;
        else hi = mid;
    }
    pos = lo;
    return lo < n && index[lo] == key;
}

// The stored value of the outlier at raster index e; flags the archive
// corrupt (and reads 0) when there is none.  Out of line: rare, and the tile
// kernels call it from every stage.
template <class T>
__device__ __noinline__ T outlier_at(const uint64_t* __restrict__ index, const T* __restrict__ value, uint64_t n,
                                     uint64_t e, uint32_t* corrupt) {
    uint64_t pos;
    if (find_index(index, n, e, pos)) return value[pos];
    atomicOr(corrupt, 1u);
    return T(0);
}

template <class T>
__global__ void anchor_start_kernel(const uint16_t* __restrict__ codes, const uint64_t* __restrict__ q,
                                    const uint64_t* __restrict__ outlier_index, const T* __restrict__ outlier_value,
                                    uint64_t num_outliers, InterpLayout L, InterpAnchorGrid g, InterpLevelQuant aq,
                                    T* __restrict__ start, uint32_t* corrupt) {
    const uint64_t a = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
    if (a >= g.count()) return;
    const uint64_t e = g.element(a, L);
    if (codes[e] != 0) {
        start[a] = lattice_value<T>(static_cast<int64_t>(q[a]), aq.ebx2);
        return;
    }
    uint64_t pos;
    if (find_index(outlier_index, num_outliers, e, pos)) {
        start[a] = outlier_value[pos];
    } else {
        atomicOr(corrupt, 1u);
        start[a] = T(0);
    }
}

template <class T>
__global__ void anchor_raw_check_kernel(const uint16_t* __restrict__ codes, InterpLayout L, InterpAnchorGrid g,
                                        int64_t radius, uint32_t* corrupt) {
    const uint64_t a = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
    if (a < g.count() && codes[g.element(a, L)] != radius) atomicOr(corrupt, 1u);   // encoders write `radius`
}

struct IsOutlier {
    const uint16_t* codes;
    __device__ bool operator()(uint64_t i) const { return codes[i] == 0; }
};

unsigned blocks_for(uint64_t n) { return static_cast<unsigned>((n + 255) / 256); }

// The raster indices of the zero codes, in no particular order (sorted
// after): each warp round checks 32 vectors of 8 codes and appends its zeros
// with one atomic.  Zero codes are rare (the outliers), so this reads the
// codes at memory speed where CUB's selection over a counting iterator ran at
// a quarter of it (wmagT: 241 us); many zeros stay correct, only slower.
// At most `capacity` indices are stored; *count ends at the number found.
constexpr unsigned kZeroScanThreads = 256;
__global__ void __launch_bounds__(kZeroScanThreads)
    zero_code_append_kernel(const uint16_t* __restrict__ codes, uint64_t n, uint64_t* __restrict__ out,
                            uint64_t capacity, unsigned long long* __restrict__ count) {
    const uint32_t lane = threadIdx.x % 32;
    const uint64_t vectors = n / 8, stride = uint64_t{gridDim.x} * blockDim.x;
    const auto append = [&](uint64_t at, uint64_t index) {
        if (at < capacity) out[at] = index;
    };
    // `base` is the warp's first vector: the same for its lanes, so they all reach the shuffles.
    for (uint64_t base = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x - lane; base < vectors; base += stride) {
        const uint64_t v = base + lane;
        uint32_t zeros = 0;  // bit j: code j of vector v is 0
        if (v < vectors) {
            const uint4 q = __ldg(reinterpret_cast<const uint4*>(codes) + v);
            const uint32_t w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
            for (int k = 0; k < 4; ++k)
                zeros |= uint32_t{(w[k] & 0xFFFFu) == 0} << (2 * k) | uint32_t{(w[k] >> 16) == 0} << (2 * k + 1);
        }
        if (__ballot_sync(0xFFFFFFFFu, zeros != 0) == 0) continue;
        const uint32_t mine = __popc(zeros);
        uint32_t inclusive = mine;
#pragma unroll
        for (uint32_t d = 1; d < 32; d *= 2) {
            const uint32_t up = __shfl_up_sync(0xFFFFFFFFu, inclusive, d);
            if (lane >= d) inclusive += up;
        }
        unsigned long long first = 0;
        if (lane == 31) first = atomicAdd(count, static_cast<unsigned long long>(inclusive));
        uint64_t at = __shfl_sync(0xFFFFFFFFu, first, 31) + inclusive - mine;
        for (; zeros != 0; zeros &= zeros - 1) append(at++, v * 8 + static_cast<uint32_t>(__ffs(zeros) - 1));
    }
    if (blockIdx.x == 0 && threadIdx.x < n % 8) {  // the codes after the last whole vector
        const uint64_t i = vectors * 8 + threadIdx.x;
        if (codes[i] == 0) append(atomicAdd(count, 1ull), i);
    }
}

template <class T>
__global__ void gather_kernel(const T* __restrict__ data, const uint64_t* __restrict__ index, uint64_t n,
                              T* __restrict__ out) {
    const uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
    if (i < n) out[i] = data[index[i]];
}

// One thread per sample point: its 1 + 4·rank values, in the host's order.
template <class T>
__global__ void tune_sample_kernel(const T* __restrict__ data, InterpLayout L, uint64_t k0, uint64_t k1,
                                   uint64_t k2, T* __restrict__ out) {
    const uint64_t p = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
    const uint64_t k[3] = {k0, k1, k2};
    if (p >= k0 * k1 * k2) return;
    uint64_t g[3];
    interp_tune_point(L, k, p, g);
    const uint32_t group = 1 + 4 * L.rank;
    for (uint32_t j = 0; j < group; ++j) out[p * group + j] = data[interp_tune_index(L, g, j)];
}


// The decoder of the tiles the full-tile kernels do not take; Guard: the
// archive records the jump guard (without it the tests are compiled out).
template <class T, bool Guard>
__global__ void interp_decode_kernel(const uint16_t* __restrict__ codes, const T* __restrict__ anchors,
                                     const uint64_t* __restrict__ outlier_index,
                                     const T* __restrict__ outlier_value, uint64_t num_outliers, InterpLayout L,
                                     KernelConfig cfg, int64_t radius, T* __restrict__ out,
                                     uint32_t* __restrict__ corrupt, bool edge_only) {
    extern __shared__ unsigned char smem_raw[];
    T* ws = reinterpret_cast<T*>(smem_raw);
    uint16_t* tile_codes = reinterpret_cast<uint16_t*>(ws + L.ws_size());
    // edge_only: the full tiles are interp_decode_full_kernel's.
    const auto box = L.tile_box(edge_only ? interp_edge_tile_id(L, blockIdx.x) : blockIdx.x);

    for_each_ws_point(L, box, [&](uint32_t i, uint32_t x, uint32_t y, uint32_t z) {
        const uint32_t c[3] = {x, y, z};
        tile_codes[i] = codes[L.global_index(box.origin, c)];
        if (L.is_anchor(c)) ws[i] = anchors[L.anchor_index(box.origin, c)];
    });
    __syncthreads();
    for_each_stage_point(L, cfg, box,
                         [&](const InterpStage& s, uint32_t i, uint32_t w, uint32_t along, uint32_t u,
                             uint32_t spline, uint32_t l) {
                             const uint16_t code = tile_codes[w];
                             if (code != 0) {
                                 const double pred = interp_point_prediction(ws, s, w, along, u, spline,
                                                                                   Guard ? cfg.jump : kInterpNoJump);
                                 ws[w] = interp_reconstruct<T>(code, pred, cfg.level[l], radius);
                             } else {
                                 uint32_t c[3];
                                 s.point(i, c);
                                 uint64_t pos;
                                 if (find_index(outlier_index, num_outliers, L.global_index(box.origin, c), pos)) {
                                     ws[w] = outlier_value[pos];
                                 } else {
                                     atomicOr(corrupt, 1u);
                                     ws[w] = T(0);
                                 }
                             }
                         });
    for_each_box_point(L, box, [&](uint32_t, uint32_t x, uint32_t y, uint32_t z) {
        const uint32_t c[3] = {x, y, z};
        out[L.global_index(box.origin, c)] = ws[interp_ws_offset(L, c)];
    });
}

// The decoder of full tiles (interp_encode_full_kernel's counterpart); Guard:
// the archive records the jump guard.
template <class T, uint32_t Rank, uint32_t Code, bool Guard>
__global__ void __launch_bounds__(full_tile::Geometry<Rank>::threads, full_tile::Geometry<Rank>::min_blocks)
    interp_decode_full_kernel(const uint16_t* __restrict__ codes, const T* __restrict__ anchors,
                              const uint64_t* __restrict__ outlier_index, const T* __restrict__ outlier_value,
                              uint64_t num_outliers, InterpLayout L, KernelConfig cfg, int64_t radius,
                              T* __restrict__ out, uint32_t* __restrict__ corrupt) {
    using G = full_tile::Geometry<Rank>;
    using Sh = full_tile::Shape<G>;
    __shared__ T ws[Sh::ws_size];
    __shared__ uint16_t tile_codes[Sh::ws_size];
    const auto box = full_tile::full_tile_box<G>(L, blockIdx.x);

    full_tile::load_workspace<G>(
        L, box, [&](uint64_t g) { return codes[g]; }, [&](uint32_t i, uint16_t c) { tile_codes[i] = c; },
        [&](uint32_t i, uint64_t a) { ws[i] = anchors[a]; });
    __syncthreads();
    bool taken = false;   // unused: the encoder reported it
    full_tile::predict_stages<G, Code, Guard>(ws, cfg, taken, [&](uint32_t w, double pred, InterpLevelQuant lq) {
        const uint16_t code = tile_codes[w];
        if (code != 0) {
            ws[w] = interp_reconstruct<T>(code, pred, lq, radius);
            return;
        }
        const uint32_t c0 = w % Sh::w0, r = w / Sh::w0;
        const uint32_t c[3] = {c0, r % Sh::w1, r / Sh::w1};
        ws[w] = outlier_at(outlier_index, outlier_value, num_outliers, L.global_index(box.origin, c), corrupt);
    });
    full_tile::for_each_owned_point<G>(L, box, [&](uint32_t w, uint64_t g) { out[g] = ws[w]; });
}

struct IsZeroCode {
    __host__ __device__ uint64_t operator()(uint16_t code) const { return code == 0; }
};

// With the decoder's check that every zero code finds its entry (entries
// strictly increasing), equal counts mean the zero
// codes are exactly the listed outliers, as the CPU decoder requires.
__global__ void check_outlier_count_kernel(const uint64_t* zeros, uint64_t expected, uint32_t* corrupt) {
    if (*zeros != expected) atomicOr(corrupt, 1u);
}

template <class T>
size_t smem_bytes(const InterpLayout& L) {
    return L.ws_size() * (sizeof(T) + sizeof(uint16_t)) + 16;
}

void check_grid(const InterpLayout& L) {
    GSZ_CHECK(L.num_tiles <= 0x7fffffffu, GSZ_STATUS_LIMIT_EXCEEDED, "interp: %llu tiles exceed one CUDA grid",
              static_cast<unsigned long long>(L.num_tiles));
}

// Runs launch(rank, order code) as compile-time constants for a layout of
// the default 2-D or 3-D geometry whose order is one of the instantiated ones
// (all of them); returns false for any other layout (every tile generic).
template <class Launch>
bool dispatch_full_tiles(const InterpLayout& L, const KernelConfig& cfg, Launch&& launch) {
    using full_tile::order_code;
    const auto geometry_is = [&](const InterpGeometry& g) {
        return L.anchor_stride == g.stride && L.tile[0] == g.tile[0] && L.tile[1] == g.tile[1] &&
               L.tile[2] == g.tile[2];
    };
    const uint32_t code = order_code(cfg.order[0], cfg.order[1], cfg.order[2]);
    bool launched = false;
    const auto try_order = [&](auto rank, auto c) {
        if (!launched && code == decltype(c)::value) {
            launch(rank, c);
            launched = true;
        }
    };
    if (L.rank == 3 && geometry_is(kInterpGeometry3d)) {
        const std::integral_constant<uint32_t, 3> r;
        try_order(r, std::integral_constant<uint32_t, order_code(0, 1, 2)>{});
        try_order(r, std::integral_constant<uint32_t, order_code(0, 2, 1)>{});
        try_order(r, std::integral_constant<uint32_t, order_code(1, 0, 2)>{});
        try_order(r, std::integral_constant<uint32_t, order_code(1, 2, 0)>{});
        try_order(r, std::integral_constant<uint32_t, order_code(2, 0, 1)>{});
        try_order(r, std::integral_constant<uint32_t, order_code(2, 1, 0)>{});
    } else if (L.rank == 2 && geometry_is(kInterpGeometry2d)) {
        const std::integral_constant<uint32_t, 2> r;
        try_order(r, std::integral_constant<uint32_t, order_code(0, 1, 2)>{});
        try_order(r, std::integral_constant<uint32_t, order_code(1, 0, 2)>{});
    }
    return launched;
}

}  // namespace

template <class T>
uint64_t interp_tune_sample_launch(const T* d_data, const InterpLayout& L, cuda::DeviceBuffer<T>& d_values,
                                   cuda::PinnedBuffer<T>& h_values, cudaStream_t stream) {
    uint64_t k[3];
    interp_tune_counts(L, k);
    const uint64_t points = k[0] * k[1] * k[2], n = points * (1 + 4 * L.rank);
    d_values.allocate(n, stream);
    tune_sample_kernel<T><<<blocks_for(points), 256, 0, stream>>>(d_data, L, k[0], k[1], k[2], d_values.data());
    GSZ_CUDA_LAUNCHED("tune_sample_kernel");
    h_values.allocate(n);  // as T: half the copy for f32; widened exactly on the host
    GSZ_CUDA(cudaMemcpyAsync(h_values.data(), d_values.data(), n * sizeof(T), cudaMemcpyDeviceToHost, stream));
    return n;
}

template <class T>
std::vector<double> interp_tune_sample_cuda(const T* d_data, const InterpLayout& L, cudaStream_t stream) {
    cuda::DeviceBuffer<T> d_values;
    cuda::PinnedBuffer<T> h_values;
    const uint64_t n = interp_tune_sample_launch(d_data, L, d_values, h_values, stream);
    GSZ_CUDA(cudaStreamSynchronize(stream));
    return {h_values.data(), h_values.data() + n};
}

// The indices (increasing) of the zero codes among n into `index`, their
// count into out.count and, without waiting, into `count_host`.  Scratch from `out`.
template <class T>
void select_zero_codes_launch(const uint16_t* codes, uint64_t n, cuda::DeviceBuffer<uint64_t>& index,
                              cuda::PinnedBuffer<uint64_t>& count_host, InterpDeviceEncoded<T>& out,
                              cudaStream_t stream) {
    index.allocate(n, stream);
    out.count.allocate(1, stream);
    const thrust::counting_iterator<uint64_t> first(0);
    const IsOutlier pred{codes};
    size_t temp_bytes = 0;
    GSZ_CUDA(cub::DeviceSelect::If(nullptr, temp_bytes, first, index.data(), out.count.data(),
                                   static_cast<int64_t>(n), pred, stream));
    out.temp.allocate(temp_bytes, stream);
    GSZ_CUDA(cub::DeviceSelect::If(out.temp.data(), temp_bytes, first, index.data(), out.count.data(),
                                   static_cast<int64_t>(n), pred, stream));
    count_host.allocate(1);
    GSZ_CUDA(cudaMemcpyAsync(count_host.data(), out.count.data(), sizeof(uint64_t), cudaMemcpyDeviceToHost, stream));
}

template <class T>
void interp_anchors_launch_cuda(const T* d_data, const InterpLayout& L, const InterpConfig& config, double eb,
                                uint32_t radius, int requested, InterpDeviceEncoded<T>& out, cudaStream_t stream) {
    const InterpAnchorGrid g = interp_anchor_grid(L);
    const uint64_t na = g.count();
    out.anchor_start.allocate(na, stream);
    out.listed.clear();
    out.listed_residual.clear();
    if (requested == kAnchorsRaw) {
        out.anchor_mode = kAnchorsRaw;
        anchor_raw_kernel<T><<<blocks_for(na), 256, 0, stream>>>(d_data, L, g, out.anchor_start.data());
        GSZ_CUDA_LAUNCHED("anchor_raw_kernel");
        return;
    }
    const InterpLevelQuant aq = interp_anchor_quant(L, config);
    out.anchor_q.allocate(na, stream);
    out.anchor_residual.allocate(na, stream);
    out.anchor_codes.allocate(na, stream);
    int64_t* q = out.anchor_q.data();
    anchor_lattice_kernel<T><<<blocks_for(na), 256, 0, stream>>>(d_data, L, g, aq, q);
    GSZ_CUDA_LAUNCHED("anchor_lattice_kernel");
    anchor_code_kernel<T><<<blocks_for(na), 256, 0, stream>>>(d_data, q, L, g, aq, eb, radius,
                                                               out.anchor_codes.data(), out.anchor_residual.data(),
                                                               out.anchor_start.data());
    GSZ_CUDA_LAUNCHED("anchor_code_kernel");
    // The listed anchors (code 0), in order; their count comes back with the finish's synchronization.
    select_zero_codes_launch(out.anchor_codes.data(), na, out.anchor_listed, out.listed_count, out, stream);
}

template <class T>
void interp_anchors_finish_cuda(const T* d_data, const InterpLayout& L, int requested, InterpDeviceEncoded<T>& out,
                                cudaStream_t stream) {
    if (requested == kAnchorsRaw) return;  // launched whole
    const InterpAnchorGrid g = interp_anchor_grid(L);
    const uint64_t na = g.count();
    GSZ_CUDA(cudaStreamSynchronize(stream));
    const uint64_t listed = *out.listed_count.data();
    out.anchor_mode = interp_choose_anchor_mode(requested, na, listed, sizeof(T));
    if (out.anchor_mode == kAnchorsCoded) {
        if (listed) {
            cuda::DeviceBuffer<uint64_t> residual(listed, stream);
            gather_kernel<uint64_t><<<blocks_for(listed), 256, 0, stream>>>(
                out.anchor_residual.data(), out.anchor_listed.data(), listed, residual.data());
            GSZ_CUDA_LAUNCHED("gather_kernel");
            cuda::copy_to_host(out.listed, out.anchor_listed.data(), listed, stream);
            cuda::copy_to_host(out.listed_residual, residual.data(), listed, stream);
        }
        return;
    }
    // Coding them would cost more than storing them: raw start values, as the CPU chooses.
    anchor_raw_kernel<T><<<blocks_for(na), 256, 0, stream>>>(d_data, L, g, out.anchor_start.data());
    GSZ_CUDA_LAUNCHED("anchor_raw_kernel");
}

template <class T>
void interp_anchors_encode_cuda(const T* d_data, const InterpLayout& L, const InterpConfig& config, double eb,
                                uint32_t radius, int requested, InterpDeviceEncoded<T>& out, cudaStream_t stream) {
    interp_anchors_launch_cuda(d_data, L, config, eb, radius, requested, out, stream);
    interp_anchors_finish_cuda(d_data, L, requested, out, stream);
}

// The gate's sample (interp_gate_tile) and its counters: as zero_codes, [3]
// the number of tiles listed, then the two sums (InterpGateSums).
constexpr uint32_t kGateCounters = 6;
__global__ void gate_setup_kernel(uint64_t num_tiles, uint32_t count, uint32_t* __restrict__ ids,
                                  unsigned long long* __restrict__ counters) {
    const uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < count) ids[k] = static_cast<uint32_t>(interp_gate_tile(num_tiles, k));
    if (k < kGateCounters) counters[k] = k == 3 ? count : 0;
}

// Calls f(std::bool_constant<on>), on = whether the encoder has a fill value
// (the encoders' Fill).
template <class F>
void with_fill(const KernelConfig& cfg, F&& f) {
    if (cfg.fill.on) f(std::true_type{});
    else f(std::false_type{});
}

// The gate's block size.  Its 256 tiles are one short wave, so its time is a
// block's latency: more threads a tile shorten it until the registers (~80 a
// thread) leave fewer than two blocks a multiprocessor.  ncu, H200, the gate's
// kernel at rel 1e-3 (run 64): wmagT 77.6 / 56.5 / 50.2 / 70.9 us and etopoT
// 43.1 / 33.7 / 31.0 / 51.2 us at 128 / 256 / 384 / 512 threads.
constexpr unsigned kGateThreads = 384;

// kTilesAuto's gate (interp_lorenzo_tiles.hpp): the generic kernel's guarded
// path, which codes any tile (quiet or loud) as the main launches do, codes
// the sample tiles with the per-tile choice and sums their costs into
// out.gate; its codes and tile choices are written again by the main
// launches, which read the sums (KernelConfig::gate_sums).  No round trip.
template <class T>
void lorenzo_tiles_gate(const T* d_data, InterpDeviceEncoded<T>& out, const uint16_t* anchor_codes,
                        const InterpLayout& L, KernelConfig cfg, double eb, uint32_t radius, cudaStream_t stream) {
    const auto count = static_cast<uint32_t>(interp_gate_count(L.num_tiles));
    out.gate.allocate(kGateCounters + count, stream);
    unsigned long long* counters = out.gate.data();
    auto* ids = reinterpret_cast<uint32_t*>(counters + kGateCounters);
    gate_setup_kernel<<<(count + 255) / 256, 256, 0, stream>>>(L.num_tiles, count, ids, counters);
    GSZ_CUDA_LAUNCHED("gate_setup_kernel");
    cfg.tiles = kTilesEach;
    cfg.gate = counters + 4;
    with_fill(cfg, [&](auto fill) {
        interp_encode_kernel<T, true, decltype(fill)::value><<<count, kGateThreads, smem_bytes<T>(L), stream>>>(
            d_data, out.anchor_start.data(), anchor_codes, L, cfg, eb, radius, out.codes.data(), counters, false,
            ids);
    });
    GSZ_CUDA_LAUNCHED("interp_encode_kernel (the Lorenzo tiles' gate)");
}

template <class T>
void interp_encode_tiles_cuda(const T* d_data, const InterpLayout& L, const InterpConfig& config, double eb,
                              uint32_t radius, InterpDeviceEncoded<T>& out, cudaStream_t stream,
                              const T* d_original) {
    check_grid(L);
    GSZ_CHECK(config.anchors == out.anchor_mode && out.anchor_start.size() == L.num_anchors, GSZ_STATUS_INTERNAL,
              "interp_encode_cuda: the anchor stage does not match the config");
    const uint64_t n = L.num_elements;
    KernelConfig cfg = kernel_config(L, config, eb);
    cfg.original = d_original;
    if (config.tiles != kTilesSpline) {
        out.lorenzo_tiles.allocate(L.num_tiles, stream);
        cfg.lorenzo_tiles = out.lorenzo_tiles.data();
    }
    out.codes.allocate(n, stream);
    const uint16_t* anchor_codes = out.anchor_mode == kAnchorsCoded ? out.anchor_codes.data() : nullptr;
    if (config.tiles == kTilesAuto) {
        // Where the gate says spline no tile takes the phase, so none is
        // recorded Lorenzo (the caller then finds none, as the CPU's archive).
        lorenzo_tiles_gate(d_data, out, anchor_codes, L, cfg, eb, radius, stream);
        out.lorenzo_tiles.zero(stream);
        cfg.gate_sums = out.gate.data() + 4;
    }
    // The zero codes, whether the jump guard was taken, the loud full and generic tiles.
    out.zero_codes.allocate(4, stream);
    out.zero_codes.zero(stream);
    unsigned long long* zeros = out.zero_codes.data();
    const uint64_t full = interp_full_tile_count(L);
    const auto launch_generic = [&](auto kernel, uint64_t blocks, bool split) {
        kernel<<<static_cast<unsigned>(blocks), threads_for(L, split), smem_bytes<T>(L), stream>>>(
            d_data, out.anchor_start.data(), anchor_codes, L, cfg, eb, radius, out.codes.data(), zeros, split,
            out.loud_generic_tiles.data());
    };
    const bool split = dispatch_full_tiles(L, cfg, [&](auto rank, auto code) {
        constexpr uint32_t R = decltype(rank)::value, C = decltype(code)::value;
        if (full == 0) return;
        constexpr unsigned threads = full_tile::Geometry<R>::threads;
        out.loud_tiles.allocate(full, stream);
        with_fill(cfg, [&](auto fill) {
            interp_encode_full_kernel<T, R, C, false, decltype(fill)::value>
                <<<static_cast<unsigned>(full), threads, 0, stream>>>(
                d_data, out.anchor_start.data(), anchor_codes, L, cfg, eb, radius, out.codes.data(), zeros,
                out.loud_tiles.data());
            GSZ_CUDA_LAUNCHED("interp_encode_full_kernel");
            if (cfg.jump == kInterpNoJump) return;   // every tile was quiet
            // The loud tiles (their count stays on the device): blocks that find none return at once.
            interp_encode_full_kernel<T, R, C, true, decltype(fill)::value>
                <<<static_cast<unsigned>(std::min<uint64_t>(full, 2048)), threads, 0, stream>>>(
                    d_data, out.anchor_start.data(), anchor_codes, L, cfg, eb, radius, out.codes.data(), zeros,
                    out.loud_tiles.data());
            GSZ_CUDA_LAUNCHED("interp_encode_full_kernel (loud tiles)");
        });
    });
    // (A side stream for the generic tiles beside the full tiles' kernel
    // gained nothing here: both are instruction-bound; bench/NOTES.md.)
    const uint64_t generic = split ? L.num_tiles - full : L.num_tiles;
    if (generic) {
        out.loud_generic_tiles.allocate(generic, stream);
        with_fill(cfg, [&](auto fill) {
            launch_generic(interp_encode_kernel<T, false, decltype(fill)::value>, generic, split);
            GSZ_CUDA_LAUNCHED("interp_encode_kernel");
            if (cfg.jump != kInterpNoJump) {   // the loud tiles, as the full tiles'
                launch_generic(interp_encode_kernel<T, true, decltype(fill)::value>,
                               std::min<uint64_t>(generic, 2048), split);
                GSZ_CUDA_LAUNCHED("interp_encode_kernel (loud tiles)");
            }
        });
    }
}

template <class T>
void interp_outliers_cuda(const T* d_data, uint64_t num_zero_codes, InterpDeviceEncoded<T>& out,
                          cudaStream_t stream) {
    const uint64_t n = out.codes.size();
    out.num_outliers = num_zero_codes;
    out.outlier_index.allocate(num_zero_codes, stream);
    out.outlier_value.allocate(num_zero_codes, stream);
    out.count.allocate(1, stream);
    if (num_zero_codes == 0) {   // often none: the selection reads every code
        out.count.zero(stream);
        return;
    }
    // The output holds exactly the zero codes: num_zero_codes must be their
    // count (the caller checks out.count).  Appended in any order, then
    // sorted: the indices are distinct, so the order is the raster order.
    GSZ_CHECK(reinterpret_cast<uintptr_t>(out.codes.data()) % 16 == 0, GSZ_STATUS_INTERNAL,
              "interp: the codes are not 16-byte aligned");
    cuda::DeviceBuffer<uint64_t> unsorted(num_zero_codes, stream);
    out.count.zero(stream);
    const uint64_t vectors = n / 8;
    const auto blocks = static_cast<unsigned>(
        std::max<uint64_t>(1, std::min<uint64_t>((vectors + kZeroScanThreads - 1) / kZeroScanThreads, 2048)));
    zero_code_append_kernel<<<blocks, kZeroScanThreads, 0, stream>>>(
        out.codes.data(), n, unsorted.data(), num_zero_codes, reinterpret_cast<unsigned long long*>(out.count.data()));
    GSZ_CUDA_LAUNCHED("zero_code_append_kernel");
    int end_bit = 1;
    while (end_bit < 64 && (n - 1) >> end_bit != 0) ++end_bit;
    size_t temp_bytes = 0;
    GSZ_CUDA(cub::DeviceRadixSort::SortKeys(nullptr, temp_bytes, unsorted.data(), out.outlier_index.data(),
                                            num_zero_codes, 0, end_bit, stream));
    out.temp.allocate(temp_bytes, stream);
    GSZ_CUDA(cub::DeviceRadixSort::SortKeys(out.temp.data(), temp_bytes, unsorted.data(), out.outlier_index.data(),
                                            num_zero_codes, 0, end_bit, stream));
    gather_kernel<T><<<blocks_for(num_zero_codes), 256, 0, stream>>>(d_data, out.outlier_index.data(), num_zero_codes,
                                                                     out.outlier_value.data());
    GSZ_CUDA_LAUNCHED("gather_kernel");
}

template <class T>
void interp_encode_cuda(const T* d_data, const InterpLayout& L, const InterpConfig& config, double eb,
                        uint32_t radius, InterpDeviceEncoded<T>& out, cudaStream_t stream) {
    interp_encode_tiles_cuda(d_data, L, config, eb, radius, out, stream);
    std::vector<unsigned long long> zero_count;
    cuda::copy_to_host(zero_count, out.zero_codes.data(), 1, stream);
    interp_outliers_cuda(d_data, zero_count[0], out, stream);
    std::vector<uint64_t> selected;
    cuda::copy_to_host(selected, out.count.data(), 1, stream);
    GSZ_CHECK(selected[0] == zero_count[0], GSZ_STATUS_INTERNAL, "interp: %llu zero codes, %llu selected",
              zero_count[0], static_cast<unsigned long long>(selected[0]));
}

struct RowOf {
    uint64_t n0;
    __host__ __device__ uint64_t operator()(uint64_t a) const { return a / n0; }
};

template <class T>
void interp_anchors_decode_cuda(const uint16_t* d_codes, const T* d_raw, const uint64_t* d_listed,
                                const uint64_t* d_listed_residual, uint64_t num_listed,
                                const uint64_t* d_outlier_index, const T* d_outlier_value, uint64_t num_outliers,
                                const InterpLayout& L, const InterpConfig& config, uint32_t radius, T* d_start,
                                uint32_t* d_corrupt, cudaStream_t stream) {
    const InterpAnchorGrid g = interp_anchor_grid(L);
    const uint64_t na = g.count();
    if (config.anchors == kAnchorsRaw) {
        anchor_raw_check_kernel<T><<<blocks_for(na), 256, 0, stream>>>(d_codes, L, g, radius, d_corrupt);
        GSZ_CUDA_LAUNCHED("anchor_raw_check_kernel");
        GSZ_CUDA(cudaMemcpyAsync(d_start, d_raw, na * sizeof(T), cudaMemcpyDeviceToDevice, stream));
        return;
    }
    cuda::DeviceBuffer<uint64_t> q(na, stream), summed(na, stream);
    cuda::DeviceBuffer<unsigned long long> zeros(1, stream);
    zeros.zero(stream);
    anchor_residual_kernel<<<blocks_for(na), 256, 0, stream>>>(d_codes, L, g, radius, q.data(), zeros.data());
    GSZ_CUDA_LAUNCHED("anchor_residual_kernel");
    if (num_listed) {
        anchor_listed_kernel<<<blocks_for(num_listed), 256, 0, stream>>>(d_codes, L, g, d_listed, d_listed_residual,
                                                                          num_listed, q.data(), d_corrupt);
        GSZ_CUDA_LAUNCHED("anchor_listed_kernel");
    }
    anchor_count_kernel<<<1, 1, 0, stream>>>(zeros.data(), num_listed, d_corrupt);
    GSZ_CUDA_LAUNCHED("anchor_count_kernel");
    // Along dim 0 by CUB (rows may be long: 1-D arrays have one), then the
    // columns of dims 1 and 2 by a thread each.
    const auto rows = thrust::make_transform_iterator(thrust::counting_iterator<uint64_t>(0), RowOf{g.dims[0]});
    size_t temp_bytes = 0;
    GSZ_CUDA(cub::DeviceScan::InclusiveSumByKey(nullptr, temp_bytes, rows, q.data(), summed.data(),
                                                static_cast<int64_t>(na), ::cuda::std::equal_to<>{}, stream));
    cuda::DeviceBuffer<uint8_t> temp(temp_bytes, stream);
    GSZ_CUDA(cub::DeviceScan::InclusiveSumByKey(temp.data(), temp_bytes, rows, q.data(), summed.data(),
                                                static_cast<int64_t>(na), ::cuda::std::equal_to<>{}, stream));
    for (int d = 1; d < 3; ++d) {
        if (g.dims[d] == 1) continue;
        const uint64_t lines = d == 1 ? g.dims[0] * g.dims[2] : g.dims[0] * g.dims[1];
        anchor_sum_kernel<<<blocks_for(lines), 256, 0, stream>>>(summed.data(), g, d);
        GSZ_CUDA_LAUNCHED("anchor_sum_kernel");
    }
    anchor_start_kernel<T><<<blocks_for(na), 256, 0, stream>>>(d_codes, summed.data(), d_outlier_index,
                                                                d_outlier_value, num_outliers, L, g,
                                                                interp_anchor_quant(L, config), d_start, d_corrupt);
    GSZ_CUDA_LAUNCHED("anchor_start_kernel");
}

template <class T>
void interp_decode_cuda(const uint16_t* d_codes, const T* d_anchors, const uint64_t* d_outlier_index,
                        const T* d_outlier_value, uint64_t num_outliers, const uint8_t* d_lorenzo_tiles,
                        const InterpLayout& L, const InterpConfig& config, uint32_t radius, T* d_out,
                        uint32_t* d_corrupt, cudaStream_t stream) {
    check_grid(L);
    const KernelConfig cfg = kernel_config(L, config);
    // The outlier count's check (a memory-bound pass over the codes) and the
    // generic (edge) tiles run on a side stream beside the full tiles'
    // instruction-bound kernel: tiles write disjoint values, the check only
    // flags (run 53: decompression +1-3%).
    thread_local cuda::StreamFork fork;
    const uint64_t full = interp_full_tile_count(L);
    const bool split = dispatch_full_tiles(L, cfg, [](auto, auto) {});   // full tiles apart
    const bool beside = split && full != 0;
    const cudaStream_t side = beside ? fork.fork(stream) : stream;
    {
        cuda::DeviceBuffer<uint64_t> zeros(1, side);   // freed on the side stream, after its reduction
        const auto is_zero = thrust::make_transform_iterator(d_codes, IsZeroCode{});
        size_t temp_bytes = 0;
        GSZ_CUDA(cub::DeviceReduce::Sum(nullptr, temp_bytes, is_zero, zeros.data(),
                                        static_cast<int64_t>(L.num_elements), side));
        cuda::DeviceBuffer<uint8_t> temp(temp_bytes, side);
        GSZ_CUDA(cub::DeviceReduce::Sum(temp.data(), temp_bytes, is_zero, zeros.data(),
                                        static_cast<int64_t>(L.num_elements), side));
        check_outlier_count_kernel<<<1, 1, 0, side>>>(zeros.data(), num_outliers, d_corrupt);
        GSZ_CUDA_LAUNCHED("check_outlier_count_kernel");
    }
    const uint64_t generic = split ? L.num_tiles - full : L.num_tiles;
    if (generic) {
        const auto launch = [&](auto kernel) {
            kernel<<<static_cast<unsigned>(generic), threads_for(L, split), smem_bytes<T>(L), side>>>(
                d_codes, d_anchors, d_outlier_index, d_outlier_value, num_outliers, L, cfg, radius, d_out,
                d_corrupt, split);
        };
        if (cfg.jump != kInterpNoJump) launch(interp_decode_kernel<T, true>);
        else launch(interp_decode_kernel<T, false>);
        GSZ_CUDA_LAUNCHED("interp_decode_kernel");
    }
    dispatch_full_tiles(L, cfg, [&](auto rank, auto code) {
        constexpr uint32_t R = decltype(rank)::value, C = decltype(code)::value;
        if (full == 0) return;
        const auto launch = [&](auto kernel) {
            kernel<<<static_cast<unsigned>(full), full_tile::Geometry<R>::threads, 0, stream>>>(
                d_codes, d_anchors, d_outlier_index, d_outlier_value, num_outliers, L, cfg, radius, d_out, d_corrupt);
        };
        if (cfg.jump != kInterpNoJump) launch(interp_decode_full_kernel<T, R, C, true>);
        else launch(interp_decode_full_kernel<T, R, C, false>);
        GSZ_CUDA_LAUNCHED("interp_decode_full_kernel");
    });
    if (beside) fork.join(stream);
    if (d_lorenzo_tiles) {   // after every tile's stages: the Lorenzo points read values other launches wrote
        KernelConfig lt = cfg;
        lt.lorenzo_tiles = const_cast<uint8_t*>(d_lorenzo_tiles);
        // The Lorenzo tiles' ids (tile ids fit 32 bits: check_grid).
        cuda::DeviceBuffer<uint32_t> list(L.num_tiles, stream), count(1, stream);
        const thrust::counting_iterator<uint32_t> ids(0);
        size_t temp_bytes = 0;
        GSZ_CUDA(cub::DeviceSelect::Flagged(nullptr, temp_bytes, ids, d_lorenzo_tiles, list.data(), count.data(),
                                            static_cast<int64_t>(L.num_tiles), stream));
        cuda::DeviceBuffer<uint8_t> temp(temp_bytes, stream);
        GSZ_CUDA(cub::DeviceSelect::Flagged(temp.data(), temp_bytes, ids, d_lorenzo_tiles, list.data(), count.data(),
                                            static_cast<int64_t>(L.num_tiles), stream));
        // 3-D: a warp per row of a wavefront (8 rows at most); 1-D and 2-D rows
        // follow one another, so one warp scans and a second helps load and store.
        const unsigned threads = L.rank == 3 ? 256 : 64;
        const unsigned blocks = static_cast<unsigned>(std::min<uint64_t>(L.num_tiles, 4096));
        const size_t smem = L.ws_size() * (sizeof(std::conditional_t<sizeof(T) == 4, int32_t, int64_t>) + 1);
        lorenzo_tiles_decode_kernel<T><<<blocks, threads, smem, stream>>>(d_codes, list.data(), count.data(), L, lt,
                                                                          radius, d_out);
        GSZ_CUDA_LAUNCHED("lorenzo_tiles_decode_kernel");
    }
}

template uint64_t interp_tune_sample_launch<float>(const float*, const InterpLayout&, cuda::DeviceBuffer<float>&,
                                                   cuda::PinnedBuffer<float>&, cudaStream_t);
template uint64_t interp_tune_sample_launch<double>(const double*, const InterpLayout&, cuda::DeviceBuffer<double>&,
                                                    cuda::PinnedBuffer<double>&, cudaStream_t);
template std::vector<double> interp_tune_sample_cuda<float>(const float*, const InterpLayout&, cudaStream_t);
template std::vector<double> interp_tune_sample_cuda<double>(const double*, const InterpLayout&, cudaStream_t);
template void interp_anchors_encode_cuda<float>(const float*, const InterpLayout&, const InterpConfig&, double,
                                                uint32_t, int, InterpDeviceEncoded<float>&, cudaStream_t);
template void interp_anchors_encode_cuda<double>(const double*, const InterpLayout&, const InterpConfig&, double,
                                                 uint32_t, int, InterpDeviceEncoded<double>&, cudaStream_t);
template void interp_anchors_launch_cuda<float>(const float*, const InterpLayout&, const InterpConfig&, double,
                                                uint32_t, int, InterpDeviceEncoded<float>&, cudaStream_t);
template void interp_anchors_launch_cuda<double>(const double*, const InterpLayout&, const InterpConfig&, double,
                                                 uint32_t, int, InterpDeviceEncoded<double>&, cudaStream_t);
template void interp_anchors_finish_cuda<float>(const float*, const InterpLayout&, int, InterpDeviceEncoded<float>&,
                                                cudaStream_t);
template void interp_anchors_finish_cuda<double>(const double*, const InterpLayout&, int,
                                                 InterpDeviceEncoded<double>&, cudaStream_t);
template void interp_anchors_decode_cuda<float>(const uint16_t*, const float*, const uint64_t*, const uint64_t*,
                                                uint64_t, const uint64_t*, const float*, uint64_t,
                                                const InterpLayout&, const InterpConfig&, uint32_t, float*, uint32_t*,
                                                cudaStream_t);
template void interp_anchors_decode_cuda<double>(const uint16_t*, const double*, const uint64_t*, const uint64_t*,
                                                 uint64_t, const uint64_t*, const double*, uint64_t,
                                                 const InterpLayout&, const InterpConfig&, uint32_t, double*,
                                                 uint32_t*, cudaStream_t);
template void interp_encode_cuda<float>(const float*, const InterpLayout&, const InterpConfig&, double, uint32_t,
                                        InterpDeviceEncoded<float>&, cudaStream_t);
template void interp_encode_tiles_cuda<float>(const float*, const InterpLayout&, const InterpConfig&, double,
                                              uint32_t, InterpDeviceEncoded<float>&, cudaStream_t, const float*);
template void interp_encode_tiles_cuda<double>(const double*, const InterpLayout&, const InterpConfig&, double,
                                               uint32_t, InterpDeviceEncoded<double>&, cudaStream_t, const double*);
template void interp_outliers_cuda<float>(const float*, uint64_t, InterpDeviceEncoded<float>&, cudaStream_t);
template void interp_outliers_cuda<double>(const double*, uint64_t, InterpDeviceEncoded<double>&, cudaStream_t);
template void interp_encode_cuda<double>(const double*, const InterpLayout&, const InterpConfig&, double, uint32_t,
                                         InterpDeviceEncoded<double>&, cudaStream_t);
template void interp_decode_cuda<float>(const uint16_t*, const float*, const uint64_t*, const float*, uint64_t,
                                        const uint8_t*, const InterpLayout&, const InterpConfig&, uint32_t, float*,
                                        uint32_t*, cudaStream_t);
template void interp_decode_cuda<double>(const uint16_t*, const double*, const uint64_t*, const double*, uint64_t,
                                         const uint8_t*, const InterpLayout&, const InterpConfig&, uint32_t,
                                         double*, uint32_t*, cudaStream_t);

}  // namespace gsz::predict
