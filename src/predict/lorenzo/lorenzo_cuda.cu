// CUDA backend of the Lorenzo predictor.  One block of 256 threads per chunk
// (at most 2048 points, 8 per thread).  The chunk's lattice values live in a
// zero-padded shared-memory array, exactly like the CPU backend's buffer, so
// the residuals, the codes and the decoded values are the same integers and
// the same floating-point operations (lorenzo_math.hpp) as on the host.
#include "predict/lorenzo/lorenzo_cuda.hpp"

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>

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

__device__ inline uint64_t global_index(const LorenzoLayout& L, const LorenzoLayout::ChunkBox& box, uint32_t x,
                                        uint32_t y, uint32_t z) {
    return (box.origin[0] + x) + L.dims[0] * ((box.origin[1] + y) + L.dims[1] * (box.origin[2] + z));
}

__device__ inline void zero_padded(int64_t* q, uint32_t count) {
    for (uint32_t i = threadIdx.x; i < count; i += kThreads) q[i] = 0;
}

// Codes in stream order; each chunk's outliers go to its own stretch of
// `scratch` (at the chunk's stream offset), compacted later once the
// per-chunk counts are scanned.
template <class T, int Rank>
__global__ void __launch_bounds__(kThreads)
    lorenzo_encode_kernel(const T* __restrict__ data, LorenzoLayout L, QuantParams p, uint16_t* __restrict__ codes,
                          T* __restrict__ scratch, uint32_t* __restrict__ chunk_counts) {
    extern __shared__ int64_t q[];
    __shared__ uint8_t ok[kLorenzoMaxChunkPoints];
    using BlockScan = cub::BlockScan<uint32_t, kThreads>;
    __shared__ typename BlockScan::TempStorage scan_storage;

    const uint64_t chunk = blockIdx.x;
    const auto box = L.chunk_box(chunk);
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
    const uint64_t from = L.chunk_box(chunk).stream_offset, to = offsets[chunk];
    for (uint32_t i = threadIdx.x; i < count; i += blockDim.x) outliers[to + i] = scratch[from + i];
}

// Zero codes per chunk: where each chunk's outliers start in the outlier array.
__global__ void __launch_bounds__(kThreads)
    lorenzo_count_outliers_kernel(const uint16_t* __restrict__ codes, LorenzoLayout L, uint32_t* __restrict__ counts) {
    using BlockReduce = cub::BlockReduce<uint32_t, kThreads>;
    __shared__ typename BlockReduce::TempStorage storage;
    const uint64_t chunk = blockIdx.x;
    const auto box = L.chunk_box(chunk);
    const uint32_t npts = static_cast<uint32_t>(box.size());
    uint32_t zeros = 0;
    for (uint32_t i = threadIdx.x; i < npts; i += kThreads) zeros += codes[box.stream_offset + i] == 0;
    const uint32_t total = BlockReduce(storage).Sum(zeros);
    if (threadIdx.x == 0) counts[chunk] = total;
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
                          T* __restrict__ out) {
    extern __shared__ int64_t q[];
    __shared__ uint16_t code_s[kLorenzoMaxChunkPoints];
    using BlockScan = cub::BlockScan<int64_t, kThreads>;
    __shared__ typename BlockScan::TempStorage scan_storage;

    const uint64_t chunk = blockIdx.x;
    const auto box = L.chunk_box(chunk);
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

size_t padded_bytes(const LorenzoLayout& L) {
    return size_t{L.chunk[0] + 1} * (L.chunk[1] + 1) * (L.chunk[2] + 1) * sizeof(int64_t);
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
// into offsets; returns the total.
uint64_t scan_counts(cuda::DeviceBuffer<uint32_t>& counts, cuda::DeviceBuffer<uint64_t>& offsets,
                     cuda::DeviceBuffer<uint8_t>& temp, uint64_t num_chunks, cudaStream_t stream) {
    const auto n = static_cast<int64_t>(num_chunks + 1);
    offsets.allocate(num_chunks + 1, stream);
    size_t temp_bytes = 0;
    GSZ_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, counts.data(), offsets.data(), n, stream));
    temp.allocate(temp_bytes, stream);
    GSZ_CUDA(cub::DeviceScan::ExclusiveSum(temp.data(), temp_bytes, counts.data(), offsets.data(), n, stream));
    uint64_t total = 0;
    GSZ_CUDA(cudaMemcpyAsync(&total, offsets.data() + num_chunks, sizeof total, cudaMemcpyDeviceToHost, stream));
    GSZ_CUDA(cudaStreamSynchronize(stream));
    return total;
}

}  // namespace

