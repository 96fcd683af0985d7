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
constexpr int kLaneThreads = 64;  // few lanes at low bit rates: spread them over every SM

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
        uint32_t zeros = 0;  // residual-0 codes just before codes[begin], up to kAnsLookBack
        while (zeros < kAnsLookBack && begin > zeros && codes[begin - zeros - 1] == radius) ++zeros;
        uint32_t run_bin = 0xFFFFFFFFu, run = 0;
        for (uint64_t i = begin; i < end; ++i) {
            const uint32_t raw = codes[i];
            bad |= raw > limit;
            const uint32_t code = min(raw, limit);
            const uint32_t level = cur.level();
            if (cur.levels > 1) cur.next();
            const uint32_t bin = (level * kAnsClasses + ans_context_class(i, zeros, prev_class)) * kAnsAlphabet +
                                 ans_symbol_of(code, radius).symbol;
            if (bin != run_bin) {
                if (run) atomicAdd(&s_hist[run_bin], run);
                run_bin = bin;
                run = 0;
            }
            ++run;
            prev_class = ans_class_of(code, radius);
            zeros = code == radius ? min(zeros + 1, kAnsLookBack) : 0u;
        }
        if (run) atomicAdd(&s_hist[run_bin], run);
    }
    if (bad) *d_bad = 1;
    __syncthreads();
    for (uint32_t i = threadIdx.x; i < bins; i += blockDim.x)
        if (s_hist[i]) atomicAdd(d_hist + i, static_cast<unsigned long long>(s_hist[i]));
}

// Division by a frequency (1..4096) as a multiply: q = umulhi64(x, ceil(2^64
// / f)) is exact for every 32-bit x (the error term x * e * f < 2^56 < 2^64),
// so the words equal the CPU's, which divides.
struct EncodeEntry {
    uint32_t freq, cum;
    unsigned long long rcp;  // ceil(2^64 / freq), 0 for freq 1
};

__device__ __forceinline__ uint32_t divide(uint32_t x, const EncodeEntry& e) {
    return e.freq == 1 ? x : static_cast<uint32_t>(__umul64hi(x, e.rcp));
}

// The rANS encoder step of ans_encode_put, with the division above.
__device__ __forceinline__ bool encode_put(uint32_t& x, const EncodeEntry& e, uint16_t& word) {
    const bool emit = x >= (static_cast<unsigned long long>(e.freq) << (32 - kAnsScaleBits));
    if (emit) {
        word = static_cast<uint16_t>(x & 0xFFFFu);
        x >>= 16;
    }
    const uint32_t q = divide(x, e);
    x = (q << kAnsScaleBits) + (x - q * e.freq) + e.cum;
    return emit;
}

// Words of one lane, written backwards from the end of its slot (2 words per
// code at most) four at a time: emission order w0, w1, ... lands as ... w1 w0,
// the decoding order.
struct SlotWriter {
    uint16_t* end;   // one past the next word's position
    unsigned long long pack = 0;
    uint32_t held = 0;

    __device__ void put(uint16_t w) {
        pack = pack << 16 | w;
        if (++held == 4) {
            end -= 4;
            *reinterpret_cast<unsigned long long*>(end) = pack;
            held = 0;
        }
    }
    __device__ void flush() {
        for (uint32_t j = 0; j < held; ++j) end[-1 - static_cast<int>(j)] = static_cast<uint16_t>(pack >> (16 * (held - 1 - j)));
    }
};

