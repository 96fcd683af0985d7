// The CUDA backend against the CPU reference: stage by stage (finite range is
// implied by the header, Lorenzo codes and outliers), archives byte for byte,
// cross decoding, the bound on real fields, edge cases, and the device-pointer
// C API.  Without a GPU every test reports itself skipped, with the reason.
#include "test_util.hpp"

#include "cuda/require_gpu.hpp"

#include "pipeline/bench.hpp"
#include "predict/lorenzo/lorenzo.hpp"
#include "predict/fast/fast_cuda.hpp"
#include "predict/interp/interp_cuda.hpp"
#include "predict/lorenzo/lorenzo_cuda.hpp"
#include "encode/ans_cuda.hpp"
#include "encode/run_tokens_cuda.hpp"
#include "runtime/status.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <random>

using namespace gsz::test;

namespace {

// Compress with `p` on both backends (its device set here), require identical
// bytes, decode each archive on both backends, require identical values within
// the bound.  The archive and the GPU's decoding go to `archive` and `decoded`
// where given (check HasFatalFailure before reading them).
template <class T>
void same_on_both_with(gsz_params p, const std::vector<T>& data, std::vector<uint8_t>* archive = nullptr,
                       std::vector<T>* decoded = nullptr) {
    gsz::Context ctx;
    p.device = GSZ_DEVICE_CPU;
    const auto cpu = ctx.compress(p, data.data());
    p.device = GSZ_DEVICE_CUDA;
    const auto gpu = ctx.compress(p, data.data());
    ASSERT_TRUE(cpu == gpu) << "archives differ: " << cpu.size() << " / " << gpu.size();
    const auto info = ctx.inspect(cpu.data(), cpu.size());
    const auto on_cpu = ctx.decompress<T>(gpu, GSZ_DEVICE_CPU);
    auto on_gpu = ctx.decompress<T>(cpu, GSZ_DEVICE_CUDA);
    ASSERT_EQ(0, std::memcmp(on_cpu.data(), on_gpu.data(), on_cpu.size() * sizeof(T))) << "decoded values differ";
    const auto r = check_bound(data, on_gpu, info.error_bound_abs);
    EXPECT_EQ(r.violations, 0u) << "first bad " << r.first_bad;
    EXPECT_EQ(r.nonfinite_changed, 0u);
    if (archive) *archive = cpu;
    if (decoded) *decoded = std::move(on_gpu);
}

// The same from the common options.
template <class T>
void same_on_both(const std::vector<T>& data, const std::vector<uint64_t>& dims, gsz_error_mode mode, double eb,
                  uint32_t radius = 512, gsz_pipeline pipeline = GSZ_PIPELINE_LORENZO, uint32_t block = 128,
                  gsz_lossless lossless = GSZ_LOSSLESS_AUTO, gsz_interp_anchors anchors = GSZ_INTERP_ANCHORS_AUTO) {
    auto p = make_params(dtype_of<T>(), dims, mode, eb);
    p.radius = radius;
    p.pipeline = pipeline;
    p.block_size = block;
    p.lossless = lossless;
    p.interp_anchors = anchors;
    same_on_both_with(p, data);
}

// The shared fields, or the bundled sample when ../shared/data is absent.
std::vector<Field> fields_or_sample() {
    auto fields = shared_fields();
    if (fields.empty()) fields.push_back({"sperr_wmag_91x91x91", repo_dir() / "data" / "sperr_wmag_91x91x91.f32",
                                          GSZ_DTYPE_F32, {91, 91, 91}});
    return fields;
}

TEST(CudaBackend, RealFieldsByteIdentical) {
    REQUIRE_GPU();
    const auto fields = fields_or_sample();
    for (const Field& f : fields) {
        for (double eb : {1e-2, 1e-4}) {
            SCOPED_TRACE(f.name + " rel " + std::to_string(eb));
            if (f.dtype == GSZ_DTYPE_F32)
                same_on_both(read_raw<float>(f.path), f.dims, GSZ_ERROR_REL, eb);
            else
                same_on_both(read_raw<double>(f.path), f.dims, GSZ_ERROR_REL, eb);
        }
        SCOPED_TRACE(f.name + " abs 1e-2");
        if (f.dtype == GSZ_DTYPE_F32)
            same_on_both(read_raw<float>(f.path), f.dims, GSZ_ERROR_ABS, 1e-2);
        else
            same_on_both(read_raw<double>(f.path), f.dims, GSZ_ERROR_ABS, 1e-2);
    }
}

template <class T>
std::vector<T> walk(size_t n, uint32_t seed, double step) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> d(0.0, step);
    std::vector<T> v(n);
    double x = 0;
    for (auto& e : v) e = static_cast<T>(x += d(rng));
    return v;
}

TEST(CudaBackend, EdgeCasesByteIdentical) {
    REQUIRE_GPU();
    for (auto dims : std::vector<std::vector<uint64_t>>{{1}, {33, 17, 9}, {1025}, {33, 31}, {31, 9, 7, 3}, {91, 1, 91}}) {
        uint64_t n = 1;
        for (auto d : dims) n *= d;
        auto f = walk<float>(n, 3, 1.0);
        auto d = walk<double>(n, 4, 1.0);
        if (n > 40) {  // NaN, Inf and huge values in the middle of chunks
            f[n / 3] = std::numeric_limits<float>::quiet_NaN();
            f[n / 2] = -std::numeric_limits<float>::infinity();
            f[n - 1] = 3e38f;
            d[n / 3] = std::numeric_limits<double>::infinity();
            d[n / 2 + 1] = 1e300;
        }
        same_on_both(f, dims, GSZ_ERROR_REL, 1e-3);
        same_on_both(f, dims, GSZ_ERROR_ABS, 1e-4);
        same_on_both(d, dims, GSZ_ERROR_REL, 1e-6);
    }
    const auto c = std::vector<float>(5000, 7.0f);
    same_on_both(c, {5000}, GSZ_ERROR_ABS, 1e-3);
    same_on_both(c, {5000}, GSZ_ERROR_REL, 1e-3);  // range 0: lossless store
    const auto w = walk<float>(64 * 64, 9, 5.0);
    same_on_both(w, {64, 64}, GSZ_ERROR_ABS, 0.1, 1);
    same_on_both(w, {64, 64}, GSZ_ERROR_ABS, 1e-4, 32768);
    // many outliers per chunk: the sequential decode path
    same_on_both(walk<float>(40 * 40 * 40, 11, 1000.0), {40, 40, 40}, GSZ_ERROR_ABS, 0.01);
}

