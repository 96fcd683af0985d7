// CPU backend of the Lorenzo predictor: OpenMP over chunks, each chunk walked in
// raster order with a zero-padded buffer of lattice values, so the 3-D formula
// also serves 1-D and 2-D chunks (their missing neighbours are the padding).
#include "predict/lorenzo/lorenzo.hpp"

#include "runtime/parallel.hpp"
#include "runtime/status.hpp"

#include <algorithm>
#include <atomic>

namespace gsz::predict {

namespace {

constexpr uint32_t kChunk1d = 1024;
constexpr uint32_t kChunk2d[2] = {32, 32};
constexpr uint32_t kChunk3d[3] = {32, 8, 8};
constexpr uint64_t kMaxChunkPoints = kLorenzoMaxChunkPoints;

void finish_layout(LorenzoLayout& L) {
    L.num_chunks = 1;
    L.num_elements = 1;
    for (int d = 0; d < 3; ++d) {
        L.grid[d] = (L.dims[d] + L.chunk[d] - 1) / L.chunk[d];
        L.num_chunks *= L.grid[d];
        L.num_elements *= L.dims[d];
    }
}

// Zero-padded lattice values of one chunk: index (z, y, x) with 0 as padding.
struct PaddedChunk {
    std::vector<int64_t> q;
    size_t px = 0, py = 0;

