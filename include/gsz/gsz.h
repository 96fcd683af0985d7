/*
 * gsz.h: the stable C interface of gsz, an error-bounded lossy compressor for
 * float32/float64 arrays (1-D to 4-D).
 *
 * Conventions
 *   - Every function returns a gsz_status; results are written through
 *     out-parameters.  GSZ_STATUS_OK is 0; values are pinned, new ones are
 *     appended.
 *   - A gsz_ctx keeps the detail message of the last failure
 *     (gsz_ctx_last_error) and caller-set limits.  A context is not
 *     thread-safe; use one per thread.
 *   - Dims are listed fastest-varying first (x, then y, ...), as in cuSZ and
 *     SZ3's -l/-3 options: a C array float a[Z][Y][X] has dims {X, Y, Z}.
 *   - Output is deterministic: the archive bytes depend only on the input
 *     values and the parameters, never on thread counts or the backend.
 *   - Pointers are host pointers, except those named d_* in the *_device
 *     functions, which are CUDA device pointers.
 *
 * Example
 *   gsz_ctx* ctx; gsz_ctx_create(&ctx);
 *   gsz_params p; gsz_params_init(&p);
 *   p.dtype = GSZ_DTYPE_F32; p.rank = 3; p.dims[0] = 91; p.dims[1] = 91; p.dims[2] = 91;
 *   p.error_mode = GSZ_ERROR_REL; p.error_bound = 1e-3;
 *   size_t cap; gsz_compress_bound(&p, &cap);
 *   void* arc = malloc(cap); size_t arc_bytes;
 *   if (gsz_compress(ctx, &p, data, arc, cap, &arc_bytes) != GSZ_STATUS_OK)
 *       fprintf(stderr, "%s\n", gsz_ctx_last_error(ctx));
 *   gsz_ctx_free(ctx);
 */
#ifndef GSZ_GSZ_H
#define GSZ_GSZ_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GSZ_VERSION_MAJOR 0
#define GSZ_VERSION_MINOR 1
#define GSZ_VERSION_PATCH 0
#define GSZ_MAX_RANK 4

typedef enum gsz_status {
    GSZ_STATUS_OK = 0,
    GSZ_STATUS_INVALID_ARGUMENT = 1,   /* a parameter is out of range or inconsistent */
    GSZ_STATUS_CORRUPT = 2,            /* archive bytes fail a length, range or checksum test */
    GSZ_STATUS_UNSUPPORTED = 3,        /* unknown format version, pipeline or feature */
    GSZ_STATUS_BUFFER_TOO_SMALL = 4,   /* caller's output capacity is insufficient */
    GSZ_STATUS_OUT_OF_MEMORY = 5,      /* allocation failed */
    GSZ_STATUS_LIMIT_EXCEEDED = 6,     /* would need more memory than the context allows */
    GSZ_STATUS_NO_DEVICE = 7,          /* CUDA backend requested but unavailable */
    GSZ_STATUS_DEVICE_ERROR = 8,       /* a CUDA runtime call or kernel failed */
    GSZ_STATUS_INTERNAL = 9            /* a bug in gsz: please report it */
} gsz_status;

typedef enum gsz_dtype {
    GSZ_DTYPE_F32 = 1,
    GSZ_DTYPE_F64 = 2
} gsz_dtype;

/* How error_bound is interpreted.
 *   GSZ_ERROR_ABS: |x - x'| <= error_bound for every finite x.
 *   GSZ_ERROR_REL: value-range relative; the absolute bound applied is
 *                  error_bound * (max - min) over the finite values.
 * A bound of 0 (or a constant field in REL mode) means lossless. */
typedef enum gsz_error_mode {
    GSZ_ERROR_ABS = 1,
    GSZ_ERROR_REL = 2
} gsz_error_mode;

