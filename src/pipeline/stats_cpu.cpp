#include "pipeline/pipeline.hpp"

#include "predict/fill/fill_mask.hpp"
#include "runtime/parallel.hpp"

#include <cmath>
#include <limits>

namespace gsz::pipeline {

template <class T>
FiniteRange finite_range_cpu(const T* data, uint64_t count, int num_threads, const uint64_t* skip_bits) {
    // min and max are order-independent, so the reduction is exact and
    // thread-count independent.
    const bool skip = skip_bits != nullptr;
    const uint64_t skipped = skip ? *skip_bits : 0;
    T lo = std::numeric_limits<T>::infinity();
    T hi = -std::numeric_limits<T>::infinity();
    bool any = false;
#pragma omp parallel for num_threads(resolve_threads(num_threads)) reduction(min : lo) reduction(max : hi) \
    reduction(|| : any) schedule(static)
    for (int64_t i = 0; i < static_cast<int64_t>(count); ++i) {
        const T v = data[i];
        if (std::isfinite(v) && !(skip && predict::fill_bits_of(v) == skipped)) {
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
            any = true;
        }
    }
    FiniteRange r;
    r.any = any;
    r.min = any ? static_cast<double>(lo) : std::numeric_limits<double>::quiet_NaN();
    r.max = any ? static_cast<double>(hi) : std::numeric_limits<double>::quiet_NaN();
    return r;
}

template FiniteRange finite_range_cpu<float>(const float*, uint64_t, int, const uint64_t*);
template FiniteRange finite_range_cpu<double>(const double*, uint64_t, int, const uint64_t*);

}  // namespace gsz::pipeline
