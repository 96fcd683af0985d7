// CUDA backend of the Lorenzo predictor.  One block of 256 threads per chunk
// (at most 2048 points, 8 per thread), computing the same integers and the
// same floating-point operations (lorenzo_math.hpp) as the host, so codes,
// outliers and decoded values are identical.  Three kernel families: column
// kernels for the 2-D and 3-D chunks gsz writes (lattice values in registers),
// row kernels for other chunks whose x extent is 32 and for 1-D chunks, and
// generic kernels for any other shape a valid archive may hold (the last two
// keep the chunk's lattice values in a zero-padded shared-memory array, like
// the CPU backend's buffer).
#include "predict/lorenzo/lorenzo_cuda.hpp"

#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>

#include <type_traits>

namespace gsz::predict {

namespace {

constexpr int kThreads = 256;
constexpr int kItems = kLorenzoMaxChunkPoints / kThreads;  // points per thread, blocked arrangement
static_assert(kItems * kThreads == kLorenzoMaxChunkPoints);

struct Padded {  // index into the zero-padded chunk buffer
    uint32_t px, py;
    __device__ uint32_t at(uint32_t x, uint32_t y, uint32_t z) const { return (x + 1) + px * ((y + 1) + py * (z + 1)); }
};

__device__ inline void chunk_coords(uint32_t i, uint32_t ex, uint32_t ey, uint32_t& x, uint32_t& y, uint32_t& z) {
    x = i % ex;
    y = (i / ex) % ey;
    z = i / (ex * ey);
}

template <int Rank>
__device__ inline int64_t predict_shared(const int64_t* q, uint32_t idx, uint32_t px, uint32_t pxy) {
    if constexpr (Rank == 1) {
        return lorenzo_predict_1d(q[idx - 1]);
    } else if constexpr (Rank == 2) {
        return lorenzo_predict_2d(q[idx - 1], q[idx - px], q[idx - px - 1]);
    } else {
        return lorenzo_predict_3d(q[idx - 1], q[idx - px], q[idx - pxy], q[idx - px - 1], q[idx - pxy - 1],
                                  q[idx - pxy - px], q[idx - pxy - px - 1]);
    }
}

// The box of chunk `id`: grid coordinates by 32-bit division (check_grid
// keeps num_chunks below 2^31) instead of chunk_box's 64-bit one, which costs
// a few hundred instructions per thread.
__device__ inline LorenzoLayout::ChunkBox chunk_box_of(const LorenzoLayout& L, uint32_t id) {
    const uint32_t g0 = static_cast<uint32_t>(L.grid[0]), g1 = static_cast<uint32_t>(L.grid[1]);
    const uint32_t rest = id / g0;
    const uint64_t c[3] = {id - rest * g0, rest % g1, rest / g1};
    return L.chunk_box_at(c);
}

__device__ inline LorenzoLayout::ChunkBox this_chunk_box(const LorenzoLayout& L) { return chunk_box_of(L, blockIdx.x); }

__device__ inline uint64_t global_index(const LorenzoLayout& L, const LorenzoLayout::ChunkBox& box, uint32_t x,
                                        uint32_t y, uint32_t z) {
    return (box.origin[0] + x) + L.dims[0] * ((box.origin[1] + y) + L.dims[1] * (box.origin[2] + z));
}

__device__ inline void zero_padded(int64_t* q, uint32_t count) {
    for (uint32_t i = threadIdx.x; i < count; i += kThreads) q[i] = 0;
}

// An encoder's quantization parameters: from device memory when the bound
// was derived there (the range pass), else the launch's.
__device__ inline QuantParams quant_params(const QuantParams& p, const QuantParams* d_params) {
    return d_params ? *d_params : p;
}

// Codes in stream order; each chunk's outliers go to its own stretch of
// `scratch` (at the chunk's stream offset), compacted later once the
// per-chunk counts are scanned.
template <class T, int Rank>
__global__ void __launch_bounds__(kThreads)
    lorenzo_encode_kernel(const T* __restrict__ data, LorenzoLayout L, QuantParams p_arg, const QuantParams* __restrict__ d_params, uint16_t* __restrict__ codes,
                          T* __restrict__ scratch, uint32_t* __restrict__ chunk_counts) {
    const QuantParams p = quant_params(p_arg, d_params);
    extern __shared__ int64_t q[];
    __shared__ uint8_t ok[kLorenzoMaxChunkPoints];
    using BlockScan = cub::BlockScan<uint32_t, kThreads>;
    __shared__ typename BlockScan::TempStorage scan_storage;

    const uint64_t chunk = blockIdx.x;
    const auto box = this_chunk_box(L);
    const uint32_t ex = box.extent[0], ey = box.extent[1], ez = box.extent[2];
    const uint32_t npts = ex * ey * ez;
    const Padded pad{L.chunk[0] + 1, L.chunk[1] + 1};
    const uint32_t pxy = pad.px * pad.py;
    zero_padded(q, pxy * (L.chunk[2] + 1));
    __syncthreads();

    // Striped: consecutive threads read consecutive x, so loads coalesce.
    for (uint32_t i = threadIdx.x; i < npts; i += kThreads) {
        uint32_t x, y, z;
        chunk_coords(i, ex, ey, x, y, z);
        int64_t qi;
        ok[i] = quantize(data[global_index(L, box, x, y, z)], p, qi);
        q[pad.at(x, y, z)] = qi;
    }
    __syncthreads();

    // Blocked: thread t owns points [8t, 8t+8) in raster order, so a block
    // scan of the outlier flags gives each outlier its rank in stream order.
    uint32_t flag[kItems], rank[kItems];
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
        const uint32_t i = threadIdx.x * kItems + k;
        flag[k] = 0;
        if (i < npts) {
            uint32_t x, y, z;
            chunk_coords(i, ex, ey, x, y, z);
            const uint32_t idx = pad.at(x, y, z);
            const uint16_t code = ok[i] ? lorenzo_code(q[idx] - predict_shared<Rank>(q, idx, pad.px, pxy), p.radius)
                                        : uint16_t{0};
            codes[box.stream_offset + i] = code;
            flag[k] = code == 0;
        }
    }
    uint32_t total = 0;
    BlockScan(scan_storage).ExclusiveSum(flag, rank, total);
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
        if (flag[k]) {
            const uint32_t i = threadIdx.x * kItems + k;
            uint32_t x, y, z;
            chunk_coords(i, ex, ey, x, y, z);
            scratch[box.stream_offset + rank[k]] = data[global_index(L, box, x, y, z)];
        }
    }
    if (threadIdx.x == 0) chunk_counts[chunk] = total;
}

template <class T>
__global__ void lorenzo_compact_outliers_kernel(const T* __restrict__ scratch, const uint32_t* __restrict__ counts,
                                                const uint64_t* __restrict__ offsets, LorenzoLayout L,
                                                T* __restrict__ outliers) {
    const uint64_t chunk = blockIdx.x;
    const uint32_t count = counts[chunk];
    if (count == 0) return;
    const uint64_t from = this_chunk_box(L).stream_offset, to = offsets[chunk];
    for (uint32_t i = threadIdx.x; i < count; i += blockDim.x) outliers[to + i] = scratch[from + i];
}

// The 0 codes in codes[begin, begin + count), counted by a warp: eight codes
// per 16-byte load between a scalar head and tail (a stretch starts
// anywhere), __vcmpeq2 marking each zero half-word.  Every lane gets the sum.
__device__ inline uint32_t warp_zero_codes(const uint16_t* __restrict__ codes, uint64_t begin, uint32_t count,
                                           uint32_t lane) {
    const uint16_t* src = codes + begin;
    uint32_t head = count, vectors = 0;
    if (reinterpret_cast<uintptr_t>(codes) % 16 == 0) {
        head = static_cast<uint32_t>((8 - begin % 8) % 8);
        head = head < count ? head : count;
        vectors = (count - head) / 8;
    }
    uint32_t zeros = 0;
    const uint4* body = reinterpret_cast<const uint4*>(src + head);
#pragma unroll 4
    for (uint32_t v = lane; v < vectors; v += 32) {
        const uint4 w = body[v];
        zeros += (__popc(__vcmpeq2(w.x, 0)) + __popc(__vcmpeq2(w.y, 0)) + __popc(__vcmpeq2(w.z, 0)) +
                  __popc(__vcmpeq2(w.w, 0))) / 16;
    }
    for (uint32_t i = lane; i < head; i += 32) zeros += src[i] == 0;
    for (uint32_t i = head + vectors * 8 + lane; i < count; i += 32) zeros += src[i] == 0;
    return __reduce_add_sync(0xffffffffu, zeros);
}

