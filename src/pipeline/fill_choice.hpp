// The fill value a compression takes (predict/fill/fill_mask.hpp), shared by
// the lorenzo and interp pipelines and by both backends, so that all four
// find the same value on the same sample.
#pragma once

#include "format/archive.hpp"
#include "pipeline/pipeline.hpp"
#include "predict/fill/fill_mask.hpp"

#include <gsz/gsz.h>

#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

namespace gsz::pipeline {

// The fill value the caller asked for, or found on the sample
// (predict::fill_detect) with the array's finite range.  Where one is on, the
// header takes the range of the other finite values (finite_range_cpu's
// skip_bits), and a relative bound is relative to it: the fill value is not
// data, and a bound spanning it (tos: 1e17 for values of 271-305) would keep
// nothing of the field but its mask.
template <class T>
predict::FillValue choose_fill(const gsz_params& params, std::span<const T> sample, const FiniteRange& range);

// choose_fill on the host's array (lorenzo and interp; off for the others),
// and `range` narrowed to the other finite values where one is on.
template <class T>
predict::FillValue choose_fill_cpu(const gsz_params& params, const T* data, FiniteRange& range);

// The sample the choice reads: the interp tuner's points of an array of
// `rank` dims (predict::interp_tune_indices of the default layout), gathered
// on the host.  The CUDA backend gathers the same points on the device.
template <class T>
std::vector<T> fill_sample_cpu(const T* data, uint32_t rank, const uint64_t* dims);

// gsz_archive_info's fill fields (has_fill, the value, the mask's bytes and points).
void describe_fill(const format::Archive& archive, const predict::FillValue& fill, gsz_archive_info& info);

}  // namespace gsz::pipeline
