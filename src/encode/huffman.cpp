// Canonical length-limited Huffman coding, CPU side.
//
// Code lengths: two-queue Huffman (leaves sorted by (count, symbol), ties
// between a leaf and a merged node go to the leaf); a tree deeper than
// kHuffmanMaxCodeLength is cut to it by limit_lengths.  Canonical codes: symbols
// ranked by (length, symbol); shorter codes are numerically smaller prefixes,
// so in a left-aligned 24-bit window the codes of length l occupy
// [limit(l-1), limit(l)), which is what the decoder compares against.
#include "encode/huffman.hpp"
#include "encode/huffman_limit.hpp"
#include "encode/huffman_table.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <utility>

namespace gsz::encode {
namespace {

constexpr int kMaxLen = kHuffmanMaxCodeLength;
constexpr uint32_t kMaxChunkSymbols = 1u << 20;

int resolve_threads(int num_threads) { return num_threads > 0 ? num_threads : omp_get_max_threads(); }

// A symbol with nonzero weight; the tree is built from the leaves in
// (weight, symbol) order, which fixes the code lengths on every machine.
struct Leaf {
    uint64_t weight;
    uint16_t symbol;
};

// The used symbols of a histogram, in increasing order, and the same symbols
// as leaves in (weight, symbol) order: views of the calling thread's buffers,
// valid until its next call.
struct UsedLeaves {
    std::span<const uint16_t> used;
    std::span<const Leaf> sorted;
};

// Radix sort of `leaves` by weight, 11 bits per pass, only the passes in use;
// stable, so leaves in symbol order come out in (weight, symbol) order.
void radix_sort_leaves(std::vector<Leaf>& leaves, uint64_t max_weight) {
    thread_local std::vector<Leaf> spare;
    spare.resize(leaves.size());
    for (int shift = 0; shift < 64 && (max_weight >> shift) != 0; shift += 11) {
        std::array<uint32_t, 2049> start{};
        for (const Leaf& l : leaves) ++start[((l.weight >> shift) & 0x7FF) + 1];
        for (int b = 0; b < 2048; ++b) start[b + 1] += start[b];
        for (const Leaf& l : leaves) spare[start[(l.weight >> shift) & 0x7FF]++] = l;
        leaves.swap(spare);
    }
}

// Gathers and sorts the used symbols of `histogram`.  Most of interp's
// 65,526-symbol alphabet is unused and skipped 8 counts at a time; most of
// the used symbols are the tail's rare ones: leaves lighter than 2^11 are
// placed by one counting pass and come first, only the heavier ones are
// radix-sorted.
UsedLeaves used_leaves(std::span<const uint64_t> histogram) {
    constexpr uint64_t kLight = 2048;
    // Sized once for the largest alphabet: growing them to each call's
    // alphabet zero-filled ~0.6 MB per call.
    thread_local std::vector<uint16_t> used(kHuffmanMaxAlphabet);
    thread_local std::vector<uint64_t> weight(kHuffmanMaxAlphabet);
    thread_local std::vector<Leaf> sorted, heavy;
    const size_t alphabet = histogram.size();
    size_t num_used = 0;
    const auto gather = [&](size_t s) {
        used[num_used] = static_cast<uint16_t>(s);
        weight[num_used] = histogram[s];
        num_used += histogram[s] != 0;
    };
    size_t s = 0;
    for (; s + 8 <= alphabet; s += 8) {
        uint64_t any = 0;
        for (size_t k = 0; k < 8; ++k) any |= histogram[s + k];
        if (any != 0)
            for (size_t k = 0; k < 8; ++k) gather(s + k);
    }
    for (; s < alphabet; ++s) gather(s);

    // Merged weights are bounded by the total: keep it within 64 bits (real
    // histograms' totals are their symbol counts, far below).
    const auto total_fits = [&] {
        uint64_t total = 0;
        for (size_t i = 0; i < num_used; ++i)
            if (__builtin_add_overflow(total, weight[i], &total)) return false;
        return true;
    };
    while (!total_fits())
        for (size_t i = 0; i < num_used; ++i) weight[i] = std::max<uint64_t>(1, weight[i] >> 1);

    std::array<uint32_t, kLight> light{};  // leaves per light weight, then where the first goes
    uint64_t max_weight = 0;
    size_t num_heavy = 0;
    for (size_t i = 0; i < num_used; ++i) {
        const uint64_t w = weight[i];
        max_weight = std::max(max_weight, w);
        if (w < kLight)
            ++light[w];
        else
            ++num_heavy;
    }
    uint32_t placed = 0;
    for (uint32_t& count : light) placed += std::exchange(count, placed);
    sorted.resize(num_used);
    heavy.resize(num_heavy);
    size_t h = 0;
    for (size_t i = 0; i < num_used; ++i) {
        const Leaf leaf{weight[i], used[i]};
        if (leaf.weight < kLight)
            sorted[light[leaf.weight]++] = leaf;
        else
            heavy[h++] = leaf;
    }
    radix_sort_leaves(heavy, max_weight);
    std::copy(heavy.begin(), heavy.end(), sorted.begin() + placed);
    return {std::span<const uint16_t>(used.data(), num_used), sorted};
}

// Code lengths of an optimal (unlimited) Huffman code over the sorted leaves
// (at least two): depth[i] is leaf i's.  Returns the longest.
uint32_t huffman_depths(std::span<const Leaf> sorted, std::vector<uint32_t>& depth) {
    const size_t n = sorted.size();
    // Nodes 0..n-1 are the sorted leaves, n..2n-2 the merged nodes in creation
    // order; merged weights are nondecreasing, so they form the second queue.
    // Kept per thread: fresh vectors of 10^4 nodes cost more in page faults than the tree does.
    thread_local std::vector<uint64_t> node_weight;
    thread_local std::vector<uint32_t> parent;
    node_weight.resize(2 * n - 1);
    parent.assign(2 * n - 1, 0);
    for (size_t i = 0; i < n; ++i) node_weight[i] = sorted[i].weight;
    size_t next_leaf = 0, next_merged = n;
    auto pop_smallest = [&](size_t end_merged) {
        if (next_leaf < n && (next_merged == end_merged || node_weight[next_leaf] <= node_weight[next_merged]))
            return next_leaf++;
        return next_merged++;
    };
    for (size_t m = n; m < 2 * n - 1; ++m) {
        const size_t a = pop_smallest(m);
        const size_t b = pop_smallest(m);
        node_weight[m] = node_weight[a] + node_weight[b];  // <= total weight, checked to fit by the caller
        parent[a] = parent[b] = static_cast<uint32_t>(m);
    }
    // Depths top-down: a parent is always created after its children.
    depth.assign(2 * n - 1, 0);
    for (size_t m = 2 * n - 2; m-- > 0;) depth[m] = depth[parent[m]] + 1;
    depth.resize(n);
    return *std::max_element(depth.begin(), depth.end());
}

// Cuts a too deep tree's lengths to kMaxLen (huffman_limit_counts), then the
// lengths, so many of each, go back to the leaves in weight order, shortest
// to heaviest.  One tree: rebuilding it with halved weights took three or
// four trees of 10^4 leaves on interp's tight bounds (a millisecond on the GPU
// pipeline's path, bench/NOTES.md).
void limit_lengths(std::vector<uint32_t>& depth) {
    std::array<uint64_t, kMaxLen + 1> count{};
    for (const uint32_t d : depth) ++count[std::min<uint32_t>(d, kMaxLen)];
    huffman_limit_counts(count.data());
    // depth[i] belongs to sorted leaf i (lightest first): the longest lengths go first.
    size_t i = 0;
    for (int len = kMaxLen; len >= 1; --len)
        for (uint64_t k = 0; k < count[len]; ++k) depth[i++] = static_cast<uint32_t>(len);
}

// Derives canonical codes and decoding tables from `book.lengths`, which must
// satisfy Kraft (checked by every caller); `used` lists the symbols with a
// nonzero length in increasing order (interp's alphabet has 65,526 entries,
// of which 10^2..10^4 are used).
void assign_canonical(HuffmanCodebook& book, std::span<const uint16_t> used) {
    const uint32_t alphabet = book.alphabet_size;
    book.codes.assign(alphabet, 0);
    book.first_code.assign(kMaxLen + 1, 0);
    book.first_index.assign(kMaxLen + 1, 0);
    book.count.assign(kMaxLen + 1, 0);
    book.max_length = 0;
    for (const uint16_t s : used) {
        const uint32_t len = book.lengths[s];
        ++book.count[len];
        book.max_length = std::max(book.max_length, len);
    }
    uint32_t code = 0, index = 0;
    for (int len = 1; len <= kMaxLen; ++len) {
        book.first_code[len] = code;
        book.first_index[len] = index;
        code = (code + book.count[len]) << 1;
        index += book.count[len];
    }
    book.sorted_symbols.assign(index, 0);
    std::array<uint32_t, kMaxLen + 1> next{};
    for (int len = 1; len <= kMaxLen; ++len) next[len] = book.first_index[len];
    for (const uint16_t s : used) {
        const uint32_t len = book.lengths[s];
        const uint32_t rank = next[len]++;
        book.sorted_symbols[rank] = s;
        book.codes[s] = book.first_code[len] + (rank - book.first_index[len]);
    }
}

void check_book_shape(const HuffmanCodebook& book) {
    GSZ_CHECK(book.alphabet_size >= 1 && book.alphabet_size <= kHuffmanMaxAlphabet &&
                  book.lengths.size() == book.alphabet_size && book.codes.size() == book.alphabet_size &&
                  book.first_code.size() == kMaxLen + 1 && book.first_index.size() == kMaxLen + 1 &&
                  book.count.size() == kMaxLen + 1 && book.max_length <= kMaxLen && book.max_length >= 1,
              GSZ_STATUS_INVALID_ARGUMENT, "huffman: codebook is not initialized");
}

uint32_t load_word(const uint8_t* p) {
    uint32_t w;
    std::memcpy(&w, p, sizeof w);
    return w;  // little-endian host (asserted in byte_io.hpp)
}

enum class ChunkResult : uint8_t { ok, bad_code, wrong_length, nonzero_padding };

// Decodes one chunk.  The 64-bit buffer holds the next bits MSB-first and
// keeps >= 32 valid bits (a lookup window) before each symbol; past the chunk's last word it
// is fed zeros, so overruns show up only in the final bit count.
ChunkResult decode_chunk(const HuffmanCodebook& book, const HuffmanDecodeTable& t, const uint8_t* words,
                         uint64_t num_words, uint32_t num_bits, uint16_t* out, uint32_t num_symbols) {
    const auto num_sorted = static_cast<uint32_t>(book.sorted_symbols.size());
    uint64_t buf = 0;
    int avail = 0;
    uint64_t next_word = 0;
    for (uint32_t i = 0; i < num_symbols; ++i) {
        if (avail <= 32) {
            const uint64_t w = next_word < num_words ? load_word(words + 4 * next_word) : 0;
            ++next_word;
            buf |= w << (32 - avail);
            avail += 32;
        }
        const auto window = static_cast<uint32_t>(buf >> 32);
        uint32_t entry = huffman_lookup(t.root.data(), t.sub.data(), window);
        if (HuffmanEntry::length(entry) != 0) {
            out[i] = static_cast<uint16_t>(HuffmanEntry::symbol(entry));
        } else {
            entry = huffman_search(t.limit.data(), book.first_code.data(), book.first_index.data(), book.max_length,
                                   num_sorted, window);
            if (HuffmanEntry::length(entry) == 0) return ChunkResult::bad_code;
            out[i] = book.sorted_symbols[HuffmanEntry::symbol(entry)];
        }
        const uint32_t len = HuffmanEntry::length(entry);
        buf <<= len;
        avail -= static_cast<int>(len);
    }
    if (next_word * 32 - static_cast<uint64_t>(avail) != num_bits) return ChunkResult::wrong_length;
    // Zero padding keeps every valid stream canonical (byte-identical on re-encode).
    if (num_bits % 32 != 0 && (load_word(words + 4 * (num_words - 1)) << (num_bits % 32)) != 0)
        return ChunkResult::nonzero_padding;
    return ChunkResult::ok;
}

}  // namespace

std::vector<uint64_t> histogram_cpu(std::span<const uint16_t> symbols, uint32_t alphabet_size, int num_threads) {
    GSZ_CHECK(alphabet_size >= 1 && alphabet_size <= kHuffmanMaxAlphabet, GSZ_STATUS_INVALID_ARGUMENT,
              "histogram: alphabet size %u out of [1, %u]", alphabet_size, kHuffmanMaxAlphabet);
    const int threads = resolve_threads(num_threads);
    const size_t n = symbols.size();
    // Bin `alphabet_size` collects out-of-range symbols so the loop needs no
    // branch.  Small alphabets get 4 interleaved tables: skewed data hits one
    // bin over and over, and a single counter serializes on store forwarding.
    const size_t bins = size_t{alphabet_size} + 1;
    const int ways = alphabet_size <= 4096 ? 4 : 1;
    std::vector<std::vector<uint64_t>> partial(static_cast<size_t>(threads));
#pragma omp parallel num_threads(threads)
    {
        const auto tid = static_cast<size_t>(omp_get_thread_num());
        const auto nt = static_cast<size_t>(omp_get_num_threads());
        const size_t begin = n * tid / nt, end = n * (tid + 1) / nt;
        std::vector<uint64_t> h(bins * ways, 0);
        uint64_t* t0 = h.data();
        uint64_t* t1 = h.data() + bins * (ways > 1);
        uint64_t* t2 = h.data() + bins * 2 * (ways > 1);
        uint64_t* t3 = h.data() + bins * 3 * (ways > 1);
        const uint16_t* s = symbols.data();
        const uint32_t cap = alphabet_size;
        size_t i = begin;
        for (; i + 4 <= end; i += 4) {
            ++t0[std::min<uint32_t>(s[i], cap)];
            ++t1[std::min<uint32_t>(s[i + 1], cap)];
            ++t2[std::min<uint32_t>(s[i + 2], cap)];
            ++t3[std::min<uint32_t>(s[i + 3], cap)];
        }
        for (; i < end; ++i) ++t0[std::min<uint32_t>(s[i], cap)];
        for (int w = 1; w < ways; ++w)
            for (size_t b = 0; b < bins; ++b) h[b] += h[w * bins + b];
        h.resize(bins);
        partial[tid] = std::move(h);
    }
    std::vector<uint64_t> hist(bins, 0);
    for (const auto& h : partial)  // fixed order; empty when the runtime gave fewer threads
        for (size_t b = 0; b < h.size(); ++b) hist[b] += h[b];
    GSZ_CHECK(hist[alphabet_size] == 0, GSZ_STATUS_INVALID_ARGUMENT,
              "histogram: %llu symbols are >= alphabet size %u",
              static_cast<unsigned long long>(hist[alphabet_size]), alphabet_size);
    hist.pop_back();
    return hist;
}

void huffman_build(std::span<const uint64_t> histogram, HuffmanCodebook& book) {
    GSZ_CHECK(!histogram.empty() && histogram.size() <= kHuffmanMaxAlphabet, GSZ_STATUS_INVALID_ARGUMENT,
              "huffman: alphabet size %zu out of [1, %u]", histogram.size(), kHuffmanMaxAlphabet);
    const auto alphabet = static_cast<uint32_t>(histogram.size());
    const UsedLeaves leaves = used_leaves(histogram);
    GSZ_CHECK(!leaves.used.empty(), GSZ_STATUS_INVALID_ARGUMENT, "huffman: histogram is empty");

    book.alphabet_size = alphabet;
    book.lengths.assign(alphabet, 0);
    if (leaves.used.size() == 1) {
        book.lengths[leaves.used[0]] = 1;
    } else {
        thread_local std::vector<uint32_t> depth;
        if (huffman_depths(leaves.sorted, depth) > kMaxLen) limit_lengths(depth);
        for (size_t i = 0; i < leaves.sorted.size(); ++i)
            book.lengths[leaves.sorted[i].symbol] = static_cast<uint8_t>(depth[i]);
    }
    assign_canonical(book, leaves.used);
}

HuffmanCodebook huffman_book_from_lengths(std::span<const uint8_t> lengths) {
    GSZ_CHECK(!lengths.empty() && lengths.size() <= kHuffmanMaxAlphabet, GSZ_STATUS_INTERNAL,
              "huffman: alphabet size %zu out of [1, %u]", lengths.size(), kHuffmanMaxAlphabet);
    HuffmanCodebook book;
    book.alphabet_size = static_cast<uint32_t>(lengths.size());
    book.lengths.assign(lengths.begin(), lengths.end());
    std::vector<uint16_t> used;
    uint64_t kraft = 0;
    for (size_t s = 0; s < lengths.size(); ++s) {
        if (lengths[s] == 0) continue;
        GSZ_CHECK(lengths[s] <= kMaxLen, GSZ_STATUS_INTERNAL, "huffman: symbol %zu has length %u", s, lengths[s]);
        used.push_back(static_cast<uint16_t>(s));
        kraft += uint64_t{1} << (kMaxLen - lengths[s]);
    }
    GSZ_CHECK(!used.empty() && kraft <= (uint64_t{1} << kMaxLen) && (used.size() > 1 || lengths[used[0]] == 1),
              GSZ_STATUS_INTERNAL, "huffman: the code lengths are not a prefix code");
    assign_canonical(book, used);
    return book;
}

HuffmanCodebook huffman_build(std::span<const uint64_t> histogram) {
    HuffmanCodebook book;
    huffman_build(histogram, book);
    return book;
}

HuffmanDecodeTable huffman_decode_table(const HuffmanCodebook& book) {
    constexpr uint32_t kRoot = kHuffmanRootBits;
    check_book_shape(book);
    HuffmanDecodeTable t;
    t.root.assign(kHuffmanRootSize, 0);
    t.limit.assign(kMaxLen + 1, 0);
    for (int len = 1; len <= kMaxLen; ++len)
        t.limit[len] = (book.first_code[len] + book.count[len]) << (kMaxLen - len);
    // Codes in canonical order: short ones fill their root entries; for the
    // longer ones note the longest length under each root prefix.
    const auto for_each_code = [&book](auto&& f) {
        for (uint32_t len = 1; len <= book.max_length; ++len)
            for (uint32_t i = 0; i < book.count[len]; ++i) {
                const uint32_t rank = book.first_index[len] + i;
                GSZ_CHECK(rank < book.sorted_symbols.size() && book.first_code[len] + i < (1u << len),
                          GSZ_STATUS_INVALID_ARGUMENT, "huffman: codebook tables are inconsistent");
                f(len, book.first_code[len] + i, uint32_t{book.sorted_symbols[rank]});
            }
    };
    std::vector<uint8_t> longest(kHuffmanRootSize, 0);
    for_each_code([&](uint32_t len, uint32_t code, uint32_t symbol) {
        if (len > kRoot) {
            longest[code >> (len - kRoot)] = static_cast<uint8_t>(len);
            return;
        }
        const uint32_t shift = kRoot - len;
        std::fill(t.root.begin() + (code << shift), t.root.begin() + ((code + 1) << shift),
                  HuffmanEntry::make(symbol, len));
    });
    // Subtables in prefix order while they fit; a prefix left without one
    // goes to the search (so does a code longer than its subtable reaches).
    for (uint32_t p = 0; p < kHuffmanRootSize; ++p) {
        if (longest[p] == 0) continue;
        const uint32_t bits = std::min<uint32_t>(longest[p] - kRoot, kHuffmanSubMaxBits);
        if (t.sub.size() + (size_t{1} << bits) > kHuffmanSubCapacity) continue;
        GSZ_CHECK(t.root[p] == 0, GSZ_STATUS_INVALID_ARGUMENT, "huffman: codebook tables are inconsistent");
        t.root[p] = static_cast<uint32_t>(t.sub.size()) | bits << HuffmanEntry::kSubShift;
        t.sub.resize(t.sub.size() + (size_t{1} << bits), 0);
    }
    for_each_code([&](uint32_t len, uint32_t code, uint32_t symbol) {
        if (len <= kRoot) return;
        const uint32_t root = t.root[code >> (len - kRoot)];
        const uint32_t bits = root >> HuffmanEntry::kSubShift;
        if (bits == 0 || len > kRoot + bits) return;
        const uint32_t below = code & ((1u << (len - kRoot)) - 1);  // the code's bits after the prefix
        const uint32_t shift = kRoot + bits - len;
        const auto first = t.sub.begin() + HuffmanEntry::symbol(root) + (below << shift);
        std::fill(first, first + (1u << shift), HuffmanEntry::make(symbol, len));
    });
    return t;
}

std::vector<uint32_t> huffman_pair_root(const HuffmanDecodeTable& table) {
    constexpr uint32_t kRoot = kHuffmanRootBits;
    GSZ_CHECK(table.root.size() == kHuffmanRootSize, GSZ_STATUS_INVALID_ARGUMENT, "huffman: decode table is empty");
    const auto direct = [](uint32_t e) {  // a code resolved by its root entry alone
        return (e >> HuffmanEntry::kSubShift) == 0 && HuffmanEntry::length(e) != 0;
    };
    std::vector<uint32_t> root = table.root;
    for (uint32_t i = 0; i < kHuffmanRootSize; ++i) {
        const uint32_t e1 = table.root[i];
        const uint32_t len1 = HuffmanEntry::length(e1);
        if (!direct(e1) || len1 >= kRoot || HuffmanEntry::symbol(e1) > HuffmanPair::kMaxSymbol) continue;
        // The second code starts after the first; its bits inside the index
        // are known, those shifted in (zeros) must not be part of it.
        const uint32_t e2 = table.root[(i << len1) & (kHuffmanRootSize - 1)];
        const uint32_t len2 = HuffmanEntry::length(e2);
        if (!direct(e2) || len1 + len2 > kRoot || HuffmanEntry::symbol(e2) > HuffmanPair::kMaxSymbol) continue;
        root[i] = HuffmanPair::kFlag | HuffmanEntry::symbol(e1) | HuffmanEntry::symbol(e2) << 10 | len1 << 20 |
                  len2 << 24;
    }
    return root;
}

HuffmanDecoderShape huffman_decoder_shape(const HuffmanCodebook& book) {
    constexpr uint32_t kRoot = kHuffmanRootBits;
    check_book_shape(book);
    HuffmanDecoderShape shape;
    // Subtables: the long codes in canonical order have nondecreasing root
    // prefixes (left-aligned codes grow), so the last code under a prefix is
    // its longest, and prefixes come in huffman_decode_table's allocation order.
    uint32_t prefix = 0, longest = 0;
    const auto allocate = [&] {
        if (longest == 0) return;
        const uint32_t size = 1u << std::min<uint32_t>(longest - kRoot, kHuffmanSubMaxBits);
        shape.sub_demand += size;
        if (shape.sub_entries + size <= kHuffmanSubCapacity) shape.sub_entries += size;
    };
    for (uint32_t len = kRoot + 1; len <= book.max_length; ++len)
        for (uint32_t i = 0; i < book.count[len]; ++i) {
            GSZ_CHECK(book.first_code[len] + i < (1u << len), GSZ_STATUS_INVALID_ARGUMENT,
                      "huffman: codebook tables are inconsistent");
            const uint32_t p = (book.first_code[len] + i) >> (len - kRoot);
            if (p != prefix) allocate();
            prefix = p;
            longest = len;
        }
    allocate();
    // Pairs: a code of length l1 < kRoot (symbol <= kMaxSymbol) heads
    // 2^(kRoot - l1) root indices; the index holds a pair when its other
    // b = kRoot - l1 bits begin with a whole such code, which a code of length
    // l2 <= b does for 2^(b - l2) of them: reach[b] sums that over the codes.
    uint64_t count[kRoot] = {};
    const uint32_t symbols = std::min<uint32_t>(book.alphabet_size, HuffmanPair::kMaxSymbol + 1);
    for (uint32_t sym = 0; sym < symbols; ++sym)
        if (book.lengths[sym] != 0 && book.lengths[sym] < kRoot) ++count[book.lengths[sym]];
    uint64_t pairs = 0;
    for (uint32_t l1 = 1; l1 < kRoot; ++l1) {
        const uint32_t b = kRoot - l1;
        uint64_t reach = 0;
        for (uint32_t l2 = 1; l2 <= b; ++l2) reach += count[l2] << (b - l2);
        pairs += count[l1] * reach;
    }
    shape.pair_entries = static_cast<uint32_t>(std::min<uint64_t>(pairs, kHuffmanRootSize));
    return shape;
}

void huffman_codebook_write(const HuffmanCodebook& book, ByteWriter& out) {
    GSZ_CHECK(book.lengths.size() == book.alphabet_size && book.alphabet_size >= 1 &&
                  book.alphabet_size <= kHuffmanMaxAlphabet,
              GSZ_STATUS_INVALID_ARGUMENT, "huffman: codebook is not initialized");
    uint32_t num_used = 0;
    for (uint8_t len : book.lengths) num_used += len != 0;
    out.put<uint32_t>(book.alphabet_size);
    out.put<uint32_t>(num_used);
    for (uint32_t s = 0; s < book.alphabet_size; ++s) {
        if (book.lengths[s] == 0) continue;
        out.put<uint16_t>(static_cast<uint16_t>(s));
        out.put<uint8_t>(book.lengths[s]);
    }
}

HuffmanCodebook huffman_codebook_read(ByteReader& in, uint32_t max_alphabet) {
    max_alphabet = std::min(max_alphabet, kHuffmanMaxAlphabet);
    const auto alphabet = in.get<uint32_t>("huffman alphabet size");
    GSZ_CHECK(alphabet >= 1 && alphabet <= max_alphabet, GSZ_STATUS_CORRUPT,
              "huffman codebook: alphabet size %u out of [1, %u]", alphabet, max_alphabet);
    const auto num_used = in.get<uint32_t>("huffman used symbols");
    GSZ_CHECK(num_used >= 1 && num_used <= alphabet, GSZ_STATUS_CORRUPT,
              "huffman codebook: %u used symbols out of [1, %u]", num_used, alphabet);
    GSZ_CHECK(num_used <= in.remaining() / 3, GSZ_STATUS_CORRUPT,
              "huffman codebook: truncated (%u entries, %zu bytes left)", num_used, in.remaining());

    HuffmanCodebook book;
    book.alphabet_size = alphabet;
    book.lengths.assign(alphabet, 0);
    std::vector<uint16_t> used(num_used);
    uint64_t kraft = 0;  // sum of 2^(24 - len); at most 65536 * 2^23, no overflow
    int64_t previous = -1;
    for (uint32_t i = 0; i < num_used; ++i) {
        const auto symbol = in.get<uint16_t>("huffman symbol");
        used[i] = symbol;
        const auto len = in.get<uint8_t>("huffman code length");
        GSZ_CHECK(symbol > previous && symbol < alphabet, GSZ_STATUS_CORRUPT,
                  "huffman codebook: symbol %u out of order or >= %u", symbol, alphabet);
        GSZ_CHECK(len >= 1 && len <= kMaxLen, GSZ_STATUS_CORRUPT,
                  "huffman codebook: symbol %u has length %u", symbol, len);
        previous = symbol;
        book.lengths[symbol] = len;
        kraft += uint64_t{1} << (kMaxLen - len);
    }
    GSZ_CHECK(kraft <= (uint64_t{1} << kMaxLen), GSZ_STATUS_CORRUPT,
              "huffman codebook: code lengths violate the Kraft inequality");
    GSZ_CHECK(num_used > 1 || book.lengths[previous] == 1, GSZ_STATUS_CORRUPT,
              "huffman codebook: a single symbol must have a 1-bit code");
    assign_canonical(book, used);
    return book;
}

HuffmanStream huffman_encode_cpu(const HuffmanCodebook& book, std::span<const uint16_t> symbols,
                                 uint32_t chunk_symbols, int num_threads) {
    check_book_shape(book);
    GSZ_CHECK(chunk_symbols >= 1 && chunk_symbols <= kMaxChunkSymbols, GSZ_STATUS_INVALID_ARGUMENT,
              "huffman: chunk size %u out of [1, %u]", chunk_symbols, kMaxChunkSymbols);
    const int threads = resolve_threads(num_threads);
    const size_t n = symbols.size();
    const size_t num_chunks = n / chunk_symbols + (n % chunk_symbols != 0);
    GSZ_CHECK(num_chunks <= std::numeric_limits<uint32_t>::max(), GSZ_STATUS_INVALID_ARGUMENT,
              "huffman: %zu chunks do not fit the u32 chunk count", num_chunks);

    // Every uint16 value indexes these; 0 length marks symbols outside the book.
    std::vector<uint8_t> len_of(size_t{1} << 16, 0);
    std::copy(book.lengths.begin(), book.lengths.end(), len_of.begin());
    std::vector<uint32_t> code_of(size_t{1} << 16, 0);
    std::copy(book.codes.begin(), book.codes.end(), code_of.begin());

    HuffmanStream stream;
    stream.num_symbols = n;
    stream.chunk_symbols = chunk_symbols;
    stream.chunk_bits.assign(num_chunks, 0);

    // Pass 1: bits per chunk (fits u32: at most 2^20 * 24), and unknown symbols.
    bool unknown = false;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(|| : unknown)
    for (size_t c = 0; c < num_chunks; ++c) {
        const size_t begin = c * chunk_symbols, end = std::min(n, begin + chunk_symbols);
        uint32_t bits = 0;
        bool zero = false;
        for (size_t i = begin; i < end; ++i) {
            const uint32_t len = len_of[symbols[i]];
            bits += len;
            zero |= len == 0;
        }
        stream.chunk_bits[c] = bits;
        unknown = unknown || zero;
    }
    GSZ_CHECK(!unknown, GSZ_STATUS_INVALID_ARGUMENT, "huffman: a symbol has no code in the codebook");

    std::vector<uint64_t> offset(num_chunks + 1, 0);
    for (size_t c = 0; c < num_chunks; ++c) offset[c + 1] = offset[c] + (stream.chunk_bits[c] + 31) / 32;
    stream.words.assign(offset[num_chunks], 0);

    // Pass 2: pack MSB-first.  `acc` holds `pending` (< 32) unwritten bits
    // right-aligned; bits above them are stale and dropped by the u32 cast.
#pragma omp parallel for num_threads(threads) schedule(static)
    for (size_t c = 0; c < num_chunks; ++c) {
        const size_t begin = c * chunk_symbols, end = std::min(n, begin + chunk_symbols);
        uint32_t* dst = stream.words.data() + offset[c];
        uint64_t acc = 0;
        uint32_t pending = 0;
        for (size_t i = begin; i < end; ++i) {
            const uint16_t s = symbols[i];
            const uint32_t len = len_of[s];
            acc = (acc << len) | code_of[s];
            pending += len;
            if (pending >= 32) {
                pending -= 32;
                *dst++ = static_cast<uint32_t>(acc >> pending);
            }
        }
        if (pending > 0) *dst = static_cast<uint32_t>(acc << (32 - pending));
    }
    return stream;
}

void huffman_chunks_write(const HuffmanStream& stream, ByteWriter& out, uint32_t format_version) {
    out.put<uint64_t>(stream.num_symbols);
    out.put<uint32_t>(stream.chunk_symbols);
    out.put<uint32_t>(static_cast<uint32_t>(stream.chunk_bits.size()));
    if (huffman_chunk_count_bytes(stream.chunk_symbols, format_version) == 4) {
        out.put_array<uint32_t>(stream.chunk_bits);
        return;
    }
    for (const uint32_t bits : stream.chunk_bits) {
        GSZ_CHECK(bits <= 0xFFFFu, GSZ_STATUS_INTERNAL, "huffman chunks: %u bits in a chunk of %u symbols", bits,
                  stream.chunk_symbols);
        out.put<uint16_t>(static_cast<uint16_t>(bits));
    }
}

void huffman_bitstream_write(const HuffmanStream& stream, ByteWriter& out) {
    out.put_array<uint32_t>(stream.words);
}

HuffmanStreamView huffman_stream_read(std::span<const uint8_t> chunks_section,
                                      std::span<const uint8_t> bitstream_section, uint64_t expected_symbols,
                                      uint32_t format_version) {
    ByteReader in(chunks_section, "huffman chunks");
    HuffmanStreamView view;
    view.num_symbols = in.get<uint64_t>("symbol count");
    view.chunk_symbols = in.get<uint32_t>("chunk size");
    const auto num_chunks = in.get<uint32_t>("chunk count");
    GSZ_CHECK(view.num_symbols == expected_symbols, GSZ_STATUS_CORRUPT,
              "huffman chunks: %llu symbols, expected %llu", static_cast<unsigned long long>(view.num_symbols),
              static_cast<unsigned long long>(expected_symbols));
    GSZ_CHECK(view.chunk_symbols >= 1 && view.chunk_symbols <= kMaxChunkSymbols, GSZ_STATUS_CORRUPT,
              "huffman chunks: chunk size %u out of [1, %u]", view.chunk_symbols, kMaxChunkSymbols);
    const uint64_t want_chunks =
        view.num_symbols / view.chunk_symbols + (view.num_symbols % view.chunk_symbols != 0);
    GSZ_CHECK(num_chunks == want_chunks, GSZ_STATUS_CORRUPT, "huffman chunks: %u chunks, expected %llu",
              num_chunks, static_cast<unsigned long long>(want_chunks));
    const uint32_t count_bytes = huffman_chunk_count_bytes(view.chunk_symbols, format_version);
    GSZ_CHECK(in.remaining() == uint64_t{num_chunks} * count_bytes, GSZ_STATUS_CORRUPT,
              "huffman chunks: %zu bytes of bit counts for %u chunks", in.remaining(), num_chunks);
    if (count_bytes == 4) {
        view.chunk_bits = in.get_array<uint32_t>(num_chunks, "chunk bit counts");
    } else {
        const std::vector<uint16_t> narrow = in.get_array<uint16_t>(num_chunks, "chunk bit counts");
        view.chunk_bits.assign(narrow.begin(), narrow.end());
    }
    in.expect_end();

    GSZ_CHECK(bitstream_section.size() % 4 == 0, GSZ_STATUS_CORRUPT,
              "huffman bitstream: %zu bytes is not whole 32-bit words", bitstream_section.size());
    view.chunk_word_offset.resize(size_t{num_chunks} + 1);
    view.chunk_word_offset[0] = 0;
    for (uint32_t c = 0; c < num_chunks; ++c) {
        const uint64_t in_chunk = std::min<uint64_t>(view.chunk_symbols,
                                                     view.num_symbols - uint64_t{c} * view.chunk_symbols);
        const uint32_t bits = view.chunk_bits[c];
        GSZ_CHECK(bits >= in_chunk && bits <= in_chunk * kMaxLen, GSZ_STATUS_CORRUPT,
                  "huffman chunks: chunk %u has %u bits for %llu symbols", c, bits,
                  static_cast<unsigned long long>(in_chunk));
        view.chunk_word_offset[c + 1] = view.chunk_word_offset[c] + (uint64_t{bits} + 31) / 32;
    }
    GSZ_CHECK(view.chunk_word_offset[num_chunks] == bitstream_section.size() / 4, GSZ_STATUS_CORRUPT,
              "huffman bitstream: %zu words, chunk table needs %llu", bitstream_section.size() / 4,
              static_cast<unsigned long long>(view.chunk_word_offset[num_chunks]));
    view.words = bitstream_section;
    return view;
}

void huffman_decode_cpu(const HuffmanCodebook& book, const HuffmanStreamView& stream, std::span<uint16_t> out,
                        int num_threads) {
    check_book_shape(book);
    GSZ_CHECK(out.size() == stream.num_symbols, GSZ_STATUS_INVALID_ARGUMENT,
              "huffman: output holds %zu symbols, stream has %llu", out.size(),
              static_cast<unsigned long long>(stream.num_symbols));
    const size_t num_chunks = stream.chunk_bits.size();
    // The view's fields are public: re-check what the loop relies on (cheap, per chunk).
    bool consistent = stream.chunk_symbols >= 1 && stream.chunk_word_offset.size() == num_chunks + 1 &&
                      stream.chunk_word_offset[0] == 0 &&
                      num_chunks == stream.num_symbols / stream.chunk_symbols +
                                        (stream.num_symbols % stream.chunk_symbols != 0);
    for (size_t c = 0; consistent && c < num_chunks; ++c)
        consistent = stream.chunk_bits[c] >= 1 &&
                     stream.chunk_word_offset[c + 1] - stream.chunk_word_offset[c] ==
                         (uint64_t{stream.chunk_bits[c]} + 31) / 32;
    GSZ_CHECK(consistent && stream.chunk_word_offset[num_chunks] <= stream.words.size() / 4,
              GSZ_STATUS_INVALID_ARGUMENT, "huffman: stream view is inconsistent");
    const int threads = resolve_threads(num_threads);
    const HuffmanDecodeTable tables = huffman_decode_table(book);

    // Exceptions must not leave the parallel region: record per-chunk results
    // and report the first failing chunk afterwards (deterministic message).
    std::vector<ChunkResult> result(num_chunks, ChunkResult::ok);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 4)
    for (size_t c = 0; c < num_chunks; ++c) {
        const uint64_t begin = uint64_t{c} * stream.chunk_symbols;
        const auto count = static_cast<uint32_t>(std::min<uint64_t>(stream.chunk_symbols, stream.num_symbols - begin));
        const uint64_t first_word = stream.chunk_word_offset[c];
        result[c] = decode_chunk(book, tables, stream.words.data() + 4 * first_word,
                                 stream.chunk_word_offset[c + 1] - first_word, stream.chunk_bits[c],
                                 out.data() + begin, count);
    }
    for (size_t c = 0; c < num_chunks; ++c) {
        static constexpr const char* kWhy[] = {"ok", "an invalid codeword", "a bit count mismatch",
                                               "nonzero padding bits"};
        GSZ_CHECK(result[c] == ChunkResult::ok, GSZ_STATUS_CORRUPT, "huffman bitstream: chunk %zu has %s", c,
                  kWhy[static_cast<int>(result[c])]);
    }
}

}  // namespace gsz::encode
