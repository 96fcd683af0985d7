#include "encode/huffman.hpp"
#include "encode/huffman_limit.hpp"
#include "encode/huffman_table.hpp"
#include "encode/huffman_test_books.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <queue>
#include <random>
#include <utility>

namespace gsz::encode {
namespace {

// Quant-code-like data: a two-sided geometric (discrete Laplace) around the
// middle of the alphabet, clamped into range.
std::vector<uint16_t> skewed_symbols(size_t n, uint32_t alphabet, double spread, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::geometric_distribution<int> geo(1.0 / (1.0 + spread));
    std::bernoulli_distribution sign(0.5);
    const int center = static_cast<int>(alphabet / 2);
    std::vector<uint16_t> out(n);
    for (auto& s : out) {
        const int v = center + (sign(rng) ? geo(rng) : -geo(rng));
        s = static_cast<uint16_t>(std::clamp(v, 0, static_cast<int>(alphabet) - 1));
    }
    return out;
}

struct Archive {
    std::vector<uint8_t> codebook, chunks, bitstream;
};

Archive serialize(const HuffmanCodebook& book, const HuffmanStream& stream) {
    Archive a;
    ByteWriter w1, w2, w3;
    huffman_codebook_write(book, w1);
    huffman_chunks_write(stream, w2, kHuffmanNarrowCountsVersion);
    huffman_bitstream_write(stream, w3);
    a.codebook = w1.take();
    a.chunks = w2.take();
    a.bitstream = w3.take();
    return a;
}

std::vector<uint16_t> deserialize_decode(const Archive& a, uint64_t num_symbols, int threads) {
    ByteReader in(a.codebook, "codebook");
    const HuffmanCodebook book = huffman_codebook_read(in, kHuffmanMaxAlphabet);
    in.expect_end();
    const HuffmanStreamView view =
        huffman_stream_read(a.chunks, a.bitstream, num_symbols, kHuffmanNarrowCountsVersion);
    std::vector<uint16_t> out(num_symbols);
    huffman_decode_cpu(book, view, out, threads);
    return out;
}

void expect_round_trip(const std::vector<uint16_t>& symbols, uint32_t alphabet, uint32_t chunk, int threads) {
    const auto hist = histogram_cpu(symbols, alphabet, threads);
    const auto book = huffman_build(hist);
    const auto stream = huffman_encode_cpu(book, symbols, chunk, threads);
    uint64_t total_bits = 0;
    for (uint32_t s = 0; s < alphabet; ++s) total_bits += hist[s] * book.lengths[s];
    uint64_t stream_bits = 0;
    for (uint32_t b : stream.chunk_bits) stream_bits += b;
    EXPECT_EQ(stream_bits, total_bits);
    const auto decoded = deserialize_decode(serialize(book, stream), symbols.size(), threads);
    EXPECT_EQ(decoded, symbols) << "alphabet " << alphabet << " chunk " << chunk;
}

gsz_status status_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const Error& e) {
        return e.status();
    }
    return GSZ_STATUS_OK;
}

// Cost of an optimal Huffman code = sum of all merged weights.
uint64_t reference_huffman_cost(const std::vector<uint64_t>& hist) {
    std::priority_queue<uint64_t, std::vector<uint64_t>, std::greater<>> q;
    for (uint64_t c : hist)
        if (c) q.push(c);
    uint64_t cost = 0;
    while (q.size() > 1) {
        const uint64_t a = q.top();
        q.pop();
        const uint64_t b = q.top();
        q.pop();
        cost += a + b;
        q.push(a + b);
    }
    return cost;
}

uint64_t code_cost(const HuffmanCodebook& book, const std::vector<uint64_t>& hist) {
    uint64_t cost = 0;
    for (size_t s = 0; s < hist.size(); ++s) cost += hist[s] * book.lengths[s];
    return cost;
}

void expect_canonical(const HuffmanCodebook& book) {
    ASSERT_EQ(book.lengths.size(), book.alphabet_size);
    std::vector<uint32_t> used;
    uint64_t kraft = 0;
    for (uint32_t s = 0; s < book.alphabet_size; ++s) {
        if (!book.lengths[s]) continue;
        used.push_back(s);
        ASSERT_LE(book.lengths[s], kHuffmanMaxCodeLength);
        ASSERT_LT(book.codes[s], 1u << book.lengths[s]);
        kraft += 1ull << (kHuffmanMaxCodeLength - book.lengths[s]);
    }
    if (used.size() > 1) {
        EXPECT_EQ(kraft, 1ull << kHuffmanMaxCodeLength);  // complete code
    }
    // Ranked by (length, symbol), the left-aligned codes are consecutive:
    // canonical and prefix-free at once.
    std::sort(used.begin(), used.end(), [&](uint32_t a, uint32_t b) {
        return book.lengths[a] != book.lengths[b] ? book.lengths[a] < book.lengths[b] : a < b;
    });
    ASSERT_EQ(book.sorted_symbols.size(), used.size());
    uint64_t expected_left = 0;
    for (size_t r = 0; r < used.size(); ++r) {
        const uint32_t s = used[r];
        EXPECT_EQ(book.sorted_symbols[r], s);
        const uint64_t left = uint64_t{book.codes[s]} << (kHuffmanMaxCodeLength - book.lengths[s]);
        EXPECT_EQ(left, expected_left) << "rank " << r;
        expected_left = left + (1ull << (kHuffmanMaxCodeLength - book.lengths[s]));
    }
    EXPECT_EQ(book.max_length, used.empty() ? 0u : book.lengths[used.back()]);
}

TEST(Huffman, RoundTripSkewedAlphabets) {
    for (uint32_t alphabet : {2u, 1024u, 65536u}) {
        for (double spread : {0.3, 3.0, 40.0}) {
            const auto symbols = skewed_symbols(200003, alphabet, spread, alphabet + 7);
            for (uint32_t chunk : {1u, 7u, 4096u, 1u << 20}) {
                if (chunk == 1 && spread != 3.0) continue;  // slow path, once is enough
                expect_round_trip(symbols, alphabet, chunk, 2);
            }
        }
    }
}

TEST(Huffman, RoundTripUniformWideAlphabet) {
    std::mt19937 rng(5);
    std::vector<uint16_t> symbols(300000);
    for (auto& s : symbols) s = static_cast<uint16_t>(rng());
    expect_round_trip(symbols, 65536, 1000, 2);
}

TEST(Huffman, SingleSymbol) {
    const std::vector<uint16_t> symbols(1000, 5);
    const auto hist = histogram_cpu(symbols, 16, 1);
    const auto book = huffman_build(hist);
    EXPECT_EQ(book.lengths[5], 1);
    EXPECT_EQ(book.codes[5], 0u);
    EXPECT_EQ(book.max_length, 1u);
    expect_canonical(book);
    const auto stream = huffman_encode_cpu(book, symbols, 300, 1);
    ASSERT_EQ(stream.chunk_bits, (std::vector<uint32_t>{300, 300, 300, 100}));
    for (uint32_t w : stream.words) EXPECT_EQ(w, 0u);
    expect_round_trip(symbols, 16, 300, 1);
    expect_round_trip(std::vector<uint16_t>(1, 0), 1, 1, 1);
}

