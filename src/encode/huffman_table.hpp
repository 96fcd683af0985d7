// The Huffman decode table both decoders use (huffman.cpp, huffman_cuda.cu):
// two table levels, then the canonical search.
//
// A lookup peeks 32 bits, MSB first.  The root table, indexed by the first
// kHuffmanRootBits of them, resolves every code of at most that length.  A
// root prefix under which longer codes lie points to a subtable indexed by
// the following bits (at most kHuffmanSubMaxBits: codes of up to 19 bits).
// What the tables leave unresolved (longer codes, prefixes whose subtable did
// not fit kHuffmanSubCapacity, bit patterns that are no code of an incomplete
// book) goes to huffman_search, which compares against the canonical limits
// and rejects what is no code.  Bits past a code's end never matter: the code
// is prefix-free, so a decoder may peek past a chunk's last bit.
//
// On the GPU one lane decodes a chunk, and a warp runs 32 of them in lock
// step, so whatever one lane does all wait for: with only the root table and
// the search, 85% of warps searched at wmagT rel 1e-4 (5.7% of its codes are
// longer than 11 bits); a subtable lookup is a few instructions.  The limits
// here send under 0.01% of those codes to the search.
#pragma once

#include "encode/huffman.hpp"
#include "runtime/host_device.hpp"

#include <cstdint>
#include <vector>

namespace gsz::encode {

inline constexpr int kHuffmanRootBits = 11;
inline constexpr uint32_t kHuffmanRootSize = 1u << kHuffmanRootBits;
inline constexpr int kHuffmanSubMaxBits = 8;
inline constexpr uint32_t kHuffmanSubCapacity = 4096;  // entries: up to 16 KiB of shared memory on the GPU (interp rel 1e-4 wants ~2,500)

// A table entry: the symbol in bits 0..15 (a root entry with a subtable: the
// subtable's offset), the code length in bits 16..20 (0: not resolved here),
// and in a root entry the subtable's index bits in 24..27 (0: none).
struct HuffmanEntry {
    static constexpr uint32_t kLengthShift = 16;
    static constexpr uint32_t kSubShift = 24;
    GSZ_HD static constexpr uint32_t make(uint32_t symbol, uint32_t length) { return symbol | length << kLengthShift; }
    GSZ_HD static constexpr uint32_t symbol(uint32_t e) { return e & 0xFFFFu; }
    GSZ_HD static constexpr uint32_t length(uint32_t e) { return (e >> kLengthShift) & 31u; }
};

struct HuffmanDecodeTable {
    std::vector<uint32_t> root;  // [kHuffmanRootSize]
    std::vector<uint32_t> sub;   // the subtables, at most kHuffmanSubCapacity entries
    // limit[l]: end of the length-l codes in a left-aligned kHuffmanMaxCodeLength-bit window.
    std::vector<uint32_t> limit;  // [kHuffmanMaxCodeLength + 1]
};

// Builds the tables of a codebook that passed huffman_codebook_read's or
// huffman_build's checks (canonical, Kraft sum <= 1).
HuffmanDecodeTable huffman_decode_table(const HuffmanCodebook& book);

// The entry of the code at the top of `window`, given its root entry;
// length 0 when the tables do not resolve it (then huffman_search decides).
GSZ_HD uint32_t huffman_lookup_below(uint32_t root_entry, const uint32_t* sub, uint32_t window) {
    const uint32_t sub_bits = root_entry >> HuffmanEntry::kSubShift;
    if (sub_bits == 0) return root_entry;
    return sub[HuffmanEntry::symbol(root_entry) + ((window << kHuffmanRootBits) >> (32 - sub_bits))];
}

GSZ_HD uint32_t huffman_lookup(const uint32_t* root, const uint32_t* sub, uint32_t window) {
    return huffman_lookup_below(root[window >> (32 - kHuffmanRootBits)], sub, window);
}

// A root in which an index whose bits hold two whole codes, both symbols
// below 1024, yields both at once (the GPU decoder's root: a lookup there is
// a step of a latency-bound loop, and at 1-3 bits per code most indices hold
// two).  Pair entries set bit 31 (other entries never do); the symbols are in
// bits 0..9 and 10..19, the two lengths in 20..23 and 24..27.
struct HuffmanPair {
    static constexpr uint32_t kFlag = 1u << 31;
    static constexpr uint32_t kMaxSymbol = 1023;
    GSZ_HD static constexpr uint32_t first(uint32_t e) { return e & 0x3FFu; }
    GSZ_HD static constexpr uint32_t second(uint32_t e) { return (e >> 10) & 0x3FFu; }
    GSZ_HD static constexpr uint32_t first_length(uint32_t e) { return (e >> 20) & 15u; }
    GSZ_HD static constexpr uint32_t second_length(uint32_t e) { return (e >> 24) & 15u; }
};
std::vector<uint32_t> huffman_pair_root(const HuffmanDecodeTable& table);

// The canonical search for the code at the top of `window` among the lengths
// from `from_length` on: its length is the first whose limit the window is
// below (limits grow with the length).  Returns the code's rank among the
// symbols by code in bits 0..15 and its length as an entry does; length 0
// when the bits are no code of the book (or one shorter than from_length
// whose limit the window passed: callers start past the lengths they resolved).
GSZ_HD uint32_t huffman_search_from(uint32_t from_length, const uint32_t* limit, const uint32_t* first_code,
                                    const uint32_t* first_index, uint32_t max_length, uint32_t num_sorted,
                                    uint32_t window) {
    const uint32_t w = window >> (32 - kHuffmanMaxCodeLength);
    uint32_t len = from_length;
    while (len <= max_length && w >= limit[len]) ++len;
    if (len > max_length) return 0;
    const uint32_t rank = first_index[len] + (w >> (kHuffmanMaxCodeLength - len)) - first_code[len];
    return rank < num_sorted ? HuffmanEntry::make(rank, len) : 0u;  // always below with a Kraft-valid book
}

// The search for a code longer than kHuffmanRootBits (the tables resolve the shorter ones).
GSZ_HD uint32_t huffman_search(const uint32_t* limit, const uint32_t* first_code, const uint32_t* first_index,
                               uint32_t max_length, uint32_t num_sorted, uint32_t window) {
    return huffman_search_from(kHuffmanRootBits + 1, limit, first_code, first_index, max_length, num_sorted, window);
}

// What a book's decode tables hold, counted without building them: the
// subtables' entries (huffman_decode_table's) and the root indices that hold
// a pair (huffman_pair_root's).  The CUDA backend builds the tables on the
// device and needs these two on the host to launch the decoder.  A prefix's
// subtable is wanted even when it does not fit; `sub_demand` sums them all.
struct HuffmanDecoderShape {
    uint32_t sub_entries = 0;
    uint64_t sub_demand = 0;
    uint32_t pair_entries = 0;
};
HuffmanDecoderShape huffman_decoder_shape(const HuffmanCodebook& book);

}  // namespace gsz::encode