typedef enum gsz_pipeline {
    GSZ_PIPELINE_STORE = 0,    /* lossless: values kept verbatim, zstd-compressed */
    GSZ_PIPELINE_LORENZO = 1,  /* Lorenzo + dual quantization + Huffman (cuSZ) */
    GSZ_PIPELINE_FAST = 2,     /* constant blocks + truncated leading-byte coding (SZx/cuSZx) */
    GSZ_PIPELINE_INTERP = 3,   /* anchored spline interpolation + Huffman (cuSZ-i G-Interp) */
    GSZ_PIPELINE_AUTO = 255    /* compression only: lorenzo and interp both run and the smaller archive is
                                  kept (lorenzo on a tie); archives record the pipeline that was kept */
} gsz_pipeline;

/* Cubic spline of the interp pipeline. */
typedef enum gsz_interp_spline {
    GSZ_INTERP_SPLINE_AUTO = 0,        /* tuned per dimension on a sample */
    GSZ_INTERP_SPLINE_NOT_A_KNOT = 1,  /* (-1, 9, 9, -1) / 16 */
    GSZ_INTERP_SPLINE_NATURAL = 2      /* (-3, 23, 23, -3) / 40 */
} gsz_interp_spline;

/* How the interp pipeline stores its anchors (one point in 8^3 / 16^2 / 512). */
typedef enum gsz_interp_anchors {
    GSZ_INTERP_ANCHORS_AUTO = 0,    /* coded, unless too many of them would be outliers */
    GSZ_INTERP_ANCHORS_CODED = 1,   /* quantized at half the coarsest level's bound, Lorenzo over the anchor
                                       grid, Huffman coded with the other codes */
    GSZ_INTERP_ANCHORS_RAW = 2      /* stored exactly, as cuSZ-i does */
} gsz_interp_anchors;

/* How the interp pipeline codes each tile (32x8x8 / 64x16 / 2048 points):
 * by the spline hierarchy, or by Lorenzo prediction with dual quantization
 * (format version 10) where that costs fewer bits (rough data, land masks,
 * quantized sensor data).  A Lorenzo tile keeps its anchors and the faces it
 * shares with lower tiles spline-coded. */
typedef enum gsz_interp_tiles {
    GSZ_INTERP_TILES_SPLINE = 0,    /* every tile spline-coded */
    GSZ_INTERP_TILES_AUTO = 1,      /* the default: a sample of 256 tiles is coded both ways first; where its
                                       Lorenzo tiles save at least 1/40 of its spline cost, as EACH, else as
                                       SPLINE (smooth fields keep the spline's speed on the GPU) */
    GSZ_INTERP_TILES_LORENZO = 2,   /* every tile Lorenzo-coded */
    GSZ_INTERP_TILES_EACH = 3       /* per tile, the coding estimated smaller (rate and error), without the
                                       sample's gate */
} gsz_interp_tiles;

/* The order the "ans" lossless stage codes interp's quant-codes in (format
 * version 12): raster order, or column strips of 32 to 128 columns whose
 * codes also take the row above as context (2-D and 3-D arrays whose fastest
 * dim a power of two >= 32 divides: smooth fields' features continue down
 * the rows; etopo5 rel 1e-2 -5% bytes). */
typedef enum gsz_ans_strips {
    GSZ_ANS_STRIPS_AUTO = 0,    /* the default: both orders estimated on the codes' sample, the smaller kept */
    GSZ_ANS_STRIPS_OFF = 1,     /* raster order only */
    GSZ_ANS_STRIPS_ON = 2       /* strips wherever the shape has them */
} gsz_ans_strips;

/* What the interp pipeline predicts where neighbours differ by a jump larger
 * than 95% of the value range (a fill value next to data): the spline
 * carries such a jump onto every point it spans, so the guard copies the
 * nearer neighbour across it and drops a jumping outer neighbour (linear
 * instead of cubic).  Never triggers on fields without such jumps; an archive
 * records it only where it decided a prediction. */
typedef enum gsz_interp_jump_guard {
    GSZ_INTERP_JUMP_GUARD_AUTO = 0,   /* on */
    GSZ_INTERP_JUMP_GUARD_ON = 1,
    GSZ_INTERP_JUMP_GUARD_OFF = 2     /* the paper's splines everywhere, as cuSZ-i */
} gsz_interp_jump_guard;

