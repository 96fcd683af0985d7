// Golden archives: small archives committed under tests/golden/v<version>.
// Compressing their source again must give the archives of the current
// version byte for byte (so a format change is a deliberate act: bump the
// version, keep the old directory, regenerate with GSZ_UPDATE_GOLDEN=1), and
// the archives of every version this gsz reads must keep decoding to the same
// bits (hash of the output) within their bound.
#include "test_util.hpp"

#include <fstream>
#include <set>
#include <span>
#include <utility>

#include "format/archive.hpp"

#include <xxhash.h>

#include <algorithm>

using namespace gsz::test;

namespace {

struct Golden {
    const char* file;
    gsz_dtype dtype;
    std::vector<uint64_t> dims;   // a sub-box of the bundled sample, fastest first
    gsz_error_mode mode;
    double eb;
    gsz_pipeline pipeline = GSZ_PIPELINE_LORENZO;
    uint32_t block = 128;
    uint32_t radius = 0;   // 0: gsz_params_init's
    gsz_lossless lossless = GSZ_LOSSLESS_AUTO;
    gsz_interp_anchors anchors = GSZ_INTERP_ANCHORS_AUTO;
    bool fill = false;   // a quarter of each plane holds a fill value (golden_input)
    bool near_jump = false;   // odd x a step of about the jump threshold above even x (golden_input)
    bool components = false;  // dims {3, N}: three far-apart stretches of the sample as components (golden_input)
    uint32_t stride = 0;      // interp, 1-D: the anchor stride (0 = auto)
    gsz_interp_tiles tiles = GSZ_INTERP_TILES_SPLINE;   // interp: Lorenzo tiles (format version 10)
    gsz_ans_strips strips = GSZ_ANS_STRIPS_AUTO;         // interp, ans: column strips (format version 12)
    double alpha = 0;                                    // interp: the level factor (0 = auto)
};

const Golden kGoldens[] = {
    {"wmag_40x24x10_f32_rel1e-3.gsz", GSZ_DTYPE_F32, {40, 24, 10}, GSZ_ERROR_REL, 1e-3},
    {"wmag_40x24x10_f64_abs1e-2.gsz", GSZ_DTYPE_F64, {40, 24, 10}, GSZ_ERROR_ABS, 1e-2},
    {"wmag_91x37_f32_rel1e-2.gsz", GSZ_DTYPE_F32, {91, 37}, GSZ_ERROR_REL, 1e-2},
    {"wmag_3000_f32_abs1e-1.gsz", GSZ_DTYPE_F32, {3000}, GSZ_ERROR_ABS, 1e-1},
    {"fast_wmag_40x24x10_f32_rel1e-3.gsz", GSZ_DTYPE_F32, {40, 24, 10}, GSZ_ERROR_REL, 1e-3, GSZ_PIPELINE_FAST},
    {"fast_wmag_40x24x10_f64_abs1e-2_b64.gsz", GSZ_DTYPE_F64, {40, 24, 10}, GSZ_ERROR_ABS, 1e-2, GSZ_PIPELINE_FAST,
     64},
    {"interp_wmag_40x24x10_f32_rel1e-3_r32768.gsz", GSZ_DTYPE_F32, {40, 24, 10}, GSZ_ERROR_REL, 1e-3,
     GSZ_PIPELINE_INTERP, 128, 32768},
    {"interp_wmag_91x37_f64_abs1e-2_r512.gsz", GSZ_DTYPE_F64, {91, 37}, GSZ_ERROR_ABS, 1e-2, GSZ_PIPELINE_INTERP, 128,
     512},
    // lossless stage "runs" (section run_tokens)
    {"runs_wmag_91x37_f32_rel1e-2.gsz", GSZ_DTYPE_F32, {91, 37}, GSZ_ERROR_REL, 1e-2, GSZ_PIPELINE_LORENZO, 128, 0,
     GSZ_LOSSLESS_RUNS},
    {"runs_interp_wmag_40x24x10_f64_rel1e-2.gsz", GSZ_DTYPE_F64, {40, 24, 10}, GSZ_ERROR_REL, 1e-2,
     GSZ_PIPELINE_INTERP, 128, 0, GSZ_LOSSLESS_RUNS},
    // version 2: interp anchors coded (the default above) or raw; radius 512 lists some coded anchors
    {"interp_raw_wmag_91x37_f32_rel1e-3.gsz", GSZ_DTYPE_F32, {91, 37}, GSZ_ERROR_REL, 1e-3, GSZ_PIPELINE_INTERP, 128,
     0, GSZ_LOSSLESS_AUTO, GSZ_INTERP_ANCHORS_RAW},
    {"interp_coded_wmag_40x24x10_f32_abs1e-2_r512.gsz", GSZ_DTYPE_F32, {40, 24, 10}, GSZ_ERROR_ABS, 1e-2,
     GSZ_PIPELINE_INTERP, 128, 512, GSZ_LOSSLESS_AUTO, GSZ_INTERP_ANCHORS_CODED},
    // version 3: lossless stage "ans" (sections ans_tables, ans_lanes, ans_stream), and plain Huffman pinned
    {"ans_wmag_91x37_f32_rel1e-3.gsz", GSZ_DTYPE_F32, {91, 37}, GSZ_ERROR_REL, 1e-3, GSZ_PIPELINE_LORENZO, 128, 0,
     GSZ_LOSSLESS_ANS},
    {"ans_interp_wmag_40x24x10_f64_rel1e-4.gsz", GSZ_DTYPE_F64, {40, 24, 10}, GSZ_ERROR_REL, 1e-4,
     GSZ_PIPELINE_INTERP, 128, 0, GSZ_LOSSLESS_ANS},
    {"ans_interp_wmag_3000_f32_abs1e-1.gsz", GSZ_DTYPE_F32, {3000}, GSZ_ERROR_ABS, 1e-1, GSZ_PIPELINE_INTERP, 128, 0,
     GSZ_LOSSLESS_ANS},
    {"none_wmag_40x24x10_f32_rel1e-3.gsz", GSZ_DTYPE_F32, {40, 24, 10}, GSZ_ERROR_REL, 1e-3, GSZ_PIPELINE_LORENZO,
     128, 0, GSZ_LOSSLESS_NONE},
    // version 4: 16-bit chunk bit counts in huffman_chunks (every golden above with Huffman sections pins it)
    // version 5: interp's jump guard (every interp golden above has it on; this one has jumps to guard)
    {"interp_fill_wmag_40x24x10_f32_rel1e-3.gsz", GSZ_DTYPE_F32, {40, 24, 10}, GSZ_ERROR_REL, 1e-3,
     GSZ_PIPELINE_INTERP, 128, 0, GSZ_LOSSLESS_AUTO, GSZ_INTERP_ANCHORS_AUTO, true},
    // (written by cf87006's encoder, before the CPU walk skipped the guard's tests in stages whose values
    // cannot reach the threshold: the skipping must not change a byte)
    {"interp_nearjump_wmag_40x24x10_f32_rel1e-3.gsz", GSZ_DTYPE_F32, {40, 24, 10}, GSZ_ERROR_REL, 1e-3,
     GSZ_PIPELINE_INTERP, 128, 0, GSZ_LOSSLESS_AUTO, GSZ_INTERP_ANCHORS_AUTO, false, true},
    // version 6: component dims (header flag 0x1), every lossy pipeline
    {"components_wmag_3x1500_f32_rel1e-3.gsz", GSZ_DTYPE_F32, {3, 1500}, GSZ_ERROR_REL, 1e-3, GSZ_PIPELINE_LORENZO,
     128, 0, GSZ_LOSSLESS_AUTO, GSZ_INTERP_ANCHORS_AUTO, false, false, true},
    {"components_interp_wmag_3x1500_f64_abs1e-2.gsz", GSZ_DTYPE_F64, {3, 1500}, GSZ_ERROR_ABS, 1e-2,
     GSZ_PIPELINE_INTERP, 128, 0, GSZ_LOSSLESS_AUTO, GSZ_INTERP_ANCHORS_AUTO, false, false, true},
    {"components_fast_wmag_3x1500_f32_rel1e-3.gsz", GSZ_DTYPE_F32, {3, 1500}, GSZ_ERROR_REL, 1e-3, GSZ_PIPELINE_FAST,
     128, 0, GSZ_LOSSLESS_AUTO, GSZ_INTERP_ANCHORS_AUTO, false, false, true},
    // version 7: ans_lanes bit-packed (the ans goldens above pin it)
    // version 8: the compact container (every golden above pins it)
    // version 9: a 1-D array's own anchor stride (2 .. 512); the 1-D interp goldens above take auto's
    {"interp_stride4_wmag_3000_f32_rel1e-3.gsz", GSZ_DTYPE_F32, {3000}, GSZ_ERROR_REL, 1e-3, GSZ_PIPELINE_INTERP,
     128, 0, GSZ_LOSSLESS_AUTO, GSZ_INTERP_ANCHORS_AUTO, false, false, false, 4},
    {"interp_stride2_wmag_3000_f64_abs1e-2.gsz", GSZ_DTYPE_F64, {3000}, GSZ_ERROR_ABS, 1e-2, GSZ_PIPELINE_INTERP,
     128, 0, GSZ_LOSSLESS_AUTO, GSZ_INTERP_ANCHORS_AUTO, false, false, false, 2},
    // version 10: Lorenzo tiles (flag 0x2 in pipeline_params, section interp_tiles): every tile, and the choice
    {"interp_lorenzo_tiles_wmag_40x24x10_f32_rel1e-4.gsz", GSZ_DTYPE_F32, {40, 24, 10}, GSZ_ERROR_REL, 1e-4,
     GSZ_PIPELINE_INTERP, 128, 0, GSZ_LOSSLESS_AUTO, GSZ_INTERP_ANCHORS_AUTO, false, false, false, 0,
     GSZ_INTERP_TILES_LORENZO},
    {"interp_lorenzo_tiles_wmag_91x37_f64_abs1e-2.gsz", GSZ_DTYPE_F64, {91, 37}, GSZ_ERROR_ABS, 1e-2,
     GSZ_PIPELINE_INTERP, 128, 0, GSZ_LOSSLESS_NONE, GSZ_INTERP_ANCHORS_AUTO, false, false, false, 0,
     GSZ_INTERP_TILES_LORENZO},
    {"interp_tiles_each_wmag_91x91x40_f32_rel1e-4.gsz", GSZ_DTYPE_F32, {91, 91, 40}, GSZ_ERROR_REL, 1e-4,
     GSZ_PIPELINE_INTERP, 128, 0, GSZ_LOSSLESS_AUTO, GSZ_INTERP_ANCHORS_AUTO, false, false, false, 0,
     GSZ_INTERP_TILES_EACH},
    // version 11: rANS lanes started at state 1 (every ans golden above pins it)
    // version 12: rANS in column strips with the row above as context (on: auto keeps raster order here)
    {"interp_strips_wmag_64x91x8_f32_rel1e-2.gsz", GSZ_DTYPE_F32, {64, 91, 8}, GSZ_ERROR_REL, 1e-2,
     GSZ_PIPELINE_INTERP, 128, 0, GSZ_LOSSLESS_AUTO, GSZ_INTERP_ANCHORS_AUTO, false, false, false, 0,
     GSZ_INTERP_TILES_AUTO, GSZ_ANS_STRIPS_ON},
    {"interp_strips_wmag_32x91x4_f64_abs1e-1.gsz", GSZ_DTYPE_F64, {32, 91, 4}, GSZ_ERROR_ABS, 1e-1,
     GSZ_PIPELINE_INTERP, 128, 0, GSZ_LOSSLESS_ANS, GSZ_INTERP_ANCHORS_AUTO, false, false, false, 0,
     GSZ_INTERP_TILES_AUTO, GSZ_ANS_STRIPS_ON},
    // Format version 14: every tile Lorenzo-coded (pipeline_params flag 0x8,
    // one level of rANS contexts), and alpha, beta and the level bounds
    // written because they are not the defaults (flag 0x10).
    {"interp_all_lorenzo_wmag_3000_f32_rel1e-3.gsz", GSZ_DTYPE_F32, {3000}, GSZ_ERROR_REL, 1e-3, GSZ_PIPELINE_INTERP,
     128, 0, GSZ_LOSSLESS_ANS, GSZ_INTERP_ANCHORS_AUTO, false, false, false, 0, GSZ_INTERP_TILES_LORENZO},
    {"interp_alpha2_wmag_40x24x10_f64_rel1e-3.gsz", GSZ_DTYPE_F64, {40, 24, 10}, GSZ_ERROR_REL, 1e-3,
     GSZ_PIPELINE_INTERP, 128, 0, GSZ_LOSSLESS_AUTO, GSZ_INTERP_ANCHORS_AUTO, false, false, false, 0,
     GSZ_INTERP_TILES_EACH, GSZ_ANS_STRIPS_AUTO, 2.0},
    // Format version 15: lorenzo's fill value (pipeline_params flags, section fill_mask), the relative
    // bound of the values other than the fill value, and ans_tables' runs of empty contexts (every ans
    // golden above pins them).
    {"lorenzo_fill_wmag_40x24x10_f32_abs1e-2.gsz", GSZ_DTYPE_F32, {40, 24, 10}, GSZ_ERROR_ABS, 1e-2,
     GSZ_PIPELINE_LORENZO, 128, 0, GSZ_LOSSLESS_AUTO, GSZ_INTERP_ANCHORS_AUTO, true},
    {"lorenzo_fill_wmag_91x37_f64_rel1e-3.gsz", GSZ_DTYPE_F64, {91, 37}, GSZ_ERROR_REL, 1e-3, GSZ_PIPELINE_LORENZO,
     128, 0, GSZ_LOSSLESS_AUTO, GSZ_INTERP_ANCHORS_AUTO, true},
};

// Archives of older versions: decode only, to the output whose XXH64 is pinned.
struct OldGolden {
    Golden source;
    uint64_t output_hash;
};

const OldGolden kVersion1[] = {
    {kGoldens[0], 0xc475dca136af3563},
    {kGoldens[1], 0xd5cb5be74805d65b},
    {kGoldens[2], 0x33e2c0ba7355faa3},
    {kGoldens[3], 0x85b61ac350352257},
    {kGoldens[4], 0x4df1c2427c3738d8},
    {kGoldens[5], 0xb4186b21cdd2f3f0},
    {kGoldens[6], 0x650aad6bec58916e},
    {kGoldens[7], 0x03998a19b5e86a01},
    {kGoldens[8], 0x33e2c0ba7355faa3},
    {kGoldens[9], 0xa0abd5f337f7b7d3},
};

const OldGolden kVersion2[] = {
    {kGoldens[0], 0xc475dca136af3563},
    {kGoldens[1], 0xd5cb5be74805d65b},
    {kGoldens[2], 0x33e2c0ba7355faa3},
    {kGoldens[3], 0x85b61ac350352257},
    {kGoldens[4], 0x4df1c2427c3738d8},
    {kGoldens[5], 0xb4186b21cdd2f3f0},
    {kGoldens[6], 0xfe7b2b0ed5f45334},
    {kGoldens[7], 0x03998a19b5e86a01},
    {kGoldens[8], 0x33e2c0ba7355faa3},
    {kGoldens[9], 0x7873d58bec4ebde2},
    {kGoldens[10], 0xabddb3f838f8d463},
    {kGoldens[11], 0x1c8c8498aad76257},
};

// Version 3's archives decode to version 2's outputs (same sources), and it added goldens 12-15.
const std::vector<OldGolden> kVersion3 = [] {
    std::vector<OldGolden> v(std::begin(kVersion2), std::end(kVersion2));
    v.push_back({kGoldens[12], 0x9d55517fd7ae2bc7});
    v.push_back({kGoldens[13], 0xbde0e6c5ced3c8ce});
    v.push_back({kGoldens[14], 0x411058a30ef32f2f});
    v.push_back({kGoldens[15], 0xc475dca136af3563});
    return v;
}();

// Version 4's archives decode to version 3's outputs (version 5 changed interp's predictions).
const std::vector<OldGolden>& kVersion4 = kVersion3;

// Version 5 (before component dims): goldens 0-17 (their version 6 archives decode to the same bits).
const std::vector<OldGolden> kVersion5 = {
    {kGoldens[0], 0xc475dca136af3563},
    {kGoldens[1], 0xd5cb5be74805d65b},
    {kGoldens[2], 0x33e2c0ba7355faa3},
    {kGoldens[3], 0x85b61ac350352257},
    {kGoldens[4], 0x4df1c2427c3738d8},
    {kGoldens[5], 0xb4186b21cdd2f3f0},
    {kGoldens[6], 0xe437ede65804d6d0},
    {kGoldens[7], 0x03998a19b5e86a01},
    {kGoldens[8], 0x33e2c0ba7355faa3},
    {kGoldens[9], 0xa45c4cfd18faa1f0},
    {kGoldens[10], 0xabddb3f838f8d463},
    {kGoldens[11], 0x96d32f871e8a0059},
    {kGoldens[12], 0x9d55517fd7ae2bc7},
    {kGoldens[13], 0x63ab618908655ef5},
    {kGoldens[14], 0x411058a30ef32f2f},
    {kGoldens[15], 0xc475dca136af3563},
    {kGoldens[16], 0xb41c51b981c57007},
    {kGoldens[17], 0x39a7c707541ee185},
};

// Version 6 (fixed 8-byte ans lanes): every golden above (its version 7 archive decodes to the same bits).
const std::vector<OldGolden> kVersion6 = [] {
    std::vector<OldGolden> v = kVersion5;
    v.push_back({kGoldens[18], 0x936d375720e4f8bb});
    v.push_back({kGoldens[19], 0xdf306f3ef9c48a86});
    v.push_back({kGoldens[20], 0x2174ef05daec6383});
    return v;
}();

// Version 7 (the fixed container): every golden above (its version 8 archive decodes to the same bits).
const std::vector<OldGolden>& kVersion7 = kVersion6;

// Version 8 (every 1-D array's anchors every 512 points): the same goldens
// (its version 9 archives of the 1-D interp goldens may take another stride).
const std::vector<OldGolden>& kVersion8 = kVersion7;

// Version 9 (no Lorenzo tiles): every golden up to the 1-D strides (its version 10 archive decodes to the same bits).
const std::vector<OldGolden> kVersion9 = [] {
    std::vector<OldGolden> v = kVersion8;
    v.push_back({kGoldens[21], 0xd4ba21aebee725d0});
    v.push_back({kGoldens[22], 0xd79d22728981e7ea});
    return v;
}();

// Versions 10 and 11 (rANS lanes from 2^16, then from 1; no strips): every
// golden up to the Lorenzo tiles (their version 12 archives decode to the same bits).
const std::vector<OldGolden> kVersion10 = [] {
    std::vector<OldGolden> v = kVersion9;
    v.push_back({kGoldens[23], 0x1516ed3624b7be97});
    v.push_back({kGoldens[24], 0xdfb5bfb8a7a5590e});
    v.push_back({kGoldens[25], 0x3a902778a9221c1f});
    return v;
}();
const std::vector<OldGolden>& kVersion11 = kVersion10;

// Versions 12 and 13 (interp's pipeline_params before the compact layout):
// every golden up to the strips (their version 14 archives decode to the same
// bits, bar the fill golden's and the 1-D ones').
const std::vector<OldGolden> kVersion12 = [] {
    std::vector<OldGolden> v = kVersion11;
    v.push_back({kGoldens[26], 0xf48449551467a19c});
    v.push_back({kGoldens[27], 0x18efae687b6304d1});
    return v;
}();
const std::vector<OldGolden>& kVersion13 = kVersion12;

// Version 14 (lorenzo without a fill value, a relative bound of the whole
// range, ans_tables with a byte per empty context): every golden up to the
// compact interp params, decoded from its own archive.
const std::vector<OldGolden> kVersion14 = [] {
    std::vector<OldGolden> v;
    const uint64_t hashes[30] = {
        0xc475dca136af3563, 0xd5cb5be74805d65b, 0x33e2c0ba7355faa3,
        0x85b61ac350352257, 0x4df1c2427c3738d8, 0xb4186b21cdd2f3f0,
        0xe437ede65804d6d0, 0x03998a19b5e86a01, 0x33e2c0ba7355faa3,
        0xa45c4cfd18faa1f0, 0xabddb3f838f8d463, 0x96d32f871e8a0059,
        0x9d55517fd7ae2bc7, 0x63ab618908655ef5, 0x411058a30ef32f2f,
        0xc475dca136af3563, 0xb41c51b981c57007, 0x39a7c707541ee185,
        0x936d375720e4f8bb, 0xdf306f3ef9c48a86, 0x2174ef05daec6383,
        0xd4ba21aebee725d0, 0xd79d22728981e7ea, 0x7ac9d2374bc7ffcc,
        0xbba9afa629546726, 0x3a902778a9221c1f, 0xf48449551467a19c,
        0x18efae687b6304d1, 0x1b769b5fd2482fee, 0x91ad4f140fb79175};
    for (size_t i = 0; i < 30; ++i) v.push_back({kGoldens[i], hashes[i]});
    return v;
}();

// The golden's input: the leading box of the bundled 91^3 sample, with one
// NaN and one Inf so the outlier path is pinned too.
template <class T>
std::vector<T> golden_input(const std::vector<uint64_t>& dims, bool fill = false, bool near_jump = false,
                            bool components = false) {
    const auto all = read_raw<float>(repo_dir() / "data" / "sperr_wmag_91x91x91.f32");
    std::vector<T> v;
    if (components) {   // dims {C, N}: component c is the stretch of the sample that starts at c * 200000
        for (uint64_t i = 0; i < dims[1]; ++i)
            for (uint64_t c = 0; c < dims[0]; ++c) v.push_back(static_cast<T>(all[c * 200000 + i]));
    } else if (dims.size() == 1) {
        v.assign(all.begin(), all.begin() + static_cast<ptrdiff_t>(dims[0]));
    } else {
        const uint64_t nz = dims.size() > 2 ? dims[2] : 1;
        for (uint64_t z = 0; z < nz; ++z)
            for (uint64_t y = 0; y < dims[1]; ++y)
                for (uint64_t x = 0; x < dims[0]; ++x) v.push_back(static_cast<T>(all[x + 91 * (y + 91 * z)]));
    }
    if (fill && dims.size() > 1)   // land cells of an ocean field: x and y below half the extents
        for (size_t i = 0; i < v.size(); ++i)
            if (i % dims[0] < dims[0] / 2 && i / dims[0] % dims[1] < dims[1] / 2) v[i] = static_cast<T>(-1e34);
    if (near_jump) {   // steps of 0.95 +- 0.04 between neighbours along x, the range about 1: the jump guard's
                       // threshold (95% of the range) among the finest level's differences, not the coarser ones'
        double top = 0;
        for (const T x : v) top = std::max(top, static_cast<double>(x));
        for (size_t i = 0; i < v.size(); ++i)
            v[i] = static_cast<T>(0.95 * static_cast<double>(i % dims[0] % 2) + 0.04 * (static_cast<double>(v[i]) / top));
    }
    v[5] = std::numeric_limits<T>::quiet_NaN();
    v[v.size() / 2] = -std::numeric_limits<T>::infinity();
    return v;
}

// "v<version>", the folder of a format version's golden archives (appended
// rather than "v" + std::to_string(...), which GCC 12 flags with a false
// -Wrestrict).
std::string version_dir(uint32_t version) {
    std::string dir = "v";
    dir += std::to_string(version);
    return dir;
}

// Where a golden's bytes go (gsz_archive_sections): every section named, the
// stage's payload among them, header and sections adding up to the archive.
void check_sections(const gsz::Context& ctx, const std::vector<uint8_t>& archive, const gsz_archive_info& info) {
    const auto sections = ctx.sections(archive.data(), archive.size());
    uint32_t count = 0;
    uint64_t header = 0;
    ASSERT_EQ(gsz_archive_sections(ctx.get(), archive.data(), archive.size(), nullptr, 0, &count, &header),
              GSZ_STATUS_OK);
    ASSERT_EQ(count, sections.size());
    uint64_t total = header;
    std::set<std::string> names;
    for (const gsz_section_info& sec : sections) {
        EXPECT_STRNE(sec.name, "unknown");
        names.insert(sec.name);
        total += sec.bytes;
    }
    EXPECT_EQ(total, archive.size());
    EXPECT_TRUE(names.count("pipeline_params"));
    // The stage's payload: fast's block codes, rANS's stream and lanes, else Huffman's bitstream.
    const char* payload = info.pipeline == GSZ_PIPELINE_FAST     ? "fast_block_codes"
                          : info.lossless == GSZ_LOSSLESS_ANS ? "ans_stream"
                                                              : "huffman_bitstream";
    EXPECT_TRUE(names.count(payload)) << payload;
    EXPECT_EQ(names.count("ans_lanes"), info.lossless == GSZ_LOSSLESS_ANS ? 1u : 0u);
}

template <class T>
void check_golden(const Golden& g) {
    const auto input = golden_input<T>(g.dims, g.fill, g.near_jump, g.components);
    const auto path = repo_dir() / "tests" / "golden" / version_dir(gsz::format::kFormatVersion) / g.file;
    gsz::Context ctx;
    auto params = make_params(g.dtype, g.dims, g.mode, g.eb);
    params.pipeline = g.pipeline;
    params.block_size = g.block;
    if (g.radius) params.radius = g.radius;
    params.lossless = g.lossless;
    params.interp_anchors = g.anchors;
    params.interp_anchor_stride = g.stride;
    params.interp_tiles = g.tiles;
    params.ans_strips = g.strips;
    params.interp_alpha = g.alpha;
    const auto fresh = ctx.compress(params, input.data());
    if (std::getenv("GSZ_UPDATE_GOLDEN")) {
        std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(fresh.data()),
                                                    static_cast<std::streamsize>(fresh.size()));
    }
    ASSERT_TRUE(std::filesystem::exists(path)) << path;
    const auto golden = read_bytes(path);
    EXPECT_EQ(fresh, golden) << g.file << ": the archive bytes changed; if the format change is deliberate, bump "
                                          "the format version and regenerate with GSZ_UPDATE_GOLDEN=1";
    const auto info = ctx.inspect(golden.data(), golden.size());
    check_sections(ctx, golden, info);
    EXPECT_EQ(info.pipeline, g.pipeline) << "the golden must pin the pipeline's own format, not the store fallback";
    EXPECT_EQ(info.component_dim, g.components ? 0 : -1);
    EXPECT_EQ(info.has_fill, g.fill ? 1u : 0u);
    if (g.stride) {
        EXPECT_EQ(info.interp_anchor_stride, g.stride);
    }
    if (g.lossless != GSZ_LOSSLESS_AUTO) {
        EXPECT_EQ(info.lossless, g.lossless);
    }
    if (g.tiles == GSZ_INTERP_TILES_LORENZO) {
        EXPECT_EQ(info.interp_lorenzo_tiles, info.interp_tiles);
    }
    if (g.alpha > 0) {
        EXPECT_EQ(info.interp_alpha, g.alpha);
    }
    if (g.strips == GSZ_ANS_STRIPS_ON) {
        EXPECT_EQ(info.lossless, GSZ_LOSSLESS_ANS);
        EXPECT_EQ(info.ans_strip_width, g.dims[0]) << "the golden must pin the strips";
    }
    const auto dec = ctx.decompress<T>(golden, GSZ_DEVICE_CPU);
    const auto r = check_bound(input, dec, info.error_bound_abs);
    EXPECT_EQ(r.violations, 0u);
    EXPECT_EQ(r.nonfinite_changed, 0u);
}

