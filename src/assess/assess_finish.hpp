// Turning combined partials into results: host code shared by the CPU and
// CUDA backends so both finish the metrics with the same formulas.
#pragma once

#include "assess/assess.hpp"
#include "assess/assess_math.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace gsz::assess {

// The grid of a shape (axes past the rank have extent 1).
inline Grid make_grid(const Shape& s) {
    Grid g;
    g.rank = s.rank;
    uint64_t st = 1;
    for (int a = 0; a < 4; ++a) {
        g.n[a] = a < static_cast<int>(s.rank) ? s.dims[a] : 1;
        g.stride[a] = st;
        g.up[a] = static_cast<int64_t>(st), g.down[a] = -static_cast<int64_t>(st);
        st *= g.n[a];
        g.used[a] = g.n[a] >= 3;
    }
    return g;
}

// Error autocorrelation at lag d from the sum of (e_i - mean)(e_j - mean) over
// the pairs d apart along an axis of this extent (Z-checker's estimator):
// [sum / pairs] / variance, 0 without pairs.
inline double autocorr_of(double sum, uint64_t d, uint64_t extent, uint64_t n, double var) {
    const uint64_t pairs = (extent - d) * (n / extent);
    return pairs ? (sum / static_cast<double>(pairs)) / var : 0;
}

inline double psnr_of(double range, double mse) {
    if (mse == 0) return std::numeric_limits<double>::infinity();
    return 20 * std::log10(range) - 10 * std::log10(mse);
}

// A derived field's comparison from its partials in raw units (scale: its
// kDerivedScale, a power of two, so scaling is exact).
inline DerivedComparison finish_derived(const DerivedAccum& d, double scale) {
    DerivedComparison c;
    c.computed = d.points > 0;
    c.points = d.points;
    c.max_abs_error = d.maxerr * scale;
    c.psnr = d.points ? psnr_of((d.omax - d.omin) * scale, d.sse * (scale * scale) / static_cast<double>(d.points)) : 0;
    return c;
}

// The four derived fields' comparisons into r.
inline void finish_stencils(const DerivedAccum (&d)[4], Result& r) {
    DerivedComparison* out[4] = {&r.derivative1, &r.derivative2, &r.laplacian, &r.divergence};
    for (int k = 0; k < 4; ++k) *out[k] = finish_derived(d[k], kDerivedScale[k]);
}

// The first pass's results from the totals and the merged moments; false
// when no original is finite (nothing more to do).
inline bool finish_sums(const Sums& t, const Moments& mo, Result& r) {
    r.num_nonfinite = t.nonfinite;
    r.nonfinite_mismatches = t.mismatches;
    if (t.finite == 0) return false;
    const double m = static_cast<double>(t.finite);
    r.orig_min = t.xmin, r.orig_max = t.xmax, r.value_range = t.xmax - t.xmin, r.orig_mean = mo.mx;
    r.dec_min = t.ymin, r.dec_max = t.ymax, r.dec_mean = mo.my;
    r.err_min = t.emin, r.err_max = t.emax, r.err_mean = t.se / m;
    r.abs_err_min = t.aemin, r.abs_err_max = t.aemax > 0 ? t.aemax : 0, r.abs_err_mean = t.sae / m;
    r.max_abs_err_index = t.aemax_index;
    r.max_rel_error = r.value_range > 0 ? r.abs_err_max / r.value_range : 0;
    r.pwr_count = t.pwr;
    if (t.pwr) {
        r.pwr_err_min = t.pwrmin, r.pwr_err_max = std::max(-t.qmin, t.qmax);
        r.pwr_err_mean = t.spwr / static_cast<double>(t.pwr);
    }
    r.mse = t.see / m;
    r.rmse = std::sqrt(r.mse);
    r.nrmse = r.value_range > 0 ? r.rmse / r.value_range : 0;
    r.psnr = psnr_of(r.value_range, r.mse);
    r.l2_error = std::sqrt(t.see);
    const double syy = std::max(mo.myy, 0.0) + m * mo.my * mo.my;  // sum of y^2 = centered sum + n * mean^2
    r.l2_error_normalized = syy > 0 ? r.l2_error / std::sqrt(syy) : 0;
    r.pwr_pdf_min = t.pwr ? clamp_pwr(t.qmin) : 0, r.pwr_pdf_max = t.pwr ? clamp_pwr(t.qmax) : 0;
    return true;
}

// Pearson and SNR from the merged moments (SNR's variance about the
// mid-range: sum (x - mid)^2 = mxx + n (mean - mid)^2).
inline void finish_moments(const Moments& m, const Sums& t, Result& r) {
    const double n = static_cast<double>(t.finite);
    const double mid = t.xmin + r.value_range / 2, off = m.mx - mid;
    const double cxx = m.mxx > 0 ? m.mxx : 0.0, cyy = m.myy > 0 ? m.myy : 0.0, vmid = cxx + n * off * off;
    r.pearson = cxx > 0 && cyy > 0 ? m.mxy / std::sqrt(cxx * cyy) : (cxx == cyy ? 1.0 : 0.0);
    r.snr = r.mse > 0 ? 10 * std::log10((vmid / n) / r.mse) : std::numeric_limits<double>::infinity();
}

// The PDFs from the bin counts (error bins then point-wise relative bins, `bins` each).
inline void finish_pdfs(const Sums& t, const PassTwo& q, const std::vector<double>& e_counts,
                        const std::vector<double>& p_counts, Result& r) {
    const double m = static_cast<double>(t.finite);
    const uint32_t e_bins = q.e_width > 0 ? q.bins : 1, p_bins = q.p_width > 0 ? q.bins : 1;
    r.error_pdf.assign(e_bins, 0.0);
    std::vector<double> pp(p_bins, 0.0);
    for (uint32_t b = 0; b < q.bins; ++b) {
        r.error_pdf[b < e_bins ? b : e_bins - 1] += e_counts[b];
        pp[b < p_bins ? b : p_bins - 1] += p_counts[b];
    }
    for (double& v : r.error_pdf) v /= m;
    if (t.pwr)
        for (double& v : pp) v /= static_cast<double>(t.pwr);
    r.pwr_error_pdf = t.pwr ? pp : std::vector<double>{};
}

}  // namespace gsz::assess
