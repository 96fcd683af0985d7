// Fill values: detection, the mask's residual and its gamma-coded section,
// and the CPU's decoding (fill_mask.hpp).
#include "predict/fill/fill_mask.hpp"

#include "runtime/byte_io.hpp"
#include "runtime/parallel.hpp"
#include "runtime/status.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <type_traits>

namespace gsz::predict {

namespace {

// How often the sample holds `bits`, and the span of its other finite values.
template <class T>
uint64_t sample_count(std::span<const T> sample, uint64_t bits, double& lo, double& hi) {
    uint64_t count = 0;
    lo = HUGE_VAL, hi = -HUGE_VAL;
    for (const T v : sample) {
        if (fill_bits_of(v) == bits) {
            ++count;
        } else if (std::isfinite(static_cast<double>(v))) {
            lo = std::min(lo, static_cast<double>(v));
            hi = std::max(hi, static_cast<double>(v));
        }
    }
    return count;
}

}  // namespace

template <class T>
FillValue fill_detect(std::span<const T> sample, double value_min, double value_max) {
    if (sample.empty()) return {};
    // One pass of bit compares first: a candidate needs at least 1/64 of the
    // sample, and most fields have none, so they stop here.  The GPU pipelines
    // wait for this choice: the full passes below took 0.11 ms on wmagT's
    // 53K-point sample (bench/NOTES.md, session 56).
    {
        using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
        const auto min_bits = std::bit_cast<Bits>(static_cast<T>(value_min));
        const auto max_bits = std::bit_cast<Bits>(static_cast<T>(value_max));
        uint64_t at_min = 0, at_max = 0, nans = 0;
        const T* v = sample.data();
#pragma omp simd reduction(+ : at_min, at_max, nans)
        for (size_t i = 0; i < sample.size(); ++i) {
            const Bits b = std::bit_cast<Bits>(v[i]);
            at_min += b == min_bits;
            at_max += b == max_bits;
            nans += v[i] != v[i];
        }
        const auto enough = [&](uint64_t count) { return count >= 2 && count * 64 >= sample.size(); };
        if (!enough(at_min) && !enough(at_max) && !enough(nans)) return {};
    }
    FillValue best;
    uint64_t best_count = 0;
    for (const double candidate : {value_min, value_max}) {
        if (!(value_min < value_max)) break;
        const uint64_t bits = fill_bits_of(static_cast<T>(candidate));
        double lo, hi;
        const uint64_t count = sample_count(sample, bits, lo, hi);
        if (count < 2 || count * 64 < sample.size() || lo > hi) continue;
        const double gap = candidate == value_min ? lo - candidate : candidate - hi;
        if (!(gap > 0 && gap >= 4.0 * (hi - lo))) continue;
        if (count > best_count) {
            best = {true, bits, lo + (hi - lo) * 0.5};
            best_count = count;
        }
    }
    // The most frequent NaN pattern (ties: the smaller bits), judged by the same share.
    std::vector<uint64_t> nans;
    for (const T v : sample)
        if (std::isnan(v)) nans.push_back(fill_bits_of(v));
    std::sort(nans.begin(), nans.end());
    uint64_t nan_bits = 0, nan_count = 0;
    for (size_t i = 0; i < nans.size();) {
        size_t j = i;
        while (j < nans.size() && nans[j] == nans[i]) ++j;
        if (j - i > nan_count) nan_bits = nans[i], nan_count = j - i;
        i = j;
    }
    double lo, hi;
    if (nan_count >= 2 && nan_count * 64 >= sample.size() && nan_count > best_count &&
        sample_count(sample, nan_bits, lo, hi) == nan_count && lo <= hi)
        best = {true, nan_bits, lo + (hi - lo) * 0.5};
    return best;
}

template <class T>
FillValue fill_from_value(double v, std::span<const T> sample) {
    // As written (-1e34), rounded to the dtype: the float32 marker is the nearest float.
    const T t = static_cast<T>(v);
    GSZ_CHECK(std::isfinite(v) && std::isfinite(static_cast<double>(t)), GSZ_STATUS_INVALID_ARGUMENT,
              "fill value %.17g is not a finite %s", v, sizeof(T) == 4 ? "float32" : "float64");
    double lo, hi;
    sample_count(sample, fill_bits_of(t), lo, hi);
    return {true, fill_bits_of(t), lo <= hi ? lo + (hi - lo) * 0.5 : 0.0};
}

template <class T>
std::vector<T> fill_substitute_cpu(const T* data, uint64_t n, const FillValue& fill, int num_threads) {
    std::vector<T> out(n);
#pragma omp parallel for num_threads(resolve_threads(num_threads)) schedule(static)
    for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) out[i] = fill_stand_in(fill, data[i]);
    return out;
}