TEST(Huffman, EmptyInputEncodesToNothing) {
    const std::vector<uint64_t> hist{1, 1};
    const auto book = huffman_build(hist);
    const auto stream = huffman_encode_cpu(book, {}, 64, 2);
    EXPECT_TRUE(stream.chunk_bits.empty());
    EXPECT_TRUE(stream.words.empty());
    EXPECT_TRUE(deserialize_decode(serialize(book, stream), 0, 2).empty());
}

TEST(Huffman, ExactBitLayout) {
    // Counts 2,1,1 -> lengths 1,2,2 -> codes 0, 10, 11; stream "0 10 11 0" MSB-first.
    const std::vector<uint64_t> hist{2, 1, 1};
    const auto book = huffman_build(hist);
    EXPECT_EQ(book.lengths, (std::vector<uint8_t>{1, 2, 2}));
    EXPECT_EQ(book.codes, (std::vector<uint32_t>{0b0, 0b10, 0b11}));
    const std::vector<uint16_t> symbols{0, 1, 2, 0};
    const auto stream = huffman_encode_cpu(book, symbols, 4, 1);
    ASSERT_EQ(stream.chunk_bits, (std::vector<uint32_t>{6}));
    ASSERT_EQ(stream.words, (std::vector<uint32_t>{0b010110u << 26}));
    const auto a = serialize(book, stream);
    EXPECT_EQ(a.bitstream, (std::vector<uint8_t>{0x00, 0x00, 0x00, 0x58}));  // little-endian word
    EXPECT_EQ(a.codebook, (std::vector<uint8_t>{3, 0, 0, 0, 3, 0, 0, 0, 0, 0, 1, 1, 0, 2, 2, 0, 2}));
    EXPECT_EQ(a.chunks, (std::vector<uint8_t>{4, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0, 6, 0}));  // u16 counts
    // A codeword straddling two words, in the second chunk (which starts a new word).
    std::vector<uint16_t> many(80, 0);
    many[40 + 31] = 2;
    const auto s2 = huffman_encode_cpu(book, many, 40, 1);
    ASSERT_EQ(s2.chunk_bits, (std::vector<uint32_t>{40, 41}));
    EXPECT_EQ(s2.words, (std::vector<uint32_t>{0, 0, 1, 1u << 31}));
}

TEST(Huffman, OptimalWhenNoLimitIsHit) {
    std::mt19937_64 rng(11);
    for (int trial = 0; trial < 300; ++trial) {
        const size_t alphabet = 1 + rng() % 300;
        std::vector<uint64_t> hist(alphabet);
        for (auto& c : hist) {
            const int kind = static_cast<int>(rng() % 4);
            c = kind == 0 ? 0 : kind == 1 ? rng() % 4 : kind == 2 ? rng() % 1000 : (rng() % 1000) << (rng() % 4);  // shallow enough to stay unlimited
        }
        hist[rng() % alphabet] += 1;
        const auto book = huffman_build(hist);
        expect_canonical(book);
        ASSERT_LT(book.max_length, static_cast<uint32_t>(kHuffmanMaxCodeLength));
        size_t used = std::count_if(hist.begin(), hist.end(), [](uint64_t c) { return c != 0; });
        if (used > 1) {
            EXPECT_EQ(code_cost(book, hist), reference_huffman_cost(hist)) << "trial " << trial;
        }
    }
}

TEST(Huffman, Deterministic) {
    const std::vector<uint64_t> hist{5, 5, 5, 5, 5, 3, 3, 0, 8};
    const auto a = huffman_build(hist);
    const auto b = huffman_build(hist);
    EXPECT_EQ(a.lengths, b.lengths);
    EXPECT_EQ(a.codes, b.codes);
}

TEST(Huffman, LengthLimitedGeometric) {
    // Counts 2^50, 2^49, ... want code lengths 1..50 without a limit.
    std::vector<uint64_t> hist(51);
    for (int i = 0; i < 51; ++i) hist[i] = 1ull << (50 - std::min(i, 50));
    const auto book = huffman_build(hist);
    expect_canonical(book);
    EXPECT_EQ(book.max_length, static_cast<uint32_t>(kHuffmanMaxCodeLength));
    EXPECT_EQ(book.lengths[0], 1);
    // Fibonacci counts: the deepest possible tree.
    std::vector<uint64_t> fib(80);
    fib[0] = fib[1] = 1;
    for (size_t i = 2; i < fib.size(); ++i) fib[i] = fib[i - 1] + fib[i - 2];
    const auto fbook = huffman_build(fib);
    expect_canonical(fbook);
    EXPECT_LE(fbook.max_length, static_cast<uint32_t>(kHuffmanMaxCodeLength));

    // Round trip data that uses every symbol, with the limited book.
    std::vector<uint16_t> symbols;
    std::mt19937 rng(3);
    for (int rep = 0; rep < 3000; ++rep)
        for (uint16_t s = 0; s < 51; ++s)
            if (rng() % 4 == 0 || s > 40) symbols.push_back(s);
    std::shuffle(symbols.begin(), symbols.end(), rng);
    const auto stream = huffman_encode_cpu(book, symbols, 777, 3);
    EXPECT_EQ(deserialize_decode(serialize(book, stream), symbols.size(), 2), symbols);
}

TEST(Huffman, LengthLimitedFromRealData) {
    // Fibonacci counts over 30 symbols: a plain Huffman tree is 29 deep.
    std::vector<uint16_t> symbols;
    uint64_t f0 = 1, f1 = 1;
    for (uint16_t s = 0; s < 30; ++s) {
        symbols.insert(symbols.end(), f0, s);
        f0 = std::exchange(f1, f0 + f1);
    }
    std::shuffle(symbols.begin(), symbols.end(), std::mt19937(2));
    const auto hist = histogram_cpu(symbols, 64, 2);
    const auto book = huffman_build(hist);
    expect_canonical(book);
    EXPECT_LE(book.max_length, static_cast<uint32_t>(kHuffmanMaxCodeLength));
    // Limiting costs a little, but not much.
    const uint64_t optimal = reference_huffman_cost(hist), limited = code_cost(book, hist);
    EXPECT_GT(limited, optimal);
    EXPECT_LT(limited, optimal + optimal / 100);
    expect_round_trip(symbols, 64, 1 << 16, 2);
}

