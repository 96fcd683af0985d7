// Per-element and per-partial arithmetic of the assessment metrics, written
// once for the CPU and CUDA backends (docs/METRICS.md has the definitions).
// Partials are combined in a fixed order by the host, so both backends
// produce the same combination; only the order of additions inside a
// partial differs (the tolerance stated in METRICS.md).
#pragma once

#include "runtime/host_device.hpp"

#include <cmath>
#include <cstdint>

namespace gsz::assess {

inline constexpr double kPwrClip = 1000.0;   // Z-checker's PWR_DIS_RNG_BOUND
inline constexpr uint64_t kChunk = 65536;    // elements per reduction partial

GSZ_HD double min_of(double a, double b) { return b < a ? b : a; }
GSZ_HD double max_of(double a, double b) { return b > a ? b : a; }
GSZ_HD bool finite_value(double v) { return v - v == 0; }  // false for NaN and +-Inf
GSZ_HD double clamp_pwr(double v) { return v < -kPwrClip ? -kPwrClip : (v > kPwrClip ? kPwrClip : v); }

// First pass: counts, sums and extremes of one chunk.
struct Sums {
    uint64_t finite = 0, nonfinite = 0, mismatches = 0, pwr = 0;
    double sx = 0, sy = 0, se = 0, sae = 0, see = 0, syy = 0, spwr = 0;
    double xmin = HUGE_VAL, xmax = -HUGE_VAL, ymin = HUGE_VAL, ymax = -HUGE_VAL, emin = HUGE_VAL, emax = -HUGE_VAL;
    double aemin = HUGE_VAL, aemax = -1, pwrmin = HUGE_VAL, pwrmax = -HUGE_VAL, spwr_lo = HUGE_VAL, spwr_hi = -HUGE_VAL;
    uint64_t aemax_index = 0;

    GSZ_HD void add_value(double xv, double yv, uint64_t index) {
        const double e = yv - xv, ae = fabs(e);
        ++finite;
        sx += xv, sy += yv, se += e, sae += ae, see += e * e, syy += yv * yv;
        xmin = min_of(xmin, xv), xmax = max_of(xmax, xv);
        ymin = min_of(ymin, yv), ymax = max_of(ymax, yv);
        emin = min_of(emin, e), emax = max_of(emax, e);
        aemin = min_of(aemin, ae);
        if (ae > aemax || (ae == aemax && index < aemax_index)) aemax = ae, aemax_index = index;
        if (xv != 0) {
            const double rel = ae / fabs(xv), signed_rel = clamp_pwr(e / xv);
            ++pwr;
            spwr += rel;
            pwrmin = min_of(pwrmin, rel), pwrmax = max_of(pwrmax, rel);
            spwr_lo = min_of(spwr_lo, signed_rel), spwr_hi = max_of(spwr_hi, signed_rel);
        }
    }
    GSZ_HD void add(const Sums& o) {
        finite += o.finite, nonfinite += o.nonfinite, mismatches += o.mismatches, pwr += o.pwr;
        sx += o.sx, sy += o.sy, se += o.se, sae += o.sae, see += o.see, syy += o.syy, spwr += o.spwr;
        xmin = min_of(xmin, o.xmin), xmax = max_of(xmax, o.xmax);
        ymin = min_of(ymin, o.ymin), ymax = max_of(ymax, o.ymax);
        emin = min_of(emin, o.emin), emax = max_of(emax, o.emax);
        aemin = min_of(aemin, o.aemin);
        // The first index of the largest error, whatever the combination order.
        if (o.aemax > aemax || (o.aemax == aemax && o.aemax_index < aemax_index)) aemax = o.aemax, aemax_index = o.aemax_index;
        pwrmin = min_of(pwrmin, o.pwrmin), pwrmax = max_of(pwrmax, o.pwrmax);
        spwr_lo = min_of(spwr_lo, o.spwr_lo), spwr_hi = max_of(spwr_hi, o.spwr_hi);
    }
};

// Second pass: sums about the means (Pearson) and the mid-range (SNR).
struct Centered {
    double cxx = 0, cyy = 0, cxy = 0, vmid = 0;
    GSZ_HD void add_value(double xv, double yv, double mx, double my, double mid) {
        const double dx = xv - mx, dy = yv - my;
        cxx += dx * dx, cyy += dy * dy, cxy += dx * dy, vmid += (xv - mid) * (xv - mid);
    }
    GSZ_HD void add(const Centered& o) { cxx += o.cxx, cyy += o.cyy, cxy += o.cxy, vmid += o.vmid; }
};

// Bin of v in `bins` equal bins from lo with this width (the top edge in the last bin).
GSZ_HD uint32_t bin_of(double v, double lo, double width, uint32_t bins) {
    if (!(width > 0)) return 0;
    const double b = (v - lo) / width;
    return b >= bins ? bins - 1 : static_cast<uint32_t>(b > 0 ? b : 0);
}

// A derived field of both arrays compared point by point.
struct DerivedAccum {
    uint64_t points = 0;
    double omin = HUGE_VAL, omax = -HUGE_VAL, maxerr = 0, sse = 0;
    GSZ_HD void add_value(double orig, double dec) {
        if (!finite_value(orig) || !finite_value(dec)) return;
        ++points;
        omin = min_of(omin, orig), omax = max_of(omax, orig);
        const double d = fabs(dec - orig);
        maxerr = max_of(maxerr, d);
        sse += d * d;
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
    bool used[4] = {false, false, false, false};
};

// Gradient magnitude, Hessian Frobenius norm, Laplacian and divergence of f
// at interior point i.
template <class T>
GSZ_HD void derived_at(const T* f, const Grid& g, uint64_t i, double out[4]) {
    double grad2 = 0, hess2 = 0, lap = 0, div = 0;
    const double c = f[i];
    for (int a = 0; a < 4; ++a) {
        if (!g.used[a]) continue;
        const uint64_t sa = g.stride[a];
        const double p = f[i + sa], m = f[i - sa];
        const double d1 = (p - m) / 2, d2 = p - 2 * c + m;
        grad2 += d1 * d1, hess2 += d2 * d2, lap += d2, div += d1;
        for (int b = a + 1; b < 4; ++b) {
            if (!g.used[b]) continue;
            const uint64_t sb = g.stride[b];
            const double mixed =
                (static_cast<double>(f[i + sa + sb]) - f[i + sa - sb] - f[i - sa + sb] + f[i - sa - sb]) / 4;
            hess2 += 2 * mixed * mixed;
        }
    }
    out[0] = sqrt(grad2), out[1] = sqrt(hess2), out[2] = lap, out[3] = div;
}

}  // namespace gsz::assess
