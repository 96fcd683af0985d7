// CPU backend of the G-Interp predictor: OpenMP over tiles, each tile walked
// stage by stage in a private workspace, exactly as a GPU block walks it.
#include "predict/interp/interp.hpp"

#include "runtime/parallel.hpp"
#include "runtime/status.hpp"

#include <algorithm>
#include <type_traits>
#include <cmath>

namespace gsz::predict {

namespace {

// The points of a tile's workspace (tile plus far faces, clipped to the
// array), or only those it owns, in raster order: `f(ws_offset, global_index)`,
// or `f(ws_offset, global_index, local coordinates)` where f takes them.
template <class F>
void for_each_ws_point(const InterpLayout& L, const InterpLayout::TileBox& box, bool owned_only, F&& f) {
    const uint32_t e0 = owned_only ? std::min(box.last[0] + 1, L.tile[0]) : box.last[0] + 1;
    const uint32_t e1 = owned_only ? std::min(box.last[1] + 1, L.tile[1]) : box.last[1] + 1;
    const uint32_t e2 = owned_only ? std::min(box.last[2] + 1, L.tile[2]) : box.last[2] + 1;
    for (uint32_t z = 0; z < e2; ++z)
        for (uint32_t y = 0; y < e1; ++y) {
            const uint32_t c[3] = {0, y, z};
            const uint64_t g = L.global_index(box.origin, c);
            const uint32_t w = interp_ws_offset(L, c);
            for (uint32_t x = 0; x < e0; ++x) {
                if constexpr (std::is_invocable_v<F&, uint32_t, uint64_t, const uint32_t*>) {
                    const uint32_t cx[3] = {x, y, z};
                    f(w + x, g + x, static_cast<const uint32_t*>(cx));
                } else {
                    f(w + x, g + x);
                }
            }
        }
}

// Runs `body(stage, u, level)` for every stage of every level, coarsest first.
template <class F>
void for_each_stage(const InterpLayout& L, const InterpConfig& cfg, const uint32_t* last, F&& body) {
    for (uint32_t l = L.num_levels; l-- > 0;) {
        const uint32_t u = 1u << l;
        const InterpOrder order{{cfg.order[0], cfg.order[1], cfg.order[2]}};
        for (uint32_t k = 0; k < L.rank; ++k) body(interp_stage(L, order, k, u, last), u, l);
    }
}

// The extremes of the values a tile's stages have written so far (and its
// anchors), as the predictor reads them (interp_neighbour).  A stage reads
// only such values (the points of coarser levels and of the level's earlier
// stages), and the jump guard's tests compare differences of them against the
// threshold: where the extremes differ by at most the threshold (the rounded
// difference, which bounds every rounded difference the tests compute), none
// can fire, and the stage runs without them.  Exact, so the archive's bytes
// do not depend on it.
struct StageSpan {
    double lo = HUGE_VAL, hi = -HUGE_VAL;
    template <class T>
    void add(T v) {
        const double x = interp_neighbour(v);
        lo = x < lo ? x : lo, hi = x > hi ? x : hi;
    }
    // The threshold a stage needs: kInterpNoJump where no test can fire.
    double jump_for_stage(double jump) const { return hi - lo <= jump ? kInterpNoJump : jump; }
};

// Every stage point of a tile, coarsest level first: f(stage, w, along, u,
// spline, jump, level) sets ws[w], its reconstruction, which the span then
// takes in (the jump guard's threshold of the stages after it).  The encoder
// and the decoder walk the tile alike.
template <class T, class F>
void for_each_stage_point(const InterpLayout& L, const InterpConfig& cfg, const uint32_t* last, const T* ws,
                          StageSpan& span, F&& f) {
    for_each_stage(L, cfg, last, [&](const InterpStage& s, uint32_t u, uint32_t l) {
        const uint32_t spline = cfg.spline[s.dim];
        const double jump = span.jump_for_stage(cfg.jump);
        for (uint32_t i = 0; i < s.total; ++i) {
            uint32_t w, along;
            s.locate(i, w, along);
            f(s, w, along, u, spline, jump, l);
            span.add(ws[w]);
        }
    });
}

// Lorenzo tiles (interp_lorenzo_tiles.hpp).  The owned points of a tile in
// raster order: f(workspace offset, global index, local coordinates).
template <class F>
void for_each_owned_point(const InterpLayout& L, const InterpLayout::TileBox& box, F&& f) {
    for_each_ws_point(L, box, true, f);
}

// The encoder's choice for one tile whose spline codes (tile_codes) and
// reconstructions (ws) are done: Lorenzo codes replace the spline codes of the
// tile's Lorenzo points where they cost less (or where `mode` forces them).
// The spline's cost comes first: a tile whose estimate (from the tile as
// loaded) says spline (interp_lorenzo_skip) builds no lattice; then
// Lorenzo's cost, and the two errors only where the costs leave the choice
// open (interp_prefer_lorenzo adds a non-negative distortion to Lorenzo's
// side), as the CUDA phase does.  q: workspace-sized scratch.
// Returns whether the tile is Lorenzo-coded; adds the tile's costs to *sums
// where given (kTilesAuto's gate).
template <class T>
bool lorenzo_tile_encode(const T* data, const InterpLayout& L, const InterpLayout::TileBox& box, const T* ws,
                         uint16_t* tile_codes, int64_t* q, const QuantParams& qp, double eb, uint8_t mode,
                         InterpGateSums* sums = nullptr) {
    const bool choose = interp_tiles_choose(mode);
    uint64_t spline_cost = 0, n = 0;
    if (choose) {
        for_each_owned_point(L, box, [&](uint32_t w, uint64_t, const uint32_t* c) {
            if (!interp_lorenzo_point(L, box, c)) return;
            ++n;
            spline_cost += interp_code_cost(tile_codes[w], qp.radius);
        });
        if (sums) sums->spline_cost += spline_cost;
        if (!interp_lorenzo_may_win(spline_cost, n)) return false;
        uint64_t estimate = 0;
        for_each_owned_point(L, box, [&](uint32_t w, uint64_t g, const uint32_t* c) {
            if (interp_lorenzo_point(L, box, c)) estimate += interp_lorenzo_estimate(data, g, ws, w, c, L, qp.r);
        });
        if (interp_lorenzo_skip(spline_cost, estimate)) return false;
    }
    for_each_owned_point(L, box, [&](uint32_t w, uint64_t g, const uint32_t* c) {
        q[w] = interp_lattice(interp_lorenzo_point(L, box, c) ? data[g] : ws[w], qp.r);
    });
    const uint32_t s1 = L.ws_stride(1), s2 = L.ws_stride(2);
    const auto lorenzo_code_at = [&](uint32_t w, uint64_t g, const uint32_t* c) {
        int64_t own;
        const bool ok = quantize(data[g], qp, own);
        return ok ? lorenzo_code(own - interp_lorenzo_prediction(L.rank, c, w, s1, s2, q), qp.radius) : uint16_t{0};
    };
    if (choose) {
        uint64_t lorenzo_cost = 0;
        for_each_owned_point(L, box, [&](uint32_t w, uint64_t g, const uint32_t* c) {
            if (interp_lorenzo_point(L, box, c)) lorenzo_cost += interp_code_cost(lorenzo_code_at(w, g, c), qp.radius);
        });
        bool lorenzo = false;
        if (lorenzo_cost * 64 < spline_cost * 61) {
            const double inv_eb = 1.0 / eb;
            uint64_t spline_error = 0, lorenzo_error = 0;
            for_each_owned_point(L, box, [&](uint32_t w, uint64_t g, const uint32_t* c) {
                if (!interp_lorenzo_point(L, box, c)) return;
                spline_error += interp_error_units(data[g], ws[w], tile_codes[w], inv_eb);
                lorenzo_error += interp_error_units(data[g], lattice_value<T>(q[w], qp.ebx2), lorenzo_code_at(w, g, c),
                                                    inv_eb);
            });
            lorenzo = interp_prefer_lorenzo(spline_cost, lorenzo_cost, spline_error, lorenzo_error, n);
        }
        if (sums && lorenzo) sums->saving += spline_cost - lorenzo_cost;
        if (!lorenzo) return false;
    }
    for_each_owned_point(L, box, [&](uint32_t w, uint64_t g, const uint32_t* c) {
        if (interp_lorenzo_point(L, box, c)) tile_codes[w] = lorenzo_code_at(w, g, c);
    });
    return true;
}

// The decoder's counterpart, after the tile's stages: the Lorenzo points'
// values from their codes (those with code 0 hold their outlier values already).
template <class T>
void lorenzo_tile_decode(const InterpLayout& L, const InterpLayout::TileBox& box, T* ws, const uint16_t* tile_codes,
                         int64_t* q, const QuantParams& qp) {
    const uint32_t s1 = L.ws_stride(1), s2 = L.ws_stride(2);
    for_each_owned_point(L, box, [&](uint32_t w, uint64_t, const uint32_t* c) {
        const uint16_t code = tile_codes[w];
        if (code != 0 && interp_lorenzo_point(L, box, c)) {
            q[w] = wrap_add(interp_lorenzo_prediction(L.rank, c, w, s1, s2, q), static_cast<int64_t>(code) - qp.radius);
            ws[w] = lattice_value<T>(q[w], qp.ebx2);
        } else {
            q[w] = interp_lattice(ws[w], qp.r);
        }
    });
}

}  // namespace

InterpLayout interp_layout(uint32_t rank, const uint64_t* dims, uint32_t stride_1d) {
    uint64_t kept[4];
    uint32_t n = 0;
    for (uint32_t d = 0; d < rank; ++d)
        if (dims[d] > 1) kept[n++] = dims[d];
    if (n == 0) kept[n++] = 1;
    if (n == 4) {
        kept[2] *= kept[3];
        n = 3;
    }
    const InterpGeometry& g = n == 1 ? kInterpGeometry1d : n == 2 ? kInterpGeometry2d : kInterpGeometry3d;
    InterpLayout L;
    L.rank = n;
    L.anchor_stride = g.stride;
    if (n == 1 && stride_1d != 0) {
        GSZ_CHECK(interp_valid_stride_1d(stride_1d), GSZ_STATUS_INVALID_ARGUMENT,
                  "interp anchor stride %u is not a power of two from %u to %u", stride_1d, kInterpMinStride1d,
                  kInterpGeometry1d.stride);
        L.anchor_stride = stride_1d;
    }
    L.num_levels = 0;
    while ((1u << L.num_levels) < L.anchor_stride) ++L.num_levels;
    L.num_tiles = L.num_anchors = L.num_elements = 1;
    for (uint32_t d = 0; d < 3; ++d) {
        L.dims[d] = d < n ? kept[d] : 1;
        L.tile[d] = d < n ? g.tile[d] : 1;
        L.grid[d] = (L.dims[d] + L.tile[d] - 1) / L.tile[d];
        L.anchor_dims[d] = (L.dims[d] - 1) / L.anchor_stride + 1;
        L.num_tiles *= L.grid[d];
        L.num_anchors *= L.anchor_dims[d];
        L.num_elements *= L.dims[d];
    }
    return L;
}

double interp_alpha_for(double e) {
    // cuSZ-i Eq. 1 (reference-algorithms.md §2.4): piecewise linear in the decade of e.
    if (!(e < 1e-1)) return 2.0;
    if (e >= 1e-2) return 1.75 + 0.25 * (e - 1e-2) / (1e-1 - 1e-2);
    if (e >= 1e-3) return 1.5 + 0.25 * (e - 1e-3) / (1e-2 - 1e-3);
    if (e >= 1e-4) return 1.25 + 0.25 * (e - 1e-4) / (1e-3 - 1e-4);
    if (e >= 1e-5) return 1.0 + 0.25 * (e - 1e-5) / (1e-4 - 1e-5);
    return 1.0;
}

namespace {

// Calls f(g) with the coordinates of every sample point, in the order of
// interp_tune_point (dim 0 fastest).  Each dim's coordinates are computed
// once, not a 128-bit division per coordinate and point (the GPU pipeline
// tunes on the host, on its critical path).
template <class F>
void for_each_tune_point(const InterpLayout& L, F&& f) {
    uint64_t k[3];
    interp_tune_counts(L, k);
    std::vector<uint64_t> at[3];
    for (int d = 0; d < 3; ++d)
        for (uint64_t i = 0; i < k[d]; ++i) at[d].push_back(interp_tune_coordinate(L.dims[d], k[d], i));
    uint64_t g[3];
    for (uint64_t z = 0; z < k[2]; ++z)
        for (uint64_t y = 0; y < k[1]; ++y)
            for (uint64_t x = 0; x < k[0]; ++x) {
                g[0] = at[0][x], g[1] = at[1][y], g[2] = at[2][z];
                f(static_cast<const uint64_t*>(g));
            }
}

}  // namespace

std::vector<uint64_t> interp_tune_indices(const InterpLayout& L) {
    std::vector<uint64_t> idx;
    for_each_tune_point(L, [&](const uint64_t* g) {
        for (uint32_t j = 0; j <= 4 * L.rank; ++j) idx.push_back(interp_tune_index(L, g, j));
    });
    return idx;
}

namespace {

template <class S>
InterpTuneChoice tune(const InterpLayout& L, std::span<const S> samples, const InterpOverrides& ov, double skip) {
    InterpTuneChoice cfg;
    // Per dim and spline, the summed |prediction - value| at unit stride,
    // over the sample points with room on both sides and finite neighbours.
    double err[3][2] = {};
    const size_t group = 1 + 4 * L.rank;
    GSZ_CHECK(samples.size() % group == 0, GSZ_STATUS_INTERNAL, "interp tuning: %zu samples", samples.size());
    size_t at = 0;
    for_each_tune_point(L, [&](const uint64_t* g) {
        const S* v = samples.data() + at;
        at += group;
        for (uint32_t d = 0; d < L.rank; ++d) {
            if (!interp_tune_room(L, g, d)) continue;
            const double x = v[0], a = v[1 + 4 * d], b = v[2 + 4 * d], c = v[3 + 4 * d], e = v[4 + 4 * d];
            if (!std::isfinite(x) || !std::isfinite(a) || !std::isfinite(b) || !std::isfinite(c) || !std::isfinite(e))
                continue;
            if (x == skip || a == skip || b == skip || c == skip || e == skip) continue;
            err[d][kSplineNotAKnot] += std::fabs((9.0 * (b + c) - (a + e)) * 0.0625 - x);
            err[d][kSplineNatural] += std::fabs((23.0 * (b + c) - 3.0 * (a + e)) / 40.0 - x);
        }
    });
    GSZ_CHECK(at == samples.size(), GSZ_STATUS_INTERNAL, "interp tuning: %zu samples, used %zu", samples.size(), at);

    double chosen[3] = {0, 0, 0};
    for (uint32_t d = 0; d < L.rank; ++d) {
        const bool natural = err[d][kSplineNatural] < err[d][kSplineNotAKnot];
        cfg.spline[d] = static_cast<uint8_t>(ov.spline >= 0 ? ov.spline : natural ? kSplineNatural : kSplineNotAKnot);
        chosen[d] = err[d][cfg.spline[d]];
    }
    if (ov.order[0] >= 0) {
        for (uint32_t k = 0; k < 3; ++k) cfg.order[k] = static_cast<uint8_t>(k < L.rank ? ov.order[k] : k);
    } else {
        // Least smooth first: the last dim of each level predicts the most
        // points, so it should be the smoothest.  Ties: slower dim first.
        uint8_t dims[3] = {0, 1, 2};
        std::stable_sort(dims, dims + L.rank, [&](uint8_t p, uint8_t q) {
            if (chosen[p] != chosen[q]) return chosen[p] > chosen[q];
            return p > q;
        });
        for (uint32_t k = 0; k < 3; ++k) cfg.order[k] = k < L.rank ? dims[k] : static_cast<uint8_t>(k);
    }
    return cfg;
}

}  // namespace

// The bound of a Lorenzo tile's points: the one whose uniform quantization
// error has the mean square of a spline tile's (its points' bounds weighted by
// the share of the points at each level), so that a Lorenzo tile's error is
// on the whole no larger than a spline tile's would be (the choice weighs the
// rest: interp_prefer_lorenzo).  Where every tile is Lorenzo-coded there is
// no spline tile to match, and dual quantization spreads no error from point
// to point (the reason for the levels' tighter bounds): the full bound, as
// the lorenzo pipeline's (1-D: 0.8 of it gave 6-12% more bytes).
double interp_lorenzo_bound(const InterpLayout& L, const InterpConfig& cfg) {
    if (cfg.tiles == kTilesLorenzo) return cfg.level_eb[0];
    const double coarser = 1.0 / static_cast<double>(1u << L.rank);   // the share of points on the next grid
    double share = 1.0, sum = 0.0, weight = 0.0;
    for (uint32_t l = 0; l < L.num_levels; ++l) {
        const double f = share * (1.0 - coarser);
        sum += f * cfg.level_eb[l] * cfg.level_eb[l];
        weight += f;
        share *= coarser;
    }
    return std::min(cfg.level_eb[0], std::sqrt(sum / weight));
}

InterpConfig interp_level_bounds(const InterpLayout& L, double eb_abs, double value_range,
                                 const InterpOverrides& ov) {
    InterpConfig cfg;
    const double relative = value_range > 0 ? eb_abs / value_range : HUGE_VAL;
    cfg.alpha = ov.alpha > 0 ? ov.alpha : interp_alpha_for(relative);
    cfg.beta = ov.beta > 0 ? ov.beta : 4.0;
    double power = 1.0;   // alpha^l by repeated multiplication
    for (uint32_t l = 0; l < L.num_levels; ++l) {
        cfg.level_eb[l] = eb_abs / std::min(power, cfg.beta);
        power *= cfg.alpha;
    }
    cfg.jump = ov.jump_guard ? interp_jump_threshold(value_range) : kInterpNoJump;
    cfg.tiles = ov.tiles;
    cfg.lorenzo_eb = interp_lorenzo_bound(L, cfg);
    return cfg;
}

std::vector<uint64_t> interp_stride_segments(uint64_t n) {
    const uint64_t len = std::min(n, kInterpStrideSegment);
    const uint64_t count = n <= kInterpStrideSegment ? 1 : std::min(kInterpStrideSegments, n / kInterpStrideSegment);
    std::vector<uint64_t> starts;
    for (uint64_t k = 0; k < count; ++k) {
        // Spread over the array, aligned to the default stride so that every
        // candidate's anchors fall on the segment's multiples of it.
        const uint64_t at = count > 1 ? k * (n - len) / (count - 1) : 0;
        starts.push_back(at / kInterpGeometry1d.stride * kInterpGeometry1d.stride);
    }
    return starts;
}

namespace {

// Order-0 entropy of integer codes (clamped to +-kStrideBins: the rare larger
// ones share the end bins), in bits a code.
constexpr int64_t kStrideBins = 1024;

struct CodeEntropy {
    std::vector<uint64_t> count = std::vector<uint64_t>(2 * kStrideBins + 1, 0);
    uint64_t total = 0;
    // The code of a finite residual v (in steps of the lattice): v rounded
    // to the nearest integer (ties to even, as rint) by adding and removing
    // 1.5 * 2^52 after clamping, which is exact there; a call to rint per
    // point was most of the choice's time.
    void add(double v) {
        const double bound = static_cast<double>(kStrideBins);
        // (fmin / fmax: calls into libm); an overflow's inf, or NaN, lands in an end bin
        const double c = v > bound ? bound : v >= -bound ? v : -bound;
        const double q = (c + 0x1.8p52) - 0x1.8p52;
        ++count[static_cast<size_t>(static_cast<int64_t>(q) + kStrideBins)];
        ++total;
    }
    // log2(total) - sum c log2 c / total, the c log2 c from a table (a log2
    // per bin took 0.7 ms of the choice at tight bounds, where most bins fill).
    double bits_per_code() const {
        static const std::vector<double> xlogx = [] {
            std::vector<double> t(kInterpStrideSegment * kInterpStrideSegments + 1, 0.0);
            for (size_t c = 1; c < t.size(); ++c) t[c] = static_cast<double>(c) * std::log2(static_cast<double>(c));
            return t;
        }();
        if (total == 0) return 0.0;
        double sum = 0;
        for (const uint64_t c : count)
            sum += c < xlogx.size() ? xlogx[c] : static_cast<double>(c) * std::log2(static_cast<double>(c));
        return std::log2(static_cast<double>(total)) - sum / static_cast<double>(total);
    }
};

template <class S>
InterpChoice1d choose_stride_1d(std::span<const S> sample, uint64_t segment, double eb_abs, double value_range,
                                uint32_t radius, const InterpOverrides& ov) {
    if (ov.anchor_stride != 0) {
        GSZ_CHECK(interp_valid_stride_1d(ov.anchor_stride), GSZ_STATUS_INVALID_ARGUMENT,
                  "interp anchor stride %u is not a power of two from %u to %u", ov.anchor_stride, kInterpMinStride1d,
                  kInterpGeometry1d.stride);
        return {ov.anchor_stride, false};
    }
    const uint32_t widest = kInterpGeometry1d.stride;
    if (!(eb_abs > 0) || !(eb_abs < HUGE_VAL) || segment == 0 || sample.size() % segment != 0) return {widest, false};
    // The level bounds of the widest layout hold every candidate's.
    const uint64_t one = segment;
    const InterpConfig bounds = interp_level_bounds(interp_layout(1, &one), eb_abs, value_range, ov);
    const uint32_t levels = interp_layout(1, &one).num_levels;
    const int64_t n = static_cast<int64_t>(segment);
    const auto finite = [](double v) { return std::isfinite(v); };
    double level_bits[kInterpMaxLevels] = {};
    // Segments without a non-finite value (the usual case) skip the tests.
    std::vector<bool> all_finite;
    for (size_t s0 = 0; s0 < sample.size(); s0 += segment)
        all_finite.push_back(std::all_of(sample.begin() + s0, sample.begin() + s0 + segment,
                                         [&](S v) { return finite(v); }));
    for (uint32_t l = 0; l < levels; ++l) {
        const int64_t u = int64_t{1} << l;
        const double r = 1.0 / (2.0 * bounds.level_eb[l]);
        CodeEntropy h;
        for (size_t s0 = 0, k = 0; s0 < sample.size(); s0 += segment, ++k) {
            const S* x = sample.data() + s0;
            const bool tested = !all_finite[k];
            for (int64_t i = u; i + u < n; i += 2 * u) {
                const bool has_a = i >= 3 * u, has_d = i + 3 * u < n;
                const double a = has_a ? x[i - 3 * u] : 0.0, b = x[i - u], c = x[i + u], d = has_d ? x[i + 3 * u] : 0.0;
                if (tested && (!finite(x[i]) || !finite(a) || !finite(b) || !finite(c) || !finite(d))) continue;
                const double pred = has_a && has_d ? (9.0 * (b + c) - (a + d)) * 0.0625
                                                   : interp_spline_unguarded(a, b, c, d, has_a, true, has_d,
                                                                             kSplineNotAKnot);
                h.add((x[i] - pred) * r);
            }
        }
        level_bits[l] = h.bits_per_code();
    }
    double best_bits = 0;
    uint32_t best = widest;
    std::vector<double> lattice(sample.size());
    for (uint32_t L = levels; L >= 1; --L) {
        const int64_t stride = int64_t{1} << L;
        // Coded anchors: on the lattice of half the coarsest level's bound,
        // Lorenzo over the anchor grid (interp_anchor_quant).
        const double r = 1.0 / bounds.level_eb[L - 1];
        // The anchors' lattice points (rint, as the anchor stage rounds), for those the candidate uses.
        for (size_t s0 = 0; s0 < sample.size(); s0 += segment)
            for (int64_t i = 0; i < n; i += stride)
                lattice[s0 + i] = finite(sample[s0 + i]) ? std::rint(static_cast<double>(sample[s0 + i]) * r) : 0.0;
        CodeEntropy h;
        for (size_t s0 = 0; s0 < sample.size(); s0 += segment) {
            const S* x = sample.data() + s0;
            for (int64_t i = stride; i < n; i += stride)
                if (finite(x[i]) && finite(x[i - stride])) h.add(lattice[s0 + i] - lattice[s0 + i - stride]);
        }
        double bits = h.bits_per_code() / static_cast<double>(stride);
        for (uint32_t l = 0; l < L; ++l) bits += level_bits[l] / static_cast<double>(int64_t{2} << l);
        if (L == levels || bits < best_bits * 0.99 - 0.002) {
            best_bits = bits;
            best = static_cast<uint32_t>(stride);
        }
    }
    if (ov.tiles != kTilesAuto) return {best, false};
    // Every tile Lorenzo-coded: the dual-quantized residuals on the lattice of
    // the full bound (lorenzo_math.hpp's quantize, as the tiles'), each
    // segment's first value left out, plus what its outliers cost (an index
    // and a value each): points whose lattice value misses the bound after
    // rounding to S, or whose lattice index is past what the lattice holds
    // (bounds near an ulp, where the splines, which quantize residuals, do not).
    const QuantParams qp = QuantParams::from_bound(eb_abs, 0);
    CodeEntropy h;
    uint64_t points = 0, outliers = 0;
    for (size_t s0 = 0; s0 < sample.size(); s0 += segment) {
        const S* x = sample.data() + s0;
        int64_t before = 0;
        for (int64_t i = 0; i < n; ++i) {
            if (!finite(x[i])) continue;
            int64_t q;
            ++points;
            bool outlier = !quantize(x[i], qp, q);
            if (i > 0 && finite(x[i - 1])) {
                const int64_t r = q - before;
                if (r <= -static_cast<int64_t>(radius) || r >= static_cast<int64_t>(radius))
                    outlier = true;
                else
                    h.add(static_cast<double>(r));
            }
            outliers += outlier;
            before = q;
        }
    }
    const double outlier_bits = points ? static_cast<double>(outliers) / static_cast<double>(points) *
                                             static_cast<double>(64 + 8 * sizeof(S))
                                       : 0.0;
    // Compared at equal distortion: the splines' levels err less than the full
    // bound (their mean square is that of bounds.lorenzo_eb, interp_lorenzo_bound),
    // and matching that error would cost Lorenzo log2(eb / lorenzo_eb) bits a
    // value more (at rel 1e-2, 0.37 bits: a choice on rates alone took records
    // whose splines were 2 dB better for 20% less ratio).
    const double distortion_bits = std::log2(eb_abs / bounds.lorenzo_eb);
    if (h.bits_per_code() + outlier_bits + distortion_bits < best_bits * 0.99 - 0.002) return {widest, true};
    return {best, false};
}

}  // namespace

InterpChoice1d interp_choose_stride_1d(std::span<const float> sample, uint64_t segment, double eb_abs,
                                       double value_range, uint32_t radius, const InterpOverrides& overrides) {
    return choose_stride_1d(sample, segment, eb_abs, value_range, radius, overrides);
}

InterpChoice1d interp_choose_stride_1d(std::span<const double> sample, uint64_t segment, double eb_abs,
                                       double value_range, uint32_t radius, const InterpOverrides& overrides) {
    return choose_stride_1d(sample, segment, eb_abs, value_range, radius, overrides);
}

InterpTuneChoice interp_tune(const InterpLayout& L, std::span<const double> samples, const InterpOverrides& ov,
                             double skip) {
    return tune(L, samples, ov, skip);
}

InterpTuneChoice interp_tune(const InterpLayout& L, std::span<const float> samples, const InterpOverrides& ov,
                             double skip) {
    return tune(L, samples, ov, skip);
}

InterpConfig interp_configure(const InterpLayout& L, const InterpTuneChoice& choice, double eb_abs,
                              double value_range, const InterpOverrides& ov) {
    InterpConfig cfg = interp_level_bounds(L, eb_abs, value_range, ov);
    std::copy_n(choice.spline, 3, cfg.spline);
    std::copy_n(choice.order, 3, cfg.order);
    return cfg;
}

InterpConfig interp_configure(const InterpLayout& L, std::span<const double> samples, double eb_abs,
                              double value_range, const InterpOverrides& ov, double skip) {
    return interp_configure(L, tune(L, samples, ov, skip), eb_abs, value_range, ov);
}

InterpConfig interp_configure(const InterpLayout& L, std::span<const float> samples, double eb_abs,
                              double value_range, const InterpOverrides& ov, double skip) {
    return interp_configure(L, tune(L, samples, ov, skip), eb_abs, value_range, ov);
}

namespace {

// Runs f(workspace offset, anchor index) over the anchors of a tile's workspace.
template <class F>
void for_each_ws_anchor(const InterpLayout& L, const InterpLayout::TileBox& box, F&& f) {
    const uint32_t S = L.anchor_stride;
    for (uint32_t z = 0; z <= box.last[2]; z += (L.rank > 2 ? S : 1))
        for (uint32_t y = 0; y <= box.last[1]; y += (L.rank > 1 ? S : 1))
            for (uint32_t x = 0; x <= box.last[0]; x += S) {
                const uint32_t c[3] = {x, y, z};
                f(interp_ws_offset(L, c), L.anchor_index(box.origin, c));
            }
}

}  // namespace

template <class T>
InterpAnchors<T> interp_anchors_encode_cpu(const T* data, const InterpLayout& L, const InterpConfig& cfg, double eb,
                                           uint32_t radius, int requested, int num_threads) {
    const InterpAnchorGrid grid = interp_anchor_grid(L);
    const int64_t na = static_cast<int64_t>(grid.count());
    InterpAnchors<T> out;
    out.start.resize(static_cast<size_t>(na));
    if (requested != kAnchorsRaw) {
        const InterpLevelQuant aq = interp_anchor_quant(L, cfg);
        std::vector<int64_t> q(static_cast<size_t>(na));
        out.codes.resize(static_cast<size_t>(na));
#pragma omp parallel for num_threads(resolve_threads(num_threads)) schedule(static)
        for (int64_t a = 0; a < na; ++a) q[a] = interp_anchor_lattice(data[grid.element(a, L)], aq);
#pragma omp parallel for num_threads(resolve_threads(num_threads)) schedule(static)
        for (int64_t a = 0; a < na; ++a)
            out.codes[a] = interp_anchor_code(data[grid.element(a, L)], q[a], interp_anchor_residual(q.data(), grid, a),
                                              aq, eb, radius, out.start[a]);
        for (int64_t a = 0; a < na; ++a)
            if (out.codes[a] == 0) {
                out.listed.push_back(static_cast<uint64_t>(a));
                out.listed_residual.push_back(interp_anchor_residual(q.data(), grid, a));
            }
        out.mode = interp_choose_anchor_mode(requested, grid.count(), out.listed.size(), sizeof(T));
        if (out.mode == kAnchorsCoded) return out;
        out = InterpAnchors<T>{};
        out.start.resize(static_cast<size_t>(na));
    }
    out.mode = kAnchorsRaw;
    for (int64_t a = 0; a < na; ++a) out.start[a] = data[grid.element(a, L)];
    return out;
}

template <class T>
std::vector<T> interp_anchors_decode_cpu(std::span<const uint16_t> codes, std::span<const T> raw,
                                         std::span<const uint64_t> listed, std::span<const uint64_t> listed_residual,
                                         std::span<const uint64_t> outlier_index, std::span<const T> outlier_value,
                                         const InterpLayout& L, const InterpConfig& cfg, uint32_t radius) {
    constexpr gsz_status bad = GSZ_STATUS_CORRUPT;
    const InterpAnchorGrid grid = interp_anchor_grid(L);
    const uint64_t na = grid.count();
    GSZ_CHECK(codes.size() == L.num_elements && listed.size() == listed_residual.size() &&
                  outlier_index.size() == outlier_value.size(),
              GSZ_STATUS_INTERNAL, "interp_anchors_decode_cpu: stream sizes do not match the layout");
    if (cfg.anchors == kAnchorsRaw) {
        GSZ_CHECK(raw.size() == na, GSZ_STATUS_INTERNAL, "interp_anchors_decode_cpu: %zu raw anchors", raw.size());
        for (uint64_t a = 0; a < na; ++a)   // encoders write `radius` there
            GSZ_CHECK(codes[grid.element(a, L)] == radius, bad, "interp: raw anchor %llu has a code other than the radius",
                      static_cast<unsigned long long>(a));
        return {raw.begin(), raw.end()};
    }
    // Residuals: from the codes, or listed for the anchors with code 0 (one
    // entry each, in order), then prefix sums along each dim give q.
    std::vector<uint64_t> q(na);
    size_t k = 0;
    for (uint64_t a = 0; a < na; ++a) {
        const uint16_t code = codes[grid.element(a, L)];
        if (code != 0) {
            q[a] = static_cast<uint64_t>(static_cast<int64_t>(code) - static_cast<int64_t>(radius));
            continue;
        }
        GSZ_CHECK(k < listed.size() && listed[k] == a, bad, "interp_anchors: anchor %llu has code 0 but is not listed",
                  static_cast<unsigned long long>(a));
        q[a] = listed_residual[k++];
    }
    GSZ_CHECK(k == listed.size(), bad, "interp_anchors: anchor %llu is listed but its code is not 0",
              static_cast<unsigned long long>(k < listed.size() ? listed[k] : 0));
    const uint64_t n0 = grid.dims[0], n1 = grid.dims[1], n2 = grid.dims[2];
    for (uint64_t r = 0; r < n1 * n2; ++r)
        for (uint64_t i = 1; i < n0; ++i) q[r * n0 + i] += q[r * n0 + i - 1];
    for (uint64_t z = 0; z < n2; ++z)
        for (uint64_t y = 1; y < n1; ++y)
            for (uint64_t i = 0; i < n0; ++i) q[(z * n1 + y) * n0 + i] += q[(z * n1 + y - 1) * n0 + i];
    for (uint64_t z = 1; z < n2; ++z)
        for (uint64_t i = 0; i < n0 * n1; ++i) q[z * n0 * n1 + i] += q[(z - 1) * n0 * n1 + i];

    const InterpLevelQuant aq = interp_anchor_quant(L, cfg);
    std::vector<T> start(na);
    for (uint64_t a = 0; a < na; ++a) {
        const uint64_t g = grid.element(a, L);
        if (codes[g] != 0) {
            start[a] = lattice_value<T>(static_cast<int64_t>(q[a]), aq.ebx2);
            continue;
        }
        const auto it = std::lower_bound(outlier_index.begin(), outlier_index.end(), g);
        GSZ_CHECK(it != outlier_index.end() && *it == g, bad, "interp: element %llu has code 0 but no outlier value",
                  static_cast<unsigned long long>(g));
        start[a] = outlier_value[static_cast<size_t>(it - outlier_index.begin())];
    }
    return start;
}

template <class T>
void interp_encode_cpu(const T* data, const InterpLayout& L, const InterpConfig& cfg, double eb, uint32_t radius,
                       const InterpAnchors<T>& anchors, InterpEncoded<T>& out, int num_threads, const T* original) {
    // The stages see the original values (a fill point takes its prediction);
    // the Lorenzo phase and the outliers code `data` (stand-ins for the fill).
    const T* loads = original ? original : data;
    GSZ_CHECK(anchors.mode == cfg.anchors && anchors.start.size() == L.num_anchors &&
                  (anchors.mode == kAnchorsRaw || anchors.codes.size() == L.num_anchors),
              GSZ_STATUS_INTERNAL, "interp_encode_cpu: the anchor stage does not match the config");
    const uint64_t n = L.num_elements;
    out.codes.assign(n, 0);
    const int64_t R = radius;
    InterpLevelQuant lq[kInterpMaxLevels];
    for (uint32_t l = 0; l < L.num_levels; ++l) lq[l] = InterpLevelQuant::from_bound(cfg.level_eb[l]);

    const bool coded = anchors.mode == kAnchorsCoded;
    const QuantParams qp = QuantParams::from_bound(cfg.lorenzo_eb, radius);
    // Codes tile t into out.codes (tiles in `mode`): its stages, then the Lorenzo phase.
    const auto code_tile = [&](uint64_t t, T* ws, uint16_t* tile_codes, int64_t* q, uint8_t mode,
                               InterpGateSums* sums, bool& jump_taken) {
        const auto box = L.tile_box(t);
        StageSpan span;
        for_each_ws_point(L, box, false, [&](uint32_t w, uint64_t g) { ws[w] = loads[g]; });
        for_each_ws_anchor(L, box, [&](uint32_t w, uint64_t a) {
            ws[w] = anchors.start[a];
            span.add(ws[w]);
            tile_codes[w] = coded ? anchors.codes[a] : static_cast<uint16_t>(radius);
        });
        for_each_stage_point(L, cfg, box.last, ws, span,
                             [&](const InterpStage& s, uint32_t w, uint32_t along, uint32_t u, uint32_t spline,
                                 double jump, uint32_t l) {
                                 tile_codes[w] = interp_encode_point(ws, s, w, along, u, spline, jump, lq[l], eb, R,
                                                                     cfg.fill, &jump_taken);
                             });
        bool lorenzo = false;
        if (mode != kTilesSpline)
            lorenzo = lorenzo_tile_encode(data, L, box, ws, tile_codes, q, qp, cfg.level_eb[0], mode, sums);
        for_each_ws_point(L, box, true, [&](uint32_t w, uint64_t g) { out.codes[g] = tile_codes[w]; });
        return lorenzo;
    };
    // kTilesAuto: the gate's sample first (its codes are written again below).
    uint8_t mode = cfg.tiles;
    if (mode == kTilesAuto) {   // integer sums: the same in any order
        uint64_t spline_cost = 0, saving = 0;
        ParallelErrors gate_errors;
        const auto count = static_cast<int64_t>(interp_gate_count(L.num_tiles));
#pragma omp parallel num_threads(resolve_threads(num_threads)) reduction(+ : spline_cost, saving)
        {
            std::vector<T> ws(L.ws_size());
            std::vector<uint16_t> tile_codes(L.ws_size());
            std::vector<int64_t> q(L.ws_size());
            bool taken = false;
#pragma omp for schedule(dynamic, 4)
            for (int64_t k = 0; k < count; ++k) gate_errors.capture([&] {
                InterpGateSums sums;
                code_tile(interp_gate_tile(L.num_tiles, static_cast<uint64_t>(k)), ws.data(), tile_codes.data(),
                          q.data(), kTilesEach, &sums, taken);
                spline_cost += sums.spline_cost;
                saving += sums.saving;
            });
        }
        gate_errors.rethrow();
        mode = interp_lorenzo_tiles_pay(InterpGateSums{spline_cost, saving}) ? kTilesEach : kTilesSpline;
    }
    std::vector<uint8_t> lorenzo_tiles(mode == kTilesSpline ? 0 : L.num_tiles);
    ParallelErrors errors;
    bool jump_taken = false;
#pragma omp parallel num_threads(resolve_threads(num_threads)) reduction(|| : jump_taken)
    {
        std::vector<T> ws(L.ws_size());
        std::vector<uint16_t> tile_codes(L.ws_size());
        std::vector<int64_t> q(mode == kTilesSpline ? 0 : L.ws_size());
#pragma omp for schedule(dynamic, 16)
        for (uint64_t t = 0; t < L.num_tiles; ++t) errors.capture([&] {
            const bool lorenzo = code_tile(t, ws.data(), tile_codes.data(), q.data(), mode, nullptr, jump_taken);
            if (mode != kTilesSpline) lorenzo_tiles[t] = lorenzo;
        });
    }
    errors.rethrow();
    out.jump_taken = jump_taken;
    if (std::find(lorenzo_tiles.begin(), lorenzo_tiles.end(), 1) == lorenzo_tiles.end()) lorenzo_tiles.clear();
    out.lorenzo_tiles = std::move(lorenzo_tiles);

    // Outliers (coded anchors with code 0 among them) in raster order.
    out.outlier_index.clear();
    out.outlier_value.clear();
    for (uint64_t i = 0; i < n; ++i)
        if (out.codes[i] == 0) {
            out.outlier_index.push_back(i);
            out.outlier_value.push_back(data[i]);
        }
}

template <class T>
void interp_decode_cpu(std::span<const uint16_t> codes, std::span<const T> anchors,
                       std::span<const uint64_t> outlier_index, std::span<const T> outlier_value,
                       std::span<const uint8_t> lorenzo_tiles, const InterpLayout& L, const InterpConfig& cfg,
                       uint32_t radius, T* out, int num_threads) {
    GSZ_CHECK(codes.size() == L.num_elements && anchors.size() == L.num_anchors &&
                  outlier_index.size() == outlier_value.size() &&
                  (lorenzo_tiles.empty() || lorenzo_tiles.size() == L.num_tiles),
              GSZ_STATUS_INTERNAL, "interp_decode_cpu: stream sizes do not match the layout");
    const int64_t R = radius;
    InterpLevelQuant lq[kInterpMaxLevels];
    for (uint32_t l = 0; l < L.num_levels; ++l) lq[l] = InterpLevelQuant::from_bound(cfg.level_eb[l]);

    // The zero codes must be exactly the listed outliers (raster order), so
    // a tile never looks for a value that is not there and no entry is spare.
    ParallelErrors errors;
#pragma omp parallel num_threads(resolve_threads(num_threads))
    errors.capture([&] {
        const auto [first, last] = thread_range(codes.size());
        auto k = static_cast<size_t>(std::lower_bound(outlier_index.begin(), outlier_index.end(), first) -
                                     outlier_index.begin());
        for (uint64_t i = first; i < last; ++i) {
            if (codes[i] != 0) continue;
            GSZ_CHECK(k < outlier_index.size() && outlier_index[k] == i, GSZ_STATUS_CORRUPT,
                      "interp: element %llu has code 0 but no outlier value", static_cast<unsigned long long>(i));
            ++k;
        }
        GSZ_CHECK(k == outlier_index.size() || outlier_index[k] >= last, GSZ_STATUS_CORRUPT,
                  "outlier_indices: element %llu is listed but its code is not 0",
                  static_cast<unsigned long long>(outlier_index[k]));
    });
    errors.rethrow();

#pragma omp parallel num_threads(resolve_threads(num_threads))
    {
        std::vector<T> ws(L.ws_size());
        std::vector<uint16_t> tile_codes(L.ws_size());
        std::vector<uint64_t> tile_index(L.ws_size());
        std::vector<int64_t> q(lorenzo_tiles.empty() ? 0 : L.ws_size());
        const QuantParams qp = QuantParams::from_bound(cfg.lorenzo_eb, radius);
#pragma omp for schedule(dynamic, 16)
        for (uint64_t t = 0; t < L.num_tiles; ++t) errors.capture([&] {
            const auto box = L.tile_box(t);
            for_each_ws_point(L, box, false, [&](uint32_t w, uint64_t g) {
                tile_codes[w] = codes[g];
                tile_index[w] = g;
            });
            StageSpan span;
            for_each_ws_anchor(L, box, [&](uint32_t w, uint64_t a) {
                ws[w] = anchors[a];
                span.add(ws[w]);
            });
            for_each_stage_point(L, cfg, box.last, ws.data(), span,
                                 [&](const InterpStage& s, uint32_t w, uint32_t along, uint32_t u, uint32_t spline,
                                     double jump, uint32_t l) {
                                     const uint16_t code = tile_codes[w];
                                     if (code != 0) {
                                         const double pred =
                                             interp_point_prediction(ws.data(), s, w, along, u, spline, jump);
                                         ws[w] = interp_reconstruct<T>(code, pred, lq[l], R);
                                         return;
                                     }
                                     const auto it = std::lower_bound(outlier_index.begin(), outlier_index.end(),
                                                                      tile_index[w]);
                                     GSZ_CHECK(it != outlier_index.end() && *it == tile_index[w], GSZ_STATUS_CORRUPT,
                                               "interp: element %llu has code 0 but no outlier value",
                                               static_cast<unsigned long long>(tile_index[w]));
                                     ws[w] = outlier_value[static_cast<size_t>(it - outlier_index.begin())];
                                 });
            // A Lorenzo tile's stages decoded its Lorenzo points' codes as
            // spline residuals; those values are replaced here (no other
            // point read them: interp_lorenzo_tiles.hpp).
            if (!lorenzo_tiles.empty() && lorenzo_tiles[t])
                lorenzo_tile_decode(L, box, ws.data(), tile_codes.data(), q.data(), qp);
            for_each_ws_point(L, box, true, [&](uint32_t w, uint64_t g) { out[g] = ws[w]; });
        });
    }
    errors.rethrow();
}

template InterpAnchors<float> interp_anchors_encode_cpu<float>(const float*, const InterpLayout&,
                                                                const InterpConfig&, double, uint32_t, int, int);
template InterpAnchors<double> interp_anchors_encode_cpu<double>(const double*, const InterpLayout&,
                                                                  const InterpConfig&, double, uint32_t, int, int);
template std::vector<float> interp_anchors_decode_cpu<float>(std::span<const uint16_t>, std::span<const float>,
                                                             std::span<const uint64_t>, std::span<const uint64_t>,
                                                             std::span<const uint64_t>, std::span<const float>,
                                                             const InterpLayout&, const InterpConfig&, uint32_t);
template std::vector<double> interp_anchors_decode_cpu<double>(std::span<const uint16_t>, std::span<const double>,
                                                               std::span<const uint64_t>, std::span<const uint64_t>,
                                                               std::span<const uint64_t>, std::span<const double>,
                                                               const InterpLayout&, const InterpConfig&, uint32_t);
template void interp_encode_cpu<float>(const float*, const InterpLayout&, const InterpConfig&, double, uint32_t,
                                       const InterpAnchors<float>&, InterpEncoded<float>&, int, const float*);
template void interp_encode_cpu<double>(const double*, const InterpLayout&, const InterpConfig&, double, uint32_t,
                                        const InterpAnchors<double>&, InterpEncoded<double>&, int, const double*);
template void interp_decode_cpu<float>(std::span<const uint16_t>, std::span<const float>, std::span<const uint64_t>,
                                       std::span<const float>, std::span<const uint8_t>, const InterpLayout&,
                                       const InterpConfig&, uint32_t, float*, int);
template void interp_decode_cpu<double>(std::span<const uint16_t>, std::span<const double>,
                                        std::span<const uint64_t>, std::span<const double>, std::span<const uint8_t>,
                                        const InterpLayout&, const InterpConfig&, uint32_t, double*, int);

}  // namespace gsz::predict