// Two-queue Huffman over leaves sorted by (weight, symbol), ties to the
// leaf: each leaf's depth, in the sorted order.
std::vector<uint32_t> two_queue_depths(const std::vector<uint64_t>& weight) {
    const size_t n = weight.size();
    std::vector<uint64_t> nw(weight);
    nw.resize(2 * n - 1);
    std::vector<size_t> parent(2 * n - 1, 0);
    size_t leaf = 0, merged = n;
    auto pop = [&](size_t end) { return leaf < n && (merged == end || nw[leaf] <= nw[merged]) ? leaf++ : merged++; };
    for (size_t m = n; m < 2 * n - 1; ++m) {
        const size_t a = pop(m), b = pop(m);
        nw[m] = nw[a] + nw[b];
        parent[a] = parent[b] = m;
    }
    std::vector<uint32_t> depth(2 * n - 1, 0);
    for (size_t m = 2 * n - 2; m-- > 0;) depth[m] = depth[parent[m]] + 1;
    depth.resize(n);
    return depth;
}

// The used symbols in (weight, symbol) order.
std::vector<uint16_t> leaves_by_weight(const std::vector<uint64_t>& w) {
    std::vector<uint16_t> leaves;
    for (size_t s = 0; s < w.size(); ++s)
        if (w[s]) leaves.push_back(static_cast<uint16_t>(s));
    std::sort(leaves.begin(), leaves.end(), [&](uint16_t a, uint16_t b) { return w[a] != w[b] ? w[a] < w[b] : a < b; });
    return leaves;
}

// The length limit's rule, written plainly (huffman_build keeps its
// buffers and counts lengths instead): the optimal tree's depths; if one is
// over the limit, all are clamped to it, and while the code overfills
// Kraft's sum one code of the longest length is dropped and the deepest code
// shorter than that split in two; the resulting lengths go to the leaves,
// the longest to the lightest.  The lengths (so the archives) must not change.
std::vector<uint8_t> limited_lengths_by_the_rule(std::vector<uint64_t> w) {
    const int limit = kHuffmanMaxCodeLength;
    for (;;) {  // first the total must fit in 64 bits: weights halved (at least 1) until it does
        uint64_t total = 0;
        bool fits = true;
        for (uint64_t c : w) fits = fits && !__builtin_add_overflow(total, c, &total);
        if (fits) break;
        for (uint64_t& c : w) c = c ? std::max<uint64_t>(1, c >> 1) : 0;
    }
    const std::vector<uint16_t> leaves = leaves_by_weight(w);
    std::vector<uint64_t> weight;
    for (uint16_t s : leaves) weight.push_back(w[s]);
    std::vector<uint32_t> depth = two_queue_depths(weight);
    std::vector<uint8_t> lengths(w.size(), 0);
    if (*std::max_element(depth.begin(), depth.end()) > static_cast<uint32_t>(limit)) {
        std::vector<uint64_t> count(limit + 1, 0);
        for (uint32_t d : depth) ++count[std::min(d, static_cast<uint32_t>(limit))];
        auto overfull = [&] {
            long double kraft = 0;
            for (int len = 1; len <= limit; ++len) kraft += std::ldexp(static_cast<long double>(count[len]), -len);
            return kraft > 1;
        };
        while (overfull()) {
            --count[limit];
            int len = limit - 1;
            while (count[len] == 0) --len;
            --count[len];
            count[len + 1] += 2;
        }
        depth.clear();  // lightest leaf first: the longest lengths first
        for (int len = limit; len >= 1; --len) depth.insert(depth.end(), count[len], static_cast<uint32_t>(len));
    }
    for (size_t i = 0; i < leaves.size(); ++i) lengths[leaves[i]] = static_cast<uint8_t>(depth[i]);
    return lengths;
}

// The rule gsz used before (the archives hold the lengths, so either
// decodes): the tree rebuilt with every weight halved (at least 1) until it
// fits.  Kept to show the cut costs about what the halving did.
std::vector<uint8_t> limited_lengths_by_halving(std::vector<uint64_t> w) {
    std::vector<uint8_t> lengths(w.size(), 0);
    for (;;) {
        const std::vector<uint16_t> leaves = leaves_by_weight(w);
        std::vector<uint64_t> weight;
        for (uint16_t s : leaves) weight.push_back(w[s]);
        const std::vector<uint32_t> depth = two_queue_depths(weight);
        for (size_t i = 0; i < leaves.size(); ++i) lengths[leaves[i]] = static_cast<uint8_t>(depth[i]);
        if (*std::max_element(depth.begin(), depth.end()) <= static_cast<uint32_t>(kHuffmanMaxCodeLength))
            return lengths;
        for (uint16_t s : leaves) w[s] = std::max<uint64_t>(1, w[s] >> 1);
    }
}

TEST(Huffman, LengthLimitFollowsTheRule) {
    std::mt19937_64 rng(17);
    int limited = 0;
    long double cost = 0, halving_cost = 0;
    for (int trial = 0; trial < 400; ++trial) {
        // Interp-like: a peak of huge counts over a wide tail of 1..3 (the
        // halvings merge many equal weights), or random magnitudes.
        std::vector<uint64_t> hist(2 + rng() % 20000, 0);
        for (auto& c : hist) {
            const int kind = static_cast<int>(rng() % 8);
            c = kind < 3 ? 0 : kind < 6 ? 1 + rng() % 3 : kind == 6 ? rng() % 5000 : rng() >> (rng() % 64);
        }
        for (int p = 0; p < 5; ++p) hist[rng() % hist.size()] = uint64_t{1} << (30 + rng() % 20);
        const auto book = huffman_build(hist);
        limited += book.max_length == static_cast<uint32_t>(kHuffmanMaxCodeLength);
        ASSERT_EQ(book.lengths, limited_lengths_by_the_rule(hist)) << "trial " << trial;
        expect_canonical(book);
        const auto halved = limited_lengths_by_halving(hist);
        for (size_t s = 0; s < hist.size(); ++s) {
            cost += static_cast<long double>(hist[s]) * book.lengths[s];
            halving_cost += static_cast<long double>(hist[s]) * halved[s];
        }
    }
    EXPECT_GT(limited, 50) << "the trials should hit the length limit";
    // Over these trials the cut costs 0.035% more bits than the halving; on
    // interp-like two-sided geometric histograms of 10^7..10^8 codes, within
    // 0.001% either way.
    EXPECT_LE(cost, halving_cost * 1.001L) << "the cut should cost about what rebuilding with halved weights did";
}

