// CUDA backend of the G-Interp predictor: one thread block per tile, walking
// the same stages with the same per-element math (interp_math.hpp) as the CPU
// backend, so codes, anchors and outliers are identical.
#pragma once

#include "predict/interp/interp.hpp"
#include "runtime/cuda/device_buffer.hpp"

#include <cuda_runtime.h>

#include <vector>

namespace gsz::predict {

// The tuner's sample of d_data (the values at interp_tune_indices, in that
// order): gathered into `d_values` on the device (the indices are generated
// there) and copied to `h_values` (page-locked), without waiting; the host
// reads it after the stream's next synchronization.  Returns the count.
// The buffers may be kept across calls.
template <class T>
uint64_t interp_tune_sample_launch(const T* d_data, const InterpLayout& layout, cuda::DeviceBuffer<T>& d_values,
                                   cuda::PinnedBuffer<T>& h_values, cudaStream_t stream);
// The same, waited for and widened to double.
template <class T>
std::vector<double> interp_tune_sample_cuda(const T* d_data, const InterpLayout& layout, cudaStream_t stream);

template <class T>
struct InterpDeviceEncoded {
    // Anchor stage (interp_anchors_encode_cuda).
    uint8_t anchor_mode = kAnchorsRaw;
    cuda::DeviceBuffer<T> anchor_start;             // per anchor: the value the tiles start from
    cuda::DeviceBuffer<uint16_t> anchor_codes;      // coded: per anchor
    cuda::DeviceBuffer<int64_t> anchor_q;             // coded: lattice values
    cuda::DeviceBuffer<uint64_t> anchor_residual, anchor_listed;
    std::vector<uint64_t> listed, listed_residual;  // coded: on the host, for the archive
    cuda::PinnedBuffer<uint64_t> listed_count;       // coded: how many are listed, read back by the finish
    // Tiles (interp_encode_cuda).
    cuda::DeviceBuffer<uint16_t> codes;            // one per element, raster order
    cuda::DeviceBuffer<uint64_t> outlier_index;    // raster order
    cuda::DeviceBuffer<T> outlier_value;
    uint64_t num_outliers = 0;
    cuda::DeviceBuffer<uint8_t> temp;              // scratch, kept for reuse
    cuda::DeviceBuffer<uint64_t> count;            // the outliers selected (interp_outliers_cuda)
    // The tiles' zero codes, whether the jump guard decided a prediction, and how many full and
    // generic tiles needed its tests (interp_encode_tiles_cuda), those tiles' indices.
    cuda::DeviceBuffer<unsigned long long> zero_codes;
    cuda::DeviceBuffer<uint32_t> loud_tiles, loud_generic_tiles;
    cuda::DeviceBuffer<uint8_t> lorenzo_tiles;     // per tile 1 where Lorenzo-coded (config.tiles != kTilesSpline)
    cuda::DeviceBuffer<unsigned long long> gate;   // kTilesAuto: the gate's counters and sums, then its tile ids
};

// The anchor stage, as interp_anchors_encode_cpu (same codes, same choice of
// mode).  Synchronizes once to learn how many coded anchors are listed.
template <class T>
void interp_anchors_encode_cuda(const T* d_data, const InterpLayout& layout, const InterpConfig& config, double eb,
                                uint32_t radius, int requested, InterpDeviceEncoded<T>& out, cudaStream_t stream);
// The same in two steps: the kernels and the listed count's read-back
// launched without waiting (of `config` only the level bounds are read:
// interp_level_bounds' suffice, so the host may tune meanwhile), then the
// count waited for, the mode chosen and the listed anchors fetched.
template <class T>
void interp_anchors_launch_cuda(const T* d_data, const InterpLayout& layout, const InterpConfig& config, double eb,
                                uint32_t radius, int requested, InterpDeviceEncoded<T>& out, cudaStream_t stream);
template <class T>
void interp_anchors_finish_cuda(const T* d_data, const InterpLayout& layout, int requested,
                                InterpDeviceEncoded<T>& out, cudaStream_t stream);

// Encodes d_data (device, C order) after the anchor stage; `config.anchors`
// must be `out.anchor_mode`: the tiles, then the outliers.  Synchronizes to
// learn the outlier count.
template <class T>
void interp_encode_cuda(const T* d_data, const InterpLayout& layout, const InterpConfig& config, double eb,
                        uint32_t radius, InterpDeviceEncoded<T>& out, cudaStream_t stream);

// The two steps apart, neither waiting: the tiles (codes into out.codes, the
// number of zero codes into out.zero_codes on the device), and the outliers
// (indices of the zero codes in raster order and their values) given that
// number, which must be exact (the pipeline has it from the codes' histogram;
// out.count receives the count selected).  With a fill value (config.fill),
// d_data holds its stand-ins and d_original the array (what the stages load);
// else d_original is null.
template <class T>
void interp_encode_tiles_cuda(const T* d_data, const InterpLayout& layout, const InterpConfig& config, double eb,
                              uint32_t radius, InterpDeviceEncoded<T>& out, cudaStream_t stream,
                              const T* d_original = nullptr);
template <class T>
void interp_outliers_cuda(const T* d_data, uint64_t num_zero_codes, InterpDeviceEncoded<T>& out, cudaStream_t stream);

// The anchors' start values into d_start (num_anchors), as
// interp_anchors_decode_cpu: raw values (their codes must be `radius`), or
// from the codes, the listed residuals (indices increasing and inside the grid,
// checked by the caller) and, for code 0, the outliers.  Disagreement sets
// *d_corrupt.
template <class T>
void interp_anchors_decode_cuda(const uint16_t* d_codes, const T* d_raw, const uint64_t* d_listed,
                                const uint64_t* d_listed_residual, uint64_t num_listed,
                                const uint64_t* d_outlier_index, const T* d_outlier_value, uint64_t num_outliers,
                                const InterpLayout& layout, const InterpConfig& config, uint32_t radius, T* d_start,
                                uint32_t* d_corrupt, cudaStream_t stream);

// Decodes into d_out from the anchors' start values.  A zero code without an
// outlier entry sets *d_corrupt (the caller checks it); outlier indices must
// be strictly increasing.
template <class T>
// d_lorenzo_tiles: per tile 1 where Lorenzo-coded, or null where none is.
void interp_decode_cuda(const uint16_t* d_codes, const T* d_anchors, const uint64_t* d_outlier_index,
                        const T* d_outlier_value, uint64_t num_outliers, const uint8_t* d_lorenzo_tiles,
                        const InterpLayout& layout, const InterpConfig& config, uint32_t radius, T* d_out,
                        uint32_t* d_corrupt, cudaStream_t stream);

}  // namespace gsz::predict
