// The store pipeline: the raw values in one zstd frame.  Lossless; used for
// bound 0, for fields whose bound cannot drive a lattice, and as the fallback
// when a lossy archive would not be smaller than the input.
#include "pipeline/pipeline.hpp"

#include "runtime/status.hpp"

#include <zstd.h>

namespace gsz::pipeline {

namespace {
constexpr int kZstdLevel = 3;
}

std::vector<uint8_t> store_compress(const format::Header& header, const void* data) {
    const size_t raw = static_cast<size_t>(header.num_elements() * header.element_bytes());
    std::vector<uint8_t> frame(ZSTD_compressBound(raw));
    const size_t n = ZSTD_compress(frame.data(), frame.size(), data, raw, kZstdLevel);
    GSZ_CHECK(!ZSTD_isError(n), GSZ_STATUS_INTERNAL, "zstd: %s", ZSTD_getErrorName(n));
    frame.resize(n);
    const format::SectionData sections[] = {{format::SectionKind::zstd_values, frame}};
    return format::archive_write(header, sections);
}

void store_decompress(const format::Archive& archive, void* out) {
    const auto frame = archive.section(format::SectionKind::zstd_values);
    const uint64_t raw = archive.header.num_elements() * archive.header.element_bytes();
    const unsigned long long content = ZSTD_getFrameContentSize(frame.data(), frame.size());
    GSZ_CHECK(content != ZSTD_CONTENTSIZE_ERROR && content != ZSTD_CONTENTSIZE_UNKNOWN, GSZ_STATUS_CORRUPT,
              "zstd_values: not a zstd frame with a content size");
    GSZ_CHECK(content == raw, GSZ_STATUS_CORRUPT, "zstd_values: frame holds %llu bytes, the header needs %llu",
              content, static_cast<unsigned long long>(raw));
    const size_t n = ZSTD_decompress(out, static_cast<size_t>(raw), frame.data(), frame.size());
    GSZ_CHECK(!ZSTD_isError(n), GSZ_STATUS_CORRUPT, "zstd_values: %s", ZSTD_getErrorName(n));
    GSZ_CHECK(n == raw, GSZ_STATUS_CORRUPT, "zstd_values: decoded %zu bytes, expected %llu", n,
              static_cast<unsigned long long>(raw));
}

}  // namespace gsz::pipeline