// huffman_build places leaves lighter than 2^11 by counting and radix-sorts
// the rest, and may build into an earlier book's storage: weights on both
// sides of that edge with many ties, alphabets that shrink and grow between
// builds into one book, all equal to the plain rule and to a fresh build.
TEST(Huffman, BuildIntoEarlierBookAcrossTheLightEdge) {
    std::mt19937_64 rng(23);
    HuffmanCodebook reused;
    for (int trial = 0; trial < 60; ++trial) {
        std::vector<uint64_t> hist(1 + rng() % (trial % 2 ? 65536 : 3000), 0);
        for (auto& c : hist) {
            const int kind = static_cast<int>(rng() % 6);
            c = kind < 2 ? 0 : kind == 2 ? 2046 + rng() % 4 : kind == 3 ? 1 + rng() % 2 : rng() % 100000;
        }
        hist[rng() % hist.size()] = 1 + rng() % 3;  // never empty
        huffman_build(hist, reused);
        const HuffmanCodebook fresh = huffman_build(hist);
        ASSERT_EQ(reused.lengths, limited_lengths_by_the_rule(hist)) << "trial " << trial;
        EXPECT_EQ(reused.alphabet_size, fresh.alphabet_size);
        EXPECT_EQ(reused.codes, fresh.codes);
        EXPECT_EQ(reused.sorted_symbols, fresh.sorted_symbols);
        EXPECT_EQ(reused.first_code, fresh.first_code);
        EXPECT_EQ(reused.first_index, fresh.first_index);
        EXPECT_EQ(reused.count, fresh.count);
        EXPECT_EQ(reused.max_length, fresh.max_length);
        expect_canonical(reused);
    }
}

TEST(Huffman, HugeCounts) {
    std::vector<uint64_t> hist{1ull << 40, 3ull << 40, 1, 0, 1ull << 33, 12345};
    const auto book = huffman_build(hist);
    expect_canonical(book);
    EXPECT_EQ(code_cost(book, hist), reference_huffman_cost(hist));
    // Sums beyond 2^64 still build (counts are pre-scaled).
    std::vector<uint64_t> giant{~0ull, ~0ull, ~0ull - 5, 1, 7};
    const auto gbook = huffman_build(giant);
    expect_canonical(gbook);
    EXPECT_EQ(gbook.lengths[3], gbook.max_length);
}

TEST(Huffman, HistogramMatchesNaiveAndIgnoresThreadCount) {
    for (uint32_t alphabet : {1u, 3u, 1024u, 65536u}) {
        const auto symbols = skewed_symbols(100001, alphabet, 20.0, 99);
        std::vector<uint64_t> naive(alphabet, 0);
        for (uint16_t s : symbols) ++naive[s];
        for (int threads : {0, 1, 2, 3, 7}) EXPECT_EQ(histogram_cpu(symbols, alphabet, threads), naive);
    }
    const std::vector<uint16_t> few{1, 2};
    EXPECT_EQ(histogram_cpu(few, 4, 8), (std::vector<uint64_t>{0, 1, 1, 0}));
    EXPECT_EQ(histogram_cpu({}, 4, 3), (std::vector<uint64_t>{0, 0, 0, 0}));
}

TEST(Huffman, EncodingIgnoresThreadCount) {
    const auto symbols = skewed_symbols(500000, 1024, 5.0, 17);
    const auto book = huffman_build(histogram_cpu(symbols, 1024, 0));
    for (uint32_t chunk : {1000u, 4096u, 70000u}) {
        const auto one = huffman_encode_cpu(book, symbols, chunk, 1);
        for (int threads : {2, 3, 0}) {
            const auto other = huffman_encode_cpu(book, symbols, chunk, threads);
            EXPECT_EQ(other.chunk_bits, one.chunk_bits);
            EXPECT_EQ(other.words, one.words);
        }
        for (int threads : {1, 2, 3}) EXPECT_EQ(deserialize_decode(serialize(book, one), symbols.size(), threads), symbols);
    }
}

TEST(Huffman, CodebookSerializationRoundTrip) {
    for (uint32_t alphabet : {1u, 2u, 1024u, 65536u}) {
        const auto symbols = skewed_symbols(50000, alphabet, 30.0, alphabet);
        const auto book = huffman_build(histogram_cpu(symbols, alphabet, 1));
        ByteWriter w;
        huffman_codebook_write(book, w);
        ByteReader in(w.bytes(), "codebook");
        const auto read = huffman_codebook_read(in, alphabet);
        EXPECT_EQ(in.remaining(), 0u);
        EXPECT_EQ(read.alphabet_size, book.alphabet_size);
        EXPECT_EQ(read.lengths, book.lengths);
        EXPECT_EQ(read.codes, book.codes);
        EXPECT_EQ(read.max_length, book.max_length);
        EXPECT_EQ(read.first_code, book.first_code);
        EXPECT_EQ(read.first_index, book.first_index);
        EXPECT_EQ(read.count, book.count);
        EXPECT_EQ(read.sorted_symbols, book.sorted_symbols);
        if (alphabet > 1) {
            ByteReader small(w.bytes(), "codebook");
            EXPECT_EQ(status_of([&] { huffman_codebook_read(small, alphabet - 1); }), GSZ_STATUS_CORRUPT);
        }
    }
    // The reader stops at its own end; trailing bytes are the caller's business.
    const auto book = huffman_build(std::vector<uint64_t>{1, 2, 3});
    ByteWriter w;
    huffman_codebook_write(book, w);
    w.put<uint32_t>(0xdeadbeef);
    ByteReader in(w.bytes(), "codebook");
    huffman_codebook_read(in, 3);
    EXPECT_EQ(in.remaining(), 4u);
}

std::vector<uint8_t> codebook_bytes(uint32_t alphabet, std::vector<std::pair<uint16_t, uint8_t>> entries,
                                    int num_used = -1) {
    ByteWriter w;
    w.put<uint32_t>(alphabet);
    w.put<uint32_t>(num_used < 0 ? static_cast<uint32_t>(entries.size()) : static_cast<uint32_t>(num_used));
    for (auto [s, l] : entries) {
        w.put<uint16_t>(s);
        w.put<uint8_t>(l);
    }
    return w.take();
}

gsz_status read_codebook_status(const std::vector<uint8_t>& bytes, uint32_t max_alphabet = 65536) {
    return status_of([&] {
        ByteReader in(bytes, "codebook");
        huffman_codebook_read(in, max_alphabet);
    });
}

// The code at the top of a 32-bit window by definition: the length l whose
// canonical range holds the window's first l bits.  {symbol, length}, or
// length 0 when the bits start no code.
std::pair<uint32_t, uint32_t> canonical_code_at(const HuffmanCodebook& book, uint32_t window) {
    for (uint32_t len = 1; len <= book.max_length; ++len) {
        const uint32_t code = window >> (32 - len);
        if (code >= book.first_code[len] && code - book.first_code[len] < book.count[len])
            return {book.sorted_symbols[book.first_index[len] + code - book.first_code[len]], len};
    }
    return {0, 0};
}

// Books whose tables take every path: skewed ones (the common case, first),
// then huffman_edge_books.
std::vector<HuffmanCodebook> table_test_books() {
    std::vector<HuffmanCodebook> books;
    for (double spread : {0.3, 3.0, 40.0}) {
        const auto symbols = skewed_symbols(200000, 1024, spread, 7);
        books.push_back(huffman_build(histogram_cpu(symbols, 1024, 1)));
    }
    for (auto& book : huffman_edge_books()) books.push_back(std::move(book));
    return books;
}

