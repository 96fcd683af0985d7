// Context-modelled rANS of quant-codes: the "ans" lossless stage.  It spends
// fractional bits per code (Huffman cannot go below one), and conditions each
// code on its level and on the previous code (ans_math.hpp), and in column
// strips (format version 12) on the row above as well.
//
// The codes, in coding order (raster order, or strip after strip), are cut
// into lanes of `lane_symbols` consecutive codes; each lane
// is one rANS chain (one GPU thread decodes it), encoded last code first from
// state 1 and stored as its 16-bit words in decoding order plus the final
// encoder state and its word count, bit-packed (~36 bits a lane, ~29 net of
// what the state holds of the codes; 64 before format version 7).  The lane
// length is chosen so that the lanes stay near 4% of the payload: few lanes
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
// With `strip_width` the codes are coded in column strips (ans_math.hpp) of
// that many columns, and each context is crossed with the above classes.
enum class AnsStripsChoice : uint8_t { automatic, off, on };

struct AnsContextShape {
    uint64_t dims[3] = {1, 1, 1};
    uint32_t levels = 1;
    uint32_t strip_width = 0;  // 0: raster order
    // Compression only: whether the encoder may take strips (gsz_ans_strips).
    AnsStripsChoice strips = AnsStripsChoice::automatic;

    uint32_t aboves() const { return strip_width ? kAnsAboveClasses : 1u; }
    uint32_t num_contexts() const { return levels * aboves() * kAnsClasses; }
    AnsCursor cursor() const { return AnsCursor{dims[0], dims[1], 0, 0, 0, levels, dims[2], strip_width, 0}; }
    AnsContextShape with_strips(uint32_t width) const {
        AnsContextShape s = *this;
        s.strip_width = width;
        return s;
    }
};

// The strip width the codes of this shape may be coded in: the largest power
// of two up to kAnsMaxStripWidth dividing dims[0], at least
// kAnsMinStripWidth, for arrays of at least two rows and at most
// kAnsMaxStripLevels levels; 0 where none (raster order only).
uint32_t ans_strip_width_for(const AnsContextShape& shape);

// Whether strips of `width` columns are a coding order of n codes of this
// shape (any width ans_strip_width_for could give: a power of two in
// [kAnsMinStripWidth, kAnsMaxStripWidth] dividing dims[0], dims of n codes,
// two rows or more, at most kAnsMaxStripLevels levels); width 0 always is.
bool ans_strips_fit(const AnsContextShape& shape, uint32_t width, uint64_t n);

// Counts of (context, symbol), [context * kAnsAlphabet + symbol], over
// shape.num_contexts() contexts; every code is counted under the context
// class ans_context_class gives it with its array index as the offset,
// whatever the lanes.  Codes must be < 2 * radius (checked).
// `class_lag`: as AnsTables::class_lag.  `sample_stride` > 1 counts only
// one chunk of kAnsSampleChunk codes in that many, ans_sample_chunk's (the
// sample the class lag and the strips are chosen on; the GPU's histogram
// samples the same codes).  With shape.strip_width the codes are counted in
// the strips' coding order with their above classes.
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
    // Column strips' width (format version 12 on; 0: raster order): the
    // contexts are crossed with kAnsAboveClasses above classes.
    uint32_t strip_width = 0;
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

    uint32_t aboves() const { return strip_width ? kAnsAboveClasses : 1u; }
    uint32_t num_contexts() const { return levels * aboves() * kAnsClasses; }
    static uint32_t freq(uint32_t e) { return e & 0xFFFFu; }
    static uint32_t cum(uint32_t e) { return e >> 16; }
};

