// Assessment (cuZ-Checker's metrics): how a decompressed array differs from
// its original.  Definitions, sign convention and defaults: docs/METRICS.md.
// The error is e = decompressed - original; sums are accumulated in double.
// Elements whose original is NaN or +-Inf are left out of every metric and
// counted (a lossless round trip keeps them bit-exact).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gsz::assess {

struct Shape {
    uint32_t rank = 1;                      // 1..4
    uint64_t dims[4] = {1, 1, 1, 1};        // fastest first
    uint64_t count() const { return dims[0] * dims[1] * dims[2] * dims[3]; }
};

struct Options {
    bool reductions = true;   // error statistics, MSE family, Pearson, PDFs
    bool stencils = true;     // derivatives, Laplacian, divergence
    bool autocorr = true;     // error autocorrelation, flattened and per axis
    bool ssim = true;         // windowed SSIM
    uint32_t pdf_bins = 2000;
    uint32_t autocorr_lags = 100;
    uint32_t ssim_window = 7;
    uint32_t ssim_step = 1;   // 2 = qcat / libpressio
    int num_threads = 0;
};

// A field derived from both arrays (a derivative, the Laplacian, ...) compared
// like the arrays themselves: PSNR over the original's derived range.
struct DerivedComparison {
    bool computed = false;
    uint64_t points = 0;      // interior points used
    double max_abs_error = 0;
    double psnr = 0;          // +inf when identical
};

struct Result {
    uint64_t num_elements = 0;
    uint64_t num_nonfinite = 0;         // originals that are NaN/Inf (left out)
    uint64_t nonfinite_mismatches = 0;  // of those, not restored bit-exactly

    // Reductions over the finite originals.
    double orig_min = 0, orig_max = 0, value_range = 0, orig_mean = 0;
    double dec_min = 0, dec_max = 0, dec_mean = 0;
    double err_min = 0, err_max = 0, err_mean = 0;               // signed e
    double abs_err_min = 0, abs_err_max = 0, abs_err_mean = 0;
    uint64_t max_abs_err_index = 0;
    double max_rel_error = 0;                                     // max |e| / range
    uint64_t pwr_count = 0;                                       // originals != 0
    double pwr_err_min = 0, pwr_err_max = 0, pwr_err_mean = 0;    // |e| / |x| over x != 0
    double mse = 0, rmse = 0, nrmse = 0, psnr = 0, snr = 0;
    double pearson = 0;
    double l2_error = 0, l2_error_normalized = 0;                 // ||e||, ||e|| / ||y||
    std::vector<double> error_pdf;       // probability mass per bin over [err_min, err_max]
    std::vector<double> pwr_error_pdf;   // over signed e / x, x != 0, clipped to [-1000, 1000]
    double pwr_pdf_min = 0, pwr_pdf_max = 0;

    DerivedComparison derivative1, derivative2, laplacian, divergence;

    std::vector<double> error_autocorr;                  // lags 1..L, flattened C order
    std::vector<std::vector<double>> error_autocorr_axis;  // per axis (fastest first), lags 1..L

    bool ssim_computed = false;
    double ssim = 0;
    uint64_t ssim_windows = 0;
    uint32_t ssim_window_used[4] = {0, 0, 0, 0};
};

// Throws gsz::Error(GSZ_STATUS_INVALID_ARGUMENT) naming a bad shape or option.
void validate(const Shape& shape, const Options& options);

// Validates the options and computes the selected metrics on the CPU with OpenMP.
template <class T>
Result assess_cpu(const T* original, const T* decompressed, const Shape& shape, const Options& options);

// The CUDA backend (every metric): host arrays are copied to the device, and *kernel_seconds (if not null)
// receives the time of the metric kernels alone (CUDA events), median of
// `repeat` runs.  Throws GSZ_STATUS_NO_DEVICE without a usable GPU.
template <class T>
Result assess_cuda_host(const T* original, const T* decompressed, const Shape& shape, const Options& options,
                        int repeat = 1, double* kernel_seconds = nullptr);

// The CUDA backend on device arrays (`stream` is a cudaStream_t): every
// metric, nothing copied.  Throws GSZ_STATUS_NO_DEVICE without a usable GPU.
template <class T>
Result assess_cuda_device(const T* d_original, const T* d_decompressed, const Shape& shape, const Options& options,
                          void* stream);

}  // namespace gsz::assess