// One lane, last code first, as ans_encode_cpu's loop, into its slot; codes
// are read eight at a time when the array is 16-byte aligned.  Levels: the
// contexts depend on the position (interp), else the cursor is skipped.
template <bool Levels>
__global__ void __launch_bounds__(kLaneThreads)
    ans_encode_kernel(const uint32_t* __restrict__ d_entry, uint32_t num_entries, const uint16_t* __restrict__ codes,
                      uint64_t n, uint32_t radius, AnsCursor shape, uint32_t lane_symbols, uint64_t lanes,
                      uint16_t* __restrict__ slots, uint64_t slot_words, uint32_t* __restrict__ lane_state,
                      uint32_t* __restrict__ lane_words, uint64_t* __restrict__ lane_count) {
    extern __shared__ unsigned long long s_enc[];
    EncodeEntry* s_entry = reinterpret_cast<EncodeEntry*>(s_enc);
    for (uint32_t i = threadIdx.x; i < num_entries; i += blockDim.x) {
        const uint32_t e = d_entry[i], f = e & 0xFFFFu;
        s_entry[i] = {f, e >> 16, f > 1 ? ~0ull / f + 1 : 0ull};  // ceil(2^64 / f); exactly 2^64 / f for a power of 2
    }
    __syncthreads();
    const uint64_t lane = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
    if (lane >= lanes) return;
    const uint64_t begin = lane * lane_symbols;
    const uint64_t end = min(n, begin + lane_symbols);
    AnsCursor cur = shape;
    if constexpr (Levels) cur.seek(end - 1);
    uint32_t x = kAnsStateLow;
    uint32_t emitted = 0;
    SlotWriter out{slots + (lane + 1) * slot_words};
    uint16_t word;
    const bool vec = (reinterpret_cast<uintptr_t>(codes) & 15) == 0;
    // Two readers, each holding an aligned group of eight codes in registers:
    // one for the code before i, one for the code kAnsLookBack + 1 before.
    struct GroupReader {
        unsigned long long lo = 0, hi = 0;
        uint64_t group = ~uint64_t{0};
    } near, far;
    const auto code_at = [&](GroupReader& r, uint64_t k) -> uint32_t {
        if (!vec || (k | 7) >= n) return __ldg(codes + k);  // the array's partial last group: one by one
        if ((k & ~uint64_t{7}) != r.group) {
            r.group = k & ~uint64_t{7};
            const ulonglong2 q = __ldg(reinterpret_cast<const ulonglong2*>(codes + r.group));
            r.lo = q.x;
            r.hi = q.y;
        }
        const uint32_t j = static_cast<uint32_t>(k & 7);
        return static_cast<uint32_t>(((j < 4 ? r.lo : r.hi) >> (16 * (j & 3))) & 0xFFFFu);
    };
    // The code at i, the one before it, and a mask of which of the
    // kAnsLookBack codes before i are residual 0 (bit k: codes[i - 1 - k]),
    // inside the lane; shifted down one code per step.
    uint32_t code = code_at(near, end - 1);
    uint32_t before = end - 1 > begin ? code_at(near, end - 2) : 0u;
    uint32_t zmask = 0;
    for (uint32_t k = 0; k < kAnsLookBack && end - 1 - k > begin; ++k)
        zmask |= static_cast<uint32_t>(code_at(far, end - 2 - k) == radius) << k;
    uint64_t i = end;
    while (i-- > begin) {
        const AnsSymbol s = ans_symbol_of(code, radius);
        const uint32_t cls = ans_context_class(i - begin, ans_zeros_in_mask(zmask), ans_class_of(before, radius));
        code = before;
        before = i >= begin + 2 ? code_at(near, i - 2) : 0u;
        zmask = zmask >> 1 |
                (i >= begin + kAnsLookBack + 1 ? static_cast<uint32_t>(code_at(far, i - kAnsLookBack - 1) == radius)
                                              : 0u) << (kAnsLookBack - 1);
        uint32_t level = 0;
        if constexpr (Levels) {
            level = cur.level();
            cur.prev();
        }
        const EncodeEntry e = s_entry[(level * kAnsClasses + cls) * kAnsAlphabet + s.symbol];
        if (s.extra_bits) {  // uniform bits: frequency 1 of 2^k
            if (x >= (1u << (32 - s.extra_bits))) {
                out.put(static_cast<uint16_t>(x & 0xFFFFu));
                x >>= 16;
                ++emitted;
            }
            x = (x << s.extra_bits) + s.extra;
        }
        if (encode_put(x, e, word)) {
            out.put(word);
            ++emitted;
        }
    }
    out.flush();
    lane_state[lane] = x;
    lane_words[lane] = emitted;  // <= 2 per code
    lane_count[lane] = emitted;
}

// A warp per lane: the lane's words, at the end of its slot, to their place.
__global__ void ans_pack_kernel(const uint16_t* __restrict__ slots, uint64_t slot_words,
                                const uint64_t* __restrict__ lane_offset, uint64_t lanes, uint16_t* __restrict__ words) {
    const uint64_t lane = (uint64_t{blockIdx.x} * blockDim.x + threadIdx.x) / 32;
    if (lane >= lanes) return;
    const uint64_t out = lane_offset[lane];
    const uint64_t count = lane_offset[lane + 1] - out;
    const uint16_t* src = slots + (lane + 1) * slot_words - count;
    for (uint64_t k = threadIdx.x & 31; k < count; k += 32) words[out + k] = src[k];
}

// Per context, the first symbol of each 16-slot bucket of the table: the
// decoder starts there and steps forward to the slot's symbol (one step
// at most for most slots).  0xFF: the context has no table.
constexpr uint32_t kBucketShift = 4;
constexpr uint32_t kBuckets = kAnsScale >> kBucketShift;

