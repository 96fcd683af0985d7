// OpenMP helpers.  Work is split by data into contiguous ranges, never by
// anything that changes the output: results are joined in range order.
#pragma once

#include <omp.h>

#include <cstdint>
#include <exception>
#include <utility>

namespace gsz {

// The thread count a call uses: the caller's, or OpenMP's default when <= 0.
// Never changes global OpenMP state.
inline int resolve_threads(int requested) { return requested > 0 ? requested : omp_get_max_threads(); }

inline int thread_index() { return omp_get_thread_num(); }

// The calling thread's contiguous share of [0, n) inside a parallel region;
// thread t gets the t-th range, so ranges in thread order cover [0, n) in order.
inline std::pair<uint64_t, uint64_t> thread_range(uint64_t n) {
    const uint64_t t = static_cast<uint64_t>(omp_get_thread_num());
    const uint64_t nt = static_cast<uint64_t>(omp_get_num_threads());
    const auto split = [&](uint64_t k) {
        return static_cast<uint64_t>(static_cast<unsigned __int128>(n) * k / nt);
    };
    return {split(t), split(t + 1)};
}

// Exceptions must not leave an OpenMP region (that terminates the process):
// run region bodies through capture() and rethrow the first failure after.
class ParallelErrors {
public:
    template <class F>
    void capture(F&& body) noexcept {
        try {
            body();
        } catch (...) {
#pragma omp critical(gsz_parallel_errors)
            if (!first_) first_ = std::current_exception();
        }
    }
    void rethrow() const {
        if (first_) std::rethrow_exception(first_);
    }

private:
    std::exception_ptr first_;
};

}  // namespace gsz
