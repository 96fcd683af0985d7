// The fast pipeline: its per-element math, every block kind and tail length,
// non-finite values, float64, thread invariance, and a decoder that refuses
// streams that do not add up.
#include "test_util.hpp"

#include "pipeline/fast_sections.hpp"
#include "predict/fast/fast.hpp"
#include "runtime/status.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace gsz::test;
using namespace gsz::predict;

namespace {

template <class T>
std::vector<T> noisy_wave(size_t n, uint32_t seed, double noise = 0.01) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> d(0.0, noise);
    std::vector<T> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<T>(100.0 * std::sin(i * 0.01) + 5.0 + d(rng));
    return v;
}

template <class T>
struct FastRoundTrip {
    std::vector<uint8_t> archive;
    gsz_archive_info info;
    std::vector<T> dec;
    BoundReport report;
};

template <class T>
FastRoundTrip<T> roundtrip(const std::vector<T>& data, double eb, gsz_error_mode mode = GSZ_ERROR_ABS,
                           uint32_t block = 128, int threads = 0) {
    auto p = make_params(dtype_of<T>(), {data.size()}, mode, eb, threads);
    p.pipeline = GSZ_PIPELINE_FAST;
    p.block_size = block;
    gsz::Context ctx;
    FastRoundTrip<T> r;
    r.archive = ctx.compress(p, data.data());
    r.info = ctx.inspect(r.archive.data(), r.archive.size());
    r.dec = ctx.decompress<T>(r.archive, GSZ_DEVICE_CPU);
    r.report = check_bound(data, r.dec, r.info.error_bound_abs);
    EXPECT_EQ(r.report.violations, 0u) << "first bad " << r.report.first_bad;
    EXPECT_EQ(r.report.nonfinite_changed, 0u) << "first bad " << r.report.first_bad;
    return r;
}

template <class T>
class FastMath : public testing::Test {};
using Types = testing::Types<float, double>;
TYPED_TEST_SUITE(FastMath, Types);

TYPED_TEST(FastMath, LeadCountsEqualLeadingKeptBytesCappedAtThree) {
    using T = TypeParam;
    using Bits = typename FastTraits<T>::Bits;
    constexpr int w = FastTraits<T>::width;
    const Bits a = Bits{0x12345678u} << (w - 32);
    EXPECT_EQ(fast_lead<T>(a, a, 4), 3u);        // identical: capped at 3
    EXPECT_EQ(fast_lead<T>(a, a, 2), 2u);        // ... and at the kept bytes
    EXPECT_EQ(fast_lead<T>(a, a ^ (Bits{1} << (w - 1)), 4), 0u);
    EXPECT_EQ(fast_lead<T>(a, a ^ (Bits{1} << (w - 9)), 4), 1u);
    EXPECT_EQ(fast_lead<T>(a, a ^ (Bits{1} << (w - 17)), 4), 2u);
    EXPECT_EQ(fast_lead<T>(a, a ^ (Bits{1} << (w - 32)), 4), 3u);
    EXPECT_EQ(fast_lead<T>(a, a, 1), 1u);
    EXPECT_EQ(fast_lead<T>(a, a, 0), 0u);        // a constant block keeps no bytes
    EXPECT_EQ(fast_lead<T>(a, a ^ (Bits{1} << (w - 9)), 1), 1u);
    EXPECT_EQ(fast_lead<T>(0, 0, 8), 3u);
    // The count agrees with counting bytes one by one for every kept length.
    std::mt19937_64 rng(3);
    for (int i = 0; i < 4000; ++i) {
        const Bits p = static_cast<Bits>(rng()), q = p ^ (static_cast<Bits>(rng()) >> (rng() % w));
        for (uint32_t kept = 0; kept <= sizeof(T); ++kept) {
            uint32_t same = 0;
            while (same < kept && same < 3 && fast_byte<T>(p, same) == fast_byte<T>(q, same)) ++same;
            ASSERT_EQ(fast_lead<T>(p, q, kept), same) << std::hex << p << " " << q << " kept " << kept;
        }
    }
}

