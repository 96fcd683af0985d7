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

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

namespace gsz::predict {

namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr unsigned kFull = 0xffffffffu;
constexpr int kEncodeWarps = 8;  // 4 and 16 measured within 3% (bench/NOTES.md)

// ---- Encoding: one pass ---------------------------------------------------
// A tile is 8 warps' worth of consecutive blocks: a group of G lanes per
// block, each lane holding kLaneValues consecutive values (64 bytes), 32 / G
// blocks per warp.  A CTA codes two tiles: it loads, plans and stages each
// one's explicit bytes in shared memory, and learns where its output starts
// from a decoupled look-back over the tiles before it (CUB's tile state), so
// the input is read once and every output byte is written once, with 16-byte
// stores.

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

// A block's extremes.  f32: min/max that propagate NaN (PTX min.NaN, one
// instruction each), so the block is finite exactly when both extremes are;
// f64 (no min.NaN): integer min/max of order-preserving keys.  The sign of a
// zero extreme may differ from the CPU's; no decision depends on it.
__device__ __forceinline__ float min_nan(float a, float b) {
#if __CUDA_ARCH__ >= 800
    float d;
    asm("min.NaN.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b));
    return d;
#else
    return a != a || b != b ? a + b : fminf(a, b);
#endif
}
__device__ __forceinline__ float max_nan(float a, float b) {
#if __CUDA_ARCH__ >= 800
    float d;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b));
    return d;
#else
    return a != a || b != b ? a + b : fmaxf(a, b);
#endif
}

template <class T>
struct Extremes {  // f64
    using Key = typename OrderKey<T>::Key;
    Key lo = ::cuda::std::numeric_limits<Key>::max(), hi = ::cuda::std::numeric_limits<Key>::min();
    __device__ __forceinline__ void take(T v) {
        const Key key = OrderKey<T>::of(fast_bits(v));
        lo = key < lo ? key : lo;
        hi = key > hi ? key : hi;
    }
    template <int G>
    __device__ __forceinline__ void reduce() {
        lo = group_min<G>(lo);
        hi = group_max<G>(hi);
    }
    __device__ __forceinline__ bool finite() const {
        return lo >= OrderKey<T>::finite_min() && hi <= OrderKey<T>::finite_max();
    }
    __device__ __forceinline__ T low() const { return OrderKey<T>::value(lo); }
    __device__ __forceinline__ T high() const { return OrderKey<T>::value(hi); }
};

template <>
struct Extremes<float> {
    float lo = ::cuda::std::numeric_limits<float>::infinity(), hi = -::cuda::std::numeric_limits<float>::infinity();
    __device__ __forceinline__ void take(float v) {
        lo = min_nan(lo, v);
        hi = max_nan(hi, v);
    }
    template <int G>
    __device__ __forceinline__ void reduce() {
#pragma unroll
        for (int d = 1; d < G; d *= 2) {
            lo = min_nan(lo, __shfl_xor_sync(kFull, lo, d));
            hi = max_nan(hi, __shfl_xor_sync(kFull, hi, d));
        }
    }
    __device__ __forceinline__ bool finite() const { return isfinite(lo) && isfinite(hi); }
    __device__ __forceinline__ float low() const { return lo; }
    __device__ __forceinline__ float high() const { return hi; }
};

// fast_truncation_safe for f32 in float arithmetic rounded upward, without
// branches: each quantity bounds the real one from above.  With D >= |x - mu|,
// M >= |x|, u = 2^-24 and T = 2^(E(D(1+u)) - kept mantissa bits), one value
// errs by at most  u D  (x - mu)  +  T  (truncation)  +  u (M + T + u D)
// (mu + v'), i.e. by <= T (1 + u) + u (M + D (1 + u)).  As with the double
// test, a block it does not pass is checked value by value, so the archive
// never depends on which test ran.
__device__ __forceinline__ bool truncation_safe(float lo, float hi, float mu, uint8_t code, double eb) {
    constexpr float u = 0x1p-24f;
    const float d = fmaxf(__fsub_ru(mu, lo), __fsub_ru(hi, mu));
    const float dv = __fadd_ru(d, __fmul_ru(d, u));  // >= |fl(x - mu)|
    const int e = max(static_cast<int>((__float_as_uint(dv) >> 23) & 0xffu), 1) - 127;  // subnormals: -126
    const int t = e - (code - 1 - FastTraits<float>::exp_bits);  // >= -148; 128 (infinity) when dv is
    const float trunc = t >= -126 ? __uint_as_float(static_cast<uint32_t>(t + 127) << 23) : __uint_as_float(1u << (t + 149));
    const float m = fmaxf(fabsf(lo), fabsf(hi));
    const float total = __fadd_ru(__fadd_ru(trunc, __fmul_ru(trunc, u)), __fmul_ru(__fadd_ru(m, dv), u));
    return total <= __double2float_rd(eb);  // a real error <= a float <= eb passes the double comparison
}

