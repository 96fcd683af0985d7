// Per-element and per-partial arithmetic of the assessment metrics, written
// once for the CPU and CUDA backends (docs/METRICS.md has the definitions).
// Partials are combined in a fixed order by the host, so both backends
// produce the same combination; only the order of additions inside a
// partial differs (the tolerance stated in METRICS.md).
#pragma once

#include "runtime/host_device.hpp"

#include <bit>
#include <cmath>
#include <cstdint>

namespace gsz::assess {

inline constexpr double kPwrClip = 1000.0;   // Z-checker's PWR_DIS_RNG_BOUND
inline constexpr uint64_t kChunk = 65536;    // elements per reduction partial

GSZ_HD double min_of(double a, double b) { return b < a ? b : a; }
GSZ_HD double max_of(double a, double b) { return b > a ? b : a; }
// False for NaN and +-Inf: an exponent of all ones.  A bit test, so the GPU
// spends integer instructions on it rather than double-precision ones.
GSZ_HD bool finite_value(double v) {
#if defined(__CUDA_ARCH__)
    const uint64_t bits = static_cast<uint64_t>(__double_as_longlong(v));
#else
    const uint64_t bits = std::bit_cast<uint64_t>(v);
#endif
    return (bits & 0x7ff0000000000000ull) != 0x7ff0000000000000ull;
}
GSZ_HD bool finite_value(float v) {
#if defined(__CUDA_ARCH__)
    const uint32_t bits = __float_as_uint(v);
#else
    const uint32_t bits = std::bit_cast<uint32_t>(v);
#endif
    return (bits & 0x7f800000u) != 0x7f800000u;
}
// a * b + c rounded once, the same on both backends (an explicit fused
// multiply-add; the build contracts nothing implicitly).
GSZ_HD double fused_multiply_add(double a, double b, double c) {
#if defined(__CUDA_ARCH__)
    return __fma_rn(a, b, c);
#else
    return std::fma(a, b, c);
#endif
}
// |v|, by clearing the sign bit (the GPU would otherwise spend a
// double-precision add on it; the value is the same as fabs's).
GSZ_HD double magnitude(double v) {
#if defined(__CUDA_ARCH__)
    return __longlong_as_double(__double_as_longlong(v) & 0x7fffffffffffffffll);
#else
    return std::fabs(v);
#endif
}
GSZ_HD double clamp_pwr(double v) { return v < -kPwrClip ? -kPwrClip : (v > kPwrClip ? kPwrClip : v); }

// Sums about a per-chunk shift (k = the chunk's first element, 0 where it is
// not finite) for the centered statistics (Pearson, SNR's variance about the
// mid-range): one pass over the data instead of a second one about the global
// means.  Shifting by a value inside the chunk keeps the subtraction below
// from cancelling; chunks are then merged by Chan et al.'s formula (Moments).
struct Shifted {
    double kx = 0, ky = 0;
    double dx = 0, dy = 0, dxx = 0, dyy = 0, dxy = 0;
    GSZ_HD void add_value(double xv, double yv) {
        const double a = xv - kx, b = yv - ky;
        dx += a, dy += b;
        dxx = fused_multiply_add(a, a, dxx), dyy = fused_multiply_add(b, b, dyy), dxy = fused_multiply_add(a, b, dxy);
    }
    GSZ_HD void add(const Shifted& o) {  // same chunk, same shift
        dx += o.dx, dy += o.dy, dxx += o.dxx, dyy += o.dyy, dxy += o.dxy;
    }
};

// Count, means and centered second moments of some values, merged pairwise.
struct Moments {
    double n = 0, mx = 0, my = 0, mxx = 0, myy = 0, mxy = 0;
    GSZ_HD static Moments of(const Shifted& s, uint64_t count) {
        Moments m;
        if (count == 0) return m;
        const double c = static_cast<double>(count);
        m.n = c;
        m.mx = s.kx + s.dx / c, m.my = s.ky + s.dy / c;
        m.mxx = s.dxx - s.dx * (s.dx / c), m.myy = s.dyy - s.dy * (s.dy / c), m.mxy = s.dxy - s.dx * (s.dy / c);
        return m;
    }
    GSZ_HD void add(const Moments& o) {
        if (o.n == 0) return;
        if (n == 0) {
            *this = o;
            return;
        }
        const double total = n + o.n, ddx = o.mx - mx, ddy = o.my - my, w = n * o.n / total;
        mxx += o.mxx + ddx * ddx * w, myy += o.myy + ddy * ddy * w, mxy += o.mxy + ddx * ddy * w;
        mx += ddx * (o.n / total), my += ddy * (o.n / total);
        n = total;
    }
};

// First pass: counts, sums, extremes and shifted moments of one chunk
// (partials of one chunk add with `add`; chunks merge their moments by
// Moments::add: the CPU in chunk order, the GPU in runs of chunks and then a
// fixed tree, combine_sums_kernel).  The means of x and y and the
// sum of y^2 come from the moments; the point-wise relative error's maximum
// from the extremes of the signed ratio (max |q| = max(-min q, max q)), whose
// clipped range the PDF uses (clipping is monotone, so it is applied to the
// extremes at the end).
struct Sums {
    uint64_t finite = 0, nonfinite = 0, mismatches = 0, pwr = 0;
    double se = 0, sae = 0, see = 0, spwr = 0;
    double xmin = HUGE_VAL, xmax = -HUGE_VAL, ymin = HUGE_VAL, ymax = -HUGE_VAL, emin = HUGE_VAL, emax = -HUGE_VAL;
    double aemin = HUGE_VAL, aemax = -1, pwrmin = HUGE_VAL, qmin = HUGE_VAL, qmax = -HUGE_VAL;
    uint64_t aemax_index = 0;
    Shifted shifted;