// Zero codes per chunk: where each chunk's outliers start in the outlier
// array, once scanned.  A warp per chunk (no block-wide reduction and
// barrier per chunk).
__global__ void __launch_bounds__(kThreads)
    lorenzo_count_outliers_kernel(const uint16_t* __restrict__ codes, LorenzoLayout L, uint32_t* __restrict__ counts) {
    const uint32_t lane = threadIdx.x & 31;
    const uint64_t chunk = blockIdx.x * uint64_t{kThreads / 32} + (threadIdx.x >> 5);
    if (chunk >= L.num_chunks) return;  // whole warps
    const auto box = chunk_box_of(L, static_cast<uint32_t>(chunk));
    const uint32_t zeros = warp_zero_codes(codes, box.stream_offset, static_cast<uint32_t>(box.size()), lane);
    if (lane == 0) counts[chunk] = zeros;
}

// Each chunk's first outlier from the outliers before each granule (fixed
// stretches of `granule` codes, counted while the codes were decoded): the
// granule's prefix plus the outliers between the granule's start and the
// chunk's, a warp per chunk (half a granule of codes on average instead of
// all codes).  offsets[num_chunks] is the total.
__global__ void __launch_bounds__(kThreads)
    lorenzo_offsets_from_granules_kernel(const uint16_t* __restrict__ codes, LorenzoLayout L,
                                         const uint64_t* __restrict__ granule_prefix, uint32_t granule,
                                         uint64_t* __restrict__ offsets) {
    const uint32_t lane = threadIdx.x & 31;
    const uint64_t chunk = blockIdx.x * uint64_t{kThreads / 32} + (threadIdx.x >> 5);
    if (chunk > L.num_chunks) return;  // whole warps
    if (chunk == L.num_chunks) {
        if (lane == 0) offsets[chunk] = granule_prefix[(L.num_elements + granule - 1) / granule];
        return;
    }
    const uint64_t start = chunk_box_of(L, static_cast<uint32_t>(chunk)).stream_offset;
    const uint64_t g = start / granule;
    const uint64_t before = granule_prefix[g];
    const uint32_t zeros = warp_zero_codes(codes, g * granule, static_cast<uint32_t>(start - g * granule), lane);
    if (lane == 0) offsets[chunk] = before + zeros;
}

// The decoders' guard against an archive whose codes mark more (or fewer)
// outliers than it stores: every CTA compares the scanned total with the
// count and, when they differ, decodes nothing and flags the archive corrupt
// (kLorenzoCorruptOutliers in *corrupt), so no CTA reads past the outliers
// and the host needs no synchronization to check first.  corrupt null: the
// host has checked.
struct OutlierCheck {
    uint64_t num_outliers;
    uint32_t* corrupt;
};

__device__ inline bool outliers_disagree(const uint64_t* offsets, const OutlierCheck& check) {
    if (!check.corrupt || offsets[gridDim.x] == check.num_outliers) return false;
    if (threadIdx.x == 0) atomicOr(check.corrupt, kLorenzoCorruptOutliers);
    return true;
}

__device__ inline int64_t wrap_sum(int64_t a, int64_t b) { return wrap_add(a, b); }

// Decoding is the inverse Lorenzo transform: inclusive prefix sums of the
// residuals along x, y and z.  An outlier's lattice value comes from its
// stored exact value, which breaks the prefix-sum form unless the outlier is
// the chunk's first point (its prediction is 0).  Chunks with any other
// outlier are decoded sequentially by one thread, like the CPU backend.
template <class T, int Rank>
__global__ void __launch_bounds__(kThreads)
    lorenzo_decode_kernel(const uint16_t* __restrict__ codes, const T* __restrict__ outliers,
                          const uint64_t* __restrict__ outlier_offsets, LorenzoLayout L, QuantParams p,
                          T* __restrict__ out, OutlierCheck check) {
    if (outliers_disagree(outlier_offsets, check)) return;
    extern __shared__ int64_t q[];
    __shared__ uint16_t code_s[kLorenzoMaxChunkPoints];
    using BlockScan = cub::BlockScan<int64_t, kThreads>;
    __shared__ typename BlockScan::TempStorage scan_storage;

    const uint64_t chunk = blockIdx.x;
    const auto box = this_chunk_box(L);
    const uint32_t ex = box.extent[0], ey = box.extent[1], ez = box.extent[2];
    const uint32_t npts = ex * ey * ez;
    const Padded pad{L.chunk[0] + 1, L.chunk[1] + 1};
    const uint32_t pxy = pad.px * pad.py;
    const T* chunk_outliers = outliers + outlier_offsets[chunk];
    zero_padded(q, pxy * (L.chunk[2] + 1));

    int sequential = 0;
    for (uint32_t i = threadIdx.x; i < npts; i += kThreads) {
        const uint16_t c = codes[box.stream_offset + i];
        code_s[i] = c;
        sequential |= (c == 0 && i > 0);
    }
    sequential = __syncthreads_or(sequential);

    if (!sequential) {
        for (uint32_t i = threadIdx.x; i < npts; i += kThreads) {
            uint32_t x, y, z;
            chunk_coords(i, ex, ey, x, y, z);
            int64_t delta = int64_t{code_s[i]} - p.radius;
            if (code_s[i] == 0) lattice_of(chunk_outliers[0], p.r, delta);  // i == 0: prediction is 0
            q[pad.at(x, y, z)] = delta;
        }
        __syncthreads();
        if constexpr (Rank == 1) {
            int64_t v[kItems];
#pragma unroll
            for (int k = 0; k < kItems; ++k) {
                const uint32_t i = threadIdx.x * kItems + k;
                v[k] = i < npts ? q[pad.at(i, 0, 0)] : 0;
            }
            BlockScan(scan_storage).InclusiveScan(v, v, [](int64_t a, int64_t b) { return wrap_sum(a, b); });
#pragma unroll
            for (int k = 0; k < kItems; ++k) {
                const uint32_t i = threadIdx.x * kItems + k;
                if (i < npts) q[pad.at(i, 0, 0)] = v[k];
            }
        } else {
            for (uint32_t line = threadIdx.x; line < ey * ez; line += kThreads) {
                const uint32_t base = pad.at(0, line % ey, line / ey);
                for (uint32_t x = 1; x < ex; ++x) q[base + x] = wrap_sum(q[base + x], q[base + x - 1]);
            }
            __syncthreads();
            for (uint32_t line = threadIdx.x; line < ex * ez; line += kThreads) {
                const uint32_t base = pad.at(line % ex, 0, line / ex);
                for (uint32_t y = 1; y < ey; ++y)
                    q[base + y * pad.px] = wrap_sum(q[base + y * pad.px], q[base + (y - 1) * pad.px]);
            }
            if constexpr (Rank == 3) {
                __syncthreads();
                for (uint32_t line = threadIdx.x; line < ex * ey; line += kThreads) {
                    const uint32_t base = pad.at(line % ex, line / ex, 0);
                    for (uint32_t z = 1; z < ez; ++z) q[base + z * pxy] = wrap_sum(q[base + z * pxy], q[base + (z - 1) * pxy]);
                }
            }
        }
        __syncthreads();
        for (uint32_t i = threadIdx.x; i < npts; i += kThreads) {
            uint32_t x, y, z;
            chunk_coords(i, ex, ey, x, y, z);
            out[global_index(L, box, x, y, z)] =
                code_s[i] != 0 ? lattice_value<T>(q[pad.at(x, y, z)], p.ebx2) : chunk_outliers[0];
        }
        return;
    }

    // Sequential chunk: thread 0 walks it in raster order, exactly as the CPU does.
    __syncthreads();  // padding zeroed by all threads
    if (threadIdx.x == 0) {
        const T* next_outlier = chunk_outliers;
        uint32_t i = 0;
        for (uint32_t z = 0; z < ez; ++z)
            for (uint32_t y = 0; y < ey; ++y)
                for (uint32_t x = 0; x < ex; ++x, ++i) {
                    const uint32_t idx = pad.at(x, y, z);
                    if (code_s[i] != 0) {
                        q[idx] = wrap_add(predict_shared<Rank>(q, idx, pad.px, pxy), int64_t{code_s[i]} - p.radius);
                    } else {
                        const T value = *next_outlier++;
                        lattice_of(value, p.r, q[idx]);
                        out[global_index(L, box, x, y, z)] = value;
                    }
                }
    }
    __syncthreads();
    for (uint32_t i = threadIdx.x; i < npts; i += kThreads) {
        if (code_s[i] == 0) continue;
        uint32_t x, y, z;
        chunk_coords(i, ex, ey, x, y, z);
        out[global_index(L, box, x, y, z)] = lattice_value<T>(q[pad.at(x, y, z)], p.ebx2);
    }
}

// ---- Row kernels: 1-D chunks, and chunks 32 wide that are not the column kernels' shapes
// A warp handles one "row" of 32 raster-consecutive points at a time (an x-row
// of a 2-D/3-D chunk whose x extent is 32, or 32 consecutive points of a 1-D
// chunk), so loads and stores coalesce and no per-point division is needed.
// Rows are ranked in raster order, so ballots give outliers their stream order.

constexpr int kWarps = kThreads / 32;
constexpr int kRowsPerWarp = 8;                // up to 64 rows of 32 points
constexpr int kMaxRows = kWarps * kRowsPerWarp;
// Outliers (other than a chunk's first point) break the prefix-sum form of
// decoding; up to this many per chunk are corrected in parallel, more fall
// back to the sequential walk.
constexpr uint32_t kMaxCorrected = 256;

