// The quant-codes' entropy stage, shared by the lorenzo and interp pipelines
// and by both backends: Huffman of the codes, Huffman of run tokens (lossless
// stage "runs", encode/run_tokens.hpp), or context-modelled rANS (stage "ans",
// encode/ans.hpp).  The choice is made on the host from integer histograms,
// so both backends make it alike.
#pragma once

#include "encode/ans.hpp"
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

// Whether compression should compute run tokens for these codes at all (n:
// the number of codes, what the histogram sums to).
bool code_stage_try_runs(gsz_lossless mode, uint32_t radius, std::span<const uint64_t> code_histogram, uint64_t n);

// Whether compression should count the (context, symbol) histogram of "ans".
bool code_stage_try_ans(gsz_lossless mode);

// Whether it should also count the histogram with contexts from the code two
// back (AnsTables::class_lag 2): for interp's levels, where the code just
// before is of another level on every other point.
inline bool code_stage_try_class_lag2(const encode::AnsContextShape& shape) { return shape.levels > 1; }

// The context layouts whose histograms are counted where the class lag is
// chosen (code_stage_try_class_lag2): lags 1 and 2 in raster order, and in
// column strips (encode::ans_strip_width_for) where the shape has them (and
// is of the n codes) and shape.strips allows them (on: strips only).
// Lorenzo's one level keeps one histogram in raster order: its compression
// has no sample pass to add them to.
struct AnsLayoutTry {
    uint32_t class_lag = 1;
    uint32_t strip_width = 0;
};
std::vector<AnsLayoutTry> code_stage_ans_tries(const encode::AnsContextShape& shape, uint64_t n);

// The layout of `tries` (with their histograms, in order) to code in: the
// smallest estimate, but with shape.strips automatic, strips only where they
// save at least 1/kStripsMinSaving of raster order's estimate: their coders
// cost the GPU's interp a fifth to a third of its speed (H200, etopoT: run
// 87), which a percent of ratio does not buy; nor are they estimated where
// raster order's codes cost more than kStripsMaxBits bits each, where they
// save less than that.  `chosen_bits`: as ans_choose_candidate's.
inline constexpr uint32_t kStripsMinSaving = 32;
inline constexpr uint64_t kStripsMaxBits = 3;
size_t code_stage_choose_layout(std::span<const AnsLayoutTry> tries,
                                std::span<const std::span<const uint64_t>> histograms,
                                const encode::AnsContextShape& shape, uint64_t n, uint64_t* chosen_bits);

// Whether compression should count a sample of the runs first (auto on
// large inputs: run_sample_stride), to skip the full count where rANS
// clearly wins.  The sample counts the runs of the zero-error code (`radius`)
// before the codes' histogram is known (the GPU counts it in the same batch);
// it is used only where that code is the dominant one.
bool code_stage_sample_runs(gsz_lossless mode, uint32_t radius, uint64_t n);

// rANS's estimated bits for n codes from the histogram of a sample of them
// (or of all): the tables `histogram` gives, its bits scaled to n codes.
// `counted_bits`, when given, is ans_estimated_bits of the histogram under
// those tables, already known (ans_choose_class_lag's): no tables are built.
double code_stage_ans_bits(std::span<const uint64_t> ans_histogram, uint32_t levels, uint32_t class_lag, uint64_t n,
                           std::optional<uint64_t> counted_bits = std::nullopt, uint32_t strip_width = 0);

// Whether the runs' full count is skipped: the tokens' histogram estimated
// from the codes' (exact) and the sample's run digits (scaled to n codes) has
// a Huffman floor (code_stage_choose's: one bit a token, and the entropy)
// more than 16/15 of rANS's estimate (which leaves out the lanes' ~2% and the
// tables: where it holds, the full count's choice is rANS).  code_stage_choose then sees no tokens;
// where the full count would be made, it would choose rANS outright on
// every field measured (bench/NOTES.md).
bool code_stage_runs_outclassed(std::span<const uint64_t> code_histogram, uint32_t dominant,
                                const encode::RunDigits& sample_digits, uint64_t n, double ans_bits);

// What the histograms say to encode with: the codes' Huffman book (runs and
// ans absent), the tokens' (runs), or rANS tables (ans).  AUTO takes the
// smallest estimate; a histogram left empty was not computed.  The rANS
// histogram is of contexts with `ans_class_lag` (chosen before, on both lags'
// histograms: code_stage_try_class_lag2, ans_choose_class_lag).  `storage`, when
// given, is an earlier codebook whose vectors the codes' book is built in (a
// caller compressing again keeps its last choice's book for it).  `n` is the
// number of codes, what the codes' histogram sums to.
struct CodeStageChoice {
    std::optional<RunTokensParams> runs;
    encode::HuffmanCodebook book;
    std::optional<encode::AnsTables> ans;
    uint32_t ans_lane_symbols = 0;
};
CodeStageChoice code_stage_choose(gsz_lossless mode, std::span<const uint64_t> code_histogram,
                                  std::span<const uint64_t> token_histogram, uint32_t dominant,
                                  std::span<const uint64_t> ans_histogram, uint32_t ans_class_lag,
                                  uint32_t ans_levels, uint64_t n, encode::HuffmanCodebook* storage = nullptr,
                                  uint32_t ans_strip_width = 0);

// The stage's output on the host, as the archive writer takes it.
struct EncodedCodes {
    std::optional<RunTokensParams> runs;
    encode::HuffmanCodebook book;
    encode::HuffmanStream stream;          // Huffman symbols (codes or tokens)
    std::optional<encode::AnsTables> ans;  // set: rANS; book and stream unused
    encode::AnsStream ans_stream;
};
EncodedCodes code_stage_encode_cpu(std::span<const uint16_t> codes, uint32_t radius,
                                   const encode::AnsContextShape& shape, gsz_lossless mode, int num_threads);

// Section payloads of the stage; sections() lists those the choice writes,
// in archive order.
struct CodeStageSections {
    ByteWriter book, chunks, bitstream, runs, ans_tables, ans_lanes, ans_stream;
    bool is_ans = false, has_runs = false;
    std::vector<format::SectionData> sections();
};
void code_stage_write(const EncodedCodes& codes, CodeStageSections& out);

// What a decoder needs, validated against the archive's radius and n: the
// symbol count is n, or (runs) 1..n tokens, checked before anything of that
// size is allocated.
struct CodeStagePlan {
    std::optional<RunTokensParams> runs;
    encode::HuffmanCodebook book;
    encode::HuffmanStreamView stream;
    std::optional<encode::AnsStreamView> ans;  // set: rANS sections, no Huffman ones
};
CodeStagePlan code_stage_read(const format::Archive& archive, uint32_t radius, uint32_t huffman_chunk_symbols,
                              uint64_t n, const encode::AnsContextShape& ans_shape);

// Decodes the stream into codes[0..n).
void code_stage_decode_cpu(const CodeStagePlan& plan, uint32_t radius, const encode::AnsContextShape& shape,
                           std::span<uint16_t> codes, int num_threads);

// gsz_archive_info's lossless, run_dominant_code and huffman_symbols (rANS: 0).
void describe_code_stage(const format::Archive& archive, uint32_t radius, gsz_archive_info& info);

}  // namespace gsz::pipeline
