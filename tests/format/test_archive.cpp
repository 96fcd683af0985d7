// Archive container: round trip, byte layout, and rejection of every
// truncation, every single-byte flip and each semantic violation, for the
// fixed container of versions 1..7 (the "Archive" tests) and the compact one
// of version 8 on (the "CompactArchive" tests).
#include "format/archive.hpp"
#include "runtime/status.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace {

using namespace gsz::format;

template <class T>
void poke(std::vector<uint8_t>& a, size_t offset, T value) {
    std::memcpy(a.data() + offset, &value, sizeof(T));
}

template <class T>
T peek(const std::vector<uint8_t>& a, size_t offset) {
    T value;
    std::memcpy(&value, a.data() + offset, sizeof(T));
    return value;
}

// Recomputes the header checksum after a test patched the header or table,
// so that parsing reaches the semantic check under test.
void fix_header_checksum(std::vector<uint8_t>& a) {
    const uint32_t n = peek<uint32_t>(a, 72);
    std::vector<uint8_t> covered(a.begin(), a.begin() + 120);
    covered.insert(covered.end(), a.begin() + kHeaderBytes, a.begin() + kHeaderBytes + n * kSectionEntryBytes);
    poke<uint64_t>(a, 120, checksum64(covered));
}

// The last version of the fixed container: the "Archive" tests below write it.
constexpr uint8_t kLastFixedVersion = kFirstCompactVersion - 1;

Header sample_header(uint8_t version = kLastFixedVersion) {
    Header h;
    h.format_version = version;
    h.dtype = GSZ_DTYPE_F32;
    h.rank = 3;
    h.dims[0] = 7;
    h.dims[1] = 5;
    h.dims[2] = 3;
    h.error_mode = GSZ_ERROR_REL;
    h.pipeline = GSZ_PIPELINE_LORENZO;
    h.error_bound = 1e-3;
    h.error_bound_abs = 2.5e-3;
    h.value_min = -1.25;
    h.value_max = 1.25;
    return h;
}

const std::vector<uint8_t> kParams = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
const std::vector<uint8_t> kBitstream = {0xde, 0xad, 0xbe, 0xef, 0x00, 0x01, 0x02};
const std::vector<uint8_t> kOutliers = {0x40, 0x49, 0x0f, 0xdb};

std::vector<uint8_t> sample_archive(uint8_t version = kLastFixedVersion) {
    const SectionData sections[] = {
        {SectionKind::pipeline_params, kParams},
        {SectionKind::huffman_bitstream, kBitstream},
        {SectionKind::outlier_values, kOutliers},
    };
    return archive_write(sample_header(version), sections);
}

void expect_same_header(const Header& got, const Header& want) {
    EXPECT_EQ(got.format_version, want.format_version);
    EXPECT_EQ(got.dtype, want.dtype);
    EXPECT_EQ(got.rank, want.rank);
    for (int i = 0; i < GSZ_MAX_RANK; ++i) EXPECT_EQ(got.dims[i], want.dims[i]);
    EXPECT_EQ(got.error_mode, want.error_mode);
    EXPECT_EQ(got.pipeline, want.pipeline);
    EXPECT_EQ(got.error_bound, want.error_bound);
    EXPECT_EQ(got.error_bound_abs, want.error_bound_abs);
    EXPECT_EQ(got.value_min, want.value_min);
    EXPECT_EQ(got.value_max, want.value_max);
    EXPECT_EQ(got.component_dim, want.component_dim);
}

gsz_status parse_status(const std::vector<uint8_t>& a, std::string* message = nullptr) {
    try {
        archive_parse(a);
    } catch (const gsz::Error& e) {
        if (message) *message = e.what();
        return e.status();
    }
    return GSZ_STATUS_OK;
}

void expect_corrupt(const std::vector<uint8_t>& a, const char* message_part) {
    std::string message;
    EXPECT_EQ(parse_status(a, &message), GSZ_STATUS_CORRUPT) << message;
    EXPECT_NE(message.find(message_part), std::string::npos) << message;
}

