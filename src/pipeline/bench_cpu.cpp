// `gsz bench` on the CPU backend: wall times of the same calls the C API
// makes.  Device-resident and end-to-end are the same thing on the host, so
// both vectors hold the same times.
#include "pipeline/bench.hpp"

#include "format/archive.hpp"
#include "pipeline/pipeline.hpp"
#include "runtime/parallel.hpp"
#include "runtime/status.hpp"

#include <chrono>

namespace gsz::pipeline {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace

BenchResult bench_cpu(const BenchOptions& options, const void* host_data) {
    gsz_params p = options.params;
    p.device = GSZ_DEVICE_CPU;
    params_validate(p);
    GSZ_CHECK(options.warmup >= 0, GSZ_STATUS_INVALID_ARGUMENT, "warmup %d must be >= 0", options.warmup);
    GSZ_CHECK(options.repeat >= 1, GSZ_STATUS_INVALID_ARGUMENT, "repeat %d must be >= 1", options.repeat);
    GSZ_CHECK(host_data, GSZ_STATUS_INVALID_ARGUMENT, "null input");

    BenchResult r;
    const int threads = resolve_threads(p.num_threads);
    r.device = "cpu (" + std::to_string(threads) + (threads == 1 ? " thread)" : " threads)");
    r.original_bytes = params_num_elements(p) * dtype_bytes(p.dtype);
    const int runs = options.warmup + options.repeat;

    for (int i = 0; i < runs; ++i) {
        const auto t0 = Clock::now();
        r.archive = compress(p, host_data);
        const double s = seconds_since(t0);
        if (i >= options.warmup) r.compress_s.push_back(s);
    }
    r.archive_bytes = r.archive.size();

    r.decoded.resize(r.original_bytes);
    for (int i = 0; i < runs; ++i) {
        const auto t0 = Clock::now();
        const format::Archive parsed = format::archive_parse(r.archive);
        decompress(parsed, r.decoded.data(), GSZ_DEVICE_CPU, p.num_threads);
        const double s = seconds_since(t0);
        if (i >= options.warmup) r.decompress_s.push_back(s);
    }

    r.compress_e2e_s = r.compress_s;
    r.decompress_e2e_s = r.decompress_s;
    return r;
}

}  // namespace gsz::pipeline