TEST(HuffmanTable, TablesAndSearchFindTheCanonicalCode) {
    const std::vector<HuffmanCodebook> books = table_test_books();
    std::mt19937_64 rng(11);
    for (size_t b = 0; b < books.size(); ++b) {
        const HuffmanCodebook& book = books[b];
        const HuffmanDecodeTable t = huffman_decode_table(book);
        ASSERT_EQ(t.root.size(), kHuffmanRootSize);
        ASSERT_LE(t.sub.size(), kHuffmanSubCapacity);
        uint64_t searched = 0;
        // Every code's own bits followed by random ones, and random windows.
        std::vector<uint32_t> windows;
        for (uint32_t s = 0; s < book.alphabet_size; ++s)
            if (book.lengths[s] != 0)
                windows.push_back(book.codes[s] << (32 - book.lengths[s]) |
                                  static_cast<uint32_t>(rng()) >> book.lengths[s]);
        for (int i = 0; i < 200000; ++i) windows.push_back(static_cast<uint32_t>(rng()));
        for (uint32_t window : windows) {
            const auto [symbol, length] = canonical_code_at(book, window);
            uint32_t e = huffman_lookup(t.root.data(), t.sub.data(), window);
            if (HuffmanEntry::length(e) == 0) {
                ++searched;
                if (length != 0) {
                    ASSERT_GT(length, static_cast<uint32_t>(kHuffmanRootBits)) << "book " << b;
                }
                e = huffman_search(t.limit.data(), book.first_code.data(), book.first_index.data(), book.max_length,
                                   static_cast<uint32_t>(book.sorted_symbols.size()), window);
                if (HuffmanEntry::length(e) != 0)
                    e = HuffmanEntry::make(book.sorted_symbols[HuffmanEntry::symbol(e)], HuffmanEntry::length(e));
            }
            ASSERT_EQ(HuffmanEntry::length(e), length) << "book " << b << " window " << window;
            if (length != 0) {
                ASSERT_EQ(HuffmanEntry::symbol(e), symbol) << "book " << b << " window " << window;
            }
        }
        // Codes of up to kHuffmanRootBits + kHuffmanSubMaxBits bits take no search while the subtables fit.
        if (b < 3) {
            EXPECT_LT(double(searched), 1e-3 * double(windows.size())) << "book " << b;
        }
        RecordProperty("book" + std::to_string(b) + "_searched", static_cast<int>(searched));
    }
}

TEST(HuffmanTable, PairEntriesHoldTheTwoCodesAtTheWindowsTop) {
    std::mt19937_64 rng(12);
    for (double spread : {0.3, 3.0, 40.0}) {
        const auto symbols = skewed_symbols(200000, 1024, spread, 9);
        const HuffmanCodebook book = huffman_build(histogram_cpu(symbols, 1024, 1));
        const HuffmanDecodeTable t = huffman_decode_table(book);
        const std::vector<uint32_t> root = huffman_pair_root(t);
        ASSERT_EQ(root.size(), t.root.size());
        uint32_t pairs = 0;
        for (uint32_t i = 0; i < kHuffmanRootSize; ++i) {
            const uint32_t e = root[i];
            if ((e & HuffmanPair::kFlag) == 0) {
                ASSERT_EQ(e, t.root[i]);
                continue;
            }
            ++pairs;
            for (int trial = 0; trial < 8; ++trial) {  // whatever bits follow the index
                const uint32_t window = i << (32 - kHuffmanRootBits) | static_cast<uint32_t>(rng()) >> kHuffmanRootBits;
                const auto [s1, l1] = canonical_code_at(book, window);
                const auto [s2, l2] = canonical_code_at(book, window << l1);
                ASSERT_EQ(HuffmanPair::first(e), s1);
                ASSERT_EQ(HuffmanPair::first_length(e), l1);
                ASSERT_EQ(HuffmanPair::second(e), s2);
                ASSERT_EQ(HuffmanPair::second_length(e), l2);
                ASSERT_LE(l1 + l2, static_cast<uint32_t>(kHuffmanRootBits));
            }
        }
        // Short codes (spread 0.3: ~1.5 bits each) make most indices pairs; long ones (40: ~7 bits) few.
        if (spread < 1) {
            EXPECT_GT(pairs, kHuffmanRootSize / 2);
        }
        RecordProperty("pairs_spread_" + std::to_string(static_cast<int>(spread * 10)), static_cast<int>(pairs));
    }
}

// huffman_decoder_shape counts, without the tables, what they hold (the CUDA
// backend launches its decoder from it and builds the tables on the device).
TEST(HuffmanTable, ShapeCountsWhatTheTablesHold) {
    std::vector<HuffmanCodebook> books = table_test_books();
    for (double spread : {0.05, 0.3, 1.0, 3.0, 40.0})
        for (uint32_t alphabet : {2u, 64u, 1024u, 1500u, 4096u}) {
            const auto symbols = skewed_symbols(100000, alphabet, spread, 5);
            books.push_back(huffman_build(histogram_cpu(symbols, alphabet, 1)));
        }
    size_t overflowing = 0, paired = 0;
    for (size_t b = 0; b < books.size(); ++b) {
        const HuffmanDecodeTable t = huffman_decode_table(books[b]);
        const std::vector<uint32_t> root = huffman_pair_root(t);
        const auto pairs = static_cast<uint32_t>(
            std::count_if(root.begin(), root.end(), [](uint32_t e) { return (e & HuffmanPair::kFlag) != 0; }));
        const HuffmanDecoderShape shape = huffman_decoder_shape(books[b]);
        EXPECT_EQ(shape.sub_entries, t.sub.size()) << "book " << b;
        EXPECT_EQ(shape.pair_entries, pairs) << "book " << b;
        EXPECT_GE(shape.sub_demand, shape.sub_entries) << "book " << b;
        overflowing += shape.sub_demand > kHuffmanSubCapacity;
        paired += pairs > 0;
    }
    EXPECT_GE(overflowing, 1u);  // the 65536-symbol book
    EXPECT_GE(paired, 10u);
}