template <class T>
void check_old_golden(const OldGolden& old, uint32_t version) {
    const Golden& g = old.source;
    const auto input = golden_input<T>(g.dims, g.fill, g.near_jump, g.components);
    const auto path = repo_dir() / "tests" / "golden" / version_dir(version) / g.file;
    ASSERT_TRUE(std::filesystem::exists(path)) << path;
    const auto golden = read_bytes(path);
    gsz::Context ctx;
    const auto info = ctx.inspect(golden.data(), golden.size());
    check_sections(ctx, golden, info);
    EXPECT_EQ(info.format_version, version);
    const auto dec = ctx.decompress<T>(golden, GSZ_DEVICE_CPU);
    EXPECT_EQ(XXH64(dec.data(), dec.size() * sizeof(T), 0), old.output_hash)
        << std::hex << "0x" << XXH64(dec.data(), dec.size() * sizeof(T), 0)
        << std::dec << ": a version " << version << " archive no longer decodes to the same bits";
    const auto r = check_bound(input, dec, info.error_bound_abs);
    EXPECT_EQ(r.violations, 0u);
    EXPECT_EQ(r.nonfinite_changed, 0u);
}

TEST(Golden, OlderVersionsStillDecodeToTheSameBits) {
    const std::pair<uint32_t, std::span<const OldGolden>> versions[] = {
        {1, kVersion1}, {2, kVersion2}, {3, kVersion3}, {4, kVersion4}, {5, kVersion5}, {6, kVersion6}, {7, kVersion7},
        {8, kVersion8}, {9, kVersion9}, {10, kVersion10}, {11, kVersion11}, {12, kVersion12}, {13, kVersion13},
        {14, kVersion14}};
    for (const auto& [version, goldens] : versions) {
        for (const OldGolden& g : goldens) {
            SCOPED_TRACE(version_dir(version) + "/" + g.source.file);
            if (g.source.dtype == GSZ_DTYPE_F32)
                check_old_golden<float>(g, version);
            else
                check_old_golden<double>(g, version);
        }
    }
}

TEST(Golden, ArchivesAreStable) {
    for (const Golden& g : kGoldens) {
        SCOPED_TRACE(g.file);
        if (g.dtype == GSZ_DTYPE_F32)
            check_golden<float>(g);
        else
            check_golden<double>(g);
    }
}

}  // namespace
