// CUDA kernels of the `fast` predictor.  A group of lanes owns a block, each
// lane 64 bytes of consecutive values (16 f32 or 8 f64; 8 lanes per f32 block
// of 128), so per-block work (reductions, scans, stream positions) is shared
// by many values per lane.  Encoding is one pass (plan, stage the bytes in
// shared memory, write them at offsets from a decoupled look-back); decoding
// is flags -> scan -> explicit-byte counts -> scan -> decode, where the bytes
// each value copies from its predecessor are resolved by a scan over (known
// bytes, mask) pairs across the group instead of a serial walk (cuSZx's
// index propagation, in another form).
#include "predict/fast/fast_cuda.hpp"

#include "runtime/cuda/stage_trace.hpp"
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

// ---- Encoding: one pass ---------------------------------------------------
// A CTA owns a tile of consecutive blocks: a group of G lanes per block, each
// lane holding kLaneValues consecutive values (64 bytes), 32 / G blocks per
// warp, 8 warps.  It loads them, plans them, stages their explicit bytes in
// shared memory and learns where its output starts from a decoupled
// look-back over the tiles before it (CUB's tile state), so the input is
// read once and every output byte is written once, with 16-byte stores.

template <class T>
constexpr int kLaneValues = 64 / static_cast<int>(sizeof(T));

// Lanes per block for a block of 32 * V values: 64 bytes of values per lane.
template <class T, int V>
constexpr int kLaneGroup = 32 * V / kLaneValues<T>;

// Integer keys ordered like the values they are the bits of (-0 below +0,
// NaNs beyond the infinities): the block extremes come from integer min/max.
template <class T>
struct OrderKey {
    using Bits = typename FastTraits<T>::Bits;
    using Key = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
    static constexpr Key kMagnitude = static_cast<Key>(~Bits{0} >> 1);
    __device__ static Key of(Bits b) {
        const Key k = static_cast<Key>(b);
        return k ^ ((k >> (FastTraits<T>::width - 1)) & kMagnitude);
    }
    __device__ static T value(Key k) {
        return fast_value<T>(static_cast<Bits>(k ^ ((k >> (FastTraits<T>::width - 1)) & kMagnitude)));
    }
    __device__ static Key finite_max() { return of(fast_bits(::cuda::std::numeric_limits<T>::max())); }
    __device__ static Key finite_min() { return of(fast_bits(-::cuda::std::numeric_limits<T>::max())); }
};

// Reductions and votes over the G lanes of a group (aligned runs of G lanes).
template <int G, class K>
__device__ __forceinline__ K group_min(K v) {
#pragma unroll
    for (int d = 1; d < G; d *= 2) {
        const K o = __shfl_xor_sync(kFull, v, d);
        v = o < v ? o : v;
    }
    return v;
}

template <int G, class K>
__device__ __forceinline__ K group_max(K v) {
#pragma unroll
    for (int d = 1; d < G; d *= 2) {
        const K o = __shfl_xor_sync(kFull, v, d);
        v = o > v ? o : v;
    }
    return v;
}

template <int G>
__device__ __forceinline__ bool group_all(bool p, uint32_t group) {
    constexpr uint32_t kOnes = G == 32 ? kFull : (1u << G) - 1u;
    const uint32_t mask = kOnes << (group * G);
    return (__ballot_sync(kFull, p) & mask) == mask;
}

// The decision of fast_cpu.cpp's encode_block up to the per-value check, for
// a block's extremes: non-finite -> raw; constant; the first truncation
// (check set when it is not provably safe); raw when no truncation helps.
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

// ORs a value's explicit bytes (the top n bytes of e, most significant
// first) into the staging words at byte offset `at` (f64: up to 8 bytes).
// Neighbouring values share words, so the stage starts zeroed.
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

struct EncodeShared {
    static constexpr int kStageBytes = kThreads * 64 + 32;  // a tile's values, raw, and the skew
    uint32_t warp_blocks[kWarps], warp_bytes[kWarps];
    StreamCounts prefix;
    typename CountsPrefixOp::TempStorage lookback;
    alignas(16) uint32_t stage[kStageBytes / 4];
};

