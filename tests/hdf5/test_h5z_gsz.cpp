// The HDF5 filter plugin as an application meets it: HDF5 loads
// libH5Zgsz.so from the plugin directory (this program does not link it),
// chunked datasets are written through it and read back, every value is
// checked against its chunk's bound, non-finite values bit for bit, and what
// the filter cannot take or cannot read fails the HDF5 call cleanly.
#include "H5Zgsz.h"
#include "test_util.hpp"

#include <hdf5.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

namespace gsz::test {
namespace {

namespace fs = std::filesystem;

class Hdf5Filter : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        // The plugin is found as a user's HDF5 would find it, by path.
        ASSERT_GE(H5PLprepend(GSZ_H5Z_PLUGIN_DIR), 0);
        ::setenv("HDF5_PLUGIN_PATH", GSZ_H5Z_PLUGIN_DIR, 1);
    }
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("gsz_h5z_" + std::to_string(::getpid()) + "_" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::create_directories(dir_);
    }
    void TearDown() override {
        if (!HasFailure()) fs::remove_all(dir_);  // a failed test leaves its files to look at
    }
    fs::path dir_;
};

// HDF5 prints its error stack where a call fails; the tests that expect a
// failure silence it.
struct QuietErrors {
    H5E_auto2_t func = nullptr;
    void* data = nullptr;
    QuietErrors() {
        H5Eget_auto2(H5E_DEFAULT, &func, &data);
        H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    }
    ~QuietErrors() { H5Eset_auto2(H5E_DEFAULT, func, data); }
};

std::vector<float> wmag() { return read_raw<float>(repo_dir() / "data" / "sperr_wmag_91x91x91.f32"); }

// Writes `values` (C order, dims slowest first) as a chunked dataset "v" of
// `file_type` with the filter's values `cd`; returns whether H5Dwrite succeeded.
template <class T>
bool write_dataset(const fs::path& path, hid_t file_type, const std::vector<hsize_t>& dims,
                   const std::vector<hsize_t>& chunk, const std::vector<unsigned>& cd, const std::vector<T>& values) {
    const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, static_cast<int>(chunk.size()), chunk.data());
    H5Pset_filter(dcpl, GSZ_H5Z_FILTER_ID, H5Z_FLAG_MANDATORY, cd.size(), cd.data());
    const hid_t ds = H5Dcreate2(file, "v", file_type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    bool ok = ds >= 0;
    if (ok) {
        const hid_t mem = sizeof(T) == 4 ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE;
        ok = H5Dwrite(ds, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) >= 0;
        H5Dclose(ds);
    }
    H5Pclose(dcpl);
    H5Sclose(space);
    H5Fclose(file);
    return ok;
}

template <class T>
bool read_dataset(const fs::path& path, std::vector<T>& out, hsize_t* storage = nullptr,
                  std::vector<unsigned>* stored_cd = nullptr) {
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    if (file < 0) return false;
    const hid_t ds = H5Dopen2(file, "v", H5P_DEFAULT);
    const hid_t mem = sizeof(T) == 4 ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE;
    const bool ok = ds >= 0 && H5Dread(ds, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) >= 0;
    if (ds >= 0 && storage) *storage = H5Dget_storage_size(ds);
    if (ds >= 0 && stored_cd) {
        const hid_t dcpl = H5Dget_create_plist(ds);
        unsigned flags = 0;
        size_t n = GSZ_H5Z_MAX_VALUES;
        stored_cd->assign(n, 0);
        H5Pget_filter_by_id2(dcpl, GSZ_H5Z_FILTER_ID, &flags, &n, stored_cd->data(), 0, nullptr, nullptr);
        stored_cd->resize(n);
        H5Pclose(dcpl);
    }
    if (ds >= 0) H5Dclose(ds);
    H5Fclose(file);
    return ok;
}

std::vector<unsigned> values(gsz_error_mode mode, double bound, gsz_pipeline pipeline) {
    std::vector<unsigned> cd(GSZ_H5Z_USER_VALUES);
    gsz_h5z_set_values(cd.data(), mode, bound, pipeline);
    return cd;
}

