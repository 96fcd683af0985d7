// Shared helpers for the test suite: real fields, bound checks.
#pragma once

#include <gsz/gsz.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <random>
#include <vector>

namespace gsz::test {

// ../shared/data beside the checkout, or $GSZ_DATA_DIR.
inline std::filesystem::path shared_data_dir() {
    if (const char* env = std::getenv("GSZ_DATA_DIR")) return env;
    return std::filesystem::path(GSZ_SOURCE_DIR) / ".." / "shared" / "data";
}

inline std::filesystem::path repo_dir() { return GSZ_SOURCE_DIR; }

struct Field {
    std::string name;
    std::filesystem::path path;
    gsz_dtype dtype;
    std::vector<uint64_t> dims;   // fastest first
};

// Field files are named NAME_DIMS.f32|f64 with DIMS slowest first (numpy order).
inline std::vector<Field> shared_fields() {
    std::vector<Field> fields;
    const auto dir = shared_data_dir();
    if (!std::filesystem::is_directory(dir)) return fields;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        const auto path = entry.path();
        const auto ext = path.extension().string();
        if (ext != ".f32" && ext != ".f64") continue;
        const std::string stem = path.stem().string();
        const std::string dims_text = stem.substr(stem.rfind('_') + 1);
        Field f{stem, path, ext == ".f64" ? GSZ_DTYPE_F64 : GSZ_DTYPE_F32, {}};
        size_t start = 0;
        while (start <= dims_text.size()) {
            const size_t x = dims_text.find('x', start);
            f.dims.push_back(std::stoull(dims_text.substr(start, x - start)));
            if (x == std::string::npos) break;
            start = x + 1;
        }
        std::reverse(f.dims.begin(), f.dims.end());
        fields.push_back(f);
    }
    std::sort(fields.begin(), fields.end(), [](const Field& a, const Field& b) { return a.name < b.name; });
    return fields;
}

// A rough 1-D record: runs of 8 equal N(0, 1) levels with N(0, 0.05) noise
// (neighbours alike, points 8 apart unrelated), where interp's 1-D stride
// choice takes every tile Lorenzo-coded.
inline std::vector<float> runs_record(uint64_t n, uint32_t seed = 7) {
    std::vector<float> v(n);
    std::mt19937 rng(seed);
    std::normal_distribution<float> level(0.0f, 1.0f), noise(0.0f, 0.05f);
    float run = 0;
    for (uint64_t i = 0; i < n; ++i) {
        if (i % 8 == 0) run = level(rng);
        v[i] = run + noise(rng);
    }
    return v;
}

template <class T>
std::vector<T> read_raw(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    const auto size = std::filesystem::file_size(path);
    std::vector<T> v(size / sizeof(T));
    in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(T)));
    return v;
}

inline std::vector<uint8_t> read_bytes(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline gsz_params make_params(gsz_dtype dtype, const std::vector<uint64_t>& dims, gsz_error_mode mode, double eb,
                              int threads = 0) {
    gsz_params p;
    gsz_params_init(&p);
    p.dtype = dtype;
    p.rank = static_cast<uint32_t>(dims.size());
    for (size_t d = 0; d < dims.size(); ++d) p.dims[d] = dims[d];
    p.error_mode = mode;
    p.error_bound = eb;
    p.device = GSZ_DEVICE_CPU;
    p.num_threads = threads;
    return p;
}

struct BoundReport {
    uint64_t violations = 0;        // finite values with |x - x'| > eb (in double)
    uint64_t nonfinite_changed = 0; // NaN/Inf whose bits changed
    double max_abs_error = 0;
    uint64_t first_bad = UINT64_MAX;
};

// Checks every element as a user would: decompressed value in T, difference in double.
template <class T>
BoundReport check_bound(const std::vector<T>& orig, const std::vector<T>& dec, double eb) {
    BoundReport r;
    EXPECT_EQ(orig.size(), dec.size());
    for (size_t i = 0; i < orig.size() && i < dec.size(); ++i) {
        if (std::isfinite(orig[i])) {
            const double e = std::fabs(static_cast<double>(dec[i]) - static_cast<double>(orig[i]));
            if (!(e <= eb)) {
                ++r.violations;
                r.first_bad = std::min<uint64_t>(r.first_bad, i);
            }
            if (!std::isnan(e)) r.max_abs_error = std::max(r.max_abs_error, e);
        } else if (std::memcmp(&orig[i], &dec[i], sizeof(T)) != 0) {
            ++r.nonfinite_changed;
            r.first_bad = std::min<uint64_t>(r.first_bad, i);
        }
    }
    return r;
}

template <class T>
constexpr gsz_dtype dtype_of() {
    return sizeof(T) == 8 ? GSZ_DTYPE_F64 : GSZ_DTYPE_F32;
}

}  // namespace gsz::test
