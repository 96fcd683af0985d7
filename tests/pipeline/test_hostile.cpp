// Hostile archives through the public API: truncations, byte flips, and
// well-checksummed archives whose contents lie.  Every one must give a clear
// non-OK status, never a crash, hang or huge allocation (CI also runs this
// under AddressSanitizer and UBSan).
#include "test_util.hpp"

#include "format/archive.hpp"
#include "runtime/byte_io.hpp"

#include <random>

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

std::vector<uint8_t> small_archive(gsz_pipeline pipeline = GSZ_PIPELINE_LORENZO) {
    const auto v = small_field();
    gsz::Context ctx;
    auto p = make_params(GSZ_DTYPE_F32, {20, 20, 5}, GSZ_ERROR_REL, 1e-3);
    p.pipeline = pipeline;
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
INSTANTIATE_TEST_SUITE_P(Pipelines, HostileBoth, testing::Values(GSZ_PIPELINE_LORENZO, GSZ_PIPELINE_FAST),
                         [](const auto& info) { return info.param == GSZ_PIPELINE_FAST ? "fast" : "lorenzo"; });

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

TEST(Hostile, LyingParamsAreRejected) {
    using gsz::format::SectionKind;
    const auto archive = small_archive();
    const auto params = section_of(archive, SectionKind::pipeline_params);
    ASSERT_EQ(params.size(), 32u);
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