template <class T>
FillMask fill_mask_encode_cpu(const T* data, const uint64_t* dims, const FillValue& fill, int num_threads) {
    FillMask mask;
    if (!fill.on) return mask;
    const uint64_t nx = dims[0], ny = dims[1], nz = dims[2], rows = ny * nz;
    const auto m = [&](uint64_t x, uint64_t y, uint64_t z) { return fill_holds(fill, data[(z * ny + y) * nx + x]); };
    // Rows in contiguous ranges per thread, joined in range order.
    const int threads = resolve_threads(num_threads);
    std::vector<std::vector<uint64_t>> part(threads);
    std::vector<uint64_t> points(threads, 0);
    ParallelErrors errors;
#pragma omp parallel num_threads(threads)
    errors.capture([&] {
        const auto [r0, r1] = thread_range(rows);
        std::vector<uint64_t>& out = part[thread_index()];
        uint64_t count = 0;
        for (uint64_t r = r0; r < r1; ++r) {
            const uint64_t y = r % ny, z = r / ny;
            for (uint64_t x = 0; x < nx; ++x) {
                count += m(x, y, z);
                if (fill_residual_at(m, x, y, z)) out.push_back(r * nx + x);
            }
        }
        points[thread_index()] = count;
    });
    errors.rethrow();
    for (int t = 0; t < threads; ++t) {
        mask.points += points[t];
        mask.residual.insert(mask.residual.end(), part[t].begin(), part[t].end());
    }
    return mask;
}

namespace {

// MSB-first bits into bytes.
class BitWriter {
public:
    void put(uint64_t value, uint32_t count) {   // the low `count` bits of value
        for (uint32_t k = count; k-- > 0;) {
            if (used_ % 8 == 0) bytes_.push_back(0);
            if ((value >> k) & 1) bytes_.back() |= static_cast<uint8_t>(0x80u >> (used_ % 8));
            ++used_;
        }
    }
    std::vector<uint8_t> take() { return std::move(bytes_); }

private:
    std::vector<uint8_t> bytes_;
    uint64_t used_ = 0;
};

class BitReader {
public:
    explicit BitReader(std::span<const uint8_t> bytes) : bytes_(bytes) {}
    uint64_t left() const { return bytes_.size() * 8 - at_; }
    bool bit() { const bool b = (bytes_[at_ / 8] >> (7 - at_ % 8)) & 1; ++at_; return b; }

private:
    std::span<const uint8_t> bytes_;
    uint64_t at_ = 0;
};

}  // namespace

std::vector<uint8_t> fill_mask_write(const FillMask& mask) {
    ByteWriter out;
    out.put(mask.points);
    out.put(static_cast<uint64_t>(mask.residual.size()));
    BitWriter bits;
    uint64_t next = 0;   // the smallest position the next one may have
    for (const uint64_t pos : mask.residual) {
        const uint64_t gap = pos - next + 1;   // >= 1
        const uint32_t width = std::bit_width(gap);
        bits.put(0, width - 1);
        bits.put(gap, width);
        next = pos + 1;
    }
    const std::vector<uint8_t> stream = bits.take();
    std::vector<uint8_t> bytes = out.bytes();
    bytes.insert(bytes.end(), stream.begin(), stream.end());
    return bytes;
}

