// Archive container: see docs/FORMAT.md for the byte layout and the
// validation order implemented by archive_parse.
#include "format/archive.hpp"

#include "runtime/byte_io.hpp"  // little-endian host assertion
#include "runtime/status.hpp"

#include <xxhash.h>

#include <array>
#include <cmath>
#include <cstring>

namespace gsz::format {

namespace {

// Header field offsets (FORMAT.md, "Header").
constexpr size_t kOffMagic = 0;
constexpr size_t kOffVersion = 3;
constexpr size_t kOffDtype = 4;
constexpr size_t kOffRank = 5;
constexpr size_t kOffErrorMode = 6;
constexpr size_t kOffPipeline = 7;
constexpr size_t kOffDims = 8;
constexpr size_t kOffErrorBound = 40;
constexpr size_t kOffErrorBoundAbs = 48;
constexpr size_t kOffValueMin = 56;
constexpr size_t kOffValueMax = 64;
constexpr size_t kOffNumSections = 72;
constexpr size_t kOffFlags = 76;
constexpr size_t kOffComponentDim = 80;   // version >= 6, with flag 0x1
constexpr size_t kOffReserved = 81;
constexpr size_t kOffHeaderChecksum = 120;
static_assert(kOffHeaderChecksum + 8 == kHeaderBytes);

constexpr uint8_t kMagic[3] = {'G', 'S', 'Z'};
// Element size cap: keeps num_elements * element_bytes and derived sizes far
// from 64-bit overflow everywhere downstream.
constexpr uint64_t kMaxArrayBytes = uint64_t{1} << 62;

template <class T>
T load(const uint8_t* p) {
    T value;
    std::memcpy(&value, p, sizeof(T));
    return value;
}

template <class T>
void store(uint8_t* p, T value) {
    std::memcpy(p, &value, sizeof(T));
}

// Kinds 14..16 (rANS) exist from version 3 on, 17 (interp tiles) from 10.
bool kind_known(uint32_t kind, uint32_t version) {
    const auto last = version >= 13 ? SectionKind::fill_mask
                      : version >= 10 ? SectionKind::interp_tiles
                      : version >= 3 ? SectionKind::ans_stream
                                     : SectionKind::run_tokens;
    return kind >= static_cast<uint32_t>(SectionKind::pipeline_params) && kind <= static_cast<uint32_t>(last);
}

// Header bytes 0..119 followed by the section table.  Copied into a fixed
// stack buffer (the table is at most 64 entries) so that no allocation or
// streaming hash state is needed.
uint64_t header_checksum(std::span<const uint8_t> header_bytes, std::span<const uint8_t> table_bytes) {
    std::array<uint8_t, kOffHeaderChecksum + kMaxSections * kSectionEntryBytes> buf;
    std::memcpy(buf.data(), header_bytes.data(), kOffHeaderChecksum);
    if (!table_bytes.empty()) std::memcpy(buf.data() + kOffHeaderChecksum, table_bytes.data(), table_bytes.size());
    return checksum64({buf.data(), kOffHeaderChecksum + table_bytes.size()});
}

unsigned long long ull(uint64_t v) { return static_cast<unsigned long long>(v); }

// Unsigned LEB128 (7 bits a byte, low first, 0x80 = more follow), the
// compact container's integers.
void put_varint(std::vector<uint8_t>& out, uint64_t v) {
    while (v >= 0x80) {
        out.push_back(static_cast<uint8_t>(v) | 0x80);
        v >>= 7;
    }
    out.push_back(static_cast<uint8_t>(v));
}

// The compact header's reader: every read checks what is left, so a cut
// archive is "truncated", never an out-of-bounds read.
class HeaderCursor {
public:
    explicit HeaderCursor(std::span<const uint8_t> bytes) : bytes_(bytes) {}
    void need(size_t n, const char* field) const {
        GSZ_CHECK(bytes_.size() - pos_ >= n, GSZ_STATUS_CORRUPT,
                  "archive: truncated header (%zu bytes end inside %s)", bytes_.size(), field);
    }
    void skip(size_t n, const char* field) {
        need(n, field);
        pos_ += n;
    }
    uint8_t u8(const char* field) {
        need(1, field);
        return bytes_[pos_++];
    }
    template <class T>
    T fixed(const char* field) {
        need(sizeof(T), field);
        const T v = load<T>(bytes_.data() + pos_);
        pos_ += sizeof(T);
        return v;
    }
    // Minimal encodings only (no 0x80 0x00 tails), so each value has one
    // encoding and the archive stays the one encoding of its contents.
    uint64_t varint(const char* field) {
        uint64_t v = 0;
        for (int i = 0; i < 10; ++i) {
            const uint8_t b = u8(field);
            GSZ_CHECK(i < 9 || b <= 1, GSZ_STATUS_CORRUPT, "archive: %s overflows 64 bits", field);
            v |= uint64_t{b & 0x7Fu} << (7 * i);
            if (!(b & 0x80)) {
                GSZ_CHECK(b != 0 || i == 0, GSZ_STATUS_CORRUPT,
                          "archive: %s has a zero last byte (varints are written in their fewest bytes)", field);
                return v;
            }
        }
        // Unreachable: a tenth byte of 0 or 1 ends the varint, any other overflows.
        fail(GSZ_STATUS_CORRUPT, format_message("archive: %s runs over 10 bytes", field));
    }
    size_t position() const { return pos_; }

private:
    std::span<const uint8_t> bytes_;
    size_t pos_ = 0;
};

}  // namespace

const char* section_kind_name(SectionKind kind) {
    switch (kind) {
        case SectionKind::pipeline_params: return "pipeline_params";
        case SectionKind::huffman_codebook: return "huffman_codebook";
        case SectionKind::huffman_chunks: return "huffman_chunks";
        case SectionKind::huffman_bitstream: return "huffman_bitstream";
        case SectionKind::outlier_values: return "outlier_values";
        case SectionKind::zstd_values: return "zstd_values";
        case SectionKind::fast_block_codes: return "fast_block_codes";
        case SectionKind::fast_block_mids: return "fast_block_mids";
        case SectionKind::fast_lead_codes: return "fast_lead_codes";
        case SectionKind::fast_mid_bytes: return "fast_mid_bytes";
        case SectionKind::interp_anchors: return "interp_anchors";
        case SectionKind::outlier_indices: return "outlier_indices";
        case SectionKind::run_tokens: return "run_tokens";
        case SectionKind::ans_tables: return "ans_tables";
        case SectionKind::ans_lanes: return "ans_lanes";
        case SectionKind::ans_stream: return "ans_stream";
        case SectionKind::interp_tiles: return "interp_tiles";
        case SectionKind::fill_mask: return "fill_mask";
    }
    return "unknown";
}

uint64_t Header::num_elements() const {
    const uint32_t r = rank <= GSZ_MAX_RANK ? rank : GSZ_MAX_RANK;
    uint64_t n = 1;
    for (uint32_t i = 0; i < r; ++i)
        GSZ_CHECK(!__builtin_mul_overflow(n, dims[i], &n), GSZ_STATUS_INTERNAL,
                  "num_elements called on a header whose dims overflow 64 bits");
    return n;
}

uint64_t checksum64(std::span<const uint8_t> bytes) {
    // XXH64 accepts (NULL, 0), but a valid pointer keeps sanitizers quiet.
    static const uint8_t empty = 0;
    return XXH64(bytes.empty() ? &empty : bytes.data(), bytes.size(), 0);
}

bool Archive::has(SectionKind kind) const {
    for (const auto& s : sections)
        if (s.kind == kind) return true;
    return false;
}

std::span<const uint8_t> Archive::section(SectionKind kind) const {
    for (const auto& s : sections)
        if (s.kind == kind) return s.bytes;
    fail(GSZ_STATUS_CORRUPT, format_message("archive: missing section %s", section_kind_name(kind)));
}

void header_validate(const Header& h, gsz_status status) {
    GSZ_CHECK(h.dtype == GSZ_DTYPE_F32 || h.dtype == GSZ_DTYPE_F64, status,
              "header: dtype %d is not f32 (1) or f64 (2)", static_cast<int>(h.dtype));
    GSZ_CHECK(h.rank >= 1 && h.rank <= GSZ_MAX_RANK, status, "header: rank %u is not in 1..%d", h.rank,
              GSZ_MAX_RANK);
    uint64_t n = 1;
    for (uint32_t i = 0; i < GSZ_MAX_RANK; ++i) {
        if (i < h.rank) {
            GSZ_CHECK(h.dims[i] >= 1, status, "header: dims[%u] is 0", i);
            GSZ_CHECK(!__builtin_mul_overflow(n, h.dims[i], &n), status,
                      "header: product of dims overflows 64 bits (dims[%u] = %llu)", i, ull(h.dims[i]));
        } else {
            GSZ_CHECK(h.dims[i] == 1, status, "header: dims[%u] = %llu beyond rank %u (must be 1)", i,
                      ull(h.dims[i]), h.rank);
        }
    }
    GSZ_CHECK(n <= kMaxArrayBytes / h.element_bytes(), status,
              "header: array of %llu elements x %zu bytes exceeds the 2^62-byte limit", ull(n),
              h.element_bytes());
    GSZ_CHECK(h.error_mode == GSZ_ERROR_ABS || h.error_mode == GSZ_ERROR_REL, status,
              "header: error_mode %d is not abs (1) or rel (2)", static_cast<int>(h.error_mode));
    if (h.component_dim >= 0) {
        const auto k = static_cast<uint32_t>(h.component_dim);
        GSZ_CHECK(h.format_version >= 6, status, "header: components (flag 0x1) need format version 6, not %u",
                  h.format_version);
        GSZ_CHECK(h.pipeline == GSZ_PIPELINE_LORENZO || h.pipeline == GSZ_PIPELINE_INTERP ||
                      h.pipeline == GSZ_PIPELINE_FAST,
                  status, "header: components with pipeline %d (only lorenzo, interp and fast run on them)",
                  static_cast<int>(h.pipeline));
        GSZ_CHECK(k < h.rank && h.dims[k] >= 2 && h.dims[k] <= kMaxComponentExtent, status,
                  "header: component dim %u is not a dim of extent 2..%llu", k, ull(kMaxComponentExtent));
        bool other = false;
        for (uint32_t d = 0; d < h.rank; ++d) other = other || (d != k && h.dims[d] > 1);
        GSZ_CHECK(other, status, "header: component dim %u is the only dim of extent > 1", k);
    } else {
        GSZ_CHECK(h.component_dim == -1, status, "header: component dim %d", h.component_dim);
    }
    GSZ_CHECK(std::isfinite(h.error_bound) && h.error_bound >= 0, status,
              "header: error_bound %g is not finite and >= 0", h.error_bound);
    GSZ_CHECK(std::isfinite(h.error_bound_abs) && h.error_bound_abs >= 0, status,
              "header: error_bound_abs %g is not finite and >= 0", h.error_bound_abs);
    const bool both_nan = std::isnan(h.value_min) && std::isnan(h.value_max);
    const bool finite_range =
        std::isfinite(h.value_min) && std::isfinite(h.value_max) && h.value_min <= h.value_max;
    GSZ_CHECK(both_nan || finite_range, status,
              "header: value range [%g, %g] is neither both NaN nor finite with min <= max", h.value_min,
              h.value_max);
}

namespace {

// The header's enumerated bytes (both containers), after its checksum.
void check_codes(uint8_t dtype, uint8_t mode, uint8_t pipeline) {
    GSZ_CHECK(dtype == GSZ_DTYPE_F32 || dtype == GSZ_DTYPE_F64, GSZ_STATUS_CORRUPT,
              "archive: dtype %u is not f32 (1) or f64 (2)", dtype);
    GSZ_CHECK(mode == GSZ_ERROR_ABS || mode == GSZ_ERROR_REL, GSZ_STATUS_CORRUPT,
              "archive: error_mode %u is not abs (1) or rel (2)", mode);
    GSZ_CHECK(pipeline == GSZ_PIPELINE_STORE || pipeline == GSZ_PIPELINE_LORENZO || pipeline == GSZ_PIPELINE_FAST ||
                  pipeline == GSZ_PIPELINE_INTERP,
              GSZ_STATUS_UNSUPPORTED,
              "archive: pipeline %u is not supported (this gsz knows store (0), lorenzo (1), fast (2) and interp (3))", pipeline);
}

std::vector<uint8_t> write_fixed(const Header& h, std::span<const SectionData> sections) {
    const size_t table_bytes = sections.size() * kSectionEntryBytes;
    size_t total = kHeaderBytes + table_bytes;
    for (const auto& s : sections) {
        GSZ_CHECK(s.bytes.size() <= SIZE_MAX - total, GSZ_STATUS_INTERNAL, "archive_write: archive size overflows");
        total += s.bytes.size();
    }

    std::vector<uint8_t> out(total, 0);
    uint8_t* p = out.data();
    std::memcpy(p + kOffMagic, kMagic, sizeof kMagic);
    p[kOffVersion] = h.format_version;
    p[kOffDtype] = static_cast<uint8_t>(h.dtype);
    p[kOffRank] = static_cast<uint8_t>(h.rank);
    p[kOffErrorMode] = static_cast<uint8_t>(h.error_mode);
    p[kOffPipeline] = static_cast<uint8_t>(h.pipeline);
    for (int i = 0; i < GSZ_MAX_RANK; ++i) store<uint64_t>(p + kOffDims + 8 * i, h.dims[i]);
    store<double>(p + kOffErrorBound, h.error_bound);
    store<double>(p + kOffErrorBoundAbs, h.error_bound_abs);
    store<double>(p + kOffValueMin, h.value_min);
    store<double>(p + kOffValueMax, h.value_max);
    store<uint32_t>(p + kOffNumSections, static_cast<uint32_t>(sections.size()));
    // Flag 0x1 and its dim; the other flags and reserved bytes stay zero.
    store<uint32_t>(p + kOffFlags, h.component_dim >= 0 ? kHeaderFlagComponents : 0);
    p[kOffComponentDim] = h.component_dim >= 0 ? static_cast<uint8_t>(h.component_dim) : 0;

    uint64_t offset = kHeaderBytes + table_bytes;
    for (size_t i = 0; i < sections.size(); ++i) {
        const auto& s = sections[i];
        uint8_t* e = p + kHeaderBytes + i * kSectionEntryBytes;
        store<uint32_t>(e + 0, static_cast<uint32_t>(s.kind));
        store<uint32_t>(e + 4, 0);
        store<uint64_t>(e + 8, offset);
        store<uint64_t>(e + 16, s.bytes.size());
        store<uint64_t>(e + 24, checksum64(s.bytes));
        if (!s.bytes.empty()) std::memcpy(p + offset, s.bytes.data(), s.bytes.size());
        offset += s.bytes.size();
    }
    store<uint64_t>(p + kOffHeaderChecksum,
                    header_checksum({p, kHeaderBytes}, {p + kHeaderBytes, table_bytes}));
    return out;
}

// Version >= 8 (FORMAT.md "Structure"): the fixed prefix, the component dim
// with flag 0x1, the dims as varints, four f64, the table as kind bytes and
// varint lengths, the payloads' checksum, the header's checksum.
std::vector<uint8_t> write_compact(const Header& h, std::span<const SectionData> sections) {
    std::vector<uint8_t> out;
    out.reserve(kMaxCompactHeaderBytes);
    out.insert(out.end(), kMagic, kMagic + sizeof kMagic);
    out.push_back(h.format_version);
    out.push_back(static_cast<uint8_t>(h.dtype));
    out.push_back(static_cast<uint8_t>(h.rank));
    out.push_back(static_cast<uint8_t>(h.error_mode));
    out.push_back(static_cast<uint8_t>(h.pipeline));
    out.push_back(static_cast<uint8_t>(h.component_dim >= 0 ? kHeaderFlagComponents : 0));
    if (h.component_dim >= 0) out.push_back(static_cast<uint8_t>(h.component_dim));
    for (uint32_t i = 0; i < h.rank; ++i) put_varint(out, h.dims[i]);
    for (const double v : {h.error_bound, h.error_bound_abs, h.value_min, h.value_max}) {
        uint8_t b[8];
        store<double>(b, v);
        out.insert(out.end(), b, b + 8);
    }
    out.push_back(static_cast<uint8_t>(sections.size()));
    size_t payload_bytes = 0;
    for (const auto& s : sections) {
        out.push_back(static_cast<uint8_t>(s.kind));
        put_varint(out, s.bytes.size());
        GSZ_CHECK(s.bytes.size() <= SIZE_MAX - kMaxCompactHeaderBytes - payload_bytes, GSZ_STATUS_INTERNAL,
                  "archive_write: archive size overflows");
        payload_bytes += s.bytes.size();
    }
    const size_t payload_checksum_at = out.size();
    const size_t header_bytes = payload_checksum_at + 16;
    out.resize(header_bytes + payload_bytes);
    size_t at = header_bytes;
    for (const auto& s : sections) {
        if (!s.bytes.empty()) std::memcpy(out.data() + at, s.bytes.data(), s.bytes.size());
        at += s.bytes.size();
    }
    store<uint64_t>(out.data() + payload_checksum_at, checksum64({out.data() + header_bytes, payload_bytes}));
    store<uint64_t>(out.data() + payload_checksum_at + 8, checksum64({out.data(), payload_checksum_at + 8}));
    return out;
}

// Version >= 8: magic and version already checked.  The header is read
// field by field (every read bounded), then its checksum, then what the
// fields mean, then the payloads' extent and checksum.
Archive parse_compact(std::span<const uint8_t> bytes) {
    const size_t size = bytes.size();
    HeaderCursor in(bytes);
    in.need(kCompactPrefixBytes, "the fixed fields");
    const uint8_t* p = bytes.data();
    const uint8_t version = p[kOffVersion], dtype = p[kOffDtype], rank = p[kOffRank], mode = p[kOffErrorMode],
                  pipeline = p[kOffPipeline], flags = p[kCompactPrefixBytes - 1];
    in.skip(kCompactPrefixBytes, "the fixed fields");
    // The rank says how many dims follow: out of range, nothing after it can be read.
    GSZ_CHECK(rank >= 1 && rank <= GSZ_MAX_RANK, GSZ_STATUS_CORRUPT, "archive: rank %u is not in 1..%d", rank,
              GSZ_MAX_RANK);
    const int component_dim = (flags & kHeaderFlagComponents) ? in.u8("component_dim") : -1;
    uint64_t dims[GSZ_MAX_RANK] = {1, 1, 1, 1};
    for (uint32_t i = 0; i < rank; ++i) dims[i] = in.varint("dims");
    const double error_bound = in.fixed<double>("error_bound");
    const double error_bound_abs = in.fixed<double>("error_bound_abs");
    const double value_min = in.fixed<double>("value_min");
    const double value_max = in.fixed<double>("value_max");
    const uint32_t num_sections = in.u8("num_sections");
    GSZ_CHECK(num_sections >= 1 && num_sections <= kMaxSections, GSZ_STATUS_CORRUPT,
              "archive: num_sections %u is not in 1..%u", num_sections, kMaxSections);
    uint8_t kinds[kMaxSections];
    uint64_t lengths[kMaxSections];
    for (uint32_t i = 0; i < num_sections; ++i) {
        kinds[i] = in.u8("the section table");
        lengths[i] = in.varint("a section length");
    }
    const uint64_t payload_checksum = in.fixed<uint64_t>("payload_checksum");
    const size_t covered = in.position();
    const uint64_t stored_checksum = in.fixed<uint64_t>("header_checksum");
    const uint64_t actual_checksum = checksum64(bytes.first(covered));
    GSZ_CHECK(stored_checksum == actual_checksum, GSZ_STATUS_CORRUPT,
              "archive: header checksum mismatch (stored %016llx, computed %016llx)", ull(stored_checksum),
              ull(actual_checksum));

    GSZ_CHECK((flags & ~kHeaderFlagComponents) == 0, GSZ_STATUS_CORRUPT,
              "archive: header flags 0x%02x (format version %u knows only 0x1, components)", flags, version);
    check_codes(dtype, mode, pipeline);

    Archive a;
    Header& h = a.header;
    h.format_version = version;
    h.dtype = static_cast<gsz_dtype>(dtype);
    h.rank = rank;
    for (int i = 0; i < GSZ_MAX_RANK; ++i) h.dims[i] = dims[i];
    h.error_mode = static_cast<gsz_error_mode>(mode);
    h.pipeline = static_cast<gsz_pipeline>(pipeline);
    h.error_bound = error_bound;
    h.error_bound_abs = error_bound_abs;
    h.value_min = value_min;
    h.value_max = value_max;
    h.component_dim = component_dim;
    header_validate(h, GSZ_STATUS_CORRUPT);

    // Payloads follow the header back to back; their lengths must add up to
    // exactly what is left.  `expected` never exceeds `size`.
    a.sections.reserve(num_sections);
    uint64_t expected = in.position();
    uint64_t seen = 0;  // bit per kind
    for (uint32_t i = 0; i < num_sections; ++i) {
        const uint32_t kind = kinds[i];
        GSZ_CHECK(kind_known(kind, version), GSZ_STATUS_CORRUPT, "archive: section %u has unknown kind %u", i, kind);
        const auto sk = static_cast<SectionKind>(kind);
        const char* name = section_kind_name(sk);
        GSZ_CHECK(!(seen & (uint64_t{1} << kind)), GSZ_STATUS_CORRUPT, "archive: section %s appears twice", name);
        seen |= uint64_t{1} << kind;
        GSZ_CHECK(lengths[i] <= size - expected, GSZ_STATUS_CORRUPT,
                  "archive: section %s (offset %llu, length %llu) runs past the archive end %zu", name,
                  ull(expected), ull(lengths[i]), size);
        a.sections.push_back({sk, bytes.subspan(static_cast<size_t>(expected), static_cast<size_t>(lengths[i]))});
        expected += lengths[i];
    }
    GSZ_CHECK(expected == size, GSZ_STATUS_CORRUPT,
              "archive: %llu trailing bytes after the last section (ends at %llu, archive is %zu bytes)",
              ull(size - expected), ull(expected), size);
    const uint64_t actual = checksum64(bytes.subspan(in.position()));
    GSZ_CHECK(payload_checksum == actual, GSZ_STATUS_CORRUPT,
              "archive: payload checksum mismatch (stored %016llx, computed %016llx)", ull(payload_checksum),
              ull(actual));
    return a;
}

// Versions 1..7: magic and version already checked.
Archive parse_fixed(std::span<const uint8_t> bytes) {
    const size_t size = bytes.size();
    GSZ_CHECK(size >= kHeaderBytes, GSZ_STATUS_CORRUPT, "archive: truncated header (%zu bytes, need %zu)", size,
              kHeaderBytes);
    const uint8_t* p = bytes.data();

    // The header checksum covers the table, so its extent is checked first.
    const uint32_t num_sections = load<uint32_t>(p + kOffNumSections);
    GSZ_CHECK(num_sections >= 1 && num_sections <= kMaxSections, GSZ_STATUS_CORRUPT,
              "archive: num_sections %u is not in 1..%u", num_sections, kMaxSections);
    const size_t table_bytes = size_t{num_sections} * kSectionEntryBytes;
    GSZ_CHECK(size - kHeaderBytes >= table_bytes, GSZ_STATUS_CORRUPT,
              "archive: section table truncated (%u entries need %zu bytes, %zu left after the header)",
              num_sections, table_bytes, size - kHeaderBytes);
    const uint8_t* table = p + kHeaderBytes;
    const uint64_t stored_checksum = load<uint64_t>(p + kOffHeaderChecksum);
    const uint64_t actual_checksum = header_checksum({p, kHeaderBytes}, {table, table_bytes});
    GSZ_CHECK(stored_checksum == actual_checksum, GSZ_STATUS_CORRUPT,
              "archive: header checksum mismatch (stored %016llx, computed %016llx)", ull(stored_checksum),
              ull(actual_checksum));

    const uint32_t flags = load<uint32_t>(p + kOffFlags);
    const uint32_t known_flags = p[kOffVersion] >= 6 ? kHeaderFlagComponents : 0;
    GSZ_CHECK((flags & ~known_flags) == 0, GSZ_STATUS_CORRUPT,
              "archive: header flags 0x%08x (format version %u knows %s)", flags, p[kOffVersion],
              known_flags ? "only 0x1, components" : "none: must be zero");
    GSZ_CHECK((flags & kHeaderFlagComponents) || p[kOffComponentDim] == 0, GSZ_STATUS_CORRUPT,
              "archive: header byte %zu is 0x%02x without flag 0x1, must be zero", kOffComponentDim,
              p[kOffComponentDim]);
    for (size_t i = kOffReserved; i < kOffHeaderChecksum; ++i)
        GSZ_CHECK(p[i] == 0, GSZ_STATUS_CORRUPT, "archive: reserved header byte %zu is 0x%02x, must be zero", i,
                  p[i]);
    const uint8_t dtype = p[kOffDtype], mode = p[kOffErrorMode], pipeline = p[kOffPipeline];
    check_codes(dtype, mode, pipeline);

    Archive a;
    Header& h = a.header;
    h.format_version = p[kOffVersion];
    h.dtype = static_cast<gsz_dtype>(dtype);
    h.rank = p[kOffRank];
    for (int i = 0; i < GSZ_MAX_RANK; ++i) h.dims[i] = load<uint64_t>(p + kOffDims + 8 * i);
    h.error_mode = static_cast<gsz_error_mode>(mode);
    h.pipeline = static_cast<gsz_pipeline>(pipeline);
    h.error_bound = load<double>(p + kOffErrorBound);
    h.error_bound_abs = load<double>(p + kOffErrorBoundAbs);
    h.value_min = load<double>(p + kOffValueMin);
    h.value_max = load<double>(p + kOffValueMax);
    h.component_dim = (flags & kHeaderFlagComponents) ? p[kOffComponentDim] : -1;
    header_validate(h, GSZ_STATUS_CORRUPT);

    // Payloads are contiguous in table order, so each offset has exactly one
    // legal value.  `expected` never exceeds `size`, so nothing below overflows.
    a.sections.reserve(num_sections);
    uint64_t expected = kHeaderBytes + table_bytes;
    uint64_t seen = 0;  // bit per kind
    for (uint32_t i = 0; i < num_sections; ++i) {
        const uint8_t* e = table + size_t{i} * kSectionEntryBytes;
        const uint32_t kind = load<uint32_t>(e + 0);
        const uint32_t reserved = load<uint32_t>(e + 4);
        const uint64_t offset = load<uint64_t>(e + 8);
        const uint64_t length = load<uint64_t>(e + 16);
        const uint64_t checksum = load<uint64_t>(e + 24);
        GSZ_CHECK(kind_known(kind, h.format_version), GSZ_STATUS_CORRUPT, "archive: section %u has unknown kind %u", i, kind);
        const auto sk = static_cast<SectionKind>(kind);
        const char* name = section_kind_name(sk);
        GSZ_CHECK(!(seen & (uint64_t{1} << kind)), GSZ_STATUS_CORRUPT, "archive: section %s appears twice", name);
        seen |= uint64_t{1} << kind;
        GSZ_CHECK(reserved == 0, GSZ_STATUS_CORRUPT, "archive: section %s reserved field 0x%08x must be zero",
                  name, reserved);
        GSZ_CHECK(offset == expected, GSZ_STATUS_CORRUPT,
                  "archive: section %s offset %llu, expected %llu (payloads are contiguous)", name, ull(offset),
                  ull(expected));
        GSZ_CHECK(length <= size - offset, GSZ_STATUS_CORRUPT,
                  "archive: section %s (offset %llu, length %llu) runs past the archive end %zu", name,
                  ull(offset), ull(length), size);
        const std::span<const uint8_t> payload = bytes.subspan(static_cast<size_t>(offset), static_cast<size_t>(length));
        const uint64_t actual = checksum64(payload);
        GSZ_CHECK(checksum == actual, GSZ_STATUS_CORRUPT,
                  "archive: section %s checksum mismatch (stored %016llx, computed %016llx)", name, ull(checksum),
                  ull(actual));
        a.sections.push_back({sk, payload});
        expected = offset + length;
    }
    GSZ_CHECK(expected == size, GSZ_STATUS_CORRUPT,
              "archive: %llu trailing bytes after the last section (ends at %llu, archive is %zu bytes)",
              ull(size - expected), ull(expected), size);
    return a;
}


}  // namespace

std::vector<uint8_t> archive_write(const Header& h, std::span<const SectionData> sections) {
    // The pipeline builds the header from validated parameters: a bad one is a bug.
    // Every version this gsz reads is written in its own container, so a
    // parsed archive of any of them writes back unchanged; the pipelines'
    // headers carry kFormatVersion.
    GSZ_CHECK(h.format_version >= kOldestFormatVersion && h.format_version <= kFormatVersion, GSZ_STATUS_INTERNAL,
              "archive_write: format_version %u, this gsz writes versions %u to %u", h.format_version,
              kOldestFormatVersion, kFormatVersion);
    GSZ_CHECK(h.pipeline == GSZ_PIPELINE_STORE || h.pipeline == GSZ_PIPELINE_LORENZO || h.pipeline == GSZ_PIPELINE_FAST ||
                  h.pipeline == GSZ_PIPELINE_INTERP, GSZ_STATUS_INTERNAL,
              "archive_write: unknown pipeline %d", static_cast<int>(h.pipeline));
    header_validate(h, GSZ_STATUS_INTERNAL);
    GSZ_CHECK(!sections.empty() && sections.size() <= kMaxSections, GSZ_STATUS_INTERNAL,
              "archive_write: %zu sections, must be 1..%u", sections.size(), kMaxSections);
    uint64_t seen = 0;  // bit per kind
    for (const auto& s : sections) {
        const auto k = static_cast<uint32_t>(s.kind);
        GSZ_CHECK(kind_known(k, h.format_version), GSZ_STATUS_INTERNAL, "archive_write: unknown section kind %u", k);
        GSZ_CHECK(!(seen & (uint64_t{1} << k)), GSZ_STATUS_INTERNAL, "archive_write: section %s given twice",
                  section_kind_name(s.kind));
        seen |= uint64_t{1} << k;
    }
    return h.format_version >= kFirstCompactVersion ? write_compact(h, sections) : write_fixed(h, sections);
}

Archive archive_parse(std::span<const uint8_t> bytes) {
    GSZ_CHECK(bytes.size() > kOffVersion, GSZ_STATUS_CORRUPT, "archive: truncated header (%zu bytes)", bytes.size());
    const uint8_t* p = bytes.data();
    GSZ_CHECK(std::memcmp(p + kOffMagic, kMagic, sizeof kMagic) == 0, GSZ_STATUS_CORRUPT,
              "archive: not a gsz archive (bad magic)");
    // Before the checksum: a future version may hash differently, and its
    // reader deserves "unsupported version", not "corrupt".
    GSZ_CHECK(p[kOffVersion] >= kOldestFormatVersion && p[kOffVersion] <= kFormatVersion, GSZ_STATUS_UNSUPPORTED,
              "archive format version %u is not supported (this gsz reads versions %u to %u)", p[kOffVersion],
              kOldestFormatVersion, kFormatVersion);
    return p[kOffVersion] >= kFirstCompactVersion ? parse_compact(bytes) : parse_fixed(bytes);
}

}  // namespace gsz::format
