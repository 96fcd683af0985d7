// CUDA backend of the `fast` predictor: a group of lanes per block, the same
// per-element math (fast_math.hpp) and the same block decisions as the CPU
// backend, so the four streams are identical byte for byte.
#pragma once

#include "predict/fast/fast.hpp"
#include "runtime/cuda/device_buffer.hpp"

#include <cuda_runtime.h>

namespace gsz::predict {

// Device-resident streams of an encoded array, plus scratch kept for reuse.
template <class T>
struct FastDeviceStreams {
    cuda::DeviceBuffer<uint8_t> codes;        // one per block
    cuda::DeviceBuffer<T> mids;               // one per block
    cuda::DeviceBuffer<uint8_t> leads;        // size: the stream's bytes (capacity: the worst case)
    cuda::DeviceBuffer<uint8_t> bytes;        // likewise (capacity: the input's size)
    // scratch
    cuda::DeviceBuffer<uint64_t> totals;      // non-constant blocks, explicit bytes
    // The encoder's tile states, two buffers: each launch readies the other
    // one for the launch after it (the next segment, or the next encoding of
    // as many blocks), which then needs no init kernel.
    cuda::DeviceBuffer<uint8_t> tile_states[2];
    int ready_tiles[2] = {0, 0};              // tiles whose states are initialized and unused
    int next_slot = 0;                        // the buffer the next launch uses
    int segments = 0;                         // launches of the last encoding
    uint64_t max_launch_blocks = 0;           // blocks per encoder launch; 0: the default (2^24, see
                                              // fast_cuda.cu); tests lower it to chain several launches
};

// Optional first step: allocates the streams and, unless the previous
// encoding left them ready, initializes the encoder's first tile states,
// which needs no bound, so that it can be queued before the range pass.
template <class T>
void fast_encode_cuda_prepare(const T* d_data, const FastLayout& layout, FastDeviceStreams<T>& out,
                              cudaStream_t stream);

// Encodes d_data (device, any alignment) in one pass over it, with the
// absolute bound read from device memory (*d_eb), so the encoder can follow
// the range pass without a round trip to the host.  The lead and byte streams
// are allocated at their worst-case sizes (the byte stream as large as the
// input); nothing is synchronized.  The last launch also brings up to
// kFastReadbackExtra bytes from d_extra (device; e.g. the range pass's
// result) to the host, for fast_encode_cuda_sizes to return.  The block it
// brings them to is per host thread: a thread calls fast_encode_cuda_sizes
// before it starts another encoding.
inline constexpr size_t kFastReadbackExtra = 64;
template <class T>
void fast_encode_cuda_async(const T* d_data, const FastLayout& layout, const double* d_eb, FastDeviceStreams<T>& out,
                            cudaStream_t stream, const void* d_extra = nullptr, size_t extra_bytes = 0);

// Waits for fast_encode_cuda_async, sizes the lead and byte streams and
// copies the extra bytes to h_extra.
template <class T>
void fast_encode_cuda_sizes(const FastLayout& layout, FastDeviceStreams<T>& out, cudaStream_t stream,
                            void* h_extra = nullptr, size_t extra_bytes = 0);

// Both steps, with the bound given on the host.
template <class T>
void fast_encode_cuda(const T* d_data, const FastLayout& layout, double eb, FastDeviceStreams<T>& out,
                      cudaStream_t stream);

struct FastDecodeScratch {
    cuda::DeviceBuffer<uint64_t> lead_rank, byte_offset;
    cuda::DeviceBuffer<uint8_t> temp;
    cuda::DeviceBuffer<uint32_t> corrupt;
};

// Decodes device-resident streams (codes and mids: one per block) into d_out.
// Every read is bounds-checked on the device; a stream that does not add up
// (bad code, lead code above the kept bytes, sizes that differ from what the
// codes need) throws GSZ_STATUS_CORRUPT.  Synchronizes once, at the end.
template <class T>
void fast_decode_cuda(const uint8_t* d_codes, const T* d_mids, const uint8_t* d_leads, uint64_t leads_size,
                      const uint8_t* d_bytes, uint64_t bytes_size, const FastLayout& layout, T* d_out,
                      FastDecodeScratch& scratch, cudaStream_t stream);

}  // namespace gsz::predict
