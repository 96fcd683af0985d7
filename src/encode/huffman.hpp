// Canonical, length-limited Huffman coding of quant-codes (uint16 symbols).
// The codebook is built on the host from a histogram; encoding is chunked so
// that decoding is chunk-parallel: each chunk of `chunk_symbols` symbols starts
// on a 32-bit word boundary, and the per-chunk bit counts are stored.
// Bit order: codewords are written MSB-first into 32-bit words (stored
// little-endian), so a chunk reads as one big-endian bit string.
#pragma once

#include "runtime/byte_io.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace gsz::encode {

// Longest codeword: lets a 64-bit bit buffer refill once per symbol.
inline constexpr int kHuffmanMaxCodeLength = 24;
inline constexpr uint32_t kHuffmanMaxAlphabet = 65536;

struct HuffmanCodebook {
    uint32_t alphabet_size = 0;       // symbols are 0 .. alphabet_size-1
    std::vector<uint8_t> lengths;     // per symbol; 0 = symbol unused
    std::vector<uint32_t> codes;      // per symbol, canonical codeword right-aligned in `lengths` bits
    // Canonical decoding tables (derived from lengths, see huffman.cpp).
    uint32_t max_length = 0;
    std::vector<uint32_t> first_code;    // [len] first canonical code of that length
    std::vector<uint32_t> first_index;   // [len] rank of that first code in `sorted_symbols`
    std::vector<uint32_t> count;         // [len] number of codes of that length
    std::vector<uint16_t> sorted_symbols;  // symbols ordered by (length, symbol)
};

// Histogram of symbols (values must be < alphabet_size; checked).
std::vector<uint64_t> histogram_cpu(std::span<const uint16_t> symbols, uint32_t alphabet_size, int num_threads);

// Optimal code lengths limited to kHuffmanMaxCodeLength, canonical codes.
// At least one count must be nonzero; a single used symbol gets a 1-bit code.
// Deterministic: ties are broken by symbol index.
HuffmanCodebook huffman_build(std::span<const uint64_t> histogram);
// The same into `book`, reusing its vectors' storage: a book of interp's
// 65,526-symbol alphabet is ~330 KB, whose fresh pages cost ~0.1 ms on some
// hosts, on the GPU pipeline's path.
void huffman_build(std::span<const uint64_t> histogram, HuffmanCodebook& book);

// The canonical codebook of given lengths (per symbol, 0 = unused), which
// must satisfy Kraft's inequality (checked: GSZ_STATUS_INTERNAL otherwise).
HuffmanCodebook huffman_book_from_lengths(std::span<const uint8_t> lengths);

// Codebook serialization (the huffman_codebook section).
void huffman_codebook_write(const HuffmanCodebook& book, ByteWriter& out);
// Validates alphabet size (<= max_alphabet), lengths (<= max code length) and
// the Kraft inequality; throws GSZ_STATUS_CORRUPT otherwise.
HuffmanCodebook huffman_codebook_read(ByteReader& in, uint32_t max_alphabet);

struct HuffmanStream {
    uint64_t num_symbols = 0;
    uint32_t chunk_symbols = 0;
    std::vector<uint32_t> chunk_bits;  // one per chunk: ceil(num_symbols / chunk_symbols)
    std::vector<uint32_t> words;       // chunk c occupies ceil(chunk_bits[c] / 32) words, chunks in order
};

HuffmanStream huffman_encode_cpu(const HuffmanCodebook& book, std::span<const uint16_t> symbols,
                                 uint32_t chunk_symbols, int num_threads);

// Bytes per chunk bit count in the huffman_chunks section (docs/FORMAT.md):
// from archive format version 4 on, 2 where every count fits 16 bits (chunks
// of at most 2730 symbols of at most 24 bits), else 4.  At ~2 bits per
// symbol the 4-byte counts of 1024-symbol chunks were 1.5% of the stream.
inline constexpr uint32_t kHuffmanNarrowCountsVersion = 4;
inline constexpr uint32_t kHuffmanNarrowChunkSymbols = 65535 / kHuffmanMaxCodeLength;
constexpr uint32_t huffman_chunk_count_bytes(uint32_t chunk_symbols, uint32_t format_version) {
    return format_version >= kHuffmanNarrowCountsVersion && chunk_symbols <= kHuffmanNarrowChunkSymbols ? 2 : 4;
}

// Chunk table (huffman_chunks section, laid out as archive format version
// `format_version` has it) and bitstream (huffman_bitstream section).
void huffman_chunks_write(const HuffmanStream& stream, ByteWriter& out, uint32_t format_version);
void huffman_bitstream_write(const HuffmanStream& stream, ByteWriter& out);

struct HuffmanStreamView {
    uint64_t num_symbols = 0;
    uint32_t chunk_symbols = 0;
    std::vector<uint32_t> chunk_bits;
    std::vector<uint64_t> chunk_word_offset;   // prefix sum of words per chunk
    std::span<const uint8_t> words;            // raw little-endian 32-bit words
};

// Reads and validates the chunk table against the expected symbol count and
// the bitstream length (each chunk's bits <= chunk_symbols * max length, word
// counts add up exactly).  Throws GSZ_STATUS_CORRUPT.  `format_version`: the
// archive's, which decides the width of the bit counts.
HuffmanStreamView huffman_stream_read(std::span<const uint8_t> chunks_section,
                                      std::span<const uint8_t> bitstream_section,
                                      uint64_t expected_symbols, uint32_t format_version);

// Decodes every chunk (OpenMP over chunks).  A chunk that holds an invalid
// codeword, ends early or does not consume exactly its bits is corrupt.
void huffman_decode_cpu(const HuffmanCodebook& book, const HuffmanStreamView& stream,
                        std::span<uint16_t> out, int num_threads);

}  // namespace gsz::encode
