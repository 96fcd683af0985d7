// Device-pointer entry point of the CUDA assessment backend (reductions and
// stencils).  assess.hpp's assess_cuda_host wraps it for host arrays.
#pragma once

#include "assess/assess.hpp"

#include <cuda_runtime.h>

namespace gsz::assess {

template <class T>
Result assess_cuda(const T* d_original, const T* d_decompressed, const Shape& shape, const Options& options,
                   cudaStream_t stream);

}  // namespace gsz::assess