__device__ __forceinline__ bool truncation_safe(double lo, double hi, double mu, uint8_t code, double eb) {
    return fast_truncation_safe(lo, hi, mu, code, eb);
}

// The decision of fast_cpu.cpp's encode_block up to the per-value check, for
// a block's extremes: non-finite -> raw; constant; the first truncation
// (check set when it is not provably safe); raw when no truncation helps.
template <class T>
__device__ __forceinline__ void plan_from_extremes(const Extremes<T>& e, double eb, uint8_t& code, T& mu,
                                                   bool& check) {
    code = kFastRaw;
    mu = 0;
    check = false;
    if (!e.finite()) return;
    const T lo = e.low(), hi = e.high();
    const FastFirstPlan<T> plan = fast_first_plan(lo, hi, eb);
    code = plan.code;
    mu = plan.mu;
    check = code != kFastConstant && code != kFastRaw && !truncation_safe(lo, hi, mu, code, eb);
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

// The stage holds the bytes in big-endian words: a stream's byte t of a word
// is the word's bits 31-8t..24-8t, so a value's explicit bytes (the top
// bytes of its pattern) are placed by shifting them right, with no byte
// reversal per value; copy_out turns the words around.

// ORs a value's explicit bytes (the top n bytes of e, most significant
// first) into the staging words at byte offset `at` (f64: up to 8 bytes).
// Neighbouring values share words, so the stage starts zeroed.
__device__ __forceinline__ void stage_bytes(uint32_t* stage, uint32_t at, uint64_t e, uint32_t n) {
    if (n == 0) return;
    const uint32_t s = 8 * (at & 3);
    const uint32_t hi = static_cast<uint32_t>(e >> 32), lo = static_cast<uint32_t>(e);
    uint32_t* w = stage + (at >> 2);
    atomicOr(w, hi >> s);
    if (s + 8 * n > 32) atomicOr(w + 1, __funnelshift_r(lo, hi, s));
    if (s + 8 * n > 64) atomicOr(w + 2, lo << (32 - s));
}

// The look-back's value, packed in one 64-bit word: explicit bytes above
// kCountBits bits of non-constant blocks.  One word lets CUB's tile state
// keep status and value in a single 16-byte store (no fences in the
// look-back: the 16-byte pair type needed two).  A launch covers at most
// kSegmentBlocks blocks, which keeps both fields in range (at most 2^24
// blocks and 2^24 * 256 * 8 = 2^35 bytes); longer arrays take several
// launches, each starting from the totals the previous one left.
constexpr int kCountBits = 25;
constexpr uint64_t kSegmentBlocks = uint64_t{1} << 24;
constexpr uint64_t kBlocksMask = (uint64_t{1} << kCountBits) - 1;

struct AddCounts {
    __device__ uint64_t operator()(uint64_t a, uint64_t b) const { return a + b; }
};
using CountsTileState = cub::ScanTileState<uint64_t>;

using CountsPrefixOp = cub::TilePrefixCallbackOp<uint64_t, AddCounts, CountsTileState>;

__global__ void counts_tile_init_kernel(CountsTileState state, int tiles) { state.InitializeStatus(tiles); }

template <int W>
struct EncodeShared {
    static constexpr int kStageWords = W * 32 * 16 + 4;  // a tile's values, raw, and the copy-out's over-read
    uint32_t warp_blocks[W], warp_bytes[W];
    uint64_t prefix;  // of the CTA's first tile
    typename CountsPrefixOp::TempStorage lookback;
    alignas(16) uint32_t stage[2][kStageWords];  // the CTA's two tiles
};

// What a lane of a block's group computes before it knows where its bytes go.
template <class T>
struct LaneCode {
    using Bits = typename FastTraits<T>::Bits;
    Bits p[kLaneValues<T>];  // patterns shifted left by their lead bytes: the explicit bytes on top (0 where nothing is stored)
    uint32_t lead_bits = 0;  // 2-bit lead codes, value k at bits 2k
    uint32_t n_bytes = 0;    // explicit bytes of the lane's values
    uint32_t kept = 0;       // the block's kept bytes (0 when constant)
    uint8_t code = kFastConstant;
    T mu = 0;
};

// 8 * (leading zeros / 8) of a nonzero pattern whose leading zeros are at
// most 24 (the stop bit): bfind gives the top bit's position b, and
// 31 - b = ~b & 31 (63 - b for f64).  In one asm block so that the compiler
// does not rebuild the packing of the lead codes from b (two instructions
// per value instead of one multiply-add).
__device__ __forceinline__ uint32_t lead_times8(uint32_t x) {
    uint32_t r;
    asm("{\n\t.reg .u32 b;\n\tbfind.u32 b, %1;\n\tnot.b32 b, b;\n\tand.b32 %0, b, 24;\n\t}" : "=r"(r) : "r"(x));
    return r;
}
__device__ __forceinline__ uint32_t lead_times8(uint64_t x) {
    uint32_t r;
    asm("{\n\t.reg .u32 b;\n\tbfind.u64 b, %1;\n\tnot.b32 b, b;\n\tand.b32 %0, b, 24;\n\t}" : "=r"(r) : "l"(x));
    return r;
}

// Loads a lane's values, plans the block with its group and codes the
// lane's values.  Full: every lane of the warp holds kLaneValues values (all
// blocks but a short last one), which drops the per-value guards.
template <class T, int G, bool Full>
__device__ __forceinline__ void code_lane(const T* __restrict__ src, uint32_t count, bool valid, bool aligned,
                                          uint32_t gl, uint32_t group, double eb, LaneCode<T>& lc) {
    using Bits = typename FastTraits<T>::Bits;
    constexpr int VL = kLaneValues<T>;
    auto stored = [&](int k) { return Full || k < static_cast<int>(count); };

    T x[VL];
    if (aligned && (Full || count == VL)) {
        const uint4* v = reinterpret_cast<const uint4*>(src);
        uint4 q[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) q[i] = __ldg(v + i);
        memcpy(x, q, 64);
    } else {
#pragma unroll
        for (int k = 0; k < VL; ++k) x[k] = stored(k) ? src[k] : T(0);
    }

    // The block's extremes, its plan, and the per-value check where needed
    // (rare): the first code, then one bit more, then raw, as encode_block.
    Extremes<T> ext;
#pragma unroll
    for (int k = 0; k < VL; ++k)
        if (stored(k)) ext.take(x[k]);
    ext.template reduce<G>();
    uint8_t code = kFastConstant;
    T mu = 0;
    bool check = false;
    if (valid) plan_from_extremes<T>(ext, eb, code, mu, check);
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
                again = !truncation_safe(ext.low(), ext.high(), mu, next, eb);
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
    lc.code = code;
    lc.mu = mu;
    const bool coded = valid && code != kFastConstant;  // uniform within the group

    // Patterns: a raw block's values keep their own bits; otherwise keep = 0
    // zeroes a constant block's patterns, so one branch-free form remains.
    const uint32_t kept = coded ? fast_kept_bytes<T>(code) : 0;
    lc.kept = kept;
    if (__any_sync(kFull, coded && code == kFastRaw)) {
#pragma unroll
        for (int k = 0; k < VL; ++k) lc.p[k] = coded && stored(k) ? fast_pattern(x[k], mu, code) : Bits{0};
    } else {
        const Bits keep = coded ? ~Bits{0} << (FastTraits<T>::width - code) : Bits{0};
        const uint32_t shift = fast_shift<T>(code);
#pragma unroll
        for (int k = 0; k < VL; ++k) lc.p[k] = stored(k) ? (fast_bits<T>(x[k] - mu) & keep) >> shift : Bits{0};
    }

    // Lead codes (2 bits each, packed), as fast_lead: the stop bit caps the
    // count, so 8 * lead is the leading zero count with its low bits cleared.
    const Bits stop = fast_lead_stop<T>(kept);
    Bits previous = __shfl_up_sync(kFull, lc.p[VL - 1], 1, G);
    if (gl == 0) previous = 0;
    uint32_t low8 = 0, high8 = 0;  // 8 * lead of value k at bit 2k: values 0-13, 14-15
#pragma unroll
    for (int k = 0; k < VL; ++k) {
        const Bits pk = lc.p[k];
        const uint32_t lead8 = lead_times8((pk ^ previous) | stop);
        if (k < 14) low8 += lead8 << (2 * k);  // one multiply-add each (no carries: disjoint fields)
        else high8 += lead8 << (2 * k - 28);
        previous = pk;
        lc.p[k] = pk << lead8;  // the explicit bytes on top, zeros below them
    }
    uint32_t lead_bits = low8 >> 3 | high8 << 25;
    if (!Full) lead_bits &= count >= 16 ? ~0u : (1u << (2 * count)) - 1u;  // none past the lane's values
    const uint32_t lead_sum = __popc(lead_bits & 0x55555555u) + 2 * __popc(lead_bits & 0xaaaaaaaau);
    lc.lead_bits = lead_bits;
    lc.n_bytes = kept * (Full ? VL : count) - lead_sum;
}

// A lane's explicit bytes (f32: 0..4 per value) into the stage at byte
// offset `at` through a word accumulator: each word is stored (whole) by the
// lane whose bytes complete it, without branches or atomics.  The bytes an
// earlier lane left in that word are ORed in after a barrier: each lane
// returns its incomplete last word (`tail`, at index `tail_word`).  q: the
// values' shifted patterns (LaneCode::p).  `s` counts the bits placed from
// the lane's first word on; the shifts use it modulo 32 (funnel shifts wrap),
// and a word is complete when bit 5 of s changes (a value adds <= 32 bits).
template <int VL, bool Full>
__device__ __forceinline__ void stage_lane_f32(uint32_t* stage, uint32_t at, const uint32_t (&q)[VL],
                                               uint32_t lead_bits, uint32_t kept, uint32_t count,
                                               uint32_t& tail_word, uint32_t& tail) {
    const uint32_t kept8_24 = 8 * kept - 24;  // wraps below 3 kept bytes; the sums do not
    const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(stage));
    uint32_t addr = base + 4 * (at >> 2), s = 8 * (at & 3u), acc = 0;
#pragma unroll
    for (int k = 0; k < VL; ++k) {
        // 24 - 8 * lead, read from the inverted codes (kept8 - 8 * lead = kept8_24 + this).
        const uint32_t rest8 = (k < 2 ? ~lead_bits << (3 - 2 * k) : ~lead_bits >> (2 * k - 3)) & 0x18u;
        acc |= __funnelshift_r(q[k], 0u, s);                // q >> s: the bytes that fit
        const uint32_t over = __funnelshift_r(0u, q[k], s);  // q << (32 - s): the rest (0 when s = 0)
        const uint32_t next = Full || k < static_cast<int>(count) ? s + kept8_24 + rest8 : s;
        // A complete word is stored and the next one started: one predicate for all three.
        asm volatile(
            "{\n\t.reg .pred p;\n\t.reg .u32 t;\n\t"
            "xor.b32 t, %2, %3;\n\tand.b32 t, t, 32;\n\tsetp.ne.u32 p, t, 0;\n\t"
            "@p st.shared.u32 [%0], %1;\n\t@p add.u32 %0, %0, 4;\n\t@p mov.u32 %1, %4;\n\t}"
            : "+r"(addr), "+r"(acc)
            : "r"(next), "r"(s), "r"(over)
            : "memory");
        s = next;
    }
    tail_word = (addr - base) / 4;
    tail = acc;
}

