// The gsz archive container: a fixed header, a section table and the sections.
// This layer knows bytes, not predictors: it validates lengths, offsets,
// versions and checksums, and hands out views of section payloads.
// Layout and every field are specified in docs/FORMAT.md.
#pragma once

#include <gsz/gsz.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace gsz::format {

inline constexpr uint8_t kFormatVersion = 15;       // what this gsz writes
inline constexpr uint8_t kOldestFormatVersion = 1;  // the oldest it reads (docs/FORMAT.md, "Versions")
inline constexpr uint32_t kMaxSections = 64;

// Versions 1..7: the fixed container, a 128-byte header and 32-byte table
// entries, a checksum per section.
inline constexpr size_t kHeaderBytes = 128;
inline constexpr size_t kSectionEntryBytes = 32;

// Version >= 8: the compact container (FORMAT.md "Structure"), the header's
// fields and the table's lengths as varints, one checksum over the payloads:
// 60 to 90 bytes before the payloads instead of 128 + 32 per section, which
// is a tenth of a small field's archive.
inline constexpr uint8_t kFirstCompactVersion = 8;
// Fixed bytes at the start: magic, version, dtype, rank, error_mode, pipeline, flags.
inline constexpr size_t kCompactPrefixBytes = 9;
// The longest compact header + table: prefix, component dim, 4 dims of 10
// varint bytes, 4 f64, the section count, 64 entries of a kind byte and a
// 10-byte length, 2 checksums.
inline constexpr size_t kMaxCompactHeaderBytes = kCompactPrefixBytes + 1 + 4 * 10 + 32 + 1 + kMaxSections * 11 + 16;

enum class SectionKind : uint32_t {
    pipeline_params = 1,    // pipeline-specific parameters (layout per pipeline, FORMAT.md)
    huffman_codebook = 2,   // code lengths of the used symbols
    huffman_chunks = 3,     // per-chunk bit counts of the Huffman bitstream
    huffman_bitstream = 4,  // the encoded quant-codes, 32-bit words
    outlier_values = 5,     // exact original values of the outliers, in stream order
    zstd_values = 6,        // lossless pipeline: zstd frame of the raw values
    fast_block_codes = 7,   // fast: one byte per block (constant / kept bits / raw)
    fast_block_mids = 8,    // fast: each block's mid value
    fast_lead_codes = 9,    // fast: 2-bit lead codes of the non-constant blocks
    fast_mid_bytes = 10,    // fast: explicit bytes of the non-constant blocks
    interp_anchors = 11,    // interp: exact values of the anchor grid
    outlier_indices = 12,   // interp: raster indices of the outliers (u64, increasing)
    run_tokens = 13,        // lorenzo, interp: the Huffman symbols are run tokens (lossless stage "runs")
    ans_tables = 14,        // lorenzo, interp (version >= 3): rANS lane length and frequency tables ("ans")
    ans_lanes = 15,         // lorenzo, interp (version >= 3): final state and word count per rANS lane (packed from 7)
    ans_stream = 16,        // lorenzo, interp (version >= 3): the lanes' 16-bit words
    interp_tiles = 17,      // interp (version >= 10): one bit per tile, 1 = Lorenzo-coded
    fill_mask = 18,         // interp (version >= 13): where the fill value is (predict/fill/fill_mask.hpp)
};

const char* section_kind_name(SectionKind kind);

struct Header {
    uint8_t format_version = kFormatVersion;
    gsz_dtype dtype = GSZ_DTYPE_F32;
    uint32_t rank = 1;
    uint64_t dims[GSZ_MAX_RANK] = {1, 1, 1, 1};  // fastest first; entries >= rank are 1
    gsz_error_mode error_mode = GSZ_ERROR_ABS;
    gsz_pipeline pipeline = GSZ_PIPELINE_LORENZO;
    double error_bound = 0;       // as given by the user
    double error_bound_abs = 0;   // absolute bound applied
    double value_min = 0;         // finite range of the input (NaN when none)
    double value_max = 0;
    // Version >= 6, lorenzo and interp: the dim whose 2..kMaxComponentExtent
    // entries are separate components (x, y, z of a particle, say); the
    // pipeline ran on them stored one after another (pipeline/components.hpp).
    // -1: none (header flag 0x1 clear).
    int32_t component_dim = -1;

    uint64_t num_elements() const;  // product of dims (validated not to overflow)
    size_t element_bytes() const { return dtype == GSZ_DTYPE_F64 ? 8 : 4; }
};

// The largest extent a component dim may have (header flag 0x1).
inline constexpr uint64_t kMaxComponentExtent = 8;
inline constexpr uint32_t kHeaderFlagComponents = 0x1;

struct SectionData {          // what a writer hands in
    SectionKind kind;
    std::span<const uint8_t> bytes;
};

struct Section {              // what a reader hands out: a view into the archive
    SectionKind kind;
    std::span<const uint8_t> bytes;
};

struct Archive {
    Header header;
    std::vector<Section> sections;

    bool has(SectionKind kind) const;
    // Payload of a required section; GSZ_STATUS_CORRUPT if it is missing.
    std::span<const uint8_t> section(SectionKind kind) const;
};

// Checks that a header describes a valid array (dtype, rank, dims, bounds);
// throws gsz::Error(GSZ_STATUS_INVALID_ARGUMENT / CORRUPT) naming the field.
void header_validate(const Header& header, gsz_status status_on_error);

// Serialize header + section table + sections, with all checksums, in the
// container of header.format_version (fixed before 8, compact from 8).
std::vector<uint8_t> archive_write(const Header& header, std::span<const SectionData> sections);

// Validate everything (magic, version, header checksum, reserved fields, dims,
// section table bounds and order, section or payload checksums, no trailing bytes)
// before returning views into `bytes`.  Throws gsz::Error on any failure:
// GSZ_STATUS_UNSUPPORTED for an unknown version or pipeline, else
// GSZ_STATUS_CORRUPT.  Never allocates more than the section table.
Archive archive_parse(std::span<const uint8_t> bytes);

// XXH64 (seed 0) used for all archive checksums.
uint64_t checksum64(std::span<const uint8_t> bytes);

}  // namespace gsz::format
