// Per-element arithmetic and tile geometry of the G-Interp predictor (cuSZ-i,
// SC'24 §V; reference-algorithms.md §2), shared by host and device.
//
// Anchors (every point whose used coordinates are all multiples of the anchor
// stride S) are stored exactly ("raw") or coded: put on the lattice of the
// coarsest level's bound and Lorenzo-predicted over the anchor grid (below).  The array is cut into tiles whose extents are
// multiples of S; a tile's workspace is the tile plus its far faces (33x9x9 for
// a 32x8x8 tile).  Inside the workspace, levels with strides S/2, ..., 2, 1
// interpolate, one stage per dimension, the points that are odd multiples of
// the stride along the stage's dimension, multiples of it along the dimensions
// already done at this level and multiples of twice it along the others.
// Predictions read only points on the same line inside the workspace, and the
// spline a point gets depends only on its local coordinate and the workspace
// extent along the stage's dimension, which neighbouring tiles share on their
// common faces: so a face point is computed bit for bit the same by both tiles,
// and tiles are independent (each writes only the points it owns: local
// coordinates below the tile extent).
//
// Everything is computed in double from values of T, one IEEE operation at a
// time (no FMA contraction on either side), so encoder and decoder, CPU and
// GPU, predict the very same bits.
#pragma once

#include "predict/fill/fill_mask.hpp"
#include "predict/lorenzo/lorenzo_math.hpp"
#include "runtime/host_device.hpp"

#include <cmath>
#include <cstdint>

namespace gsz::predict {

inline constexpr uint32_t kInterpMaxLevels = 9;   // anchor stride up to 512

// The default geometry per predictor rank (interp_layout): anchor stride and
// tile extents, fastest first.
struct InterpGeometry {
    uint32_t stride, tile[3];
};
inline constexpr InterpGeometry kInterpGeometry1d = {512, {2048, 1, 1}};
inline constexpr uint32_t kInterpMinStride1d = 2;   // 1-D layouts may take strides 2 .. 512 (interp_layout)
inline constexpr InterpGeometry kInterpGeometry2d = {16, {64, 16, 1}};
inline constexpr InterpGeometry kInterpGeometry3d = {8, {32, 8, 8}};

enum InterpSpline : uint8_t { kSplineNotAKnot = 0, kSplineNatural = 1 };

// The jump guard's "off" threshold (interp_spline): no difference exceeds it.
inline constexpr double kInterpNoJump = HUGE_VAL;

// A float at most the jump threshold less 2^-20 of it: float neighbours whose
// float differences (within 2^-24 of the exact ones) all lie at or below it
// cannot trigger the guard, so a kernel may skip its double test for them.
// 0 (never skip) for a threshold beyond the float range.
inline float interp_jump_below_f32(double jump) {
    if (jump == kInterpNoJump) return HUGE_VALF;
    return jump <= 3.4028234663852886e38 ? static_cast<float>(jump * (1.0 - 0x1p-20)) : 0.0f;
}

// The quantizer of one level: bound e_l, lattice step 2·e_l and its reciprocal.
struct InterpLevelQuant {
    double eb = 0, ebx2 = 0, r = 0;
    static InterpLevelQuant from_bound(double eb_level) {
        InterpLevelQuant q;
        q.eb = eb_level;
        q.ebx2 = 2.0 * eb_level;
        q.r = 1.0 / q.ebx2;
        return q;
    }
};

struct InterpLayout {
    uint32_t rank = 1;                 // predictor rank 1..3 (size-1 dims dropped, 4-D merged)
    uint64_t dims[3] = {1, 1, 1};      // fastest first
    uint32_t anchor_stride = 8;        // S, a power of two
    uint32_t num_levels = 3;           // log2(S)
    uint32_t tile[3] = {1, 1, 1};      // tile extents, multiples of S (1 for unused dims)
    uint64_t grid[3] = {1, 1, 1};      // tiles per dim
    uint64_t num_tiles = 1;
    uint64_t anchor_dims[3] = {1, 1, 1};
    uint64_t num_anchors = 1;
    uint64_t num_elements = 1;

