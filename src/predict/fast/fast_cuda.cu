// CUDA kernels of the `fast` predictor.  A warp owns a few consecutive blocks
// and issues all their loads before computing; in each block lane l holds the
// values l*V .. l*V+V-1 (V = block/32), loaded as one vector when the data is
// aligned.  Encoding is two passes (plan, then write at offsets
// from device-wide scans); decoding is flags -> scan -> explicit-byte counts ->
// scan -> decode, where the bytes each value copies from its predecessor are
// resolved by a warp scan over (known bytes, mask) pairs instead of a serial
// walk (cuSZx's index propagation, in another form).
#include "predict/fast/fast_cuda.hpp"

#include "runtime/status.hpp"

#include <cub/device/device_scan.cuh>
#include <cuda/std/limits>

#include <vector>

namespace gsz::predict {

namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr unsigned kFull = 0xffffffffu;

template <class Bits>
__device__ __forceinline__ Bits top_bytes(uint32_t k) {
    return k == 0 ? Bits{0} : ~Bits{0} << (8 * (sizeof(Bits) - k));
}

// A warp's view of one block.
struct WarpBlock {
    uint64_t block;     // block index
    uint32_t len;       // values in the block
    uint32_t lane;
    uint32_t count;     // this lane's values (a prefix of lanes holds them)
};

// Blocks per warp: a warp issues the loads of all its blocks before it
// computes on any, so each warp keeps several requests in flight (the kernels
// are latency-bound with one block per warp).
template <int V>
constexpr int kBlocksPerWarp = V >= 8 ? 2 : 16 / V;

// Decoding keeps one block per warp: its per-block state is larger, and
// more blocks per warp measured slower (bench/NOTES.md).
constexpr int kDecodeBlocksPerWarp = 1;

template <int K>
__device__ __forceinline__ uint64_t first_block_of_warp() {
    return (blockIdx.x * uint64_t{kWarps} + (threadIdx.x >> 5)) * K;
}

template <int V>
__device__ __forceinline__ bool warp_block(const FastLayout& layout, uint64_t block, WarpBlock& wb) {
    wb.lane = threadIdx.x & 31;
    wb.block = block;
    wb.len = 0;
    wb.count = 0;
    if (block >= layout.num_blocks) return false;
    wb.len = layout.block_len(block);
    const uint32_t first = wb.lane * V;
    wb.count = first >= wb.len ? 0 : (wb.len - first < V ? wb.len - first : V);
    return true;
}

// Per-block facts a warp's lanes load together (lane i for its i-th block)
// and share by shuffles.
template <class T>
struct BlockMeta {
    uint32_t code = kFastConstant;
    T mu = 0;
    uint64_t lead_rank = 0, byte_offset = 0;
};

template <class T, int K>
__device__ __forceinline__ BlockMeta<T> load_meta(uint64_t first, uint64_t nb, const uint8_t* __restrict__ codes,
                                                  const T* __restrict__ mids, const uint64_t* __restrict__ lead_rank,
                                                  const uint64_t* __restrict__ byte_offset) {
    BlockMeta<T> m;
    const uint32_t lane = threadIdx.x & 31;
    if (lane < K && first + lane < nb) {
        m.code = codes[first + lane];
        m.mu = mids[first + lane];
        m.lead_rank = lead_rank[first + lane];
        m.byte_offset = byte_offset[first + lane];
    }
    return m;
}

template <class T>
__device__ __forceinline__ BlockMeta<T> share_meta(const BlockMeta<T>& m, int kb) {
    BlockMeta<T> r;
    r.code = __shfl_sync(kFull, m.code, kb);
    r.mu = __shfl_sync(kFull, m.mu, kb);
    r.lead_rank = __shfl_sync(kFull, m.lead_rank, kb);
    r.byte_offset = __shfl_sync(kFull, m.byte_offset, kb);
    return r;
}

// Lane values: one aligned vector access when whole, else element by element.
template <class T, int V>
__device__ __forceinline__ void load_lane(const T* __restrict__ data, const FastLayout& layout, const WarpBlock& wb,
                                          bool aligned, T (&x)[V]) {
    const T* src = data + wb.block * layout.block + wb.lane * V;
    constexpr int kBytes = V * sizeof(T);
    if (aligned && wb.count == V) {
        if constexpr (kBytes % 16 == 0) {
            uint4 w[kBytes / 16];
#pragma unroll
            for (int i = 0; i < kBytes / 16; ++i) w[i] = __ldcs(reinterpret_cast<const uint4*>(src) + i);
            memcpy(x, w, kBytes);
        } else {
            const uint2 w = __ldcs(reinterpret_cast<const uint2*>(src));
            memcpy(x, &w, kBytes);
        }
        return;
    }
#pragma unroll
    for (int k = 0; k < V; ++k) x[k] = k < static_cast<int>(wb.count) ? src[k] : T(0);
}

template <class T, int V>
__device__ __forceinline__ void store_lane(T* __restrict__ out, const FastLayout& layout, const WarpBlock& wb,
                                           bool aligned, const T (&x)[V]) {
    T* dst = out + wb.block * layout.block + wb.lane * V;
    constexpr int kBytes = V * sizeof(T);
    if (aligned && wb.count == V) {
        if constexpr (kBytes % 16 == 0) {
            uint4 w[kBytes / 16];
            memcpy(w, x, kBytes);
#pragma unroll
            for (int i = 0; i < kBytes / 16; ++i) __stcs(reinterpret_cast<uint4*>(dst) + i, w[i]);
        } else {
            uint2 w;
            memcpy(&w, x, kBytes);
            __stcs(reinterpret_cast<uint2*>(dst), w);
        }
        return;
    }
#pragma unroll
    for (int k = 0; k < V; ++k)
        if (k < static_cast<int>(wb.count)) dst[k] = x[k];
}

template <class U>
__device__ __forceinline__ U warp_sum(U v) {
#pragma unroll
    for (int d = 16; d > 0; d /= 2) v += __shfl_xor_sync(kFull, v, d);
    return v;
}

// The block decision of fast_cpu.cpp (encode_block), made by a warp: the
// same comparisons and the same tries, with "all lanes agree" for "every value".
template <class T, int V>
__device__ __forceinline__ void plan_block(const T (&x)[V], const WarpBlock& wb, double eb, uint8_t& code, T& mu) {
    bool finite = true;
    T lo = ::cuda::std::numeric_limits<T>::infinity(), hi = -lo;
#pragma unroll
    for (int k = 0; k < V; ++k) {
        if (k < static_cast<int>(wb.count)) {
            finite &= isfinite(x[k]);
            lo = x[k] < lo ? x[k] : lo;
            hi = x[k] > hi ? x[k] : hi;
        }
    }
    code = kFastRaw;
    mu = 0;
    if (!__all_sync(kFull, finite)) return;
#pragma unroll
    for (int d = 16; d > 0; d /= 2) {
        const T olo = __shfl_xor_sync(kFull, lo, d), ohi = __shfl_xor_sync(kFull, hi, d);
        lo = olo < lo ? olo : lo;
        hi = ohi > hi ? ohi : hi;
    }
    const FastMid<T> mid = fast_mid(lo, hi, eb);
    if (mid.constant) {
        code = kFastConstant;
        mu = mid.mu;
        return;
    }
    const uint8_t first = fast_first_code(mid.half_range, eb);
    const uint8_t tries[2] = {first, first == kFastRaw ? kFastRaw : fast_next_code<T>(first)};
#pragma unroll
    for (int t = 0; t < 2; ++t) {
        const uint8_t c = tries[t];
        if (c == kFastRaw) break;
        if (fast_truncation_safe(lo, hi, mid.mu, c, eb)) {  // warp-uniform: no per-value check needed
            code = c;
            mu = mid.mu;
            return;
        }
        bool ok = true;
#pragma unroll
        for (int k = 0; k < V; ++k)
            if (k < static_cast<int>(wb.count)) ok &= fast_within(x[k], fast_reconstruct<T>(fast_pattern(x[k], mid.mu, c), mid.mu, c), eb);
        if (__all_sync(kFull, ok)) {
            code = c;
            mu = mid.mu;
            return;
        }
    }
}

// Patterns and lead codes of a lane's values; returns the lane's explicit
// byte count.  The first value's predecessor is the previous lane's last.
template <class T, int V>
__device__ __forceinline__ uint32_t lane_patterns(const T (&x)[V], const WarpBlock& wb, T mu, uint8_t code,
                                                  typename FastTraits<T>::Bits (&p)[V], uint32_t (&lead)[V]) {
    using Bits = typename FastTraits<T>::Bits;
    const uint32_t kept = fast_kept_bytes<T>(code);
#pragma unroll
    for (int k = 0; k < V; ++k) p[k] = k < static_cast<int>(wb.count) ? fast_pattern(x[k], mu, code) : Bits{0};
    Bits previous = __shfl_up_sync(kFull, p[V - 1], 1);
    if (wb.lane == 0) previous = 0;
    uint32_t count = 0;
#pragma unroll
    for (int k = 0; k < V; ++k) {
        lead[k] = 0;
        if (k < static_cast<int>(wb.count)) {
            lead[k] = fast_lead<T>(p[k], previous, kept);
            count += kept - lead[k];
        }
        previous = p[k];
    }
    return count;
}

template <class T, int V>
__global__ void __launch_bounds__(kThreads)
    fast_plan_kernel(const T* __restrict__ data, FastLayout layout, double eb, bool aligned, uint8_t* __restrict__ codes,
                     T* __restrict__ mids, uint64_t* __restrict__ lead_rank, uint64_t* __restrict__ byte_count) {
    using Bits = typename FastTraits<T>::Bits;
    constexpr int K = kBlocksPerWarp<V>;
    const uint64_t first = first_block_of_warp<K>();
    WarpBlock wb[K];
    T x[K][V];
#pragma unroll
    for (int kb = 0; kb < K; ++kb)
        if (warp_block<V>(layout, first + kb, wb[kb])) load_lane<T, V>(data, layout, wb[kb], aligned, x[kb]);
#pragma unroll
    for (int kb = 0; kb < K; ++kb) {
        if (first + kb >= layout.num_blocks) break;
        uint8_t code;
        T mu;
        plan_block<T, V>(x[kb], wb[kb], eb, code, mu);
        uint32_t count = 0;
        if (code != kFastConstant) {
            Bits p[V];
            uint32_t lead[V];
            count = warp_sum(lane_patterns<T, V>(x[kb], wb[kb], mu, code, p, lead));
        }
        if (wb[kb].lane == 0) {
            codes[wb[kb].block] = code;
            mids[wb[kb].block] = mu;
            lead_rank[wb[kb].block] = code != kFastConstant;
            byte_count[wb[kb].block] = count;
        }
    }
}

// Writes lane l's 2-bit lead codes (values l*V.. of the block) into the block's lead bytes.
template <int V>
__device__ __forceinline__ void write_leads(const WarpBlock& wb, const uint32_t (&lead)[V], uint8_t* __restrict__ dst) {
    uint32_t bits = 0;
#pragma unroll
    for (int k = 0; k < V; ++k) bits |= lead[k] << (2 * k);
    const uint32_t lead_bytes = FastLayout::lead_bytes(wb.len);
    if constexpr (V == 2) {  // two lanes share a byte
        const uint32_t partner = __shfl_down_sync(kFull, bits, 1);
        if ((wb.lane & 1) == 0 && wb.lane / 2 < lead_bytes) dst[wb.lane / 2] = static_cast<uint8_t>(bits | partner << 4);
    } else {
#pragma unroll
        for (int i = 0; i < V / 4; ++i) {
            const uint32_t at = wb.lane * (V / 4) + i;
            if (at < lead_bytes) dst[at] = static_cast<uint8_t>(bits >> (8 * i));
        }
    }
}

template <class U>
__device__ __forceinline__ U warp_exclusive_sum(U v, uint32_t lane) {
    U inclusive = v;
#pragma unroll
    for (int d = 1; d < 32; d *= 2) {
        const U up = __shfl_up_sync(kFull, inclusive, d);
        if (lane >= static_cast<uint32_t>(d)) inclusive += up;
    }
    return inclusive - v;
}

template <class T, int V>
__global__ void __launch_bounds__(kThreads)
    fast_write_kernel(const T* __restrict__ data, FastLayout layout, bool aligned, const uint8_t* __restrict__ codes,
                      const T* __restrict__ mids, const uint64_t* __restrict__ lead_rank,
                      const uint64_t* __restrict__ byte_offset, uint8_t* __restrict__ leads,
                      uint8_t* __restrict__ bytes) {
    using Bits = typename FastTraits<T>::Bits;
    constexpr int K = kBlocksPerWarp<V>;
    const uint64_t first = first_block_of_warp<K>();
    const BlockMeta<T> meta = load_meta<T, K>(first, layout.num_blocks, codes, mids, lead_rank, byte_offset);
    WarpBlock wb[K];
    T x[K][V];
    uint32_t code[K];
#pragma unroll
    for (int kb = 0; kb < K; ++kb) {
        code[kb] = __shfl_sync(kFull, meta.code, kb);
        if (warp_block<V>(layout, first + kb, wb[kb]) && code[kb] != kFastConstant)
            load_lane<T, V>(data, layout, wb[kb], aligned, x[kb]);
    }
#pragma unroll
    for (int kb = 0; kb < K; ++kb) {
        if (first + kb >= layout.num_blocks) break;
        if (code[kb] == kFastConstant) continue;
        const BlockMeta<T> m = share_meta(meta, kb);
        Bits p[V];
        uint32_t lead[V];
        const uint8_t c = static_cast<uint8_t>(code[kb]);
        const uint32_t count = lane_patterns<T, V>(x[kb], wb[kb], m.mu, c, p, lead);
        write_leads<V>(wb[kb], lead, leads + m.lead_rank * (layout.block / 4));
        uint8_t* dst = bytes + m.byte_offset + warp_exclusive_sum(count, wb[kb].lane);
        const uint32_t kept = fast_kept_bytes<T>(c);
#pragma unroll
        for (int k = 0; k < V; ++k) {
            if (k >= static_cast<int>(wb[kb].count)) break;  // past the end of a short last block
            for (uint32_t j = lead[k]; j < kept; ++j) *dst++ = static_cast<uint8_t>(fast_byte<T>(p[k], j));
        }
    }
}

// Decoding, pass 1: a flag per block (non-constant), and the code check.
template <class T>
__global__ void fast_flags_kernel(const uint8_t* __restrict__ codes, uint64_t nb, uint64_t* __restrict__ lead_rank,
                                  uint32_t* __restrict__ corrupt) {
    const uint64_t b = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
    if (b > nb) return;
    if (b == nb) {
        lead_rank[b] = 0;
        return;
    }
    const uint8_t code = codes[b];
    if (!fast_code_valid<T>(code)) atomicOr(corrupt, 1u);
    lead_rank[b] = code != kFastConstant;
}

// A lane's lead codes, read with bounds checks (out of range reads as 0 and flags).
template <int V>
__device__ __forceinline__ uint32_t read_lead_bits(const WarpBlock& wb, const uint8_t* __restrict__ leads,
                                                   uint64_t base, uint64_t leads_size, uint32_t* corrupt) {
    if (wb.count == 0) return 0;
    uint32_t bits = 0;
    if constexpr (V == 2) {
        const uint64_t at = base + wb.lane / 2;
        if (at < leads_size) bits = (leads[at] >> (4 * (wb.lane & 1))) & 0xfu;
        else atomicOr(corrupt, 1u);
    } else {
#pragma unroll
        for (int i = 0; i < V / 4; ++i) {
            const uint64_t at = base + wb.lane * (V / 4) + i;
            if (wb.lane * (V / 4) + i < FastLayout::lead_bytes(wb.len)) {
                if (at < leads_size) bits |= uint32_t{leads[at]} << (8 * i);
                else atomicOr(corrupt, 1u);
            }
        }
    }
    return bits;
}

// Decoding, pass 2: each block's explicit byte count from its lead codes,
// one thread per block: B*len minus the sum of the 2-bit codes (popcounts),
// with codes above B flagged.  Bits past a short last block are ignored, as
// the CPU decoder ignores them.
template <class T>
__global__ void fast_count_kernel(const uint8_t* __restrict__ codes, FastLayout layout,
                                  const uint64_t* __restrict__ lead_rank, const uint8_t* __restrict__ leads,
                                  uint64_t leads_size, uint64_t* __restrict__ byte_count,
                                  uint32_t* __restrict__ corrupt) {
    const uint64_t b = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
    const uint64_t nb = layout.num_blocks;
    if (b > nb) return;
    uint64_t count = 0;
    const uint8_t code = b < nb ? codes[b] : kFastConstant;
    if (code != kFastConstant && fast_code_valid<T>(code)) {
        const uint32_t kept = fast_kept_bytes<T>(code), len = layout.block_len(b);
        const uint32_t lead_bytes = FastLayout::lead_bytes(len);
        const uint64_t base = lead_rank[b] * (layout.block / 4);
        if (base + lead_bytes > leads_size) {
            atomicOr(corrupt, 1u);
        } else {
            uint32_t lead_sum = 0;
            bool bad = false;
            auto add = [&](uint32_t w, uint32_t at) {  // w: the codes of lead bytes at..at+3
                const uint32_t fields = len - 4 * at;  // codes of values still in the block
                if (fields < 16) w &= (1u << (2 * fields)) - 1;
                lead_sum += __popc(w & 0x55555555u) + 2 * __popc(w & 0xaaaaaaaau);
                if (kept == 1) bad |= (w & 0xaaaaaaaau) != 0;
                if (kept == 2) bad |= (w & (w >> 1) & 0x55555555u) != 0;
            };
            const uint8_t* src = leads + base;
            if (lead_bytes % 16 == 0 && reinterpret_cast<uintptr_t>(src) % 16 == 0) {
                for (uint32_t at = 0; at < lead_bytes; at += 16) {
                    const uint4 q = *reinterpret_cast<const uint4*>(src + at);
                    add(q.x, at);
                    add(q.y, at + 4);
                    add(q.z, at + 8);
                    add(q.w, at + 12);
                }
            } else {
                for (uint32_t at = 0; at < lead_bytes; at += 4) {
                    uint32_t w = 0;
                    for (uint32_t k = 0; k < 4 && at + k < lead_bytes; ++k) w |= uint32_t{src[at + k]} << (8 * k);
                    add(w, at);
                }
            }
            if (bad) atomicOr(corrupt, 1u);
            else count = uint64_t{kept} * len - lead_sum;
        }
    }
    byte_count[b] = count;
}

// Decoding, pass 3: the streams must be exactly as long as the codes say.
__global__ void fast_check_totals_kernel(FastLayout layout, const uint8_t* __restrict__ codes,
                                         const uint64_t* __restrict__ lead_rank, uint64_t leads_size,
                                         const uint64_t* __restrict__ byte_offset, uint64_t bytes_size,
                                         uint32_t* __restrict__ corrupt) {
    const uint64_t nb = layout.num_blocks;
    uint64_t lead_total = lead_rank[nb] * (layout.block / 4);
    const uint32_t last_len = layout.block_len(nb - 1);
    if (codes[nb - 1] != kFastConstant) lead_total -= layout.block / 4 - FastLayout::lead_bytes(last_len);
    if (lead_total != leads_size || byte_offset[nb] != bytes_size) atomicOr(corrupt, 1u);
}

template <class T, int V>
__global__ void __launch_bounds__(kThreads)
    fast_decode_kernel(const uint8_t* __restrict__ codes, const T* __restrict__ mids, FastLayout layout,
                       const uint64_t* __restrict__ lead_rank, const uint8_t* __restrict__ leads, uint64_t leads_size,
                       const uint64_t* __restrict__ byte_offset, const uint8_t* __restrict__ bytes,
                       uint64_t bytes_size, bool aligned, T* __restrict__ out, uint32_t* __restrict__ corrupt) {
    using Bits = typename FastTraits<T>::Bits;
    constexpr int K = kDecodeBlocksPerWarp;
    constexpr uint32_t kMaxKept = sizeof(T);
    const uint64_t first = first_block_of_warp<K>();
    const BlockMeta<T> meta = load_meta<T, K>(first, layout.num_blocks, codes, mids, lead_rank, byte_offset);

    // Round trip 1 done: the blocks' codes.  Round trip 2: their lead codes.
    WarpBlock wb[K];
    uint32_t code[K], bits[K];
#pragma unroll
    for (int kb = 0; kb < K; ++kb) {
        code[kb] = __shfl_sync(kFull, meta.code, kb);
        const uint64_t rank = __shfl_sync(kFull, meta.lead_rank, kb);
        bits[kb] = 0;
        const bool valid = warp_block<V>(layout, first + kb, wb[kb]) && fast_code_valid<T>(static_cast<uint8_t>(code[kb]));
        if (!valid) code[kb] = kFastConstant + 0x100;  // skipped below (the flags kernel flagged a bad code)
        if (valid && code[kb] != kFastConstant)
            bits[kb] = read_lead_bits<V>(wb[kb], leads, rank * (layout.block / 4), leads_size, corrupt);
    }
    // Round trip 3: each value's explicit bytes, at offsets from a warp scan.
    uint32_t lead[K][V];
    Bits known[K][V];
#pragma unroll
    for (int kb = 0; kb < K; ++kb) {
        const uint32_t kept = code[kb] < 0x100 ? fast_kept_bytes<T>(static_cast<uint8_t>(code[kb])) : 0;
        uint32_t count = 0;
#pragma unroll
        for (int k = 0; k < V; ++k) {
            const uint32_t l = (bits[kb] >> (2 * k)) & 3u;
            lead[kb][k] = k < static_cast<int>(wb[kb].count) ? (l < kept ? l : kept) : kept;
            count += kept - lead[kb][k];
        }
        if (first + kb >= layout.num_blocks || code[kb] == kFastConstant || code[kb] >= 0x100) continue;
        uint64_t at = __shfl_sync(kFull, meta.byte_offset, kb) + warp_exclusive_sum(count, wb[kb].lane);
#pragma unroll
        for (int k = 0; k < V; ++k) {
            known[kb][k] = 0;
#pragma unroll
            for (uint32_t j = 0; j < kMaxKept; ++j) {
                if (j < lead[kb][k] || j >= kept) continue;
                uint32_t byte = 0;
                if (at < bytes_size) byte = bytes[at];
                else atomicOr(corrupt, 1u);
                ++at;
                known[kb][k] |= static_cast<Bits>(byte) << (8 * (sizeof(T) - 1 - j));  // each byte set once
            }
        }
    }
    // The copied bytes: the lane's values as one step (bytes it sets, and
    // which), scanned across the warp, so each lane starts from the pattern
    // the values before it leave (0 for bytes nothing before it set).
#pragma unroll
    for (int kb = 0; kb < K; ++kb) {
        if (first + kb >= layout.num_blocks || code[kb] >= 0x100) continue;
        const T mu = __shfl_sync(kFull, meta.mu, kb);
        T x[V];
        if (code[kb] == kFastConstant) {
#pragma unroll
            for (int k = 0; k < V; ++k) x[k] = mu;
            store_lane<T, V>(out, layout, wb[kb], aligned, x);
            continue;
        }
        Bits seg_known = 0, seg_mask = 0;
#pragma unroll
        for (int k = 0; k < V; ++k) {
            const Bits mask = ~top_bytes<Bits>(lead[kb][k]);
            seg_known = known[kb][k] | (seg_known & ~mask);
            seg_mask |= mask;
        }
#pragma unroll
        for (int d = 1; d < 32; d *= 2) {
            const Bits up_known = __shfl_up_sync(kFull, seg_known, d), up_mask = __shfl_up_sync(kFull, seg_mask, d);
            if (wb[kb].lane >= static_cast<uint32_t>(d)) {
                seg_known |= up_known & ~seg_mask;
                seg_mask |= up_mask;
            }
        }
        Bits previous = __shfl_up_sync(kFull, seg_known, 1);
        if (wb[kb].lane == 0) previous = 0;
        const uint8_t c = static_cast<uint8_t>(code[kb]);
#pragma unroll
        for (int k = 0; k < V; ++k) {
            const Bits p = known[kb][k] | (previous & top_bytes<Bits>(lead[kb][k]));
            x[k] = fast_reconstruct<T>(p, mu, c);
            previous = p;
        }
        store_lane<T, V>(out, layout, wb[kb], aligned, x);
    }
}

unsigned warp_grid(uint64_t num_blocks, int blocks_per_warp) {
    const uint64_t per_cta = uint64_t{kWarps} * blocks_per_warp;
    const uint64_t ctas = (num_blocks + per_cta - 1) / per_cta;
    GSZ_CHECK(ctas <= 0x7fffffffu, GSZ_STATUS_INVALID_ARGUMENT, "fast: %llu blocks are too many for one launch",
              static_cast<unsigned long long>(num_blocks));
    return static_cast<unsigned>(ctas ? ctas : 1);
}

// In-place exclusive sum over n values.
void exclusive_sum(uint64_t* d, uint64_t n, cuda::DeviceBuffer<uint8_t>& temp, cudaStream_t stream) {
    size_t bytes = 0;
    GSZ_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, bytes, d, d, n, stream));
    temp.allocate(bytes, stream);
    GSZ_CUDA(cub::DeviceScan::ExclusiveSum(temp.data(), bytes, d, d, n, stream));
}

