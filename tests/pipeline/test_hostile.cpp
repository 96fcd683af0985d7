// Hostile archives through the public API: truncations, byte flips, and
// well-checksummed archives whose contents lie.  Every one must give a clear
// non-OK status, never a crash, hang or huge allocation (CI also runs this
// under AddressSanitizer and UBSan).
#include "test_util.hpp"

#include "encode/ans.hpp"

#include "format/archive.hpp"
#include "pipeline/code_stage.hpp"
#include "pipeline/interp_sections.hpp"
#include "runtime/byte_io.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

using namespace gsz::test;

namespace {

std::vector<float> small_field() {
    // A real slice when the bundled sample is present, else a random walk; a
    // few NaN/huge values force outliers.
    std::vector<float> v(20 * 20 * 5);
    const auto sample = repo_dir() / "data" / "sperr_wmag_91x91x91.f32";
    if (std::filesystem::exists(sample)) {
        const auto all = read_raw<float>(sample);
        for (size_t z = 0; z < 5; ++z)
            for (size_t y = 0; y < 20; ++y)
                for (size_t x = 0; x < 20; ++x) v[x + 20 * (y + 20 * z)] = all[x + 91 * (y + 91 * z)];
    } else {
        std::mt19937 rng(1);
        float acc = 0;
        for (auto& e : v) e = acc += std::normal_distribution<float>(0, 1)(rng);
    }
    v[7] = std::numeric_limits<float>::quiet_NaN();
    v[300] = 1e35f;
    return v;
}

// Huffman-coded unless asked otherwise: most tests below lie in its sections.
std::vector<uint8_t> small_archive(gsz_pipeline pipeline = GSZ_PIPELINE_LORENZO,
                                   gsz_lossless lossless = GSZ_LOSSLESS_NONE) {
    const auto v = small_field();
    gsz::Context ctx;
    auto p = make_params(GSZ_DTYPE_F32, {20, 20, 5}, GSZ_ERROR_REL, 1e-3);
    p.pipeline = pipeline;
    p.lossless = lossless;
    return ctx.compress(p, v.data());
}

gsz_status try_decompress(const std::vector<uint8_t>& archive) {
    gsz::Context ctx;
    std::vector<float> out(20 * 20 * 5 + 16);
    const gsz_status s = gsz_decompress(ctx.get(), archive.data(), archive.size(), out.data(),
                                        out.size() * sizeof(float), GSZ_DEVICE_CPU, 2);
    if (s != GSZ_STATUS_OK) {
        EXPECT_STRNE(gsz_ctx_last_error(ctx.get()), "") << "a failure must say why";
    }
    return s;
}

class HostileBoth : public testing::TestWithParam<gsz_pipeline> {};
INSTANTIATE_TEST_SUITE_P(Pipelines, HostileBoth,
                         testing::Values(GSZ_PIPELINE_LORENZO, GSZ_PIPELINE_FAST, GSZ_PIPELINE_INTERP),
                         [](const auto& info) {
                             return info.param == GSZ_PIPELINE_FAST     ? "fast"
                                    : info.param == GSZ_PIPELINE_INTERP ? "interp"
                                                                        : "lorenzo";
                         });

TEST_P(HostileBoth, ValidArchiveDecodes) {
    const auto archive = small_archive(GetParam());
    EXPECT_EQ(gsz::format::archive_parse(archive).header.pipeline, GetParam());
    EXPECT_EQ(try_decompress(archive), GSZ_STATUS_OK);
}

TEST_P(HostileBoth, EveryTruncationIsRejected) {
    const auto archive = small_archive(GetParam());
    for (size_t len = 0; len < archive.size(); ++len) {
        const std::vector<uint8_t> cut(archive.begin(), archive.begin() + static_cast<ptrdiff_t>(len));
        EXPECT_NE(try_decompress(cut), GSZ_STATUS_OK) << "truncated to " << len;
    }
}

TEST_P(HostileBoth, EveryByteFlipIsRejected) {
    const auto archive = small_archive(GetParam());
    for (size_t i = 0; i < archive.size(); ++i) {
        for (uint8_t mask : {uint8_t{0xFF}, uint8_t{0x01}}) {
            auto bad = archive;
            bad[i] ^= mask;
            EXPECT_NE(try_decompress(bad), GSZ_STATUS_OK) << "byte " << i << " ^ " << int(mask);
        }
    }
}

// Rebuild an archive with one section replaced, checksums recomputed, so the
// content checks (not the checksums) must catch the lie.
std::vector<uint8_t> with_section(const std::vector<uint8_t>& archive, gsz::format::SectionKind kind,
                                  const std::vector<uint8_t>& payload) {
    const auto parsed = gsz::format::archive_parse(archive);
    std::vector<gsz::format::SectionData> sections;
    for (const auto& s : parsed.sections)
        sections.push_back({s.kind, s.kind == kind ? std::span<const uint8_t>(payload) : s.bytes});
    return gsz::format::archive_write(parsed.header, sections);
}

std::vector<uint8_t> section_of(const std::vector<uint8_t>& archive, gsz::format::SectionKind kind) {
    const auto s = gsz::format::archive_parse(archive).section(kind);
    return {s.begin(), s.end()};
}

// An interp archive with version 13's pipeline_params (fixed offsets, every
// value written: docs/FORMAT.md), which the tests below patch; version 14's
// compact layout has its own test (LyingCompactInterpParamsAreRejected).
// Every other payload of an archive without flag 0x8 is version 14's (ans_tables rewritten in its layout).
std::vector<uint8_t> as_v13(const std::vector<uint8_t>& archive) {
    using gsz::format::SectionKind;
    auto parsed = gsz::format::archive_parse(archive);
    const auto p = gsz::pipeline::InterpParams::read(section_of(archive, SectionKind::pipeline_params), parsed.header);
    EXPECT_FALSE(p.all_lorenzo());
    gsz::ByteWriter out;
    out.put(p.radius);
    out.put(p.layout.rank);
    out.put(p.layout.anchor_stride);
    out.put(p.layout.num_levels);
    for (uint32_t t : p.layout.tile) out.put(t);
    for (uint8_t o : p.config.order) out.put(o);
    for (uint8_t sp : p.config.spline) out.put(sp);
    out.put(uint16_t{p.config.anchors});
    out.put(p.config.alpha);
    out.put(p.config.beta);
    for (uint32_t l = 0; l < p.layout.num_levels; ++l) out.put(p.config.level_eb[l]);
    out.put(p.huffman_chunk_symbols);
    const bool guard = p.config.jump != gsz::predict::kInterpNoJump;
    out.put((guard ? 1u : 0u) | (p.lorenzo_tiles ? 2u : 0u) | (p.config.fill.on ? 4u : 0u));
    out.put(p.num_outliers);
    if (guard) out.put(p.config.jump);
    if (p.lorenzo_tiles) out.put(p.config.lorenzo_eb);
    if (p.config.fill.on) out.put(p.config.fill.bits);
    // ans_tables in the layout of versions 12-14 (version 15 writes runs of empty contexts).
    gsz::ByteWriter tables;
    if (parsed.has(SectionKind::ans_tables)) {
        const auto view = gsz::encode::ans_stream_read(
            parsed.section(SectionKind::ans_tables), parsed.section(SectionKind::ans_lanes),
            parsed.section(SectionKind::ans_stream), parsed.header.num_elements(), gsz::pipeline::interp_ans_shape(p),
            gsz::encode::AnsLanesLayout::packed_from_one, gsz::encode::AnsTablesLayout::empty_runs);
        gsz::encode::ans_tables_write(view.tables, view.lane_symbols, tables, gsz::encode::AnsTablesLayout::striped);
    }
    parsed.header.format_version = 13;
    std::vector<gsz::format::SectionData> sections;
    for (const auto& sec : parsed.sections)
        sections.push_back({sec.kind, sec.kind == SectionKind::pipeline_params ? std::span<const uint8_t>(out.bytes())
                                      : sec.kind == SectionKind::ans_tables    ? std::span<const uint8_t>(tables.bytes())
                                                                               : sec.bytes});
    return gsz::format::archive_write(parsed.header, sections);
}


// A fill value's archive (format version 13): the flag without the mask,
// the mask without the flag, and damaged masks are refused.
TEST(Hostile, LyingFillMasksAreRejected) {
    using gsz::format::SectionKind;
    auto v = small_field();
    for (size_t i = 0; i < v.size(); i += 9) v[i] = -1e30f;
    gsz::Context ctx;
    auto p = make_params(GSZ_DTYPE_F32, {20, 20, 5}, GSZ_ERROR_REL, 1e-3);
    p.pipeline = GSZ_PIPELINE_INTERP;
    p.fill = GSZ_FILL_VALUE;   // named: the field's 1e35 keeps auto from taking -1e30 as one
    p.fill_value = -1e30;
    const auto archive = as_v13(ctx.compress(p, v.data()));
    ASSERT_EQ(ctx.inspect(archive.data(), archive.size()).has_fill, 1u);
    ASSERT_EQ(try_decompress(archive), GSZ_STATUS_OK);
    const auto mask = section_of(archive, SectionKind::fill_mask);
    // Without the section.
    const auto parsed = gsz::format::archive_parse(archive);
    std::vector<gsz::format::SectionData> sections;
    for (const auto& s : parsed.sections)
        if (s.kind != SectionKind::fill_mask) sections.push_back({s.kind, s.bytes});
    EXPECT_EQ(try_decompress(gsz::format::archive_write(parsed.header, sections)), GSZ_STATUS_CORRUPT);
    // The flag cleared: the section left over, and the fill value's 8 bytes after the params' end.
    auto params = section_of(archive, SectionKind::pipeline_params);
    params[80] &= static_cast<uint8_t>(~4u);
    EXPECT_EQ(try_decompress(with_section(archive, SectionKind::pipeline_params, params)), GSZ_STATUS_CORRUPT);
    // Damaged masks: cut, padded, a count changed.
    for (size_t len : {size_t{0}, size_t{15}, mask.size() - 1}) {
        const std::vector<uint8_t> cut(mask.begin(), mask.begin() + len);
        EXPECT_EQ(try_decompress(with_section(archive, SectionKind::fill_mask, cut)), GSZ_STATUS_CORRUPT) << len;
    }
    auto padded = mask;
    padded.push_back(0);
    EXPECT_EQ(try_decompress(with_section(archive, SectionKind::fill_mask, padded)), GSZ_STATUS_CORRUPT);
    auto count = mask;
    count[0] ^= 2;
    EXPECT_EQ(try_decompress(with_section(archive, SectionKind::fill_mask, count)), GSZ_STATUS_CORRUPT);
}

TEST(Hostile, LyingParamsAreRejected) {
    using gsz::format::SectionKind;
    const auto archive = small_archive();
    const auto params = section_of(archive, SectionKind::pipeline_params);
    ASSERT_EQ(params.size(), 33u);   // version 15: + u8 flags (0 here)
    auto patch32 = [&](size_t offset, uint32_t value) {
        auto p = params;
        std::memcpy(p.data() + offset, &value, 4);
        return with_section(archive, SectionKind::pipeline_params, p);
    };
    EXPECT_EQ(try_decompress(patch32(0, 0)), GSZ_STATUS_CORRUPT);          // radius 0
    EXPECT_EQ(try_decompress(patch32(0, 40000)), GSZ_STATUS_CORRUPT);      // radius too large
    EXPECT_EQ(try_decompress(patch32(0, 256)), GSZ_STATUS_CORRUPT);        // codebook symbols beyond 2*radius
    EXPECT_EQ(try_decompress(patch32(4, 0)), GSZ_STATUS_CORRUPT);          // chunk extent 0
    EXPECT_EQ(try_decompress(patch32(4, 1u << 30)), GSZ_STATUS_CORRUPT);   // giant chunk
    EXPECT_EQ(try_decompress(patch32(16, 2)), GSZ_STATUS_CORRUPT);         // wrong lorenzo rank
    EXPECT_EQ(try_decompress(patch32(20, 17)), GSZ_STATUS_CORRUPT);        // huffman chunk mismatch
    auto p = params;
    uint64_t outliers = 0;
    std::memcpy(&outliers, p.data() + 24, 8);
    for (uint64_t lie : {outliers + 1, outliers ? outliers - 1 : 5, ~uint64_t{0}}) {
        std::memcpy(p.data() + 24, &lie, 8);
        EXPECT_EQ(try_decompress(with_section(archive, SectionKind::pipeline_params, p)), GSZ_STATUS_CORRUPT);
    }
    auto shorter = params;
    shorter.pop_back();
    EXPECT_EQ(try_decompress(with_section(archive, SectionKind::pipeline_params, shorter)), GSZ_STATUS_CORRUPT);
    for (uint8_t flags : {uint8_t{2}, uint8_t{0x80}, uint8_t{1}}) {   // unknown flags; a fill value without its bits
        auto f = params;
        f[32] = flags;
        EXPECT_EQ(try_decompress(with_section(archive, SectionKind::pipeline_params, f)), GSZ_STATUS_CORRUPT) << +flags;
    }
}

// A lorenzo archive with a fill value (format version 15): the flag without
// the mask, the mask without the flag, bits wider than float32, and damaged
// masks are refused.
TEST(Hostile, LyingLorenzoFillIsRejected) {
    using gsz::format::SectionKind;
    auto v = small_field();
    for (size_t i = 0; i < v.size(); i += 9) v[i] = -1e30f;
    gsz::Context ctx;
    auto p = make_params(GSZ_DTYPE_F32, {20, 20, 5}, GSZ_ERROR_ABS, 2.0);
    p.fill = GSZ_FILL_VALUE;
    p.fill_value = -1e30;
    p.lossless = GSZ_LOSSLESS_NONE;   // (Huffman's sections are the same in version 14, used at the end)
    const auto archive = ctx.compress(p, v.data());
    ASSERT_EQ(ctx.inspect(archive.data(), archive.size()).pipeline, GSZ_PIPELINE_LORENZO);
    ASSERT_EQ(ctx.inspect(archive.data(), archive.size()).has_fill, 1u);
    ASSERT_EQ(try_decompress(archive), GSZ_STATUS_OK);
    const auto params = section_of(archive, SectionKind::pipeline_params);
    ASSERT_EQ(params.size(), 41u);
    ASSERT_EQ(params[32], 1u);
    const auto parsed = gsz::format::archive_parse(archive);
    std::vector<gsz::format::SectionData> sections;
    for (const auto& s : parsed.sections)
        if (s.kind != SectionKind::fill_mask) sections.push_back({s.kind, s.bytes});
    EXPECT_EQ(try_decompress(gsz::format::archive_write(parsed.header, sections)), GSZ_STATUS_CORRUPT);
    auto cleared = params;   // the flag cleared: the mask left over, 8 bytes after the params' end
    cleared[32] = 0;
    EXPECT_EQ(try_decompress(with_section(archive, SectionKind::pipeline_params, cleared)), GSZ_STATUS_CORRUPT);
    cleared.resize(33);   // and without them: the mask still left over
    EXPECT_EQ(try_decompress(with_section(archive, SectionKind::pipeline_params, cleared)), GSZ_STATUS_CORRUPT);
    auto wide = params;
    wide[40] = 1;   // bits 56..63 of a float32's fill value
    EXPECT_EQ(try_decompress(with_section(archive, SectionKind::pipeline_params, wide)), GSZ_STATUS_CORRUPT);
    const auto mask = section_of(archive, SectionKind::fill_mask);
    for (size_t len : {size_t{0}, size_t{15}, mask.size() - 1}) {
        const std::vector<uint8_t> cut(mask.begin(), mask.begin() + static_cast<ptrdiff_t>(len));
        EXPECT_EQ(try_decompress(with_section(archive, SectionKind::fill_mask, cut)), GSZ_STATUS_CORRUPT) << len;
    }
    auto count = mask;
    count[0] ^= 2;
    EXPECT_EQ(try_decompress(with_section(archive, SectionKind::fill_mask, count)), GSZ_STATUS_CORRUPT);
    // A fill mask in a version 14 archive (whose lorenzo params have no flags) is refused too.
    auto old = gsz::format::archive_parse(archive);
    old.header.format_version = 14;
    std::vector<gsz::format::SectionData> v14;
    const std::vector<uint8_t> params14(params.begin(), params.begin() + 32);
    for (const auto& s : old.sections)
        v14.push_back({s.kind, s.kind == SectionKind::pipeline_params ? std::span<const uint8_t>(params14) : s.bytes});
    EXPECT_EQ(try_decompress(gsz::format::archive_write(old.header, v14)), GSZ_STATUS_CORRUPT);
}

TEST(Hostile, LyingOutliersAndStreamsAreRejected) {
    using gsz::format::SectionKind;
    const auto archive = small_archive();
    auto outliers = section_of(archive, SectionKind::outlier_values);
    outliers.resize(outliers.size() + 4);
    EXPECT_EQ(try_decompress(with_section(archive, SectionKind::outlier_values, outliers)), GSZ_STATUS_CORRUPT);

    // Random garbage in each section, checksums fixed: errors or (for the
    // bitstream) some decoded values, but never a crash.
    std::mt19937 rng(5);
    for (auto kind : {SectionKind::huffman_codebook, SectionKind::huffman_chunks, SectionKind::huffman_bitstream,
                      SectionKind::outlier_values}) {
        const auto original = section_of(archive, kind);
        for (int trial = 0; trial < 200; ++trial) {
            auto s = original;
            const int flips = 1 + static_cast<int>(rng() % 4);
            for (int f = 0; f < flips && !s.empty(); ++f) s[rng() % s.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
            if (trial % 50 == 0 && !s.empty()) s.resize(rng() % s.size());
            (void)try_decompress(with_section(archive, kind, s));
        }
    }
}

TEST(Hostile, LyingFastSectionsAreRejected) {
    using gsz::format::SectionKind;
    const auto archive = small_archive(GSZ_PIPELINE_FAST);
    const auto params = section_of(archive, SectionKind::pipeline_params);
    ASSERT_EQ(params.size(), 32u);
    auto patch = [&](size_t offset, auto value) {
        auto p = params;
        std::memcpy(p.data() + offset, &value, sizeof value);
        return with_section(archive, SectionKind::pipeline_params, p);
    };
    EXPECT_EQ(try_decompress(patch(0, uint32_t{100})), GSZ_STATUS_CORRUPT);   // block size
    EXPECT_EQ(try_decompress(patch(0, uint32_t{64})), GSZ_STATUS_CORRUPT);    // block count no longer fits
    EXPECT_EQ(try_decompress(patch(4, uint32_t{1})), GSZ_STATUS_CORRUPT);     // reserved
    EXPECT_EQ(try_decompress(patch(8, uint64_t{1} << 40)), GSZ_STATUS_CORRUPT);
    EXPECT_EQ(try_decompress(patch(16, ~uint64_t{0})), GSZ_STATUS_CORRUPT);   // constant blocks > blocks

    // Each stream one byte longer or shorter, checksums fixed: refused.
    for (auto kind : {SectionKind::fast_block_codes, SectionKind::fast_block_mids, SectionKind::fast_lead_codes,
                      SectionKind::fast_mid_bytes}) {
        auto s = section_of(archive, kind);
        s.push_back(0);
        EXPECT_EQ(try_decompress(with_section(archive, kind, s)), GSZ_STATUS_CORRUPT) << int(kind);
        s.resize(s.size() - 2);
        EXPECT_EQ(try_decompress(with_section(archive, kind, s)), GSZ_STATUS_CORRUPT) << int(kind);
    }
    // Random flips inside the streams: an error or some values, never a crash.
    std::mt19937 rng(6);
    for (auto kind : {SectionKind::fast_block_codes, SectionKind::fast_block_mids, SectionKind::fast_lead_codes,
                      SectionKind::fast_mid_bytes}) {
        const auto original = section_of(archive, kind);
        for (int trial = 0; trial < 200; ++trial) {
            auto s = original;
            const int flips = 1 + static_cast<int>(rng() % 4);
            for (int f = 0; f < flips && !s.empty(); ++f) s[rng() % s.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
            (void)try_decompress(with_section(archive, kind, s));
        }
    }
}

// An interp archive of the small field with several exact outliers (NaN,
// Inf) and an absolute bound, so every section has content.
// The tests below lie about raw anchors unless they ask for coded ones.
// jumps: a run of fill values (-1e30), where the jump guard decides
// predictions, so the archive carries its flag and threshold.
std::vector<uint8_t> interp_archive(gsz_interp_anchors anchors = GSZ_INTERP_ANCHORS_RAW,
                                    gsz_lossless lossless = GSZ_LOSSLESS_NONE, bool jumps = false) {
    auto v = small_field();
    if (jumps) std::fill(v.begin() + 1000, v.begin() + 1100, -1e30f);
    v[8] = std::numeric_limits<float>::quiet_NaN();   // anchor 1: coded, it is listed
    v[300] = v[301];
    for (size_t i : {7, 55, 999, 1500}) v[i] = std::numeric_limits<float>::quiet_NaN();
    v[123] = std::numeric_limits<float>::infinity();
    v[1999] = -std::numeric_limits<float>::infinity();
    gsz::Context ctx;
    auto p = make_params(GSZ_DTYPE_F32, {20, 20, 5}, GSZ_ERROR_ABS, 1e-2);
    p.pipeline = GSZ_PIPELINE_INTERP;
    p.interp_anchors = anchors;
    p.lossless = lossless;
    p.interp_tiles = GSZ_INTERP_TILES_SPLINE;   // the layout below; Lorenzo tiles have their own test
    p.fill = GSZ_FILL_OFF;                      // the jumps coded as data; the fill mask has its own test
    return as_v13(ctx.compress(p, v.data()));
}

// pipeline_params of a 3-D interp archive (docs/FORMAT.md): radius u32 @0,
// rank @4, anchor stride @8, levels @12, tile extents @16/20/24, order u8
// @28..30, spline u8 @31..33, reserved u16 @34, alpha f64 @36, beta @44,
// three level bounds @52/60/68, huffman chunk symbols u32 @76, flags u32 @80
// (reserved before format version 5), outlier count u64 @84, jump guard
// threshold f64 @92 (flag 1).
TEST(Hostile, LyingInterpSectionsAreRejected) {
    using gsz::format::SectionKind;
    {   // Where the guard decided nothing, no flag and no threshold: a flag without one is short.
        const auto plain = interp_archive();
        auto p = section_of(plain, SectionKind::pipeline_params);
        ASSERT_EQ(p.size(), 92u);
        EXPECT_EQ(p[80], 0u);
        p[80] = 1;
        EXPECT_EQ(try_decompress(with_section(plain, SectionKind::pipeline_params, p)), GSZ_STATUS_CORRUPT);
    }
    const auto archive = interp_archive(GSZ_INTERP_ANCHORS_RAW, GSZ_LOSSLESS_NONE, true);
    const auto parsed = gsz::format::archive_parse(archive);
    ASSERT_EQ(parsed.header.pipeline, GSZ_PIPELINE_INTERP);
    ASSERT_EQ(try_decompress(archive), GSZ_STATUS_OK);
    const double eb = parsed.header.error_bound_abs;
    const auto params = section_of(archive, SectionKind::pipeline_params);
    ASSERT_EQ(params.size(), 100u);
    auto patch = [&](size_t offset, auto value) {
        auto p = params;
        std::memcpy(p.data() + offset, &value, sizeof value);
        return with_section(archive, SectionKind::pipeline_params, p);
    };
    auto expect_corrupt = [&](const std::vector<uint8_t>& bad, const std::string& what) {
        EXPECT_EQ(try_decompress(bad), GSZ_STATUS_CORRUPT) << what;
    };
    expect_corrupt(patch(0, uint32_t{0}), "radius 0");
    expect_corrupt(patch(0, uint32_t{40000}), "radius too large");
    expect_corrupt(patch(0, uint32_t{4}), "codebook symbols beyond 2*radius");
    for (uint32_t rank : {0u, 1u, 2u, 4u}) expect_corrupt(patch(4, rank), "rank " + std::to_string(rank));
    for (uint32_t stride : {0u, 4u, 16u, 512u}) expect_corrupt(patch(8, stride), "stride " + std::to_string(stride));
    for (uint32_t levels : {0u, 2u, 4u, 9u, 1000u}) expect_corrupt(patch(12, levels), "levels " + std::to_string(levels));
    for (size_t d = 0; d < 3; ++d)
        for (uint32_t t : {0u, 16u, 64u, 33u})
            expect_corrupt(patch(16 + 4 * d, t), "tile extent " + std::to_string(t) + " along " + std::to_string(d));
    using Order = std::array<uint8_t, 3>;
    for (Order o : {Order{0, 0, 1}, Order{1, 1, 1}, Order{0, 1, 3}, Order{2, 1, 255}, Order{3, 4, 5}})
        expect_corrupt(patch(28, o), "order " + std::to_string(o[0]) + std::to_string(o[1]) + std::to_string(o[2]));
    for (size_t d = 0; d < 3; ++d)
        for (uint8_t spline : {uint8_t{2}, uint8_t{7}, uint8_t{255}})
            expect_corrupt(patch(31 + d, spline), "spline " + std::to_string(spline) + " of dim " + std::to_string(d));
    expect_corrupt(patch(34, uint16_t{1}), "coded anchors over a raw anchor section");
    expect_corrupt(patch(34, uint16_t{2}), "anchor coding 2");
    const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
    for (double alpha : {0.5, 0.0, -2.0, nan, inf}) expect_corrupt(patch(36, alpha), "alpha " + std::to_string(alpha));
    for (double beta : {0.5, 0.0, nan, -inf, inf}) expect_corrupt(patch(44, beta), "beta " + std::to_string(beta));
    for (size_t l = 0; l < 3; ++l)
        for (double e : {0.0, -eb, nan, inf, 2 * eb, std::nextafter(eb, inf), 1e-310, -0.0})
            expect_corrupt(patch(52 + 8 * l, e), "level " + std::to_string(l) + " bound " + std::to_string(e));
    expect_corrupt(patch(76, uint32_t{17}), "huffman chunk mismatch");
    for (uint32_t flags : {2u, 3u, 0x80000001u}) expect_corrupt(patch(80, flags), "flags " + std::to_string(flags));
    expect_corrupt(patch(80, uint32_t{0}), "no jump guard, its threshold still there");
    for (double jump : {0.0, -0.0, -1.0, nan, inf, -inf})
        expect_corrupt(patch(92, jump), "jump threshold " + std::to_string(jump));
    {   // A version 4 archive has no flags.
        auto old = gsz::format::archive_parse(archive);
        old.header.format_version = 4;
        EXPECT_THROW(gsz::pipeline::InterpParams::read(params, old.header), gsz::Error);
        auto unguarded = params;
        unguarded.resize(92);
        std::memset(unguarded.data() + 80, 0, 4);
        EXPECT_NO_THROW(gsz::pipeline::InterpParams::read(unguarded, old.header));
    }
    uint64_t outliers = 0;
    std::memcpy(&outliers, params.data() + 84, 8);
    ASSERT_GE(outliers, 6u);
    for (uint64_t lie : {outliers + 1, outliers - 1, uint64_t{0}, ~uint64_t{0}, uint64_t{1} << 40})
        expect_corrupt(patch(84, lie), "outlier count " + std::to_string(lie));
    auto shorter = params;
    shorter.pop_back();
    expect_corrupt(with_section(archive, SectionKind::pipeline_params, shorter), "short params");
    auto longer = params;
    longer.push_back(0);
    expect_corrupt(with_section(archive, SectionKind::pipeline_params, longer), "long params");

    // Outlier indices: not increasing, repeated, outside the array; sections
    // whose sizes disagree with the count.
    const auto index = section_of(archive, SectionKind::outlier_indices);
    ASSERT_EQ(index.size(), outliers * 8);
    auto index_at = [&](size_t k) {
        uint64_t i;
        std::memcpy(&i, index.data() + 8 * k, 8);
        return i;
    };
    auto with_index = [&](size_t k, uint64_t value) {
        auto s = index;
        std::memcpy(s.data() + 8 * k, &value, 8);
        return with_section(archive, SectionKind::outlier_indices, s);
    };
    auto swapped = index;
    std::swap_ranges(swapped.begin(), swapped.begin() + 8, swapped.begin() + 8);
    expect_corrupt(with_section(archive, SectionKind::outlier_indices, swapped), "indices swapped");
    expect_corrupt(with_index(1, index_at(0)), "index repeated");
    expect_corrupt(with_index(outliers - 1, 2000), "index = element count");
    expect_corrupt(with_index(outliers - 1, ~uint64_t{0}), "index 2^64-1");
    expect_corrupt(with_index(0, index_at(outliers - 1)), "first index = last");
    auto fewer_index = index;
    fewer_index.resize(index.size() - 8);
    expect_corrupt(with_section(archive, SectionKind::outlier_indices, fewer_index), "one index missing");
    auto odd_index = index;
    odd_index.push_back(0);
    expect_corrupt(with_section(archive, SectionKind::outlier_indices, odd_index), "index section not 8-byte");
    auto values = section_of(archive, SectionKind::outlier_values);
    ASSERT_EQ(values.size(), outliers * 4);
    values.resize(values.size() + 4);
    expect_corrupt(with_section(archive, SectionKind::outlier_values, values), "one value too many");
    values.resize(values.size() - 8);
    expect_corrupt(with_section(archive, SectionKind::outlier_values, values), "one value missing");

    // Anchors: 3 x 3 x 1 of them (stride 8 over 20 x 20 x 5).
    const auto anchors = section_of(archive, SectionKind::interp_anchors);
    ASSERT_EQ(anchors.size(), 9u * 4u);
    for (size_t size : {size_t{0}, size_t{32}, size_t{35}, size_t{37}, size_t{40}, size_t{72}}) {
        std::vector<uint8_t> a(anchors);
        a.resize(size);
        expect_corrupt(with_section(archive, SectionKind::interp_anchors, a), "anchors of " + std::to_string(size) + " bytes");
    }

    // Dims that imply another geometry than pipeline_params records.
    for (auto dims : std::vector<std::vector<uint64_t>>{{400, 5}, {2000}, {20, 100}, {10, 10, 20}, {20, 20, 5, 1}}) {
        auto header = parsed.header;
        header.rank = static_cast<uint32_t>(dims.size());
        for (size_t d = 0; d < 4; ++d) header.dims[d] = d < dims.size() ? dims[d] : 1;
        std::vector<gsz::format::SectionData> sections;
        for (const auto& s : parsed.sections) sections.push_back({s.kind, s.bytes});
        const auto bad = gsz::format::archive_write(header, sections);
        const gsz_status st = try_decompress(bad);
        if (dims.size() == 4)
            EXPECT_EQ(st, GSZ_STATUS_OK) << "a trailing size-1 dim changes nothing";
        else if (dims == std::vector<uint64_t>{10, 10, 20})
            EXPECT_EQ(st, GSZ_STATUS_CORRUPT) << "10x10x20: 2x2x3 anchors, not 3x3x1";
        else
            EXPECT_EQ(st, GSZ_STATUS_CORRUPT) << dims.size() << "-D " << dims[0];
    }
    // A bound the lattice cannot use.
    for (double bad_eb : {0.0, -1.0, nan, 1e-310}) {
        auto header = parsed.header;
        header.error_bound_abs = bad_eb;
        std::vector<gsz::format::SectionData> sections;
        for (const auto& s : parsed.sections) sections.push_back({s.kind, s.bytes});
        std::vector<uint8_t> bad;
        try {
            bad = gsz::format::archive_write(header, sections);
        } catch (const gsz::Error&) {
            continue;   // the writer refuses it already
        }
        EXPECT_NE(try_decompress(bad), GSZ_STATUS_OK) << "archive bound " << bad_eb;
    }

    // Garbage values in the anchors and outlier values decode to something,
    // never crash.
    std::mt19937 rng(9);
    for (auto kind : {SectionKind::interp_anchors, SectionKind::outlier_values}) {
        const auto original = section_of(archive, kind);
        for (int trial = 0; trial < 100; ++trial) {
            auto s = original;
            for (int f = 0; f < 1 + static_cast<int>(rng() % 4); ++f)
                s[rng() % s.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
            EXPECT_EQ(try_decompress(with_section(archive, kind, s)), GSZ_STATUS_OK);
        }
    }
}

// Coded anchors: the listed (index, residual) pairs must match the anchors
// whose code is 0 one to one; a garbage residual decodes to something.
// A 1-D interp archive records its own anchor stride (format version 9 on):
// a power of two 2 .. 512, with the level count and bounds that go with it;
// before version 9, and for 2-D and 3-D arrays, only the default geometry.
// Lorenzo tiles (format version 10): the tile map and the flag must agree,
// the map must have its exact size and no bits past the last tile, the
// Lorenzo bound must be in range, and a version 9 archive knows no flag 0x2.
TEST(Hostile, LyingLorenzoTilesAreRejected) {
    using gsz::format::SectionKind;
    // A random walk along the raster: neighbours predict better than splines, so tiles choose Lorenzo.
    std::vector<float> v(2000);
    std::mt19937 rng(3);
    std::normal_distribution<float> step(0.0f, 1.0f);
    float at = 0;
    for (float& x : v) x = at += step(rng);
    gsz::Context ctx;
    auto params = make_params(GSZ_DTYPE_F32, {20, 20, 5}, GSZ_ERROR_REL, 1e-4);
    params.pipeline = GSZ_PIPELINE_INTERP;
    params.interp_tiles = GSZ_INTERP_TILES_EACH;
    // Where the tiles choose (flag 0x2), in version 13's layout: its last field is the Lorenzo bound.
    const auto archive = as_v13(ctx.compress(params, v.data()));
    const uint64_t chosen = ctx.inspect(archive.data(), archive.size()).interp_lorenzo_tiles;   // of 1 x 3 x 1
    ASSERT_GE(chosen, 1u);
    ASSERT_EQ(try_decompress(archive), GSZ_STATUS_OK);
    const auto map = section_of(archive, SectionKind::interp_tiles);
    ASSERT_EQ(map.size(), 1u);
    EXPECT_EQ(try_decompress(with_section(archive, SectionKind::interp_tiles, {0})), GSZ_STATUS_OK);   // a valid map
    EXPECT_EQ(try_decompress(with_section(archive, SectionKind::interp_tiles, {15})), GSZ_STATUS_CORRUPT);  // tile 3
    EXPECT_EQ(try_decompress(with_section(archive, SectionKind::interp_tiles, {map[0], 0})), GSZ_STATUS_CORRUPT);
    EXPECT_EQ(try_decompress(with_section(archive, SectionKind::interp_tiles, {})), GSZ_STATUS_CORRUPT);
    // The flag without the section, the section without the flag.
    auto parsed = gsz::format::archive_parse(archive);
    std::vector<gsz::format::SectionData> without;
    for (const auto& sec : parsed.sections)
        if (sec.kind != SectionKind::interp_tiles) without.push_back({sec.kind, sec.bytes});
    EXPECT_EQ(try_decompress(gsz::format::archive_write(parsed.header, without)), GSZ_STATUS_CORRUPT);
    auto p = section_of(archive, SectionKind::pipeline_params);
    const size_t bound_at = p.size() - 8;
    auto q = p;
    const double too_big = 1e300, zero = 0;
    std::memcpy(q.data() + bound_at, &too_big, 8);
    EXPECT_EQ(try_decompress(with_section(archive, SectionKind::pipeline_params, q)), GSZ_STATUS_CORRUPT);
    q = p;
    std::memcpy(q.data() + bound_at, &zero, 8);
    EXPECT_EQ(try_decompress(with_section(archive, SectionKind::pipeline_params, q)), GSZ_STATUS_CORRUPT);
    // A version 9 archive knows no flag 0x2 (and no kind 17: the writer refuses it).
    auto header = parsed.header;
    header.format_version = 9;
    EXPECT_EQ(try_decompress(gsz::format::archive_write(header, without)), GSZ_STATUS_CORRUPT);

    // Every tile Lorenzo-coded (version 14, flag 0x8): no map, no bound; a map
    // or flag 0x2 beside it, or a version 13 header, is refused.
    params.interp_tiles = GSZ_INTERP_TILES_LORENZO;
    const auto all = ctx.compress(params, v.data());
    ASSERT_EQ(ctx.inspect(all.data(), all.size()).interp_lorenzo_tiles, 3u);
    ASSERT_EQ(try_decompress(all), GSZ_STATUS_OK);
    auto all_parsed = gsz::format::archive_parse(all);
    std::vector<gsz::format::SectionData> with_map;
    for (const auto& sec : all_parsed.sections) {
        ASSERT_NE(sec.kind, SectionKind::interp_tiles);
        with_map.push_back({sec.kind, sec.bytes});
    }
    const std::vector<uint8_t> seven = {7};
    with_map.push_back({SectionKind::interp_tiles, seven});
    EXPECT_EQ(try_decompress(gsz::format::archive_write(all_parsed.header, with_map)), GSZ_STATUS_CORRUPT);
    auto all_params = section_of(all, SectionKind::pipeline_params);
    ASSERT_EQ(all_params[10] & 0x8, 0x8);
    all_params[10] |= 0x2;
    EXPECT_EQ(try_decompress(with_section(all, SectionKind::pipeline_params, all_params)), GSZ_STATUS_CORRUPT);
    auto old = all_parsed.header;
    old.format_version = 13;
    std::vector<gsz::format::SectionData> same;
    for (const auto& sec : all_parsed.sections) same.push_back({sec.kind, sec.bytes});
    EXPECT_EQ(try_decompress(gsz::format::archive_write(old, same)), GSZ_STATUS_CORRUPT);
}

// Version 14's compact pipeline_params of a 3-D interp archive (docs/FORMAT.md):
// radius u16 @0, stride log2 u8 @2, order u8 @3..5, spline u8 @6..8, anchor
// coding u8 @9, flags u8 @10, outlier count u64 @11, then what the flags add.
TEST(Hostile, LyingCompactInterpParamsAreRejected) {
    using gsz::format::SectionKind;
    const auto v = small_field();
    gsz::Context ctx;
    auto params = make_params(GSZ_DTYPE_F32, {20, 20, 5}, GSZ_ERROR_ABS, 1e-2);
    params.pipeline = GSZ_PIPELINE_INTERP;
    params.interp_tiles = GSZ_INTERP_TILES_SPLINE;
    params.lossless = GSZ_LOSSLESS_NONE;
    const auto archive = ctx.compress(params, v.data());
    ASSERT_EQ(try_decompress(archive), GSZ_STATUS_OK);
    const auto p = section_of(archive, SectionKind::pipeline_params);
    ASSERT_EQ(p.size(), 19u) << "the defaults' values left out";
    ASSERT_EQ(p[2], 3u);
    ASSERT_EQ(p[10] & ~1u, 0u) << "only the jump guard (its threshold derived)";
    const auto patch = [&](size_t offset, auto value) {
        auto q = p;
        std::memcpy(q.data() + offset, &value, sizeof value);
        return with_section(archive, SectionKind::pipeline_params, q);
    };
    const auto expect_corrupt = [&](const std::vector<uint8_t>& bad, const std::string& what) {
        EXPECT_EQ(try_decompress(bad), GSZ_STATUS_CORRUPT) << what;
    };
    expect_corrupt(patch(0, uint16_t{4}), "codebook symbols beyond 2*radius");
    for (uint8_t s : {uint8_t{0}, uint8_t{2}, uint8_t{4}, uint8_t{9}, uint8_t{31}, uint8_t{32}, uint8_t{255}})
        expect_corrupt(patch(2, s), "stride 2^" + std::to_string(s) + " for a 3-D array");
    using Order = std::array<uint8_t, 3>;
    for (Order o : {Order{0, 0, 1}, Order{1, 1, 1}, Order{0, 1, 3}, Order{3, 4, 5}})
        expect_corrupt(patch(3, o), "order " + std::to_string(o[0]) + std::to_string(o[1]) + std::to_string(o[2]));
    for (uint8_t spline : {uint8_t{2}, uint8_t{255}}) expect_corrupt(patch(6, spline), "spline");
    expect_corrupt(patch(9, uint8_t{2}), "anchor coding 2");
    expect_corrupt(patch(9, static_cast<uint8_t>(p[9] ^ 1)), "the other anchor coding over the anchor section");
    for (uint8_t flags : {uint8_t{0x80}, uint8_t{0x0A}, uint8_t{0x20}, uint8_t{0x40}})
        expect_corrupt(patch(10, flags), "flags " + std::to_string(flags));
    // A flag whose field is missing: the section is short.
    for (uint8_t flags : {uint8_t{0x10}, uint8_t{0x21}, uint8_t{0x04}})
        expect_corrupt(patch(10, flags), "flags " + std::to_string(flags) + " without their fields");
    uint64_t outliers = 0;
    std::memcpy(&outliers, p.data() + 11, 8);
    ASSERT_GE(outliers, 1u);
    for (uint64_t lie : {outliers + 1, outliers - 1, ~uint64_t{0}}) expect_corrupt(patch(11, lie), "outlier count");
    auto shorter = p;
    shorter.pop_back();
    expect_corrupt(with_section(archive, SectionKind::pipeline_params, shorter), "short params");
    auto longer = p;
    longer.push_back(0);
    expect_corrupt(with_section(archive, SectionKind::pipeline_params, longer), "long params");
    // The level bounds written (flag 0x10): lies about them are refused, the true ones decode alike.
    const auto parsed = gsz::format::archive_parse(archive);
    const auto read = gsz::pipeline::InterpParams::read(p, parsed.header);
    auto given = p;
    given[10] |= 0x10;
    const auto put = [](std::vector<uint8_t>& b, double x) {
        const auto* at = reinterpret_cast<const uint8_t*>(&x);
        b.insert(b.end(), at, at + 8);
    };
    put(given, read.config.alpha);
    put(given, read.config.beta);
    for (uint32_t l = 0; l < read.layout.num_levels; ++l) put(given, read.config.level_eb[l]);
    ASSERT_EQ(given.size(), 19u + 16u + 8u * read.layout.num_levels);
    EXPECT_EQ(try_decompress(with_section(archive, SectionKind::pipeline_params, given)), GSZ_STATUS_OK);
    const double eb = parsed.header.error_bound_abs, nan = std::numeric_limits<double>::quiet_NaN();
    for (const auto& [offset, value] : std::vector<std::pair<size_t, double>>{
             {19, 0.5}, {19, nan}, {27, 0.0}, {35, 2 * eb}, {35, 0.0}, {35 + 8, nan}, {35 + 16, -eb}}) {
        auto bad = given;
        std::memcpy(bad.data() + offset, &value, 8);
        expect_corrupt(with_section(archive, SectionKind::pipeline_params, bad),
                       "field at " + std::to_string(offset) + " = " + std::to_string(value));
    }
}

TEST(Hostile, LyingOneDimStridesAreRejected) {
    using gsz::format::SectionKind;
    const auto v = small_field();   // 2000 values, read as a 1-D array
    gsz::Context ctx;
    auto params = make_params(GSZ_DTYPE_F32, {2000}, GSZ_ERROR_REL, 1e-3);
    params.pipeline = GSZ_PIPELINE_INTERP;
    params.interp_anchor_stride = 4;
    const auto archive = as_v13(ctx.compress(params, v.data()));
    ASSERT_EQ(ctx.inspect(archive.data(), archive.size()).interp_anchor_stride, 4u);
    ASSERT_EQ(try_decompress(archive), GSZ_STATUS_OK);
    const auto p = section_of(archive, SectionKind::pipeline_params);
    const auto patch = [&](uint32_t stride, uint32_t levels) {
        auto q = p;
        std::memcpy(q.data() + 8, &stride, 4);
        std::memcpy(q.data() + 12, &levels, 4);
        return with_section(archive, SectionKind::pipeline_params, q);
    };
    EXPECT_EQ(try_decompress(patch(4, 2)), GSZ_STATUS_OK);   // the patch itself changes nothing
    for (const auto& [stride, levels] : std::vector<std::pair<uint32_t, uint32_t>>{
             {0, 0}, {1, 0}, {3, 2}, {6, 2}, {1024, 10}, {0x80000000u, 31}, {8, 2}, {4, 3}}) {
        EXPECT_EQ(try_decompress(patch(stride, levels)), GSZ_STATUS_CORRUPT) << stride << ", " << levels;
    }
    // A version 8 archive holds only 512.
    auto parsed = gsz::format::archive_parse(archive);
    auto header = parsed.header;
    header.format_version = 8;
    std::vector<gsz::format::SectionData> sections;
    for (const auto& sec : parsed.sections) sections.push_back({sec.kind, sec.bytes});
    EXPECT_EQ(try_decompress(gsz::format::archive_write(header, sections)), GSZ_STATUS_CORRUPT);
    // A 2-D array keeps its 16.
    auto p2 = make_params(GSZ_DTYPE_F32, {40, 50}, GSZ_ERROR_REL, 1e-3);
    p2.pipeline = GSZ_PIPELINE_INTERP;
    const auto flat = as_v13(ctx.compress(p2, v.data()));
    auto q = section_of(flat, SectionKind::pipeline_params);
    const uint32_t eight = 8, three = 3;
    std::memcpy(q.data() + 8, &eight, 4);
    std::memcpy(q.data() + 12, &three, 4);
    EXPECT_EQ(try_decompress(with_section(flat, SectionKind::pipeline_params, q)), GSZ_STATUS_CORRUPT);
    // The option is for 1-D arrays, in range.
    p2.interp_anchor_stride = 4;
    EXPECT_THROW(ctx.compress(p2, v.data()), gsz::Exception);
    params.interp_anchor_stride = 3;
    EXPECT_THROW(ctx.compress(params, v.data()), gsz::Exception);
    params.interp_anchor_stride = 1024;
    EXPECT_THROW(ctx.compress(params, v.data()), gsz::Exception);
}

TEST(Hostile, LyingCodedAnchorsAreRejected) {
    using gsz::format::SectionKind;
    const auto archive = interp_archive(GSZ_INTERP_ANCHORS_CODED);
    ASSERT_EQ(try_decompress(archive), GSZ_STATUS_OK);
    const auto params = section_of(archive, SectionKind::pipeline_params);
    uint16_t mode = 0;
    std::memcpy(&mode, params.data() + 34, 2);
    ASSERT_EQ(mode, 1);
    const auto anchors = section_of(archive, SectionKind::interp_anchors);
    ASSERT_EQ(anchors.size(), 16u) << "the NaN anchor is listed";
    uint64_t listed = 0;
    std::memcpy(&listed, anchors.data(), 8);
    ASSERT_EQ(listed, 1u);
    auto expect_corrupt = [&](const std::vector<uint8_t>& section, const std::string& what) {
        EXPECT_EQ(try_decompress(with_section(archive, SectionKind::interp_anchors, section)), GSZ_STATUS_CORRUPT)
            << what;
    };
    expect_corrupt({}, "the code-0 anchor not listed");
    for (size_t size : {size_t{8}, size_t{15}, size_t{17}, size_t{24}, size_t{36}}) {
        auto a = anchors;
        a.resize(size);
        expect_corrupt(a, "anchor section of " + std::to_string(size) + " bytes");
    }
    auto with_index = [&](std::initializer_list<uint64_t> idx) {
        std::vector<uint8_t> a;
        for (uint64_t i : idx) {
            const uint64_t residual = 0;
            a.insert(a.end(), reinterpret_cast<const uint8_t*>(&i), reinterpret_cast<const uint8_t*>(&i) + 8);
            a.insert(a.end(), reinterpret_cast<const uint8_t*>(&residual),
                     reinterpret_cast<const uint8_t*>(&residual) + 8);
        }
        return a;
    };
    expect_corrupt(with_index({0}), "a listed anchor whose code is not 0");
    expect_corrupt(with_index({1, 2}), "one listed anchor too many");
    expect_corrupt(with_index({1, 1}), "listed twice");
    expect_corrupt(with_index({9}), "an index past the 3x3x1 grid");
    expect_corrupt(with_index({~uint64_t{0}}), "index 2^64 - 1");
    std::mt19937 rng(4);
    for (int trial = 0; trial < 50; ++trial) {
        auto a = anchors;
        a[8 + rng() % 8] ^= static_cast<uint8_t>(1u << (rng() % 8));
        EXPECT_EQ(try_decompress(with_section(archive, SectionKind::interp_anchors, a)), GSZ_STATUS_OK);
    }
    auto raw = params;
    raw[34] = 0;
    EXPECT_EQ(try_decompress(with_section(archive, SectionKind::pipeline_params, raw)), GSZ_STATUS_CORRUPT)
        << "raw anchors over a coded anchor section";

    // Format version 1 had no coded anchors: the field was reserved.  (Before
    // version 5 no jump guard: its flag and threshold taken out.)
    auto parsed = gsz::format::archive_parse(archive);
    auto unguarded = params;
    unguarded.resize(92);
    std::memset(unguarded.data() + 80, 0, 4);
    parsed.header.format_version = 1;
    EXPECT_THROW(gsz::pipeline::InterpParams::read(unguarded, parsed.header), gsz::Error);
    parsed.header.format_version = 2;
    EXPECT_NO_THROW(gsz::pipeline::InterpParams::read(unguarded, parsed.header));
}

// Zero codes without an outlier entry (an outlier removed, or a flipped
// Huffman codebook/bitstream with valid checksums) and outlier entries at
// points whose code is not 0 are CORRUPT, never a crash or a silent decode.
TEST(Hostile, InterpZeroCodesMatchOutliers) {
    using gsz::format::SectionKind;
    const auto archive = interp_archive();
    const auto params = section_of(archive, SectionKind::pipeline_params);
    const auto index = section_of(archive, SectionKind::outlier_indices);
    const auto values = section_of(archive, SectionKind::outlier_values);
    uint64_t outliers = 0;
    std::memcpy(&outliers, params.data() + 84, 8);
    ASSERT_GE(outliers, 6u);
    auto rebuild = [&](const std::vector<uint8_t>& idx, const std::vector<uint8_t>& val, uint64_t count) {
        auto p = params;
        std::memcpy(p.data() + 84, &count, 8);
        const auto parsed = gsz::format::archive_parse(archive);
        std::vector<gsz::format::SectionData> sections;
        for (const auto& s : parsed.sections) {
            std::span<const uint8_t> b = s.bytes;
            if (s.kind == SectionKind::pipeline_params) b = p;
            if (s.kind == SectionKind::outlier_indices) b = idx;
            if (s.kind == SectionKind::outlier_values) b = val;
            sections.push_back({s.kind, b});
        }
        return gsz::format::archive_write(parsed.header, sections);
    };
    // One extra outlier entry at a point whose code is not 0.
    {
        std::vector<uint64_t> idx(outliers);
        std::memcpy(idx.data(), index.data(), index.size());
        uint64_t free_point = 0;
        while (std::find(idx.begin(), idx.end(), free_point) != idx.end()) ++free_point;
        idx.insert(std::lower_bound(idx.begin(), idx.end(), free_point), free_point);
        std::vector<uint8_t> idx_bytes(idx.size() * 8);
        std::memcpy(idx_bytes.data(), idx.data(), idx_bytes.size());
        auto val = values;
        val.resize(val.size() + 4);
        EXPECT_EQ(try_decompress(rebuild(idx_bytes, val, outliers + 1)), GSZ_STATUS_CORRUPT)
            << "extra outlier at " << free_point;
    }
    // One outlier dropped, everything else consistent: a zero code without entry.
    for (uint64_t k : {uint64_t{0}, outliers / 2, outliers - 1}) {
        auto idx = index;
        auto val = values;
        idx.erase(idx.begin() + static_cast<ptrdiff_t>(8 * k), idx.begin() + static_cast<ptrdiff_t>(8 * k + 8));
        val.erase(val.begin() + static_cast<ptrdiff_t>(4 * k), val.begin() + static_cast<ptrdiff_t>(4 * k + 4));
        EXPECT_EQ(try_decompress(rebuild(idx, val, outliers - 1)), GSZ_STATUS_CORRUPT) << "outlier " << k << " dropped";
    }
    // Flipped bits in the Huffman sections (checksums fixed): an error or
    // some values, never an abort.
    std::mt19937 rng(10);
    for (auto kind : {SectionKind::huffman_codebook, SectionKind::huffman_chunks, SectionKind::huffman_bitstream}) {
        const auto original = section_of(archive, kind);
        for (int trial = 0; trial < 200; ++trial) {
            auto s = original;
            for (int f = 0; f < 1 + static_cast<int>(rng() % 4) && !s.empty(); ++f)
                s[rng() % s.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
            (void)try_decompress(with_section(archive, kind, s));
        }
    }
}

// An archive whose Huffman symbols are run tokens (lossless stage "runs").
std::vector<uint8_t> runs_archive(gsz_pipeline pipeline) {
    const auto v = small_field();
    gsz::Context ctx;
    auto p = make_params(GSZ_DTYPE_F32, {20, 20, 5}, GSZ_ERROR_REL, 1e-2);
    p.pipeline = pipeline;
    p.lossless = GSZ_LOSSLESS_RUNS;
    return ctx.compress(p, v.data());
}

TEST(Hostile, LyingRunTokensAreRejected) {
    using gsz::format::SectionKind;
    for (const gsz_pipeline pipeline : {GSZ_PIPELINE_LORENZO, GSZ_PIPELINE_INTERP}) {
        SCOPED_TRACE(pipeline == GSZ_PIPELINE_INTERP ? "interp" : "lorenzo");
        const auto archive = runs_archive(pipeline);
        gsz::Context ctx;
        const auto info = ctx.inspect(archive.data(), archive.size());
        ASSERT_EQ(info.lossless, GSZ_LOSSLESS_RUNS);
        ASSERT_EQ(try_decompress(archive), GSZ_STATUS_OK);
        for (size_t len = 0; len < archive.size(); len += 7) {
            const std::vector<uint8_t> cut(archive.begin(), archive.begin() + static_cast<ptrdiff_t>(len));
            EXPECT_NE(try_decompress(cut), GSZ_STATUS_OK) << "truncated to " << len;
        }

        // The run_tokens payload: u32 dominant code, u32 run classes.
        auto runs_payload = [](std::vector<uint32_t> words) {
            std::vector<uint8_t> b(words.size() * 4);
            std::memcpy(b.data(), words.data(), b.size());
            return b;
        };
        const uint32_t alphabet = 2 * info.radius;
        for (const auto& words : std::vector<std::vector<uint32_t>>{{alphabet, 10},
                                                                     {0xFFFFFFFFu, 10},
                                                                     {info.run_dominant_code, 11},
                                                                     {info.run_dominant_code, 0},
                                                                     {info.run_dominant_code},
                                                                     {info.run_dominant_code, 10, 0}}) {
            EXPECT_EQ(try_decompress(with_section(archive, SectionKind::run_tokens, runs_payload(words))),
                      GSZ_STATUS_CORRUPT)
                << "run_tokens words " << words.size() << " first " << words[0];
        }
        // Runs of the outlier code: zero codes that are not listed outliers.
        EXPECT_EQ(try_decompress(with_section(archive, SectionKind::run_tokens, runs_payload({0, 10}))),
                  GSZ_STATUS_CORRUPT);

        // The section dropped: the Huffman stream holds fewer symbols than codes.
        const auto parsed = gsz::format::archive_parse(archive);
        std::vector<gsz::format::SectionData> kept;
        for (const auto& s : parsed.sections)
            if (s.kind != SectionKind::run_tokens) kept.push_back({s.kind, s.bytes});
        EXPECT_EQ(try_decompress(gsz::format::archive_write(parsed.header, kept)), GSZ_STATUS_CORRUPT);

        // Token streams whose lengths do not add up to the codes: the last
        // token dropped, or repeated, re-encoded with the archive's own book.
        const uint64_t n = parsed.header.num_elements();
        const auto plan = gsz::pipeline::code_stage_read(parsed, info.radius, 1024, n, gsz::encode::AnsContextShape{});
        std::vector<uint16_t> tokens(plan.stream.num_symbols);
        gsz::encode::huffman_decode_cpu(plan.book, plan.stream, tokens, 1);
        auto with_tokens = [&](const std::vector<uint16_t>& t) {
            const auto stream = gsz::encode::huffman_encode_cpu(plan.book, t, 1024, 1);
            gsz::ByteWriter chunks, bits;
            gsz::encode::huffman_chunks_write(stream, chunks, parsed.header.format_version);
            gsz::encode::huffman_bitstream_write(stream, bits);
            return with_section(with_section(archive, SectionKind::huffman_chunks, chunks.bytes()),
                                SectionKind::huffman_bitstream, bits.bytes());
        };
        EXPECT_EQ(try_decompress(with_tokens(tokens)), GSZ_STATUS_OK) << "re-encoding must be faithful";
        auto shorter = tokens;
        shorter.pop_back();
        EXPECT_EQ(try_decompress(with_tokens(shorter)), GSZ_STATUS_CORRUPT);
        auto longer = tokens;
        longer.push_back(tokens.back());
        EXPECT_EQ(try_decompress(with_tokens(longer)), GSZ_STATUS_CORRUPT);
    }
    // A run_tokens section in a fast archive does not belong there.
    const auto fast = small_archive(GSZ_PIPELINE_FAST);
    const auto parsed = gsz::format::archive_parse(fast);
    std::vector<gsz::format::SectionData> sections;
    for (const auto& s : parsed.sections) sections.push_back({s.kind, s.bytes});
    const std::vector<uint8_t> payload(8, 0);
    sections.push_back({gsz::format::SectionKind::run_tokens, payload});
    EXPECT_EQ(try_decompress(gsz::format::archive_write(parsed.header, sections)), GSZ_STATUS_CORRUPT);
}

// The rANS sections (lossless stage "ans"): tables that do not sum to the
// scale, lanes that do not cover the codes or the stream, states out of
// range, words flipped, dropped or added, sections mixed with Huffman's.
TEST(Hostile, LyingAnsSectionsAreRejected) {
    using gsz::format::SectionKind;
    // An absolute bound: the relative one of small_archive spans the planted 1e35, and every code would be 0.
    const auto lorenzo_archive = [] {
        const auto v = small_field();
        auto p = make_params(GSZ_DTYPE_F32, {20, 20, 5}, GSZ_ERROR_ABS, 1e-2);
        p.lossless = GSZ_LOSSLESS_ANS;
        return gsz::Context().compress(p, v.data());
    };
    for (const gsz_pipeline pipeline : {GSZ_PIPELINE_LORENZO, GSZ_PIPELINE_INTERP}) {
        SCOPED_TRACE(pipeline == GSZ_PIPELINE_INTERP ? "interp" : "lorenzo");
        const auto archive = pipeline == GSZ_PIPELINE_INTERP ? interp_archive(GSZ_INTERP_ANCHORS_RAW, GSZ_LOSSLESS_ANS)
                                                             : lorenzo_archive();
        ASSERT_EQ(gsz::Context().inspect(archive.data(), archive.size()).lossless, GSZ_LOSSLESS_ANS);
        ASSERT_EQ(try_decompress(archive), GSZ_STATUS_OK);
        const auto tables = section_of(archive, SectionKind::ans_tables);
        const auto lanes = section_of(archive, SectionKind::ans_lanes);
        const auto words = section_of(archive, SectionKind::ans_stream);
        ASSERT_GE(lanes.size(), 8u);
        ASSERT_GE(words.size(), 8u);
        auto expect_corrupt = [&](SectionKind kind, const std::vector<uint8_t>& payload, const std::string& what) {
            EXPECT_EQ(try_decompress(with_section(archive, kind, payload)), GSZ_STATUS_CORRUPT) << what;
        };
        auto patched = [](std::vector<uint8_t> b, size_t offset, auto value) {
            std::memcpy(b.data() + offset, &value, sizeof value);
            return b;
        };
        // ans_tables: lane length u32 @0, levels @4, classes @5, alphabet @6, scale bits @7, then the tables.
        expect_corrupt(SectionKind::ans_tables, patched(tables, 0, uint32_t{0}), "lanes of 0 codes");
        expect_corrupt(SectionKind::ans_tables, patched(tables, 0, uint32_t{7}), "lane length changed");
        expect_corrupt(SectionKind::ans_tables, patched(tables, 0, uint32_t{(1u << 24) + 64}), "lanes too long");
        expect_corrupt(SectionKind::ans_tables, patched(tables, 4, static_cast<uint8_t>(tables[4] + 1)), "levels");
        expect_corrupt(SectionKind::ans_tables, patched(tables, 5, uint8_t{8}), "classes");
        expect_corrupt(SectionKind::ans_tables, patched(tables, 6, uint8_t{57}), "alphabet");
        expect_corrupt(SectionKind::ans_tables, patched(tables, 7, uint8_t{11}), "scale bits");
        // Byte 8 (format version 8): the class lag, 1 or 2.
        expect_corrupt(SectionKind::ans_tables, patched(tables, 8, uint8_t{0}), "class lag 0");
        expect_corrupt(SectionKind::ans_tables, patched(tables, 8, uint8_t{3}), "class lag 3");
        // Each table: u8 used, the symbols (used <= 7: one byte each; else a 7-byte mask), then used - 1
        // varint frequencies; or 255 and the earlier context it repeats; or 0xFE and a count of empty
        // contexts (format version 15).  Find the first tables listing
        // symbols and by mask, and their frequencies.
        // Byte 9 (format version 12): the strip width's log2, 0 here; the 20 columns take no strips.
        ASSERT_EQ(tables[9], 0u);
        for (const uint8_t log : {uint8_t{4}, uint8_t{5}, uint8_t{7}, uint8_t{8}, uint8_t{255}})
            expect_corrupt(SectionKind::ans_tables, patched(tables, 9, log), "strips of 2^" + std::to_string(log));
        size_t listed = 0, masked = 0, listed_freq = 0, masked_freq = 0, first_table = 0;
        size_t p = 10;
        while (p < tables.size()) {
            const uint32_t used = tables[p];
            if (used == 0 || used == 255 || used == 0xFE) {   // one empty, a repeat, a run of empties
                p += used ? 2 : 1;
                continue;
            }
            if (!first_table) first_table = p;
            const size_t freq = p + 1 + (used <= 7 ? used : 7);
            if (used >= 2 && used <= 7 && !listed) listed = p, listed_freq = freq;
            if (used > 7 && !masked) masked = p, masked_freq = freq;
            p = freq;
            for (uint32_t k = 0; k + 1 < used && p < tables.size(); ++k) p += tables[p] & 0x80 ? 2 : 1;
        }
        ASSERT_EQ(p, tables.size()) << "the walk over the tables must end on the section's end";
        ASSERT_TRUE(masked) << "the test needs a table with more than 7 symbols";
        expect_corrupt(SectionKind::ans_tables, patched(tables, masked, uint8_t{57}), "57 symbols");
        expect_corrupt(SectionKind::ans_tables, patched(tables, masked, static_cast<uint8_t>(tables[masked] + 1)),
                       "more symbols said than in the mask");
        expect_corrupt(SectionKind::ans_tables, patched(tables, masked_freq, uint16_t{0x7FFF}),
                       "a frequency over the scale");
        expect_corrupt(SectionKind::ans_tables, patched(tables, masked_freq, uint16_t{0x0080}),
                       "a varint that is not minimal");
        if (listed) {
            expect_corrupt(SectionKind::ans_tables, patched(tables, listed + 2, tables[listed + 1]),
                           "symbol repeated");
            expect_corrupt(SectionKind::ans_tables, patched(tables, listed + 1, uint8_t{56}), "symbol 56");
            // The first frequency raised to take the whole scale: nothing left for the last symbol.
            auto all = tables;
            all[listed_freq] = 0xFF;
            all.insert(all.begin() + static_cast<ptrdiff_t>(listed_freq) + 1, uint8_t{0x1F});  // 4095 as a varint
            if (!(tables[listed_freq] & 0x80)) expect_corrupt(SectionKind::ans_tables, all, "no room for the last");
        }
        // The first own table made a reference: to itself or to a later context, or to nothing before it.
        auto ref = tables;
        ref[first_table] = 255;
        ref.insert(ref.begin() + static_cast<ptrdiff_t>(first_table) + 1, uint8_t{0});
        expect_corrupt(SectionKind::ans_tables, ref, "a reference to no earlier table");
        auto longer = tables;
        longer.push_back(0);
        expect_corrupt(SectionKind::ans_tables, longer, "trailing byte");
        expect_corrupt(SectionKind::ans_tables, {tables.begin(), tables.end() - 1}, "truncated");

        // ans_lanes (format version 11): u8 order, then per lane the word count's exponential-Golomb code and
        // the state's bit length and low bits, packed.  Rewritten with one lane's count or one lane changed.
        expect_corrupt(SectionKind::ans_lanes, patched(lanes, 0, uint8_t{26}), "count order out of range");
        expect_corrupt(SectionKind::ans_lanes, {lanes.begin(), lanes.end() - 1}, "truncated");
        auto longer_lanes = lanes;
        longer_lanes.push_back(0);
        expect_corrupt(SectionKind::ans_lanes, longer_lanes, "trailing byte");
        const uint64_t n = gsz::Context().inspect(archive.data(), archive.size()).num_elements;
        const gsz::encode::AnsStreamView view =
            gsz::encode::ans_stream_read(tables, lanes, words, n, tables[4], gsz::encode::AnsLanesLayout::packed_from_one);
        gsz::encode::AnsStream s;
        s.num_symbols = n;
        s.lane_symbols = view.lane_symbols;
        s.start_state = view.start_state;
        s.lane_state = view.lane_state;
        for (size_t l = 0; l + 1 < view.lane_word_offset.size(); ++l)
            s.lane_words.push_back(static_cast<uint32_t>(view.lane_word_offset[l + 1] - view.lane_word_offset[l]));
        const auto written = [](const gsz::encode::AnsStream& st) {
            gsz::ByteWriter out;
            gsz::encode::ans_lanes_write(st, out);
            return out.take();
        };
        ASSERT_EQ(written(s), lanes) << "the packed lanes must read back to the same section";
        const gsz_archive_info info = gsz::Context().inspect(archive.data(), archive.size());
        EXPECT_EQ(info.ans_lanes, s.lane_state.size()) << "gsz info's lanes";
        EXPECT_EQ(info.ans_lane_symbols, s.lane_symbols);
        EXPECT_EQ(info.ans_lanes_bytes, lanes.size());
        EXPECT_EQ(info.ans_class_lag, tables[8]);
        EXPECT_EQ(info.ans_class_lag, view.tables.class_lag);
        const auto with_count = [&](uint32_t words0) {
            auto t = s;
            t.lane_words[0] = words0;
            return written(t);
        };
        const uint32_t w0 = s.lane_words[0];
        expect_corrupt(SectionKind::ans_lanes, with_count(w0 + 1), "word count over the stream");
        expect_corrupt(SectionKind::ans_lanes, with_count(2 * s.lane_symbols + 1), "more words than 2 per code");
        if (s.lane_state.size() > 1) {
            auto fewer = s;
            fewer.lane_state.pop_back();
            fewer.lane_words.pop_back();
            expect_corrupt(SectionKind::ans_lanes, written(fewer), "a lane missing");
        }

        // A changed state or word is a lie no entropy coder can always see
        // (the section checksums catch real damage): the decoder must stay in
        // bounds and say OK or CORRUPT; the end-state check catches most.
        int lies = 0, caught = 0;
        for (size_t at = 0; at < words.size(); ++at) {
            auto flipped = words;
            flipped[at] ^= 0x5A;
            const gsz_status st = try_decompress(with_section(archive, SectionKind::ans_stream, flipped));
            EXPECT_TRUE(st == GSZ_STATUS_OK || st == GSZ_STATUS_CORRUPT) << "word byte " << at;
            ++lies;
            caught += st == GSZ_STATUS_CORRUPT;
        }
        for (size_t at = 1; at < 5; ++at) {  // the first lane's count and state (byte 0 is the counts' order)
            auto changed = lanes;
            changed[at] ^= 0x21;
            const gsz_status st = try_decompress(with_section(archive, SectionKind::ans_lanes, changed));
            EXPECT_TRUE(st == GSZ_STATUS_OK || st == GSZ_STATUS_CORRUPT) << "state byte " << at;
            ++lies;
            caught += st == GSZ_STATUS_CORRUPT;
        }
        EXPECT_GE(caught * 2, lies) << caught << " of " << lies << " changed words and states caught";
        // A word dropped (and the count fixed) or added.
        if (w0 >= 1) {
            auto shorter = words;
            shorter.erase(shorter.begin(), shorter.begin() + 2);
            const auto fewer = with_count(w0 - 1);
            EXPECT_EQ(try_decompress(with_section(with_section(archive, SectionKind::ans_lanes, fewer),
                                                  SectionKind::ans_stream, shorter)),
                      GSZ_STATUS_CORRUPT)
                << "first word dropped";
        }
        auto more = words;
        more.insert(more.begin(), {0x34, 0x12});
        EXPECT_EQ(try_decompress(with_section(with_section(archive, SectionKind::ans_lanes, with_count(w0 + 1)),
                                              SectionKind::ans_stream, more)),
                  GSZ_STATUS_CORRUPT)
            << "a word added";

        // Sections missing or mixed with Huffman's.
        const auto parsed = gsz::format::archive_parse(archive);
        const auto huffman_bytes = pipeline == GSZ_PIPELINE_INTERP ? interp_archive() : small_archive();
        const auto huffman = gsz::format::archive_parse(huffman_bytes);  // views into huffman_bytes
        for (const SectionKind drop : {SectionKind::ans_tables, SectionKind::ans_lanes, SectionKind::ans_stream}) {
            std::vector<gsz::format::SectionData> kept;
            for (const auto& s : parsed.sections)
                if (s.kind != drop) kept.push_back({s.kind, s.bytes});
            EXPECT_EQ(try_decompress(gsz::format::archive_write(parsed.header, kept)), GSZ_STATUS_CORRUPT)
                << gsz::format::section_kind_name(drop) << " dropped";
        }
        std::vector<gsz::format::SectionData> mixed;
        for (const auto& s : parsed.sections) mixed.push_back({s.kind, s.bytes});
        mixed.push_back({SectionKind::huffman_codebook, huffman.section(SectionKind::huffman_codebook)});
        EXPECT_EQ(try_decompress(gsz::format::archive_write(parsed.header, mixed)), GSZ_STATUS_CORRUPT)
            << "ans and Huffman sections together";
    }
}

// Column strips (format version 12): their sections changed at random (checksums recomputed, so the
// decoder meets them): a clean error or some values, never a crash (ASan runs this too); lanes of a
// length the strips' groups cannot take are corrupt.
TEST(Hostile, LyingStripSectionsNeverCrash) {
    using gsz::format::SectionKind;
    const auto all = read_raw<float>(repo_dir() / "data" / "sperr_wmag_91x91x91.f32");
    std::vector<float> v;
    for (size_t z = 0; z < 4; ++z)
        for (size_t y = 0; y < 24; ++y)
            for (size_t x = 0; x < 64; ++x) v.push_back(all[x + 91 * (y + 91 * z)]);
    v[9] = std::numeric_limits<float>::quiet_NaN();
    auto p = make_params(GSZ_DTYPE_F32, {64, 24, 4}, GSZ_ERROR_REL, 1e-3);
    p.pipeline = GSZ_PIPELINE_INTERP;
    p.lossless = GSZ_LOSSLESS_ANS;
    p.ans_strips = GSZ_ANS_STRIPS_ON;
    gsz::Context ctx;
    const auto archive = ctx.compress(p, v.data());
    ASSERT_EQ(ctx.inspect(archive.data(), archive.size()).ans_strip_width, 64u);
    std::vector<float> out(v.size());
    const auto decode = [&](const std::vector<uint8_t>& a) {
        return gsz_decompress(ctx.get(), a.data(), a.size(), out.data(), out.size() * sizeof(float), GSZ_DEVICE_CPU, 2);
    };
    ASSERT_EQ(decode(archive), GSZ_STATUS_OK);
    std::mt19937 rng(47);
    int rejected = 0;
    for (const SectionKind kind : {SectionKind::ans_tables, SectionKind::ans_lanes, SectionKind::ans_stream})
        for (int trial = 0; trial < 150; ++trial) {
            auto sec = section_of(archive, kind);
            const int flips = 1 + static_cast<int>(rng() % 4);
            for (int f = 0; f < flips; ++f) sec[rng() % sec.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
            rejected += decode(with_section(archive, kind, sec)) != GSZ_STATUS_OK;
        }
    EXPECT_GT(rejected, 300);
    auto tables = section_of(archive, SectionKind::ans_tables);
    uint32_t lane = 0;
    std::memcpy(&lane, tables.data(), 4);
    ASSERT_EQ(lane % 8, 0u);
    const uint32_t odd = lane + 4;  // not whole groups of eight
    std::memcpy(tables.data(), &odd, 4);
    EXPECT_EQ(decode(with_section(archive, SectionKind::ans_tables, tables)), GSZ_STATUS_CORRUPT);
    EXPECT_NE(std::string(gsz_ctx_last_error(ctx.get())).find("strips"), std::string::npos)
        << gsz_ctx_last_error(ctx.get());
}

TEST(Hostile, HugeDimsNeverAllocate) {
    // Claims of 2^40 elements with a valid checksum: refused before any
    // allocation (memory limit or stream-length checks), not by running out.
    const auto archive = small_archive();
    auto parsed = gsz::format::archive_parse(archive);
    auto header = parsed.header;
    header.dims[0] = uint64_t{1} << 20;
    header.dims[1] = uint64_t{1} << 20;
    header.dims[2] = 1;
    header.rank = 2;
    std::vector<gsz::format::SectionData> sections;
    for (const auto& s : parsed.sections) sections.push_back({s.kind, s.bytes});
    const auto bad = gsz::format::archive_write(header, sections);
    gsz::Context ctx;
    std::vector<float> out(16);
    EXPECT_NE(gsz_decompress(ctx.get(), bad.data(), bad.size(), out.data(), out.size() * 4, GSZ_DEVICE_CPU, 0),
              GSZ_STATUS_OK);
    gsz_archive_info info;
    EXPECT_EQ(gsz_archive_inspect(ctx.get(), bad.data(), bad.size(), &info), GSZ_STATUS_OK);
    EXPECT_EQ(info.num_elements, uint64_t{1} << 40);
    // With room for the output, the stream-length check still refuses it
    // before the 2 TB code buffer would be allocated.
    gsz_ctx_set_memory_limit(ctx.get(), 0);
    EXPECT_EQ(gsz_decompress(ctx.get(), bad.data(), bad.size(), out.data(), SIZE_MAX, GSZ_DEVICE_CPU, 0),
              GSZ_STATUS_CORRUPT);
}

TEST(Hostile, GarbageIsNotAnArchive) {
    gsz::Context ctx;
    gsz_archive_info info;
    const std::vector<uint8_t> junk(1000, 0x41);
    EXPECT_EQ(gsz_archive_inspect(ctx.get(), junk.data(), junk.size(), &info), GSZ_STATUS_CORRUPT);
    EXPECT_NE(std::string(gsz_ctx_last_error(ctx.get())).find("not a gsz archive"), std::string::npos);
    EXPECT_EQ(gsz_archive_inspect(ctx.get(), junk.data(), 0, &info), GSZ_STATUS_CORRUPT);
}

}  // namespace
