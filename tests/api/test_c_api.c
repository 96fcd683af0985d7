/* The public header used from C (C11): it must compile as C and work as documented. */
#include <gsz/gsz.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;
#define EXPECT(cond)                                                   \
    do {                                                               \
        if (!(cond)) {                                                 \
            fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
            ++failures;                                                \
        }                                                              \
    } while (0)

int main(void) {
    enum { NX = 64, NY = 48, NZ = 5, N = NX * NY * NZ };
    float* data = malloc(N * sizeof(float));
    float* back = malloc(N * sizeof(float));
    for (int i = 0; i < N; ++i) data[i] = (float)(sin(i * 0.01) * 100.0 + (i % NX) * 0.5);

    gsz_ctx* ctx = NULL;
    EXPECT(gsz_ctx_create(&ctx) == GSZ_STATUS_OK && ctx != NULL);

    gsz_params p;
    gsz_params_init(&p);
    EXPECT(p.radius == 0 && p.pipeline == GSZ_PIPELINE_LORENZO && p.error_mode == GSZ_ERROR_REL);
    EXPECT(p.interp_tiles == GSZ_INTERP_TILES_AUTO);
    p.dtype = GSZ_DTYPE_F32;
    p.rank = 3;
    p.dims[0] = NX; p.dims[1] = NY; p.dims[2] = NZ;
    p.error_mode = GSZ_ERROR_ABS;
    p.error_bound = 0.01;
    p.device = GSZ_DEVICE_CPU;

    size_t cap = 0, size = 0;
    EXPECT(gsz_compress_bound(&p, &cap) == GSZ_STATUS_OK && cap > 0);
    unsigned char* arc = malloc(cap);
    EXPECT(gsz_compress(ctx, &p, data, arc, cap, &size) == GSZ_STATUS_OK);
    EXPECT(size > 0 && size < N * sizeof(float) / 2);

    gsz_archive_info info;
    EXPECT(gsz_archive_inspect(ctx, arc, size, &info) == GSZ_STATUS_OK);
    EXPECT(info.format_version == 15 && info.num_elements == N && info.rank == 3 && info.dims[2] == NZ);
    EXPECT(info.error_bound_abs == 0.01 && info.archive_bytes == size);

    /* where the bytes go: every section named, header + sections = the archive; a short buffer gets the first ones */
    uint32_t num_sections = 0;
    uint64_t header_bytes = 0, section_bytes = 0;
    EXPECT(gsz_archive_sections(ctx, arc, size, NULL, 0, &num_sections, NULL) == GSZ_STATUS_OK);
    EXPECT(num_sections >= 2 && num_sections <= 64);
    gsz_section_info sections[64];
    EXPECT(gsz_archive_sections(ctx, arc, size, sections, 64, &num_sections, &header_bytes) == GSZ_STATUS_OK);
    for (uint32_t i = 0; i < num_sections && i < 64; ++i) {
        EXPECT(sections[i].name[0] != '\0' && strcmp(sections[i].name, "unknown") != 0);
        section_bytes += sections[i].bytes;
    }
    EXPECT(strcmp(sections[0].name, "pipeline_params") == 0);
    EXPECT(header_bytes > 0 && header_bytes + section_bytes == size);
    gsz_section_info first;
    uint32_t total = 0;
    EXPECT(gsz_archive_sections(ctx, arc, size, &first, 1, &total, NULL) == GSZ_STATUS_OK);
    EXPECT(total == num_sections && strcmp(first.name, sections[0].name) == 0 && first.bytes == sections[0].bytes);
    EXPECT(gsz_archive_sections(ctx, arc, size, NULL, 1, &total, NULL) == GSZ_STATUS_INVALID_ARGUMENT);
    arc[size / 2] ^= 0x40; /* a flipped payload bit: rejected, as by gsz_archive_inspect */
    EXPECT(gsz_archive_sections(ctx, arc, size, sections, 64, &total, NULL) == GSZ_STATUS_CORRUPT);
    arc[size / 2] ^= 0x40;

    EXPECT(gsz_decompress(ctx, arc, size, back, N * sizeof(float), GSZ_DEVICE_CPU, 0) == GSZ_STATUS_OK);
    double max_err = 0;
    for (int i = 0; i < N; ++i) max_err = fmax(max_err, fabs((double)back[i] - (double)data[i]));
    EXPECT(max_err <= 0.01);

    /* assessment from C: the same max error and MSE as computed here */
    gsz_assess_options ao;
    gsz_assess_options_init(&ao);
    EXPECT(ao.metrics == GSZ_ASSESS_ALL && ao.pdf_bins == 2000 && ao.autocorr_lags == 100 && ao.ssim_window == 7);
    ao.pdf_bins = 64;
    ao.autocorr_lags = 5;
    double pdf[64], autocorr[5];
    gsz_assess_result ar;
    ar.error_pdf = pdf;
    ar.error_autocorr = autocorr;
    const uint64_t adims[3] = {NX, NY, NZ};
    EXPECT(gsz_assess(ctx, GSZ_DTYPE_F32, 3, adims, data, back, 0, NULL, &ao, &ar) == GSZ_STATUS_OK);
    double mse = 0, mass = 0;
    for (int i = 0; i < N; ++i) mse += ((double)back[i] - data[i]) * ((double)back[i] - data[i]);
    mse /= N;
    for (int b = 0; b < 64; ++b) mass += pdf[b];
    EXPECT(ar.num_elements == N && ar.max_abs_error == max_err && fabs(ar.mse - mse) <= 1e-12 * mse);
    EXPECT(fabs(mass - 1.0) < 1e-12 && ar.ssim > 0.9 && ar.ssim <= 1.0 && fabs(autocorr[0]) <= 1.0);
    EXPECT(ar.psnr > 60 && ar.pearson > 0.999 && ar.derivative1_psnr > 0);
    EXPECT(gsz_assess(ctx, GSZ_DTYPE_F32, 0, adims, data, back, 0, NULL, &ao, &ar) == GSZ_STATUS_INVALID_ARGUMENT);

    /* failures carry a status and a message */
    arc[size / 2] ^= 0x40;
    EXPECT(gsz_decompress(ctx, arc, size, back, N * sizeof(float), GSZ_DEVICE_CPU, 0) == GSZ_STATUS_CORRUPT);
    EXPECT(strlen(gsz_ctx_last_error(ctx)) > 0);
    EXPECT(strcmp(gsz_status_string(GSZ_STATUS_CORRUPT), "corrupt archive") == 0);
    p.rank = 0;
    EXPECT(gsz_compress(ctx, &p, data, arc, cap, &size) == GSZ_STATUS_INVALID_ARGUMENT);
    /* interp tiles: each of the four modes compresses; a fifth value is refused */
    p.rank = 3;
    p.pipeline = GSZ_PIPELINE_INTERP;
    {
        const gsz_interp_tiles modes[4] = {GSZ_INTERP_TILES_SPLINE, GSZ_INTERP_TILES_AUTO, GSZ_INTERP_TILES_LORENZO,
                                           GSZ_INTERP_TILES_EACH};
        for (int m = 0; m < 4; ++m) {
            p.interp_tiles = modes[m];
            EXPECT(gsz_compress(ctx, &p, data, arc, cap, &size) == GSZ_STATUS_OK);
            EXPECT(gsz_decompress(ctx, arc, size, back, N * sizeof(float), GSZ_DEVICE_CPU, 0) == GSZ_STATUS_OK);
        }
        p.interp_tiles = (gsz_interp_tiles)4;
        EXPECT(gsz_compress(ctx, &p, data, arc, cap, &size) == GSZ_STATUS_INVALID_ARGUMENT);
        p.interp_tiles = GSZ_INTERP_TILES_AUTO;
    }
    /* ans strips: off, on and auto compress and decompress (on: where the fastest dim has a power of two
       >= 32, the archive records the strips); a fourth value is refused */
    p.lossless = GSZ_LOSSLESS_ANS;
    {
        const gsz_ans_strips modes[3] = {GSZ_ANS_STRIPS_OFF, GSZ_ANS_STRIPS_ON, GSZ_ANS_STRIPS_AUTO};
        for (int m = 0; m < 3; ++m) {
            gsz_archive_info info;
            p.ans_strips = modes[m];
            EXPECT(gsz_compress(ctx, &p, data, arc, cap, &size) == GSZ_STATUS_OK);
            EXPECT(gsz_decompress(ctx, arc, size, back, N * sizeof(float), GSZ_DEVICE_CPU, 0) == GSZ_STATUS_OK);
            EXPECT(gsz_archive_inspect(ctx, arc, size, &info) == GSZ_STATUS_OK);
            EXPECT(modes[m] != GSZ_ANS_STRIPS_OFF || info.ans_strip_width == 0);
            EXPECT(modes[m] != GSZ_ANS_STRIPS_ON || info.ans_strip_width == NX); /* 64: the largest that divides NX */
        }
        p.ans_strips = (gsz_ans_strips)3;
        EXPECT(gsz_compress(ctx, &p, data, arc, cap, &size) == GSZ_STATUS_INVALID_ARGUMENT);
    }

    gsz_ctx_free(ctx);
    gsz_ctx_free(NULL);
    free(arc); free(back); free(data);
    printf("%s\n", failures ? "C API test FAILED" : "C API test passed");
    return failures ? 1 : 0;
}