TEST(Archive, RoundTrip) {
    const auto bytes = sample_archive();
    EXPECT_EQ(bytes.size(), kHeaderBytes + 3 * kSectionEntryBytes + kParams.size() + kBitstream.size() +
                                kOutliers.size());
    const Archive a = archive_parse(bytes);
    const Header want = sample_header();
    EXPECT_EQ(a.header.format_version, kLastFixedVersion);
    expect_same_header(a.header, want);
    EXPECT_EQ(a.header.num_elements(), 105u);

    ASSERT_EQ(a.sections.size(), 3u);
    EXPECT_EQ(a.sections[0].kind, SectionKind::pipeline_params);
    EXPECT_EQ(a.sections[1].kind, SectionKind::huffman_bitstream);
    EXPECT_EQ(a.sections[2].kind, SectionKind::outlier_values);
    auto as_vec = [](std::span<const uint8_t> s) { return std::vector<uint8_t>(s.begin(), s.end()); };
    EXPECT_EQ(as_vec(a.section(SectionKind::pipeline_params)), kParams);
    EXPECT_EQ(as_vec(a.section(SectionKind::huffman_bitstream)), kBitstream);
    EXPECT_EQ(as_vec(a.section(SectionKind::outlier_values)), kOutliers);
    // Views point into the input, not into copies.
    EXPECT_EQ(a.section(SectionKind::pipeline_params).data(), bytes.data() + kHeaderBytes + 3 * kSectionEntryBytes);
    EXPECT_TRUE(a.has(SectionKind::outlier_values));
    EXPECT_FALSE(a.has(SectionKind::zstd_values));

    // Re-serializing what was parsed gives the same bytes.
    std::vector<SectionData> again;
    for (const auto& s : a.sections) again.push_back({s.kind, s.bytes});
    EXPECT_EQ(archive_write(a.header, again), bytes);
}

TEST(Archive, MissingSectionIsCorrupt) {
    const auto bytes = sample_archive();
    const Archive a = archive_parse(bytes);
    try {
        a.section(SectionKind::huffman_codebook);
        FAIL() << "expected gsz::Error";
    } catch (const gsz::Error& e) {
        EXPECT_EQ(e.status(), GSZ_STATUS_CORRUPT);
        EXPECT_NE(std::string(e.what()).find("missing section huffman_codebook"), std::string::npos) << e.what();
    }
}

TEST(Archive, ByteLayout) {
    const auto b = sample_archive();
    EXPECT_EQ(b[0], 'G');
    EXPECT_EQ(b[1], 'S');
    EXPECT_EQ(b[2], 'Z');
    EXPECT_EQ(b[3], kLastFixedVersion);
    EXPECT_EQ(b[4], GSZ_DTYPE_F32);
    EXPECT_EQ(b[5], 3);
    EXPECT_EQ(b[6], GSZ_ERROR_REL);
    EXPECT_EQ(b[7], GSZ_PIPELINE_LORENZO);
    EXPECT_EQ(peek<uint64_t>(b, 8), 7u);
    EXPECT_EQ(peek<uint64_t>(b, 16), 5u);
    EXPECT_EQ(peek<uint64_t>(b, 24), 3u);
    EXPECT_EQ(peek<uint64_t>(b, 32), 1u);
    EXPECT_EQ(peek<double>(b, 40), 1e-3);
    EXPECT_EQ(peek<double>(b, 48), 2.5e-3);
    EXPECT_EQ(peek<double>(b, 56), -1.25);
    EXPECT_EQ(peek<double>(b, 64), 1.25);
    EXPECT_EQ(peek<uint32_t>(b, 72), 3u);
    EXPECT_EQ(peek<uint32_t>(b, 76), 0u);
    for (size_t i = 80; i < 120; ++i) EXPECT_EQ(b[i], 0) << i;
    auto c = b;
    fix_header_checksum(c);
    EXPECT_EQ(c, b);

    const uint64_t first = kHeaderBytes + 3 * kSectionEntryBytes;
    const uint64_t offsets[] = {first, first + kParams.size(), first + kParams.size() + kBitstream.size()};
    const std::vector<uint8_t>* payloads[] = {&kParams, &kBitstream, &kOutliers};
    const uint32_t kinds[] = {1, 4, 5};
    for (int i = 0; i < 3; ++i) {
        const size_t e = kHeaderBytes + i * kSectionEntryBytes;
        EXPECT_EQ(peek<uint32_t>(b, e), kinds[i]);
        EXPECT_EQ(peek<uint32_t>(b, e + 4), 0u);
        EXPECT_EQ(peek<uint64_t>(b, e + 8), offsets[i]);
        EXPECT_EQ(peek<uint64_t>(b, e + 16), payloads[i]->size());
        EXPECT_EQ(peek<uint64_t>(b, e + 24), checksum64(*payloads[i]));
    }
}

TEST(Archive, ChecksumIsXxh64Seed0) {
    EXPECT_EQ(checksum64({}), 0xEF46DB3751D8E999ull);
    const uint8_t abc[] = {'a', 'b', 'c'};
    EXPECT_EQ(checksum64(abc), 0x44BC2CF5AD770999ull);
}