/* The second lossless stage of the lorenzo and interp pipelines (what the
 * Huffman coder codes).  Never changes the decompressed values. */
typedef enum gsz_lossless {
    GSZ_LOSSLESS_AUTO = 0,   /* the smallest of none, runs and ans (by exact size estimates) */
    GSZ_LOSSLESS_NONE = 1,   /* Huffman of the quant-codes: at least 1 bit per value */
    GSZ_LOSSLESS_RUNS = 2,   /* runs of the most frequent code folded into the Huffman alphabet
                                (needs radius <= 32763) */
    GSZ_LOSSLESS_ANS = 3     /* context-modelled rANS instead of Huffman: fractional bits per
                                value, each code conditioned on its level and the code before it */
} gsz_lossless;

/* Component dims (lorenzo, interp, fast): a dim of extent 2..8 whose entries are
 * separate quantities (the x, y, z of N particles as N x 3, vector or
 * complex components) is better predicted one component at a time than from
 * its neighbour component.  AUTO decides from a sample of the data (per
 * point, the step along the fastest other dim against the step less the
 * neighbour component's) and records the dim in the archive. */
typedef enum gsz_components {
    GSZ_COMPONENTS_AUTO = 0,   /* apart when the sample says so */
    GSZ_COMPONENTS_OFF = 1     /* predict across every dim, as before format version 6 */
} gsz_components;

/* Fill values (interp from format version 13, lorenzo from 15): a missing-value marker the source
 * stores in place of data (land cells).  Points holding it bit for bit are
 * not coded: they take their prediction (interp) or a stand-in inside the
 * data's range (lorenzo), and the archive keeps where they are (their mask's
 * Lorenzo residual over GF(2), gamma-coded), so they come back exactly.
 * From version 15 a relative bound is relative to the range of the other
 * finite values (the header's value_min / value_max); with GSZ_FILL_OFF it
 * takes the whole finite range, as other compressors do. */
typedef enum gsz_fill {
    GSZ_FILL_AUTO = 0,    /* the array's minimum or maximum where it is at least 1/64 of a sample of the
                             values and lies apart from the others (4 times their span away) */
    GSZ_FILL_OFF = 1,     /* no fill value: every point coded */
    GSZ_FILL_VALUE = 2    /* gsz_params::fill_value */
} gsz_fill;

typedef enum gsz_device {
    GSZ_DEVICE_AUTO = 0,   /* CUDA when built in and a GPU is present, else CPU */
    GSZ_DEVICE_CPU = 1,
    GSZ_DEVICE_CUDA = 2
} gsz_device;

typedef struct gsz_params {
    gsz_dtype dtype;
    uint32_t rank;                  /* 1..GSZ_MAX_RANK */
    uint64_t dims[GSZ_MAX_RANK];    /* fastest-varying first; entries >= rank are ignored */
    gsz_error_mode error_mode;
    double error_bound;             /* >= 0, finite */
    gsz_pipeline pipeline;          /* default GSZ_PIPELINE_LORENZO */
    uint32_t radius;                /* quantization radius, 1..32768; 0 = the pipeline's default
                                       (lorenzo 512, interp 32768) */
    gsz_device device;              /* default GSZ_DEVICE_AUTO */
    int32_t num_threads;            /* CPU threads; 0 = OpenMP default.  Never changes output. */
    uint32_t block_size;            /* fast pipeline: values per block, 64, 128 or 256; 0 = 128 */
    /* interp pipeline; 0 / "" = auto-tuned */
    double interp_alpha;            /* level-wise bound e_l = eb / min(alpha^(l-1), beta): alpha >= 1 */
    double interp_beta;             /* beta >= 1 */
    gsz_interp_spline interp_spline;
    char interp_order[4];           /* dims in processing order, letters x (fastest), y, z of the
                                       array with size-1 dims dropped, e.g. "zyx"; "" = auto */
    gsz_interp_anchors interp_anchors;  /* default GSZ_INTERP_ANCHORS_AUTO */
    gsz_lossless lossless;          /* lorenzo and interp; default GSZ_LOSSLESS_AUTO */
    gsz_interp_jump_guard interp_jump_guard;  /* interp; default GSZ_INTERP_JUMP_GUARD_AUTO (on) */
    gsz_components components;      /* lorenzo, interp, fast; default GSZ_COMPONENTS_AUTO */
    uint32_t interp_anchor_stride;  /* interp, 1-D arrays: anchors every this many points, a power of two
                                       2..512 (format version 9); 0 = auto (tuned on a sample; 512, the
                                       paper's, where a shorter one saves nothing) */
    gsz_interp_tiles interp_tiles;  /* interp; default GSZ_INTERP_TILES_AUTO */
    gsz_ans_strips ans_strips;      /* interp with the ans stage; default GSZ_ANS_STRIPS_AUTO */
    gsz_fill fill;                  /* lorenzo, interp; default GSZ_FILL_AUTO */
    double fill_value;              /*   GSZ_FILL_VALUE: the value (rounded to the dtype: -1e34 is float32's -1e34f) */
} gsz_params;

