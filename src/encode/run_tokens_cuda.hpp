// Run tokens on the GPU: the same tokens as run_tokens_encode_cpu, and the
// expansion back to codes (see run_tokens.hpp).
#pragma once

#include "encode/run_tokens.hpp"
#include "runtime/cuda/device_buffer.hpp"

#include <cuda_runtime.h>

#include <cstdint>

namespace gsz::encode {

// Tokens of d_codes[0..n) into d_tokens (allocated here); returns their
// number.  One thread per segment counts, a scan places the segments, and
// the same threads write: no atomics, so the order is fixed.
uint64_t run_tokens_encode_cuda(const uint16_t* d_codes, uint64_t n, uint32_t dominant, uint32_t alphabet,
                                cuda::DeviceBuffer<uint16_t>& d_tokens, cudaStream_t stream);

// Expands d_tokens[0..num_tokens) into d_codes[0..n): positions from an
// inclusive scan of the token lengths, one thread per token.  A token outside
// the alphabet or lengths that do not add up to n set *d_corrupt to 1; no
// write leaves d_codes[0..n).
void run_tokens_decode_cuda(const uint16_t* d_tokens, uint64_t num_tokens, uint32_t dominant, uint32_t alphabet,
                            uint16_t* d_codes, uint64_t n, uint32_t* d_corrupt, cudaStream_t stream);

}  // namespace gsz::encode
