// Mirror tiling of `gsz bench --tile`: values at mirrored positions, no seams.
#include "../../apps/gsz/mirror_tile.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

namespace gsz::cli {
namespace {

template <class T>
std::vector<T> random_field(uint64_t n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<T> u(-100, 100);
    std::vector<T> v(n);
    for (auto& x : v) x = u(rng);
    return v;
}

uint64_t product(const std::vector<uint64_t>& dims) {
    uint64_t n = 1;
    for (uint64_t d : dims) n *= d;
    return n;
}

// The definition, element by element: along each axis copy k of n points
// maps output coordinate k*n + r to r, or to n-1-r when k is odd.
template <class T>
std::vector<T> reference_tile(const std::vector<T>& src, const std::vector<uint64_t>& dims,
                              const std::vector<uint64_t>& tiles) {
    const size_t rank = dims.size();
    std::vector<uint64_t> out_dims(rank);
    for (size_t d = 0; d < rank; ++d) out_dims[d] = dims[d] * tiles[d];
    std::vector<T> out(product(out_dims));
    for (uint64_t i = 0; i < out.size(); ++i) {
        uint64_t rest = i, src_index = 0, stride = 1;
        for (size_t d = 0; d < rank; ++d) {
            const uint64_t o = rest % out_dims[d];
            rest /= out_dims[d];
            const uint64_t k = o / dims[d], r = o - k * dims[d];
            src_index += (k % 2 ? dims[d] - 1 - r : r) * stride;
            stride *= dims[d];
        }
        out[i] = src[src_index];
    }
    return out;
}

// Largest |difference| between neighbours along axis `axis`.
template <class T>
double max_step(const std::vector<T>& v, const std::vector<uint64_t>& dims, size_t axis) {
    uint64_t stride = 1;
    for (size_t d = 0; d < axis; ++d) stride *= dims[d];
    double worst = 0;
    for (uint64_t i = 0; i < v.size(); ++i) {
        if ((i / stride) % dims[axis] + 1 == dims[axis]) continue;   // last point along the axis
        worst = std::max(worst, std::fabs(static_cast<double>(v[i + stride]) - static_cast<double>(v[i])));
    }
    return worst;
}

// Across every copy boundary along every axis the two neighbours are equal,
// so tiling adds no step larger than the original has.
template <class T>
void expect_no_seams(const std::vector<T>& src, const std::vector<uint64_t>& dims, const std::vector<T>& out,
                     const std::vector<uint64_t>& out_dims) {
    for (size_t axis = 0; axis < dims.size(); ++axis) {
        uint64_t stride = 1;
        for (size_t d = 0; d < axis; ++d) stride *= out_dims[d];
        for (uint64_t i = 0; i < out.size(); ++i) {
            const uint64_t o = (i / stride) % out_dims[axis];
            if ((o + 1) % dims[axis] == 0 && o + 1 < out_dims[axis]) {
                ASSERT_EQ(out[i], out[i + stride]) << "seam on axis " << axis << " at element " << i;
            }
        }
        EXPECT_EQ(max_step(out, out_dims, axis), max_step(src, dims, axis)) << "axis " << axis;
    }
}

TEST(MirrorTile, OneD) {
    const std::vector<float> src = {1, 2, 3};
    const std::vector<uint64_t> dims = {3}, tiles = {3};
    EXPECT_EQ(mirror_tile<float>(src, dims, tiles), (std::vector<float>{1, 2, 3, 3, 2, 1, 1, 2, 3}));
    EXPECT_EQ(mirror_tile<float>(src, dims, std::vector<uint64_t>{1}), src);
}

TEST(MirrorTile, TwoDByHand) {
    // v(x, y) = 10 y + x on 3 x 2 (x fastest), tiled 2 x 3 -> 6 x 6.
    const std::vector<float> src = {0, 1, 2, 10, 11, 12};
    const std::vector<uint64_t> dims = {3, 2}, tiles = {2, 3};
    EXPECT_EQ(mirror_tiled_dims(dims, tiles), (std::vector<uint64_t>{6, 6}));
    const std::vector<float> want = {
        0,  1,  2,  2,  1,  0,    // y 0: copy 0 along y
        10, 11, 12, 12, 11, 10,   // y 1
        10, 11, 12, 12, 11, 10,   // y 2: copy 1 along y, flipped
        0,  1,  2,  2,  1,  0,    // y 3
        0,  1,  2,  2,  1,  0,    // y 4: copy 2 along y
        10, 11, 12, 12, 11, 10,   // y 5
    };
    EXPECT_EQ(mirror_tile<float>(src, dims, tiles), want);
}

TEST(MirrorTile, TwoDMatchesDefinition) {
    const std::vector<uint64_t> dims = {7, 5}, tiles = {4, 2};
    const auto src = random_field<float>(product(dims), 1);
    const auto out = mirror_tile<float>(src, dims, tiles);
    EXPECT_EQ(out, reference_tile(src, dims, tiles));
    expect_no_seams(src, dims, out, mirror_tiled_dims(dims, tiles));
}

TEST(MirrorTile, ThreeDMatchesDefinition) {
    const std::vector<uint64_t> dims = {4, 3, 5}, tiles = {3, 2, 2};
    const auto src = random_field<double>(product(dims), 2);
    const auto out = mirror_tile<double>(src, dims, tiles);
    EXPECT_EQ(out.size(), 12u * 6u * 10u);
    EXPECT_EQ(out, reference_tile(src, dims, tiles));
    expect_no_seams(src, dims, out, mirror_tiled_dims(dims, tiles));

    // A few positions by hand: (x, y, z) of the output -> of the source.
    const auto at = [&](const std::vector<double>& v, uint64_t x, uint64_t y, uint64_t z, uint64_t nx, uint64_t ny) {
        return v[(z * ny + y) * nx + x];
    };
    EXPECT_EQ(at(out, 4, 0, 0, 12, 6), at(src, 3, 0, 0, 4, 3));    // copy 1 along x, flipped
    EXPECT_EQ(at(out, 8, 0, 0, 12, 6), at(src, 0, 0, 0, 4, 3));    // copy 2 along x, not flipped
    EXPECT_EQ(at(out, 1, 5, 9, 12, 6), at(src, 1, 0, 0, 4, 3));    // last copies along y and z, flipped
    EXPECT_EQ(at(out, 11, 3, 5, 12, 6), at(src, 3, 2, 4, 4, 3));    // copy 2 along x, copies 1 along y and z
}

TEST(MirrorTile, FourDMatchesDefinition) {
    const std::vector<uint64_t> dims = {3, 2, 2, 3}, tiles = {2, 3, 1, 2};
    const auto src = random_field<float>(product(dims), 3);
    const auto out = mirror_tile<float>(src, dims, tiles);
    EXPECT_EQ(out, reference_tile(src, dims, tiles));
    expect_no_seams(src, dims, out, mirror_tiled_dims(dims, tiles));
}

TEST(MirrorTile, SizeOneAxesAndIdentity) {
    const std::vector<uint64_t> dims = {5, 1, 4};
    const auto src = random_field<float>(product(dims), 4);
    EXPECT_EQ(mirror_tile<float>(src, dims, std::vector<uint64_t>{1, 1, 1}), src);
    const std::vector<uint64_t> tiles = {1, 3, 2};
    EXPECT_EQ(mirror_tile<float>(src, dims, tiles), reference_tile(src, dims, tiles));
}

TEST(MirrorTile, RefusesMismatchedRanks) {
    const std::vector<float> src(6, 0.0f);
    EXPECT_THROW(mirror_tile<float>(src, std::vector<uint64_t>{3, 2}, std::vector<uint64_t>{2}), std::invalid_argument);
    EXPECT_THROW(mirror_tile<float>(src, std::vector<uint64_t>{3, 2}, std::vector<uint64_t>{2, 0}),
                 std::invalid_argument);
    EXPECT_THROW(mirror_tile<float>(src, std::vector<uint64_t>{4, 2}, std::vector<uint64_t>{1, 1}),
                 std::invalid_argument);
}

}  // namespace
}  // namespace gsz::cli
