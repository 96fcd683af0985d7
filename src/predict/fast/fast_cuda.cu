// CUDA kernels of the `fast` predictor.  A warp owns a few consecutive blocks
// and issues all their loads before computing; in each block lane l holds the
// values l*V .. l*V+V-1 (V = block/32), loaded as one vector when the data is
// aligned.  Encoding is one pass (plan, stage the bytes in shared memory,
// write them at offsets from a decoupled look-back); decoding is flags -> scan -> explicit-byte counts ->
// scan -> decode, where the bytes each value copies from its predecessor are
// resolved by a warp scan over (known bytes, mask) pairs instead of a serial
// walk (cuSZx's index propagation, in another form).
#include "predict/fast/fast_cuda.hpp"

#include "runtime/status.hpp"

#include <cub/agent/single_pass_scan_operators.cuh>
#include <cub/device/device_scan.cuh>
#include <cuda/std/limits>

#include <type_traits>

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

// ---- Encoding: one pass ---------------------------------------------------
// A CTA owns a tile of kWarps * K consecutive blocks (warp w: blocks w*K ..
// w*K+K-1 of the tile).  It loads them, plans them, stages their explicit
// bytes in shared memory and learns where its output starts from a
// decoupled look-back over the tiles before it (CUB's tile state), so the
// input is read once and every output byte is written once, with 16-byte
// stores.

// Blocks per warp in the one-pass encoder: 16 (f32) or 8 (f64) values per
// lane, at most 4 blocks (their byte counts share one 64-bit scan).
template <class T, int V>
constexpr int kEncodeBlocksPerWarp = 64 / static_cast<int>(sizeof(T)) / V > 4   ? 4
                                     : 64 / static_cast<int>(sizeof(T)) / V < 1 ? 1
                                                                                : 64 / static_cast<int>(sizeof(T)) / V;

// Integer keys ordered like the values they are the bits of (-0 below +0,
// NaNs beyond the infinities): the block extremes come from integer
// min/max, one warp reduction instruction per extreme for float.
template <class T>
struct OrderKey {
    using Bits = typename FastTraits<T>::Bits;
    using Key = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
    static constexpr Key kMagnitude = static_cast<Key>(~Bits{0} >> 1);
    __device__ static Key of(Bits b) {
        const Key k = static_cast<Key>(b);
        return k ^ ((k >> (FastTraits<T>::width - 1)) & kMagnitude);
    }
    __device__ static T value(Key k) { return fast_value<T>(static_cast<Bits>(k ^ ((k >> (FastTraits<T>::width - 1)) & kMagnitude))); }
    __device__ static Key finite_max() { return of(fast_bits(::cuda::std::numeric_limits<T>::max())); }
    __device__ static Key finite_min() { return of(fast_bits(-::cuda::std::numeric_limits<T>::max())); }
};

__device__ __forceinline__ int32_t warp_min(int32_t v) { return __reduce_min_sync(kFull, v); }
__device__ __forceinline__ int32_t warp_max(int32_t v) { return __reduce_max_sync(kFull, v); }
__device__ __forceinline__ int64_t warp_min(int64_t v) {
#pragma unroll
    for (int d = 16; d > 0; d /= 2) {
        const int64_t o = __shfl_xor_sync(kFull, v, d);
        v = o < v ? o : v;
    }
    return v;
}
__device__ __forceinline__ int64_t warp_max(int64_t v) {
#pragma unroll
    for (int d = 16; d > 0; d /= 2) {
        const int64_t o = __shfl_xor_sync(kFull, v, d);
        v = o > v ? o : v;
    }
    return v;
}

