// The gsz HDF5 filter plugin (H5Zgsz.h says what it takes and writes).
// Only the public C API of gsz is used: a chunk is compressed into one
// archive, and an archive is validated in full (header, sections,
// checksums) before a byte of its chunk is written.
#include "H5Zgsz.h"

#include <H5PLextern.h>
#include <hdf5.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

// One line on HDF5's error stack, which HDF5 prints (or the caller reads)
// when the dataset call that ran the filter fails.
void push_error(const char* func, H5E_major_t major, H5E_minor_t minor, const char* fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    H5Epush2(H5E_DEFAULT, __FILE__, func, __LINE__, H5E_ERR_CLS, major, minor, "gsz: %s", msg);
}

// The stored values in a form the filter works with.
struct Settings {
    gsz_error_mode mode = GSZ_ERROR_REL;
    double bound = 1e-3;
    gsz_pipeline pipeline = GSZ_PIPELINE_LORENZO;
    gsz_dtype dtype = GSZ_DTYPE_F32;
    uint32_t rank = 0;
    uint64_t dims[GSZ_MAX_RANK] = {};

    uint64_t chunk_bytes() const {
        uint64_t n = dtype == GSZ_DTYPE_F64 ? 8 : 4;
        for (uint32_t d = 0; d < rank; ++d) n *= dims[d];
        return n;
    }
};

bool valid_mode(unsigned v) { return v == GSZ_ERROR_ABS || v == GSZ_ERROR_REL; }
bool valid_pipeline(unsigned v) {
    return v == GSZ_PIPELINE_LORENZO || v == GSZ_PIPELINE_FAST || v == GSZ_PIPELINE_INTERP || v == GSZ_PIPELINE_AUTO;
}

// The user's part of the values (0..4 of them; the defaults for the rest).
// Values are checked as the integers they are before they become enums
// (an enum holding no enumerator's value is undefined behaviour).
bool read_user_values(size_t n, const unsigned* cd, Settings& s, const char* func) {
    if (n == 2) {
        push_error(func, H5E_PLINE, H5E_BADVALUE, "the error bound takes two values (its double's low and high words)");
        return false;
    }
    if (n >= 1 && !valid_mode(cd[0])) {
        push_error(func, H5E_PLINE, H5E_BADVALUE, "error mode %u: 1 (abs) or 2 (rel)", cd[0]);
        return false;
    }
    if (n >= 4 && !valid_pipeline(cd[3])) {
        push_error(func, H5E_PLINE, H5E_BADVALUE, "pipeline %u: 1 (lorenzo), 2 (fast), 3 (interp) or 255 (auto)",
                   cd[3]);
        return false;
    }
    if (n >= 1) s.mode = static_cast<gsz_error_mode>(cd[0]);
    if (n >= 3) s.bound = gsz_h5z_bound(cd);
    if (n >= 4) s.pipeline = static_cast<gsz_pipeline>(cd[3]);
    if (!(s.bound >= 0) || s.bound > 1e300) {
        push_error(func, H5E_PLINE, H5E_BADVALUE, "error bound %g: a finite value >= 0", s.bound);
        return false;
    }
    return true;
}

// All the values set_local wrote (what a file records).
bool read_values(size_t n, const unsigned* cd, Settings& s, const char* func) {
    if (n < 8 || !read_user_values(GSZ_H5Z_USER_VALUES, cd, s, func)) {
        if (n < 8) push_error(func, H5E_PLINE, H5E_BADVALUE, "%zu filter values, at least 8 expected", n);
        return false;
    }
    if (cd[4] != GSZ_H5Z_LAYOUT_VERSION) {
        push_error(func, H5E_PLINE, H5E_BADVALUE, "filter values of layout %u; this plugin reads layout %d", cd[4],
                   GSZ_H5Z_LAYOUT_VERSION);
        return false;
    }
    if ((cd[5] != GSZ_DTYPE_F32 && cd[5] != GSZ_DTYPE_F64) || cd[6] < 1 || cd[6] > GSZ_MAX_RANK ||
        n != 7 + size_t{cd[6]}) {
        push_error(func, H5E_PLINE, H5E_BADVALUE, "dtype %u, rank %u in %zu filter values", cd[5], cd[6], n);
        return false;
    }
    s.dtype = static_cast<gsz_dtype>(cd[5]);
    s.rank = cd[6];
    // HDF5 chunks hold less than 4 GiB: dims beyond that are not a chunk's
    // (a damaged or hostile file), and nothing is sized from them.
    uint64_t elements = 1;
    for (uint32_t d = 0; d < s.rank; ++d) {
        s.dims[d] = cd[7 + d];
        if (s.dims[d] == 0 || (elements *= s.dims[d]) > (uint64_t{1} << 32)) {
            push_error(func, H5E_PLINE, H5E_BADVALUE, "chunk dims out of range");
            return false;
        }
    }
    if (s.chunk_bytes() > (uint64_t{1} << 32)) {
        push_error(func, H5E_PLINE, H5E_BADVALUE, "a chunk of %llu bytes (HDF5's hold less than 4 GiB)",
                   static_cast<unsigned long long>(s.chunk_bytes()));
        return false;
    }
    return true;
}