/* What an archive holds, read from its (validated) header. */
typedef struct gsz_archive_info {
    uint32_t format_version;
    gsz_dtype dtype;
    uint32_t rank;
    uint64_t dims[GSZ_MAX_RANK];
    uint64_t num_elements;
    gsz_error_mode error_mode;
    double error_bound;             /* as the user gave it */
    double error_bound_abs;         /* absolute bound applied (0 = lossless) */
    double value_min;               /* finite range of the input (NaN if none); without a kept fill value (version 15) */
    double value_max;
    gsz_pipeline pipeline;
    uint32_t radius;                /* lorenzo and interp, else 0 */
    uint64_t num_outliers;          /* values stored exactly (lorenzo and interp) */
    gsz_lossless lossless;          /* lorenzo and interp: NONE, RUNS or ANS as stored, else 0 */
    uint32_t run_dominant_code;     /*   RUNS: the code whose runs are tokens */
    uint64_t huffman_symbols;       /*   symbols Huffman coded (codes, or run tokens; 0 with ANS) */
    uint64_t ans_lanes;             /*   ANS: rANS lanes (chains decoded one GPU thread each), else 0 */
    uint32_t ans_lane_symbols;      /*   ANS: codes per lane (the last lane holds the rest) */
    uint64_t ans_lanes_bytes;       /*   ANS: bytes of the lanes' final states and word counts */
    uint32_t block_size;            /* fast only, else 0 */
    uint64_t num_blocks;            /* fast only: blocks, of which */
    uint64_t num_constant_blocks;   /*   stored as one value */
    uint64_t num_raw_blocks;        /*   stored verbatim (NaN/Inf, or no truncation holds) */
    uint32_t interp_rank;           /* interp only: rank after dropping size-1 dims */
    uint32_t interp_anchor_stride;  /*   anchors every this many points */
    uint64_t interp_num_anchors;
    double interp_alpha, interp_beta;
    char interp_order[4];           /*   processing order, e.g. "zyx" */
    char interp_spline[4];          /*   cubic per dim x, y, z: 'k' not-a-knot, 'n' natural */
    gsz_interp_anchors interp_anchors;  /* CODED or RAW as stored */
    uint64_t interp_listed_anchors; /*   CODED: anchors stored as outliers (residual listed apart) */
    double interp_jump;             /*   jump guard: neighbours farther apart than this are a jump
                                         (95% of the value range); 0 = none recorded
                                         (off, or it decided no prediction) */
    int32_t component_dim;          /* lossy pipelines: the dim predicted one component at a
                                       time (its entries stored apart), or -1 */
    uint64_t archive_bytes;
    uint64_t original_bytes;
    uint32_t ans_class_lag;         /* ANS: 1 or 2, the code before a code whose class picks its
                                       context (2: the one before that; format version 8), else 0 */
    uint64_t interp_tiles;          /* interp only: tiles */
    uint64_t interp_lorenzo_tiles;  /*   of which Lorenzo-coded (format version 10) */
    uint32_t ans_strip_width;       /* ANS: codes coded in column strips of this many columns,
                                       with the row above as context (format version 12), or 0 */
    uint32_t has_fill;              /* lorenzo, interp: 1 where the archive has a fill value (format version 13; lorenzo 15) */
    double fill_value;              /*   the value */
    uint64_t fill_points;           /*   points holding it */
    uint64_t fill_mask_bytes;       /*   bytes of their mask */
} gsz_archive_info;