TEST(Archive, SectionKindNames) {
    EXPECT_STREQ(section_kind_name(SectionKind::pipeline_params), "pipeline_params");
    EXPECT_STREQ(section_kind_name(SectionKind::huffman_codebook), "huffman_codebook");
    EXPECT_STREQ(section_kind_name(SectionKind::huffman_chunks), "huffman_chunks");
    EXPECT_STREQ(section_kind_name(SectionKind::huffman_bitstream), "huffman_bitstream");
    EXPECT_STREQ(section_kind_name(SectionKind::outlier_values), "outlier_values");
    EXPECT_STREQ(section_kind_name(SectionKind::zstd_values), "zstd_values");
    EXPECT_STREQ(section_kind_name(SectionKind::fast_block_codes), "fast_block_codes");
    EXPECT_STREQ(section_kind_name(SectionKind::fast_block_mids), "fast_block_mids");
    EXPECT_STREQ(section_kind_name(SectionKind::fast_lead_codes), "fast_lead_codes");
    EXPECT_STREQ(section_kind_name(SectionKind::fast_mid_bytes), "fast_mid_bytes");
    EXPECT_STREQ(section_kind_name(static_cast<SectionKind>(0)), "unknown");
    EXPECT_STREQ(section_kind_name(SectionKind::interp_anchors), "interp_anchors");
    EXPECT_STREQ(section_kind_name(SectionKind::outlier_indices), "outlier_indices");
    EXPECT_STREQ(section_kind_name(SectionKind::run_tokens), "run_tokens");
    EXPECT_STREQ(section_kind_name(SectionKind::ans_tables), "ans_tables");
    EXPECT_STREQ(section_kind_name(SectionKind::ans_lanes), "ans_lanes");
    EXPECT_STREQ(section_kind_name(SectionKind::ans_stream), "ans_stream");
    EXPECT_STREQ(section_kind_name(SectionKind::interp_tiles), "interp_tiles");
    EXPECT_STREQ(section_kind_name(SectionKind::fill_mask), "fill_mask");
    EXPECT_STREQ(section_kind_name(static_cast<SectionKind>(19)), "unknown");
}

TEST(Archive, EveryTruncationIsCorrupt) {
    const auto bytes = sample_archive();
    for (size_t n = 0; n < bytes.size(); ++n) {
        const std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + n);
        std::string message;
        EXPECT_EQ(parse_status(cut, &message), GSZ_STATUS_CORRUPT) << "length " << n << ": " << message;
    }
}

TEST(Archive, EverySingleByteFlipIsDetected) {
    const auto bytes = sample_archive();
    for (const uint8_t mask : {uint8_t{0xFF}, uint8_t{0x01}}) {
        for (size_t i = 0; i < bytes.size(); ++i) {
            auto flipped = bytes;
            flipped[i] ^= mask;
            EXPECT_NE(parse_status(flipped), GSZ_STATUS_OK) << "byte " << i << " xor " << int{mask};
        }
    }
}

TEST(Archive, FutureVersionIsUnsupported) {
    auto a = sample_archive();
    a[3] = kFormatVersion + 1;
    std::string message;
    EXPECT_EQ(parse_status(a, &message), GSZ_STATUS_UNSUPPORTED);
    EXPECT_NE(message.find("version " + std::to_string(kFormatVersion + 1)), std::string::npos) << message;
    EXPECT_NE(message.find("not supported"), std::string::npos) << message;
    fix_header_checksum(a);  // same answer whether or not the checksum matches
    EXPECT_EQ(parse_status(a), GSZ_STATUS_UNSUPPORTED);
    a[3] = 0;
    EXPECT_EQ(parse_status(a), GSZ_STATUS_UNSUPPORTED);
}

TEST(Archive, BadMagic) {
    auto a = sample_archive();
    a[1] = 'X';
    expect_corrupt(a, "not a gsz archive");
}

TEST(Archive, TrailingByteRejected) {
    auto a = sample_archive();
    a.push_back(0);
    expect_corrupt(a, "trailing");
}

TEST(Archive, HeaderChecksumMismatch) {
    auto a = sample_archive();
    a[40] ^= 0x01;
    expect_corrupt(a, "header checksum");
}

TEST(Archive, SectionChecksumMismatchNamesSection) {
    auto a = sample_archive();
    a.back() ^= 0x80;
    expect_corrupt(a, "section outlier_values checksum");
}

TEST(Archive, DimsProductOverflowRejected) {
    auto a = sample_archive();
    a[5] = 2;
    poke<uint64_t>(a, 8, uint64_t{1} << 32);
    poke<uint64_t>(a, 16, uint64_t{1} << 32);
    poke<uint64_t>(a, 24, 1);
    fix_header_checksum(a);
    expect_corrupt(a, "overflow");
}