// Copies a tile's stage to its place in the byte stream: whole aligned
// 16-byte words where the tile owns them, each 4 bytes picked from two
// stage words by one byte permutation (which also turns the big-endian
// stage words around), single bytes in the words it shares with its
// neighbours.
template <int kCtaThreads>
__device__ __forceinline__ void copy_out(const uint32_t* stage, uint32_t tile_bytes, uint64_t out_bytes,
                                         uint8_t* __restrict__ bytes) {
    const uint32_t head = static_cast<uint32_t>(out_bytes & 15);
    const uint32_t span = head + tile_bytes;
    uint8_t* out = bytes + (out_bytes - head);
    const uint8_t* stage8 = reinterpret_cast<const uint8_t*>(stage);
    // Output byte t of a word is stage byte m + t (m: the stage offset of a
    // 16-byte word, 16c - head, modulo 4): lane 3 - m - t of the first stage
    // word, or lane 11 - m - t (lane 3 - (m + t - 4) of the second).
    const uint32_t m = (16 - head) & 3;
    uint32_t selector = 0;
#pragma unroll
    for (uint32_t t = 0; t < 4; ++t) selector |= (m + t < 4 ? 3 - m - t : 11 - m - t) << (4 * t);
    for (uint32_t c = threadIdx.x; c * 16 < span; c += kCtaThreads) {
        const uint32_t b0 = c * 16;
        if (b0 >= head && b0 + 16 <= span) {
            const uint32_t* w = stage + ((b0 - head) >> 2);
            uint4 q;
            q.x = __byte_perm(w[0], w[1], selector);
            q.y = __byte_perm(w[1], w[2], selector);
            q.z = __byte_perm(w[2], w[3], selector);
            q.w = __byte_perm(w[3], w[4], selector);
            *reinterpret_cast<uint4*>(out + b0) = q;
        } else {
            for (uint32_t i = b0 < head ? head : b0; i < b0 + 16 && i < span; ++i) out[i] = stage8[(i - head) ^ 3];
        }
    }
}

