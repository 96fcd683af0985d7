// gsz.hpp: a thin C++ wrapper over gsz.h (RAII context, exceptions instead of
// status codes, vectors instead of raw buffers).  No logic of its own.
#pragma once

#include <gsz/gsz.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace gsz {

class Exception : public std::runtime_error {
public:
    Exception(gsz_status status, const std::string& detail)
        : std::runtime_error(std::string(gsz_status_string(status)) + ": " + detail), status_(status) {}
    gsz_status status() const noexcept { return status_; }

private:
    gsz_status status_;
};

class Context {
public:
    Context() {
        if (gsz_ctx_create(&ctx_) != GSZ_STATUS_OK) throw Exception(GSZ_STATUS_OUT_OF_MEMORY, "context");
    }
    ~Context() { gsz_ctx_free(ctx_); }
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;

    gsz_ctx* get() const { return ctx_; }
    void set_memory_limit(uint64_t bytes) { check(gsz_ctx_set_memory_limit(ctx_, bytes)); }

    std::vector<uint8_t> compress(const gsz_params& params, const void* data) const {
        size_t capacity = 0;
        check(gsz_compress_bound(&params, &capacity));
        std::vector<uint8_t> archive(capacity);
        size_t size = 0;
        check(gsz_compress(ctx_, &params, data, archive.data(), archive.size(), &size));
        archive.resize(size);
        archive.shrink_to_fit();
        return archive;
    }

    gsz_archive_info inspect(const void* archive, size_t bytes) const {
        gsz_archive_info info;
        check(gsz_archive_inspect(ctx_, archive, bytes, &info));
        return info;
    }

    // The archive's sections in archive order (see gsz_archive_sections).
    std::vector<gsz_section_info> sections(const void* archive, size_t bytes) const {
        uint32_t count = 0;
        check(gsz_archive_sections(ctx_, archive, bytes, nullptr, 0, &count, nullptr));
        std::vector<gsz_section_info> out(count);
        check(gsz_archive_sections(ctx_, archive, bytes, out.data(), count, &count, nullptr));
        return out;
    }

    // Decompress into `out` (capacity in bytes).
    void decompress(const void* archive, size_t bytes, void* out, size_t capacity,
                    gsz_device device = GSZ_DEVICE_AUTO, int32_t num_threads = 0) const {
        check(gsz_decompress(ctx_, archive, bytes, out, capacity, device, num_threads));
    }

    template <class T>
    std::vector<T> decompress(const std::vector<uint8_t>& archive, gsz_device device = GSZ_DEVICE_AUTO,
                              int32_t num_threads = 0) const {
        const gsz_archive_info info = inspect(archive.data(), archive.size());
        if (info.original_bytes != info.num_elements * sizeof(T))
            throw Exception(GSZ_STATUS_INVALID_ARGUMENT, "archive dtype does not match the requested type");
        std::vector<T> out(info.num_elements);
        decompress(archive.data(), archive.size(), out.data(), out.size() * sizeof(T), device, num_threads);
        return out;
    }

private:
    void check(gsz_status status) const {
        if (status != GSZ_STATUS_OK) throw Exception(status, gsz_ctx_last_error(ctx_));
    }
    gsz_ctx* ctx_ = nullptr;
};

}  // namespace gsz