// The row kernels keep lattice values in 32-bit integers for float32 (|q| <
// 2^23, so every neighbour sum of a valid archive fits) and 64-bit for
// float64: half the shared memory and integer work for the common case.
template <class T>
struct LatticeInt {
    using type = int64_t;
};
template <>
struct LatticeInt<float> {
    using type = int32_t;
};

template <class Q>
__device__ inline Q wrap(Q a, Q b) {
    using U = std::make_unsigned_t<Q>;
    return static_cast<Q>(static_cast<U>(a) + static_cast<U>(b));
}

template <class Q>
__device__ inline Q wrap_sub(Q a, Q b) {
    using U = std::make_unsigned_t<Q>;
    return static_cast<Q>(static_cast<U>(a) - static_cast<U>(b));
}

template <int Rank, class Q>
__device__ inline Q predict_q(const Q* q, uint32_t idx, uint32_t px, uint32_t pxy) {
    using U = std::make_unsigned_t<Q>;
    if constexpr (Rank == 1) {
        return q[idx - 1];
    } else if constexpr (Rank == 2) {
        return static_cast<Q>(U(q[idx - 1]) + U(q[idx - px]) - U(q[idx - px - 1]));
    } else {
        return static_cast<Q>(U(q[idx - 1]) + U(q[idx - px]) + U(q[idx - pxy]) - U(q[idx - px - 1]) -
                              U(q[idx - pxy - 1]) - U(q[idx - pxy - px]) + U(q[idx - pxy - px - 1]));
    }
}

template <class Q>
__device__ inline void zero_q(Q* q, uint32_t count) {
    for (uint32_t i = threadIdx.x; i < count; i += kThreads) q[i] = 0;
}

template <class Q>
__device__ inline Q warp_inclusive_scan(Q v) {
    const uint32_t lane = threadIdx.x & 31;
#pragma unroll
    for (int d = 1; d < 32; d *= 2) {
        const Q up = __shfl_up_sync(0xffffffffu, v, d);
        if (lane >= static_cast<uint32_t>(d)) v = wrap(v, up);
    }
    return v;
}

bool rows_shape(const LorenzoLayout& L) {
    if (L.rank == 1) return L.chunk[0] <= 32u * kMaxRows;
    return L.chunk[0] == 32 && uint64_t{L.chunk[1]} * L.chunk[2] <= kMaxRows;
}

struct RowGeometry {
    uint32_t ex, ey, ez, rows;
    __device__ RowGeometry(const LorenzoLayout::ChunkBox& box, int rank)
        : ex(box.extent[0]), ey(box.extent[1]), ez(box.extent[2]),
          rows(rank == 1 ? (box.extent[0] + 31) / 32 : box.extent[1] * box.extent[2]) {}
    // Whether lane's point of row r is inside the chunk.
    template <int Rank>
    __device__ bool inside(uint32_t r, uint32_t lane) const {
        return Rank == 1 ? r * 32 + lane < ex : lane < ex;
    }
    // Raster index inside the chunk (the offset in the chunk's stream stretch).
    template <int Rank>
    __device__ uint32_t raster(uint32_t r, uint32_t lane) const {
        return Rank == 1 ? r * 32 + lane : lane + ex * r;
    }
};

// Where each row starts, in the padded buffer and in the array; lane's point
// is one further per lane.  Filled once per block (a division per row), so
// the per-point loops add instead of dividing the row number.
struct RowStarts {
    uint32_t pad[kMaxRows];
    uint64_t global[kMaxRows];
};

template <int Rank>
__device__ inline void fill_row_starts(RowStarts& starts, const LorenzoLayout& L, const LorenzoLayout::ChunkBox& box,
                                       const RowGeometry& g, const Padded& pad) {
    for (uint32_t r = threadIdx.x; r < g.rows; r += kThreads) {
        uint32_t x = 0, y = 0, z = 0;
        if constexpr (Rank == 1) {
            x = r * 32;
        } else {
            y = r % g.ey;
            z = r / g.ey;
        }
        starts.pad[r] = pad.at(x, y, z);
        starts.global[r] = global_index(L, box, x, y, z);
    }
}

// Exclusive scan of per-row counts in place (rows <= 64), by warp 0; the
// total goes to *total.  Callers synchronize before and after.
__device__ inline void scan_row_counts(uint32_t* counts, uint32_t rows, uint32_t* total) {
    if (threadIdx.x >= 32) return;
    const uint32_t lane = threadIdx.x;
    const uint32_t a = 2 * lane < rows ? counts[2 * lane] : 0;
    const uint32_t b = 2 * lane + 1 < rows ? counts[2 * lane + 1] : 0;
    uint32_t inclusive = a + b;
    for (int d = 1; d < 32; d *= 2) {
        const uint32_t up = __shfl_up_sync(0xffffffffu, inclusive, d);
        if (lane >= static_cast<uint32_t>(d)) inclusive += up;
    }
    const uint32_t exclusive = inclusive - a - b;
    if (2 * lane < rows) counts[2 * lane] = exclusive;
    if (2 * lane + 1 < rows) counts[2 * lane + 1] = exclusive + a;
    if (lane == 31) *total = inclusive;
}

template <class T, int Rank>
__global__ void __launch_bounds__(kThreads)
    lorenzo_encode_rows_kernel(const T* __restrict__ data, LorenzoLayout L, QuantParams p_arg, const QuantParams* __restrict__ d_params,
                               uint16_t* __restrict__ codes, T* __restrict__ scratch,
                               uint32_t* __restrict__ chunk_counts) {
    const QuantParams p = quant_params(p_arg, d_params);
    using Q = typename LatticeInt<T>::type;
    extern __shared__ int64_t q_storage[];
    Q* q = reinterpret_cast<Q*>(q_storage);
    __shared__ uint32_t row_offset[kMaxRows];
    __shared__ uint32_t total;
    __shared__ RowStarts starts;
    const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const uint64_t chunk = blockIdx.x;
    const auto box = this_chunk_box(L);
    const RowGeometry g(box, Rank);
    const Padded pad{L.chunk[0] + 1, L.chunk[1] + 1};
    const uint32_t pxy = pad.px * pad.py;
    zero_q(q, pxy * (L.chunk[2] + 1));
    fill_row_starts<Rank>(starts, L, box, g, pad);
    __syncthreads();

    T value[kRowsPerWarp];
    uint32_t ok_mask = 0;
#pragma unroll
    for (int j = 0; j < kRowsPerWarp; ++j) {
        const uint32_t r = warp + kWarps * j;
        if (r < g.rows && g.inside<Rank>(r, lane)) {
            value[j] = data[starts.global[r] + lane];
            int64_t qi;
            if (quantize(value[j], p, qi)) ok_mask |= 1u << j;
            q[starts.pad[r] + lane] = static_cast<Q>(qi);
        }
    }
    __syncthreads();

    uint32_t ballots[kRowsPerWarp];
    bool any = false;
#pragma unroll
    for (int j = 0; j < kRowsPerWarp; ++j) {
        const uint32_t r = warp + kWarps * j;
        ballots[j] = 0;
        if (r >= g.rows) continue;  // uniform across the warp
        bool outlier = false;
        if (g.inside<Rank>(r, lane)) {
            const uint32_t idx = starts.pad[r] + lane;
            const uint16_t code =
                (ok_mask >> j) & 1u
                    ? lorenzo_code(int64_t{q[idx]} - int64_t{predict_q<Rank>(q, idx, pad.px, pxy)}, p.radius)
                    : uint16_t{0};
            codes[box.stream_offset + g.raster<Rank>(r, lane)] = code;
            outlier = code == 0;
        }
        ballots[j] = __ballot_sync(0xffffffffu, outlier);
        if (lane == 0) row_offset[r] = __popc(ballots[j]);
        any |= ballots[j] != 0;
    }
    if (!__syncthreads_or(any)) {
        if (threadIdx.x == 0) chunk_counts[chunk] = 0;
        return;
    }
    scan_row_counts(row_offset, g.rows, &total);
    __syncthreads();
#pragma unroll
    for (int j = 0; j < kRowsPerWarp; ++j) {
        if ((ballots[j] >> lane) & 1u) {
            const uint32_t r = warp + kWarps * j;
            const uint32_t rank = row_offset[r] + __popc(ballots[j] & ((1u << lane) - 1));
            scratch[box.stream_offset + rank] = value[j];
        }
    }
    if (threadIdx.x == 0) chunk_counts[chunk] = total;
}

