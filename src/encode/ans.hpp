// Context-modelled rANS of quant-codes: the "ans" lossless stage.  It spends
// fractional bits per code (Huffman cannot go below one), and conditions each
// code on its level and on the previous code (ans_math.hpp).
//
// The codes are cut into lanes of `lane_symbols` consecutive codes; each lane
// is one rANS chain (one GPU thread decodes it), encoded last code first from
// state 1 and stored as its 16-bit words in decoding order plus the final
// encoder state and its word count, bit-packed (~36 bits a lane, ~29 net of
// what the state holds of the codes; 64 before format version 7).  The lane
// length is chosen so that the lanes stay near 2% of the payload: few lanes
// for a small or highly compressible field, and as many as that allows for
// the GPU, whose coders run one lane per thread.
//
// Frequency tables are static, built on the host from an integer histogram of
// (context, symbol), so the CPU and CUDA backends build the same tables.
#pragma once

#include "encode/ans_math.hpp"
#include "runtime/byte_io.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace gsz::encode {

// What the decoder knows about a code's position: the array's dims (fastest
// first, the pipeline's raster order) and the number of levels (1: none).
struct AnsContextShape {
    uint64_t dims[3] = {1, 1, 1};
    uint32_t levels = 1;

    uint32_t num_contexts() const { return levels * kAnsClasses; }
    AnsCursor cursor() const { return AnsCursor{dims[0], dims[1], 0, 0, 0, levels}; }
};

// Counts of (context, symbol), [context * kAnsAlphabet + symbol], over
// shape.num_contexts() contexts; every code is counted under the context
// class ans_context_class gives it with its array index as the offset,
// whatever the lanes.  Codes must be < 2 * radius (checked).
// `class_lag`: as AnsTables::class_lag.  `sample_stride` > 1 counts only the
// chunks of kAnsSampleChunk codes whose index is a multiple of it (the sample
// the class lag is chosen on; the GPU's histogram samples the same codes).
std::vector<uint64_t> ans_histogram_cpu(std::span<const uint16_t> codes, uint32_t radius,
                                        const AnsContextShape& shape, int num_threads, uint32_t class_lag = 1,
                                        uint32_t sample_stride = 1);

// The class lag is chosen on histograms of both lags: of every code up to
// kAnsFullLagHistogramCodes codes (the chosen one is then the histogram the
// tables are built from), of one chunk in kAnsLagSampleStride above (a full
// histogram of the chosen lag follows; a second full pass cost the GPU's
// interp compression 20-30% of its speed).
inline constexpr uint32_t kAnsSampleChunk = 64;
inline constexpr uint32_t kAnsLagSampleStride = 16;
inline constexpr uint64_t kAnsFullLagHistogramCodes = uint64_t{1} << 22;
uint32_t ans_class_lag_sample_stride(uint64_t n);

// The lag whose histogram (of the same codes) gives the smaller estimated
// stage (tables included); 1 on a tie.  `chosen_bits`, when given, receives
// ans_estimated_bits of the chosen lag's histogram under its tables (the
// tables are built here anyway).
uint32_t ans_choose_class_lag(std::span<const uint64_t> lag1, std::span<const uint64_t> lag2, uint32_t levels,
                              uint64_t n, uint64_t* chosen_bits = nullptr);

// Per context, the frequencies of its symbols (sum kAnsScale, or an unused
// context with none), as packed entries freq | cum << 16 (freq 0: absent).
struct AnsTables {
    uint32_t levels = 1;
    // Which code before a code gives its context class (ans_context_class's
    // prev_class): 1, the one just before, or 2, the one before that (format
    // version 8 on; the encoder takes the smaller estimate).  In interp's
    // raster order the code two back is at the same level, which wins on
    // smooth fields (ncl_atm_temp3d rel 1e-3: -10.5% bytes).
    uint32_t class_lag = 1;
    std::vector<uint32_t> entry;  // [context * kAnsAlphabet + symbol]
    // Per context, the context whose table it repeats (itself: its own);
    // empty: every context its own.  Written as a reference (format version
    // 8 on, docs/FORMAT.md "ans_tables"): small fields pay less for tables.
    std::vector<uint8_t> source;