TEST(HuffmanHostile, CodebookValidation) {
    EXPECT_EQ(read_codebook_status(codebook_bytes(4, {{0, 1}, {1, 2}, {3, 2}})), GSZ_STATUS_OK);
    EXPECT_EQ(read_codebook_status(codebook_bytes(4, {{0, 1}, {3, 2}})), GSZ_STATUS_OK);  // incomplete is allowed
    EXPECT_EQ(read_codebook_status(codebook_bytes(4, {{0, 1}, {1, 1}, {3, 2}})), GSZ_STATUS_CORRUPT);  // Kraft
    EXPECT_EQ(read_codebook_status(codebook_bytes(4, {{0, 1}, {1, 2}, {2, 3}, {3, 3}})), GSZ_STATUS_OK);
    EXPECT_EQ(read_codebook_status(codebook_bytes(5, {{0, 1}, {1, 2}, {2, 3}, {3, 3}, {4, 24}})),
              GSZ_STATUS_CORRUPT);  // Kraft exceeded by 2^-24
    EXPECT_EQ(read_codebook_status(codebook_bytes(4, {{0, 2}})), GSZ_STATUS_CORRUPT);   // single symbol, 2 bits
    EXPECT_EQ(read_codebook_status(codebook_bytes(4, {{2, 1}})), GSZ_STATUS_OK);
    EXPECT_EQ(read_codebook_status(codebook_bytes(4, {{1, 1}, {1, 1}})), GSZ_STATUS_CORRUPT);  // repeated
    EXPECT_EQ(read_codebook_status(codebook_bytes(4, {{2, 1}, {1, 1}})), GSZ_STATUS_CORRUPT);  // decreasing
    EXPECT_EQ(read_codebook_status(codebook_bytes(4, {{0, 1}, {4, 1}})), GSZ_STATUS_CORRUPT);  // >= alphabet
    EXPECT_EQ(read_codebook_status(codebook_bytes(4, {{0, 1}, {1, 0}})), GSZ_STATUS_CORRUPT);  // length 0
    EXPECT_EQ(read_codebook_status(codebook_bytes(4, {{0, 1}, {1, 25}})), GSZ_STATUS_CORRUPT);
    EXPECT_EQ(read_codebook_status(codebook_bytes(0, {})), GSZ_STATUS_CORRUPT);
    EXPECT_EQ(read_codebook_status(codebook_bytes(4, {})), GSZ_STATUS_CORRUPT);  // nothing used
    EXPECT_EQ(read_codebook_status(codebook_bytes(65537, {{0, 1}})), GSZ_STATUS_CORRUPT);
    EXPECT_EQ(read_codebook_status(codebook_bytes(100, {{0, 1}}), 50), GSZ_STATUS_CORRUPT);
    EXPECT_EQ(read_codebook_status(codebook_bytes(4, {{0, 1}}, 5)), GSZ_STATUS_CORRUPT);  // num_used > alphabet
    EXPECT_EQ(read_codebook_status(codebook_bytes(65536, {{0, 1}}, 65536)), GSZ_STATUS_CORRUPT);  // truncated
}

TEST(HuffmanHostile, EveryTruncationThrows) {
    const auto symbols = skewed_symbols(20000, 300, 10.0, 4);
    const auto book = huffman_build(histogram_cpu(symbols, 300, 1));
    const auto a = serialize(book, huffman_encode_cpu(book, symbols, 999, 1));
    for (size_t len = 0; len < a.codebook.size(); ++len) {
        const std::vector<uint8_t> cut(a.codebook.begin(), a.codebook.begin() + len);
        EXPECT_EQ(read_codebook_status(cut), GSZ_STATUS_CORRUPT) << len;
    }
    const auto read_status = [&](std::span<const uint8_t> chunks, std::span<const uint8_t> bits) {
        return status_of([&] { huffman_stream_read(chunks, bits, symbols.size(), kHuffmanNarrowCountsVersion); });
    };
    for (size_t len = 0; len < a.chunks.size(); ++len)
        EXPECT_EQ(read_status(std::span<const uint8_t>(a.chunks.data(), len), a.bitstream), GSZ_STATUS_CORRUPT) << len;
    for (size_t len = 0; len < a.bitstream.size(); ++len)
        EXPECT_EQ(read_status(a.chunks, std::span<const uint8_t>(a.bitstream.data(), len)), GSZ_STATUS_CORRUPT) << len;
}

TEST(Huffman, ChunkBitCountsAreNarrowFromVersion4) {
    const auto symbols = skewed_symbols(10000, 64, 3.0, 8);
    const auto book = huffman_build(histogram_cpu(symbols, 64, 1));
    for (const uint32_t chunk : {1024u, kHuffmanNarrowChunkSymbols, kHuffmanNarrowChunkSymbols + 1}) {
        const auto stream = huffman_encode_cpu(book, symbols, chunk, 1);
        ByteWriter bits;
        huffman_bitstream_write(stream, bits);
        for (const uint32_t version : {3u, kHuffmanNarrowCountsVersion}) {
            SCOPED_TRACE("chunk " + std::to_string(chunk) + " version " + std::to_string(version));
            ByteWriter table;
            huffman_chunks_write(stream, table, version);
            const size_t width = version >= 4 && chunk <= kHuffmanNarrowChunkSymbols ? 2 : 4;
            EXPECT_EQ(table.bytes().size(), 16 + width * stream.chunk_bits.size());
            const auto view = huffman_stream_read(table.bytes(), bits.bytes(), symbols.size(), version);
            EXPECT_EQ(view.chunk_bits, stream.chunk_bits);
            // Read with the other width, the table's length does not add up.
            const uint32_t other = version == 3 ? kHuffmanNarrowCountsVersion : 3u;
            if (width == 2 || chunk <= kHuffmanNarrowChunkSymbols) {
                EXPECT_EQ(status_of([&] { huffman_stream_read(table.bytes(), bits.bytes(), symbols.size(), other); }),
                          GSZ_STATUS_CORRUPT);
            }
        }
    }
}

