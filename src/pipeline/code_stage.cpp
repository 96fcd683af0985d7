// The quant-codes' entropy stage (see code_stage.hpp).
#include "pipeline/code_stage.hpp"

#include "runtime/parallel.hpp"
#include "runtime/status.hpp"

#include <algorithm>
#include <cmath>

namespace gsz::pipeline {

void RunTokensParams::write(ByteWriter& out) const {
    out.put(dominant);
    out.put(classes);
}

RunTokensParams RunTokensParams::read(std::span<const uint8_t> bytes, uint32_t radius) {
    ByteReader in(bytes, "run_tokens");
    RunTokensParams p;
    p.dominant = in.get<uint32_t>("dominant code");
    p.classes = in.get<uint32_t>("run classes");
    in.expect_end();
    GSZ_CHECK(p.classes == encode::kRunClasses, GSZ_STATUS_CORRUPT, "run_tokens: %u run classes, this gsz knows %u",
              p.classes, encode::kRunClasses);
    GSZ_CHECK(2 * radius <= encode::kRunMaxAlphabet && p.dominant < 2 * radius, GSZ_STATUS_CORRUPT,
              "run_tokens: dominant code %u with radius %u", p.dominant, radius);
    return p;
}

bool code_stage_try_runs(gsz_lossless mode, uint32_t radius, std::span<const uint64_t> code_histogram, uint64_t n) {
    if (mode == GSZ_LOSSLESS_NONE || mode == GSZ_LOSSLESS_ANS || 2 * radius > encode::kRunMaxAlphabet) return false;
    return mode == GSZ_LOSSLESS_RUNS || encode::run_tokens_promising(code_histogram, n);
}

bool code_stage_try_ans(gsz_lossless mode) { return mode == GSZ_LOSSLESS_AUTO || mode == GSZ_LOSSLESS_ANS; }

namespace {

// No Huffman code of counts summing to `total` is smaller than this: one bit
// per symbol, and never below the order-0 entropy, of which the bins
// [begin, end) give a part (all of them: the floor itself; fewer: a lower
// bound of it, every bin's term being >= 0).
uint64_t huffman_lower_bound_bytes(std::span<const uint64_t> histogram, uint64_t total, size_t begin, size_t end) {
    double bits = 0;
    for (size_t b = begin; b < end; ++b)
        if (const uint64_t c = histogram[b])
            bits += static_cast<double>(c) * std::log2(static_cast<double>(total) / static_cast<double>(c));
    return std::max<uint64_t>(total, static_cast<uint64_t>(bits)) / 8;
}

uint64_t huffman_lower_bound_bytes(std::span<const uint64_t> histogram) {
    uint64_t total = 0;
    for (const uint64_t c : histogram) total += c;
    return huffman_lower_bound_bytes(histogram, total, 0, histogram.size());
}

// huffman_lower_bound_bytes (+ 8, the run_tokens parameters) of the tokens'
// histogram encode::run_token_histogram gives (n codes), without building it
// (65,536 bins): the same terms in the same order, the codes' bins taken over
// [begin, end) only (all: the floor; fewer: a lower bound of it, every term
// being >= 0 and rounding monotonic).
uint64_t token_floor_bytes(std::span<const uint64_t> code_histogram, uint32_t dominant,
                           const encode::RunDigits& digits, uint64_t n, size_t begin, size_t end) {
    uint64_t total = n - code_histogram[dominant];
    for (const uint64_t d : digits) total += d;
    const double t = static_cast<double>(total);
    double bits = 0;
    const auto add = [&](uint64_t c) {
        if (c) bits += static_cast<double>(c) * std::log2(t / static_cast<double>(c));
    };
    for (size_t b = begin; b < end; ++b) add(b == dominant ? digits[encode::kRunClasses] : code_histogram[b]);
    for (uint32_t k = 1; k <= encode::kRunClasses; ++k) add(digits[k - 1]);
    return std::max<uint64_t>(total, static_cast<uint64_t>(bits)) / 8 + 8;
}

// Whether raster order's best estimate (of its histogram) is above
// kStripsMaxBits a code: the strips' context gains where the codes are
// sparse (etopo5 rel 1e-2 / 1e-3 / 1e-4: -5.2% / -4.2% / -1.5% at 0.4 / 1.7
// / 4.1 bits a code), and above it is not estimated (the host's estimates of
// the strip candidates cost the GPU's compression ~0.2-0.3 ms).
bool strips_out_of_reach(const encode::AnsCandidateEstimate& raster, std::span<const uint64_t> histogram) {
    uint64_t counted = 0;
    for (const uint64_t c : histogram) counted += c;
    return raster.bits > counted * kStripsMaxBits;
}

}  // namespace

std::vector<AnsLayoutTry> code_stage_ans_tries(const encode::AnsContextShape& shape, uint64_t n) {
    const uint32_t w = shape.strips == encode::AnsStripsChoice::off ? 0u : encode::ans_strip_width_for(shape);
    const bool strips = w && encode::ans_strips_fit(shape, w, n);
    if (strips && shape.strips == encode::AnsStripsChoice::on) return {{1, w}, {2, w}};
    if (strips) return {{1, 0}, {2, 0}, {1, w}, {2, w}};
    return {{1, 0}, {2, 0}};
}

size_t code_stage_choose_layout(std::span<const AnsLayoutTry> tries,
                                std::span<const std::span<const uint64_t>> histograms,
                                const encode::AnsContextShape& shape, uint64_t n, uint64_t* chosen_bits) {
    std::vector<encode::AnsCandidate> candidates;
    for (size_t k = 0; k < tries.size(); ++k)
        candidates.push_back({histograms[k], tries[k].class_lag, tries[k].strip_width});
    // The raster candidates come first (code_stage_ans_tries).
    size_t raster = 0;
    while (raster < tries.size() && tries[raster].strip_width == 0) ++raster;
    const bool automatic = shape.strips == encode::AnsStripsChoice::automatic;
    std::vector<encode::AnsCandidateEstimate> e =
        encode::ans_estimate_candidates(std::span(candidates).first(raster), shape.levels, n);
    const size_t r = encode::ans_smallest_estimate(e);
    size_t chosen = r;
    if (raster < tries.size() && !(automatic && raster > 0 && strips_out_of_reach(e[r], histograms[r]))) {
        const std::vector<encode::AnsCandidateEstimate> s =
            encode::ans_estimate_candidates(std::span(candidates).subspan(raster), shape.levels, n);
        e.insert(e.end(), s.begin(), s.end());
        chosen = encode::ans_smallest_estimate(e);
        if (automatic && raster > 0 && e[chosen].bytes + e[r].bytes / kStripsMinSaving > e[r].bytes) chosen = r;
    }
    if (chosen_bits) *chosen_bits = e[chosen].bits;
    return chosen;
}

bool code_stage_sample_runs(gsz_lossless mode, uint32_t radius, uint64_t n) {
    return mode == GSZ_LOSSLESS_AUTO && 2 * radius <= encode::kRunMaxAlphabet && encode::run_sample_stride(n) > 1;
}

double code_stage_ans_bits(std::span<const uint64_t> ans_histogram, uint32_t levels, uint32_t class_lag, uint64_t n,
                           std::optional<uint64_t> counted_bits, uint32_t strip_width) {
    uint64_t counted = 0;
    for (const uint64_t c : ans_histogram) counted += c;
    if (counted == 0) return 0;
    const uint64_t bits = counted_bits ? *counted_bits
                                       : encode::ans_estimated_bits(
                                             encode::ans_build_tables(ans_histogram, levels, true, class_lag,
                                                                      strip_width, n),
                                             ans_histogram);
    return static_cast<double>(bits) * static_cast<double>(n) / static_cast<double>(counted);
}

bool code_stage_runs_outclassed(std::span<const uint64_t> code_histogram, uint32_t dominant,
                                const encode::RunDigits& sample_digits, uint64_t n, double ans_bits) {
    const uint32_t stride = encode::run_sample_stride(n);
    const uint64_t sampled = encode::run_sampled_codes(n, stride);
    if (stride == 1 || sampled == 0) return false;
    const double scale = static_cast<double>(n) / static_cast<double>(sampled);
    encode::RunDigits digits;
    for (size_t k = 0; k < digits.size(); ++k)
        digits[k] = static_cast<uint64_t>(std::llround(static_cast<double>(sample_digits[k]) * scale));
    // ans < 15/16 of the floor, in bits; the window's floor first (a lower bound of it).
    const auto outclassed = [&](size_t begin, size_t end) {
        const uint64_t floor_bytes = token_floor_bytes(code_histogram, dominant, digits, n, begin, end);
        return ans_bits * 16.0 < static_cast<double>(floor_bytes) * 8.0 * 15.0;
    };
    const auto [lo, hi] = encode::middle_window(code_histogram.size());
    return outclassed(lo, hi) || outclassed(0, code_histogram.size());
}

CodeStageChoice code_stage_choose(gsz_lossless mode, std::span<const uint64_t> code_histogram,
                                  std::span<const uint64_t> token_histogram, uint32_t dominant,
                                  std::span<const uint64_t> ans_histogram, uint32_t ans_class_lag,
                                  uint32_t ans_levels, uint64_t n, encode::HuffmanCodebook* storage,
                                  uint32_t ans_strip_width) {
    CodeStageChoice c;
    uint64_t ans_bytes = UINT64_MAX;
    if (!ans_histogram.empty()) {
        c.ans = encode::ans_build_tables(ans_histogram, ans_levels, true, ans_class_lag, ans_strip_width, n);
        const uint64_t bits = encode::ans_estimated_bits(*c.ans, ans_histogram);
        ans_bytes = encode::ans_estimated_bytes(*c.ans, bits, n);
        c.ans_lane_symbols = encode::ans_lane_symbols(n, bits);
        // rANS wins outright when it beats what any Huffman code of the codes
        // (and of the run tokens, with their 8 bytes of parameters) could
        // reach: the choice below would be the same, and the codebook builds
        // (up to a millisecond on the GPU's path) are skipped.
        if (mode == GSZ_LOSSLESS_ANS) return c;
        const uint64_t token_floor =
            token_histogram.empty() ? UINT64_MAX : huffman_lower_bound_bytes(token_histogram) + 8;
        // The window's part of the codes' floor first: below it, rANS is below the floor too.
        const size_t bins = code_histogram.size();
        const auto [lo, hi] = encode::middle_window(bins);  // (~0.1 ms of host time the GPU waited for)
        if (ans_bytes < std::min(token_floor, huffman_lower_bound_bytes(code_histogram, n, lo, hi))) return c;
        if (ans_bytes < std::min(token_floor, huffman_lower_bound_bytes(code_histogram, n, 0, bins))) return c;
    }
    encode::HuffmanCodebook runs_book, plain_book;
    if (storage != nullptr) plain_book = std::move(*storage);
    if (token_histogram.empty()) {
        encode::huffman_build(code_histogram, plain_book);
    } else if (mode == GSZ_LOSSLESS_AUTO) {
        // Both codebooks at once: each is a sequential build of up to 10^4
        // leaves (about a millisecond on the host, on the GPU pipeline's path).
        ParallelErrors errors;
#pragma omp parallel sections num_threads(2)
        {
#pragma omp section
            errors.capture([&] { runs_book = encode::huffman_build(token_histogram); });
#pragma omp section
            errors.capture([&] { encode::huffman_build(code_histogram, plain_book); });
        }
        errors.rethrow();
    } else {
        runs_book = encode::huffman_build(token_histogram);
    }
    uint64_t huffman_bytes = UINT64_MAX;
    bool use_runs = false;
    if (mode != GSZ_LOSSLESS_AUTO) {
        use_runs = !token_histogram.empty();
    } else {
        huffman_bytes = encode::huffman_estimated_bytes(plain_book, code_histogram, kHuffmanChunkSymbols);
        if (!token_histogram.empty()) {
            const uint64_t runs =
                encode::huffman_estimated_bytes(runs_book, token_histogram, kHuffmanChunkSymbols) + 8;
            use_runs = runs < huffman_bytes;
            huffman_bytes = std::min(huffman_bytes, runs);
        }
    }
    if (ans_bytes < huffman_bytes) return c;
    c.ans.reset();
    c.ans_lane_symbols = 0;
    if (use_runs) {
        c.runs = RunTokensParams{dominant, encode::kRunClasses};
        c.book = std::move(runs_book);
    } else {
        c.book = std::move(plain_book);
    }
    return c;
}

EncodedCodes code_stage_encode_cpu(std::span<const uint16_t> codes, uint32_t radius,
                                   const encode::AnsContextShape& shape, gsz_lossless mode, int num_threads) {
    const uint32_t alphabet = 2 * radius;
    const auto code_hist = encode::histogram_cpu(codes, alphabet, num_threads);
    std::vector<uint16_t> tokens;
    std::vector<uint64_t> token_hist, ans_hist;
    uint32_t ans_lag = 1, ans_strip = 0;
    uint32_t dominant = 0;
    const uint64_t n = codes.size();
    double ans_bits = 0;  // rANS's estimate for the runs' sample (code_stage_sample_runs)
    const bool sample_runs = code_stage_sample_runs(mode, radius, n);
    if (code_stage_try_ans(mode) && code_stage_try_class_lag2(shape)) {
        // Both lags, in raster order and in strips where the shape has them,
        // counted (on a sample above kAnsFullLagHistogramCodes codes), the smallest kept.
        const uint32_t stride = encode::ans_class_lag_sample_stride(n);
        const std::vector<AnsLayoutTry> tries = code_stage_ans_tries(shape, n);
        std::vector<std::vector<uint64_t>> hists;
        for (const AnsLayoutTry& t : tries)
            hists.push_back(encode::ans_histogram_cpu(codes, radius, shape.with_strips(t.strip_width), num_threads,
                                                      t.class_lag, stride));
        const std::vector<std::span<const uint64_t>> views(hists.begin(), hists.end());
        uint64_t chosen_bits = 0;
        const size_t chosen = code_stage_choose_layout(tries, views, shape, n, &chosen_bits);
        ans_lag = tries[chosen].class_lag;
        ans_strip = tries[chosen].strip_width;
        if (sample_runs)
            ans_bits = code_stage_ans_bits(hists[chosen], shape.levels, ans_lag, n, chosen_bits, ans_strip);
        ans_hist = stride > 1 ? encode::ans_histogram_cpu(codes, radius, shape.with_strips(ans_strip), num_threads,
                                                          ans_lag)
                              : std::move(hists[chosen]);
    } else if (code_stage_try_ans(mode)) {
        ans_hist = encode::ans_histogram_cpu(codes, radius, shape, num_threads);
        if (sample_runs) ans_bits = code_stage_ans_bits(ans_hist, shape.levels, 1, n);
    }
    if (code_stage_try_runs(mode, radius, code_hist, n)) {
        dominant = encode::run_dominant_code(code_hist, n);
        // As the GPU: the sample's runs are of the zero-error code, used where it is the dominant one.
        const bool outclassed =
            sample_runs && dominant == radius &&
            code_stage_runs_outclassed(
                code_hist, dominant,
                encode::run_digits_cpu(codes, dominant, alphabet, encode::run_sample_stride(n), num_threads), n,
                ans_bits);
        if (!outclassed) {
            tokens = encode::run_tokens_encode_cpu(codes, dominant, alphabet, num_threads);
            token_hist = encode::histogram_cpu(tokens, alphabet + encode::kRunClasses, num_threads);
        }
    }
    CodeStageChoice choice =
        code_stage_choose(mode, code_hist, token_hist, dominant, ans_hist, ans_lag, shape.levels, n, nullptr, ans_strip);
    EncodedCodes out;
    if (choice.ans) {
        out.ans_stream = encode::ans_encode_cpu(*choice.ans, codes, radius, shape, choice.ans_lane_symbols, num_threads);
        out.ans = std::move(choice.ans);
        return out;
    }
    out.runs = choice.runs;
    out.book = std::move(choice.book);
    out.stream = encode::huffman_encode_cpu(out.book, out.runs ? std::span<const uint16_t>(tokens) : codes,
                                            kHuffmanChunkSymbols, num_threads);
    return out;
}

std::vector<format::SectionData> CodeStageSections::sections() {
    using format::SectionKind;
    if (is_ans)
        return {{SectionKind::ans_tables, ans_tables.bytes()},
                {SectionKind::ans_lanes, ans_lanes.bytes()},
                {SectionKind::ans_stream, ans_stream.bytes()}};
    std::vector<format::SectionData> s = {{SectionKind::huffman_codebook, book.bytes()},
                                          {SectionKind::huffman_chunks, chunks.bytes()},
                                          {SectionKind::huffman_bitstream, bitstream.bytes()}};
    if (has_runs) s.push_back({SectionKind::run_tokens, runs.bytes()});
    return s;
}

void code_stage_write(const EncodedCodes& codes, CodeStageSections& out) {
    out.is_ans = codes.ans.has_value();
    out.has_runs = codes.runs.has_value();
    if (codes.ans) {
        encode::ans_tables_write(*codes.ans, codes.ans_stream.lane_symbols, out.ans_tables);
        encode::ans_lanes_write(codes.ans_stream, out.ans_lanes);
        encode::ans_stream_write(codes.ans_stream, out.ans_stream);
        return;
    }
    encode::huffman_codebook_write(codes.book, out.book);
    encode::huffman_chunks_write(codes.stream, out.chunks, format::kFormatVersion);
    encode::huffman_bitstream_write(codes.stream, out.bitstream);
    if (codes.runs) codes.runs->write(out.runs);
}

CodeStagePlan code_stage_read(const format::Archive& archive, uint32_t radius, uint32_t huffman_chunk_symbols,
                              uint64_t n, const encode::AnsContextShape& ans_shape) {
    using format::SectionKind;
    CodeStagePlan plan;
    if (archive.has(SectionKind::ans_tables)) {
        GSZ_CHECK(!archive.has(SectionKind::huffman_codebook) && !archive.has(SectionKind::huffman_chunks) &&
                      !archive.has(SectionKind::huffman_bitstream) && !archive.has(SectionKind::run_tokens),
                  GSZ_STATUS_CORRUPT, "archive: rANS and Huffman sections together");
        plan.ans = encode::ans_stream_read(archive.section(SectionKind::ans_tables),
                                           archive.section(SectionKind::ans_lanes),
                                           archive.section(SectionKind::ans_stream), n, ans_shape,
                                           encode::ans_lanes_layout(archive.header.format_version),
                                           encode::ans_tables_layout(archive.header.format_version));
        return plan;
    }
    GSZ_CHECK(!archive.has(SectionKind::ans_lanes) && !archive.has(SectionKind::ans_stream), GSZ_STATUS_CORRUPT,
              "archive: rANS lanes or stream without ans_tables");
    uint32_t alphabet = 2 * radius;
    uint64_t symbols = n;
    const auto chunks = archive.section(SectionKind::huffman_chunks);
    if (archive.has(SectionKind::run_tokens)) {
        plan.runs = RunTokensParams::read(archive.section(SectionKind::run_tokens), radius);
        alphabet += plan.runs->classes;
        // Tokens stand for 1 to 2^classes codes each; the expansion checks the exact sum.
        ByteReader in(chunks, "huffman_chunks");
        symbols = in.get<uint64_t>("symbol count");
        GSZ_CHECK(symbols >= 1 && symbols <= n, GSZ_STATUS_CORRUPT, "huffman_chunks: %llu run tokens for %llu codes",
                  static_cast<unsigned long long>(symbols), static_cast<unsigned long long>(n));
    }
    ByteReader book_in(archive.section(SectionKind::huffman_codebook), "huffman_codebook");
    plan.book = encode::huffman_codebook_read(book_in, alphabet);
    book_in.expect_end();
    // The stream view checks the symbol count against the bitstream length
    // (>= 1 bit per symbol) before any buffer of that many symbols is allocated.
    plan.stream = encode::huffman_stream_read(chunks, archive.section(SectionKind::huffman_bitstream), symbols,
                                              archive.header.format_version);
    GSZ_CHECK(plan.stream.chunk_symbols == huffman_chunk_symbols, GSZ_STATUS_CORRUPT,
              "huffman_chunks: chunk of %u symbols, pipeline_params says %u", plan.stream.chunk_symbols,
              huffman_chunk_symbols);
    return plan;
}

void code_stage_decode_cpu(const CodeStagePlan& plan, uint32_t radius, const encode::AnsContextShape& shape,
                           std::span<uint16_t> codes, int num_threads) {
    if (plan.ans) {
        encode::ans_decode_cpu(*plan.ans, radius, shape, codes, num_threads);
        return;
    }
    if (!plan.runs) {
        encode::huffman_decode_cpu(plan.book, plan.stream, codes, num_threads);
        return;
    }
    std::vector<uint16_t> tokens(plan.stream.num_symbols);
    encode::huffman_decode_cpu(plan.book, plan.stream, tokens, num_threads);
    encode::run_tokens_decode_cpu(tokens, plan.runs->dominant, 2 * radius, codes, num_threads);
}

void describe_code_stage(const format::Archive& archive, uint32_t radius, gsz_archive_info& info) {
    if (archive.has(format::SectionKind::ans_tables)) {
        info.lossless = GSZ_LOSSLESS_ANS;
        info.huffman_symbols = 0;
        ByteReader in(archive.section(format::SectionKind::ans_tables), "ans_tables");
        const uint32_t lane_symbols = in.get<uint32_t>("lane length");
        GSZ_CHECK(lane_symbols >= 1 && lane_symbols <= encode::kAnsMaxLaneSymbols, GSZ_STATUS_CORRUPT,
                  "ans_tables: lanes of %u codes", lane_symbols);
        in.get_bytes(4, "levels, classes, alphabet and scale");
        info.ans_class_lag = archive.header.format_version >= 8 ? in.get<uint8_t>("class lag") : 1u;
        const uint32_t strip_log = archive.header.format_version >= 12 ? in.get<uint8_t>("strip width") : 0u;
        info.ans_strip_width = strip_log > 0 && strip_log < 32 ? 1u << strip_log : 0u;
        const uint64_t n = archive.header.num_elements();
        info.ans_lane_symbols = lane_symbols;
        info.ans_lanes = n / lane_symbols + (n % lane_symbols != 0);
        info.ans_lanes_bytes = archive.section(format::SectionKind::ans_lanes).size();
        return;
    }
    info.lossless = GSZ_LOSSLESS_NONE;
    if (archive.has(format::SectionKind::run_tokens)) {
        info.lossless = GSZ_LOSSLESS_RUNS;
        info.run_dominant_code = RunTokensParams::read(archive.section(format::SectionKind::run_tokens), radius).dominant;
    }
    ByteReader in(archive.section(format::SectionKind::huffman_chunks), "huffman_chunks");
    info.huffman_symbols = in.get<uint64_t>("symbol count");
}

}  // namespace gsz::pipeline