    void reset(const uint32_t* extent) {
        px = extent[0] + 1;
        py = extent[1] + 1;
        q.assign(px * py * (extent[2] + 1), 0);
    }
    int64_t* row(size_t y, size_t z) { return q.data() + (z * py + y) * px; }
};

}  // namespace

LorenzoLayout lorenzo_layout(uint32_t rank, const uint64_t* dims) {
    uint64_t kept[4];
    uint32_t n = 0;
    for (uint32_t d = 0; d < rank; ++d)
        if (dims[d] > 1) kept[n++] = dims[d];
    if (n == 0) kept[n++] = 1;
    if (n == 4) {  // two slowest dims merged
        kept[2] *= kept[3];
        n = 3;
    }
    LorenzoLayout L;
    L.rank = n;
    for (uint32_t d = 0; d < n; ++d) L.dims[d] = kept[d];
    if (n == 1) {
        L.chunk[0] = kChunk1d;
    } else if (n == 2) {
        L.chunk[0] = kChunk2d[0];
        L.chunk[1] = kChunk2d[1];
    } else {
        for (int d = 0; d < 3; ++d) L.chunk[d] = kChunk3d[d];
    }
    finish_layout(L);
    return L;
}

LorenzoLayout lorenzo_layout_from(uint32_t predictor_rank, const uint64_t* predictor_dims,
                                  const uint32_t* chunk, uint64_t num_elements) {
    GSZ_CHECK(predictor_rank >= 1 && predictor_rank <= 3, GSZ_STATUS_CORRUPT,
              "lorenzo rank %u out of range", predictor_rank);
    LorenzoLayout L;
    L.rank = predictor_rank;
    uint64_t points = 1, product = 1;
    for (uint32_t d = 0; d < 3; ++d) {
        const bool used = d < predictor_rank;
        GSZ_CHECK(used ? chunk[d] >= 1 : chunk[d] == 1, GSZ_STATUS_CORRUPT,
                  "lorenzo chunk extent %u along dim %u is invalid", chunk[d], d);
        GSZ_CHECK(used || predictor_dims[d] == 1, GSZ_STATUS_CORRUPT, "unused lorenzo dim %u is not 1", d);
        GSZ_CHECK(predictor_dims[d] >= 1, GSZ_STATUS_CORRUPT, "lorenzo dim %u is 0", d);
        points *= chunk[d];
        GSZ_CHECK(points <= kMaxChunkPoints, GSZ_STATUS_CORRUPT, "lorenzo chunk of more than %llu points",
                  static_cast<unsigned long long>(kMaxChunkPoints));
        GSZ_CHECK(!__builtin_mul_overflow(product, predictor_dims[d], &product), GSZ_STATUS_CORRUPT,
                  "lorenzo dims overflow");
        L.dims[d] = predictor_dims[d];
        L.chunk[d] = chunk[d];
    }
    GSZ_CHECK(product == num_elements, GSZ_STATUS_CORRUPT,
              "lorenzo dims hold %llu elements, the header %llu", static_cast<unsigned long long>(product),
              static_cast<unsigned long long>(num_elements));
    finish_layout(L);
    return L;
}

namespace {

// Lorenzo prediction in a zero-padded buffer; the rank is a template
// parameter so that 1-D and 2-D chunks skip the terms that are known zeros.
template <int Rank>
inline int64_t predict_padded(const int64_t* q, const int64_t* qy, const int64_t* qz, const int64_t* qyz,
                              uint32_t x) {
    if constexpr (Rank == 1) {
        return lorenzo_predict_1d(q[x - 1]);
    } else if constexpr (Rank == 2) {
        return lorenzo_predict_2d(q[x - 1], qy[x], qy[x - 1]);
    } else {
        return lorenzo_predict_3d(q[x - 1], qy[x], qz[x], qy[x - 1], qz[x - 1], qyz[x], qyz[x - 1]);
    }
}

template <class T, int Rank>
void encode_chunk(const T* data, const LorenzoLayout& L, const LorenzoLayout::ChunkBox& box, const QuantParams& p,
                  PaddedChunk& buf, std::vector<uint8_t>& ok, uint16_t* code, std::vector<T>& outliers) {
    buf.reset(box.extent);
    ok.resize(box.extent[0] + 1);
    const uint64_t nx = L.dims[0], ny = L.dims[1];
    for (uint32_t z = 1; z <= box.extent[2]; ++z) {
        for (uint32_t y = 1; y <= box.extent[1]; ++y) {
            const T* src = data + box.origin[0] + nx * ((box.origin[1] + y - 1) + ny * (box.origin[2] + z - 1)) - 1;
            int64_t* q = buf.row(y, z);
            const int64_t* qy = buf.row(y - 1, z);
            const int64_t* qz = buf.row(y, z - 1);
            const int64_t* qyz = buf.row(y - 1, z - 1);
            // Quantizing a row has no dependency between points: a separate
            // loop lets the compiler overlap the conversions.
            for (uint32_t x = 1; x <= box.extent[0]; ++x) ok[x] = quantize(src[x], p, q[x]);
            for (uint32_t x = 1; x <= box.extent[0]; ++x) {
                const int64_t pred = predict_padded<Rank>(q, qy, qz, qyz, x);
                const uint16_t c16 = ok[x] ? lorenzo_code(q[x] - pred, p.radius) : uint16_t{0};
                if (c16 == 0) [[unlikely]]
                    outliers.push_back(src[x]);
                *code++ = c16;
            }
        }
    }
}

template <class T, int Rank>
void decode_chunk(const uint16_t* code, const T*& outlier, const LorenzoLayout& L, const LorenzoLayout::ChunkBox& box,
                  const QuantParams& p, PaddedChunk& buf, T* out) {
    buf.reset(box.extent);
    const uint64_t nx = L.dims[0], ny = L.dims[1];
    for (uint32_t z = 1; z <= box.extent[2]; ++z) {
        for (uint32_t y = 1; y <= box.extent[1]; ++y) {
            T* dst = out + box.origin[0] + nx * ((box.origin[1] + y - 1) + ny * (box.origin[2] + z - 1)) - 1;
            int64_t* q = buf.row(y, z);
            const int64_t* qy = buf.row(y - 1, z);
            const int64_t* qz = buf.row(y, z - 1);
            const int64_t* qyz = buf.row(y - 1, z - 1);
            const T* row_outlier = outlier;
            for (uint32_t x = 1; x <= box.extent[0]; ++x) {
                const uint16_t c16 = *code++;
                if (c16 != 0) [[likely]] {
                    q[x] = wrap_add(predict_padded<Rank>(q, qy, qz, qyz, x), int64_t{c16} - p.radius);
                } else {
                    lattice_of(*row_outlier++, p.r, q[x]);
                }
            }
            // Values come from the lattice except where the exact value was stored.
            const uint16_t* row_code = code - box.extent[0];
            for (uint32_t x = 1; x <= box.extent[0]; ++x)
                dst[x] = row_code[x - 1] != 0 ? lattice_value<T>(q[x], p.ebx2) : *outlier++;
        }
    }
}

}  // namespace

template <class T>
void lorenzo_encode_cpu(const T* data, const LorenzoLayout& L, const QuantParams& p, LorenzoCodes<T>& out,
                        int num_threads) {
    out.codes.resize(L.num_elements);
    const int threads = resolve_threads(num_threads);
    // Each thread takes a contiguous run of chunks and collects its outliers
    // privately; joining the runs in thread order gives stream order, so the
    // result does not depend on the thread count.
    std::vector<std::vector<T>> outliers_of(threads);
    ParallelErrors errors;
#pragma omp parallel num_threads(threads)
    errors.capture([&] {
        const auto [first, last] = thread_range(L.num_chunks);
        std::vector<T>& outliers = outliers_of[thread_index()];
        PaddedChunk buf;
        std::vector<uint8_t> ok;
        for (uint64_t c = first; c < last; ++c) {
            const auto box = L.chunk_box(c);
            uint16_t* code = out.codes.data() + box.stream_offset;
            switch (L.rank) {
                case 1: encode_chunk<T, 1>(data, L, box, p, buf, ok, code, outliers); break;
                case 2: encode_chunk<T, 2>(data, L, box, p, buf, ok, code, outliers); break;
                default: encode_chunk<T, 3>(data, L, box, p, buf, ok, code, outliers); break;
            }
        }
    });
    errors.rethrow();
    out.outliers.clear();
    for (auto& part : outliers_of) out.outliers.insert(out.outliers.end(), part.begin(), part.end());
}

template <class T>
void lorenzo_decode_cpu(std::span<const uint16_t> codes, std::span<const T> outliers, const LorenzoLayout& L,
                        const QuantParams& p, T* out, int num_threads) {
    GSZ_CHECK(codes.size() == L.num_elements, GSZ_STATUS_INTERNAL, "code count mismatch");
    const int threads = resolve_threads(num_threads);

    // Where each chunk's outliers start: count its zero codes, then scan.
    std::vector<uint64_t> first_outlier(L.num_chunks + 1, 0);
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t c = 0; c < static_cast<int64_t>(L.num_chunks); ++c) {
        const auto box = L.chunk_box(static_cast<uint64_t>(c));
        const uint16_t* code = codes.data() + box.stream_offset;
        first_outlier[c + 1] = static_cast<uint64_t>(std::count(code, code + box.size(), uint16_t{0}));
    }
    for (uint64_t c = 0; c < L.num_chunks; ++c) first_outlier[c + 1] += first_outlier[c];
    GSZ_CHECK(first_outlier[L.num_chunks] == outliers.size(), GSZ_STATUS_CORRUPT,
              "archive holds %zu outlier values but its codes mark %llu", outliers.size(),
              static_cast<unsigned long long>(first_outlier[L.num_chunks]));

