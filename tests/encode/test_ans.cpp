// The context-modelled rANS coder ("ans" lossless stage): symbol mapping,
// contexts, tables, round trips, and that it spends what the model says.
#include "encode/ans.hpp"
#include "encode/huffman.hpp"
#include "encode/run_tokens.hpp"
#include "pipeline/code_stage.hpp"
#include "runtime/status.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>

namespace gsz::encode {
namespace {

TEST(Ans, EveryCodeMapsToASymbolAndBack) {
    for (const uint32_t radius : {1u, 2u, 16u, 17u, 512u, 32763u, 32768u}) {
        for (uint32_t code = 0; code < 2 * radius; ++code) {
            const AnsSymbol s = ans_symbol_of(code, radius);
            ASSERT_LT(s.symbol, kAnsAlphabet);
            ASSERT_EQ(ans_extra_bits(s.symbol), s.extra_bits);
            ASSERT_LT(s.extra, 1u << s.extra_bits);
            ASSERT_EQ(ans_code_of(s.symbol, s.extra, radius), code) << "radius " << radius;
        }
    }
    // Residuals at or beyond the radius are not codes (a corrupt stream's).
    EXPECT_EQ(ans_code_of(kAnsExact + 2, 0, 2), kAnsBadCode);    // v = +2, radius 2
    EXPECT_EQ(ans_code_of(kAnsFirstBucket + 1, 0, 16), kAnsBadCode);  // v = -16, radius 16
    EXPECT_EQ(ans_code_of(kAnsOutlier - 1, 0x7FFF, 32768), kAnsBadCode);  // v = -65535
    EXPECT_EQ(ans_code_of(kAnsOutlier, 0, 512), 0u);
}

TEST(Ans, ClassesFollowTheResidual) {
    const uint32_t r = 100;
    EXPECT_EQ(ans_class_of(r, r), 0u);
    EXPECT_EQ(ans_class_of(r - 1, r), 1u);
    EXPECT_EQ(ans_class_of(r + 2, r), 2u);
    EXPECT_EQ(ans_class_of(r - 4, r), 3u);
    EXPECT_EQ(ans_class_of(r + 8, r), 4u);
    EXPECT_EQ(ans_class_of(r - 15, r), 5u);
    EXPECT_EQ(ans_class_of(r + 16, r), 6u);
    EXPECT_EQ(ans_class_of(0, r), 7u);
    // The class is a function of the symbol: decoders take it before the uniform bits.
    for (uint32_t code = 0; code < 2 * r; ++code)
        ASSERT_EQ(ans_class_of_symbol(ans_symbol_of(code, r).symbol), ans_class_of(code, r)) << code;
}

TEST(Ans, RunAndLaneStartClasses) {
    // A lane's first 16 codes use the lane-start table; then runs of 2..3, 4..15 and 16+ residual-0 codes
    // before a code have classes of their own, and a single zero is class 0.
    EXPECT_EQ(ans_context_class(0, 0, 3), kAnsStartClass);
    EXPECT_EQ(ans_context_class(15, 16, 0), kAnsStartClass);
    EXPECT_EQ(ans_context_class(16, 1, 0), 0u);
    EXPECT_EQ(ans_context_class(16, 2, 0), kAnsShortRunClass);
    EXPECT_EQ(ans_context_class(16, 3, 0), kAnsShortRunClass);
    EXPECT_EQ(ans_context_class(16, 4, 0), kAnsRunClass);
    EXPECT_EQ(ans_context_class(20, 15, 0), kAnsRunClass);
    EXPECT_EQ(ans_context_class(20, 16, 0), kAnsLongRunClass);
    EXPECT_EQ(ans_context_class(30, 0, 5), 5u);
    // The histogram counts by array index.
    const uint32_t r = 8;
    std::vector<uint16_t> codes(16, r);  // indices 0..15: lane start
    for (uint16_t c : {r, r + 1, r, r, r, r, 0u, r}) codes.push_back(c);
    const auto h = ans_histogram_cpu(codes, r, AnsContextShape{}, 1);
    auto count = [&](uint32_t cls, uint32_t code) { return h[cls * kAnsAlphabet + ans_symbol_of(code, r).symbol]; };
    EXPECT_EQ(count(kAnsStartClass, r), 16u);
    EXPECT_EQ(count(kAnsLongRunClass, r), 1u);      // 16: after 16 zeros
    EXPECT_EQ(count(kAnsLongRunClass, r + 1), 1u);  // 17
    EXPECT_EQ(count(1, r), 1u);                     // 18: after a residual of 1
    EXPECT_EQ(count(0, r), 1u);                     // 19: after one zero
    EXPECT_EQ(count(kAnsShortRunClass, r), 2u);     // 20, 21
    EXPECT_EQ(count(kAnsRunClass, 0), 1u);          // 22: an outlier after four zeros
    EXPECT_EQ(count(7, r), 1u);                     // 23: after an outlier
}

TEST(Ans, CursorStepsAndLevels) {
    AnsContextShape shape;
    shape.dims[0] = 5;
    shape.dims[1] = 3;
    shape.levels = 3;
    AnsCursor fwd = shape.cursor();
    fwd.seek(0);
    for (uint64_t i = 0; i < 5 * 3 * 4; ++i, fwd.next()) {
        AnsCursor at = shape.cursor();
        at.seek(i);
        ASSERT_EQ(fwd.x, at.x);
        ASSERT_EQ(fwd.y, at.y);
        ASSERT_EQ(fwd.z, at.z);
        ASSERT_EQ(at.x + 5 * (at.y + 3 * at.z), i);
        if (i > 0) {
            AnsCursor back = at;
            back.prev();
            AnsCursor prev = shape.cursor();
            prev.seek(i - 1);
            ASSERT_EQ(back.x, prev.x);
            ASSERT_EQ(back.y, prev.y);
            ASSERT_EQ(back.z, prev.z);
        }
        // Level: trailing zeros of x | y | z, capped at levels - 1.
        const uint64_t m = at.x | at.y | at.z;
        const uint32_t want = m == 0 ? 2u : std::min<uint32_t>(2u, static_cast<uint32_t>(__builtin_ctzll(m)));
        ASSERT_EQ(at.level(), want);
    }
    AnsContextShape flat;
    AnsCursor c = flat.cursor();
    c.seek(12);
    EXPECT_EQ(c.level(), 0u);
}

// Codes with a two-state memory: runs of the radius broken by small residuals
// and rare outliers, so contexts matter; levels vary with position.
std::vector<uint16_t> markov_codes(uint64_t n, uint32_t radius, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(0, 1);
    std::vector<uint16_t> codes(n);
    bool busy = false;
    for (uint64_t i = 0; i < n; ++i) {
        busy = busy ? u(rng) < 0.7 : u(rng) < 0.05;
        int32_t v = 0;
        if (busy) v = static_cast<int32_t>(std::lround(std::normal_distribution<double>(0, 3)(rng)));
        v = std::clamp<int32_t>(v, -static_cast<int32_t>(radius) + 1, static_cast<int32_t>(radius) - 1);
        codes[i] = u(rng) < 0.002 ? 0 : static_cast<uint16_t>(v + static_cast<int32_t>(radius));
    }
    return codes;
}

AnsStream encode(const std::vector<uint16_t>& codes, uint32_t radius, const AnsContextShape& shape,
                 uint32_t lane_symbols, int threads, AnsTables* tables_out = nullptr,
                 AnsLanesLayout layout = AnsLanesLayout::packed_from_one) {
    const auto hist = ans_histogram_cpu(codes, radius, shape, threads);
    const AnsTables tables = ans_build_tables(hist, shape.levels);
    if (tables_out) *tables_out = tables;
    return ans_encode_cpu(tables, codes, radius, shape, lane_symbols, threads, layout);
}

std::vector<uint16_t> round_trip(const std::vector<uint16_t>& codes, uint32_t radius, const AnsContextShape& shape,
                                 uint32_t lane_symbols, int threads,
                                 AnsLanesLayout layout = AnsLanesLayout::packed_from_one) {
    AnsTables tables;
    const AnsStream s = encode(codes, radius, shape, lane_symbols, threads, &tables, layout);
    ByteWriter t, l, w;
    ans_tables_write(tables, s.lane_symbols, t);
    ans_lanes_write(s, l, layout);
    ans_stream_write(s, w);
    const AnsStreamView view = ans_stream_read(t.bytes(), l.bytes(), w.bytes(), codes.size(), shape.levels, layout);
    EXPECT_EQ(view.lane_state, s.lane_state);
    for (uint64_t lane = 0; lane < s.num_lanes(); ++lane)
        EXPECT_EQ(view.lane_word_offset[lane + 1] - view.lane_word_offset[lane], s.lane_words[lane]);
    std::vector<uint16_t> out(codes.size(), 0xABCD);
    ans_decode_cpu(view, radius, shape, out, threads);
    return out;
}

TEST(Ans, RoundTripsAcrossLanesShapesAndRadii) {
    AnsContextShape interp;
    interp.dims[0] = 37;
    interp.dims[1] = 11;
    interp.levels = 4;
    for (const uint32_t radius : {1u, 3u, 512u, 32768u}) {
        for (const uint64_t n : {uint64_t{1}, uint64_t{255}, uint64_t{256}, uint64_t{257}, uint64_t{5000}}) {
            const auto codes = markov_codes(n, radius, static_cast<uint32_t>(n + radius));
            for (const uint32_t lane : {1u, 64u, 256u, 100000u}) {
                SCOPED_TRACE("radius " + std::to_string(radius) + " n " + std::to_string(n) + " lane " +
                             std::to_string(lane));
                ASSERT_EQ(round_trip(codes, radius, AnsContextShape{}, lane, 2), codes);
                ASSERT_EQ(round_trip(codes, radius, interp, lane, 2), codes);
                ASSERT_EQ(round_trip(codes, radius, interp, lane, 2, AnsLanesLayout::packed), codes);
                ASSERT_EQ(round_trip(codes, radius, interp, lane, 2, AnsLanesLayout::fixed), codes);
            }
        }
    }
    // Every residual a 16-bit code can hold, in one lane and in many.
    std::vector<uint16_t> all(65536);
    for (uint32_t c = 0; c < 65536; ++c) all[c] = static_cast<uint16_t>((c * 40503u) & 0xFFFF);
    EXPECT_EQ(round_trip(all, 32768, AnsContextShape{}, 1u << 20, 1), all);
    EXPECT_EQ(round_trip(all, 32768, interp, 256, 2), all);
}

TEST(Ans, OutputDoesNotDependOnThreads) {
    const auto codes = markov_codes(300000, 512, 7);
    AnsContextShape shape;
    shape.dims[0] = 600;
    shape.levels = 5;
    const AnsStream one = encode(codes, 512, shape, 4096, 1);
    const AnsStream two = encode(codes, 512, shape, 4096, 2);
    EXPECT_EQ(one.words, two.words);
    EXPECT_EQ(one.lane_state, two.lane_state);
    EXPECT_EQ(one.lane_words, two.lane_words);
}

TEST(Ans, TablesSumToTheScaleAndHoldEveryCountedSymbol) {
    const auto codes = markov_codes(100000, 512, 3);
    AnsContextShape shape;
    shape.dims[0] = 100;
    shape.levels = 3;
    const auto hist = ans_histogram_cpu(codes, 512, shape, 2);
    uint64_t total = 0;
    for (const uint64_t c : hist) total += c;
    EXPECT_EQ(total, codes.size());
    const AnsTables t = ans_build_tables(hist, shape.levels);
    for (uint32_t ctx = 0; ctx < t.num_contexts(); ++ctx) {
        uint32_t sum = 0;
        for (uint32_t s = 0; s < kAnsAlphabet; ++s) {
            const uint32_t e = t.entry[ctx * kAnsAlphabet + s];
            if (ctx % kAnsClasses != kAnsStartClass && hist[ctx * kAnsAlphabet + s] > 0) {
                EXPECT_GT(AnsTables::freq(e), 0u);
            }
            if (e) {
                EXPECT_EQ(AnsTables::cum(e), sum);
            }
            sum += AnsTables::freq(e);
        }
        EXPECT_TRUE(sum == 0 || sum == kAnsScale) << "context " << ctx;
    }
    // The lane-start context of a level holds every symbol of that level.
    for (uint32_t level = 0; level < shape.levels; ++level)
        for (uint32_t s = 0; s < kAnsAlphabet; ++s) {
            uint64_t count = 0;
            for (uint32_t c = 0; c < kAnsStartClass; ++c) count += hist[(level * kAnsClasses + c) * kAnsAlphabet + s];
            if (count) {
                EXPECT_GT(t.entry[(level * kAnsClasses + kAnsStartClass) * kAnsAlphabet + s], 0u);
            }
        }
}

TEST(Ans, SpendsWhatTheModelSaysAndBeatsOrderZero) {
    const uint64_t n = 1 << 20;
    const auto codes = markov_codes(n, 512, 11);
    AnsTables tables;
    const AnsContextShape shape;
    const auto hist = ans_histogram_cpu(codes, 512, shape, 2);
    const uint32_t lane = ans_lane_symbols(n, ans_estimated_bits(ans_build_tables(hist, 1), hist));
    const AnsStream s = encode(codes, 512, shape, lane, 2, &tables);
    ByteWriter lanes;
    ans_lanes_write(s, lanes);
    const double lane_bits = 8.0 * static_cast<double>(lanes.size());
    const double coded_bits = 16.0 * static_cast<double>(s.words.size()) + lane_bits;
    const double estimate = static_cast<double>(ans_estimated_bits(tables, hist));
    EXPECT_NEAR(coded_bits / estimate, 1.0, 0.03) << "the words and lanes must match the estimate";
    const double num_lanes = static_cast<double>(s.num_lanes());
    EXPECT_LT(lane_bits, 40.0 * num_lanes) << "packed lanes: ~36 bits each";
    // What the lanes add to the symbols' cost: less than their section, since
    // states that start at 1 hold some of the symbols' bits (23 here, 28-29
    // on real fields), and what the lane length assumes at most.
    const double net = (coded_bits - estimate) / num_lanes;
    EXPECT_GT(net, 0.0);
    EXPECT_LT(net, lane_bits / num_lanes - 4.0);
    EXPECT_LT(net, kAnsLaneBitsEstimate + 1.0) << s.num_lanes() << " lanes";
    // Order-0 entropy of the codes themselves: what any context-free coder pays at best.
    std::vector<double> f(1024, 0);
    for (const uint16_t c : codes) f[c] += 1;
    double h0 = 0;
    for (const double c : f)
        if (c > 0) h0 += c * std::log2(static_cast<double>(n) / c);
    // The entropy of a code given the previous code's class: what this model can reach.
    std::vector<std::vector<double>> g(8, std::vector<double>(1024, 0));
    for (uint64_t i = 0; i < n; ++i) g[i ? ans_class_of(codes[i - 1], 512) : 0][codes[i]] += 1;
    double h1 = 0;
    for (const auto& row : g) {
        double total = 0;
        for (const double c : row) total += c;
        for (const double c : row)
            if (c > 0) h1 += c * std::log2(total / c);
    }
    EXPECT_LT(coded_bits, 1.05 * h1) << "within 5% of the context model's entropy (tables are 12-bit)";
    EXPECT_LT(coded_bits, 0.9 * h0) << "the previous code's context must pay off on a Markov source";
    // The lanes' states and counts stay near 1 / kAnsLanePayloadShare of the
    // payload (at ~36 bits of section a lane against the 29 the share counts).
    const double share = 36.0 / (static_cast<double>(kAnsLanePayloadShare) * kAnsLaneBitsEstimate);
    EXPECT_LT(lane_bits, 1.25 * share * coded_bits);
    EXPECT_GT(lane_bits, 0.5 * share * coded_bits) << "as many lanes as the share allows, for the GPU";
}

// Lanes: 4% of the payload at ~29 bits each (the packed layout's ~36 less
// what a state started at 1 holds), at most 2^17 of them (what a GPU decodes
// at once), lengths a multiple of 64 and at least 256.
TEST(Ans, LaneLengthKeepsItsShareUpToTheGpusLanes) {
    const auto lanes = [](uint64_t n, uint64_t bits) {
        const uint64_t s = ans_lane_symbols(n, bits);
        EXPECT_EQ(s % 64, 0u);
        EXPECT_GE(s, 256u);
        return (n + s - 1) / s;
    };
    // etopoT at rel 1e-2 (75M codes at ~0.45 bits): 4% gives ~46.3K lanes,
    // less up to 4% where the lane length (~1,600 codes) rounds up to 64.
    EXPECT_EQ(kAnsLanePayloadShare, 25u);
    EXPECT_NEAR(static_cast<double>(lanes(74'680'320, 33'600'000)), 33'600'000.0 / 725 * 0.98, 0.02 * 33'600'000.0 / 725);
    // wmagT at rel 1e-4 (94M codes at ~7.9 bits): 4% would be 826K lanes; the cap holds it to 2^17.
    const uint64_t capped = lanes(94'196'375, 744'000'000);
    EXPECT_LE(capped, kAnsMaxLanes);
    EXPECT_GT(capped, kAnsMaxLanes * 9 / 10);
    // A small, highly compressible field: one lane; a small dense one: lanes of 256 codes.
    EXPECT_EQ(lanes(3000, 100), 1u);
    EXPECT_EQ(ans_lane_symbols(100000, 1'000'000'000), 256u);
}

TEST(Ans, ReaderRejectsInconsistentSections) {
    const auto codes = markov_codes(3000, 512, 5);
    for (const AnsLanesLayout layout :
         {AnsLanesLayout::packed_from_one, AnsLanesLayout::packed, AnsLanesLayout::fixed}) {
        AnsTables tables;
        const AnsStream s = encode(codes, 512, AnsContextShape{}, 256, 1, &tables, layout);
        ByteWriter t, l, w;
        ans_tables_write(tables, s.lane_symbols, t);
        ans_lanes_write(s, l, layout);
        ans_stream_write(s, w);
        EXPECT_NO_THROW(ans_stream_read(t.bytes(), l.bytes(), w.bytes(), codes.size(), 1, layout));
        // The same sections claimed for another code count or level count.
        EXPECT_THROW(ans_stream_read(t.bytes(), l.bytes(), w.bytes(), codes.size() + 256, 1, layout), Error);
        EXPECT_THROW(ans_stream_read(t.bytes(), l.bytes(), w.bytes(), codes.size() - 256, 1, layout), Error);
        EXPECT_THROW(ans_stream_read(t.bytes(), l.bytes(), w.bytes(), codes.size(), 2, layout), Error);
        auto odd = w.bytes();
        odd.push_back(0);
        EXPECT_THROW(ans_stream_read(t.bytes(), l.bytes(), odd, codes.size(), 1, layout), Error);
        // A lanes section cut short or with a byte more.
        auto cut = l.bytes();
        cut.pop_back();
        EXPECT_THROW(ans_stream_read(t.bytes(), cut, w.bytes(), codes.size(), 1, layout), Error);
        auto longer = l.bytes();
        longer.push_back(0);
        EXPECT_THROW(ans_stream_read(t.bytes(), longer, w.bytes(), codes.size(), 1, layout), Error);
        // Lanes written for one start state and read for the other.
        if (layout != AnsLanesLayout::fixed) {
            const AnsLanesLayout other =
                layout == AnsLanesLayout::packed ? AnsLanesLayout::packed_from_one : AnsLanesLayout::packed;
            bool threw = false;
            std::vector<uint16_t> out(codes.size());
            try {
                ans_decode_cpu(ans_stream_read(t.bytes(), l.bytes(), w.bytes(), codes.size(), 1, other), 512,
                               AnsContextShape{}, out, 1);
            } catch (const Error&) {
                threw = true;
            }
            EXPECT_TRUE(threw);
            ByteWriter l2;
            EXPECT_THROW(ans_lanes_write(s, l2, other), Error) << "a stream is written in its own layout only";
        }
    }
}

// Lanes that start at state 1 (format version 11) carry less than lanes
// started at 2^16 (whose first 16 bits come out again), and a lane may end
// without a word: its whole content is in the final state.
TEST(Ans, LanesStartedAtOneCostLessAndMayHaveNoWords) {
    const uint64_t n = 1 << 18;
    const auto codes = markov_codes(n, 512, 21);
    const auto bytes_of = [&](AnsLanesLayout layout, uint32_t lane) {
        AnsTables tables;
        const AnsStream s = encode(codes, 512, AnsContextShape{}, lane, 2, &tables, layout);
        ByteWriter l;
        ans_lanes_write(s, l, layout);
        return 2 * s.words.size() + l.size();
    };
    for (const uint32_t lane : {256u, 1024u, 4096u}) {
        const uint64_t lanes = n / lane;
        const uint64_t from_one = bytes_of(AnsLanesLayout::packed_from_one, lane);
        const uint64_t from_2_16 = bytes_of(AnsLanesLayout::packed, lane);
        EXPECT_LT(8 * from_one + 4 * lanes, 8 * from_2_16) << "at least 4 bits a lane less; lane " << lane;
    }
    // All zero residuals but a few: lanes of 64 codes fit their state.
    std::vector<uint16_t> quiet(4096, 512);
    quiet[100] = 513;
    quiet[3000] = 0;
    AnsTables tables;
    const AnsStream s = encode(quiet, 512, AnsContextShape{}, 64, 2, &tables);
    uint64_t wordless = 0;
    for (uint64_t lane = 0; lane < s.num_lanes(); ++lane) {
        wordless += s.lane_words[lane] == 0;
        if (s.lane_words[lane] == 0) {
            EXPECT_LT(s.lane_state[lane], 1u << 16);
        } else {
            EXPECT_GE(s.lane_state[lane], 1u << 16);
        }
    }
    EXPECT_GT(wordless, s.num_lanes() / 2);
    EXPECT_EQ(round_trip(quiet, 512, AnsContextShape{}, 64, 2), quiet);
}

// The packed lanes (format version 7): the states and counts come back
// exactly at every bit length and count size, and a hostile section (a
// count's code longer than any count, an order out of range, padding bits
// set, more words than a lane may have) is rejected before any decoding.
TEST(Ans, SmallFieldsShareTables) {
    AnsContextShape shape;
    shape.dims[0] = 3000;
    shape.levels = 4;
    const uint32_t radius = 512;
    const auto codes = markov_codes(3000, radius, 7);
    const auto hist = ans_histogram_cpu(codes, radius, shape, 1);
    const AnsTables own = ans_build_tables(hist, shape.levels, false);
    const AnsTables shared = ans_build_tables(hist, shape.levels);
    EXPECT_TRUE(own.source.empty());
    ASSERT_EQ(shared.source.size(), shared.num_contexts());
    uint32_t refs = 0;
    for (uint32_t ctx = 0; ctx < shared.num_contexts(); ++ctx) {
        const uint32_t src = shared.source[ctx];
        const uint32_t* e = shared.entry.data() + size_t{ctx} * kAnsAlphabet;
        if (src != ctx) {
            ++refs;
            ASSERT_LT(src, ctx);
            ASSERT_EQ(shared.source[src], src) << "a reference names a table of its own";
            ASSERT_TRUE(std::equal(e, e + kAnsAlphabet, shared.entry.data() + size_t{src} * kAnsAlphabet));
        }
        uint32_t sum = 0;
        for (uint32_t s = 0; s < kAnsAlphabet; ++s) {
            sum += AnsTables::freq(e[s]);
            if (hist[size_t{ctx} * kAnsAlphabet + s]) {
                ASSERT_GT(AnsTables::freq(e[s]), 0u) << ctx << " " << s;
            }
        }
        ASSERT_TRUE(sum == 0 || sum == kAnsScale) << ctx;
    }
    EXPECT_GT(refs, 0u);
    EXPECT_LT(ans_estimated_bytes(shared, hist, codes.size()), ans_estimated_bytes(own, hist, codes.size()));
    // What the estimate says is what the sections take.
    const AnsStream s = ans_encode_cpu(shared, codes, radius, shape, 3000, 1);
    ByteWriter t, l, w;
    ans_tables_write(shared, s.lane_symbols, t);
    ans_lanes_write(s, l);
    ans_stream_write(s, w);
    EXPECT_EQ(t.size(), ans_tables_bytes(shared));
    const AnsStreamView view = ans_stream_read(t.bytes(), l.bytes(), w.bytes(), codes.size(), shape.levels,
                                               AnsLanesLayout::packed_from_one);
    EXPECT_EQ(view.tables.entry, shared.entry);
    EXPECT_EQ(view.tables.source, shared.source);
    std::vector<uint16_t> out(codes.size());
    ans_decode_cpu(view, radius, shape, out, 1);
    EXPECT_EQ(out, codes);
    // Before version 8 a context's used byte is at most 56: 0xFF is corrupt there.
    EXPECT_THROW(ans_stream_read(t.bytes(), l.bytes(), w.bytes(), codes.size(), shape.levels,
                                 AnsLanesLayout::packed_from_one, AnsTablesLayout::plain),
                 Error);
    // A large field's tables are a sliver of its codes: no sharing, no time spent on it.
    const auto big = markov_codes(1 << 20, radius, 8);
    AnsContextShape flat;
    flat.dims[0] = big.size();
    EXPECT_TRUE(ans_build_tables(ans_histogram_cpu(big, radius, flat, 2), 1).source.empty());
}

AnsContextShape plane(uint64_t nx, uint64_t ny, uint32_t levels) {
    AnsContextShape shape;
    shape.dims[0] = nx;
    shape.dims[1] = ny;
    shape.levels = levels;
    return shape;
}

TEST(Ans, ClassLagTwoTakesTheCodeTwoBack) {
    const AnsContextShape shape = plane(64, 40, 3);
    const uint32_t radius = 512;
    const auto codes = markov_codes(64 * 40, radius, 11);
    const auto h2 = ans_histogram_cpu(codes, radius, shape, 2, 2);
    // Counted directly: the class of the code two back from the 17th code on.
    std::vector<uint64_t> want(h2.size(), 0);
    AnsCursor cur = shape.cursor();
    uint32_t zeros = 0;
    for (uint64_t i = 0; i < codes.size(); ++i, cur.next()) {
        const uint32_t cls = ans_context_class(i, zeros, i >= 2 ? ans_class_of(codes[i - 2], radius) : 0u);
        ++want[(size_t{cur.level()} * kAnsClasses + cls) * kAnsAlphabet + ans_symbol_of(codes[i], radius).symbol];
        zeros = codes[i] == radius ? std::min(zeros + 1, kAnsLookBack) : 0;
    }
    EXPECT_EQ(h2, want);
    EXPECT_NE(h2, ans_histogram_cpu(codes, radius, shape, 2, 1));
    // Encoded and decoded with lag 2, through the sections (the lag is their byte 8).
    const AnsTables tables = ans_build_tables(h2, shape.levels, true, 2);
    EXPECT_EQ(tables.class_lag, 2u);
    for (const uint32_t lane : {256u, 700u}) {
        const AnsStream st = ans_encode_cpu(tables, codes, radius, shape, lane, 2);
        ByteWriter t, l, w;
        ans_tables_write(tables, lane, t);
        ans_lanes_write(st, l);
        ans_stream_write(st, w);
        EXPECT_EQ(t.bytes()[8], 2);
        const AnsStreamView view = ans_stream_read(t.bytes(), l.bytes(), w.bytes(), codes.size(), shape.levels,
                                                   AnsLanesLayout::packed_from_one);
        EXPECT_EQ(view.tables.class_lag, 2u);
        std::vector<uint16_t> out(codes.size());
        ans_decode_cpu(view, radius, shape, out, 2);
        EXPECT_EQ(out, codes);
        // Decoded with the other lag, the same words are a different (corrupt or wrong) stream.
        auto bad = t.bytes();
        bad[8] = 1;
        const AnsStreamView other = ans_stream_read(bad, l.bytes(), w.bytes(), codes.size(), shape.levels,
                                                    AnsLanesLayout::packed_from_one);
        std::vector<uint16_t> wrong(codes.size());
        bool threw = false;
        try {
            ans_decode_cpu(other, radius, shape, wrong, 2);
        } catch (const Error&) {
            threw = true;
        }
        EXPECT_TRUE(threw || wrong != codes);
        for (const uint8_t lag : {uint8_t{0}, uint8_t{3}}) {
            bad[8] = lag;
            EXPECT_THROW(ans_stream_read(bad, l.bytes(), w.bytes(), codes.size(), shape.levels,
                                         AnsLanesLayout::packed_from_one),
                         Error);
        }
    }
    // The layout of versions 3-7 has no lag byte and no lag 2.
    ByteWriter t;
    EXPECT_THROW(ans_tables_write(tables, 256, t, AnsTablesLayout::plain), Error);
}

TEST(Ans, ClassLagSampleAndChoice) {
    const AnsContextShape shape = plane(1000, 300, 4);
    const uint32_t radius = 512;
    const auto codes = markov_codes(1000 * 300, radius, 12);
    for (const uint32_t lag : {1u, 2u}) {
        // The sample: every 16th chunk of 64 codes, each counted as in the full histogram.
        const auto sampled = ans_histogram_cpu(codes, radius, shape, 2, lag, 16);
        std::vector<uint64_t> want(sampled.size(), 0);
        const auto full = ans_histogram_cpu(codes, radius, shape, 1, lag);
        uint64_t total = 0;
        for (uint64_t begin = 0; begin < codes.size(); begin += 16 * kAnsSampleChunk) {
            // A chunk's counts: the full histogram of codes [0, end) less that of [0, begin) is not
            // separable, so count the chunk alone with the same rule.
            AnsCursor cur = shape.cursor();
            cur.seek(begin);
            uint32_t zeros = 0;
            for (uint64_t k = 1; k <= kAnsLookBack && k <= begin && codes[begin - k] == radius; ++k) ++zeros;
            for (uint64_t i = begin; i < std::min<uint64_t>(codes.size(), begin + kAnsSampleChunk); ++i, cur.next()) {
                const uint32_t cls =
                    ans_context_class(i, zeros, i >= kAnsLookBack ? ans_class_of(codes[i - lag], radius) : 0u);
                ++want[(size_t{cur.level()} * kAnsClasses + cls) * kAnsAlphabet +
                       ans_symbol_of(codes[i], radius).symbol];
                zeros = codes[i] == radius ? std::min(zeros + 1, kAnsLookBack) : 0;
                ++total;
            }
        }
        EXPECT_EQ(sampled, want) << "lag " << lag;
        uint64_t counted = 0;
        for (const uint64_t c : sampled) counted += c;
        EXPECT_EQ(counted, total);
        EXPECT_LT(counted * 10, codes.size()) << "a sixteenth";
        EXPECT_EQ(ans_histogram_cpu(codes, radius, shape, 2, lag, 1), full);
    }
    EXPECT_EQ(ans_class_lag_sample_stride(kAnsFullLagHistogramCodes), 1u);
    EXPECT_EQ(ans_class_lag_sample_stride(kAnsFullLagHistogramCodes + 1), kAnsLagSampleStride);
    // The choice is the smaller estimate: a histogram against itself ties (lag 1), and codes whose odd
    // ones follow a slow regime (loud or quiet) while the even ones are noise of their own want the
    // code two back (interp's level-0 points between coarser ones).
    const auto h1 = ans_histogram_cpu(codes, radius, shape, 2, 1);
    EXPECT_EQ(ans_choose_class_lag(h1, h1, shape.levels, codes.size()), 1u);
    std::vector<uint16_t> alternating(codes.size());
    std::mt19937 rng(5);
    std::uniform_real_distribution<double> u(0, 1);
    bool loud = false;
    for (size_t i = 0; i < alternating.size(); ++i) {
        if (i % 2) loud = loud ? u(rng) < 0.98 : u(rng) < 0.02;
        const double sd = i % 2 ? (loud ? 30 : 0.3) : 3;
        const int v = static_cast<int>(std::lround(std::normal_distribution<double>(0, sd)(rng)));
        alternating[i] = static_cast<uint16_t>(static_cast<int>(radius) + std::clamp(v, -500, 500));
    }
    const auto a1 = ans_histogram_cpu(alternating, radius, shape, 2, 1);
    const auto a2 = ans_histogram_cpu(alternating, radius, shape, 2, 2);
    uint64_t chosen_bits = 0;
    EXPECT_EQ(ans_choose_class_lag(a1, a2, shape.levels, alternating.size(), &chosen_bits), 2u);
    // The chosen lag's estimate comes back with it (what its own tables give).
    EXPECT_EQ(chosen_bits, ans_estimated_bits(ans_build_tables(a2, shape.levels, true, 2), a2));
    EXPECT_EQ(ans_choose_class_lag(h1, h1, shape.levels, codes.size(), &chosen_bits), 1u);
    EXPECT_EQ(chosen_bits, ans_estimated_bits(ans_build_tables(h1, shape.levels, true, 1), h1));
}

// The candidates' estimates (the layout choice's numbers) are what their
// built tables give, whether estimated without the tables (unshared) or from
// them (shared, small fields), for full histograms and samples, raster and
// strips, both class lags.
TEST(Ans, CandidateEstimatesAreTheBuiltTables) {
    const uint32_t radius = 512;
    for (const auto& [nx, ny, levels] : std::vector<std::tuple<uint64_t, uint64_t, uint32_t>>{
             {1000, 300, 4}, {256, 64, 3}, {64, 16, 1}, {4096, 40, 5}}) {
        const AnsContextShape shape = plane(nx, ny, levels);
        auto codes = markov_codes(nx * ny, radius, static_cast<uint32_t>(nx + ny));
        for (size_t i = 0; i < codes.size(); i += 37)  // residuals beyond the exact ones (uniform bits)
            if (codes[i] != 0) codes[i] = static_cast<uint16_t>(radius + 20 + i % 300);
        const uint32_t strip = ans_strip_width_for(shape);
        for (const uint32_t width : {0u, strip})
        for (const uint32_t lag : {1u, 2u})
        for (const uint32_t stride : {1u, kAnsLagSampleStride}) {
            SCOPED_TRACE(std::to_string(nx) + "x" + std::to_string(ny) + " levels " + std::to_string(levels) +
                         " strips " + std::to_string(width) + " lag " + std::to_string(lag) + " stride " +
                         std::to_string(stride));
            const AnsContextShape coded = shape.with_strips(width);
            const auto hist = ans_histogram_cpu(codes, radius, coded, 2, lag, stride);
            uint64_t counted = 0;
            for (const uint64_t c : hist) counted += c;
            for (const uint64_t n : {uint64_t{codes.size()}, uint64_t{codes.size()} * 1000}) {
                const AnsCandidate candidate{hist, lag, width};
                const auto e = ans_estimate_candidates(std::span(&candidate, 1), levels, n);
                ASSERT_EQ(e.size(), 1u);
                const AnsTables t = ans_build_tables(hist, levels, width == 0, lag, width, n);
                const uint64_t bits = ans_estimated_bits(t, hist);
                const uint64_t n_bits = counted == n ? bits
                                                     : static_cast<uint64_t>(static_cast<double>(bits) *
                                                                             static_cast<double>(n) /
                                                                             static_cast<double>(counted));
                EXPECT_EQ(e[0].bits, bits) << "n " << n;
                EXPECT_EQ(e[0].bytes, ans_estimated_bytes(t, n_bits, n)) << "n " << n;
            }
        }
    }
}

// The CPU decoder's lookup gives every slot the symbol whose slots hold it,
// and none in a context without a table.
TEST(Ans, DecodeTableFindsEverySlotsSymbol) {
    const uint32_t radius = 512;
    auto codes = markov_codes(200000, radius, 9);
    for (size_t i = 0; i < codes.size(); i += 13)  // many symbols: bucket residuals, outliers
        codes[i] = static_cast<uint16_t>(i % 29 == 0 ? 0 : radius - 300 + i % 600);
    const AnsContextShape shape = plane(500, 400, 3);
    auto hist = ans_histogram_cpu(codes, radius, shape, 2, 1);
    std::fill_n(hist.begin() + (2 * kAnsClasses + 3) * kAnsAlphabet, kAnsAlphabet, 0);  // a context without a table
    const AnsTables tables = ans_build_tables(hist, shape.levels, false, 1);
    const AnsDecodeTable table = ans_decode_table(tables);
    uint32_t with_table = 0, walked = 0;
    for (uint32_t ctx = 0; ctx < tables.num_contexts(); ++ctx) {
        const uint32_t* e = tables.entry.data() + size_t{ctx} * kAnsAlphabet;
        const bool has = std::any_of(e, e + kAnsAlphabet, [](uint32_t v) { return v != 0; });
        with_table += has;
        for (uint32_t slot = 0; slot < kAnsScale; ++slot) {
            uint32_t want = 0xFF;
            for (uint32_t s = 0; s < kAnsAlphabet; ++s)
                if (e[s] && AnsTables::cum(e[s]) <= slot && slot < AnsTables::cum(e[s]) + AnsTables::freq(e[s])) want = s;
            ASSERT_EQ(ans_decode_symbol(table, ctx, slot), want) << "context " << ctx << " slot " << slot;
            walked += want != 0xFF && want != table.bucket[size_t{ctx} * (kAnsScale >> kAnsDecodeBucketBits) +
                                                           (slot >> kAnsDecodeBucketBits)];
        }
    }
    EXPECT_GT(with_table, 10u);
    EXPECT_LT(with_table, tables.num_contexts()) << "some contexts without a table";
    EXPECT_GT(walked, 0u) << "buckets holding several symbols";
}

TEST(Ans, TableReferencesAreChecked) {
    const auto codes = markov_codes(3000, 512, 9);
    const AnsTables base = ans_build_tables(ans_histogram_cpu(codes, 512, AnsContextShape{}, 1), 1, false);
    std::vector<uint32_t> with_table;
    for (uint32_t ctx = 0; ctx < base.num_contexts(); ++ctx)
        if (base.entry[size_t{ctx} * kAnsAlphabet + kAnsExact]) with_table.push_back(ctx);
    ASSERT_GE(with_table.size(), 4u);
    uint32_t unused = 0;
    while (unused < base.num_contexts() &&
           std::find(with_table.begin(), with_table.end(), unused) != with_table.end())
        ++unused;
    const uint32_t a = with_table[0], b = with_table[1], c = with_table[2];
    auto read_with = [&](std::vector<std::pair<uint32_t, uint32_t>> refs) {
        AnsTables t = base;
        t.source.resize(t.num_contexts());
        for (uint32_t ctx = 0; ctx < t.num_contexts(); ++ctx) t.source[ctx] = static_cast<uint8_t>(ctx);
        for (const auto& [ctx, src] : refs) t.source[ctx] = static_cast<uint8_t>(src);
        ByteWriter tw;
        ans_tables_write(t, 3000, tw);
        const uint8_t lanes[8] = {};
        try {
            ans_stream_read(tw.bytes(), lanes, {}, codes.size(), 1, AnsLanesLayout::packed);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("read");
    };
    EXPECT_EQ(read_with({{b, a}}).find("repeats"), std::string::npos) << "a valid reference gets past the tables";
    EXPECT_NE(read_with({{a, b}}).find("repeats context"), std::string::npos) << "a later context";
    EXPECT_NE(read_with({{c, b}, {b, a}}).find("repeats context"), std::string::npos) << "a reference to a reference";
    if (unused < base.num_contexts() && unused < c) {
        EXPECT_NE(read_with({{c, unused}}).find("repeats context"), std::string::npos) << "a context without a table";
    }
}

TEST(Ans, PackedLanesRoundTripAndRejectHostileBits) {
    for (const AnsLanesLayout layout : {AnsLanesLayout::packed_from_one, AnsLanesLayout::packed}) {
        const bool from_one = layout == AnsLanesLayout::packed_from_one;
        SCOPED_TRACE(from_one ? "lanes from state 1" : "lanes from state 2^16");
        AnsStream s;
        s.num_symbols = 40 * 1024;
        s.lane_symbols = 1024;
        s.start_state = ans_start_state(layout);
        std::mt19937 rng(3);
        for (uint32_t lane = 0; lane < 40; ++lane) {
            // counts from 0 to the most a lane may hold (2 words per code)
            const uint32_t words = lane == 39 ? 2048u : lane % 7 == 0 ? 0u : static_cast<uint32_t>(rng() % 700);
            // every state bit length: from 1 a lane without words ends below 2^16
            const uint32_t top = from_one && words == 0 ? lane % 32 : 16 + lane % 16;
            s.lane_state.push_back(1u << top | (static_cast<uint32_t>(rng()) & ((1u << top) - 1u)));
            s.lane_words.push_back(words);
        }
        uint64_t total = 0;
        for (const uint32_t w : s.lane_words) total += w;
        s.words.assign(total, 0);
        AnsTables tables = ans_build_tables(std::vector<uint64_t>(kAnsClasses * kAnsAlphabet, 1), 1);
        ByteWriter t, l, w;
        ans_tables_write(tables, s.lane_symbols, t);
        ans_lanes_write(s, l, layout);
        ans_stream_write(s, w);
        EXPECT_LT(8 * l.size(), 40u * 40u) << "packed lanes: ~28 bits of state, the counts' bits; the fixed layout 64";
        const AnsStreamView v = ans_stream_read(t.bytes(), l.bytes(), w.bytes(), s.num_symbols, 1, layout);
        EXPECT_EQ(v.lane_state, s.lane_state);
        EXPECT_EQ(v.start_state, s.start_state);
        for (uint32_t lane = 0; lane < 40; ++lane)
            EXPECT_EQ(v.lane_word_offset[lane + 1] - v.lane_word_offset[lane], s.lane_words[lane]) << lane;

        const auto read = [&](std::vector<uint8_t> lanes) {
            return ans_stream_read(t.bytes(), lanes, w.bytes(), s.num_symbols, 1, layout);
        };
        auto bad_order = l.bytes();
        bad_order[0] = 26;
        EXPECT_THROW(read(bad_order), Error);
        // The last byte's top bit: a padding bit (rejected as such) or the last
        // bit of the last lane's count code (its count no longer adds up to
        // the stream, or the count's run reads past the end); from 1, where
        // the state comes last, one of the state's bits (a state the lane's
        // decoder then rejects).
        auto padding = l.bytes();
        padding.back() ^= 0x80;
        if (!from_one) {
            EXPECT_THROW(read(padding), Error);
        } else {
            try {
                EXPECT_NE(read(padding).lane_state.back(), s.lane_state.back());
            } catch (const Error&) {
            }
        }
        // A first lane whose count's code is all zeros: longer than any count.
        std::vector<uint8_t> zeros(l.size() + 8, 0);
        zeros[0] = l.bytes()[0];
        if (!from_one) {  // the state first: bit length 31, then bits; the count's code from bit 35
            zeros[1] = 0xFF;
            zeros[2] = 0xFF;
            zeros[3] = 0xFF;
            zeros[4] = 0xFF;
        }
        EXPECT_THROW(read(zeros), Error);
        // One more word than a lane may hold (2 per code).
        AnsStream over = s;
        over.lane_words[3] = 2049;
        over.words.push_back(0);
        ByteWriter lo, wo;
        ans_lanes_write(over, lo, layout);
        ans_stream_write(over, wo);
        EXPECT_THROW(ans_stream_read(t.bytes(), lo.bytes(), wo.bytes(), s.num_symbols, 1, layout), Error);
        // A lane with words whose state is below 2^16 cannot be written.
        AnsStream low = s;
        low.lane_state[1] = 0xFFFF;
        ByteWriter ll;
        EXPECT_THROW(ans_lanes_write(low, ll, layout), Error);
    }
}

// The auto choice skips the codebook builds when rANS beats every Huffman
// code's lower bound; it must then choose exactly what the full comparison
// (both codebooks built, every estimate) chooses.
TEST(Ans, AutoChoiceMatchesTheFullComparison) {
    int ans_wins = 0, huffman_wins = 0;
    for (const double quiet : {0.02, 0.05, 0.2, 0.6}) {
        for (const uint32_t seed : {1u, 2u, 3u, 4u}) {
            // Runs of the zero residual broken by busy stretches (quiet: how often one starts).
            // Seed 4: interp's radius, busy codes spread beyond the bins the codes' floor is first
            // taken over (kMiddleWindowBins), so that only the whole histogram's floor decides.
            std::mt19937 rng(seed);
            std::uniform_real_distribution<double> u(0, 1);
            const int32_t radius = seed == 4 ? 32763 : 512;
            std::vector<uint16_t> codes(200000);
            bool busy = false;
            for (auto& c : codes) {
                busy = busy ? u(rng) < 0.8 : u(rng) < quiet;
                const double sd = seed == 4 ? 3000 : seed == 3 ? 40 : 2;
                const int32_t v = busy ? static_cast<int32_t>(std::lround(std::normal_distribution<double>(0, sd)(rng))) : 0;
                c = static_cast<uint16_t>(std::clamp<int32_t>(v, 1 - radius, radius - 1) + radius);
            }
            AnsContextShape shape;
            const uint32_t alphabet = 2 * radius;
            const auto code_hist = histogram_cpu(codes, alphabet, 2);
            const uint32_t dominant = run_dominant_code(code_hist);
            const auto tokens = run_tokens_encode_cpu(codes, dominant, alphabet, 2);
            const auto token_hist = histogram_cpu(tokens, alphabet + kRunClasses, 2);
            const auto ans_hist = ans_histogram_cpu(codes, radius, shape, 2);
            const auto choice = pipeline::code_stage_choose(GSZ_LOSSLESS_AUTO, code_hist, token_hist, dominant,
                                                            ans_hist, 1, shape.levels, codes.size());
            // The full comparison.
            const AnsTables tables = ans_build_tables(ans_hist, shape.levels);
            const uint64_t ans_bytes = ans_estimated_bytes(tables, ans_hist, codes.size());
            const uint64_t plain =
                huffman_estimated_bytes(huffman_build(code_hist), code_hist, pipeline::kHuffmanChunkSymbols);
            const uint64_t runs =
                huffman_estimated_bytes(huffman_build(token_hist), token_hist, pipeline::kHuffmanChunkSymbols) + 8;
            SCOPED_TRACE("quiet " + std::to_string(quiet) + " seed " + std::to_string(seed) + ": ans " +
                         std::to_string(ans_bytes) + ", plain " + std::to_string(plain) + ", runs " +
                         std::to_string(runs));
            const bool want_ans = ans_bytes < std::min(plain, runs);
            EXPECT_EQ(choice.ans.has_value(), want_ans);
            if (!want_ans) {
                EXPECT_EQ(choice.runs.has_value(), runs < plain);
            }
            (want_ans ? ans_wins : huffman_wins) += 1;
        }
    }
    EXPECT_GT(ans_wins, 0);  // both outcomes are exercised
    EXPECT_GT(huffman_wins, 0);
}

}  // namespace
// Column strips (format version 12): the coding order walks blocks of W
// columns row by row, and a code's context adds the activity of the row above.
TEST(AnsStrips, CursorWalksBlocksRowByRowOverEveryIndexOnce) {
    for (const auto& dims : std::vector<std::array<uint64_t, 3>>{{64, 9, 1}, {96, 7, 1}, {32, 5, 3}, {256, 2, 2}}) {
        AnsContextShape shape;
        std::copy(dims.begin(), dims.end(), shape.dims);
        shape.levels = 3;
        const uint32_t w = ans_strip_width_for(shape);
        ASSERT_GE(w, kAnsMinStripWidth);
        ASSERT_EQ(dims[0] % w, 0u);
        const uint64_t n = dims[0] * dims[1] * dims[2];
        AnsCursor c = shape.with_strips(w).cursor();
        c.seek(0);
        std::vector<uint8_t> seen(n, 0);
        for (uint64_t p = 0; p < n; ++p, c.next()) {
            SCOPED_TRACE("coding index " + std::to_string(p));
            AnsCursor s = shape.with_strips(w).cursor();
            s.seek(p);
            ASSERT_EQ(s.raster(), c.raster());
            ASSERT_EQ(s.x0, c.x0);
            // Block p / (w * rows), row by row inside it.
            const uint64_t rows = dims[1] * dims[2], q = p % (w * rows);
            ASSERT_EQ(c.x, p / (w * rows) * w + q % w);
            ASSERT_EQ(c.y + dims[1] * c.z, q / w);
            ASSERT_EQ(seen[c.raster()]++, 0);
            if (p > 0) {
                AnsCursor back = c;
                back.prev();
                AnsCursor want = shape.with_strips(w).cursor();
                want.seek(p - 1);
                ASSERT_EQ(back.raster(), want.raster());
                ASSERT_EQ(back.x0, want.x0);
            }
        }
    }
    // No strips: 1-D data, too many levels, no power of two >= 16 in nx.
    AnsContextShape s;
    s.dims[0] = 1024;
    EXPECT_EQ(ans_strip_width_for(s), 0u);
    s.dims[1] = 4;
    EXPECT_EQ(ans_strip_width_for(s), 128u);
    s.levels = kAnsMaxStripLevels + 1;
    EXPECT_EQ(ans_strip_width_for(s), 0u);
    s.levels = 4;
    s.dims[0] = 4320;
    EXPECT_EQ(ans_strip_width_for(s), 32u);
    s.dims[0] = 91;
    EXPECT_EQ(ans_strip_width_for(s), 0u);
    s.dims[0] = 48;  // 16 divides it, 32 does not
    EXPECT_EQ(ans_strip_width_for(s), 0u);
}

// Codes of a 2-D field busy in patches of 4 columns by 16 rows (as the codes
// of a smooth field's features are): in raster order each patch starts
// unannounced every 4 codes, while the row above says where they are.
std::vector<uint16_t> row_correlated_codes(uint64_t nx, uint64_t ny, uint32_t radius, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(0, 1);
    const uint64_t px = (nx + 3) / 4, py = (ny + 15) / 16;
    std::vector<uint8_t> busy(px * py);
    for (auto& b : busy) b = u(rng) < 0.3;
    std::vector<uint16_t> codes(nx * ny);
    for (uint64_t y = 0; y < ny; ++y)
        for (uint64_t x = 0; x < nx; ++x) {
            int32_t v = 0;
            if (u(rng) < (busy[y / 16 * px + x / 4] ? 0.9 : 0.02))
                v = static_cast<int32_t>(std::lround(std::normal_distribution<double>(0, 4)(rng)));
            v = std::clamp<int32_t>(v, -static_cast<int32_t>(radius) + 1, static_cast<int32_t>(radius) - 1);
            codes[y * nx + x] = u(rng) < 0.001 ? 0 : static_cast<uint16_t>(v + static_cast<int32_t>(radius));
        }
    return codes;
}

// A one-level 1024 x 512 array: strips of 128 columns fit it.
AnsContextShape one_level_1024x512() {
    AnsContextShape shape;
    shape.dims[0] = 1024;
    shape.dims[1] = 512;
    shape.levels = 1;
    return shape;
}

struct StripCoded {
    AnsTables tables;
    AnsStream stream;
    ByteWriter t, l, w;
};

StripCoded strip_encode(const std::vector<uint16_t>& codes, uint32_t radius, const AnsContextShape& shape,
                        uint32_t strip, uint32_t lag, uint32_t lane_symbols, int threads) {
    StripCoded c;
    const auto hist = ans_histogram_cpu(codes, radius, shape.with_strips(strip), threads, lag);
    c.tables = ans_build_tables(hist, shape.levels, true, lag, strip);
    c.stream = ans_encode_cpu(c.tables, codes, radius, shape, lane_symbols, threads);
    ans_tables_write(c.tables, lane_symbols, c.t);
    ans_lanes_write(c.stream, c.l);
    ans_stream_write(c.stream, c.w);
    return c;
}

TEST(AnsStrips, RoundTripOverShapesLanesLagsAndLevels) {
    for (const auto& dims : std::vector<std::array<uint64_t, 3>>{{64, 9, 1}, {96, 21, 1}, {32, 5, 3}, {256, 30, 1}}) {
        AnsContextShape shape;
        std::copy(dims.begin(), dims.end(), shape.dims);
        const uint64_t n = dims[0] * dims[1] * dims[2];
        for (const uint32_t levels : {1u, 4u, kAnsMaxStripLevels}) {
            shape.levels = levels;
            const uint32_t strip = ans_strip_width_for(shape);
            for (const uint32_t radius : {2u, 512u, 32768u}) {
                const auto codes = row_correlated_codes(dims[0], dims[1] * dims[2], radius, static_cast<uint32_t>(n + levels));
                for (const uint32_t lag : {1u, 2u})
                    for (const uint32_t lane : {8u, 64u, 256u, 1000u, 1u << 20}) {
                        SCOPED_TRACE(std::to_string(dims[0]) + "x" + std::to_string(dims[1]) + "x" +
                                     std::to_string(dims[2]) + " levels " + std::to_string(levels) + " radius " +
                                     std::to_string(radius) + " lag " + std::to_string(lag) + " lane " +
                                     std::to_string(lane));
                        StripCoded c = strip_encode(codes, radius, shape, strip, lag, lane, 2);
                        const AnsStreamView view = ans_stream_read(c.t.bytes(), c.l.bytes(), c.w.bytes(), n, shape,
                                                                   AnsLanesLayout::packed_from_one);
                        ASSERT_EQ(view.tables.strip_width, strip);
                        std::vector<uint16_t> out(n, 0xABCD);
                        ans_decode_cpu(view, radius, shape, out, 2);
                        ASSERT_EQ(out, codes);
                    }
            }
        }
    }
}

TEST(AnsStrips, ThreadsDoNotChangeTheStream) {
    AnsContextShape shape;
    shape.dims[0] = 512;
    shape.dims[1] = 300;
    shape.levels = 4;
    const auto codes = row_correlated_codes(512, 300, 512, 3);
    StripCoded one = strip_encode(codes, 512, shape, 128, 2, 2048, 1);
    StripCoded two = strip_encode(codes, 512, shape, 128, 2, 2048, 2);
    EXPECT_EQ(one.t.bytes(), two.t.bytes());
    EXPECT_EQ(one.l.bytes(), two.l.bytes());
    EXPECT_EQ(one.w.bytes(), two.w.bytes());
}

TEST(AnsStrips, TheRowAboveSavesWhereItPredictsAndTheChoiceTakesIt) {
    const AnsContextShape shape = one_level_1024x512();
    const uint64_t n = 1024 * 512;
    const auto codes = row_correlated_codes(1024, 512, 512, 9);
    const uint32_t strip = ans_strip_width_for(shape);
    ASSERT_EQ(strip, 128u);
    const auto raster = ans_histogram_cpu(codes, 512, shape, 2);
    const auto strips = ans_histogram_cpu(codes, 512, shape.with_strips(strip), 2);
    uint64_t counted = 0;
    for (const uint64_t c : strips) counted += c;
    EXPECT_EQ(counted, n);
    const AnsTables rt = ans_build_tables(raster, 1), st = ans_build_tables(strips, 1, true, 1, strip);
    EXPECT_EQ(st.num_contexts(), kAnsAboveClasses * kAnsClasses);
    const uint64_t raster_bytes = ans_estimated_bytes(rt, raster, n), strip_bytes = ans_estimated_bytes(st, strips, n);
    EXPECT_LT(strip_bytes * 100, raster_bytes * 95) << raster_bytes << " against " << strip_bytes;
    // What the coder spends follows the estimate (the lanes' first rows code as "none").
    const uint32_t lane = ans_lane_symbols(n, ans_estimated_bits(st, strips));
    StripCoded c = strip_encode(codes, 512, shape, strip, 1, lane, 2);
    const uint64_t coded = c.t.size() + c.l.size() + c.w.size();
    EXPECT_LT(coded, strip_bytes * 102 / 100);
    EXPECT_GT(coded, strip_bytes * 98 / 100);
    const AnsCandidate candidates[2] = {{raster, 1, 0}, {strips, 1, strip}};
    EXPECT_EQ(ans_choose_candidate(candidates, 1, n), 1u);
}

// Histograms made up for the choice: raster order's codes spread evenly over
// `raster_symbols` exact symbols in one class; in strips the same codes split
// over the three above classes, two symbols each (a bit a code).
std::vector<std::vector<uint64_t>> made_up_layouts(const std::vector<pipeline::AnsLayoutTry>& tries, uint64_t n,
                                                   uint32_t raster_symbols) {
    constexpr uint32_t cls = 1;
    std::vector<std::vector<uint64_t>> hists;
    for (const auto& t : tries) {
        const uint32_t aboves = t.strip_width ? kAnsAboveClasses : 1u;
        std::vector<uint64_t> h(size_t{aboves} * kAnsClasses * kAnsAlphabet, 0);
        if (t.strip_width == 0) {
            for (uint32_t s = 0; s < raster_symbols; ++s) h[size_t{cls} * kAnsAlphabet + s] = n / raster_symbols;
        } else {
            for (uint32_t a = 1; a < aboves; ++a)
                for (uint32_t s = 2 * a; s < 2 * a + 2; ++s)
                    h[size_t{ans_context(0, a, cls, aboves)} * kAnsAlphabet + s] = n / (2 * (aboves - 1));
        }
        hists.push_back(std::move(h));
    }
    return hists;
}

TEST(AnsStrips, AutoDoesNotWeighStripsWhereRasterCodesAreDense) {
    const AnsContextShape shape = one_level_1024x512();
    const uint64_t n = 1024 * 512;
    const std::vector<pipeline::AnsLayoutTry> tries = pipeline::code_stage_ans_tries(shape, n);
    ASSERT_EQ(tries.size(), 4u);
    ASSERT_LE(16u, kAnsFirstBucket);
    for (const uint32_t raster_symbols : {4u, 16u}) {  // 2 and 4 bits a code in raster order, 1 in strips
        SCOPED_TRACE(raster_symbols);
        const auto hists = made_up_layouts(tries, n, raster_symbols);
        const std::vector<std::span<const uint64_t>> views(hists.begin(), hists.end());
        std::vector<AnsCandidate> all;
        for (size_t k = 0; k < tries.size(); ++k) all.push_back({hists[k], tries[k].class_lag, tries[k].strip_width});
        uint64_t bits = 0;
        // Every candidate weighed, the strips save 40% or more ...
        const std::vector<AnsCandidateEstimate> e = ans_estimate_candidates(all, 1, n);
        EXPECT_EQ(e[0].bits, n * (raster_symbols == 4 ? 2 : 4));
        EXPECT_LT(e[2].bytes * 10, e[0].bytes * 6);
        ASSERT_NE(tries[ans_smallest_estimate(e)].strip_width, 0u);
        // ... but auto weighs them only below kStripsMaxBits a code in raster order.
        const size_t chosen = pipeline::code_stage_choose_layout(tries, views, shape, n, &bits);
        if (raster_symbols * 1u > (1u << pipeline::kStripsMaxBits)) {
            EXPECT_EQ(chosen, 0u);
            EXPECT_EQ(bits, e[0].bits);
        } else {
            EXPECT_EQ(chosen, 2u);
            EXPECT_EQ(bits, e[2].bits);
        }
        // `on` weighs only strips, whatever raster order costs.
        AnsContextShape forced = shape;
        forced.strips = AnsStripsChoice::on;
        const auto on_tries = pipeline::code_stage_ans_tries(forced, n);
        const auto on_hists = made_up_layouts(on_tries, n, raster_symbols);
        const std::vector<std::span<const uint64_t>> on_views(on_hists.begin(), on_hists.end());
        EXPECT_NE(on_tries[pipeline::code_stage_choose_layout(on_tries, on_views, forced, n, nullptr)].strip_width, 0u);
    }
}

TEST(AnsStrips, AutoTakesStripsOnlyForASignificantSaving) {
    const AnsContextShape shape = one_level_1024x512();
    const uint64_t n = 1024 * 512;
    const auto codes = row_correlated_codes(1024, 512, 512, 9);
    const std::vector<pipeline::AnsLayoutTry> tries = pipeline::code_stage_ans_tries(shape, n);
    ASSERT_EQ(tries.size(), 4u);
    std::vector<std::vector<uint64_t>> hists;
    for (const auto& t : tries) hists.push_back(ans_histogram_cpu(codes, 512, shape.with_strips(t.strip_width), 2, t.class_lag));
    std::vector<std::span<const uint64_t>> views(hists.begin(), hists.end());
    // These codes save far more than 1/32 in strips: auto takes them.
    EXPECT_NE(tries[pipeline::code_stage_choose_layout(tries, views, shape, n, nullptr)].strip_width, 0u);
    // Codes whose rows above help only in their first quarter: strips still estimate smaller, by less than
    // 1/32, and auto keeps raster order (on would take the strips).
    auto mixed = markov_codes(n, 512, 10);
    std::copy_n(codes.begin(), 1024 * 128, mixed.begin());
    for (size_t k = 0; k < tries.size(); ++k)
        hists[k] = ans_histogram_cpu(mixed, 512, shape.with_strips(tries[k].strip_width), 2, tries[k].class_lag);
    views.assign(hists.begin(), hists.end());
    std::vector<AnsCandidate> all;
    for (size_t k = 0; k < tries.size(); ++k) all.push_back({hists[k], tries[k].class_lag, tries[k].strip_width});
    uint64_t best_bytes = 0, raster_bytes = 0;
    ASSERT_NE(tries[ans_choose_candidate(all, 1, n, nullptr, &best_bytes)].strip_width, 0u);
    ans_choose_candidate(std::span(all).first(2), 1, n, nullptr, &raster_bytes);
    ASSERT_GT(best_bytes * pipeline::kStripsMinSaving, raster_bytes * (pipeline::kStripsMinSaving - 1));
    EXPECT_EQ(tries[pipeline::code_stage_choose_layout(tries, views, shape, n, nullptr)].strip_width, 0u);
    AnsContextShape forced = shape;
    forced.strips = AnsStripsChoice::on;
    const auto on_tries = pipeline::code_stage_ans_tries(forced, n);
    ASSERT_EQ(on_tries.size(), 2u);
    EXPECT_NE(on_tries[0].strip_width, 0u);
    forced.strips = AnsStripsChoice::off;
    EXPECT_EQ(pipeline::code_stage_ans_tries(forced, n).size(), 2u);
    EXPECT_EQ(pipeline::code_stage_ans_tries(forced, n)[1].strip_width, 0u);
}

TEST(AnsStrips, NoneTablesHoldEverySymbolTheirClassCounted) {
    AnsContextShape shape;
    shape.dims[0] = 64;
    shape.dims[1] = 200;
    shape.levels = 3;
    const auto codes = row_correlated_codes(64, 200, 512, 5);
    const auto hist = ans_histogram_cpu(codes, 512, shape.with_strips(64), 2, 1);
    const AnsTables t = ans_build_tables(hist, 3, true, 1, 64);
    for (uint32_t level = 0; level < 3; ++level)
        for (uint32_t cls = 0; cls < kAnsClasses; ++cls)
            for (uint32_t s = 0; s < kAnsAlphabet; ++s) {
                uint64_t any = 0;
                for (uint32_t a = 0; a < kAnsAboveClasses; ++a)
                    any += hist[ans_context(level, a, cls, kAnsAboveClasses) * kAnsAlphabet + s];
                if (cls == kAnsStartClass) continue;
                if (any) {
                    EXPECT_NE(t.entry[ans_context(level, 0, cls, kAnsAboveClasses) * kAnsAlphabet + s], 0u);
                }
            }
    // Lane starts only in the none class; the level's start table holds all its symbols.
    for (uint32_t level = 0; level < 3; ++level) {
        for (uint32_t a = 1; a < kAnsAboveClasses; ++a)
            for (uint32_t s = 0; s < kAnsAlphabet; ++s)
                EXPECT_EQ(t.entry[ans_context(level, a, kAnsStartClass, kAnsAboveClasses) * kAnsAlphabet + s], 0u);
        for (uint32_t s = 0; s < kAnsAlphabet; ++s) {
            uint64_t any = 0;
            for (uint32_t c = 0; c < kAnsAboveClasses * kAnsClasses; ++c)
                any += hist[(level * kAnsAboveClasses * kAnsClasses + c) * kAnsAlphabet + s];
            if (any) {
                EXPECT_NE(t.entry[ans_context(level, 0, kAnsStartClass, kAnsAboveClasses) * kAnsAlphabet + s], 0u);
            }
        }
    }
}

// Format version 15: empty contexts in a row are one marker and a count (a
// lone one still its 0).  Codes that use few contexts (interp's four levels,
// nearly every code the zero-error one) round-trip, the section is the bytes
// ans_tables_bytes counts and smaller than version 14's layout, which still
// reads its own; runs that overrun the contexts are refused.
TEST(Ans, EmptyContextsAreWrittenAsRuns) {
    AnsContextShape shape;
    shape.dims[0] = 64;
    shape.dims[1] = 48;
    shape.levels = 4;
    const uint32_t radius = 512;
    std::vector<uint16_t> codes(64 * 48, static_cast<uint16_t>(radius));
    for (size_t i = 0; i < codes.size(); i += 97) codes[i] = static_cast<uint16_t>(radius + 1);
    AnsTables tables;
    const AnsStream s = encode(codes, radius, shape, 512, 1, &tables);
    uint32_t empty = 0;
    for (uint32_t ctx = 0; ctx < tables.num_contexts(); ++ctx) {
        const uint32_t* e = tables.entry.data() + size_t{ctx} * kAnsAlphabet;
        empty += std::all_of(e, e + kAnsAlphabet, [](uint32_t x) { return x == 0; }) &&
                 (tables.source.empty() || tables.source[ctx] == ctx);
    }
    ASSERT_GT(empty, tables.num_contexts() / 2);
    ByteWriter runs, old, l, w;
    ans_tables_write(tables, s.lane_symbols, runs);
    ans_tables_write(tables, s.lane_symbols, old, AnsTablesLayout::striped);
    ans_lanes_write(s, l, AnsLanesLayout::packed_from_one);
    ans_stream_write(s, w);
    EXPECT_EQ(runs.size(), ans_tables_bytes(tables));
    EXPECT_LT(runs.size() + empty / 2, old.size()) << empty << " empty contexts";
    for (const auto& [bytes, layout] : {std::pair{runs.bytes(), AnsTablesLayout::empty_runs},
                                        std::pair{old.bytes(), AnsTablesLayout::striped}}) {
        const AnsStreamView view = ans_stream_read(bytes, l.bytes(), w.bytes(), codes.size(), shape,
                                                   AnsLanesLayout::packed_from_one, layout);
        EXPECT_EQ(view.tables.entry, tables.entry);
        std::vector<uint16_t> out(codes.size());
        ans_decode_cpu(view, radius, shape, out, 1);
        EXPECT_EQ(out, codes);
    }
    // Version 14's layout refuses a run marker (it reads as a table of 254 symbols).
    EXPECT_THROW(ans_stream_read(runs.bytes(), l.bytes(), w.bytes(), codes.size(), shape,
                                 AnsLanesLayout::packed_from_one, AnsTablesLayout::striped),
                 Error);
    // A run longer than the contexts left, at the first marker.
    auto bad = runs.bytes();
    const auto at = std::find(bad.begin() + 10, bad.end(), static_cast<uint8_t>(kAnsEmptyRun));
    ASSERT_NE(at, bad.end());
    at[1] = 0xFF;
    EXPECT_THROW(ans_stream_read(bad, l.bytes(), w.bytes(), codes.size(), shape, AnsLanesLayout::packed_from_one,
                                 AnsTablesLayout::empty_runs),
                 Error);
}

TEST(AnsStrips, ReaderChecksTheStripWidthAgainstTheShape) {
    AnsContextShape shape;
    shape.dims[0] = 64;
    shape.dims[1] = 40;
    shape.levels = 4;
    const uint64_t n = 64 * 40;
    const auto codes = row_correlated_codes(64, 40, 512, 6);
    StripCoded c = strip_encode(codes, 512, shape, 64, 1, 512, 1);
    const auto read = [&](std::vector<uint8_t> t, const AnsContextShape& s, uint64_t count,
                          AnsTablesLayout layout = AnsTablesLayout::empty_runs) {
        return ans_stream_read(t, c.l.bytes(), c.w.bytes(), count, s, AnsLanesLayout::packed_from_one, layout);
    };
    EXPECT_NO_THROW(read(c.t.bytes(), shape, n));
    // The strip byte follows lane length (4), levels, classes, alphabet, scale bits and the class lag.
    ASSERT_EQ(c.t.bytes()[9], 6u);
    for (const uint8_t log : {1, 3, 4, 7, 8, 31, 32, 200}) {
        auto t = c.t.bytes();
        t[9] = log;
        EXPECT_THROW(read(t, shape, n), Error) << "2^" << int(log) << " columns";
    }
    auto raster = c.t.bytes();
    raster[9] = 0;  // read as raster tables: a quarter of the contexts, the rest left over
    EXPECT_THROW(read(raster, shape, n), Error);
    AnsContextShape other = shape;
    other.dims[0] = 96;  // 64 does not divide it
    other.dims[1] = 80 / 3;
    EXPECT_THROW(read(c.t.bytes(), other, 96 * (80 / 3)), Error);
    AnsContextShape one_row = shape;
    one_row.dims[0] = n;
    one_row.dims[1] = 1;
    EXPECT_THROW(read(c.t.bytes(), one_row, n), Error);
    EXPECT_THROW(ans_stream_read(c.t.bytes(), c.l.bytes(), c.w.bytes(), n, 4u, AnsLanesLayout::packed_from_one), Error);
    // Too many levels for strips' context references.
    AnsContextShape deep = shape;
    deep.levels = kAnsMaxStripLevels + 1;
    EXPECT_THROW(read(c.t.bytes(), deep, n), Error);
    // Lanes of whole groups of eight only (the GPU coders' groups lie in one row of a strip).
    EXPECT_THROW(ans_encode_cpu(c.tables, codes, 512, shape, 12, 1), Error);
    // Strip tables in an older layout cannot be written.
    ByteWriter old;
    EXPECT_THROW(ans_tables_write(c.tables, 512, old, AnsTablesLayout::lagged), Error);
    // The decoder takes the shape apart from the view: strips that do not fit it are refused, not walked.
    const AnsStreamView view = read(c.t.bytes(), shape, n);
    std::vector<uint16_t> out(n);
    ans_decode_cpu(view, 512, shape, out, 1);
    EXPECT_EQ(out, codes);
    AnsContextShape transposed = shape;
    transposed.dims[0] = 40;
    transposed.dims[1] = 64;
    EXPECT_THROW(ans_decode_cpu(view, 512, transposed, out, 1), Error);
}

}  // namespace gsz::encode