TEST(Archive, ArrayBytesAbove2To62Rejected) {
    auto a = sample_archive();
    a[5] = 2;
    poke<uint64_t>(a, 8, uint64_t{1} << 31);
    poke<uint64_t>(a, 16, uint64_t{1} << 31);  // 2^62 f32 elements: 2^64 bytes
    poke<uint64_t>(a, 24, 1);
    fix_header_checksum(a);
    expect_corrupt(a, "2^62");
}

TEST(Archive, HeaderFieldsRejectedWithValidChecksum) {
    struct Case {
        const char* name;
        void (*patch)(std::vector<uint8_t>&);
        const char* message;
    };
    const Case cases[] = {
        {"dtype 0", [](std::vector<uint8_t>& a) { a[4] = 0; }, "dtype"},
        {"dtype 3", [](std::vector<uint8_t>& a) { a[4] = 3; }, "dtype"},
        {"rank 0", [](std::vector<uint8_t>& a) { a[5] = 0; }, "rank"},
        {"rank 5", [](std::vector<uint8_t>& a) { a[5] = 5; }, "rank"},
        {"error_mode 0", [](std::vector<uint8_t>& a) { a[6] = 0; }, "error_mode"},
        {"error_mode 3", [](std::vector<uint8_t>& a) { a[6] = 3; }, "error_mode"},
        {"dims[1] 0", [](std::vector<uint8_t>& a) { poke<uint64_t>(a, 16, 0); }, "dims[1] is 0"},
        {"dims[3] beyond rank", [](std::vector<uint8_t>& a) { poke<uint64_t>(a, 32, 2); }, "dims[3]"},
        {"rank 2 with dims[2] 3", [](std::vector<uint8_t>& a) { a[5] = 2; }, "dims[2]"},
        {"error_bound < 0", [](std::vector<uint8_t>& a) { poke<double>(a, 40, -1.0); }, "error_bound"},
        {"error_bound inf",
         [](std::vector<uint8_t>& a) { poke<double>(a, 40, std::numeric_limits<double>::infinity()); },
         "error_bound"},
        {"error_bound_abs nan",
         [](std::vector<uint8_t>& a) { poke<double>(a, 48, std::numeric_limits<double>::quiet_NaN()); },
         "error_bound_abs"},
        {"min > max", [](std::vector<uint8_t>& a) { poke<double>(a, 56, 2.0); }, "value range"},
        {"min nan only",
         [](std::vector<uint8_t>& a) { poke<double>(a, 56, std::numeric_limits<double>::quiet_NaN()); },
         "value range"},
        {"max inf",
         [](std::vector<uint8_t>& a) { poke<double>(a, 64, std::numeric_limits<double>::infinity()); },
         "value range"},
        {"num_sections 0", [](std::vector<uint8_t>& a) { poke<uint32_t>(a, 72, 0); }, "num_sections"},
        {"num_sections 65", [](std::vector<uint8_t>& a) { poke<uint32_t>(a, 72, 65); }, "num_sections"},
        {"flags", [](std::vector<uint8_t>& a) { poke<uint32_t>(a, 76, 1u << 31); }, "flags"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        auto a = sample_archive();
        c.patch(a);
        if (peek<uint32_t>(a, 72) <= kMaxSections) fix_header_checksum(a);
        expect_corrupt(a, c.message);
    }
}

TEST(Archive, ReservedHeaderBytesRejectedWithValidChecksum) {
    // Byte 80 is the component dim (version 6, with flag 0x1): zero without the flag.
    auto c = sample_archive();
    c[80] = 0x01;
    fix_header_checksum(c);
    expect_corrupt(c, "header byte 80 is 0x01 without flag 0x1");
    for (size_t i = 81; i < 120; ++i) {
        auto a = sample_archive();
        a[i] = 0x01;
        fix_header_checksum(a);
        expect_corrupt(a, "reserved header byte");
    }
}

TEST(Archive, ReservedSectionFieldRejected) {
    auto a = sample_archive();
    poke<uint32_t>(a, kHeaderBytes + kSectionEntryBytes + 4, 1);
    fix_header_checksum(a);
    expect_corrupt(a, "section huffman_bitstream reserved");
}

TEST(Archive, UnknownPipelineIsUnsupported) {
    auto a = sample_archive();
    a[7] = 4;  // after store (0), lorenzo (1), fast (2) and interp (3)
    fix_header_checksum(a);
    std::string message;
    EXPECT_EQ(parse_status(a, &message), GSZ_STATUS_UNSUPPORTED) << message;
    EXPECT_NE(message.find("pipeline 4"), std::string::npos) << message;
}

TEST(Archive, StorePipelineParses) {
    Header h = sample_header();
    h.pipeline = GSZ_PIPELINE_STORE;
    h.dtype = GSZ_DTYPE_F64;
    h.rank = 4;
    h.dims[3] = 2;
    h.error_mode = GSZ_ERROR_ABS;
    h.error_bound = 0;
    h.error_bound_abs = 0;
    h.value_min = std::numeric_limits<double>::quiet_NaN();
    h.value_max = std::numeric_limits<double>::quiet_NaN();
    const std::vector<uint8_t> empty;
    const SectionData sections[] = {{SectionKind::zstd_values, empty}};
    const auto bytes = archive_write(h, sections);
    EXPECT_EQ(bytes.size(), kHeaderBytes + kSectionEntryBytes);
    const Archive a = archive_parse(bytes);
    EXPECT_EQ(a.header.pipeline, GSZ_PIPELINE_STORE);
    EXPECT_EQ(a.header.num_elements(), 7u * 5 * 3 * 2);
    EXPECT_TRUE(std::isnan(a.header.value_min));
    EXPECT_TRUE(std::isnan(a.header.value_max));
    EXPECT_TRUE(a.section(SectionKind::zstd_values).empty());
}

TEST(Archive, UnknownSectionKindRejected) {
    for (const uint32_t kind : {0u, 17u, 0xFFFFFFFFu}) {
        auto a = sample_archive();
        poke<uint32_t>(a, kHeaderBytes + 2 * kSectionEntryBytes, kind);
        fix_header_checksum(a);
        expect_corrupt(a, "unknown kind");
    }
    // The rANS sections (14..16) came with version 3: a version-2 archive cannot hold them.
    Header v2 = sample_header();
    v2.format_version = 2;
    const uint8_t payload[] = {1, 2, 3};
    const SectionData sections[] = {{SectionKind::pipeline_params, payload}, {SectionKind::outlier_values, payload}};
    for (const uint32_t kind : {14u, 15u, 16u}) {
        auto a = archive_write(v2, sections);
        poke<uint32_t>(a, kHeaderBytes + kSectionEntryBytes, kind);
        fix_header_checksum(a);
        expect_corrupt(a, "unknown kind");
    }
}

TEST(Archive, DuplicateSectionKindRejected) {
    auto a = sample_archive();
    poke<uint32_t>(a, kHeaderBytes + 2 * kSectionEntryBytes, 1);  // outlier_values -> pipeline_params
    fix_header_checksum(a);
    expect_corrupt(a, "section pipeline_params appears twice");
}

TEST(Archive, SectionOffsetsMustBeContiguous) {
    const size_t e1 = kHeaderBytes + kSectionEntryBytes;
    {
        auto a = sample_archive();  // a gap between sections 0 and 1
        poke<uint64_t>(a, e1 + 8, peek<uint64_t>(a, e1 + 8) + 1);
        fix_header_checksum(a);
        expect_corrupt(a, "section huffman_bitstream offset");
    }
    {
        auto a = sample_archive();  // overlapping sections
        poke<uint64_t>(a, e1 + 8, peek<uint64_t>(a, e1 + 8) - 1);
        fix_header_checksum(a);
        expect_corrupt(a, "section huffman_bitstream offset");
    }
    {
        auto a = sample_archive();  // a length that wraps offset + length
        poke<uint64_t>(a, e1 + 16, ~uint64_t{0});
        fix_header_checksum(a);
        expect_corrupt(a, "runs past the archive end");
    }
    {
        auto a = sample_archive();  // the last section stops short of the end
        const size_t e2 = kHeaderBytes + 2 * kSectionEntryBytes;
        poke<uint64_t>(a, e2 + 16, peek<uint64_t>(a, e2 + 16) - 1);
        poke<uint64_t>(a, e2 + 24, checksum64({a.data() + peek<uint64_t>(a, e2 + 8), kOutliers.size() - 1}));
        fix_header_checksum(a);
        expect_corrupt(a, "trailing");
    }
}

TEST(Archive, HeaderValidatePassesStatusThrough) {
    Header h = sample_header();
    h.rank = 0;
    try {
        header_validate(h, GSZ_STATUS_INVALID_ARGUMENT);
        FAIL() << "expected gsz::Error";
    } catch (const gsz::Error& e) {
        EXPECT_EQ(e.status(), GSZ_STATUS_INVALID_ARGUMENT);
        EXPECT_NE(std::string(e.what()).find("rank"), std::string::npos) << e.what();
    }
}

TEST(Archive, HeaderValidateSizeLimitIsInclusive) {
    Header h = sample_header();
    h.rank = 2;
    h.dims[0] = uint64_t{1} << 30;
    h.dims[1] = uint64_t{1} << 30;
    h.dims[2] = 1;
    EXPECT_NO_THROW(header_validate(h, GSZ_STATUS_CORRUPT));  // 2^60 x 4 bytes = 2^62
    h.dims[1] += 1;
    EXPECT_THROW(header_validate(h, GSZ_STATUS_CORRUPT), gsz::Error);
    h.dtype = GSZ_DTYPE_F64;
    h.dims[1] = uint64_t{1} << 29;  // 2^59 x 8 bytes = 2^62
    EXPECT_NO_THROW(header_validate(h, GSZ_STATUS_CORRUPT));
}

TEST(Archive, WriteRejectsBadInput) {
    const SectionData one[] = {{SectionKind::pipeline_params, kParams}};
    auto status_of = [](auto&& fn) {
        try {
            fn();
        } catch (const gsz::Error& e) {
            return e.status();
        }
        return GSZ_STATUS_OK;
    };
    Header bad = sample_header();
    bad.dims[3] = 9;
    EXPECT_EQ(status_of([&] { archive_write(bad, one); }), GSZ_STATUS_INTERNAL);
    bad = sample_header();
    for (const uint8_t version : {uint8_t{0}, static_cast<uint8_t>(kFormatVersion + 1)}) {
        bad.format_version = version;   // only the versions this gsz reads
        EXPECT_EQ(status_of([&] { archive_write(bad, one); }), GSZ_STATUS_INTERNAL);
    }
    // An archive of an older version parses and writes back to the same bytes.
    Header old = sample_header();
    old.format_version = kOldestFormatVersion;
    const auto old_bytes = archive_write(old, one);
    EXPECT_EQ(old_bytes[3], kOldestFormatVersion);
    const Archive parsed = archive_parse(old_bytes);
    std::vector<SectionData> again;
    for (const auto& sec : parsed.sections) again.push_back({sec.kind, sec.bytes});
    EXPECT_EQ(archive_write(parsed.header, again), old_bytes);

    const Header h = sample_header();
    EXPECT_EQ(status_of([&] { archive_write(h, {}); }), GSZ_STATUS_INTERNAL);
    const SectionData dup[] = {{SectionKind::pipeline_params, kParams}, {SectionKind::pipeline_params, kParams}};
    EXPECT_EQ(status_of([&] { archive_write(h, dup); }), GSZ_STATUS_INTERNAL);
    const SectionData unknown[] = {{static_cast<SectionKind>(17), kParams}};
    EXPECT_EQ(status_of([&] { archive_write(h, unknown); }), GSZ_STATUS_INTERNAL);
    Header v2 = sample_header();
    v2.format_version = 2;
    const SectionData ans_in_v2[] = {{SectionKind::ans_tables, kParams}};
    EXPECT_EQ(status_of([&] { archive_write(v2, ans_in_v2); }), GSZ_STATUS_INTERNAL);
    const std::vector<SectionData> too_many(kMaxSections + 1, SectionData{SectionKind::pipeline_params, kParams});
    EXPECT_EQ(status_of([&] { archive_write(h, too_many); }), GSZ_STATUS_INTERNAL);
}

// ---- The compact container (version >= 8) ----

// A compact archive from its header fields as raw bytes (everything up to the
// two checksums) and its payloads: the checksums are computed here, from the
// spec, not by the library, so that a test can write what the writer never would.
std::vector<uint8_t> seal_compact(std::vector<uint8_t> header, const std::vector<std::vector<uint8_t>>& payloads) {
    std::vector<uint8_t> body;
    for (const auto& p : payloads) body.insert(body.end(), p.begin(), p.end());
    const uint64_t payload_checksum = checksum64(body);
    header.resize(header.size() + 8);
    std::memcpy(header.data() + header.size() - 8, &payload_checksum, 8);
    const uint64_t header_checksum = checksum64(header);
    header.resize(header.size() + 8);
    std::memcpy(header.data() + header.size() - 8, &header_checksum, 8);
    header.insert(header.end(), body.begin(), body.end());
    return header;
}

void put_f64(std::vector<uint8_t>& out, double v) {
    uint8_t b[8];
    std::memcpy(b, &v, 8);
    out.insert(out.end(), b, b + 8);
}

// The header bytes of sample_header(8) with the sample's three sections,
// field by field as FORMAT.md lists them; `patch` may change any field.
struct CompactFields {
    std::vector<uint8_t> prefix = {'G', 'S', 'Z', kFirstCompactVersion, GSZ_DTYPE_F32, 3, GSZ_ERROR_REL,
                                   GSZ_PIPELINE_LORENZO, 0};
    std::vector<uint8_t> component;                 // the component dim byte, with flag 0x1
    std::vector<uint8_t> dims = {7, 5, 3};          // varints
    double bounds[4] = {1e-3, 2.5e-3, -1.25, 1.25};
    std::vector<uint8_t> table = {3, 1, 12, 4, 7, 5, 4};  // count, then kind and varint length
    std::vector<std::vector<uint8_t>> payloads = {kParams, kBitstream, kOutliers};

    std::vector<uint8_t> archive() const {
        std::vector<uint8_t> h = prefix;
        h.insert(h.end(), component.begin(), component.end());
        h.insert(h.end(), dims.begin(), dims.end());
        for (const double b : bounds) put_f64(h, b);
        h.insert(h.end(), table.begin(), table.end());
        return seal_compact(h, payloads);
    }
};

constexpr size_t kCompactSampleHeaderBytes = 9 + 3 + 32 + 7 + 16;

TEST(CompactArchive, RoundTripAndByteLayout) {
    const auto bytes = sample_archive(kFirstCompactVersion);
    EXPECT_EQ(bytes, CompactFields{}.archive());   // the writer lays out exactly what FORMAT.md says
    EXPECT_EQ(bytes.size(), kCompactSampleHeaderBytes + kParams.size() + kBitstream.size() + kOutliers.size());
    const Archive a = archive_parse(bytes);
    const Header want = sample_header(kFirstCompactVersion);
    EXPECT_EQ(a.header.format_version, kFirstCompactVersion);
    expect_same_header(a.header, want);
    EXPECT_EQ(a.header.component_dim, -1);
    ASSERT_EQ(a.sections.size(), 3u);
    EXPECT_EQ(a.section(SectionKind::pipeline_params).data(), bytes.data() + kCompactSampleHeaderBytes);
    EXPECT_EQ(a.section(SectionKind::outlier_values).size(), kOutliers.size());
    std::vector<SectionData> again;
    for (const auto& sec : a.sections) again.push_back({sec.kind, sec.bytes});
    EXPECT_EQ(archive_write(a.header, again), bytes);
    // The pipelines write this container.
    EXPECT_GE(kFormatVersion, kFirstCompactVersion);
}

TEST(CompactArchive, LargeDimsComponentsAndEmptySections) {
    Header h = sample_header(kFirstCompactVersion);
    h.rank = 4;
    h.dims[0] = 3;
    h.dims[1] = 300;                      // two varint bytes
    h.dims[2] = uint64_t{1} << 40;        // six
    h.dims[3] = 1;
    h.component_dim = 0;
    h.value_min = std::numeric_limits<double>::quiet_NaN();
    h.value_max = std::numeric_limits<double>::quiet_NaN();
    const std::vector<uint8_t> empty, big(300, 0xAB);
    const SectionData sections[] = {{SectionKind::pipeline_params, empty}, {SectionKind::huffman_bitstream, big}};
    const auto bytes = archive_write(h, sections);
    CompactFields f;
    f.prefix[5] = 4;
    f.prefix[8] = 0x1;
    f.component = {0};
    f.dims = {3, 0xAC, 0x02, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20, 1};
    f.bounds[2] = f.bounds[3] = std::numeric_limits<double>::quiet_NaN();
    f.table = {2, 1, 0, 4, 0xAC, 0x02};
    f.payloads = {empty, big};
    EXPECT_EQ(bytes, f.archive());
    const Archive a = archive_parse(bytes);
    EXPECT_EQ(a.header.component_dim, 0);
    EXPECT_EQ(a.header.dims[2], uint64_t{1} << 40);
    EXPECT_TRUE(std::isnan(a.header.value_min));
    EXPECT_TRUE(a.section(SectionKind::pipeline_params).empty());
    EXPECT_EQ(a.section(SectionKind::huffman_bitstream).size(), 300u);
}

TEST(CompactArchive, EveryTruncationIsCorrupt) {
    const auto bytes = sample_archive(kFirstCompactVersion);
    for (size_t n = 0; n < bytes.size(); ++n) {
        const std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + n);
        std::string message;
        EXPECT_EQ(parse_status(cut, &message), GSZ_STATUS_CORRUPT) << "length " << n << ": " << message;
    }
}