// Decodes a chunk by walking it in raster order, exactly as the CPU does
// (chunks with more outliers than the parallel correction takes): thread 0
// fills the zero-padded buffer q (padded_count entries).  All threads call it.
template <int Rank, class Q, class T>
__device__ void walk_chunk(Q* q, const uint16_t* code_s, const T* next_outlier, uint32_t ex, uint32_t ey, uint32_t ez,
                           const Padded& pad, uint32_t pxy, uint32_t padded_count, const QuantParams& p) {
    zero_q(q, padded_count);  // the walk's predictions read the zero padding
    __syncthreads();
    if (threadIdx.x == 0) {
        uint32_t i = 0;
        for (uint32_t z = 0; z < ez; ++z)
            for (uint32_t y = 0; y < ey; ++y)
                for (uint32_t x = 0; x < ex; ++x, ++i) {
                    const uint32_t idx = pad.at(x, y, z);
                    if (code_s[i] != 0) {
                        q[idx] = wrap(predict_q<Rank>(q, idx, pad.px, pxy), static_cast<Q>(int64_t{code_s[i]} - p.radius));
                    } else {
                        int64_t lattice;
                        lattice_of(*next_outlier++, p.r, lattice);
                        q[idx] = static_cast<Q>(lattice);
                    }
                }
    }
    __syncthreads();
}

// Inclusive prefix sums of the padded chunk (the inverse Lorenzo transform)
// along y and z, and along x for 1-D chunks; the row kernels do the x pass
// with warp shuffles as they fill the buffer.  Wrap-around integer adds.
template <int Rank, class Q>
__device__ void prefix_sums_after_x(Q* q, uint32_t ex, uint32_t ey, uint32_t ez, const Padded& pad, uint32_t pxy) {
    if constexpr (Rank == 1) {
        using BlockScan = cub::BlockScan<Q, kThreads>;
        __shared__ typename BlockScan::TempStorage scan_storage;
        Q v[kItems];
#pragma unroll
        for (int k = 0; k < kItems; ++k) {
            const uint32_t i = threadIdx.x * kItems + k;
            v[k] = i < ex ? q[pad.at(i, 0, 0)] : 0;
        }
        BlockScan(scan_storage).InclusiveScan(v, v, [](Q a, Q b) { return wrap(a, b); });
#pragma unroll
        for (int k = 0; k < kItems; ++k) {
            const uint32_t i = threadIdx.x * kItems + k;
            if (i < ex) q[pad.at(i, 0, 0)] = v[k];
        }
        __syncthreads();
    } else {
        // Lines by (x, z) and (x, y) with x = line % 32: the row kernels'
        // chunks are 32 wide, so no division; x past a short edge is skipped.
        for (uint32_t line = threadIdx.x; line < 32 * ez; line += kThreads) {
            if ((line & 31) >= ex) continue;
            const uint32_t base = pad.at(line & 31, 0, line >> 5);
            Q run = q[base];
            for (uint32_t y = 1; y < ey; ++y) q[base + y * pad.px] = run = wrap(q[base + y * pad.px], run);
        }
        __syncthreads();
        if constexpr (Rank == 3) {
            for (uint32_t line = threadIdx.x; line < 32 * ey; line += kThreads) {
                if ((line & 31) >= ex) continue;
                const uint32_t base = pad.at(line & 31, line >> 5, 0);
                Q run = q[base];
                for (uint32_t z = 1; z < ez; ++z) q[base + z * pxy] = run = wrap(q[base + z * pxy], run);
            }
            __syncthreads();
        }
    }
}

// Ranks 2 and 3 at 5 blocks per SM (48 registers) rather than 4 (a few
// bytes spilled in 2-D); rank 1 spills more at 48 (its block scan holds 8
// lattice values per thread).
template <int Rank>
constexpr int kDecodeBlocksPerSm = Rank >= 2 ? 5 : 4;

template <class T, int Rank>
__global__ void __launch_bounds__(kThreads, kDecodeBlocksPerSm<Rank>)
    lorenzo_decode_rows_kernel(const uint16_t* __restrict__ codes, const T* __restrict__ outliers,
                               const uint64_t* __restrict__ outlier_offsets, LorenzoLayout L, QuantParams p,
                               T* __restrict__ out, OutlierCheck check) {
    if (outliers_disagree(outlier_offsets, check)) return;
    using Q = typename LatticeInt<T>::type;
    extern __shared__ int64_t q_storage[];
    Q* q = reinterpret_cast<Q*>(q_storage);
    __shared__ uint32_t row_offset[kMaxRows];
    __shared__ uint32_t total;
    __shared__ uint16_t position[kMaxCorrected];  // raster index of each outlier
    __shared__ Q outlier_delta[kMaxCorrected];
    __shared__ uint16_t outlier_x[kMaxCorrected];
    __shared__ uint8_t outlier_y[kMaxCorrected], outlier_z[kMaxCorrected];
    __shared__ RowStarts starts;
    const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const uint64_t chunk = blockIdx.x;
    const auto box = this_chunk_box(L);
    const RowGeometry g(box, Rank);
    const Padded pad{L.chunk[0] + 1, L.chunk[1] + 1};
    const uint32_t pxy = pad.px * pad.py;
    const T* chunk_outliers = outliers + outlier_offsets[chunk];
    // No zeroing: the prefix sums read only points inside the chunk, all
    // written first (the sequential walk below zeroes what it reads).
    fill_row_starts<Rank>(starts, L, box, g, pad);  // read after the barriers below
    if (threadIdx.x == 0) total = 0;

    uint16_t code[kRowsPerWarp];
    uint32_t ballots[kRowsPerWarp];
    bool any = false;
#pragma unroll
    for (int j = 0; j < kRowsPerWarp; ++j) {
        const uint32_t r = warp + kWarps * j;
        ballots[j] = 0;
        code[j] = 1;
        if (r >= g.rows) continue;
        const bool inside = g.inside<Rank>(r, lane);
        if (inside) {
            const uint32_t i = g.raster<Rank>(r, lane);
            code[j] = codes[box.stream_offset + i];
        }
        ballots[j] = __ballot_sync(0xffffffffu, inside && code[j] == 0);
        if (lane == 0) row_offset[r] = __popc(ballots[j]);
        any |= ballots[j] != 0;
    }
    any = __syncthreads_or(any);
    if (any) {
        scan_row_counts(row_offset, g.rows, &total);
        __syncthreads();
#pragma unroll
        for (int j = 0; j < kRowsPerWarp; ++j) {
            if ((ballots[j] >> lane) & 1u) {
                const uint32_t r = warp + kWarps * j;
                const uint32_t rank = row_offset[r] + __popc(ballots[j] & ((1u << lane) - 1));
                if (rank < kMaxCorrected) position[rank] = static_cast<uint16_t>(g.raster<Rank>(r, lane));
            }
        }
        __syncthreads();
    }
    const uint32_t m = total;

    // Residuals of every point (an outlier's from outlier_delta once known,
    // else 0) into the buffer, summed along x by warp shuffles on the way.
    auto fill_rows = [&](bool outliers_known) {
#pragma unroll
        for (int j = 0; j < kRowsPerWarp; ++j) {
            const uint32_t r = warp + kWarps * j;
            if (r >= g.rows) continue;  // uniform across the warp
            const bool inside = g.inside<Rank>(r, lane);
            Q delta = 0;
            if (inside && code[j] != 0) delta = static_cast<Q>(int64_t{code[j]} - p.radius);
            if (inside && code[j] == 0 && outliers_known)
                delta = outlier_delta[row_offset[r] + __popc(ballots[j] & ((1u << lane) - 1))];
            if constexpr (Rank != 1) delta = warp_inclusive_scan(delta);
            if (inside) q[starts.pad[r] + lane] = delta;
        }
        __syncthreads();
        prefix_sums_after_x<Rank>(q, g.ex, g.ey, g.ez, pad, pxy);
    };

    if (m > kMaxCorrected) {  // many outliers: walk the chunk in raster order, as the CPU does
        walk_chunk<Rank>(q, codes + box.stream_offset, chunk_outliers, g.ex, g.ey, g.ez, pad, pxy,
                         pxy * (L.chunk[2] + 1), p);
    } else {
        fill_rows(false);
        if (m > 0) {
            // q now holds the sums without the outliers' residuals.  An
            // outlier's residual is what makes its lattice value come out:
            // its stored value's lattice value, minus that partial sum, minus
            // the residuals of the earlier outliers that its sum includes
            // (those whose coordinates are all <= its own).
            // Coordinates and "lattice value minus partial sum" of every
            // outlier in parallel; then warp 0 resolves them in raster order,
            // its lanes summing the earlier dominated residuals together.
            for (uint32_t k = threadIdx.x; k < m; k += kThreads) {
                const uint32_t ik = position[k];
                const uint32_t xk = ik % g.ex, yk = (ik / g.ex) % g.ey, zk = ik / (g.ex * g.ey);
                outlier_x[k] = static_cast<uint16_t>(xk);
                outlier_y[k] = static_cast<uint8_t>(yk);
                outlier_z[k] = static_cast<uint8_t>(zk);
                int64_t target;
                lattice_of(chunk_outliers[k], p.r, target);
                outlier_delta[k] = wrap_sub(static_cast<Q>(target), q[pad.at(xk, yk, zk)]);
            }
            __syncthreads();
            if (warp == 0) {
                for (uint32_t k = 0; k < m; ++k) {
                    Q dominated = 0;
                    for (uint32_t j = lane; j < k; j += 32)
                        if (outlier_x[j] <= outlier_x[k] && outlier_y[j] <= outlier_y[k] && outlier_z[j] <= outlier_z[k])
                            dominated = wrap(dominated, outlier_delta[j]);
#pragma unroll
                    for (int d = 16; d > 0; d /= 2) dominated = wrap(dominated, __shfl_down_sync(0xffffffffu, dominated, d));
                    if (lane == 0) outlier_delta[k] = wrap_sub(outlier_delta[k], dominated);
                    __syncwarp();
                }
            }
            __syncthreads();
            fill_rows(true);  // sum again with every residual known
        }
    }

#pragma unroll
    for (int j = 0; j < kRowsPerWarp; ++j) {
        const uint32_t r = warp + kWarps * j;
        if (r < g.rows && g.inside<Rank>(r, lane)) {
            T v;
            if (code[j] != 0) {
                v = lattice_value<T>(q[starts.pad[r] + lane], p.ebx2);
            } else {
                v = chunk_outliers[row_offset[r] + __popc(ballots[j] & ((1u << lane) - 1))];
            }
            out[starts.global[r] + lane] = v;
        }
    }
}

