// libFuzzer target for the fill mask (predict/fill/fill_mask.hpp).
// Input: u8 x, u8 y, u8 z extents (1..32 each), then either
//   bit 0 of a fourth byte set: a mask, one bit a point (LSB first), which is
//     encoded, written, read back and expanded: it must come back exactly;
//   clear: the rest is a fill_mask section, read and expanded: the mask or a
//     GSZ_STATUS_CORRUPT, never a crash, a hang or another error.
#include "predict/fill/fill_mask.hpp"
#include "runtime/status.hpp"

#include <cstdlib>
#include <cstring>
#include <vector>

using namespace gsz::predict;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 4) return 0;
    const uint64_t dims[3] = {uint64_t{data[0]} % 32 + 1, uint64_t{data[1]} % 32 + 1, uint64_t{data[2]} % 32 + 1};
    const uint64_t n = dims[0] * dims[1] * dims[2];
    const bool round_trip = data[3] & 1;
    data += 4, size -= 4;
    if (round_trip) {
        std::vector<float> values(n, 1.0f);
        for (uint64_t i = 0; i < n && i / 8 < size; ++i)
            if ((data[i / 8] >> (i % 8)) & 1) values[i] = -1e34f;
        const FillValue fill{true, fill_bits_of(-1e34f), 1.0};
        const FillMask mask = fill_mask_encode_cpu(values.data(), dims, fill, 1);
        const FillMask back = fill_mask_read(fill_mask_write(mask), n);
        const std::vector<uint8_t> m = fill_mask_expand_cpu(back, dims, 1);
        for (uint64_t i = 0; i < n; ++i)
            if (m[i] != (values[i] == -1e34f)) std::abort();
        return 0;
    }
    try {
        const FillMask mask = fill_mask_read({data, size}, n);
        const std::vector<uint8_t> m = fill_mask_expand_cpu(mask, dims, 1);
        if (m.size() != n) std::abort();
    } catch (const gsz::Error& e) {
        if (e.status() != GSZ_STATUS_CORRUPT) std::abort();
    }
    return 0;
}