// A lane's lead codes straight to their place: VL / 4 bytes.
template <class T>
__device__ __forceinline__ void write_leads(uint8_t* __restrict__ dst, uint32_t lead_bits, uint32_t len,
                                            uint32_t block, uint32_t gl) {
    constexpr int VL = kLaneValues<T>;
    const uint32_t lead_bytes = FastLayout::lead_bytes(len);
    if constexpr (VL == 16) {
        if (len == block && (reinterpret_cast<uintptr_t>(dst) & 3) == 0) {
            *reinterpret_cast<uint32_t*>(dst) = lead_bits;
            return;
        }
    }
#pragma unroll
    for (int i = 0; i < VL / 4; ++i)
        if (gl * (VL / 4) + i < lead_bytes) dst[i] = static_cast<uint8_t>(lead_bits >> (8 * i));
}

// What the encoder's and decoder's ends bring back to the host, in
// page-locked memory that the GPU reaches directly (unified addressing maps
// it): the encoder's last launch writes its part there itself, so one
// synchronization, and no copy, brings it back.
struct Readback {
    uint64_t totals[2];  // non-constant blocks, explicit bytes
    alignas(8) uint8_t extra[kFastReadbackExtra];
    uint32_t corrupt;
    uint8_t last_code;
};

Readback* pinned_readback() {
    static thread_local cuda::PinnedBuffer<Readback> pinned(1);
    return pinned.data();
}

