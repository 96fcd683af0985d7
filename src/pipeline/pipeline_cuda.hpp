// The CUDA backend's entry points, declared without CUDA types so that host
// code compiled by a plain C++ compiler can call them.  Implemented in
// pipeline_cuda.cu; a build without CUDA links pipeline_nocuda.cpp instead,
// whose functions fail with GSZ_STATUS_NO_DEVICE.
#pragma once

#include "format/archive.hpp"

#include <gsz/gsz.h>

#include <cstdint>
#include <vector>

namespace gsz::pipeline {

// `stream` is a cudaStream_t (nullptr = the default stream).
std::vector<uint8_t> compress_cuda(const gsz_params& params, const void* h_data);
std::vector<uint8_t> compress_cuda_device(const gsz_params& params, const void* d_data, void* stream);
void decompress_cuda(const format::Archive& archive, void* h_out);
void decompress_cuda_device(const format::Archive& archive, void* d_out, void* stream);

// Plain copies between host and device memory on `stream` (complete on return).
void copy_to_device(void* d_dst, const void* h_src, size_t bytes, void* stream);
void copy_to_host(void* h_dst, const void* d_src, size_t bytes, void* stream);

}  // namespace gsz::pipeline
