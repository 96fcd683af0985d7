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

// Decoding, pass 4: a group of G lanes per block, each lane holding
// kLaneValues consecutive values (64 bytes), so the per-block work (stream
// positions, scans, range checks) is shared by 16 (f32) or 8 (f64) values
// per lane.  The warp's blocks are consecutive, so their explicit bytes are
// one range of the stream: staged in shared memory with 16-byte loads, then
// read by each value at its own offset.
template <class T>
constexpr int kLaneValues = 64 / static_cast<int>(sizeof(T));

constexpr int kStageWarpBytes = 32 * 64 + 48;  // 32 lanes x 64 bytes, 16-byte skew, over-reads of 8

template <class T, int G>
__global__ void __launch_bounds__(kThreads)
    fast_decode_kernel(const uint8_t* __restrict__ codes, const T* __restrict__ mids, FastLayout layout,
                       const uint64_t* __restrict__ lead_rank, const uint8_t* __restrict__ leads, uint64_t leads_size,
                       const uint64_t* __restrict__ byte_offset, const uint8_t* __restrict__ bytes,
                       uint64_t bytes_size, bool aligned, T* __restrict__ out, uint32_t* __restrict__ corrupt) {
    using Bits = typename FastTraits<T>::Bits;
    constexpr int VL = kLaneValues<T>;
    constexpr int kBlocksPerWarp = 32 / G;
    __shared__ alignas(16) uint8_t stage_all[kWarps][kStageWarpBytes];
    const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const uint32_t gl = lane % G;  // lane in its group
    const uint64_t first_block = (blockIdx.x * uint64_t{kWarps} + warp) * kBlocksPerWarp;
    if (first_block >= layout.num_blocks) return;  // warp-uniform
    const uint64_t b = first_block + lane / G;
    const bool valid = b < layout.num_blocks;

    // Round trip 1: the block's code, mid value and stream positions (one
    // address per group: broadcast loads).
    uint32_t code = kFastConstant;
    T mu = 0;
    uint64_t rank = 0, at = 0;
    if (valid) {
        code = codes[b];
        mu = mids[b];
        rank = lead_rank[b];
        at = byte_offset[b];
    }
    const uint32_t len = valid ? layout.block_len(b) : 0;
    const uint32_t first = gl * VL;
    const uint32_t count = first >= len ? 0 : (len - first < VL ? len - first : VL);
    const bool coded = valid && code != kFastConstant && fast_code_valid<T>(static_cast<uint8_t>(code));
    const uint32_t kept = coded ? fast_kept_bytes<T>(static_cast<uint8_t>(code)) : 0;

    // Round trip 2: the lane's lead codes (VL / 4 bytes), range-checked per block.
    const uint64_t lead_base = rank * (layout.block / 4);
    const uint32_t lead_bytes = FastLayout::lead_bytes(len);
    bool ok = !coded || lead_base + lead_bytes <= leads_size;
    uint32_t bits = 0;
    if (coded && ok) {
#pragma unroll
        for (int i = 0; i < VL / 4; ++i)
            if (gl * (VL / 4) + i < lead_bytes) bits |= uint32_t{leads[lead_base + gl * (VL / 4) + i]} << (8 * i);
    }
    // Lead code and explicit byte count of value k (values past the block's
    // end take none; their leads only shape bytes no later value reads).
    auto lead_of = [&](int k) {
        const uint32_t l = (bits >> (2 * k)) & 3u;
        return l < kept ? l : kept;
    };
    auto explicit_of = [&](int k) { return k < static_cast<int>(count) ? kept - lead_of(k) : 0u; };
    uint32_t count_bytes = 0;
#pragma unroll
    for (int k = 0; k < VL; ++k) count_bytes += explicit_of(k);
    uint32_t inclusive = count_bytes;
#pragma unroll
    for (int d = 1; d < G; d *= 2) {
        const uint32_t up = __shfl_up_sync(kFull, inclusive, d, G);
        if (gl >= static_cast<uint32_t>(d)) inclusive += up;
    }
    const uint32_t total = __shfl_sync(kFull, inclusive, G - 1, G);
    ok = ok && (!coded || at + total <= bytes_size);
    if (!ok && gl == 0) atomicOr(corrupt, 1u);
    const bool work = coded && ok;  // uniform within the group

    // Round trip 3: the warp's explicit bytes into its stage, 16 bytes at a time.
    const uint64_t warp_at = __shfl_sync(kFull, at, 0) & ~uint64_t{15};
    uint8_t* stage = stage_all[warp];
    if (work) {
        const bool vector = (reinterpret_cast<uintptr_t>(bytes) & 15) == 0;
        for (uint64_t c = (at & ~uint64_t{15}) + 16 * gl; c < at + total; c += 16 * G) {
            uint8_t* dst = stage + (c - warp_at);
            if (vector && c + 16 <= bytes_size) {
                *reinterpret_cast<uint4*>(dst) = __ldg(reinterpret_cast<const uint4*>(bytes + c));
            } else {
                for (uint32_t i = 0; i < 16 && c + i < bytes_size; ++i) dst[i] = bytes[c + i];
            }
        }
    }
    __syncwarp();

    // Each value's explicit bytes from the stage (branch-free: a value with
    // none reads a word it masks away): the bytes lead..kept-1 of its
    // pattern, most significant first.
    Bits known[VL];
    Bits seg_known = 0, seg_mask = 0;  // what the lane's values leave, and which bytes they set
    uint32_t s = work ? static_cast<uint32_t>(at + (inclusive - count_bytes) - warp_at) : 0;
#pragma unroll
    for (int k = 0; k < VL; ++k) {
        const uint32_t lead = lead_of(k), n = explicit_of(k);
        const uint32_t* w = reinterpret_cast<const uint32_t*>(stage + (s & ~3u));
        const uint32_t sh = 8 * (s & 3u);
        if constexpr (sizeof(T) == 4) {
            const uint32_t v = __funnelshift_r(w[0], w[1], sh) & __funnelshift_lc(0xffffffffu, 0u, 8 * n);
            known[k] = __byte_perm(v, 0, 0x0123) >> (8 * lead);
        } else {
            const uint32_t lo = __funnelshift_r(w[0], w[1], sh) & __funnelshift_lc(0xffffffffu, 0u, 8 * n);
            const uint32_t hi = n > 4 ? __funnelshift_r(w[1], w[2], sh) & __funnelshift_lc(0xffffffffu, 0u, 8 * n - 32) : 0u;
            const uint64_t be = (uint64_t{__byte_perm(lo, 0, 0x0123)} << 32) | __byte_perm(hi, 0, 0x0123);
            known[k] = be >> (8 * lead);
        }
        s += n;
        const Bits copied = ~(~Bits{0} >> (8 * lead));  // the top `lead` bytes (lead <= 3)
        seg_known = known[k] | (seg_known & copied);
        seg_mask |= ~copied;
    }

    // The bytes a lane's first value copies come from the lanes before it in
    // the group: a scan over (bytes left, bytes set) pairs.
#pragma unroll
    for (int d = 1; d < G; d *= 2) {
        const Bits up_known = __shfl_up_sync(kFull, seg_known, d, G), up_mask = __shfl_up_sync(kFull, seg_mask, d, G);
        if (gl >= static_cast<uint32_t>(d)) {
            seg_known |= up_known & ~seg_mask;
            seg_mask |= up_mask;
        }
    }
    Bits previous = __shfl_up_sync(kFull, seg_known, 1, G);
    if (gl == 0) previous = 0;
    if (!valid || count == 0) return;

    T x[VL];
    if (work) {
        const uint8_t c8 = static_cast<uint8_t>(code);
#pragma unroll
        for (int k = 0; k < VL; ++k) {
            const Bits p = known[k] | (previous & ~(~Bits{0} >> (8 * lead_of(k))));
            x[k] = fast_reconstruct<T>(p, mu, c8);
            previous = p;
        }
    } else {
#pragma unroll
        for (int k = 0; k < VL; ++k) x[k] = mu;
    }
    T* dst = out + b * layout.block + first;
    if (aligned && count == VL) {
#pragma unroll
        for (int i = 0; i < VL * static_cast<int>(sizeof(T)) / 16; ++i) {
            uint4 q;
            memcpy(&q, reinterpret_cast<const uint8_t*>(x) + 16 * i, 16);
            __stcs(reinterpret_cast<uint4*>(dst) + i, q);
        }
    } else {
#pragma unroll
        for (int k = 0; k < VL; ++k)
            if (k < static_cast<int>(count)) dst[k] = x[k];
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

// Lanes per block in the decoder: 64 bytes of values per lane.
template <class T, int V>
constexpr int kDecodeGroup = 32 * V / kLaneValues<T>;

template <class T, int V>
void decode_with(const uint8_t* d_codes, const T* d_mids, const uint8_t* d_leads, uint64_t leads_size,
                 const uint8_t* d_bytes, uint64_t bytes_size, const FastLayout& layout, T* d_out,
                 FastDecodeScratch& sc, cudaStream_t s) {
    const uint64_t nb = layout.num_blocks;
    const unsigned grid = warp_grid(nb, 32 / kDecodeGroup<T, V>);
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
    fast_decode_kernel<T, kDecodeGroup<T, V>><<<grid, kThreads, 0, s>>>(
        d_codes, d_mids, layout, sc.lead_rank.data(), d_leads, leads_size, sc.byte_offset.data(), d_bytes, bytes_size,
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
