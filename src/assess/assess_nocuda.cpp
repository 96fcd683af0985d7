// Builds without CUDA: the GPU assessment backend is unavailable.
#include "assess/assess.hpp"

#include "runtime/status.hpp"

namespace gsz::assess {

template <class T>
Result assess_cuda_host(const T*, const T*, const Shape&, const Options&, int, double*) {
    fail(GSZ_STATUS_NO_DEVICE, "assess: this gsz was built without CUDA");
}

template <class T>
Result assess_cuda_device(const T*, const T*, const Shape&, const Options&, void*) {
    fail(GSZ_STATUS_NO_DEVICE, "assess: this gsz was built without CUDA");
}

template Result assess_cuda_device<float>(const float*, const float*, const Shape&, const Options&, void*);
template Result assess_cuda_device<double>(const double*, const double*, const Shape&, const Options&, void*);
template Result assess_cuda_host<float>(const float*, const float*, const Shape&, const Options&, int, double*);
template Result assess_cuda_host<double>(const double*, const double*, const Shape&, const Options&, int, double*);

}  // namespace gsz::assess
