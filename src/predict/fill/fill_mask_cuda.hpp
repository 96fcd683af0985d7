// The fill mask on the device (fill_mask.hpp): the encoder's stand-ins and
// the mask's residual, the decoder's mask.  The same bytes as the CPU's.
#pragma once

#include "predict/fill/fill_mask.hpp"

#include <cuda_runtime.h>

#include <cstdint>

namespace gsz::predict {

// d_out[i] = fill_stand_in(fill, d_data[i]) for the n values.
template <class T>
void fill_substitute_cuda(const T* d_data, uint64_t n, const FillValue& fill, T* d_out, cudaStream_t stream);

// The mask of the array (dims fastest first), as fill_mask_encode_cpu.
// Synchronizes: the residual's ones come back to the host for the section.
template <class T>
FillMask fill_mask_encode_cuda(const T* d_data, const uint64_t* dims, const FillValue& fill, cudaStream_t stream);

// d_out[i] = the fill value wherever the mask (from its residual) is set;
// throws GSZ_STATUS_CORRUPT where its count is not mask.points.  Synchronizes.
template <class T>
void fill_mask_apply_cuda(const FillMask& mask, const uint64_t* dims, const FillValue& fill, T* d_out,
                          cudaStream_t stream);

}  // namespace gsz::predict
