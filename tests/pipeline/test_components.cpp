// Component dims (pipeline/components.hpp): the choice, the moves, and whole
// compressions of arrays whose small dim holds separate quantities.
#include "test_util.hpp"

#include "format/archive.hpp"
#include "pipeline/components.hpp"
#include "runtime/status.hpp"

#include <xxhash.h>

#include <numeric>
#include <random>

using namespace gsz::test;
using gsz::pipeline::ComponentSplit;

namespace {

// N points of C independent random walks, stored N x C (components fastest),
// or with every component a scaled copy of the first (correlated).
std::vector<float> walks(uint64_t n, uint32_t c, bool correlated, uint32_t seed = 7) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> step(0.0, 1.0);
    std::vector<double> pos(c, 0.0);
    std::vector<float> v(n * c);
    for (uint64_t i = 0; i < n; ++i) {
        for (uint32_t k = 0; k < c; ++k) {
            pos[k] = correlated && k > 0 ? pos[0] * (1.0 + 0.1 * k) + 3.0 * k : pos[k] + step(rng);
            v[i * c + k] = static_cast<float>(50.0 * k + pos[k]);
        }
    }
    return v;
}

int32_t choose(const std::vector<float>& v, const std::vector<uint64_t>& dims,
               gsz_pipeline pipeline = GSZ_PIPELINE_LORENZO) {
    return gsz::pipeline::choose_component_dim(
        static_cast<uint32_t>(dims.size()), dims.data(), pipeline, [&](const std::vector<uint64_t>& index) {
            std::vector<double> out;
            for (uint64_t i : index) out.push_back(v.at(i));
            return out;
        });
}

}  // namespace

TEST(Components, ChosenWhereTheComponentsAreBetterApart) {
    const auto apart = walks(4000, 3, false);
    EXPECT_EQ(choose(apart, {3, 4000}), 0);
    EXPECT_EQ(choose(apart, {3, 4000}, GSZ_PIPELINE_INTERP), 0);
    EXPECT_EQ(choose(apart, {3, 4000}, GSZ_PIPELINE_FAST), 0) << "fast's blocks would mix the components";
    // Correlated channels predict each other: kept together.
    EXPECT_EQ(choose(walks(4000, 3, true), {3, 4000}), -1);
    // The same bytes seen as 3 rows of 4000 (components slowest): no dim qualifies
    // as components (4000 is too long), and 3 x 4000 read the other way is not these data.
    std::vector<float> soa(apart.size());
    for (uint64_t i = 0; i < 4000; ++i)
        for (uint64_t k = 0; k < 3; ++k) soa[k * 4000 + i] = apart[i * 3 + k];
    EXPECT_EQ(choose(soa, {4000, 3}), 1) << "components as the slowest dim: merged without moving";
}

TEST(Components, CandidatesNeedAShortDimAndALongOne) {
    const uint64_t halo[] = {3, 32314}, cube[] = {91, 91, 91}, testfloat[] = {128, 8, 8}, one[] = {3, 1};
    EXPECT_EQ(gsz::pipeline::component_candidates(2, halo, GSZ_PIPELINE_INTERP), std::vector<uint32_t>{0});
    EXPECT_TRUE(gsz::pipeline::component_candidates(3, cube, GSZ_PIPELINE_LORENZO).empty());
    // sz_testfloat's 8 variables would land 8 copies apart: too short a run.
    EXPECT_TRUE(gsz::pipeline::component_candidates(3, testfloat, GSZ_PIPELINE_LORENZO).empty());
    EXPECT_TRUE(gsz::pipeline::component_candidates(2, one, GSZ_PIPELINE_LORENZO).empty());
}

TEST(Components, ViewDims) {
    uint32_t rank = 0;
    uint64_t dims[4];
    const uint64_t halo[] = {3, 32314};
    gsz::pipeline::component_view_dims(2, halo, 0, rank, dims);
    EXPECT_EQ(rank, 1u);
    EXPECT_EQ(dims[0], 3u * 32314);
    const uint64_t image[] = {640, 3, 1, 480};   // [480][1][3][640]: a size-1 dim between
    gsz::pipeline::component_view_dims(4, image, 1, rank, dims);
    EXPECT_EQ(rank, 2u);
    EXPECT_EQ(dims[0], 640u);
    EXPECT_EQ(dims[1], 480u * 3);
    EXPECT_EQ(dims[2], 1u);
}