FillMask fill_mask_read(std::span<const uint8_t> bytes, uint64_t n) {
    constexpr gsz_status bad = GSZ_STATUS_CORRUPT;
    GSZ_CHECK(bytes.size() >= 16, bad, "fill_mask: %zu bytes, fewer than its 16-byte counts", bytes.size());
    ByteReader in(bytes.first(16), "fill_mask");
    FillMask mask;
    mask.points = in.get<uint64_t>("fill points");
    const uint64_t ones = in.get<uint64_t>("residual ones");
    GSZ_CHECK(mask.points <= n && ones <= n, bad, "fill_mask: %llu fill points, %llu residual ones for %llu points",
              static_cast<unsigned long long>(mask.points), static_cast<unsigned long long>(ones),
              static_cast<unsigned long long>(n));
    const std::span<const uint8_t> stream = bytes.subspan(16);
    // Each gamma code takes at least one bit: a count the stream cannot hold is refused before any allocation.
    GSZ_CHECK(ones <= stream.size() * 8, bad, "fill_mask: %llu residual ones in %zu bytes",
              static_cast<unsigned long long>(ones), stream.size());
    mask.residual.reserve(ones);
    BitReader bits(stream);
    uint64_t next = 0;
    for (uint64_t k = 0; k < ones; ++k) {
        uint32_t zeros = 0;
        bool one = false;
        while (zeros < 64 && bits.left() > 0 && !(one = bits.bit())) ++zeros;
        GSZ_CHECK(one && bits.left() >= zeros, bad, "fill_mask: gap %llu is cut off or wider than 64 bits",
                  static_cast<unsigned long long>(k));
        uint64_t gap = 1;
        for (uint32_t b = 0; b < zeros; ++b) gap = gap << 1 | bits.bit();
        GSZ_CHECK(gap <= n - next, bad, "fill_mask: residual one %llu lies past the %llu points",
                  static_cast<unsigned long long>(k), static_cast<unsigned long long>(n));
        mask.residual.push_back(next + gap - 1);
        next += gap;
    }
    GSZ_CHECK(bits.left() < 8, bad, "fill_mask: %llu bytes after the gaps",
              static_cast<unsigned long long>(bits.left() / 8));
    while (bits.left() > 0) GSZ_CHECK(!bits.bit(), bad, "fill_mask: the last byte's unused bits are not 0");
    return mask;
}

std::vector<uint8_t> fill_mask_expand_cpu(const FillMask& mask, const uint64_t* dims, int num_threads) {
    const uint64_t nx = dims[0], ny = dims[1], nz = dims[2], n = nx * ny * nz;
    std::vector<uint8_t> m(n, 0);
    for (const uint64_t pos : mask.residual) m[pos] = 1;
    const int threads = resolve_threads(num_threads);
    // The inverse of the residual: an XOR prefix along x, then y, then z.
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t r = 0; r < static_cast<int64_t>(ny * nz); ++r) {
        uint8_t* row = m.data() + r * nx;
        for (uint64_t x = 1; x < nx; ++x) row[x] ^= row[x - 1];
    }
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t z = 0; z < static_cast<int64_t>(nz); ++z) {
        uint8_t* plane = m.data() + z * nx * ny;
        for (uint64_t y = 1; y < ny; ++y)
            for (uint64_t x = 0; x < nx; ++x) plane[y * nx + x] ^= plane[(y - 1) * nx + x];
    }
    const uint64_t plane = nx * ny;
    for (uint64_t z = 1; z < nz; ++z) {
        uint8_t* cur = m.data() + z * plane;
        const uint8_t* prev = cur - plane;
#pragma omp parallel for num_threads(threads) schedule(static)
        for (int64_t i = 0; i < static_cast<int64_t>(plane); ++i) cur[i] ^= prev[i];
    }
    uint64_t points = 0;
#pragma omp parallel for num_threads(threads) reduction(+ : points) schedule(static)
    for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) points += m[i];
    GSZ_CHECK(points == mask.points, GSZ_STATUS_CORRUPT, "fill_mask: the residual gives %llu fill points, not %llu",
              static_cast<unsigned long long>(points), static_cast<unsigned long long>(mask.points));
    return m;
}

template <class T>
void fill_mask_apply_cpu(const FillMask& mask, const uint64_t* dims, const FillValue& fill, T* out, int num_threads) {
    const std::vector<uint8_t> m = fill_mask_expand_cpu(mask, dims, num_threads);
    const T value = fill_value_as<T>(fill);
#pragma omp parallel for num_threads(resolve_threads(num_threads)) schedule(static)
    for (int64_t i = 0; i < static_cast<int64_t>(m.size()); ++i)
        if (m[i]) out[i] = value;
}

template FillValue fill_detect<float>(std::span<const float>, double, double);
template FillValue fill_detect<double>(std::span<const double>, double, double);
template FillValue fill_from_value<float>(double, std::span<const float>);
template FillValue fill_from_value<double>(double, std::span<const double>);
template std::vector<float> fill_substitute_cpu<float>(const float*, uint64_t, const FillValue&, int);
template std::vector<double> fill_substitute_cpu<double>(const double*, uint64_t, const FillValue&, int);
template FillMask fill_mask_encode_cpu<float>(const float*, const uint64_t*, const FillValue&, int);
template FillMask fill_mask_encode_cpu<double>(const double*, const uint64_t*, const FillValue&, int);
template void fill_mask_apply_cpu<float>(const FillMask&, const uint64_t*, const FillValue&, float*, int);
template void fill_mask_apply_cpu<double>(const FillMask&, const uint64_t*, const FillValue&, double*, int);

}  // namespace gsz::predict
