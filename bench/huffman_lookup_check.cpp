// Experiment for issue 3 (not part of the build): how many Huffman symbols one
// decode-table lookup could yield if the table held several codes per entry.
// Lorenzo-codes a float field on the CPU (the archive's codes), builds the
// codebook, and walks the symbols greedily taking as many whole codes as fit
// in a W-bit window, at most K per lookup.  bench/NOTES.md ("Huffman decode:
// a plan") has the numbers.
//   cmake --build build-cpu --target gsz_core
//   g++ -O2 -std=c++20 -Isrc -Iinclude -o /tmp/multi bench/huffman_lookup_check.cpp build-cpu/libgsz_core.a \
//       -fopenmp $(pkg-config --libs libzstd libxxhash)
//   /tmp/multi ../shared/data/sperr_wmag_91x91x91.f32 91 91 91
#include "encode/huffman.hpp"
#include "predict/lorenzo/lorenzo.hpp"
#include <cstdio>
#include <fstream>
#include <vector>
#include <cmath>
#include <algorithm>
using namespace gsz;
int main(int argc, char** argv) {
    const char* path = argv[1];
    std::vector<uint64_t> dims = {std::stoull(argv[2]), std::stoull(argv[3]), std::stoull(argv[4])};
    std::ifstream in(path, std::ios::binary);
    in.seekg(0, std::ios::end); size_t n = in.tellg() / 4; in.seekg(0);
    std::vector<float> x(n); in.read((char*)x.data(), n * 4);
    float lo = 1e30f, hi = -1e30f;
    for (float a : x) if (std::isfinite(a)) lo = std::min(lo, a), hi = std::max(hi, a);
    uint32_t rank = dims[2] > 1 ? 3 : 2;
    const auto L = predict::lorenzo_layout(rank, dims.data());
    for (double rel : {1e-2, 1e-3, 1e-4}) {
        const auto p = predict::QuantParams::from_bound(rel * ((double)hi - lo), 512);
        predict::LorenzoCodes<float> c;
        predict::lorenzo_encode_cpu(x.data(), L, p, c, 2);
        const auto hist = encode::histogram_cpu(c.codes, 1024, 2);
        const auto book = encode::huffman_build(hist);
        double bits = 0; for (size_t s = 0; s < 1024; ++s) bits += hist[s] * double(book.lengths[s]);
        // greedy: per lookup take as many whole codes as fit in W bits (max K)
        for (int W : {11, 12}) for (int K : {1, 2, 3, 4}) {
            uint64_t lookups = 0; size_t i = 0;
            while (i < c.codes.size()) {
                int used = 0, k = 0;
                while (i < c.codes.size() && k < K) {
                    int len = book.lengths[c.codes[i]];
                    if (k == 0 || used + len <= W) { used += len; ++i; ++k; if (len > W) break; } else break;
                }
                ++lookups;
            }
            printf("%s rel %g avg %.2f bits: W=%d K=%d symbols/lookup %.2f\n", path, rel, bits / n, W, K, double(n) / lookups);
        }
    }
}