// The decision of fast_cpu.cpp's encode_block up to the per-value check,
// made by one lane for one block from its extremes: non-finite -> raw;
// constant; the first truncation (check set when it is not provably safe);
// raw when no truncation helps.
template <class T>
__device__ __forceinline__ void plan_from_extremes(typename OrderKey<T>::Key lo_key, typename OrderKey<T>::Key hi_key,
                                                   double eb, uint8_t& code, T& mu, bool& check) {
    code = kFastRaw;
    mu = 0;
    check = false;
    if (lo_key < OrderKey<T>::finite_min() || hi_key > OrderKey<T>::finite_max()) return;
    const T lo = OrderKey<T>::value(lo_key), hi = OrderKey<T>::value(hi_key);
    const FastFirstPlan<T> plan = fast_first_plan(lo, hi, eb);
    code = plan.code;
    mu = plan.mu;
    check = code != kFastConstant && code != kFastRaw && !fast_truncation_safe(lo, hi, mu, code, eb);
}

// Whether every value of the lane reconstructs within eb under this code.
template <class T, int V>
__device__ __forceinline__ bool lane_within(const T (&x)[V], uint32_t count, T mu, uint8_t code, double eb) {
    bool ok = true;
#pragma unroll
    for (int k = 0; k < V; ++k)
        if (k < static_cast<int>(count)) ok &= fast_within(x[k], fast_reconstruct<T>(fast_pattern(x[k], mu, code), mu, code), eb);
    return ok;
}

// The rest of encode_block for a block whose first code needs the check:
// that code if every value passes, else one bit more (checked unless
// provably safe), else raw.  Warp-uniform.
template <class T, int V>
__device__ __forceinline__ void settle_checked(const T (&x)[V], uint32_t count, T lo, T hi, double eb, uint8_t& code,
                                               T& mu) {
    if (__all_sync(kFull, lane_within<T, V>(x, count, mu, code, eb))) return;
    const uint8_t next = fast_next_code<T>(code);
    if (next != kFastRaw &&
        (fast_truncation_safe(lo, hi, mu, next, eb) || __all_sync(kFull, lane_within<T, V>(x, count, mu, next, eb)))) {
        code = next;
        return;
    }
    code = kFastRaw;
    mu = 0;
}

// ORs a value's explicit bytes (the top n bytes of e, most significant
// first) into the staging words at byte offset `at`.  Neighbouring values
// share words, so the staging area starts zeroed and bytes are ORed in.
__device__ __forceinline__ void stage_bytes(uint32_t* stage, uint32_t at, uint32_t e, uint32_t n) {
    if (n == 0) return;
    const uint32_t s = 8 * (at & 3);
    const uint32_t le = __byte_perm(e, 0, 0x0123);  // first explicit byte lowest
    uint32_t* w = stage + (at >> 2);
    atomicOr(w, le << s);
    if (s + 8 * n > 32) atomicOr(w + 1, le >> (32 - s));
}

__device__ __forceinline__ void stage_bytes(uint32_t* stage, uint32_t at, uint64_t e, uint32_t n) {
    if (n == 0) return;
    const uint32_t s = 8 * (at & 3);
    const uint32_t lo = __byte_perm(static_cast<uint32_t>(e >> 32), 0, 0x0123);
    const uint32_t hi = __byte_perm(static_cast<uint32_t>(e), 0, 0x0123);
    uint32_t* w = stage + (at >> 2);
    atomicOr(w, lo << s);
    if (s + 8 * n > 32) atomicOr(w + 1, __funnelshift_l(lo, hi, s));
    if (s + 8 * n > 64) atomicOr(w + 2, hi >> (32 - s));
}

// The look-back's value: non-constant blocks and explicit bytes before a tile.
struct StreamCounts {
    uint64_t blocks, bytes;
};
struct AddCounts {
    __device__ StreamCounts operator()(const StreamCounts& a, const StreamCounts& b) const {
        return {a.blocks + b.blocks, a.bytes + b.bytes};
    }
};
using CountsTileState = cub::ScanTileState<StreamCounts>;
using CountsPrefixOp = cub::TilePrefixCallbackOp<StreamCounts, AddCounts, CountsTileState>;

__global__ void counts_tile_init_kernel(CountsTileState state, int tiles) { state.InitializeStatus(tiles); }

template <class T, int V>
struct EncodeShared {
    static constexpr int K = kEncodeBlocksPerWarp<T, V>;
    static constexpr int kStageBytes = kWarps * K * 32 * V * static_cast<int>(sizeof(T)) + 32;
    uint32_t warp_blocks[kWarps], warp_bytes[kWarps];
    StreamCounts prefix;
    typename CountsPrefixOp::TempStorage lookback;
    alignas(16) uint32_t stage[kStageBytes / 4];
};

