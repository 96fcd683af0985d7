// The context-modelled rANS stage on the GPU (see ans_cuda.hpp).  One thread
// per lane, as one CPU iteration per lane: the per-item arithmetic is
// ans_math.hpp's, so states and words match the CPU's bit for bit.
#include "encode/ans_cuda.hpp"

#include "runtime/cuda/cuda_check.hpp"

#include <cub/device/device_scan.cuh>

#include <vector>

namespace gsz::encode {
namespace {

constexpr int kHistThreads = 256;
constexpr uint32_t kHistCodesPerThread = 64;  // consecutive codes: one cursor seek per 64
constexpr int kLaneThreads = 128;

// The tables as the kernels read them: packed entries in shared memory.
struct DeviceTables {
    const uint32_t* entry;  // [context * kAnsAlphabet + symbol]
    uint32_t contexts;
};

__device__ __forceinline__ void load_entries(const uint32_t* __restrict__ d_entry, uint32_t count, uint32_t* s_entry) {
    for (uint32_t i = threadIdx.x; i < count; i += blockDim.x) s_entry[i] = d_entry[i];
    __syncthreads();
}

// Counts (context, symbol) over runs of 64 consecutive codes per thread; a
// bin repeated back to back (the dominant code's runs) is added once.
__global__ void __launch_bounds__(kHistThreads)
    ans_histogram_kernel(const uint16_t* __restrict__ codes, uint64_t n, uint32_t radius, AnsCursor shape,
                         uint32_t bins, unsigned long long* __restrict__ d_hist, uint32_t* __restrict__ d_bad) {
    extern __shared__ uint32_t s_hist[];
    for (uint32_t i = threadIdx.x; i < bins; i += blockDim.x) s_hist[i] = 0;
    __syncthreads();
    const uint64_t begin = (uint64_t{blockIdx.x} * blockDim.x + threadIdx.x) * kHistCodesPerThread;
    bool bad = false;
    if (begin < n) {
        const uint64_t end = min(n, begin + kHistCodesPerThread);
        AnsCursor cur = shape;
        if (cur.levels > 1) cur.seek(begin);
        const uint32_t limit = 2 * radius - 1;
        uint32_t prev_class = begin == 0 ? 0u : ans_class_of(min(static_cast<uint32_t>(codes[begin - 1]), limit), radius);
        uint32_t run_bin = 0xFFFFFFFFu, run = 0;
        for (uint64_t i = begin; i < end; ++i) {
            const uint32_t raw = codes[i];
            bad |= raw > limit;
            const uint32_t code = min(raw, limit);
            const uint32_t level = cur.level();
            if (cur.levels > 1) cur.next();
            const uint32_t bin = (level * kAnsClasses + prev_class) * kAnsAlphabet + ans_symbol_of(code, radius).symbol;
            if (bin != run_bin) {
                if (run) atomicAdd(&s_hist[run_bin], run);
                run_bin = bin;
                run = 0;
            }
            ++run;
            prev_class = ans_class_of(code, radius);
        }
        if (run) atomicAdd(&s_hist[run_bin], run);
    }
    if (bad) *d_bad = 1;
    __syncthreads();
    for (uint32_t i = threadIdx.x; i < bins; i += blockDim.x)
        if (s_hist[i]) atomicAdd(d_hist + i, static_cast<unsigned long long>(s_hist[i]));
}

// One lane, last code first, as ans_encode_cpu's loop.  Pass 1 (words ==
// nullptr) counts the words and keeps the final state; pass 2 writes each
// word at its decoding position.
__global__ void __launch_bounds__(kLaneThreads)
    ans_encode_kernel(const uint32_t* __restrict__ d_entry, uint32_t num_entries, const uint16_t* __restrict__ codes,
                      uint64_t n, uint32_t radius, AnsCursor shape, uint32_t lane_symbols, uint64_t lanes,
                      uint32_t* __restrict__ lane_state, uint32_t* __restrict__ lane_words,
                      uint64_t* __restrict__ lane_offset, uint16_t* __restrict__ words) {
    extern __shared__ uint32_t s_entry[];
    load_entries(d_entry, num_entries, s_entry);
    const uint64_t lane = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
    if (lane >= lanes) return;
    const uint64_t begin = lane * lane_symbols;
    const uint64_t end = min(n, begin + lane_symbols);
    AnsCursor cur = shape;
    cur.seek(end - 1);
    uint32_t x = kAnsStateLow;
    uint64_t emitted = 0;
    uint64_t out = 0;
    if (words) out = lane_offset[lane + 1];  // words are written from the lane's end backwards
    uint16_t word;
    uint32_t next_code = codes[end - 1];
    for (uint64_t i = end; i-- > begin;) {
        const uint32_t code = next_code;
        const AnsSymbol s = ans_symbol_of(code, radius);
        uint32_t cls = kAnsStartClass;
        if (i > begin) {
            next_code = codes[i - 1];
            cls = ans_class_of(next_code, radius);
        }
        const uint32_t e = s_entry[(cur.level() * kAnsClasses + cls) * kAnsAlphabet + s.symbol];
        cur.prev();
        if (s.extra_bits && ans_encode_put(x, 1, s.extra, s.extra_bits, &word)) {
            ++emitted;
            if (words) words[--out] = word;
        }
        if (ans_encode_put(x, e & 0xFFFFu, e >> 16, kAnsScaleBits, &word)) {
            ++emitted;
            if (words) words[--out] = word;
        }
    }
    if (!words) {
        lane_state[lane] = x;
        lane_words[lane] = static_cast<uint32_t>(emitted);  // <= 2 per code
        lane_offset[lane] = emitted;
    }
}

// One lane, first code first, as ans_decode_cpu's loop.
__global__ void __launch_bounds__(kLaneThreads)
    ans_decode_kernel(const uint32_t* __restrict__ d_entry, uint32_t num_entries, const uint8_t* __restrict__ lut,
                      const uint16_t* __restrict__ words, const uint32_t* __restrict__ lane_state,
                      const uint64_t* __restrict__ lane_offset, uint64_t n, uint32_t radius, AnsCursor shape,
                      uint32_t lane_symbols, uint64_t lanes, uint16_t* __restrict__ codes,
                      uint32_t* __restrict__ d_corrupt) {
    extern __shared__ uint32_t s_entry[];
    load_entries(d_entry, num_entries, s_entry);
    const uint64_t lane = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
    if (lane >= lanes) return;
    const uint64_t begin = lane * lane_symbols;
    const uint64_t end = min(n, begin + lane_symbols);
    uint64_t pos = lane_offset[lane];
    const uint64_t stop = lane_offset[lane + 1];
    uint32_t x = lane_state[lane];
    uint32_t cls = kAnsStartClass;
    AnsCursor cur = shape;
    cur.seek(begin);
    bool ok = true;
    const auto refill = [&] {  // false: the lane ran out of words
        if (!ans_decode_needs_word(x)) return true;
        if (pos == stop) return false;
        x = x << 16 | __ldg(words + pos++);
        return true;
    };
    for (uint64_t i = begin; i < end; ++i) {
        const uint32_t ctx = cur.level() * kAnsClasses + cls;
        cur.next();
        const uint32_t s = __ldg(lut + ctx * kAnsScale + (x & (kAnsScale - 1)));
        if (s == 0xFF) {
            ok = false;
            break;
        }
        const uint32_t e = s_entry[ctx * kAnsAlphabet + s];
        x = ans_decode_advance(x, e & 0xFFFFu, e >> 16, kAnsScaleBits);
        if (!refill()) {
            ok = false;
            break;
        }
        uint32_t extra = 0;
        if (const uint32_t k = ans_extra_bits(s)) {
            extra = x & ((1u << k) - 1u);
            x >>= k;
            if (!refill()) {
                ok = false;
                break;
            }
        }
        const uint32_t code = ans_code_of(s, extra, radius);
        if (code == kAnsBadCode) {
            ok = false;
            break;
        }
        codes[i] = static_cast<uint16_t>(code);
        cls = ans_class_of(code, radius);
    }
    if (!(ok && x == kAnsStateLow && pos == stop)) *d_corrupt = 1;
}

AnsCursor cursor_of(const AnsContextShape& shape) { return shape.cursor(); }

uint32_t grid_of(uint64_t items, uint32_t per_block) {
    return static_cast<uint32_t>((items + per_block - 1) / per_block);
}

}  // namespace

void ans_histogram_cuda(const uint16_t* d_codes, uint64_t n, uint32_t radius, const AnsContextShape& shape,
                        uint64_t* d_hist, uint32_t* d_bad_code, cudaStream_t stream) {
    const uint32_t bins = shape.num_contexts() * kAnsAlphabet;
    GSZ_CUDA(cudaMemsetAsync(d_hist, 0, bins * sizeof(uint64_t), stream));
    if (n == 0) return;
    const uint32_t blocks = grid_of((n + kHistCodesPerThread - 1) / kHistCodesPerThread, kHistThreads);
    ans_histogram_kernel<<<blocks, kHistThreads, bins * sizeof(uint32_t), stream>>>(
        d_codes, n, radius, cursor_of(shape), bins, reinterpret_cast<unsigned long long*>(d_hist), d_bad_code);
    GSZ_CUDA_LAUNCHED("ans_histogram_kernel");
}

void ans_encode_cuda(const AnsTables& tables, const uint16_t* d_codes, uint64_t n, uint32_t radius,
                     const AnsContextShape& shape, uint32_t lane_symbols, AnsDeviceStream& out, cudaStream_t stream) {
    out.num_symbols = n;
    out.lane_symbols = lane_symbols;
    out.num_lanes = n / lane_symbols + (n % lane_symbols != 0);
    const uint64_t lanes = out.num_lanes;
    const uint32_t entries = static_cast<uint32_t>(tables.entry.size());
    cuda::DeviceBuffer<uint32_t> d_entry(entries, stream);
    GSZ_CUDA(cudaMemcpyAsync(d_entry.data(), tables.entry.data(), entries * sizeof(uint32_t), cudaMemcpyHostToDevice,
                             stream));
    out.lane_state.allocate(lanes, stream);
    out.lane_words.allocate(lanes, stream);
    out.lane_word_offset.allocate(lanes + 1, stream);
    GSZ_CUDA(cudaMemsetAsync(out.lane_word_offset.data() + lanes, 0, sizeof(uint64_t), stream));
    const size_t smem = entries * sizeof(uint32_t);
    const uint32_t blocks = grid_of(lanes, kLaneThreads);
    ans_encode_kernel<<<blocks, kLaneThreads, smem, stream>>>(d_entry.data(), entries, d_codes, n, radius,
                                                              cursor_of(shape), lane_symbols, lanes,
                                                              out.lane_state.data(), out.lane_words.data(),
                                                              out.lane_word_offset.data(), nullptr);
    GSZ_CUDA_LAUNCHED("ans_encode_kernel (count)");
    size_t temp_bytes = 0;
    GSZ_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, out.lane_word_offset.data(), lanes + 1, stream));
    cuda::DeviceBuffer<uint8_t> temp(temp_bytes, stream);
    GSZ_CUDA(cub::DeviceScan::ExclusiveSum(temp.data(), temp_bytes, out.lane_word_offset.data(), lanes + 1, stream));
    GSZ_CUDA(cudaMemcpyAsync(&out.num_words, out.lane_word_offset.data() + lanes, sizeof(uint64_t),
                             cudaMemcpyDeviceToHost, stream));
    GSZ_CUDA(cudaStreamSynchronize(stream));
    out.words.allocate(out.num_words, stream);
    if (out.num_words == 0) return;
    ans_encode_kernel<<<blocks, kLaneThreads, smem, stream>>>(d_entry.data(), entries, d_codes, n, radius,
                                                              cursor_of(shape), lane_symbols, lanes,
                                                              out.lane_state.data(), out.lane_words.data(),
                                                              out.lane_word_offset.data(), out.words.data());
    GSZ_CUDA_LAUNCHED("ans_encode_kernel (write)");
}

