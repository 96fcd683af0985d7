// The C API: argument checks, backend choice and the exception -> status
// boundary.  No C++ exception crosses gsz.h.
#include <gsz/gsz.h>

#include "format/archive.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/pipeline_cuda.hpp"
#include "runtime/status.hpp"

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
    params->radius = 512;
    params->device = GSZ_DEVICE_AUTO;
    params->num_threads = 0;
    params->block_size = 128;
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
        const std::vector<uint8_t> bytes = gsz::pipeline::compress_cuda_device(*params, d_data, cuda_stream);
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
