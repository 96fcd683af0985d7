/* gsz as an HDF5 filter: error-bounded lossy compression of float32 and
 * float64 chunked datasets.
 *
 * The plugin (libH5Zgsz.so) is found by HDF5 through HDF5_PLUGIN_PATH, so an
 * application, h5py or h5repack needs nothing but the filter's id and its
 * values:
 *
 *   unsigned cd[GSZ_H5Z_USER_VALUES];
 *   gsz_h5z_set_values(cd, GSZ_ERROR_REL, 1e-4, GSZ_PIPELINE_INTERP);
 *   H5Pset_chunk(dcpl, 3, chunk);
 *   H5Pset_filter(dcpl, GSZ_H5Z_FILTER_ID, H5Z_FLAG_MANDATORY, GSZ_H5Z_USER_VALUES, cd);
 *
 *   h5repack -f UD=41973,0,4,2,3944497965,1058682594,3 in.h5 out.h5   (the same, from the shell)
 *
 * Client data values (cd_values), what a user gives (0 to 4 of them; the
 * ones left out take the defaults):
 *   [0] error mode: GSZ_ERROR_ABS (1) or GSZ_ERROR_REL (2, default)
 *   [1] error bound, the low 32 bits of its IEEE-754 double
 *   [2] error bound, the high 32 bits (default 1e-3)
 *   [3] pipeline: GSZ_PIPELINE_LORENZO (1, default), FAST (2), INTERP (3), AUTO (255)
 * When the dataset is created the filter appends what each chunk's archive
 * needs and the file then records: [4] layout version (1), [5] dtype
 * (GSZ_DTYPE_F32 or F64), [6] rank (1..4), [7..] the chunk's dims, fastest
 * first.
 *
 * Each chunk is one gsz archive, so a relative bound is relative to each
 * chunk's value range (as in H5Z-SZ3 and H5Z-ZFP); an absolute bound is the
 * same everywhere.  NaN and +-Inf come back bit-exact.  Only little-endian
 * IEEE float datasets take the filter (H5T_IEEE_F32LE, H5T_IEEE_F64LE); on
 * anything else dataset creation fails.  GSZ_H5Z_DEVICE=cpu|cuda|auto in the
 * environment picks the backend (default auto); the bytes written do not
 * depend on it.
 *
 * The id is in the range The HDF Group leaves to unregistered filters
 * (32768-65535) until one is assigned. */
#ifndef GSZ_H5ZGSZ_H
#define GSZ_H5ZGSZ_H

#include "gsz/gsz.h"

#include <string.h>

#define GSZ_H5Z_FILTER_ID 41973
#define GSZ_H5Z_USER_VALUES 4
#define GSZ_H5Z_LAYOUT_VERSION 1
#define GSZ_H5Z_MAX_VALUES (7 + GSZ_MAX_RANK)

/* Fills cd[0..3] (GSZ_H5Z_USER_VALUES values) for H5Pset_filter. */
static inline void gsz_h5z_set_values(unsigned cd[GSZ_H5Z_USER_VALUES], gsz_error_mode mode, double bound,
                                      gsz_pipeline pipeline) {
    unsigned long long bits;
    memcpy(&bits, &bound, sizeof bits);
    cd[0] = (unsigned)mode;
    cd[1] = (unsigned)(bits & 0xFFFFFFFFull);
    cd[2] = (unsigned)(bits >> 32);
    cd[3] = (unsigned)pipeline;
}

/* The error bound of cd[1..2]. */
static inline double gsz_h5z_bound(const unsigned cd[GSZ_H5Z_USER_VALUES]) {
    const unsigned long long bits = (unsigned long long)cd[1] | (unsigned long long)cd[2] << 32;
    double bound;
    memcpy(&bound, &bits, sizeof bound);
    return bound;
}

#endif
