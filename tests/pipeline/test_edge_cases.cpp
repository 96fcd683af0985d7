// Edge cases of the compress/decompress round trip through the C++ wrapper.
#include "test_util.hpp"

#include "pipeline/bench.hpp"

#include <limits>
#include <random>

using namespace gsz::test;

namespace {

template <class T>
std::vector<T> random_walk(size_t n, uint32_t seed, double step = 1.0) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> d(0.0, step);
    std::vector<T> v(n);
    double x = 0;
    for (auto& e : v) e = static_cast<T>(x += d(rng));
    return v;
}

template <class T>
struct RoundTrip {
    std::vector<uint8_t> archive;
    gsz_archive_info info;
    std::vector<T> dec;
    BoundReport report;
};

template <class T>
RoundTrip<T> roundtrip(const std::vector<T>& data, const std::vector<uint64_t>& dims, gsz_error_mode mode,
                       double eb, uint32_t radius = 512) {
    auto p = make_params(dtype_of<T>(), dims, mode, eb);
    p.radius = radius;
    gsz::Context ctx;
    RoundTrip<T> r;
    r.archive = ctx.compress(p, data.data());
    r.info = ctx.inspect(r.archive.data(), r.archive.size());
    r.dec = ctx.decompress<T>(r.archive, GSZ_DEVICE_CPU);
    r.report = check_bound(data, r.dec, r.info.error_bound_abs);
    EXPECT_EQ(r.report.violations, 0u) << "first bad " << r.report.first_bad;
    EXPECT_EQ(r.report.nonfinite_changed, 0u) << "first bad " << r.report.first_bad;
    return r;
}

template <class T>
class EdgeCases : public testing::Test {};
using Types = testing::Types<float, double>;
TYPED_TEST_SUITE(EdgeCases, Types);

TYPED_TEST(EdgeCases, SingleElement) {
    using T = TypeParam;
    for (T v : {T(0), T(1.5), T(-3e7), std::numeric_limits<T>::max()}) {
        roundtrip<T>({v}, {1}, GSZ_ERROR_ABS, 1e-3);
        roundtrip<T>({v}, {1}, GSZ_ERROR_REL, 1e-3);
    }
}

TYPED_TEST(EdgeCases, AllConstant) {
    using T = TypeParam;
    const std::vector<T> v(10000, T(42.25));
    auto rel = roundtrip<T>(v, {100, 100}, GSZ_ERROR_REL, 1e-3);  // range 0: lossless
    EXPECT_EQ(rel.info.error_bound_abs, 0.0);
    EXPECT_EQ(rel.dec, v);
    EXPECT_GT(static_cast<double>(v.size() * sizeof(T)) / rel.archive.size(), 50.0);
    auto abs = roundtrip<T>(v, {100, 100}, GSZ_ERROR_ABS, 1e-3);
    EXPECT_GT(static_cast<double>(v.size() * sizeof(T)) / abs.archive.size(), 20.0);
}

TYPED_TEST(EdgeCases, AllNaN) {
    using T = TypeParam;
    const std::vector<T> v(4096, std::numeric_limits<T>::quiet_NaN());
    roundtrip<T>(v, {16, 16, 16}, GSZ_ERROR_REL, 1e-2);
    roundtrip<T>(v, {16, 16, 16}, GSZ_ERROR_ABS, 1e-2);
}

TYPED_TEST(EdgeCases, NaNAndInfInjected) {
    using T = TypeParam;
    auto v = random_walk<T>(40 * 30 * 20, 7);
    const T specials[] = {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                          -std::numeric_limits<T>::infinity(), -std::numeric_limits<T>::quiet_NaN()};
    // chunk corners, chunk edges, the last element, and a run
    for (size_t i : {size_t{0}, size_t{31}, size_t{32}, size_t{40 * 8}, size_t{1234}, v.size() - 1})
        v[i] = specials[i % 4];
    for (size_t i = 5000; i < 5100; ++i) v[i] = specials[i % 4];
    // a NaN with a payload must keep its payload
    if constexpr (sizeof(T) == 4) {
        uint32_t bits = 0x7fc12345u;
        std::memcpy(&v[777], &bits, 4);
    } else {
        uint64_t bits = 0x7ff8000000abcdefull;
        std::memcpy(&v[777], &bits, 8);
    }
    for (double eb : {1e-2, 1e-4}) {
        roundtrip<T>(v, {40, 30, 20}, GSZ_ERROR_REL, eb);
        roundtrip<T>(v, {40 * 30 * 20}, GSZ_ERROR_ABS, eb);
    }
}

TYPED_TEST(EdgeCases, DimsNotMultiplesOfChunk) {
    using T = TypeParam;
    for (auto dims : std::vector<std::vector<uint64_t>>{{33, 17, 9}, {1025}, {33, 31}, {31, 9, 7, 3}, {1, 1, 1, 77}}) {
        uint64_t n = 1;
        for (auto d : dims) n *= d;
        const auto v = random_walk<T>(n, 11, 0.3);
        roundtrip<T>(v, dims, GSZ_ERROR_REL, 1e-3);
    }
}

