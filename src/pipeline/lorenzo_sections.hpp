// The lorenzo pipeline's archive sections, shared by the CPU and CUDA
// recipes so both write and read exactly the same bytes.
#pragma once

#include "encode/huffman.hpp"
#include "pipeline/code_stage.hpp"
#include "format/archive.hpp"
#include "predict/lorenzo/lorenzo.hpp"
#include "runtime/byte_io.hpp"

#include <gsz/gsz.h>

#include <cstdint>
#include <span>
#include <vector>

namespace gsz::pipeline {

struct LorenzoParams {
    uint32_t radius = 0;
    uint32_t chunk[3] = {1, 1, 1};
    uint32_t lorenzo_rank = 1;
    uint32_t huffman_chunk_symbols = 0;
    uint64_t num_outliers = 0;

    void write(ByteWriter& out) const;
    static LorenzoParams read(std::span<const uint8_t> bytes);  // throws GSZ_STATUS_CORRUPT
};

// Serializes the lorenzo sections (params, the code stage's, outliers) into an archive.
template <class T>
std::vector<uint8_t> lorenzo_assemble(const format::Header& header, uint32_t radius,
                                      const predict::LorenzoLayout& layout, const EncodedCodes& codes,
                                      std::span<const T> outliers);

// The rANS contexts of lorenzo codes: no levels.
inline encode::AnsContextShape lorenzo_ans_shape() { return {}; }

// Everything a decoder needs, validated against the header: no allocation is
// sized by archive bytes before the checks that bound it.
template <class T>
struct LorenzoDecodePlan {
    LorenzoParams params;
    predict::LorenzoLayout layout;
    predict::QuantParams quant;
    CodeStagePlan codes;
    std::vector<T> outliers;   // aligned copy of the outlier_values section
};

template <class T>
LorenzoDecodePlan<T> lorenzo_plan_decode(const format::Archive& archive);

}  // namespace gsz::pipeline