// Codes, outliers and decoded values of the Lorenzo kernels equal the CPU
// backend's, for the chunk shapes gsz writes (column kernels; row kernels in
// 1-D) and for other shapes a valid archive may hold (row and generic
// kernels), with no, few (parallel correction) and many (sequential walk)
// outliers per chunk.
template <class T>
void lorenzo_matches_cpu(const std::vector<T>& data, const gsz::predict::LorenzoLayout& L, double eb) {
    const auto p = gsz::predict::QuantParams::from_bound(eb, 512);
    gsz::predict::LorenzoCodes<T> cpu;
    gsz::predict::lorenzo_encode_cpu(data.data(), L, p, cpu, 2);

    T* d_data = nullptr;
    T* d_out = nullptr;
    ASSERT_EQ(cudaMalloc(&d_data, data.size() * sizeof(T)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d_out, data.size() * sizeof(T)), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(d_data, data.data(), data.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
    gsz::predict::LorenzoDeviceCodes<T> gpu;
    gsz::predict::lorenzo_encode_cuda(d_data, L, p, gpu, nullptr);
    std::vector<uint16_t> codes(data.size());
    std::vector<T> outliers(gpu.num_outliers);
    ASSERT_EQ(cudaMemcpy(codes.data(), gpu.codes.data(), codes.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
    if (!outliers.empty()) {
        ASSERT_EQ(cudaMemcpy(outliers.data(), gpu.outliers.data(), outliers.size() * sizeof(T), cudaMemcpyDeviceToHost),
                  cudaSuccess);
    }
    EXPECT_TRUE(codes == cpu.codes);
    ASSERT_EQ(outliers.size(), cpu.outliers.size());
    EXPECT_EQ(0, std::memcmp(outliers.data(), cpu.outliers.data(), outliers.size() * sizeof(T)));

    // The pipeline's way: parameters read from device memory, no waiting
    // until the outlier count is read back.  Same codes, same outliers.
    {
        gsz::predict::QuantParams* d_p = nullptr;
        ASSERT_EQ(cudaMalloc(&d_p, sizeof *d_p), cudaSuccess);
        ASSERT_EQ(cudaMemcpy(d_p, &p, sizeof p, cudaMemcpyHostToDevice), cudaSuccess);
        gsz::predict::LorenzoDeviceCodes<T> async;
        gsz::predict::lorenzo_encode_cuda_async(d_data, L, gsz::predict::QuantParams{}, d_p, async, nullptr);
        uint64_t total = 0;
        ASSERT_EQ(cudaMemcpy(&total, async.outlier_total(L), sizeof total, cudaMemcpyDeviceToHost), cudaSuccess);
        ASSERT_EQ(total, cpu.outliers.size());
        gsz::predict::lorenzo_compact_outliers_cuda(L, total, async, nullptr);
        std::vector<uint16_t> codes2(data.size());
        std::vector<T> outliers2(total);
        ASSERT_EQ(cudaMemcpy(codes2.data(), async.codes.data(), codes2.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
        if (total) {
            ASSERT_EQ(cudaMemcpy(outliers2.data(), async.outliers.data(), total * sizeof(T), cudaMemcpyDeviceToHost),
                      cudaSuccess);
        }
        EXPECT_TRUE(codes2 == cpu.codes);
        EXPECT_EQ(0, std::memcmp(outliers2.data(), cpu.outliers.data(), total * sizeof(T)));
        cudaFree(d_p);
    }

    gsz::predict::LorenzoDecodeScratch scratch;
    uint32_t* d_corrupt = nullptr;
    ASSERT_EQ(cudaMalloc(&d_corrupt, sizeof(uint32_t)), cudaSuccess);
    ASSERT_EQ(cudaMemset(d_corrupt, 0, sizeof(uint32_t)), cudaSuccess);
    gsz::predict::lorenzo_decode_cuda<T>(gpu.codes.data(), gpu.outliers.data(), gpu.num_outliers, L, p, d_out,
                                         scratch, nullptr, d_corrupt);
    uint32_t corrupt = 1;
    ASSERT_EQ(cudaMemcpy(&corrupt, d_corrupt, sizeof corrupt, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(corrupt, 0u);
    std::vector<T> out(data.size()), ref(data.size());
    ASSERT_EQ(cudaMemcpy(out.data(), d_out, out.size() * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    gsz::predict::lorenzo_decode_cpu<T>(cpu.codes, cpu.outliers, L, p, ref.data(), 1);
    EXPECT_EQ(0, std::memcmp(out.data(), ref.data(), out.size() * sizeof(T)));

    // One outlier fewer than the codes mark: flagged on the device (nothing
    // decoded, nothing read past the outliers), or thrown without a flag.  One
    // more than they mark: flagged too.
    if (gpu.num_outliers > 0) {
        gsz::predict::lorenzo_decode_cuda<T>(gpu.codes.data(), gpu.outliers.data(), gpu.num_outliers - 1, L, p, d_out,
                                             scratch, nullptr, d_corrupt);
        ASSERT_EQ(cudaMemcpy(&corrupt, d_corrupt, sizeof corrupt, cudaMemcpyDeviceToHost), cudaSuccess);
        EXPECT_EQ(corrupt, gsz::predict::kLorenzoCorruptOutliers);
        EXPECT_THROW(gsz::predict::lorenzo_decode_cuda<T>(gpu.codes.data(), gpu.outliers.data(), gpu.num_outliers - 1,
                                                          L, p, d_out, scratch, nullptr),
                     gsz::Error);
    }
    ASSERT_EQ(cudaMemset(d_corrupt, 0, sizeof(uint32_t)), cudaSuccess);
    gsz::predict::lorenzo_decode_cuda<T>(gpu.codes.data(), gpu.outliers.data(), gpu.num_outliers + 1, L, p, d_out,
                                         scratch, nullptr, d_corrupt);
    ASSERT_EQ(cudaMemcpy(&corrupt, d_corrupt, sizeof corrupt, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(corrupt, gsz::predict::kLorenzoCorruptOutliers);

    // Outliers counted per granule of codes (as the Huffman decoder counts
    // them): the same values; counts that disagree with the codes are
    // flagged, and no chunk reads past the stored outliers (memcheck).
    for (const uint32_t granule : {1024u, 300u, 1u}) {
        SCOPED_TRACE("granule " + std::to_string(granule));
        const size_t granules = (data.size() + granule - 1) / granule;
        std::vector<uint32_t> counts(granules + 1, 0);
        for (size_t i = 0; i < cpu.codes.size(); ++i) counts[i / granule] += cpu.codes[i] == 0;
        uint32_t* d_counts = nullptr;
        ASSERT_EQ(cudaMalloc(&d_counts, counts.size() * sizeof(uint32_t)), cudaSuccess);
        const auto decode = [&](const std::vector<uint32_t>& c) {
            EXPECT_EQ(cudaMemcpy(d_counts, c.data(), c.size() * sizeof(uint32_t), cudaMemcpyHostToDevice), cudaSuccess);
            EXPECT_EQ(cudaMemset(d_corrupt, 0, sizeof(uint32_t)), cudaSuccess);
            gsz::predict::lorenzo_decode_cuda<T>(gpu.codes.data(), gpu.outliers.data(), gpu.num_outliers, L, p, d_out,
                                                 scratch, nullptr, d_corrupt, {d_counts, granule});
            uint32_t flag = 1;
            EXPECT_EQ(cudaMemcpy(&flag, d_corrupt, sizeof flag, cudaMemcpyDeviceToHost), cudaSuccess);
            return flag;
        };
        EXPECT_EQ(decode(counts), 0u);
        ASSERT_EQ(cudaMemcpy(out.data(), d_out, out.size() * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
        EXPECT_EQ(0, std::memcmp(out.data(), ref.data(), out.size() * sizeof(T)));
        const bool columns = (L.rank == 3 && L.chunk[0] == 32 && L.chunk[1] == 8 && L.chunk[2] == 8) ||
                             (L.rank == 2 && L.chunk[0] == 32 && L.chunk[1] == 32);
        // Every outlier counted in the first granule: the outliers of a chunk
        // starting past it would start at the end of the stored ones (a chunk
        // holding code 4096 or later starts past code 2048, past granule 0).
        const bool beyond_first_chunk = std::count(cpu.codes.begin() + std::min<size_t>(cpu.codes.size(), 4096),
                                                   cpu.codes.end(), uint16_t{0}) > 0;
        if (columns && beyond_first_chunk) {
            std::vector<uint32_t> first(counts.size(), 0);
            first[0] = static_cast<uint32_t>(gpu.num_outliers);
            EXPECT_EQ(decode(first), gsz::predict::kLorenzoCorruptOutliers);
        }
        cudaFree(d_counts);
    }
    cudaFree(d_corrupt);
    cudaFree(d_data);
    cudaFree(d_out);
}

TEST(CudaBackend, LorenzoKernelsMatchCpu) {
    REQUIRE_GPU();
    const uint64_t d3[] = {70, 19, 17}, d2[] = {100, 77, 1}, d1[] = {5000, 1, 1};
    const uint32_t odd3[] = {16, 4, 4}, odd2[] = {64, 16, 1}, odd1[] = {300, 1, 1};
    const std::vector<gsz::predict::LorenzoLayout> layouts = {
        gsz::predict::lorenzo_layout(3, d3), gsz::predict::lorenzo_layout(2, d2), gsz::predict::lorenzo_layout(1, d1),
        gsz::predict::lorenzo_layout_from(3, d3, odd3, 70 * 19 * 17),
        gsz::predict::lorenzo_layout_from(2, d2, odd2, 100 * 77),
        gsz::predict::lorenzo_layout_from(1, d1, odd1, 5000)};
    for (const auto& L : layouts) {
        SCOPED_TRACE("rank " + std::to_string(L.rank) + " chunk " + std::to_string(L.chunk[0]) + "x" +
                     std::to_string(L.chunk[1]) + "x" + std::to_string(L.chunk[2]));
        auto smooth = walk<float>(L.num_elements, 5, 3.0);
        lorenzo_matches_cpu(smooth, L, 0.01);  // few outliers
        for (size_t i = 0; i < smooth.size(); i += 37) smooth[i] += 1e4f;  // ~55 spikes per 2048 points
        smooth[smooth.size() / 2] = std::numeric_limits<float>::quiet_NaN();
        lorenzo_matches_cpu(smooth, L, 0.01);
        for (size_t i = 0; i < smooth.size(); i += 7) smooth[i] -= 3e4f;  // ~290 per 2048 points: sequential walk
        lorenzo_matches_cpu(smooth, L, 0.01);
        lorenzo_matches_cpu(walk<double>(L.num_elements, 6, 1.0), L, 1e-3);
        lorenzo_matches_cpu(walk<double>(L.num_elements, 7, 1000.0), L, 1e-3);  // every point an outlier
    }
    // Hundreds of chunks, most without outliers and some with.
    const uint64_t big3[] = {230, 70, 60}, big2[] = {1100, 700, 1};
    for (const auto& L : {gsz::predict::lorenzo_layout(3, big3), gsz::predict::lorenzo_layout(2, big2)}) {
        SCOPED_TRACE("rank " + std::to_string(L.rank) + ", " + std::to_string(L.num_chunks) + " chunks");
        auto smooth = walk<float>(L.num_elements, 9, 3.0);
        for (size_t i = 0; i < smooth.size(); i += 4099) smooth[i] += 1e4f;
        lorenzo_matches_cpu(smooth, L, 0.01);
    }
}

TEST(CudaBackend, DevicePointerApi) {
    REQUIRE_GPU();
    const auto data = read_raw<float>(repo_dir() / "data" / "sperr_wmag_91x91x91.f32");
    const auto p = make_params(GSZ_DTYPE_F32, {91, 91, 91}, GSZ_ERROR_REL, 1e-3);
    gsz::Context ctx;
    const auto reference = ctx.compress(p, data.data());  // CPU (params say cpu)

    void *d_data = nullptr, *d_archive = nullptr, *d_out = nullptr;
    cudaStream_t stream;
    ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
    size_t cap = 0;
    ASSERT_EQ(gsz_compress_bound(&p, &cap), GSZ_STATUS_OK);
    ASSERT_EQ(cudaMalloc(&d_data, data.size() * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d_archive, cap), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d_out, data.size() * 4), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(d_data, data.data(), data.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);

    size_t size = 0;
    ASSERT_EQ(gsz_compress_device(ctx.get(), &p, d_data, d_archive, cap, &size, 1, stream), GSZ_STATUS_OK)
        << gsz_ctx_last_error(ctx.get());
    std::vector<uint8_t> archive(size);
    ASSERT_EQ(cudaMemcpy(archive.data(), d_archive, size, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(archive, reference);

    std::vector<uint8_t> host_archive(cap);
    ASSERT_EQ(gsz_compress_device(ctx.get(), &p, d_data, host_archive.data(), cap, &size, 0, stream), GSZ_STATUS_OK);
    host_archive.resize(size);
    EXPECT_EQ(host_archive, reference);

    ASSERT_EQ(gsz_decompress_device(ctx.get(), d_archive, size, 1, d_out, data.size() * 4, stream), GSZ_STATUS_OK)
        << gsz_ctx_last_error(ctx.get());
    std::vector<float> out(data.size());
    ASSERT_EQ(cudaMemcpy(out.data(), d_out, out.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    const auto ref = ctx.decompress<float>(reference, GSZ_DEVICE_CPU);
    EXPECT_EQ(0, std::memcmp(out.data(), ref.data(), out.size() * 4));

    // a corrupt archive on the device is refused
    host_archive[host_archive.size() / 2] ^= 1;
    EXPECT_EQ(gsz_decompress_device(ctx.get(), host_archive.data(), size, 0, d_out, data.size() * 4, stream),
              GSZ_STATUS_CORRUPT);
    EXPECT_EQ(gsz_decompress_device(ctx.get(), d_archive, size, 1, d_out, 16, stream), GSZ_STATUS_BUFFER_TOO_SMALL);
    cudaFree(d_data);
    cudaFree(d_archive);
    cudaFree(d_out);
    cudaStreamDestroy(stream);
}

// Component dims (pipeline/components.hpp): the device-pointer API chooses from
// its own sample and moves the components on the device; the archive and the
// output must be the CPU's, for every lossy pipeline and both dtypes.
// middle: the components as the middle dim of {50, 3, 400} (the moves' general
// kernel); else N x 3 (components fastest: the tiled kernel).
template <class T>
void components_on_device(gsz_pipeline pipeline, bool middle = false) {
    const auto sample = read_raw<float>(repo_dir() / "data" / "sperr_wmag_91x91x91.f32");
    const uint64_t n = 20000;
    std::vector<T> data(3 * n);
    for (uint64_t i = 0; i < n; ++i)
        for (uint64_t c = 0; c < 3; ++c) {
            const uint64_t at = middle ? (i / 50 * 3 + c) * 50 + i % 50 : i * 3 + c;
            data[at] = static_cast<T>(sample[c * 200000 + i]);
        }
    data[77] = std::numeric_limits<T>::quiet_NaN();
    auto p = make_params(dtype_of<T>(), middle ? std::vector<uint64_t>{50, 3, 400} : std::vector<uint64_t>{3, n},
                         GSZ_ERROR_REL, 1e-3);
    p.pipeline = pipeline;
    p.device = GSZ_DEVICE_CPU;
    gsz::Context ctx;
    const auto reference = ctx.compress(p, data.data());
    ASSERT_EQ(ctx.inspect(reference.data(), reference.size()).component_dim, middle ? 1 : 0);
    p.device = GSZ_DEVICE_CUDA;
    EXPECT_EQ(ctx.compress(p, data.data()), reference) << "host pointers on the GPU";
    const size_t bytes = data.size() * sizeof(T);
    void *d_data = nullptr, *d_out = nullptr;
    ASSERT_EQ(cudaMalloc(&d_data, bytes), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d_out, bytes), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(d_data, data.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
    size_t cap = 0, size = 0;
    ASSERT_EQ(gsz_compress_bound(&p, &cap), GSZ_STATUS_OK);
    std::vector<uint8_t> archive(cap);
    ASSERT_EQ(gsz_compress_device(ctx.get(), &p, d_data, archive.data(), cap, &size, 0, nullptr), GSZ_STATUS_OK)
        << gsz_ctx_last_error(ctx.get());
    archive.resize(size);
    EXPECT_EQ(archive, reference) << "device pointers";
    ASSERT_EQ(gsz_decompress_device(ctx.get(), archive.data(), size, 0, d_out, bytes, nullptr), GSZ_STATUS_OK)
        << gsz_ctx_last_error(ctx.get());
    std::vector<T> out(data.size());
    ASSERT_EQ(cudaMemcpy(out.data(), d_out, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    const auto ref = ctx.decompress<T>(reference, GSZ_DEVICE_CPU);
    EXPECT_EQ(0, std::memcmp(out.data(), ref.data(), bytes));
    EXPECT_EQ(check_bound(data, out, ctx.inspect(reference.data(), reference.size()).error_bound_abs).violations, 0u);
    cudaFree(d_data);
    cudaFree(d_out);
}

TEST(CudaBackend, ComponentsOnDevicePointers) {
    REQUIRE_GPU();
    components_on_device<float>(GSZ_PIPELINE_LORENZO);
    components_on_device<float>(GSZ_PIPELINE_INTERP);
    components_on_device<double>(GSZ_PIPELINE_LORENZO);
    components_on_device<double>(GSZ_PIPELINE_INTERP);
    components_on_device<float>(GSZ_PIPELINE_FAST);
    components_on_device<double>(GSZ_PIPELINE_FAST);
    components_on_device<float>(GSZ_PIPELINE_LORENZO, true);
    components_on_device<double>(GSZ_PIPELINE_INTERP, true);
}

// ---- the fast pipeline ------------------------------------------------------

template <class T>
void fast_same_on_both(const std::vector<T>& data, gsz_error_mode mode, double eb, uint32_t block = 128) {
    same_on_both(data, {data.size()}, mode, eb, 512, GSZ_PIPELINE_FAST, block);
}

TEST(CudaBackend, FastRealFieldsByteIdentical) {
    REQUIRE_GPU();
    const auto fields = fields_or_sample();
    for (const Field& f : fields) {
        for (const auto& [mode, eb] : std::vector<std::pair<gsz_error_mode, double>>{
                 {GSZ_ERROR_REL, 1e-2}, {GSZ_ERROR_REL, 1e-3}, {GSZ_ERROR_REL, 1e-4}, {GSZ_ERROR_ABS, 1e-2}}) {
            SCOPED_TRACE(f.name + (mode == GSZ_ERROR_REL ? " rel " : " abs ") + std::to_string(eb));
            if (f.dtype == GSZ_DTYPE_F32)
                same_on_both(read_raw<float>(f.path), f.dims, mode, eb, 512, GSZ_PIPELINE_FAST);
            else
                same_on_both(read_raw<double>(f.path), f.dims, mode, eb, 512, GSZ_PIPELINE_FAST);
        }
        if (f.name == "sperr_wmag_91x91x91" || f.name == "sz_testdouble_8x8x8x128") {
            for (uint32_t block : {64u, 256u}) {
                SCOPED_TRACE(f.name + " block " + std::to_string(block));
                if (f.dtype == GSZ_DTYPE_F32)
                    same_on_both(read_raw<float>(f.path), f.dims, GSZ_ERROR_REL, 1e-3, 512, GSZ_PIPELINE_FAST, block);
                else
                    same_on_both(read_raw<double>(f.path), f.dims, GSZ_ERROR_REL, 1e-3, 512, GSZ_PIPELINE_FAST, block);
            }
        }
    }
}

template <class T>
std::vector<T> fast_edge_data(size_t n, uint32_t seed) {
    auto v = walk<T>(n, seed, 0.3);
    for (size_t i = 0; i < n; ++i)
        if ((i / 128) % 5 == 2) v[i] = static_cast<T>(4.0);  // constant blocks
    if (n > 700) {
        using Bits = typename gsz::predict::FastTraits<T>::Bits;
        v[n / 3] = std::numeric_limits<T>::quiet_NaN();
        v[n / 2] = -std::numeric_limits<T>::infinity();
        v[n / 2 + 300] = gsz::predict::fast_value<T>(sizeof(T) == 4 ? Bits(0x7f800001u) : Bits(0x7ff0000000000001ull));
        v[n - 1] = std::numeric_limits<T>::max();  // the last block's range overflows
        v[n - 2] = -std::numeric_limits<T>::max();
        for (size_t i = 640; i < 700; ++i) v[i] = std::numeric_limits<T>::denorm_min() * static_cast<T>(i % 7);
    }
    return v;
}

TEST(CudaBackend, FastEdgeCasesByteIdentical) {
    REQUIRE_GPU();
    for (uint32_t block : {64u, 128u, 256u}) {
        for (size_t n : {size_t{1}, size_t{5}, size_t{63}, size_t{64}, size_t{65}, size_t{129}, size_t{255},
                         size_t{257}, size_t{1000}, size_t{4099}, size_t{100003}}) {
            SCOPED_TRACE("block " + std::to_string(block) + " n " + std::to_string(n));
            const auto f = fast_edge_data<float>(n, static_cast<uint32_t>(n));
            const auto d = fast_edge_data<double>(n, static_cast<uint32_t>(n) + 1);
            fast_same_on_both(f, GSZ_ERROR_ABS, 0.01, block);
            fast_same_on_both(f, GSZ_ERROR_ABS, 0.25, block);    // a power of two
            fast_same_on_both(f, GSZ_ERROR_ABS, 1e-30, block);   // nothing truncates: raw blocks
            fast_same_on_both(d, GSZ_ERROR_ABS, 1e-7, block);
            fast_same_on_both(d, GSZ_ERROR_ABS, 1.0 / 1024, block);
        }
    }
}

// A device buffer's contents, copied to the host.
template <class Buffer>
auto fetch_device(const Buffer& buf) {
    std::vector<std::remove_cv_t<std::remove_pointer_t<decltype(buf.data())>>> host(buf.size());
    if (!host.empty()) {
        EXPECT_EQ(cudaMemcpy(host.data(), buf.data(), buf.bytes(), cudaMemcpyDeviceToHost), cudaSuccess);
    }
    return host;
}

// The CUDA encoder's four streams, byte for byte the CPU encoder's.
template <class T>
void expect_same_streams(const gsz::predict::FastDeviceStreams<T>& gpu, const gsz::predict::FastEncoded<T>& cpu) {
    EXPECT_TRUE(fetch_device(gpu.codes) == cpu.codes);
    const auto mids = fetch_device(gpu.mids);
    ASSERT_EQ(mids.size(), cpu.mids.size());
    EXPECT_EQ(0, std::memcmp(mids.data(), cpu.mids.data(), mids.size() * sizeof(T)));
    EXPECT_TRUE(fetch_device(gpu.leads) == cpu.leads);
    EXPECT_TRUE(fetch_device(gpu.bytes) == cpu.bytes);
}

// The kernels on pointers that are not 16-byte aligned (the device C API
// takes any pointer): the same streams and values as the CPU.
TEST(CudaBackend, FastKernelsOnUnalignedPointers) {
    REQUIRE_GPU();
    const auto data = fast_edge_data<float>(128 * 50 + 77, 21);
    const auto layout = gsz::predict::FastLayout::make(data.size(), 128);
    gsz::predict::FastEncoded<float> cpu;
    gsz::predict::fast_encode_cpu(data.data(), layout, 0.01, cpu, 1);

    float* d_buf = nullptr;
    ASSERT_EQ(cudaMalloc(&d_buf, (data.size() + 4) * sizeof(float)), cudaSuccess);
    float* d_data = d_buf + 1;
    ASSERT_EQ(cudaMemcpy(d_data, data.data(), data.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    gsz::predict::FastDeviceStreams<float> gpu;
    gsz::predict::fast_encode_cuda(d_data, layout, 0.01, gpu, nullptr);
    expect_same_streams(gpu, cpu);

    std::vector<float> expect(data.size()), got(data.size());
    const gsz::predict::FastStreamsView view{
        cpu.codes, {reinterpret_cast<const uint8_t*>(cpu.mids.data()), cpu.mids.size() * sizeof(float)}, cpu.leads,
        cpu.bytes};
    gsz::predict::fast_decode_cpu(view, layout, expect.data(), 1);
    gsz::predict::FastDecodeScratch scratch;
    float* d_out = d_buf + 3;  // 12 bytes off
    gsz::predict::fast_decode_cuda(gpu.codes.data(), gpu.mids.data(), gpu.leads.data(), gpu.leads.size(),
                                   gpu.bytes.data(), gpu.bytes.size(), layout, d_out, scratch, nullptr);
    ASSERT_EQ(cudaMemcpy(got.data(), d_out, got.size() * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(0, std::memcmp(got.data(), expect.data(), got.size() * sizeof(float)));

    // A byte stream one byte short, and a lead code above the kept bytes: corrupt, not a crash.
    auto expect_corrupt = [&](const uint8_t* leads, uint64_t leads_size, uint64_t bytes_size, const char* what) {
        try {
            gsz::predict::fast_decode_cuda(gpu.codes.data(), gpu.mids.data(), leads, leads_size, gpu.bytes.data(),
                                           bytes_size, layout, d_out, scratch, nullptr);
            ADD_FAILURE() << what << ": accepted";
        } catch (const gsz::Error& e) {
            EXPECT_EQ(e.status(), GSZ_STATUS_CORRUPT) << what;
        }
    };
    expect_corrupt(gpu.leads.data(), gpu.leads.size(), gpu.bytes.size() - 1, "short byte stream");
    expect_corrupt(gpu.leads.data(), gpu.leads.size() - 1, gpu.bytes.size(), "short lead stream");
    cudaFree(d_buf);
}

// The encoder covers at most 2^24 blocks per launch and chains longer arrays
// through the stream totals; lowering the launch size exercises the chaining
// (and the tile states set up ahead of the first launch) on small inputs.
TEST(CudaBackend, FastEncoderChainsLaunches) {
    REQUIRE_GPU();
    auto check = [&](const auto& data, uint32_t block, double eb, uint64_t launch_blocks, bool prepare) {
        using T = typename std::decay_t<decltype(data)>::value_type;
        SCOPED_TRACE("block " + std::to_string(block) + " launch " + std::to_string(launch_blocks) +
                     (prepare ? " prepared" : ""));
        const auto layout = gsz::predict::FastLayout::make(data.size(), block);
        const auto half = gsz::predict::FastLayout::make(data.size() / 2 + 3, block);
        gsz::predict::FastEncoded<T> cpu, cpu_half;
        gsz::predict::fast_encode_cpu(data.data(), layout, eb, cpu, 1);
        gsz::predict::fast_encode_cpu(data.data(), half, eb, cpu_half, 1);
        T* d_data = nullptr;
        double* d_eb = nullptr;
        ASSERT_EQ(cudaMalloc(&d_data, data.size() * sizeof(T)), cudaSuccess);
        ASSERT_EQ(cudaMalloc(&d_eb, sizeof(double)), cudaSuccess);
        ASSERT_EQ(cudaMemcpy(d_data, data.data(), data.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
        ASSERT_EQ(cudaMemcpy(d_eb, &eb, sizeof eb, cudaMemcpyHostToDevice), cudaSuccess);
        gsz::predict::FastDeviceStreams<T> gpu;
        gpu.max_launch_blocks = launch_blocks;
        // Later rounds reuse the buffers and the tile states the rounds before
        // them readied, for as many blocks, then fewer, then as many again.
        for (int round = 0; round < 4; ++round) {
            SCOPED_TRACE("round " + std::to_string(round));
            const auto& l = round == 2 ? half : layout;
            if (prepare) gsz::predict::fast_encode_cuda_prepare(d_data, l, gpu, nullptr);
            gsz::predict::fast_encode_cuda_async(d_data, l, d_eb, gpu, nullptr, d_eb, sizeof(double));
            double back = 0;
            gsz::predict::fast_encode_cuda_sizes(l, gpu, nullptr, &back, sizeof back);
            EXPECT_EQ(back, eb);  // the extra bytes came back with the sizes
            EXPECT_EQ(static_cast<uint64_t>(gpu.segments), (l.num_blocks + launch_blocks - 1) / launch_blocks);
            expect_same_streams(gpu, round == 2 ? cpu_half : cpu);
        }
        cudaFree(d_data);
        cudaFree(d_eb);
    };
    const auto f = fast_edge_data<float>(128 * 300 + 77, 7);
    const auto d = fast_edge_data<double>(128 * 150 + 5, 8);
    for (const uint64_t launch : {uint64_t{1}, uint64_t{37}, uint64_t{64}, uint64_t{100}}) {
        for (const uint32_t block : {64u, 128u, 256u}) {
            check(f, block, 0.01, launch, launch == 37);
            check(d, block, 1e-7, launch, launch == 64);
        }
    }
}

TEST(CudaBackend, FastDevicePointerApi) {
    REQUIRE_GPU();
    const auto data = walk<float>(100000, 5, 0.5);
    auto p = make_params(GSZ_DTYPE_F32, {data.size()}, GSZ_ERROR_REL, 1e-3);
    p.pipeline = GSZ_PIPELINE_FAST;
    gsz::Context ctx;
    const auto expect = ctx.compress(p, data.data());
    float* d_data = nullptr;
    float* d_out = nullptr;
    ASSERT_EQ(cudaMalloc(&d_data, data.size() * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d_out, data.size() * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(d_data, data.data(), data.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    size_t cap = 0, bytes = 0;
    ASSERT_EQ(gsz_compress_bound(&p, &cap), GSZ_STATUS_OK);
    std::vector<uint8_t> archive(cap);
    ASSERT_EQ(gsz_compress_device(ctx.get(), &p, d_data, archive.data(), cap, &bytes, 0, nullptr), GSZ_STATUS_OK);
    archive.resize(bytes);
    EXPECT_TRUE(archive == expect);
    ASSERT_EQ(gsz_decompress_device(ctx.get(), archive.data(), bytes, 0, d_out, data.size() * sizeof(float), nullptr),
              GSZ_STATUS_OK);
    std::vector<float> dec(data.size());
    ASSERT_EQ(cudaMemcpy(dec.data(), d_out, dec.size() * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_TRUE(dec == ctx.decompress<float>(archive, GSZ_DEVICE_CPU));
    cudaFree(d_data);
    cudaFree(d_out);
}

// ---- the interp pipeline ----------------------------------------------------

TEST(CudaBackend, InterpRealFieldsByteIdentical) {
    REQUIRE_GPU();
    const auto fields = fields_or_sample();
    for (const Field& f : fields) {
        for (const auto& [mode, eb] : {std::pair{GSZ_ERROR_REL, 1e-2}, std::pair{GSZ_ERROR_REL, 1e-3},
                                       std::pair{GSZ_ERROR_REL, 1e-4}, std::pair{GSZ_ERROR_ABS, 1e-2}}) {
            // Radius 512 lists some coded anchors; the default (32763) codes
            // them all; raw anchors as cuSZ-i.
            for (const auto& [radius, anchors] :
                 {std::pair{512u, GSZ_INTERP_ANCHORS_AUTO}, std::pair{0u, GSZ_INTERP_ANCHORS_CODED},
                  std::pair{0u, GSZ_INTERP_ANCHORS_RAW}}) {
                SCOPED_TRACE(f.name + (mode == GSZ_ERROR_REL ? " rel " : " abs ") + std::to_string(eb) + " radius " +
                             std::to_string(radius) + " anchors " + std::to_string(anchors));
                if (f.dtype == GSZ_DTYPE_F32)
                    same_on_both(read_raw<float>(f.path), f.dims, mode, eb, radius, GSZ_PIPELINE_INTERP, 128,
                                 GSZ_LOSSLESS_AUTO, anchors);
                else
                    same_on_both(read_raw<double>(f.path), f.dims, mode, eb, radius, GSZ_PIPELINE_INTERP, 128,
                                 GSZ_LOSSLESS_AUTO, anchors);
            }
        }
    }
}

// Huffman only with interp's wide alphabet: the codebook built on the device,
// the outliers selected on a side stream beside its build (the pipeline's
// path for --lossless none).  Values no bound can reach make outliers in full
// tiles and edge tiles alike.
TEST(CudaBackend, InterpHuffmanOnlyWithOutliersByteIdentical) {
    REQUIRE_GPU();
    auto wmag = read_raw<float>(repo_dir() / "data" / "sperr_wmag_91x91x91.f32");
    auto plane = walk<float>(300 * 70, 11, 1.0);
    for (auto* v : {&wmag, &plane}) {
        const size_t n = v->size();
        for (size_t i = 7; i < n; i += n / 97) (*v)[i] = (i / 7) % 2 ? 3e30f : -3e30f;
        (*v)[n / 2] = std::numeric_limits<float>::quiet_NaN();
        (*v)[n - 1] = std::numeric_limits<float>::infinity();
    }
    for (const double eb : {1e-2, 1e-4}) {
        SCOPED_TRACE("abs " + std::to_string(eb));
        same_on_both(wmag, {91, 91, 91}, GSZ_ERROR_ABS, eb, 0, GSZ_PIPELINE_INTERP, 128, GSZ_LOSSLESS_NONE);
        same_on_both(plane, {300, 70}, GSZ_ERROR_ABS, eb, 0, GSZ_PIPELINE_INTERP, 128, GSZ_LOSSLESS_NONE);
    }
}

// Fill values (format version 13) on both backends: the same archives and
// the fill points back exactly.  A land disc at -1e34 (found by auto), a
// value inside the data's range named by the caller (its tiles cannot be
// quiet: a fill point's prediction is not bounded by the loaded values), on
// 3-D, 2-D and 1-D layouts, float and double.
TEST(CudaBackend, InterpFillValuesByteIdentical) {
    REQUIRE_GPU();
    const auto wmag = read_raw<float>(repo_dir() / "data" / "sperr_wmag_91x91x91.f32");
    std::vector<float> land(wmag), dotted(wmag);
    for (size_t i = 0; i < land.size(); ++i) {
        const double x = double(i % 91) - 30, y = double(i / 91 % 91) - 40;
        if (x * x + y * y < 400 || i / 91 % 91 > 80) land[i] = -1e34f;
        if (i % 7 == 0) dotted[i] = 0.5f;
    }
    const std::vector<double> land64(land.begin(), land.end());
    std::vector<float> nan_land(land);   // NaN as the land marker (found by auto: a NaN bit pattern)
    for (float& x : nan_land)
        if (x == -1e34f) x = std::numeric_limits<float>::quiet_NaN();
    gsz::Context ctx;
    gsz_pipeline pipeline = GSZ_PIPELINE_INTERP;
    const auto check = [&](const auto& v, const std::vector<uint64_t>& dims, gsz_error_mode mode, double eb,
                           gsz_fill fill, double value, gsz_interp_tiles tiles = GSZ_INTERP_TILES_AUTO) {
        using T = typename std::decay_t<decltype(v)>::value_type;
        SCOPED_TRACE(testing::Message() << "pipeline " << pipeline << " " << dims.size() << "-D " << sizeof(T) * 8
                                        << " bits, mode " << mode << " eb " << eb << " fill " << fill << " " << value
                                        << " tiles " << tiles);
        auto p = make_params(dtype_of<T>(), dims, mode, eb);
        p.pipeline = pipeline;
        p.interp_tiles = tiles;
        p.fill = fill;
        p.fill_value = value;
        std::vector<uint8_t> archive;
        std::vector<T> on_gpu;
        same_on_both_with(p, v, &archive, &on_gpu);
        if (testing::Test::HasFatalFailure()) return;
        ASSERT_EQ(ctx.inspect(archive.data(), archive.size()).has_fill, 1u);
        const T f = static_cast<T>(value);   // bitwise: a NaN fill value too
        for (size_t i = 0; i < v.size(); ++i) {
            if (std::memcmp(&v[i], &f, sizeof(T)) == 0) { ASSERT_EQ(std::memcmp(&on_gpu[i], &f, sizeof(T)), 0) << i; }
        }
    };
    for (const auto& dims : {std::vector<uint64_t>{91, 91, 91}, std::vector<uint64_t>{91 * 91, 91},
                             std::vector<uint64_t>{land.size()}}) {
        check(land, dims, GSZ_ERROR_REL, 1e-3, GSZ_FILL_AUTO, -1e34);
        check(land, dims, GSZ_ERROR_ABS, 1e-3, GSZ_FILL_AUTO, -1e34);
        // (Bounds where interp beats storing the values: tighter ones on these fall back to store.)
        check(land64, dims, GSZ_ERROR_ABS, 1e-3, GSZ_FILL_AUTO, double(-1e34f));
        check(nan_land, dims, GSZ_ERROR_REL, 1e-3, GSZ_FILL_AUTO, std::numeric_limits<double>::quiet_NaN());
        check(nan_land, dims, GSZ_ERROR_ABS, 1e-2, GSZ_FILL_AUTO, std::numeric_limits<double>::quiet_NaN());
        check(dotted, dims, GSZ_ERROR_REL, 1e-3, GSZ_FILL_VALUE, 0.5);
        check(dotted, dims, GSZ_ERROR_ABS, 1e-2, GSZ_FILL_VALUE, 0.5);
        // Every tile weighed for Lorenzo: the full tiles' estimate reads the stand-ins as the CPU's does.
        check(land, dims, GSZ_ERROR_ABS, 1e-3, GSZ_FILL_AUTO, -1e34, GSZ_INTERP_TILES_EACH);
        check(dotted, dims, GSZ_ERROR_ABS, 1e-2, GSZ_FILL_VALUE, 0.5, GSZ_INTERP_TILES_EACH);
    }
    // The lorenzo pipeline (format version 15): the device finds the fill value on the same sample, codes
    // its points as the stand-in (a second pass after the one that assumed none) and takes the other
    // values' range for a relative bound.
    pipeline = GSZ_PIPELINE_LORENZO;
    for (const auto& dims : {std::vector<uint64_t>{91, 91, 91}, std::vector<uint64_t>{91 * 91, 91},
                             std::vector<uint64_t>{land.size()}}) {
        check(land, dims, GSZ_ERROR_REL, 1e-3, GSZ_FILL_AUTO, -1e34);
        check(land, dims, GSZ_ERROR_ABS, 1e-2, GSZ_FILL_AUTO, -1e34);
        check(land64, dims, GSZ_ERROR_REL, 1e-4, GSZ_FILL_AUTO, double(-1e34f));
        check(nan_land, dims, GSZ_ERROR_REL, 1e-3, GSZ_FILL_AUTO, std::numeric_limits<double>::quiet_NaN());
        check(dotted, dims, GSZ_ERROR_REL, 1e-3, GSZ_FILL_VALUE, 0.5);
    }
}

// Rough 1-D records (a random walk, as sensor records and mesh cells in
// storage order): the stride choice takes every tile Lorenzo-coded at the full
// bound (format version 14, flag 0x8, one level of rANS contexts) on both
// backends alike; a forced stride and a 3-D view choose per tile as before.
TEST(CudaBackend, InterpAllLorenzoByteIdentical) {
    REQUIRE_GPU();
    gsz::Context ctx;
    int all_lorenzo = 0;
    const auto check = [&](const auto& v, const std::vector<uint64_t>& dims, gsz_error_mode mode, double eb,
                           uint32_t stride, gsz_lossless lossless) {
        using T = typename std::decay_t<decltype(v)>::value_type;
        SCOPED_TRACE(testing::Message() << dims.size() << "-D " << sizeof(T) * 8 << " bits, mode " << mode << " eb "
                                        << eb << " stride " << stride << " lossless " << lossless);
        auto p = make_params(dtype_of<T>(), dims, mode, eb);
        p.pipeline = GSZ_PIPELINE_INTERP;
        p.interp_anchor_stride = stride;
        p.lossless = lossless;
        std::vector<uint8_t> archive;
        same_on_both_with(p, v, &archive);
        if (testing::Test::HasFatalFailure()) return;
        const auto info = ctx.inspect(archive.data(), archive.size());
        ASSERT_EQ(info.pipeline, GSZ_PIPELINE_INTERP);
        all_lorenzo += info.interp_lorenzo_tiles == info.interp_tiles && info.interp_anchor_stride == 512;
    };
    for (uint64_t n : {uint64_t{5000}, uint64_t{300000}}) {
        const auto f = walk<float>(n, 3, 1.0);
        const auto d = walk<double>(n, 4, 1.0);
        const std::vector<float> runs = runs_record(n);
        const std::vector<double> runs64(runs.begin(), runs.end());
        for (gsz_lossless lossless : {GSZ_LOSSLESS_AUTO, GSZ_LOSSLESS_ANS, GSZ_LOSSLESS_NONE}) {
            check(f, {n}, GSZ_ERROR_REL, 1e-3, 0, lossless);
            check(d, {n}, GSZ_ERROR_REL, 1e-3, 0, lossless);
            check(runs, {n}, GSZ_ERROR_REL, 1e-3, 0, lossless);
            check(runs64, {n}, GSZ_ERROR_ABS, 1e-2, 0, lossless);
        }
        check(f, {n}, GSZ_ERROR_REL, 1e-3, 4, GSZ_LOSSLESS_AUTO);
        check(f, {n / 100, 10, 10}, GSZ_ERROR_REL, 1e-3, 0, GSZ_LOSSLESS_AUTO);
    }
    EXPECT_GT(all_lorenzo, 0) << "no case took every tile Lorenzo-coded: the path went unchecked";
}

TEST(CudaBackend, InterpEdgeCasesByteIdentical) {
    REQUIRE_GPU();
    // Partial last tiles along every dim, size-1 dims, 4-D, 1-D longer than a tile.
    for (auto dims : std::vector<std::vector<uint64_t>>{{1}, {7}, {2049}, {5000}, {33, 17, 9}, {65, 17}, {64, 16},
                                                         {3, 1000}, {31, 9, 7, 3}, {91, 1, 91}, {17, 9, 33}}) {
        uint64_t n = 1;
        for (auto d : dims) n *= d;
        SCOPED_TRACE("n " + std::to_string(n));
        auto f = walk<float>(n, 3, 1.0);
        auto d = walk<double>(n, 4, 1.0);
        if (n > 40) {  // NaN, Inf and huge values inside tiles
            f[n / 3] = std::numeric_limits<float>::quiet_NaN();
            f[n / 2] = -std::numeric_limits<float>::infinity();
            f[n - 1] = 3e38f;
            d[n / 3] = std::numeric_limits<double>::infinity();
            d[n / 2 + 1] = 1e300;
        }
        same_on_both(f, dims, GSZ_ERROR_REL, 1e-3, 512, GSZ_PIPELINE_INTERP);
        same_on_both(f, dims, GSZ_ERROR_ABS, 1e-4, 512, GSZ_PIPELINE_INTERP);
        same_on_both(d, dims, GSZ_ERROR_REL, 1e-6, 512, GSZ_PIPELINE_INTERP);
        same_on_both(f, dims, GSZ_ERROR_REL, 1e-3, 0, GSZ_PIPELINE_INTERP, 128, GSZ_LOSSLESS_AUTO,
                     GSZ_INTERP_ANCHORS_CODED);
        same_on_both(d, dims, GSZ_ERROR_ABS, 1e-6, 512, GSZ_PIPELINE_INTERP, 128, GSZ_LOSSLESS_AUTO,
                     GSZ_INTERP_ANCHORS_CODED);   // most anchors listed
        same_on_both(f, dims, GSZ_ERROR_REL, 1e-3, 0, GSZ_PIPELINE_INTERP, 128, GSZ_LOSSLESS_AUTO,
                     GSZ_INTERP_ANCHORS_RAW);
    }
    const auto w = walk<float>(64 * 64 * 8, 9, 5.0);
    same_on_both(w, {64, 64, 8}, GSZ_ERROR_ABS, 0.1, 1, GSZ_PIPELINE_INTERP);       // nearly all outliers
    same_on_both(w, {64, 64, 8}, GSZ_ERROR_ABS, 1e-4, 32768, GSZ_PIPELINE_INTERP);
    same_on_both(walk<float>(40 * 40 * 40, 11, 1000.0), {40, 40, 40}, GSZ_ERROR_ABS, 0.01, 512, GSZ_PIPELINE_INTERP);
}

// The kernels against the CPU backend stage by stage: the anchor stage (start
// values, codes, listed anchors), codes, outliers, the anchors rebuilt by the
// decoder, decoded values; a zero code without an outlier and a coded anchor
// list that does not match the codes are reported.
// `overrides`: a dimension order and spline instead of the tuned ones.
template <class T>
void interp_matches_cpu(const std::vector<T>& data, const std::vector<uint64_t>& dims, double eb, int mode,
                        uint32_t radius, const gsz::predict::InterpOverrides& overrides = {},
                        double value_range = 1.0, size_t* lorenzo_count = nullptr) {
    namespace pr = gsz::predict;
    SCOPED_TRACE(testing::Message() << dims.size() << "-D, eb " << eb << ", anchors " << mode << ", radius "
                                    << radius << ", order " << overrides.order[0] << overrides.order[1]
                                    << overrides.order[2] << ", spline " << overrides.spline);
    const pr::InterpLayout L = pr::interp_layout(static_cast<uint32_t>(dims.size()), dims.data());
    const auto idx = pr::interp_tune_indices(L);
    std::vector<double> samples(idx.size());
    for (size_t i = 0; i < idx.size(); ++i) samples[i] = static_cast<double>(data[idx[i]]);
    pr::InterpConfig cfg = pr::interp_configure(L, samples, eb, value_range, overrides);
    const pr::InterpAnchors<T> cpu_anchors = pr::interp_anchors_encode_cpu(data.data(), L, cfg, eb, radius, mode, 2);
    cfg.anchors = cpu_anchors.mode;
    pr::InterpEncoded<T> cpu;
    pr::interp_encode_cpu(data.data(), L, cfg, eb, radius, cpu_anchors, cpu, 2);

    T* d_data = nullptr;
    T* d_out = nullptr;
    ASSERT_EQ(cudaMalloc(&d_data, data.size() * sizeof(T)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d_out, data.size() * sizeof(T)), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(d_data, data.data(), data.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
    EXPECT_TRUE(pr::interp_tune_sample_cuda(d_data, L, nullptr) == samples);
    pr::InterpDeviceEncoded<T> gpu;
    pr::interp_anchors_encode_cuda(d_data, L, cfg, eb, radius, mode, gpu, nullptr);
    ASSERT_EQ(gpu.anchor_mode, cpu_anchors.mode);
    std::vector<T> start;
    gsz::cuda::copy_to_host(start, gpu.anchor_start.data(), L.num_anchors, nullptr);
    ASSERT_EQ(start.size(), cpu_anchors.start.size());
    EXPECT_EQ(0, std::memcmp(start.data(), cpu_anchors.start.data(), start.size() * sizeof(T)));
    if (gpu.anchor_mode == pr::kAnchorsCoded) {
        std::vector<uint16_t> anchor_codes;
        gsz::cuda::copy_to_host(anchor_codes, gpu.anchor_codes.data(), L.num_anchors, nullptr);
        EXPECT_TRUE(anchor_codes == cpu_anchors.codes);
    }
    EXPECT_TRUE(gpu.listed == cpu_anchors.listed);
    EXPECT_TRUE(gpu.listed_residual == cpu_anchors.listed_residual);

    pr::interp_encode_cuda(d_data, L, cfg, eb, radius, gpu, nullptr);
    std::vector<uint16_t> codes;
    std::vector<T> values;
    std::vector<uint64_t> index;
    gsz::cuda::copy_to_host(codes, gpu.codes.data(), data.size(), nullptr);
    gsz::cuda::copy_to_host(index, gpu.outlier_index.data(), gpu.num_outliers, nullptr);
    gsz::cuda::copy_to_host(values, gpu.outlier_value.data(), gpu.num_outliers, nullptr);
    EXPECT_TRUE(codes == cpu.codes);
    std::vector<unsigned long long> tiles;   // zero codes, jump guard taken
    gsz::cuda::copy_to_host(tiles, gpu.zero_codes.data(), 2, nullptr);
    EXPECT_EQ(tiles[1] != 0, cpu.jump_taken) << "the jump guard's report differs";
    EXPECT_TRUE(index == cpu.outlier_index);
    // Lorenzo tiles: the same choice per tile (the CPU keeps none where no tile is Lorenzo).
    std::vector<uint8_t> lorenzo_tiles;
    if (cfg.tiles != pr::kTilesSpline) {
        gsz::cuda::copy_to_host(lorenzo_tiles, gpu.lorenzo_tiles.data(), L.num_tiles, nullptr);
        if (std::find(lorenzo_tiles.begin(), lorenzo_tiles.end(), 1) == lorenzo_tiles.end()) lorenzo_tiles.clear();
    }
    EXPECT_TRUE(lorenzo_tiles == cpu.lorenzo_tiles) << "the tiles' Lorenzo choices differ";
    if (lorenzo_count) *lorenzo_count = static_cast<size_t>(std::count(cpu.lorenzo_tiles.begin(), cpu.lorenzo_tiles.end(), 1));
    const uint8_t* d_tiles = lorenzo_tiles.empty() ? nullptr : gpu.lorenzo_tiles.data();
    ASSERT_EQ(values.size(), cpu.outlier_value.size());
    EXPECT_EQ(0, std::memcmp(values.data(), cpu.outlier_value.data(), values.size() * sizeof(T)));

    // Decoder: the anchors rebuilt from the codes and the archive's anchor section.
    const bool raw = cfg.anchors == pr::kAnchorsRaw;
    const std::vector<T> raw_host = raw ? cpu_anchors.start : std::vector<T>{};
    gsz::cuda::DeviceBuffer<T> d_raw(raw_host.size(), nullptr);
    gsz::cuda::DeviceBuffer<uint64_t> d_listed(cpu_anchors.listed.size(), nullptr),
        d_residual(cpu_anchors.listed.size(), nullptr);
    ASSERT_EQ(cudaMemcpy(d_raw.data(), raw_host.data(), raw_host.size() * sizeof(T), cudaMemcpyHostToDevice),
              cudaSuccess);
    ASSERT_EQ(cudaMemcpy(d_listed.data(), cpu_anchors.listed.data(), cpu_anchors.listed.size() * 8,
                         cudaMemcpyHostToDevice),
              cudaSuccess);
    ASSERT_EQ(cudaMemcpy(d_residual.data(), cpu_anchors.listed_residual.data(), cpu_anchors.listed.size() * 8,
                         cudaMemcpyHostToDevice),
              cudaSuccess);
    gsz::cuda::DeviceBuffer<T> d_start(L.num_anchors, nullptr);
    gsz::cuda::DeviceBuffer<uint32_t> corrupt(1, nullptr);
    corrupt.zero(nullptr);
    auto decode_anchors = [&](uint64_t num_listed) {
        pr::interp_anchors_decode_cuda<T>(gpu.codes.data(), d_raw.data(), d_listed.data(), d_residual.data(),
                                          num_listed, gpu.outlier_index.data(), gpu.outlier_value.data(),
                                          gpu.num_outliers, L, cfg, radius, d_start.data(), corrupt.data(), nullptr);
    };
    decode_anchors(cpu_anchors.listed.size());
    const std::vector<T> ref_start = pr::interp_anchors_decode_cpu<T>(
        cpu.codes, raw_host, cpu_anchors.listed, cpu_anchors.listed_residual, cpu.outlier_index, cpu.outlier_value,
        L, cfg, radius);
    gsz::cuda::copy_to_host(start, d_start.data(), L.num_anchors, nullptr);
    EXPECT_EQ(0, std::memcmp(start.data(), ref_start.data(), start.size() * sizeof(T)));
    EXPECT_EQ(0, std::memcmp(start.data(), cpu_anchors.start.data(), start.size() * sizeof(T)))
        << "the decoder's anchors are not the encoder's";

    pr::interp_decode_cuda<T>(gpu.codes.data(), d_start.data(), gpu.outlier_index.data(), gpu.outlier_value.data(),
                              gpu.num_outliers, d_tiles, L, cfg, radius, d_out, corrupt.data(), nullptr);
    std::vector<T> out(data.size()), ref(data.size());
    std::vector<uint32_t> flag;
    gsz::cuda::copy_to_host(flag, corrupt.data(), 1, nullptr);
    EXPECT_EQ(flag[0], 0u);
    ASSERT_EQ(cudaMemcpy(out.data(), d_out, out.size() * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    pr::interp_decode_cpu<T>(cpu.codes, ref_start, cpu.outlier_index, cpu.outlier_value, cpu.lorenzo_tiles, L, cfg,
                             radius, ref.data(), 1);
    EXPECT_EQ(0, std::memcmp(out.data(), ref.data(), out.size() * sizeof(T)));
    const auto r = check_bound(data, out, eb);
    EXPECT_EQ(r.violations, 0u) << "first bad " << r.first_bad;
    if (!cpu.jump_taken && cfg.jump != pr::kInterpNoJump) {   // the archive then records no guard
        pr::InterpConfig off = cfg;
        off.jump = pr::kInterpNoJump;
        pr::interp_decode_cuda<T>(gpu.codes.data(), d_start.data(), gpu.outlier_index.data(),
                                  gpu.outlier_value.data(), gpu.num_outliers, d_tiles, L, off, radius, d_out,
                                  corrupt.data(), nullptr);
        ASSERT_EQ(cudaMemcpy(out.data(), d_out, out.size() * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
        EXPECT_EQ(0, std::memcmp(out.data(), ref.data(), out.size() * sizeof(T))) << "decoded without the guard";
    }

    if (!raw && !cpu_anchors.listed.empty()) {   // drop the last listed anchor: the decoder must notice
        decode_anchors(cpu_anchors.listed.size() - 1);
        gsz::cuda::copy_to_host(flag, corrupt.data(), 1, nullptr);
        EXPECT_NE(flag[0], 0u);
        corrupt.zero(nullptr);
    }
    if (gpu.num_outliers > 0) {   // hide one outlier: the decoder must notice
        pr::interp_decode_cuda<T>(gpu.codes.data(), d_start.data(), gpu.outlier_index.data() + 1,
                                  gpu.outlier_value.data() + 1, gpu.num_outliers - 1, d_tiles, L, cfg, radius,
                                  d_out, corrupt.data(), nullptr);
        gsz::cuda::copy_to_host(flag, corrupt.data(), 1, nullptr);
        EXPECT_NE(flag[0], 0u);
    }
    cudaFree(d_data);
    cudaFree(d_out);
}

TEST(CudaBackend, InterpKernelsMatchCpu) {
    REQUIRE_GPU();
    auto wmag = read_raw<float>(repo_dir() / "data" / "sperr_wmag_91x91x91.f32");
    wmag[8 * 91 + 16] = std::numeric_limits<float>::infinity();   // a listed coded anchor
    for (int mode : {int{gsz::predict::kAnchorsRaw}, int{gsz::predict::kAnchorsCoded}}) {
        interp_matches_cpu(wmag, {91, 91, 91}, 0.05, mode, 512);
        interp_matches_cpu(wmag, {91, 91, 91}, 0.05, mode, 32768);
        interp_matches_cpu(wmag, {91 * 91, 91}, 0.01, mode, 512);
        interp_matches_cpu(wmag, {wmag.size()}, 0.5, mode, 32768);
        auto rough = walk<double>(70 * 30 * 20, 21, 50.0);
        rough[100] = std::numeric_limits<double>::quiet_NaN();
        rough[8] = std::numeric_limits<double>::quiet_NaN();   // an anchor
        interp_matches_cpu(rough, {70, 30, 20}, 0.01, mode, 512);   // many outliers and listed anchors
    }
}

// Lorenzo tiles (format version 10): every tile forced Lorenzo-coded (full and
// edge tiles, 1-D to 3-D, outliers and NaN among the Lorenzo points), and the
// per-tile choice on data whose tiles go both ways: the GPU's choices, codes
// and decoded values equal the CPU's.
TEST(CudaBackend, InterpLorenzoTilesMatchCpu) {
    REQUIRE_GPU();
    namespace pr = gsz::predict;
    auto wmag = read_raw<float>(repo_dir() / "data" / "sperr_wmag_91x91x91.f32");
    wmag[8 * 91 + 17] = std::numeric_limits<float>::quiet_NaN();   // a Lorenzo point
    auto rough = walk<double>(70 * 30 * 20, 21, 50.0);
    rough[101] = std::numeric_limits<double>::infinity();
    // Half smooth, half a random walk: both codings win somewhere.
    std::vector<float> mixed(300 * 200);
    for (size_t i = 0; i < mixed.size(); ++i) {
        const double x = static_cast<double>(i % 300), y = static_cast<double>(i / 300);
        mixed[i] = static_cast<float>(std::sin(x / 40.0) * std::cos(y / 30.0) * 100.0);
    }
    const auto walk2 = walk<float>(mixed.size() / 2, 5, 1.0);
    for (size_t i = 0; i < walk2.size(); ++i) mixed[mixed.size() / 2 + i] += walk2[i];
    // kTilesEach: the choice on every tile; kTilesAuto: the gate first (a
    // sample of tiles coded by the generic kernel's guarded path), then the
    // choice or none; both outcomes must occur below.
    for (uint8_t tiles : {uint8_t{pr::kTilesLorenzo}, uint8_t{pr::kTilesEach}, uint8_t{pr::kTilesAuto}}) {
        pr::InterpOverrides ov;
        ov.tiles = tiles;
        SCOPED_TRACE(testing::Message() << "tiles " << int{tiles});
        size_t chosen[8] = {};
        interp_matches_cpu(wmag, {91, 91, 91}, 0.05, pr::kAnchorsCoded, 512, ov, 1.0, &chosen[0]);
        interp_matches_cpu(wmag, {91, 91, 91}, 0.005, pr::kAnchorsRaw, 32768, ov, 1.0, &chosen[1]);
        interp_matches_cpu(wmag, {91 * 91, 91}, 0.01, pr::kAnchorsCoded, 512, ov, 1.0, &chosen[2]);
        interp_matches_cpu(wmag, {wmag.size()}, 0.5, pr::kAnchorsCoded, 32768, ov, 1.0, &chosen[3]);
        interp_matches_cpu(rough, {70, 30, 20}, 0.01, pr::kAnchorsCoded, 512, ov, 1.0, &chosen[4]);
        interp_matches_cpu(mixed, {300, 200}, 0.05, pr::kAnchorsCoded, 32768, ov, 200.0, &chosen[5]);
        interp_matches_cpu(mixed, {300, 200}, 0.005, pr::kAnchorsCoded, 512, ov, 200.0, &chosen[6]);
        // wmag at rel 1e-3 of its range: some tiles would choose Lorenzo (kTilesEach), too few to pass the gate.
        interp_matches_cpu(wmag, {91, 91, 91}, 0.265, pr::kAnchorsCoded, 32768, ov, 265.3, &chosen[7]);
        if (tiles == pr::kTilesEach) {
            EXPECT_GT(chosen[7], 0u);
        }
        if (tiles == pr::kTilesAuto) {
            EXPECT_EQ(chosen[7], 0u) << "the gate should have said spline";
            EXPECT_GT(chosen[6], 0u) << "the gate should have said choose";
        }
    }
}

// The outliers' selection (interp_outliers_cuda): zero codes appended by
// warps in any order, then sorted.  Zeros where it has its corners: all eight
// codes of a vector, a zero in every vector of a warp's round, the codes
// after the last whole vector, long stretches without any, every code zero.
TEST(CudaBackend, InterpOutlierSelection) {
    REQUIRE_GPU();
    namespace pr = gsz::predict;
    std::mt19937_64 rng(5);
    for (const uint64_t n : {uint64_t{1}, uint64_t{13}, uint64_t{4096}, uint64_t{1000003}}) {
        for (int pattern = 0; pattern < 4; ++pattern) {
            std::vector<uint16_t> codes(n, 7);
            for (uint64_t i = 0; i < n; ++i) {
                const bool zero = pattern == 0   ? i % 8 == 5 || (i >= 800 && i < 808)
                                  : pattern == 1 ? rng() % 5000 == 0 || i + 3 >= n
                                  : pattern == 2 ? true
                                                 : false;
                if (zero) codes[i] = 0;
            }
            std::vector<uint64_t> expect;
            for (uint64_t i = 0; i < n; ++i)
                if (codes[i] == 0) expect.push_back(i);
            std::vector<float> data(n);
            for (uint64_t i = 0; i < n; ++i) data[i] = static_cast<float>(i) * 0.5f;
            pr::InterpDeviceEncoded<float> enc;
            enc.codes.allocate(n, nullptr);
            gsz::cuda::DeviceBuffer<float> d_data(n, nullptr);
            ASSERT_EQ(cudaMemcpy(enc.codes.data(), codes.data(), n * sizeof(uint16_t), cudaMemcpyHostToDevice),
                      cudaSuccess);
            ASSERT_EQ(cudaMemcpy(d_data.data(), data.data(), n * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
            pr::interp_outliers_cuda(d_data.data(), expect.size(), enc, nullptr);
            std::vector<uint64_t> count, index;
            std::vector<float> value;
            gsz::cuda::copy_to_host(count, enc.count.data(), 1, nullptr);
            gsz::cuda::copy_to_host(index, enc.outlier_index.data(), expect.size(), nullptr);
            gsz::cuda::copy_to_host(value, enc.outlier_value.data(), expect.size(), nullptr);
            SCOPED_TRACE(testing::Message() << "n " << n << ", pattern " << pattern << ", zeros " << expect.size());
            EXPECT_EQ(count[0], expect.size());
            EXPECT_TRUE(index == expect);
            for (size_t k = 0; k < expect.size() && k < value.size(); ++k) ASSERT_EQ(value[k], data[expect[k]]);
        }
    }
}

// The full-tile kernels are compiled per dimension order: every order of the
// 3-D and 2-D geometries, both splines, f32 and f64, against the CPU (the
// fields hold full tiles and edge tiles along every dim).
TEST(CudaBackend, InterpFullTileKernelsEveryOrder) {
    REQUIRE_GPU();
    auto wmag = read_raw<float>(repo_dir() / "data" / "sperr_wmag_91x91x91.f32");
    wmag[40 * 91 * 91 + 37 * 91 + 45] = std::numeric_limits<float>::quiet_NaN();   // inside a full tile
    wmag[20 * 91 * 91 + 9 * 91 + 50] = std::numeric_limits<float>::infinity();
    std::vector<double> wmag_d(wmag.begin(), wmag.end());
    int spline = gsz::predict::kSplineNotAKnot;
    for (const auto& order : std::vector<std::array<int, 3>>{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1},
                                                             {2, 1, 0}}) {
        gsz::predict::InterpOverrides o;
        for (int k = 0; k < 3; ++k) o.order[k] = order[k];
        o.spline = spline;
        interp_matches_cpu(wmag, {91, 91, 91}, 0.02, gsz::predict::kAnchorsCoded, 32768, o);
        interp_matches_cpu(wmag_d, {91, 91, 91}, 0.005, gsz::predict::kAnchorsRaw, 512, o);
        spline = spline == gsz::predict::kSplineNotAKnot ? gsz::predict::kSplineNatural : gsz::predict::kSplineNotAKnot;
    }
    for (const auto& order : std::vector<std::array<int, 3>>{{0, 1, -1}, {1, 0, -1}}) {
        for (int sp : {int{gsz::predict::kSplineNotAKnot}, int{gsz::predict::kSplineNatural}}) {
            gsz::predict::InterpOverrides o;
            o.order[0] = order[0];
            o.order[1] = order[1];
            o.spline = sp;
            interp_matches_cpu(wmag, {91 * 91, 91}, 0.01, gsz::predict::kAnchorsCoded, 32768, o);
            interp_matches_cpu(wmag_d, {637, 1183}, 0.002, gsz::predict::kAnchorsCoded, 512, o);
        }
    }
}

// The jump guard (interp_spline) in the full-tile and edge-tile kernels and
// the 1-D ones: a fill value (-1e34) over part of every plane, guard on and
// off, against the CPU; archives byte-identical.
TEST(CudaBackend, InterpJumpGuardMatchesCpu) {
    REQUIRE_GPU();
    namespace pr = gsz::predict;
    auto wmag = read_raw<float>(repo_dir() / "data" / "sperr_wmag_91x91x91.f32");
    for (size_t i = 0; i < wmag.size(); ++i)
        if ((i % 91 < 45 && i / 91 % 91 < 40) || i % 91 == 70) wmag[i] = -1e34f;
    const std::vector<double> wmag_d(wmag.begin(), wmag.end());
    const double range = 1e34 + double(*std::max_element(wmag.begin(), wmag.end()));
    for (bool guard : {true, false}) {
        SCOPED_TRACE(guard ? "guard on" : "guard off");
        pr::InterpOverrides o;
        o.jump_guard = guard;
        interp_matches_cpu(wmag, {91, 91, 91}, 1e30, pr::kAnchorsCoded, 32768, o, range);
        interp_matches_cpu(wmag, {91, 91, 91}, 0.02, pr::kAnchorsCoded, 512, o, range);   // coasts as outliers
        interp_matches_cpu(wmag_d, {91, 91, 91}, 1e29, pr::kAnchorsRaw, 512, o, range);
        interp_matches_cpu(wmag, {91 * 91, 91}, 1e30, pr::kAnchorsCoded, 32768, o, range);
        interp_matches_cpu(wmag_d, {637, 1183}, 1e31, pr::kAnchorsCoded, 512, o, range);
        interp_matches_cpu(wmag, {wmag.size()}, 1e30, pr::kAnchorsCoded, 32768, o, range);
    }
    // Steps at the threshold (1.9, of a range of 2) and a float step either
    // side of it, kept exactly (outliers, or the copied neighbour): the
    // full-tile kernels' float pre-test must leave each of these to the double test.
    std::vector<float> steps(91 * 91 * 91);
    std::mt19937 rng(5);
    const float t = static_cast<float>(pr::interp_jump_threshold(2.0));
    const float levels[] = {0.0f, t, std::nextafter(t, 2.0f), std::nextafter(t, 0.0f), 2.0f, 2.0f - t,
                            std::nextafter(2.0f, 0.0f), std::nextafter(0.0f, 1.0f)};
    for (float& x : steps) x = levels[rng() % 8];
    for (bool guard : {true, false}) {
        pr::InterpOverrides o;
        o.jump_guard = guard;
        interp_matches_cpu(steps, {91, 91, 91}, 1e-9, pr::kAnchorsCoded, 32768, o, 2.0);
    }
    same_on_both(steps, {91, 91, 91}, GSZ_ERROR_ABS, 1e-9, 0, GSZ_PIPELINE_INTERP);
    // Tiles whose values lie within h of their origin's value (h =
    // interp_quiet_half_span: 0.91 for jump 1.9 and eb 0.04) run without the
    // guard's tests on the GPU, the others with them; the CPU tests every
    // point.  Values 1 +- (1 -+ 1e-4)h around origins of 1 give tiles on both
    // sides of the test; values 0 and 2 set the range (jump 1.9).
    const double h = pr::interp_quiet_half_span(1.9, 0.04);
    for (const double spread : {h * (1 - 1e-4), h * (1 + 1e-4), h * 1.05}) {
        for (const std::array<uint64_t, 2> tile : {std::array<uint64_t, 2>{32, 8}, std::array<uint64_t, 2>{64, 16}}) {
            const bool flat = tile[1] == 16;   // the 2-D layout {91 * 91, 91}: tiles 64 x 16
            std::vector<float> near(91 * 91 * 91);
            std::uniform_real_distribution<double> u(1.0 - spread, 1.0 + spread);
            for (size_t i = 0; i < near.size(); ++i) {
                const uint64_t x = flat ? i % (91 * 91) : i % 91, y = flat ? i / (91 * 91) : i / 91 % 91, z = i / (91 * 91);
                const bool origin = x % tile[0] == 0 && y % tile[1] == 0 && (flat || z % 8 == 0);
                near[i] = origin ? 1.0f : static_cast<float>(u(rng));
            }
            near[91 * 91 * 45 + 91 * 45 + 45] = 2.0f, near[91 * 91 * 47 + 91 * 45 + 45] = 0.0f;
            pr::InterpOverrides o;
            interp_matches_cpu(near, flat ? std::vector<uint64_t>{91 * 91, 91} : std::vector<uint64_t>{91, 91, 91}, 0.04,
                               pr::kAnchorsCoded, 32768, o, 2.0);
        }
    }
    same_on_both(wmag, {91, 91, 91}, GSZ_ERROR_REL, 1e-3, 0, GSZ_PIPELINE_INTERP);
    same_on_both(wmag, {91, 91, 91}, GSZ_ERROR_REL, 1e-4, 0, GSZ_PIPELINE_INTERP);
    same_on_both(wmag_d, {91 * 91, 91}, GSZ_ERROR_REL, 1e-4, 0, GSZ_PIPELINE_INTERP);
    same_on_both(wmag, {wmag.size()}, GSZ_ERROR_REL, 1e-3, 0, GSZ_PIPELINE_INTERP);
}

// gsz_compress_device from device data into a host archive (empty on failure, reported).
std::vector<uint8_t> compress_from_device(gsz::Context& ctx, const gsz_params& p, const void* d_data) {
    size_t cap = 0, bytes = 0;
    EXPECT_EQ(gsz_compress_bound(&p, &cap), GSZ_STATUS_OK);
    std::vector<uint8_t> archive(cap);
    const gsz_status st = gsz_compress_device(ctx.get(), &p, d_data, archive.data(), cap, &bytes, 0, nullptr);
    EXPECT_EQ(st, GSZ_STATUS_OK) << gsz_ctx_last_error(ctx.get());
    archive.resize(st == GSZ_STATUS_OK ? bytes : 0);
    return archive;
}

TEST(CudaBackend, InterpDevicePointerApi) {
    REQUIRE_GPU();
    const auto data = read_raw<float>(repo_dir() / "data" / "sperr_wmag_91x91x91.f32");
    auto p = make_params(GSZ_DTYPE_F32, {91, 91, 91}, GSZ_ERROR_REL, 1e-3);
    p.pipeline = GSZ_PIPELINE_INTERP;
    gsz::Context ctx;
    const auto expect = ctx.compress(p, data.data());
    float* d_data = nullptr;
    float* d_out = nullptr;
    ASSERT_EQ(cudaMalloc(&d_data, data.size() * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d_out, data.size() * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(d_data, data.data(), data.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    const auto archive = compress_from_device(ctx, p, d_data);
    EXPECT_TRUE(archive == expect);
    const size_t bytes = archive.size();
    ASSERT_EQ(gsz_decompress_device(ctx.get(), archive.data(), bytes, 0, d_out, data.size() * sizeof(float), nullptr),
              GSZ_STATUS_OK);
    std::vector<float> dec(data.size());
    ASSERT_EQ(cudaMemcpy(dec.data(), d_out, dec.size() * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_TRUE(dec == ctx.decompress<float>(archive, GSZ_DEVICE_CPU));
    cudaFree(d_data);
    cudaFree(d_out);
}

// -p auto: the same choice and the same archive from host data on either
// backend and from device data, for fields where each pipeline wins.
TEST(CudaBackend, AutoSameOnBothBackendsAndFromDevicePointers) {
    REQUIRE_GPU();
    const auto data = read_raw<float>(repo_dir() / "data" / "sperr_wmag_91x91x91.f32");
    gsz::Context ctx;
    float* d_data = nullptr;
    ASSERT_EQ(cudaMalloc(&d_data, data.size() * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(d_data, data.data(), data.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    for (double eb : {1e-2, 1e-4}) {
        auto p = make_params(GSZ_DTYPE_F32, {91, 91, 91}, GSZ_ERROR_REL, eb);
        p.pipeline = GSZ_PIPELINE_AUTO;
        p.device = GSZ_DEVICE_CPU;
        const auto on_cpu = ctx.compress(p, data.data());
        p.device = GSZ_DEVICE_CUDA;
        const auto on_gpu = ctx.compress(p, data.data());
        EXPECT_TRUE(on_gpu == on_cpu) << "rel " << eb;
        EXPECT_TRUE(compress_from_device(ctx, p, d_data) == on_cpu) << "rel " << eb;
        p.pipeline = GSZ_PIPELINE_LORENZO;
        const auto lorenzo = ctx.compress(p, data.data());
        p.pipeline = GSZ_PIPELINE_INTERP;
        const auto interp = ctx.compress(p, data.data());
        EXPECT_EQ(on_cpu.size(), std::min(lorenzo.size(), interp.size())) << "rel " << eb;
    }
    cudaFree(d_data);
}

// A lossless stage forced on every shared field, both pipelines: the same
// archive (tokens or rANS states and words), the same decoded values on both backends.
void forced_stage_on_every_field(gsz_lossless lossless, std::initializer_list<double> bounds) {
    for (const Field& f : fields_or_sample()) {
        for (const gsz_pipeline pipeline : {GSZ_PIPELINE_LORENZO, GSZ_PIPELINE_INTERP}) {
            for (double eb : bounds) {
                SCOPED_TRACE(f.name + (pipeline == GSZ_PIPELINE_INTERP ? " interp" : " lorenzo") + " rel " +
                             std::to_string(eb));
                const uint32_t radius = pipeline == GSZ_PIPELINE_INTERP ? 0 : 512;
                if (f.dtype == GSZ_DTYPE_F32)
                    same_on_both(read_raw<float>(f.path), f.dims, GSZ_ERROR_REL, eb, radius, pipeline, 128, lossless);
                else
                    same_on_both(read_raw<double>(f.path), f.dims, GSZ_ERROR_REL, eb, radius, pipeline, 128, lossless);
            }
        }
    }
}

TEST(CudaBackend, RunsByteIdentical) {
    REQUIRE_GPU();
    forced_stage_on_every_field(GSZ_LOSSLESS_RUNS, {1e-2, 1e-3});
}

TEST(CudaBackend, AnsByteIdentical) {
    REQUIRE_GPU();
    forced_stage_on_every_field(GSZ_LOSSLESS_ANS, {1e-2, 1e-4});
}

// The run-token kernels against the CPU coder, on aligned and unaligned code
// arrays, and the expansion's rejection of token streams that do not add up.
TEST(CudaBackend, RunTokenKernelsMatchCpu) {
    REQUIRE_GPU();
    using namespace gsz::encode;
    constexpr uint32_t alphabet = 1024, dominant = 512;
    cudaStream_t s = nullptr;
    for (double p : {0.0, 0.5, 0.9, 0.999, 1.0}) {
        for (size_t n : {size_t{1}, size_t{1000}, size_t{1024}, size_t{4097}, size_t{1} << 20}) {
            std::mt19937_64 rng(static_cast<uint64_t>(n + 1000 * p));
            std::bernoulli_distribution dom(p);
            std::uniform_int_distribution<int> off(-30, 30);
            std::vector<uint16_t> codes(n + 1);
            for (auto& c : codes) c = dom(rng) ? dominant : static_cast<uint16_t>(dominant + off(rng));
            for (size_t shift : {size_t{0}, size_t{1}}) {  // shift 1: not 16-byte aligned
                SCOPED_TRACE("p " + std::to_string(p) + " n " + std::to_string(n) + " shift " + std::to_string(shift));
                const std::span<const uint16_t> in(codes.data() + shift, n);
                const auto want = run_tokens_encode_cpu(in, dominant, alphabet, 2);
                gsz::cuda::DeviceBuffer<uint16_t> d_codes(n + 1, s), d_tokens, d_back(n, s);
                ASSERT_EQ(cudaMemcpy(d_codes.data(), codes.data(), (n + 1) * 2, cudaMemcpyHostToDevice), cudaSuccess);
                const uint64_t nt = run_tokens_encode_cuda(d_codes.data() + shift, n, dominant, alphabet, d_tokens, s);
                ASSERT_EQ(nt, want.size());
                std::vector<uint16_t> got(nt);
                ASSERT_EQ(cudaMemcpy(got.data(), d_tokens.data(), nt * 2, cudaMemcpyDeviceToHost), cudaSuccess);
                ASSERT_EQ(got, want);
                // Counted without writing: the tokens' histogram from the codes' and the runs' digits.
                RunTokenPlan plan;
                const auto token_hist = run_tokens_count_cuda(d_codes.data() + shift, n, dominant, alphabet,
                                                              histogram_cpu(in, alphabet, 2), plan, s);
                EXPECT_EQ(plan.num_tokens, want.size());
                EXPECT_EQ(token_hist, histogram_cpu(want, alphabet + kRunClasses, 2));
                // The runs' digits of every stride-th segment (auto's sample on large inputs).
                gsz::cuda::DeviceBuffer<uint64_t> d_digits(kRunClasses + 1, s);
                for (uint32_t stride : {1u, 3u, 16u}) {
                    run_digits_cuda(d_codes.data() + shift, n, dominant, alphabet, stride, d_digits.data(), s);
                    RunDigits digits{};
                    ASSERT_EQ(cudaMemcpy(digits.data(), d_digits.data(), sizeof digits, cudaMemcpyDeviceToHost),
                              cudaSuccess);
                    EXPECT_EQ(digits, run_digits_cpu(in, dominant, alphabet, stride, 2)) << "stride " << stride;
                }
                gsz::cuda::DeviceBuffer<uint32_t> d_corrupt(1, s);
                d_corrupt.zero(s);
                run_tokens_decode_cuda(d_tokens.data(), nt, dominant, alphabet, d_back.data(), n, d_corrupt.data(), s);
                std::vector<uint16_t> back(n);
                uint32_t corrupt = 1;
                ASSERT_EQ(cudaMemcpy(back.data(), d_back.data(), n * 2, cudaMemcpyDeviceToHost), cudaSuccess);
                ASSERT_EQ(cudaMemcpy(&corrupt, d_corrupt.data(), 4, cudaMemcpyDeviceToHost), cudaSuccess);
                EXPECT_EQ(corrupt, 0u);
                EXPECT_TRUE(std::equal(back.begin(), back.end(), in.begin()));
                // One code too few or too many for the tokens: corrupt, no write out of bounds
                // (compute-sanitizer checks the latter).
                for (uint64_t m : {uint64_t{n} - 1, uint64_t{n} + 1}) {
                    if (m == 0) continue;
                    gsz::cuda::DeviceBuffer<uint16_t> d_out(m, s);
                    d_corrupt.zero(s);
                    run_tokens_decode_cuda(d_tokens.data(), nt, dominant, alphabet, d_out.data(), m, d_corrupt.data(), s);
                    ASSERT_EQ(cudaMemcpy(&corrupt, d_corrupt.data(), 4, cudaMemcpyDeviceToHost), cudaSuccess);
                    EXPECT_NE(corrupt, 0u) << "expanding into " << m << " codes";
                }
            }
        }
    }
    // A token outside the token alphabet.
    const std::vector<uint16_t> bad = {dominant, static_cast<uint16_t>(alphabet + kRunClasses), 3};
    gsz::cuda::DeviceBuffer<uint16_t> d_bad(3, s), d_out(3, s);
    gsz::cuda::DeviceBuffer<uint32_t> d_corrupt(1, s);
    d_corrupt.zero(s);
    ASSERT_EQ(cudaMemcpy(d_bad.data(), bad.data(), 6, cudaMemcpyHostToDevice), cudaSuccess);
    run_tokens_decode_cuda(d_bad.data(), 3, dominant, alphabet, d_out.data(), 3, d_corrupt.data(), s);
    uint32_t corrupt = 0;
    ASSERT_EQ(cudaMemcpy(&corrupt, d_corrupt.data(), 4, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_NE(corrupt, 0u);
}

// The rANS kernels against the CPU coder: the same histogram, lane states and
// words, on aligned and unaligned code arrays, with and without levels; the
// decoder accepts and rejects exactly what the CPU decoder does.
// Every committed golden archive, of every format version (rANS lanes from
// state 2^16 before version 11, from 1 since), decodes on the GPU to the
// CPU's bytes.
TEST(CudaBackend, GoldenArchivesOfEveryVersionDecodeAsOnTheCpu) {
    REQUIRE_GPU();
    size_t archives = 0;
    for (const auto& dir : std::filesystem::directory_iterator(repo_dir() / "tests" / "golden"))
        for (const auto& file : std::filesystem::directory_iterator(dir.path())) {
            if (file.path().extension() != ".gsz") continue;
            SCOPED_TRACE(file.path().string());
            const auto archive = read_bytes(file.path());
            gsz::Context ctx;
            const auto info = ctx.inspect(archive.data(), archive.size());
            const size_t bytes = info.num_elements * (info.dtype == GSZ_DTYPE_F64 ? 8 : 4);
            std::vector<uint8_t> on_cpu(bytes), on_gpu(bytes, 0xAB);
            ctx.decompress(archive.data(), archive.size(), on_cpu.data(), bytes, GSZ_DEVICE_CPU);
            ctx.decompress(archive.data(), archive.size(), on_gpu.data(), bytes, GSZ_DEVICE_CUDA);
            EXPECT_TRUE(on_cpu == on_gpu);
            ++archives;
        }
    EXPECT_GE(archives, 200u);
}

TEST(CudaBackend, AnsKernelsMatchCpu) {
    REQUIRE_GPU();
    using namespace gsz::encode;
    cudaStream_t s = nullptr;
    for (const uint32_t radius : {2u, 512u, 32768u}) {
        for (const size_t n : {size_t{1}, size_t{1000}, size_t{4097}, size_t{1} << 20}) {
            std::mt19937_64 rng(n * 7 + radius);
            std::bernoulli_distribution zero(0.8), outlier(0.003);
            std::normal_distribution<double> noise(0, 6);
            std::vector<uint16_t> codes(n + 1);
            for (auto& c : codes) {
                int v = zero(rng) ? 0 : static_cast<int>(std::lround(noise(rng) * (radius > 100 ? 20 : 1)));
                v = std::clamp(v, 1 - static_cast<int>(radius), static_cast<int>(radius) - 1);
                c = outlier(rng) ? 0 : static_cast<uint16_t>(v + static_cast<int>(radius));
            }
            for (const uint32_t levels : {1u, 4u}) {
                AnsContextShape shape;
                shape.dims[0] = 97;
                shape.dims[1] = 13;
                shape.levels = levels;
                for (const size_t shift : {size_t{0}, size_t{1}})
                for (const uint32_t lag : {1u, 2u}) {   // contexts from the code before, or the one before that
                    SCOPED_TRACE("radius " + std::to_string(radius) + " n " + std::to_string(n) + " levels " +
                                 std::to_string(levels) + " shift " + std::to_string(shift) + " class lag " +
                                 std::to_string(lag));
                    const std::span<const uint16_t> in(codes.data() + shift, n);
                    const auto hist = ans_histogram_cpu(in, radius, shape, 2, lag);
                    gsz::cuda::DeviceBuffer<uint16_t> d_codes(n + 1, s);
                    ASSERT_EQ(cudaMemcpy(d_codes.data(), codes.data(), (n + 1) * 2, cudaMemcpyHostToDevice),
                              cudaSuccess);
                    gsz::cuda::DeviceBuffer<uint64_t> d_hist(hist.size(), s);
                    gsz::cuda::DeviceBuffer<uint32_t> d_flag(1, s);
                    d_flag.zero(s);
                    ans_histogram_cuda(d_codes.data() + shift, n, radius, shape, d_hist.data(), d_flag.data(), s, lag);
                    std::vector<uint64_t> got_hist(hist.size());
                    ASSERT_EQ(cudaMemcpy(got_hist.data(), d_hist.data(), hist.size() * 8, cudaMemcpyDeviceToHost),
                              cudaSuccess);
                    ASSERT_EQ(got_hist, hist);
                    // The sample the class lag is chosen on: every 16th chunk of 64 codes.
                    ans_histogram_cuda(d_codes.data() + shift, n, radius, shape, d_hist.data(), d_flag.data(), s, lag,
                                       kAnsLagSampleStride);
                    ASSERT_EQ(cudaMemcpy(got_hist.data(), d_hist.data(), hist.size() * 8, cudaMemcpyDeviceToHost),
                              cudaSuccess);
                    ASSERT_EQ(got_hist, ans_histogram_cpu(in, radius, shape, 2, lag, kAnsLagSampleStride));

                    const AnsTables tables = ans_build_tables(hist, levels, true, lag);
                    ASSERT_EQ(tables.class_lag, lag);
                    const uint32_t auto_lane = ans_lane_symbols(n, ans_estimated_bits(tables, hist));
                    // gsz's lane length (a multiple of 64), and lanes whose groups of eight codes are unaligned
                    // lanes from state 1 (version 11 on) and from 2^16 (the archives of versions 3-10)
                    for (const AnsLanesLayout layout : {AnsLanesLayout::packed_from_one, AnsLanesLayout::packed})
                    for (const uint32_t lane : {auto_lane, 100u, 13u}) {
                        SCOPED_TRACE("lane " + std::to_string(lane) +
                                     (layout == AnsLanesLayout::packed ? ", from 2^16" : ", from 1"));
                        const AnsStream want = ans_encode_cpu(tables, in, radius, shape, lane, 2, layout);
                        AnsDeviceStream got;
                        ans_encode_cuda(tables, d_codes.data() + shift, n, radius, shape, lane, got, s, layout);
                        ASSERT_EQ(got.start_state, want.start_state);
                        std::vector<uint32_t> state, words_per_lane;
                        std::vector<uint16_t> words;
                        gsz::cuda::copy_to_host(state, got.lane_state.data(), got.num_lanes, s);
                        gsz::cuda::copy_to_host(words_per_lane, got.lane_words.data(), got.num_lanes, s);
                        gsz::cuda::copy_to_host(words, got.words.data(), got.num_words, s);
                        ASSERT_EQ(state, want.lane_state);
                        ASSERT_EQ(words_per_lane, want.lane_words);
                        ASSERT_EQ(words, want.words);

                        // Decode, and decode with one lane's state changed: the same verdict as the CPU's.
                        for (const bool lie : {false, true}) {
                            AnsStream sent = want;
                            if (lie) sent.lane_state[sent.num_lanes() / 2] ^= 0x00F0F000u;
                            gsz::ByteWriter t, l, w;
                            ans_tables_write(tables, lane, t);
                            AnsStreamView view;
                            try {
                                ans_lanes_write(sent, l, layout);
                                ans_stream_write(sent, w);
                                view = ans_stream_read(t.bytes(), l.bytes(), w.bytes(), n, levels, layout);
                            } catch (const gsz::Error&) {
                                continue;  // a state below its floor: rejected before any decoding
                            }
                            std::vector<uint16_t> cpu(n);
                            bool cpu_ok = true;
                            try {
                                ans_decode_cpu(view, radius, shape, cpu, 2);
                            } catch (const gsz::Error&) {
                                cpu_ok = false;
                            }
                            gsz::cuda::DeviceBuffer<uint16_t> d_words(sent.words.size(), s), d_out(n, s);
                            gsz::cuda::DeviceBuffer<uint32_t> d_state(sent.num_lanes(), s);
                            gsz::cuda::DeviceBuffer<uint64_t> d_offset(view.lane_word_offset.size(), s);
                            cudaMemcpy(d_words.data(), sent.words.data(), sent.words.size() * 2, cudaMemcpyHostToDevice);
                            cudaMemcpy(d_state.data(), sent.lane_state.data(), sent.num_lanes() * 4, cudaMemcpyHostToDevice);
                            cudaMemcpy(d_offset.data(), view.lane_word_offset.data(), view.lane_word_offset.size() * 8,
                                       cudaMemcpyHostToDevice);
                            d_flag.zero(s);
                            ans_decode_cuda(tables, d_words.data(), d_state.data(), d_offset.data(), n, lane, radius,
                                            shape, view.start_state, d_out.data(), d_flag.data(), s);
                            uint32_t corrupt = 2;
                            std::vector<uint16_t> back(n);
                            ASSERT_EQ(cudaMemcpy(back.data(), d_out.data(), n * 2, cudaMemcpyDeviceToHost), cudaSuccess);
                            ASSERT_EQ(cudaMemcpy(&corrupt, d_flag.data(), 4, cudaMemcpyDeviceToHost), cudaSuccess);
                            EXPECT_EQ(corrupt == 0, cpu_ok) << (lie ? "state changed" : "as encoded");
                            if (!lie) {
                                EXPECT_TRUE(std::equal(back.begin(), back.end(), in.begin()));
                            } else if (cpu_ok) {
                                EXPECT_EQ(back, cpu);
                            }
                        }
                    }
                }
            }
        }
    }
}

// The histogram kernel on a field-sized input (2^24 codes: ~1K blocks adding
// their counts to the same bins), long runs of the zero residual at every
// level among noisy stretches, the class-lag sample, and the flag: clear for
// valid codes, set by one code outside the alphabet.
TEST(CudaBackend, AnsHistogramManyChunksAndBadCode) {
    REQUIRE_GPU();
    using namespace gsz::encode;
    cudaStream_t s = nullptr;
    const uint32_t radius = 32768;
    const size_t n = (size_t{1} << 24) + 77;
    std::mt19937_64 rng(24);
    std::uniform_int_distribution<int> span(1, 400);
    std::normal_distribution<double> noise(0, 40);
    std::vector<uint16_t> codes(n);
    for (size_t i = 0; i < n;) {  // runs of zero residuals between stretches of noise
        const size_t run = span(rng), end = std::min(n, i + run);
        const bool zeros = (i / 500) % 3 != 0;
        for (; i < end; ++i) {
            const int v = zeros ? 0 : std::clamp(static_cast<int>(std::lround(noise(rng))), 1 - int(radius), int(radius) - 1);
            codes[i] = rng() % 997 == 0 ? 0 : static_cast<uint16_t>(v + static_cast<int>(radius));
        }
    }
    gsz::cuda::DeviceBuffer<uint16_t> d_codes(n, s);
    ASSERT_EQ(cudaMemcpy(d_codes.data(), codes.data(), n * 2, cudaMemcpyHostToDevice), cudaSuccess);
    for (const uint32_t levels : {1u, 4u}) {
        AnsContextShape shape;
        shape.dims[0] = 455;
        shape.dims[1] = 455;
        shape.levels = levels;
        for (const uint32_t lag : {1u, 2u})
        for (const uint32_t stride : {1u, kAnsLagSampleStride}) {
            SCOPED_TRACE("levels " + std::to_string(levels) + " lag " + std::to_string(lag) + " stride " +
                         std::to_string(stride));
            const auto want = ans_histogram_cpu(codes, radius, shape, 2, lag, stride);
            gsz::cuda::DeviceBuffer<uint64_t> d_hist(want.size(), s);
            gsz::cuda::DeviceBuffer<uint32_t> d_flag(1, s);
            d_flag.zero(s);
            ans_histogram_cuda(d_codes.data(), n, radius, shape, d_hist.data(), d_flag.data(), s, lag, stride);
            std::vector<uint64_t> got(want.size());
            uint32_t flag = 7;
            ASSERT_EQ(cudaMemcpy(got.data(), d_hist.data(), want.size() * 8, cudaMemcpyDeviceToHost), cudaSuccess);
            ASSERT_EQ(cudaMemcpy(&flag, d_flag.data(), 4, cudaMemcpyDeviceToHost), cudaSuccess);
            EXPECT_EQ(flag, 0u);
            ASSERT_EQ(got, want);
            ASSERT_GT(want[(0 * kAnsClasses + kAnsLongRunClass) * kAnsAlphabet + kAnsZeroSymbol], 0u);
        }
    }
    // Radius 512: codes 0 .. 1023; one 1024 near the end, after valid codes.
    std::vector<uint16_t> small(size_t{1} << 22, 512);
    small[small.size() - 5] = 1024;
    ASSERT_EQ(cudaMemcpy(d_codes.data(), small.data(), small.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
    AnsContextShape shape;
    gsz::cuda::DeviceBuffer<uint64_t> d_hist(shape.num_contexts() * kAnsAlphabet, s);
    gsz::cuda::DeviceBuffer<uint32_t> d_flag(1, s);
    d_flag.zero(s);
    ans_histogram_cuda(d_codes.data(), small.size() - 6, 512, shape, d_hist.data(), d_flag.data(), s, 1);
    uint32_t flag = 7;
    ASSERT_EQ(cudaMemcpy(&flag, d_flag.data(), 4, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(flag, 0u);  // the bad code is past the counted ones
    ans_histogram_cuda(d_codes.data(), small.size(), 512, shape, d_hist.data(), d_flag.data(), s, 1);
    ASSERT_EQ(cudaMemcpy(&flag, d_flag.data(), 4, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_NE(flag, 0u);
}

// What the decoder's common path does not test (exact residuals and
// outliers take their codes without a range check) is routed to its rare
// path by the table: a stream decoded with a radius smaller than its
// residuals (exact symbols at or beyond the radius, and bucket symbols past
// it) and a stream cut short (refills past the lane's last word) are
// rejected as the CPU rejects them; a radius all residuals fit decodes as
// the CPU decodes.
// Column strips (format version 12): the three kernels walk blocks of W
// columns row by row and take the row above as context; the same counts,
// words and codes as the CPU, and the same verdict on a lying lane.
TEST(CudaBackend, AnsStripKernelsMatchCpu) {
    REQUIRE_GPU();
    using namespace gsz::encode;
    cudaStream_t s = nullptr;
    for (const auto& dims : std::vector<std::array<uint64_t, 3>>{{64, 37, 1}, {96, 41, 1}, {128, 20, 3}, {256, 300, 4}})
    for (const uint32_t radius : {2u, 512u, 32768u}) {
        const uint64_t n = dims[0] * dims[1] * dims[2];
        // Busy patches of 4 columns by 16 rows (the row above predicts them), outliers, all residual sizes.
        std::mt19937_64 rng(n * 3 + radius);
        std::bernoulli_distribution calm_nonzero(0.03), busy_nonzero(0.9), outlier(0.002), patch(0.3);
        std::normal_distribution<double> noise(0, 6);
        const uint64_t px = dims[0] / 4 + 1, rows = dims[1] * dims[2];
        std::vector<uint8_t> busy(px * (rows / 16 + 1));
        for (auto& b : busy) b = patch(rng);
        std::vector<uint16_t> codes(n + 8);
        for (uint64_t i = 0; i < codes.size(); ++i) {
            const bool b = busy[(i / dims[0] % rows) / 16 * px + i % dims[0] / 4];
            int v = (b ? busy_nonzero(rng) : calm_nonzero(rng))
                        ? static_cast<int>(std::lround(noise(rng) * (radius > 100 ? 20 : 1)))
                        : 0;
            v = std::clamp(v, 1 - static_cast<int>(radius), static_cast<int>(radius) - 1);
            codes[i] = outlier(rng) ? 0 : static_cast<uint16_t>(v + static_cast<int>(radius));
        }
        for (const uint32_t levels : {1u, 4u, kAnsMaxStripLevels}) {
            AnsContextShape shape;
            std::copy(dims.begin(), dims.end(), shape.dims);
            shape.levels = levels;
            const uint32_t strip = ans_strip_width_for(shape);
            ASSERT_NE(strip, 0u);
            const AnsContextShape striped = shape.with_strips(strip);
            for (const size_t shift : {size_t{0}, size_t{1}})   // the codes 16-byte aligned, or not
            for (const uint32_t lag : {1u, 2u}) {
                SCOPED_TRACE(std::to_string(dims[0]) + "x" + std::to_string(dims[1]) + "x" + std::to_string(dims[2]) +
                             " radius " + std::to_string(radius) + " levels " + std::to_string(levels) + " shift " +
                             std::to_string(shift) + " class lag " + std::to_string(lag));
                const std::span<const uint16_t> in(codes.data() + shift, n);
                const auto hist = ans_histogram_cpu(in, radius, striped, 2, lag);
                gsz::cuda::DeviceBuffer<uint16_t> d_codes(codes.size(), s);
                ASSERT_EQ(cudaMemcpy(d_codes.data(), codes.data(), codes.size() * 2, cudaMemcpyHostToDevice),
                          cudaSuccess);
                gsz::cuda::DeviceBuffer<uint64_t> d_hist(hist.size(), s);
                gsz::cuda::DeviceBuffer<uint32_t> d_flag(1, s);
                d_flag.zero(s);
                std::vector<uint64_t> got_hist(hist.size());
                for (const uint32_t stride : {1u, kAnsLagSampleStride}) {
                    ans_histogram_cuda(d_codes.data() + shift, n, radius, striped, d_hist.data(), d_flag.data(), s,
                                       lag, stride);
                    ASSERT_EQ(cudaMemcpy(got_hist.data(), d_hist.data(), hist.size() * 8, cudaMemcpyDeviceToHost),
                              cudaSuccess);
                    ASSERT_EQ(got_hist, ans_histogram_cpu(in, radius, striped, 2, lag, stride)) << "stride " << stride;
                }
                const AnsTables tables = ans_build_tables(hist, levels, true, lag, strip);
                const uint32_t auto_lane = ans_lane_symbols(n, ans_estimated_bits(tables, hist));
                for (const uint32_t lane : {auto_lane, 64u, 1000u, 8u}) {
                    SCOPED_TRACE("lane " + std::to_string(lane));
                    const AnsStream want = ans_encode_cpu(tables, in, radius, shape, lane, 2);
                    AnsDeviceStream got;
                    ans_encode_cuda(tables, d_codes.data() + shift, n, radius, shape, lane, got, s);
                    std::vector<uint32_t> state, words_per_lane;
                    std::vector<uint16_t> words;
                    gsz::cuda::copy_to_host(state, got.lane_state.data(), got.num_lanes, s);
                    gsz::cuda::copy_to_host(words_per_lane, got.lane_words.data(), got.num_lanes, s);
                    gsz::cuda::copy_to_host(words, got.words.data(), got.num_words, s);
                    ASSERT_EQ(state, want.lane_state);
                    ASSERT_EQ(words_per_lane, want.lane_words);
                    ASSERT_EQ(words, want.words);
                    for (const bool lie : {false, true}) {
                        AnsStream sent = want;
                        if (lie) sent.lane_state[sent.num_lanes() / 2] ^= 0x00F0F000u;
                        gsz::ByteWriter t, l, w;
                        ans_tables_write(tables, lane, t);
                        AnsStreamView view;
                        try {
                            ans_lanes_write(sent, l);
                            ans_stream_write(sent, w);
                            view = ans_stream_read(t.bytes(), l.bytes(), w.bytes(), n, shape,
                                                   AnsLanesLayout::packed_from_one);
                        } catch (const gsz::Error&) {
                            continue;  // a state below its floor: rejected before any decoding
                        }
                        ASSERT_EQ(view.tables.strip_width, strip);
                        std::vector<uint16_t> cpu(n);
                        bool cpu_ok = true;
                        try {
                            ans_decode_cpu(view, radius, shape, cpu, 2);
                        } catch (const gsz::Error&) {
                            cpu_ok = false;
                        }
                        gsz::cuda::DeviceBuffer<uint16_t> d_words(sent.words.size(), s), d_out(n + 1, s);
                        gsz::cuda::DeviceBuffer<uint32_t> d_state(sent.num_lanes(), s);
                        gsz::cuda::DeviceBuffer<uint64_t> d_offset(view.lane_word_offset.size(), s);
                        cudaMemcpy(d_words.data(), sent.words.data(), sent.words.size() * 2, cudaMemcpyHostToDevice);
                        cudaMemcpy(d_state.data(), sent.lane_state.data(), sent.num_lanes() * 4, cudaMemcpyHostToDevice);
                        cudaMemcpy(d_offset.data(), view.lane_word_offset.data(), view.lane_word_offset.size() * 8,
                                   cudaMemcpyHostToDevice);
                        d_flag.zero(s);
                        ans_decode_cuda(view.tables, d_words.data(), d_state.data(), d_offset.data(), n, lane, radius,
                                        shape, view.start_state, d_out.data() + shift, d_flag.data(), s);
                        uint32_t corrupt = 2;
                        std::vector<uint16_t> back(n);
                        ASSERT_EQ(cudaMemcpy(back.data(), d_out.data() + shift, n * 2, cudaMemcpyDeviceToHost),
                                  cudaSuccess);
                        ASSERT_EQ(cudaMemcpy(&corrupt, d_flag.data(), 4, cudaMemcpyDeviceToHost), cudaSuccess);
                        EXPECT_EQ(corrupt == 0, cpu_ok) << (lie ? "state changed" : "as encoded");
                        if (!lie) {
                            EXPECT_TRUE(std::equal(back.begin(), back.end(), in.begin()));
                        }
                    }
                }
            }
        }
    }
}

TEST(CudaBackend, AnsDecoderRejectsWhatTheCpuRejects) {
    REQUIRE_GPU();
    using namespace gsz::encode;
    cudaStream_t s = nullptr;
    const size_t n = 20000;
    for (const int scale : {1, 40}) {  // residuals of a few units (exact symbols), or of tens (buckets)
        std::mt19937_64 rng(77 + scale);
        std::normal_distribution<double> noise(0, 3);
        std::vector<uint16_t> codes(n);
        for (auto& c : codes) c = static_cast<uint16_t>(512 + std::clamp(static_cast<int>(std::lround(noise(rng) * scale)), -511, 511));
        AnsContextShape shape;
        const auto hist = ans_histogram_cpu(codes, 512, shape, 2, 1);
        const AnsTables tables = ans_build_tables(hist, 1, true, 1);
        const uint32_t lane = 1024;
        gsz::cuda::DeviceBuffer<uint16_t> d_codes(n, s);
        ASSERT_EQ(cudaMemcpy(d_codes.data(), codes.data(), n * 2, cudaMemcpyHostToDevice), cudaSuccess);
        for (const AnsLanesLayout layout : {AnsLanesLayout::packed_from_one, AnsLanesLayout::packed})
        for (const uint32_t radius : {512u, 3u, 20u}) {
            const AnsStream stream = ans_encode_cpu(tables, codes, 512, shape, lane, 2, layout);
            for (const bool cut : {false, true}) {
                SCOPED_TRACE("scale " + std::to_string(scale) + " radius " + std::to_string(radius) +
                             (cut ? " cut" : "") + (layout == AnsLanesLayout::packed ? ", from 2^16" : ", from 1"));
                AnsStream sent = stream;
                if (cut) {  // the first lane loses its last word: the next lane's first becomes its
                    ASSERT_GT(sent.lane_words[0], 0u);
                    --sent.lane_words[0];
                    ++sent.lane_words[1];
                }
                gsz::ByteWriter t, l, w;
                ans_tables_write(tables, lane, t);
                ans_lanes_write(sent, l, layout);
                ans_stream_write(sent, w);
                const AnsStreamView view = ans_stream_read(t.bytes(), l.bytes(), w.bytes(), n, 1, layout);
                std::vector<uint16_t> cpu(n);
                bool cpu_ok = true;
                try {
                    ans_decode_cpu(view, radius, shape, cpu, 2);
                } catch (const gsz::Error&) {
                    cpu_ok = false;
                }
                int largest = 0;  // the largest residual's magnitude
                for (const uint16_t c : codes) largest = std::max(largest, std::abs(int(c) - 512));
                EXPECT_EQ(cpu_ok, !cut && largest < int(radius));
                if (radius == 512 && !cut) {
                    EXPECT_EQ(cpu, codes);
                }
                gsz::cuda::DeviceBuffer<uint16_t> d_words(sent.words.size(), s), d_out(n, s);
                gsz::cuda::DeviceBuffer<uint32_t> d_state(sent.num_lanes(), s), d_flag(1, s);
                gsz::cuda::DeviceBuffer<uint64_t> d_offset(view.lane_word_offset.size(), s);
                cudaMemcpy(d_words.data(), sent.words.data(), sent.words.size() * 2, cudaMemcpyHostToDevice);
                cudaMemcpy(d_state.data(), sent.lane_state.data(), sent.num_lanes() * 4, cudaMemcpyHostToDevice);
                cudaMemcpy(d_offset.data(), view.lane_word_offset.data(), view.lane_word_offset.size() * 8,
                           cudaMemcpyHostToDevice);
                d_flag.zero(s);
                ans_decode_cuda(tables, d_words.data(), d_state.data(), d_offset.data(), n, lane, radius, shape,
                                view.start_state, d_out.data(), d_flag.data(), s);
                uint32_t corrupt = 2;
                std::vector<uint16_t> back(n);
                ASSERT_EQ(cudaMemcpy(back.data(), d_out.data(), n * 2, cudaMemcpyDeviceToHost), cudaSuccess);
                ASSERT_EQ(cudaMemcpy(&corrupt, d_flag.data(), 4, cudaMemcpyDeviceToHost), cudaSuccess);
                EXPECT_EQ(corrupt == 0, cpu_ok);
                if (cpu_ok) {
                    EXPECT_EQ(back, cpu);
                }
            }
        }
    }
}

}  // namespace
