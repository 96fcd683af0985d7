// The G-Interp predictor (cuSZ-i): geometry, auto-tuning and the CPU backend.
// Per-element math and the tile rules: interp_math.hpp.
//
// Streams (archive sections, docs/FORMAT.md):
//   codes     one quant-code per element in raster order (raw anchors get
//             the zero-residual code `radius`), Huffman-coded like lorenzo's
//   anchors   raw: exact values of the anchor grid, raster order; coded: the
//             anchors' codes are in `codes` (interp_math.hpp), and this lists
//             the anchors with code 0 and their Lorenzo residuals
//   outliers  raster indices (strictly increasing) and exact values of the
//             points whose code is 0
#pragma once

#include "predict/interp/interp_math.hpp"
#include "predict/interp/interp_lorenzo_tiles.hpp"

#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

namespace gsz::predict {

// Default geometry for an array (rank 1..4, dims fastest first): size-1 dims
// dropped, 4-D run as 3-D with the two slowest dims merged.  Anchor stride and
// tile: 3-D 8 and 32x8x8 (the paper's 8^3 blocks, run four along x as on its
// GPU), 2-D 16 and 64x16 (its 16^2 chunks), 1-D 512 and 2048 (its 512 chunks).
// `stride_1d` (0 = the default) sets the anchor stride of a 1-D layout: a
// power of two from kInterpMinStride1d to the default 512 (the tile stays
// 2048); 2-D and 3-D layouts keep their default geometry.
InterpLayout interp_layout(uint32_t rank, const uint64_t* dims, uint32_t stride_1d = 0);

// Whether `stride` is an anchor stride a 1-D layout may have.
inline bool interp_valid_stride_1d(uint32_t stride) {
    return stride >= kInterpMinStride1d && stride <= kInterpGeometry1d.stride && (stride & (stride - 1)) == 0;
}

// What the predictor was told or chose: the archive stores it, the decoder
// replays it.
enum InterpAnchorMode : uint8_t { kAnchorsRaw = 0, kAnchorsCoded = 1 };

struct InterpConfig {
    uint8_t anchors = kAnchorsCoded;   // InterpAnchorMode, chosen by the anchor stage
    double alpha = 1.75, beta = 4.0;
    uint8_t order[3] = {0, 1, 2};    // dims in processing order (0 = fastest)
    uint8_t spline[3] = {kSplineNotAKnot, kSplineNotAKnot, kSplineNotAKnot};   // cubic per dim
    double level_eb[kInterpMaxLevels] = {};   // bound of the level with stride 2^l
    double jump = kInterpNoJump;              // jump guard threshold (interp_spline); kInterpNoJump = off
    uint8_t tiles = kTilesSpline;             // the encoder's request (InterpTileMode); the archive keeps its choices
    double lorenzo_eb = 0;                    // the bound of Lorenzo tiles' points (interp_lorenzo_bound)
    FillValue fill;                           // points holding it take their prediction (format version 13)
};

// Caller's choices; a field left at its "auto" value is tuned.
struct InterpOverrides {
    double alpha = 0;        // 0 = auto: cuSZ-i's Eq. 1 of the value-range-relative bound
    double beta = 0;         // 0 = auto: 4
    int spline = -1;         // -1 = auto per dim; else InterpSpline for every dim
    int order[3] = {-1, -1, -1};   // order[0] < 0 = auto
    int anchors = -1;        // -1 = auto (coded unless its outliers make it larger); else InterpAnchorMode
    bool jump_guard = true;  // threshold 95% of the value range (interp_jump_threshold)
    uint32_t anchor_stride = 0;   // 1-D arrays: 0 = auto (interp_choose_stride_1d); else interp_valid_stride_1d
    uint8_t tiles = kTilesSpline;   // InterpTileMode: spline or Lorenzo coding per tile (interp_lorenzo_tiles.hpp)
};

// The 1-D anchor stride.  The paper's 512-point chunks suit smooth series;
// on rough ones (cells of an unstructured mesh in storage order, sensor
// records) its coarse levels predict from points hundreds apart, worse than
// Lorenzo's neighbour, and a short stride does better (geocat_mpas at rel
// 1e-2: ratio 23.9 with 512, 28.8 with 2; bench/NOTES.md).  The choice is
// made on a sample of kInterpStrideSegments contiguous segments of
// kInterpStrideSegment values (the whole array when it is shorter than
// that), gathered by either backend and judged on the host by the same code,
// so both choose alike.  16K values: ~0.2 ms on the host, which the GPU
// pipeline waits for (the first cut, 64K values and a log2 per bin, cost 1.4
// ms, a third of a 0.5 GB array's compression on an H200).
inline constexpr uint64_t kInterpStrideSegment = 2048;
inline constexpr uint64_t kInterpStrideSegments = 8;

// First index of each segment of the sample of a 1-D array of n values
// (segments of min(n, kInterpStrideSegment) values, starts multiples of 512,
// increasing).
std::vector<uint64_t> interp_stride_segments(uint64_t n);

// The stride for these segments (each `segment` values long, one after the
// other in `sample`): for every candidate, the order-0 entropy of the
// open-loop quant-codes each level and the anchors (Lorenzo over the anchor
// grid) would get at their bounds, weighted by the share of points each holds;
// the smallest wins, a shorter stride only where it saves 1% and 0.002 bits a
// value (ties keep the paper's 512).  `overrides.anchor_stride`, when set, is
// returned as is.  Non-finite values are skipped.  Deterministic.
//
// With the tiles and the stride both automatic, one more candidate: every
// tile Lorenzo-coded (kTilesLorenzo, at the full bound: interp_lorenzo_bound)
// with the widest stride, estimated as the dual-quantized residuals' entropy,
// with its outliers (past the bound after rounding, or |residual| >= radius)
// at 64 bits and a value each, compared at equal distortion (plus log2 of
// the full bound over the levels' mean-square bound, interp_lorenzo_bound:
// 0.2-0.4 bits a value), and taken where it beats the best stride by the
// same margin.  On rough
// records no spline level predicts better than the neighbour (mpl_membrane,
// geocat_mpas, the halo positions: 14-37% fewer estimated bits), and per
// tile the choice cannot take Lorenzo at the full bound (a tile's error must
// match the spline's: interp_prefer_lorenzo).  SZ3 picks Lorenzo over its
// interpolation per array the same way.
struct InterpChoice1d {
    uint32_t stride = 512;
    bool lorenzo = false;   // every tile Lorenzo-coded: InterpOverrides::tiles = kTilesLorenzo
};
InterpChoice1d interp_choose_stride_1d(std::span<const float> sample, uint64_t segment, double eb_abs,
                                       double value_range, uint32_t radius, const InterpOverrides& overrides);
InterpChoice1d interp_choose_stride_1d(std::span<const double> sample, uint64_t segment, double eb_abs,
                                       double value_range, uint32_t radius, const InterpOverrides& overrides);

// The jump guard's threshold for a field's finite value range: 95% of it.  A
// fill value sits at one end of the range, so it differs from every datum by
// the range less the data's own span: the guard sees fills whose data span
// less than 5% of the range (every fill of ../shared/data: spans of 1e-18 to
// 1e-8 of it).  At half the range it also took the steepest peaks of real
// fields (wmag, vorticity, mpl_membrane, mpas), where the splines predict
// better (wmag rel 1e-2: ratio 21.43 -> 21.39) and the archive then made its
// decoders run the guard's tests (bench/NOTES.md).  Off (kInterpNoJump) for an
// empty, constant or overflowing range.
inline double interp_jump_threshold(double value_range) {
    return value_range > 0 && value_range < HUGE_VAL ? 0.95 * value_range : kInterpNoJump;
}

// cuSZ-i's Eq. 1: alpha from the value-range-relative bound.
double interp_alpha_for(double relative_bound);

// Sample points of the auto-tuner: per point, the point then, for each used
// dim, its neighbours at -3, -1, +1, +3 along that dim (the point itself where
// the dim has no room for them).  A backend gathers the values at these raster
// indices and hands them to interp_configure, which runs on the host for both.
std::vector<uint64_t> interp_tune_indices(const InterpLayout& layout);

// The tuner's choice from the gathered samples: per-dim cubic spline and the
// dimension order from least to most smooth, overrides applied.  It needs
// neither the bound nor the value range, so the GPU pipeline tunes while its
// range pass runs.  Deterministic: sums in double in a fixed order; float
// samples are widened exactly (the same choice as from their double copies).
struct InterpTuneChoice {
    uint8_t spline[3] = {kSplineNotAKnot, kSplineNotAKnot, kSplineNotAKnot};
    uint8_t order[3] = {0, 1, 2};
};
// `skip`: a fill value (as double; NaN = none): sample points with it among
// their values are left out, as those with non-finite ones.
InterpTuneChoice interp_tune(const InterpLayout& layout, std::span<const double> samples,
                             const InterpOverrides& overrides, double skip = NAN);
InterpTuneChoice interp_tune(const InterpLayout& layout, std::span<const float> samples,
                             const InterpOverrides& overrides, double skip = NAN);
// The configuration: the tuner's choice, alpha (cuSZ-i's Eq. 1 unless
// overridden), the level bounds e_l = eb / min(alpha^l, beta) and the jump
// guard's threshold.  The sample overloads tune first.
InterpConfig interp_configure(const InterpLayout& layout, const InterpTuneChoice& choice, double eb_abs,
                              double value_range, const InterpOverrides& overrides);
InterpConfig interp_configure(const InterpLayout& layout, std::span<const double> samples, double eb_abs,
                              double value_range, const InterpOverrides& overrides, double skip = NAN);
InterpConfig interp_configure(const InterpLayout& layout, std::span<const float> samples, double eb_abs,
                              double value_range, const InterpOverrides& overrides, double skip = NAN);
// The part of interp_configure that needs no sample: alpha, beta, the level
// bounds and the jump guard's threshold (spline and order left at their
// defaults).  interp_configure derives them here too, so the GPU pipeline can
// launch the anchor stage, which reads only the level bounds, before it tunes.
InterpConfig interp_level_bounds(const InterpLayout& layout, double eb_abs, double value_range,
                                 const InterpOverrides& overrides);
double interp_lorenzo_bound(const InterpLayout& layout, const InterpConfig& config);

// The quantizer of coded anchors: half the coarsest level's bound (lattice
// step e_{L-1}).  Every level predicts from the anchors, so their error
// spreads furthest; at the coarsest level's own bound very smooth fields lose
// up to 5 dB of PSNR at rel 1e-4 against raw anchors, at half of it none
// (bench/NOTES.md), for 1-3% of the ratio that coding them gains.
inline InterpLevelQuant interp_anchor_quant(const InterpLayout& layout, const InterpConfig& config) {
    return InterpLevelQuant::from_bound(config.level_eb[layout.num_levels - 1] * 0.5);
}

// Auto mode: coded unless its listed anchors make it likely larger than raw
// (a coded anchor costs about a byte of Huffman code; one with code 0 costs
// its listed index and residual plus an outlier's index and value).
inline uint8_t interp_choose_anchor_mode(int requested, uint64_t num_anchors, uint64_t num_listed,
                                         uint64_t value_bytes) {
    if (requested >= 0) return static_cast<uint8_t>(requested);
    const uint64_t coded = num_listed * (24 + value_bytes) + (num_anchors - num_listed);
    return coded < num_anchors * value_bytes ? kAnchorsCoded : kAnchorsRaw;
}

// The anchor stage, run before the tiles: the values the tiles start from and,
// for coded anchors, their codes and the listed (code 0) ones.
template <class T>
struct InterpAnchors {
    uint8_t mode = kAnchorsRaw;
    std::vector<T> start;                    // per anchor, raster order of the anchor grid
    std::vector<uint16_t> codes;             // coded: per anchor
    std::vector<uint64_t> listed;            // coded: anchors with code 0, increasing
    std::vector<uint64_t> listed_residual;   // their Lorenzo residuals (two's complement)
};

// `config.level_eb` must be set; the mode is `requested` (InterpOverrides::anchors).
template <class T>
InterpAnchors<T> interp_anchors_encode_cpu(const T* data, const InterpLayout& layout, const InterpConfig& config,
                                           double eb, uint32_t radius, int requested, int num_threads);

template <class T>
struct InterpEncoded {
    std::vector<uint16_t> codes;       // one per element, raster order
    std::vector<uint64_t> outlier_index;
    std::vector<T> outlier_value;
    bool jump_taken = false;           // the jump guard decided some prediction (interp_spline)
    std::vector<uint8_t> lorenzo_tiles;   // per tile 1 where Lorenzo-coded; empty where none is
};

// `config.anchors` must be `anchors.mode`.
template <class T>
void interp_encode_cpu(const T* data, const InterpLayout& layout, const InterpConfig& config, double eb,
                       uint32_t radius, const InterpAnchors<T>& anchors, InterpEncoded<T>& out, int num_threads,
                       const T* original = nullptr);

// The anchors' start values from the archive: raw values (whose codes must be
// `radius`), or the coded anchors' codes, listed residuals and, for code 0,
// their outlier values.  Throws GSZ_STATUS_CORRUPT when they do not agree.
// The caller has checked that both index lists increase strictly.
template <class T>
std::vector<T> interp_anchors_decode_cpu(std::span<const uint16_t> codes, std::span<const T> raw,
                                         std::span<const uint64_t> listed, std::span<const uint64_t> listed_residual,
                                         std::span<const uint64_t> outlier_index, std::span<const T> outlier_value,
                                         const InterpLayout& layout, const InterpConfig& config, uint32_t radius);

// Throws GSZ_STATUS_CORRUPT when a zero code has no outlier entry.  The caller
// has checked the section sizes and that outlier indices increase strictly.
// `anchors`: the start values (interp_anchors_decode_cpu).
template <class T>
void interp_decode_cpu(std::span<const uint16_t> codes, std::span<const T> anchors,
                       std::span<const uint64_t> outlier_index, std::span<const T> outlier_value,
                       std::span<const uint8_t> lorenzo_tiles, const InterpLayout& layout,
                       const InterpConfig& config, uint32_t radius, T* out, int num_threads);

}  // namespace gsz::predict
