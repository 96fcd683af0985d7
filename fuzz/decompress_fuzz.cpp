// libFuzzer target: the whole decoder through the public C API.  Any input
// must give a status, never a crash; memory is capped so that a hostile
// header cannot make the fuzzer allocate gigabytes.  Each input is also
// decoded with its checksums repaired (archive_repair.hpp), so that mutated
// sections reach the pipelines' own checks, not only the container's.
#include "archive_repair.hpp"

#include <gsz/gsz.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace {

void decode_one(const uint8_t* data, size_t size) {
    gsz_ctx* ctx = nullptr;
    if (gsz_ctx_create(&ctx) != GSZ_STATUS_OK) return;
    gsz_ctx_set_memory_limit(ctx, 64u << 20);
    gsz_archive_info info;
    // The section listing (gsz info's) validates the container as the inspection does (which also
    // reads the pipeline's parameters): whatever the inspection accepts, the listing accepts.
    gsz_section_info sections[64];
    uint32_t count = 0;
    uint64_t header = 0;
    const gsz_status listed = gsz_archive_sections(ctx, data, size, sections, 64, &count, &header);
    const gsz_status inspected = gsz_archive_inspect(ctx, data, size, &info);
    if ((inspected == GSZ_STATUS_OK && listed != GSZ_STATUS_OK) ||
        (listed == GSZ_STATUS_OK && (count > 64 || header > size)))
        __builtin_trap();
    if (inspected == GSZ_STATUS_OK && info.original_bytes <= (16u << 20)) {
        std::vector<uint8_t> out(info.original_bytes);
        gsz_decompress(ctx, data, size, out.data(), out.size(), GSZ_DEVICE_CPU, 1);
    }
    gsz_ctx_free(ctx);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    decode_one(data, size);
    std::vector<uint8_t> repaired(data, data + size);
    gsz::fuzz::repair_checksums(repaired);
    if (!std::equal(repaired.begin(), repaired.end(), data)) decode_one(repaired.data(), size);
    return 0;
}
