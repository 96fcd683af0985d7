// The context-modelled rANS stage on the GPU (see ans_cuda.hpp).  One thread
// per lane, as one CPU iteration per lane: the per-item arithmetic is
// ans_math.hpp's, so states and words match the CPU's bit for bit.
#include "encode/ans_cuda.hpp"

#include "runtime/cuda/cuda_check.hpp"

#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <vector>

namespace gsz::encode {
namespace {

constexpr int kHistThreads = 256;
constexpr uint32_t kHistCodesPerThread = 64;  // consecutive codes: one cursor seek per 64
constexpr int kLaneMaxThreads = 256;

// Division by a frequency (1..4096) as a multiply: q = umulhi64(x, ceil(2^64
// / f)) is exact for every 32-bit x (the error term x * e * f < 2^56 < 2^64),
// so the words equal the CPU's, which divides.  The reciprocals are a table
// by frequency (d_rcp[f], 0 for f = 1), read through the L1.
__global__ void ans_reciprocal_kernel(unsigned long long* __restrict__ d_rcp) {
    const uint32_t f = blockIdx.x * blockDim.x + threadIdx.x;
    if (f <= kAnsScale) d_rcp[f] = f > 1 ? ~0ull / f + 1 : 0ull;  // exactly 2^64 / f for a power of 2
}

// Words of one lane, written backwards from the end of its slot (2 words per
// code at most) four at a time: emission order w0, w1, ... lands as ... w1 w0,
// the decoding order.
struct SlotWriter {
    uint16_t* end;   // one past the next word's position
    unsigned long long pack = 0;
    uint32_t held = 0;