    uint32_t num_contexts() const { return levels * kAnsClasses; }
    static uint32_t freq(uint32_t e) { return e & 0xFFFFu; }
    static uint32_t cum(uint32_t e) { return e >> 16; }
};

// Normalizes the histogram into tables; each level's lane-start context gets
// the level's counts summed over all classes, so it holds every symbol of the
// level.  Where the tables would be more than 1/64 of the coded bits (a small
// field), contexts share tables: greedily, the pair whose merge saves the
// most bytes (table bytes against the bits the pooled table costs their
// codes) until no merge saves any (`share`; off: every context its own, as
// archives before version 8).  Deterministic integer arithmetic.
AnsTables ans_build_tables(std::span<const uint64_t> histogram, uint32_t levels, bool share = true,
                           uint32_t class_lag = 1);

// The coded size of these counts under these tables, in bits (symbols and
// uniform bits; lane states and tables not included).
uint64_t ans_estimated_bits(const AnsTables& tables, std::span<const uint64_t> histogram);

// The longest lane an archive may have (what ans_lane_symbols gives at most):
// a lane's words then fit 32-bit counts on the GPU.
inline constexpr uint32_t kAnsMaxLaneSymbols = 1u << 24;

// What a lane costs the archive, for the lane length and the stage's size
// estimate: ~36 bits of the ans_lanes section (~28 of state, ~8 of word
// count; 36.2 on etopo5 at rel 1e-2), less the ~7 bits its final state holds
// that would otherwise be words, since lanes start at state 1 (format version
// 11; 29.0 net on etopo5 at rel 1e-2, 28.1 on sperr_wmag_91x91x91).  At 29
// instead of 36 the lane length rule gives 1.24x the lanes for the archive
// share they had (H200, run 79: interp etopoT rel 1e-2 decompression 180 ->
// 202 GB/s, ratio +0.09%; bench/RESULTS.md).
inline constexpr uint32_t kAnsLaneBitsEstimate = 29;

// The most lanes the lane length aims at: an H100's or H200's 132
// multiprocessors keep about this many decoding threads resident, and in
// same-machine runs more, shorter lanes decoded slower (wmagT: interp at rel
// 1e-3 and lorenzo at 1e-4 8-10% slower with 235K / 410K lanes than with
// 132K / 230K; bench/NOTES.md, where one case also went the other way).
inline constexpr uint64_t kAnsMaxLanes = uint64_t{1} << 17;

// Lane length for n codes of about `payload_bits`: lanes of ~50 times
// kAnsLaneBitsEstimate bits of payload (2% overhead) but at most
// kAnsMaxLanes of them, a multiple of 64, at least 256, at most
// kAnsMaxLaneSymbols.
uint32_t ans_lane_symbols(uint64_t n, uint64_t payload_bits);

// Bytes of the ans_tables section for these tables.
uint64_t ans_tables_bytes(const AnsTables& tables);

// Archive bytes of the stage (tables, lanes, words) for that estimate.
uint64_t ans_estimated_bytes(const AnsTables& tables, std::span<const uint64_t> histogram, uint64_t n);

// The ans_lanes section's layouts: u32 state and u32 word count per lane
// (format versions 3-6); bit-packed (versions 7-10): the state's bit length
// and the bits below its top one, the word count as an exponential-Golomb
// code of the order the section's first byte gives; and from version 11
// packed with every lane's encoder started at state 1 instead of 2^16 (the
// word count first, then the state, below 2^16 only for a lane without
// words).  A lane's first state is information the decoder already has: at
// 2^16 its 16 bits come out again as words and final state, from 1 they do
// not (6-7 bits a lane less on real fields; bench/NOTES.md).
enum class AnsLanesLayout : uint8_t { fixed, packed, packed_from_one };

