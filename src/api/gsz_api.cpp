// The C API: argument checks, backend choice and the exception -> status
// boundary.  No C++ exception crosses gsz.h.
#include <gsz/gsz.h>

#include "assess/assess.hpp"
#include "format/archive.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/pipeline_cuda.hpp"
#include "runtime/status.hpp"

#include <cstdio>
#include <cstring>
#include <new>
#include <string>

struct gsz_ctx {
    std::string last_error;
    uint64_t memory_limit = uint64_t{16} << 30;
};

namespace {

using gsz::Error;

void check_memory(const gsz_ctx* ctx, uint64_t bytes, const char* what) {
    GSZ_CHECK(ctx->memory_limit == 0 || bytes <= ctx->memory_limit, GSZ_STATUS_LIMIT_EXCEEDED,
              "%s needs %llu bytes of working memory, over the limit of %llu", what,
              static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(ctx->memory_limit));
}

template <class F>
gsz_status guarded(gsz_ctx* ctx, F&& body) {
    if (ctx) ctx->last_error.clear();
    auto failed = [&](gsz_status status, const char* message) {
        if (ctx) ctx->last_error = message;
        return status;
    };
    try {
        body();
        return GSZ_STATUS_OK;
    } catch (const Error& e) {
        return failed(e.status(), e.what());
    } catch (const std::bad_alloc&) {
        return failed(GSZ_STATUS_OUT_OF_MEMORY, "out of memory");
    } catch (const std::length_error&) {
        return failed(GSZ_STATUS_OUT_OF_MEMORY, "allocation too large");
    } catch (const std::exception& e) {
        return failed(GSZ_STATUS_INTERNAL, e.what());
    } catch (...) {
        return failed(GSZ_STATUS_INTERNAL, "unknown internal error");
    }
}

}  // namespace

