// CUDA error handling: every runtime call and every launch goes through these,
// turning a failure into gsz::Error(GSZ_STATUS_DEVICE_ERROR) with the call's
// text.  Never exits or prints.
#pragma once

#include "runtime/status.hpp"

#include <cuda_runtime.h>

namespace gsz::cuda {

inline void check(cudaError_t err, const char* what, const char* file, int line) {
    if (err != cudaSuccess) {
        const gsz_status status = (err == cudaErrorMemoryAllocation) ? GSZ_STATUS_OUT_OF_MEMORY
                                  : (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver)
                                      ? GSZ_STATUS_NO_DEVICE
                                      : GSZ_STATUS_DEVICE_ERROR;
        fail(status, format_message("CUDA: %s failed: %s (%s:%d)", what, cudaGetErrorString(err), file, line));
    }
}

}  // namespace gsz::cuda

#define GSZ_CUDA(call) ::gsz::cuda::check((call), #call, __FILE__, __LINE__)
// After every kernel launch: configuration errors show up here.
#define GSZ_CUDA_LAUNCHED(name) ::gsz::cuda::check(cudaGetLastError(), name, __FILE__, __LINE__)