typedef struct gsz_ctx gsz_ctx;

/* Human-readable name of a status ("ok", "corrupt archive", ...). Never NULL. */
const char* gsz_status_string(gsz_status status);

/* Library version as "MAJOR.MINOR.PATCH". */
const char* gsz_version_string(void);

/* Create a context; *ctx is NULL on failure. */
gsz_status gsz_ctx_create(gsz_ctx** ctx);

/* Free a context; NULL is accepted. */
void gsz_ctx_free(gsz_ctx* ctx);

/* Detail message of the last failed call on this context ("" if none). */
const char* gsz_ctx_last_error(const gsz_ctx* ctx);

/* Cap on the memory a call may allocate (output plus working buffers).
 * Archives that would need more are refused with GSZ_STATUS_LIMIT_EXCEEDED
 * before anything is allocated.  Default: 16 GiB.  0 = no limit. */
gsz_status gsz_ctx_set_memory_limit(gsz_ctx* ctx, uint64_t bytes);

/* Fill *params with defaults: f32, rank 1, dims 1, REL 1e-3, lorenzo,
 * radius 0 (the pipeline's default), device auto, threads 0. */
void gsz_params_init(gsz_params* params);

/* Worst-case archive size for these parameters: a capacity of this many bytes
 * makes gsz_compress never fail with GSZ_STATUS_BUFFER_TOO_SMALL. */
gsz_status gsz_compress_bound(const gsz_params* params, size_t* bytes);

/* Compress `data` (num_elements values of params->dtype, C order, host
 * memory) into `archive` (capacity bytes).  On success *archive_bytes holds
 * the archive size.  Every finite value is reconstructed within the bound;
 * NaN and +-Inf come back bit-exact. */
gsz_status gsz_compress(gsz_ctx* ctx, const gsz_params* params, const void* data,
                        void* archive, size_t capacity, size_t* archive_bytes);

/* Validate an archive fully (header, section table, checksums) and describe it. */
gsz_status gsz_archive_inspect(gsz_ctx* ctx, const void* archive, size_t archive_bytes,
                               gsz_archive_info* info);

/* One section of an archive: its kind ("ans_stream", "huffman_bitstream", ...;
 * docs/FORMAT.md lists them) and the bytes of its payload. */
typedef struct gsz_section_info {
    char name[32];
    uint64_t bytes;
} gsz_section_info;

/* Where an archive's bytes go.  Validates it as gsz_archive_inspect does, then
 * writes its number of sections to *count, the first min(capacity, *count) of
 * them in archive order to `sections` (NULL allowed when capacity is 0), and,
 * when header_bytes is not NULL, the bytes of the header and section table:
 * the sections' bytes and *header_bytes sum to archive_bytes. */
gsz_status gsz_archive_sections(gsz_ctx* ctx, const void* archive, size_t archive_bytes,
                                gsz_section_info* sections, uint32_t capacity, uint32_t* count,
                                uint64_t* header_bytes);

/* Decompress into `out` (out_capacity bytes, host memory).  The archive is
 * validated before anything is written; out must hold num_elements values of
 * the archive's dtype (see gsz_archive_inspect).  `device` picks the backend. */
gsz_status gsz_decompress(gsz_ctx* ctx, const void* archive, size_t archive_bytes,
                          void* out, size_t out_capacity, gsz_device device,
                          int32_t num_threads);