bool is_aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <class T, int V>
void encode_with(const T* d_data, const FastLayout& layout, double eb, FastDeviceStreams<T>& out, cudaStream_t s) {
    const uint64_t nb = layout.num_blocks;
    const unsigned grid = warp_grid(nb, kBlocksPerWarp<V>);
    const bool aligned = is_aligned(d_data);
    out.codes.allocate(nb, s);
    out.mids.allocate(nb, s);
    out.lead_rank.allocate(nb + 1, s);
    out.byte_offset.allocate(nb + 1, s);
    GSZ_CUDA(cudaMemsetAsync(out.lead_rank.data() + nb, 0, sizeof(uint64_t), s));
    GSZ_CUDA(cudaMemsetAsync(out.byte_offset.data() + nb, 0, sizeof(uint64_t), s));
    fast_plan_kernel<T, V><<<grid, kThreads, 0, s>>>(d_data, layout, eb, aligned, out.codes.data(), out.mids.data(),
                                                     out.lead_rank.data(), out.byte_offset.data());
    GSZ_CUDA_LAUNCHED("fast_plan_kernel");
    exclusive_sum(out.lead_rank.data(), nb + 1, out.temp, s);
    exclusive_sum(out.byte_offset.data(), nb + 1, out.temp, s);

    // Stream sizes: every non-constant block has block/4 lead bytes but a
    // short last one.
    uint64_t totals[2];
    uint8_t last_code = 0;
    GSZ_CUDA(cudaMemcpyAsync(&totals[0], out.lead_rank.data() + nb, 8, cudaMemcpyDeviceToHost, s));
    GSZ_CUDA(cudaMemcpyAsync(&totals[1], out.byte_offset.data() + nb, 8, cudaMemcpyDeviceToHost, s));
    GSZ_CUDA(cudaMemcpyAsync(&last_code, out.codes.data() + nb - 1, 1, cudaMemcpyDeviceToHost, s));
    GSZ_CUDA(cudaStreamSynchronize(s));
    uint64_t lead_total = totals[0] * (layout.block / 4);
    if (last_code != kFastConstant)
        lead_total -= layout.block / 4 - FastLayout::lead_bytes(layout.block_len(nb - 1));
    out.leads.allocate(lead_total, s);
    out.bytes.allocate(totals[1], s);
    fast_write_kernel<T, V><<<grid, kThreads, 0, s>>>(d_data, layout, aligned, out.codes.data(), out.mids.data(),
                                                      out.lead_rank.data(), out.byte_offset.data(), out.leads.data(),
                                                      out.bytes.data());
    GSZ_CUDA_LAUNCHED("fast_write_kernel");
}