TEST(HuffmanHostile, ChunkTableValidation) {
    const auto symbols = skewed_symbols(10000, 64, 3.0, 8);
    const auto book = huffman_build(histogram_cpu(symbols, 64, 1));
    const auto stream = huffman_encode_cpu(book, symbols, 3000, 1);  // 4 chunks
    const auto a = serialize(book, stream);
    auto read_status = [&](const std::vector<uint8_t>& chunks, const std::vector<uint8_t>& bits, uint64_t n) {
        return status_of([&] { huffman_stream_read(chunks, bits, n, kHuffmanNarrowCountsVersion); });
    };
    EXPECT_EQ(read_status(a.chunks, a.bitstream, 10000), GSZ_STATUS_OK);
    EXPECT_EQ(read_status(a.chunks, a.bitstream, 9999), GSZ_STATUS_CORRUPT);

    auto patched = [&](size_t offset, auto value) {
        auto c = a.chunks;
        std::memcpy(c.data() + offset, &value, sizeof value);
        return c;
    };
    EXPECT_EQ(read_status(patched(0, uint64_t{9000}), a.bitstream, 9000), GSZ_STATUS_CORRUPT);  // 3 chunks, not 4
    EXPECT_EQ(read_status(patched(8, uint32_t{0}), a.bitstream, 10000), GSZ_STATUS_CORRUPT);
    EXPECT_EQ(read_status(patched(8, uint32_t{(1u << 20) + 1}), a.bitstream, 10000), GSZ_STATUS_CORRUPT);
    {
        // Still 4 chunks and plausible bit counts: only decoding can tell.  (Chunks of more than 2730
        // symbols, so the counts stay 4 bytes wide.)
        const auto c = patched(8, uint32_t{2800});
        ASSERT_EQ(read_status(c, a.bitstream, 10000), GSZ_STATUS_OK);
        const auto view = huffman_stream_read(c, a.bitstream, 10000, kHuffmanNarrowCountsVersion);
        std::vector<uint16_t> out(10000);
        EXPECT_EQ(status_of([&] { huffman_decode_cpu(book, view, out, 2); }), GSZ_STATUS_CORRUPT);
    }
    EXPECT_EQ(read_status(patched(12, uint32_t{5}), a.bitstream, 10000), GSZ_STATUS_CORRUPT);
    EXPECT_EQ(read_status(patched(12, uint32_t{0xffffffff}), a.bitstream, 10000), GSZ_STATUS_CORRUPT);
    // A chunk claiming fewer bits than symbols, or more than 24 per symbol.
    EXPECT_EQ(read_status(patched(16, uint32_t{2999}), a.bitstream, 10000), GSZ_STATUS_CORRUPT);
    EXPECT_EQ(read_status(patched(16, uint32_t{3000 * 24 + 1}), a.bitstream, 10000), GSZ_STATUS_CORRUPT);
    // Moving bits between chunks by a whole word keeps the total but not the per-chunk words.
    {
        auto c = patched(16, stream.chunk_bits[0] + 32);
        const uint32_t b1 = stream.chunk_bits[1] - 32;
        std::memcpy(c.data() + 20, &b1, 4);
        EXPECT_EQ(read_status(c, a.bitstream, 10000), GSZ_STATUS_OK);  // table is consistent ...
        const auto view = huffman_stream_read(c, a.bitstream, 10000, kHuffmanNarrowCountsVersion);
        std::vector<uint16_t> out(10000);
        EXPECT_EQ(status_of([&] { huffman_decode_cpu(book, view, out, 1); }), GSZ_STATUS_CORRUPT);  // ... data not
    }
    auto extra = a.chunks;
    extra.push_back(0);
    EXPECT_EQ(read_status(extra, a.bitstream, 10000), GSZ_STATUS_CORRUPT);
    auto longer = a.bitstream;
    longer.insert(longer.end(), 4, 0);
    EXPECT_EQ(read_status(a.chunks, longer, 10000), GSZ_STATUS_CORRUPT);
    longer.resize(a.bitstream.size() + 1);
    EXPECT_EQ(read_status(a.chunks, longer, 10000), GSZ_STATUS_CORRUPT);
    // Empty stream: zero chunks.
    ByteWriter w;
    w.put<uint64_t>(0);
    w.put<uint32_t>(1);
    w.put<uint32_t>(0);
    EXPECT_EQ(read_status(w.bytes(), {}, 0), GSZ_STATUS_OK);
    EXPECT_EQ(read_status(w.bytes(), {0, 0, 0, 0}, 0), GSZ_STATUS_CORRUPT);
    // Symbol count near 2^64 must not overflow the chunk count.
    ByteWriter big;
    big.put<uint64_t>(~0ull);
    big.put<uint32_t>(1);
    big.put<uint32_t>(0);
    EXPECT_EQ(read_status(big.bytes(), {}, ~0ull), GSZ_STATUS_CORRUPT);
}