// Four CTAs per SM (64 registers): the look-back and the barriers around it
// stall a CTA, so residency matters more than the few registers spilled
// (wmagT rel 1e-4: 396 -> 418 GB/s against three CTAs, bench/NOTES.md).
template <class T, int V>
__global__ void __launch_bounds__(kThreads, 4)
    fast_encode_kernel(const T* __restrict__ data, FastLayout layout, double eb, bool aligned,
                       CountsTileState tile_state, uint8_t* __restrict__ codes, T* __restrict__ mids,
                       uint8_t* __restrict__ leads, uint8_t* __restrict__ bytes, uint64_t* __restrict__ totals) {
    using Bits = typename FastTraits<T>::Bits;
    using Key = typename OrderKey<T>::Key;
    constexpr int K = kEncodeBlocksPerWarp<T, V>;
    __shared__ EncodeShared<T, V> sh;
    const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int tile = static_cast<int>(blockIdx.x);
    const uint64_t first = (uint64_t{blockIdx.x} * kWarps + warp) * K;

    WarpBlock wb[K];
    T x[K][V];
#pragma unroll
    for (int kb = 0; kb < K; ++kb)
        if (warp_block<V>(layout, first + kb, wb[kb])) load_lane<T, V>(data, layout, wb[kb], aligned, x[kb]);

    // Extremes per block; lane kb keeps block kb's and plans it.
    Key my_lo = 0, my_hi = 0;
#pragma unroll
    for (int kb = 0; kb < K; ++kb) {
        Key lo = ::cuda::std::numeric_limits<Key>::max(), hi = ::cuda::std::numeric_limits<Key>::min();
#pragma unroll
        for (int k = 0; k < V; ++k) {
            if (k < static_cast<int>(wb[kb].count)) {
                const Key key = OrderKey<T>::of(fast_bits(x[kb][k]));
                lo = key < lo ? key : lo;
                hi = key > hi ? key : hi;
            }
        }
        lo = warp_min(lo);
        hi = warp_max(hi);
        if (lane == static_cast<uint32_t>(kb)) {
            my_lo = lo;
            my_hi = hi;
        }
    }
    uint8_t my_code = kFastConstant;
    T my_mu = 0;
    bool my_check = false;
    if (lane < static_cast<uint32_t>(K) && first + lane < layout.num_blocks)
        plan_from_extremes<T>(my_lo, my_hi, eb, my_code, my_mu, my_check);
    const uint32_t check = __ballot_sync(kFull, my_check);
    if (check) {  // rare: first codes that need the per-value check
#pragma unroll
        for (int kb = 0; kb < K; ++kb) {
            if (!(check >> kb & 1u)) continue;
            uint8_t c = static_cast<uint8_t>(__shfl_sync(kFull, my_code, kb));
            T mu = __shfl_sync(kFull, my_mu, kb);
            const T lo = OrderKey<T>::value(__shfl_sync(kFull, my_lo, kb));
            const T hi = OrderKey<T>::value(__shfl_sync(kFull, my_hi, kb));
            settle_checked<T, V>(x[kb], wb[kb].count, lo, hi, eb, c, mu);
            if (lane == static_cast<uint32_t>(kb)) {
                my_code = c;
                my_mu = mu;
            }
        }
    }
    if (lane < static_cast<uint32_t>(K) && first + lane < layout.num_blocks) {
        codes[first + lane] = my_code;
        mids[first + lane] = my_mu;
    }

    // Patterns, lead codes and explicit byte counts; the counts of the K
    // blocks share one 64-bit word (16 bits each) and one warp scan.
    Bits p[K][V];
    uint32_t lead_bits[K];
    uint64_t counts = 0;
    uint32_t nonconst = 0;
#pragma unroll
    for (int kb = 0; kb < K; ++kb) {
        const uint8_t c = static_cast<uint8_t>(__shfl_sync(kFull, my_code, kb));
        const T mu = __shfl_sync(kFull, my_mu, kb);
        lead_bits[kb] = 0;
        if (first + kb >= layout.num_blocks || c == kFastConstant) continue;
        nonconst |= 1u << kb;
        uint32_t lead[V];
        const uint32_t count = lane_patterns<T, V>(x[kb], wb[kb], mu, c, p[kb], lead);
#pragma unroll
        for (int k = 0; k < V; ++k) lead_bits[kb] |= lead[k] << (2 * k);
        counts |= uint64_t{count} << (16 * kb);
    }
    uint64_t inclusive = counts;
#pragma unroll
    for (int d = 1; d < 32; d *= 2) {
        const uint64_t up = __shfl_up_sync(kFull, inclusive, d);
        if (lane >= static_cast<uint32_t>(d)) inclusive += up;
    }
    const uint64_t warp_totals = __shfl_sync(kFull, inclusive, 31);
    uint32_t warp_bytes = 0;
#pragma unroll
    for (int kb = 0; kb < K; ++kb) warp_bytes += static_cast<uint32_t>(warp_totals >> (16 * kb)) & 0xffffu;
    if (lane == 0) {
        sh.warp_blocks[warp] = __popc(nonconst);
        sh.warp_bytes[warp] = warp_bytes;
    }
    __syncthreads();

    // The tile's counts, this warp's place in them, and the tiles' before.
    uint32_t tile_blocks = 0, tile_bytes = 0, warp_block0 = 0, warp_byte0 = 0;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
        const uint32_t b = sh.warp_blocks[w], n = sh.warp_bytes[w];
        if (w < static_cast<int>(warp)) {
            warp_block0 += b;
            warp_byte0 += n;
        }
        tile_blocks += b;
        tile_bytes += n;
    }
    if (warp == 0) {
        const StreamCounts aggregate{tile_blocks, tile_bytes};
        StreamCounts before{0, 0};
        if (tile == 0) {
            if (lane == 0) tile_state.SetInclusive(0, aggregate);
        } else {
            CountsPrefixOp op(tile_state, sh.lookback, AddCounts{}, tile);
            before = op(aggregate);
        }
        if (lane == 0) {
            sh.prefix = before;
            if (tile == static_cast<int>(gridDim.x) - 1) {
                totals[0] = before.blocks + aggregate.blocks;
                totals[1] = before.bytes + aggregate.bytes;
            }
        }
    } else {
        // Meanwhile the other warps zero the staging words the tile will use.
        const uint32_t words = (tile_bytes + 16 + 15) / 16 * 4;
        for (uint32_t i = threadIdx.x - 32; i < words; i += kThreads - 32) sh.stage[i] = 0;
    }
    __syncthreads();
    const StreamCounts prefix = sh.prefix;
    const uint32_t skew = static_cast<uint32_t>(prefix.bytes % 16);  // stage byte i -> bytes[prefix - skew + i]

    // Lead codes straight to their place; explicit bytes into the stage.
    uint32_t at = skew + warp_byte0;
    uint32_t rank = warp_block0;