// Four CTAs per SM (64 registers): the look-back and the barriers around it
// stall a CTA, so residency matters (bench/NOTES.md).
template <class T, int G>
__global__ void __launch_bounds__(kThreads, 4)
    fast_encode_kernel(const T* __restrict__ data, FastLayout layout, double eb, bool aligned,
                       CountsTileState tile_state, uint8_t* __restrict__ codes, T* __restrict__ mids,
                       uint8_t* __restrict__ leads, uint8_t* __restrict__ bytes, uint64_t* __restrict__ totals) {
    using Bits = typename FastTraits<T>::Bits;
    using Key = typename OrderKey<T>::Key;
    constexpr int VL = kLaneValues<T>;
    constexpr int kBlocksPerWarp = 32 / G;
    __shared__ EncodeShared sh;
    const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const uint32_t gl = lane % G, group = lane / G;
    const int tile = static_cast<int>(blockIdx.x);
    const uint64_t b = (uint64_t{blockIdx.x} * kWarps + warp) * kBlocksPerWarp + group;
    const bool valid = b < layout.num_blocks;
    const uint32_t len = valid ? layout.block_len(b) : 0;
    const uint32_t first = gl * VL;
    const uint32_t count = first >= len ? 0 : (len - first < VL ? len - first : VL);

    T x[VL];
    if (aligned && count == VL) {
        const uint4* src = reinterpret_cast<const uint4*>(data + b * layout.block + first);
        uint4 q[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) q[i] = __ldg(src + i);
        memcpy(x, q, 64);
    } else {
#pragma unroll
        for (int k = 0; k < VL; ++k) x[k] = k < static_cast<int>(count) ? data[b * layout.block + first + k] : T(0);
    }

    // The block's extremes, its plan, and the per-value check where needed
    // (rare): the first code, then one bit more, then raw, as encode_block.
    Key lo = ::cuda::std::numeric_limits<Key>::max(), hi = ::cuda::std::numeric_limits<Key>::min();
#pragma unroll
    for (int k = 0; k < VL; ++k) {
        if (k < static_cast<int>(count)) {
            const Key key = OrderKey<T>::of(fast_bits(x[k]));
            lo = key < lo ? key : lo;
            hi = key > hi ? key : hi;
        }
    }
    lo = group_min<G>(lo);
    hi = group_max<G>(hi);
    uint8_t code = kFastConstant;
    T mu = 0;
    bool check = false;
    if (valid) plan_from_extremes<T>(lo, hi, eb, code, mu, check);
    if (__any_sync(kFull, check)) {
        const bool pass = group_all<G>(!check || lane_within<T, VL>(x, count, mu, code, eb), group);
        bool again = false;
        if (check && !pass) {
            const uint8_t next = fast_next_code<T>(code);
            if (next == kFastRaw) {
                code = kFastRaw;
                mu = 0;
            } else {
                code = next;
                again = !fast_truncation_safe(OrderKey<T>::value(lo), OrderKey<T>::value(hi), mu, next, eb);
            }
        }
        if (__any_sync(kFull, again)) {
            const bool pass_again = group_all<G>(!again || lane_within<T, VL>(x, count, mu, code, eb), group);
            if (again && !pass_again) {
                code = kFastRaw;
                mu = 0;
            }
        }
    }
    if (valid && gl == 0) {
        codes[b] = code;
        mids[b] = mu;
    }
    const bool coded = valid && code != kFastConstant;  // uniform within the group

    // Patterns, lead codes (2 bits each, packed) and explicit byte counts.
    const uint32_t kept = coded ? fast_kept_bytes<T>(code) : 0;
    Bits p[VL];
#pragma unroll
    for (int k = 0; k < VL; ++k) p[k] = coded && k < static_cast<int>(count) ? fast_pattern(x[k], mu, code) : Bits{0};
    Bits previous = __shfl_up_sync(kFull, p[VL - 1], 1, G);
    if (gl == 0) previous = 0;
    uint32_t lead_bits = 0, n_bytes = 0;
#pragma unroll
    for (int k = 0; k < VL; ++k) {  // branch-free: p = 0 and kept = 0 where nothing is stored
        const uint32_t lead = fast_lead<T>(p[k], previous, kept);
        const bool stored = k < static_cast<int>(count);
        lead_bits |= (stored ? lead : 0u) << (2 * k);
        n_bytes += stored ? kept - lead : 0u;
        previous = p[k];
    }

    // Offsets: the lane in its group, the group in its warp, the warp in the tile.
    uint32_t inclusive = n_bytes;
#pragma unroll
    for (int d = 1; d < G; d *= 2) {
        const uint32_t up = __shfl_up_sync(kFull, inclusive, d, G);
        if (gl >= static_cast<uint32_t>(d)) inclusive += up;
    }
    uint32_t group_byte0 = 0, warp_bytes = 0;
#pragma unroll
    for (int g = 0; g < kBlocksPerWarp; ++g) {
        const uint32_t t = __shfl_sync(kFull, inclusive, g * G + G - 1);
        group_byte0 += static_cast<uint32_t>(g) < group ? t : 0u;
        warp_bytes += t;
    }
    const uint32_t coded_groups = __ballot_sync(kFull, coded && gl == 0);  // bit group * G per coded block
    const uint32_t group_block0 = __popc(coded_groups & ((1u << (group * G)) - 1u));
    if (lane == 0) {
        sh.warp_blocks[warp] = __popc(coded_groups);
        sh.warp_bytes[warp] = warp_bytes;
    }
    __syncthreads();

    uint32_t tile_blocks = 0, tile_bytes = 0, warp_block0 = 0, warp_byte0 = 0;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
        const uint32_t nb = sh.warp_blocks[w], n = sh.warp_bytes[w];
        if (w < static_cast<int>(warp)) {
            warp_block0 += nb;
            warp_byte0 += n;
        }
        tile_blocks += nb;
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

    if (coded) {
        // Lead codes straight to their place: VL / 4 bytes per lane.
        uint8_t* dst = leads + (prefix.blocks + warp_block0 + group_block0) * (layout.block / 4) + gl * (VL / 4);
        const uint32_t lead_bytes = FastLayout::lead_bytes(len);
        if constexpr (VL == 16) {
            if (len == layout.block && (reinterpret_cast<uintptr_t>(dst) & 3) == 0) {
                *reinterpret_cast<uint32_t*>(dst) = lead_bits;
            } else {
#pragma unroll
                for (int i = 0; i < 4; ++i)
                    if (gl * 4 + i < lead_bytes) dst[i] = static_cast<uint8_t>(lead_bits >> (8 * i));
            }
        } else {
#pragma unroll
            for (int i = 0; i < VL / 4; ++i)
                if (gl * (VL / 4) + i < lead_bytes) dst[i] = static_cast<uint8_t>(lead_bits >> (8 * i));
        }

        // Explicit bytes into the stage, in stream order.
        uint32_t at = skew + warp_byte0 + group_byte0 + inclusive - n_bytes;
        if constexpr (sizeof(T) == 4) {
            // Whole words from a 64-bit accumulator: only the lane's first and
            // last words can hold a neighbour's bytes, so only they are ORed.
            uint32_t word = at >> 2, fill = at & 3;
            uint64_t acc = 0;
            bool shared = true;
#pragma unroll
            for (int k = 0; k < VL; ++k) {
                if (k < static_cast<int>(count)) {
                    const uint32_t lead = (lead_bits >> (2 * k)) & 3u;
                    const uint32_t le = __byte_perm(p[k] << (8 * lead), 0, 0x0123);  // first explicit byte lowest
                    acc |= uint64_t{le} << (8 * fill);
                    fill += kept - lead;
                    if (fill >= 4) {
                        if (shared) atomicOr(&sh.stage[word], static_cast<uint32_t>(acc));
                        else sh.stage[word] = static_cast<uint32_t>(acc);
                        shared = false;
                        acc >>= 32;
                        fill -= 4;
                        ++word;
                    }
                }
            }
            if (fill) atomicOr(&sh.stage[word], static_cast<uint32_t>(acc));
        } else {
#pragma unroll
            for (int k = 0; k < VL; ++k) {
                if (k < static_cast<int>(count)) {
                    const uint32_t lead = (lead_bits >> (2 * k)) & 3u;
                    stage_bytes(sh.stage, at, p[k] << (8 * lead), kept - lead);
                    at += kept - lead;
                }
            }
        }
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
    const unsigned tiles = warp_grid(nb, 32 / kLaneGroup<T, V>);
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
    fast_encode_kernel<T, kLaneGroup<T, V>><<<tiles, kThreads, 0, s>>>(d_data, layout, eb, is_aligned(d_data), state,
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
    const unsigned grid = warp_grid(nb, 32 / kLaneGroup<T, V>);
    cuda::StageTrace trace(s, "fast decompress");
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
    trace.mark("stream positions");
    fast_decode_kernel<T, kLaneGroup<T, V>><<<grid, kThreads, 0, s>>>(
        d_codes, d_mids, layout, sc.lead_rank.data(), d_leads, leads_size, sc.byte_offset.data(), d_bytes, bytes_size,
        is_aligned(d_out), d_out, sc.corrupt.data());
    GSZ_CUDA_LAUNCHED("fast_decode_kernel");
    trace.mark("values");
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