TYPED_TEST(EdgeCases, DimensionOfSizeOne) {
    using T = TypeParam;
    const auto v = random_walk<T>(91 * 91, 3);
    const auto a = roundtrip<T>(v, {91, 1, 91}, GSZ_ERROR_REL, 1e-3);
    const auto b = roundtrip<T>(v, {91, 91}, GSZ_ERROR_REL, 1e-3);
    EXPECT_EQ(a.archive.size(), b.archive.size());  // the size-1 dim is squeezed out
    roundtrip<T>(v, {1, 91 * 91}, GSZ_ERROR_ABS, 1e-2);
}

TYPED_TEST(EdgeCases, BoundLargerThanRange) {
    using T = TypeParam;
    const auto v = random_walk<T>(100000, 5);
    // Every value is one code: about one bit per value.
    const auto r = roundtrip<T>(v, {100000}, GSZ_ERROR_REL, 3.0);
    EXPECT_GT(static_cast<double>(v.size() * sizeof(T) * 8) / r.archive.size(), 0.9 * 8 * sizeof(T));
    roundtrip<T>(v, {100000}, GSZ_ERROR_ABS, 1e6);
    roundtrip<T>(v, {100000}, GSZ_ERROR_ABS, 1e300);
}

TYPED_TEST(EdgeCases, ZeroBoundIsLossless) {
    using T = TypeParam;
    auto v = random_walk<T>(3000, 9);
    v[10] = -T(0.0);
    const auto r = roundtrip<T>(v, {3000}, GSZ_ERROR_ABS, 0.0);
    EXPECT_EQ(r.info.pipeline, GSZ_PIPELINE_STORE);
    EXPECT_EQ(0, std::memcmp(r.dec.data(), v.data(), v.size() * sizeof(T)));
}

TYPED_TEST(EdgeCases, LatticeLimitAndHugeValues) {
    using T = TypeParam;
    // |x| / (2 eb) beyond 2^23 (f32) / 2^52 (f64) must become exact outliers.
    std::vector<T> v = random_walk<T>(4096, 13);
    for (size_t i = 0; i < v.size(); i += 97) v[i] = static_cast<T>(i % 2 ? 1e30 : -3.4e38);
    v[100] = std::numeric_limits<T>::denorm_min();
    v[101] = std::numeric_limits<T>::min();
    v[102] = std::numeric_limits<T>::lowest();
    roundtrip<T>(v, {64, 64}, GSZ_ERROR_ABS, 1e-3);
    roundtrip<T>(v, {64, 64}, GSZ_ERROR_ABS, 1e-30);
    const auto r = roundtrip<T>(v, {64, 64}, GSZ_ERROR_ABS, 1e-300);
    (void)r;
}

TYPED_TEST(EdgeCases, BoundNearUlpForcesRoundingChecks) {
    using T = TypeParam;
    // eb comparable to ulp(x): reconstruction rounding to T would break a
    // naive bound; those points must come back exact.
    std::vector<T> v(20000);
    std::mt19937 rng(17);
    std::uniform_real_distribution<double> d(1000.0, 1001.0);
    for (auto& e : v) e = static_cast<T>(d(rng));
    const double ulp = static_cast<double>(std::nextafter(T(1000), T(2000)) - T(1000));
    for (double k : {0.3, 0.5, 0.75, 1.0, 3.0}) roundtrip<T>(v, {200, 100}, GSZ_ERROR_ABS, k * ulp);
}

TYPED_TEST(EdgeCases, RadiusExtremes) {
    using T = TypeParam;
    const auto v = random_walk<T>(64 * 64, 21, 5.0);
    roundtrip<T>(v, {64, 64}, GSZ_ERROR_ABS, 0.1, 1);
    roundtrip<T>(v, {64, 64}, GSZ_ERROR_ABS, 1e-4, 32768);
}

TYPED_TEST(EdgeCases, CompressingTwiceGivesTheSameBytes) {
    using T = TypeParam;
    const auto v = random_walk<T>(50 * 40 * 3, 23);
    const auto a = roundtrip<T>(v, {50, 40, 3}, GSZ_ERROR_REL, 1e-3);
    const auto b = roundtrip<T>(v, {50, 40, 3}, GSZ_ERROR_REL, 1e-3);
    EXPECT_EQ(a.archive, b.archive);
}

TEST(EdgeCases, Float64TinyRelativeBound) {
    // eb = 1e-12 of the range on a real-looking f64 field.
    // Residuals this fine exceed any radius, so every value is an exact
    // outlier and the store fallback wins; the bound (checked in roundtrip)
    // holds either way, and the archive never grows past the input.
    auto v = random_walk<double>(384 * 384, 29, 1e-3);
    const auto r = roundtrip<double>(v, {384, 384}, GSZ_ERROR_REL, 1e-12);
    EXPECT_LE(r.archive.size(), v.size() * sizeof(double) + 4096);
    // A smooth field at the same relative bound stays lossy.
    for (size_t i = 0; i < v.size(); ++i) v[i] = 1e-9 * static_cast<double>(i % 384);  // a ramp along x
    const auto smooth = roundtrip<double>(v, {384, 384}, GSZ_ERROR_REL, 1e-12);
    EXPECT_EQ(smooth.info.pipeline, GSZ_PIPELINE_LORENZO);
    EXPECT_GT(smooth.info.error_bound_abs, 0.0);
}