    // The shift of the chunk that starts with original x0 and decompressed y0.
    GSZ_HD void set_shift(double x0, double y0) {
        shifted.kx = finite_value(x0) ? x0 : 0.0;
        shifted.ky = finite_value(x0) && finite_value(y0) ? y0 : 0.0;
    }

    // One finite original x and its y at `index`; a Sums takes its indices in
    // increasing order (so the first index of the largest error is kept by a
    // strict comparison).  kExtremes = false: the caller keeps the extremes of
    // x and y itself (the GPU, in the input's type) and adds them with
    // add_extremes.
    template <bool kExtremes = true>
    GSZ_HD void add_value(double xv, double yv, uint64_t index) {
        const double e = yv - xv, ae = magnitude(e);
        ++finite;
        se += e, sae += ae, see = fused_multiply_add(e, e, see);
        if constexpr (kExtremes) add_extremes(xv, xv, yv, yv);
        emin = min_of(emin, e), emax = max_of(emax, e);
        aemin = min_of(aemin, ae);
        if (ae > aemax) aemax = ae, aemax_index = index;
        if (xv != 0) {
            // |e| / |x| == |e / x| exactly (division rounds symmetrically): one division.
            const double q = e / xv, rel = magnitude(q);
            ++pwr;
            spwr += rel;
            pwrmin = min_of(pwrmin, rel);
            qmin = min_of(qmin, q), qmax = max_of(qmax, q);
        }
        shifted.add_value(xv, yv);
    }
    GSZ_HD void add_extremes(double x_lo, double x_hi, double y_lo, double y_hi) {
        xmin = min_of(xmin, x_lo), xmax = max_of(xmax, x_hi);
        ymin = min_of(ymin, y_lo), ymax = max_of(ymax, y_hi);
    }
    GSZ_HD void add(const Sums& o) {
        finite += o.finite, nonfinite += o.nonfinite, mismatches += o.mismatches, pwr += o.pwr;
        se += o.se, sae += o.sae, see += o.see, spwr += o.spwr;
        add_extremes(o.xmin, o.xmax, o.ymin, o.ymax);
        emin = min_of(emin, o.emin), emax = max_of(emax, o.emax);
        aemin = min_of(aemin, o.aemin);
        // The first index of the largest error, whatever the combination order.
        if (o.aemax > aemax || (o.aemax == aemax && o.aemax_index < aemax_index)) aemax = o.aemax, aemax_index = o.aemax_index;
        pwrmin = min_of(pwrmin, o.pwrmin);
        qmin = min_of(qmin, o.qmin), qmax = max_of(qmax, o.qmax);
        shifted.add(o.shifted);
    }
};

// Chunk partials (in chunk order) -> totals and merged moments.
template <class Range>
inline Moments combine_chunks(const Range& chunks, Sums& total) {
    Moments m;
    for (const Sums& c : chunks) {
        total.add(c);
        m.add(Moments::of(c.shifted, c.finite));
    }
    return m;
}

// Called only near a PDF bin edge: a real call on the GPU, so the compiler
// does not evaluate its division for every value (it did, if-converted).
#if defined(__CUDACC__)
#define GSZ_HD_RARE __host__ __device__ __noinline__
#else
#define GSZ_HD_RARE inline
#endif

// Bin of v in `bins` equal bins from lo with this width (the top edge in the last bin).
GSZ_HD_RARE uint32_t bin_of(double v, double lo, double width, uint32_t bins) {
    if (!(width > 0)) return 0;
    const double b = (v - lo) / width;
    return b >= bins ? bins - 1 : static_cast<uint32_t>(b > 0 ? b : 0);
}

// bin_of without its division where that cannot change the answer: the
// product (v - lo) * inv_width (inv_width = 1 / width) is within a few ulps of
// the quotient, so unless it lies within 1e-6 of a whole number (a bin edge) its
// floor is the quotient's (|b| <= bins <= 2^24: the two differ by < 1e-8).
// Same bins as bin_of, for about a tenth of the cost.
GSZ_HD uint32_t bin_of_fast(double v, double lo, double width, double inv_width, uint32_t bins) {
    if (!(width > 0)) return 0;
    const double b = (v - lo) * inv_width, f = floor(b);
    if (!(b - f >= 1e-6 && b - f <= 1 - 1e-6)) return bin_of(v, lo, width, bins);  // near an edge, or not finite
#if defined(__CUDA_ARCH__)
    return min(__double2uint_rz(f), bins - 1);  // the conversion saturates (negative: 0), as the host's clamp
#else
    return f >= bins ? bins - 1 : static_cast<uint32_t>(f > 0 ? f : 0);
#endif
}

// What the PDF pass needs from the first.
struct PassTwo {
    double e_lo, e_width, e_inv, p_lo, p_width, p_inv;
    uint32_t bins;
    // The GPU may bin the point-wise ratio from e times an approximate 1/x
    // (within 2^-50 of e / x): set where that moves a bin position by less
    // than 1e-7, a tenth of bin_of_fast's margin (see pdf_bins_of).
    bool p_fast;
};

// The PDF pass's bins from the first pass's totals (bins = 0: no finite
// original, nothing to bin).
GSZ_HD PassTwo pass_two_from(const Sums& t, uint32_t bins) {
    PassTwo q;
    q.bins = t.finite ? bins : 0;
    const double p_lo = t.pwr ? clamp_pwr(t.qmin) : 0.0, p_hi = t.pwr ? clamp_pwr(t.qmax) : 0.0;
    q.e_lo = t.emin, q.e_width = t.finite ? (t.emax - t.emin) / bins : 0.0;
    q.p_lo = p_lo, q.p_width = t.finite ? (p_hi - p_lo) / bins : 0.0;
    q.e_inv = q.e_width > 0 ? 1 / q.e_width : 0, q.p_inv = q.p_width > 0 ? 1 / q.p_width : 0;
    // A ratio within the bins' reach (bin -1 .. bins + 1) has |e/x| <= reach; its bin position
    // moves by at most 2^-50 * reach / width from the quotient's error plus 2^-51 (bins + 1) from
    // the two roundings after it.
    const double reach = max_of(magnitude(p_lo), magnitude(p_lo + bins * q.p_width)) + 2 * q.p_width;
    q.p_fast = q.p_width > 0 && 0x1p-50 * reach * q.p_inv + 0x1p-51 * (bins + 1.0) <= 1e-7;
    return q;
}

// The bins of one finite original x and its decompressed y (the point-wise
// relative bin only where x != 0).
GSZ_HD void pdf_bins_of(double xv, double yv, const PassTwo& q, uint32_t& e_bin, uint32_t& p_bin, bool& has_p) {
    const double e = yv - xv;
    e_bin = bin_of_fast(e, q.e_lo, q.e_width, q.e_inv, q.bins);
    has_p = xv != 0;
    p_bin = 0;
    if (!has_p) return;
#if defined(__CUDA_ARCH__)
    // The GPU skips the division where that cannot change the bin: a ratio within 2^-50 of e / x
    // puts the bin position within 1e-7 of the quotient's (PassTwo::p_fast), so a position at
    // least 1e-6 from an edge has the quotient's bin; nearer an edge, or for x whose reciprocal
    // would leave the normal range, it divides.
    if (q.p_fast && ((__double2hiint(xv) >> 20) & 0x7ff) - 23u <= 2000u) {
        double r;
        asm("rcp.approx.ftz.f64 %0, %1;" : "=d"(r) : "d"(xv));
        r = __fma_rn(r, __fma_rn(-xv, r, 1.0), r);  // two Newton steps: ~2^-52
        r = __fma_rn(r, __fma_rn(-xv, r, 1.0), r);
        const double b = (e * r - q.p_lo) * q.p_inv, f = floor(b);
        if (b - f >= 1e-6 && b - f <= 1 - 1e-6) {
            p_bin = min(__double2uint_rz(f), q.bins - 1);
            return;
        }
    }
#endif
    // Unclipped: the range lies within the clip, so a ratio beyond it lands in the same end bin
    // its clipped value would (as do +-Inf).
    p_bin = bin_of_fast(e / xv, q.p_lo, q.p_width, q.p_inv, q.bins);
}

// A derived field of both arrays compared point by point, in the field's raw
// units (derived_raw's, a power of two times the documented ones: finish_derived
// scales the max error back; the PSNR does not depend on the scale).
struct DerivedAccum {
    uint64_t points = 0;
    double omin = HUGE_VAL, omax = -HUGE_VAL, maxerr = 0, sse = 0;
    GSZ_HD void add_value(double orig, double dec) {
        if (!finite_value(orig) || !finite_value(dec)) return;
        ++points;
        add_finite(orig, dec);
    }
    // add_value of two finite values, less the count (a caller that knows they are finite counts them itself).
    GSZ_HD void add_finite(double orig, double dec) {
        omin = min_of(omin, orig), omax = max_of(omax, orig);
        const double d = magnitude(dec - orig);
        maxerr = max_of(maxerr, d);
        sse = fused_multiply_add(d, d, sse);
    }
    GSZ_HD void add(const DerivedAccum& o) {
        points += o.points, omin = min_of(omin, o.omin), omax = max_of(omax, o.omax);
        maxerr = max_of(maxerr, o.maxerr), sse += o.sse;
    }
};

// Extents and strides of up to 4 axes, fastest first; `used` marks the axes
// of extent >= 3 that stencils run along.
struct Grid {
    uint32_t rank = 1;
    uint64_t n[4] = {1, 1, 1, 1}, stride[4] = {1, 1, 1, 1};
    int64_t up[4] = {1, 1, 1, 1}, down[4] = {-1, -1, -1, -1};  // +-stride, for derived_at
    bool used[4] = {false, false, false, false};
};

// The four derived fields in raw units, index k of DerivedAccum[4] and of
// kDerivedScale: 2|grad f|, the Hessian's Frobenius norm, the Laplacian and
// 2 div f (the factors of two are exact and taken out once, at the end).
inline constexpr double kDerivedScale[4] = {0.5, 1.0, 1.0, 0.5};

// Central difference along an axis: f(c + e) - f(c - e).
GSZ_HD double central(double up, double down) { return up - down; }

// The derived fields at one point of f from v = f(c), p[a] = f(c + e_a) and
// m[a] = f(c - e_a) along the K used axes (fastest first), and, for each pair
// a < b in the order (0,1), (0,2), ..., (1,2), ..., the mixed difference
// mixed = central_b(c + e_a) - central_b(c - e_a).  With s_a = p - m and
// t_a = (p + m) - 2v (second difference): out = {sqrt(sum s^2),
// sqrt(sum t^2 + sum mixed^2 / 8), sum t, sum s}; with d1 = s / 2 and the
// mixed second derivative mixed / 4 these are 2|grad f|, ||H f||_F (each
// mixed pair counted twice), lap f and 2 div f.  Both backends call this with
// the same values, so they compute the same doubles (explicit fused
// multiply-adds; nothing else is contracted).
template <int K>
GSZ_HD void derived_raw(double v, const double* p, const double* m, const double* mixed, double out[4]) {
    const double w = v + v;
    double grad2 = 0, hess2 = 0, lap = 0, div = 0;
    for (int a = 0; a < K; ++a) {
        const double s = central(p[a], m[a]), t = (p[a] + m[a]) - w;
        grad2 = a == 0 ? s * s : fused_multiply_add(s, s, grad2);
        hess2 = a == 0 ? t * t : fused_multiply_add(t, t, hess2);
        div = a == 0 ? s : div + s;
        lap = a == 0 ? t : lap + t;
    }
    if constexpr (K > 1) {
        double mix2 = mixed[0] * mixed[0];
        for (int k = 1; k < K * (K - 1) / 2; ++k) mix2 = fused_multiply_add(mixed[k], mixed[k], mix2);
        hess2 = fused_multiply_add(mix2, 0.125, hess2);
    }
    out[0] = sqrt(grad2), out[1] = sqrt(hess2), out[2] = lap, out[3] = div;
}

// derived_raw at index c of an array (or a tile) whose neighbours along axis a
// are at c + up[a] and c + down[a], over the axes `used` marks.
template <class P>
GSZ_HD void derived_at(const P* f, int64_t c, const int64_t up[4], const int64_t down[4], const bool used[4],
                       double out[4]) {
    int axis[4], k = 0;
    for (int a = 0; a < 4; ++a)
        if (used[a]) axis[k++] = a;
    double p[4], m[4], mixed[6];
    int pair = 0;
    for (int i = 0; i < k; ++i) {
        const int a = axis[i];
        p[i] = f[c + up[a]], m[i] = f[c + down[a]];
        for (int j = i + 1; j < k; ++j) {
            const int b = axis[j];
            mixed[pair++] = central(f[c + up[a] + up[b]], f[c + up[a] + down[b]]) -
                            central(f[c + down[a] + up[b]], f[c + down[a] + down[b]]);
        }
    }
    const double v = f[c];
    switch (k) {
        case 1: derived_raw<1>(v, p, m, mixed, out); break;
        case 2: derived_raw<2>(v, p, m, mixed, out); break;
        case 3: derived_raw<3>(v, p, m, mixed, out); break;
        default: derived_raw<4>(v, p, m, mixed, out); break;  // 4 (callers skip grids with no used axis)
    }
}

// SSIM of one window from its sums of x, y, x^2, y^2, xy over `count` points
// and the range of x in it (C1, C2 from that range; Wang et al.'s K1, K2).
GSZ_HD double ssim_of_window(double sx, double sy, double sxx, double syy, double sxy, double range, double count) {
    constexpr double k1 = 0.01, k2 = 0.03;
    const double mx = sx / count, my = sy / count;
    const double vx0 = sxx / count - mx * mx, vy0 = syy / count - my * my;
    const double vx = vx0 > 0 ? vx0 : 0.0, vy = vy0 > 0 ? vy0 : 0.0;
    const double cxy = sxy / count - mx * my;
    const double c1 = range > 0 ? (k1 * range) * (k1 * range) : k1 * k1;
    const double c2 = range > 0 ? (k2 * range) * (k2 * range) : k2 * k2;
    const double c3 = c2 / 2;
    const double sdx = sqrt(vx), sdy = sqrt(vy);
    const double l = (2 * mx * my + c1) / (mx * mx + my * my + c1);
    const double cc = (2 * sdx * sdy + c2) / (vx + vy + c2);
    const double st = (cxy + c3) / (sdx * sdy + c3);
    return l * cc * st;
}

// The values SSIM sums over a window, from one original/decompressed pair:
// both 0 unless both are finite.
GSZ_HD void ssim_terms(double xv, double yv, double& a, double& b) {
    const bool ok = finite_value(xv) && finite_value(yv);
    a = ok ? xv : 0.0, b = ok ? yv : 0.0;
}

}  // namespace gsz::assess
