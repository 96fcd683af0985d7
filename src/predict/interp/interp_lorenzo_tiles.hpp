// Lorenzo tiles (format version 10): per tile, the interp pipeline may code
// the tile's points by Lorenzo prediction with dual quantization instead of
// the spline hierarchy, where that costs fewer bits (rough regions, land
// masks, quantized sensor data: bench/NOTES.md, "a per-block choice").  SZ2
// and SZ3 choose between predictors per block the same way.
//
// What stays spline-coded in a Lorenzo tile: its anchors (the anchor stage
// codes them) and its low faces that a lower tile shares (local coordinate 0
// along a dim where the tile does not start the array), which the lower tile
// reads as its far face.  A face's points are predicted from that face alone,
// so neither of them reads a Lorenzo point, and the tiles stay independent.
// Every other owned point (the tile's "Lorenzo points") is put on the lattice
// of the finest level's bound, q = rint(x / 2e_0), and coded as q minus the
// Lorenzo prediction from the lattice values of its backward neighbours
// inside the tile (0 outside the array): a Lorenzo point's own lattice value
// (from its original value, or from its exact value when it is an outlier),
// any other point's the lattice value of its reconstruction.  The encoder
// computes both codings of a tile and keeps the one of lower cost
// (interp_code_cost, integers: the same choice on every backend).
#pragma once

#include "predict/interp/interp_math.hpp"
#include "predict/lorenzo/lorenzo_math.hpp"
#include "runtime/host_device.hpp"

#include <cstdint>

