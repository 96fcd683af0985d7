// libFuzzer target: the whole decoder through the public C API.  Any input
// must give a status, never a crash; memory is capped so that a hostile
// header cannot make the fuzzer allocate gigabytes.
#include <gsz/gsz.h>

#include <cstdint>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    gsz_ctx* ctx = nullptr;
    if (gsz_ctx_create(&ctx) != GSZ_STATUS_OK) return 0;
    gsz_ctx_set_memory_limit(ctx, 64u << 20);
    gsz_archive_info info;
    if (gsz_archive_inspect(ctx, data, size, &info) == GSZ_STATUS_OK && info.original_bytes <= (16u << 20)) {
        std::vector<uint8_t> out(info.original_bytes);
        gsz_decompress(ctx, data, size, out.data(), out.size(), GSZ_DEVICE_CPU, 1);
    }
    gsz_ctx_free(ctx);
    return 0;
}