TEST(Components, MovesAreInverseAndMatchTheDefinition) {
    const std::vector<std::vector<uint64_t>> shapes = {{3, 1000}, {5, 7, 300}, {7, 4, 200}, {9, 300, 2}, {2, 3, 4, 130}};
    for (const auto& dims : shapes) {
        for (uint32_t k = 0; k < dims.size(); ++k) {
            const ComponentSplit s = gsz::pipeline::component_split(static_cast<uint32_t>(dims.size()), dims.data(), k);
            std::vector<uint32_t> in(s.elements()), apart(s.elements()), back(s.elements());
            std::iota(in.begin(), in.end(), 0u);
            for (const int threads : {1, 3}) {
                gsz::pipeline::components_apart_cpu(in.data(), apart.data(), s, 4, threads);
                for (uint64_t o = 0; o < s.outer; ++o)
                    for (uint64_t c = 0; c < s.count; ++c)
                        for (uint64_t j = 0; j < s.inner; ++j)
                            ASSERT_EQ(apart[(c * s.outer + o) * s.inner + j], in[(o * s.count + c) * s.inner + j]);
                gsz::pipeline::components_together_cpu(apart.data(), back.data(), s, 4, threads);
                ASSERT_EQ(back, in) << "dims " << dims.size() << " k " << k;
            }
            std::vector<uint64_t> in8(in.begin(), in.end()), apart8(in8.size()), back8(in8.size());
            gsz::pipeline::components_apart_cpu(in8.data(), apart8.data(), s, 8, 2);
            gsz::pipeline::components_together_cpu(apart8.data(), back8.data(), s, 8, 2);
            ASSERT_EQ(back8, in8);
        }
    }
}

// Whole compressions: the archive names the dim, keeps the array's dims,
// decodes every value within the bound (NaN/Inf exact), and beats the same
// pipeline predicting across the components.
TEST(Components, ParticlesCompressApartWithinTheBound) {
    auto v = walks(20000, 3, false);
    v[100] = std::numeric_limits<float>::quiet_NaN();
    v[6001] = std::numeric_limits<float>::infinity();
    gsz::Context ctx;
    for (const gsz_pipeline pipeline : {GSZ_PIPELINE_LORENZO, GSZ_PIPELINE_INTERP, GSZ_PIPELINE_FAST}) {
        for (const double eb : {1e-2, 1e-4}) {
            SCOPED_TRACE(testing::Message() << "pipeline " << pipeline << " rel " << eb);
            auto p = make_params(GSZ_DTYPE_F32, {3, 20000}, GSZ_ERROR_REL, eb);
            p.pipeline = pipeline;
            p.device = GSZ_DEVICE_CPU;
            const auto archive = ctx.compress(p, v.data());
            const auto info = ctx.inspect(archive.data(), archive.size());
            EXPECT_EQ(info.component_dim, 0);
            EXPECT_EQ(info.format_version, gsz::format::kFormatVersion);
            EXPECT_EQ(info.rank, 2u);
            EXPECT_EQ(info.dims[0], 3u);
            EXPECT_EQ(info.dims[1], 20000u);
            EXPECT_EQ(info.pipeline, pipeline);
            const auto dec = ctx.decompress<float>(archive, GSZ_DEVICE_CPU);
            const auto r = check_bound(v, dec, info.error_bound_abs);
            EXPECT_EQ(r.violations, 0u);
            EXPECT_EQ(r.nonfinite_changed, 0u);
            p.components = GSZ_COMPONENTS_OFF;
            const auto across = ctx.compress(p, v.data());
            EXPECT_EQ(ctx.inspect(across.data(), across.size()).component_dim, -1);
            EXPECT_LT(archive.size(), across.size());
            const auto dec_across = ctx.decompress<float>(across, GSZ_DEVICE_CPU);
            EXPECT_EQ(check_bound(v, dec_across, info.error_bound_abs).violations, 0u);
        }
    }
}