// One lane, first code first, as ans_decode_cpu's loop; codes are stored
// eight at a time when the output is 16-byte aligned.
template <bool Levels>
__global__ void __launch_bounds__(kLaneThreads)
    ans_decode_kernel(const uint32_t* __restrict__ d_entry, uint32_t num_entries, const uint8_t* __restrict__ bucket,
                      const uint16_t* __restrict__ words, const uint32_t* __restrict__ lane_state,
                      const uint64_t* __restrict__ lane_offset, uint64_t n, uint32_t radius, AnsCursor shape,
                      uint32_t lane_symbols, uint64_t lanes, uint16_t* __restrict__ codes,
                      uint32_t* __restrict__ d_corrupt) {
    extern __shared__ uint32_t s_dec[];
    uint32_t* s_entry = s_dec;
    uint8_t* s_bucket = reinterpret_cast<uint8_t*>(s_dec + num_entries);
    const uint32_t contexts = num_entries / kAnsAlphabet;
    for (uint32_t i = threadIdx.x; i < num_entries; i += blockDim.x) s_entry[i] = d_entry[i];
    for (uint32_t i = threadIdx.x; i < contexts * kBuckets / 4; i += blockDim.x)
        reinterpret_cast<uint32_t*>(s_bucket)[i] = reinterpret_cast<const uint32_t*>(bucket)[i];
    __syncthreads();
    const uint64_t lane = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
    if (lane >= lanes) return;
    const uint64_t begin = lane * lane_symbols;
    const uint64_t end = min(n, begin + lane_symbols);
    uint64_t pos = lane_offset[lane];
    const uint64_t stop = lane_offset[lane + 1];
    uint32_t x = lane_state[lane];
    uint32_t prev_class = 0, zeros = 0;
    AnsCursor cur = shape;
    if constexpr (Levels) cur.seek(begin);
    bool ok = true;
    const auto refill = [&] {  // false: the lane ran out of words
        if (!ans_decode_needs_word(x)) return true;
        if (pos == stop) return false;
        x = x << 16 | __ldg(words + pos++);
        return true;
    };
    // Whole groups of eight codes are stored at once when they are 16-byte
    // aligned (gsz's lanes are multiples of 64 codes); the loop runs on the
    // lane's own 32-bit index.
    const uint32_t count = static_cast<uint32_t>(end - begin);
    uint16_t* out = codes + begin;
    const bool vec = (reinterpret_cast<uintptr_t>(out) & 15) == 0;
    unsigned long long lo = 0, hi = 0;  // the group of eight codes being filled
    uint32_t k = 0;
    for (; k < count; ++k) {
        uint32_t ctx = ans_context_class(k, zeros, prev_class);
        if constexpr (Levels) {
            ctx += cur.level() * kAnsClasses;
            cur.next();
        }
        const uint32_t slot = x & (kAnsScale - 1);
        uint32_t s = s_bucket[ctx * kBuckets + (slot >> kBucketShift)];
        if (s == 0xFF) break;
        const uint32_t* row = s_entry + ctx * kAnsAlphabet;
        uint32_t e = row[s];
        while (slot >= (e >> 16) + (e & 0xFFFFu)) e = row[++s];  // the bucket's symbols are present: ends in range
        x = ans_decode_advance(x, e & 0xFFFFu, e >> 16, kAnsScaleBits);
        if (!refill()) break;
        uint32_t extra = 0;
        if (const uint32_t bits = ans_extra_bits(s)) {
            extra = x & ((1u << bits) - 1u);
            x >>= bits;
            if (!refill()) break;
        }
        const uint32_t code = ans_code_of(s, extra, radius);
        if (code == kAnsBadCode) break;
        prev_class = ans_class_of_symbol(s);
        zeros = s == kAnsZeroSymbol ? min(zeros + 1, kAnsLookBack) : 0u;
        if (!vec) {
            out[k] = static_cast<uint16_t>(code);
            continue;
        }
        const uint32_t j = k & 7;
        if (j < 4)
            lo |= static_cast<unsigned long long>(code) << (16 * j);
        else
            hi |= static_cast<unsigned long long>(code) << (16 * (j - 4));
        if (j == 7) {
            *reinterpret_cast<ulonglong2*>(out + k - 7) = make_ulonglong2(lo, hi);
            lo = hi = 0;
        }
    }
    ok = k == count;
    if (ok && vec)  // the lane's partial last group
        for (uint32_t m = count & ~7u; m < count; ++m) {
            const uint32_t j = m & 7;
            out[m] = static_cast<uint16_t>((j < 4 ? lo : hi) >> (16 * (j & 3)));
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
    // Each lane's slot holds 2 words per code, the most a code can emit,
    // rounded to whole 8-byte stores.
    const uint64_t slot_words = (2 * uint64_t{lane_symbols} + 3) / 4 * 4;
    cuda::DeviceBuffer<uint16_t> slots(lanes * slot_words, stream);
    const auto kernel = shape.levels > 1 ? ans_encode_kernel<true> : ans_encode_kernel<false>;
    const size_t smem = entries * sizeof(EncodeEntry);  // up to 84 KB with 8 levels: opt in above 48 KB
    if (smem > 48 * 1024)
        GSZ_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    kernel<<<grid_of(lanes, kLaneThreads), kLaneThreads, smem, stream>>>(
        d_entry.data(), entries, d_codes, n, radius, cursor_of(shape), lane_symbols, lanes, slots.data(), slot_words,
        out.lane_state.data(), out.lane_words.data(), out.lane_word_offset.data());
    GSZ_CUDA_LAUNCHED("ans_encode_kernel");
    size_t temp_bytes = 0;
    GSZ_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, out.lane_word_offset.data(), lanes + 1, stream));
    cuda::DeviceBuffer<uint8_t> temp(temp_bytes, stream);
    GSZ_CUDA(cub::DeviceScan::ExclusiveSum(temp.data(), temp_bytes, out.lane_word_offset.data(), lanes + 1, stream));
    GSZ_CUDA(cudaMemcpyAsync(&out.num_words, out.lane_word_offset.data() + lanes, sizeof(uint64_t),
                             cudaMemcpyDeviceToHost, stream));
    GSZ_CUDA(cudaStreamSynchronize(stream));
    out.words.allocate(out.num_words, stream);
    if (out.num_words == 0) return;
    ans_pack_kernel<<<grid_of(lanes * 32, 256), 256, 0, stream>>>(slots.data(), slot_words,
                                                                   out.lane_word_offset.data(), lanes, out.words.data());
    GSZ_CUDA_LAUNCHED("ans_pack_kernel");
}

