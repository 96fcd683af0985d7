// The lossless stage "runs": tokenization, expansion, rejection of bad token
// streams, and the choice between runs and plain Huffman.
#include "encode/run_tokens.hpp"
#include "pipeline/code_stage.hpp"
#include "runtime/status.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace gsz::encode {
namespace {

constexpr uint32_t kAlphabet = 1024;   // radius 512
constexpr uint16_t kDom = 512;
constexpr uint16_t run(uint32_t k) { return static_cast<uint16_t>(kAlphabet + k - 1); }  // 2^k dominant codes

// Codes with runs of the dominant code: each code is dominant with
// probability p, else a nearby code.
std::vector<uint16_t> runny_codes(size_t n, double p, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::bernoulli_distribution dom(p);
    std::uniform_int_distribution<int> off(-20, 20);
    std::vector<uint16_t> c(n);
    for (auto& x : c) x = dom(rng) ? kDom : static_cast<uint16_t>(kDom + off(rng));
    return c;
}

std::vector<uint16_t> expand(const std::vector<uint16_t>& tokens, size_t n, int threads = 0) {
    std::vector<uint16_t> codes(n, 0xFFFF);
    run_tokens_decode_cpu(tokens, kDom, kAlphabet, codes, threads);
    return codes;
}

TEST(RunTokens, RunsBecomeTheirBinaryDigitsLargestFirst) {
    // 13 = 8 + 4 + 1 dominant codes, a 7, one dominant, two 3s, 2 dominant.
    std::vector<uint16_t> codes(13, kDom);
    codes.push_back(7);
    codes.push_back(kDom);
    codes.push_back(3);
    codes.push_back(3);
    codes.push_back(kDom);
    codes.push_back(kDom);
    const auto tokens = run_tokens_encode_cpu(codes, kDom, kAlphabet, 1);
    const std::vector<uint16_t> want = {run(3), run(2), kDom, 7, kDom, 3, 3, run(1)};
    EXPECT_EQ(tokens, want);
    EXPECT_EQ(expand(tokens, codes.size()), codes);
}

TEST(RunTokens, RunsStopAtSegmentBoundaries) {
    // One run over a whole segment and 5 codes of the next: 2^10, then 4 + 1.
    std::vector<uint16_t> codes(kRunSegment + 5, kDom);
    auto tokens = run_tokens_encode_cpu(codes, kDom, kAlphabet, 1);
    EXPECT_EQ(tokens, (std::vector<uint16_t>{run(10), run(2), kDom}));
    // A run from the middle of one segment into the next is cut at the boundary.
    codes.assign(2 * kRunSegment, 9);
    for (uint32_t i = kRunSegment - 3; i < kRunSegment + 2; ++i) codes[i] = kDom;
    tokens = run_tokens_encode_cpu(codes, kDom, kAlphabet, 1);
    ASSERT_EQ(tokens.size(), 2 * kRunSegment - 5 + 2 + 1);
    EXPECT_EQ(tokens[kRunSegment - 3], run(1));
    EXPECT_EQ(tokens[kRunSegment - 2], kDom);   // 3 = 2 + 1 in the first segment
    EXPECT_EQ(tokens[kRunSegment - 1], run(1)); // 2 in the second
    EXPECT_EQ(expand(tokens, codes.size()), codes);
}

TEST(RunTokens, RoundTripAtAnyDensityAndThreadCount) {
    for (double p : {0.0, 0.3, 0.7, 0.95, 0.999, 1.0}) {
        for (size_t n : {size_t{1}, size_t{1023}, size_t{1024}, size_t{1025}, size_t{300001}}) {
            const auto codes = runny_codes(n, p, static_cast<uint64_t>(n * 1000 * p) + 1);
            const auto one = run_tokens_encode_cpu(codes, kDom, kAlphabet, 1);
            const auto four = run_tokens_encode_cpu(codes, kDom, kAlphabet, 4);
            EXPECT_EQ(one, four) << "p " << p << " n " << n;
            EXPECT_LE(one.size(), codes.size());
            for (uint16_t t : one) EXPECT_LT(t, kAlphabet + kRunClasses);
            EXPECT_EQ(expand(one, n, 1), codes) << "p " << p << " n " << n;
            EXPECT_EQ(expand(one, n, 3), codes) << "p " << p << " n " << n;
        }
    }
    // All dominant: one token per full segment.
    const std::vector<uint16_t> all(50 * kRunSegment, kDom);
    EXPECT_EQ(run_tokens_encode_cpu(all, kDom, kAlphabet, 2).size(), 50u);
}

TEST(RunTokens, ExpansionRejectsBadTokenStreams) {
    const auto codes = runny_codes(5000, 0.9, 7);
    const auto tokens = run_tokens_encode_cpu(codes, kDom, kAlphabet, 1);
    auto rejects = [&](std::vector<uint16_t> t, size_t n) {
        std::vector<uint16_t> out(n);
        try {
            run_tokens_decode_cpu(t, kDom, kAlphabet, out, 2);
        } catch (const Error& e) {
            EXPECT_EQ(e.status(), GSZ_STATUS_CORRUPT) << e.what();
            return true;
        }
        return false;
    };
    EXPECT_TRUE(rejects(tokens, codes.size() + 1));   // lengths add up to less
    EXPECT_TRUE(rejects(tokens, codes.size() - 1));   // to more
    auto t = tokens;
    t.push_back(run(10));                             // 1024 codes too many
    EXPECT_TRUE(rejects(t, codes.size()));
    t = tokens;
    t[t.size() / 2] = static_cast<uint16_t>(kAlphabet + kRunClasses);  // outside the token alphabet
    EXPECT_TRUE(rejects(t, codes.size()));
    for (uint16_t bad : {uint16_t(kAlphabet + kRunClasses), uint16_t{0xFFFF}}) {
        t.assign(5000, bad);                          // many bad tokens must not wrap the sum
        EXPECT_TRUE(rejects(t, codes.size()));
    }
    EXPECT_TRUE(rejects({}, 1));
    EXPECT_FALSE(rejects(tokens, codes.size()));
    std::vector<uint16_t> out(1);
    EXPECT_THROW(run_tokens_decode_cpu(tokens, kAlphabet, kAlphabet, out, 1), Error);  // dominant outside
}

TEST(RunTokens, ChoiceFollowsTheEstimatedSize) {
    using namespace gsz::pipeline;
    const uint32_t radius = kAlphabet / 2;
    const AnsContextShape shape;
    auto choose = [&](const std::vector<uint16_t>& codes, gsz_lossless mode) {
        return code_stage_encode_cpu(codes, radius, shape, mode, 2);
    };
    const auto runny = runny_codes(200000, 0.97, 3);
    const auto noisy = runny_codes(200000, 0.3, 4);
    const auto runny_none = choose(runny, GSZ_LOSSLESS_NONE);
    const auto runny_runs = choose(runny, GSZ_LOSSLESS_RUNS);
    const auto runny_auto = choose(runny, GSZ_LOSSLESS_AUTO);
    EXPECT_FALSE(runny_none.runs.has_value());
    EXPECT_FALSE(runny_none.ans.has_value());
    ASSERT_TRUE(runny_runs.runs.has_value());
    EXPECT_EQ(runny_runs.runs->dominant, kDom);
    // 97% dominant, independent: about 0.35 bits per code of entropy; Huffman alone spends >= 1.
    EXPECT_LT(runny_runs.stream.words.size() * 2, runny_none.stream.words.size())
        << "97% dominant codes: runs should cost under half a bit per code";
    // rANS gets closer to the entropy than run tokens do, and auto sees it.
    ASSERT_TRUE(runny_auto.ans.has_value());
    EXPECT_LT(runny_auto.ans_stream.words.size() * 2 + runny_auto.ans_stream.num_lanes() * 8,
              runny_runs.stream.words.size() * 4);
    EXPECT_LT(runny_auto.ans_stream.words.size() * 16, 0.4 * 200000);
    EXPECT_FALSE(choose(noisy, GSZ_LOSSLESS_AUTO).runs.has_value());  // runs are not promising below 50%
    EXPECT_TRUE(choose(noisy, GSZ_LOSSLESS_RUNS).runs.has_value());   // forced
    // A radius whose alphabet leaves no room for the tokens never uses them.
    EXPECT_FALSE(code_stage_encode_cpu(runny, 32768, shape, GSZ_LOSSLESS_RUNS, 2).runs.has_value());
    EXPECT_TRUE(code_stage_encode_cpu(runny, 32763, shape, GSZ_LOSSLESS_RUNS, 2).runs.has_value());
}

TEST(RunTokens, DigitsGiveTheTokensHistogramAndSampleWholeSegments) {
    // 33 segments, the last of 100 codes: stride 16 samples segments 0, 16 and 32.
    const size_t n = 32 * kRunSegment + 100;
    const auto codes = runny_codes(n, 0.9, 11);
    for (int threads : {1, 3}) {
        const RunDigits all = run_digits_cpu(codes, kDom, kAlphabet, 1, threads);
        EXPECT_EQ(run_token_histogram(histogram_cpu(codes, kAlphabet, 1), kDom, all),
                  histogram_cpu(run_tokens_encode_cpu(codes, kDom, kAlphabet, 1), kAlphabet + kRunClasses, 1));
        for (uint32_t stride : {2u, 3u, 16u, 40u}) {
            SCOPED_TRACE("threads " + std::to_string(threads) + " stride " + std::to_string(stride));
            // Each sampled segment tokenized on its own: runs never cross segments.
            RunDigits want{};
            uint64_t sampled = 0;
            for (size_t s = 0; s * kRunSegment < n; s += stride) {
                const std::span<const uint16_t> seg(codes.data() + s * kRunSegment,
                                                    std::min<size_t>(kRunSegment, n - s * kRunSegment));
                sampled += seg.size();
                const RunDigits d = run_digits_cpu(seg, kDom, kAlphabet, 1, 1);
                for (size_t k = 0; k < want.size(); ++k) want[k] += d[k];
            }
            EXPECT_EQ(run_digits_cpu(codes, kDom, kAlphabet, stride, threads), want);
            EXPECT_EQ(run_sampled_codes(n, stride), sampled);
        }
    }
    EXPECT_EQ(run_sampled_codes(0, 16), 0u);
    EXPECT_EQ(run_sampled_codes(100, 16), 100u);
    EXPECT_EQ(run_sampled_codes(17 * kRunSegment, 16), 2u * kRunSegment);
    EXPECT_EQ(run_sample_stride(kRunSampleMinCodes), 1u);
    EXPECT_EQ(run_sample_stride(kRunSampleMinCodes + 1), 4u);          // about kRunSampleCodes sampled
    EXPECT_EQ(run_sample_stride(uint64_t{455} * 455 * 455), 64u);        // wmagT: 94M codes
    EXPECT_EQ(run_sample_stride(uint64_t{1} << 40), uint32_t{1} << 20);
}

// Above kRunSampleMinCodes, auto first estimates the runs on a sample and skips
// the full count where rANS clearly wins; the choice stays the full count's.
TEST(RunTokens, LargeInputsSkipTheCountOnlyWhereAnsWins) {
    using namespace gsz::pipeline;
    const uint32_t radius = kAlphabet / 2;
    const AnsContextShape shape;
    const size_t n = kRunSampleMinCodes + 5000;
    EXPECT_TRUE(code_stage_sample_runs(GSZ_LOSSLESS_AUTO, radius, n));
    EXPECT_FALSE(code_stage_sample_runs(GSZ_LOSSLESS_AUTO, radius, kRunSampleMinCodes));
    EXPECT_FALSE(code_stage_sample_runs(GSZ_LOSSLESS_RUNS, radius, n));
    EXPECT_FALSE(code_stage_sample_runs(GSZ_LOSSLESS_ANS, radius, n));
    EXPECT_FALSE(code_stage_sample_runs(GSZ_LOSSLESS_AUTO, 32768, n));
    // The choice as if every run had been counted.
    auto full_choice = [&](const std::vector<uint16_t>& codes) {
        const auto hist = histogram_cpu(codes, kAlphabet, 2);
        const auto tokens = run_tokens_encode_cpu(codes, kDom, kAlphabet, 2);
        return code_stage_choose(GSZ_LOSSLESS_AUTO, hist, histogram_cpu(tokens, kAlphabet + kRunClasses, 2), kDom,
                                 ans_histogram_cpu(codes, radius, shape, 2), 1, shape.levels, codes.size());
    };
    auto outclassed = [&](const std::vector<uint16_t>& codes) {
        const auto ans_hist = ans_histogram_cpu(codes, radius, shape, 2);
        return code_stage_runs_outclassed(histogram_cpu(codes, kAlphabet, 2), kDom,
                                          run_digits_cpu(codes, kDom, kAlphabet, run_sample_stride(n), 2), n,
                                          code_stage_ans_bits(ans_hist, shape.levels, 1, n));
    };
    // Independent codes, 97% dominant: rANS near the entropy, skipped.
    const auto runny = runny_codes(n, 0.97, 5);
    EXPECT_TRUE(outclassed(runny));
    const auto got = code_stage_encode_cpu(runny, radius, shape, GSZ_LOSSLESS_AUTO, 2);
    ASSERT_TRUE(got.ans.has_value());
    EXPECT_TRUE(full_choice(runny).ans.has_value());
    EXPECT_EQ(got.ans_stream.words, code_stage_encode_cpu(runny, radius, shape, GSZ_LOSSLESS_ANS, 2).ans_stream.words);
    // Literals far from the dominant code (rANS's escape and extra bits) but of
    // two values (a bit or two in Huffman): the tokens win; counted in full.
    std::vector<uint16_t> far(n, kDom);
    std::mt19937_64 rng(6);
    for (auto& c : far)
        if (rng() % 10 == 0) c = static_cast<uint16_t>(rng() % 2 ? kDom + 400 : kDom - 400);
    EXPECT_FALSE(outclassed(far));
    ASSERT_TRUE(full_choice(far).runs.has_value());
    const auto far_auto = code_stage_encode_cpu(far, radius, shape, GSZ_LOSSLESS_AUTO, 2);
    ASSERT_TRUE(far_auto.runs.has_value());
    EXPECT_EQ(far_auto.stream.words, code_stage_encode_cpu(far, radius, shape, GSZ_LOSSLESS_RUNS, 2).stream.words);
}

// The skip's threshold is exactly 15/16 of the tokens' Huffman floor (one bit
// a token, and the order-0 entropy, + 8 bytes), also where the codes spread
// beyond the bins the floor is first taken over.
TEST(RunTokens, SkipThresholdIsFifteenSixteenthsOfTheTokensFloor) {
    using namespace gsz::pipeline;
    const uint32_t radius = 32763, alphabet = 2 * radius;
    std::vector<uint64_t> hist(alphabet, 0);
    hist[radius] = 6000000;
    for (int v : {-3000, -10, -1, 1, 10, 3000, 20000}) hist[static_cast<size_t>(radius + v)] = 300000 + 1000 * (v & 7);
    uint64_t n = 0;
    for (const uint64_t c : hist) n += c;
    ASSERT_GT(run_sample_stride(n), 1u);
    const RunDigits sample = {900, 500, 300, 200, 100, 50, 20, 5, 2, 1, 700};
    // The reference: the sample scaled, the tokens' histogram built, its floor.
    const double scale = static_cast<double>(n) / static_cast<double>(run_sampled_codes(n, run_sample_stride(n)));
    RunDigits scaled;
    for (size_t k = 0; k < scaled.size(); ++k)
        scaled[k] = static_cast<uint64_t>(std::llround(static_cast<double>(sample[k]) * scale));
    const auto tokens = run_token_histogram(hist, radius, scaled);
    uint64_t total = 0;
    for (const uint64_t c : tokens) total += c;
    double bits = 0;
    for (const uint64_t c : tokens)
        if (c) bits += static_cast<double>(c) * std::log2(static_cast<double>(total) / static_cast<double>(c));
    const double floor_bits = static_cast<double>((std::max<uint64_t>(total, static_cast<uint64_t>(bits)) / 8 + 8) * 8);
    const double at = floor_bits * 15.0 / 16.0;
    EXPECT_TRUE(code_stage_runs_outclassed(hist, radius, sample, n, at * (1 - 1e-9)));
    EXPECT_FALSE(code_stage_runs_outclassed(hist, radius, sample, n, at * (1 + 1e-9)));
    EXPECT_FALSE(code_stage_runs_outclassed(hist, radius, sample, uint64_t{1} << 20, 0.0));  // no sample below 2^22
}

TEST(RunTokens, DominantIsTheMostFrequentSmallestOnTies) {
    EXPECT_EQ(run_dominant_code(std::vector<uint64_t>{1, 5, 5, 2}), 1u);
    EXPECT_TRUE(run_tokens_promising(std::vector<uint64_t>{1, 1, 0, 2}));    // exactly half
    EXPECT_FALSE(run_tokens_promising(std::vector<uint64_t>{1, 1, 1, 2}));
    EXPECT_FALSE(run_tokens_promising(std::vector<uint64_t>{0, 0}));
    // With the total known, a middle bin's strict majority decides without the rest; else the scan.
    const std::vector<std::vector<uint64_t>> cases = {{1, 1, 5, 2}, {3, 0, 3, 0}, {1, 4, 4, 1}, {0, 2, 1, 2}, {7}};
    for (const auto& h : cases) {
        uint64_t total = 0;
        for (const uint64_t c : h) total += c;
        EXPECT_EQ(run_dominant_code(h, total), run_dominant_code(h));
        EXPECT_EQ(run_tokens_promising(h, total), run_tokens_promising(h));
    }
    EXPECT_EQ(run_dominant_code(std::vector<uint64_t>{3, 0, 3, 0}, 6), 0u);  // half is no majority: ties to the smaller
    // interp's alphabet: half of the codes on a bin far outside the 4096 around the middle, or spread outside.
    std::vector<uint64_t> wide(65526, 0);
    wide[32763] = 40, wide[32764] = 10, wide[100] = 50;
    EXPECT_TRUE(run_tokens_promising(wide, 100));
    EXPECT_EQ(run_dominant_code(wide, 100), 100u);
    wide[100] = 49, wide[101] = 1;
    EXPECT_FALSE(run_tokens_promising(wide, 100));
    wide[32763] = 60, wide[100] = 0, wide[101] = 0;
    EXPECT_TRUE(run_tokens_promising(wide, 70));
}

}  // namespace
}  // namespace gsz::encode
