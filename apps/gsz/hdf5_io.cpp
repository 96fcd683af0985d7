#include "hdf5_io.hpp"

#include <stdexcept>

#if GSZ_HAVE_HDF5
#include <hdf5.h>
#endif

namespace gsz::cli {

#if GSZ_HAVE_HDF5

namespace {

// HDF5's own error stack stays quiet; each failure becomes one message.
struct Quiet {
    H5E_auto2_t func = nullptr;
    void* data = nullptr;
    Quiet() {
        H5Eget_auto2(H5E_DEFAULT, &func, &data);
        H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    }
    ~Quiet() { H5Eset_auto2(H5E_DEFAULT, func, data); }
};

// An hid_t closed by its closing function when it goes.
struct Handle {
    hid_t id;
    herr_t (*close)(hid_t);
    Handle(hid_t i, herr_t (*c)(hid_t)) : id(i), close(c) {}
    ~Handle() {
        if (id >= 0) close(id);
    }
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
};

[[noreturn]] void fail(const std::string& path, const std::string& dataset, const std::string& what) {
    throw std::runtime_error(path + ":" + dataset + ": " + what);
}

}  // namespace

bool hdf5_available() { return true; }

namespace {

// The open dataset (and its file) with its float type checked.
struct OpenDataset {
    Handle file, ds, type;
    OpenDataset(const std::string& path, const std::string& dataset)
        : file(-1, H5Fclose), ds(-1, H5Dclose), type(-1, H5Tclose) {
        if (H5Fis_hdf5(path.c_str()) <= 0) throw std::runtime_error(path + ": not an HDF5 (or netCDF-4) file");
        file.id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
        if (file.id < 0) throw std::runtime_error(path + ": cannot open as HDF5");
        ds.id = H5Dopen2(file.id, dataset.c_str(), H5P_DEFAULT);
        if (ds.id < 0) fail(path, dataset, "no such dataset");
        type.id = H5Dget_type(ds.id);
        if (H5Tget_class(type.id) != H5T_FLOAT)
            fail(path, dataset, "not a floating-point dataset (gsz compresses float32 and float64)");
        const size_t size = H5Tget_size(type.id);
        if (size != 4 && size != 8) fail(path, dataset, "floats of " + std::to_string(size) + " bytes (4 or 8 expected)");
    }
};

}  // namespace

Hdf5Shape hdf5_shape(const std::string& path, const std::string& dataset) {
    Quiet quiet;
    const OpenDataset o(path, dataset);
    const Handle space(H5Dget_space(o.ds.id), H5Sclose);
    const int rank = H5Sget_simple_extent_ndims(space.id);
    if (rank < 1) fail(path, dataset, "a scalar or null dataspace, not an array");
    std::vector<hsize_t> shape(static_cast<size_t>(rank));
    H5Sget_simple_extent_dims(space.id, shape.data(), nullptr);
    Hdf5Shape s;
    s.dtype = H5Tget_size(o.type.id) == 8 ? GSZ_DTYPE_F64 : GSZ_DTYPE_F32;
    uint64_t n = 1;
    for (int d = rank - 1; d >= 0; --d) {  // fastest first; size-1 dims carry nothing
        const hsize_t e = shape[static_cast<size_t>(d)];
        n *= e;
        if (e != 1) s.dims.push_back(e);
    }
    if (n == 0) fail(path, dataset, "an empty dataset");
    if (s.dims.empty()) s.dims.push_back(1);
    if (s.dims.size() > GSZ_MAX_RANK)
        fail(path, dataset, std::to_string(s.dims.size()) + " dims of size > 1 (gsz takes 1 to 4)");
    return s;
}

void hdf5_read(const std::string& path, const std::string& dataset, const Hdf5Shape& shape, void* out) {
    Quiet quiet;
    const OpenDataset o(path, dataset);
    const hid_t mem = shape.dtype == GSZ_DTYPE_F64 ? H5T_NATIVE_DOUBLE : H5T_NATIVE_FLOAT;
    if (H5Dread(o.ds.id, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) < 0)
        fail(path, dataset, "read failed (a compressed dataset whose filter is not available?)");
}

void hdf5_write(const std::string& path, const std::string& shown, const std::string& dataset, gsz_dtype dtype,
                const std::vector<uint64_t>& dims, const void* bytes) {
    Quiet quiet;
    const Handle file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
    if (file.id < 0) throw std::runtime_error(shown + ": cannot create an HDF5 file");
    std::vector<hsize_t> shape(dims.rbegin(), dims.rend());  // slowest first
    const Handle space(H5Screate_simple(static_cast<int>(shape.size()), shape.data(), nullptr), H5Sclose);
    const Handle lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
    H5Pset_create_intermediate_group(lcpl.id, 1);
    const hid_t file_type = dtype == GSZ_DTYPE_F64 ? H5T_IEEE_F64LE : H5T_IEEE_F32LE;
    const Handle ds(H5Dcreate2(file.id, dataset.c_str(), file_type, space.id, lcpl.id, H5P_DEFAULT, H5P_DEFAULT),
                    H5Dclose);
    if (ds.id < 0) fail(shown, dataset, "cannot create the dataset (is the name a valid path?)");
    const hid_t mem = dtype == GSZ_DTYPE_F64 ? H5T_NATIVE_DOUBLE : H5T_NATIVE_FLOAT;
    if (H5Dwrite(ds.id, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes) < 0) fail(shown, dataset, "write failed (disk full?)");
}

#else

bool hdf5_available() { return false; }

Hdf5Shape hdf5_shape(const std::string&, const std::string&) {
    throw std::runtime_error("--dataset: this gsz was built without HDF5 (install libhdf5-dev and rebuild)");
}

void hdf5_read(const std::string&, const std::string&, const Hdf5Shape&, void*) {
    throw std::runtime_error("--dataset: this gsz was built without HDF5 (install libhdf5-dev and rebuild)");
}

void hdf5_write(const std::string&, const std::string&, const std::string&, gsz_dtype, const std::vector<uint64_t>&,
                const void*) {
    throw std::runtime_error("--dataset: this gsz was built without HDF5 (install libhdf5-dev and rebuild)");
}

#endif

}  // namespace gsz::cli