// ---- Column kernels for the chunks gsz writes for 2-D and 3-D data ---------
// (32x32 and 32x8x8).  Lane = x, and each thread keeps a column of points in
// registers: z = 0..7 at y = warp (3-D), or y = 4·warp + 0..3 (2-D).  The
// Lorenzo residual is a difference along every axis, so the encoder takes
// differences in registers (z, or y), across lanes by one shuffle (x) and
// across warps through shared memory (y, or a warp's first row); the decoder
// takes the matching prefix sums.  No padded buffer, no per-point index math.
// Step j of a thread is row r = first_row + row_step·j of the chunk's raster
// order, so ballots give outliers their stream order as in the row kernels.
// Whole chunks (most of them) run a branch-free instance with constant
// extents; the chunks at the array's far edges run the checked one.

template <int Rank>
constexpr int kColumnSteps = Rank == 3 ? 8 : 4;
static_assert(kColumnSteps<3> * kThreads == kLorenzoMaxChunkPoints && kColumnSteps<2> * kThreads == 1024);

bool columns_shape(const LorenzoLayout& L) {
    if (L.rank == 3) return L.chunk[0] == 32 && L.chunk[1] == 8 && L.chunk[2] == 8;
    return L.rank == 2 && L.chunk[0] == 32 && L.chunk[1] == 32;
}

template <int Rank>
__device__ inline bool whole_chunk(const LorenzoLayout::ChunkBox& box) {
    return box.extent[0] == 32 && box.extent[1] == (Rank == 3 ? 8u : 32u) && box.extent[2] == (Rank == 3 ? 8u : 1u);
}

// Where a thread's column lies: its rows, its first point in the array and in
// the chunk's stream stretch, and the strides between its steps.
template <int Rank, bool Whole>
struct Column {
    uint32_t lane, warp;
    uint32_t ex, ey, ez, rows;
    uint32_t first_row, row_step;  // row of step j: first_row + row_step·j
    uint64_t at, at_step;          // array index of step j: at + at_step·j
    uint64_t code_at;              // stream index of step j: code_at + ex·row_step·j

    __device__ Column(const LorenzoLayout& L, const LorenzoLayout::ChunkBox& box)
        : lane(threadIdx.x & 31), warp(threadIdx.x >> 5) {
        if constexpr (Whole) {  // constants the compiler folds
            ex = 32;
            ey = Rank == 3 ? 8 : 32;
            ez = Rank == 3 ? 8 : 1;
        } else {
            ex = box.extent[0];
            ey = box.extent[1];
            ez = box.extent[2];
        }
        if constexpr (Rank == 3) {
            rows = ey * ez;
            first_row = warp;
            row_step = ey;
            at = global_index(L, box, lane, warp, 0);
            at_step = L.dims[0] * L.dims[1];
        } else {
            rows = ey;
            first_row = 4 * warp;
            row_step = 1;
            at = global_index(L, box, lane, 4 * warp, 0);
            at_step = L.dims[0];
        }
        code_at = box.stream_offset + lane + uint64_t{ex} * first_row;
    }
    // Whether step j's row is in the chunk (the same for the whole warp).
    __device__ bool row_in(int j) const {
        if constexpr (Whole) return true;
        return Rank == 3 ? warp < ey && static_cast<uint32_t>(j) < ez : first_row + j < ey;
    }
    __device__ bool inside(int j) const { return Whole || (lane < ex && row_in(j)); }
    __device__ uint32_t row(int j) const { return first_row + row_step * j; }
    __device__ uint64_t code_index(int j) const { return code_at + uint64_t{ex * row_step * j}; }
    __device__ uint32_t y_of(int j) const { return Rank == 3 ? warp : first_row + j; }
    __device__ uint32_t z_of(int j) const { return Rank == 3 ? static_cast<uint32_t>(j) : 0; }
};

template <int Rank, class Q>
struct ColumnShared {
    // One value per (step, warp, lane) in 3-D, per (warp, lane) in 2-D; the
    // encoder offsets warps by one so that warp -1 reads zeros.
    Q exchange[(Rank == 3 ? kColumnSteps<3> : 1) * (kWarps + 1) * 32];
    uint32_t row_offset[kMaxRows];
    uint32_t total;
};

template <class T, int Rank, bool Whole>
__device__ __forceinline__ void encode_columns(const T* __restrict__ data, const LorenzoLayout& L,
                                               const QuantParams& p_arg, const QuantParams* __restrict__ d_params,
                                               const LorenzoLayout::ChunkBox& box,
                                               uint16_t* __restrict__ codes, T* __restrict__ scratch,
                                               uint32_t* __restrict__ chunk_counts,
                                               ColumnShared<Rank, typename LatticeInt<T>::type>& sh) {
    using Q = typename LatticeInt<T>::type;
    constexpr int S = kColumnSteps<Rank>;
    const Column<Rank, Whole> c(L, box);
    const uint32_t lane = c.lane, warp = c.warp;

    T value[S];
#pragma unroll
    for (int j = 0; j < S; ++j) value[j] = c.inside(j) ? data[c.at + c.at_step * j] : T(0);

    // Lattice values (0 outside the chunk: never a neighbour of a point inside).
    // Float input: the float shortcut first, the double path for what it leaves.
    // Only what the common path needs is read up front (the parameters may be
    // in device memory: the whole struct in registers would cost occupancy).
    const int64_t radius = d_params ? d_params->radius : p_arg.radius;
    Q q[S];
    uint32_t ok = 0, undecided = 0;
    if constexpr (std::is_same_v<T, float>) {
        const float r_float = d_params ? d_params->r_float : p_arg.r_float;
        const float float_limit = d_params ? d_params->float_limit : p_arg.float_limit;
#pragma unroll
        for (int j = 0; j < S; ++j) {
            int32_t qf;
            const bool decided = lattice_of_float(value[j], r_float, float_limit, qf) & c.inside(j);
            q[j] = decided ? qf : 0;
            ok |= uint32_t{decided} << j;
            undecided |= uint32_t{!decided && c.inside(j)} << j;
        }
    } else {
#pragma unroll
        for (int j = 0; j < S; ++j) {
            q[j] = 0;
            undecided |= uint32_t{c.inside(j)} << j;
        }
    }
    if (undecided) {
        const QuantParams p = quant_params(p_arg, d_params);
#pragma unroll
        for (int j = 0; j < S; ++j) {
            if (!((undecided >> j) & 1u)) continue;
            int64_t qi;
            if (quantize_double(value[j], p, qi)) ok |= 1u << j;
            q[j] = static_cast<Q>(qi);
        }
    }

    // Residuals: differences along the column, across lanes, then across warps.
    Q delta[S];
    if constexpr (Rank == 3) {
        Q below = 0;
#pragma unroll
        for (int j = 0; j < S; ++j) {
            const Q dz = wrap_sub(q[j], below);
            below = q[j];
            const Q left = __shfl_up_sync(0xffffffffu, dz, 1);
            delta[j] = wrap_sub(dz, lane > 0 ? left : Q(0));
            sh.exchange[(j * (kWarps + 1) + warp + 1) * 32 + lane] = delta[j];
            if (warp == 0) sh.exchange[j * (kWarps + 1) * 32 + lane] = 0;
        }
        __syncthreads();
#pragma unroll
        for (int j = 0; j < S; ++j) delta[j] = wrap_sub(delta[j], sh.exchange[(j * (kWarps + 1) + warp) * 32 + lane]);
    } else {
#pragma unroll
        for (int j = 0; j < S; ++j) {
            const Q left = __shfl_up_sync(0xffffffffu, q[j], 1);
            delta[j] = wrap_sub(q[j], lane > 0 ? left : Q(0));
        }
        sh.exchange[(warp + 1) * 32 + lane] = delta[S - 1];
        if (warp == 0) sh.exchange[lane] = 0;
        __syncthreads();
#pragma unroll
        for (int j = S - 1; j > 0; --j) delta[j] = wrap_sub(delta[j], delta[j - 1]);
        delta[0] = wrap_sub(delta[0], sh.exchange[warp * 32 + lane]);
    }

    uint32_t ballots[S];
    bool any = false;
#pragma unroll
    for (int j = 0; j < S; ++j) {
        uint16_t code;
        if constexpr (std::is_same_v<Q, int32_t>)
            code = lorenzo_code(delta[j], static_cast<int32_t>(radius));
        else
            code = lorenzo_code(int64_t{delta[j]}, radius);
        code = (ok >> j) & 1u ? code : uint16_t{0};
        if (c.inside(j)) codes[c.code_index(j)] = code;
        ballots[j] = __ballot_sync(0xffffffffu, code == 0 && c.inside(j));
        if (lane == 0 && c.row_in(j)) sh.row_offset[c.row(j)] = __popc(ballots[j]);
        any |= ballots[j] != 0;
    }
    if (!__syncthreads_or(any)) {
        if (threadIdx.x == 0) chunk_counts[blockIdx.x] = 0;
        return;
    }
    scan_row_counts(sh.row_offset, c.rows, &sh.total);
    __syncthreads();
#pragma unroll
    for (int j = 0; j < S; ++j) {
        if ((ballots[j] >> lane) & 1u) {
            const uint32_t rank = sh.row_offset[c.row(j)] + __popc(ballots[j] & ((1u << lane) - 1));
            scratch[box.stream_offset + rank] = value[j];
        }
    }
    if (threadIdx.x == 0) chunk_counts[blockIdx.x] = sh.total;
}

