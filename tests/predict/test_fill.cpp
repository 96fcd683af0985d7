// Fill values (predict/fill/fill_mask.hpp): detection, the mask's residual
// and its section, and the decoders' checks.
#include "predict/fill/fill_mask.hpp"
#include "runtime/status.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

namespace {

using namespace gsz::predict;

// A field of `dims` whose points where `land` says hold `fill`, else values 0..30.
std::vector<float> field(const uint64_t* dims, float fill, const std::function<bool(uint64_t, uint64_t, uint64_t)>& land) {
    std::vector<float> v(dims[0] * dims[1] * dims[2]);
    for (uint64_t z = 0; z < dims[2]; ++z)
        for (uint64_t y = 0; y < dims[1]; ++y)
            for (uint64_t x = 0; x < dims[0]; ++x) {
                const uint64_t i = (z * dims[1] + y) * dims[0] + x;
                v[i] = land(x, y, z) ? fill : static_cast<float>(15 + 15 * std::sin(0.1 * double(i)));
            }
    return v;
}

gsz_status status_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const gsz::Error& e) {
        return e.status();
    }
    return GSZ_STATUS_OK;
}

}  // namespace

// The mask comes back from its residual on shapes of every rank, with land
// that is constant along z (few ones), random (many), none and everywhere.
TEST(FillMask, ResidualRoundTrips) {
    std::mt19937 rng(7);
    const uint64_t shapes[][3] = {{1, 1, 1}, {17, 1, 1}, {1, 9, 1}, {13, 11, 1}, {31, 7, 5}, {8, 8, 8}, {1, 1, 40}};
    for (const auto& dims : shapes) {
        const auto disc = [&](uint64_t x, uint64_t y, uint64_t) {
            return (double(x) - 6) * (double(x) - 6) + (double(y) - 4) * (double(y) - 4) < 9;
        };
        const std::vector<std::function<bool(uint64_t, uint64_t, uint64_t)>> lands = {
            disc, [&](uint64_t, uint64_t, uint64_t) { return rng() % 3 == 0; },
            [](uint64_t, uint64_t, uint64_t) { return false; }, [](uint64_t, uint64_t, uint64_t) { return true; }};
        for (size_t k = 0; k < lands.size(); ++k) {
            SCOPED_TRACE(testing::Message() << dims[0] << "x" << dims[1] << "x" << dims[2] << " land " << k);
            const auto v = field(dims, -1e34f, lands[k]);
            const FillValue fill{true, fill_bits_of(-1e34f), 15.0};
            const FillMask mask = fill_mask_encode_cpu(v.data(), dims, fill, 2);
            uint64_t points = 0;
            for (float x : v) points += x == -1e34f;
            EXPECT_EQ(mask.points, points);
            const std::vector<uint8_t> bytes = fill_mask_write(mask);
            const FillMask back = fill_mask_read(bytes, v.size());
            EXPECT_EQ(back.points, mask.points);
            EXPECT_EQ(back.residual, mask.residual);
            const std::vector<uint8_t> m = fill_mask_expand_cpu(back, dims, 3);
            for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(m[i], v[i] == -1e34f ? 1 : 0) << i;
            std::vector<float> out(v.size(), 1.0f);
            fill_mask_apply_cpu(back, dims, fill, out.data(), 1);
            for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(out[i], v[i] == -1e34f ? -1e34f : 1.0f) << i;
        }
    }
    // A mask constant along z leaves ones only in the first layer.
    const uint64_t dims[3] = {40, 30, 12};
    const auto v = field(dims, 1e20f, [](uint64_t x, uint64_t y, uint64_t) { return x > 10 && x < 20 && y > 5; });
    const FillMask mask = fill_mask_encode_cpu(v.data(), dims, FillValue{true, fill_bits_of(1e20f), 0}, 1);
    EXPECT_EQ(mask.residual, (std::vector<uint64_t>{6 * 40 + 11, 6 * 40 + 20}));
    EXPECT_EQ(mask.points, 9u * 24 * 12);
}

// Every malformed section is refused, never read past its end.
TEST(FillMask, CorruptSectionsAreRejected) {
    const uint64_t dims[3] = {20, 10, 3};
    const auto v = field(dims, -1e10f, [](uint64_t x, uint64_t y, uint64_t z) { return (x * 7 + y * 3 + z) % 5 == 0; });
    const FillValue fill{true, fill_bits_of(-1e10f), 0};
    const auto bytes = fill_mask_write(fill_mask_encode_cpu(v.data(), dims, fill, 1));
    const uint64_t n = v.size();
    ASSERT_NO_THROW(fill_mask_read(bytes, n));
    const auto corrupt = [&](std::vector<uint8_t> b, uint64_t size) {
        return status_of([&] {
            const FillMask m = fill_mask_read(b, size);
            fill_mask_expand_cpu(m, dims, 1);
        });
    };
    for (size_t len = 0; len < bytes.size(); ++len)
        EXPECT_EQ(corrupt({bytes.begin(), bytes.begin() + len}, n), GSZ_STATUS_CORRUPT) << "cut to " << len;
    auto extra = bytes;
    extra.push_back(0);
    EXPECT_EQ(corrupt(extra, n), GSZ_STATUS_CORRUPT);
    EXPECT_EQ(corrupt(bytes, 1), GSZ_STATUS_CORRUPT);   // more points than the array has
    auto points = bytes;
    points[0] ^= 1;
    EXPECT_EQ(corrupt(points, n), GSZ_STATUS_CORRUPT);
    auto ones = bytes;
    ones[8] += 1;
    EXPECT_EQ(corrupt(ones, n), GSZ_STATUS_CORRUPT);
    auto giant = bytes;
    giant[15] = 0x7f;   // 2^62 ones
    EXPECT_EQ(corrupt(giant, n), GSZ_STATUS_CORRUPT);
    // Zeros only: no gap ends.
    std::vector<uint8_t> zeros(16 + 20, 0);
    zeros[8] = 1;
    EXPECT_EQ(corrupt(zeros, n), GSZ_STATUS_CORRUPT);
    // Every single bit flipped: refused or a different but valid mask, never a crash.
    for (size_t i = 16; i < bytes.size(); ++i)
        for (int b = 0; b < 8; ++b) {
            auto flipped = bytes;
            flipped[i] ^= static_cast<uint8_t>(1u << b);
            const gsz_status s = corrupt(flipped, n);
            EXPECT_TRUE(s == GSZ_STATUS_OK || s == GSZ_STATUS_CORRUPT);
        }
}