extern "C" {

const char* gsz_status_string(gsz_status status) {
    switch (status) {
        case GSZ_STATUS_OK: return "ok";
        case GSZ_STATUS_INVALID_ARGUMENT: return "invalid argument";
        case GSZ_STATUS_CORRUPT: return "corrupt archive";
        case GSZ_STATUS_UNSUPPORTED: return "unsupported archive or feature";
        case GSZ_STATUS_BUFFER_TOO_SMALL: return "output buffer too small";
        case GSZ_STATUS_OUT_OF_MEMORY: return "out of memory";
        case GSZ_STATUS_LIMIT_EXCEEDED: return "memory limit exceeded";
        case GSZ_STATUS_NO_DEVICE: return "no CUDA device";
        case GSZ_STATUS_DEVICE_ERROR: return "CUDA error";
        case GSZ_STATUS_INTERNAL: return "internal error";
    }
    return "unknown status";
}

const char* gsz_version_string(void) { return "0.1.0"; }

gsz_status gsz_ctx_create(gsz_ctx** ctx) {
    if (!ctx) return GSZ_STATUS_INVALID_ARGUMENT;
    *ctx = new (std::nothrow) gsz_ctx;
    return *ctx ? GSZ_STATUS_OK : GSZ_STATUS_OUT_OF_MEMORY;
}

void gsz_ctx_free(gsz_ctx* ctx) { delete ctx; }

const char* gsz_ctx_last_error(const gsz_ctx* ctx) { return ctx ? ctx->last_error.c_str() : ""; }

gsz_status gsz_ctx_set_memory_limit(gsz_ctx* ctx, uint64_t bytes) {
    if (!ctx) return GSZ_STATUS_INVALID_ARGUMENT;
    ctx->memory_limit = bytes;
    return GSZ_STATUS_OK;
}

void gsz_params_init(gsz_params* params) {
    if (!params) return;
    std::memset(params, 0, sizeof *params);
    params->dtype = GSZ_DTYPE_F32;
    params->rank = 1;
    for (uint64_t& d : params->dims) d = 1;
    params->error_mode = GSZ_ERROR_REL;
    params->error_bound = 1e-3;
    params->pipeline = GSZ_PIPELINE_LORENZO;
    params->radius = 0;
    params->device = GSZ_DEVICE_AUTO;
    params->num_threads = 0;
    params->block_size = 128;
    params->interp_tiles = GSZ_INTERP_TILES_AUTO;
}

gsz_status gsz_compress_bound(const gsz_params* params, size_t* bytes) {
    return guarded(nullptr, [&] {
        GSZ_CHECK(params && bytes, GSZ_STATUS_INVALID_ARGUMENT, "null argument");
        gsz::pipeline::params_validate(*params);
        *bytes = static_cast<size_t>(gsz::pipeline::compress_bound(*params));
    });
}

gsz_status gsz_compress(gsz_ctx* ctx, const gsz_params* params, const void* data, void* archive, size_t capacity,
                        size_t* archive_bytes) {
    if (!ctx) return GSZ_STATUS_INVALID_ARGUMENT;
    return guarded(ctx, [&] {
        GSZ_CHECK(params && data && archive && archive_bytes, GSZ_STATUS_INVALID_ARGUMENT, "null argument");
        gsz::pipeline::params_validate(*params);
        check_memory(ctx, gsz::pipeline::compress_workspace_bytes(*params), "compression");
        const std::vector<uint8_t> bytes = gsz::pipeline::compress(*params, data);
        GSZ_CHECK(bytes.size() <= capacity, GSZ_STATUS_BUFFER_TOO_SMALL,
                  "archive needs %zu bytes, the buffer holds %zu", bytes.size(), capacity);
        std::memcpy(archive, bytes.data(), bytes.size());
        *archive_bytes = bytes.size();
    });
}

gsz_status gsz_archive_inspect(gsz_ctx* ctx, const void* archive, size_t archive_bytes, gsz_archive_info* info) {
    if (!ctx) return GSZ_STATUS_INVALID_ARGUMENT;
    return guarded(ctx, [&] {
        GSZ_CHECK(archive && info, GSZ_STATUS_INVALID_ARGUMENT, "null argument");
        const auto parsed = gsz::format::archive_parse({static_cast<const uint8_t*>(archive), archive_bytes});
        const auto& h = parsed.header;
        gsz_archive_info out{};
        out.format_version = h.format_version;
        out.dtype = h.dtype;
        out.rank = h.rank;
        for (int d = 0; d < GSZ_MAX_RANK; ++d) out.dims[d] = h.dims[d];
        out.num_elements = h.num_elements();
        out.error_mode = h.error_mode;
        out.error_bound = h.error_bound;
        out.error_bound_abs = h.error_bound_abs;
        out.value_min = h.value_min;
        out.value_max = h.value_max;
        out.pipeline = h.pipeline;
        out.archive_bytes = archive_bytes;
        out.original_bytes = h.num_elements() * h.element_bytes();
        gsz::pipeline::describe(parsed, out);
        *info = out;
    });
}

gsz_status gsz_archive_sections(gsz_ctx* ctx, const void* archive, size_t archive_bytes, gsz_section_info* sections,
                                uint32_t capacity, uint32_t* count, uint64_t* header_bytes) {
    if (!ctx) return GSZ_STATUS_INVALID_ARGUMENT;
    return guarded(ctx, [&] {
        GSZ_CHECK(archive && count && (sections || capacity == 0), GSZ_STATUS_INVALID_ARGUMENT, "null argument");
        const auto parsed = gsz::format::archive_parse({static_cast<const uint8_t*>(archive), archive_bytes});
        uint64_t payload = 0;
        for (size_t i = 0; i < parsed.sections.size(); ++i) {
            const auto& sec = parsed.sections[i];
            payload += sec.bytes.size();
            if (i >= capacity) continue;
            gsz_section_info& out = sections[i];
            out = gsz_section_info{};
            std::snprintf(out.name, sizeof out.name, "%s", gsz::format::section_kind_name(sec.kind));
            out.bytes = sec.bytes.size();
        }
        *count = static_cast<uint32_t>(parsed.sections.size());
        if (header_bytes) *header_bytes = archive_bytes - payload;
    });
}

gsz_status gsz_decompress(gsz_ctx* ctx, const void* archive, size_t archive_bytes, void* out, size_t out_capacity,
                          gsz_device device, int32_t num_threads) {
    if (!ctx) return GSZ_STATUS_INVALID_ARGUMENT;
    return guarded(ctx, [&] {
        GSZ_CHECK(archive && out, GSZ_STATUS_INVALID_ARGUMENT, "null argument");
        const auto parsed = gsz::format::archive_parse({static_cast<const uint8_t*>(archive), archive_bytes});
        const uint64_t need = parsed.header.num_elements() * parsed.header.element_bytes();
        GSZ_CHECK(need <= out_capacity, GSZ_STATUS_BUFFER_TOO_SMALL,
                  "output needs %llu bytes, the buffer holds %zu", static_cast<unsigned long long>(need),
                  out_capacity);
        check_memory(ctx, gsz::pipeline::decompress_workspace_bytes(parsed.header), "decompression");
        gsz::pipeline::decompress(parsed, out, device, num_threads);
    });
}

gsz_status gsz_compress_device(gsz_ctx* ctx, const gsz_params* params, const void* d_data, void* archive,
                               size_t capacity, size_t* archive_bytes, int archive_on_device, void* cuda_stream) {
    if (!ctx) return GSZ_STATUS_INVALID_ARGUMENT;
    return guarded(ctx, [&] {
        GSZ_CHECK(params && d_data && archive && archive_bytes, GSZ_STATUS_INVALID_ARGUMENT, "null argument");
        gsz::pipeline::params_validate(*params);
        check_memory(ctx, gsz::pipeline::compress_workspace_bytes(*params), "compression");
        const auto on_device = [&](const gsz_params& q) {
            return gsz::pipeline::compress_cuda_device(q, d_data, cuda_stream);
        };
        const std::vector<uint8_t> bytes = params->pipeline == GSZ_PIPELINE_AUTO
                                               ? gsz::pipeline::smaller_of_lorenzo_and_interp(*params, on_device)
                                               : on_device(*params);
        GSZ_CHECK(bytes.size() <= capacity, GSZ_STATUS_BUFFER_TOO_SMALL,
                  "archive needs %zu bytes, the buffer holds %zu", bytes.size(), capacity);
        if (archive_on_device)
            gsz::pipeline::copy_to_device(archive, bytes.data(), bytes.size(), cuda_stream);
        else
            std::memcpy(archive, bytes.data(), bytes.size());
        *archive_bytes = bytes.size();
    });
}

gsz_status gsz_decompress_device(gsz_ctx* ctx, const void* archive, size_t archive_bytes, int archive_on_device,
                                 void* d_out, size_t out_capacity, void* cuda_stream) {
    if (!ctx) return GSZ_STATUS_INVALID_ARGUMENT;
    return guarded(ctx, [&] {
        GSZ_CHECK(archive && d_out, GSZ_STATUS_INVALID_ARGUMENT, "null argument");
        std::vector<uint8_t> host_copy;
        const uint8_t* bytes = static_cast<const uint8_t*>(archive);
        if (archive_on_device) {  // the archive is validated and parsed on the host
            host_copy.resize(archive_bytes);
            gsz::pipeline::copy_to_host(host_copy.data(), archive, archive_bytes, cuda_stream);
            bytes = host_copy.data();
        }
        const auto parsed = gsz::format::archive_parse({bytes, archive_bytes});
        const uint64_t need = parsed.header.num_elements() * parsed.header.element_bytes();
        GSZ_CHECK(need <= out_capacity, GSZ_STATUS_BUFFER_TOO_SMALL,
                  "output needs %llu bytes, the buffer holds %zu", static_cast<unsigned long long>(need),
                  out_capacity);
        check_memory(ctx, gsz::pipeline::decompress_workspace_bytes(parsed.header), "decompression");
        gsz::pipeline::decompress_cuda_device(parsed, d_out, cuda_stream);
    });
}

}  // extern "C"

