// The G-Interp stage alone: alpha, geometry, stage coverage and dependency
// order, the spline formulas, the auto-tuner, encode/decode on the CPU.
#include "predict/interp/interp.hpp"
#include "runtime/status.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <vector>

using namespace gsz::predict;

namespace {

// cuSZ-i's Eq. 1, written out from the paper: piecewise linear per decade.
double eq1(double e) {
    if (e >= 1e-1) return 2.0;
    if (e >= 1e-2) return 1.75 + 0.25 * (e - 1e-2) / (1e-1 - 1e-2);
    if (e >= 1e-3) return 1.5 + 0.25 * (e - 1e-3) / (1e-2 - 1e-3);
    if (e >= 1e-4) return 1.25 + 0.25 * (e - 1e-4) / (1e-3 - 1e-4);
    if (e >= 1e-5) return 1.0 + 0.25 * (e - 1e-5) / (1e-4 - 1e-5);
    return 1.0;
}

TEST(InterpAlpha, Eq1AtDecadeBoundaries) {
    EXPECT_EQ(interp_alpha_for(1e-1), 2.0);
    EXPECT_EQ(interp_alpha_for(1e-2), 1.75);
    EXPECT_EQ(interp_alpha_for(1e-3), 1.5);
    EXPECT_EQ(interp_alpha_for(1e-4), 1.25);
    EXPECT_EQ(interp_alpha_for(1e-5), 1.0);
    EXPECT_EQ(interp_alpha_for(1e-6), 1.0);
    EXPECT_EQ(interp_alpha_for(0.0), 1.0);
    EXPECT_EQ(interp_alpha_for(0.5), 2.0);
    EXPECT_EQ(interp_alpha_for(3.0), 2.0);
    EXPECT_EQ(interp_alpha_for(HUGE_VAL), 2.0);   // constant field: relative bound infinite
    // Continuous from below at each boundary.
    for (double b : {1e-1, 1e-2, 1e-3, 1e-4})
        EXPECT_NEAR(interp_alpha_for(std::nextafter(b, 0.0)), interp_alpha_for(b), 1e-9) << b;
}

TEST(InterpAlpha, Eq1AtMidpoints) {
    EXPECT_NEAR(interp_alpha_for(5.5e-2), 1.875, 1e-12);
    EXPECT_NEAR(interp_alpha_for(5.5e-3), 1.625, 1e-12);
    EXPECT_NEAR(interp_alpha_for(5.5e-4), 1.375, 1e-12);
    EXPECT_NEAR(interp_alpha_for(5.5e-5), 1.125, 1e-12);
    for (double e = 2e-6; e < 0.3; e *= 1.37) EXPECT_NEAR(interp_alpha_for(e), eq1(e), 1e-12) << e;
    // Monotone non-decreasing in e.
    double prev = 0;
    for (double e = 1e-7; e < 1; e *= 1.05) {
        EXPECT_GE(interp_alpha_for(e), prev) << e;
        prev = interp_alpha_for(e);
    }
}

InterpLayout layout_of(const std::vector<uint64_t>& dims, uint32_t stride_1d = 0) {
    return interp_layout(static_cast<uint32_t>(dims.size()), dims.data(), stride_1d);
}

void expect_geometry(const InterpLayout& L, uint32_t rank, std::vector<uint64_t> dims, uint32_t S,
                     std::vector<uint32_t> tile) {
    ASSERT_EQ(L.rank, rank);
    EXPECT_EQ(L.anchor_stride, S);
    EXPECT_EQ(1u << L.num_levels, S);
    uint64_t n = 1, tiles = 1, anchors = 1;
    for (uint32_t d = 0; d < 3; ++d) {
        const uint64_t N = d < rank ? dims[d] : 1;
        const uint32_t t = d < rank ? tile[d] : 1;
        EXPECT_EQ(L.dims[d], N) << "dim " << d;
        EXPECT_EQ(L.tile[d], t) << "dim " << d;
        EXPECT_EQ(L.tile[d] % (d < rank ? S : 1), 0u);
        EXPECT_EQ(L.grid[d], (N + t - 1) / t) << "dim " << d;
        EXPECT_EQ(L.anchor_dims[d], (N - 1) / S + 1) << "dim " << d;
        EXPECT_EQ(L.ws_extent(static_cast<int>(d)), d < rank ? t + 1 : 1u);
        n *= N;
        tiles *= L.grid[d];
        anchors *= L.anchor_dims[d];
    }
    EXPECT_EQ(L.num_elements, n);
    EXPECT_EQ(L.num_tiles, tiles);
    EXPECT_EQ(L.num_anchors, anchors);
}

TEST(InterpGeometry, GeometryPerRank) {
    expect_geometry(layout_of({5000}), 1, {5000}, 512, {2048});
    expect_geometry(layout_of({2048}), 1, {2048}, 512, {2048});
    expect_geometry(layout_of({2049}), 1, {2049}, 512, {2048});
    expect_geometry(layout_of({1}), 1, {1}, 512, {2048});
    expect_geometry(layout_of({130, 33}), 2, {130, 33}, 16, {64, 16});
    expect_geometry(layout_of({64, 16}), 2, {64, 16}, 16, {64, 16});
    expect_geometry(layout_of({91, 91, 91}), 3, {91, 91, 91}, 8, {32, 8, 8});
    expect_geometry(layout_of({33, 17, 9}), 3, {33, 17, 9}, 8, {32, 8, 8});
    expect_geometry(layout_of({4320, 2161}), 2, {4320, 2161}, 16, {64, 16});
}

TEST(InterpGeometry, OneDimStrides) {
    for (uint32_t s = 2; s <= 512; s *= 2) {
        const auto L = layout_of({5000}, s);
        expect_geometry(L, 1, {5000}, s, {2048});
        EXPECT_EQ(1u << L.num_levels, s);
        EXPECT_EQ(L.num_anchors, (5000 - 1) / s + 1);
        EXPECT_TRUE(interp_valid_stride_1d(s));
    }
    for (uint32_t s : {0u, 1u, 3u, 6u, 1024u, 4096u}) EXPECT_FALSE(interp_valid_stride_1d(s)) << s;
    EXPECT_THROW(layout_of({5000}, 3), gsz::Error);
    EXPECT_THROW(layout_of({5000}, 1024), gsz::Error);
    // 2-D and 3-D arrays keep their geometry, whatever the 1-D stride says.
    expect_geometry(layout_of({130, 33}, 4), 2, {130, 33}, 16, {64, 16});
    expect_geometry(layout_of({1, 77, 1}, 4), 1, {77}, 4, {2048});
}

TEST(InterpGeometry, SizeOneDimsDroppedAndFourDMerged) {
    expect_geometry(layout_of({91, 1, 91}), 2, {91, 91}, 16, {64, 16});
    expect_geometry(layout_of({1, 1, 7}), 1, {7}, 512, {2048});
    expect_geometry(layout_of({7, 1, 1, 3}), 2, {7, 3}, 16, {64, 16});
    expect_geometry(layout_of({1, 1, 1, 77}), 1, {77}, 512, {2048});
    expect_geometry(layout_of({1, 1, 1, 1}), 1, {1}, 512, {2048});
    expect_geometry(layout_of({5, 6, 7, 8}), 3, {5, 6, 56}, 8, {32, 8, 8});
    expect_geometry(layout_of({180, 90, 19, 12}), 3, {180, 90, 228}, 8, {32, 8, 8});
    expect_geometry(layout_of({180, 1, 19, 12}), 3, {180, 19, 12}, 8, {32, 8, 8});
}

// The CUDA backend launches full and edge tiles as two grids (interp_math.hpp's
// maps): together they must name every tile exactly once, the full ones with
// their whole workspace inside the array and the box tile_box gives.
TEST(InterpGeometry, FullAndEdgeTilesPartitionTheGrid) {
    for (auto dims : std::vector<std::vector<uint64_t>>{{91, 91, 91}, {455, 455, 455}, {33, 9, 9}, {32, 8, 8},
                                                         {65, 17, 17}, {1000, 9, 17}, {33, 17, 9}, {31, 200, 9},
                                                         {65, 17}, {64, 16}, {4320, 2161}, {129, 33}, {1000, 17},
                                                         {17, 1000}}) {
        const auto L = layout_of(dims);
        ASSERT_TRUE(L.rank == 2 || L.rank == 3);
        SCOPED_TRACE(testing::Message() << L.dims[0] << "x" << L.dims[1] << "x" << L.dims[2]);
        std::vector<int> seen(L.num_tiles, 0);
        const uint64_t full = interp_full_tile_count(L);
        for (uint64_t k = 0; k < full; ++k) {
            const auto box = L.rank == 3 ? interp_full_tile_box<3>(L, static_cast<uint32_t>(k), L.tile[0], L.tile[1],
                                                                    L.tile[2])
                                         : interp_full_tile_box<2>(L, static_cast<uint32_t>(k), L.tile[0], L.tile[1],
                                                                   L.tile[2]);
            const uint64_t id = ((box.origin[2] / L.tile[2]) * L.grid[1] + box.origin[1] / L.tile[1]) * L.grid[0] +
                                box.origin[0] / L.tile[0];
            ASSERT_LT(id, L.num_tiles);
            const auto ref = L.tile_box(id);
            for (int d = 0; d < 3; ++d) {
                EXPECT_EQ(box.origin[d], ref.origin[d]);
                EXPECT_EQ(box.last[d], ref.last[d]);
                EXPECT_EQ(box.last[d], d < static_cast<int>(L.rank) ? L.tile[d] : 0u);   // the workspace fits
            }
            ++seen[id];
        }
        for (uint64_t k = 0; k < L.num_tiles - full; ++k) {
            const uint64_t id = interp_edge_tile_id(L, k);
            ASSERT_LT(id, L.num_tiles);
            const auto box = L.tile_box(id);
            bool clipped = false;
            for (uint32_t d = 0; d < L.rank; ++d) clipped |= box.last[d] < L.tile[d];
            EXPECT_TRUE(clipped) << "edge tile " << id << " is full";
            ++seen[id];
        }
        for (uint64_t t = 0; t < L.num_tiles; ++t) ASSERT_EQ(seen[t], 1) << "tile " << t;
    }
}

TEST(InterpGeometry, TileBoxesCoverTheArray) {
    for (auto dims : std::vector<std::vector<uint64_t>>{{70, 19, 17}, {130, 33}, {5000}, {32, 8, 8}, {33, 9, 9}}) {
        const auto L = layout_of(dims);
        std::vector<int> owned(L.num_elements, 0);
        for (uint64_t t = 0; t < L.num_tiles; ++t) {
            const auto box = L.tile_box(t);
            for (int d = 0; d < 3; ++d) {
                EXPECT_EQ(box.origin[d] % L.tile[d], 0u);
                EXPECT_LE(box.origin[d] + box.last[d], L.dims[d] - 1);
                EXPECT_LE(box.last[d], d < static_cast<int>(L.rank) ? L.tile[d] : 0u);
            }
            for (uint32_t z = 0; z <= box.last[2]; ++z)
                for (uint32_t y = 0; y <= box.last[1]; ++y)
                    for (uint32_t x = 0; x <= box.last[0]; ++x) {
                        const uint32_t c[3] = {x, y, z};
                        if (interp_owned(L, c)) ++owned[L.global_index(box.origin, c)];
                    }
        }
        for (uint64_t i = 0; i < owned.size(); ++i) ASSERT_EQ(owned[i], 1) << "element " << i;
    }
}

// Walks every stage of every level inside a workspace with inclusive extents
// `last`: each non-anchor point is produced by exactly one stage, no anchor is,
// every point lies inside the workspace, and every neighbour a prediction
// reads (at -3u, -u, +u, +3u where it uses them) is known by then.
void check_stages(const InterpLayout& L, const uint8_t* order, const uint32_t* last) {
    const uint32_t e[3] = {last[0] + 1, last[1] + 1, last[2] + 1};
    std::vector<int> produced(e[0] * e[1] * e[2], 0);
    std::vector<char> known(produced.size(), 0);
    auto at = [&](const uint32_t* c) { return c[0] + e[0] * (c[1] + e[1] * c[2]); };
    for (uint32_t z = 0; z < e[2]; ++z)
        for (uint32_t y = 0; y < e[1]; ++y)
            for (uint32_t x = 0; x < e[0]; ++x) {
                const uint32_t c[3] = {x, y, z};
                known[at(c)] = L.is_anchor(c);
            }
    for (uint32_t l = L.num_levels; l-- > 0;) {
        const uint32_t u = 1u << l;
        for (uint32_t k = 0; k < L.rank; ++k) {
            const InterpStage s = interp_stage(L.rank, order, k, u, last);
            EXPECT_EQ(s.dim, order[k]);
            EXPECT_EQ(s.total, s.count[0] * s.count[1] * s.count[2]);
            // The backends' form: the same points, located in the workspace.
            const InterpStage w = interp_stage(L, InterpOrder{{order[0], order[1], order[2]}}, k, u, last);
            ASSERT_EQ(w.total, s.total);
            EXPECT_EQ(w.dim, s.dim);
            EXPECT_EQ(w.last_along, last[s.dim]);
            EXPECT_EQ(w.neighbour_stride, static_cast<int64_t>(u) * L.ws_stride(static_cast<int>(s.dim)));
            std::vector<uint32_t> done;
            for (uint32_t i = 0; i < s.total; ++i) {
                uint32_t c[3];
                s.point(i, c);
                for (int d = 0; d < 3; ++d) ASSERT_LE(c[d], last[d]) << "level " << u << " stage " << k;
                uint32_t offset = 0, along = 0;
                w.locate(i, offset, along);
                ASSERT_EQ(offset, interp_ws_offset(L, c));
                ASSERT_EQ(along, c[s.dim]);
                const uint32_t d = s.dim;
                ASSERT_EQ(c[d] % (2 * u), u) << "stage point not an odd multiple of the stride";
                ASSERT_FALSE(L.is_anchor(c));
                ++produced[at(c)];
                auto need = [&](int64_t off) {
                    uint32_t n[3] = {c[0], c[1], c[2]};
                    n[d] = static_cast<uint32_t>(static_cast<int64_t>(c[d]) + off * u);
                    EXPECT_TRUE(known[at(n)]) << "level " << u << " stage " << k << " reads (" << n[0] << ","
                                              << n[1] << "," << n[2] << ") before it is known";
                };
                need(-1);
                if (c[d] >= 3 * u) need(-3);
                if (c[d] + u <= last[d]) need(1);
                if (c[d] + 3 * u <= last[d]) need(3);
                done.push_back(at(c));
            }
            for (uint32_t w : done) known[w] = 1;   // a stage's points never read each other
        }
    }
    for (uint32_t z = 0; z < e[2]; ++z)
        for (uint32_t y = 0; y < e[1]; ++y)
            for (uint32_t x = 0; x < e[0]; ++x) {
                const uint32_t c[3] = {x, y, z};
                ASSERT_EQ(produced[at(c)], L.is_anchor(c) ? 0 : 1)
                    << "point (" << x << "," << y << "," << z << ") of a workspace " << e[0] << "x" << e[1] << "x"
                    << e[2];
            }
}

TEST(InterpStages, EveryNonAnchorPointProducedOnceAfterItsNeighbours) {
    struct Ws {
        std::vector<uint64_t> dims;
        std::vector<std::vector<uint32_t>> lasts;
    };
    const Ws cases[] = {
        {{5000}, {{2048, 0, 0}, {1, 0, 0}, {0, 0, 0}, {903, 0, 0}, {511, 0, 0}, {513, 0, 0}}},
        {{130, 33}, {{64, 16, 0}, {1, 16, 0}, {64, 0, 0}, {37, 5, 0}, {15, 15, 0}, {0, 0, 0}}},
        {{70, 19, 17}, {{32, 8, 8}, {5, 2, 0}, {32, 1, 8}, {7, 8, 3}, {31, 7, 7}, {0, 0, 0}, {9, 9, 8}}},
    };
    for (const Ws& w : cases) {
        const auto L = layout_of(w.dims);
        std::vector<uint8_t> order(L.rank);
        for (uint32_t d = 0; d < L.rank; ++d) order[d] = static_cast<uint8_t>(d);
        do {
            uint8_t o[3] = {0, 1, 2};
            std::copy(order.begin(), order.end(), o);
            for (auto last : w.lasts) {
                for (uint32_t d = 0; d < 3; ++d)
                    if (d < L.rank) last[d] = std::min(last[d], L.tile[d]);
                SCOPED_TRACE(testing::Message() << "rank " << L.rank << " order " << int(o[0]) << int(o[1])
                                                << int(o[2]) << " last " << last[0] << "," << last[1] << ","
                                                << last[2]);
                check_stages(L, o, last.data());
            }
        } while (std::next_permutation(order.begin(), order.end()));
    }
}

TEST(InterpStages, LevelIndexOfStride) {
    EXPECT_EQ(interp_level_index(1), 0u);
    EXPECT_EQ(interp_level_index(2), 1u);
    EXPECT_EQ(interp_level_index(4), 2u);
    EXPECT_EQ(interp_level_index(256), 8u);
}

// The stage loops divide by a multiply-high; exact for every divisor and
// dividend below 2^16, checked at each multiple of n and its neighbours (where
// a rounding error would show first).
TEST(InterpStages, DivisorExactBelow2To16) {
    for (uint32_t n = 1; n < 65536; ++n) {
        const InterpDivisor d = InterpDivisor::of(n);
        for (uint32_t q = 0; q * n < 65536; ++q)
            for (uint32_t i : {q * n, q * n + n - 1, q * n + n / 2}) {
                if (i >= 65536) continue;
                ASSERT_EQ(d.divide(i), i / n) << i << " / " << n;
            }
        ASSERT_EQ(d.divide(65535), 65535 / n) << n;
    }
}

// A line of the workspace holding f(0..L); the prediction of point p at stride u.
template <class T>
double predict_on_line(const std::function<double(double)>& f, uint32_t p, uint32_t u, uint32_t L, uint32_t spline) {
    std::vector<T> line(L + 1);
    for (uint32_t i = 0; i <= L; ++i) line[i] = static_cast<T>(f(i));
    return interp_predict(line.data() + p, static_cast<int64_t>(u), p, u, L, spline, kInterpNoJump);
}

TEST(InterpPredict, SplinesReproduceTheirPolynomials) {
    // Integer coefficients: every value and every step of the formulas is exact.
    const auto cubic = [](double x) { return 2 * x * x * x - 5 * x * x + 3 * x - 7; };
    const auto quadratic = [](double x) { return -3 * x * x + 11 * x + 4; };
    const auto line = [](double x) { return 6 * x - 13; };
    for (uint32_t u : {1u, 2u, 4u, 8u}) {
        const uint32_t L = 16 * u;
        for (uint32_t p = u; p <= L; p += 2 * u) {
            SCOPED_TRACE(testing::Message() << "u " << u << " p " << p);
            const bool a = p >= 3 * u, c = p + u <= L, d = p + 3 * u <= L;
            if (a && d) {   // cubic, both splines
                EXPECT_EQ(predict_on_line<double>(cubic, p, u, L, kSplineNotAKnot), cubic(p));
                EXPECT_EQ(predict_on_line<float>(cubic, p, u, L, kSplineNotAKnot), cubic(p));
                EXPECT_EQ(predict_on_line<double>(line, p, u, L, kSplineNatural), line(p));
                // The natural spline is a different formula: it misses quadratics.
                EXPECT_NE(predict_on_line<double>(quadratic, p, u, L, kSplineNatural), quadratic(p));
            } else if (d || (a && c)) {   // quadratic at either edge, whatever the spline
                for (uint32_t s : {kSplineNotAKnot, kSplineNatural}) {
                    EXPECT_EQ(predict_on_line<double>(quadratic, p, u, L, s), quadratic(p));
                    EXPECT_EQ(predict_on_line<float>(quadratic, p, u, L, s), quadratic(p));
                }
                EXPECT_NE(predict_on_line<double>(cubic, p, u, L, kSplineNotAKnot), cubic(p));
            } else if (c) {   // linear between the two neighbours
                EXPECT_EQ(predict_on_line<double>(line, p, u, L, kSplineNotAKnot), line(p));
                EXPECT_NE(predict_on_line<double>(quadratic, p, u, L, kSplineNotAKnot), quadratic(p));
            } else {   // the array's last point: a copy of its left neighbour
                EXPECT_EQ(predict_on_line<double>(line, p, u, L, kSplineNotAKnot), line(p - u));
            }
        }
    }
    // Short lines: every case occurs.
    EXPECT_EQ(predict_on_line<double>(line, 1, 1, 1, kSplineNotAKnot), line(0));        // copy
    EXPECT_EQ(predict_on_line<double>(line, 1, 1, 2, kSplineNotAKnot), line(1));        // linear
    EXPECT_EQ(predict_on_line<double>(quadratic, 1, 1, 4, kSplineNotAKnot), quadratic(1));   // left quadratic
    EXPECT_EQ(predict_on_line<double>(quadratic, 3, 1, 4, kSplineNotAKnot), quadratic(3));   // right quadratic
    EXPECT_EQ(predict_on_line<double>(cubic, 3, 1, 6, kSplineNotAKnot), cubic(3));           // cubic
}

TEST(InterpPredict, NonFiniteNeighboursReadAsZero) {
    EXPECT_EQ(interp_neighbour(std::numeric_limits<float>::quiet_NaN()), 0.0);
    EXPECT_EQ(interp_neighbour(std::numeric_limits<float>::infinity()), 0.0);
    EXPECT_EQ(interp_neighbour(-std::numeric_limits<double>::infinity()), 0.0);
    EXPECT_EQ(interp_neighbour(std::numeric_limits<double>::max()), std::numeric_limits<double>::max());
    EXPECT_EQ(interp_neighbour(-2.5f), -2.5);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double line[] = {4, 6, nan, 10, 12, 14, 16};   // the NaN at -u reads as 0
    EXPECT_EQ(interp_predict(line + 3, 1, 3, 1, 6, kSplineNotAKnot, kInterpNoJump), (9.0 * (0 + 12) - (4 + 16)) / 16);
    const float inf_line[] = {4, 6, 8, 10, 12, std::numeric_limits<float>::infinity(), 16};
    EXPECT_EQ(interp_predict(inf_line + 3, 1, 3, 1, 6, kSplineNotAKnot, kInterpNoJump), (9.0 * (8 + 12) - (4 + 16)) / 16);
    EXPECT_EQ(interp_predict(inf_line + 5, 1, 5, 1, 6, kSplineNotAKnot, kInterpNoJump), 0.5 * (12 + 16));   // Inf predicted: finite
}

// The jump guard: a step between the two nearest neighbours larger than the
// threshold copies the one before the point; a step to an outer neighbour
// makes the prediction linear; steps at or below the threshold leave the
// paper's splines.
TEST(InterpPredict, JumpGuard) {
    const double fill = -1e34, jump = 5e33;
    // b and c on either side of a jump (a fill value, then data): b, whichever side holds the fill.
    EXPECT_EQ(interp_spline(fill, fill, 20.0, 21.0, true, true, true, kSplineNotAKnot, jump), fill);
    EXPECT_EQ(interp_spline(20.0, 21.0, fill, fill, true, true, true, kSplineNatural, jump), 21.0);
    EXPECT_EQ(interp_spline(0.0, 21.0, fill, 0.0, false, true, false, kSplineNotAKnot, jump), 21.0);   // linear case
    // An outer neighbour across a jump: linear between b and c (both quadratics and the cubic).
    EXPECT_EQ(interp_spline(20.0, 21.0, 23.0, fill, true, true, true, kSplineNotAKnot, jump), 22.0);
    EXPECT_EQ(interp_spline(fill, 21.0, 23.0, 24.0, true, true, true, kSplineNatural, jump), 22.0);
    EXPECT_EQ(interp_spline(0.0, 21.0, 23.0, fill, false, true, true, kSplineNotAKnot, jump), 22.0);
    EXPECT_EQ(interp_spline(fill, 21.0, 23.0, 0.0, true, true, false, kSplineNotAKnot, jump), 22.0);
    // A neighbour the case does not use never triggers it.
    EXPECT_EQ(interp_spline(fill, 21.0, 23.0, 25.0, false, true, true, kSplineNotAKnot, jump),
              (3.0 * 21 + 6.0 * 23 - 25) * 0.125);
    // The last point of an array copies b, jump or not.
    EXPECT_EQ(interp_spline(0.0, 21.0, 0.0, 0.0, false, false, false, kSplineNotAKnot, jump), 21.0);
    // Steps up to the threshold: the splines as before.
    EXPECT_EQ(interp_spline(0.0, 4.0, 8.0, 12.0, true, true, true, kSplineNotAKnot, 4.0), 6.0);
    EXPECT_EQ(interp_spline(0.0, 1.0, 5.0, 6.0, true, true, true, kSplineNotAKnot, 4.0),
              (9.0 * (1 + 5) - (0 + 6)) / 16);
    EXPECT_EQ(interp_spline(0.0, 1.0, 5.0, 6.0, true, true, true, kSplineNotAKnot, 3.5), 1.0);
    EXPECT_EQ(interp_spline(-3.0, 1.0, 2.0, 3.0, true, true, true, kSplineNotAKnot, 3.5), 1.5);
    // Off: the cubic carries the fill into the prediction.
    EXPECT_EQ(interp_spline(20.0, 21.0, 23.0, fill, true, true, true, kSplineNotAKnot, kInterpNoJump),
              (9.0 * (21 + 23) - (20 + fill)) * 0.0625);
    // The threshold is 95% of the finite range; off for an empty, constant or overflowing one.
    EXPECT_EQ(interp_jump_threshold(10.0), 9.5);
    EXPECT_EQ(interp_jump_threshold(0.0), kInterpNoJump);
    EXPECT_EQ(interp_jump_threshold(HUGE_VAL), kInterpNoJump);
    EXPECT_EQ(interp_jump_threshold(std::numeric_limits<double>::quiet_NaN()), kInterpNoJump);
    // The GPU full tiles' float pre-test: float differences at or below
    // interp_jump_below_f32 never exceed the threshold in double.
    std::mt19937 rng(11);
    int near = 0;
    for (int i = 0; i < 200000; ++i) {
        const double J = std::ldexp(1.0 + double(rng() % 1000) / 1000.0, static_cast<int>(rng() % 200) - 100);
        const float below = interp_jump_below_f32(J);
        const double mag = std::ldexp(double(rng()) / 4294967296.0, static_cast<int>(rng() % 200) - 100);
        const float b = static_cast<float>(rng() & 1 ? mag : -mag);
        const float c = static_cast<float>(double(b) + J * (1.0 + (double(rng() % 2001) - 1000.0) * 1e-7));
        if (std::fabs(c - b) <= below) {
            ASSERT_LE(std::fabs(double(c) - double(b)), J) << b << " " << c << " " << J;
            near += std::fabs(double(c) - double(b)) > J * (1 - 1e-5);
        }
    }
    EXPECT_GT(near, 100);   // the pairs came near the threshold
    EXPECT_EQ(interp_jump_below_f32(kInterpNoJump), HUGE_VALF);
    EXPECT_EQ(interp_jump_below_f32(1e300), 0.0f);
}

// A random case for the quiet tests: a value, a bound and a jump threshold of
// one scale, at any of 120 binary orders of magnitude.
struct GuardCase {
    double value, eb, jump;
};
GuardCase random_guard_case(std::mt19937& rng) {
    const double scale = std::ldexp(1.0, static_cast<int>(rng() % 120) - 60);
    const double value = (double(rng()) / 4294967296.0 - 0.5) * scale, eb = scale * double(rng() % 1000) * 1e-5;
    return {value, eb, scale * (0.5 + double(rng()) / 4294967296.0)};
}

// interp_jump_quiet (what the GPU encoders' quiet test rests on,
// interp_quiet_half_span): when it says a span [lo, hi] is quiet, no two
// values within eb of it differ by more than the threshold in the guard's
// double arithmetic, however near the span comes; spans past the threshold
// less 2·eb are not quiet.
TEST(InterpSpline, QuietSpanNeverTakesTheGuard) {
    std::mt19937 rng(17);
    int quiet_near = 0;
    for (int i = 0; i < 200000; ++i) {
        const auto [lo, eb, jump] = random_guard_case(rng);
        const double span = (jump - 2 * eb) * (1.0 + (double(rng() % 2001) - 1000.0) * 1e-12);
        const double hi = lo + std::max(span, 0.0);
        if (!interp_jump_quiet(lo, hi, eb, jump)) {
            EXPECT_GT((hi - lo + 2 * eb) * (1 + 1e-9), jump);
            continue;
        }
        quiet_near += hi - lo + 2 * eb > jump * (1 - 1e-9);
        const double b = hi + eb, c = lo - eb;   // the farthest reconstructions apart
        bool taken = false;
        interp_spline(b, b, c, c, true, true, true, kSplineNotAKnot, jump, &taken);
        ASSERT_FALSE(taken) << lo << " " << hi << " " << eb << " " << jump;
    }
    EXPECT_GT(quiet_near, 100);   // spans came near the threshold
    bool taken = false;
    EXPECT_EQ(interp_spline(0.0, 1.0, 3.0, 4.0, true, true, true, kSplineNotAKnot, 1.5, &taken), 1.0);
    EXPECT_TRUE(taken);
    EXPECT_TRUE(interp_jump_quiet(0.0, 1.0, 0.25, 1.5001));
    EXPECT_FALSE(interp_jump_quiet(0.0, 1.0, 0.25, 1.5));   // at the threshold: the margin says no
    EXPECT_TRUE(interp_jump_quiet(0.0, 1.0, 0.25, kInterpNoJump));
}

// The GPU encoders' test: values within h (interp_quiet_half_span, and its
// float) of one reference span at most 2h, which interp_jump_quiet passes,
// so the farthest reconstructions apart never take the guard.
TEST(InterpSpline, QuietHalfSpanNeverTakesTheGuard) {
    std::mt19937 rng(23);
    int near = 0;
    for (int i = 0; i < 200000; ++i) {
        const auto [r, eb, jump] = random_guard_case(rng);
        const double h = interp_quiet_half_span(jump, eb);
        const float hf = interp_quiet_half_span_f32(h);
        ASSERT_LE(static_cast<double>(hf), h);
        if (h < 0) {
            EXPECT_GT(2 * eb, jump * (1 - 1e-9));
            continue;
        }
        near += 2 * h + 2 * eb > jump * (1 - 1e-9);
        ASSERT_TRUE(interp_jump_quiet(r - h, r + h, eb, jump)) << r << " " << h << " " << eb << " " << jump;
        const double b = r + h + eb, c = r - h - eb;   // the farthest reconstructions apart
        bool taken = false;
        interp_spline(b, b, c, c, true, true, true, kSplineNotAKnot, jump, &taken);
        ASSERT_FALSE(taken) << r << " " << h << " " << eb << " " << jump;
    }
    EXPECT_GT(near, 100000);   // h leaves only the rounding margin
    EXPECT_EQ(interp_quiet_half_span(kInterpNoJump, 1.0), HUGE_VAL);
    EXPECT_EQ(interp_quiet_half_span_f32(HUGE_VAL), HUGE_VALF);
    EXPECT_EQ(interp_quiet_half_span_f32(1e300), 3.4028234663852886e38f);
    EXPECT_LT(interp_quiet_half_span(1.0, 0.5), 0.0);   // the bound alone reaches the threshold
    EXPECT_EQ(interp_quiet_half_span_f32(0.1), std::nextafter(0.1f, 0.0f));   // float(0.1) > 0.1
}

TEST(InterpQuantize, CodesOutliersAndRounding) {
    const auto lq = InterpLevelQuant::from_bound(0.5);   // lattice step 1
    float rec = 0;
    EXPECT_EQ(interp_quantize(12.4f, 10.0, lq, 0.5, 512, rec, {}), 512 + 2);
    EXPECT_EQ(rec, 12.0f);
    EXPECT_EQ(interp_reconstruct<float>(514, 10.0, lq, 512), 12.0f);
    EXPECT_EQ(interp_quantize(-1.0f, 10.0, lq, 0.5, 512, rec, {}), 512 - 11);
    EXPECT_EQ(rec, -1.0f);
    // Residual at the radius: outlier, value kept.
    EXPECT_EQ(interp_quantize(522.0f, 10.0, lq, 0.5, 512, rec, {}), 0);
    EXPECT_EQ(rec, 522.0f);
    EXPECT_EQ(interp_quantize(520.9f, 10.0, lq, 0.5, 512, rec, {}), 512 + 511);
    // radius 1: only a zero residual is a code.
    EXPECT_EQ(interp_quantize(10.3f, 10.0, lq, 0.5, 1, rec, {}), 1);
    EXPECT_EQ(interp_quantize(11.0f, 10.0, lq, 0.5, 1, rec, {}), 0);
    // Non-finite values are outliers.
    EXPECT_EQ(interp_quantize(std::numeric_limits<float>::quiet_NaN(), 0.0, lq, 0.5, 512, rec, {}), 0);
    EXPECT_TRUE(std::isnan(rec));
    EXPECT_EQ(interp_quantize(-std::numeric_limits<float>::infinity(), 0.0, lq, 0.5, 512, rec, {}), 0);
    // A bound of 0.75 ulp(x): the nearest lattice point (0.7 ulp below x)
    // rounds to the float 1 ulp below x, past the bound, so x is an outlier.
    const double ulp = 0.00006103515625;   // of 1000.0f
    const auto fine = InterpLevelQuant::from_bound(0.75 * ulp);
    EXPECT_EQ(interp_quantize(1000.0f, 1000.0 - 0.7 * ulp, fine, 0.75 * ulp, 512, rec, {}), 0);
    EXPECT_EQ(rec, 1000.0f);
    // 0.2 ulp below x rounds to x itself: a code.
    EXPECT_EQ(interp_quantize(1000.0f, 1000.0 - 0.2 * ulp, fine, 0.75 * ulp, 512, rec, {}), 512);
    EXPECT_EQ(rec, 1000.0f);
}

// A field smooth along x, less so along y, rough along z.
std::vector<double> anisotropic_field(uint64_t nx, uint64_t ny, uint64_t nz) {
    std::mt19937 rng(3);
    std::normal_distribution<double> noise(0, 1);
    std::vector<double> rz(nz);
    for (auto& r : rz) r = 5 * noise(rng);
    std::vector<double> v(nx * ny * nz);
    for (uint64_t z = 0; z < nz; ++z)
        for (uint64_t y = 0; y < ny; ++y)
            for (uint64_t x = 0; x < nx; ++x)
                v[x + nx * (y + ny * z)] = std::cos(0.02 * x) + std::sin(0.6 * y) + rz[z];
    return v;
}

template <class T>
std::vector<double> gather_samples(const InterpLayout& L, const std::vector<T>& data) {
    const auto idx = interp_tune_indices(L);
    EXPECT_EQ(idx.size() % (1 + 4 * L.rank), 0u);
    std::vector<double> s;
    for (uint64_t i : idx) {
        EXPECT_LT(i, data.size());
        s.push_back(static_cast<double>(data[i]));
    }
    return s;
}

void expect_same_config(const InterpConfig& a, const InterpConfig& b) {
    EXPECT_EQ(a.alpha, b.alpha);
    EXPECT_EQ(a.beta, b.beta);
    for (int d = 0; d < 3; ++d) {
        EXPECT_EQ(a.order[d], b.order[d]);
        EXPECT_EQ(a.spline[d], b.spline[d]);
    }
    for (uint32_t l = 0; l < kInterpMaxLevels; ++l) EXPECT_EQ(a.level_eb[l], b.level_eb[l]);
}

TEST(InterpConfigure, SampleIndicesFollowThePointOrder) {
    // The host lists the sample by per-dim coordinate tables, the device
    // (tune_sample_kernel) by interp_tune_point per point: the same values in
    // the same order, on 1-D to 3-D shapes smaller and larger than the sample grid.
    for (const std::vector<uint64_t>& dims : std::vector<std::vector<uint64_t>>{
             {100000}, {3000}, {7}, {455, 300}, {40, 9}, {455, 455, 455}, {91, 13, 5}, {3, 3, 3}}) {
        const auto L = layout_of(dims);
        uint64_t k[3];
        interp_tune_counts(L, k);
        std::vector<uint64_t> expect;
        for (uint64_t p = 0; p < k[0] * k[1] * k[2]; ++p) {
            uint64_t g[3];
            interp_tune_point(L, k, p, g);
            for (uint32_t j = 0; j <= 4 * L.rank; ++j) expect.push_back(interp_tune_index(L, g, j));
        }
        EXPECT_EQ(interp_tune_indices(L), expect) << dims.size() << "-D, dims[0] " << dims[0];
    }
}

// The GPU pipeline tunes before it knows the bound and the range, then
// configures: the same configuration as tuning and configuring at once, at
// any bound, range and override (the choice reads neither the bound nor the range).
TEST(InterpConfigure, TuneThenConfigureIsConfigure) {
    const std::vector<uint64_t> dims = {64, 48, 40};
    const auto L = layout_of(dims);
    const auto s = gather_samples(L, anisotropic_field(dims[0], dims[1], dims[2]));
    std::vector<float> sf(s.begin(), s.end());
    InterpOverrides spline_set, order_set, alpha_set;
    spline_set.spline = kSplineNatural;
    order_set.order[0] = 1, order_set.order[1] = 0, order_set.order[2] = 2;
    alpha_set.alpha = 1.25;
    for (const InterpOverrides& ov : {InterpOverrides{}, spline_set, order_set, alpha_set})
        for (const double eb : {1e-1, 1e-3, 1e-6}) {
            const InterpTuneChoice choice = interp_tune(L, std::span<const double>(s), ov);
            expect_same_config(interp_configure(L, choice, eb, 12.0, ov), interp_configure(L, s, eb, 12.0, ov));
            const InterpTuneChoice from_float = interp_tune(L, std::span<const float>(sf), ov);
            expect_same_config(interp_configure(L, from_float, eb, 3.0, ov),
                               interp_configure(L, std::span<const float>(sf), eb, 3.0, ov));
        }
    const InterpTuneChoice choice = interp_tune(L, std::span<const double>(s), {});
    EXPECT_EQ(choice.order[0], 2);   // as OrderLeastToMostSmoothDeterministic
    EXPECT_EQ(choice.order[2], 0);
}

// A fill value in stripes across x: its jumps would make x look roughest;
// left out (the pipeline's skip), the order is the field's own, x last.
TEST(InterpConfigure, TunerLeavesOutTheFillValue) {
    const std::vector<uint64_t> dims = {64, 48, 40};
    auto v = anisotropic_field(dims[0], dims[1], dims[2]);
    for (size_t i = 0; i < v.size(); ++i)
        if (i % 64 / 5 % 2 == 0) v[i] = 1e20;
    const auto L = layout_of(dims);
    const auto s = gather_samples(L, v);
    EXPECT_EQ(interp_tune(L, std::span<const double>(s), {}).order[0], 0);
    const InterpTuneChoice skipped = interp_tune(L, std::span<const double>(s), {}, 1e20);
    EXPECT_EQ(skipped.order[0], 2);
    EXPECT_EQ(skipped.order[2], 0);
    std::vector<float> sf(s.begin(), s.end());
    const InterpTuneChoice from_float = interp_tune(L, std::span<const float>(sf), {}, double(1e20f));
    EXPECT_EQ(from_float.order[2], 0);
}

TEST(InterpConfigure, OrderLeastToMostSmoothDeterministic) {
    const std::vector<uint64_t> dims = {64, 48, 40};
    const auto v = anisotropic_field(dims[0], dims[1], dims[2]);
    const auto L = layout_of(dims);
    const auto s = gather_samples(L, v);
    const auto cfg = interp_configure(L, s, 1e-2, 12.0, {});
    EXPECT_EQ(cfg.order[0], 2);   // z: rough, first
    EXPECT_EQ(cfg.order[1], 1);
    EXPECT_EQ(cfg.order[2], 0);   // x: smoothest, last (it predicts the most points)
    expect_same_config(cfg, interp_configure(L, s, 1e-2, 12.0, {}));
    // The same field transposed (z fastest): the order follows the data.
    std::vector<double> t(v.size());
    for (uint64_t z = 0; z < dims[2]; ++z)
        for (uint64_t y = 0; y < dims[1]; ++y)
            for (uint64_t x = 0; x < dims[0]; ++x) t[z + dims[2] * (y + dims[1] * x)] = v[x + dims[0] * (y + dims[1] * z)];
    const std::vector<uint64_t> tdims = {dims[2], dims[1], dims[0]};
    const auto TL = layout_of(tdims);
    const auto tcfg = interp_configure(TL, gather_samples(TL, t), 1e-2, 12.0, {});
    EXPECT_EQ(tcfg.order[0], 0);
    EXPECT_EQ(tcfg.order[1], 1);
    EXPECT_EQ(tcfg.order[2], 2);
}

TEST(InterpConfigure, SplinePerDimension) {
    // Along x a wave of unit angular frequency (the natural spline predicts it
    // better), along y a slow cubic (not-a-knot reproduces it).
    const std::vector<uint64_t> dims = {200, 150};
    std::vector<double> v(dims[0] * dims[1]);
    for (uint64_t y = 0; y < dims[1]; ++y)
        for (uint64_t x = 0; x < dims[0]; ++x) {
            const double t = 0.01 * static_cast<double>(y);
            v[x + dims[0] * y] = std::sin(1.0 * static_cast<double>(x)) + t * t * t;
        }
    const auto L = layout_of(dims);
    const auto cfg = interp_configure(L, gather_samples(L, v), 1e-3, 3.0, {});
    EXPECT_EQ(cfg.spline[0], kSplineNatural);
    EXPECT_EQ(cfg.spline[1], kSplineNotAKnot);
    EXPECT_EQ(cfg.order[0], 0);   // the wave is the rougher dim
    EXPECT_EQ(cfg.order[1], 1);
    EXPECT_EQ(cfg.spline[2], kSplineNotAKnot);   // unused dim
    EXPECT_EQ(cfg.order[2], 2);
}

TEST(InterpConfigure, LevelBoundsAndAlpha) {
    const std::vector<uint64_t> dims = {64, 48, 40};
    const auto L = layout_of(dims);
    const auto s = gather_samples(L, anisotropic_field(dims[0], dims[1], dims[2]));
    for (double rel : {1e-1, 1e-2, 5e-3, 1e-3, 1e-4, 1e-5, 1e-7}) {
        const double range = 12.0, eb = rel * range;
        const auto cfg = interp_configure(L, s, eb, range, {});
        EXPECT_NEAR(cfg.alpha, eq1(rel), 1e-9) << rel;
        EXPECT_EQ(cfg.beta, 4.0);
        double power = 1;
        for (uint32_t l = 0; l < L.num_levels; ++l) {
            EXPECT_DOUBLE_EQ(cfg.level_eb[l], eb / std::min(power, cfg.beta)) << "level " << l;
            EXPECT_LE(cfg.level_eb[l], eb);
            EXPECT_GT(cfg.level_eb[l], 0);
            power *= cfg.alpha;
        }
        EXPECT_EQ(cfg.level_eb[0], eb);   // the finest level gets the whole bound
    }
    // 1-D: nine levels, beta caps the coarse ones.
    const auto L1 = layout_of({100000});
    std::vector<double> line(100000);
    for (size_t i = 0; i < line.size(); ++i) line[i] = std::sin(0.001 * static_cast<double>(i));
    InterpOverrides ov;
    ov.alpha = 2;
    ov.beta = 8;
    const auto cfg1 = interp_configure(L1, gather_samples(L1, line), 1e-3, 2.0, ov);
    ASSERT_EQ(L1.num_levels, 9u);
    const double want[9] = {1e-3, 1e-3 / 2, 1e-3 / 4, 1e-3 / 8, 1e-3 / 8, 1e-3 / 8, 1e-3 / 8, 1e-3 / 8, 1e-3 / 8};
    for (int l = 0; l < 9; ++l) EXPECT_DOUBLE_EQ(cfg1.level_eb[l], want[l]) << l;
    // A constant-range field (range 0): alpha 2, never a division by zero.
    const auto flat = interp_configure(L1, gather_samples(L1, std::vector<double>(100000, 1.0)), 1e-3, 0.0, {});
    EXPECT_EQ(flat.alpha, 2.0);
    for (uint32_t l = 0; l < L1.num_levels; ++l) EXPECT_TRUE(std::isfinite(flat.level_eb[l]) && flat.level_eb[l] > 0);
}

TEST(InterpConfigure, OverridesApplied) {
    const std::vector<uint64_t> dims = {64, 48, 40};
    const auto L = layout_of(dims);
    const auto s = gather_samples(L, anisotropic_field(dims[0], dims[1], dims[2]));
    InterpOverrides ov;
    ov.alpha = 1.3;
    ov.beta = 2.0;
    ov.spline = kSplineNatural;
    ov.order[0] = 0;
    ov.order[1] = 2;
    ov.order[2] = 1;
    const auto cfg = interp_configure(L, s, 0.5, 12.0, ov);
    EXPECT_EQ(cfg.alpha, 1.3);
    EXPECT_EQ(cfg.beta, 2.0);
    EXPECT_EQ(cfg.order[0], 0);
    EXPECT_EQ(cfg.order[1], 2);
    EXPECT_EQ(cfg.order[2], 1);
    for (int d = 0; d < 3; ++d) EXPECT_EQ(cfg.spline[d], kSplineNatural);
    EXPECT_DOUBLE_EQ(cfg.level_eb[0], 0.5);
    EXPECT_DOUBLE_EQ(cfg.level_eb[1], 0.5 / 1.3);
    EXPECT_DOUBLE_EQ(cfg.level_eb[2], 0.5 / 1.69);
    ov.spline = kSplineNotAKnot;
    ov.order[0] = -1;
    const auto auto_order = interp_configure(L, s, 0.5, 12.0, ov);
    for (int d = 0; d < 3; ++d) EXPECT_EQ(auto_order.spline[d], kSplineNotAKnot);
    EXPECT_EQ(auto_order.order[2], 0);
    // Samples that do not match the layout are a bug of the caller.
    std::vector<double> short_s(s.begin(), s.end() - 1);
    EXPECT_THROW(interp_configure(L, short_s, 0.5, 12.0, {}), gsz::Error);
}

template <class T>
std::vector<T> smooth_noisy(uint64_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> d(0, 0.05);
    std::vector<T> v(n);
    for (uint64_t i = 0; i < n; ++i)
        v[i] = static_cast<T>(std::sin(0.013 * static_cast<double>(i)) + 0.3 * std::cos(0.0007 * static_cast<double>(i)) +
                              d(rng));
    return v;
}

// The anchor stage then the tiles, as the pipeline runs them.
template <class T>
struct Encoded {
    InterpConfig cfg;
    InterpAnchors<T> anchors;
    InterpEncoded<T> enc;
};

template <class T>
Encoded<T> encode_with(const std::vector<T>& data, const InterpLayout& L, InterpConfig cfg, double eb,
                       uint32_t radius, int mode, int threads) {
    Encoded<T> e;
    e.anchors = interp_anchors_encode_cpu(data.data(), L, cfg, eb, radius, mode, threads);
    cfg.anchors = e.anchors.mode;
    e.cfg = cfg;
    interp_encode_cpu(data.data(), L, e.cfg, eb, radius, e.anchors, e.enc, threads);
    return e;
}

template <class T>
std::vector<T> decode_with(const Encoded<T>& e, std::span<const uint16_t> codes, std::span<const uint64_t> listed,
                           std::span<const uint64_t> residual, const InterpLayout& L, uint32_t radius, int threads) {
    const std::vector<T> raw = e.anchors.mode == kAnchorsRaw ? e.anchors.start : std::vector<T>{};
    const auto start = interp_anchors_decode_cpu<T>(codes, raw, listed, residual, e.enc.outlier_index,
                                                    e.enc.outlier_value, L, e.cfg, radius);
    std::vector<T> out(L.num_elements, T(-12345));
    interp_decode_cpu<T>(codes, start, e.enc.outlier_index, e.enc.outlier_value, e.enc.lorenzo_tiles, L, e.cfg, radius, out.data(),
                         threads);
    return out;
}

template <class T>
void encode_decode(const std::vector<uint64_t>& dims, double eb, uint32_t radius = 512, uint32_t stride_1d = 0,
                   uint8_t tiles = kTilesAuto) {
    const auto L = layout_of(dims, stride_1d);
    auto data = smooth_noisy<T>(L.num_elements, 42);
    data[L.num_elements / 3] = std::numeric_limits<T>::quiet_NaN();
    data[L.num_elements - 1] = std::numeric_limits<T>::infinity();
    data[L.num_elements / 2] = static_cast<T>(1e6);
    data[0] = std::numeric_limits<T>::quiet_NaN();   // an anchor
    InterpOverrides ov;
    ov.tiles = tiles;
    const auto cfg = interp_configure(L, gather_samples(L, data), eb, 2.6, ov);

    for (int mode : {int{kAnchorsRaw}, int{kAnchorsCoded}}) {
        SCOPED_TRACE(testing::Message() << "dims " << dims.size() << "-D, first " << dims[0] << ", eb " << eb << ", "
                                        << sizeof(T) * 8 << "-bit, anchors " << (mode ? "coded" : "raw") << ", tiles "
                                        << int{tiles});
        const Encoded<T> one = encode_with(data, L, cfg, eb, radius, mode, 1);
        const Encoded<T> three = encode_with(data, L, cfg, eb, radius, mode, 3);
        ASSERT_EQ(one.anchors.mode, mode);
        ASSERT_EQ(one.enc.codes.size(), L.num_elements);
        EXPECT_EQ(one.enc.codes, three.enc.codes) << "tiles are not independent of the thread schedule";
        EXPECT_EQ(one.enc.lorenzo_tiles, three.enc.lorenzo_tiles);
        if (tiles == kTilesLorenzo) {
            EXPECT_EQ(one.enc.lorenzo_tiles, std::vector<uint8_t>(L.num_tiles, 1));
        }
        if (tiles == kTilesSpline) {
            EXPECT_TRUE(one.enc.lorenzo_tiles.empty());
        }
        EXPECT_EQ(one.enc.outlier_index, three.enc.outlier_index);
        EXPECT_EQ(one.anchors.listed, three.anchors.listed);
        EXPECT_EQ(one.anchors.listed_residual, three.anchors.listed_residual);
        ASSERT_EQ(one.anchors.start.size(), L.num_anchors);
        EXPECT_EQ(0, std::memcmp(one.anchors.start.data(), three.anchors.start.data(),
                                 one.anchors.start.size() * sizeof(T)));
        ASSERT_EQ(one.enc.outlier_value.size(), one.enc.outlier_index.size());
        uint64_t zeros = 0;
        for (auto c : one.enc.codes) {
            zeros += c == 0;
            ASSERT_LT(c, 2 * radius);
        }
        EXPECT_EQ(zeros, one.enc.outlier_index.size());
        EXPECT_GE(zeros, mode == kAnchorsCoded ? 3u : 2u);   // the NaNs and the Inf at least
        EXPECT_TRUE(std::is_sorted(one.enc.outlier_index.begin(), one.enc.outlier_index.end()));

        for (int threads : {1, 3}) {
            const auto out = decode_with(one, one.enc.codes, one.anchors.listed, one.anchors.listed_residual, L,
                                         radius, threads);
            for (uint64_t i = 0; i < L.num_elements; ++i) {
                if (std::isfinite(data[i]))
                    ASSERT_LE(std::fabs(double(out[i]) - double(data[i])), eb) << "element " << i;
                else
                    ASSERT_EQ(0, std::memcmp(&out[i], &data[i], sizeof(T))) << "element " << i;
            }
        }
    }
}

TEST(InterpCpu, RoundTripAllRanksAndThreads) {
    encode_decode<float>({5000}, 0.01);
    encode_decode<float>({2049}, 0.001);
    encode_decode<float>({130, 33}, 0.01);
    encode_decode<double>({64, 16}, 0.001);
    encode_decode<float>({70, 19, 17}, 0.01);
    encode_decode<double>({33, 17, 9}, 0.001);
    encode_decode<double>({5, 6, 7, 8}, 0.01);
    encode_decode<float>({1, 3, 1, 700}, 0.1);
    encode_decode<double>({64, 64}, 1e-12);   // every residual beyond the radius
    encode_decode<float>({40, 30, 20}, 0.05, 1);
    encode_decode<float>({40, 30, 20}, 1e-4, 32768);
}

// Every tile Lorenzo-coded (format version 10): all ranks, partial tiles,
// NaN, Inf and outliers among the Lorenzo points, every residual an outlier.
TEST(InterpCpu, RoundTripLorenzoTiles) {
    for (uint8_t tiles : {uint8_t{kTilesLorenzo}, uint8_t{kTilesEach}, uint8_t{kTilesAuto}, uint8_t{kTilesSpline}}) {
        encode_decode<float>({5000}, 0.01, 512, 0, tiles);
        encode_decode<float>({5000}, 0.01, 512, 4, tiles);
        encode_decode<float>({130, 33}, 0.01, 512, 0, tiles);
        encode_decode<double>({64, 16}, 0.001, 512, 0, tiles);
        encode_decode<float>({70, 19, 17}, 0.01, 512, 0, tiles);
        encode_decode<double>({33, 17, 9}, 0.001, 512, 0, tiles);
        encode_decode<double>({5, 6, 7, 8}, 0.01, 512, 0, tiles);
        encode_decode<double>({64, 64}, 1e-12, 512, 0, tiles);
        encode_decode<float>({40, 30, 20}, 1e-4, 32768, 0, tiles);
    }
}

// Which points a Lorenzo tile codes: owned, not anchors, not on a face a
// lower tile shares; the array's own low faces are the tile's.
TEST(InterpLorenzoTiles, PointsOfATile) {
    const uint64_t dims[3] = {70, 19, 17};
    const InterpLayout L = interp_layout(3, dims);   // tiles 32 x 8 x 8
    const auto first = L.tile_box(0), second = L.tile_box(1), last = L.tile_box(L.num_tiles - 1);
    const uint32_t anchor[3] = {8, 0, 0}, face[3] = {0, 3, 5}, inner[3] = {1, 1, 1}, edge_far[3] = {32, 1, 1};
    const uint32_t low_y[3] = {5, 0, 3}, beyond[3] = {7, 5, 2};
    EXPECT_FALSE(interp_lorenzo_point(L, first, anchor));
    EXPECT_TRUE(interp_lorenzo_point(L, first, face));   // x = 0 is the array's start
    EXPECT_FALSE(interp_lorenzo_point(L, second, face)); // shared with tile 0
    EXPECT_TRUE(interp_lorenzo_point(L, second, low_y));
    EXPECT_TRUE(interp_lorenzo_point(L, first, inner));
    EXPECT_FALSE(interp_lorenzo_point(L, first, edge_far));   // tile 1's
    // The last tile along x holds 70 - 64 = 6 points: x = 7 is outside it.
    EXPECT_FALSE(interp_lorenzo_point(L, last, beyond));
}

TEST(InterpLorenzoTiles, ChoiceArithmetic) {
    EXPECT_EQ(interp_log2_q8(1), 0);
    EXPECT_EQ(interp_log2_q8(2), 256);
    EXPECT_EQ(interp_log2_q8(3), 256 + 128);
    EXPECT_EQ(interp_log2_q8(1024), 10 * 256);
    EXPECT_EQ(interp_log2_q8(uint64_t{1} << 40), 40 * 256);
    EXPECT_EQ(interp_code_cost(512, 512), 64u);           // a zero residual: a quarter bit
    EXPECT_EQ(interp_code_cost(513, 512), 3u * 256);      // |r| = 1: 3 bits
    EXPECT_EQ(interp_code_cost(512 - 8, 512), 9u * 256);  // |r| = 8: 9 bits
    EXPECT_EQ(interp_code_cost(0, 512), 96u * 256);       // an outlier
    EXPECT_EQ(interp_error_units(1.0f, 1.5f, 600, 1.0), 1u << 22);
    EXPECT_EQ(interp_error_units(1.0f, 2.0f, 600, 1.0), 1u << 24);
    EXPECT_EQ(interp_error_units(1.0f, 1.25f, 600, 2.0), 1u << 22);   // bound 0.5
    EXPECT_EQ(interp_error_units(1.0f, 7.0f, 0, 1.0), 0u);   // outliers are exact
    // Costs in 1/256 bits over 1000 points.  Cheaper by more than 3/64 at equal error:
    // Lorenzo; by less: not; cheaper but four times the error (2 bits a point per
    // doubling: 2 * 2 * 1000 * 256, a little less for the floor): not, unless the
    // saving exceeds that; a smaller error earns nothing.  e: an RMS error of a
    // third of the bound, e / 4 of a sixth (error units are 2^-24 of the bound squared).
    const uint64_t e = 1000 * (uint64_t{1} << 24) / 9;
    EXPECT_TRUE(interp_prefer_lorenzo(1000000, 800000, e, e, 1000));
    EXPECT_FALSE(interp_prefer_lorenzo(1000000, 960000, e, e, 1000));
    EXPECT_FALSE(interp_prefer_lorenzo(1300000, 400000, e / 4, e, 1000));
    EXPECT_TRUE(interp_prefer_lorenzo(1600000, 400000, e / 4, e, 1000));
    EXPECT_TRUE(interp_prefer_lorenzo(2000000, 400000, e / 2, e, 1000));
    EXPECT_FALSE(interp_prefer_lorenzo(1000000, 980000, e, e / 4, 1000));
    // Errors count from an RMS of 1/16 of the bound (kInterpErrorFloorUnits a point):
    // a spline that reconstructs a tile exactly does not make a negligible Lorenzo error
    // look like many doublings (a land mask far inside the bound).
    EXPECT_TRUE(interp_prefer_lorenzo(1000000, 800000, 0, 20000, 1000));
    EXPECT_TRUE(interp_prefer_lorenzo(1000000, 800000, 0, 1000 * kInterpErrorFloorUnits / 4, 1000));
    EXPECT_FALSE(interp_prefer_lorenzo(1000000, 800000, 0, 1000 * kInterpErrorFloorUnits * 4, 1000));
    // Tried on every tile with Lorenzo points, however cheap its spline codes.
    EXPECT_TRUE(interp_lorenzo_may_win(511999, 1000));
    EXPECT_TRUE(interp_lorenzo_may_win(64, 1));
    EXPECT_FALSE(interp_lorenzo_may_win(0, 0));
    EXPECT_TRUE(interp_prefer_lorenzo(500000, 64000, 1000, 1000, 1000));
}

// The pre-test's arithmetic: Lorenzo over the neighbours (none before local
// coordinate 0), the residual in lattice steps rounded half up, priced as a
// code; in a tile, the neighbours' original values but an anchor's start
// value; and the skip at the choice's margin.
template <class T>
uint32_t estimate_in_array(const T* a, uint64_t g, const uint32_t* c, uint32_t rank, uint64_t sy, uint64_t sz,
                           double r) {
    const auto at = [&](bool has, uint32_t dx, uint32_t dy, uint32_t dz) -> T {
        return has ? a[g - dx - dy * sy - dz * sz] : T(0);
    };
    return interp_lorenzo_estimate_of(a[g], c, rank, at, r);
}

TEST(InterpLorenzoTiles, EstimateFromOriginalValues) {
    const double r = 1.0;   // bound 0.5: a lattice step of 1
    const float row[4] = {0.0f, 3.0f, 3.5f, 1.0f};
    const uint32_t c1[3] = {1, 0, 0}, c2[3] = {2, 0, 0}, c3[3] = {3, 0, 0}, c0[3] = {0, 0, 0};
    EXPECT_EQ(estimate_in_array(row, 1, c1, 1, 4, 16, r), 5u * 256);   // |3 - 0| = 3: 2 * 2 + 1 bits
    EXPECT_EQ(estimate_in_array(row, 2, c2, 1, 4, 16, r), 3u * 256);   // 0.5 rounds up to 1
    EXPECT_EQ(estimate_in_array(row, 3, c3, 1, 4, 16, r), 5u * 256);   // |1 - 3.5| = 2.5 -> 3
    EXPECT_EQ(estimate_in_array(row, 0, c0, 1, 4, 16, r), 64u);        // no neighbour: |0 - 0|, a quarter bit
    // A plane is predicted exactly inside (a quarter bit), not on its first row.
    std::vector<float> plane(8 * 4);
    for (uint32_t y = 0; y < 4; ++y)
        for (uint32_t x = 0; x < 8; ++x) plane[y * 8 + x] = static_cast<float>(3 * x + 5 * y);
    const uint32_t inside[3] = {2, 3, 0}, first_row[3] = {2, 0, 0}, first_col[3] = {0, 2, 0};
    EXPECT_EQ(estimate_in_array(plane.data(), 3 * 8 + 2, inside, 2, 8, 32, r), 64u);
    EXPECT_EQ(estimate_in_array(plane.data(), 2, first_row, 2, 8, 32, r), 5u * 256);      // 6 - 3 = 3
    EXPECT_EQ(estimate_in_array(plane.data(), 2 * 8, first_col, 2, 8, 32, r), 7u * 256);  // 10 - 5 = 5
    // A linear field in 3-D, a non-finite neighbour and a far residual (outliers' price).
    std::vector<double> cube(4 * 4 * 4);
    for (uint32_t i = 0; i < cube.size(); ++i) cube[i] = 0.25 * (i % 4) - 0.5 * (i / 4 % 4) + 2.0 * (i / 16);
    const uint32_t c111[3] = {1, 1, 1};
    EXPECT_EQ(estimate_in_array(cube.data(), 21, c111, 3, 4, 16, 8.0), 64u);
    cube[0] = std::numeric_limits<double>::quiet_NaN();
    EXPECT_EQ(estimate_in_array(cube.data(), 21, c111, 3, 4, 16, 8.0), 96u * 256);
    cube[0] = 0.0;
    cube[21] += 16384.0 / 8.0;
    EXPECT_EQ(estimate_in_array(cube.data(), 21, c111, 3, 4, 16, 8.0), 96u * 256);
    // In a tile: point (1, 1) of a 2-D field of zeros whose anchor (0, 0) starts at 5 in the
    // workspace (a coded anchor's reconstruction): p = 0 + 0 - 5, five steps (7 bits); the
    // stages' reconstructions elsewhere in the workspace are not read.
    const uint64_t dims[2] = {64, 16};
    const InterpLayout L = interp_layout(2, dims);
    const std::vector<float> zeros(64 * 16, 0.0f);
    std::vector<float> ws(L.ws_size(), 100.0f);
    ws[0] = 5.0f;
    const uint32_t c11[3] = {1, 1, 0};
    EXPECT_EQ(interp_lorenzo_estimate(zeros.data(), 64 + 1, ws.data(), 1 + L.ws_stride(1), c11, L, r), 7u * 256);
    ws[0] = 0.0f;
    EXPECT_EQ(interp_lorenzo_estimate(zeros.data(), 64 + 1, ws.data(), 1 + L.ws_stride(1), c11, L, r), 64u);
    // Skipped where the estimate is not 3/64 below the spline's cost.
    EXPECT_FALSE(interp_lorenzo_skip(1000, 953));
    EXPECT_TRUE(interp_lorenzo_skip(1000, 954));
}

// The choice on data whose halves want different codings: a smooth wave
// (spline tiles) and a random walk (Lorenzo tiles).
TEST(InterpLorenzoTiles, AutoChoosesPerTile) {
    const uint64_t dims[2] = {256, 128};
    const InterpLayout L = interp_layout(2, dims);   // tiles 64 x 16: 4 x 8
    std::vector<float> data(256 * 128);
    std::mt19937 rng(7);
    std::normal_distribution<double> step(0.0, 1.0);
    double w = 0;
    for (uint64_t y = 0; y < 128; ++y)
        for (uint64_t x = 0; x < 256; ++x) {
            w += step(rng);
            data[y * 256 + x] = y < 64 ? static_cast<float>(100.0 * std::sin(x / 20.0) * std::cos(y / 15.0))
                                       : static_cast<float>(w);
        }
    InterpOverrides ov;
    ov.tiles = kTilesEach;
    const auto cfg = interp_configure(L, gather_samples(L, data), 0.01, 200.0, ov);
    const Encoded<float> e = encode_with(data, L, cfg, 0.01, 32768, kAnchorsCoded, 2);
    ASSERT_EQ(e.enc.lorenzo_tiles.size(), L.num_tiles);
    for (uint64_t t = 0; t < L.num_tiles; ++t) {   // tile row 3 reads the walk's first row as its far face
        const uint64_t row = t / L.grid[0];
        if (row != 3) {
            EXPECT_EQ(e.enc.lorenzo_tiles[t], row >= 4 ? 1 : 0) << "tile " << t;
        }
    }
    const auto out = decode_with(e, e.enc.codes, e.anchors.listed, e.anchors.listed_residual, L, 32768, 2);
    for (size_t i = 0; i < data.size(); ++i) ASSERT_LE(std::fabs(double(out[i]) - double(data[i])), 0.01);
}

// kTilesAuto's gate: its sample tiles (the midpoints of equal shares of the
// raster, each once), and its decision: the choice where the sample's
// Lorenzo tiles save at least 1/40 of its spline cost, else every tile
// spline-coded.
TEST(InterpLorenzoTiles, GateSample) {
    for (uint64_t n : {uint64_t{1}, uint64_t{5}, uint64_t{256}, uint64_t{257}, uint64_t{48735}}) {
        const uint64_t k = interp_gate_count(n);
        EXPECT_EQ(k, std::min<uint64_t>(n, kInterpGateTiles));
        for (uint64_t i = 0; i < k; ++i) {
            EXPECT_LT(interp_gate_tile(n, i), n);
            if (i > 0) {
                EXPECT_GT(interp_gate_tile(n, i), interp_gate_tile(n, i - 1));
            }
        }
    }
    EXPECT_EQ(interp_gate_tile(48735, 0), 95u);   // 48735 / 512
    EXPECT_FALSE(interp_lorenzo_tiles_pay({0, 0}));
    EXPECT_FALSE(interp_lorenzo_tiles_pay({4000, 99}));
    EXPECT_TRUE(interp_lorenzo_tiles_pay({4000, 100}));
}

TEST(InterpLorenzoTiles, GateDecides) {
    const auto chosen = [](const auto& data, const std::vector<uint64_t>& dims, double eb, uint8_t tiles,
                           double range) {
        using T = typename std::decay_t<decltype(data)>::value_type;
        const InterpLayout L = interp_layout(static_cast<uint32_t>(dims.size()), dims.data());
        InterpOverrides ov;
        ov.tiles = tiles;
        const auto cfg = interp_configure(L, gather_samples(L, data), eb, range, ov);
        const Encoded<T> e = encode_with(data, L, cfg, eb, 32768, kAnchorsCoded, 2);
        const auto out = decode_with(e, e.enc.codes, e.anchors.listed, e.anchors.listed_residual, L, 32768, 2);
        for (size_t i = 0; i < data.size(); ++i) EXPECT_LE(std::fabs(double(out[i]) - double(data[i])), eb);
        return std::count(e.enc.lorenzo_tiles.begin(), e.enc.lorenzo_tiles.end(), 1);
    };
    // wmag at rel 1e-3: 56 of 432 tiles would choose Lorenzo, saving ~1% of the sample's cost: spline.
    std::vector<float> wmag(91 * 91 * 91);
    FILE* f = std::fopen(GSZ_SOURCE_DIR "/data/sperr_wmag_91x91x91.f32", "rb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fread(wmag.data(), sizeof(float), wmag.size(), f), wmag.size());
    std::fclose(f);
    EXPECT_GT(chosen(wmag, {91, 91, 91}, 0.265, kTilesEach, 265.3), 0);
    EXPECT_EQ(chosen(wmag, {91, 91, 91}, 0.265, kTilesAuto, 265.3), 0);
    // A smooth half and a random walk: the walk's tiles save far more than 1/40; the choice as kTilesEach's.
    std::vector<float> mixed(256 * 128);
    std::mt19937 rng(7);
    std::normal_distribution<double> step(0.0, 1.0);
    double w = 0;
    for (size_t i = 0; i < mixed.size(); ++i) {
        w += step(rng);
        const double x = static_cast<double>(i % 256), y = static_cast<double>(i / 256);
        mixed[i] = y < 64 ? static_cast<float>(100.0 * std::sin(x / 20.0) * std::cos(y / 15.0)) : static_cast<float>(w);
    }
    const auto each = chosen(mixed, {256, 128}, 0.01, kTilesEach, 200.0);
    EXPECT_GT(each, 0);
    EXPECT_EQ(chosen(mixed, {256, 128}, 0.01, kTilesAuto, 200.0), each);
}

TEST(InterpCpu, RoundTripOneDimStrides) {
    for (uint32_t s = 2; s <= 512; s *= 4) {
        encode_decode<float>({5000}, 0.01, 512, s);
        encode_decode<double>({2049}, 1e-3, 32768, std::min(s * 2, 512u));
        encode_decode<float>({90}, 0.1, 512, s);   // fewer points than one 512 stride
    }
}

// The 1-D stride's choice: short strides where neighbours predict better
// than far points (a rough series), the paper's 512 on a smooth one, the
// override as given; the same on float and double copies of the same values,
// and on its own rerun.
TEST(InterpConfigure, OneDimStrideChoice) {
    // Rough: runs of 8 equal values with a little noise (neighbours alike,
    // points 8 apart unrelated); smooth: a slow sine.  Float-exact values.
    std::mt19937 rng(5);
    std::normal_distribution<double> level(0, 1), noise(0, 0.05);
    std::vector<double> walk(20000), sine(20000);
    double run = 0;
    for (size_t i = 0; i < walk.size(); ++i) {
        if (i % 8 == 0) run = level(rng);
        walk[i] = static_cast<float>(run + noise(rng));
        sine[i] = static_cast<float>(std::sin(1e-3 * static_cast<double>(i)));
    }
    const auto choose = [](const std::vector<double>& v, double rel, InterpOverrides ov = {}) {
        const auto starts = interp_stride_segments(v.size());
        const uint64_t len = std::min<uint64_t>(v.size(), kInterpStrideSegment);
        std::vector<double> sample;
        std::vector<float> sample_f;
        for (const uint64_t s : starts)
            for (uint64_t i = 0; i < len; ++i) {
                sample.push_back(v[s + i]);
                sample_f.push_back(static_cast<float>(v[s + i]));
            }
        const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
        const double range = *hi - *lo;
        const InterpChoice1d d = interp_choose_stride_1d(std::span<const double>(sample), len, rel * range, range, 32763, ov);
        for (const InterpChoice1d e :
             {interp_choose_stride_1d(std::span<const float>(sample_f), len, rel * range, range, 32763, ov),
              interp_choose_stride_1d(std::span<const double>(sample), len, rel * range, range, 32763, ov)}) {
            EXPECT_EQ(d.stride, e.stride);
            EXPECT_EQ(d.lorenzo, e.lorenzo);
        }
        return ov.tiles == kTilesAuto ? d.lorenzo : d.stride;
    };
    for (double rel : {1e-2, 1e-3}) {
        EXPECT_LT(choose(walk, rel), 512u) << rel;
        EXPECT_EQ(choose(sine, rel), 512u) << rel;
    }
    InterpOverrides ov;
    // With the tiles automatic, Lorenzo at the full bound is a candidate: the
    // runs' neighbours predict each other best, the sine's splines win.
    ov.tiles = kTilesAuto;
    for (double rel : {1e-2, 1e-3}) {
        EXPECT_EQ(choose(walk, rel, ov), 1u) << rel;
        EXPECT_EQ(choose(sine, rel, ov), 0u) << rel;
    }
    // Not where the stride is given (nor where the tiles are: above).
    ov.anchor_stride = 64;
    EXPECT_EQ(choose(walk, 1e-2, ov), 0u);
    ov.tiles = kTilesSpline;
    EXPECT_EQ(choose(walk, 1e-2, ov), 64u);
    ov.anchor_stride = 3;
    EXPECT_THROW(choose(walk, 1e-2, ov), gsz::Error);
    // Values whose residuals overflow (f64 near the largest double, a tiny
    // bound) land in the end bins; a sample larger than gsz gathers is
    // judged alike.
    std::vector<double> huge(8192);
    for (size_t i = 0; i < huge.size(); ++i) huge[i] = (i % 2 ? 1.7e308 : -1.7e308) * (1.0 - 1e-3 * double(i % 7));
    EXPECT_TRUE(interp_valid_stride_1d(
        interp_choose_stride_1d(std::span<const double>(huge), 2048, 1e-300, HUGE_VAL, 32763, {}).stride));
    std::vector<double> big(40000 * 2);
    for (size_t i = 0; i < big.size(); ++i) big[i] = walk[i % walk.size()];
    EXPECT_LT(interp_choose_stride_1d(std::span<const double>(big), 40000, 1e-2 * 8.0, 8.0, 32763, {}).stride, 512u);
    // No usable bound, or nothing finite: the default.
    std::vector<double> nans(5000, std::numeric_limits<double>::quiet_NaN());
    EXPECT_EQ(interp_choose_stride_1d(std::span<const double>(nans.data(), 4096), 4096, 0.1, 1.0, 32763, {}).stride, 512u);
    EXPECT_EQ(interp_choose_stride_1d(std::span<const double>(walk.data(), 4096), 4096, 0.0, 1.0, 32763, {}).stride, 512u);
    InterpOverrides automatic;
    automatic.tiles = kTilesAuto;
    EXPECT_FALSE(interp_choose_stride_1d(std::span<const double>(nans.data(), 4096), 4096, 0.1, 1.0, 32763, automatic).lorenzo);
    // Lorenzo's residuals past the radius are outliers, priced as such: a radius of 1 leaves the splines.
    EXPECT_TRUE(interp_choose_stride_1d(std::span<const double>(big), 40000, 1e-2 * 8.0, 8.0, 32763, automatic).lorenzo);
    EXPECT_FALSE(interp_choose_stride_1d(std::span<const double>(big), 40000, 1e-2 * 8.0, 8.0, 1, automatic).lorenzo);
    // Segments: spread, aligned to 512, inside the array.
    for (uint64_t n : {uint64_t{1}, uint64_t{4096}, uint64_t{4097}, uint64_t{10000}, uint64_t{65536},
                       uint64_t{163842}, uint64_t{1} << 30}) {
        const auto starts = interp_stride_segments(n);
        const uint64_t len = std::min<uint64_t>(n, kInterpStrideSegment);
        ASSERT_FALSE(starts.empty());
        EXPECT_LE(starts.size(), kInterpStrideSegments);
        EXPECT_EQ(starts.front(), 0u);
        for (size_t k = 0; k < starts.size(); ++k) {
            EXPECT_EQ(starts[k] % 512, 0u);
            EXPECT_LE(starts[k] + len, n);
            if (k) {
                EXPECT_GT(starts[k], starts[k - 1]) << n;
            }
        }
    }
}

// A zero code without an outlier entry is CORRUPT (checked before the tiles
// are decoded), never an abort from inside the parallel region.
TEST(InterpCpu, ZeroCodeWithoutOutlierIsCorrupt) {
    const auto L = layout_of({70, 19, 17});
    auto data = smooth_noisy<float>(L.num_elements, 8);
    data[100] = std::numeric_limits<float>::quiet_NaN();
    data[2000] = std::numeric_limits<float>::infinity();
    const auto cfg = interp_configure(L, gather_samples(L, data), 0.01, 2.6, {});
    const auto e = encode_with(data, L, cfg, 0.01, 512, kAnchorsRaw, 1);
    ASSERT_GE(e.enc.outlier_index.size(), 2u);
    for (int threads : {1, 3}) {
        for (size_t drop : {size_t{0}, e.enc.outlier_index.size() - 1}) {
            auto idx = e.enc.outlier_index;
            auto val = e.enc.outlier_value;
            idx.erase(idx.begin() + static_cast<ptrdiff_t>(drop));
            val.erase(val.begin() + static_cast<ptrdiff_t>(drop));
            std::vector<float> out(L.num_elements);
            try {
                interp_decode_cpu<float>(e.enc.codes, e.anchors.start, idx, val, e.enc.lorenzo_tiles, L, e.cfg, 512, out.data(), threads);
                ADD_FAILURE() << "a zero code without its outlier was accepted";
            } catch (const gsz::Error& err) {
                EXPECT_EQ(err.status(), GSZ_STATUS_CORRUPT);
            }
        }
    }
}

TEST(InterpCpu, RawAnchorsAreTheExactValues) {
    const std::vector<uint64_t> dims = {70, 19, 17};
    const auto L = layout_of(dims);
    const auto data = smooth_noisy<float>(L.num_elements, 9);
    const auto cfg = interp_configure(L, gather_samples(L, data), 0.01, 2.6, {});
    const auto e = encode_with(data, L, cfg, 0.01, 512, kAnchorsRaw, 2);
    ASSERT_EQ(e.anchors.start.size(), L.num_anchors);
    size_t k = 0;
    for (uint64_t z = 0; z < dims[2]; z += 8)
        for (uint64_t y = 0; y < dims[1]; y += 8)
            for (uint64_t x = 0; x < dims[0]; x += 8) {
                const uint64_t g = x + dims[0] * (y + dims[1] * z);
                EXPECT_EQ(e.anchors.start[k++], data[g]);
                EXPECT_EQ(e.enc.codes[g], 512) << "a raw anchor's code is the zero residual";
            }
    EXPECT_EQ(k, e.anchors.start.size());
}

// Coded anchors: on the coarsest level's lattice (so within its bound, not
// only the user's), the codes are the Lorenzo residuals of the lattice values,
// and the ones that cannot be coded are outliers whose residual is listed.
TEST(InterpCpu, CodedAnchorsAreLorenzoResidualsOnTheCoarsestLattice) {
    const std::vector<uint64_t> dims = {70, 19, 17};
    const auto L = layout_of(dims);
    auto data = smooth_noisy<float>(L.num_elements, 10);
    const uint64_t nan_anchor = 8 + dims[0] * 8, far_anchor = 16 + dims[0] * (8 + dims[1] * 8);
    data[nan_anchor] = std::numeric_limits<float>::quiet_NaN();
    data[far_anchor] = 1e30f;   // off the lattice: code 0, exact
    const double eb = 0.01;
    const auto cfg = interp_configure(L, gather_samples(L, data), eb, 2.6, {});
    const auto e = encode_with(data, L, cfg, eb, 512, kAnchorsCoded, 2);
    ASSERT_EQ(e.anchors.mode, kAnchorsCoded);
    const auto aq = interp_anchor_quant(L, cfg);
    EXPECT_LT(aq.eb, eb) << "3-D at eb 0.01: the coarsest level's bound is tighter than the user's";
    const auto grid = interp_anchor_grid(L);
    std::vector<int64_t> q(grid.count());
    for (uint64_t a = 0; a < grid.count(); ++a) q[a] = interp_anchor_lattice(data[grid.element(a, L)], aq);
    std::vector<uint64_t> listed;
    for (uint64_t a = 0; a < grid.count(); ++a) {
        const uint64_t g = grid.element(a, L);
        const uint16_t code = e.enc.codes[g];
        EXPECT_EQ(code, e.anchors.codes[a]);
        if (code == 0) {
            listed.push_back(a);
            EXPECT_EQ(0, std::memcmp(&e.anchors.start[a], &data[g], sizeof(float))) << "anchor " << a;
            continue;
        }
        // Residual: q minus its backward neighbours' Lorenzo prediction, by hand.
        const uint64_t a0 = a % grid.dims[0], a1 = (a / grid.dims[0]) % grid.dims[1], a2 = a / (grid.dims[0] * grid.dims[1]);
        auto Q = [&](uint64_t i, uint64_t j, uint64_t k) { return q[(k * grid.dims[1] + j) * grid.dims[0] + i]; };
        int64_t pred = 0;
        if (a0) pred += Q(a0 - 1, a1, a2);
        if (a1) pred += Q(a0, a1 - 1, a2);
        if (a2) pred += Q(a0, a1, a2 - 1);
        if (a0 && a1) pred -= Q(a0 - 1, a1 - 1, a2);
        if (a0 && a2) pred -= Q(a0 - 1, a1, a2 - 1);
        if (a1 && a2) pred -= Q(a0, a1 - 1, a2 - 1);
        if (a0 && a1 && a2) pred += Q(a0 - 1, a1 - 1, a2 - 1);
        EXPECT_EQ(int64_t{code} - 512, q[a] - pred) << "anchor " << a;
        EXPECT_LE(std::fabs(double(e.anchors.start[a]) - double(data[g])), aq.eb * (1 + 1e-6)) << "anchor " << a;
    }
    EXPECT_EQ(listed, e.anchors.listed);
    EXPECT_EQ(listed.size(), 2u) << "the NaN and the far anchor";
}

// Listed anchors and anchor codes must agree one to one.
TEST(InterpCpu, CodedAnchorListMismatchIsCorrupt) {
    constexpr uint32_t kRadius = 32768;
    const auto L = layout_of({130, 33});
    auto data = smooth_noisy<float>(L.num_elements, 11);
    data[16] = std::numeric_limits<float>::infinity();   // anchor 1
    const auto cfg = interp_configure(L, gather_samples(L, data), 0.01, 2.6, {});
    const auto e = encode_with(data, L, cfg, 0.01, kRadius, kAnchorsCoded, 1);
    ASSERT_EQ(e.anchors.listed, std::vector<uint64_t>{1});
    const auto& listed = e.anchors.listed;
    const auto& residual = e.anchors.listed_residual;
    auto expect_corrupt = [&](std::span<const uint16_t> codes, std::span<const uint64_t> l,
                              std::span<const uint64_t> r, const char* what) {
        try {
            decode_with(e, codes, l, r, L, kRadius, 1);
            ADD_FAILURE() << what << " was accepted";
        } catch (const gsz::Error& err) {
            EXPECT_EQ(err.status(), GSZ_STATUS_CORRUPT) << what;
        }
    };
    expect_corrupt(e.enc.codes, {}, {}, "a zero-code anchor without its listed residual");
    const std::vector<uint64_t> two = {1, 2}, two_r = {residual[0], 0};
    expect_corrupt(e.enc.codes, two, two_r, "a listed anchor whose code is not 0");
    const std::vector<uint64_t> other = {0};
    expect_corrupt(e.enc.codes, other, residual, "a residual listed for another anchor");
    // The listed residual is what makes the sums right: a wrong one moves
    // every later anchor, but decodes (it is not detectable).
    const auto out = decode_with(e, e.enc.codes, listed, residual, L, kRadius, 1);
    EXPECT_EQ(0, std::memcmp(&out[16], &data[16], sizeof(float)));
}

TEST(InterpCpu, DecodeRejectsStreamsThatDoNotMatchTheLayout) {
    const auto L = layout_of({130, 33});
    const auto data = smooth_noisy<float>(L.num_elements, 5);
    const auto cfg = interp_configure(L, gather_samples(L, data), 0.01, 2.6, {});
    const auto e = encode_with(data, L, cfg, 0.01, 512, kAnchorsRaw, 1);
    std::vector<float> out(L.num_elements);
    auto anchors = e.anchors.start;
    anchors.pop_back();
    EXPECT_THROW(interp_decode_cpu<float>(e.enc.codes, anchors, e.enc.outlier_index, e.enc.outlier_value, e.enc.lorenzo_tiles, L, e.cfg,
                                          512, out.data(), 1),
                 gsz::Error);
    auto codes = e.enc.codes;
    codes.pop_back();
    EXPECT_THROW(interp_decode_cpu<float>(codes, e.anchors.start, e.enc.outlier_index, e.enc.outlier_value, e.enc.lorenzo_tiles, L, e.cfg,
                                          512, out.data(), 1),
                 gsz::Error);
    EXPECT_THROW(interp_anchors_decode_cpu<float>(codes, anchors, {}, {}, e.enc.outlier_index, e.enc.outlier_value, L,
                                                  e.cfg, 512),
                 gsz::Error);
}

}  // namespace

