// The per-symbol arithmetic of the context-modelled rANS stage ("ans",
// ans.hpp), written once for the CPU and the CUDA coder so that both emit the
// same words.
//
// Symbols: a quant-code's residual v = code - radius is its own symbol when
// |v| <= 15, else a bucket symbol for 2^k <= |v| < 2^(k+1) (and its sign)
// followed by the k low bits of |v| coded as uniform rANS bits; code 0 (an
// outlier) is a symbol of its own.  Contexts: the class of the previous code
// in the lane (0, ±1, ±2, ±3..4, ±5..8, ±9..15, larger, outlier), or one of
// three run classes when the previous 2..3, 4..15 or 16+ codes are all 0
// residuals, or "lane start" for a lane's first 16 codes; crossed with the
// point's level, a function of its position known to the decoder (interp:
// the stride of the finest grid the point lies on; lorenzo: one level), and
// in column strips with the activity of the row above (kAnsAboveClasses).
//
// rANS (Duda; Giesen's byte-aligned variant with 16-bit words): a 32-bit state
// kept in [2^16, 2^32), 12-bit frequency tables, at most one 16-bit word out
// (encoder) or in (decoder) per coded item.
#pragma once

#include "runtime/host_device.hpp"

#include <cstdint>

namespace gsz::encode {

inline constexpr uint32_t kAnsScaleBits = 12;
inline constexpr uint32_t kAnsScale = 1u << kAnsScaleBits;  // every table's frequencies sum to this
inline constexpr uint32_t kAnsStateLow = 1u << 16;          // states live in [kAnsStateLow, 2^32)
inline constexpr int32_t kAnsExact = 15;                     // |v| <= 15: one symbol per residual
inline constexpr uint32_t kAnsFirstBucket = 2 * kAnsExact + 1;  // 31 .. 54: (k - 4) * 2 + sign
inline constexpr uint32_t kAnsFirstBucketLog = 4;               // the first bucket holds 16 <= |v| < 32
inline constexpr uint32_t kAnsOutlier = kAnsFirstBucket + 24;   // 55: code 0
inline constexpr uint32_t kAnsAlphabet = kAnsOutlier + 1;       // 56
inline constexpr uint32_t kAnsClasses = 12;        // previous-code classes 0..7, three runs, lane start
inline constexpr uint32_t kAnsRunClass = 8;         // 4..15 residual-0 codes just before
inline constexpr uint32_t kAnsShortRunClass = 9;    // 2..3
inline constexpr uint32_t kAnsLongRunClass = 10;    // kAnsLookBack or more
inline constexpr uint32_t kAnsStartClass = 11;      // a lane's first kAnsLookBack codes
inline constexpr uint32_t kAnsLookBack = 16;        // residual-0 codes are counted up to this
inline constexpr uint32_t kAnsMaxLevels = 8;
// Column strips (format version 12 on, AnsTables::strip_width): the codes are
// walked in blocks of W columns, each block row by row, and a code's context
// gains the activity of the row above it inside its block: the non-zero
// residuals among the codes at x - 2 .. x + 2 one row up, in three classes
// (0, 1-2, 3+), or "none" (class 0) where that row is not in the block or
// not yet decoded in the lane.  On smooth 2-D fields the row above says
// where the codes are busy (etopo5 rel 1e-2: -4.5% of the stage;
// bench/NOTES.md, session 45).
inline constexpr uint32_t kAnsAboveClasses = 4;
inline constexpr uint32_t kAnsAboveReach = 2;          // the window x - 2 .. x + 2
inline constexpr uint32_t kAnsMinStripWidth = 32;      // powers of two dividing nx: whole groups of 8, and a
                                                       // group's window above is in groups two or more back
inline constexpr uint32_t kAnsMaxStripWidth = 128;
inline constexpr uint32_t kAnsStripLaneMultiple = 8;   // lanes of whole groups of 8 (the GPU coders')
inline constexpr uint32_t kAnsMaxStripLevels = 5;      // 5 x 4 x 12 = 240 contexts: 8-bit table references
inline constexpr uint32_t kAnsMaxContexts = kAnsMaxStripLevels * kAnsAboveClasses * kAnsClasses;
static_assert(kAnsMaxContexts >= kAnsMaxLevels * kAnsClasses);
// ans_tables: a context's `used` byte that says it repeats an earlier context's table (version 8 on).
inline constexpr uint32_t kAnsTableRef = 0xFF;
// ans_tables, format version 15 on: this marker and a byte k stand for k + 2
// empty contexts in a row (one empty context is still its 0).
inline constexpr uint32_t kAnsEmptyRun = 0xFE;
// The farthest code back that may give a context class (AnsTables::class_lag).
inline constexpr uint32_t kAnsMaxClassLag = 2;
inline constexpr uint32_t kAnsBadCode = 0xFFFFFFFFu;  // ans_code_of's "not a code of this radius"

GSZ_HD uint32_t ans_floor_log2(uint32_t a) {  // a > 0
#if defined(__CUDA_ARCH__)
    return 31u - static_cast<uint32_t>(__clz(a));
#else
    return 31u - static_cast<uint32_t>(__builtin_clz(a));
#endif
}

GSZ_HD uint32_t ans_trailing_zeros(uint64_t m) {  // m > 0
#if defined(__CUDA_ARCH__)
    return static_cast<uint32_t>(__ffsll(static_cast<long long>(m))) - 1u;
#else
    return static_cast<uint32_t>(__builtin_ctzll(m));
#endif
}

// A quant-code as a symbol and the uniform bits that follow it.
struct AnsSymbol {
    uint32_t symbol;
    uint32_t extra_bits;  // 0, or k in 4..15
    uint32_t extra;       // < 2^extra_bits
};

// Written with selects rather than early returns: the GPU coders compute it
// for several codes at once, ahead of the state's serial chain.
GSZ_HD AnsSymbol ans_symbol_of(uint32_t code, uint32_t radius) {
    const int32_t v = static_cast<int32_t>(code) - static_cast<int32_t>(radius);
    const uint32_t a = static_cast<uint32_t>(v < 0 ? -v : v);
    const uint32_t k = ans_floor_log2(a | 1u);
    const bool exact = a <= static_cast<uint32_t>(kAnsExact);
    AnsSymbol s{exact ? static_cast<uint32_t>(v + kAnsExact)
                      : kAnsFirstBucket + 2 * (k - kAnsFirstBucketLog) + (v < 0 ? 1u : 0u),
                exact ? 0u : k, exact ? 0u : a - (1u << k)};
    if (code == 0) s = {kAnsOutlier, 0, 0};
    return s;
}

// Uniform bits after a symbol (0 for exact residuals and outliers).
GSZ_HD uint32_t ans_extra_bits(uint32_t symbol) {
    return symbol >= kAnsFirstBucket && symbol < kAnsOutlier ? (symbol - kAnsFirstBucket) / 2 + kAnsFirstBucketLog
                                                              : 0u;
}

// The code of a symbol and its extra bits, or kAnsBadCode when the residual
// is not below the radius (only a corrupt stream gives one).
GSZ_HD uint32_t ans_code_of(uint32_t symbol, uint32_t extra, uint32_t radius) {
    const uint32_t k = ans_extra_bits(symbol);  // 0 unless a bucket symbol
    const int32_t a = static_cast<int32_t>((1u << k) + extra);
    const int32_t v = k ? (((symbol - kAnsFirstBucket) & 1u) ? -a : a) : static_cast<int32_t>(symbol) - kAnsExact;
    const int32_t r = static_cast<int32_t>(radius);
    const uint32_t code = v > -r && v < r ? static_cast<uint32_t>(v + r) : kAnsBadCode;
    return symbol == kAnsOutlier ? 0u : code;
}

// The class a residual magnitude gives the next code's context: a function
// of the symbol alone (bucket symbols are all class 6), so a decoder knows
// the next context before it has the uniform bits.
GSZ_HD constexpr uint32_t ans_class_of_magnitude(uint32_t a) {
    return a <= 2 ? a : a <= 4 ? 3u : a <= 8 ? 4u : a <= static_cast<uint32_t>(kAnsExact) ? 5u : 6u;
}

// The classes of the magnitudes 0..16, three bits each (16 stands for every
// larger one): a shift instead of a chain of comparisons.
inline constexpr uint64_t kAnsMagnitudeClasses = [] {
    uint64_t c = 0;
    for (uint32_t a = 0; a <= 16; ++a) c |= uint64_t{ans_class_of_magnitude(a)} << (3 * a);
    return c;
}();

GSZ_HD uint32_t ans_class_of(uint32_t code, uint32_t radius) {
    const int32_t v = static_cast<int32_t>(code) - static_cast<int32_t>(radius);
    const uint32_t a = static_cast<uint32_t>(v < 0 ? -v : v);
    const uint32_t c = static_cast<uint32_t>(kAnsMagnitudeClasses >> (3 * (a < 16 ? a : 16u))) & 7u;
    return code == 0 ? 7u : c;
}

GSZ_HD uint32_t ans_class_of_symbol(uint32_t symbol) {
    if (symbol == kAnsOutlier) return 7;
    if (symbol >= kAnsFirstBucket) return 6;
    const int32_t v = static_cast<int32_t>(symbol) - kAnsExact;
    return ans_class_of_magnitude(static_cast<uint32_t>(v < 0 ? -v : v));
}

inline constexpr uint32_t kAnsZeroSymbol = kAnsExact;  // residual 0

// The context class of a code: `offset` is its index inside its lane (the
// histogram, which knows no lanes, passes the array index, so its first codes
// count as lane starts too), `zeros` the number of residual-0 codes just
// before it (counted up to kAnsLookBack), `prev_class` the class of the code
// before it.  A lane's first kAnsLookBack codes use the lane-start table,
// which holds every symbol of the level: their run cannot be seen inside the
// lane, so the encoder, the decoder and the histogram agree.
//
// Selects, not early returns: the GPU encoder takes it for eight codes ahead
// of the state's chain, and the returns became branches that split the warp
// at every code (ncu, interp rel 1e-2, one H200: the encoder 1378 -> 1015 us
// on etopoT, 1227 -> 1070 us on wmagT; bench/NOTES.md).
GSZ_HD uint32_t ans_context_class(uint64_t offset, uint32_t zeros, uint32_t prev_class) {
    const uint32_t run = zeros >= kAnsLookBack ? kAnsLongRunClass
                         : zeros >= 4          ? kAnsRunClass
                         : zeros >= 2          ? kAnsShortRunClass
                                               : prev_class;
    return offset < kAnsLookBack ? kAnsStartClass : run;
}

// The residual-0 codes just before a code, from a mask of the kAnsLookBack
// codes before it (bit k: the code k + 1 places back is residual 0): the
// trailing ones, 0..kAnsLookBack.  The encoders walk backwards, so they keep
// this mask instead of a running count.
GSZ_HD uint32_t ans_zeros_in_mask(uint32_t mask) {
    const uint32_t gaps = ~mask | (1u << kAnsLookBack);
#if defined(__CUDA_ARCH__)
    return static_cast<uint32_t>(__ffs(static_cast<int>(gaps))) - 1u;
#else
    return static_cast<uint32_t>(__builtin_ctz(gaps));
#endif
}

// Position of a coding index in up to three dims (fastest first), stepped
// forward or backward without division; level() is the point's level: the
// trailing zero bits of x | y | z, capped at levels - 1 (a point on every
// coarse grid, like the origin, gets the cap).  The coding order is the
// raster order (strip 0), or with column strips of `strip` columns block
// after block ([x0, x0 + strip) every row, rows y then z), where the coding
// index and the array (raster) index differ.
struct AnsCursor {
    uint64_t nx = 1, ny = 1, x = 0, y = 0, z = 0;
    uint32_t levels = 1;
    uint64_t nz = 1;
    uint32_t strip = 0;  // 0: raster order; else a power of two dividing nx
    uint64_t x0 = 0;     // the strip's first column