// The bound each of wmag's chunks of 32 z-planes had: relative to the
// chunk's range, the last chunk's padding (HDF5's fill value 0) included.
std::vector<double> chunk_bounds(const std::vector<float>& v, gsz_error_mode mode, double eb, size_t plane,
                                 size_t planes, size_t chunk_planes) {
    std::vector<double> out;
    for (size_t z0 = 0; z0 < planes; z0 += chunk_planes) {
        const size_t z1 = std::min(planes, z0 + chunk_planes);
        double lo = v[z0 * plane], hi = lo;
        for (size_t i = z0 * plane; i < z1 * plane; ++i) {
            lo = std::min<double>(lo, v[i]);
            hi = std::max<double>(hi, v[i]);
        }
        if (z1 - z0 < chunk_planes) {
            lo = std::min(lo, 0.0);
            hi = std::max(hi, 0.0);
        }
        // gsz applies the bound as a float64 product, as the archive records it.
        out.push_back(mode == GSZ_ERROR_ABS ? eb : eb * (hi - lo));
    }
    return out;
}

TEST_F(Hdf5Filter, WmagChunksComeBackWithinTheirBounds) {
    const std::vector<float> v = wmag();
    ASSERT_EQ(v.size(), 91u * 91u * 91u);
    const size_t plane = 91 * 91;
    const double raw = static_cast<double>(v.size() * sizeof(float));
    for (const gsz_pipeline pipeline :
         {GSZ_PIPELINE_LORENZO, GSZ_PIPELINE_INTERP, GSZ_PIPELINE_FAST, GSZ_PIPELINE_AUTO}) {
        for (const auto& [mode, eb] : {std::pair{GSZ_ERROR_REL, 1e-3}, std::pair{GSZ_ERROR_ABS, 0.05}}) {
            SCOPED_TRACE("pipeline " + std::to_string(pipeline) + " mode " + std::to_string(mode));
            const fs::path path = dir_ / "wmag.h5";
            ASSERT_TRUE(write_dataset<float>(path, H5T_IEEE_F32LE, {91, 91, 91}, {32, 91, 91},
                                             values(mode, eb, pipeline), v));
            std::vector<float> back(v.size());
            hsize_t storage = 0;
            std::vector<unsigned> cd;
            ASSERT_TRUE(read_dataset(path, back, &storage, &cd));
            // The file records the user's values and the chunk's dtype and dims, fastest first.
            const std::vector<unsigned> user = values(mode, eb, pipeline);
            ASSERT_EQ(cd.size(), 10u);
            EXPECT_TRUE(std::equal(user.begin(), user.end(), cd.begin()));
            EXPECT_EQ(cd[4], unsigned{GSZ_H5Z_LAYOUT_VERSION});
            EXPECT_EQ(cd[5], unsigned{GSZ_DTYPE_F32});
            EXPECT_EQ(cd[6], 3u);
            EXPECT_EQ(cd[7], 91u);
            EXPECT_EQ(cd[8], 91u);
            EXPECT_EQ(cd[9], 32u);
            const std::vector<double> bounds = chunk_bounds(v, mode, eb, plane, 91, 32);
            size_t violations = 0;
            for (size_t i = 0; i < v.size(); ++i)
                violations += !(std::fabs(static_cast<double>(back[i]) - v[i]) <= bounds[i / (32 * plane)]);
            EXPECT_EQ(violations, 0u);
            // The chunks take less room than the values (fast the least: ~2x at abs 0.05), lorenzo
            // and interp at rel 1e-3 about a seventh (the whole field's ratio: 7.1 / 7.2).
            EXPECT_LT(static_cast<double>(storage), raw / 1.5) << "storage " << storage;
            if (pipeline != GSZ_PIPELINE_FAST && mode == GSZ_ERROR_REL) {
                EXPECT_LT(static_cast<double>(storage), raw / 5) << "storage " << storage;
            }
        }
    }
}

TEST_F(Hdf5Filter, NonFiniteValuesComeBackBitExactInFloat64) {
    const size_t ny = 200, nx = 300;
    std::vector<double> v(ny * nx);
    for (size_t y = 0; y < ny; ++y)
        for (size_t x = 0; x < nx; ++x) v[y * nx + x] = std::sin(0.05 * x) * std::cos(0.03 * y) + 1e-3 * x;
    const uint64_t payload_nan = 0x7FF8DEADBEEF0001ull;
    std::memcpy(&v[1234], &payload_nan, sizeof payload_nan);
    v[77] = std::numeric_limits<double>::infinity();
    v[40000] = -std::numeric_limits<double>::infinity();
    v[59999] = std::numeric_limits<double>::quiet_NaN();
    const double eb = 1e-6;
    const fs::path path = dir_ / "f64.h5";
    ASSERT_TRUE(write_dataset<double>(path, H5T_IEEE_F64LE, {ny, nx}, {64, 128},
                                      values(GSZ_ERROR_ABS, eb, GSZ_PIPELINE_INTERP), v));
    std::vector<double> back(v.size());
    std::vector<unsigned> cd;
    ASSERT_TRUE(read_dataset(path, back, nullptr, &cd));
    ASSERT_EQ(cd.size(), 9u);
    EXPECT_EQ(cd[5], unsigned{GSZ_DTYPE_F64});
    EXPECT_EQ(cd[7], 128u);
    EXPECT_EQ(cd[8], 64u);
    size_t violations = 0, nonfinite = 0;
    for (size_t i = 0; i < v.size(); ++i) {
        if (std::isfinite(v[i])) {
            violations += !(std::fabs(back[i] - v[i]) <= eb);
        } else {
            ++nonfinite;
            EXPECT_EQ(std::memcmp(&back[i], &v[i], sizeof(double)), 0) << "index " << i;
        }
    }
    EXPECT_EQ(nonfinite, 4u);
    EXPECT_EQ(violations, 0u);
}