TEST(Components, MiddleDimAndDoubles) {
    // [200][4][50] doubles: four quantities, each its own profile along x
    // (independent noise) riding on its own walk along z.
    const uint64_t nx = 50, nc = 4, nz = 200;
    std::vector<double> v(nx * nc * nz);
    const auto w = walks(nz, nc, false, 11);
    const auto profile = walks(nx, nc, false, 12);
    for (uint64_t z = 0; z < nz; ++z)
        for (uint64_t c = 0; c < nc; ++c)
            for (uint64_t x = 0; x < nx; ++x)
                v[(z * nc + c) * nx + x] = w[z * nc + c] + 0.5 * profile[x * nc + c];
    gsz::Context ctx;
    auto p = make_params(GSZ_DTYPE_F64, {nx, nc, nz}, GSZ_ERROR_ABS, 1e-3);
    p.device = GSZ_DEVICE_CPU;
    for (const gsz_pipeline pipeline : {GSZ_PIPELINE_LORENZO, GSZ_PIPELINE_INTERP, GSZ_PIPELINE_FAST}) {
        p.pipeline = pipeline;
        const auto archive = ctx.compress(p, v.data());
        const auto info = ctx.inspect(archive.data(), archive.size());
        EXPECT_EQ(info.component_dim, 1);
        const auto dec = ctx.decompress<double>(archive, GSZ_DEVICE_CPU);
        EXPECT_EQ(check_bound(v, dec, 1e-3).violations, 0u);
    }
}

TEST(Components, HeaderFlagIsChecked) {
    gsz::Context ctx;
    const auto v = walks(3000, 3, false);
    auto p = make_params(GSZ_DTYPE_F32, {3, 3000}, GSZ_ERROR_REL, 1e-3);
    p.device = GSZ_DEVICE_CPU;
    const auto archive = ctx.compress(p, v.data());
    const auto parsed = gsz::format::archive_parse(archive);
    ASSERT_EQ(parsed.header.component_dim, 0);
    std::vector<gsz::format::SectionData> sections;
    for (const auto& s : parsed.sections) sections.push_back({s.kind, s.bytes});
    auto rewrite = [&](auto&& edit) {
        auto h = parsed.header;
        edit(h);
        std::vector<uint8_t> out;
        try {
            out = gsz::format::archive_write(h, sections);
        } catch (const gsz::Error&) {
            return gsz_status{GSZ_STATUS_INTERNAL};   // the writer refuses such a header too
        }
        std::vector<float> dec(v.size());
        return gsz_decompress(ctx.get(), out.data(), out.size(), dec.data(), dec.size() * 4, GSZ_DEVICE_CPU, 0);
    };
    EXPECT_EQ(rewrite([](auto&) {}), GSZ_STATUS_OK);
    // The view's codes under the array's dims without the flag: the pipeline's params disagree.
    EXPECT_EQ(rewrite([](auto& h) { h.component_dim = -1; }), GSZ_STATUS_CORRUPT);
    EXPECT_NE(rewrite([](auto& h) { h.component_dim = 1; }), GSZ_STATUS_OK);   // extent 3000
    EXPECT_NE(rewrite([](auto& h) { h.format_version = 5; }), GSZ_STATUS_OK);
    // Raw header bytes with the header checksum recomputed (the compact
    // container of format version 8 on: XXH64 of every byte before it, which
    // sits just before the first payload): the reader's own checks must refuse them.
    ASSERT_GE(parsed.header.format_version, 8);
    const size_t header_end = static_cast<size_t>(parsed.sections.front().bytes.data() - archive.data());
    const auto patched = [&](size_t offset, uint8_t value) {
        auto a = archive;
        a[offset] = value;
        const uint64_t sum = XXH64(a.data(), header_end - 8, 0);
        std::memcpy(a.data() + header_end - 8, &sum, 8);
        std::vector<float> dec(v.size());
        return gsz_decompress(ctx.get(), a.data(), a.size(), dec.data(), dec.size() * 4, GSZ_DEVICE_CPU, 0);
    };
    EXPECT_EQ(archive[8], 0x1) << "the flags byte";
    EXPECT_EQ(patched(9, 0), GSZ_STATUS_OK) << "the patch itself keeps a valid archive valid";
    EXPECT_EQ(patched(9, 1), GSZ_STATUS_CORRUPT) << "dim 1 has 3000 entries";
    EXPECT_EQ(patched(9, 2), GSZ_STATUS_CORRUPT) << "beyond the rank";
    EXPECT_EQ(patched(8, 0), GSZ_STATUS_CORRUPT) << "without the flag, the dim byte reads as the first dim";
    EXPECT_EQ(patched(8, 3), GSZ_STATUS_CORRUPT) << "an unknown flag";
    EXPECT_EQ(patched(3, 5), GSZ_STATUS_CORRUPT) << "a version 5 archive (the fixed container)";
}
