// The G-Interp predictor (cuSZ-i): geometry, auto-tuning and the CPU backend.
// Per-element math and the tile rules: interp_math.hpp.
//
// Streams (archive sections, docs/FORMAT.md):
//   codes     one quant-code per element in raster order (anchors get the
//             zero-residual code `radius`), Huffman-coded like lorenzo's
//   anchors   exact values of the anchor grid, raster order
//   outliers  raster indices (strictly increasing) and exact values of the
//             points whose code is 0
#pragma once

#include "predict/interp/interp_math.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace gsz::predict {

// Default geometry for an array (rank 1..4, dims fastest first): size-1 dims
// dropped, 4-D run as 3-D with the two slowest dims merged.  Anchor stride and
// tile: 3-D 8 and 32x8x8 (the paper's 8^3 blocks, run four along x as on its
// GPU), 2-D 16 and 64x16 (its 16^2 chunks), 1-D 512 and 2048 (its 512 chunks).
InterpLayout interp_layout(uint32_t rank, const uint64_t* dims);

// What the predictor was told or chose: the archive stores it, the decoder
// replays it.
struct InterpConfig {
    double alpha = 1.75, beta = 4.0;
    uint8_t order[3] = {0, 1, 2};    // dims in processing order (0 = fastest)
    uint8_t spline[3] = {kSplineNotAKnot, kSplineNotAKnot, kSplineNotAKnot};   // cubic per dim
    double level_eb[kInterpMaxLevels] = {};   // bound of the level with stride 2^l
};

// Caller's choices; a field left at its "auto" value is tuned.
struct InterpOverrides {
    double alpha = 0;        // 0 = auto: cuSZ-i's Eq. 1 of the value-range-relative bound
    double beta = 0;         // 0 = auto: 4
    int spline = -1;         // -1 = auto per dim; else InterpSpline for every dim
    int order[3] = {-1, -1, -1};   // order[0] < 0 = auto
};

// cuSZ-i's Eq. 1: alpha from the value-range-relative bound.
double interp_alpha_for(double relative_bound);

// Sample points of the auto-tuner: per point, the point then, for each used
// dim, its neighbours at -3, -1, +1, +3 along that dim (the point itself where
// the dim has no room for them).  A backend gathers the values at these raster
// indices and hands them to interp_configure, which runs on the host for both.
std::vector<uint64_t> interp_tune_indices(const InterpLayout& layout);

// Tunes (per-dim cubic spline, dimension order from least to most smooth,
// alpha) from the gathered samples, applies the overrides and derives the
// level bounds e_l = eb / min(alpha^l, beta).  Deterministic: sums in double
// in a fixed order.
InterpConfig interp_configure(const InterpLayout& layout, std::span<const double> samples, double eb_abs,
                              double value_range, const InterpOverrides& overrides);

template <class T>
struct InterpEncoded {
    std::vector<uint16_t> codes;       // one per element, raster order
    std::vector<T> anchors;
    std::vector<uint64_t> outlier_index;
    std::vector<T> outlier_value;
};

template <class T>
void interp_encode_cpu(const T* data, const InterpLayout& layout, const InterpConfig& config, double eb,
                       uint32_t radius, InterpEncoded<T>& out, int num_threads);

// Throws GSZ_STATUS_CORRUPT when a zero code has no outlier entry.  The caller
// has checked the section sizes and that outlier indices increase strictly.
template <class T>
void interp_decode_cpu(std::span<const uint16_t> codes, std::span<const T> anchors,
                       std::span<const uint64_t> outlier_index, std::span<const T> outlier_value,
                       const InterpLayout& layout, const InterpConfig& config, uint32_t radius, T* out,
                       int num_threads);

}  // namespace gsz::predict