TEST_F(Hdf5Filter, NoValuesTakeTheDefaults) {
    const std::vector<float> v = wmag();
    const fs::path path = dir_ / "defaults.h5";
    ASSERT_TRUE(write_dataset<float>(path, H5T_IEEE_F32LE, {91, 91, 91}, {91, 91, 91}, {}, v));
    std::vector<float> back(v.size());
    std::vector<unsigned> cd;
    ASSERT_TRUE(read_dataset(path, back, nullptr, &cd));
    ASSERT_EQ(cd.size(), 10u);
    EXPECT_EQ(cd[0], unsigned{GSZ_ERROR_REL});
    EXPECT_EQ(gsz_h5z_bound(cd.data()), 1e-3);
    EXPECT_EQ(cd[3], unsigned{GSZ_PIPELINE_LORENZO});
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    const double eb = 1e-3 * (static_cast<double>(*hi) - *lo);
    size_t violations = 0;
    for (size_t i = 0; i < v.size(); ++i) violations += !(std::fabs(static_cast<double>(back[i]) - v[i]) <= eb);
    EXPECT_EQ(violations, 0u);
}

TEST_F(Hdf5Filter, ChunksOfMoreThanFourDimsFoldTheirSlowestDims) {
    const std::vector<hsize_t> dims = {2, 3, 4, 5, 64};
    std::vector<float> v(2 * 3 * 4 * 5 * 64);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(std::sin(0.01 * static_cast<double>(i)));
    const fs::path path = dir_ / "five.h5";
    ASSERT_TRUE(write_dataset<float>(path, H5T_IEEE_F32LE, dims, dims, values(GSZ_ERROR_ABS, 1e-3, GSZ_PIPELINE_LORENZO),
                                     v));
    std::vector<float> back(v.size());
    std::vector<unsigned> cd;
    ASSERT_TRUE(read_dataset(path, back, nullptr, &cd));
    ASSERT_EQ(cd.size(), 11u);
    EXPECT_EQ(cd[6], 4u);
    EXPECT_EQ((std::vector<unsigned>(cd.begin() + 7, cd.end())), (std::vector<unsigned>{64, 5, 4, 6}));
    for (size_t i = 0; i < v.size(); ++i) ASSERT_LE(std::fabs(static_cast<double>(back[i]) - v[i]), 1e-3) << i;
}

