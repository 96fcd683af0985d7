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
        if (mode() == Mode::events) {
            pool_base_ = pool().used;
            record("start");
        }
    }
    ~StageTrace() {
        if (mode() != Mode::events) return;
        if (!events_.empty() && cudaEventSynchronize(events_.back().event) == cudaSuccess) {
            for (size_t i = 1; i < events_.size(); ++i) {
                float ms = 0;
                cudaEventElapsedTime(&ms, events_[i - 1].event, events_[i].event);
                std::fprintf(stderr, "gsz trace: %s %-22s %8.3f ms (GPU), host reached it at %8.3f ms\n", what_,
                             events_[i].stage, ms, events_[i].host_ms);
            }
        }
        pool().used = pool_base_;  // this trace's events back to the pool
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
    // one costs the host no more than the record call.  Traces nest (the code
    // stage's inside a pipeline's): each takes the slots after those of the
    // traces around it and gives them back when it ends (a shared slot 0 had
    // the inner trace re-record the outer's events).
    struct Pool {
        std::vector<cudaEvent_t> events;
        size_t used = 0;
    };
    static Pool& pool() {
        static thread_local Pool p;
        return p;
    }
    void record(const char* stage) {
        Pool& p = pool();
        if (p.used == p.events.size()) {
            cudaEvent_t e;
            if (cudaEventCreate(&e) != cudaSuccess) return;
            p.events.push_back(e);
        }
        cudaEvent_t e = p.events[p.used];
        if (cudaEventRecord(e, stream_) != cudaSuccess) return;
        ++p.used;
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
    size_t pool_base_ = 0;
    std::vector<Mark> events_;
};

}  // namespace gsz::cuda
