// The length limit of huffman_build, written once for the host and the
// device builder (huffman_build_cuda.cu): DEFLATE encoders' rule, as in miniz.
#pragma once

#include "encode/huffman.hpp"
#include "runtime/host_device.hpp"

#include <cstdint>

namespace gsz::encode {

// count[len] = codes of each length 1..kHuffmanMaxCodeLength (L), the codes
// of a deeper tree counted at L.  While Kraft's sum (in units of 2^-L)
// overflows, the rule moves a code of length L - 1 to L (one unit), or, with
// none left, splits the longest shorter code into two one bit longer and
// drops a code of length L (one unit).  Done a unit at a time that is
// thousands of steps on interp's tight-bound books (a millisecond on the
// device's one thread); here whole runs of them at once, with the same
// result: moving the L - 1 codes as many as the excess allows, and, where the
// excess covers pushing a whole code of the longest shorter length `len` down
// to L (2^(L - len) - 1 units: its splits, and its pieces' moves), all such
// codes at once (count[len] - c, count[L] + c; the codes' number is kept).
GSZ_HD void huffman_limit_counts(uint64_t* count) {
    constexpr int L = kHuffmanMaxCodeLength;
    constexpr uint64_t full = uint64_t{1} << L;
    uint64_t kraft = 0;   // <= 65,536 * 2^24
    for (int len = 1; len <= L; ++len) kraft += count[len] << (L - len);
    while (kraft > full) {
        const uint64_t excess = kraft - full;
        if (count[L - 1] != 0) {
            const uint64_t steps = count[L - 1] < excess ? count[L - 1] : excess;
            count[L - 1] -= steps;
            count[L] += steps;
            kraft -= steps;
            continue;
        }
        int len = L - 2;
        while (len >= 1 && count[len] == 0) --len;
        if (len < 1) return;   // only codes of length L: their sum cannot overflow
        const uint64_t whole = (uint64_t{1} << (L - len)) - 1;
        if (excess >= whole) {
            const uint64_t codes = count[len] < excess / whole ? count[len] : excess / whole;
            count[len] -= codes;
            count[L] += codes;
            kraft -= codes * whole;
            continue;
        }
        --count[L];
        --count[len];
        count[len + 1] += 2;
        --kraft;
    }
}

}  // namespace gsz::encode
