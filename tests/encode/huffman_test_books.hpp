// Codebooks whose decode tables take the unusual paths, shared by the CPU and
// CUDA table tests: codes up to 24 bits (subtables, and the search past 19
// bits), too many long-code prefixes for the subtables, incomplete books
// (windows that start no code).
#pragma once

#include "encode/huffman.hpp"
#include "runtime/byte_io.hpp"

#include <cstdint>
#include <vector>

namespace gsz::encode {

inline std::vector<HuffmanCodebook> huffman_edge_books() {
    std::vector<HuffmanCodebook> books;
    std::vector<uint64_t> fib(40);
    fib[0] = fib[1] = 1;
    for (size_t i = 2; i < fib.size(); ++i) fib[i] = fib[i - 1] + fib[i - 2];
    books.push_back(huffman_build(fib));
    books.push_back(huffman_build(std::vector<uint64_t>(65536, 1)));  // 2048 prefixes of 16-bit codes
    for (const auto& entries : std::vector<std::vector<uint8_t>>{{1, 2}, {1}, {1, 2, 3, 5, 12, 13, 20, 24}}) {
        ByteWriter w;
        w.put<uint32_t>(16);
        w.put<uint32_t>(static_cast<uint32_t>(entries.size()));
        for (size_t s = 0; s < entries.size(); ++s) {
            w.put<uint16_t>(static_cast<uint16_t>(s));
            w.put<uint8_t>(entries[s]);
        }
        ByteReader in(w.bytes(), "codebook");
        books.push_back(huffman_codebook_read(in, 16));
    }
    return books;
}

}  // namespace gsz::encode
