// Run tokens on the GPU (see run_tokens_cuda.hpp).
#include "encode/run_tokens_cuda.hpp"

#include "runtime/cuda/cuda_check.hpp"
#include "runtime/status.hpp"

#include <cub/device/device_scan.cuh>
#include <thrust/execution_policy.h>
#include <thrust/fill.h>
#include <thrust/iterator/transform_iterator.h>

namespace gsz::encode {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr uint32_t kLaneCodes = kRunSegment / 32;  // 32 codes per lane
constexpr unsigned kFull = 0xFFFFFFFFu;

// One warp per segment, each lane 32 consecutive codes: coalesced loads and a
// warp-wide view of the runs that cross lanes.  A run is tokenized by the lane
// where it ends (its next code is not the dominant one, or the segment ends
// there), which starts with the dominant codes carried in from the lanes
// before it: exactly the tokens of the serial per-segment loop.
struct LaneRun {
    uint32_t codes[kLaneCodes / 2];  // two codes per word, the first in the low half
    uint32_t count = 0;              // codes of this lane inside the segment (0..32)
    bool last = false;               // the lane holding the segment's last code
    uint32_t carry = 0;              // dominant codes pending from the lanes before

    __device__ uint32_t code(uint32_t i) const { return (codes[i / 2] >> (16 * (i & 1))) & 0xFFFFu; }
};

__device__ LaneRun load_lane(const uint16_t* __restrict__ codes, uint64_t n, uint64_t s, uint32_t dominant,
                             int lane) {
    LaneRun r;
    const uint64_t seg_begin = s * kRunSegment;
    const uint32_t seg_count = static_cast<uint32_t>(min(uint64_t{kRunSegment}, n - seg_begin));
    const uint32_t lb = lane * kLaneCodes;
    r.count = lb < seg_count ? min(kLaneCodes, seg_count - lb) : 0;
    r.last = r.count > 0 && lb + r.count == seg_count;
    const uint16_t* p = codes + seg_begin + lb;
    if (r.count == kLaneCodes && (reinterpret_cast<uintptr_t>(p) & 15) == 0) {
        const uint4* v = reinterpret_cast<const uint4*>(p);
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const uint4 q = __ldg(v + k);
            r.codes[4 * k + 0] = q.x;
            r.codes[4 * k + 1] = q.y;
            r.codes[4 * k + 2] = q.z;
            r.codes[4 * k + 3] = q.w;
        }
    } else {
#pragma unroll
        for (uint32_t i = 0; i < kLaneCodes / 2; ++i) {
            const uint32_t lo = 2 * i < r.count ? p[2 * i] : 0u, hi = 2 * i + 1 < r.count ? p[2 * i + 1] : 0u;
            r.codes[i] = lo | (hi << 16);
        }
    }
    // This lane as a function of the run coming in: all dominant adds 32,
    // anything else replaces it by the lane's trailing run.
    uint32_t trail = 0;
    for (uint32_t i = r.count; i-- > 0 && r.code(i) == dominant;) ++trail;
    uint32_t adds = r.count == kLaneCodes && trail == kLaneCodes, value = adds ? kLaneCodes : trail;
    // Inclusive scan of the composition (later lanes applied after earlier ones).
    for (int d = 1; d < 32; d <<= 1) {
        const uint32_t prev_adds = __shfl_up_sync(kFull, adds, d), prev_value = __shfl_up_sync(kFull, value, d);
        if (lane >= d && adds) {
            value += prev_value;
            adds = prev_adds;
        }
    }
    const uint32_t before = __shfl_up_sync(kFull, value, 1);
    r.carry = lane == 0 ? 0 : before;
    return r;
}

// Tokens of this lane through emit; returns their number.
template <class Emit>
__device__ uint32_t lane_tokens(const LaneRun& r, uint32_t dominant, uint32_t alphabet, Emit&& emit) {
    if (r.count == 0) return 0;
    RunTokenizer tz{dominant, alphabet};
    tz.run = r.carry;
    for (uint32_t i = 0; i < r.count; ++i) tz.push(r.code(i), emit);
    if (r.last && tz.run) tz.flush(emit);
    return tz.tokens;
}

