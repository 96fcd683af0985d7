// The `fast` predictor (SZx/cuSZx): 1-D blocks over the flattened array, each
// stored as one value (constant), as truncated differences from its mid value
// with leading-byte coding, or raw.  Per-element math: fast_math.hpp.
//
// Streams (one archive section each, docs/FORMAT.md):
//   codes  one byte per block: kFastConstant, the kept bit length L, or kFastRaw
//   mids   one value per block (0 for raw blocks)
//   leads  for each non-constant block, ceil(len/4) bytes of 2-bit lead codes
//          (value i of the block in bits 2(i%4)..2(i%4)+1 of byte i/4)
//   bytes  for each value of each non-constant block in order, its B - lead
//          explicit bytes, most significant first
#pragma once

#include "predict/fast/fast_math.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace gsz::predict {

inline constexpr uint32_t kFastDefaultBlock = 128;

// Block sizes a valid archive may use.
inline bool fast_block_size_valid(uint32_t block) { return block == 64 || block == 128 || block == 256; }

struct FastLayout {
    uint32_t block = kFastDefaultBlock;
    uint64_t num_elements = 0;
    uint64_t num_blocks = 0;

    static FastLayout make(uint64_t num_elements, uint32_t block) {
        return {block, num_elements, (num_elements + block - 1) / block};
    }
    GSZ_HD uint32_t block_len(uint64_t b) const {
        const uint64_t left = num_elements - b * block;
        return static_cast<uint32_t>(left < block ? left : block);
    }
    GSZ_HD static uint32_t lead_bytes(uint32_t len) { return (len + 3) / 4; }
};

template <class T>
struct FastEncoded {
    std::vector<uint8_t> codes;
    std::vector<T> mids;
    std::vector<uint8_t> leads;
    std::vector<uint8_t> bytes;
    uint64_t num_constant = 0, num_raw = 0;
};

// Views of the four streams as read from an archive (any alignment).
struct FastStreamsView {
    std::span<const uint8_t> codes, mids, leads, bytes;
};

template <class T>
void fast_encode_cpu(const T* data, const FastLayout& layout, double eb, FastEncoded<T>& out, int num_threads);

// Validates the streams against the layout (sizes, codes, lead codes, byte
// count) and decodes; throws GSZ_STATUS_CORRUPT naming the first problem.
template <class T>
void fast_decode_cpu(const FastStreamsView& in, const FastLayout& layout, T* out, int num_threads);

}  // namespace gsz::predict
