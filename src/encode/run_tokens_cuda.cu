// Run tokens on the GPU (see run_tokens_cuda.hpp).
#include "encode/run_tokens_cuda.hpp"

#include "runtime/cuda/cuda_check.hpp"

#include <cub/device/device_scan.cuh>
#include <thrust/iterator/transform_iterator.h>

namespace gsz::encode {
namespace {

constexpr int kThreads = 256;

// Calls f(code) for the codes of segment s in order.  Segments start at
// multiples of 2 KiB, so the full ones load 16 bytes (8 codes) at a time.
template <class F>
__device__ void for_segment_codes(const uint16_t* __restrict__ codes, uint64_t n, uint64_t s, F&& f) {
    const uint64_t begin = s * kRunSegment;
    const uint64_t end = min(n, begin + kRunSegment);
    if (end - begin == kRunSegment && (reinterpret_cast<uintptr_t>(codes) & 15) == 0) {
        const uint4* v = reinterpret_cast<const uint4*>(codes + begin);
        for (uint32_t k = 0; k < kRunSegment / 8; ++k) {
            const uint4 q = __ldg(v + k);
            const uint32_t w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                f(w[j] & 0xFFFFu);
                f(w[j] >> 16);
            }
        }
        return;
    }
    for (uint64_t i = begin; i < end; ++i) f(codes[i]);
}

__global__ void __launch_bounds__(kThreads)
run_count_kernel(const uint16_t* __restrict__ codes, uint64_t n, uint64_t segments, uint32_t dominant,
                 uint32_t alphabet, uint64_t* __restrict__ counts) {
    const uint64_t s = blockIdx.x * uint64_t{kThreads} + threadIdx.x;
    if (s >= segments) return;
    RunTokenizer tz{dominant, alphabet};
    auto none = [](uint16_t) {};
    for_segment_codes(codes, n, s, [&](uint32_t c) { tz.push(c, none); });
    if (tz.run) tz.flush(none);
    counts[s] = tz.tokens;
}

__global__ void __launch_bounds__(kThreads)
run_write_kernel(const uint16_t* __restrict__ codes, uint64_t n, uint64_t segments, uint32_t dominant,
                 uint32_t alphabet, const uint64_t* __restrict__ offsets, uint16_t* __restrict__ tokens) {
    const uint64_t s = blockIdx.x * uint64_t{kThreads} + threadIdx.x;
    if (s >= segments) return;
    RunTokenizer tz{dominant, alphabet};
    uint16_t* out = tokens + offsets[s];
    auto emit = [&](uint16_t t) { *out++ = t; };
    for_segment_codes(codes, n, s, [&](uint32_t c) { tz.push(c, emit); });
    if (tz.run) tz.flush(emit);
}

// Token length for the scan; a token outside the alphabet counts as n + 1
// codes, so the sum cannot come out right.
struct TokenLength {
    uint32_t alphabet;
    uint64_t too_long;
    __device__ uint64_t operator()(uint16_t t) const {
        return t < alphabet + kRunClasses ? uint64_t{run_token_length(t, alphabet)} : too_long;
    }
};

__global__ void __launch_bounds__(kThreads)
run_expand_kernel(const uint16_t* __restrict__ tokens, const uint64_t* __restrict__ ends, uint64_t num_tokens,
                  uint32_t dominant, uint32_t alphabet, uint16_t* __restrict__ codes, uint64_t n,
                  uint32_t* __restrict__ corrupt) {
    const uint64_t i = blockIdx.x * uint64_t{kThreads} + threadIdx.x;
    if (i >= num_tokens) return;
    const uint32_t t = tokens[i];
    const uint64_t end = ends[i];
    // Ends only grow, so the last one decides whether they add up to n.
    if (end > n || (i == num_tokens - 1 && end != n) || t >= alphabet + kRunClasses) {
        *corrupt = 1;
        return;
    }
    if (t < alphabet) {
        codes[end - 1] = static_cast<uint16_t>(t);
        return;
    }
    const uint32_t len = run_token_length(t, alphabet);
    for (uint64_t k = end - len; k < end; ++k) codes[k] = static_cast<uint16_t>(dominant);
}

unsigned blocks_for(uint64_t items) { return static_cast<unsigned>((items + kThreads - 1) / kThreads); }

}  // namespace

uint64_t run_tokens_encode_cuda(const uint16_t* d_codes, uint64_t n, uint32_t dominant, uint32_t alphabet,
                                cuda::DeviceBuffer<uint16_t>& d_tokens, cudaStream_t stream) {
    const uint64_t segments = (n + kRunSegment - 1) / kRunSegment;
    cuda::DeviceBuffer<uint64_t> offsets(segments + 1, stream);
    GSZ_CUDA(cudaMemsetAsync(offsets.data() + segments, 0, sizeof(uint64_t), stream));
    if (segments) {
        run_count_kernel<<<blocks_for(segments), kThreads, 0, stream>>>(d_codes, n, segments, dominant, alphabet,
                                                                        offsets.data());
        GSZ_CUDA_LAUNCHED("run tokens");
    }
    size_t temp_bytes = 0;
    GSZ_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, offsets.data(), offsets.data(), segments + 1, stream));
    cuda::DeviceBuffer<uint8_t> temp(temp_bytes, stream);
    GSZ_CUDA(cub::DeviceScan::ExclusiveSum(temp.data(), temp_bytes, offsets.data(), offsets.data(), segments + 1,
                                           stream));
    uint64_t total = 0;
    GSZ_CUDA(cudaMemcpyAsync(&total, offsets.data() + segments, sizeof total, cudaMemcpyDeviceToHost, stream));
    GSZ_CUDA(cudaStreamSynchronize(stream));
    d_tokens.allocate(total, stream);
    if (segments) {
        run_write_kernel<<<blocks_for(segments), kThreads, 0, stream>>>(d_codes, n, segments, dominant, alphabet,
                                                                        offsets.data(), d_tokens.data());
        GSZ_CUDA_LAUNCHED("run tokens");
    }
    return total;
}

void run_tokens_decode_cuda(const uint16_t* d_tokens, uint64_t num_tokens, uint32_t dominant, uint32_t alphabet,
                            uint16_t* d_codes, uint64_t n, uint32_t* d_corrupt, cudaStream_t stream) {
    if (num_tokens == 0) {
        if (n != 0) GSZ_CUDA(cudaMemsetAsync(d_corrupt, 1, 1, stream));
        return;
    }
    cuda::DeviceBuffer<uint64_t> ends(num_tokens, stream);
    const auto lengths = thrust::make_transform_iterator(d_tokens, TokenLength{alphabet, n + 1});
    size_t temp_bytes = 0;
    GSZ_CUDA(cub::DeviceScan::InclusiveSum(nullptr, temp_bytes, lengths, ends.data(), num_tokens, stream));
    cuda::DeviceBuffer<uint8_t> temp(temp_bytes, stream);
    GSZ_CUDA(cub::DeviceScan::InclusiveSum(temp.data(), temp_bytes, lengths, ends.data(), num_tokens, stream));
    run_expand_kernel<<<blocks_for(num_tokens), kThreads, 0, stream>>>(d_tokens, ends.data(), num_tokens, dominant,
                                                                       alphabet, d_codes, n, d_corrupt);
    GSZ_CUDA_LAUNCHED("run tokens");
}

}  // namespace gsz::encode