/* ---- CUDA backend on device memory ----------------------------------------
 * These run on the GPU whatever params->device says, and fail with
 * GSZ_STATUS_NO_DEVICE when this build or machine has no usable GPU.  Work is
 * issued on `cuda_stream` (a cudaStream_t; NULL = default stream) and is
 * complete when the call returns.  The archive bytes are the same as those
 * gsz_compress writes on the CPU. */

/* Compress d_data (device memory, num_elements values) into `archive`, which
 * is device memory when archive_on_device != 0, else host memory.  Size it
 * with gsz_compress_bound. */
gsz_status gsz_compress_device(gsz_ctx* ctx, const gsz_params* params, const void* d_data,
                               void* archive, size_t capacity, size_t* archive_bytes,
                               int archive_on_device, void* cuda_stream);

/* Decompress an archive (device memory when archive_on_device != 0, else host
 * memory) into d_out (device memory, out_capacity bytes). */
gsz_status gsz_decompress_device(gsz_ctx* ctx, const void* archive, size_t archive_bytes,
                                 int archive_on_device, void* d_out, size_t out_capacity,
                                 void* cuda_stream);


/* ---- Assessment (docs/METRICS.md) ------------------------------------------
 * How a decompressed array differs from its original, with e = decompressed -
 * original.  Arrays are host memory, or device memory when on_device != 0
 * (then every metric runs on the GPU, on `cuda_stream`, without copying the
 * arrays; GSZ_STATUS_NO_DEVICE without a usable GPU). */

#define GSZ_ASSESS_REDUCTIONS 1u   /* error statistics, MSE family, SNR, Pearson, PDFs */
#define GSZ_ASSESS_STENCILS 2u     /* derivative, Laplacian and divergence comparisons */
#define GSZ_ASSESS_AUTOCORR 4u     /* error autocorrelation along the flattened array */
#define GSZ_ASSESS_SSIM 8u         /* windowed SSIM */
#define GSZ_ASSESS_ALL 15u

typedef struct gsz_assess_options {
    uint32_t metrics;        /* GSZ_ASSESS_* flags; default ALL */
    uint32_t pdf_bins;       /* default 2000 */
    uint32_t autocorr_lags;  /* default 100 */
    uint32_t ssim_window;    /* default 7 */
    uint32_t ssim_step;      /* default 1 (2 = qcat/libpressio) */
    int32_t num_threads;     /* CPU threads, 0 = all */
} gsz_assess_options;

typedef struct gsz_assess_result {
    uint64_t num_elements;
    uint64_t num_nonfinite;          /* non-finite originals (left out of every metric) */
    uint64_t nonfinite_mismatches;   /* of those, not restored bit-exactly */
    double value_min, value_max, value_range;
    double min_error, max_error, mean_error;
    double max_abs_error, mean_abs_error;
    uint64_t max_abs_error_index;
    double max_rel_error;            /* max |e| / range */
    double max_pwr_error;            /* max |e| / |x| over x != 0 */
    double mse, rmse, nrmse, psnr, snr, pearson, l2_error;
    double derivative1_psnr, derivative2_psnr, laplacian_psnr, divergence_psnr;
    double ssim;
    /* Optional outputs, set by the caller (NULL = not wanted): pdf_bins and
     * autocorr_lags doubles.  The PDF is probability mass per bin over
     * [min_error, max_error]; the autocorrelation holds lags 1..autocorr_lags
     * (fewer for short arrays: the rest is set to 0). */
    double* error_pdf;
    double* error_autocorr;
} gsz_assess_result;

/* Defaults as listed above. */
void gsz_assess_options_init(gsz_assess_options* options);

/* Compute the selected metrics of `decompressed` against `original`
 * (num = product of dims values of dtype each, dims fastest first).  Fields of
 * metrics not selected are 0; an infinite PSNR (identical arrays) is +inf. */
gsz_status gsz_assess(gsz_ctx* ctx, gsz_dtype dtype, uint32_t rank, const uint64_t* dims, const void* original,
                      const void* decompressed, int on_device, void* cuda_stream,
                      const gsz_assess_options* options, gsz_assess_result* result);

#ifdef __cplusplus
}
#endif

#endif /* GSZ_GSZ_H */