namespace gsz::predict {

// The caller's request (InterpOverrides::tiles).
enum InterpTileMode : uint8_t {
    kTilesSpline = 0,    // every tile spline-coded (archives as before version 10)
    kTilesAuto = 1,      // kTilesEach where a sample of tiles says it pays (interp_lorenzo_tiles_pay), else spline
    kTilesLorenzo = 2,   // every tile Lorenzo-coded (tests, studies)
    kTilesEach = 3,      // per tile, the coding of lower interp_code_cost (tests, studies)
};

// Whether a mode makes the per-tile choice (the encoders' phase).
GSZ_HD bool interp_tiles_choose(uint8_t mode) { return mode == kTilesAuto || mode == kTilesEach; }

// kTilesAuto's gate.  The per-tile choice costs GPU time on every tile it
// tries (bench/RESULTS.md: 15-35% of compression at rel 1e-3 / 1e-4) and buys
// little on smooth fields (wmag: +0.3% at rel 1e-3), much on rough, masked or
// quantized ones (mpl_membrane rel 1e-4 +38%, sz_testfloat +127%).  So the
// encoder first codes a sample of tiles (up to kInterpGateTiles, spread over
// the tile raster) with the choice and sums, over them, the spline's code cost
// of the Lorenzo points and what the tiles that chose Lorenzo save; the whole
// array takes the choice only where that saving is at least 1/40 of the cost.
// Integer sums of the same tiles: the same decision on every backend.  Measured
// on the shared fields (bench/RESULTS.md): every ratio gain above 2.5% kept,
// the losses of coads and sz_testdouble (-4.4%, -4.9%) avoided.
inline constexpr uint64_t kInterpGateTiles = 256;

struct InterpGateSums {
    uint64_t spline_cost = 0;   // interp_code_cost of the spline codes of the tiles' Lorenzo points
    uint64_t saving = 0;        // spline_cost - Lorenzo's cost, over the tiles that chose Lorenzo
};

// The number of sample tiles, and sample tile k (raster id): the midpoints of
// equal shares of the raster.
GSZ_HD uint64_t interp_gate_count(uint64_t num_tiles) {
    return num_tiles < kInterpGateTiles ? num_tiles : kInterpGateTiles;
}
GSZ_HD uint64_t interp_gate_tile(uint64_t num_tiles, uint64_t k) {
    return (2 * k + 1) * num_tiles / (2 * interp_gate_count(num_tiles));
}
GSZ_HD bool interp_lorenzo_tiles_pay(const InterpGateSums& s) {
    return s.spline_cost > 0 && s.saving * 40 >= s.spline_cost;
}

// Whether local point c of a tile is one of its Lorenzo points.
GSZ_HD bool interp_lorenzo_point(const InterpLayout& L, const InterpLayout::TileBox& box, const uint32_t* c) {
    bool ok = !L.is_anchor(c);
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (uint32_t d = 0; d < 3; ++d) {
        const uint32_t end = box.last[d] + 1 < L.tile[d] ? box.last[d] + 1 : L.tile[d];
        ok &= c[d] < end && !(c[d] == 0 && box.origin[d] > 0);
    }
    return ok;
}

// The lattice value a neighbour contributes: 0 where there is none (NaN, Inf,
// or too far out), as lattice_of.
template <class T>
GSZ_HD int64_t interp_lattice(T v, double r) {
    int64_t q;
    lattice_of(v, r, q);
    return q;
}

// The Lorenzo prediction of the point at workspace offset w (local coordinates
// c) from the lattice values q[] of the workspace; neighbours before local
// coordinate 0 (only at the array's start) are 0.  ws strides s1, s2.
template <class Q>
GSZ_HD int64_t interp_lorenzo_prediction(uint32_t rank, const uint32_t* c, uint32_t w, uint32_t s1, uint32_t s2,
                                         const Q* q) {
    const bool x = c[0] > 0, y = c[1] > 0, z = c[2] > 0;
    const auto at = [&](bool has, uint32_t back) -> int64_t { return has ? static_cast<int64_t>(q[w - back]) : 0; };
    if (rank == 1) return lorenzo_predict_1d(at(x, 1));
    if (rank == 2) return lorenzo_predict_2d(at(x, 1), at(y, s1), at(x && y, 1 + s1));
    return lorenzo_predict_3d(at(x, 1), at(y, s1), at(z, s2), at(x && y, 1 + s1), at(x && z, 1 + s2),
                              at(y && z, s1 + s2), at(x && y && z, 1 + s1 + s2));
}

// What a code is taken to cost, in 1/256 bits: about what the entropy stage
// spends on a residual r (a quarter bit for r = 0, 2·log2|r| + 1 bits else),
// an outlier its index and value.  (A tile's order-0 entropy of the codes'
// size classes was tried instead: it chose worse on wmag2d and ncl_atm at rel
// 1e-3, bench/RESULTS.md.)
GSZ_HD uint32_t interp_residual_cost(uint32_t a) {   // |r| = a, below 2^31
#if defined(__CUDA_ARCH__)
    const uint32_t bits = static_cast<uint32_t>(32 - __clz(static_cast<int>(a)));
#else
    const uint32_t bits = a == 0 ? 0u : static_cast<uint32_t>(32 - __builtin_clz(a));
#endif
    return a == 0 ? 64u : (2u * bits + 1u) * 256u;
}

GSZ_HD uint32_t interp_code_cost(uint16_t code, int64_t radius) {
    if (code == 0) return 96u * 256u;
    // Radii are below 2^15 (quant-codes are 16 bits): 32-bit arithmetic suffices.
    const int32_t r = static_cast<int32_t>(code) - static_cast<int32_t>(radius);
    return interp_residual_cost(static_cast<uint32_t>(r < 0 ? -r : r));
}

// A point's squared error in units of 2^-24 of the squared bound (the error
// is at most the bound: at most 2^24), from the bound's reciprocal inv_eb;
// 0 for an outlier (stored exactly).  Integers, so a tile's sum is the same in
// any order on any backend.
template <class T>
GSZ_HD uint32_t interp_error_units(T x, T reconstructed, uint16_t code, double inv_eb) {
    if (code == 0) return 0;
    const double d = (static_cast<double>(reconstructed) - static_cast<double>(x)) * inv_eb;
    const double units = d * d * 16777216.0;
    return units < 16777216.0 ? static_cast<uint32_t>(units) : 16777216u;
}

// Lorenzo with the same-row neighbour (x - 1) left out: what the decoder adds
// along a row (interp_lorenzo_prediction = west + this, wrapping).
template <class Q>
GSZ_HD int64_t interp_lorenzo_rest(uint32_t rank, const uint32_t* c, uint32_t w, uint32_t s1, uint32_t s2,
                                   const Q* q) {
    const bool x = c[0] > 0, y = c[1] > 0, z = c[2] > 0;
    const auto at = [&](bool has, uint32_t back) -> uint64_t {
        return has ? static_cast<uint64_t>(static_cast<int64_t>(q[w - back])) : 0u;
    };
    if (rank == 1) return 0;
    if (rank == 2) return static_cast<int64_t>(at(y, s1) - at(x && y, 1 + s1));
    return static_cast<int64_t>(at(y, s1) + at(z, s2) - at(x && y, 1 + s1) - at(x && z, 1 + s2) - at(y && z, s1 + s2) +
                                at(x && y && z, 1 + s1 + s2));
}

// log2(x) in 1/256ths for x >= 1, from integers alone (the mantissa's
// fraction taken as linear: within 0.09 of log2), 0 for x = 0.
GSZ_HD int64_t interp_log2_q8(uint64_t x) {
    if (x == 0) return 0;
#if defined(__CUDA_ARCH__)
    const int b = 63 - __clzll(static_cast<long long>(x));
#else
    const int b = 63 - __builtin_clzll(x);
#endif
    const uint64_t frac = b >= 8 ? (x >> (b - 8)) & 255u : (x << (8 - b)) & 255u;
    return static_cast<int64_t>(b) * 256 + static_cast<int64_t>(frac);
}

// The choice of a tile from its two codings' costs (interp_code_cost, summed)
// and squared errors (interp_error_units, summed) over its n Lorenzo points.
// Where Lorenzo's error is the larger, it pays 2 bits a point per doubling
// (four times the high-rate trade of half a bit: a dual-quantized point's
// error fills the bound where a well predicted spline point's stays inside
// it; with half a bit PSNR fell 0.1 dB on etopo5 and ncl_atm_temp3d at rel
// 1e-3); a smaller error earns nothing (counted as a gain it chose lower
// ratio for higher PSNR: sz_testdouble rel 1e-3 -15%).  Both errors count
// from a floor of kInterpErrorFloorUnits a point (an RMS error of 1/16 of the
// bound): below it neither is worth bits, and without it a tile the spline
// reconstructs exactly (a land mask far inside the bound: vtkdata_tos at rel
// 1e-3, 0 error units) read any Lorenzo error as ~14 doublings and never
// chose Lorenzo, at half the ratio (bench/NOTES.md, session 45).  And Lorenzo
// must come out 3/64 cheaper, a margin for the estimate's misses (the
// contexts of the entropy stage): bench/RESULTS.md has the rules measured.
inline constexpr uint64_t kInterpErrorFloorUnits = uint64_t{1} << 16;

// Whether Lorenzo is tried at all on a tile: where it has Lorenzo points.
// (A floor of 2 bits a point of spline cost skipped the cheaper tiles until
// session 45: they chose Lorenzo on masked fields, ncl_pop rel 1e-4 +17% and
// vtkdata_tos +11% without it; the estimate, interp_lorenzo_skip, keeps most
// tiles from building lattices anyway.)
GSZ_HD bool interp_lorenzo_may_win(uint64_t spline_cost, uint64_t n) { return n > 0 && spline_cost > 0; }

GSZ_HD bool interp_prefer_lorenzo(uint64_t spline_cost, uint64_t lorenzo_cost, uint64_t spline_error,
                                  uint64_t lorenzo_error, uint64_t n) {
    if (!interp_lorenzo_may_win(spline_cost, n)) return false;
    const uint64_t floor = n * kInterpErrorFloorUnits;
    const int64_t more = interp_log2_q8(lorenzo_error + floor) - interp_log2_q8(spline_error + floor);
    const int64_t distortion = (more > 0 ? more : 0) * static_cast<int64_t>(n) * 2;
    return (static_cast<int64_t>(lorenzo_cost) + distortion) * 64 < static_cast<int64_t>(spline_cost) * 61;
}

// A pre-test of a tile's Lorenzo cost from the values the tile loaded, before
// any lattice or Lorenzo code is built.  A Lorenzo point is predicted by
// Lorenzo from its backward neighbours as the tile's workspace holds them
// before its first stage (their original values; an anchor's, its start value:
// the anchor stage's reconstruction), none before local coordinate 0 (as
// interp_lorenzo_prediction), in T, neighbours added in one fixed order so
// that every backend rounds alike; its residual |x - p| in lattice steps (r =
// 1 / 2e), rounded half up, is priced as interp_code_cost prices a code (2^14
// steps or more, NaN and Inf as an outlier).  Dual quantization's code is this
// residual give or take the rounding of the neighbours' lattice values, so
// over a tile the sum is close to Lorenzo's cost.
//
// interp_lorenzo_estimate_of is the arithmetic, for the point's value `own`
// and its neighbour (dx, dy, dz) back at(has, dx, dy, dz), T(0) where `has` is
// false.
template <class T, class At>
GSZ_HD uint32_t interp_lorenzo_estimate_of(T own, const uint32_t* c, uint32_t rank, At&& at, double r) {
    const bool x = c[0] > 0, y = c[1] > 0, z = c[2] > 0;
    T p = at(x, 1, 0, 0);
    if (rank >= 2) p = p + at(y, 0, 1, 0) - at(x && y, 1, 1, 0);
    if (rank >= 3)
        p = p + at(z, 0, 0, 1) - at(x && z, 1, 0, 1) - at(y && z, 0, 1, 1) + at(x && y && z, 1, 1, 1);
    const double steps = ::fabs(static_cast<double>(own - p)) * r + 0.5;
    if (!(steps < 16384.0)) return 96u * 256u;   // NaN too
    return interp_residual_cost(static_cast<uint32_t>(steps));
}

// The estimate of Lorenzo point c (workspace offset w, array index g) after
// the tile's stages: its neighbours' original values from the array, an
// anchor's start value from the workspace, which the stages leave alone.
template <class T>
GSZ_HD uint32_t interp_lorenzo_estimate(const T* data, uint64_t g, const T* ws, uint32_t w, const uint32_t* c,
                                        const InterpLayout& L, double r) {
    const auto at = [&](bool has, uint32_t dx, uint32_t dy, uint32_t dz) -> T {
        if (!has) return T(0);
        const uint32_t n[3] = {c[0] - dx, c[1] - dy, c[2] - dz};
        if (L.is_anchor(n)) return ws[w - dx - dy * L.ws_stride(1) - dz * L.ws_stride(2)];
        return data[g - dx - dy * L.dims[0] - dz * L.dims[0] * L.dims[1]];
    };
    return interp_lorenzo_estimate_of(data[g], c, L.rank, at, r);
}

// Whether a tile keeps the spline without Lorenzo's codes: where the
// estimate's sum over its Lorenzo points misses interp_prefer_lorenzo's
// margin.  It skips 73-76% of etopo5's tiles past the floor at rel 1e-3 and
// 1e-4, 80-99% of wmag's and wmag2d's (bench/NOTES.md, session 43); every
// `auto` archive of the shared fields is unchanged, one `each` archive grows
// (wmag at rel 1e-4, by 52 bytes of 0.75 MB).  Estimating from every other
// row instead (half the work) cost etopo5 0.6% of its ratio at rel 1e-4; in
// float arithmetic for float data it chose the same and ran no faster.
GSZ_HD bool interp_lorenzo_skip(uint64_t spline_cost, uint64_t estimate) {
    return estimate * 64 >= spline_cost * 61;
}

}  // namespace gsz::predict