TEST(HuffmanHostile, BitFlipsNeverCrash) {
    const auto symbols = skewed_symbols(4000, 1024, 8.0, 21);
    auto hist = histogram_cpu(symbols, 1024, 1);
    const auto book = huffman_build(hist);
    const auto a = serialize(book, huffman_encode_cpu(book, symbols, 500, 1));
    size_t corrupt = 0, decoded = 0;
    for (size_t bit = 0; bit < a.bitstream.size() * 8; ++bit) {
        Archive b = a;
        b.bitstream[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
        const auto st = status_of([&] { deserialize_decode(b, symbols.size(), 2); });
        ASSERT_TRUE(st == GSZ_STATUS_OK || st == GSZ_STATUS_CORRUPT);
        (st == GSZ_STATUS_OK ? decoded : corrupt)++;
    }
    EXPECT_GT(corrupt, 0u);
    // Same against an incomplete code, where some bit patterns are no codeword.
    const auto inc = codebook_bytes(8, {{0, 1}, {3, 3}, {5, 4}});
    ByteReader in(inc, "codebook");
    const auto ibook = huffman_codebook_read(in, 8);
    std::mt19937 rng(1);
    std::vector<uint16_t> isym(3000);
    for (auto& s : isym) s = std::array<uint16_t, 3>{0, 3, 5}[rng() % 3];
    const auto istream = huffman_encode_cpu(ibook, isym, 256, 1);
    Archive ia = serialize(ibook, istream);
    ia.codebook = inc;
    EXPECT_EQ(deserialize_decode(ia, isym.size(), 1), isym);
    for (size_t bit = 0; bit < ia.bitstream.size() * 8; ++bit) {
        Archive b = ia;
        b.bitstream[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
        const auto st = status_of([&] { deserialize_decode(b, isym.size(), 1); });
        ASSERT_TRUE(st == GSZ_STATUS_OK || st == GSZ_STATUS_CORRUPT);
    }
}

TEST(HuffmanHostile, DecodeRejectsBadCodewordsAndPadding) {
    // Code {0: "0", 1: "10"}; "11" is no codeword.
    const auto bytes = codebook_bytes(2, {{0, 1}, {1, 2}});
    ByteReader in(bytes, "codebook");
    const auto book = huffman_codebook_read(in, 2);
    auto decode_word = [&](uint32_t word, uint32_t bits, uint64_t n) {
        ByteWriter c, b;
        c.put<uint64_t>(n);
        c.put<uint32_t>(static_cast<uint32_t>(n));
        c.put<uint32_t>(1);
        c.put<uint32_t>(bits);
        b.put<uint32_t>(word);
        std::vector<uint16_t> out(n);
        return status_of([&] {
            const auto view = huffman_stream_read(c.bytes(), b.bytes(), n, 3);  // u32 counts: version 3's layout
            huffman_decode_cpu(book, view, out, 1);
        });
    };
    EXPECT_EQ(decode_word(0b0100u << 28, 3, 2), GSZ_STATUS_OK);
    EXPECT_EQ(decode_word(0b1100u << 28, 3, 2), GSZ_STATUS_CORRUPT);   // invalid codeword
    EXPECT_EQ(decode_word(0b0100u << 28, 4, 2), GSZ_STATUS_CORRUPT);   // one bit left over
    EXPECT_EQ(decode_word(0b0100u << 28, 3, 3), GSZ_STATUS_CORRUPT);   // (count/chunk mismatch)
    EXPECT_EQ(decode_word(0b0101u << 28, 3, 2), GSZ_STATUS_CORRUPT);   // nonzero padding
    EXPECT_EQ(decode_word(0b0100u << 28, 2, 2), GSZ_STATUS_CORRUPT);   // codeword runs past the chunk
    // Runs past the chunk's last word: the next chunk's bits must not be used.
    ByteWriter c, b;
    c.put<uint64_t>(2);
    c.put<uint32_t>(1);
    c.put<uint32_t>(2);
    c.put<uint32_t>(1);
    c.put<uint32_t>(1);
    b.put<uint32_t>(1u << 31);  // "1" then the next chunk's "0": would be "10" if read across
    b.put<uint32_t>(0);
    const auto view = huffman_stream_read(c.bytes(), b.bytes(), 2, 3);
    std::vector<uint16_t> out(2);
    EXPECT_EQ(status_of([&] { huffman_decode_cpu(book, view, out, 1); }), GSZ_STATUS_CORRUPT);
}

TEST(HuffmanHostile, InvalidArguments) {
    EXPECT_EQ(status_of([] { huffman_build(std::vector<uint64_t>{0, 0, 0}); }), GSZ_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(status_of([] { huffman_build(std::vector<uint64_t>{}); }), GSZ_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(status_of([] { huffman_build(std::vector<uint64_t>(65537, 1)); }), GSZ_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(status_of([] { histogram_cpu(std::vector<uint16_t>{1, 2, 9}, 9, 2); }), GSZ_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(status_of([] { histogram_cpu(std::vector<uint16_t>{0}, 0, 1); }), GSZ_STATUS_INVALID_ARGUMENT);

    const auto book = huffman_build(std::vector<uint64_t>{3, 0, 1, 1});
    const std::vector<uint16_t> good{0, 2, 3}, unused{0, 1}, outside{0, 4};
    EXPECT_EQ(status_of([&] { huffman_encode_cpu(book, unused, 16, 1); }), GSZ_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(status_of([&] { huffman_encode_cpu(book, outside, 16, 2); }), GSZ_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(status_of([&] { huffman_encode_cpu(book, good, 0, 1); }), GSZ_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(status_of([&] { huffman_encode_cpu(book, good, (1u << 20) + 1, 1); }), GSZ_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(status_of([&] { huffman_encode_cpu(book, good, 1u << 20, 1); }), GSZ_STATUS_OK);
    EXPECT_EQ(status_of([&] { huffman_encode_cpu(HuffmanCodebook{}, good, 16, 1); }), GSZ_STATUS_INVALID_ARGUMENT);

    const auto a = serialize(book, huffman_encode_cpu(book, good, 2, 1));
    const auto view = huffman_stream_read(a.chunks, a.bitstream, 3, kHuffmanNarrowCountsVersion);
    std::vector<uint16_t> small(2), right(3);
    EXPECT_EQ(status_of([&] { huffman_decode_cpu(book, view, small, 1); }), GSZ_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(status_of([&] { huffman_decode_cpu(book, view, right, 1); }), GSZ_STATUS_OK);
    EXPECT_EQ(right, good);
    auto broken = view;
    broken.chunk_word_offset[1] = 5;  // a hand-made view that points past the words
    EXPECT_EQ(status_of([&] { huffman_decode_cpu(book, broken, right, 1); }), GSZ_STATUS_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace gsz::encode

namespace gsz::encode {
namespace {

// The book the GPU pipeline rebuilds from device-built lengths is the host's
// own book; lengths that are not a prefix code are refused.
TEST(Huffman, BookFromLengthsIsTheBuiltBook) {
    std::mt19937_64 rng(5);
    for (const uint32_t alphabet : {1u, 2u, 1024u, 65536u}) {
        std::vector<uint64_t> hist(alphabet, 0);
        for (uint32_t s = 0; s < alphabet; ++s) hist[s] = rng() % 4 == 0 ? rng() % 5000 : 0;
        hist[alphabet / 2] += 1;
        const HuffmanCodebook built = huffman_build(hist);
        const HuffmanCodebook rebuilt = huffman_book_from_lengths(built.lengths);
        EXPECT_EQ(rebuilt.lengths, built.lengths);
        EXPECT_EQ(rebuilt.codes, built.codes);
        EXPECT_EQ(rebuilt.sorted_symbols, built.sorted_symbols);
        EXPECT_EQ(rebuilt.first_code, built.first_code);
        EXPECT_EQ(rebuilt.max_length, built.max_length);
    }
    EXPECT_THROW(huffman_book_from_lengths(std::vector<uint8_t>{1, 1, 1}), Error);   // Kraft's sum over 1
    EXPECT_THROW(huffman_book_from_lengths(std::vector<uint8_t>{0, 2}), Error);      // one symbol, not 1 bit
    EXPECT_THROW(huffman_book_from_lengths(std::vector<uint8_t>{0, 0}), Error);      // none used
    EXPECT_THROW(huffman_book_from_lengths(std::vector<uint8_t>{25, 1}), Error);     // past the limit
}

}  // namespace
}  // namespace gsz::encode

namespace gsz::encode {
namespace {

// The limit's runs against its rule taken one unit at a time (as it was
// written before), on over-full counts of clamped random deep trees.
void limit_one_unit_at_a_time(std::array<uint64_t, kHuffmanMaxCodeLength + 1>& count) {
    constexpr int L = kHuffmanMaxCodeLength;
    uint64_t kraft = 0;
    for (int len = 1; len <= L; ++len) kraft += count[len] << (L - len);
    while (kraft > (uint64_t{1} << L)) {
        if (const uint64_t steps = std::min(count[L - 1], kraft - (uint64_t{1} << L)); steps != 0) {
            count[L - 1] -= steps;
            count[L] += steps;
            kraft -= steps;
            continue;
        }
        --count[L];
        for (int len = L - 2; len >= 1; --len)
            if (count[len] != 0) {
                --count[len];
                count[len + 1] += 2;
                break;
            }
        --kraft;
    }
}

TEST(Huffman, LengthLimitRunsEqualUnitSteps) {
    std::mt19937_64 rng(11);
    int over_full = 0;
    for (int t = 0; t < 20000; ++t) {
        // A random full binary tree grown mostly at its deepest leaves.
        std::vector<int> lens = {1, 1};
        const size_t leaves = 2 + rng() % (t % 2 ? 200 : 3000);
        while (lens.size() < leaves) {
            const size_t i = rng() % 10 < 6 ? lens.size() - 1 - rng() % std::min<size_t>(lens.size(), 3)
                                            : rng() % lens.size();
            lens.push_back(++lens[i]);
        }
        std::array<uint64_t, kHuffmanMaxCodeLength + 1> count{};
        for (const int l : lens) ++count[std::min(l, kHuffmanMaxCodeLength)];
        auto expect = count;
        limit_one_unit_at_a_time(expect);
        huffman_limit_counts(count.data());
        ASSERT_EQ(count, expect) << "tree " << t;
        over_full += expect != count || std::max_element(lens.begin(), lens.end())[0] > kHuffmanMaxCodeLength;
    }
    EXPECT_GT(over_full, 1000);   // the limit was exercised
}

}  // namespace
}  // namespace gsz::encode