// What an encoder launch does for the host and for the launch after it.
struct EncodeEnds {
    Readback* host = nullptr;            // the last launch: totals, the last block's code, `extra`
    const uint8_t* extra = nullptr;      // device bytes copied to host->extra
    uint32_t extra_bytes = 0;
    CountsTileState next_state;          // the other tile-state buffer, readied for the next launch
    int next_tiles = 0;
};

// A CTA of W warps codes two consecutive tiles.  It publishes each tile's
// counts as soon as it has them and looks back for the first tile's prefix
// while it codes the second, whose prefix then follows without a look-back:
// the wait for the tiles before it overlaps work, and there is one look-back
// per two tiles.  f32: at most 48 registers per thread, so 40 warps per SM
// (the kernel waits on memory and barriers more than it issues; 40 registers
// spill and were slower); f64: 64 registers, 32 warps.
template <class T, int G, int W>
__global__ void __launch_bounds__(W * 32, (sizeof(T) == 4 ? 40 : 32) / W)
    fast_encode_kernel(const T* __restrict__ data, FastLayout layout, uint64_t block0, uint64_t num_blocks,
                       const double* __restrict__ d_eb, bool aligned, CountsTileState tile_state,
                       const uint64_t* __restrict__ base, uint64_t* __restrict__ totals, uint8_t* __restrict__ codes,
                       T* __restrict__ mids, uint8_t* __restrict__ leads, uint8_t* __restrict__ bytes,
                       EncodeEnds ends) {
    constexpr int VL = kLaneValues<T>;
    constexpr int kBlocksPerWarp = 32 / G;
    constexpr int kCtaThreads = W * 32;
    __shared__ EncodeShared<W> sh;
    const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const uint32_t gl = lane % G, group = lane / G;
    const int first_tile = 2 * static_cast<int>(blockIdx.x);
    // The next launch's tile states (one per thread), so that it needs no init kernel.
    if (ends.next_tiles) ends.next_state.InitializeStatus(ends.next_tiles);
    const double eb = *d_eb;

    // What the first tile leaves for the end: its counts and its lanes' leads.
    uint64_t aggregate0 = 0;
    uint32_t tile_bytes0 = 0, leads0 = 0, len0 = 0, block_in_tile0 = 0;
    bool coded0 = false;

#pragma unroll 1
    for (int half = 0; half < 2; ++half) {
        const int tile = first_tile + half;
        uint32_t* stage = sh.stage[half];
        if constexpr (sizeof(T) == 8) {  // f64 lanes OR their bytes into a zeroed stage
#pragma unroll
            for (int i = 0; i < 4; ++i)
                reinterpret_cast<uint4*>(stage)[i * kCtaThreads + threadIdx.x] = make_uint4(0, 0, 0, 0);
        }

        const uint64_t local = (uint64_t(tile) * W + warp) * kBlocksPerWarp + group;
        const bool valid = local < num_blocks;
        const uint64_t b = block0 + local;
        const uint32_t len = valid ? layout.block_len(b) : 0;
        const uint32_t first = gl * VL;
        const uint32_t count = first >= len ? 0 : (len - first < VL ? len - first : VL);
        const T* src = data + b * layout.block + first;

        LaneCode<T> lc;
        if (__all_sync(kFull, count == VL)) code_lane<T, G, true>(src, count, valid, aligned, gl, group, eb, lc);
        else code_lane<T, G, false>(src, count, valid, aligned, gl, group, eb, lc);
        if (valid && gl == 0) {
            codes[b] = lc.code;
            mids[b] = lc.mu;
            if (ends.host && b == layout.num_blocks - 1) ends.host->last_code = lc.code;
        }
        const bool coded = lc.kept != 0;
        const uint32_t n_bytes = lc.n_bytes;

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
        for (int w = 0; w < W; ++w) {
            const uint32_t nb = sh.warp_blocks[w], n = sh.warp_bytes[w];
            if (w < static_cast<int>(warp)) {
                warp_block0 += nb;
                warp_byte0 += n;
            }
            tile_blocks += nb;
            tile_bytes += n;
        }
        const uint64_t aggregate = (uint64_t{tile_bytes} << kCountBits) | tile_blocks;
        if (warp == 0) {
            if (half == 0) {
                // Publish at once; tile 0 has no tile before it.
                if (lane == 0) {
                    if (tile == 0) tile_state.SetInclusive(0, aggregate);
                    else tile_state.SetPartial(tile, aggregate);
                }
            } else {
                // Publish, then look back for the first tile (the other warps stage meanwhile).
                if (lane == 0) tile_state.SetPartial(tile, aggregate);
                uint64_t before = 0;
                if (first_tile != 0) {
                    CountsPrefixOp op(tile_state, sh.lookback, AddCounts{}, first_tile);
                    before = op(aggregate0);  // also marks the first tile inclusive
                }
                if (lane == 0) {
                    tile_state.SetInclusive(tile, before + aggregate0 + aggregate);
                    sh.prefix = before;
                }
            }
        }

        // Explicit bytes into the stage, in stream order, at the tile's own offsets.
        uint32_t tail_word = 0, tail = 0;
        if (coded) {
            const uint32_t at = warp_byte0 + group_byte0 + inclusive - n_bytes;
            if constexpr (sizeof(T) == 4) {
                if (count == VL) stage_lane_f32<VL, true>(stage, at, lc.p, lc.lead_bits, lc.kept, count, tail_word, tail);
                else stage_lane_f32<VL, false>(stage, at, lc.p, lc.lead_bits, lc.kept, count, tail_word, tail);
            } else {
                uint32_t pos = at;
#pragma unroll
                for (int j = 0; j < VL; ++j) {
                    if (j < static_cast<int>(count)) {
                        const uint32_t lead = (lc.lead_bits >> (2 * j)) & 3u;
                        stage_bytes(stage, pos, lc.p[j], lc.kept - lead);
                        pos += lc.kept - lead;
                    }
                }
            }
        }
        if constexpr (sizeof(T) == 4) {
            // The tile's last word, if no lane completes it, holds only ORed bytes.
            if (threadIdx.x == 0 && (tile_bytes & 3u)) stage[tile_bytes >> 2] = 0;
            __syncthreads();
            if (tail) atomicOr(&stage[tail_word], tail);
        }
        __syncthreads();

        if (half == 0) {
            aggregate0 = aggregate;
            tile_bytes0 = tile_bytes;
            leads0 = lc.lead_bits;
            len0 = len;
            coded0 = coded;
            block_in_tile0 = warp_block0 + group_block0;
            continue;
        }

        // Both tiles are staged and the first one's prefix is known.
        const uint64_t before = sh.prefix;
        const uint64_t base_blocks = base ? base[0] : 0, base_bytes = base ? base[1] : 0;
        const uint64_t blocks0 = base_blocks + (before & kBlocksMask), bytes0 = base_bytes + (before >> kCountBits);
        const uint64_t blocks1 = blocks0 + (aggregate0 & kBlocksMask), bytes1 = bytes0 + tile_bytes0;
        if (tile == static_cast<int>(2 * gridDim.x) - 1 && threadIdx.x == 0) {
            totals[0] = blocks1 + tile_blocks;
            totals[1] = bytes1 + tile_bytes;
            if (ends.host) {
                ends.host->totals[0] = blocks1 + tile_blocks;
                ends.host->totals[1] = bytes1 + tile_bytes;
                for (uint32_t i = 0; i < ends.extra_bytes; ++i) ends.host->extra[i] = ends.extra[i];
            }
        }
        const uint32_t lead_stride = layout.block / 4;
        if (coded0) write_leads<T>(leads + (blocks0 + block_in_tile0) * lead_stride + gl * (VL / 4), leads0, len0,
                                   layout.block, gl);
        if (coded) write_leads<T>(leads + (blocks1 + warp_block0 + group_block0) * lead_stride + gl * (VL / 4),
                                  lc.lead_bits, len, layout.block, gl);
        copy_out<kCtaThreads>(sh.stage[0], tile_bytes0, bytes0, bytes);
        copy_out<kCtaThreads>(sh.stage[1], tile_bytes, bytes1, bytes);
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

// Allocates the streams and scratch and, with prepare_only, makes sure the
// first launch's tile states are initialized (so that this can run before
// the bound is known); otherwise launches the encoder, each launch readying
// the other tile-state buffer for the launch after it.
template <class T, int V, int W = kEncodeWarps>
void encode_with(const T* d_data, const FastLayout& layout, const double* d_eb, FastDeviceStreams<T>& out,
                 cudaStream_t s, bool prepare_only, const void* d_extra = nullptr, size_t extra_bytes = 0) {
    constexpr int G = kLaneGroup<T, V>;
    constexpr uint64_t kTileBlocks = uint64_t{W} * (32 / G);
    const uint64_t nb = layout.num_blocks;
    out.codes.allocate(nb, s);
    out.mids.allocate(nb, s);
    out.leads.allocate(nb * (layout.block / 4), s);      // worst cases; trimmed by fast_encode_cuda_sizes
    out.bytes.allocate(layout.num_elements * sizeof(T), s);
    out.totals.allocate(4, s);                           // two (blocks, bytes) slots, alternating between launches
    out.segments = 0;
    if (nb == 0) return;
    const uint64_t launch_blocks =
        out.max_launch_blocks ? std::min(out.max_launch_blocks, kSegmentBlocks) : kSegmentBlocks;
    auto tiles_of = [&](uint64_t b0) {  // two per CTA
        const uint64_t count = std::min(launch_blocks, nb - b0);
        return static_cast<int>((count + 2 * kTileBlocks - 1) / (2 * kTileBlocks) * 2);
    };
    const int max_tiles = tiles_of(0);
    size_t state_bytes = 0;
    GSZ_CUDA(CountsTileState::AllocationSize(max_tiles, state_bytes));
    for (int i = 0; i < 2; ++i) {
        if (out.tile_states[i].capacity() < state_bytes) out.ready_tiles[i] = 0;  // a new buffer
        out.tile_states[i].allocate(state_bytes, s);
    }
    auto state_in = [&](int slot, int tiles) {
        CountsTileState state;
        GSZ_CUDA(state.Init(tiles, out.tile_states[slot].data(), state_bytes));
        return state;
    };
    auto ready = [&](int slot, int tiles) {  // the init kernel, unless a launch before readied them
        if (out.ready_tiles[slot] >= tiles) return;
        counts_tile_init_kernel<<<(tiles + 255) / 256, 256, 0, s>>>(state_in(slot, tiles), tiles);
        GSZ_CUDA_LAUNCHED("counts_tile_init_kernel");
        out.ready_tiles[slot] = tiles;
    };
    if (prepare_only) {
        ready(out.next_slot, max_tiles);
        return;
    }
    const bool aligned = is_aligned(d_data);
    Readback* rb = pinned_readback();
    Readback* host = nullptr;
    GSZ_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&host), rb, 0));
    for (uint64_t b0 = 0; b0 < nb; b0 += launch_blocks, ++out.segments) {
        const int tiles = tiles_of(b0), slot = out.next_slot, other = 1 - slot;
        ready(slot, tiles);
        const bool last = b0 + launch_blocks >= nb;
        EncodeEnds ends;
        if (last) {
            ends.host = host;
            ends.extra = static_cast<const uint8_t*>(d_extra);
            ends.extra_bytes = static_cast<uint32_t>(extra_bytes);
        }
        // The next launch: the next segment, or the next encoding's first (guessed: as many blocks).
        const int next_tiles = std::min(last ? max_tiles : tiles_of(b0 + launch_blocks), W * 32 * (tiles / 2));
        if (out.ready_tiles[other] < next_tiles) {
            ends.next_state = state_in(other, next_tiles);
            ends.next_tiles = next_tiles;
        }
        const int segment = out.segments;
        const uint64_t* base = segment == 0 ? nullptr : out.totals.data() + 2 * (segment % 2);
        fast_encode_kernel<T, G, W><<<static_cast<unsigned>(tiles / 2), W * 32, 0, s>>>(
            d_data, layout, b0, std::min(launch_blocks, nb - b0), d_eb, aligned, state_in(slot, tiles), base,
            out.totals.data() + 2 * ((segment + 1) % 2), out.codes.data(), out.mids.data(), out.leads.data(),
            out.bytes.data(), ends);
        GSZ_CUDA_LAUNCHED("fast_encode_kernel");
        out.ready_tiles[slot] = 0;
        out.ready_tiles[other] = std::max(out.ready_tiles[other], ends.next_tiles);
        out.next_slot = other;
    }
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
    trace.mark("allocate");
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
    Readback* rb = pinned_readback();
    GSZ_CUDA(cudaMemcpyAsync(&rb->corrupt, sc.corrupt.data(), sizeof rb->corrupt, cudaMemcpyDeviceToHost, s));
    GSZ_CUDA(cudaStreamSynchronize(s));
    GSZ_CHECK(rb->corrupt == 0, GSZ_STATUS_CORRUPT,
              "fast streams: a block code, lead code or stream length does not add up");
}

}  // namespace