void ans_decode_cuda(const AnsTables& tables, const uint16_t* d_words, const uint32_t* d_lane_state,
                     const uint64_t* d_lane_word_offset, uint64_t n, uint32_t lane_symbols, uint32_t radius,
                     const AnsContextShape& shape, uint16_t* d_codes, uint32_t* d_corrupt, cudaStream_t stream) {
    if (n == 0) return;
    const uint64_t lanes = n / lane_symbols + (n % lane_symbols != 0);
    const uint32_t entries = static_cast<uint32_t>(tables.entry.size());
    const uint32_t contexts = tables.num_contexts();
    // The bucket table: the symbol holding each bucket's first slot.
    std::vector<uint8_t> bucket(size_t{contexts} * kBuckets, 0xFF);
    for (uint32_t c = 0; c < contexts; ++c)
        for (uint32_t s = 0; s < kAnsAlphabet; ++s) {
            const uint32_t e = tables.entry[size_t{c} * kAnsAlphabet + s];
            const uint32_t lo = AnsTables::cum(e), hi = lo + AnsTables::freq(e);  // slots [lo, hi)
            for (uint32_t b = (lo + (1u << kBucketShift) - 1) >> kBucketShift; (b << kBucketShift) < hi; ++b)
                bucket[size_t{c} * kBuckets + b] = static_cast<uint8_t>(s);
        }
    cuda::DeviceBuffer<uint32_t> d_entry(entries, stream);
    cuda::DeviceBuffer<uint8_t> d_bucket(bucket.size(), stream);
    GSZ_CUDA(cudaMemcpyAsync(d_entry.data(), tables.entry.data(), entries * sizeof(uint32_t), cudaMemcpyHostToDevice,
                             stream));
    GSZ_CUDA(cudaMemcpyAsync(d_bucket.data(), bucket.data(), bucket.size(), cudaMemcpyHostToDevice, stream));
    const size_t smem = entries * sizeof(uint32_t) + bucket.size();
    const auto kernel = shape.levels > 1 ? ans_decode_kernel<true> : ans_decode_kernel<false>;
    kernel<<<grid_of(lanes, kLaneThreads), kLaneThreads, smem, stream>>>(
        d_entry.data(), entries, d_bucket.data(), d_words, d_lane_state, d_lane_word_offset, n, radius,
        cursor_of(shape), lane_symbols, lanes, d_codes, d_corrupt);
    GSZ_CUDA_LAUNCHED("ans_decode_kernel");
    // No synchronization: copies from pageable memory return once the source is staged.
}

}  // namespace gsz::encode