// Normalizes the histogram into tables; each level's lane-start context gets
// the level's counts summed over all classes, so it holds every symbol of the
// level; with strips, each "none" above class's context (which the coders
// take where the window above is outside the lane, while the histogram,
// which knows no lanes, counts the code under its window's class) gets its
// class's counts summed over the above classes.  `strip_width`: the
// histogram's (ans_histogram_cpu's shape's).  Where the tables would be more than 1/64 of the coded bits (a small
// field), contexts share tables: greedily, the pair whose merge saves the
// most bytes (table bytes against the bits the pooled table costs their
// codes) until no merge saves any (`share`; off: every context its own, as
// archives before version 8).  Deterministic integer arithmetic.  `coded`:
// the codes a sample's histogram stands for (their bits weigh that much
// against the tables in the test for sharing; 0: the histogram's own).
AnsTables ans_build_tables(std::span<const uint64_t> histogram, uint32_t levels, bool share = true,
                           uint32_t class_lag = 1, uint32_t strip_width = 0, uint64_t coded = 0);

// One candidate context layout of the stage: a histogram and what it was
// counted with.
struct AnsCandidate {
    std::span<const uint64_t> histogram;
    uint32_t class_lag = 1;
    uint32_t strip_width = 0;
};

// The candidate (its index) whose tables give the smallest estimated stage,
// the first on ties; `chosen_bits`, when given, receives its
// ans_estimated_bits, `chosen_bytes` the estimate (for n codes, of a sample's
// histogram too).  ans_choose_class_lag is this over two.
size_t ans_choose_candidate(std::span<const AnsCandidate> candidates, uint32_t levels, uint64_t n,
                            uint64_t* chosen_bits = nullptr, uint64_t* chosen_bytes = nullptr);

// What ans_choose_candidate weighs, per candidate: ans_estimated_bits of its
// histogram under its tables, and the stage's estimated bytes for n codes.
struct AnsCandidateEstimate {
    uint64_t bits = 0;
    uint64_t bytes = UINT64_MAX;
};
std::vector<AnsCandidateEstimate> ans_estimate_candidates(std::span<const AnsCandidate> candidates, uint32_t levels,
                                                          uint64_t n);

// The first of the smallest estimates (0 when there is none).
inline size_t ans_smallest_estimate(std::span<const AnsCandidateEstimate> e) {
    size_t best = 0;
    for (size_t m = 1; m < e.size(); ++m)
        if (e[m].bytes < e[best].bytes) best = m;
    return best;
}

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

// Lane length for n codes of about `payload_bits`: lanes of
// kAnsLanePayloadShare times kAnsLaneBitsEstimate bits of payload but at
// most kAnsMaxLanes of them, a multiple of 64, at least 256, at most
// kAnsMaxLaneSymbols.  A share of 25 (4% overhead; 50 before): below the
// cap the coders are latency-bound, one lane a thread, and twice the lanes
// bought the GPU's decompression +28-30% at low bit rates for 0.6-1.7% of
// the ratio there (H200 run 93: interp etopoT rel 1e-2 156-161 -> 203-206
// GB/s, ratio 76.61 -> 75.31; lorenzo 306-315 -> 371-372, 49.74 -> 49.05;
// bench/RESULTS.md).  Fields whose lanes are at the cap do not change.
inline constexpr uint64_t kAnsLanePayloadShare = 25;
uint32_t ans_lane_symbols(uint64_t n, uint64_t payload_bits);

// Bytes of the ans_tables section for these tables.
uint64_t ans_tables_bytes(const AnsTables& tables);

// Archive bytes of the stage (tables, lanes, words) for that estimate; the
// second form from its ans_estimated_bits, already known.
uint64_t ans_estimated_bytes(const AnsTables& tables, std::span<const uint64_t> histogram, uint64_t n);
uint64_t ans_estimated_bytes(const AnsTables& tables, uint64_t estimated_bits, uint64_t n);

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

// The ans_tables section's layouts: versions 3-7; versions 8-11, with the
// class lag byte and tables that may repeat an earlier context's; versions
// 12-14, with the strip width's byte after the class lag; version 15 on, an
// empty context's 0 followed by how many more empty ones come next (interp's
// 48-60 contexts, most of them empty on fields that code few distinct codes,
// cost a byte each before).
enum class AnsTablesLayout : uint8_t { plain, lagged, striped, empty_runs };

