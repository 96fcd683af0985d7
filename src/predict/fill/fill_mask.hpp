// Fill values (format version 13): a marker the source stores in place of
// data (land cells of an ocean field, -1e34 or 1e20 among values of 0-30).
// Points holding it bit for bit are not coded by the predictor; the archive
// keeps where they are (the mask) and the decoder writes the value back
// exactly, so a reader's `x == _FillValue` test still finds every one.
//
// The mask is coded as its Lorenzo residual over GF(2): the XOR of a point's
// mask bit with its 7 (3-D) / 3 (2-D) / 1 (1-D) lower neighbours'.  A land
// mask constant along the slowest dim leaves ones only at the corners of its
// first layer (vtkdata_tos: 1,150 ones for 734,400 points).  The ones'
// raster positions are coded as Elias-gamma gaps.  Decoding the mask is an
// XOR prefix scan along each dim, which both backends do in parallel.
//
// Section fill_mask: u64 fill points, u64 residual ones, then the gaps'
// gamma codes (MSB first, the last byte's unused low bits 0).
#pragma once

#include "runtime/host_device.hpp"

#include <bit>
#include <cstdint>
#include <span>
#include <vector>

namespace gsz::predict {

struct FillValue {
    bool on = false;
    uint64_t bits = 0;   // the value's bit pattern as T (float: the low 32 bits)
    // What the encoder codes in its place where it codes values rather than
    // predictions (anchors, Lorenzo tiles, outliers): the middle of the other
    // values of the sample, so land anchors do not put a jump of 1e20 into the
    // splines next to the coast.  The encoder's choice alone: not stored.
    double stand_in = 0;
};

template <class T>
GSZ_HD uint64_t fill_bits_of(T x) {
#if defined(__CUDA_ARCH__)
    if constexpr (sizeof(T) == 4) return __float_as_uint(x);
    else return static_cast<uint64_t>(__double_as_longlong(x));
#else
    if constexpr (sizeof(T) == 4) return std::bit_cast<uint32_t>(x);
    else return std::bit_cast<uint64_t>(x);
#endif
}

template <class T>
GSZ_HD bool fill_holds(const FillValue& f, T x) {
    return f.on && fill_bits_of(x) == f.bits;
}

template <class T>
GSZ_HD T fill_stand_in(const FillValue& f, T x) {
    return fill_holds(f, x) ? static_cast<T>(f.stand_in) : x;
}

template <class T>
T fill_value_as(const FillValue& f) {
    if constexpr (sizeof(T) == 4) return std::bit_cast<float>(static_cast<uint32_t>(f.bits));
    else return std::bit_cast<double>(f.bits);
}

// The mask's residual at (x, y, z) of `dims` (dim 0 fastest; unused dims 1),
// from m(x, y, z) = whether the point holds the fill value.
template <class M>
GSZ_HD bool fill_residual_at(const M& m, uint64_t x, uint64_t y, uint64_t z) {
    bool r = false;
    for (uint32_t c = 0; c < 8; ++c) {
        const uint64_t dx = c & 1, dy = (c >> 1) & 1, dz = c >> 2;
        if (dx > x || dy > y || dz > z) continue;
        r ^= m(x - dx, y - dy, z - dz);
    }
    return r;
}

// The fill value of an array, judged on the interp tuner's sample (both
// backends gather the same values) and the exact finite range: the minimum or
// the maximum where it is at least 1/64 of the sample and lies apart from the
// rest of it (its distance to the nearest other value is at least 4 times
// their span).  Such a value cannot be a field's own extreme: the fills of the
// shared fields lie 1e10 to 1e37 away from values spanning 1 to 300.  Or a
// NaN, by its bit pattern, where one pattern is at least 1/64 of the sample
// (NaN as the missing-value marker of netCDF and xarray): as outliers its
// points cost an index and a value each, and their neighbours' predictions.
// The candidate held by the most sample points wins.  Never on a sample
// without other finite values.  Off where nothing qualifies.
template <class T>
FillValue fill_detect(std::span<const T> sample, double value_min, double value_max);

// The caller's fill value (`--fill-value V`) as T: its bit pattern (its
// stand-in from the sample's other values).
template <class T>
FillValue fill_from_value(double v, std::span<const T> sample);

// The array with the fill value replaced by its stand-in (what the encoder's
// anchors, Lorenzo tiles and outliers read).
template <class T>
std::vector<T> fill_substitute_cpu(const T* data, uint64_t n, const FillValue& fill, int num_threads);

// The mask of an array with `dims` (dim 0 fastest): how many points hold the
// fill value, and the raster positions of its residual's ones, increasing.
struct FillMask {
    uint64_t points = 0;
    std::vector<uint64_t> residual;
};

template <class T>
FillMask fill_mask_encode_cpu(const T* data, const uint64_t* dims, const FillValue& fill, int num_threads);

// The fill_mask section's bytes, and back (GSZ_STATUS_CORRUPT on anything
// that is not a mask of an array of n points).
std::vector<uint8_t> fill_mask_write(const FillMask& mask);
FillMask fill_mask_read(std::span<const uint8_t> bytes, uint64_t n);

// The decoded mask, one byte a point (1 = fill), from its residual; throws
// GSZ_STATUS_CORRUPT where its count is not mask.points.
std::vector<uint8_t> fill_mask_expand_cpu(const FillMask& mask, const uint64_t* dims, int num_threads);

// out[i] = the fill value wherever the mask is set.
template <class T>
void fill_mask_apply_cpu(const FillMask& mask, const uint64_t* dims, const FillValue& fill, T* out,
                         int num_threads);

}  // namespace gsz::predict