TEST_F(Hdf5Filter, WhatItCannotTakeFailsTheDatasetsCreation) {
    QuietErrors quiet;
    const std::vector<float> f(64, 1.0f);
    const std::vector<double> d(64, 1.0);
    const fs::path path = dir_ / "refused.h5";
    // Not a little-endian IEEE float: integers, big-endian floats.
    {
        const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
        const hsize_t n = 64;
        const hid_t space = H5Screate_simple(1, &n, nullptr);
        const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_chunk(dcpl, 1, &n);
        const std::vector<unsigned> cd = values(GSZ_ERROR_ABS, 1e-3, GSZ_PIPELINE_LORENZO);
        H5Pset_filter(dcpl, GSZ_H5Z_FILTER_ID, H5Z_FLAG_MANDATORY, cd.size(), cd.data());
        for (const hid_t type : {H5T_STD_I32LE, H5T_IEEE_F32BE, H5T_IEEE_F64BE}) {
            const hid_t ds = H5Dcreate2(file, "v", type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
            EXPECT_LT(ds, 0);
            if (ds >= 0) H5Dclose(ds);
        }
        H5Pclose(dcpl);
        H5Sclose(space);
        H5Fclose(file);
    }
    // Values that are not the filter's: an unknown mode or pipeline, half a
    // bound, a negative or infinite bound.
    std::vector<unsigned> bad_mode = values(GSZ_ERROR_ABS, 1e-3, GSZ_PIPELINE_LORENZO);
    bad_mode[0] = 7;
    std::vector<unsigned> bad_pipeline = values(GSZ_ERROR_ABS, 1e-3, GSZ_PIPELINE_LORENZO);
    bad_pipeline[3] = 9;
    for (const std::vector<unsigned>& cd :
         {bad_mode, bad_pipeline, std::vector<unsigned>{GSZ_ERROR_ABS, 5},
          values(GSZ_ERROR_ABS, -1.0, GSZ_PIPELINE_LORENZO),
          values(GSZ_ERROR_ABS, std::numeric_limits<double>::infinity(), GSZ_PIPELINE_LORENZO)})
        EXPECT_FALSE(write_dataset<float>(path, H5T_IEEE_F32LE, {64}, {64}, cd, f));
    EXPECT_TRUE(write_dataset<double>(path, H5T_IEEE_F64LE, {64}, {64}, values(GSZ_ERROR_ABS, 0.0, GSZ_PIPELINE_LORENZO), d));
}

// Overwrites the dataset's first chunk with `bytes` as stored (filters not run).
void put_raw_chunk(const fs::path& path, const std::vector<uint8_t>& bytes) {
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    const hid_t ds = H5Dopen2(file, "v", H5P_DEFAULT);
    const hsize_t offset[3] = {0, 0, 0};
    ASSERT_GE(H5Dwrite_chunk(ds, H5P_DEFAULT, 0, offset, bytes.size(), bytes.data()), 0);
    H5Dclose(ds);
    H5Fclose(file);
}

TEST_F(Hdf5Filter, ACorruptOrForeignChunkFailsTheRead) {
    const std::vector<float> v = wmag();
    const fs::path path = dir_ / "corrupt.h5";
    ASSERT_TRUE(write_dataset<float>(path, H5T_IEEE_F32LE, {91, 91, 91}, {32, 91, 91},
                                     values(GSZ_ERROR_REL, 1e-3, GSZ_PIPELINE_INTERP), v));
    // The first chunk's real archive, to damage.
    std::vector<uint8_t> good;
    {
        const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
        const hid_t ds = H5Dopen2(file, "v", H5P_DEFAULT);
        const hsize_t offset[3] = {0, 0, 0};
        hsize_t bytes = 0;
        ASSERT_GE(H5Dget_chunk_storage_size(ds, offset, &bytes), 0);
        good.resize(bytes);
        uint32_t mask = 0;
        ASSERT_GE(H5Dread_chunk(ds, H5P_DEFAULT, offset, &mask, good.data()), 0);
        H5Dclose(ds);
        H5Fclose(file);
    }
    ASSERT_GT(good.size(), 100u);
    // A valid archive of other dims (64 floats).
    std::vector<uint8_t> foreign;
    {
        gsz_ctx* ctx = nullptr;
        ASSERT_EQ(gsz_ctx_create(&ctx), GSZ_STATUS_OK);
        gsz_params p = make_params(GSZ_DTYPE_F32, {64}, GSZ_ERROR_ABS, 1e-3);
        size_t cap = 0, n = 0;
        ASSERT_EQ(gsz_compress_bound(&p, &cap), GSZ_STATUS_OK);
        foreign.resize(cap);
        const std::vector<float> small(64, 2.5f);
        ASSERT_EQ(gsz_compress(ctx, &p, small.data(), foreign.data(), cap, &n), GSZ_STATUS_OK);
        foreign.resize(n);
        gsz_ctx_free(ctx);
    }
    std::vector<uint8_t> flipped = good;
    flipped[flipped.size() / 2] ^= 0x10;
    const std::vector<uint8_t> truncated(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(good.size() / 2));
    const std::vector<uint8_t> garbage(good.size(), 0xA5);
    QuietErrors quiet;
    const std::vector<uint8_t>* damaged[] = {&flipped, &truncated, &garbage, &foreign};
    for (const std::vector<uint8_t>* bytes : damaged) {
        put_raw_chunk(path, *bytes);
        std::vector<float> back(v.size());
        EXPECT_FALSE(read_dataset(path, back));
    }
    // The real archive put back reads again.
    put_raw_chunk(path, good);
    std::vector<float> back(v.size());
    EXPECT_TRUE(read_dataset(path, back));
}

// The file's filter values are data too: a file whose values were damaged
// (or written to hurt) is refused before anything is sized from them.
TEST_F(Hdf5Filter, DamagedFilterValuesInTheFileFailTheRead) {
    const std::vector<float> v = wmag();
    const fs::path path = dir_ / "values.h5";
    ASSERT_TRUE(write_dataset<float>(path, H5T_IEEE_F32LE, {91, 91, 91}, {32, 91, 91},
                                     values(GSZ_ERROR_ABS, 0.5, GSZ_PIPELINE_LORENZO), v));
    const std::vector<uint8_t> file = read_bytes(path);
    // The stored values as they lie in the filter pipeline message (little-endian u32s).
    std::vector<unsigned> cd = values(GSZ_ERROR_ABS, 0.5, GSZ_PIPELINE_LORENZO);
    for (const unsigned c : {unsigned{GSZ_H5Z_LAYOUT_VERSION}, unsigned{GSZ_DTYPE_F32}, 3u, 91u, 91u, 32u}) cd.push_back(c);
    std::vector<uint8_t> pattern(cd.size() * 4);
    std::memcpy(pattern.data(), cd.data(), pattern.size());
    const auto at = std::search(file.begin(), file.end(), pattern.begin(), pattern.end());
    ASSERT_NE(at, file.end()) << "the filter values are not in the file as expected";
    const size_t offset = static_cast<size_t>(at - file.begin());
    const auto damaged = [&](size_t index, unsigned value) {
        std::vector<uint8_t> f = file;
        std::memcpy(f.data() + offset + 4 * index, &value, 4);
        const fs::path out = dir_ / "damaged.h5";
        std::FILE* fp = std::fopen(out.c_str(), "wb");
        std::fwrite(f.data(), 1, f.size(), fp);
        std::fclose(fp);
        return out;
    };
    QuietErrors quiet;
    std::vector<float> back(v.size());
    for (const auto& [index, value] : std::vector<std::pair<size_t, unsigned>>{
             {7, 0x7FFFFFFFu},  // a chunk of 2^31 * 91 * 32 values
             {9, 0},            // a dim of 0
             {4, 2},            // a layout this plugin does not know
             {5, 9},            // no such dtype
             {6, 7},            // rank 7
             {0, 5},            // no such error mode
             {3, 4}}) {         // no such pipeline
        SCOPED_TRACE("value " + std::to_string(index) + " = " + std::to_string(value));
        EXPECT_FALSE(read_dataset(damaged(index, value), back));
    }
    // The same bytes undamaged read (the patching itself breaks nothing).
    EXPECT_TRUE(read_dataset(damaged(7, 91), back));
}

// h5repack applies the filter from the shell and h5diff checks the bound.
TEST_F(Hdf5Filter, H5repackAppliesItAndH5diffFindsTheBoundKept) {
    if (std::system("command -v h5repack >/dev/null 2>&1 && command -v h5diff >/dev/null 2>&1") != 0)
        GTEST_SKIP() << "h5repack / h5diff not installed (Debian: hdf5-tools)";
    const std::vector<float> v = wmag();
    const fs::path in = dir_ / "in.h5", out = dir_ / "out.h5";
    {
        const hid_t file = H5Fcreate(in.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
        const hsize_t dims[3] = {91, 91, 91};
        const hid_t space = H5Screate_simple(3, dims, nullptr);
        const hid_t ds = H5Dcreate2(file, "v", H5T_IEEE_F32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        ASSERT_GE(H5Dwrite(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), 0);
        H5Dclose(ds);
        H5Sclose(space);
        H5Fclose(file);
    }
    const double eb = 0.5;  // ~2e-3 of wmag's range: interp's ratio ~9 on the whole field
    const std::vector<unsigned> cd = values(GSZ_ERROR_ABS, eb, GSZ_PIPELINE_INTERP);
    std::ostringstream ud;  // UD=id,flags (0: mandatory),count,values...
    ud << "UD=" << GSZ_H5Z_FILTER_ID << ",0," << cd.size();
    for (const unsigned c : cd) ud << ',' << c;
    const std::string repack = "h5repack -l CHUNK=32x91x91 -f " + ud.str() + " " + in.string() + " " + out.string();
    ASSERT_EQ(std::system(repack.c_str()), 0) << repack;
    EXPECT_LT(fs::file_size(out) * 4, fs::file_size(in));
    // Within eb everywhere; a tenth of it is not kept everywhere (the check compares).
    const std::string diff = "h5diff -q -d " + std::to_string(eb) + " " + in.string() + " " + out.string();
    EXPECT_EQ(std::system(diff.c_str()), 0) << diff;
    const std::string tight = "h5diff -q -d " + std::to_string(eb / 10) + " " + in.string() + " " + out.string() +
                              " >/dev/null";
    EXPECT_NE(std::system(tight.c_str()), 0) << tight;
}

}  // namespace
}  // namespace gsz::test
