// GSZ_TRACE=1 in the environment: each mark waits for the stream and prints
// the wall time since the previous mark (kernels and host work of that stage)
// to stderr, so the host steps between kernels show up, which a kernel
// profiler does not see.  Without it a mark costs one branch.
#pragma once

#include "runtime/cuda/cuda_check.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace gsz::cuda {

class StageTrace {
public:
    StageTrace(cudaStream_t stream, const char* what) : stream_(stream), what_(what) {
        if (enabled()) {
            GSZ_CUDA(cudaStreamSynchronize(stream_));
            last_ = std::chrono::steady_clock::now();
        }
    }
    void mark(const char* stage) {
        if (!enabled()) return;
        GSZ_CUDA(cudaStreamSynchronize(stream_));
        const auto now = std::chrono::steady_clock::now();
        std::fprintf(stderr, "gsz trace: %s %-22s %8.3f ms\n", what_, stage,
                     std::chrono::duration<double, std::milli>(now - last_).count());
        last_ = now;
    }

private:
    static bool enabled() {
        static const bool on = std::getenv("GSZ_TRACE") != nullptr;
        return on;
    }
    cudaStream_t stream_;
    const char* what_;
    std::chrono::steady_clock::time_point last_{};
};

}  // namespace gsz::cuda