    ParallelErrors errors;
#pragma omp parallel num_threads(threads)
    errors.capture([&] {
        const auto [first, last] = thread_range(L.num_chunks);
        PaddedChunk buf;
        for (uint64_t c = first; c < last; ++c) {
            const auto box = L.chunk_box(c);
            const uint16_t* code = codes.data() + box.stream_offset;
            const T* outlier = outliers.data() + first_outlier[c];  // advanced by decode_chunk
            switch (L.rank) {
                case 1: decode_chunk<T, 1>(code, outlier, L, box, p, buf, out); break;
                case 2: decode_chunk<T, 2>(code, outlier, L, box, p, buf, out); break;
                default: decode_chunk<T, 3>(code, outlier, L, box, p, buf, out); break;
            }
        }
    });
    errors.rethrow();
}

template void lorenzo_encode_cpu<float>(const float*, const LorenzoLayout&, const QuantParams&,
                                        LorenzoCodes<float>&, int);
template void lorenzo_encode_cpu<double>(const double*, const LorenzoLayout&, const QuantParams&,
                                         LorenzoCodes<double>&, int);
template void lorenzo_decode_cpu<float>(std::span<const uint16_t>, std::span<const float>, const LorenzoLayout&,
                                        const QuantParams&, float*, int);
template void lorenzo_decode_cpu<double>(std::span<const uint16_t>, std::span<const double>,
                                         const LorenzoLayout&, const QuantParams&, double*, int);

}  // namespace gsz::predict
