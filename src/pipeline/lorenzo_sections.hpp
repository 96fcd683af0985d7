// The lorenzo pipeline's archive sections, shared by the CPU and CUDA
// recipes so both write and read exactly the same bytes.
#pragma once

#include "encode/huffman.hpp"
#include "pipeline/code_stage.hpp"
#include "format/archive.hpp"
#include "predict/fill/fill_mask.hpp"
#include "predict/lorenzo/lorenzo.hpp"
#include "runtime/byte_io.hpp"

#include <gsz/gsz.h>

#include <cstdint>
#include <span>
#include <vector>

namespace gsz::pipeline {

// pipeline_params: u32 radius, u32[3] chunk, u32 rank, u32 Huffman chunk
// symbols, u64 outliers; from format version 15 then u8 flags (0x1: a fill
// value, whose u64 bits follow; its mask is section fill_mask).
inline constexpr uint32_t kLorenzoFlagFill = 0x1;

struct LorenzoParams {
    uint32_t radius = 0;
    uint32_t chunk[3] = {1, 1, 1};
    uint32_t lorenzo_rank = 1;
    uint32_t huffman_chunk_symbols = 0;
    uint64_t num_outliers = 0;
    predict::FillValue fill;   // on: its points were coded as fill.stand_in and decode to its bits

    void write(ByteWriter& out) const;   // the current version's layout
    // Throws GSZ_STATUS_CORRUPT; `header`: the archive's (version, dtype).
    static LorenzoParams read(std::span<const uint8_t> bytes, const format::Header& header);
};

// Serializes the lorenzo sections (params, the code stage's, outliers, the
// fill mask where params.fill is on) into an archive.
template <class T>
std::vector<uint8_t> lorenzo_assemble(const format::Header& header, uint32_t radius,
                                      const predict::LorenzoLayout& layout, const EncodedCodes& codes,
                                      std::span<const T> outliers, const predict::FillValue& fill = {},
                                      const predict::FillMask& fill_mask = {});

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
    predict::FillMask fill_mask;   // where params.fill is on
};

template <class T>
LorenzoDecodePlan<T> lorenzo_plan_decode(const format::Archive& archive);

}  // namespace gsz::pipeline
