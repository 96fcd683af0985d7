// The CUDA assessment kernels (reductions, stencils) against the CPU backend
// on real fields and synthetic 1-D to 4-D arrays, float32 and float64, with
// non-finite originals.  Skipped, visibly, without a GPU.
#include "test_util.hpp"

#include "cuda/require_gpu.hpp"

#include "assess/assess.hpp"
#include "pipeline/bench.hpp"

#include <cuda_runtime.h>

#include <cmath>
#include <random>

using namespace gsz::test;

namespace {

void close(double got, double want, const char* what) {
    if (std::isinf(want)) {
        EXPECT_EQ(got, want) << what;
        return;
    }
    EXPECT_NEAR(got, want, 1e-9 * std::max(1.0, std::fabs(want))) << what;
}

gsz::assess::Options twenty_lags() {
    gsz::assess::Options o;
    o.autocorr_lags = 20;
    return o;
}

template <class T>
void same_as_cpu(const std::vector<T>& x, const std::vector<T>& y, const std::vector<uint64_t>& dims,
                 const gsz::assess::Options& o = twenty_lags()) {
    gsz::assess::Shape shape;
    shape.rank = static_cast<uint32_t>(dims.size());
    for (size_t d = 0; d < dims.size(); ++d) shape.dims[d] = dims[d];
    const auto c = gsz::assess::assess_cpu(x.data(), y.data(), shape, o);
    const auto g = gsz::assess::assess_cuda_host(x.data(), y.data(), shape, o);
    EXPECT_EQ(g.num_nonfinite, c.num_nonfinite);
    EXPECT_EQ(g.nonfinite_mismatches, c.nonfinite_mismatches);
    EXPECT_EQ(g.orig_min, c.orig_min);
    EXPECT_EQ(g.orig_max, c.orig_max);
    EXPECT_EQ(g.err_min, c.err_min);
    EXPECT_EQ(g.err_max, c.err_max);
    EXPECT_EQ(g.abs_err_max, c.abs_err_max);
    EXPECT_EQ(g.max_abs_err_index, c.max_abs_err_index);
    EXPECT_EQ(g.pwr_err_max, c.pwr_err_max);
    EXPECT_EQ(g.pwr_count, c.pwr_count);
    close(g.mse, c.mse, "mse");
    close(g.psnr, c.psnr, "psnr");
    close(g.snr, c.snr, "snr");
    close(g.nrmse, c.nrmse, "nrmse");
    close(g.pearson, c.pearson, "pearson");
    close(g.orig_mean, c.orig_mean, "mean");
    close(g.abs_err_mean, c.abs_err_mean, "mean abs error");
    close(g.pwr_err_mean, c.pwr_err_mean, "mean pwr error");
    close(g.l2_error_normalized, c.l2_error_normalized, "l2 normalized");
    EXPECT_EQ(g.error_pdf, c.error_pdf);
    EXPECT_EQ(g.pwr_error_pdf, c.pwr_error_pdf);
    const gsz::assess::DerivedComparison* gd[4] = {&g.derivative1, &g.derivative2, &g.laplacian, &g.divergence};
    const gsz::assess::DerivedComparison* cd[4] = {&c.derivative1, &c.derivative2, &c.laplacian, &c.divergence};
    for (int k = 0; k < 4; ++k) {
        EXPECT_EQ(gd[k]->computed, cd[k]->computed) << k;
        EXPECT_EQ(gd[k]->points, cd[k]->points) << k;
        EXPECT_EQ(gd[k]->max_abs_error, cd[k]->max_abs_error) << k;
        close(gd[k]->psnr, cd[k]->psnr, "derived psnr");
    }
    EXPECT_EQ(g.ssim_computed, c.ssim_computed);
    EXPECT_EQ(g.ssim_windows, c.ssim_windows);
    close(g.ssim, c.ssim, "ssim");
    ASSERT_EQ(g.error_autocorr.size(), c.error_autocorr.size());
    for (size_t k = 0; k < c.error_autocorr.size(); ++k)
        EXPECT_NEAR(g.error_autocorr[k], c.error_autocorr[k], 1e-9) << "lag " << k + 1;
    ASSERT_EQ(g.error_autocorr_axis.size(), c.error_autocorr_axis.size());
    for (size_t a = 0; a < c.error_autocorr_axis.size(); ++a) {
        ASSERT_EQ(g.error_autocorr_axis[a].size(), c.error_autocorr_axis[a].size());
        for (size_t k = 0; k < c.error_autocorr_axis[a].size(); ++k)
            EXPECT_NEAR(g.error_autocorr_axis[a][k], c.error_autocorr_axis[a][k], 1e-9) << "axis " << a << " lag " << k + 1;
    }
}

template <class T>
std::vector<T> perturbed(const std::vector<T>& x, double scale, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(-scale, scale);
    std::vector<T> y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = static_cast<T>(x[i] + u(rng));
    return y;
}

TEST(CudaAssess, RealFieldsMatchCpu) {
    REQUIRE_GPU();
    auto fields = shared_fields();
    if (fields.empty()) fields.push_back({"sperr_wmag_91x91x91", repo_dir() / "data" / "sperr_wmag_91x91x91.f32",
                                          GSZ_DTYPE_F32, {91, 91, 91}});
    for (const Field& f : fields) {
        SCOPED_TRACE(f.name);
        if (f.dtype == GSZ_DTYPE_F32) {
            const auto x = read_raw<float>(f.path);
            same_as_cpu(x, perturbed(x, 0.01, 1), f.dims);
        } else {
            const auto x = read_raw<double>(f.path);
            same_as_cpu(x, perturbed(x, 1e-6, 2), f.dims);
        }
    }
}

TEST(CudaAssess, ShapesAndNonFiniteMatchCpu) {
    REQUIRE_GPU();
    for (const auto& dims : std::vector<std::vector<uint64_t>>{{1}, {2}, {100003}, {300, 7}, {2, 500}, {17, 9, 5}, {9, 8, 7, 3},
                                                                        {40, 11, 70}, {35, 3, 3}, {70, 40, 1, 1}}) {
        uint64_t n = 1;
        for (auto d : dims) n *= d;
        std::vector<float> x(n);
        std::vector<double> xd(n);
        for (uint64_t i = 0; i < n; ++i) x[i] = static_cast<float>(std::sin(i * 0.01) * 50 + (i % 11)), xd[i] = x[i] * 1.5;
        auto y = perturbed(x, 0.3, 5);
        auto yd = perturbed(xd, 0.3, 6);
        if (n > 50) {
            x[7] = y[7] = std::numeric_limits<float>::quiet_NaN();
            x[20] = std::numeric_limits<float>::infinity(), y[20] = 3.0f;
            x[30] = 0;
        }
        same_as_cpu(x, y, dims);
        same_as_cpu(xd, yd, dims);
        same_as_cpu(x, x, dims);  // identical: zero-width PDF, infinite PSNR
    }
}

// PDF bins where the GPU's shortcuts must fall back: point-wise ratios and
// errors exactly on bin edges (a ratio of k/16 over [-1, 1] in 2000 bins is
// an edge for every even k), originals whose reciprocal leaves the normal
// range (1e-305, subnormal), ratios beyond the clip; the counts must be the
// CPU's exactly.
TEST(CudaAssess, PdfBinsAtEdgesMatchCpu) {
    REQUIRE_GPU();
    gsz::assess::Options o;
    o.stencils = o.autocorr = o.ssim = false;
    const double scales[] = {1, 3, -7, 0.1, 1e-305, 1e150, -2.5e-200, 12345.678};
    for (int k = 0; k < 3; ++k) {
        const size_t n = 200003;
        std::vector<double> x(n), y(n);
        for (size_t i = 0; i < n; ++i) {
            const double s = scales[i % 8] * (1 + static_cast<double>(i % 97) / 64);
            const int m = static_cast<int>(i % 33) - 16;                  // ratio m / 16 in [-1, 1]
            x[i] = k == 2 && i % 1000 == 0 ? 1e-320 : s;                  // k = 2: some subnormal originals
            y[i] = k == 1 && i % 5000 == 0 ? s * 3000 : s + s * (m / 16.0);  // k = 1: ratios past the clip
        }
        SCOPED_TRACE(k);
        same_as_cpu(x, y, {n}, o);
        std::vector<float> xf(n), yf(n);
        for (size_t i = 0; i < n; ++i) {
            const float s = static_cast<float>(1 + (i % 89) * 0.25) * (i % 2 ? -1.0f : 1.0f);
            xf[i] = s, yf[i] = s + s * static_cast<float>((static_cast<int>(i % 33) - 16) / 16.0);
        }
        same_as_cpu(xf, yf, {n}, o);
    }
}

// The stencils alone on grids that reach every path of the tiled kernel (2-D,
// 3-D, several planes of an unused third axis, more tiles than resident CTAs
// so each CTA walks several, partial tiles, extent-3 axes) and of the generic
// one (an unused first or second axis), with non-finite values inside: the
// max errors must be identical to the CPU's, the PSNRs equal to 1e-9.
TEST(CudaAssess, StencilTilesMatchCpu) {
    REQUIRE_GPU();
    gsz::assess::Options o;
    o.reductions = o.autocorr = o.ssim = false;
    for (const auto& dims : std::vector<std::vector<uint64_t>>{
             {40, 11, 2}, {200, 150, 40}, {600, 400}, {3, 50, 60}, {2, 50, 60}, {50, 2, 60}, {35, 3, 3}, {97, 33, 100}}) {
        uint64_t n = 1;
        for (auto d : dims) n *= d;
        SCOPED_TRACE(testing::Message() << dims.size() << "-D, n " << n);
        std::vector<float> x(n);
        for (uint64_t i = 0; i < n; ++i) x[i] = static_cast<float>(std::sin(i * 0.013) * 40 + std::cos(i * 0.0007) * 9);
        auto y = perturbed(x, 0.05, 9);
        x[n / 2] = std::numeric_limits<float>::quiet_NaN();
        y[n / 3] = std::numeric_limits<float>::infinity();
        same_as_cpu(x, y, dims, o);
        std::vector<double> xd(x.begin(), x.end());
        same_as_cpu(xd, perturbed(xd, 1e-7, 10), dims, o);
    }
}

// SSIM windows and steps: the fused kernel (window 1 or 7 along axis 2) and
// the generic passes (any other), on 1-D to 4-D grids with partial tiles.
TEST(CudaAssess, SsimWindowsAndStepsMatchCpu) {
    REQUIRE_GPU();
    struct Case {
        std::vector<uint64_t> dims;
        uint32_t window, step;
    };
    const Case cases[] = {{{91, 91, 91}, 7, 2}, {{70, 45, 20}, 3, 1}, {{70, 45, 20}, 8, 1}, {{70, 45, 9}, 7, 3},
                          {{300, 77}, 11, 1},   {{300, 77}, 7, 2},   {{5000}, 7, 1},       {{33, 34, 7}, 7, 1},
                          {{12, 10, 8, 5}, 7, 1}, {{40, 9, 30}, 16, 4}};
    for (const Case& c : cases) {
        uint64_t n = 1;
        for (auto d : c.dims) n *= d;
        SCOPED_TRACE(testing::Message() << "dims " << c.dims.size() << "-D, n " << n << ", window " << c.window
                                        << ", step " << c.step);
        std::vector<float> x(n);
        for (uint64_t i = 0; i < n; ++i) x[i] = static_cast<float>(std::cos(i * 0.003) * 20 + (i % 7) * 0.5);
        auto y = perturbed(x, 0.2, 11);
        x[n / 2] = std::numeric_limits<float>::quiet_NaN();
        gsz::assess::Options o = twenty_lags();
        o.ssim_window = c.window, o.ssim_step = c.step;
        same_as_cpu(x, y, c.dims, o);
    }
}

// Autocorrelation lags: up to 128 from shared-memory tiles (rows for stride 1,
// columns otherwise), more from batches over the field; lines shorter and
// longer than a tile.
TEST(CudaAssess, AutocorrLagsMatchCpu) {
    REQUIRE_GPU();
    const std::vector<std::vector<uint64_t>> shapes = {{5000}, {300, 77}, {40, 11, 70}, {2100, 3}};
    for (const auto& dims : shapes) {
        uint64_t n = 1;
        for (auto d : dims) n *= d;
        std::vector<double> x(n);
        for (uint64_t i = 0; i < n; ++i) x[i] = std::sin(i * 0.002) * 30 + (i % 13) * 0.1;
        const auto y = perturbed(x, 0.05, 21);
        for (const uint32_t lags : {1u, 100u, 128u, 129u, 150u}) {
            SCOPED_TRACE(testing::Message() << dims.size() << "-D, n " << n << ", lags " << lags);
            gsz::assess::Options o;
            o.autocorr_lags = lags;
            o.reductions = o.stencils = o.ssim = false;
            same_as_cpu(x, y, dims, o);
        }
    }
}

TEST(CudaAssess, CApiOnDevicePointers) {
    REQUIRE_GPU();
    const auto x = read_raw<float>(repo_dir() / "data" / "sperr_wmag_91x91x91.f32");
    const auto y = perturbed(x, 0.05, 9);
    float *dx = nullptr, *dy = nullptr;
    ASSERT_EQ(cudaMalloc(&dx, x.size() * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&dy, y.size() * 4), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(dx, x.data(), x.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(dy, y.data(), y.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
    gsz_assess_options o;
    gsz_assess_options_init(&o);
    o.autocorr_lags = 10;
    std::vector<double> pdf_h(2000), pdf_d(2000), ac_h(10), ac_d(10);
    gsz_assess_result h{}, d{};
    h.error_pdf = pdf_h.data(), h.error_autocorr = ac_h.data();
    d.error_pdf = pdf_d.data(), d.error_autocorr = ac_d.data();
    const uint64_t dims[3] = {91, 91, 91};
    gsz::Context ctx;
    ASSERT_EQ(gsz_assess(ctx.get(), GSZ_DTYPE_F32, 3, dims, x.data(), y.data(), 0, nullptr, &o, &h), GSZ_STATUS_OK);
    ASSERT_EQ(gsz_assess(ctx.get(), GSZ_DTYPE_F32, 3, dims, dx, dy, 1, nullptr, &o, &d), GSZ_STATUS_OK)
        << gsz_ctx_last_error(ctx.get());
    EXPECT_EQ(d.max_abs_error, h.max_abs_error);
    close(d.psnr, h.psnr, "psnr");
    close(d.ssim, h.ssim, "ssim");
    close(d.derivative1_psnr, h.derivative1_psnr, "derivative psnr");
    EXPECT_EQ(pdf_d, pdf_h);
    for (int k = 0; k < 10; ++k) EXPECT_NEAR(ac_d[k], ac_h[k], 1e-9);
    cudaFree(dx);
    cudaFree(dy);
}

}  // namespace