template <class T, int V>
void decode_with(const uint8_t* d_codes, const T* d_mids, const uint8_t* d_leads, uint64_t leads_size,
                 const uint8_t* d_bytes, uint64_t bytes_size, const FastLayout& layout, T* d_out,
                 FastDecodeScratch& sc, cudaStream_t s) {
    const uint64_t nb = layout.num_blocks;
    const unsigned grid = warp_grid(nb, kDecodeBlocksPerWarp);
    sc.lead_rank.allocate(nb + 1, s);
    sc.byte_offset.allocate(nb + 1, s);
    sc.corrupt.allocate(1, s);
    sc.corrupt.zero(s);
    const auto flag_grid = static_cast<unsigned>((nb + 1 + 255) / 256);
    fast_flags_kernel<T><<<flag_grid, 256, 0, s>>>(d_codes, nb, sc.lead_rank.data(), sc.corrupt.data());
    GSZ_CUDA_LAUNCHED("fast_flags_kernel");
    exclusive_sum(sc.lead_rank.data(), nb + 1, sc.temp, s);
    fast_count_kernel<T><<<flag_grid, 256, 0, s>>>(d_codes, layout, sc.lead_rank.data(), d_leads, leads_size,
                                                   sc.byte_offset.data(), sc.corrupt.data());
    GSZ_CUDA_LAUNCHED("fast_count_kernel");
    exclusive_sum(sc.byte_offset.data(), nb + 1, sc.temp, s);
    fast_check_totals_kernel<<<1, 1, 0, s>>>(layout, d_codes, sc.lead_rank.data(), leads_size, sc.byte_offset.data(),
                                             bytes_size, sc.corrupt.data());
    GSZ_CUDA_LAUNCHED("fast_check_totals_kernel");
    fast_decode_kernel<T, V><<<grid, kThreads, 0, s>>>(d_codes, d_mids, layout, sc.lead_rank.data(), d_leads,
                                                       leads_size, sc.byte_offset.data(), d_bytes, bytes_size,
                                                       is_aligned(d_out), d_out, sc.corrupt.data());
    GSZ_CUDA_LAUNCHED("fast_decode_kernel");
    std::vector<uint32_t> corrupt;
    cuda::copy_to_host(corrupt, sc.corrupt.data(), 1, s);
    GSZ_CHECK(corrupt[0] == 0, GSZ_STATUS_CORRUPT,
              "fast streams: a block code, lead code or stream length does not add up");
}

}  // namespace