TEST(FillMask, Detection) {
    std::vector<float> sample(4096);
    for (size_t i = 0; i < sample.size(); ++i) sample[i] = static_cast<float>(270 + 30 * std::sin(0.01 * double(i)));
    // A field without a fill value: nothing, even where the extremes repeat.
    EXPECT_FALSE(fill_detect<float>(sample, 240, 300).on);
    auto clipped = sample;
    for (float& x : clipped) x = std::min(x, 290.0f);   // a saturated maximum is part of the data
    EXPECT_FALSE(fill_detect<float>(clipped, 240, 290).on);
    // 1e20 on 1/50 of the sample, far from the rest: found, with the rest's middle as its stand-in.
    auto land = sample;
    for (size_t i = 0; i < land.size(); i += 50) land[i] = 1e20f;
    const FillValue f = fill_detect<float>(land, 240.00001525878906, 1e20);
    double lo = 1e30, hi = -1e30;
    for (float x : land)
        if (x != 1e20f) lo = std::min(lo, double(x)), hi = std::max(hi, double(x));
    EXPECT_TRUE(f.on);
    EXPECT_EQ(f.bits, fill_bits_of(1e20f));
    EXPECT_DOUBLE_EQ(f.stand_in, lo + (hi - lo) * 0.5);
    // Below 1/64 of the sample: not a fill value.
    auto rare = sample;
    for (size_t i = 0; i < rare.size(); i += 100) rare[i] = 1e20f;
    EXPECT_FALSE(fill_detect<float>(rare, 240, 1e20).on);
    // The share's edge (the first pass's test and the full one agree): 64 of 4,096 is enough, 63 is not.
    for (const int count : {64, 63}) {
        auto edge = sample;
        for (int k = 0; k < count; ++k) edge[static_cast<size_t>(k) * 64] = 1e20f;
        EXPECT_EQ(fill_detect<float>(edge, 240.00001525878906, 1e20).on, count == 64) << count;
        auto edge_nan = sample;
        for (int k = 0; k < count; ++k) edge_nan[static_cast<size_t>(k) * 64] = std::bit_cast<float>(0x7fc00000u);
        EXPECT_EQ(fill_detect<float>(edge_nan, 240, 300).on, count == 64) << count;
    }
    // A minimum fill, on doubles.
    std::vector<double> d(land.begin(), land.end());
    for (double& x : d)
        if (x == double(1e20f)) x = -9.96921e36;
    EXPECT_EQ(fill_detect<double>(d, -9.96921e36, 300).bits, fill_bits_of(-9.96921e36));
    // NaN land (netCDF's and xarray's marker): the most frequent NaN pattern, at the same share, whatever
    // the finite range says; rarer NaN patterns and rare NaNs are not.
    const float qnan = std::bit_cast<float>(0x7fc00000u), payload = std::bit_cast<float>(0xffc00123u);
    auto nan_land = sample;
    for (size_t i = 0; i < nan_land.size(); i += 50) nan_land[i] = i % 200 == 0 ? qnan : payload;
    for (size_t i = 1; i < nan_land.size(); i += 50) nan_land[i] = payload;
    const FillValue n = fill_detect<float>(nan_land, 240, 300);
    EXPECT_TRUE(n.on);
    EXPECT_EQ(n.bits, 0xffc00123u);
    EXPECT_GT(n.stand_in, 240.0);
    EXPECT_LT(n.stand_in, 300.0);
    auto rare_nan = sample;
    for (size_t i = 0; i < rare_nan.size(); i += 100) rare_nan[i] = qnan;
    EXPECT_FALSE(fill_detect<float>(rare_nan, 240, 300).on);
    std::vector<double> all_nan(4096, std::numeric_limits<double>::quiet_NaN());
    EXPECT_FALSE(fill_detect<double>(all_nan, 0, 0).on) << "no other finite value";
    std::vector<double> nan_d(nan_land.begin(), nan_land.end());
    for (double& x : nan_d)
        if (std::isnan(x)) x = std::numeric_limits<double>::quiet_NaN();
    EXPECT_EQ(fill_detect<double>(nan_d, 240, 300).bits, fill_bits_of(std::numeric_limits<double>::quiet_NaN()));
    // A value given by the caller: rounded to the dtype, which must hold it as a finite value.
    EXPECT_EQ(fill_from_value<float>(-1e34, std::span<const float>(land)).bits, fill_bits_of(-1e34f));
    EXPECT_EQ(status_of([&] { fill_from_value<float>(1e300, std::span<const float>(land)); }),
              GSZ_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(fill_from_value<float>(0.1, std::span<const float>(land)).bits, fill_bits_of(0.1f));
    EXPECT_EQ(status_of([&] { fill_from_value<double>(NAN, std::span<const double>(d)); }),
              GSZ_STATUS_INVALID_ARGUMENT);
}