void ans_decode_cuda(const AnsTables& tables, const uint16_t* d_words, const uint32_t* d_lane_state,
                     const uint64_t* d_lane_word_offset, uint64_t n, uint32_t lane_symbols, uint32_t radius,
                     const AnsContextShape& shape, uint16_t* d_codes, uint32_t* d_corrupt, cudaStream_t stream) {
    if (n == 0) return;
    const uint64_t lanes = n / lane_symbols + (n % lane_symbols != 0);
    const uint32_t entries = static_cast<uint32_t>(tables.entry.size());
    const std::vector<uint8_t> lut = ans_decode_lut(tables);
    cuda::DeviceBuffer<uint32_t> d_entry(entries, stream);
    cuda::DeviceBuffer<uint8_t> d_lut(lut.size(), stream);
    GSZ_CUDA(cudaMemcpyAsync(d_entry.data(), tables.entry.data(), entries * sizeof(uint32_t), cudaMemcpyHostToDevice,
                             stream));
    GSZ_CUDA(cudaMemcpyAsync(d_lut.data(), lut.data(), lut.size(), cudaMemcpyHostToDevice, stream));
    ans_decode_kernel<<<grid_of(lanes, kLaneThreads), kLaneThreads, entries * sizeof(uint32_t), stream>>>(
        d_entry.data(), entries, d_lut.data(), d_words, d_lane_state, d_lane_word_offset, n, radius,
        cursor_of(shape), lane_symbols, lanes, d_codes, d_corrupt);
    GSZ_CUDA_LAUNCHED("ans_decode_kernel");
    // The host tables must outlive the copies.
    GSZ_CUDA(cudaStreamSynchronize(stream));
}

}  // namespace gsz::encode