gsz_device device_from_environment() {
    const char* v = std::getenv("GSZ_H5Z_DEVICE");
    if (v == nullptr || std::strcmp(v, "auto") == 0) return GSZ_DEVICE_AUTO;
    if (std::strcmp(v, "cpu") == 0) return GSZ_DEVICE_CPU;
    if (std::strcmp(v, "cuda") == 0) return GSZ_DEVICE_CUDA;
    return GSZ_DEVICE_AUTO;
}

struct Context {
    gsz_ctx* ctx = nullptr;
    Context() { gsz_ctx_create(&ctx); }
    ~Context() { gsz_ctx_free(ctx); }
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;
};

// can_apply: little-endian IEEE floats in chunks.
htri_t can_apply(hid_t dcpl, hid_t type, hid_t /*space*/) {
    if (H5Tequal(type, H5T_IEEE_F32LE) <= 0 && H5Tequal(type, H5T_IEEE_F64LE) <= 0) {
        push_error("H5Zgsz can_apply", H5E_PLINE, H5E_BADTYPE,
                   "the filter takes little-endian IEEE float32 or float64 datasets only");
        return 0;
    }
    if (H5Pget_layout(dcpl) != H5D_CHUNKED) {
        push_error("H5Zgsz can_apply", H5E_PLINE, H5E_BADVALUE, "the filter needs a chunked dataset");
        return 0;
    }
    return 1;
}

// set_local: the user's values (checked, defaults filled in), then dtype,
// rank and the chunk's dims, fastest first.  Dims of size 1 are dropped and
// chunks of more than four dims fold their slowest dims together (the same
// values in the same order).
herr_t set_local(hid_t dcpl, hid_t type, hid_t /*space*/) {
    const char* func = "H5Zgsz set_local";
    unsigned flags = 0;
    size_t n = GSZ_H5Z_MAX_VALUES;
    unsigned cd[GSZ_H5Z_MAX_VALUES] = {};
    if (H5Pget_filter_by_id2(dcpl, GSZ_H5Z_FILTER_ID, &flags, &n, cd, 0, nullptr, nullptr) < 0) return -1;
    Settings s;
    // Values copied from another dataset (h5repack, H5Pcopy) hold a layout
    // already: its user part is kept, the rest recomputed for this chunk.
    if (!read_user_values(n < GSZ_H5Z_USER_VALUES ? n : GSZ_H5Z_USER_VALUES, cd, s, func)) return -1;
    const int chunk_rank = H5Pget_chunk(dcpl, 0, nullptr);
    if (chunk_rank < 1 || chunk_rank > 32) {
        push_error(func, H5E_PLINE, H5E_BADVALUE, "no chunk dims");
        return -1;
    }
    std::vector<hsize_t> chunk(static_cast<size_t>(chunk_rank));
    if (H5Pget_chunk(dcpl, chunk_rank, chunk.data()) < 0) return -1;
    std::vector<uint64_t> dims;  // fastest first, no 1s
    for (int d = chunk_rank - 1; d >= 0; --d)
        if (chunk[static_cast<size_t>(d)] > 1) dims.push_back(chunk[static_cast<size_t>(d)]);
    if (dims.empty()) dims.push_back(1);
    while (dims.size() > GSZ_MAX_RANK) {
        dims[dims.size() - 2] *= dims.back();
        dims.pop_back();
    }
    for (const uint64_t d : dims)
        if (d > 0xFFFFFFFFull) {
            push_error(func, H5E_PLINE, H5E_BADVALUE, "a chunk dim of %llu", static_cast<unsigned long long>(d));
            return -1;
        }
    unsigned out[GSZ_H5Z_MAX_VALUES];
    gsz_h5z_set_values(out, s.mode, s.bound, s.pipeline);
    out[4] = GSZ_H5Z_LAYOUT_VERSION;
    out[5] = H5Tget_size(type) == 8 ? GSZ_DTYPE_F64 : GSZ_DTYPE_F32;
    out[6] = static_cast<unsigned>(dims.size());
    for (size_t d = 0; d < dims.size(); ++d) out[7 + d] = static_cast<unsigned>(dims[d]);
    return H5Pmodify_filter(dcpl, GSZ_H5Z_FILTER_ID, flags, 7 + dims.size(), out);
}

