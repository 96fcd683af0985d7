// The quant-codes' entropy stage, shared by the lorenzo and interp pipelines
// and by both backends: Huffman of the codes, or (lossless stage "runs")
// Huffman of run tokens (encode/run_tokens.hpp).  The choice is made on the
// host from integer histograms, so both backends make it alike.
#pragma once

#include "encode/huffman.hpp"
#include "encode/run_tokens.hpp"
#include "format/archive.hpp"
#include "runtime/byte_io.hpp"

#include <gsz/gsz.h>

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace gsz::pipeline {

// Symbols per Huffman chunk.  Each chunk costs 32 bits of table and ~16 bits
// of word alignment (~0.047 bits/value at 1024), and is decoded by one GPU
// thread: 4096-symbol chunks left an H100 with ~23K decoding threads for a
// 377 MB field (2.35 ms for the decode kernel at rel 1e-3, bench/NOTES.md).
inline constexpr uint32_t kHuffmanChunkSymbols = 1024;

// The run_tokens section (kind 13): present exactly when the Huffman symbols
// are run tokens.
struct RunTokensParams {
    uint32_t dominant = 0;                   // the code whose runs are tokens, < 2 * radius
    uint32_t classes = encode::kRunClasses;  // run tokens 2^1 .. 2^classes

    void write(ByteWriter& out) const;
    // Throws GSZ_STATUS_CORRUPT unless dominant < 2 * radius and classes is kRunClasses.
    static RunTokensParams read(std::span<const uint8_t> bytes, uint32_t radius);
};

// Whether compression should compute run tokens for these codes at all.
bool code_stage_try_runs(gsz_lossless mode, uint32_t radius, std::span<const uint64_t> code_histogram);

// The codebook to encode with: the codes' (runs absent), or the tokens' when
// `token_histogram` is given and the mode is RUNS or (AUTO) it is smaller.
struct CodeStageChoice {
    std::optional<RunTokensParams> runs;
    encode::HuffmanCodebook book;
};
CodeStageChoice code_stage_choose(gsz_lossless mode, std::span<const uint64_t> code_histogram,
                                  std::span<const uint64_t> token_histogram, uint32_t dominant);

struct EncodedCodes {
    std::optional<RunTokensParams> runs;
    encode::HuffmanCodebook book;
    encode::HuffmanStream stream;
};
EncodedCodes code_stage_encode_cpu(std::span<const uint16_t> codes, uint32_t radius, gsz_lossless mode,
                                   int num_threads);

// Section payloads of the stage, in archive order; run_tokens only with runs.
struct CodeStageSections {
    ByteWriter book, chunks, bitstream, runs;
};
void code_stage_write(const std::optional<RunTokensParams>& runs, const encode::HuffmanCodebook& book,
                      const encode::HuffmanStream& stream, CodeStageSections& out);

// What a decoder needs, validated against the archive's radius and n: the
// symbol count is n, or (runs) 1..n tokens, checked before anything of that
// size is allocated.
struct CodeStagePlan {
    std::optional<RunTokensParams> runs;
    encode::HuffmanCodebook book;
    encode::HuffmanStreamView stream;
};
CodeStagePlan code_stage_read(const format::Archive& archive, uint32_t radius, uint32_t huffman_chunk_symbols,
                              uint64_t n);

// Decodes the stream into codes[0..n).
void code_stage_decode_cpu(const CodeStagePlan& plan, uint32_t radius, std::span<uint16_t> codes, int num_threads);

// gsz_archive_info's lossless, run_dominant_code and huffman_symbols.
void describe_code_stage(const format::Archive& archive, uint32_t radius, gsz_archive_info& info);

}  // namespace gsz::pipeline