TEST(Api, RejectsBadParameters) {
    gsz::Context ctx;
    const std::vector<float> v(16, 1.0f);
    auto p = make_params(GSZ_DTYPE_F32, {16}, GSZ_ERROR_ABS, 1e-3);
    auto expect_status = [&](gsz_params q, gsz_status want) {
        size_t cap = 1 << 20, got = 0;
        std::vector<uint8_t> out(cap);
        EXPECT_EQ(gsz_compress(ctx.get(), &q, v.data(), out.data(), cap, &got), want);
        EXPECT_STRNE(gsz_ctx_last_error(ctx.get()), "");
    };
    auto q = p; q.rank = 0; expect_status(q, GSZ_STATUS_INVALID_ARGUMENT);
    q = p; q.rank = 5; expect_status(q, GSZ_STATUS_INVALID_ARGUMENT);
    q = p; q.dims[0] = 0; expect_status(q, GSZ_STATUS_INVALID_ARGUMENT);
    q = p; q.error_bound = -1; expect_status(q, GSZ_STATUS_INVALID_ARGUMENT);
    q = p; q.error_bound = std::numeric_limits<double>::infinity(); expect_status(q, GSZ_STATUS_INVALID_ARGUMENT);
    q = p; q.radius = 0; expect_status(q, GSZ_STATUS_INVALID_ARGUMENT);
    q = p; q.radius = 40000; expect_status(q, GSZ_STATUS_INVALID_ARGUMENT);
    q = p; q.rank = 4; q.dims[0] = q.dims[1] = q.dims[2] = q.dims[3] = uint64_t{1} << 20;
    expect_status(q, GSZ_STATUS_INVALID_ARGUMENT);
    q = p; q.device = GSZ_DEVICE_CUDA;
    if (!GSZ_HAVE_CUDA) expect_status(q, GSZ_STATUS_NO_DEVICE);
}

TEST(Api, BufferTooSmallAndNulls) {
    gsz::Context ctx;
    const auto v = random_walk<float>(1000, 1);
    const auto p = make_params(GSZ_DTYPE_F32, {1000}, GSZ_ERROR_REL, 1e-3);
    std::vector<uint8_t> out(8);
    size_t got = 0;
    EXPECT_EQ(gsz_compress(ctx.get(), &p, v.data(), out.data(), out.size(), &got), GSZ_STATUS_BUFFER_TOO_SMALL);
    EXPECT_EQ(gsz_compress(ctx.get(), &p, nullptr, out.data(), out.size(), &got), GSZ_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(gsz_compress(nullptr, &p, v.data(), out.data(), out.size(), &got), GSZ_STATUS_INVALID_ARGUMENT);
    const auto archive = ctx.compress(p, v.data());
    std::vector<float> small(999);
    EXPECT_EQ(gsz_decompress(ctx.get(), archive.data(), archive.size(), small.data(), small.size() * 4,
                             GSZ_DEVICE_CPU, 0),
              GSZ_STATUS_BUFFER_TOO_SMALL);
    size_t bound = 0;
    ASSERT_EQ(gsz_compress_bound(&p, &bound), GSZ_STATUS_OK);
    EXPECT_GE(bound, archive.size());
    EXPECT_STREQ(gsz_status_string(GSZ_STATUS_CORRUPT), "corrupt archive");
    gsz_ctx_free(nullptr);
}

TEST(Api, IncompressibleDataFallsBackToStore) {
    // White noise at a tiny bound: the lossy archive would exceed the input.
    std::vector<float> v(20000);
    std::mt19937 rng(31);
    for (auto& e : v) e = std::uniform_real_distribution<float>(-1e30f, 1e30f)(rng);
    const auto r = roundtrip<float>(v, {20000}, GSZ_ERROR_ABS, 1e-3);
    EXPECT_LE(r.archive.size(), v.size() * 4 + 4096);
}

// Runs in every build (the GPU suite covers machines with a GPU).
TEST(Api, ExplicitCudaWithoutGpuFailsClearly) {
    std::string why;
    if (gsz::pipeline::cuda_backend_available(&why)) GTEST_SKIP() << "a GPU is present";
    const std::vector<float> v(100, 1.0f);
    auto p = make_params(GSZ_DTYPE_F32, {100}, GSZ_ERROR_ABS, 0.1);
    p.device = GSZ_DEVICE_CUDA;
    gsz::Context ctx;
    std::vector<uint8_t> out(1 << 16);
    size_t size = 0;
    EXPECT_EQ(gsz_compress(ctx.get(), &p, v.data(), out.data(), out.size(), &size), GSZ_STATUS_NO_DEVICE);
    p.device = GSZ_DEVICE_AUTO;  // falls back to the CPU
    EXPECT_EQ(gsz_compress(ctx.get(), &p, v.data(), out.data(), out.size(), &size), GSZ_STATUS_OK);
}

}  // namespace
