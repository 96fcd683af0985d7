// Per-element arithmetic of the `fast` pipeline (SZx/cuSZx), compiled for the
// host and the device so both backends plan blocks and reconstruct values
// bit for bit alike.  Only comparisons, one subtraction and one addition in
// the value type touch floating point; everything else is integer work on the
// IEEE bit patterns.
//
// A block of values is either
//   constant  (code 0): every value is reconstructed as the block's mid value mu;
//   truncated (code L): each value stores the top L bits of the pattern of
//             x - mu (sign, exponent, L-1-exp_bits mantissa bits), and is
//             reconstructed as mu + that truncated difference;
//   raw       (code kFastRaw): each value stores its own full bit pattern
//             (NaN/Inf blocks, and blocks no truncation keeps within the bound).
// The kept bytes of each pattern (B = ceil(L/8), or all of them when raw) are
// coded against the previous value of the block: a 2-bit lead code counts the
// leading kept bytes equal to the previous pattern's (at most 3, at most B),
// and only the other B - lead bytes are stored.  docs/FORMAT.md has the layout.
#pragma once

#include "runtime/host_device.hpp"

#include <bit>
#include <cstdint>
#include <cstring>

namespace gsz::predict {

inline constexpr uint8_t kFastConstant = 0;
inline constexpr uint8_t kFastRaw = 255;
inline constexpr uint32_t kFastMaxLead = 3;

template <class T>
struct FastTraits;

template <>
struct FastTraits<float> {
    using Bits = uint32_t;
    static constexpr int width = 32, exp_bits = 8, bias = 127;
};

template <>
struct FastTraits<double> {
    using Bits = uint64_t;
    static constexpr int width = 64, exp_bits = 11, bias = 1023;
};

template <class T>
GSZ_HD typename FastTraits<T>::Bits fast_bits(T v) {
    typename FastTraits<T>::Bits b;
    memcpy(&b, &v, sizeof b);
    return b;
}

template <class T>
GSZ_HD T fast_value(typename FastTraits<T>::Bits b) {
    T v;
    memcpy(&v, &b, sizeof v);
    return v;
}

// Unbiased binary exponent read from the bits: floor(log2 |v|) for normal
// numbers, -bias for zero and subnormals (an underestimate that only makes a
// plan fail its verification, never pass wrongly).
template <class T>
GSZ_HD int fast_exponent(T v) {
    using Tr = FastTraits<T>;
    const auto field = (fast_bits(v) >> (Tr::width - 1 - Tr::exp_bits)) & ((1u << Tr::exp_bits) - 1);
    return static_cast<int>(field) - Tr::bias;
}

// Bytes a block code keeps per value.
template <class T>
GSZ_HD uint32_t fast_kept_bytes(uint8_t code) {
    return code == kFastRaw ? sizeof(T) : (code + 7u) / 8u;
}

// Whether a stored block code is one a valid archive can hold.
template <class T>
GSZ_HD bool fast_code_valid(uint8_t code) {
    return code == kFastConstant || code == kFastRaw || code < FastTraits<T>::width;
}

// Zero bits above the kept ones once they are shifted to end on a byte
// boundary: they make the top kept byte hold only the sign and the highest
// exponent bits, which neighbouring values usually share (SZx's shift).
template <class T>
GSZ_HD uint32_t fast_shift(uint8_t code) {
    return code == kFastRaw ? 0u : 8u * fast_kept_bytes<T>(code) - code;
}

// The stored pattern of value x in a block with this code and mid value: the
// top `code` bits of x - mu shifted right by fast_shift, or x's own bits when
// raw.  The kept bytes are the pattern's top B bytes.
template <class T>
GSZ_HD typename FastTraits<T>::Bits fast_pattern(T x, T mu, uint8_t code) {
    using Tr = FastTraits<T>;
    using Bits = typename Tr::Bits;
    if (code == kFastRaw) return fast_bits(x);
    const Bits keep = ~Bits{0} << (Tr::width - code);  // 1 <= code < width: a defined shift
    return (fast_bits<T>(x - mu) & keep) >> fast_shift<T>(code);
}

// The value a pattern reconstructs to (the decoder's only arithmetic).  The
// bits a valid pattern leaves below the kept bytes are zero; a corrupt
// archive's are dropped by the mask.
template <class T>
GSZ_HD T fast_reconstruct(typename FastTraits<T>::Bits pattern, T mu, uint8_t code) {
    using Tr = FastTraits<T>;
    using Bits = typename Tr::Bits;
    if (code == kFastRaw) return fast_value<T>(pattern);
    const Bits keep = ~Bits{0} << (Tr::width - code);
    return mu + fast_value<T>((pattern << fast_shift<T>(code)) & keep);
}

// |x - x'| <= eb as the user checks it: x' in the value type, difference in double.
template <class T>
GSZ_HD bool fast_within(T x, T reconstructed, double eb) {
    const double d = static_cast<double>(x) - static_cast<double>(reconstructed);
    return (d < 0 ? -d : d) <= eb;
}

// The bit a lead code stops at: ORed into pattern ^ previous, it caps the
// leading zero count at 8 * min(B, 3) (the lead code's cap) and makes it
// defined for equal patterns, so a lead is one count and a shift.
template <class T>
GSZ_HD typename FastTraits<T>::Bits fast_lead_stop(uint32_t kept_bytes) {
    using Bits = typename FastTraits<T>::Bits;
    const uint32_t cap = kept_bytes < kFastMaxLead ? kept_bytes : kFastMaxLead;
    return Bits{1} << (FastTraits<T>::width - 1 - 8 * cap);
}

// Leading kept bytes equal to the previous pattern's, capped at 3 and at B.
template <class T>
GSZ_HD uint32_t fast_lead(typename FastTraits<T>::Bits pattern, typename FastTraits<T>::Bits previous,
                          uint32_t kept_bytes) {
    const auto x = (pattern ^ previous) | fast_lead_stop<T>(kept_bytes);
#if defined(__CUDA_ARCH__)
    const int zeros = FastTraits<T>::width == 32 ? __clz(static_cast<int>(x)) : __clzll(static_cast<long long>(x));
#else
    const int zeros = std::countl_zero(x);
#endif
    return static_cast<uint32_t>(zeros) / 8;
}

// Byte j (0 = most significant) of a pattern.
template <class T>
GSZ_HD uint32_t fast_byte(typename FastTraits<T>::Bits pattern, uint32_t j) {
    return static_cast<uint32_t>(pattern >> (FastTraits<T>::width - 8 * (j + 1))) & 0xffu;
}

template <class T>
GSZ_HD typename FastTraits<T>::Bits fast_with_byte(typename FastTraits<T>::Bits pattern, uint32_t j,
                                                   uint32_t byte) {
    using Bits = typename FastTraits<T>::Bits;
    const int shift = FastTraits<T>::width - 8 * static_cast<int>(j + 1);
    return (pattern & ~(Bits{0xff} << shift)) | (Bits{byte} << shift);
}

// The first plan tried for a non-constant block of half-range r: keep enough
// mantissa bits that truncating a difference of exponent <= E(r) errs by less
// than 2^E(eb) <= eb (SZx's rule keeps one bit more; verification covers the
// rounding of x - mu and mu + v').  Returns kFastRaw when no truncation helps.
template <class T>
GSZ_HD uint8_t fast_first_code(T half_range, double eb) {
    using Tr = FastTraits<T>;
    const int mantissa = fast_exponent(half_range) - fast_exponent(eb);
    const int length = 1 + Tr::exp_bits + (mantissa > 0 ? mantissa : 0);
    return length < Tr::width ? static_cast<uint8_t>(length) : kFastRaw;
}

// The next plan after `code` failed verification: one more bit, then raw.
template <class T>
GSZ_HD uint8_t fast_next_code(uint8_t code) {
    return code + 1 < FastTraits<T>::width ? static_cast<uint8_t>(code + 1) : kFastRaw;
}

// Whether truncating to `code` provably keeps every value of a block (all
// finite, extremes lo and hi, mid mu) within eb, so that checking each value
// can be skipped: it would pass.  Error of one value, with u the unit roundoff
// of T, D >= |x - mu| and M >= |x|:
//   v = fl(x - mu)       errs by <= u*D (exact when subnormal)
//   truncating v         errs by <  2^(E(D) - kept mantissa bits)
//   x' = fl(mu + v')     errs by <= u*(M + D) (+ half a subnormal step)
// The bounds are computed in double with generous slack, so the skip never
// changes a decision (the archives do not depend on it).
// 2^k as a double, built from its bits (no libm call; 0 below the subnormals).
GSZ_HD double fast_pow2(int k) {
    if (k > 1023) k = 1023;
    if (k >= -1022) return fast_value<double>(static_cast<uint64_t>(k + 1023) << 52);
    return k >= -1074 ? fast_value<double>(uint64_t{1} << (k + 1074)) : 0.0;
}

template <class T>
GSZ_HD bool fast_truncation_safe(T lo, T hi, T mu, uint8_t code, double eb) {
    using Tr = FastTraits<T>;
    constexpr int precision = Tr::width == 32 ? 24 : 53;
    constexpr int min_exponent = Tr::width == 32 ? -126 : -1022;
    const double u = fast_pow2(-precision);
    const double grow = 1.0 + 4 * u + fast_pow2(-50);
    const double below = static_cast<double>(mu) - static_cast<double>(lo);
    const double above = static_cast<double>(hi) - static_cast<double>(mu);
    const double d = (below > above ? below : above) * grow;
    const double alo = static_cast<double>(lo) < 0 ? -static_cast<double>(lo) : static_cast<double>(lo);
    const double ahi = static_cast<double>(hi) < 0 ? -static_cast<double>(hi) : static_cast<double>(hi);
    const double m = (alo > ahi ? alo : ahi) * grow;
    if (!(d >= 0) || !(d < 1e300) || !(m < 1e300)) return false;
    int exponent = fast_exponent(d);  // floor(log2 d) for normal d; below the range otherwise
    if (exponent < min_exponent) exponent = min_exponent;
    const int mantissa_bits = code - 1 - Tr::exp_bits;
    const double truncation = fast_pow2(exponent - mantissa_bits);
    const double rounding = (m + 2 * d) * u * grow + fast_pow2(min_exponent - precision + 1);
    return (truncation + rounding) * (1.0 + fast_pow2(-40)) <= eb;
}

// Block mid value and the constant test.  mu = min + (max - min)/2 in the
// value type; the block is constant when both extremes are within eb of mu
// (checked as the user checks it; rounding is monotonic, so the extremes
// decide for every value between them).
template <class T>
struct FastMid {
    T mu, half_range;
    bool constant;
};

template <class T>
GSZ_HD FastMid<T> fast_mid(T lo, T hi, double eb) {
    FastMid<T> m;
    m.half_range = (hi - lo) * T(0.5);
    m.mu = lo + m.half_range;
    m.constant = fast_within(hi, m.mu, eb) && fast_within(lo, m.mu, eb);
    return m;
}

// The decision for a finite block before any per-value check: constant
// (code 0, mid value mu), else the first truncation code with its mid value,
// else raw (mu 0).  Both backends start every block from it.
template <class T>
struct FastFirstPlan {
    uint8_t code;
    T mu;
};

template <class T>
GSZ_HD FastFirstPlan<T> fast_first_plan(T lo, T hi, double eb) {
    const FastMid<T> mid = fast_mid(lo, hi, eb);
    if (mid.constant) return {kFastConstant, mid.mu};
    const uint8_t first = fast_first_code(mid.half_range, eb);
    if (first == kFastRaw) return {kFastRaw, T(0)};
    return {first, mid.mu};
}

}  // namespace gsz::predict
