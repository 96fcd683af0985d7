// Experiment for issue 3 (not part of the build): how soon a Huffman decoder
// started at an arbitrary bit falls into step with the true code boundaries
// (self-synchronization), on the Lorenzo codes of a real float field --
// whether several lanes could decode one chunk, each from a bit offset,
// without any format change.  bench/NOTES.md ("Huffman decode") has the numbers.
//   cmake --build build-cpu --target gsz_core
//   g++ -O2 -std=c++20 -Isrc -Iinclude -o /tmp/sync bench/huffman_sync_check.cpp build-cpu/libgsz_core.a \
//       -fopenmp $(pkg-config --libs libzstd libxxhash)
//   /tmp/sync ../shared/data/sperr_wmag_91x91x91.f32 91 91 91
#include "encode/huffman.hpp"
#include "encode/huffman_table.hpp"
#include "predict/lorenzo/lorenzo.hpp"
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <vector>
using namespace gsz;
using namespace gsz::encode;
static uint32_t bits_at(const std::vector<uint32_t>& w, uint64_t pos) {  // 32 bits MSB-first from bit pos
    const uint64_t i = pos >> 5; const uint32_t o = pos & 31;
    const uint64_t hi = i < w.size() ? w[i] : 0, lo = i + 1 < w.size() ? w[i + 1] : 0;
    return static_cast<uint32_t>(((hi << 32 | lo) << o) >> 32);
}
static uint32_t code_len(const HuffmanCodebook& b, const HuffmanDecodeTable& t, uint32_t window) {
    uint32_t e = huffman_lookup(t.root.data(), t.sub.data(), window);
    if (HuffmanEntry::length(e) == 0)
        e = huffman_search(t.limit.data(), b.first_code.data(), b.first_index.data(), b.max_length,
                           (uint32_t)b.sorted_symbols.size(), window);
    return HuffmanEntry::length(e);
}
int main(int argc, char** argv) {
    std::vector<uint64_t> dims = {std::stoull(argv[2]), std::stoull(argv[3]), std::stoull(argv[4])};
    std::ifstream in(argv[1], std::ios::binary); in.seekg(0, std::ios::end); size_t n = in.tellg() / 4; in.seekg(0);
    std::vector<float> x(n); in.read((char*)x.data(), n * 4);
    float lo = 1e30f, hi = -1e30f; for (float a : x) if (std::isfinite(a)) lo = std::min(lo, a), hi = std::max(hi, a);
    const auto L = predict::lorenzo_layout(dims[2] > 1 ? 3 : 2, dims.data());
    std::mt19937_64 rng(1);
    for (double rel : {1e-2, 1e-3, 1e-4}) {
        const auto p = predict::QuantParams::from_bound(rel * ((double)hi - lo), 512);
        predict::LorenzoCodes<float> c; predict::lorenzo_encode_cpu(x.data(), L, p, c, 2);
        const auto book = huffman_build(histogram_cpu(c.codes, 1024, 2));
        const auto t = huffman_decode_table(book);
        // one long stream (no chunking): true boundaries
        std::vector<uint32_t> words; std::vector<uint8_t> boundary; uint64_t acc = 0; int pend = 0; uint64_t bit = 0;
        for (uint16_t s : c.codes) { boundary.resize(bit + 1, 0); boundary[bit] = 1; const uint32_t l = book.lengths[s];
            acc = acc << l | book.codes[s]; pend += l; bit += l; while (pend >= 32) { pend -= 32; words.push_back((uint32_t)(acc >> pend)); } }
        if (pend) words.push_back((uint32_t)(acc << (32 - pend)));
        boundary.resize(bit + 1, 0);
        std::vector<uint32_t> sync_bits, sync_syms;
        for (int trial = 0; trial < 20000; ++trial) {
            uint64_t pos = rng() % (bit - 4096);
            const uint64_t start = pos; uint32_t syms = 0;
            while (!boundary[pos]) { pos += std::max<uint32_t>(1, code_len(book, t, bits_at(words, pos))); ++syms; }
            sync_bits.push_back((uint32_t)(pos - start)); sync_syms.push_back(syms);
        }
        std::sort(sync_bits.begin(), sync_bits.end()); std::sort(sync_syms.begin(), sync_syms.end());
        double mean = 0; for (auto v : sync_bits) mean += v; mean /= sync_bits.size();
        auto q = [&](const std::vector<uint32_t>& v, double f) { return v[std::min(v.size() - 1, size_t(f * v.size()))]; };
        printf("%s rel %g avg %.2f bits/code: sync after mean %.1f bits, p50 %u p99 %u p99.9 %u max %u bits (codes p99 %u max %u)\n",
               argv[1], rel, double(bit) / c.codes.size(), mean, q(sync_bits, .5), q(sync_bits, .99), q(sync_bits, .999),
               sync_bits.back(), q(sync_syms, .99), sync_syms.back());
    }
}