// The layout of an archive of this format version's ans_lanes section.
constexpr AnsLanesLayout ans_lanes_layout(uint32_t format_version) {
    return format_version >= 11  ? AnsLanesLayout::packed_from_one
           : format_version >= 7 ? AnsLanesLayout::packed
                                 : AnsLanesLayout::fixed;
}

// The state every lane's encoder starts at and its decoder must end at.
// From 1 the states may be below 2^16 only until a lane's first word is
// emitted (never after), so a decoder refills only while the lane has words
// left: the arithmetic is exact for any state >= 1 (ans_math.hpp).
constexpr uint32_t ans_start_state(AnsLanesLayout layout) {
    return layout == AnsLanesLayout::packed_from_one ? 1u : kAnsStateLow;
}

struct AnsStream {
    uint64_t num_symbols = 0;
    uint32_t lane_symbols = 0;
    uint32_t start_state = 1;  // ans_start_state of the layout it was encoded for
    std::vector<uint32_t> lane_state;  // final encoder state, where the decoder starts
    std::vector<uint32_t> lane_words;  // 16-bit words of each lane
    std::vector<uint16_t> words;       // lane after lane, each in decoding order

    uint64_t num_lanes() const { return lane_state.size(); }
};

// `layout`: the ans_lanes layout the stream will be written in (its start state).
AnsStream ans_encode_cpu(const AnsTables& tables, std::span<const uint16_t> codes, uint32_t radius,
                         const AnsContextShape& shape, uint32_t lane_symbols, int num_threads,
                         AnsLanesLayout layout = AnsLanesLayout::packed_from_one);

// The ans_tables section's layouts: versions 3-7, or version 8 on, with the
// class lag byte and tables that may repeat an earlier context's.
enum class AnsTablesLayout : uint8_t { plain, lagged };

// Sections: ans_tables (lane length and tables), ans_lanes (state and word
// count per lane, packed), ans_stream (the words).
void ans_tables_write(const AnsTables& tables, uint32_t lane_symbols, ByteWriter& out,
                      AnsTablesLayout layout = AnsTablesLayout::lagged);
// The stream's start state must be the layout's.
void ans_lanes_write(const AnsStream& stream, ByteWriter& out,
                     AnsLanesLayout layout = AnsLanesLayout::packed_from_one);
void ans_stream_write(const AnsStream& stream, ByteWriter& out);

// A validated view of the three sections for n codes of a pipeline with
// `levels` levels: tables sum to kAnsScale, lanes cover n exactly, word counts
// add up to the stream (each lane at most 2 words per code), states in range.
// Throws GSZ_STATUS_CORRUPT.
struct AnsStreamView {
    AnsTables tables;
    uint64_t num_symbols = 0;
    uint32_t lane_symbols = 0;
    uint32_t start_state = 1;  // where every lane's decoder must end (ans_start_state)
    std::vector<uint32_t> lane_state;
    std::vector<uint64_t> lane_word_offset;  // [lanes + 1]
    std::span<const uint8_t> words;          // little-endian 16-bit words
};
AnsStreamView ans_stream_read(std::span<const uint8_t> tables_section, std::span<const uint8_t> lanes_section,
                              std::span<const uint8_t> stream_section, uint64_t n, uint32_t levels,
                              AnsLanesLayout layout, AnsTablesLayout tables_layout = AnsTablesLayout::lagged);

// Slot -> symbol per context ([context * kAnsScale + slot]; 0xFF where a
// context has no table): the decoders' lookup.
std::vector<uint8_t> ans_decode_lut(const AnsTables& tables);

// Decodes every lane (OpenMP over lanes).  A lane that meets an unused
// context, a residual outside the radius, runs out of words, or does not end
// in the initial state with all its words read is corrupt.
void ans_decode_cpu(const AnsStreamView& stream, uint32_t radius, const AnsContextShape& shape,
                    std::span<uint16_t> codes, int num_threads);

}  // namespace gsz::encode