template <class T>
void fast_encode_cuda(const T* d_data, const FastLayout& layout, double eb, FastDeviceStreams<T>& out,
                      cudaStream_t stream) {
    switch (layout.block) {
        case 64: return encode_with<T, 2>(d_data, layout, eb, out, stream);
        case 128: return encode_with<T, 4>(d_data, layout, eb, out, stream);
        case 256: return encode_with<T, 8>(d_data, layout, eb, out, stream);
    }
    fail(GSZ_STATUS_INVALID_ARGUMENT, format_message("fast: block size %u is not 64, 128 or 256", layout.block));
}

template <class T>
void fast_decode_cuda(const uint8_t* d_codes, const T* d_mids, const uint8_t* d_leads, uint64_t leads_size,
                      const uint8_t* d_bytes, uint64_t bytes_size, const FastLayout& layout, T* d_out,
                      FastDecodeScratch& scratch, cudaStream_t stream) {
    switch (layout.block) {
        case 64:
            return decode_with<T, 2>(d_codes, d_mids, d_leads, leads_size, d_bytes, bytes_size, layout, d_out, scratch,
                                     stream);
        case 128:
            return decode_with<T, 4>(d_codes, d_mids, d_leads, leads_size, d_bytes, bytes_size, layout, d_out, scratch,
                                     stream);
        case 256:
            return decode_with<T, 8>(d_codes, d_mids, d_leads, leads_size, d_bytes, bytes_size, layout, d_out, scratch,
                                     stream);
    }
    fail(GSZ_STATUS_CORRUPT, format_message("fast: block size %u is not 64, 128 or 256", layout.block));
}

template void fast_encode_cuda<float>(const float*, const FastLayout&, double, FastDeviceStreams<float>&, cudaStream_t);
template void fast_encode_cuda<double>(const double*, const FastLayout&, double, FastDeviceStreams<double>&,
                                       cudaStream_t);
template void fast_decode_cuda<float>(const uint8_t*, const float*, const uint8_t*, uint64_t, const uint8_t*, uint64_t,
                                      const FastLayout&, float*, FastDecodeScratch&, cudaStream_t);
template void fast_decode_cuda<double>(const uint8_t*, const double*, const uint8_t*, uint64_t, const uint8_t*,
                                       uint64_t, const FastLayout&, double*, FastDecodeScratch&, cudaStream_t);

}  // namespace gsz::predict