template <class T, int Rank>
__global__ void __launch_bounds__(kThreads)
    lorenzo_encode_columns_kernel(const T* __restrict__ data, LorenzoLayout L, QuantParams p_arg,
                                  const QuantParams* __restrict__ d_params, uint16_t* __restrict__ codes,
                                  T* __restrict__ scratch, uint32_t* __restrict__ chunk_counts) {
    __shared__ ColumnShared<Rank, typename LatticeInt<T>::type> sh;
    const auto box = this_chunk_box(L);
    if (whole_chunk<Rank>(box))
        encode_columns<T, Rank, true>(data, L, p_arg, d_params, box, codes, scratch, chunk_counts, sh);
    else
        encode_columns<T, Rank, false>(data, L, p_arg, d_params, box, codes, scratch, chunk_counts, sh);
}

// The inverse of the encoder's differences: prefix sums along the column,
// across lanes (warp scan) and across warps (the sums of the warps before,
// through shared memory).  Every thread calls it; it synchronizes.
template <int Rank, class Q>
__device__ inline void column_prefix_sums(const Q (&delta)[kColumnSteps<Rank>], Q (&q)[kColumnSteps<Rank>],
                                          Q* exchange, uint32_t lane, uint32_t warp) {
    constexpr int S = kColumnSteps<Rank>;
    if constexpr (Rank == 3) {
        Q run = 0;
#pragma unroll
        for (int j = 0; j < S; ++j) {
            run = wrap(run, delta[j]);
            q[j] = warp_inclusive_scan(run);
            exchange[(j * kWarps + warp) * 32 + lane] = q[j];
        }
        __syncthreads();
        // The carries by one pass per (step, lane): the thread of warp j scans
        // step j's eight warp values in place (exclusive), 16 shared accesses
        // per thread instead of every thread summing the warps before it for
        // each of its steps (56 predicated loads and adds).
        static_assert(S == kWarps, "a warp per step");
        {
            Q* line = exchange + warp * kWarps * 32 + lane;
            Q carry = 0;
#pragma unroll
            for (uint32_t w = 0; w < kWarps; ++w) {
                const Q v = line[w * 32];
                line[w * 32] = carry;
                carry = wrap(carry, v);
            }
        }
        __syncthreads();
#pragma unroll
        for (int j = 0; j < S; ++j) q[j] = wrap(q[j], exchange[(j * kWarps + warp) * 32 + lane]);
    } else {
        Q run = 0;
#pragma unroll
        for (int j = 0; j < S; ++j) q[j] = run = wrap(run, warp_inclusive_scan(delta[j]));
        exchange[warp * 32 + lane] = run;
        __syncthreads();
        Q carry = 0;
#pragma unroll
        for (uint32_t w = 0; w < kWarps - 1; ++w)
            if (w < warp) carry = wrap(carry, exchange[w * 32 + lane]);
#pragma unroll
        for (int j = 0; j < S; ++j) q[j] = wrap(q[j], carry);
    }
    __syncthreads();  // the exchange is free again
}

// Up to this many outliers in a chunk, the decoder adds their residuals to
// the points they reach directly (a loop over them per thread) instead of a
// second prefix-sum pass (~25 instructions per point and two barriers).
constexpr uint32_t kDirectCorrections = 12;

template <class Q>
struct ColumnOutliers {  // the parallel outlier correction's state
    Q target[kMaxCorrected];    // lattice value minus the partial sum without outliers
    Q delta[kMaxCorrected];     // the residual solved for
    uint32_t at[kMaxCorrected];  // x | y << 8 | z << 16: one byte-wise compare tests "inside k's box"
};

// Solves delta_k = target_k - sum of delta_i over the earlier outliers i in
// outlier k's box (x_i <= x_k, y_i <= y_k, z_i <= z_k), for k < m, by warp 0,
// a lane per outlier (wrap-around sums: the order of the additions does not
// change the result).
// (Jacobi rounds over all outliers at once measured slower on wmagT rel 1e-4:
// chains of outliers along features need as many rounds as they are long.)
// Every thread calls it; it synchronizes.
template <class Q>
__device__ void resolve_outliers(ColumnOutliers<Q>& os, uint32_t m) {
    if (m <= 32) {  // a lane per outlier: k's value is final once the ones before it are in; one shuffle per outlier
        if (threadIdx.x < 32) {
            const uint32_t lane = threadIdx.x;
            const bool mine = lane < m;
            const uint32_t at = mine ? os.at[lane] : 0u;
            const Q target = mine ? os.target[lane] : Q(0);
            Q inside = 0;  // the residuals of the earlier outliers in this one's box, so far
            for (uint32_t k = 0; k + 1 < m; ++k) {
                const Q dk = __shfl_sync(0xffffffffu, wrap_sub(target, inside), k);
                if (lane > k && __vcmpleu4(os.at[k], at) == 0xFFFFFFFFu) inside = wrap(inside, dk);
            }
            if (mine) os.delta[lane] = wrap_sub(target, inside);
        }
        __syncthreads();
        return;
    }
    // More: groups of 32, a lane per outlier again.  A lane first adds the
    // resolved outliers of the earlier groups in its box (the same reads for
    // every lane: broadcasts), then its group resolves as above.  (Before: an
    // outlier at a time, each a five-shuffle reduction: wmagT rel 1e-4 has 4%
    // of its chunks here, and the other warps waited on them at the barrier.)
    if (threadIdx.x < 32) {
        const uint32_t lane = threadIdx.x;
        for (uint32_t g = 0; g < m; g += 32) {
            const uint32_t k = g + lane;
            const bool mine = k < m;
            const uint32_t at = mine ? os.at[k] : 0u;
            Q inside = 0;
#pragma unroll 4
            for (uint32_t i = 0; i < g; ++i)
                if (__vcmpleu4(os.at[i], at) == 0xFFFFFFFFu) inside = wrap(inside, os.delta[i]);
            const Q target = mine ? os.target[k] : Q(0);
            const uint32_t count = min(32u, m - g);
            for (uint32_t j = 0; j + 1 < count; ++j) {
                const Q dj = __shfl_sync(0xffffffffu, wrap_sub(target, inside), j);
                if (lane > j && __vcmpleu4(os.at[g + j], at) == 0xFFFFFFFFu) inside = wrap(inside, dj);
            }
            if (mine) os.delta[k] = wrap_sub(target, inside);
            __syncwarp();  // this group's residuals, for the next groups
        }
    }
    __syncthreads();
}