    // Workspace extents and strides (tile + 1 along used dims).
    GSZ_HD uint32_t ws_extent(int d) const { return d < static_cast<int>(rank) ? tile[d] + 1 : 1; }
    GSZ_HD uint32_t ws_stride(int d) const {
        return d == 0 ? 1u : d == 1 ? ws_extent(0) : ws_extent(0) * ws_extent(1);
    }
    GSZ_HD uint32_t ws_size() const { return ws_extent(0) * ws_extent(1) * ws_extent(2); }
    GSZ_HD uint32_t tile_points() const { return tile[0] * tile[1] * tile[2]; }

    struct TileBox {
        uint64_t origin[3];
        uint32_t last[3];   // inclusive local extent of the workspace inside the array
    };
    GSZ_HD TileBox tile_box(uint64_t tile_id) const {
        TileBox b{};
        const uint64_t t[3] = {tile_id % grid[0], (tile_id / grid[0]) % grid[1], tile_id / (grid[0] * grid[1])};
        for (int d = 0; d < 3; ++d) {
            b.origin[d] = t[d] * tile[d];
            const uint64_t left = dims[d] - 1 - b.origin[d];
            const uint32_t full = d < static_cast<int>(rank) ? tile[d] : 0;
            b.last[d] = static_cast<uint32_t>(left < full ? left : full);
        }
        return b;
    }
    GSZ_HD uint64_t global_index(const uint64_t* origin, const uint32_t* c) const {
        return ((origin[2] + c[2]) * dims[1] + (origin[1] + c[1])) * dims[0] + (origin[0] + c[0]);
    }
    GSZ_HD uint64_t anchor_index(const uint64_t* origin, const uint32_t* c) const {
        const uint64_t a0 = (origin[0] + c[0]) / anchor_stride, a1 = (origin[1] + c[1]) / anchor_stride,
                       a2 = (origin[2] + c[2]) / anchor_stride;
        return (a2 * anchor_dims[1] + a1) * anchor_dims[0] + a0;
    }
    GSZ_HD bool is_anchor(const uint32_t* c) const {
        // Tiles start at multiples of S, so local multiples are global ones.
        return ((c[0] | c[1] | c[2]) & (anchor_stride - 1)) == 0;   // S is a power of two
    }
};

// Division by n (n < 2^16) of numbers below 2^16 by a multiply-high: m = ceil(2^32 / n)
// gives floor(i / n) = (i·m) >> 32 exactly when i·n < 2^32 (the rounding
// error i·(m − 2^32/n)/2^32 < i/2^32 < 1/n).  Workspaces hold fewer than 2^16
// points, so stage indices and counts are below that.
struct InterpDivisor {
    uint32_t m = 0;   // 0 for n = 1
    static GSZ_HD InterpDivisor of(uint32_t n) {
        InterpDivisor d;
        d.m = n > 1 ? 0xffffffffu / n + 1 : 0;   // ceil(2^32 / n) by a 32-bit division (a stage may have no points: n = 0)
        return d;
    }
    GSZ_HD uint32_t divide(uint32_t i) const {
        return m == 0 ? i : static_cast<uint32_t>((static_cast<uint64_t>(i) * m) >> 32);
    }
};

// Tiles are numbered in raster order of the tile grid.  A tile is full when
// its workspace (tile and far faces) lies inside the array: tile t along a
// used dim d is full when t < grid[d] - 1 (the last one along each used dim
// never has its far face).  The CUDA backend launches the full tiles and the
// others ("edge" tiles) as two grids, each block finding its tile by these maps.
GSZ_HD uint64_t interp_full_tile_count(const InterpLayout& L) {
    uint64_t n = 1;
    for (uint32_t d = 0; d < L.rank; ++d) n *= L.grid[d] - 1;
    return n;
}

// The box of full tile k (k < interp_full_tile_count, below 2^31: one CUDA
// grid) of a layout of rank Rank (2 or 3) with tile extents tile0..2.
template <uint32_t Rank>
GSZ_HD InterpLayout::TileBox interp_full_tile_box(const InterpLayout& L, uint32_t k, uint32_t tile0, uint32_t tile1,
                                                  uint32_t tile2) {
    const uint32_t n0 = static_cast<uint32_t>(L.grid[0] - 1), n1 = static_cast<uint32_t>(L.grid[1] - 1);
    InterpLayout::TileBox box;
    box.origin[0] = uint64_t{k % n0} * tile0;
    box.last[0] = tile0;
    k /= n0;
    if constexpr (Rank == 3) {
        box.origin[1] = uint64_t{k % n1} * tile1;
        box.origin[2] = uint64_t{k / n1} * tile2;
        box.last[2] = tile2;
    } else {
        box.origin[1] = uint64_t{k} * tile1;
        box.origin[2] = 0;
        box.last[2] = 0;
    }
    box.last[1] = tile1;
    return box;
}

// The raster index of edge tile k (k below num_tiles - interp_full_tile_count):
// the tiles last along used dim d and not last along the used dims before it,
// for d = 0, 1, ..., one group after the other.
GSZ_HD uint64_t interp_edge_tile_id(const InterpLayout& L, uint64_t k) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (uint32_t d = 0; d < 3; ++d) {
        if (d >= L.rank) break;
        uint64_t radix[3] = {1, 1, 1}, size = 1;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
        for (uint32_t j = 0; j < 3; ++j) {
            if (j < L.rank) radix[j] = j < d ? L.grid[j] - 1 : j > d ? L.grid[j] : 1;
            size *= radix[j];
        }
        if (k >= size) {
            k -= size;
            continue;
        }
        uint64_t t[3];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
        for (uint32_t j = 0; j < 3; ++j) {
            t[j] = k % radix[j];
            k /= radix[j];
        }
        t[d] = L.grid[d] - 1;
        return (t[2] * L.grid[1] + t[1]) * L.grid[0] + t[0];
    }
    return 0;   // k >= the number of edge tiles: not launched
}

