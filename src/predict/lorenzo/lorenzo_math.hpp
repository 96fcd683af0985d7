// Per-element arithmetic of the Lorenzo predictor with dual quantization
// (cuSZ, PACT'20 §3.1; reference-algorithms.md §1), shared by host and device.
//
// A value x sits on the integer lattice of step 2·eb: q = rint(x · r) with
// r = 1/(2·eb) in double.  Every product here is a single IEEE operation, so
// there is nothing for a compiler to contract into an FMA.  Residuals between
// neighbours are exact integer differences, so the decoder rebuilds the very
// same q and hence the very same reconstructed value T(q · 2·eb), which the
// encoder has already checked against the bound.
#pragma once

#include "runtime/host_device.hpp"

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace gsz::predict {

template <class T>
struct LatticeLimits;
// |x·r| must stay below 2^23 (f32) / 2^52 (f64): beyond, the lattice value no
// longer carries the fraction that rounding needs, and neighbour sums could
// leave the range the GPU backend computes in.
template <>
struct LatticeLimits<float> {
    static constexpr double max_abs = 8388608.0;  // 2^23
};
template <>
struct LatticeLimits<double> {
    static constexpr double max_abs = 4503599627370496.0;  // 2^52
};

struct QuantParams {
    double eb = 0;      // absolute bound, > 0
    double ebx2 = 0;    // 2·eb (exact in binary floating point)
    double r = 0;       // 1 / (2·eb), rounded once, in double
    int64_t radius = 512;
    // The float shortcut for float input (lattice_of_float below): r rounded
    // to float, and the largest |x·r| it may be used for, 0 (never) when r is
    // not a normal float (its relative error would not be 2^-24).
    float r_float = 0;
    float float_limit = 0;

    GSZ_HD static QuantParams from_bound(double eb_abs, uint32_t radius) {
        QuantParams p;
        p.eb = eb_abs;
        p.ebx2 = 2.0 * eb_abs;
        p.r = 1.0 / p.ebx2;
        p.radius = radius;
        p.r_float = static_cast<float>(p.r);
        const bool normal = p.r >= 0x1p-126 && p.r <= 0x1p+127;
        p.float_limit = normal ? 16384.0f : 0.0f;  // 2^14
        return p;
    }
};

// Lattice value of x.  Returns false (and q = 0) when x is not finite or too
// far out for the lattice: such a value can only be stored exactly.
template <class T>
GSZ_HD bool lattice_of(T x, double r, int64_t& q) {
    const double v = static_cast<double>(x) * r;
    if (!(::fabs(v) < LatticeLimits<T>::max_abs)) {  // also false for NaN
        q = 0;
        return false;
    }
    // Ties to even on host and device; with -fno-math-errno this is a single
    // cvtsd2si on x86-64 (|v| < 2^52 was checked above).
    q = static_cast<int64_t>(::llrint(v));
    return true;
}

template <class T>
GSZ_HD T lattice_value(int64_t q, double ebx2) {
    return static_cast<T>(static_cast<double>(q) * ebx2);
}

// The bound as the user checks it: reconstructed value in T, difference in double.
template <class T>
GSZ_HD bool within_bound(T x, T reconstructed, double eb) {
    return ::fabs(static_cast<double>(reconstructed) - static_cast<double>(x)) <= eb;
}

// The lattice value of a float from float arithmetic alone, where that
// provably equals the double path's (bench/NOTES.md, "a float-only lattice
// path"): v = RN_f(x·RN_f(r)) is within ~2^-23·|v| of the double product, so
// when |v| < 2^14 and v is at least 2^-8 away from a half-integer, rint(v) is
// the double path's q (no tie can flip), and |q·2eb − x| <= eb·(1 − 0.99·2^-8) —
// far enough inside the bound that T(q·2eb) passes the double check too.
// rint is the 1.5·2^23 trick (float adds, no conversion: |v| < 2^22).
// Returns false where the double path must decide (NaN and Inf included).
GSZ_HD bool lattice_of_float(float x, float r_float, float float_limit, int32_t& q) {
    constexpr float kMagic = 12582912.0f;  // 1.5·2^23: v + kMagic rounds v to an integer, ties to even
#if defined(__CUDA_ARCH__)
    const float v = __fmul_rn(x, r_float);  // no contraction into the add below
    const float t = __fadd_rn(v, kMagic);
    const float rounded = __fsub_rn(t, kMagic);
    q = __float_as_int(t) - 0x4B400000;  // the bits of kMagic; the low bits of t hold rint(v)
#else
    const float v = x * r_float;
    const float t = v + kMagic;
    const float rounded = t - kMagic;
    int32_t bits;
    __builtin_memcpy(&bits, &t, sizeof bits);
    q = bits - 0x4B400000;
#endif
    const bool in_range = ::fabsf(v) < float_limit;
    const bool off_half = ::fabsf(v - rounded) <= 0.5f - 0x1p-8f;
    return in_range & off_half;  // both evaluated: no branch
}

GSZ_HD bool lattice_of_float(float x, const QuantParams& p, int32_t& q) {
    return lattice_of_float(x, p.r_float, p.float_limit, q);
}

// Quantize one value: its lattice value q (what neighbours predict from) and
// whether T(q·2eb) keeps the bound.  When it does not, the value is an
// outlier stored exactly, but q stays the lattice value of x (0 if none),
// which the decoder recomputes from the stored value.  Float input takes the
// float shortcut where it provably decides the same (98-99% of real values).
template <class T>
GSZ_HD bool quantize_double(T x, const QuantParams& p, int64_t& q) {
    if (!lattice_of(x, p.r, q)) return false;
    return within_bound(x, lattice_value<T>(q, p.ebx2), p.eb);
}

template <class T>
GSZ_HD bool quantize(T x, const QuantParams& p, int64_t& q) {
    if constexpr (std::is_same_v<T, float>) {
        int32_t q32;
        if (lattice_of_float(x, p, q32)) {
            q = q32;
            return true;
        }
    }
    return quantize_double(x, p, q);
}

// First-order Lorenzo prediction from the already known lattice values of the
// backward neighbours; out-of-chunk neighbours are 0.  Arithmetic wraps
// (unsigned) so a hostile archive cannot cause signed overflow; on valid data
// every intermediate is far inside int64.
GSZ_HD int64_t lorenzo_predict_1d(int64_t west) { return west; }

GSZ_HD int64_t lorenzo_predict_2d(int64_t west, int64_t south, int64_t southwest) {
    return static_cast<int64_t>(static_cast<uint64_t>(west) + static_cast<uint64_t>(south) -
                                static_cast<uint64_t>(southwest));
}

GSZ_HD int64_t lorenzo_predict_3d(int64_t x1, int64_t y1, int64_t z1, int64_t x1y1, int64_t x1z1,
                                  int64_t y1z1, int64_t x1y1z1) {
    const uint64_t s = static_cast<uint64_t>(x1) + static_cast<uint64_t>(y1) + static_cast<uint64_t>(z1) -
                       static_cast<uint64_t>(x1y1) - static_cast<uint64_t>(x1z1) -
                       static_cast<uint64_t>(y1z1) + static_cast<uint64_t>(x1y1z1);
    return static_cast<int64_t>(s);
}

// Quant-code of a residual: delta + radius in [1, 2·radius-1], or 0 (outlier).
GSZ_HD uint16_t lorenzo_code(int64_t delta, int64_t radius) {
    return (delta > -radius && delta < radius) ? static_cast<uint16_t>(delta + radius) : uint16_t{0};
}

// The same for a residual of a float lattice (|q| < 2^23, so |delta| < 2^26):
// one add and one unsigned compare in 32 bits.
GSZ_HD uint16_t lorenzo_code(int32_t delta, int32_t radius) {
    const uint32_t shifted = static_cast<uint32_t>(delta + radius) - 1u;  // in [0, 2·radius - 2] iff |delta| < radius
    return shifted < static_cast<uint32_t>(2 * radius - 1) ? static_cast<uint16_t>(shifted + 1u) : uint16_t{0};
}

GSZ_HD int64_t wrap_add(int64_t a, int64_t b) {
    return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

}  // namespace gsz::predict