template <class T>
void fast_encode_cuda_prepare(const T* d_data, const FastLayout& layout, FastDeviceStreams<T>& out,
                              cudaStream_t stream) {
    switch (layout.block) {
        case 64: return encode_with<T, 2>(d_data, layout, nullptr, out, stream, true);
        case 128: return encode_with<T, 4>(d_data, layout, nullptr, out, stream, true);
        case 256: return encode_with<T, 8>(d_data, layout, nullptr, out, stream, true);
    }
    fail(GSZ_STATUS_INVALID_ARGUMENT, format_message("fast: block size %u is not 64, 128 or 256", layout.block));
}

template <class T>
void fast_encode_cuda_async(const T* d_data, const FastLayout& layout, const double* d_eb, FastDeviceStreams<T>& out,
                            cudaStream_t stream, const void* d_extra, size_t extra_bytes) {
    GSZ_CHECK(extra_bytes <= kFastReadbackExtra, GSZ_STATUS_INTERNAL, "fast: %zu extra bytes to read back",
              extra_bytes);
    if (layout.num_blocks == 0 && extra_bytes)  // no launch to bring them
        GSZ_CUDA(cudaMemcpyAsync(pinned_readback()->extra, d_extra, extra_bytes, cudaMemcpyDeviceToHost, stream));
    switch (layout.block) {
        case 64: return encode_with<T, 2>(d_data, layout, d_eb, out, stream, false, d_extra, extra_bytes);
        case 128: return encode_with<T, 4>(d_data, layout, d_eb, out, stream, false, d_extra, extra_bytes);
        case 256: return encode_with<T, 8>(d_data, layout, d_eb, out, stream, false, d_extra, extra_bytes);
    }
    fail(GSZ_STATUS_INVALID_ARGUMENT, format_message("fast: block size %u is not 64, 128 or 256", layout.block));
}