size_t compress_chunk(const Settings& s, size_t nbytes, size_t* buf_size, void** buf) {
    const char* func = "H5Zgsz compress";
    if (nbytes != s.chunk_bytes()) {
        push_error(func, H5E_PLINE, H5E_CANTFILTER, "a chunk of %zu bytes where its dims give %llu", nbytes,
                   static_cast<unsigned long long>(s.chunk_bytes()));
        return 0;
    }
    gsz_params p;
    gsz_params_init(&p);
    p.dtype = s.dtype;
    p.rank = s.rank;
    for (uint32_t d = 0; d < s.rank; ++d) p.dims[d] = s.dims[d];
    p.error_mode = s.mode;
    p.error_bound = s.bound;
    p.pipeline = s.pipeline;
    p.device = device_from_environment();
    size_t capacity = 0;
    if (gsz_compress_bound(&p, &capacity) != GSZ_STATUS_OK) {
        push_error(func, H5E_PLINE, H5E_CANTFILTER, "no archive bound for these values");
        return 0;
    }
    Context c;
    void* archive = H5allocate_memory(capacity, false);
    if (c.ctx == nullptr || archive == nullptr) {
        if (archive) H5free_memory(archive);
        push_error(func, H5E_RESOURCE, H5E_NOSPACE, "out of memory for a %zu-byte archive", capacity);
        return 0;
    }
    size_t written = 0;
    const gsz_status st = gsz_compress(c.ctx, &p, *buf, archive, capacity, &written);
    if (st != GSZ_STATUS_OK) {
        push_error(func, H5E_PLINE, H5E_CANTFILTER, "%s: %s", gsz_status_string(st), gsz_ctx_last_error(c.ctx));
        H5free_memory(archive);
        return 0;
    }
    H5free_memory(*buf);
    *buf = archive;
    *buf_size = capacity;
    return written;
}

size_t decompress_chunk(const Settings& s, size_t nbytes, size_t* buf_size, void** buf) {
    const char* func = "H5Zgsz decompress";
    Context c;
    if (c.ctx == nullptr) {
        push_error(func, H5E_RESOURCE, H5E_NOSPACE, "no gsz context");
        return 0;
    }
    gsz_archive_info info;
    gsz_status st = gsz_archive_inspect(c.ctx, *buf, nbytes, &info);
    if (st != GSZ_STATUS_OK) {
        push_error(func, H5E_PLINE, H5E_CANTFILTER, "a chunk that is not a valid archive: %s: %s",
                   gsz_status_string(st), gsz_ctx_last_error(c.ctx));
        return 0;
    }
    // The dataset's metadata says what the chunk must hold: an archive of
    // other dims or dtype is refused before anything is allocated for it.
    if (info.original_bytes != s.chunk_bytes() || info.dtype != s.dtype) {
        push_error(func, H5E_PLINE, H5E_CANTFILTER, "the chunk's archive holds %llu bytes of dtype %d, the dataset %llu",
                   static_cast<unsigned long long>(info.original_bytes), static_cast<int>(info.dtype),
                   static_cast<unsigned long long>(s.chunk_bytes()));
        return 0;
    }
    const size_t out_bytes = static_cast<size_t>(info.original_bytes);
    void* out = H5allocate_memory(out_bytes, false);
    if (out == nullptr) {
        push_error(func, H5E_RESOURCE, H5E_NOSPACE, "out of memory for a %zu-byte chunk", out_bytes);
        return 0;
    }
    st = gsz_decompress(c.ctx, *buf, nbytes, out, out_bytes, device_from_environment(), 0);
    if (st != GSZ_STATUS_OK) {
        push_error(func, H5E_PLINE, H5E_CANTFILTER, "%s: %s", gsz_status_string(st), gsz_ctx_last_error(c.ctx));
        H5free_memory(out);
        return 0;
    }
    H5free_memory(*buf);
    *buf = out;
    *buf_size = out_bytes;
    return out_bytes;
}

// HDF5's filter callback: 0 tells it the filter failed.
size_t filter(unsigned flags, size_t cd_nelmts, const unsigned cd_values[], size_t nbytes, size_t* buf_size,
              void** buf) {
    Settings s;
    const bool reverse = (flags & H5Z_FLAG_REVERSE) != 0;
    if (!read_values(cd_nelmts, cd_values, s, reverse ? "H5Zgsz decompress" : "H5Zgsz compress")) return 0;
    return reverse ? decompress_chunk(s, nbytes, buf_size, buf) : compress_chunk(s, nbytes, buf_size, buf);
}

const H5Z_class2_t kFilterClass = {
    H5Z_CLASS_T_VERS,
    static_cast<H5Z_filter_t>(GSZ_H5Z_FILTER_ID),
    1,
    1,
    "gsz: error-bounded lossy compression of float32 and float64 chunks",
    can_apply,
    set_local,
    filter,
};

}  // namespace

extern "C" {
// The two entry points HDF5 looks up in a plugin it loads.
H5PL_type_t H5PLget_plugin_type(void) { return H5PL_TYPE_FILTER; }
const void* H5PLget_plugin_info(void) { return &kFilterClass; }
}