template <class T, int Rank, bool Whole>
__device__ __forceinline__ void decode_columns(const uint16_t* __restrict__ codes, const T* __restrict__ chunk_outliers,
                                               uint64_t outlier_room, const OutlierCheck& check,
                                               const LorenzoLayout& L, const QuantParams& p,
                                               const LorenzoLayout::ChunkBox& box, T* __restrict__ out,
                                               ColumnShared<Rank, typename LatticeInt<T>::type>& sh,
                                               ColumnOutliers<typename LatticeInt<T>::type>& os,
                                               typename LatticeInt<T>::type* padded) {
    using Q = typename LatticeInt<T>::type;
    constexpr int S = kColumnSteps<Rank>;
    const Column<Rank, Whole> c(L, box);
    const uint32_t lane = c.lane, warp = c.warp;
    if (threadIdx.x == 0) sh.total = 0;

    uint16_t code[S];
    uint32_t ballots[S];
    bool any = false;
#pragma unroll
    for (int j = 0; j < S; ++j) {
        code[j] = c.inside(j) ? codes[c.code_index(j)] : static_cast<uint16_t>(p.radius);  // outside: residual 0
        ballots[j] = __ballot_sync(0xffffffffu, code[j] == 0);
        if (lane == 0 && c.row_in(j)) sh.row_offset[c.row(j)] = __popc(ballots[j]);
        any |= ballots[j] != 0;
    }
    any = __syncthreads_or(any);
    if (any) {
        scan_row_counts(sh.row_offset, c.rows, &sh.total);
        __syncthreads();
    }
    const uint32_t m = sh.total;
    auto outlier_rank = [&](int j) { return sh.row_offset[c.row(j)] + __popc(ballots[j] & ((1u << lane) - 1)); };
    if (m > outlier_room) {  // offsets that do not match the codes (a corrupt stream): read nothing
        if (threadIdx.x == 0 && check.corrupt) atomicOr(check.corrupt, kLorenzoCorruptOutliers);
        return;  // the whole block
    }

    Q delta[S], q[S];
#pragma unroll
    for (int j = 0; j < S; ++j) delta[j] = code[j] != 0 ? static_cast<Q>(int64_t{code[j]} - p.radius) : Q(0);

    if (m > kMaxCorrected) {  // many outliers: the sequential walk of the row kernels
        const Padded pad{L.chunk[0] + 1, L.chunk[1] + 1};
        const uint32_t pxy = pad.px * pad.py;
        walk_chunk<Rank>(padded, codes + box.stream_offset, chunk_outliers, c.ex, c.ey, c.ez, pad, pxy,
                         pxy * (L.chunk[2] + 1), p);
#pragma unroll
        for (int j = 0; j < S; ++j) q[j] = c.inside(j) ? padded[pad.at(lane, c.y_of(j), c.z_of(j))] : Q(0);
    } else {
        // Thread k loads outlier k's stored value now (one coalesced load per
        // chunk), so its latency overlaps the first prefix-sum pass.
        const bool loads = threadIdx.x < m;
        const T stored = loads ? chunk_outliers[threadIdx.x] : T(0);
        column_prefix_sums<Rank>(delta, q, sh.exchange, lane, warp);  // outliers' residuals taken as 0
        if (m > 0) {
            // As in the row kernels: each outlier's residual is its stored
            // value's lattice value minus the partial sum there, minus the
            // residuals of the earlier outliers that sum includes.  The
            // owners leave the partial sums; thread k turns its one into k's target.
#pragma unroll
            for (int j = 0; j < S; ++j) {
                if (!((ballots[j] >> lane) & 1u)) continue;
                const uint32_t k = outlier_rank(j);
                os.target[k] = q[j];
                os.at[k] = lane | c.y_of(j) << 8 | c.z_of(j) << 16;
            }
            __syncthreads();
            if (loads) {
                int64_t lattice;
                lattice_of(stored, p.r, lattice);
                os.target[threadIdx.x] = wrap_sub(static_cast<Q>(lattice), os.target[threadIdx.x]);
            }
            if (m > 32) __syncthreads();  // up to 32 outliers warp 0 resolves its own targets
            resolve_outliers(os, m);
            if (m <= kDirectCorrections) {
                // Few outliers: add each one's residual straight to the points
                // whose box holds it (those at or after its step in the
                // thread's column, if its x and y are not past the column's).
                Q add[S];
#pragma unroll
                for (int j = 0; j < S; ++j) add[j] = 0;
                const uint32_t first_y = c.y_of(0);
                for (uint32_t k = 0; k < m; ++k) {
                    const uint32_t at = os.at[k];
                    const uint32_t xk = at & 0xFFu, yk = (at >> 8) & 0xFFu, zk = at >> 16;
                    // The first step of this column inside outlier k's reach, S if none.
                    uint32_t from;
                    if constexpr (Rank == 3)
                        from = xk <= lane && yk <= warp ? zk : S;
                    else
                        from = xk > lane ? S : (yk <= first_y ? 0 : min(yk - first_y, uint32_t{S}));
                    const Q dk = os.delta[k];
#pragma unroll
                    for (int j = 0; j < S; ++j)
                        if (static_cast<uint32_t>(j) == from) add[j] = wrap(add[j], dk);
                }
                Q run = 0;
#pragma unroll
                for (int j = 0; j < S; ++j) q[j] = wrap(q[j], run = wrap(run, add[j]));
            } else {
#pragma unroll
                for (int j = 0; j < S; ++j)
                    if ((ballots[j] >> lane) & 1u) delta[j] = os.delta[outlier_rank(j)];
                column_prefix_sums<Rank>(delta, q, sh.exchange, lane, warp);  // again, every residual known
            }
        }
    }

#pragma unroll
    for (int j = 0; j < S; ++j) {
        if (!c.inside(j)) continue;
        out[c.at + c.at_step * j] = code[j] != 0 ? lattice_value<T>(q[j], p.ebx2) : chunk_outliers[outlier_rank(j)];
    }
}

// Blocks per SM the column decoders are compiled for (the registers allow):
// latency-bound on the codes' loads and the barriers, the float ones gain
// from more warps more than they lose to a few spills (the 3-D one at 48
// registers: wmagT rel 1e-4 decompression +4-5%, bench/NOTES.md).  The double
// ones, unmeasured, keep 4 (more would spill hundreds of bytes).
template <class T, int Rank>
constexpr int kDecodeColumnsBlocksPerSm = sizeof(T) == 4 ? (Rank == 3 ? 5 : 6) : 4;

template <class T, int Rank>
__global__ void __launch_bounds__(kThreads, kDecodeColumnsBlocksPerSm<T, Rank>)
    lorenzo_decode_columns_kernel(const uint16_t* __restrict__ codes, const T* __restrict__ outliers,
                                  const uint64_t* __restrict__ outlier_offsets, LorenzoLayout L, QuantParams p,
                                  T* __restrict__ out, OutlierCheck check) {
    if (outliers_disagree(outlier_offsets, check)) return;
    using Q = typename LatticeInt<T>::type;
    extern __shared__ int64_t q_storage[];  // the padded buffer, used only by the sequential walk
    __shared__ ColumnShared<Rank, Q> sh;
    __shared__ ColumnOutliers<Q> os;
    const auto box = this_chunk_box(L);
    // The chunk's outliers end where the next chunk's begin, and before the
    // stored ones end.  Offsets counted from the codes always fit; counts
    // taken while decoding a stream that turned out corrupt may not, and the
    // chunk then reads nothing.
    const uint64_t first = outlier_offsets[blockIdx.x];
    const uint64_t end = min(outlier_offsets[blockIdx.x + 1], check.num_outliers);
    const uint64_t room = end > first ? end - first : 0;
    const T* chunk_outliers = outliers + first;
    Q* padded = reinterpret_cast<Q*>(q_storage);
    if (whole_chunk<Rank>(box))
        decode_columns<T, Rank, true>(codes, chunk_outliers, room, check, L, p, box, out, sh, os, padded);
    else
        decode_columns<T, Rank, false>(codes, chunk_outliers, room, check, L, p, box, out, sh, os, padded);
}

size_t padded_bytes(const LorenzoLayout& L, size_t element_bytes) {
    return size_t{L.chunk[0] + 1} * (L.chunk[1] + 1) * (L.chunk[2] + 1) * element_bytes;
}

template <class Kernel>
void prepare_kernel(Kernel kernel, size_t shared_bytes) {
    if (shared_bytes > 48 * 1024)
        GSZ_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(shared_bytes)));
}

void check_grid(const LorenzoLayout& L) {
    GSZ_CHECK(L.num_chunks >= 1 && L.num_chunks < (uint64_t{1} << 31), GSZ_STATUS_UNSUPPORTED,
              "%llu Lorenzo chunks exceed one CUDA grid", static_cast<unsigned long long>(L.num_chunks));
    GSZ_CHECK(uint64_t{L.chunk[0]} * L.chunk[1] * L.chunk[2] <= kLorenzoMaxChunkPoints, GSZ_STATUS_CORRUPT,
              "Lorenzo chunk larger than %u points", kLorenzoMaxChunkPoints);
}

// Exclusive scan of per-chunk counts (num_chunks + 1 entries, the last one 0)
// into offsets, on the stream; offsets[num_chunks] is the total.
void scan_counts_async(const uint32_t* counts, cuda::DeviceBuffer<uint64_t>& offsets,
                       cuda::DeviceBuffer<uint8_t>& temp, uint64_t num_chunks, cudaStream_t stream) {
    const auto n = static_cast<int64_t>(num_chunks + 1);
    offsets.allocate(num_chunks + 1, stream);
    size_t temp_bytes = 0;
    GSZ_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, counts, offsets.data(), n, stream));
    temp.allocate(temp_bytes, stream);
    GSZ_CUDA(cub::DeviceScan::ExclusiveSum(temp.data(), temp_bytes, counts, offsets.data(), n, stream));
}

}  // namespace