template <class T>
void fast_encode_cuda_sizes(const FastLayout& layout, FastDeviceStreams<T>& out, cudaStream_t stream, void* h_extra,
                            size_t extra_bytes) {
    GSZ_CHECK(extra_bytes <= kFastReadbackExtra, GSZ_STATUS_INTERNAL, "fast: %zu extra bytes to read back",
              extra_bytes);
    GSZ_CUDA(cudaStreamSynchronize(stream));  // the encoder's last launch wrote the read-back block
    const Readback* rb = pinned_readback();
    if (extra_bytes) memcpy(h_extra, rb->extra, extra_bytes);
    const uint64_t nb = layout.num_blocks;
    if (nb == 0) {
        out.leads.allocate(0, stream);
        out.bytes.allocate(0, stream);
        return;
    }
    // Every non-constant block has block/4 lead bytes but a short last one.
    uint64_t lead_total = rb->totals[0] * (layout.block / 4);
    if (rb->last_code != kFastConstant)
        lead_total -= layout.block / 4 - FastLayout::lead_bytes(layout.block_len(nb - 1));
    out.leads.allocate(lead_total, stream);  // within capacity: only the size changes
    out.bytes.allocate(rb->totals[1], stream);
}

template <class T>
void fast_encode_cuda(const T* d_data, const FastLayout& layout, double eb, FastDeviceStreams<T>& out,
                      cudaStream_t stream) {
    cuda::DeviceBuffer<double> d_eb(1, stream);
    GSZ_CUDA(cudaMemcpyAsync(d_eb.data(), &eb, sizeof eb, cudaMemcpyHostToDevice, stream));
    fast_encode_cuda_async(d_data, layout, d_eb.data(), out, stream);
    fast_encode_cuda_sizes(layout, out, stream);  // synchronizes: &eb is read by then
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

template void fast_encode_cuda_prepare<float>(const float*, const FastLayout&, FastDeviceStreams<float>&, cudaStream_t);
template void fast_encode_cuda_prepare<double>(const double*, const FastLayout&, FastDeviceStreams<double>&,
                                               cudaStream_t);
template void fast_encode_cuda_async<float>(const float*, const FastLayout&, const double*, FastDeviceStreams<float>&,
                                            cudaStream_t, const void*, size_t);
template void fast_encode_cuda_async<double>(const double*, const FastLayout&, const double*,
                                             FastDeviceStreams<double>&, cudaStream_t, const void*, size_t);
template void fast_encode_cuda_sizes<float>(const FastLayout&, FastDeviceStreams<float>&, cudaStream_t, void*, size_t);
template void fast_encode_cuda_sizes<double>(const FastLayout&, FastDeviceStreams<double>&, cudaStream_t, void*,
                                             size_t);
template void fast_encode_cuda<float>(const float*, const FastLayout&, double, FastDeviceStreams<float>&, cudaStream_t);
template void fast_encode_cuda<double>(const double*, const FastLayout&, double, FastDeviceStreams<double>&,
                                       cudaStream_t);
template void fast_decode_cuda<float>(const uint8_t*, const float*, const uint8_t*, uint64_t, const uint8_t*, uint64_t,
                                      const FastLayout&, float*, FastDecodeScratch&, cudaStream_t);
template void fast_decode_cuda<double>(const uint8_t*, const double*, const uint8_t*, uint64_t, const uint8_t*,
                                       uint64_t, const FastLayout&, double*, FastDecodeScratch&, cudaStream_t);

}  // namespace gsz::predict
