// GSZ_TRACE in the environment prints per-stage times to stderr:
//   GSZ_TRACE=1       each mark waits for the stream and prints the wall time
//                     since the previous mark (kernels and host work of that
//                     stage), so host steps between kernels show up, which a
//                     kernel profiler does not see;
//   GSZ_TRACE=events  each mark records a CUDA event without waiting; the
//                     intervals between events (GPU time, idle gaps included)
//                     are printed when the trace ends, so the stages are timed
//                     as they run when nothing waits between them, with the
//                     host time at which each mark was reached.
// Without it a mark costs one branch.
#pragma once

#include "runtime/cuda/cuda_check.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace gsz::cuda {

class StageTrace {
public:
    StageTrace(cudaStream_t stream, const char* what) : stream_(stream), what_(what) {
        if (mode() == Mode::wall) GSZ_CUDA(cudaStreamSynchronize(stream_));
        last_ = std::chrono::steady_clock::now();
        if (mode() == Mode::events) record("start");
    }
    ~StageTrace() {
        if (mode() != Mode::events || events_.empty()) return;
        if (cudaEventSynchronize(events_.back().event) == cudaSuccess) {
            for (size_t i = 1; i < events_.size(); ++i) {
                float ms = 0;
                cudaEventElapsedTime(&ms, events_[i - 1].event, events_[i].event);
                std::fprintf(stderr, "gsz trace: %s %-22s %8.3f ms (GPU), host reached it at %8.3f ms\n", what_,
                             events_[i].stage, ms, events_[i].host_ms);
            }
        }
    }
    StageTrace(const StageTrace&) = delete;
    StageTrace& operator=(const StageTrace&) = delete;

    void mark(const char* stage) {
        if (mode() == Mode::off) return;
        if (mode() == Mode::events) {
            record(stage);
            return;
        }
        GSZ_CUDA(cudaStreamSynchronize(stream_));
        const auto now = std::chrono::steady_clock::now();
        std::fprintf(stderr, "gsz trace: %s %-22s %8.3f ms\n", what_, stage,
                     std::chrono::duration<double, std::milli>(now - last_).count());
        last_ = now;
    }

private:
    enum class Mode { off, wall, events };
    static Mode mode() {
        static const Mode m = [] {
            const char* v = std::getenv("GSZ_TRACE");
            if (!v) return Mode::off;
            return std::strcmp(v, "events") == 0 ? Mode::events : Mode::wall;
        }();
        return m;
    }
    // Events come from a per-thread pool created once, so that recording
    // one costs the host no more than the record call.
    void record(const char* stage) {
        static thread_local std::vector<cudaEvent_t> pool;
        if (events_.size() == pool.size()) {
            cudaEvent_t e;
            if (cudaEventCreate(&e) != cudaSuccess) return;
            pool.push_back(e);
        }
        cudaEvent_t e = pool[events_.size()];
        if (cudaEventRecord(e, stream_) != cudaSuccess) return;
        events_.push_back(
            {e, stage, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - last_).count()});
    }
    struct Mark {
        cudaEvent_t event;
        const char* stage;
        double host_ms;  // host time since the trace began
    };
    cudaStream_t stream_;
    const char* what_;
    std::chrono::steady_clock::time_point last_{};
    std::vector<Mark> events_;
};

}  // namespace gsz::cuda