// The points of one stage: per dim the first local coordinate, the step and
// the count; point i is (first + (i mod n0)·step, ...), dim 0 fastest.
struct InterpStage {
    uint32_t dim = 0;   // the dimension interpolated along
    uint32_t first[3] = {0, 0, 0}, step[3] = {0, 0, 0}, count[3] = {1, 1, 1};
    uint32_t total = 0;
    InterpDivisor by_count0, by_count1;   // division by count[0] and count[1]
    // Hoisted for the point loop: the workspace strides, the inclusive extent
    // along `dim` and the workspace distance of one step u along it.
    uint32_t ws_stride1 = 0, ws_stride2 = 0, last_along = 0;
    int64_t neighbour_stride = 0;

    GSZ_HD void point(uint32_t i, uint32_t* c) const {
        const uint32_t rest = by_count0.divide(i), i2 = by_count1.divide(rest);
        c[0] = first[0] + (i - rest * count[0]) * step[0];
        c[1] = first[1] + (rest - i2 * count[1]) * step[1];
        c[2] = first[2] + i2 * step[2];
    }
    // Point i as a workspace offset and its coordinate along `dim`, without
    // indexing arrays by a runtime value (which would put them in GPU local memory).
    GSZ_HD void locate(uint32_t i, uint32_t& offset, uint32_t& along) const {
        const uint32_t rest = by_count0.divide(i), i2 = by_count1.divide(rest);
        const uint32_t c0 = first[0] + (i - rest * count[0]) * step[0];
        const uint32_t c1 = first[1] + (rest - i2 * count[1]) * step[1];
        const uint32_t c2 = first[2] + i2 * step[2];
        offset = c0 + c1 * ws_stride1 + c2 * ws_stride2;
        along = dim == 0 ? c0 : dim == 1 ? c1 : c2;
    }
};

// A processing order of the dims, with every index static so that a GPU
// keeps it in registers.
struct InterpOrder {
    uint8_t dim[3];
    GSZ_HD uint32_t at(uint32_t k) const { return k == 0 ? dim[0] : k == 1 ? dim[1] : dim[2]; }
    GSZ_HD uint32_t position(uint32_t d) const { return dim[0] == d ? 0u : dim[1] == d ? 1u : 2u; }
};

