// Run tokens: the second lossless stage of the lorenzo and interp pipelines.
//
// Huffman spends at least one bit per symbol, so a field whose codes are
// mostly the dominant one ("predicted within the bound") stalls near 32x.
// Runs of the dominant code are folded into the Huffman alphabet instead:
//
//   - the codes are cut into segments of kRunSegment codes (runs never cross
//     a segment, so segments encode independently, one GPU thread each);
//   - in a segment, a maximal run of L dominant codes becomes the binary
//     digits of L, largest first: token `alphabet + k - 1` stands for 2^k
//     dominant codes (k = 1..kRunClasses), a 1 in bit 0 is the dominant code
//     itself;
//   - every other code is its own token.
//
// The token alphabet is alphabet + kRunClasses, so alphabet <= 65536 -
// kRunClasses.  A token's length is 1 or 2^k whatever segment it came from,
// so decoding needs no segment table: positions are a prefix sum of lengths,
// which must add up to exactly the number of codes.
#pragma once

#include "encode/huffman.hpp"
#include "runtime/host_device.hpp"

#include <array>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#if !defined(__CUDA_ARCH__)
#include <bit>
#endif

namespace gsz::encode {

inline constexpr uint32_t kRunSegment = 1024;
inline constexpr uint32_t kRunClasses = 10;  // 2^10 = kRunSegment: one segment-long run is one token
inline constexpr uint32_t kRunMaxAlphabet = kHuffmanMaxAlphabet - kRunClasses;

GSZ_HD uint32_t run_popcount(uint32_t x) {
#if defined(__CUDA_ARCH__)
    return static_cast<uint32_t>(__popc(x));
#else
    return static_cast<uint32_t>(std::popcount(x));
#endif
}

// Codes a token stands for: 2^k for a run token, 1 otherwise.
GSZ_HD uint32_t run_token_length(uint32_t token, uint32_t alphabet) {
    return token >= alphabet ? 2u << (token - alphabet) : 1u;
}

// Turns one segment's codes, pushed in order, into tokens, passed in order to
// emit(token).  The same steps on the host and the device.
struct RunTokenizer {
    uint32_t dominant, alphabet;
    uint32_t run = 0;     // dominant codes pending
    uint32_t tokens = 0;  // tokens emitted so far

    template <class Emit>
    GSZ_HD void push(uint32_t code, Emit&& emit) {
        if (code == dominant) {
            ++run;
            return;
        }
        if (run) flush(emit);
        emit(static_cast<uint16_t>(code));
        ++tokens;
    }
    // Ends the pending run: its binary digits, largest first.
    template <class Emit>
    GSZ_HD void flush(Emit&& emit) {
        for (uint32_t k = kRunClasses; k >= 1; --k)
            if ((run >> k) & 1u) emit(static_cast<uint16_t>(alphabet + k - 1));
        if (run & 1u) emit(static_cast<uint16_t>(dominant));
        tokens += run_popcount(run);
        run = 0;
    }
};

// ---------------------------------------------------------------------------
// Choosing the stage (host; both backends call it with the same integer
// histograms, so they choose alike).

// The bins [first, second) around the middle of a codes' histogram (the zero
// residual) that the host's checks read first: interp's 65,526 bins are
// 512 KB, read on the GPU pipeline's host path, and nearly all its codes lie
// in these.
inline constexpr size_t kMiddleWindowBins = 4096;
std::pair<size_t, size_t> middle_window(size_t bins);

// The most frequent code (the smallest on ties).  With `total`, what the
// histogram sums to, a middle bin (the zero residual) holding more than half
// of it is that code without a read of the rest (interp's 65,526 bins are
// 512 KB, read on the GPU pipeline's host path).
uint32_t run_dominant_code(std::span<const uint64_t> histogram);
uint32_t run_dominant_code(std::span<const uint64_t> histogram, uint64_t total);

// Whether run tokens are worth computing: the dominant code must be at least
// half of the codes (below that its runs are too short to beat Huffman).
bool run_tokens_promising(std::span<const uint64_t> histogram);
bool run_tokens_promising(std::span<const uint64_t> histogram, uint64_t total);

// The binary digits of the runs, as a token histogram needs them: [k - 1]
// counts the runs with bit k set (tokens `alphabet + k - 1`, k = 1..
// kRunClasses), [kRunClasses] the odd runs (each ends in the dominant code).
using RunDigits = std::array<uint64_t, kRunClasses + 1>;

// The tokens' histogram (alphabet + kRunClasses bins) that the codes'
// histogram and their runs' digits give: every code but the dominant one is
// its own token.
std::vector<uint64_t> run_token_histogram(std::span<const uint64_t> code_histogram, uint32_t dominant,
                                          const RunDigits& digits);

// On large inputs the choice first looks at the runs of a sample: above
// kRunSampleMinCodes codes, every stride-th segment, the stride the power of
// two that leaves about kRunSampleCodes codes (at least 4; 1: no sample),
// counted alike by run_digits_cpu and the GPU (code_stage_encode_*), so that
// the full count (0.4-0.6 ms of a GPU compression at 10^8 codes) is skipped
// where rANS clearly wins.  The sample is counted whether or not runs are
// tried (the GPU counts it before the codes' histogram is known): 1/16 of the
// codes cost lorenzo 3-6% at rel 1e-4 on an H200.
inline constexpr uint64_t kRunSampleMinCodes = uint64_t{1} << 22;
inline constexpr uint64_t kRunSampleCodes = uint64_t{1} << 20;
uint32_t run_sample_stride(uint64_t n);

// Codes in the segments a stride samples out of n.
uint64_t run_sampled_codes(uint64_t n, uint32_t segment_stride);

// Estimated archive bytes of a Huffman stream coding `histogram` with `book`:
// bitstream, codebook, chunk table and word padding.  Integer arithmetic.
uint64_t huffman_estimated_bytes(const HuffmanCodebook& book, std::span<const uint64_t> histogram,
                                 uint32_t chunk_symbols);

// ---------------------------------------------------------------------------
// CPU coder (OpenMP over segments / token ranges; the output never depends on
// the thread count).

std::vector<uint16_t> run_tokens_encode_cpu(std::span<const uint16_t> codes, uint32_t dominant, uint32_t alphabet,
                                            int num_threads);

// The digits of the runs in every `segment_stride`-th segment of codes (1:
// all of them).
RunDigits run_digits_cpu(std::span<const uint16_t> codes, uint32_t dominant, uint32_t alphabet,
                         uint32_t segment_stride, int num_threads);

// Expands `tokens` into `codes`.  A token >= alphabet + kRunClasses, or
// lengths that do not add up to codes.size(), is GSZ_STATUS_CORRUPT.
void run_tokens_decode_cpu(std::span<const uint16_t> tokens, uint32_t dominant, uint32_t alphabet,
                           std::span<uint16_t> codes, int num_threads);

}  // namespace gsz::encode
