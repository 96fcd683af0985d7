#include "pipeline/pipeline.hpp"

#include "pipeline/fill_choice.hpp"

#include "encode/run_tokens.hpp"
#include "pipeline/bench.hpp"
#include "pipeline/components.hpp"
#include "pipeline/pipeline_cuda.hpp"
#include "runtime/status.hpp"

#include <zstd.h>

#include <cmath>
#include <functional>

namespace gsz::pipeline {

size_t dtype_bytes(gsz_dtype dtype) { return dtype == GSZ_DTYPE_F64 ? 8 : 4; }

void params_validate(const gsz_params& p) {
    constexpr gsz_status bad = GSZ_STATUS_INVALID_ARGUMENT;
    const int dtype = enum_bits(p.dtype), mode = enum_bits(p.error_mode), pipeline = enum_bits(p.pipeline),
              device = enum_bits(p.device);
    GSZ_CHECK(dtype == GSZ_DTYPE_F32 || dtype == GSZ_DTYPE_F64, bad, "dtype %d is not f32 or f64", dtype);
    GSZ_CHECK(p.rank >= 1 && p.rank <= GSZ_MAX_RANK, bad, "rank %u is not in 1..4", p.rank);
    uint64_t n = 1;
    for (uint32_t d = 0; d < p.rank; ++d) {
        GSZ_CHECK(p.dims[d] >= 1, bad, "dimension %u is 0", d);
        GSZ_CHECK(!__builtin_mul_overflow(n, p.dims[d], &n), bad, "dims product overflows 64 bits");
    }
    GSZ_CHECK(n <= (uint64_t{1} << 62) / dtype_bytes(p.dtype), bad, "array of %llu elements is too large",
              static_cast<unsigned long long>(n));
    GSZ_CHECK(mode == GSZ_ERROR_ABS || mode == GSZ_ERROR_REL, bad, "error mode %d is not abs or rel", mode);
    GSZ_CHECK(std::isfinite(p.error_bound) && p.error_bound >= 0, bad,
              "error bound %g must be finite and >= 0", p.error_bound);
    GSZ_CHECK(pipeline == GSZ_PIPELINE_LORENZO || pipeline == GSZ_PIPELINE_FAST || pipeline == GSZ_PIPELINE_INTERP ||
                  pipeline == GSZ_PIPELINE_STORE || pipeline == GSZ_PIPELINE_AUTO,
              bad, "pipeline %d is not available", pipeline);
    GSZ_CHECK(p.block_size == 0 || p.block_size == 64 || p.block_size == 128 || p.block_size == 256, bad,
              "block size %u is not 64, 128 or 256", p.block_size);
    GSZ_CHECK(p.radius <= 32768, bad, "radius %u is not in 1..32768 (0 = the pipeline's default)", p.radius);
    GSZ_CHECK(device == GSZ_DEVICE_AUTO || device == GSZ_DEVICE_CPU || device == GSZ_DEVICE_CUDA, bad,
              "device %d is not auto, cpu or cuda", device);
    const int lossless = enum_bits(p.lossless);
    GSZ_CHECK(lossless >= GSZ_LOSSLESS_AUTO && lossless <= GSZ_LOSSLESS_ANS, bad,
              "lossless stage %d is not auto, none, runs or ans", lossless);
    const int strips = enum_bits(p.ans_strips);
    GSZ_CHECK(strips >= GSZ_ANS_STRIPS_AUTO && strips <= GSZ_ANS_STRIPS_ON, bad,
              "ans strips %d is not auto, off or on", strips);
    const int components = enum_bits(p.components);
    GSZ_CHECK(components == GSZ_COMPONENTS_AUTO || components == GSZ_COMPONENTS_OFF, bad,
              "components %d is not auto or off", components);
}

uint32_t quant_radius(const gsz_params& p) {
    if (p.radius != 0) return p.radius;
    // Interp codes spread wider than Lorenzo's where a fill value meets data
    // (a spline carries the jump to its four neighbours): a wide alphabet keeps
    // them as Huffman codes instead of exact outliers (coads_sst rel 1e-4:
    // ratio 2.3 at radius 512, 15.7 at 32768; smooth fields do not change).
    // The widest that leaves the run tokens room in the 16-bit alphabet.
    return p.pipeline == GSZ_PIPELINE_INTERP ? encode::kRunMaxAlphabet / 2 : 512u;
}

uint64_t params_num_elements(const gsz_params& p) {
    uint64_t n = 1;
    for (uint32_t d = 0; d < p.rank; ++d) n *= p.dims[d];
    return n;
}

uint64_t compress_bound(const gsz_params& p) {
    const uint64_t n = params_num_elements(p);
    const uint64_t raw = n * dtype_bytes(p.dtype);
    // A lossy archive larger than the input is replaced by the store
    // pipeline, so the bound is the store archive's worst case.
    const uint64_t overhead = format::kHeaderBytes + format::kMaxSections * format::kSectionEntryBytes;
    return overhead + ZSTD_compressBound(static_cast<size_t>(raw)) + raw + 64;
}

uint64_t compress_workspace_bytes(const gsz_params& p) {
    const uint64_t n = params_num_elements(p);
    // codes (2 B) + run tokens (<= 2 B) + bitstream (<= 3 B) + outliers + archive (<= input + zstd bound),
    // and the components' copy of the input where a dim may be one
    const bool components = p.components == GSZ_COMPONENTS_AUTO &&
                            !component_candidates(p.rank, p.dims, p.pipeline == GSZ_PIPELINE_AUTO
                                                                      ? GSZ_PIPELINE_LORENZO
                                                                      : p.pipeline).empty();
    return n * (2 + 2 + 3 + (components ? 3 : 2) * dtype_bytes(p.dtype)) + (1u << 20);
}

uint64_t decompress_workspace_bytes(const format::Header& h) {
    // lorenzo, interp: quant-codes (outliers and anchors are bounded by the archive),
    // and the components' copy of the output; fast: two offsets per block of at least 64 values
    return h.num_elements() * (2 + (h.component_dim >= 0 ? h.element_bytes() : 0)) + (1u << 20);
}

Backend choose_backend(gsz_device device) {
    std::string why;
    switch (enum_bits(device)) {
        case GSZ_DEVICE_CPU: return Backend::cpu;
        case GSZ_DEVICE_AUTO: return cuda_backend_available(nullptr) ? Backend::cuda : Backend::cpu;
        case GSZ_DEVICE_CUDA:
            GSZ_CHECK(cuda_backend_available(&why), GSZ_STATUS_NO_DEVICE, "CUDA backend unavailable: %s", why.c_str());
            return Backend::cuda;
    }
    fail(GSZ_STATUS_INVALID_ARGUMENT, format_message("device %d is not auto, cpu or cuda", enum_bits(device)));
}

format::Header plan_header(const gsz_params& p, const FiniteRange& range) {
    format::Header h;
    h.dtype = p.dtype;
    h.rank = p.rank;
    for (uint32_t d = 0; d < GSZ_MAX_RANK; ++d) h.dims[d] = d < p.rank ? p.dims[d] : 1;
    h.error_mode = p.error_mode;
    h.error_bound = p.error_bound;
    h.value_min = range.min;
    h.value_max = range.max;
    double eb_abs = p.error_bound;
    if (p.error_mode == GSZ_ERROR_REL) eb_abs = range.any ? p.error_bound * (range.max - range.min) : 0.0;
    // A bound whose lattice step or reciprocal is not a finite positive double
    // cannot drive the lattice: store losslessly (bound 0 means lossless).
    const bool lossy = eb_abs > 0 && std::isfinite(2.0 * eb_abs) && std::isfinite(1.0 / (2.0 * eb_abs));
    h.error_bound_abs = lossy ? eb_abs : 0.0;
    h.pipeline = lossy ? p.pipeline : GSZ_PIPELINE_STORE;
    return h;
}

std::vector<uint8_t> smaller_of_lossy_and_store(std::vector<uint8_t> lossy, const format::Header& header,
                                                const void* h_data) {
    if (lossy.size() <= header.num_elements() * header.element_bytes()) return lossy;
    // Incompressible at this bound: the lossless archive is smaller.
    format::Header store = header;
    store.pipeline = GSZ_PIPELINE_STORE;
    store.error_bound_abs = 0;
    std::vector<uint8_t> stored = store_compress(store, h_data);
    return stored.size() < lossy.size() ? stored : lossy;
}

int32_t choose_component_dim_host(const gsz_params& p, const void* data) {
    if (p.components != GSZ_COMPONENTS_AUTO) return -1;
    return choose_component_dim(p.rank, p.dims, p.pipeline, [&](const std::vector<uint64_t>& index) {
        std::vector<double> v(index.size());
        for (size_t i = 0; i < index.size(); ++i)
            v[i] = p.dtype == GSZ_DTYPE_F32 ? static_cast<const float*>(data)[index[i]]
                                            : static_cast<const double*>(data)[index[i]];
        return v;
    });
}

std::vector<uint8_t> compress_components(
    const gsz_params& p, uint32_t k, const std::function<std::vector<uint8_t>(const gsz_params&)>& compress_view,
    const std::function<std::vector<uint8_t>(const format::Header&)>& store_array) {
    gsz_params view = component_view_params(p, k);
    view.components = GSZ_COMPONENTS_OFF;   // one component dim per archive
    std::vector<uint8_t> archive = compress_view(view);
    const format::Archive parsed = format::archive_parse(archive);
    if (parsed.header.pipeline == GSZ_PIPELINE_STORE) {
        // The lossy archive was larger than the input (or the bound lossless):
        // the array itself is stored, in its own order.
        format::Header h = parsed.header;
        h.rank = p.rank;
        for (uint32_t d = 0; d < GSZ_MAX_RANK; ++d) h.dims[d] = d < p.rank ? p.dims[d] : 1;
        return store_array(h);
    }
    return component_archive(archive, p.rank, p.dims, k);
}

std::vector<uint8_t> compress(const gsz_params& p, const void* data) {
    params_validate(p);
    if (p.pipeline == GSZ_PIPELINE_AUTO)
        return smaller_of_lorenzo_and_interp(p, [&](const gsz_params& q) { return compress(q, data); });
    if (const int32_t k = choose_component_dim_host(p, data); k >= 0) {
        const ComponentSplit split = component_split(p.rank, p.dims, static_cast<uint32_t>(k));
        std::vector<uint8_t> apart(split.elements() * dtype_bytes(p.dtype));
        components_apart_cpu(data, apart.data(), split, dtype_bytes(p.dtype), p.num_threads);
        return compress_components(
            p, static_cast<uint32_t>(k), [&](const gsz_params& view) { return compress(view, apart.data()); },
            [&](const format::Header& h) { return store_compress(h, data); });
    }
    if (choose_backend(p.device) == Backend::cuda) return compress_cuda(p, data);
    const uint64_t n = params_num_elements(p);
    const bool f32 = p.dtype == GSZ_DTYPE_F32;
    FiniteRange range = f32 ? finite_range_cpu(static_cast<const float*>(data), n, p.num_threads)
                            : finite_range_cpu(static_cast<const double*>(data), n, p.num_threads);
    // A fill value: the header takes the other values' range (fill_choice.hpp).
    const predict::FillValue fill = f32 ? choose_fill_cpu(p, static_cast<const float*>(data), range)
                                        : choose_fill_cpu(p, static_cast<const double*>(data), range);
    const format::Header h = plan_header(p, range);
    if (h.pipeline == GSZ_PIPELINE_STORE) return store_compress(h, data);
    if (h.pipeline == GSZ_PIPELINE_FAST) return smaller_of_lossy_and_store(fast_compress(p, h, data), h, data);
    if (h.pipeline == GSZ_PIPELINE_INTERP)
        return smaller_of_lossy_and_store(interp_compress(p, h, data, fill), h, data);
    return smaller_of_lossy_and_store(lorenzo_compress(p, h, data, fill), h, data);
}

void check_section_set(const format::Archive& archive) {
    using K = format::SectionKind;
    auto bits = [](std::initializer_list<K> kinds) {
        uint64_t m = 0;
        for (K k : kinds) m |= uint64_t{1} << static_cast<uint32_t>(k);
        return m;
    };
    uint64_t allowed = 0;
    switch (enum_bits(archive.header.pipeline)) {
        case GSZ_PIPELINE_STORE: allowed = bits({K::zstd_values}); break;
        case GSZ_PIPELINE_LORENZO:
            allowed = bits({K::pipeline_params, K::huffman_codebook, K::huffman_chunks, K::huffman_bitstream,
                            K::outlier_values, K::run_tokens, K::ans_tables, K::ans_lanes, K::ans_stream,
                            K::fill_mask});
            break;
        case GSZ_PIPELINE_FAST:
            allowed = bits({K::pipeline_params, K::fast_block_codes, K::fast_block_mids, K::fast_lead_codes,
                            K::fast_mid_bytes});
            break;
        case GSZ_PIPELINE_INTERP:
            allowed = bits({K::pipeline_params, K::huffman_codebook, K::huffman_chunks, K::huffman_bitstream,
                            K::outlier_values, K::interp_anchors, K::outlier_indices, K::run_tokens, K::ans_tables,
                            K::ans_lanes, K::ans_stream, K::interp_tiles, K::fill_mask});
            break;
    }
    for (const format::Section& s : archive.sections)
        GSZ_CHECK(allowed & (uint64_t{1} << static_cast<uint32_t>(s.kind)), GSZ_STATUS_CORRUPT,
                  "archive: section %s does not belong in a pipeline %d archive", format::section_kind_name(s.kind),
                  enum_bits(archive.header.pipeline));
}

void decompress(const format::Archive& archive, void* out, gsz_device device, int num_threads) {
    check_section_set(archive);
    if (const int32_t k = archive.header.component_dim; k >= 0) {
        const format::Header& h = archive.header;
        const ComponentSplit split = component_split(h.rank, h.dims, static_cast<uint32_t>(k));
        std::vector<uint8_t> apart(split.elements() * h.element_bytes());
        decompress(component_view_archive(archive), apart.data(), device, num_threads);
        components_together_cpu(apart.data(), out, split, h.element_bytes(), num_threads);
        return;
    }
    const Backend backend = choose_backend(device);
    switch (archive.header.pipeline) {
        case GSZ_PIPELINE_STORE: return store_decompress(archive, out);  // zstd runs on the host
        case GSZ_PIPELINE_LORENZO:
            if (backend == Backend::cuda) return decompress_cuda(archive, out);
            return lorenzo_decompress(archive, out, num_threads);
        case GSZ_PIPELINE_FAST:
            if (backend == Backend::cuda) return decompress_cuda(archive, out);
            return fast_decompress(archive, out, num_threads);
        case GSZ_PIPELINE_INTERP:
            if (backend == Backend::cuda) return decompress_cuda(archive, out);
            return interp_decompress(archive, out, num_threads);
        case GSZ_PIPELINE_AUTO: break;  // a choice made at compression, never in an archive (archive_parse refuses it)
    }
    fail(GSZ_STATUS_UNSUPPORTED, format_message("pipeline %d is not supported", archive.header.pipeline));
}

void describe(const format::Archive& archive, gsz_archive_info& info) {
    check_section_set(archive);
    info.radius = 0;
    info.num_outliers = 0;
    info.block_size = 0;
    info.num_blocks = info.num_constant_blocks = info.num_raw_blocks = 0;
    info.component_dim = archive.header.component_dim;
    if (archive.header.component_dim >= 0) {   // the pipeline's params describe the view it ran on
        const format::Archive view = component_view_archive(archive);
        if (view.header.pipeline == GSZ_PIPELINE_LORENZO) lorenzo_describe(view, info);
        if (view.header.pipeline == GSZ_PIPELINE_FAST) fast_describe(view, info);
        if (view.header.pipeline == GSZ_PIPELINE_INTERP) interp_describe(view, info);
        return;
    }
    if (archive.header.pipeline == GSZ_PIPELINE_LORENZO) lorenzo_describe(archive, info);
    if (archive.header.pipeline == GSZ_PIPELINE_FAST) fast_describe(archive, info);
    if (archive.header.pipeline == GSZ_PIPELINE_INTERP) interp_describe(archive, info);
}

}  // namespace gsz::pipeline
