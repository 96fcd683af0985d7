// Run tokens on the GPU: the same tokens as run_tokens_encode_cpu, and the
// expansion back to codes (see run_tokens.hpp).
#pragma once

#include "encode/run_tokens.hpp"
#include "runtime/cuda/device_buffer.hpp"

#include <cuda_runtime.h>

#include <cstdint>
#include <span>
#include <vector>

namespace gsz::encode {

// The run tokens of d_codes[0..n) counted, not written: a warp per segment
// counts its tokens and the binary digits of its runs, a scan places the
// segments.  Returns the tokens' histogram (alphabet + kRunClasses bins, as
// histogram_cpu of run_tokens_encode_cpu's tokens gives it), built from the
// codes' histogram (every code but the dominant one is its own token) and the
// digits; `plan` keeps the number of tokens and the segments' places.
struct RunTokenPlan {
    uint64_t num_tokens = 0;
    uint64_t segments = 0;
    cuda::DeviceBuffer<uint64_t> offsets;  // [segments + 1], then the digits
};
std::vector<uint64_t> run_tokens_count_cuda(const uint16_t* d_codes, uint64_t n, uint32_t dominant, uint32_t alphabet,
                                            std::span<const uint64_t> code_histogram, RunTokenPlan& plan,
                                            cudaStream_t stream);

// The digits of the runs in every `segment_stride`-th segment (RunDigits,
// as run_digits_cpu), counted into d_digits[0..kRunClasses] without waiting
// (added to what is there where `zero` is false).
void run_digits_cuda(const uint16_t* d_codes, uint64_t n, uint32_t dominant, uint32_t alphabet,
                     uint32_t segment_stride, uint64_t* d_digits, cudaStream_t stream, bool zero = true);

// The counted tokens into d_tokens (allocated here): the same warps write
// them where the scan placed their segments, so the order is fixed.
void run_tokens_write_cuda(const uint16_t* d_codes, uint64_t n, uint32_t dominant, uint32_t alphabet,
                           const RunTokenPlan& plan, cuda::DeviceBuffer<uint16_t>& d_tokens, cudaStream_t stream);

// Both: the tokens of d_codes[0..n) into d_tokens; returns their number.
uint64_t run_tokens_encode_cuda(const uint16_t* d_codes, uint64_t n, uint32_t dominant, uint32_t alphabet,
                                cuda::DeviceBuffer<uint16_t>& d_tokens, cudaStream_t stream);

// Expands d_tokens[0..num_tokens) into d_codes[0..n): positions from an
// inclusive scan of the token lengths, one thread per token.  A token outside
// the alphabet or lengths that do not add up to n set *d_corrupt to 1; no
// write leaves d_codes[0..n).
void run_tokens_decode_cuda(const uint16_t* d_tokens, uint64_t num_tokens, uint32_t dominant, uint32_t alphabet,
                            uint16_t* d_codes, uint64_t n, uint32_t* d_corrupt, cudaStream_t stream);

}  // namespace gsz::encode