    GSZ_HD void seek(uint64_t index) {
        if (strip == 0) {
            x = index % nx;
            const uint64_t row = index / nx;
            y = row % ny;
            z = row / ny;
            return;
        }
        const uint64_t block = strip * ny * nz;
        x0 = index / block * strip;
        const uint64_t q = index % block;
        x = x0 + q % strip;
        const uint64_t row = q / strip;
        y = row % ny;
        z = row / ny;
    }
    GSZ_HD void next() {
        if (strip == 0) {
            if (++x < nx) return;
            x = 0;
        } else {
            if (++x < x0 + strip) return;
            x = x0;
        }
        if (++y < ny) return;
        y = 0;
        if (++z < nz || strip == 0) return;
        z = 0;
        x0 += strip;
        x = x0;
    }
    GSZ_HD void prev() {
        if (x > x0) {
            --x;
            return;
        }
        x = x0 + (strip == 0 ? nx : strip) - 1;
        if (y-- > 0) return;
        y = ny - 1;
        if (strip == 0 || z > 0) {
            --z;
            return;
        }
        z = nz - 1;
        x0 -= strip;
        x = x0 + strip - 1;
    }
    // The array index of the position.
    GSZ_HD uint64_t raster() const { return x + nx * (y + ny * z); }
    GSZ_HD uint32_t level() const {
        if (levels == 1) return 0;
        const uint64_t m = x | y | z;
        if (m == 0) return levels - 1;
        const uint32_t t = ans_trailing_zeros(m);
        return t < levels - 1 ? t : levels - 1;
    }
};

// The first chunk (of kAnsSampleChunk codes, ans.hpp) of sampled chunk c
// when every `stride`-th is counted: c * stride, or in strips c * stride + c
// mod stride, which moves the sample across the rows and columns of a strip:
// at a stride of 16, chunks 1024 codes apart would all start at the same
// column and at the same row modulo 8, i.e. on the same interpolation
// levels (etopoT, strips of 128: the sample said +40% bits where the whole
// said -7%).
GSZ_HD uint64_t ans_sample_chunk(uint64_t c, uint32_t stride, bool strips) {
    return c * stride + (strips ? c % stride : 0u);
}

// The context of a code: its level, its above class (0 without strips) and
// its class (ans_context_class), with `aboves` above classes (1 without strips).
GSZ_HD uint32_t ans_context(uint32_t level, uint32_t above, uint32_t cls, uint32_t aboves) {
    return (level * aboves + above) * kAnsClasses + cls;
}

// The above class of a code at coding index `index` of a lane that starts at
// `lane_begin` (the histogram: 0) and at row y of its strip of `strip`
// columns, from the non-zero residuals among its window one row up: none
// (0) in a strip's first row and in a lane's first strip + 2 codes (the
// window must be decoded in the lane before the code), else 1, 2, 3 for
// 0, 1-2, 3+.
GSZ_HD uint32_t ans_above_class(uint64_t index, uint64_t lane_begin, uint64_t y, uint32_t strip, uint32_t nonzero) {
    const bool seen = y >= 1 && index >= lane_begin + strip + kAnsAboveReach;
    return !seen ? 0u : nonzero == 0 ? 1u : nonzero <= 2 ? 2u : 3u;
}

// The non-zero residuals of the window above the cursor's position (its row
// y >= 1), clipped to the strip's columns; `codes` the whole array.
GSZ_HD uint32_t ans_above_nonzero(const uint16_t* codes, const AnsCursor& cur, uint32_t radius) {
    const uint64_t lo = cur.x >= cur.x0 + kAnsAboveReach ? cur.x - kAnsAboveReach : cur.x0;
    const uint64_t hi = cur.x + kAnsAboveReach < cur.x0 + cur.strip ? cur.x + kAnsAboveReach : cur.x0 + cur.strip - 1;
    const uint16_t* row = codes + (cur.raster() - cur.x - cur.nx);
    uint32_t n = 0;
    for (uint64_t k = lo; k <= hi; ++k) n += row[k] != radius;
    return n;
}

// Encoder step (items are pushed in reverse decoding order): a symbol of
// frequency `freq` at cumulative `cum` on a 2^scale_bits table, or k uniform
// bits as freq 1, cum = the bits, scale_bits = k.  Returns whether the low
// 16 bits of the old state were emitted into *word.
GSZ_HD bool ans_encode_put(uint32_t& x, uint32_t freq, uint32_t cum, uint32_t scale_bits, uint16_t* word) {
    const uint64_t x_max = static_cast<uint64_t>(freq) << (32 - scale_bits);
    const bool emit = x >= x_max;
    if (emit) {
        *word = static_cast<uint16_t>(x & 0xFFFFu);
        x >>= 16;
    }
    x = ((x / freq) << scale_bits) + (x % freq) + cum;
    return emit;
}

// Decoder step after the slot's symbol was looked up: the state after the
// symbol; the caller then renormalizes (ans_decode_needs_word).
GSZ_HD uint32_t ans_decode_advance(uint32_t x, uint32_t freq, uint32_t cum, uint32_t scale_bits) {
    return freq * (x >> scale_bits) + (x & ((1u << scale_bits) - 1u)) - cum;
}

GSZ_HD bool ans_decode_needs_word(uint32_t x) { return x < kAnsStateLow; }

}  // namespace gsz::encode
