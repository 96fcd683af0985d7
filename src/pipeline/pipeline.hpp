// The pipelines: the only place that knows the order of the stages.
//   lorenzo: finite range -> lattice + Lorenzo + quant-codes/outliers ->
//            histogram -> canonical Huffman -> chunked bitstream -> archive
//   interp:  finite range -> tuning sample -> anchors + spline levels ->
//            quant-codes/outliers -> histogram -> canonical Huffman -> archive
//   fast:    finite range -> per block: constant / truncated differences with
//            leading-byte codes / raw -> four byte streams -> archive
//   store:   zstd of the raw values (lossless; also the fallback when a lossy
//            archive would be larger than the input)
#pragma once

#include "format/archive.hpp"
#include "predict/fill/fill_mask.hpp"

#include <gsz/gsz.h>

#include <cstdint>
#include <functional>
#include <vector>

namespace gsz::pipeline {

struct FiniteRange {
    double min = 0, max = 0;
    bool any = false;   // false when no value is finite
};

// The finite values' range; with skip_bits, of those whose bit pattern is not
// *skip_bits (a fill value: predict::fill_bits_of).
template <class T>
FiniteRange finite_range_cpu(const T* data, uint64_t count, int num_threads, const uint64_t* skip_bits = nullptr);

// Throws GSZ_STATUS_INVALID_ARGUMENT naming the first bad field.
void params_validate(const gsz_params& params);
uint64_t params_num_elements(const gsz_params& params);   // after validation
// The quantization radius a call uses: params.radius, or the pipeline's default when 0.
uint32_t quant_radius(const gsz_params& params);
size_t dtype_bytes(gsz_dtype dtype);

// Worst-case archive size (see gsz_compress_bound).
uint64_t compress_bound(const gsz_params& params);

// Scratch memory compression/decompression need besides input and output,
// for the context's memory limit.
uint64_t compress_workspace_bytes(const gsz_params& params);
uint64_t decompress_workspace_bytes(const format::Header& header);

// The backend a call runs on: AUTO picks CUDA when this build has it and a
// GPU is usable; CUDA without one is GSZ_STATUS_NO_DEVICE, never a silent CPU run.
enum class Backend { cpu, cuda };
Backend choose_backend(gsz_device device);

// Header of the archive these params produce for data with this finite
// range: the applied absolute bound and the pipeline.  Shared by both
// backends so they decide identically.
format::Header plan_header(const gsz_params& params, const FiniteRange& range);

// Replaces a lossy archive that came out larger than the input by the
// lossless one (the input is needed on the host for that).
std::vector<uint8_t> smaller_of_lossy_and_store(std::vector<uint8_t> lossy, const format::Header& header,
                                                const void* h_data);

std::vector<uint8_t> compress(const gsz_params& params, const void* data);

// The component dim (components.hpp) a compression of this host data runs
// with, or -1 (params.components off, or no dim qualifies).
int32_t choose_component_dim_host(const gsz_params& params, const void* h_data);

// Compression with component dim k (components.hpp): `compress_view` runs the
// pipeline on the view (params with the view's dims, components off) of the
// data the caller moved apart; its archive gets the array's header.  A store
// archive (the fallback) is replaced by `store_array(header)`, the store of
// the array in its own order.
std::vector<uint8_t> compress_components(
    const gsz_params& params, uint32_t k, const std::function<std::vector<uint8_t>(const gsz_params&)>& compress_view,
    const std::function<std::vector<uint8_t>(const format::Header&)>& store_array);

// GSZ_PIPELINE_AUTO: `compress_with` run with the lorenzo and the interp
// pipeline; the smaller archive (lorenzo's on a tie).  Each pipeline's archive
// is the same on both backends, so the choice is too.
template <class Compress>
std::vector<uint8_t> smaller_of_lorenzo_and_interp(const gsz_params& params, Compress&& compress_with) {
    gsz_params lorenzo = params, interp = params;
    lorenzo.pipeline = GSZ_PIPELINE_LORENZO;
    interp.pipeline = GSZ_PIPELINE_INTERP;
    std::vector<uint8_t> a = compress_with(lorenzo);
    std::vector<uint8_t> b = compress_with(interp);
    return b.size() < a.size() ? b : a;
}

// Every section of the archive is one its pipeline uses (the missing ones
// are reported where they are read).  GSZ_STATUS_CORRUPT names the stray one.
void check_section_set(const format::Archive& archive);

// `out` holds header.num_elements() values of header.dtype (host memory).
void decompress(const format::Archive& archive, void* out, gsz_device device, int num_threads);

// Pipeline-specific facts for gsz_archive_inspect (radius, outlier count).
void describe(const format::Archive& archive, gsz_archive_info& info);

// Stage recipes, one per pipeline.
// `fill`: the fill value choose_fill_cpu found (the header's range is then the other values').
std::vector<uint8_t> lorenzo_compress(const gsz_params& params, const format::Header& header, const void* data,
                                      const predict::FillValue& fill);
void lorenzo_decompress(const format::Archive& archive, void* out, int num_threads);
void lorenzo_describe(const format::Archive& archive, gsz_archive_info& info);

std::vector<uint8_t> fast_compress(const gsz_params& params, const format::Header& header, const void* data);
void fast_decompress(const format::Archive& archive, void* out, int num_threads);
void fast_describe(const format::Archive& archive, gsz_archive_info& info);

std::vector<uint8_t> interp_compress(const gsz_params& params, const format::Header& header, const void* data,
                                     const predict::FillValue& fill);
void interp_decompress(const format::Archive& archive, void* out, int num_threads);
void interp_describe(const format::Archive& archive, gsz_archive_info& info);

std::vector<uint8_t> store_compress(const format::Header& header, const void* data);
void store_decompress(const format::Archive& archive, void* out);

}  // namespace gsz::pipeline