// Of every `stride`-th segment (`sampled` of them): its tokens into
// counts[s] (where given) and with `digits` the binary digits of the runs
// the tokens spell (RunDigits): with the codes' histogram that is the tokens'.
__global__ void __launch_bounds__(kThreads)
run_count_kernel(const uint16_t* __restrict__ codes, uint64_t n, uint64_t sampled, uint32_t stride, uint32_t dominant,
                 uint32_t alphabet, uint64_t* __restrict__ counts, unsigned long long* __restrict__ digits) {
    __shared__ uint32_t s_digits[kRunClasses + 1];
    if (digits && threadIdx.x <= kRunClasses) s_digits[threadIdx.x] = 0;
    if (digits) __syncthreads();
    const uint64_t j = blockIdx.x * uint64_t{kWarps} + threadIdx.x / 32;
    if (j < sampled) {  // whole warps take this branch together
        const uint64_t s = j * stride;
        const int lane = threadIdx.x % 32;
        const LaneRun r = load_lane(codes, n, s, dominant, lane);
        // A lane flushes at most 32 runs: a 6-bit field per digit holds its count
        // (registers, where an array indexed by the token would go to local memory).
        unsigned long long fields = 0;
        uint32_t odd = 0;
        uint32_t t = lane_tokens(r, dominant, alphabet, [&](uint16_t token) {
            if (token >= alphabet)
                fields += 1ull << (6 * (token - alphabet));
            else if (token == dominant)
                ++odd;
        });
        for (int d = 16; d > 0; d >>= 1) t += __shfl_down_sync(kFull, t, d);
        if (lane == 0 && counts) counts[s] = t;
        if (digits) {
#pragma unroll
            for (uint32_t k = 0; k <= kRunClasses; ++k) {
                uint32_t c = k < kRunClasses ? static_cast<uint32_t>(fields >> (6 * k)) & 63u : odd;
                for (int d = 16; d > 0; d >>= 1) c += __shfl_down_sync(kFull, c, d);
                if (lane == 0 && c) atomicAdd(&s_digits[k], c);
            }
        }
    }
    if (!digits) return;
    __syncthreads();
    if (threadIdx.x <= kRunClasses && s_digits[threadIdx.x])
        atomicAdd(digits + threadIdx.x, static_cast<unsigned long long>(s_digits[threadIdx.x]));
}

__global__ void __launch_bounds__(kThreads)
run_write_kernel(const uint16_t* __restrict__ codes, uint64_t n, uint64_t segments, uint32_t dominant,
                 uint32_t alphabet, const uint64_t* __restrict__ offsets, uint16_t* __restrict__ tokens) {
    __shared__ uint16_t staged[kWarps][kRunSegment];
    const uint64_t s = blockIdx.x * uint64_t{kWarps} + threadIdx.x / 32;
    if (s >= segments) return;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const LaneRun r = load_lane(codes, n, s, dominant, lane);
    const uint32_t mine = lane_tokens(r, dominant, alphabet, [](uint16_t) {});
    uint32_t at = mine;  // inclusive scan of the lanes' token counts
    for (int d = 1; d < 32; d <<= 1) {
        const uint32_t v = __shfl_up_sync(kFull, at, d);
        if (lane >= d) at += v;
    }
    const uint32_t total = __shfl_sync(kFull, at, 31);
    uint16_t* out = staged[warp] + (at - mine);
    lane_tokens(r, dominant, alphabet, [&](uint16_t t) { *out++ = t; });
    __syncwarp();
    uint16_t* dst = tokens + offsets[s];
    for (uint32_t j = lane; j < total; j += 32) dst[j] = staged[warp][j];
}

unsigned blocks_for(uint64_t items) { return static_cast<unsigned>((items + kThreads - 1) / kThreads); }
unsigned warp_blocks_for(uint64_t segments) { return static_cast<unsigned>((segments + kWarps - 1) / kWarps); }

// Token length for the scan; a token outside the alphabet counts as n + 1
// codes, so the sum cannot come out right.
struct TokenLength {
    uint32_t alphabet;
    uint64_t too_long;
    __device__ uint64_t operator()(uint16_t t) const {
        return t < alphabet + kRunClasses ? uint64_t{run_token_length(t, alphabet)} : too_long;
    }
};

// After the codes are filled with the dominant one, each literal token
// writes its code at its place; run tokens write nothing.  (A thread copying
// its run code by code took 0.6 ms on etopoT at rel 1e-2: runs of thousands,
// one thread each, 2-byte stores.)
__global__ void __launch_bounds__(kThreads)
run_place_literals_kernel(const uint16_t* __restrict__ tokens, const uint64_t* __restrict__ ends, uint64_t num_tokens,
                          uint32_t alphabet, uint16_t* __restrict__ codes, uint64_t n,
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
    if (t < alphabet) codes[end - 1] = static_cast<uint16_t>(t);
}

}  // namespace

