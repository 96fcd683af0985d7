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
    // Where the encoder leaves the number of outliers (device memory).
    const uint64_t* outlier_total(const LorenzoLayout& layout) const { return chunk_offsets.data() + layout.num_chunks; }
};

// Encodes d_data (device, C order).  Synchronizes once to learn the outlier count.
template <class T>
void lorenzo_encode_cuda(const T* d_data, const LorenzoLayout& layout, const QuantParams& params,
                         LorenzoDeviceCodes<T>& out, cudaStream_t stream);

// The same in two steps that do not wait: the codes, and each chunk's
// outliers at its stream offset in `scratch` with the total at
// out.outlier_total(); then, once the caller has read that total, the
// outliers gathered into out.outliers.  d_params, when not null, is read on
// the device instead of params (a bound the range pass derived there).
template <class T>
void lorenzo_encode_cuda_async(const T* d_data, const LorenzoLayout& layout, const QuantParams& params,
                               const QuantParams* d_params, LorenzoDeviceCodes<T>& out, cudaStream_t stream);
template <class T>
void lorenzo_compact_outliers_cuda(const LorenzoLayout& layout, uint64_t num_outliers, LorenzoDeviceCodes<T>& out,
                                   cudaStream_t stream);

// Scratch for decoding, kept for reuse across calls.
struct LorenzoDecodeScratch {
    cuda::DeviceBuffer<uint32_t> chunk_counts;
    cuda::DeviceBuffer<uint64_t> chunk_offsets;
    cuda::DeviceBuffer<uint64_t> granule_prefix;
    cuda::DeviceBuffer<uint8_t> temp;
};

// Outliers (code 0) per granule of `size` codes, counted while the codes
// were decoded (huffman_decode_cuda's zero counts): ceil(n / size) counts and
// a last entry 0.  The decoder then finds each chunk's first outlier without
// a pass over all codes.  They need not be right (a corrupt stream's): a
// chunk whose outliers would run past the stored ones reads none and is
// flagged corrupt, as is a total other than the stored count.
struct LorenzoGranuleCounts {
    const uint32_t* counts = nullptr;
    uint32_t size = 0;
};

// Set in *d_corrupt by lorenzo_decode_cuda when the codes mark a different
// number of outliers than the archive holds.
inline constexpr uint32_t kLorenzoCorruptOutliers = 2;

// Decodes codes (stream order) and outliers into d_out (C order).  When the
// codes mark a different number of outliers than num_outliers nothing is
// decoded and: with d_corrupt, kLorenzoCorruptOutliers is ORed into it (no
// waiting; the caller checks it later); without, GSZ_STATUS_CORRUPT is thrown
// (one synchronization, before decoding).  Granule counts are used with
// d_corrupt for the 2-D and 3-D chunks gsz writes (the column decoders).
template <class T>
void lorenzo_decode_cuda(const uint16_t* d_codes, const T* d_outliers, uint64_t num_outliers,
                         const LorenzoLayout& layout, const QuantParams& params, T* d_out,
                         LorenzoDecodeScratch& scratch, cudaStream_t stream, uint32_t* d_corrupt = nullptr,
                         LorenzoGranuleCounts granules = {});

}  // namespace gsz::predict
