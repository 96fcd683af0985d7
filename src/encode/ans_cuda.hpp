// GPU side of the context-modelled rANS stage (ans.hpp): the (context,
// symbol) histogram, the lane encoder and the lane decoder, producing and
// reading exactly the CPU's sections (same states, same words).  Tables are
// built on the host (ans_build_tables) from the histogram the GPU counted.
#pragma once

#include "encode/ans.hpp"
#include "runtime/cuda/device_buffer.hpp"

#include <cuda_runtime.h>

#include <cstdint>

namespace gsz::encode {

// d_hist[context * kAnsAlphabet + symbol] (zeroed here), as ans_histogram_cpu
// counts it (with the same class lag and sample).  A code >= 2 * radius sets
// *d_bad_code to 1.
void ans_histogram_cuda(const uint16_t* d_codes, uint64_t n, uint32_t radius, const AnsContextShape& shape,
                        uint64_t* d_hist, uint32_t* d_bad_code, cudaStream_t stream, uint32_t class_lag = 1,
                        uint32_t sample_stride = 1);

struct AnsDeviceStream {
    uint64_t num_symbols = 0;
    uint32_t lane_symbols = 0;
    uint64_t num_lanes = 0;
    uint64_t num_words = 0;
    uint32_t start_state = 1;                       // ans_start_state of the layout
    cuda::DeviceBuffer<uint32_t> lane_state;        // [lanes]
    cuda::DeviceBuffer<uint32_t> lane_words;        // [lanes]
    cuda::DeviceBuffer<uint64_t> lane_word_offset;  // [lanes + 1]
    cuda::DeviceBuffer<uint16_t> words;             // [num_words]
};

// Encodes d_codes[0..n) in lanes of lane_symbols codes: the same states and
// words as ans_encode_cpu.  Every code must have a table entry (the tables
// were built from these codes' histogram).
void ans_encode_cuda(const AnsTables& tables, const uint16_t* d_codes, uint64_t n, uint32_t radius,
                     const AnsContextShape& shape, uint32_t lane_symbols, AnsDeviceStream& out, cudaStream_t stream,
                     AnsLanesLayout layout = AnsLanesLayout::packed_from_one);

// Decodes a stream validated on the host (ans_stream_read) whose words and
// lane table are in device memory; `start_state` is the view's.  A lane that
// ans_decode_cpu would reject sets *d_corrupt to 1; the decoder never reads
// or writes out of bounds.
void ans_decode_cuda(const AnsTables& tables, const uint16_t* d_words, const uint32_t* d_lane_state,
                     const uint64_t* d_lane_word_offset, uint64_t n, uint32_t lane_symbols, uint32_t radius,
                     const AnsContextShape& shape, uint32_t start_state, uint16_t* d_codes, uint32_t* d_corrupt,
                     cudaStream_t stream);

}  // namespace gsz::encode