// Stage k (0-based, in processing order) of the level with stride u, inside a
// workspace whose inclusive local extents are `last`.
GSZ_HD InterpStage interp_stage(const InterpLayout& layout, InterpOrder order, uint32_t k, uint32_t u,
                                const uint32_t* last) {
    InterpStage s;
    s.dim = order.at(k);
    s.total = 1;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (uint32_t d = 0; d < 3; ++d) {
        if (d >= layout.rank) continue;   // count 1 at coordinate 0
        const uint32_t j = order.position(d);
        const uint32_t L = last[d];
        if (j == k) {          // odd multiples of u
            s.first[d] = u;
            s.step[d] = 2 * u;
            s.count[d] = (L / u + 1) / 2;
        } else if (j < k) {    // multiples of u
            s.step[d] = u;
            s.count[d] = L / u + 1;
        } else {               // multiples of 2u
            s.step[d] = 2 * u;
            s.count[d] = L / (2 * u) + 1;
        }
        s.total *= s.count[d];
    }
    s.by_count0 = InterpDivisor::of(s.count[0]);
    s.by_count1 = InterpDivisor::of(s.count[1]);
    s.ws_stride1 = layout.ws_stride(1);
    s.ws_stride2 = layout.ws_stride(2);
    s.last_along = s.dim == 0 ? last[0] : s.dim == 1 ? last[1] : last[2];
    s.neighbour_stride = static_cast<int64_t>(u) * (s.dim == 0 ? 1u : s.dim == 1 ? s.ws_stride1 : s.ws_stride2);
    return s;
}

// The point sets alone, for a rank and an order (tests and tools; the
// workspace facts of the stage are left 0).
inline InterpStage interp_stage(uint32_t rank, const uint8_t* order, uint32_t k, uint32_t u, const uint32_t* last) {
    InterpLayout shape;
    shape.rank = rank;
    InterpStage s = interp_stage(shape, InterpOrder{{order[0], order[1], order[2]}}, k, u, last);
    s.ws_stride1 = s.ws_stride2 = 0;
    s.neighbour_stride = 0;
    return s;
}

// A neighbour as the predictor sees it: NaN and +-Inf (stored exactly as
// outliers) read as 0, so they do not spread to their neighbours.
template <class T>
GSZ_HD double interp_neighbour(T v) {
    if constexpr (sizeof(T) == 4) {   // the same test in float: no conversion before it
        return ::fabsf(v) <= 3.4028234663852886e38f ? static_cast<double>(v) : 0.0;
    } else {
        const double x = static_cast<double>(v);
        return ::fabs(x) <= 1.7976931348623157e308 ? x : 0.0;   // false for NaN and Inf
    }
}

// The spline of the paper's four cases from the neighbours a, b, c, d at -3u,
// -u, +u, +3u (each already read through interp_neighbour; the ones a case does
// not use may hold anything).  has_d implies has_c.
GSZ_HD double interp_spline_unguarded(double a, double b, double c, double d, bool has_a, bool has_c, bool has_d,
                                      uint32_t spline) {
    if (has_d) {
        if (has_a) {
            if (spline == kSplineNatural) return (23.0 * (b + c) - 3.0 * (a + d)) / 40.0;
            return (9.0 * (b + c) - (a + d)) * 0.0625;
        }
        return (3.0 * b + 6.0 * c - d) * 0.125;
    }
    if (has_c) {
        if (has_a) return (6.0 * b + 3.0 * c - a) * 0.125;
        return (b + c) * 0.5;
    }
    return b;
}

// The spline behind the jump guard (threshold `jump`, kInterpNoJump = off):
// where the two nearest neighbours differ by more than `jump`, the point lies
// on one side of a jump, and the spline's midway value misses both: copy b.
// Where only an outer neighbour jumps, the cubic would carry that jump inside
// (a fill value three steps away moves the prediction by 1/16 of it): linear.
// Measured on the fill-value fields of ../shared/data: ratio x2-4 at rel 1e-3
// and 1e-4 (bench/NOTES.md).  *taken (when given) is set where the guard
// decides the prediction: an encoder that never took it writes the archive of
// the unguarded splines, and decoders then run without the tests.
GSZ_HD double interp_spline(double a, double b, double c, double d, bool has_a, bool has_c, bool has_d,
                            uint32_t spline, double jump, bool* taken = nullptr) {
    if (has_c && jump != kInterpNoJump) {   // off: no difference exceeds it, skip the tests
        const double bc = ::fabs(b - c), outer = ::fmax(has_a ? ::fabs(a - b) : 0.0, has_d ? ::fabs(c - d) : 0.0);
        if (::fmax(bc, outer) > jump) {
            if (taken) *taken = true;
            return bc > jump ? b : (b + c) * 0.5;
        }
    }
    return interp_spline_unguarded(a, b, c, d, has_a, has_c, has_d, spline);
}

