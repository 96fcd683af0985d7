// CUDA backend of the Lorenzo predictor: one thread block per chunk, the same
// per-element math (lorenzo_math.hpp) and the same stream order as the CPU
// backend, so codes and outliers are identical.
#pragma once

#include "predict/lorenzo/lorenzo.hpp"
#include "runtime/cuda/device_buffer.hpp"

#include <cuda_runtime.h>

namespace gsz::predict {

// Device-resident results of encoding.
template <class T>
struct LorenzoDeviceCodes {
    cuda::DeviceBuffer<uint16_t> codes;      // one per element, stream order
    cuda::DeviceBuffer<T> outliers;          // compact, stream order
    uint64_t num_outliers = 0;
    // scratch, kept for reuse across calls
    cuda::DeviceBuffer<T> scratch;
    cuda::DeviceBuffer<uint32_t> chunk_counts;
    cuda::DeviceBuffer<uint64_t> chunk_offsets;
    cuda::DeviceBuffer<uint8_t> temp;
};

// Encodes d_data (device, C order).  Synchronizes once to learn the outlier count.
template <class T>
void lorenzo_encode_cuda(const T* d_data, const LorenzoLayout& layout, const QuantParams& params,
                         LorenzoDeviceCodes<T>& out, cudaStream_t stream);

// Scratch for decoding, kept for reuse across calls.
struct LorenzoDecodeScratch {
    cuda::DeviceBuffer<uint32_t> chunk_counts;
    cuda::DeviceBuffer<uint64_t> chunk_offsets;
    cuda::DeviceBuffer<uint8_t> temp;
};

// Decodes codes (stream order) and outliers into d_out (C order).  Throws
// GSZ_STATUS_CORRUPT when the codes mark a different number of outliers than
// num_outliers (synchronizes once to check).
template <class T>
void lorenzo_decode_cuda(const uint16_t* d_codes, const T* d_outliers, uint64_t num_outliers,
                         const LorenzoLayout& layout, const QuantParams& params, T* d_out,
                         LorenzoDecodeScratch& scratch, cudaStream_t stream);

}  // namespace gsz::predict