constexpr AnsTablesLayout ans_tables_layout(uint32_t format_version) {
    return format_version >= 15   ? AnsTablesLayout::empty_runs
           : format_version >= 12 ? AnsTablesLayout::striped
           : format_version >= 8  ? AnsTablesLayout::lagged
                                  : AnsTablesLayout::plain;
}

// Sections: ans_tables (lane length and tables), ans_lanes (state and word
// count per lane, packed), ans_stream (the words).
void ans_tables_write(const AnsTables& tables, uint32_t lane_symbols, ByteWriter& out,
                      AnsTablesLayout layout = AnsTablesLayout::empty_runs);
// The stream's start state must be the layout's.
void ans_lanes_write(const AnsStream& stream, ByteWriter& out,
                     AnsLanesLayout layout = AnsLanesLayout::packed_from_one);
void ans_stream_write(const AnsStream& stream, ByteWriter& out);

// A validated view of the three sections for n codes of a pipeline with
// `shape`'s dims and levels (its strip width is ignored: the tables' is
// checked against ans_strip_width_for): tables sum to kAnsScale, lanes cover n exactly, word counts
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
                              std::span<const uint8_t> stream_section, uint64_t n, const AnsContextShape& shape,
                              AnsLanesLayout layout, AnsTablesLayout tables_layout = AnsTablesLayout::empty_runs);
// The same for codes of one row of n (no strips).
AnsStreamView ans_stream_read(std::span<const uint8_t> tables_section, std::span<const uint8_t> lanes_section,
                              std::span<const uint8_t> stream_section, uint64_t n, uint32_t levels,
                              AnsLanesLayout layout, AnsTablesLayout tables_layout = AnsTablesLayout::empty_runs);

// The CPU decoder's lookup, per context: the symbol whose slots hold the
// first slot of each bucket of 2^kAnsDecodeBucketBits slots (0xFF where the
// context has no table), and each symbol's end of slots (cum + frequency, 0
// for an unused symbol).  A slot's symbol is the bucket's, or the first
// after it whose end lies above the slot: 384 bytes a context where a slot
// table took 4 KB (strips of 3 levels: 144 contexts, 576 KB, whose loads
// were a third of the decoder's time).
inline constexpr uint32_t kAnsDecodeBucketBits = 4;
struct AnsDecodeTable {
    std::vector<uint8_t> bucket;  // [context * (kAnsScale >> kAnsDecodeBucketBits) + slot >> kAnsDecodeBucketBits]
    std::vector<uint16_t> end;    // [context * kAnsAlphabet + symbol]
};
AnsDecodeTable ans_decode_table(const AnsTables& tables);

// The symbol whose slots hold `slot` in context ctx (0xFF: the context has no table).
inline uint32_t ans_decode_symbol(const AnsDecodeTable& t, uint32_t ctx, uint32_t slot) {
    const uint32_t s = t.bucket[(size_t{ctx} << (kAnsScaleBits - kAnsDecodeBucketBits)) + (slot >> kAnsDecodeBucketBits)];
    if (s == 0xFF) return s;
    const uint16_t* ends = t.end.data() + size_t{ctx} * kAnsAlphabet;
    uint32_t k = s;
    while (slot >= ends[k])  // stops at the context's last symbol, whose end is kAnsScale
        if (++k == kAnsAlphabet) return 0xFF;  // tables that do not tile the slots (none the reader gives)
    return k;
}

// Decodes every lane (OpenMP over lanes).  A lane that meets an unused
// context, a residual outside the radius, runs out of words, or does not end
// in the initial state with all its words read is corrupt.
void ans_decode_cpu(const AnsStreamView& stream, uint32_t radius, const AnsContextShape& shape,
                    std::span<uint16_t> codes, int num_threads);

}  // namespace gsz::encode
