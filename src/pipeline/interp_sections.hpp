// The interp pipeline's archive sections, shared by the CPU and CUDA recipes
// so both write and read exactly the same bytes.
#pragma once

#include "encode/huffman.hpp"
#include "pipeline/code_stage.hpp"
#include "pipeline/fill_choice.hpp"
#include "format/archive.hpp"
#include "predict/fill/fill_mask.hpp"
#include "predict/interp/interp.hpp"
#include "runtime/byte_io.hpp"

#include <gsz/gsz.h>

#include <cmath>
#include <cstdint>
#include <span>
#include <algorithm>
#include <vector>

namespace gsz::pipeline {

// pipeline_params of an interp archive: the geometry (checked against the one
// the header implies) and every choice the tuner made.
// pipeline_params flags (format version 5): bit 0, the jump guard is on and
// its threshold follows the outlier count.
inline constexpr uint32_t kInterpFlagJumpGuard = 1;
// Bit 1 (format version 10): some tiles are Lorenzo-coded; the interp_tiles
// section holds one bit per tile (interp_lorenzo_tiles.hpp).
inline constexpr uint32_t kInterpFlagLorenzoTiles = 2;
// Bit 2 (format version 13): a fill value (its bits as a u64 after the
// flags' other fields); the fill_mask section says where it is.
inline constexpr uint32_t kInterpFlagFill = 4;
// Bit 3 (format version 14): every tile is Lorenzo-coded at the full bound
// (level 0's; predict::kTilesLorenzo, which the 1-D stride choice takes on
// rough records): no interp_tiles section and no Lorenzo bound are written,
// and the codes' rANS contexts have one level (interp_ans_shape), since no
// spline level tells their statistics apart.  Not with bit 1.
inline constexpr uint32_t kInterpFlagAllLorenzo = 8;
// Version 14 writes pipeline_params compactly (docs/FORMAT.md): the geometry
// follows from the dims and the stride, and a value that the decoder derives
// (interp_derived in interp_pipeline.cpp) is written only where the encoder's
// differs, under these flags: bit 4, alpha, beta and the level bounds; bit 5,
// the guard's threshold; bit 6, the Lorenzo tiles' bound.  (An interp archive
// of a small field paid 100-150 bytes for them: a 12,000-value record's
// archive is 5.5 KB.)
inline constexpr uint32_t kInterpFlagBounds = 16;
inline constexpr uint32_t kInterpFlagJump = 32;
inline constexpr uint32_t kInterpFlagLorenzoBound = 64;

struct InterpParams {
    uint32_t radius = 0;
    predict::InterpLayout layout;
    predict::InterpConfig config;
    uint32_t huffman_chunk_symbols = 0;
    uint64_t num_outliers = 0;
    bool lorenzo_tiles = false;   // kInterpFlagLorenzoTiles
    // kInterpFlagAllLorenzo: written where config.tiles is kTilesLorenzo, and
    // read back as that request.
    bool all_lorenzo() const { return config.tiles == predict::kTilesLorenzo; }

    // The current version's layout; `header`: the archive's (bound, value range).
    void write(ByteWriter& out, const format::Header& header) const;
    // Throws GSZ_STATUS_CORRUPT; `header` gives the geometry and the bound.
    static InterpParams read(std::span<const uint8_t> bytes, const format::Header& header);
};

// What the tuner leaves out for a fill value: the value as double, or NaN.
template <class T>
double interp_tune_skip(const predict::FillValue& fill) {
    return fill.on ? static_cast<double>(predict::fill_value_as<T>(fill)) : NAN;
}

// The tuner's overrides from the caller's parameters (validated here:
// GSZ_STATUS_INVALID_ARGUMENT names a bad one).
predict::InterpOverrides interp_overrides(const gsz_params& params, uint32_t predictor_rank);

// The interp_anchors section: raw values, or the listed coded anchors.
template <class T>
struct InterpAnchorSection {
    std::vector<T> raw;
    std::vector<uint64_t> listed, listed_residual;
};

template <class T>
std::vector<uint8_t> interp_assemble(const format::Header& header, const InterpParams& params,
                                     const EncodedCodes& codes, const InterpAnchorSection<T>& anchors,
                                     std::span<const uint64_t> outlier_index, std::span<const T> outlier_value,
                                     std::span<const uint8_t> lorenzo_tiles, const predict::FillMask& fill_mask);

// The interp_tiles section: bit t (LSB first) of byte t / 8 set where tile t
// is Lorenzo-coded; the unused bits of the last byte are 0.
std::vector<uint8_t> interp_tiles_pack(std::span<const uint8_t> lorenzo_tiles);
std::vector<uint8_t> interp_tiles_unpack(std::span<const uint8_t> bytes, uint64_t num_tiles);

// The rANS contexts of interp codes: a point's level is the finest grid it
// lies on (stride 1, 2, ..., the anchors'), known from its raster position;
// one level where every tile is Lorenzo-coded (kInterpFlagAllLorenzo).
// `strips`: what compression may choose (gsz_params::ans_strips).
inline encode::AnsContextShape interp_ans_shape(const InterpParams& params,
                                                gsz_ans_strips strips = GSZ_ANS_STRIPS_AUTO) {
    const predict::InterpLayout& layout = params.layout;
    encode::AnsContextShape s;
    for (int d = 0; d < 3; ++d) s.dims[d] = layout.dims[d];
    s.levels = params.all_lorenzo() ? 1u : std::min<uint32_t>(layout.num_levels + 1, encode::kAnsMaxLevels);
    s.strips = strips == GSZ_ANS_STRIPS_OFF  ? encode::AnsStripsChoice::off
               : strips == GSZ_ANS_STRIPS_ON ? encode::AnsStripsChoice::on
                                             : encode::AnsStripsChoice::automatic;
    return s;
}

// Everything a decoder needs, validated: sizes against the header, outlier
// indices strictly increasing and inside the array.
template <class T>
struct InterpDecodePlan {
    InterpParams params;
    CodeStagePlan codes;
    InterpAnchorSection<T> anchors;   // listed indices checked: increasing, inside the grid
    std::vector<uint64_t> outlier_index;
    std::vector<T> outlier_value;
    std::vector<uint8_t> lorenzo_tiles;   // per tile 1 where Lorenzo-coded; empty where none is
    predict::FillMask fill_mask;          // params.config.fill.on: its residual, checked inside the array
};

template <class T>
InterpDecodePlan<T> interp_plan_decode(const format::Archive& archive);

}  // namespace gsz::pipeline