// Whether the guard can be taken nowhere in a workspace whose values, as the
// predictor reads them (interp_neighbour), lie in [lo, hi]: every value a
// prediction reads is within eb of one of them (reconstructions within the
// level bounds <= eb, anchors and outliers exact or within eb), so no two
// differ by more than hi - lo + 2·eb.  The factor 1 + 2^-40 covers the
// roundings of this sum and of the guard's differences.
GSZ_HD bool interp_jump_quiet(double lo, double hi, double eb, double jump) {
    return (hi - lo + 2.0 * eb) * (1.0 + 0x1p-40) <= jump;
}

// The GPU encoders' quiet test (full_tile::LoadSpan): a tile whose values all
// lie within h of one reference spans at most 2h, and h leaves room for the
// roundings of computing it, so [r - h, r + h] passes interp_jump_quiet for
// every r: (2h + 2eb)(1 + 2^-39) <= jump.  Negative (no tile quiet) where the
// bound alone reaches the threshold; +inf with the guard off.
inline double interp_quiet_half_span(double jump, double eb) {
    if (jump == kInterpNoJump) return HUGE_VAL;
    return (jump * (1.0 - 0x1p-38) - 2.0 * eb) * 0.5;
}

// h as a float no larger than it (the float kernels test float differences
// rounded up against it).
inline float interp_quiet_half_span_f32(double h) {
    if (h == HUGE_VAL) return HUGE_VALF;
    if (h >= 3.4028234663852886e38) return 3.4028234663852886e38f;
    float f = static_cast<float>(h);
    if (static_cast<double>(f) > h) f = std::nextafter(f, -HUGE_VALF);
    return f;
}

// Prediction of the point at local coordinate p (an odd multiple of u) along a
// line of the workspace with inclusive extent L; `at` points at the point and
// `stride` is the workspace distance of one step u.  The paper's four cases:
// cubic with neighbours at -3u, -u, +u, +3u; quadratic with three of them;
// linear with -u and +u; the last point of an array with only -u copies it.
template <class T>
GSZ_HD double interp_predict(const T* at, int64_t stride, uint32_t p, uint32_t u, uint32_t L, uint32_t spline,
                             double jump, bool* taken = nullptr) {
    const bool has_a = p >= 3 * u, has_c = p + u <= L, has_d = p + 3 * u <= L;
    const double b = interp_neighbour(at[-stride]);
    const double c = has_c ? interp_neighbour(at[stride]) : 0.0;
    const double d = has_d ? interp_neighbour(at[3 * stride]) : 0.0;
    const double a = has_a && has_c ? interp_neighbour(at[-3 * stride]) : 0.0;
    return interp_spline(a, b, c, d, has_a, has_c, has_d, spline, jump, taken);
}

// In-loop quantization of x against its prediction.  Returns the code
// q + radius in [1, 2·radius - 1] and the reconstructed value (what the
// decoder rebuilds and later predictions read), or 0 for an outlier, whose
// exact value is stored (recon = x): non-finite x, |q| >= radius, or a
// reconstruction that rounding to T pushed past the bound eb.  A point
// holding the fill value takes its prediction (q = 0, reconstructed as the
// decoder does): the archive's mask restores its value.
template <class T>
GSZ_HD uint16_t interp_quantize(T x, double pred, const InterpLevelQuant& lq, double eb, int64_t radius, T& recon,
                                const FillValue& fill) {
    if (fill_holds(fill, x)) {
        recon = static_cast<T>(pred + 0.0 * lq.ebx2);   // interp_reconstruct's of the code `radius`
        return static_cast<uint16_t>(radius);
    }
    const double v = (static_cast<double>(x) - pred) * lq.r;
    if (::fabs(v) < static_cast<double>(radius)) {   // false for NaN and Inf
        const int64_t q = static_cast<int64_t>(::llrint(v));
        if (q > -radius && q < radius) {
            const T rec = static_cast<T>(pred + static_cast<double>(q) * lq.ebx2);
            if (within_bound(x, rec, eb)) {
                recon = rec;
                return static_cast<uint16_t>(q + radius);
            }
        }
    }
    recon = x;
    return 0;
}

