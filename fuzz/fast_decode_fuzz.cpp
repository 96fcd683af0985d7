// libFuzzer target for the fast pipeline's encoder and stream decoder.
// Input: u8 flags, u8 bound exponent, u16 mutation seed, then values.
//   flags bit 0: float64; bits 1-2: block 64/128/256.
// The values (any bit patterns: NaN, Inf, subnormals) are encoded with the
// bound 2^-(exponent % 48) * |first finite value| (or 2^-exponent), decoded,
// and every value checked: within the bound, non-finite values bit-exact.
// Then the streams are mutated (bits flipped, bytes dropped or added, as the
// seed says) and decoded again: a GSZ_STATUS_CORRUPT or some values, never a
// crash or another error.
#include "predict/fast/fast.hpp"
#include "runtime/status.hpp"

#include <cmath>
#include <cstring>
#include <vector>

namespace {

template <class T>
void run(const uint8_t* data, size_t size, uint32_t block, uint8_t exponent, uint16_t seed) {
    const uint64_t n = size / sizeof(T);
    if (n == 0 || n > 8192) return;
    std::vector<T> values(n);
    std::memcpy(values.data(), data, n * sizeof(T));
    double scale = 1.0;
    for (const T v : values)
        if (std::isfinite(v) && v != 0) {
            scale = std::fabs(static_cast<double>(v));
            break;
        }
    const double eb = std::ldexp(scale, -(exponent % 48));
    if (!(eb > 0) || !std::isfinite(eb)) return;

    const auto layout = gsz::predict::FastLayout::make(n, block);
    gsz::predict::FastEncoded<T> enc;
    gsz::predict::fast_encode_cpu(values.data(), layout, eb, enc, 1);
    auto view_of = [](const gsz::predict::FastEncoded<T>& e) {
        return gsz::predict::FastStreamsView{
            e.codes, {reinterpret_cast<const uint8_t*>(e.mids.data()), e.mids.size() * sizeof(T)}, e.leads, e.bytes};
    };
    std::vector<T> out(n);
    gsz::predict::fast_decode_cpu(view_of(enc), layout, out.data(), 1);
    for (uint64_t i = 0; i < n; ++i) {
        if (std::isfinite(values[i])) {
            if (!(std::fabs(static_cast<double>(values[i]) - static_cast<double>(out[i])) <= eb)) __builtin_trap();
        } else if (std::memcmp(&values[i], &out[i], sizeof(T)) != 0) {
            __builtin_trap();
        }
    }

    // Mutations: which stream, what, where, from the seed.
    uint32_t state = seed * 2654435761u + 1;
    auto next = [&] { return state = state * 1664525u + 1013904223u; };
    std::vector<uint8_t>* streams[] = {&enc.codes, &enc.leads, &enc.bytes};
    for (int m = 0; m < 1 + static_cast<int>(seed % 4); ++m) {
        auto& s = *streams[next() % 3];
        switch (next() % 4) {
            case 0: s.push_back(static_cast<uint8_t>(next())); break;
            case 1: if (!s.empty()) s.pop_back(); break;
            default:
                if (!s.empty()) s[next() % s.size()] ^= static_cast<uint8_t>(1u << (next() % 8));
        }
    }
    try {
        gsz::predict::fast_decode_cpu(view_of(enc), layout, out.data(), 2);
    } catch (const gsz::Error& e) {
        if (e.status() != GSZ_STATUS_CORRUPT) __builtin_trap();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 4) return 0;
    const uint8_t flags = data[0], exponent = data[1];
    const auto seed = static_cast<uint16_t>(data[2] | (data[3] << 8));
    const uint32_t block = 64u << ((flags >> 1) % 3);
    if (flags & 1)
        run<double>(data + 4, size - 4, block, exponent, seed);
    else
        run<float>(data + 4, size - 4, block, exponent, seed);
    return 0;
}