TEST(CompactArchive, EverySingleByteFlipIsDetected) {
    const auto bytes = sample_archive(kFirstCompactVersion);
    for (const uint8_t mask : {uint8_t{0xFF}, uint8_t{0x01}, uint8_t{0x80}}) {
        for (size_t i = 0; i < bytes.size(); ++i) {
            auto flipped = bytes;
            flipped[i] ^= mask;
            EXPECT_NE(parse_status(flipped), GSZ_STATUS_OK) << "byte " << i << " xor " << int{mask};
        }
    }
}

TEST(CompactArchive, ChecksumsAndTrailingBytes) {
    auto a = sample_archive(kFirstCompactVersion);
    a.back() ^= 0x80;
    expect_corrupt(a, "payload checksum mismatch");
    a = sample_archive(kFirstCompactVersion);
    a[20] ^= 0x01;   // inside error_bound
    expect_corrupt(a, "header checksum mismatch");
    a = sample_archive(kFirstCompactVersion);
    a.push_back(0);
    expect_corrupt(a, "trailing");
    CompactFields f;
    f.payloads.back().push_back(0);   // one byte more than the table says, checksums right
    expect_corrupt(f.archive(), "trailing");
    f = CompactFields{};
    f.table.back() = 5;   // the last length one past the end
    f.payloads.back().pop_back();
    f.payloads.back().push_back(0);
    f.payloads.back().pop_back();
    expect_corrupt(f.archive(), "runs past the archive end");
}