TYPED_TEST(FastMath, TruncatedPatternsKeepOnlyTheirBytesAndRoundTrip) {
    using T = TypeParam;
    using Bits = typename FastTraits<T>::Bits;
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> d(-50, 50);
    for (uint8_t code = 1 + FastTraits<T>::exp_bits; code < FastTraits<T>::width; ++code) {
        const uint32_t kept = fast_kept_bytes<T>(code);
        const Bits below = kept == sizeof(T) ? Bits{0} : ~Bits{0} >> (8 * kept);
        for (int i = 0; i < 100; ++i) {
            const T x = static_cast<T>(d(rng)), mu = static_cast<T>(d(rng));
            const Bits p = fast_pattern(x, mu, code);
            EXPECT_EQ(p & below, Bits{0}) << "code " << int(code);
            // More kept bits never reconstruct worse than fewer.
            const double err = std::fabs(double(x) - double(fast_reconstruct<T>(p, mu, code)));
            const double err_more = code + 1 < FastTraits<T>::width
                                        ? std::fabs(double(x) - double(fast_reconstruct<T>(
                                                                    fast_pattern(x, mu, uint8_t(code + 1)), mu,
                                                                    uint8_t(code + 1))))
                                        : 0.0;
            EXPECT_LE(err_more, err + std::fabs(double(x)) * 1e-6);
        }
    }
    const T nan = std::numeric_limits<T>::quiet_NaN();
    EXPECT_EQ(fast_bits(fast_reconstruct<T>(fast_pattern(nan, T(0), kFastRaw), T(0), kFastRaw)), fast_bits(nan));
}