template <class T>
GSZ_HD T interp_reconstruct(uint16_t code, double pred, const InterpLevelQuant& lq, int64_t radius) {
    return static_cast<T>(pred + static_cast<double>(static_cast<int64_t>(code) - radius) * lq.ebx2);
}

// Level of stride u (1, 2, 4, ...): index into the level bounds (0 = finest).
GSZ_HD uint32_t interp_level_index(uint32_t u) {
    uint32_t l = 0;
    while ((1u << l) < u) ++l;
    return l;
}

// One stage point (workspace offset, coordinate along the stage's dim),
// encoder side: predict from the workspace, quantize the original value held
// there and replace it by its reconstruction.
template <class T>
GSZ_HD uint16_t interp_encode_point(T* ws, const InterpStage& s, uint32_t offset, uint32_t along, uint32_t u,
                                    uint32_t spline, double jump, const InterpLevelQuant& lq, double eb,
                                    int64_t radius, const FillValue& fill, bool* taken = nullptr) {
    T* at = ws + offset;
    const double pred = interp_predict(at, s.neighbour_stride, along, u, s.last_along, spline, jump, taken);
    T recon;
    const uint16_t code = interp_quantize(*at, pred, lq, eb, radius, recon, fill);
    *at = recon;
    return code;
}

// Decoder side: the prediction, for a point whose code is not 0.
template <class T>
GSZ_HD double interp_point_prediction(const T* ws, const InterpStage& s, uint32_t offset, uint32_t along, uint32_t u,
                                      uint32_t spline, double jump) {
    return interp_predict(ws + offset, s.neighbour_stride, along, u, s.last_along, spline, jump);
}

// The auto-tuner's sample (interp_configure): points on a grid of cell centres,
// 4096 of them for any rank, each with its neighbours at -3, -1, +1, +3 along
// every used dim (the point itself where the dim has no room for them).  Both
// backends gather the same values in the same order: per point, 1 + 4·rank.
GSZ_HD void interp_tune_counts(const InterpLayout& L, uint64_t* k) {
    const uint64_t want = L.rank == 1 ? 4096 : L.rank == 2 ? 64 : 16;
    for (int d = 0; d < 3; ++d) k[d] = L.dims[d] < want ? L.dims[d] : want;
}

// Sample coordinate i of k along a dim of extent n: the centre of cell i of k.
GSZ_HD uint64_t interp_tune_coordinate(uint64_t n, uint64_t k, uint64_t i) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(n) * (2 * i + 1)) / (2 * k));
}

// Coordinates of sample point p (dim 0 fastest over the k grid).
GSZ_HD void interp_tune_point(const InterpLayout& L, const uint64_t* k, uint64_t p, uint64_t* g) {
    g[0] = interp_tune_coordinate(L.dims[0], k[0], p % k[0]);
    g[1] = interp_tune_coordinate(L.dims[1], k[1], (p / k[0]) % k[1]);
    g[2] = interp_tune_coordinate(L.dims[2], k[2], p / (k[0] * k[1]));
}

GSZ_HD bool interp_tune_room(const InterpLayout& L, const uint64_t* g, uint32_t d) {
    const uint64_t c = d == 0 ? g[0] : d == 1 ? g[1] : g[2];
    return c >= 3 && c + 3 < L.dims[d];
}

// Raster index of value j (0 .. 4·rank) of the sample at g.
GSZ_HD uint64_t interp_tune_index(const InterpLayout& L, const uint64_t* g, uint32_t j) {
    const uint64_t centre = (g[2] * L.dims[1] + g[1]) * L.dims[0] + g[0];
    if (j == 0) return centre;
    const uint32_t d = (j - 1) / 4, which = (j - 1) % 4;
    if (!interp_tune_room(L, g, d)) return centre;
    const uint64_t step = d == 0 ? 1 : d == 1 ? L.dims[0] : L.dims[0] * L.dims[1];
    const uint64_t off = (which == 0 || which == 3 ? 3 : 1) * step;
    return which < 2 ? centre - off : centre + off;
}

