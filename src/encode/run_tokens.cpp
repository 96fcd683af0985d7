// Run tokens, CPU side (see run_tokens.hpp).
#include "encode/run_tokens.hpp"

#include "runtime/parallel.hpp"
#include "runtime/status.hpp"

#include <algorithm>
#include <bit>

namespace gsz::encode {

namespace {

// Segment s of the codes through a RunTokenizer, its tokens passed to emit;
// returns their number.
template <class Emit>
uint32_t tokenize_segment(std::span<const uint16_t> codes, uint64_t s, uint32_t dominant, uint32_t alphabet,
                          Emit&& emit) {
    RunTokenizer tz{dominant, alphabet};
    for (uint64_t i = s * kRunSegment, e = std::min<uint64_t>(codes.size(), (s + 1) * kRunSegment); i < e; ++i)
        tz.push(codes[i], emit);
    if (tz.run) tz.flush(emit);
    return tz.tokens;
}

}  // namespace

std::pair<size_t, size_t> middle_window(size_t bins) {
    const size_t mid = bins / 2, lo = mid > kMiddleWindowBins / 2 ? mid - kMiddleWindowBins / 2 : 0;
    return {lo, std::min(bins, lo + kMiddleWindowBins)};
}

uint32_t run_dominant_code(std::span<const uint64_t> histogram) {
    return static_cast<uint32_t>(std::max_element(histogram.begin(), histogram.end()) - histogram.begin());
}

uint32_t run_dominant_code(std::span<const uint64_t> histogram, uint64_t total) {
    const size_t mid = histogram.size() / 2;
    if (!histogram.empty() && 2 * histogram[mid] > total) return static_cast<uint32_t>(mid);  // a strict majority
    return run_dominant_code(histogram);
}

bool run_tokens_promising(std::span<const uint64_t> histogram, uint64_t total) {
    if (total == 0 || histogram.empty()) return false;
    const size_t mid = histogram.size() / 2;
    if (2 * histogram[mid] > total) return true;  // a strict majority
    // No bin holds half when none of the 4096 around the middle does and the
    // bins outside them hold less than half together: the usual case at tight
    // bounds, told without reading interp's 65,526 bins.
    const auto [lo, hi] = middle_window(histogram.size());
    uint64_t inside = 0, most = 0;
    for (size_t b = lo; b < hi; ++b) {
        inside += histogram[b];
        most = std::max(most, histogram[b]);
    }
    if (2 * most < total && 2 * (total - inside) < total) return false;
    return 2 * histogram[run_dominant_code(histogram)] >= total;
}

bool run_tokens_promising(std::span<const uint64_t> histogram) {
    uint64_t total = 0;
    for (uint64_t c : histogram) total += c;
    return run_tokens_promising(histogram, total);
}

std::vector<uint64_t> run_token_histogram(std::span<const uint64_t> code_histogram, uint32_t dominant,
                                          const RunDigits& digits) {
    const uint32_t alphabet = static_cast<uint32_t>(code_histogram.size());
    std::vector<uint64_t> hist(alphabet + kRunClasses);
    std::copy(code_histogram.begin(), code_histogram.end(), hist.begin());
    hist[dominant] = digits[kRunClasses];  // each odd run ends in the dominant code; the others are in runs
    for (uint32_t k = 1; k <= kRunClasses; ++k) hist[alphabet + k - 1] = digits[k - 1];
    return hist;
}

uint32_t run_sample_stride(uint64_t n) {
    if (n <= kRunSampleMinCodes) return 1u;
    return static_cast<uint32_t>(std::min<uint64_t>(std::bit_floor(n / kRunSampleCodes), uint64_t{1} << 30));
}

uint64_t run_sampled_codes(uint64_t n, uint32_t segment_stride) {
    const uint64_t segments = (n + kRunSegment - 1) / kRunSegment;
    if (segments == 0) return 0;
    const uint64_t sampled = (segments + segment_stride - 1) / segment_stride;
    const uint64_t last = (sampled - 1) * segment_stride;  // the last sampled segment may be the short one
    return (sampled - 1) * uint64_t{kRunSegment} + std::min<uint64_t>(kRunSegment, n - last * kRunSegment);
}

uint64_t huffman_estimated_bytes(const HuffmanCodebook& book, std::span<const uint64_t> histogram,
                                 uint32_t chunk_symbols) {
    uint64_t bits = 0, symbols = 0, used = 0;
    for (size_t s = 0; s < histogram.size(); ++s) {
        if (!histogram[s]) continue;
        bits += histogram[s] * book.lengths[s];
        symbols += histogram[s];
        ++used;
    }
    const uint64_t chunks = (symbols + chunk_symbols - 1) / chunk_symbols;
    // codebook: 3 bytes per used symbol; chunk table: its bit count (as this gsz writes it) and ~2 bytes of
    // padding per chunk
    return bits / 8 + 3 * used + (huffman_chunk_count_bytes(chunk_symbols, kHuffmanNarrowCountsVersion) + 2) * chunks;
}

std::vector<uint16_t> run_tokens_encode_cpu(std::span<const uint16_t> codes, uint32_t dominant, uint32_t alphabet,
                                            int num_threads) {
    GSZ_CHECK(alphabet <= kRunMaxAlphabet && dominant < alphabet, GSZ_STATUS_INTERNAL,
              "run tokens: alphabet %u, dominant code %u", alphabet, dominant);
    const uint64_t n = codes.size();
    const uint64_t segments = (n + kRunSegment - 1) / kRunSegment;
    // One segment's tokens through emit; returns their number.
    auto segment = [&](uint64_t s, auto&& emit) { return tokenize_segment(codes, s, dominant, alphabet, emit); };
    // Pass 1: tokens per segment; pass 2: each segment writes at its offset.
    std::vector<uint64_t> offset(segments + 1, 0);
#pragma omp parallel for schedule(static) num_threads(resolve_threads(num_threads))
    for (int64_t s = 0; s < static_cast<int64_t>(segments); ++s)
        offset[s + 1] = segment(s, [](uint16_t) {});
    for (uint64_t s = 0; s < segments; ++s) offset[s + 1] += offset[s];
    std::vector<uint16_t> tokens(offset[segments]);
#pragma omp parallel for schedule(static) num_threads(resolve_threads(num_threads))
    for (int64_t s = 0; s < static_cast<int64_t>(segments); ++s) {
        uint16_t* out = tokens.data() + offset[s];
        segment(s, [&](uint16_t t) { *out++ = t; });
    }
    return tokens;
}

RunDigits run_digits_cpu(std::span<const uint16_t> codes, uint32_t dominant, uint32_t alphabet,
                         uint32_t segment_stride, int num_threads) {
    GSZ_CHECK(alphabet <= kRunMaxAlphabet && dominant < alphabet && segment_stride >= 1, GSZ_STATUS_INTERNAL,
              "run digits: alphabet %u, dominant code %u, stride %u", alphabet, dominant, segment_stride);
    const uint64_t n = codes.size();
    const uint64_t segments = (n + kRunSegment - 1) / kRunSegment;
    const int64_t sampled = static_cast<int64_t>((segments + segment_stride - 1) / segment_stride);
    const int threads = resolve_threads(num_threads);
    std::vector<RunDigits> partial(static_cast<size_t>(threads), RunDigits{});
#pragma omp parallel num_threads(threads)
    {
        RunDigits& d = partial[static_cast<size_t>(thread_index())];
#pragma omp for schedule(static)
        for (int64_t j = 0; j < sampled; ++j) {
            tokenize_segment(codes, static_cast<uint64_t>(j) * segment_stride, dominant, alphabet, [&](uint16_t t) {
                if (t >= alphabet)
                    ++d[t - alphabet];
                else if (t == dominant)
                    ++d[kRunClasses];
            });
        }
    }
    RunDigits sum{};
    for (const RunDigits& d : partial)
        for (size_t k = 0; k < sum.size(); ++k) sum[k] += d[k];
    return sum;
}

void run_tokens_decode_cpu(std::span<const uint16_t> tokens, uint32_t dominant, uint32_t alphabet,
                           std::span<uint16_t> codes, int num_threads) {
    GSZ_CHECK(alphabet <= kRunMaxAlphabet && dominant < alphabet, GSZ_STATUS_CORRUPT,
              "run tokens: alphabet %u, dominant code %u", alphabet, dominant);
    // Fixed blocks of tokens (not thread ranges): pass 1 counts each block's
    // codes, a serial scan places the blocks, pass 2 expands them.
    constexpr uint64_t kBlock = 1u << 16;
    const uint64_t nt = tokens.size();
    const uint64_t blocks = (nt + kBlock - 1) / kBlock;
    const uint64_t bad = ~uint64_t{0};  // a block with a token outside the alphabet
    std::vector<uint64_t> start(blocks + 1, 0);
#pragma omp parallel for schedule(static) num_threads(resolve_threads(num_threads))
    for (int64_t b = 0; b < static_cast<int64_t>(blocks); ++b) {
        uint64_t sum = 0;
        for (uint64_t i = b * kBlock, e = std::min(nt, (b + 1) * kBlock); i < e; ++i) {
            if (tokens[i] >= alphabet + kRunClasses) {
                sum = bad;
                break;
            }
            sum += run_token_length(tokens[i], alphabet);
        }
        start[b + 1] = sum;
    }
    uint64_t total = 0;
    for (uint64_t b = 0; b < blocks; ++b) {
        GSZ_CHECK(start[b + 1] < bad, GSZ_STATUS_CORRUPT, "run tokens: a token is outside the alphabet of %u",
                  alphabet + kRunClasses);
        total += start[b + 1];
        start[b + 1] = total;
    }
    GSZ_CHECK(total == codes.size(), GSZ_STATUS_CORRUPT, "run tokens: %llu tokens stand for %llu codes, not %zu",
              static_cast<unsigned long long>(nt), static_cast<unsigned long long>(total), codes.size());
    // The blocks' outputs are disjoint and exactly cover `codes`.
#pragma omp parallel for schedule(static) num_threads(resolve_threads(num_threads))
    for (int64_t b = 0; b < static_cast<int64_t>(blocks); ++b) {
        uint16_t* out = codes.data() + start[b];
        for (uint64_t i = b * kBlock, e = std::min(nt, (b + 1) * kBlock); i < e; ++i) {
            const uint32_t t = tokens[i];
            if (t < alphabet)
                *out++ = static_cast<uint16_t>(t);
            else
                out = std::fill_n(out, run_token_length(t, alphabet), static_cast<uint16_t>(dominant));
        }
    }
}

}  // namespace gsz::encode
