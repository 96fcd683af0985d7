// The interp pipeline (cuSZ-i G-Interp): anchored spline interpolation with
// level-wise bounds -> quant-codes, anchors, exact outliers -> histogram ->
// canonical Huffman -> chunked bitstream.  Predictor: predict/interp/.
#include "pipeline/interp_sections.hpp"
#include "pipeline/pipeline.hpp"

#include "runtime/status.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

namespace gsz::pipeline {

namespace {

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// What a version-14 decoder derives where pipeline_params leaves a value out:
// alpha, beta and the level bounds as the encoder's defaults give them
// (predict::interp_level_bounds), the guard's threshold of the value range,
// and the Lorenzo tiles' bound of those level bounds (level 0's where every
// tile is Lorenzo-coded).  Correctly rounded IEEE double arithmetic (products,
// quotients, one square root), so every backend and machine derives the same
// bits; the encoder writes a value wherever its own differs from this.
predict::InterpConfig interp_derived(const predict::InterpLayout& L, const format::Header& h, bool all_lorenzo) {
    predict::InterpOverrides defaults;
    defaults.tiles = all_lorenzo ? predict::kTilesLorenzo : predict::kTilesEach;
    return predict::interp_level_bounds(L, h.error_bound_abs, h.value_max - h.value_min, defaults);
}

}  // namespace

void InterpParams::write(ByteWriter& out, const format::Header& h) const {
    const bool guard = config.jump != predict::kInterpNoJump;
    const bool all = all_lorenzo();
    GSZ_CHECK(!all || config.lorenzo_eb == config.level_eb[0], GSZ_STATUS_INTERNAL,
              "interp: every tile Lorenzo-coded at bound %g, not level 0's %g", config.lorenzo_eb, config.level_eb[0]);
    GSZ_CHECK(radius >= 1 && radius <= 32768 && huffman_chunk_symbols == kHuffmanChunkSymbols, GSZ_STATUS_INTERNAL,
              "interp: radius %u, Huffman chunks of %u", radius, huffman_chunk_symbols);
    const predict::InterpConfig derived = interp_derived(layout, h, all);
    bool bounds = !same_bits(config.alpha, derived.alpha) || !same_bits(config.beta, derived.beta);
    for (uint32_t l = 0; l < layout.num_levels; ++l) bounds |= !same_bits(config.level_eb[l], derived.level_eb[l]);
    const bool jump = guard && !same_bits(config.jump, derived.jump);
    const bool some = lorenzo_tiles && !all;
    // The Lorenzo bound is derived from the level bounds as written.
    predict::InterpConfig as_read = derived;
    std::copy_n(config.level_eb, layout.num_levels, as_read.level_eb);
    const bool lorenzo_eb = some && !same_bits(config.lorenzo_eb, predict::interp_lorenzo_bound(layout, as_read));
    out.put(static_cast<uint16_t>(radius == 32768 ? 0 : radius));   // 32768 as 0
    out.put(static_cast<uint8_t>(std::countr_zero(layout.anchor_stride)));
    for (uint8_t o : config.order) out.put(o);
    for (uint8_t sp : config.spline) out.put(sp);
    out.put(config.anchors);
    out.put(static_cast<uint8_t>((guard ? kInterpFlagJumpGuard : 0u) | (some ? kInterpFlagLorenzoTiles : 0u) |
                                 (config.fill.on ? kInterpFlagFill : 0u) | (all ? kInterpFlagAllLorenzo : 0u) |
                                 (bounds ? kInterpFlagBounds : 0u) | (jump ? kInterpFlagJump : 0u) |
                                 (lorenzo_eb ? kInterpFlagLorenzoBound : 0u)));
    out.put(num_outliers);
    if (bounds) {
        out.put(config.alpha);
        out.put(config.beta);
        for (uint32_t l = 0; l < layout.num_levels; ++l) out.put(config.level_eb[l]);
    }
    if (jump) out.put(config.jump);
    if (lorenzo_eb) out.put(config.lorenzo_eb);
    if (config.fill.on) out.put(config.fill.bits);
}

namespace {

void check_jump(double jump) {
    GSZ_CHECK(jump > 0 && jump < HUGE_VAL, GSZ_STATUS_CORRUPT, "pipeline_params: jump threshold %g is not finite and > 0",
              jump);
}

// Version 13's layout and before (docs/FORMAT.md, "pipeline_params ... before version 14").
InterpParams read_params_v13(ByteReader& in, const format::Header& h) {
    constexpr gsz_status bad = GSZ_STATUS_CORRUPT;
    InterpParams p;
    p.radius = in.get<uint32_t>("radius");
    const uint32_t rank = in.get<uint32_t>("rank");
    const uint32_t stride = in.get<uint32_t>("anchor stride");
    // The dims give the geometry; from format version 9 a 1-D array's anchor
    // stride is the archive's own (2 .. 512), before it always 512.
    p.layout = predict::interp_layout(h.rank, h.dims);
    if (p.layout.rank == 1 && stride != p.layout.anchor_stride && h.format_version >= 9) {
        GSZ_CHECK(predict::interp_valid_stride_1d(stride), bad,
                  "pipeline_params: anchor stride %u is not a power of two from %u to %u", stride,
                  predict::kInterpMinStride1d, predict::kInterpGeometry1d.stride);
        p.layout = predict::interp_layout(h.rank, h.dims, stride);
    }
    const predict::InterpLayout& L = p.layout;
    const uint32_t levels = in.get<uint32_t>("level count");
    uint32_t tile[3];
    for (uint32_t& t : tile) t = in.get<uint32_t>("tile extent");
    for (uint8_t& o : p.config.order) o = in.get<uint8_t>("order");
    for (uint8_t& s : p.config.spline) s = in.get<uint8_t>("spline");
    const uint16_t anchors = in.get<uint16_t>("anchor coding");
    p.config.alpha = in.get<double>("alpha");
    p.config.beta = in.get<double>("beta");
    GSZ_CHECK(levels == L.num_levels, bad, "pipeline_params: %u levels, the dims give %u", levels, L.num_levels);
    for (uint32_t l = 0; l < levels; ++l) p.config.level_eb[l] = in.get<double>("level bound");
    p.huffman_chunk_symbols = in.get<uint32_t>("huffman chunk symbols");
    const uint32_t flags = in.get<uint32_t>("flags");
    p.num_outliers = in.get<uint64_t>("outlier count");
    const uint32_t known = h.format_version >= 13   ? kInterpFlagJumpGuard | kInterpFlagLorenzoTiles | kInterpFlagFill
                           : h.format_version >= 10 ? kInterpFlagJumpGuard | kInterpFlagLorenzoTiles
                           : h.format_version >= 5  ? kInterpFlagJumpGuard
                                                    : 0u;
    GSZ_CHECK((flags & ~known) == 0, bad, "pipeline_params: flags %#x (format version %u knows %s)", flags,
              h.format_version,
              h.format_version >= 13   ? "0x1, the jump guard, 0x2, Lorenzo tiles, and 0x4, a fill value"
              : h.format_version >= 10 ? "0x1, the jump guard, and 0x2, Lorenzo tiles"
              : h.format_version >= 5  ? "only 0x1, the jump guard"
                                       : "none");
    p.lorenzo_tiles = flags & kInterpFlagLorenzoTiles;
    if (flags & kInterpFlagJumpGuard) {
        p.config.jump = in.get<double>("jump threshold");
        check_jump(p.config.jump);
    }
    if (p.lorenzo_tiles) p.config.lorenzo_eb = in.get<double>("Lorenzo tiles' bound");
    if (flags & kInterpFlagFill) p.config.fill = {true, in.get<uint64_t>("fill value")};
    GSZ_CHECK(anchors <= predict::kAnchorsCoded, bad, "pipeline_params: anchor coding %u is not 0 (raw) or 1 (coded)",
              anchors);
    GSZ_CHECK(anchors == predict::kAnchorsRaw || h.format_version >= 2, bad,
              "pipeline_params: reserved field is not 0 (format version %u has no coded anchors)", h.format_version);
    p.config.anchors = static_cast<uint8_t>(anchors);
    GSZ_CHECK(rank == L.rank && stride == L.anchor_stride, bad,
              "pipeline_params: rank %u, anchor stride %u; the dims give %u, %u%s", rank, stride, L.rank,
              L.anchor_stride, L.rank == 1 && h.format_version < 9 ? " (format version 9 on: 2 .. 512)" : "");
    for (int d = 0; d < 3; ++d)
        GSZ_CHECK(tile[d] == L.tile[d], bad, "pipeline_params: tile extent %u along dim %d, expected %u", tile[d], d,
                  L.tile[d]);
    return p;
}

// Version 14's compact layout: the geometry from the dims and the stride's
// log2, the defaults' values left out (interp_derived).
InterpParams read_params_v14(ByteReader& in, const format::Header& h) {
    constexpr gsz_status bad = GSZ_STATUS_CORRUPT;
    InterpParams p;
    const uint16_t radius = in.get<uint16_t>("radius");
    p.radius = radius == 0 ? 32768u : radius;
    const uint8_t stride_log2 = in.get<uint8_t>("anchor stride");
    p.layout = predict::interp_layout(h.rank, h.dims);
    if (p.layout.rank == 1) {
        GSZ_CHECK(stride_log2 >= 1 && stride_log2 <= 9, bad,
                  "pipeline_params: anchor stride 2^%u is not a power of two from %u to %u", stride_log2,
                  predict::kInterpMinStride1d, predict::kInterpGeometry1d.stride);
        p.layout = predict::interp_layout(h.rank, h.dims, 1u << stride_log2);
    }
    GSZ_CHECK(stride_log2 < 32 && (1u << stride_log2) == p.layout.anchor_stride, bad,
              "pipeline_params: anchor stride 2^%u; the dims give %u", stride_log2, p.layout.anchor_stride);
    for (uint8_t& o : p.config.order) o = in.get<uint8_t>("order");
    for (uint8_t& s : p.config.spline) s = in.get<uint8_t>("spline");
    p.config.anchors = in.get<uint8_t>("anchor coding");
    GSZ_CHECK(p.config.anchors <= predict::kAnchorsCoded, bad,
              "pipeline_params: anchor coding %u is not 0 (raw) or 1 (coded)", p.config.anchors);
    const uint8_t flags = in.get<uint8_t>("flags");
    constexpr uint32_t known = kInterpFlagJumpGuard | kInterpFlagLorenzoTiles | kInterpFlagFill | kInterpFlagAllLorenzo |
                               kInterpFlagBounds | kInterpFlagJump | kInterpFlagLorenzoBound;
    GSZ_CHECK((flags & ~known) == 0, bad, "pipeline_params: flags %#x (format version %u knows 0x1 to 0x40)", flags,
              h.format_version);
    GSZ_CHECK(!((flags & kInterpFlagLorenzoTiles) && (flags & kInterpFlagAllLorenzo)), bad,
              "pipeline_params: flags %#x say both some tiles (0x2) and every tile (0x8) Lorenzo-coded", flags);
    GSZ_CHECK(!(flags & kInterpFlagJump) || (flags & kInterpFlagJumpGuard), bad,
              "pipeline_params: flags %#x give a jump threshold (0x20) without the guard (0x1)", flags);
    GSZ_CHECK(!(flags & kInterpFlagLorenzoBound) || (flags & kInterpFlagLorenzoTiles), bad,
              "pipeline_params: flags %#x give a Lorenzo bound (0x40) without Lorenzo tiles (0x2)", flags);
    p.num_outliers = in.get<uint64_t>("outlier count");
    p.huffman_chunk_symbols = kHuffmanChunkSymbols;
    p.lorenzo_tiles = flags & kInterpFlagLorenzoTiles;
    const bool all = flags & kInterpFlagAllLorenzo;
    const predict::InterpConfig derived = interp_derived(p.layout, h, all);
    if (all) p.config.tiles = predict::kTilesLorenzo;
    if (flags & kInterpFlagBounds) {
        p.config.alpha = in.get<double>("alpha");
        p.config.beta = in.get<double>("beta");
        for (uint32_t l = 0; l < p.layout.num_levels; ++l) p.config.level_eb[l] = in.get<double>("level bound");
    } else {
        p.config.alpha = derived.alpha;
        p.config.beta = derived.beta;
        std::copy_n(derived.level_eb, p.layout.num_levels, p.config.level_eb);
    }
    if (flags & kInterpFlagJumpGuard) {
        p.config.jump = flags & kInterpFlagJump ? in.get<double>("jump threshold") : derived.jump;
        check_jump(p.config.jump);
    }
    if (p.lorenzo_tiles) {
        predict::InterpConfig as_read = derived;
        std::copy_n(p.config.level_eb, p.layout.num_levels, as_read.level_eb);
        p.config.lorenzo_eb = flags & kInterpFlagLorenzoBound ? in.get<double>("Lorenzo tiles' bound")
                                                               : predict::interp_lorenzo_bound(p.layout, as_read);
    }
    if (flags & kInterpFlagFill) p.config.fill = {true, in.get<uint64_t>("fill value")};
    return p;
}

}  // namespace

InterpParams InterpParams::read(std::span<const uint8_t> bytes, const format::Header& h) {
    constexpr gsz_status bad = GSZ_STATUS_CORRUPT;
    ByteReader in(bytes, "pipeline_params");
    InterpParams p = h.format_version >= 14 ? read_params_v14(in, h) : read_params_v13(in, h);
    in.expect_end();
    const predict::InterpLayout& L = p.layout;
    const uint32_t rank = L.rank;
    const uint32_t levels = L.num_levels;
    if (p.lorenzo_tiles) {
        const double e = p.config.lorenzo_eb;
        GSZ_CHECK(e > 0 && e <= h.error_bound_abs && std::isfinite(1.0 / (2.0 * e)), bad,
                  "pipeline_params: Lorenzo tiles' bound %g (archive bound %g)", e, h.error_bound_abs);
    }
    if (p.config.fill.on)
        GSZ_CHECK(h.dtype == GSZ_DTYPE_F64 || p.config.fill.bits >> 32 == 0, bad,
                  "pipeline_params: fill value bits %#llx are wider than float32",
                  static_cast<unsigned long long>(p.config.fill.bits));

    GSZ_CHECK(p.radius >= 1 && p.radius <= 32768, bad, "pipeline_params: radius %u out of range", p.radius);
    uint32_t seen = 0;
    for (uint32_t k = 0; k < 3; ++k) {
        const uint32_t o = p.config.order[k];
        GSZ_CHECK(k < rank ? (o < rank && !(seen & (1u << o))) : o == k, bad,
                  "pipeline_params: order %u %u %u is not a permutation of the %u dims", p.config.order[0],
                  p.config.order[1], p.config.order[2], rank);
        seen |= 1u << o;
        GSZ_CHECK(p.config.spline[k] <= predict::kSplineNatural && (k < rank || p.config.spline[k] == 0), bad,
                  "pipeline_params: spline %u of dim %u", p.config.spline[k], k);
    }
    GSZ_CHECK(std::isfinite(p.config.alpha) && p.config.alpha >= 1 && std::isfinite(p.config.beta) &&
                  p.config.beta >= 1,
              bad, "pipeline_params: alpha %g, beta %g", p.config.alpha, p.config.beta);
    for (uint32_t l = 0; l < levels; ++l) {
        const double e = p.config.level_eb[l];
        GSZ_CHECK(e > 0 && e <= h.error_bound_abs && std::isfinite(1.0 / (2.0 * e)), bad,
                  "pipeline_params: level %u bound %g (archive bound %g)", l, e, h.error_bound_abs);
    }
    GSZ_CHECK(p.num_outliers <= h.num_elements(), bad, "pipeline_params: %llu outliers",
              static_cast<unsigned long long>(p.num_outliers));
    if (p.all_lorenzo()) p.config.lorenzo_eb = p.config.level_eb[0];
    return p;
}

predict::InterpOverrides interp_overrides(const gsz_params& params, uint32_t rank) {
    constexpr gsz_status bad = GSZ_STATUS_INVALID_ARGUMENT;
    predict::InterpOverrides ov;
    GSZ_CHECK(params.interp_alpha == 0 || (params.interp_alpha >= 1 && params.interp_alpha <= 64), bad,
              "interp alpha %g is not in [1, 64] (0 = auto)", params.interp_alpha);
    GSZ_CHECK(params.interp_beta == 0 || (params.interp_beta >= 1 && params.interp_beta <= 1e6), bad,
              "interp beta %g is not in [1, 1e6] (0 = auto)", params.interp_beta);
    ov.alpha = params.interp_alpha;
    ov.beta = params.interp_beta;
    GSZ_CHECK(params.interp_anchor_stride == 0 || predict::interp_valid_stride_1d(params.interp_anchor_stride), bad,
              "interp anchor stride %u is not a power of two from %u to %u (0 = auto)", params.interp_anchor_stride,
              predict::kInterpMinStride1d, predict::kInterpGeometry1d.stride);
    GSZ_CHECK(params.interp_anchor_stride == 0 || rank == 1, bad,
              "interp anchor stride %u: only 1-D arrays choose their stride (this one has %u dims of size > 1; "
              "2-D and 3-D keep 16 and 8)", params.interp_anchor_stride, rank);
    ov.anchor_stride = params.interp_anchor_stride;
    switch (enum_bits(params.interp_tiles)) {
        case GSZ_INTERP_TILES_AUTO: ov.tiles = predict::kTilesAuto; break;
        case GSZ_INTERP_TILES_SPLINE: ov.tiles = predict::kTilesSpline; break;
        case GSZ_INTERP_TILES_LORENZO: ov.tiles = predict::kTilesLorenzo; break;
        case GSZ_INTERP_TILES_EACH: ov.tiles = predict::kTilesEach; break;
        default: fail(bad, format_message("interp tiles %d is not auto, spline, lorenzo or each",
                                          enum_bits(params.interp_tiles)));
    }
    switch (enum_bits(params.interp_spline)) {
        case GSZ_INTERP_SPLINE_AUTO: ov.spline = -1; break;
        case GSZ_INTERP_SPLINE_NOT_A_KNOT: ov.spline = predict::kSplineNotAKnot; break;
        case GSZ_INTERP_SPLINE_NATURAL: ov.spline = predict::kSplineNatural; break;
        default: fail(bad, format_message("interp spline %d is not auto, not-a-knot or natural",
                                          enum_bits(params.interp_spline)));
    }
    switch (enum_bits(params.interp_jump_guard)) {
        case GSZ_INTERP_JUMP_GUARD_AUTO:
        case GSZ_INTERP_JUMP_GUARD_ON: ov.jump_guard = true; break;
        case GSZ_INTERP_JUMP_GUARD_OFF: ov.jump_guard = false; break;
        default: fail(bad, format_message("interp jump guard %d is not auto, on or off",
                                          enum_bits(params.interp_jump_guard)));
    }
    switch (enum_bits(params.interp_anchors)) {
        case GSZ_INTERP_ANCHORS_AUTO: ov.anchors = -1; break;
        case GSZ_INTERP_ANCHORS_CODED: ov.anchors = predict::kAnchorsCoded; break;
        case GSZ_INTERP_ANCHORS_RAW: ov.anchors = predict::kAnchorsRaw; break;
        default: fail(bad, format_message("interp anchors %d is not auto, coded or raw",
                                          enum_bits(params.interp_anchors)));
    }
    const size_t len = strnlen(params.interp_order, sizeof params.interp_order);
    if (len > 0) {
        GSZ_CHECK(len == rank, bad,
                  "interp order \"%.*s\" must name each of the %u dims of size > 1 once (letters x, y, z)",
                  static_cast<int>(len), params.interp_order, rank);
        uint32_t seen = 0;
        for (uint32_t k = 0; k < rank; ++k) {
            const int d = params.interp_order[k] - 'x';
            GSZ_CHECK(d >= 0 && d < static_cast<int>(rank) && !(seen & (1u << d)), bad,
                      "interp order \"%.*s\" must name each of the %u dims of size > 1 once (letters x, y, z)",
                      static_cast<int>(len), params.interp_order, rank);
            seen |= 1u << d;
            ov.order[k] = d;
        }
    }
    return ov;
}

template <class T>
std::vector<uint8_t> interp_assemble(const format::Header& header, const InterpParams& params,
                                     const EncodedCodes& codes, const InterpAnchorSection<T>& anchors,
                                     std::span<const uint64_t> outlier_index, std::span<const T> outlier_value,
                                     std::span<const uint8_t> lorenzo_tiles, const predict::FillMask& fill_mask) {
    ByteWriter params_bytes, anchor_bytes, index_bytes, value_bytes;
    CodeStageSections cs;
    InterpParams p = params;
    p.huffman_chunk_symbols = kHuffmanChunkSymbols;
    p.num_outliers = outlier_index.size();
    GSZ_CHECK(lorenzo_tiles.empty() || lorenzo_tiles.size() == p.layout.num_tiles, GSZ_STATUS_INTERNAL,
              "interp_assemble: %zu tile choices for %llu tiles", lorenzo_tiles.size(),
              static_cast<unsigned long long>(p.layout.num_tiles));
    GSZ_CHECK(!p.all_lorenzo() || std::count(lorenzo_tiles.begin(), lorenzo_tiles.end(), uint8_t{1}) ==
                                      static_cast<std::ptrdiff_t>(p.layout.num_tiles),
              GSZ_STATUS_INTERNAL, "interp_assemble: every tile asked Lorenzo-coded, not every tile is");
    p.lorenzo_tiles = !lorenzo_tiles.empty() && !p.all_lorenzo();
    p.write(params_bytes, header);
    code_stage_write(codes, cs);
    if (p.config.anchors == predict::kAnchorsRaw) {
        anchor_bytes.put_array(std::span<const T>(anchors.raw));
    } else {
        GSZ_CHECK(anchors.listed.size() == anchors.listed_residual.size(), GSZ_STATUS_INTERNAL,
                  "interp_assemble: %zu listed anchors, %zu residuals", anchors.listed.size(),
                  anchors.listed_residual.size());
        for (size_t k = 0; k < anchors.listed.size(); ++k) {
            anchor_bytes.put(anchors.listed[k]);
            anchor_bytes.put(anchors.listed_residual[k]);
        }
    }
    index_bytes.put_array(outlier_index);
    value_bytes.put_array(outlier_value);
    std::vector<format::SectionData> sections = {{format::SectionKind::pipeline_params, params_bytes.bytes()}};
    for (const auto& s : cs.sections()) sections.push_back(s);
    sections.push_back({format::SectionKind::interp_anchors, anchor_bytes.bytes()});
    sections.push_back({format::SectionKind::outlier_indices, index_bytes.bytes()});
    sections.push_back({format::SectionKind::outlier_values, value_bytes.bytes()});
    const std::vector<uint8_t> tile_bits = interp_tiles_pack(lorenzo_tiles);
    if (p.lorenzo_tiles) sections.push_back({format::SectionKind::interp_tiles, tile_bits});
    const std::vector<uint8_t> mask_bytes = p.config.fill.on ? predict::fill_mask_write(fill_mask) : std::vector<uint8_t>{};
    if (p.config.fill.on) sections.push_back({format::SectionKind::fill_mask, mask_bytes});
    return format::archive_write(header, sections);
}

std::vector<uint8_t> interp_tiles_pack(std::span<const uint8_t> lorenzo_tiles) {
    std::vector<uint8_t> bytes((lorenzo_tiles.size() + 7) / 8, 0);
    for (size_t t = 0; t < lorenzo_tiles.size(); ++t)
        if (lorenzo_tiles[t]) bytes[t / 8] |= static_cast<uint8_t>(1u << (t % 8));
    return bytes;
}

std::vector<uint8_t> interp_tiles_unpack(std::span<const uint8_t> bytes, uint64_t num_tiles) {
    constexpr gsz_status bad = GSZ_STATUS_CORRUPT;
    GSZ_CHECK(bytes.size() == (num_tiles + 7) / 8, bad, "interp_tiles: %zu bytes for %llu tiles", bytes.size(),
              static_cast<unsigned long long>(num_tiles));
    GSZ_CHECK(num_tiles % 8 == 0 || (bytes.back() >> (num_tiles % 8)) == 0, bad,
              "interp_tiles: bits set past the %llu tiles", static_cast<unsigned long long>(num_tiles));
    std::vector<uint8_t> tiles(num_tiles);
    for (uint64_t t = 0; t < num_tiles; ++t) tiles[t] = (bytes[t / 8] >> (t % 8)) & 1u;
    return tiles;
}

template <class T>
InterpDecodePlan<T> interp_plan_decode(const format::Archive& archive) {
    constexpr gsz_status bad = GSZ_STATUS_CORRUPT;
    const format::Header& h = archive.header;
    GSZ_CHECK(h.error_bound_abs > 0 && std::isfinite(1.0 / (2.0 * h.error_bound_abs)), bad,
              "interp archive with unusable bound %g", h.error_bound_abs);
    InterpDecodePlan<T> plan;
    plan.params = InterpParams::read(archive.section(format::SectionKind::pipeline_params), h);
    const InterpParams& p = plan.params;
    const uint64_t n = h.num_elements();

    const auto anchors = archive.section(format::SectionKind::interp_anchors);
    const bool raw = p.config.anchors == predict::kAnchorsRaw;
    GSZ_CHECK(raw ? anchors.size() == p.layout.num_anchors * sizeof(T)
                  : anchors.size() % 16 == 0 && anchors.size() / 16 <= p.layout.num_anchors,
              bad, "interp_anchors: %zu bytes for %llu %s anchors", anchors.size(),
              static_cast<unsigned long long>(p.layout.num_anchors), raw ? "raw" : "coded");
    const auto index = archive.section(format::SectionKind::outlier_indices);
    const auto value = archive.section(format::SectionKind::outlier_values);
    GSZ_CHECK(index.size() == p.num_outliers * sizeof(uint64_t) && value.size() == p.num_outliers * sizeof(T), bad,
              "outlier sections: %zu index and %zu value bytes for %llu outliers", index.size(), value.size(),
              static_cast<unsigned long long>(p.num_outliers));

    GSZ_CHECK(p.lorenzo_tiles == archive.has(format::SectionKind::interp_tiles), bad,
              "interp_tiles: the section is %s but pipeline_params %s", p.lorenzo_tiles ? "missing" : "present",
              p.lorenzo_tiles ? "records Lorenzo tiles" : p.all_lorenzo() ? "records every tile Lorenzo-coded"
                                                                         : "records no Lorenzo tiles");
    if (p.lorenzo_tiles)
        plan.lorenzo_tiles =
            interp_tiles_unpack(archive.section(format::SectionKind::interp_tiles), p.layout.num_tiles);
    if (p.all_lorenzo()) plan.lorenzo_tiles.assign(p.layout.num_tiles, 1);

    GSZ_CHECK(p.config.fill.on == archive.has(format::SectionKind::fill_mask), bad,
              "fill_mask: the section is %s but pipeline_params %s a fill value", p.config.fill.on ? "missing" : "present",
              p.config.fill.on ? "records" : "records no");
    if (p.config.fill.on) plan.fill_mask = predict::fill_mask_read(archive.section(format::SectionKind::fill_mask), n);

    plan.codes = code_stage_read(archive, p.radius, p.huffman_chunk_symbols, n, interp_ans_shape(p));

    if (raw) {
        plan.anchors.raw.resize(p.layout.num_anchors);
        if (!anchors.empty()) std::memcpy(plan.anchors.raw.data(), anchors.data(), anchors.size());
    } else {
        ByteReader in(anchors, "interp_anchors");
        const size_t listed = anchors.size() / 16;
        plan.anchors.listed.resize(listed);
        plan.anchors.listed_residual.resize(listed);
        for (size_t k = 0; k < listed; ++k) {
            plan.anchors.listed[k] = in.get<uint64_t>("listed anchor");
            plan.anchors.listed_residual[k] = in.get<uint64_t>("listed residual");
            GSZ_CHECK(plan.anchors.listed[k] < p.layout.num_anchors &&
                          (k == 0 || plan.anchors.listed[k] > plan.anchors.listed[k - 1]),
                      bad, "interp_anchors: entry %zu (anchor %llu) is not increasing inside the grid", k,
                      static_cast<unsigned long long>(plan.anchors.listed[k]));
        }
    }
    plan.outlier_index.resize(p.num_outliers);
    plan.outlier_value.resize(p.num_outliers);
    if (p.num_outliers) {
        std::memcpy(plan.outlier_index.data(), index.data(), index.size());
        std::memcpy(plan.outlier_value.data(), value.data(), value.size());
    }
    for (uint64_t k = 0; k < p.num_outliers; ++k)
        GSZ_CHECK(plan.outlier_index[k] < n && (k == 0 || plan.outlier_index[k] > plan.outlier_index[k - 1]), bad,
                  "outlier_indices: entry %llu (%llu) is not increasing inside the array",
                  static_cast<unsigned long long>(k), static_cast<unsigned long long>(plan.outlier_index[k]));
    return plan;
}

template std::vector<uint8_t> interp_assemble<float>(const format::Header&, const InterpParams&, const EncodedCodes&,
                                                     const InterpAnchorSection<float>&, std::span<const uint64_t>,
                                                     std::span<const float>, std::span<const uint8_t>,
                                                     const predict::FillMask&);
template std::vector<uint8_t> interp_assemble<double>(const format::Header&, const InterpParams&, const EncodedCodes&,
                                                     const InterpAnchorSection<double>&, std::span<const uint64_t>,
                                                      std::span<const double>, std::span<const uint8_t>,
                                                      const predict::FillMask&);
template InterpDecodePlan<float> interp_plan_decode<float>(const format::Archive&);
template InterpDecodePlan<double> interp_plan_decode<double>(const format::Archive&);

namespace {

template <class T>
std::vector<uint8_t> compress_typed(const gsz_params& params, const format::Header& header, const T* data,
                                    const predict::FillValue& fill) {
    const int threads = params.num_threads;
    InterpParams p;
    p.radius = quant_radius(params);
    p.layout = predict::interp_layout(header.rank, header.dims);
    predict::InterpOverrides overrides = interp_overrides(params, p.layout.rank);
    if (p.layout.rank == 1) {
        const uint64_t n = p.layout.dims[0];
        const std::vector<uint64_t> starts = predict::interp_stride_segments(n);
        const uint64_t len = std::min(n, predict::kInterpStrideSegment);
        std::vector<T> sample;
        sample.reserve(starts.size() * len);
        for (const uint64_t s : starts) sample.insert(sample.end(), data + s, data + s + len);
        const predict::InterpChoice1d choice = predict::interp_choose_stride_1d(
            std::span<const T>(sample), len, header.error_bound_abs, header.value_max - header.value_min, p.radius,
            overrides);
        p.layout = predict::interp_layout(header.rank, header.dims, choice.stride);
        if (choice.lorenzo) overrides.tiles = predict::kTilesLorenzo;
    }
    const std::vector<uint64_t> idx = predict::interp_tune_indices(p.layout);
    std::vector<T> samples(idx.size());
    for (size_t i = 0; i < idx.size(); ++i) samples[i] = data[idx[i]];
    // The tuner leaves out sample points next to the fill value (the GPU's pipeline tunes again where one is found).
    p.config = predict::interp_configure(p.layout, std::vector<double>(samples.begin(), samples.end()),
                                         header.error_bound_abs, header.value_max - header.value_min, overrides,
                                         interp_tune_skip<T>(fill));
    p.config.fill = fill;
    predict::FillMask fill_mask = predict::fill_mask_encode_cpu(data, p.layout.dims, p.config.fill, threads);
    if (fill_mask.points == 0) p.config.fill = {};   // no point holds it: nothing to record

    // With a fill value, what the encoder codes as values holds its stand-in;
    // the spline stages see the original (their fill points take the prediction).
    std::vector<T> stand_ins;
    if (p.config.fill.on) stand_ins = predict::fill_substitute_cpu(data, header.num_elements(), p.config.fill, threads);
    const T* coded = p.config.fill.on ? stand_ins.data() : data;
    const predict::InterpAnchors<T> anchors =
        predict::interp_anchors_encode_cpu(coded, p.layout, p.config, header.error_bound_abs, p.radius,
                                           overrides.anchors, threads);
    p.config.anchors = anchors.mode;
    predict::InterpEncoded<T> enc;
    predict::interp_encode_cpu(coded, p.layout, p.config, header.error_bound_abs, p.radius, anchors, enc, threads,
                               data);
    stand_ins = {};
    // A guard that decided no prediction left the unguarded splines' codes: the
    // archive says so, and its decoders skip the guard's tests.
    if (!enc.jump_taken) p.config.jump = predict::kInterpNoJump;
    EncodedCodes ec = code_stage_encode_cpu(enc.codes, p.radius, interp_ans_shape(p, params.ans_strips), params.lossless,
                                           threads);
    enc.codes = {};
    InterpAnchorSection<T> section;
    if (anchors.mode == predict::kAnchorsRaw) section.raw = anchors.start;
    section.listed = anchors.listed;
    section.listed_residual = anchors.listed_residual;
    return interp_assemble<T>(header, p, ec, section, enc.outlier_index, enc.outlier_value, enc.lorenzo_tiles,
                              fill_mask);
}

template <class T>
void decompress_typed(const format::Archive& archive, T* out, int threads) {
    const InterpDecodePlan<T> plan = interp_plan_decode<T>(archive);
    std::vector<uint16_t> codes(archive.header.num_elements());
    code_stage_decode_cpu(plan.codes, plan.params.radius, interp_ans_shape(plan.params), codes, threads);
    const std::vector<T> anchors = predict::interp_anchors_decode_cpu<T>(
        codes, plan.anchors.raw, plan.anchors.listed, plan.anchors.listed_residual, plan.outlier_index,
        plan.outlier_value, plan.params.layout, plan.params.config, plan.params.radius);
    predict::interp_decode_cpu<T>(codes, anchors, plan.outlier_index, plan.outlier_value, plan.lorenzo_tiles,
                                  plan.params.layout, plan.params.config, plan.params.radius, out, threads);
    if (plan.params.config.fill.on)
        predict::fill_mask_apply_cpu(plan.fill_mask, plan.params.layout.dims, plan.params.config.fill, out, threads);
}

}  // namespace

std::vector<uint8_t> interp_compress(const gsz_params& params, const format::Header& header, const void* data,
                                     const predict::FillValue& fill) {
    if (header.dtype == GSZ_DTYPE_F32) return compress_typed(params, header, static_cast<const float*>(data), fill);
    return compress_typed(params, header, static_cast<const double*>(data), fill);
}

void interp_decompress(const format::Archive& archive, void* out, int num_threads) {
    if (archive.header.dtype == GSZ_DTYPE_F32)
        decompress_typed(archive, static_cast<float*>(out), num_threads);
    else
        decompress_typed(archive, static_cast<double*>(out), num_threads);
}

void interp_describe(const format::Archive& archive, gsz_archive_info& info) {
    const InterpParams p = InterpParams::read(archive.section(format::SectionKind::pipeline_params), archive.header);
    info.radius = p.radius;
    info.num_outliers = p.num_outliers;
    describe_code_stage(archive, p.radius, info);
    info.interp_rank = p.layout.rank;
    info.interp_anchor_stride = p.layout.anchor_stride;
    info.interp_num_anchors = p.layout.num_anchors;
    info.interp_alpha = p.config.alpha;
    info.interp_beta = p.config.beta;
    const bool raw = p.config.anchors == predict::kAnchorsRaw;
    info.interp_anchors = raw ? GSZ_INTERP_ANCHORS_RAW : GSZ_INTERP_ANCHORS_CODED;
    info.interp_listed_anchors = raw ? 0 : archive.section(format::SectionKind::interp_anchors).size() / 16;
    info.interp_jump = p.config.jump == predict::kInterpNoJump ? 0.0 : p.config.jump;
    info.interp_tiles = p.layout.num_tiles;
    info.interp_lorenzo_tiles = p.all_lorenzo() ? p.layout.num_tiles : 0;
    if (p.lorenzo_tiles)
        for (const uint8_t t : interp_tiles_unpack(archive.section(format::SectionKind::interp_tiles),
                                                   p.layout.num_tiles))
            info.interp_lorenzo_tiles += t;
    describe_fill(archive, p.config.fill, info);
    std::memset(info.interp_order, 0, sizeof info.interp_order);
    std::memset(info.interp_spline, 0, sizeof info.interp_spline);
    for (uint32_t k = 0; k < p.layout.rank; ++k) {
        info.interp_order[k] = static_cast<char>('x' + p.config.order[k]);
        info.interp_spline[k] = p.config.spline[k] == predict::kSplineNatural ? 'n' : 'k';
    }
}

}  // namespace gsz::pipeline