TEST(CompactArchive, FieldsRejectedWithValidChecksums) {
    struct Case {
        const char* name;
        void (*patch)(CompactFields&);
        const char* message;
        gsz_status status = GSZ_STATUS_CORRUPT;
    };
    const Case cases[] = {
        {"dtype 3", [](CompactFields& f) { f.prefix[4] = 3; }, "dtype"},
        {"rank 0", [](CompactFields& f) { f.prefix[5] = 0; }, "rank 0"},
        {"rank 5", [](CompactFields& f) { f.prefix[5] = 5; }, "rank 5"},
        {"error_mode 3", [](CompactFields& f) { f.prefix[6] = 3; }, "error_mode"},
        {"pipeline 4", [](CompactFields& f) { f.prefix[7] = 4; }, "pipeline 4", GSZ_STATUS_UNSUPPORTED},
        {"flag 0x2", [](CompactFields& f) { f.prefix[8] = 0x2; }, "flags 0x02"},
        {"component dim 1 of extent 5 with the flag",
         [](CompactFields& f) {
             f.prefix[8] = 0x1;
             f.component = {3};
         },
         "component dim 3"},
        {"dims[1] 0", [](CompactFields& f) { f.dims[1] = 0; }, "dims[1] is 0"},
        {"a dim in two bytes where one does", [](CompactFields& f) { f.dims = {0x87, 0x00, 5, 3}; }, "fewest bytes"},
        {"a dim of 11 varint bytes",
         [](CompactFields& f) { f.dims = {7, 5, 0x83, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}; },
         "overflows 64 bits"},   // a tenth byte with more to follow is already above 2^64
        {"a dim above 2^64",
         [](CompactFields& f) { f.dims = {7, 5, 0x83, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02}; },
         "overflows 64 bits"},
        {"dims overflow", [](CompactFields& f) { f.dims = {7, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 3}; },
         "overflow"},
        {"error_bound < 0", [](CompactFields& f) { f.bounds[0] = -1; }, "error_bound"},
        {"min > max", [](CompactFields& f) { f.bounds[2] = 2; }, "value range"},
        {"num_sections 0", [](CompactFields& f) { f.table = {0}; f.payloads.clear(); }, "num_sections 0"},
        {"num_sections 65",
         [](CompactFields& f) {
             f.table = {65};
             for (int i = 0; i < 65; ++i) f.table.insert(f.table.end(), {1, 0});
             f.payloads.clear();
         },
         "num_sections 65"},
        {"kind 0", [](CompactFields& f) { f.table[1] = 0; }, "unknown kind 0"},
        {"kind 17", [](CompactFields& f) { f.table[3] = 17; }, "unknown kind 17"},
        {"a kind twice", [](CompactFields& f) { f.table[5] = 1; }, "pipeline_params appears twice"},
        {"a section length in two bytes", [](CompactFields& f) { f.table = {3, 1, 0x8C, 0x00, 4, 7, 5, 4}; },
         "fewest bytes"},
        {"a section length of 2^64 - 1",
         [](CompactFields& f) {
             f.table = {3, 1, 12, 4, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01, 5, 4};
         },
         "runs past the archive end"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        CompactFields f;
        c.patch(f);
        std::string message;
        EXPECT_EQ(parse_status(f.archive(), &message), c.status) << message;
        EXPECT_NE(message.find(c.message), std::string::npos) << message;
    }
}

TEST(CompactArchive, OlderVersionsKeepTheFixedContainer) {
    for (uint8_t version = kOldestFormatVersion; version <= kFormatVersion; ++version) {
        SCOPED_TRACE(int{version});
        const auto bytes = sample_archive(version);
        const size_t header = version >= kFirstCompactVersion ? kCompactSampleHeaderBytes
                                                             : kHeaderBytes + 3 * kSectionEntryBytes;
        EXPECT_EQ(bytes.size(), header + kParams.size() + kBitstream.size() + kOutliers.size());
        const Archive a = archive_parse(bytes);
        EXPECT_EQ(a.header.format_version, version);
        std::vector<SectionData> again;
        for (const auto& sec : a.sections) again.push_back({sec.kind, sec.bytes});
        EXPECT_EQ(archive_write(a.header, again), bytes);
    }
}

}  // namespace