template <class T>
void lorenzo_encode_cuda(const T* d_data, const LorenzoLayout& L, const QuantParams& p, LorenzoDeviceCodes<T>& out,
                         cudaStream_t stream) {
    check_grid(L);
    const uint64_t n = L.num_elements;
    out.codes.allocate(n, stream);
    out.scratch.allocate(n, stream);
    out.chunk_counts.allocate(L.num_chunks + 1, stream);
    out.chunk_counts.zero(stream);  // the extra last entry stays 0 for the scan

    const size_t shared = padded_bytes(L);
    const auto grid = static_cast<unsigned>(L.num_chunks);
    switch (L.rank) {
        case 1:
            prepare_kernel(lorenzo_encode_kernel<T, 1>, shared);
            lorenzo_encode_kernel<T, 1><<<grid, kThreads, shared, stream>>>(d_data, L, p, out.codes.data(),
                                                                         out.scratch.data(), out.chunk_counts.data());
            break;
        case 2:
            prepare_kernel(lorenzo_encode_kernel<T, 2>, shared);
            lorenzo_encode_kernel<T, 2><<<grid, kThreads, shared, stream>>>(d_data, L, p, out.codes.data(),
                                                                         out.scratch.data(), out.chunk_counts.data());
            break;
        default:
            prepare_kernel(lorenzo_encode_kernel<T, 3>, shared);
            lorenzo_encode_kernel<T, 3><<<grid, kThreads, shared, stream>>>(d_data, L, p, out.codes.data(),
                                                                         out.scratch.data(), out.chunk_counts.data());
            break;
    }
    GSZ_CUDA_LAUNCHED("lorenzo_encode_kernel");

    out.num_outliers = scan_counts(out.chunk_counts, out.chunk_offsets, out.temp, L.num_chunks, stream);
    out.outliers.allocate(out.num_outliers, stream);
    if (out.num_outliers) {
        lorenzo_compact_outliers_kernel<T><<<grid, 128, 0, stream>>>(out.scratch.data(), out.chunk_counts.data(),
                                                                     out.chunk_offsets.data(), L, out.outliers.data());
        GSZ_CUDA_LAUNCHED("lorenzo_compact_outliers_kernel");
    }
}

template <class T>
void lorenzo_decode_cuda(const uint16_t* d_codes, const T* d_outliers, uint64_t num_outliers, const LorenzoLayout& L,
                         const QuantParams& p, T* d_out, LorenzoDecodeScratch& scratch, cudaStream_t stream) {
    check_grid(L);
    const auto grid = static_cast<unsigned>(L.num_chunks);
    scratch.chunk_counts.allocate(L.num_chunks + 1, stream);
    scratch.chunk_counts.zero(stream);
    lorenzo_count_outliers_kernel<<<grid, kThreads, 0, stream>>>(d_codes, L, scratch.chunk_counts.data());
    GSZ_CUDA_LAUNCHED("lorenzo_count_outliers_kernel");
    const uint64_t marked = scan_counts(scratch.chunk_counts, scratch.chunk_offsets, scratch.temp, L.num_chunks, stream);
    GSZ_CHECK(marked == num_outliers, GSZ_STATUS_CORRUPT, "archive holds %llu outlier values but its codes mark %llu",
              static_cast<unsigned long long>(num_outliers), static_cast<unsigned long long>(marked));

    const size_t shared = padded_bytes(L);
    switch (L.rank) {
        case 1:
            prepare_kernel(lorenzo_decode_kernel<T, 1>, shared);
            lorenzo_decode_kernel<T, 1><<<grid, kThreads, shared, stream>>>(d_codes, d_outliers,
                                                                         scratch.chunk_offsets.data(), L, p, d_out);
            break;
        case 2:
            prepare_kernel(lorenzo_decode_kernel<T, 2>, shared);
            lorenzo_decode_kernel<T, 2><<<grid, kThreads, shared, stream>>>(d_codes, d_outliers,
                                                                         scratch.chunk_offsets.data(), L, p, d_out);
            break;
        default:
            prepare_kernel(lorenzo_decode_kernel<T, 3>, shared);
            lorenzo_decode_kernel<T, 3><<<grid, kThreads, shared, stream>>>(d_codes, d_outliers,
                                                                         scratch.chunk_offsets.data(), L, p, d_out);
            break;
    }
    GSZ_CUDA_LAUNCHED("lorenzo_decode_kernel");
}

template void lorenzo_encode_cuda<float>(const float*, const LorenzoLayout&, const QuantParams&,
                                         LorenzoDeviceCodes<float>&, cudaStream_t);
template void lorenzo_encode_cuda<double>(const double*, const LorenzoLayout&, const QuantParams&,
                                          LorenzoDeviceCodes<double>&, cudaStream_t);
template void lorenzo_decode_cuda<float>(const uint16_t*, const float*, uint64_t, const LorenzoLayout&,
                                         const QuantParams&, float*, LorenzoDecodeScratch&, cudaStream_t);
template void lorenzo_decode_cuda<double>(const uint16_t*, const double*, uint64_t, const LorenzoLayout&,
                                          const QuantParams&, double*, LorenzoDecodeScratch&, cudaStream_t);

}  // namespace gsz::predict
