// The fast pipeline's archive sections, shared by the CPU and CUDA recipes so
// both write and read exactly the same bytes.
#pragma once

#include "format/archive.hpp"
#include "predict/fast/fast.hpp"
#include "runtime/byte_io.hpp"

#include <gsz/gsz.h>

#include <cstdint>
#include <span>
#include <vector>

namespace gsz::pipeline {

struct FastParams {
    uint32_t block_size = predict::kFastDefaultBlock;
    uint64_t num_blocks = 0;
    uint64_t num_constant = 0;   // informational (gsz info); the decoder recounts
    uint64_t num_raw = 0;

    void write(ByteWriter& out) const;
    static FastParams read(std::span<const uint8_t> bytes);  // throws GSZ_STATUS_CORRUPT
};

// The block size a call uses (params.block_size, 0 = the default).
inline uint32_t fast_block_size(const gsz_params& params) {
    return params.block_size ? params.block_size : predict::kFastDefaultBlock;
}

// Serializes params and the four streams into an archive.
std::vector<uint8_t> fast_assemble(const format::Header& header, const FastParams& params,
                                   std::span<const uint8_t> codes, std::span<const uint8_t> mids,
                                   std::span<const uint8_t> leads, std::span<const uint8_t> bytes);

// A validated fast archive: params checked against the header, stream views
// checked for the sizes that do not need decoding (the decoders check the rest).
struct FastDecodePlan {
    FastParams params;
    predict::FastLayout layout;
    predict::FastStreamsView streams;
};

FastDecodePlan fast_plan_decode(const format::Archive& archive);

}  // namespace gsz::pipeline
