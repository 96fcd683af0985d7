// Linked when gsz is built without CUDA: the CUDA backend reports itself
// unavailable, so AUTO runs on the CPU and an explicit CUDA request fails.
#include "pipeline/bench.hpp"
#include "pipeline/pipeline_cuda.hpp"
#include "runtime/status.hpp"

namespace gsz::pipeline {

namespace {
[[noreturn]] void no_cuda() {
    fail(GSZ_STATUS_NO_DEVICE, "this gsz was built without the CUDA backend (nvcc was not found at build time)");
}
}  // namespace

bool cuda_backend_available(std::string* why) {
    if (why) *why = "this gsz was built without the CUDA backend";
    return false;
}
std::vector<uint8_t> compress_cuda(const gsz_params&, const void*) { no_cuda(); }
std::vector<uint8_t> compress_cuda_device(const gsz_params&, const void*, void*) { no_cuda(); }
void decompress_cuda(const format::Archive&, void*) { no_cuda(); }
void decompress_cuda_device(const format::Archive&, void*, void*) { no_cuda(); }
void copy_to_device(void*, const void*, size_t, void*) { no_cuda(); }
void copy_to_host(void*, const void*, size_t, void*) { no_cuda(); }
BenchResult bench_cuda(const BenchOptions&, const void*) { no_cuda(); }

}  // namespace gsz::pipeline
