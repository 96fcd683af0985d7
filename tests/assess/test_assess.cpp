// The assessment metrics against straightforward double-precision
// implementations written here from docs/METRICS.md (plain loops, no shared
// code), on random and real data, in 1-D to 4-D; and independence from the
// thread count.
#include "test_util.hpp"

#include "assess/assess.hpp"
#include "assess/assess_math.hpp"
#include "runtime/status.hpp"

#include <algorithm>
#include <cmath>
#include <random>

using namespace gsz::test;
using gsz::assess::Options;
using gsz::assess::Result;
using gsz::assess::Shape;

namespace {

constexpr double kTol = 1e-9;  // relative, for sums in a different order

void expect_close(double got, double want, const char* what, double tol = kTol) {
    if (std::isinf(want)) {
        EXPECT_EQ(got, want) << what;
        return;
    }
    EXPECT_NEAR(got, want, tol * std::max(1.0, std::fabs(want))) << what;
}

template <class T>
struct Pair {
    std::vector<T> x, y;
    Shape shape;
};

template <class T>
Pair<T> noisy(const std::vector<uint64_t>& dims, uint32_t seed, double noise) {
    Pair<T> p;
    p.shape.rank = static_cast<uint32_t>(dims.size());
    uint64_t n = 1;
    for (size_t d = 0; d < dims.size(); ++d) p.shape.dims[d] = dims[d], n *= dims[d];
    std::mt19937 rng(seed);
    std::normal_distribution<double> g(0, noise);
    p.x.resize(n), p.y.resize(n);
    for (uint64_t i = 0; i < n; ++i) {
        const double v = std::sin(0.05 * i) * 10 + std::cos(0.003 * i) * 3 + (i % 7 == 0 ? 0.0 : 1.5);
        p.x[i] = static_cast<T>(v);
        p.y[i] = static_cast<T>(v + g(rng));
    }
    p.x[3] = 0;  // a zero original: skipped by the point-wise relative error
    return p;
}

// ---- independent reference implementations ---------------------------------

template <class T>
void reference_reductions(const Pair<T>& p, const Options& o, Result& r) {
    const size_t n = p.x.size();
    double xmin = 1e300, xmax = -1e300, sx = 0, sy = 0, se2 = 0, sy2 = 0, emin = 1e300, emax = -1e300, ae = 0;
    for (size_t i = 0; i < n; ++i) {
        const double x = p.x[i], y = p.y[i], e = y - x;
        xmin = std::min(xmin, x), xmax = std::max(xmax, x);
        sx += x, sy += y, se2 += e * e, sy2 += y * y;
        emin = std::min(emin, e), emax = std::max(emax, e), ae = std::max(ae, std::fabs(e));
    }
    const double range = xmax - xmin, mse = se2 / n, mx = sx / n, my = sy / n, mid = xmin + range / 2;
    double cxy = 0, cxx = 0, cyy = 0, v = 0, pwr = 0;
    size_t nz = 0;
    for (size_t i = 0; i < n; ++i) {
        const double x = p.x[i], y = p.y[i];
        cxy += (x - mx) * (y - my), cxx += (x - mx) * (x - mx), cyy += (y - my) * (y - my), v += (x - mid) * (x - mid);
        if (x != 0) pwr = std::max(pwr, std::fabs(y - x) / std::fabs(x)), ++nz;
    }
    r.value_range = range, r.mse = mse, r.rmse = std::sqrt(mse), r.nrmse = std::sqrt(mse) / range;
    r.psnr = 20 * std::log10(range) - 10 * std::log10(mse);
    r.snr = 10 * std::log10((v / n) / mse);
    r.pearson = cxy / std::sqrt(cxx * cyy);
    r.err_min = emin, r.err_max = emax, r.abs_err_max = ae, r.pwr_err_max = pwr, r.pwr_count = nz;
    r.l2_error = std::sqrt(se2), r.l2_error_normalized = std::sqrt(se2) / std::sqrt(sy2);
    r.error_pdf.assign(o.pdf_bins, 0.0);
    const double width = (emax - emin) / o.pdf_bins;
    for (size_t i = 0; i < n; ++i) {
        const double e = static_cast<double>(p.y[i]) - p.x[i];
        const auto b = std::min<size_t>(o.pdf_bins - 1, static_cast<size_t>((e - emin) / width));
        r.error_pdf[b] += 1.0 / n;
    }
}

// Index helpers for up to 4 dims, fastest first.
struct Idx {
    uint64_t n[4], s[4];
    explicit Idx(const Shape& sh) {
        uint64_t st = 1;
        for (int a = 0; a < 4; ++a) n[a] = a < static_cast<int>(sh.rank) ? sh.dims[a] : 1, s[a] = st, st *= n[a];
    }
};

template <class T>
gsz::assess::DerivedComparison reference_derived(const Pair<T>& p, int which) {
    const Idx ix(p.shape);
    bool used[4];
    for (int a = 0; a < 4; ++a) used[a] = ix.n[a] >= 3;
    auto value = [&](const std::vector<T>& f, uint64_t i) {
        double g = 0, h = 0, lap = 0, div = 0;
        for (int a = 0; a < 4; ++a) {
            if (!used[a]) continue;
            const double fp = f[i + ix.s[a]], fm = f[i - ix.s[a]], c = f[i];
            g += ((fp - fm) / 2) * ((fp - fm) / 2);
            h += (fp - 2 * c + fm) * (fp - 2 * c + fm);
            lap += fp - 2 * c + fm;
            div += (fp - fm) / 2;
            for (int b = 0; b < 4; ++b) {
                if (b == a || !used[b]) continue;
                const double m = (static_cast<double>(f[i + ix.s[a] + ix.s[b]]) - f[i + ix.s[a] - ix.s[b]] -
                                  f[i - ix.s[a] + ix.s[b]] + f[i - ix.s[a] - ix.s[b]]) /
                                 4;
                h += m * m;
            }
        }
        const double v[4] = {std::sqrt(g), std::sqrt(h), lap, div};
        return v[which];
    };
    double lo = 1e300, hi = -1e300, sse = 0, maxe = 0;
    uint64_t pts = 0;
    for (uint64_t w = 0; w < ix.n[3]; ++w)
        for (uint64_t z = 0; z < ix.n[2]; ++z)
            for (uint64_t y = 0; y < ix.n[1]; ++y)
                for (uint64_t x = 0; x < ix.n[0]; ++x) {
                    const uint64_t c[4] = {x, y, z, w};
                    bool interior = true;
                    for (int a = 0; a < 4; ++a)
                        if (used[a] && (c[a] == 0 || c[a] == ix.n[a] - 1)) interior = false;
                    if (!interior) continue;
                    const uint64_t i = x + y * ix.s[1] + z * ix.s[2] + w * ix.s[3];
                    const double a = value(p.x, i), b = value(p.y, i);
                    lo = std::min(lo, a), hi = std::max(hi, a), sse += (b - a) * (b - a);
                    maxe = std::max(maxe, std::fabs(b - a));
                    ++pts;
                }
    gsz::assess::DerivedComparison d;
    d.computed = pts > 0, d.points = pts, d.max_abs_error = maxe;
    d.psnr = 20 * std::log10(hi - lo) - 10 * std::log10(sse / pts);
    return d;
}

template <class T>
std::vector<double> reference_autocorr(const Pair<T>& p, int axis, uint32_t lags) {
    const Idx ix(p.shape);
    const size_t n = p.x.size();
    std::vector<double> e(n);
    double mean = 0, var = 0;
    for (size_t i = 0; i < n; ++i) e[i] = static_cast<double>(p.y[i]) - p.x[i], mean += e[i];
    mean /= n;
    for (double v : e) var += (v - mean) * (v - mean);
    var /= n;
    const uint64_t extent = axis < 0 ? n : ix.n[axis], stride = axis < 0 ? 1 : ix.s[axis];
    std::vector<double> ac;
    for (uint64_t d = 1; d <= std::min<uint64_t>(lags, extent - 1); ++d) {
        double s = 0;
        uint64_t pairs = 0;
        for (size_t i = 0; i < n; ++i) {
            const uint64_t coord = axis < 0 ? i : (i / stride) % extent;
            if (coord + d >= extent) continue;
            s += (e[i] - mean) * (e[i + d * stride] - mean), ++pairs;
        }
        ac.push_back(s / pairs / var);
    }
    return ac;
}

template <class T>
double reference_ssim(const Pair<T>& p, uint32_t window, uint32_t step, uint64_t* windows_out) {
    const Idx ix(p.shape);
    uint64_t w[4], m[4];
    for (int a = 0; a < 4; ++a) {
        w[a] = std::min<uint64_t>(window, ix.n[a]);
        m[a] = (ix.n[a] - w[a]) / (ix.n[a] > 1 ? step : 1) + 1;
    }
    double total = 0;
    uint64_t windows = 0;
    for (uint64_t q3 = 0; q3 < m[3]; ++q3)
        for (uint64_t q2 = 0; q2 < m[2]; ++q2)
            for (uint64_t q1 = 0; q1 < m[1]; ++q1)
                for (uint64_t q0 = 0; q0 < m[0]; ++q0) {
                    const uint64_t q[4] = {q0, q1, q2, q3};
                    std::vector<double> a, b;
                    for (uint64_t k3 = 0; k3 < w[3]; ++k3)
                        for (uint64_t k2 = 0; k2 < w[2]; ++k2)
                            for (uint64_t k1 = 0; k1 < w[1]; ++k1)
                                for (uint64_t k0 = 0; k0 < w[0]; ++k0) {
                                    const uint64_t k[4] = {k0, k1, k2, k3};
                                    uint64_t i = 0;
                                    for (int d = 0; d < 4; ++d)
                                        i += (q[d] * (ix.n[d] > 1 ? step : 1) + k[d]) * ix.s[d];
                                    a.push_back(p.x[i]), b.push_back(p.y[i]);
                                }
                    const double cnt = static_cast<double>(a.size());
                    double ma = 0, mb = 0;
                    for (size_t t = 0; t < a.size(); ++t) ma += a[t], mb += b[t];
                    ma /= cnt, mb /= cnt;
                    double va = 0, vb = 0, cab = 0;
                    for (size_t t = 0; t < a.size(); ++t)
                        va += (a[t] - ma) * (a[t] - ma), vb += (b[t] - mb) * (b[t] - mb), cab += (a[t] - ma) * (b[t] - mb);
                    va /= cnt, vb /= cnt, cab /= cnt;
                    const double range = *std::max_element(a.begin(), a.end()) - *std::min_element(a.begin(), a.end());
                    const double c1 = range > 0 ? std::pow(0.01 * range, 2) : 1e-4;
                    const double c2 = range > 0 ? std::pow(0.03 * range, 2) : 9e-4, c3 = c2 / 2;
                    const double sa = std::sqrt(va), sb = std::sqrt(vb);
                    total += (2 * ma * mb + c1) / (ma * ma + mb * mb + c1) * (2 * sa * sb + c2) / (va + vb + c2) *
                             (cab + c3) / (sa * sb + c3);
                    ++windows;
                }
    *windows_out = windows;
    return total / windows;
}

template <class T>
void check_all(const Pair<T>& p, const Options& o) {
    const Result r = gsz::assess::assess_cpu(p.x.data(), p.y.data(), p.shape, o);
    Result want;
    reference_reductions(p, o, want);
    expect_close(r.value_range, want.value_range, "range");
    expect_close(r.mse, want.mse, "mse");
    expect_close(r.rmse, want.rmse, "rmse");
    expect_close(r.nrmse, want.nrmse, "nrmse");
    expect_close(r.psnr, want.psnr, "psnr");
    expect_close(r.snr, want.snr, "snr");
    expect_close(r.pearson, want.pearson, "pearson");
    expect_close(r.err_min, want.err_min, "min error");
    expect_close(r.err_max, want.err_max, "max error");
    expect_close(r.abs_err_max, want.abs_err_max, "max abs error");
    expect_close(r.pwr_err_max, want.pwr_err_max, "max pw rel error");
    EXPECT_EQ(r.pwr_count, want.pwr_count);
    expect_close(r.l2_error, want.l2_error, "l2");
    expect_close(r.l2_error_normalized, want.l2_error_normalized, "l2 normalized");
    ASSERT_EQ(r.error_pdf.size(), want.error_pdf.size());
    for (size_t b = 0; b < r.error_pdf.size(); ++b) expect_close(r.error_pdf[b], want.error_pdf[b], "pdf bin");

    const gsz::assess::DerivedComparison* got[4] = {&r.derivative1, &r.derivative2, &r.laplacian, &r.divergence};
    for (int k = 0; k < 4; ++k) {
        const auto d = reference_derived(p, k);
        EXPECT_EQ(got[k]->points, d.points) << k;
        expect_close(got[k]->max_abs_error, d.max_abs_error, "derived max error");
        expect_close(got[k]->psnr, d.psnr, "derived psnr");
    }

    const auto ac = reference_autocorr(p, -1, o.autocorr_lags);
    ASSERT_EQ(r.error_autocorr.size(), ac.size());
    for (size_t k = 0; k < ac.size(); ++k) expect_close(r.error_autocorr[k], ac[k], "autocorr", 1e-8);
    ASSERT_EQ(r.error_autocorr_axis.size(), p.shape.rank);
    for (uint32_t a = 0; a < p.shape.rank; ++a) {
        const auto aa = reference_autocorr(p, static_cast<int>(a), o.autocorr_lags);
        ASSERT_EQ(r.error_autocorr_axis[a].size(), aa.size()) << "axis " << a;
        for (size_t k = 0; k < aa.size(); ++k) expect_close(r.error_autocorr_axis[a][k], aa[k], "axis autocorr", 1e-8);
    }

    uint64_t windows = 0;
    const double ssim = reference_ssim(p, o.ssim_window, o.ssim_step, &windows);
    EXPECT_EQ(r.ssim_windows, windows);
    expect_close(r.ssim, ssim, "ssim", 1e-8);
}

template <class T>
class AssessMetrics : public testing::Test {};
using Types = testing::Types<float, double>;
TYPED_TEST_SUITE(AssessMetrics, Types);

TYPED_TEST(AssessMetrics, MatchStraightforwardImplementations) {
    using T = TypeParam;
    Options o;
    o.pdf_bins = 50;
    o.autocorr_lags = 12;
    for (const auto& dims : std::vector<std::vector<uint64_t>>{{500}, {31, 17}, {13, 11, 9}, {9, 8, 7, 3}}) {
        SCOPED_TRACE(dims.size());
        const auto p = noisy<T>(dims, 7, 0.05);
        check_all(p, o);
        o.ssim_step = 2;  // the qcat variant
        check_all(p, o);
        o.ssim_step = 1;
    }
}

TYPED_TEST(AssessMetrics, RealFieldSlice) {
    using T = TypeParam;
    const auto path = repo_dir() / "data" / "sperr_wmag_91x91x91.f32";
    const auto all = read_raw<float>(path);
    Pair<T> p;
    p.shape.rank = 3, p.shape.dims[0] = 30, p.shape.dims[1] = 20, p.shape.dims[2] = 10;
    std::mt19937 rng(3);
    std::uniform_real_distribution<double> u(-0.1, 0.1);
    for (uint64_t z = 0; z < 10; ++z)
        for (uint64_t y = 0; y < 20; ++y)
            for (uint64_t x = 0; x < 30; ++x) {
                const double v = all[x + 91 * (y + 91 * z)];
                p.x.push_back(static_cast<T>(v)), p.y.push_back(static_cast<T>(v + u(rng)));
            }
    Options o;
    o.pdf_bins = 100;
    o.autocorr_lags = 20;
    check_all(p, o);
}

TEST(Assess, ThreadCountDoesNotChangeResults) {
    const auto p = noisy<float>({200, 150, 7}, 11, 0.2);
    Options o;
    o.num_threads = 1;
    const Result one = gsz::assess::assess_cpu(p.x.data(), p.y.data(), p.shape, o);
    for (int t : {2, 3, 8}) {
        o.num_threads = t;
        const Result r = gsz::assess::assess_cpu(p.x.data(), p.y.data(), p.shape, o);
        EXPECT_EQ(r.mse, one.mse);
        EXPECT_EQ(r.pearson, one.pearson);
        EXPECT_EQ(r.ssim, one.ssim);
        EXPECT_EQ(r.error_pdf, one.error_pdf);
        expect_close(r.derivative1.psnr, one.derivative1.psnr, "derivative psnr", 1e-12);
        for (size_t k = 0; k < r.error_autocorr.size(); ++k)
            expect_close(r.error_autocorr[k], one.error_autocorr[k], "autocorr", 1e-12);
    }
}

// Pearson and SNR come from moments shifted per chunk and merged across
// chunks: they must keep their digits where a two-pass formula would, on data
// whose mean dwarfs its spread (1e8 + O(1)) and whose chunks differ in mean.
TEST(Assess, CenteredStatisticsSurviveLargeOffsets) {
    const uint64_t n = 3 * 65536 + 777;  // several chunks and a short one
    std::vector<double> x(n), y(n);
    std::mt19937 rng(3);
    std::normal_distribution<double> g(0, 1e-3);
    for (uint64_t i = 0; i < n; ++i) {
        x[i] = 1e8 + std::sin(i * 1e-3) + (i / 65536) * 50.0;  // a step between chunks
        y[i] = x[i] + g(rng);
    }
    Shape shape;
    shape.dims[0] = n;
    Options o;
    o.stencils = o.autocorr = o.ssim = false;
    const Result r = gsz::assess::assess_cpu(x.data(), y.data(), shape, o);
    // Two passes in long double about the exact means.
    long double mx = 0, my = 0, xmin = x[0], xmax = x[0], see = 0;
    for (uint64_t i = 0; i < n; ++i) {
        mx += x[i], my += y[i], see += (long double)(y[i] - x[i]) * (y[i] - x[i]);
        xmin = std::min<long double>(xmin, x[i]), xmax = std::max<long double>(xmax, x[i]);
    }
    mx /= n, my /= n;
    long double cxx = 0, cyy = 0, cxy = 0, vmid = 0;
    const long double mid = xmin + (xmax - xmin) / 2;
    for (uint64_t i = 0; i < n; ++i) {
        const long double a = x[i] - mx, b = y[i] - my;
        cxx += a * a, cyy += b * b, cxy += a * b, vmid += (x[i] - mid) * (x[i] - mid);
    }
    const double pearson = static_cast<double>(cxy / std::sqrt(cxx * cyy));
    const double snr = static_cast<double>(10 * std::log10((vmid / n) / (see / n)));
    EXPECT_NEAR(r.pearson, pearson, 1e-12);
    EXPECT_NEAR(r.snr, snr, 1e-9 * std::fabs(snr));
    EXPECT_LT(r.pearson, 1.0);  // the noise is there: 1 - pearson ~ 1e-8, not lost to rounding
    EXPECT_GT(1.0 - r.pearson, 1e-10);
}

TEST(Assess, IdenticalArraysAndNonFiniteOriginals) {
    auto p = noisy<float>({64, 64}, 5, 0.0);
    p.y = p.x;
    p.x[10] = p.y[10] = std::numeric_limits<float>::quiet_NaN();
    p.x[20] = std::numeric_limits<float>::infinity();
    p.y[20] = 1.0f;  // not restored
    const Result r = gsz::assess::assess_cpu(p.x.data(), p.y.data(), p.shape, Options{});
    EXPECT_EQ(r.num_nonfinite, 2u);
    EXPECT_EQ(r.nonfinite_mismatches, 1u);
    EXPECT_EQ(r.mse, 0.0);
    EXPECT_TRUE(std::isinf(r.psnr));
    EXPECT_EQ(r.error_pdf.size(), 1u);  // zero-width error range: one bin
    EXPECT_DOUBLE_EQ(r.error_pdf[0], 1.0);
}

// The PDF binning without a division must give bin_of's bin for every value,
// at the bin edges above all (values a few ulps either side of each edge).
TEST(Assess, FastBinningEqualsDivision) {
    using gsz::assess::bin_of;
    using gsz::assess::bin_of_fast;
    std::mt19937_64 rng(42);
    for (const double lo : {-3.7e-3, 0.0, 12.5, -1000.0}) {
        for (const double range : {1e-9, 7.3e-3, 1.0, 2000.0, 3e10}) {
            for (const uint32_t bins : {1u, 7u, 2000u, 1u << 20}) {
                const double width = range / bins, inv = 1 / width;
                std::uniform_real_distribution<double> u(lo, lo + range);
                auto check = [&](double v) {
                    ASSERT_EQ(bin_of_fast(v, lo, width, inv, bins), bin_of(v, lo, width, bins))
                        << "v " << v << " lo " << lo << " width " << width << " bins " << bins;
                };
                for (int k = 0; k < 2000; ++k) check(u(rng));
                for (uint32_t b = 0; b <= bins && b < 3000; ++b) {
                    double edge = lo + b * width;
                    for (int s = 0; s < 4; ++s) edge = std::nextafter(edge, -HUGE_VAL);
                    for (int s = 0; s < 9; ++s, edge = std::nextafter(edge, HUGE_VAL)) check(edge);
                }
            }
        }
    }
    EXPECT_EQ(bin_of_fast(1.0, 0.0, 0.0, 0.0, 10), 0u);  // zero width: one bin
    EXPECT_EQ(bin_of_fast(1.0, 0.0, 1e-320, HUGE_VAL, 10), bin_of(1.0, 0.0, 1e-320, 10));  // 1/width overflows
}

TEST(Assess, BadOptionsAreRefused) {
    const auto p = noisy<float>({100}, 1, 0.1);
    Options o;
    o.ssim_window = 0;
    EXPECT_THROW(gsz::assess::assess_cpu(p.x.data(), p.y.data(), p.shape, o), gsz::Error);
    o = Options{};
    o.pdf_bins = 0;
    EXPECT_THROW(gsz::assess::assess_cpu(p.x.data(), p.y.data(), p.shape, o), gsz::Error);
}

}  // namespace