    __device__ void put(uint32_t w) {
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

// Lanes are processed in groups of eight codes (offsets 8g .. 8g + 7 inside
// the lane): the per-code work that does not depend on the rANS state (the
// symbol, its context, its table entry) is done for the whole group first,
// so that the state's serial chain (one lane per thread, few lanes at low
// bit rates) is all that is left between codes.
struct CodeGroup {
    uint32_t w[4] = {0, 0, 0, 0};  // code 2m in the low half of word m
    __device__ uint32_t operator[](int j) const { return (w[j >> 1] >> (16 * (j & 1))) & 0xFFFFu; }
};

// The lane's codes [first, first + 8); those outside [0, count) read as 0.
__device__ __forceinline__ CodeGroup load_group(const uint16_t* __restrict__ lane_codes, int64_t first,
                                                uint32_t count, bool vec) {
    CodeGroup g;
    if (vec && first >= 0 && first + 8 <= count) {
        const uint4 q = __ldg(reinterpret_cast<const uint4*>(lane_codes + first));
        g.w[0] = q.x, g.w[1] = q.y, g.w[2] = q.z, g.w[3] = q.w;
        return g;
    }
#pragma unroll
    for (int m = 0; m < 4; ++m) {
        const int64_t a = first + 2 * m;
        const uint32_t lo = a >= 0 && a < count ? __ldg(lane_codes + a) : 0u;
        const uint32_t hi = a + 1 >= 0 && a + 1 < count ? __ldg(lane_codes + a + 1) : 0u;
        g.w[m] = lo | hi << 16;
    }
    return g;
}

// Bit j: code j of the group is a zero residual (== radius).
__device__ __forceinline__ uint32_t zero_flags(const CodeGroup& g, uint32_t radius) {
    const uint32_t rr = radius | radius << 16;  // radius <= 32768
    uint32_t f = 0;
#pragma unroll
    for (int m = 0; m < 4; ++m) {
        const uint32_t eq = __vcmpeq2(g.w[m], rr);  // 0xFFFF per equal half
        f |= (eq & 1u) << (2 * m) | (eq >> 31) << (2 * m + 1);
    }
    return f;
}

// The levels of the eight codes from the one the cursor is at: inside a row
// min(ctz(x | y | z), levels - 1) is the lowest set bit of the low 32 bits of
// x | y | z | 2^(levels - 1); a group across rows steps the cursor.
__device__ __forceinline__ void group_levels(const AnsCursor& cur, uint32_t (&lv)[8]) {
    const uint32_t cap = 1u << (cur.levels - 1);
    if (cur.x + 7 < cur.nx) {
        const uint32_t yz = static_cast<uint32_t>(cur.y | cur.z) | cap;
        const uint32_t x0 = static_cast<uint32_t>(cur.x);
#pragma unroll
        for (int j = 0; j < 8; ++j) lv[j] = static_cast<uint32_t>(__ffs(static_cast<int>((x0 + j) | yz))) - 1u;
        return;
    }
    AnsCursor c = cur;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        lv[j] = c.level();
        c.next();
    }
}

// The code whose class gives code j of group c0 its context (c1: the group
// before): the one before it, or with Lag2 the one before that.
template <bool Lag2>
__device__ __forceinline__ uint32_t class_source(const CodeGroup& c0, const CodeGroup& c1, int j) {
    if constexpr (Lag2)
        return j >= 2 ? c0[j - 2] : c1[(6 + j) & 7];
    else
        return j ? c0[j - 1] : c1[7];
}

// Column strips (AnsTables::strip_width): a group of eight codes lies in
// one row of its strip (the strip width is a multiple of 8, lanes and
// chunks start at multiples of 64), so it is eight consecutive codes of the
// array at the cursor's raster index, 16-byte aligned when the array is.
// The cursor steps by whole groups.
__device__ __forceinline__ void strip_next8(AnsCursor& c) {
    c.x += 8;
    if (c.x < c.x0 + c.strip) return;
    c.x = c.x0;
    if (++c.y < c.ny) return;
    c.y = 0;
    if (++c.z < c.nz) return;
    c.z = 0;
    c.x0 += c.strip;
    c.x = c.x0;
}

__device__ __forceinline__ void strip_prev8(AnsCursor& c) {  // not past coding index 0
    if (c.x >= c.x0 + 8) {
        c.x -= 8;
        return;
    }
    c.x = c.x0 + c.strip - 8;
    if (c.y-- > 0) return;
    c.y = c.ny - 1;
    if (c.z-- > 0) return;
    c.z = c.nz - 1;
    c.x0 -= c.strip;
    c.x = c.x0 + c.strip - 8;
}

// A code of the array: read-only (__ldg) for the histogram and the encoder,
// a plain load for the decoder, which reads codes it wrote itself.
template <bool ReadOnly>
__device__ __forceinline__ uint32_t load_code(const uint16_t* p) {
    if constexpr (ReadOnly)
        return __ldg(p);
    else
        return *p;
}

// The eight codes at p (16-byte aligned when vec).
template <bool ReadOnly>
__device__ __forceinline__ CodeGroup load_eight(const uint16_t* p, bool vec) {
    CodeGroup g;
    if (vec) {
        const uint4 q = ReadOnly ? __ldg(reinterpret_cast<const uint4*>(p)) : *reinterpret_cast<const uint4*>(p);
        g.w[0] = q.x, g.w[1] = q.y, g.w[2] = q.z, g.w[3] = q.w;
        return g;
    }
#pragma unroll
    for (int m = 0; m < 4; ++m) g.w[m] = load_code<ReadOnly>(p + 2 * m) | load_code<ReadOnly>(p + 2 * m + 1) << 16;
    return g;
}

// Bit k (0..11): the code one row above the group at column x - 2 + k is a
// non-zero residual, for the columns inside the strip (the others read as
// zero residuals: ans_above_nonzero's clipping).  The group's row y >= 1.
template <bool ReadOnly>
__device__ __forceinline__ uint32_t above_flags(const uint16_t* codes, const AnsCursor& c, uint32_t radius, bool vec) {
    const uint16_t* up = codes + (c.raster() - c.nx);
    uint32_t f = (~zero_flags(load_eight<ReadOnly>(up, vec), radius) & 0xFFu) << kAnsAboveReach;
    if (c.x > c.x0)
        f |= static_cast<uint32_t>(load_code<ReadOnly>(up - 2) != radius) |
             static_cast<uint32_t>(load_code<ReadOnly>(up - 1) != radius) << 1;
    if (c.x + 8 < c.x0 + c.strip)
        f |= static_cast<uint32_t>(load_code<ReadOnly>(up + 8) != radius) << 10 |
             static_cast<uint32_t>(load_code<ReadOnly>(up + 9) != radius) << 11;
    return f;
}

// The above classes of the group's codes (coding indices index .. index + 7
// of a lane from lane_begin), two bits each: ans_above_class of each code's
// window.
template <bool ReadOnly>
__device__ __forceinline__ uint32_t group_above(const uint16_t* codes, const AnsCursor& c, uint64_t index,
                                                uint64_t lane_begin, uint32_t radius, bool vec) {
    if (c.y == 0 || index + 7 < lane_begin + c.strip + kAnsAboveReach) return 0;  // none for all eight
    const uint32_t f = above_flags<ReadOnly>(codes, c, radius, vec);
    uint32_t ab = 0;
#pragma unroll
    for (int j = 0; j < 8; ++j)
        ab |= ans_above_class(index + j, lane_begin, c.y, c.strip, __popc((f >> j) & 31u)) << (2 * j);
    return ab;
}

// Counts (context, symbol) over runs of 64 consecutive codes per thread,
// eight at a time as the coders read them; a bin repeated back to back (the
// dominant code's runs) is added once.  Every code's context is taken with
// its array index as the offset (ans_histogram_cpu), so the look-back crosses
// the threads' ranges.
// Strips: the codes of coding indices [begin, begin + count) (count a
// multiple of 8), with the contexts' above classes; added to s_hist as the
// raster walk below does.
template <bool Levels, bool Lag2>
__device__ __forceinline__ bool histogram_strip_chunk(const uint16_t* __restrict__ codes, uint64_t begin,
                                                      uint32_t count, uint32_t radius, const AnsCursor& shape,
                                                      uint32_t* s_hist) {
    const bool vec = (reinterpret_cast<uintptr_t>(codes) & 15) == 0;
    const uint32_t limit = 2 * radius - 1;
    AnsCursor cur = shape;
    cur.seek(begin);
    // The two groups before the chunk (none before the array's first: its
    // first 16 codes take the start class).
    CodeGroup c2, c1;
    if (begin >= 16) {
        AnsCursor back = cur;
        strip_prev8(back);
        c1 = load_eight<true>(codes + back.raster(), vec);
        strip_prev8(back);
        c2 = load_eight<true>(codes + back.raster(), vec);
    }
    CodeGroup c0 = load_eight<true>(codes + cur.raster(), vec);
    uint32_t zf = zero_flags(c2, radius) | zero_flags(c1, radius) << 8 | zero_flags(c0, radius) << 16;
    bool bad = false;
    uint32_t run_bin = 0xFFFFFFFFu, run = 0;
    uint32_t ab = group_above<true>(codes, cur, begin, 0, radius, vec);
    for (uint32_t q = 0; q < count; q += 8) {
        uint32_t lv[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        if constexpr (Levels) group_levels(cur, lv);
        // The next group's codes and above classes, loaded ahead of this group's counting.
        AnsCursor cur_next = cur;
        CodeGroup next;
        uint32_t ab_next = 0;
        if (q + 8 < count) {
            strip_next8(cur_next);
            next = load_eight<true>(codes + cur_next.raster(), vec);
            ab_next = group_above<true>(codes, cur_next, begin + q + 8, 0, radius, vec);
        }
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const uint32_t raw = c0[j];
            bad |= raw > limit;
            const uint32_t code = min(raw, limit);
            const uint32_t prev = min(class_source<Lag2>(c0, c1, j), limit);
            const uint32_t zeros = static_cast<uint32_t>(__clz(~((zf >> j) << 16)));
            const uint32_t cls = ans_context_class(begin + q + j, zeros, ans_class_of(prev, radius));
            const uint32_t ctx = ans_context(lv[j], (ab >> (2 * j)) & 3u, cls, kAnsAboveClasses);
            const uint32_t bin = ctx * kAnsAlphabet + ans_symbol_of(code, radius).symbol;
            if (bin != run_bin) {
                if (run) atomicAdd(&s_hist[run_bin], run);
                run_bin = bin;
                run = 0;
            }
            ++run;
        }
        if (q + 8 >= count) break;
        cur = cur_next;
        c1 = c0;
        c0 = next;
        ab = ab_next;
        zf = zf >> 8 | zero_flags(c0, radius) << 16;
    }
    if (run) atomicAdd(&s_hist[run_bin], run);
    return bad;
}

template <bool Levels, bool Lag2, bool Strips>
__global__ void __launch_bounds__(kHistThreads)
    ans_histogram_kernel(const uint16_t* __restrict__ codes, uint64_t n, uint32_t radius, AnsCursor shape,
                         uint32_t sample_stride, uint32_t bins, unsigned long long* __restrict__ d_hist,
                         uint32_t* __restrict__ d_bad) {
    extern __shared__ uint32_t s_hist[];
    for (uint32_t i = threadIdx.x; i < bins; i += blockDim.x) s_hist[i] = 0;
    __syncthreads();
    // The thread's chunk of kHistCodesPerThread codes: every sample_stride-th (ans_histogram_cpu's sample).
    const uint64_t begin =
        ans_sample_chunk(uint64_t{blockIdx.x} * blockDim.x + threadIdx.x, sample_stride, Strips) * kHistCodesPerThread;
    bool bad = false;
    if constexpr (Strips) {
        if (begin < n)
            bad = histogram_strip_chunk<Levels, Lag2>(
                codes, begin, static_cast<uint32_t>(min(n - begin, uint64_t{kHistCodesPerThread})), radius, shape,
                s_hist);
    } else if (begin < n) {
        const uint32_t count = static_cast<uint32_t>(min(n - begin, uint64_t{kHistCodesPerThread}));
        // Offsets relative to `begin`; the two groups before it are the look-back
        // (codes before the array read as 0: not zero residuals, and the array's
        // first 16 codes take the start class anyway).
        const uint16_t* base = codes + begin;
        const uint64_t before = min(begin, uint64_t{16});  // codes readable before `begin`
        const auto load = [&](int64_t first) {
            CodeGroup g;
#pragma unroll
            for (int m = 0; m < 4; ++m) {
                const int64_t a = first + 2 * m;
                const uint32_t lo = a >= -static_cast<int64_t>(before) && a < count ? __ldg(base + a) : 0u;
                const uint32_t hi = a + 1 >= -static_cast<int64_t>(before) && a + 1 < count ? __ldg(base + a + 1) : 0u;
                g.w[m] = lo | hi << 16;
            }
            return g;
        };
        const bool vec = (reinterpret_cast<uintptr_t>(base) & 15) == 0 && count == kHistCodesPerThread && begin >= 16;
        const auto load_fast = [&](int64_t first) {
            if (!vec) return load(first);
            CodeGroup g;
            const uint4 q = __ldg(reinterpret_cast<const uint4*>(base + first));
            g.w[0] = q.x, g.w[1] = q.y, g.w[2] = q.z, g.w[3] = q.w;
            return g;
        };
        const uint32_t limit = 2 * radius - 1;
        CodeGroup c1 = load_fast(-8), c0 = load_fast(0);
        uint32_t zf = zero_flags(load_fast(-16), radius) | zero_flags(c1, radius) << 8 | zero_flags(c0, radius) << 16;
        AnsCursor cur = shape;
        if constexpr (Levels) cur.seek(begin);
        uint32_t run_bin = 0xFFFFFFFFu, run = 0;
        for (uint32_t q = 0; q < count; q += 8) {
            uint32_t lv[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            if constexpr (Levels) group_levels(cur, lv);
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                if (q + j >= count) break;
                const uint32_t raw = c0[j];
                bad |= raw > limit;
                const uint32_t code = min(raw, limit);
                const uint32_t prev = min(class_source<Lag2>(c0, c1, j), limit);
                const uint32_t zeros = static_cast<uint32_t>(__clz(~((zf >> j) << 16)));
                const uint32_t cls = ans_context_class(begin + q + j, zeros, ans_class_of(prev, radius));
                const uint32_t bin = (lv[j] * kAnsClasses + cls) * kAnsAlphabet + ans_symbol_of(code, radius).symbol;
                if (bin != run_bin) {
                    if (run) atomicAdd(&s_hist[run_bin], run);
                    run_bin = bin;
                    run = 0;
                }
                ++run;
            }
            c1 = c0;
            c0 = q + 16 <= count ? load_fast(q + 8) : load(q + 8);
            zf = zf >> 8 | zero_flags(c0, radius) << 16;
            if constexpr (Levels) {
                if (cur.x + 8 < cur.nx) {
                    cur.x += 8;
                } else {
                    for (int j = 0; j < 8; ++j) cur.next();
                }
            }
        }
        if (run) atomicAdd(&s_hist[run_bin], run);
    }
    if (bad) *d_bad = 1;
    __syncthreads();
    for (uint32_t i = threadIdx.x; i < bins; i += blockDim.x)
        if (s_hist[i]) atomicAdd(d_hist + i, static_cast<unsigned long long>(s_hist[i]));
}

// One lane, last code first, as ans_encode_cpu's loop, into its slot.
// Levels: the contexts depend on the position (interp), else no cursor;
// Lag2: the class lag (AnsTables::class_lag) is 2.  Both compile-time: a
// run-time lag cost the encoder a quarter of its speed (run 28, NOTES).
template <bool Levels, bool Lag2, bool Strips>
__global__ void __launch_bounds__(kLaneMaxThreads)
    ans_encode_kernel(const uint32_t* __restrict__ d_entry, uint32_t num_entries,
                      const unsigned long long* __restrict__ d_rcp, const uint16_t* __restrict__ codes, uint64_t n,
                      uint32_t radius, AnsCursor shape, uint32_t lane_symbols, uint64_t lanes, uint32_t start_state,
                      uint16_t* __restrict__ slots, uint64_t slot_words, uint32_t* __restrict__ lane_state,
                      uint32_t* __restrict__ lane_words, uint64_t* __restrict__ lane_count) {
    extern __shared__ uint32_t s_entry[];  // the tables' freq | cum << 16
    for (uint32_t i = threadIdx.x; i < num_entries; i += blockDim.x) s_entry[i] = d_entry[i];
    __syncthreads();
    const uint64_t lane = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
    if (lane >= lanes) return;
    const uint64_t begin = lane * lane_symbols;
    const uint32_t count = static_cast<uint32_t>(min(n, begin + lane_symbols) - begin);
    const uint16_t* lane_codes = codes + begin;
    const bool vec = (reinterpret_cast<uintptr_t>(Strips ? codes : lane_codes) & 15) == 0;
    int64_t g = (count - 1) / 8;  // the last group
    // Groups g, g - 1, g - 2 (the look-back of 16 codes) and g - 3 in flight;
    // with strips each at its cursor (`back`: group g - 3's, while there is one).
    CodeGroup c0, c1, c2, c3;
    AnsCursor cur = shape, back = shape;
    if constexpr (Strips) {
        const auto at = [&](int64_t first) {
            CodeGroup grp;
            if (first >= 0) {
                back.seek(begin + static_cast<uint64_t>(first));
                grp = load_eight<true>(codes + back.raster(), vec);
            }
            return grp;
        };
        c0 = at(8 * g), c1 = at(8 * g - 8), c2 = at(8 * g - 16), c3 = at(8 * g - 24);
        cur.seek(begin + 8 * static_cast<uint64_t>(g));
    } else {
        c0 = load_group(lane_codes, 8 * g, count, vec), c1 = load_group(lane_codes, 8 * g - 8, count, vec),
        c2 = load_group(lane_codes, 8 * g - 16, count, vec), c3 = load_group(lane_codes, 8 * g - 24, count, vec);
        if constexpr (Levels) cur.seek(begin + 8 * static_cast<uint64_t>(g));
    }
    // Bit b: the code at 8g - 16 + b is a zero residual (b < 24).
    uint32_t zf = zero_flags(c2, radius) | zero_flags(c1, radius) << 8 | zero_flags(c0, radius) << 16;
    uint32_t x = start_state;
    uint32_t emitted = 0;
    SlotWriter out{slots + (lane + 1) * slot_words};
    // Strips: the group's above classes (two bits a code), and the next
    // group's, whose loads are issued before this group's chain.
    uint32_t ab = 0, ab_next = 0;
    if constexpr (Strips) ab = group_above<true>(codes, cur, begin + 8 * static_cast<uint64_t>(g), begin, radius, vec);
    for (;;) {
        uint32_t lv[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        if constexpr (Levels) group_levels(cur, lv);
        AnsCursor cur_next = cur;
        if constexpr (Strips) {
            if (g > 0) {
                strip_prev8(cur_next);
                ab_next = group_above<true>(codes, cur_next, begin + 8 * static_cast<uint64_t>(g - 1), begin, radius,
                                            vec);
            }
        }
        uint32_t entry[8], uniform[8];  // freq | cum << 16; the uniform bits' value | their count << 16
        unsigned long long rcp[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const uint32_t k = static_cast<uint32_t>(8 * g) + j;
            const AnsSymbol s = ans_symbol_of(c0[j], radius);
            // The 16 codes before k are bits j .. j + 15 of zf; its run of zeros ends at bit j + 15.
            const uint32_t zeros = static_cast<uint32_t>(__clz(~((zf >> j) << 16)));
            const uint32_t cls = ans_context_class(k, zeros, ans_class_of(class_source<Lag2>(c0, c1, j), radius));
            const uint32_t ctx = Strips ? ans_context(lv[j], (ab >> (2 * j)) & 3u, cls, kAnsAboveClasses)
                                        : lv[j] * kAnsClasses + cls;
            const uint32_t e = s_entry[ctx * kAnsAlphabet + s.symbol];
            entry[j] = e;
            uniform[j] = s.extra | s.extra_bits << 16;  // extra < 2^15
            rcp[j] = __ldg(d_rcp + min(e & 0xFFFFu, kAnsScale));
        }
        // The state's chain, last code first (the group's values two to a
        // register: 96 registers instead of 107).
        const auto put = [&](int j) {
            const uint32_t freq = entry[j] & 0xFFFFu, cum = entry[j] >> 16;
            if (const uint32_t bits = uniform[j] >> 16) {  // uniform bits: frequency 1 of 2^k
                if (x >= (1u << (32 - bits))) {
                    out.put(x & 0xFFFFu);
                    x >>= 16;
                    ++emitted;
                }
                x = (x << bits) + (uniform[j] & 0xFFFFu);
            }
            if ((x >> (32 - kAnsScaleBits)) >= freq) {  // x >= freq << 20, without overflow at 4096
                out.put(x & 0xFFFFu);
                x >>= 16;
                ++emitted;
            }
            const uint32_t q = freq == 1 ? x : static_cast<uint32_t>(__umul64hi(x, rcp[j]));
            x = (q << kAnsScaleBits) + (x - q * freq) + cum;
        };
        if (static_cast<uint32_t>(8 * g) + 8 <= count) {
#pragma unroll
            for (int j = 7; j >= 0; --j) put(j);
        } else {  // the lane's last group, partial
#pragma unroll
            for (int j = 7; j >= 0; --j)
                if (static_cast<uint32_t>(8 * g) + j < count) put(j);
        }
        if (g == 0) break;
        --g;
        c0 = c1, c1 = c2, c2 = c3;
        if constexpr (Strips) {
            c3 = CodeGroup{};
            if (8 * g - 24 >= 0) {
                strip_prev8(back);
                c3 = load_eight<true>(codes + back.raster(), vec);
            }
        } else {
            c3 = load_group(lane_codes, 8 * g - 24, count, vec);
        }
        zf = (zf << 8 | zero_flags(c2, radius)) & 0xFFFFFFu;
        if constexpr (Strips) {
            cur = cur_next;
            ab = ab_next;
        } else if constexpr (Levels) {
            if (cur.x >= 8) {
                cur.x -= 8;
            } else {
                for (int j = 0; j < 8; ++j) cur.prev();
            }
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

// The decoder's tables in shared memory, a block of 512 bytes per context:
// the first symbol of each 16-slot bucket (256 bytes; an absent context's
// buckets all name entry 56), then 64 entries of 4 bytes per symbol: the end
// of its slots (cum + frequency, 13 bits), cum (12), the symbol's uniform
// bits (4) and the class it gives the next code (3), so that one load
// answers all of it, and the walk's test is one mask.  Entries 56..63 end
// every walk (end 4096).  The bits field also routes what needs checking to
// the decoder's rare path: entries 56..63 and exact residuals a corrupt
// table gives at or beyond the radius carry 1 (a valid stream never decodes
// them), so the common path, exact residuals and outliers, takes its code
// without a range test.
constexpr uint32_t kBucketShift = 4;
constexpr uint32_t kBuckets = kAnsScale >> kBucketShift;
constexpr uint32_t kRowEntries = 64;
constexpr uint32_t kContextBytes = kBuckets + 4 * kRowEntries;
constexpr uint32_t kDecCheck = 1;  // the bits field of an entry the rare path rejects
constexpr uint32_t kDecEnd = kAnsScale | kDecCheck << 25;  // slots [0, 4096), checked
__host__ __device__ constexpr uint32_t dec_end(uint32_t e) { return e & 0x1FFFu; }
__host__ __device__ constexpr uint32_t dec_cum(uint32_t e) { return (e >> 13) & 0xFFFu; }
__host__ __device__ constexpr uint32_t dec_bits(uint32_t e) { return (e >> 25) & 0xFu; }
__host__ __device__ constexpr uint32_t dec_class(uint32_t e) { return e >> 29; }

// The 16-bit word at addr when p, else old: a predicated load, not a branch
// around one (ncu at 52764de: the refills' branches split the warp at every
// code, BRA/BSSY/BSYNC were 15% of the decoder's instructions and 24 of 32
// threads active).  Past a lane's last word nothing is loaded (and the lane
// is corrupt if it asks for one).
__device__ __forceinline__ uint32_t load_word_if(bool p, const uint16_t* addr, uint32_t old) {
    uint32_t v = old;
    asm("{\n\t.reg .pred q;\n\tsetp.ne.u32 q, %2, 0;\n\t@q ld.global.nc.u16 %0, [%1];\n\t}"
        : "+r"(v)
        : "l"(addr), "r"(static_cast<uint32_t>(p)));
    return v;
}

// One lane, first code first, as ans_decode_cpu's loop, eight codes per
// group (stored at once when the output is 16-byte aligned).  What remains
// between two codes is the serial chain: the slot's bucket and entry (two
// shared-memory loads, the next entry loaded beside the first for a bucket
// of two symbols), the state's advance and its refills, the next context;
// the next word is loaded one refill ahead.  Lag2: the next context takes
// the class of the code before the last (compile-time, as the encoder's).
//
// Strip (0: raster order): the codes go to their raster places, each
// group's above classes come from the non-zero flags of the lane's last
// Strip + 32 codes, kept in registers (AboveHistory: loading the codes it
// stored a row earlier back from memory cost the chain an L2 round trip a
// group, run 86), and the tables (4x the contexts: 96 KB at 4 levels, which
// would leave an SM two blocks) are read from global memory through the L1
// (run 83: a few percent slower than shared memory on raster tables).
template <uint32_t Strip>
struct AboveHistory {
    static constexpr uint32_t kWords = (Strip + 16 + 31) / 32;
    static constexpr uint32_t kBits = 32 * kWords;
    // Bit i: the code decoded kBits - i codes before the next group is a non-zero residual (newest on top).
    uint32_t w[kWords] = {};

    __device__ __forceinline__ void push8(uint32_t flags) {  // bit j: the group's code j
#pragma unroll
        for (uint32_t i = 0; i + 1 < kWords; ++i) w[i] = __funnelshift_r(w[i], w[i + 1], 8);
        w[kWords - 1] = w[kWords - 1] >> 8 | flags << 24;
    }
    // above_flags' 12 bits: the window one row up starts Strip + 2 codes before the group.
    __device__ __forceinline__ uint32_t window() const {
        constexpr uint32_t b = kBits - Strip - kAnsAboveReach, i = b / 32, sh = b % 32;
        uint32_t v = w[i] >> sh;
        if constexpr (sh > 20) v |= w[i + 1] << (32 - sh);
        return v & 0xFFFu;
    }
};

template <bool Levels, bool Lag2, uint32_t Strip>
__global__ void __launch_bounds__(kLaneMaxThreads)
    ans_decode_kernel(const uint32_t* __restrict__ d_tables, uint32_t table_words, const uint16_t* __restrict__ words,
                      const uint32_t* __restrict__ lane_state, const uint64_t* __restrict__ lane_offset, uint64_t n,
                      uint32_t radius, AnsCursor shape, uint32_t lane_symbols, uint64_t lanes, uint32_t start_state,
                      uint16_t* __restrict__ codes, uint32_t* __restrict__ d_corrupt) {
    constexpr bool Strips = Strip != 0;
    extern __shared__ uint32_t s_tables[];
    if constexpr (!Strips) {
        for (uint32_t i = threadIdx.x; i < table_words; i += blockDim.x) s_tables[i] = d_tables[i];
        __syncthreads();
    }
    const uint8_t* s_bytes = reinterpret_cast<const uint8_t*>(Strips ? d_tables : s_tables);
    const uint64_t lane = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
    if (lane >= lanes) return;
    const uint64_t begin = lane * lane_symbols;
    const uint32_t count = static_cast<uint32_t>(min(n, begin + lane_symbols) - begin);
    const uint16_t* lane_words = words + lane_offset[lane];
    const uint32_t num_words = static_cast<uint32_t>(lane_offset[lane + 1] - lane_offset[lane]);  // <= 2^25
    uint32_t wi = 0;
    uint32_t x = lane_state[lane];
    uint32_t next_word = num_words ? __ldg(lane_words) : 0u;
    uint32_t next_block = 0, zeros = 0;  // the next code's class, as its block offset
    uint32_t last_block = 0;  // Lag2: the class of the code decoded last, as a block offset
    AnsCursor cur = shape;
    if constexpr (Levels || Strips) cur.seek(begin);
    uint16_t* out = codes + begin;
    const bool vec = (reinterpret_cast<uintptr_t>(Strips ? codes : out) & 15) == 0;
    bool bad = false;
    // A refill past the lane's last word loads nothing and leaves wi beyond
    // num_words, which the final test rejects; lanes started at 1 ask for
    // none past it (their last codes were coded first, before any word), as
    // ans_decode_cpu.
    const uint32_t word_limit = start_state < kAnsStateLow ? num_words : 0xFFFFFFFFu;
    const auto refill = [&] {
        const bool need = ans_decode_needs_word(x) && wi < word_limit;
        x = need ? (x << 16 | next_word) : x;
        wi += need;
        next_word = load_word_if(need && wi < num_words, lane_words + wi, next_word);
    };
    AboveHistory<Strips ? Strip : 32> history;
    uint32_t k = 0;  // codes decoded
    while (k < count && !bad) {
        uint32_t lv[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        if constexpr (Levels) group_levels(cur, lv);
        if constexpr (Strips) {
            out = codes + cur.raster();
            // above_flags of the window, from the history: columns outside the strip cleared.
            uint32_t f = history.window();
            if (cur.x == cur.x0) f &= ~3u;
            if (cur.x + 8 == cur.x0 + Strip) f &= 0x3FFu;
            const bool any = cur.y > 0 && k + 7 >= Strip + kAnsAboveReach;
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                const uint32_t ab = any ? ans_above_class(begin + k + j, begin, cur.y, Strip, __popc((f >> j) & 31u)) : 0u;
                lv[j] = lv[j] * kAnsAboveClasses + ab;
            }
        }
        uint32_t code[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        // maybe_start: the group may hold a lane's first 16 codes (a constant
        // once inlined: the groups past them skip the test).  With strips
        // lv[j] is the level and the above class (ans_context).
        const auto decode = [&](int j, bool maybe_start) {
            const uint32_t block =
                lv[j] * (kAnsClasses * kContextBytes) +
                (maybe_start && k + j < kAnsLookBack ? kAnsStartClass * kContextBytes : next_block);
            const uint32_t slot = x & (kAnsScale - 1);
            uint32_t s = s_bytes[block + (slot >> kBucketShift)];  // <= 56: no mask for s + 1
            const uint32_t* row = reinterpret_cast<const uint32_t*>(s_bytes + block + kBuckets);
            uint32_t e = row[s];
            const uint32_t e1 = row[s + 1];
            const bool step = slot >= dec_end(e);
            e = step ? e1 : e;
            s += step;
            while (slot >= dec_end(e)) e = row[++s];  // rare: a bucket of three symbols or more
            const uint32_t cum = dec_cum(e);
            x = (dec_end(e) - cum) * (x >> kAnsScaleBits) + slot - cum;
            refill();
            // Exact residuals and outliers (the common path) need no test;
            // a bucket symbol's uniform bits, and what kDecCheck marks, go
            // through ans_code_of's (rare at low bit rates).
            uint32_t c = s == kAnsOutlier ? 0u : s + radius - kAnsExact;
            if (const uint32_t b = dec_bits(e)) {
                const uint32_t extra = x & ((1u << b) - 1u);
                x >>= b;
                refill();
                c = ans_code_of(s, extra, radius);
                bad |= c == kAnsBadCode || s >= kAnsAlphabet || ans_extra_bits(s) != b;
            }
            code[j] = c;
            zeros = s == kAnsZeroSymbol ? min(zeros + 1, kAnsLookBack) : 0u;
            const uint32_t block_of_s = dec_class(e) * kContextBytes;
            next_block = zeros >= 2 ? ans_context_class(kAnsLookBack, zeros, 0) * kContextBytes
                                    : (Lag2 ? last_block : block_of_s);
            if constexpr (Lag2) last_block = block_of_s;
        };
        if (k + 8 <= count && k >= kAnsLookBack) {
#pragma unroll
            for (int j = 0; j < 8; ++j) decode(j, false);
        } else if (k + 8 <= count) {
#pragma unroll
            for (int j = 0; j < 8; ++j) decode(j, true);
        } else {  // the lane's last group, partial
#pragma unroll
            for (int j = 0; j < 8; ++j)
                if (k + j < count) decode(j, true);
        }
        uint16_t* group_out = Strips ? out : out + k;
        if (vec && k + 8 <= count) {
            *reinterpret_cast<uint4*>(group_out) =
                make_uint4(code[0] | code[1] << 16, code[2] | code[3] << 16, code[4] | code[5] << 16,
                           code[6] | code[7] << 16);
        } else {
#pragma unroll
            for (int j = 0; j < 8; ++j)
                if (k + j < count) group_out[j] = static_cast<uint16_t>(code[j]);
        }
        k = min(k + 8, count);
        if constexpr (Strips) {
            uint32_t nonzero = 0;
#pragma unroll
            for (int j = 0; j < 8; ++j) nonzero |= static_cast<uint32_t>(code[j] != radius) << j;
            history.push8(nonzero);
            if (k < count) strip_next8(cur);
        } else if constexpr (Levels) {
            if (cur.x + 8 < cur.nx) {
                cur.x += 8;
            } else {
                for (int j = 0; j < 8; ++j) cur.next();
            }
        }
    }
    if (!(!bad && k == count && x == start_state && wi == num_words)) *d_corrupt = 1;
}

AnsCursor cursor_of(const AnsContextShape& shape) { return shape.cursor(); }

// Dynamic shared memory above the default 48 KB is opted into per kernel.
template <class Kernel>
void allow_shared(Kernel kernel, size_t bytes) {
    if (bytes > 48 * 1024)
        GSZ_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}

uint32_t grid_of(uint64_t items, uint32_t per_block) {
    return static_cast<uint32_t>((items + per_block - 1) / per_block);
}

// Threads per block for one lane each: 64 spread few lanes (low bit rates:
// ~11K on a 300 MB field at rel 1e-2) over every SM; with many lanes,
// larger blocks load the tables into shared memory fewer times.
uint32_t lane_threads(uint64_t lanes) {
    int device = 0, sms = 1;
    GSZ_CUDA(cudaGetDevice(&device));
    GSZ_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    for (uint32_t t = kLaneMaxThreads; t > 64; t /= 2)
        if (lanes >= uint64_t(sms) * t * 2) return t;
    return 64;
}

}  // namespace

void ans_histogram_cuda(const uint16_t* d_codes, uint64_t n, uint32_t radius, const AnsContextShape& shape,
                        uint64_t* d_hist, uint32_t* d_bad_code, cudaStream_t stream, uint32_t class_lag,
                        uint32_t sample_stride) {
    static_assert(kHistCodesPerThread == kAnsSampleChunk, "the GPU's sample is the CPU's");
    GSZ_CHECK(class_lag >= 1 && class_lag <= kAnsMaxClassLag && sample_stride >= 1, GSZ_STATUS_INVALID_ARGUMENT,
              "ans histogram: class lag %u, sample stride %u", class_lag, sample_stride);
    const uint32_t bins = shape.num_contexts() * kAnsAlphabet;
    GSZ_CUDA(cudaMemsetAsync(d_hist, 0, bins * sizeof(uint64_t), stream));
    if (n == 0) return;
    GSZ_CHECK(ans_strips_fit(shape, shape.strip_width, n), GSZ_STATUS_INVALID_ARGUMENT,
              "ans histogram: strips of %u columns do not fit the shape", shape.strip_width);
    const uint64_t chunks = (n + kHistCodesPerThread - 1) / kHistCodesPerThread;
    const uint32_t blocks = grid_of((chunks + sample_stride - 1) / sample_stride, kHistThreads);
    const bool lag2 = class_lag == 2;
    using Kernel = decltype(&ans_histogram_kernel<true, true, true>);
    static constexpr Kernel kernels[8] = {
        ans_histogram_kernel<false, false, false>, ans_histogram_kernel<false, false, true>,
        ans_histogram_kernel<false, true, false>,  ans_histogram_kernel<false, true, true>,
        ans_histogram_kernel<true, false, false>,  ans_histogram_kernel<true, false, true>,
        ans_histogram_kernel<true, true, false>,   ans_histogram_kernel<true, true, true>};
    const Kernel kernel = kernels[(shape.levels > 1) * 4 + lag2 * 2 + (shape.strip_width != 0)];
    const size_t smem = bins * sizeof(uint32_t);  // <= 52.5 KB (strips of 5 levels)
    allow_shared(kernel, smem);
    kernel<<<blocks, kHistThreads, smem, stream>>>(
        d_codes, n, radius, cursor_of(shape), sample_stride, bins, reinterpret_cast<unsigned long long*>(d_hist),
        d_bad_code);
    GSZ_CUDA_LAUNCHED("ans_histogram_kernel");
}

void ans_encode_cuda(const AnsTables& tables, const uint16_t* d_codes, uint64_t n, uint32_t radius,
                     const AnsContextShape& shape, uint32_t lane_symbols, AnsDeviceStream& out, cudaStream_t stream,
                     AnsLanesLayout layout) {
    const AnsContextShape coded = shape.with_strips(tables.strip_width);
    GSZ_CHECK(tables.levels == shape.levels && ans_strips_fit(shape, tables.strip_width, n) &&
                  tables.entry.size() == size_t{tables.num_contexts()} * kAnsAlphabet,
              GSZ_STATUS_INTERNAL, "ans encode: tables of %u levels, strips of %u for this shape", tables.levels,
              tables.strip_width);
    GSZ_CHECK(tables.strip_width == 0 || lane_symbols % kAnsStripLaneMultiple == 0, GSZ_STATUS_INTERNAL,
              "ans encode: strip lanes of %u codes", lane_symbols);
    out.num_symbols = n;
    out.lane_symbols = lane_symbols;
    out.start_state = ans_start_state(layout);
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
    cuda::DeviceBuffer<unsigned long long> d_rcp(kAnsScale + 1, stream);
    ans_reciprocal_kernel<<<grid_of(kAnsScale + 1, 256), 256, 0, stream>>>(d_rcp.data());
    GSZ_CUDA_LAUNCHED("ans_reciprocal_kernel");
    const bool lag2 = tables.class_lag == 2;
    using Kernel = decltype(&ans_encode_kernel<true, true, true>);
    static constexpr Kernel kernels[8] = {
        ans_encode_kernel<false, false, false>, ans_encode_kernel<false, false, true>,
        ans_encode_kernel<false, true, false>,  ans_encode_kernel<false, true, true>,
        ans_encode_kernel<true, false, false>,  ans_encode_kernel<true, false, true>,
        ans_encode_kernel<true, true, false>,   ans_encode_kernel<true, true, true>};
    const Kernel kernel = kernels[(shape.levels > 1) * 4 + lag2 * 2 + (tables.strip_width != 0)];
    const size_t smem = entries * sizeof(uint32_t);  // <= 52.5 KB (strips of 5 levels)
    allow_shared(kernel, smem);
    const uint32_t threads = lane_threads(lanes);
    kernel<<<grid_of(lanes, threads), threads, smem, stream>>>(
        d_entry.data(), entries, d_rcp.data(), d_codes, n, radius, cursor_of(coded), lane_symbols, lanes,
        out.start_state, slots.data(), slot_words, out.lane_state.data(), out.lane_words.data(),
        out.lane_word_offset.data());
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
                     const AnsContextShape& shape, uint32_t start_state, uint16_t* d_codes, uint32_t* d_corrupt,
                     cudaStream_t stream) {
    if (n == 0) return;
    GSZ_CHECK(lane_symbols >= 1 && lane_symbols <= kAnsMaxLaneSymbols, GSZ_STATUS_INVALID_ARGUMENT,
              "ans decode: lanes of %u codes", lane_symbols);
    GSZ_CHECK(tables.levels == shape.levels && ans_strips_fit(shape, tables.strip_width, n) &&
                  tables.entry.size() == size_t{tables.num_contexts()} * kAnsAlphabet,
              GSZ_STATUS_INVALID_ARGUMENT, "ans decode: tables of %u levels, strips of %u for this shape",
              tables.levels, tables.strip_width);
    GSZ_CHECK(tables.strip_width == 0 || lane_symbols % kAnsStripLaneMultiple == 0, GSZ_STATUS_INVALID_ARGUMENT,
              "ans decode: strip lanes of %u codes", lane_symbols);
    const uint64_t lanes = n / lane_symbols + (n % lane_symbols != 0);
    const uint32_t contexts = tables.num_contexts();
    // The decoder's tables (see kContextBytes): per context the symbol
    // holding each bucket's first slot, then the entries.
    std::vector<uint32_t> table(size_t{contexts} * kContextBytes / 4, 0);
    for (uint32_t c = 0; c < contexts; ++c) {
        uint8_t* bucket = reinterpret_cast<uint8_t*>(table.data()) + size_t{c} * kContextBytes;
        uint32_t* row = reinterpret_cast<uint32_t*>(bucket + kBuckets);
        std::fill_n(bucket, kBuckets, static_cast<uint8_t>(kAnsAlphabet));
        std::fill_n(row + kAnsAlphabet, kRowEntries - kAnsAlphabet, kDecEnd);
        for (uint32_t s = 0; s < kAnsAlphabet; ++s) {
            const uint32_t e = tables.entry[size_t{c} * kAnsAlphabet + s];
            if (e == 0) continue;
            const uint32_t lo = AnsTables::cum(e), hi = lo + AnsTables::freq(e);  // slots [lo, hi)
            // An exact residual at or beyond the radius: only a corrupt table has one.
            const bool check = ans_extra_bits(s) == 0 && ans_code_of(s, 0, radius) == kAnsBadCode;
            row[s] = hi | lo << 13 | (check ? kDecCheck : ans_extra_bits(s)) << 25 | ans_class_of_symbol(s) << 29;
            for (uint32_t b = (lo + (1u << kBucketShift) - 1) >> kBucketShift; (b << kBucketShift) < hi; ++b)
                bucket[b] = static_cast<uint8_t>(s);
        }
    }
    cuda::DeviceBuffer<uint32_t> d_table(table.size(), stream);
    GSZ_CUDA(cudaMemcpyAsync(d_table.data(), table.data(), table.size() * sizeof(uint32_t), cudaMemcpyHostToDevice,
                             stream));
    const bool strips = tables.strip_width != 0;
    const size_t smem = strips ? 0 : table.size() * sizeof(uint32_t);  // <= 48 KB (8 levels); strips: global
    const bool lag2 = tables.class_lag == 2;
    using Kernel = decltype(&ans_decode_kernel<true, true, 0>);
    // [levels > 1][lag 2][strip width 0, 32, 64, 128]
#define GSZ_ANS_DECODERS(L, G) \
    ans_decode_kernel<L, G, 0>, ans_decode_kernel<L, G, 32>, ans_decode_kernel<L, G, 64>, ans_decode_kernel<L, G, 128>
    static constexpr Kernel kernels[16] = {GSZ_ANS_DECODERS(false, false), GSZ_ANS_DECODERS(false, true),
                                           GSZ_ANS_DECODERS(true, false), GSZ_ANS_DECODERS(true, true)};
#undef GSZ_ANS_DECODERS
    static_assert(kAnsMinStripWidth == 32 && kAnsMaxStripWidth == 128, "a decoder per strip width");
    const uint32_t width_index = strips ? ans_floor_log2(tables.strip_width) - 4 : 0u;  // 32 -> 1 .. 128 -> 3
    const Kernel kernel = kernels[(shape.levels > 1) * 8 + lag2 * 4 + width_index];
    const uint32_t threads = lane_threads(lanes);
    kernel<<<grid_of(lanes, threads), threads, smem, stream>>>(
        d_table.data(), static_cast<uint32_t>(table.size()), d_words, d_lane_state, d_lane_word_offset, n, radius,
        cursor_of(shape.with_strips(tables.strip_width)), lane_symbols, lanes, start_state, d_codes, d_corrupt);
    GSZ_CUDA_LAUNCHED("ans_decode_kernel");
    // No synchronization: copies from pageable memory return once the source is staged.
}

}  // namespace gsz::encode