// Coded anchors.  Each anchor x gets its lattice value q = rint(x / (2·e_a))
// (e_a = half the coarsest level's bound, interp.hpp; 0 when x is not finite
// or too far out),
// and its quant-code is radius plus the first-order Lorenzo residual of q over
// the anchor grid (out-of-grid neighbours 0), so a decoder rebuilds every q by
// prefix sums along each dim.  An anchor whose residual is out of range, or
// whose T(q·2e_a) misses the bound, gets code 0: its exact value is a regular
// outlier and its residual is listed apart, so the sums still go through.
struct InterpAnchorGrid {
    uint64_t dims[3] = {1, 1, 1};   // anchor grid extents, fastest first

    GSZ_HD uint64_t count() const { return dims[0] * dims[1] * dims[2]; }
    // Raster index of anchor a in the array (stride S along the used dims).
    GSZ_HD uint64_t element(uint64_t a, const InterpLayout& L) const {
        const uint64_t a0 = a % dims[0], a1 = (a / dims[0]) % dims[1], a2 = a / (dims[0] * dims[1]);
        const uint64_t S = L.anchor_stride;
        return ((a2 * S) * L.dims[1] + a1 * S) * L.dims[0] + a0 * S;
    }
};

GSZ_HD InterpAnchorGrid interp_anchor_grid(const InterpLayout& L) {
    InterpAnchorGrid g;
    for (int d = 0; d < 3; ++d) g.dims[d] = L.anchor_dims[d];
    return g;
}

// Lattice value of an anchor (both dtypes: |v| < 2^52, the sums run in int64).
template <class T>
GSZ_HD int64_t interp_anchor_lattice(T x, const InterpLevelQuant& aq) {
    const double v = static_cast<double>(x) * aq.r;
    return ::fabs(v) < 4503599627370496.0 ? static_cast<int64_t>(::llrint(v)) : 0;   // NaN, Inf, far out: 0
}

// Lorenzo residual of anchor a from the lattice values q of the whole grid,
// in wrapping arithmetic (a hostile archive cannot overflow a signed value).
GSZ_HD uint64_t interp_anchor_residual(const int64_t* q, const InterpAnchorGrid& g, uint64_t a) {
    const uint64_t n0 = g.dims[0], n01 = g.dims[0] * g.dims[1];
    const uint64_t a0 = a % n0, a1 = (a / n0) % g.dims[1], a2 = a / n01;
    const bool x = a0 > 0, y = a1 > 0, z = a2 > 0;
    auto at = [&](bool bx, bool by, bool bz) -> uint64_t {
        return static_cast<uint64_t>(q[a - (bx ? 1 : 0) - (by ? n0 : 0) - (bz ? n01 : 0)]);
    };
    uint64_t d = at(false, false, false);
    if (x) d -= at(true, false, false);
    if (y) d -= at(false, true, false);
    if (z) d -= at(false, false, true);
    if (x && y) d += at(true, true, false);
    if (x && z) d += at(true, false, true);
    if (y && z) d += at(false, true, true);
    if (x && y && z) d -= at(true, true, true);
    return d;
}

// The code of anchor x with lattice value q and residual d, and the value the
// tiles start from (the reconstruction, or x itself for code 0).
template <class T>
GSZ_HD uint16_t interp_anchor_code(T x, int64_t q, uint64_t residual, const InterpLevelQuant& aq, double eb,
                                   int64_t radius, T& start) {
    const int64_t d = static_cast<int64_t>(residual);
    if (d > -radius && d < radius) {
        const T rec = lattice_value<T>(q, aq.ebx2);
        if (within_bound(x, rec, eb)) {   // false for NaN and Inf (their q is 0)
            start = rec;
            return static_cast<uint16_t>(d + radius);
        }
    }
    start = x;
    return 0;
}

GSZ_HD uint32_t interp_ws_offset(const InterpLayout& layout, const uint32_t* c) {
    return c[0] + c[1] * layout.ws_stride(1) + c[2] * layout.ws_stride(2);
}

// A tile writes the points below its extent; the far faces belong to the next tile.
GSZ_HD bool interp_owned(const InterpLayout& layout, const uint32_t* c) {
    return c[0] < layout.tile[0] && c[1] < layout.tile[1] && c[2] < layout.tile[2];
}

}  // namespace gsz::predict