void gsz_assess_options_init(gsz_assess_options* options) {
    if (!options) return;
    options->metrics = GSZ_ASSESS_ALL;
    options->pdf_bins = 2000;
    options->autocorr_lags = 100;
    options->ssim_window = 7;
    options->ssim_step = 1;
    options->num_threads = 0;
}

gsz_status gsz_assess(gsz_ctx* ctx, gsz_dtype dtype, uint32_t rank, const uint64_t* dims, const void* original,
                      const void* decompressed, int on_device, void* cuda_stream,
                      const gsz_assess_options* options, gsz_assess_result* result) {
    return guarded(ctx, [&] {
        GSZ_CHECK(dims && original && decompressed && result, GSZ_STATUS_INVALID_ARGUMENT,
                  "gsz_assess: a required pointer is NULL");
        GSZ_CHECK(dtype == GSZ_DTYPE_F32 || dtype == GSZ_DTYPE_F64, GSZ_STATUS_INVALID_ARGUMENT,
                  "gsz_assess: dtype %d is not f32 or f64", dtype);
        GSZ_CHECK(rank >= 1 && rank <= 4, GSZ_STATUS_INVALID_ARGUMENT, "gsz_assess: rank %u is not 1..4", rank);
        gsz_assess_options defaults;
        gsz_assess_options_init(&defaults);
        const gsz_assess_options& o = options ? *options : defaults;
        gsz::assess::Options opt;
        opt.reductions = o.metrics & GSZ_ASSESS_REDUCTIONS;
        opt.stencils = o.metrics & GSZ_ASSESS_STENCILS;
        opt.autocorr = o.metrics & GSZ_ASSESS_AUTOCORR;
        opt.ssim = o.metrics & GSZ_ASSESS_SSIM;
        opt.pdf_bins = o.pdf_bins;
        opt.autocorr_lags = o.autocorr_lags;
        opt.ssim_window = o.ssim_window;
        opt.ssim_step = o.ssim_step;
        opt.num_threads = o.num_threads;
        gsz::assess::Shape shape;
        shape.rank = rank;
        for (uint32_t d = 0; d < rank; ++d) shape.dims[d] = dims[d];
        gsz::assess::Result r;
        if (dtype == GSZ_DTYPE_F32) {
            const auto* x = static_cast<const float*>(original);
            const auto* y = static_cast<const float*>(decompressed);
            r = on_device ? gsz::assess::assess_cuda_device(x, y, shape, opt, cuda_stream)
                          : gsz::assess::assess_cpu(x, y, shape, opt);
        } else {
            const auto* x = static_cast<const double*>(original);
            const auto* y = static_cast<const double*>(decompressed);
            r = on_device ? gsz::assess::assess_cuda_device(x, y, shape, opt, cuda_stream)
                          : gsz::assess::assess_cpu(x, y, shape, opt);
        }
        gsz_assess_result& out = *result;
        double* const pdf = out.error_pdf;
        double* const autocorr = out.error_autocorr;
        out = gsz_assess_result{};
        out.error_pdf = pdf, out.error_autocorr = autocorr;
        out.num_elements = r.num_elements, out.num_nonfinite = r.num_nonfinite;
        out.nonfinite_mismatches = r.nonfinite_mismatches;
        out.value_min = r.orig_min, out.value_max = r.orig_max, out.value_range = r.value_range;
        out.min_error = r.err_min, out.max_error = r.err_max, out.mean_error = r.err_mean;
        out.max_abs_error = r.abs_err_max, out.mean_abs_error = r.abs_err_mean;
        out.max_abs_error_index = r.max_abs_err_index;
        out.max_rel_error = r.max_rel_error, out.max_pwr_error = r.pwr_err_max;
        out.mse = r.mse, out.rmse = r.rmse, out.nrmse = r.nrmse, out.psnr = r.psnr, out.snr = r.snr;
        out.pearson = r.pearson, out.l2_error = r.l2_error;
        out.derivative1_psnr = r.derivative1.psnr, out.derivative2_psnr = r.derivative2.psnr;
        out.laplacian_psnr = r.laplacian.psnr, out.divergence_psnr = r.divergence.psnr;
        out.ssim = r.ssim;
        if (pdf && opt.reductions) {
            for (uint32_t b = 0; b < opt.pdf_bins; ++b) pdf[b] = b < r.error_pdf.size() ? r.error_pdf[b] : 0.0;
        }
        if (autocorr && opt.autocorr) {
            for (uint32_t k = 0; k < opt.autocorr_lags; ++k)
                autocorr[k] = k < r.error_autocorr.size() ? r.error_autocorr[k] : 0.0;
        }
    });
}
