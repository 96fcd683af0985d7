// libFuzzer target for the Huffman readers and decoder.
// Input: u16 codebook bytes, u16 chunk-table bytes (both little-endian), the
// codebook section, the chunk table, then the bitstream (the rest).
// Invariant beyond "no crash": a stream that decodes is canonical, so
// re-encoding the symbols must give back exactly the same chunk table and words.
#include "encode/huffman.hpp"

#include <cstring>

namespace {

constexpr uint64_t kMaxSymbols = uint64_t{1} << 20;  // output stays at 2 MiB

uint16_t read_u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace gsz::encode;
    if (size < 4) return 0;
    const size_t book_bytes = read_u16(data), chunk_bytes = read_u16(data + 2);
    if (size - 4 < book_bytes + chunk_bytes) return 0;
    const std::span<const uint8_t> book_section(data + 4, book_bytes);
    const std::span<const uint8_t> chunk_section(data + 4 + book_bytes, chunk_bytes);
    const std::span<const uint8_t> bitstream(data + 4 + book_bytes + chunk_bytes, size - 4 - book_bytes - chunk_bytes);

    // The archive header would supply the symbol count; take it from the table, capped.
    uint64_t expected = 0;
    if (chunk_section.size() >= 8) std::memcpy(&expected, chunk_section.data(), 8);
    if (expected > kMaxSymbols) expected = kMaxSymbols;

    // The chunk table as format version 3 lays it out (u32 bit counts) and as 4 does (u16 for chunks of at
    // most 2730 symbols).
    for (const uint32_t version : {3u, kHuffmanNarrowCountsVersion}) {
        try {
            gsz::ByteReader in(book_section, "codebook");
            const HuffmanCodebook book = huffman_codebook_read(in, kHuffmanMaxAlphabet);
            const HuffmanStreamView view = huffman_stream_read(chunk_section, bitstream, expected, version);
            std::vector<uint16_t> out(view.num_symbols);
            huffman_decode_cpu(book, view, out, 1);

            const HuffmanStream again = huffman_encode_cpu(book, out, view.chunk_symbols, 1);
            if (again.chunk_bits != view.chunk_bits || again.words.size() * 4 != view.words.size() ||
                (!again.words.empty() &&
                 std::memcmp(again.words.data(), view.words.data(), view.words.size()) != 0))
                __builtin_trap();
        } catch (const gsz::Error&) {
        }
    }
    return 0;
}