template <class T>
void lorenzo_encode_cuda_async(const T* d_data, const LorenzoLayout& L, const QuantParams& p,
                               const QuantParams* d_params, LorenzoDeviceCodes<T>& out, cudaStream_t stream) {
    check_grid(L);
    const uint64_t n = L.num_elements;
    out.codes.allocate(n, stream);
    out.scratch.allocate(n, stream);
    out.chunk_counts.allocate(L.num_chunks + 1, stream);
    // Every chunk writes its count; the extra last entry stays 0 for the scan.
    GSZ_CUDA(cudaMemsetAsync(out.chunk_counts.data() + L.num_chunks, 0, sizeof(uint32_t), stream));

    const auto grid = static_cast<unsigned>(L.num_chunks);
    const bool rows = rows_shape(L);
    const size_t shared = padded_bytes(L, rows ? sizeof(typename LatticeInt<T>::type) : sizeof(int64_t));
    auto launch = [&](auto kernel, size_t shared_bytes) {
        prepare_kernel(kernel, shared_bytes);
        kernel<<<grid, kThreads, shared_bytes, stream>>>(d_data, L, p, d_params, out.codes.data(), out.scratch.data(),
                                                         out.chunk_counts.data());
    };
    if (columns_shape(L)) {
        L.rank == 3 ? launch(lorenzo_encode_columns_kernel<T, 3>, 0) : launch(lorenzo_encode_columns_kernel<T, 2>, 0);
    } else switch (L.rank) {
        case 1: rows ? launch(lorenzo_encode_rows_kernel<T, 1>, shared) : launch(lorenzo_encode_kernel<T, 1>, shared); break;
        case 2: rows ? launch(lorenzo_encode_rows_kernel<T, 2>, shared) : launch(lorenzo_encode_kernel<T, 2>, shared); break;
        default: rows ? launch(lorenzo_encode_rows_kernel<T, 3>, shared) : launch(lorenzo_encode_kernel<T, 3>, shared); break;
    }
    GSZ_CUDA_LAUNCHED("lorenzo_encode_kernel");
    scan_counts_async(out.chunk_counts.data(), out.chunk_offsets, out.temp, L.num_chunks, stream);
}

template <class T>
void lorenzo_compact_outliers_cuda(const LorenzoLayout& L, uint64_t num_outliers, LorenzoDeviceCodes<T>& out,
                                   cudaStream_t stream) {
    out.num_outliers = num_outliers;
    out.outliers.allocate(num_outliers, stream);
    if (num_outliers == 0) return;
    lorenzo_compact_outliers_kernel<T><<<static_cast<unsigned>(L.num_chunks), 128, 0, stream>>>(
        out.scratch.data(), out.chunk_counts.data(), out.chunk_offsets.data(), L, out.outliers.data());
    GSZ_CUDA_LAUNCHED("lorenzo_compact_outliers_kernel");
}

template <class T>
void lorenzo_encode_cuda(const T* d_data, const LorenzoLayout& L, const QuantParams& p, LorenzoDeviceCodes<T>& out,
                         cudaStream_t stream) {
    lorenzo_encode_cuda_async(d_data, L, p, nullptr, out, stream);
    uint64_t total = 0;
    GSZ_CUDA(cudaMemcpyAsync(&total, out.outlier_total(L), sizeof total, cudaMemcpyDeviceToHost, stream));
    GSZ_CUDA(cudaStreamSynchronize(stream));
    lorenzo_compact_outliers_cuda(L, total, out, stream);
}

template <class T>
void lorenzo_decode_cuda(const uint16_t* d_codes, const T* d_outliers, uint64_t num_outliers, const LorenzoLayout& L,
                         const QuantParams& p, T* d_out, LorenzoDecodeScratch& scratch, cudaStream_t stream,
                         uint32_t* d_corrupt, LorenzoGranuleCounts granules) {
    check_grid(L);
    const auto grid = static_cast<unsigned>(L.num_chunks);
    const auto warps_grid = [](uint64_t warps) { return static_cast<unsigned>((warps + kThreads / 32 - 1) / (kThreads / 32)); };
    if (granules.counts && d_corrupt && columns_shape(L)) {  // no counting pass (the column decoder checks the room)
        GSZ_CHECK(granules.size >= 1, GSZ_STATUS_INVALID_ARGUMENT, "lorenzo: granule of 0 codes");
        const uint64_t num_granules = (L.num_elements + granules.size - 1) / granules.size;
        scan_counts_async(granules.counts, scratch.granule_prefix, scratch.temp, num_granules, stream);
        scratch.chunk_offsets.allocate(L.num_chunks + 1, stream);
        lorenzo_offsets_from_granules_kernel<<<warps_grid(L.num_chunks + 1), kThreads, 0, stream>>>(
            d_codes, L, scratch.granule_prefix.data(), granules.size, scratch.chunk_offsets.data());
        GSZ_CUDA_LAUNCHED("lorenzo_offsets_from_granules_kernel");
    } else {
        scratch.chunk_counts.allocate(L.num_chunks + 1, stream);
        GSZ_CUDA(cudaMemsetAsync(scratch.chunk_counts.data() + L.num_chunks, 0, sizeof(uint32_t), stream));
        lorenzo_count_outliers_kernel<<<warps_grid(L.num_chunks), kThreads, 0, stream>>>(d_codes, L,
                                                                                         scratch.chunk_counts.data());
        GSZ_CUDA_LAUNCHED("lorenzo_count_outliers_kernel");
        scan_counts_async(scratch.chunk_counts.data(), scratch.chunk_offsets, scratch.temp, L.num_chunks, stream);
    }
    if (!d_corrupt) {  // checked here, before any kernel reads an outlier
        uint64_t marked = 0;
        GSZ_CUDA(cudaMemcpyAsync(&marked, scratch.chunk_offsets.data() + L.num_chunks, sizeof marked,
                                 cudaMemcpyDeviceToHost, stream));
        GSZ_CUDA(cudaStreamSynchronize(stream));
        GSZ_CHECK(marked == num_outliers, GSZ_STATUS_CORRUPT,
                  "archive holds %llu outlier values but its codes mark %llu",
                  static_cast<unsigned long long>(num_outliers), static_cast<unsigned long long>(marked));
    }

    const bool rows = rows_shape(L) || columns_shape(L);
    const size_t shared = padded_bytes(L, rows ? sizeof(typename LatticeInt<T>::type) : sizeof(int64_t));
    const OutlierCheck check{num_outliers, d_corrupt};
    auto launch = [&](auto kernel) {
        prepare_kernel(kernel, shared);
        kernel<<<grid, kThreads, shared, stream>>>(d_codes, d_outliers, scratch.chunk_offsets.data(), L, p, d_out,
                                                   check);
    };
    if (columns_shape(L)) {
        L.rank == 3 ? launch(lorenzo_decode_columns_kernel<T, 3>) : launch(lorenzo_decode_columns_kernel<T, 2>);
    } else switch (L.rank) {
        case 1: rows ? launch(lorenzo_decode_rows_kernel<T, 1>) : launch(lorenzo_decode_kernel<T, 1>); break;
        case 2: rows ? launch(lorenzo_decode_rows_kernel<T, 2>) : launch(lorenzo_decode_kernel<T, 2>); break;
        default: rows ? launch(lorenzo_decode_rows_kernel<T, 3>) : launch(lorenzo_decode_kernel<T, 3>); break;
    }
    GSZ_CUDA_LAUNCHED("lorenzo_decode_kernel");
}

template void lorenzo_encode_cuda<float>(const float*, const LorenzoLayout&, const QuantParams&,
                                         LorenzoDeviceCodes<float>&, cudaStream_t);
template void lorenzo_encode_cuda<double>(const double*, const LorenzoLayout&, const QuantParams&,
                                          LorenzoDeviceCodes<double>&, cudaStream_t);
template void lorenzo_encode_cuda_async<float>(const float*, const LorenzoLayout&, const QuantParams&,
                                               const QuantParams*, LorenzoDeviceCodes<float>&, cudaStream_t);
template void lorenzo_encode_cuda_async<double>(const double*, const LorenzoLayout&, const QuantParams&,
                                                const QuantParams*, LorenzoDeviceCodes<double>&, cudaStream_t);
template void lorenzo_compact_outliers_cuda<float>(const LorenzoLayout&, uint64_t, LorenzoDeviceCodes<float>&,
                                                   cudaStream_t);
template void lorenzo_compact_outliers_cuda<double>(const LorenzoLayout&, uint64_t, LorenzoDeviceCodes<double>&,
                                                    cudaStream_t);
template void lorenzo_decode_cuda<float>(const uint16_t*, const float*, uint64_t, const LorenzoLayout&,
                                         const QuantParams&, float*, LorenzoDecodeScratch&, cudaStream_t, uint32_t*,
                                         LorenzoGranuleCounts);
template void lorenzo_decode_cuda<double>(const uint16_t*, const double*, uint64_t, const LorenzoLayout&,
                                          const QuantParams&, double*, LorenzoDecodeScratch&, cudaStream_t, uint32_t*,
                                          LorenzoGranuleCounts);

}  // namespace gsz::predict