// The shortcut that skips checking each value must only say "safe" when the
// check would pass for every value of the block.
TYPED_TEST(FastMath, TruncationSafeImpliesEveryValueWithinBound) {
    using T = TypeParam;
    std::mt19937_64 rng(17);
    uint64_t safe_blocks = 0;
    for (int trial = 0; trial < 20000; ++trial) {
        const double scale = std::ldexp(1.0, static_cast<int>(rng() % 80) - 40);
        const double offset = (rng() % 3 == 0) ? 0.0 : scale * static_cast<double>(rng() % 100000);
        std::uniform_real_distribution<double> d(-scale, scale);
        T x[64];
        for (T& v : x) v = static_cast<T>(offset + d(rng));
        T lo = x[0], hi = x[0];
        for (T v : x) {
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
        const double eb = scale * std::ldexp(1.0, -static_cast<int>(rng() % 30)) * (1.0 + (rng() % 4) * 0.25);
        const FastMid<T> mid = fast_mid(lo, hi, eb);
        if (mid.constant) continue;
        const uint8_t first = fast_first_code(mid.half_range, eb);
        for (uint8_t code : {first, fast_next_code<T>(first)}) {
            if (code == kFastRaw || !fast_truncation_safe(lo, hi, mid.mu, code, eb)) continue;
            ++safe_blocks;
            for (T v : x)
                ASSERT_TRUE(fast_within(v, fast_reconstruct<T>(fast_pattern(v, mid.mu, code), mid.mu, code), eb))
                    << "value " << v << " mu " << mid.mu << " code " << int(code) << " eb " << eb;
        }
    }
    EXPECT_GT(safe_blocks, 1000u);  // the shortcut is actually taken
}

// The CUDA encoder's f32 safety test (truncation_safe in fast_cuda.cu) in
// upward-rounded float arithmetic, mirrored here with exact rounding helpers
// so that its error bound can be checked on the CPU, where no GPU runs it.
namespace float_mirror {
// Rounds a + b (the exact sum) up to a float: the double sum plus its exact
// error term (TwoSum) decide whether the nearest float lies below.
float up(double s, double err) {
    float f = static_cast<float>(s);
    if (static_cast<double>(f) < s || (static_cast<double>(f) == s && err > 0))
        f = std::nextafter(f, std::numeric_limits<float>::infinity());
    return f;
}
float add_ru(float a, float b) {
    const double s = static_cast<double>(a) + b, bb = s - a, err = (a - (s - bb)) + (b - bb);
    return up(s, err);
}
float mul_ru(float a, float pow2) { return up(static_cast<double>(a) * pow2, 0.0); }  // exact in double
float down(double v) {
    float f = static_cast<float>(v);
    if (static_cast<double>(f) > v) f = std::nextafter(f, -std::numeric_limits<float>::infinity());
    return f;
}
bool truncation_safe(float lo, float hi, float mu, uint8_t code, double eb) {
    constexpr float u = 0x1p-24f;
    const float d = std::max(add_ru(mu, -lo), add_ru(hi, -mu));
    const float dv = add_ru(d, mul_ru(d, u));
    uint32_t bits;
    std::memcpy(&bits, &dv, 4);
    const int e = std::max(static_cast<int>((bits >> 23) & 0xffu), 1) - 127;
    const int t = e - (code - 1 - FastTraits<float>::exp_bits);
    const uint32_t tbits = t >= -126 ? static_cast<uint32_t>(t + 127) << 23 : 1u << (t + 149);
    float trunc;
    std::memcpy(&trunc, &tbits, 4);
    const float m = std::max(std::fabs(lo), std::fabs(hi));
    const float total = add_ru(add_ru(trunc, mul_ru(trunc, u)), mul_ru(add_ru(m, dv), u));
    return total <= down(eb);
}
}  // namespace float_mirror

// Like TruncationSafeImpliesEveryValueWithinBound, for the GPU's f32 test, with
// bounds close above powers of two (where the slack is smallest), offsets next
// to powers of two and subnormal spans added to the random blocks.
TEST(FastMath, FloatTruncationSafeImpliesEveryValueWithinBound) {
    std::mt19937_64 rng(23);
    uint64_t safe_blocks = 0, double_safe = 0;
    for (int trial = 0; trial < 40000; ++trial) {
        const int kind = static_cast<int>(rng() % 4);
        const double scale = std::ldexp(1.0, static_cast<int>(rng() % 90) - (kind == 3 ? 150 : 45));
        double offset = (rng() % 3 == 0) ? 0.0 : scale * static_cast<double>(rng() % 100000);
        if (kind == 1) offset = std::ldexp(1.0, static_cast<int>(std::ilogb(scale)) + static_cast<int>(rng() % 20));
        std::uniform_real_distribution<double> dist(-scale, scale);
        float x[128];
        for (float& v : x) v = static_cast<float>(offset + dist(rng));
        float lo = x[0], hi = x[0];
        for (float v : x) {
            lo = std::min(lo, v);
            hi = std::max(hi, v);
        }
        double eb = scale * std::ldexp(1.0, -static_cast<int>(rng() % 30)) * (1.0 + (rng() % 4) * 0.25);
        if (kind == 2) eb = std::ldexp(1.0, std::ilogb(eb)) * (1.0 + std::ldexp(1.0, -static_cast<int>(rng() % 40)));
        if (!(eb > 0)) continue;
        const FastMid<float> mid = fast_mid(lo, hi, eb);
        if (mid.constant) continue;
        const uint8_t first = fast_first_code(mid.half_range, eb);
        if (first != kFastRaw && rng() % 2) {
            // Values whose difference from mu has every bit below the kept ones set: the
            // largest truncation errors (lo and hi stay, so the plan does too).
            const uint32_t low = (1u << (32 - first)) - 1;
            for (int i = 0; i < 128; ++i) {
                if (x[i] == lo || x[i] == hi) continue;
                float v = x[i] - mid.mu;
                uint32_t b;
                std::memcpy(&b, &v, 4);
                b |= low;
                std::memcpy(&v, &b, 4);
                const float y = mid.mu + v;
                if (y > lo && y < hi) x[i] = y;
            }
        }
        for (uint8_t code : {first, fast_next_code<float>(first)}) {
            if (code == kFastRaw) continue;
            double_safe += fast_truncation_safe(lo, hi, mid.mu, code, eb);
            if (!float_mirror::truncation_safe(lo, hi, mid.mu, code, eb)) continue;
            ++safe_blocks;
            for (float v : x)
                ASSERT_TRUE(fast_within(v, fast_reconstruct<float>(fast_pattern(v, mid.mu, code), mid.mu, code), eb))
                    << "value " << v << " mu " << mid.mu << " code " << int(code) << " eb " << eb;
        }
    }
    EXPECT_GT(safe_blocks, 5000u);                // the shortcut is actually taken,
    EXPECT_GT(safe_blocks * 10, double_safe * 9);  // about as often as the double test's
}

template <class T>
class FastPipeline : public testing::Test {};
TYPED_TEST_SUITE(FastPipeline, Types);

TYPED_TEST(FastPipeline, EveryTailLengthAndBlockSize) {
    using T = TypeParam;
    for (uint32_t block : {64u, 128u, 256u}) {
        for (size_t n : {size_t{1}, size_t{2}, size_t{3}, size_t{4}, size_t{5}, size_t{63}, size_t{64}, size_t{65},
                         size_t{127}, size_t{129}, size_t{255}, size_t{257}, size_t{1000}, size_t{4099}}) {
            const auto data = noisy_wave<T>(n, static_cast<uint32_t>(n));
            const auto r = roundtrip(data, 0.05, GSZ_ERROR_ABS, block);
            if (n >= 1000) {  // tiny inputs may be stored instead
                EXPECT_EQ(r.info.pipeline, GSZ_PIPELINE_FAST);
            }
            if (r.info.pipeline == GSZ_PIPELINE_FAST) {
                EXPECT_EQ(r.info.block_size, block);
                EXPECT_EQ(r.info.num_blocks, (n + block - 1) / block);
            }
        }
    }
}

TYPED_TEST(FastPipeline, ConstantBlocksStoreOneValue) {
    using T = TypeParam;
    std::vector<T> data(128 * 100);
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<T>(3.25 + 0.001 * ((i * 7) % 10));
    const auto r = roundtrip(data, 0.01);
    EXPECT_EQ(r.info.pipeline, GSZ_PIPELINE_FAST);
    EXPECT_EQ(r.info.num_constant_blocks, 100u);
    EXPECT_LT(r.archive.size(), 100 * (sizeof(T) + 1) + 1024);
}

TYPED_TEST(FastPipeline, NaNAndInfAreBitExactAndOnlyTheirBlocksAreRaw) {
    using T = TypeParam;
    auto data = noisy_wave<T>(128 * 64, 3);
    using Bits = typename FastTraits<T>::Bits;
    // A signalling NaN with a payload: arithmetic would quiet it.
    const Bits snan_bits = FastTraits<T>::width == 32 ? Bits(0x7f800001u) : Bits(0x7ff0000000000001ull);
    const T snan = fast_value<T>(snan_bits);
    data[5] = std::numeric_limits<T>::quiet_NaN();
    data[300] = std::numeric_limits<T>::infinity();
    data[301] = -std::numeric_limits<T>::infinity();
    data[1000] = snan;
    data[data.size() - 1] = -std::numeric_limits<T>::quiet_NaN();
    const auto r = roundtrip(data, 1e-3, GSZ_ERROR_REL);
    EXPECT_EQ(r.info.pipeline, GSZ_PIPELINE_FAST);
    EXPECT_EQ(r.info.num_raw_blocks, 4u);  // blocks 0, 2, 7 and the last
    EXPECT_EQ(fast_bits(r.dec[1000]), snan_bits);
}

TYPED_TEST(FastPipeline, ExtremeMagnitudesAndSubnormals) {
    using T = TypeParam;
    const T big = std::numeric_limits<T>::max(), tiny = std::numeric_limits<T>::denorm_min();
    std::vector<T> data(512);
    for (size_t i = 0; i < data.size(); ++i) {
        switch (i / 128) {
            case 0: data[i] = (i % 2 ? big : -big) * T(0.9); break;         // hi - lo overflows
            case 1: data[i] = tiny * static_cast<T>(i % 17); break;           // subnormals
            case 2: data[i] = static_cast<T>(1e6) + static_cast<T>(i % 5); break;
            default: data[i] = static_cast<T>(i % 3 ? 1e-30 : -1e-30); break;
        }
    }
    for (double eb : {1e-40, 1e-3, 0.5, 1e30}) roundtrip(data, eb);
}

TYPED_TEST(FastPipeline, PowerOfTwoBoundsNeedTheVerification) {
    using T = TypeParam;
    // eb = 2^k: the first truncation errs by less than eb, and the rounding of
    // mu + v may push a value over; every element must still be within.
    const auto data = noisy_wave<T>(128 * 200, 11, 3.0);
    for (double eb : {0.5, 0.25, 1.0 / 1024, 1.0 / 65536}) roundtrip(data, eb);
}

TYPED_TEST(FastPipeline, ThreadCountDoesNotChangeTheArchive) {
    using T = TypeParam;
    const auto data = noisy_wave<T>(128 * 333 + 17, 5, 0.5);
    const auto first = roundtrip(data, 1e-3, GSZ_ERROR_REL, 128, 1).archive;
    for (int threads : {2, 3, 8}) EXPECT_EQ(roundtrip(data, 1e-3, GSZ_ERROR_REL, 128, threads).archive, first);
}

// The decoder on hand-broken streams: a clear GSZ_STATUS_CORRUPT, never a crash.
TEST(FastDecoder, RefusesStreamsThatDoNotAddUp) {
    const auto data = noisy_wave<float>(128 * 20 + 5, 9, 1.0);
    const auto layout = FastLayout::make(data.size(), 128);
    FastEncoded<float> enc;
    fast_encode_cpu(data.data(), layout, 1e-2, enc, 1);
    ASSERT_GT(enc.leads.size(), 0u);
    std::vector<float> out(data.size());
    auto view = [&](const FastEncoded<float>& e) {
        return FastStreamsView{e.codes,
                               {reinterpret_cast<const uint8_t*>(e.mids.data()), e.mids.size() * sizeof(float)},
                               e.leads,
                               e.bytes};
    };
    fast_decode_cpu(view(enc), layout, out.data(), 1);  // intact: decodes
    auto expect_corrupt = [&](const FastEncoded<float>& e, const char* what) {
        try {
            fast_decode_cpu(view(e), layout, out.data(), 1);
            ADD_FAILURE() << what << ": accepted";
        } catch (const gsz::Error& err) {
            EXPECT_EQ(err.status(), GSZ_STATUS_CORRUPT) << what;
        }
    };
    auto e = enc;
    e.codes[3] = 40;  // above the float width
    expect_corrupt(e, "bad code");
    e = enc;
    e.codes[0] = kFastConstant;  // fewer lead bytes than stored
    expect_corrupt(e, "constant block with stored leads");
    e = enc;
    e.bytes.pop_back();
    expect_corrupt(e, "short byte stream");
    e = enc;
    e.bytes.push_back(0);
    expect_corrupt(e, "long byte stream");
    e = enc;
    e.codes[1] = 10;  // 2 kept bytes: lead codes of 3 copy more than are kept
    for (uint32_t i = 0; i < 32; ++i) e.leads[32 + i] = 0xff;
    expect_corrupt(e, "lead above kept bytes");
    e = enc;
    e.mids.pop_back();
    expect_corrupt(e, "short mids");
}

TEST(FastPipelineParams, BlockSizeIsValidated) {
    auto p = make_params(GSZ_DTYPE_F32, {1000}, GSZ_ERROR_ABS, 0.1);
    p.pipeline = GSZ_PIPELINE_FAST;
    p.block_size = 100;
    std::vector<float> data(1000, 1.0f);
    size_t bytes = 0;
    std::vector<uint8_t> archive(1 << 16);
    gsz::Context ctx;
    EXPECT_EQ(gsz_compress(ctx.get(), &p, data.data(), archive.data(), archive.size(), &bytes),
              GSZ_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(std::string(gsz_ctx_last_error(ctx.get())).find("block size"), std::string::npos);
}

}  // namespace