#pragma unroll
    for (int kb = 0; kb < K; ++kb) {
        const uint32_t block_total = static_cast<uint32_t>(warp_totals >> (16 * kb)) & 0xffffu;
        if (!(nonconst >> kb & 1u)) continue;
        const uint8_t c = static_cast<uint8_t>(__shfl_sync(kFull, my_code, kb));
        uint32_t lead[V];
#pragma unroll
        for (int k = 0; k < V; ++k) lead[k] = lead_bits[kb] >> (2 * k) & 3u;
        write_leads<V>(wb[kb], lead, leads + (prefix.blocks + rank) * (layout.block / 4));
        const uint32_t kept = fast_kept_bytes<T>(c);
        const uint32_t own = static_cast<uint32_t>(counts >> (16 * kb)) & 0xffffu;
        uint32_t o = at + (static_cast<uint32_t>(inclusive >> (16 * kb)) & 0xffffu) - own;
#pragma unroll
        for (int k = 0; k < V; ++k) {
            if (k < static_cast<int>(wb[kb].count)) {
                const uint32_t n = kept - lead[k];
                stage_bytes(sh.stage, o, static_cast<Bits>(p[kb][k] << (8 * lead[k])), n);
                o += n;
            }
        }
        at += block_total;
        ++rank;
    }
    __syncthreads();

    // The stage to global memory: whole 16-byte words where the tile owns
    // them, single bytes in the words it shares with its neighbours.
    const uint32_t span = skew + tile_bytes;
    uint8_t* out = bytes + (prefix.bytes - skew);
    const uint8_t* stage = reinterpret_cast<const uint8_t*>(sh.stage);
    for (uint32_t c = threadIdx.x; c * 16 < span; c += kThreads) {
        const uint32_t b0 = c * 16;
        if (b0 >= skew && b0 + 16 <= span) {
            *reinterpret_cast<uint4*>(out + b0) = *reinterpret_cast<const uint4*>(stage + b0);
        } else {
            for (uint32_t i = b0 < skew ? skew : b0; i < b0 + 16 && i < span; ++i) out[i] = stage[i];
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

// A lane's explicit bytes as a little-endian string of 16 bytes (first byte
// lowest), from up to three aligned 8-byte loads.  Only for ranges whose
// covering words lie inside the stream (checked by the caller).
__device__ __forceinline__ void load_string16(const uint8_t* p, uint32_t count, uint32_t (&r)[4]) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    const uint64_t* q = reinterpret_cast<const uint64_t*>(a & ~uintptr_t{7});
    const uint32_t skip = static_cast<uint32_t>(a & 7);
    const uint32_t words = (skip + count + 7) / 8;  // 0..3
    uint64_t q0 = 0, q1 = 0, q2 = 0;
    if (words > 0) q0 = __ldg(q);
    if (words > 1) q1 = __ldg(q + 1);
    if (words > 2) q2 = __ldg(q + 2);
    uint32_t w[6] = {static_cast<uint32_t>(q0), static_cast<uint32_t>(q0 >> 32), static_cast<uint32_t>(q1),
                     static_cast<uint32_t>(q1 >> 32), static_cast<uint32_t>(q2), static_cast<uint32_t>(q2 >> 32)};
    const bool drop = skip >= 4;  // whole words first, then bytes
    const uint32_t s = 8 * (skip & 3);
#pragma unroll
    for (int i = 0; i < 5; ++i) w[i] = drop ? w[i + 1] : w[i];
#pragma unroll
    for (int i = 0; i < 4; ++i) r[i] = __funnelshift_rc(w[i], w[i + 1], s);
}

// Takes the next n (<= 4) bytes of the string as the explicit bytes of a
// pattern whose first `lead` bytes are copied: the pattern's bytes lead..
// lead+n-1, most significant first.
__device__ __forceinline__ uint32_t take_explicit(uint32_t (&r)[4], uint32_t n, uint32_t lead) {
    const uint32_t bytes = n >= 4 ? r[0] : r[0] & ((1u << (8 * n)) - 1u);
    const uint32_t s = 8 * n;
    r[0] = __funnelshift_rc(r[0], r[1], s);
    r[1] = __funnelshift_rc(r[1], r[2], s);
    r[2] = __funnelshift_rc(r[2], r[3], s);
    r[3] = __funnelshift_rc(r[3], 0u, s);
    return __byte_perm(bytes, 0, 0x0123) >> (8 * lead);  // lead <= 3
}

// Eight CTAs per SM (32 registers) where that spills nothing: the decoder
// waits on three dependent loads per block, and full occupancy hides them
// (f32 block 128: 547-598 -> 669-760 GB/s against 39 registers, bench/NOTES.md).
template <class T, int V>
constexpr int kDecodeMinCtas = sizeof(T) == 4 && V <= 4 ? 8 : 1;

template <class T, int V>
__global__ void __launch_bounds__(kThreads, kDecodeMinCtas<T, V>)
    fast_decode_kernel(const uint8_t* __restrict__ codes, const T* __restrict__ mids, FastLayout layout,
                       const uint64_t* __restrict__ lead_rank, const uint8_t* __restrict__ leads, uint64_t leads_size,
                       const uint64_t* __restrict__ byte_offset, const uint8_t* __restrict__ bytes,
                       uint64_t bytes_size, bool aligned, T* __restrict__ out, uint32_t* __restrict__ corrupt) {
    using Bits = typename FastTraits<T>::Bits;
    const uint64_t first = first_block_of_warp<1>();
    if (first >= layout.num_blocks) return;  // warp-uniform
    const BlockMeta<T> meta = load_meta<T, 1>(first, layout.num_blocks, codes, mids, lead_rank, byte_offset);
    WarpBlock wb;
    warp_block<V>(layout, first, wb);
    const uint32_t code = __shfl_sync(kFull, meta.code, 0);
    const T mu = __shfl_sync(kFull, meta.mu, 0);
    T x[V];
    if (code == kFastConstant || !fast_code_valid<T>(static_cast<uint8_t>(code))) {
#pragma unroll
        for (int k = 0; k < V; ++k) x[k] = mu;  // a bad code was flagged by the flags kernel
        store_lane<T, V>(out, layout, wb, aligned, x);
        return;
    }

    // Round trip 2: the lead codes, checked against the stream once per block.
    const uint64_t lead_base = __shfl_sync(kFull, meta.lead_rank, 0) * (layout.block / 4);
    const uint32_t lead_bytes = FastLayout::lead_bytes(wb.len);
    if (lead_base + lead_bytes > leads_size) {
        if (wb.lane == 0) atomicOr(corrupt, 1u);
        return;
    }
    uint32_t bits = 0;
    if constexpr (V == 2) {
        if (wb.count) bits = (leads[lead_base + wb.lane / 2] >> (4 * (wb.lane & 1))) & 0xfu;
    } else {
#pragma unroll
        for (int i = 0; i < V / 4; ++i)
            if (wb.lane * (V / 4) + i < lead_bytes) bits |= uint32_t{leads[lead_base + wb.lane * (V / 4) + i]} << (8 * i);
    }
    const uint32_t kept = fast_kept_bytes<T>(static_cast<uint8_t>(code));
    uint32_t lead[V];
    uint32_t count = 0;
#pragma unroll
    for (int k = 0; k < V; ++k) {
        const uint32_t l = (bits >> (2 * k)) & 3u;
        lead[k] = k < static_cast<int>(wb.count) ? (l < kept ? l : kept) : kept;
        count += kept - lead[k];
    }

    // Round trip 3: each lane's explicit bytes, at offsets from a warp scan;
    // the block's range is checked once.
    const uint32_t before = warp_exclusive_sum(count, wb.lane);
    const uint32_t total = __shfl_sync(kFull, before + count, 31);
    const uint64_t block_at = __shfl_sync(kFull, meta.byte_offset, 0);
    if (block_at + total > bytes_size) {
        if (wb.lane == 0) atomicOr(corrupt, 1u);
        return;
    }
    const uint8_t* src = bytes + block_at + before;
    Bits known[V];
    if constexpr (sizeof(T) == 4) {
        // Three aligned 8-byte loads when they stay inside the stream (all
        // but the stream's first and last few lanes), else byte loads.
        // Groups of up to four values (at most 16 bytes).
#pragma unroll
        for (int g = 0; g < V; g += 4) {
            uint32_t group = 0;
#pragma unroll
            for (int k = g; k < g + 4 && k < V; ++k) group += kept - lead[k];
            const uintptr_t lo = reinterpret_cast<uintptr_t>(src) & ~uintptr_t{7};
            const bool words = lo >= reinterpret_cast<uintptr_t>(bytes) &&
                               lo + 24 <= reinterpret_cast<uintptr_t>(bytes + bytes_size);
            uint32_t r[4] = {0, 0, 0, 0};
            if (words) {
                load_string16(src, group, r);
            } else {
                for (uint32_t i = 0; i < group; ++i) r[i / 4] |= uint32_t{src[i]} << (8 * (i % 4));
            }
#pragma unroll
            for (int k = g; k < g + 4 && k < V; ++k) known[k] = take_explicit(r, kept - lead[k], lead[k]);
            src += group;
        }
    } else {
#pragma unroll
        for (int k = 0; k < V; ++k) {
            known[k] = 0;
#pragma unroll
            for (uint32_t j = 0; j < sizeof(T); ++j) {
                if (j < lead[k] || j >= kept) continue;
                known[k] |= static_cast<Bits>(*src++) << (8 * (sizeof(T) - 1 - j));
            }
        }
    }

    // The copied bytes: the lane's values as one step (bytes it sets, and
    // which), scanned across the warp, so each lane starts from the pattern
    // the values before it leave (0 for bytes nothing before it set).
    Bits seg_known = 0, seg_mask = 0;
#pragma unroll
    for (int k = 0; k < V; ++k) {
        const Bits mask = ~top_bytes<Bits>(lead[k]);
        seg_known = known[k] | (seg_known & ~mask);
        seg_mask |= mask;
    }
#pragma unroll
    for (int d = 1; d < 32; d *= 2) {
        const Bits up_known = __shfl_up_sync(kFull, seg_known, d), up_mask = __shfl_up_sync(kFull, seg_mask, d);
        if (wb.lane >= static_cast<uint32_t>(d)) {
            seg_known |= up_known & ~seg_mask;
            seg_mask |= up_mask;
        }
    }
    Bits previous = __shfl_up_sync(kFull, seg_known, 1);
    if (wb.lane == 0) previous = 0;
    const uint8_t c = static_cast<uint8_t>(code);
#pragma unroll
    for (int k = 0; k < V; ++k) {
        const Bits p = known[k] | (previous & top_bytes<Bits>(lead[k]));
        x[k] = fast_reconstruct<T>(p, mu, c);
        previous = p;
    }
    store_lane<T, V>(out, layout, wb, aligned, x);
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
    const unsigned tiles = warp_grid(nb, kEncodeBlocksPerWarp<T, V>);
    out.codes.allocate(nb, s);
    out.mids.allocate(nb, s);
    out.leads.allocate(nb * (layout.block / 4), s);      // worst cases; trimmed below
    out.bytes.allocate(layout.num_elements * sizeof(T), s);
    out.totals.allocate(2, s);
    size_t state_bytes = 0;
    GSZ_CUDA(CountsTileState::AllocationSize(static_cast<int>(tiles), state_bytes));
    out.temp.allocate(state_bytes, s);
    CountsTileState state;
    GSZ_CUDA(state.Init(static_cast<int>(tiles), out.temp.data(), state_bytes));
    counts_tile_init_kernel<<<(tiles + 255) / 256, 256, 0, s>>>(state, static_cast<int>(tiles));
    GSZ_CUDA_LAUNCHED("counts_tile_init_kernel");
    fast_encode_kernel<T, V><<<tiles, kThreads, 0, s>>>(d_data, layout, eb, is_aligned(d_data), state,
                                                        out.codes.data(), out.mids.data(), out.leads.data(),
                                                        out.bytes.data(), out.totals.data());
    GSZ_CUDA_LAUNCHED("fast_encode_kernel");

    // Stream sizes: every non-constant block has block/4 lead bytes but a
    // short last one.
    uint64_t totals[2];
    uint8_t last_code = 0;
    GSZ_CUDA(cudaMemcpyAsync(totals, out.totals.data(), sizeof totals, cudaMemcpyDeviceToHost, s));
    GSZ_CUDA(cudaMemcpyAsync(&last_code, out.codes.data() + nb - 1, 1, cudaMemcpyDeviceToHost, s));
    GSZ_CUDA(cudaStreamSynchronize(s));
    uint64_t lead_total = totals[0] * (layout.block / 4);
    if (last_code != kFastConstant)
        lead_total -= layout.block / 4 - FastLayout::lead_bytes(layout.block_len(nb - 1));
    out.leads.allocate(lead_total, s);   // within capacity: only the size changes
    out.bytes.allocate(totals[1], s);
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
