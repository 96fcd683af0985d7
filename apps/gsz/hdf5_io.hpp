// HDF5 datasets as the command line's input and output (--dataset), where
// gsz is built with HDF5; without it the calls fail with a clear message.
#pragma once

#include "gsz/gsz.h"

#include <cstdint>
#include <string>
#include <vector>

namespace gsz::cli {

bool hdf5_available();

// A float dataset's element type and dims (fastest first, dims of size 1
// dropped).  Throws std::runtime_error naming the file and dataset on any
// failure: not an HDF5 file, no such dataset, not a float dataset, more than
// 4 dims of size > 1, empty.
struct Hdf5Shape {
    gsz_dtype dtype = GSZ_DTYPE_F32;
    std::vector<uint64_t> dims;
};
Hdf5Shape hdf5_shape(const std::string& path, const std::string& dataset);

// Reads the whole dataset into `out` (its shape's bytes) as native
// little-endian float32 or float64, HDF5 converting whatever the file holds.
void hdf5_read(const std::string& path, const std::string& dataset, const Hdf5Shape& shape, void* out);

// Writes `bytes` as dataset `dataset` (intermediate groups created) of a new
// file at `path` (which the caller may rename into place), IEEE
// little-endian float32 or float64, dims fastest first.  Messages name the
// file `shown` (the target, where `path` is a temporary beside it).
void hdf5_write(const std::string& path, const std::string& shown, const std::string& dataset, gsz_dtype dtype,
                const std::vector<uint64_t>& dims, const void* bytes);

}  // namespace gsz::cli