std::vector<uint64_t> run_tokens_count_cuda(const uint16_t* d_codes, uint64_t n, uint32_t dominant, uint32_t alphabet,
                                            std::span<const uint64_t> code_histogram, RunTokenPlan& plan,
                                            cudaStream_t stream) {
    GSZ_CHECK(alphabet <= kRunMaxAlphabet && dominant < alphabet && code_histogram.size() == alphabet,
              GSZ_STATUS_INTERNAL, "run tokens: alphabet %u, dominant code %u, histogram of %zu", alphabet, dominant,
              code_histogram.size());
    const uint64_t segments = (n + kRunSegment - 1) / kRunSegment;
    // [segments + 1] token counts, scanned in place into offsets, then the digits.
    plan.offsets.allocate(segments + 1 + kRunClasses + 1, stream);
    uint64_t* digits = plan.offsets.data() + segments + 1;
    GSZ_CUDA(cudaMemsetAsync(plan.offsets.data() + segments, 0, (kRunClasses + 2) * sizeof(uint64_t), stream));
    if (segments) {
        run_count_kernel<<<warp_blocks_for(segments), kThreads, 0, stream>>>(
            d_codes, n, segments, 1, dominant, alphabet, plan.offsets.data(),
            reinterpret_cast<unsigned long long*>(digits));
        GSZ_CUDA_LAUNCHED("run tokens");
    }
    size_t temp_bytes = 0;
    GSZ_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, plan.offsets.data(), plan.offsets.data(), segments + 1,
                                           stream));
    cuda::DeviceBuffer<uint8_t> temp(temp_bytes, stream);
    GSZ_CUDA(cub::DeviceScan::ExclusiveSum(temp.data(), temp_bytes, plan.offsets.data(), plan.offsets.data(),
                                           segments + 1, stream));
    uint64_t back[kRunClasses + 2];  // the total, then the digits
    GSZ_CUDA(cudaMemcpyAsync(back, plan.offsets.data() + segments, sizeof back, cudaMemcpyDeviceToHost, stream));
    GSZ_CUDA(cudaStreamSynchronize(stream));
    plan.num_tokens = back[0];
    plan.segments = segments;
    RunDigits d;
    std::copy(back + 1, back + 2 + kRunClasses, d.begin());
    return run_token_histogram(code_histogram, dominant, d);
}

void run_digits_cuda(const uint16_t* d_codes, uint64_t n, uint32_t dominant, uint32_t alphabet,
                     uint32_t segment_stride, uint64_t* d_digits, cudaStream_t stream, bool zero) {
    GSZ_CHECK(alphabet <= kRunMaxAlphabet && dominant < alphabet && segment_stride >= 1, GSZ_STATUS_INTERNAL,
              "run digits: alphabet %u, dominant code %u, stride %u", alphabet, dominant, segment_stride);
    if (zero) GSZ_CUDA(cudaMemsetAsync(d_digits, 0, (kRunClasses + 1) * sizeof(uint64_t), stream));
    const uint64_t segments = (n + kRunSegment - 1) / kRunSegment;
    const uint64_t sampled = (segments + segment_stride - 1) / segment_stride;
    if (sampled == 0) return;
    run_count_kernel<<<warp_blocks_for(sampled), kThreads, 0, stream>>>(
        d_codes, n, sampled, segment_stride, dominant, alphabet, nullptr, reinterpret_cast<unsigned long long*>(d_digits));
    GSZ_CUDA_LAUNCHED("run digits");
}

void run_tokens_write_cuda(const uint16_t* d_codes, uint64_t n, uint32_t dominant, uint32_t alphabet,
                           const RunTokenPlan& plan, cuda::DeviceBuffer<uint16_t>& d_tokens, cudaStream_t stream) {
    d_tokens.allocate(plan.num_tokens, stream);
    if (plan.segments) {
        run_write_kernel<<<warp_blocks_for(plan.segments), kThreads, 0, stream>>>(
            d_codes, n, plan.segments, dominant, alphabet, plan.offsets.data(), d_tokens.data());
        GSZ_CUDA_LAUNCHED("run tokens");
    }
}

uint64_t run_tokens_encode_cuda(const uint16_t* d_codes, uint64_t n, uint32_t dominant, uint32_t alphabet,
                                cuda::DeviceBuffer<uint16_t>& d_tokens, cudaStream_t stream) {
    const std::vector<uint64_t> no_codes(alphabet, 0);
    RunTokenPlan plan;
    run_tokens_count_cuda(d_codes, n, dominant, alphabet, no_codes, plan, stream);
    run_tokens_write_cuda(d_codes, n, dominant, alphabet, plan, d_tokens, stream);
    return plan.num_tokens;
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
    thrust::fill_n(thrust::cuda::par_nosync.on(stream), d_codes, n, static_cast<uint16_t>(dominant));
    run_place_literals_kernel<<<blocks_for(num_tokens), kThreads, 0, stream>>>(d_tokens, ends.data(), num_tokens,
                                                                               alphabet, d_codes, n, d_corrupt);
    GSZ_CUDA_LAUNCHED("run tokens");
}

}  // namespace gsz::encode
