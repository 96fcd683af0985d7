// Timed compress/decompress runs for `gsz bench`.  The device-resident times
// cover everything between "input on the device" and "archive bytes ready"
// (every kernel and the host codebook step; no host<->device copies of the
// input or output), measured with CUDA events; the end-to-end times start and
// end in host memory.  The CPU backend reports wall times for both.
#pragma once

#include <gsz/gsz.h>

#include <cstdint>
#include <string>
#include <vector>

namespace gsz::pipeline {

struct BenchOptions {
    gsz_params params{};    // dtype, dims, bound, pipeline, radius, threads
    int warmup = 2;
    int repeat = 10;
};

struct BenchResult {
    std::string device;                        // e.g. "NVIDIA H100 80GB HBM3" or "cpu (2 threads)"
    uint64_t original_bytes = 0;
    uint64_t archive_bytes = 0;
    std::vector<double> compress_s;            // device-resident (CPU: wall), one per repetition
    std::vector<double> decompress_s;
    std::vector<double> compress_e2e_s;        // host memory -> host memory
    std::vector<double> decompress_e2e_s;
    std::vector<uint8_t> archive;              // the archive of the last repetition
    std::vector<uint8_t> decoded;              // its decoded values (host), for error metrics
};

// Both throw gsz::Error; bench_cuda throws GSZ_STATUS_NO_DEVICE when this build
// or this machine has no usable GPU.
BenchResult bench_cpu(const BenchOptions& options, const void* host_data);
BenchResult bench_cuda(const BenchOptions& options, const void* host_data);

// Whether the CUDA backend can run here; when not, *why says why.
bool cuda_backend_available(std::string* why);

}  // namespace gsz::pipeline
