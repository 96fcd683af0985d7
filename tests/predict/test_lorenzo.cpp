// The Lorenzo stage alone: geometry, per-element math, encode/decode.
#include "predict/lorenzo/lorenzo.hpp"
#include "runtime/status.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

using namespace gsz::predict;

namespace {

TEST(LorenzoLayout, SqueezesAndMerges) {
    const uint64_t d3[] = {91, 1, 91};
    auto L = lorenzo_layout(3, d3);
    EXPECT_EQ(L.rank, 2u);
    EXPECT_EQ(L.dims[0], 91u);
    EXPECT_EQ(L.dims[1], 91u);
    const uint64_t d4[] = {180, 90, 19, 12};
    L = lorenzo_layout(4, d4);
    EXPECT_EQ(L.rank, 3u);
    EXPECT_EQ(L.dims[2], 19u * 12u);
    EXPECT_EQ(L.chunk[0], 32u);
    EXPECT_EQ(L.chunk[1], 8u);
    const uint64_t d1[] = {1, 1, 1, 1};
    L = lorenzo_layout(4, d1);
    EXPECT_EQ(L.rank, 1u);
    EXPECT_EQ(L.num_elements, 1u);
}

TEST(LorenzoLayout, StreamOrderCoversEveryElementOnce) {
    for (auto dims : std::vector<std::vector<uint64_t>>{{70, 19, 17}, {33, 65}, {3000}, {32, 8, 8}, {5, 3, 2}}) {
        const auto L = lorenzo_layout(static_cast<uint32_t>(dims.size()), dims.data());
        std::vector<int> seen(L.num_elements, 0);
        uint64_t expected_offset = 0;
        for (uint64_t c = 0; c < L.num_chunks; ++c) {
            const auto box = L.chunk_box(c);
            EXPECT_EQ(box.stream_offset, expected_offset) << "chunk " << c;
            expected_offset += box.size();
            for (uint32_t z = 0; z < box.extent[2]; ++z)
                for (uint32_t y = 0; y < box.extent[1]; ++y)
                    for (uint32_t x = 0; x < box.extent[0]; ++x)
                        ++seen[(box.origin[0] + x) +
                               L.dims[0] * ((box.origin[1] + y) + L.dims[1] * (box.origin[2] + z))];
        }
        EXPECT_EQ(expected_offset, L.num_elements);
        for (int s : seen) ASSERT_EQ(s, 1);
    }
}

TEST(LorenzoLayout, FromArchiveRejectsBadGeometry) {
    const uint64_t dims[] = {100, 50, 1};
    const uint32_t good[] = {32, 32, 1};
    EXPECT_NO_THROW(lorenzo_layout_from(2, dims, good, 5000));
    const uint32_t zero[] = {0, 32, 1};
    EXPECT_THROW(lorenzo_layout_from(2, dims, zero, 5000), gsz::Error);
    const uint32_t huge[] = {65536, 65536, 1};
    EXPECT_THROW(lorenzo_layout_from(2, dims, huge, 5000), gsz::Error);
    const uint32_t unused[] = {32, 32, 2};
    EXPECT_THROW(lorenzo_layout_from(2, dims, unused, 5000), gsz::Error);
    EXPECT_THROW(lorenzo_layout_from(2, dims, good, 5001), gsz::Error);
    EXPECT_THROW(lorenzo_layout_from(0, dims, good, 5000), gsz::Error);
}

TEST(LorenzoMath, LatticeAndBound) {
    const auto p = QuantParams::from_bound(0.5, 512);  // lattice step 1
    int64_t q = 0;
    EXPECT_TRUE(quantize(2.4f, p, q));
    EXPECT_EQ(q, 2);
    EXPECT_TRUE(quantize(2.5f, p, q));  // ties to even, |2.5 - 2| = 0.5 <= eb
    EXPECT_EQ(q, 2);
    EXPECT_TRUE(quantize(-3.5, p, q));
    EXPECT_EQ(q, -4);
    EXPECT_FALSE(lattice_of(std::numeric_limits<float>::quiet_NaN(), p.r, q));
    EXPECT_EQ(q, 0);
    EXPECT_FALSE(lattice_of(std::numeric_limits<float>::infinity(), p.r, q));
    EXPECT_FALSE(lattice_of(9e6f, p.r, q));          // beyond 2^23 for f32
    EXPECT_TRUE(lattice_of(9e6, p.r, q));            // fine for f64
    EXPECT_EQ(lorenzo_code(0, 512), 512);
    EXPECT_EQ(lorenzo_code(-511, 512), 1);
    EXPECT_EQ(lorenzo_code(511, 512), 1023);
    EXPECT_EQ(lorenzo_code(512, 512), 0);
    EXPECT_EQ(lorenzo_code(-512, 512), 0);
    EXPECT_EQ(lorenzo_code(32767, 32768), 65535);
    // The 32-bit form (float lattices) agrees with the 64-bit one.
    for (int32_t radius : {1, 2, 512, 32768})
        for (int32_t delta : {-(1 << 26), -70000, -32768, -32767, -513, -512, -511, -1, 0, 1, 511, 512, 513, 32767,
                              32768, 70000, (1 << 26)})
            EXPECT_EQ(lorenzo_code(delta, radius), lorenzo_code(int64_t{delta}, int64_t{radius}))
                << delta << " " << radius;
}

TEST(LorenzoMath, ReconstructionRoundingIsCaught) {
    // x just off the lattice with eb far below ulp(x): T(q*2eb) cannot be
    // within eb, and quantize() must say so.
    const auto p = QuantParams::from_bound(1e-6, 512);
    int64_t q = 0;
    const float x = 1000.0f + 0.00006103515625f;  // 1 ulp above 1000
    EXPECT_FALSE(quantize(x, p, q) && std::fabs(double(lattice_value<float>(q, p.ebx2)) - x) > p.eb);
}

// The float shortcut must decide exactly as the double path wherever it
// decides at all: same lattice value, and never "within the bound" for a
// value the double check calls an outlier.  Values one ulp either side of
// half-lattice points are where a wrong rounding would show.
TEST(LorenzoMath, FloatShortcutAgreesWithDoublePath) {
    std::mt19937_64 rng(7);
    uint64_t taken = 0, total = 0;
    for (double eb : {1e-1, 3.3e-3, 1e-4, 7.77e-6, 1e-2, 0.5, 12.0, 1e-7}) {
        const auto p = QuantParams::from_bound(eb, 512);
        std::uniform_real_distribution<double> u(-16384 * 2 * eb, 16384 * 2 * eb);
        for (int i = 0; i < 300000; ++i) {
            float x = static_cast<float>(u(rng));
            if (i % 3 == 0) {
                const auto k = static_cast<int64_t>(u(rng) / p.ebx2);
                x = std::nextafter(static_cast<float>((static_cast<double>(k) + 0.5) * p.ebx2), (i & 1) ? 1e30f : -1e30f);
            }
            int64_t q_double = 0;
            const bool ok_double = quantize_double(x, p, q_double);
            int32_t q_float = 0;
            ++total;
            if (!lattice_of_float(x, p, q_float)) continue;
            ++taken;
            ASSERT_EQ(q_float, q_double) << "x " << x << " eb " << eb;
            ASSERT_TRUE(ok_double) << "x " << x << " eb " << eb;
        }
    }
    EXPECT_GT(taken, total / 2);  // the shortcut is used (not merely never wrong)
    // Off for non-finite values and for bounds whose reciprocal is no normal float.
    int32_t q = 0;
    const auto p = QuantParams::from_bound(0.5, 512);
    EXPECT_FALSE(lattice_of_float(std::numeric_limits<float>::quiet_NaN(), p, q));
    EXPECT_FALSE(lattice_of_float(std::numeric_limits<float>::infinity(), p, q));
    EXPECT_FALSE(lattice_of_float(20000.0f, p, q));
    EXPECT_TRUE(lattice_of_float(-2.4f, p, q));
    EXPECT_EQ(q, -2);
    EXPECT_FALSE(lattice_of_float(1e-30f, QuantParams::from_bound(1e-45, 512), q));
    EXPECT_FALSE(lattice_of_float(1e30f, QuantParams::from_bound(1e39, 512), q));
}

template <class T>
void encode_decode(const std::vector<uint64_t>& dims, double eb, int threads) {
    uint64_t n = 1;
    for (auto d : dims) n *= d;
    std::vector<T> data(n);
    std::mt19937 rng(42);
    double acc = 0;
    for (auto& v : data) v = static_cast<T>(acc += std::normal_distribution<double>(0, 1)(rng));
    const auto L = lorenzo_layout(static_cast<uint32_t>(dims.size()), dims.data());
    const auto p = QuantParams::from_bound(eb, 512);
    LorenzoCodes<T> codes;
    lorenzo_encode_cpu(data.data(), L, p, codes, threads);
    ASSERT_EQ(codes.codes.size(), n);
    size_t zeros = 0;
    for (auto c : codes.codes) zeros += c == 0;
    EXPECT_EQ(zeros, codes.outliers.size());
    std::vector<T> out(n, T(-12345));
    lorenzo_decode_cpu<T>(codes.codes, codes.outliers, L, p, out.data(), threads);
    for (uint64_t i = 0; i < n; ++i)
        ASSERT_LE(std::fabs(double(out[i]) - double(data[i])), eb) << "element " << i;

    // One outlier too many or too few is corruption, not silent garbage.
    auto fewer = codes.outliers;
    if (!fewer.empty()) {
        fewer.pop_back();
        EXPECT_THROW(lorenzo_decode_cpu<T>(codes.codes, fewer, L, p, out.data(), threads), gsz::Error);
    }
}

TEST(LorenzoCpu, RoundTripAllRanks) {
    for (int threads : {1, 3}) {
        encode_decode<float>({5000}, 0.01, threads);
        encode_decode<float>({77, 45}, 0.01, threads);
        encode_decode<double>({40, 20, 19}, 0.001, threads);
        encode_decode<double>({1, 3, 1, 700}, 0.1, threads);
        encode_decode<double>({64, 64}, 1e-12, threads);  // every residual out of range
    }
}

}  // namespace
