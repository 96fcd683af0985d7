// CUDA backend of the G-Interp predictor.  A thread block owns one tile: it
// loads the workspace (tile plus far faces) into shared memory, runs the
// stages with a barrier between them (the points of one stage never read each
// other), and writes back only the points it owns.  Encoding reads the input
// and writes codes; decoding reads codes, anchors and outliers and writes the
// output: no block reads what another block writes in the same launch.
#include "predict/interp/interp_cuda.hpp"

#include "runtime/cuda/cuda_check.hpp"
#include "runtime/status.hpp"

#include <cub/device/device_reduce.cuh>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

namespace gsz::predict {

namespace {

// What the kernels need of an InterpConfig, with the level quantizers derived.
struct KernelConfig {
    InterpLevelQuant level[kInterpMaxLevels];
    uint8_t order[3];
    uint8_t spline[3];
};

KernelConfig kernel_config(const InterpLayout& L, const InterpConfig& cfg) {
    KernelConfig k{};
    for (uint32_t l = 0; l < L.num_levels; ++l) k.level[l] = InterpLevelQuant::from_bound(cfg.level_eb[l]);
    for (int d = 0; d < 3; ++d) {
        k.order[d] = cfg.order[d];
        k.spline[d] = cfg.spline[d];
    }
    return k;
}

unsigned threads_for(const InterpLayout& L) { return L.rank == 2 ? 128 : 256; }

// Runs f(ws_offset, x, y, z) over the workspace, a warp per row so the
// global accesses of a row are contiguous (one row: the block spreads over it).
template <class F>
__device__ void for_each_ws_point(const InterpLayout& L, F&& f) {
    const uint32_t w0 = L.ws_extent(0), w1 = L.ws_extent(1), rows = w1 * L.ws_extent(2);
    if (rows == 1) {
        for (uint32_t x = threadIdx.x; x < w0; x += blockDim.x) f(x, x, 0u, 0u);
        return;
    }
    const uint32_t lane = threadIdx.x % 32, warps = blockDim.x / 32;
    for (uint32_t r = threadIdx.x / 32; r < rows; r += warps) {
        const uint32_t y = r % w1, z = r / w1;
        for (uint32_t x = lane; x < w0; x += 32) f(r * w0 + x, x, y, z);
    }
}

__device__ void tile_coords(const InterpLayout& L, uint32_t i, uint32_t* c) {
    c[0] = i % L.tile[0];
    c[1] = (i / L.tile[0]) % L.tile[1];
    c[2] = i / (L.tile[0] * L.tile[1]);
}

__device__ bool inside(const InterpLayout::TileBox& box, const uint32_t* c) {
    return c[0] <= box.last[0] && c[1] <= box.last[1] && c[2] <= box.last[2];
}

template <class T>
__global__ void interp_encode_kernel(const T* __restrict__ data, InterpLayout L, KernelConfig cfg, double eb,
                                     int64_t radius, uint16_t* __restrict__ codes) {
    extern __shared__ unsigned char smem_raw[];
    T* ws = reinterpret_cast<T*>(smem_raw);
    uint16_t* tile_codes = reinterpret_cast<uint16_t*>(ws + L.ws_size());
    const auto box = L.tile_box(blockIdx.x);
    const InterpOrder order{{cfg.order[0], cfg.order[1], cfg.order[2]}};

    for_each_ws_point(L, [&](uint32_t i, uint32_t x, uint32_t y, uint32_t z) {
        const uint32_t c[3] = {x, y, z};
        if (inside(box, c)) ws[i] = data[L.global_index(box.origin, c)];
        tile_codes[i] = static_cast<uint16_t>(radius);   // anchors keep the zero-residual code
    });
    __syncthreads();
    for (uint32_t l = L.num_levels; l-- > 0;) {
        const uint32_t u = 1u << l;
        const InterpLevelQuant lq = cfg.level[l];
        for (uint32_t k = 0; k < L.rank; ++k) {
            const InterpStage s = interp_stage(L, order, k, u, box.last);
            const uint32_t spline = cfg.spline[s.dim];
            for (uint32_t i = threadIdx.x; i < s.total; i += blockDim.x) {
                uint32_t w, along;
                s.locate(i, w, along);
                tile_codes[w] = interp_encode_point(ws, s, w, along, u, spline, lq, eb, radius);
            }
            __syncthreads();
        }
    }
    for (uint32_t i = threadIdx.x; i < L.tile_points(); i += blockDim.x) {
        uint32_t c[3];
        tile_coords(L, i, c);
        if (inside(box, c)) codes[L.global_index(box.origin, c)] = tile_codes[interp_ws_offset(L, c)];
    }
}

template <class T>
__global__ void interp_anchor_gather_kernel(const T* __restrict__ data, InterpLayout L, T* __restrict__ anchors) {
    const uint64_t a = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
    if (a >= L.num_anchors) return;
    const uint64_t a0 = a % L.anchor_dims[0], a1 = (a / L.anchor_dims[0]) % L.anchor_dims[1],
                   a2 = a / (L.anchor_dims[0] * L.anchor_dims[1]);
    const uint64_t S = L.anchor_stride;
    anchors[a] = data[((a2 * S) * L.dims[1] + a1 * S) * L.dims[0] + a0 * S];
}

struct IsOutlier {
    const uint16_t* codes;
    __device__ bool operator()(uint64_t i) const { return codes[i] == 0; }
};

template <class T>
__global__ void gather_kernel(const T* __restrict__ data, const uint64_t* __restrict__ index, uint64_t n,
                              T* __restrict__ out) {
    const uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
    if (i < n) out[i] = data[index[i]];
}

template <class T>
__global__ void gather_double_kernel(const T* __restrict__ data, const uint64_t* __restrict__ index, uint64_t n,
                                     double* __restrict__ out) {
    const uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
    if (i < n) out[i] = static_cast<double>(data[index[i]]);
}

// Position of `key` in the increasing array, or false.
__device__ bool find_index(const uint64_t* __restrict__ index, uint64_t n, uint64_t key, uint64_t& pos) {
    uint64_t lo = 0, hi = n;
    while (lo < hi) {
        const uint64_t mid = lo + (hi - lo) / 2;
        if (index[mid] < key) lo = mid + 1;
        else hi = mid;
    }
    pos = lo;
    return lo < n && index[lo] == key;
}

template <class T>
__global__ void interp_decode_kernel(const uint16_t* __restrict__ codes, const T* __restrict__ anchors,
                                     const uint64_t* __restrict__ outlier_index,
                                     const T* __restrict__ outlier_value, uint64_t num_outliers, InterpLayout L,
                                     KernelConfig cfg, int64_t radius, T* __restrict__ out,
                                     uint32_t* __restrict__ corrupt) {
    extern __shared__ unsigned char smem_raw[];
    T* ws = reinterpret_cast<T*>(smem_raw);
    uint16_t* tile_codes = reinterpret_cast<uint16_t*>(ws + L.ws_size());
    const auto box = L.tile_box(blockIdx.x);
    const InterpOrder order{{cfg.order[0], cfg.order[1], cfg.order[2]}};

    for_each_ws_point(L, [&](uint32_t i, uint32_t x, uint32_t y, uint32_t z) {
        const uint32_t c[3] = {x, y, z};
        if (!inside(box, c)) return;
        tile_codes[i] = codes[L.global_index(box.origin, c)];
        if (L.is_anchor(c)) {
            ws[i] = anchors[L.anchor_index(box.origin, c)];
            if (tile_codes[i] != radius) atomicOr(corrupt, 1u);   // encoders write `radius` there
        }
    });
    __syncthreads();
    for (uint32_t l = L.num_levels; l-- > 0;) {
        const uint32_t u = 1u << l;
        const InterpLevelQuant lq = cfg.level[l];
        for (uint32_t k = 0; k < L.rank; ++k) {
            const InterpStage s = interp_stage(L, order, k, u, box.last);
            const uint32_t spline = cfg.spline[s.dim];
            for (uint32_t i = threadIdx.x; i < s.total; i += blockDim.x) {
                uint32_t w, along;
                s.locate(i, w, along);
                const uint16_t code = tile_codes[w];
                if (code != 0) {
                    const double pred = interp_point_prediction(ws, s, w, along, u, spline);
                    ws[w] = interp_reconstruct<T>(code, pred, lq, radius);
                } else {
                    uint32_t c[3];
                    s.point(i, c);
                    uint64_t pos;
                    if (find_index(outlier_index, num_outliers, L.global_index(box.origin, c), pos)) {
                        ws[w] = outlier_value[pos];
                    } else {
                        atomicOr(corrupt, 1u);
                        ws[w] = T(0);
                    }
                }
            }
            __syncthreads();
        }
    }
    for (uint32_t i = threadIdx.x; i < L.tile_points(); i += blockDim.x) {
        uint32_t c[3];
        tile_coords(L, i, c);
        if (inside(box, c)) out[L.global_index(box.origin, c)] = ws[interp_ws_offset(L, c)];
    }
}

struct IsZeroCode {
    __host__ __device__ uint64_t operator()(uint16_t code) const { return code == 0; }
};

// With the decoder's check that every zero code finds its entry (entries
// strictly increasing) and anchors carry `radius`, equal counts mean the zero
// codes are exactly the listed outliers, as the CPU decoder requires.
__global__ void check_outlier_count_kernel(const uint64_t* zeros, uint64_t expected, uint32_t* corrupt) {
    if (*zeros != expected) atomicOr(corrupt, 1u);
}

template <class T>
size_t smem_bytes(const InterpLayout& L) {
    return L.ws_size() * (sizeof(T) + sizeof(uint16_t)) + 16;
}

void check_grid(const InterpLayout& L) {
    GSZ_CHECK(L.num_tiles <= 0x7fffffffu, GSZ_STATUS_LIMIT_EXCEEDED, "interp: %llu tiles exceed one CUDA grid",
              static_cast<unsigned long long>(L.num_tiles));
}

}  // namespace

template <class T>
std::vector<double> interp_gather_cuda(const T* d_data, const std::vector<uint64_t>& indices, cudaStream_t stream) {
    const uint64_t n = indices.size();
    std::vector<double> values;
    if (n == 0) return values;
    cuda::DeviceBuffer<uint64_t> d_index(n, stream);
    cuda::DeviceBuffer<double> d_values(n, stream);
    GSZ_CUDA(cudaMemcpyAsync(d_index.data(), indices.data(), n * sizeof(uint64_t), cudaMemcpyHostToDevice, stream));
    gather_double_kernel<T><<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream>>>(d_data, d_index.data(), n,
                                                                                       d_values.data());
    GSZ_CUDA_LAUNCHED("gather_double_kernel");
    cuda::copy_to_host(values, d_values.data(), n, stream);
    return values;
}

template <class T>
void interp_encode_cuda(const T* d_data, const InterpLayout& L, const InterpConfig& config, double eb,
                        uint32_t radius, InterpDeviceEncoded<T>& out, cudaStream_t stream) {
    check_grid(L);
    const uint64_t n = L.num_elements;
    const KernelConfig cfg = kernel_config(L, config);
    out.codes.allocate(n, stream);
    interp_encode_kernel<T><<<static_cast<unsigned>(L.num_tiles), threads_for(L), smem_bytes<T>(L), stream>>>(
        d_data, L, cfg, eb, radius, out.codes.data());
    GSZ_CUDA_LAUNCHED("interp_encode_kernel");

    out.anchors.allocate(L.num_anchors, stream);
    interp_anchor_gather_kernel<T><<<static_cast<unsigned>((L.num_anchors + 255) / 256), 256, 0, stream>>>(
        d_data, L, out.anchors.data());
    GSZ_CUDA_LAUNCHED("interp_anchor_gather_kernel");

    // Outliers in raster order: select the indices of the zero codes.
    out.outlier_index.allocate(n, stream);
    out.count.allocate(1, stream);
    const thrust::counting_iterator<uint64_t> first(0);
    const IsOutlier pred{out.codes.data()};
    size_t temp_bytes = 0;
    GSZ_CUDA(cub::DeviceSelect::If(nullptr, temp_bytes, first, out.outlier_index.data(), out.count.data(),
                                   static_cast<int64_t>(n), pred, stream));
    out.temp.allocate(temp_bytes, stream);
    GSZ_CUDA(cub::DeviceSelect::If(out.temp.data(), temp_bytes, first, out.outlier_index.data(), out.count.data(),
                                   static_cast<int64_t>(n), pred, stream));
    std::vector<uint64_t> count;
    cuda::copy_to_host(count, out.count.data(), 1, stream);
    out.num_outliers = count[0];
    out.outlier_value.allocate(out.num_outliers, stream);
    if (out.num_outliers) {
        gather_kernel<T><<<static_cast<unsigned>((out.num_outliers + 255) / 256), 256, 0, stream>>>(
            d_data, out.outlier_index.data(), out.num_outliers, out.outlier_value.data());
        GSZ_CUDA_LAUNCHED("gather_kernel");
    }
}

template <class T>
void interp_decode_cuda(const uint16_t* d_codes, const T* d_anchors, const uint64_t* d_outlier_index,
                        const T* d_outlier_value, uint64_t num_outliers, const InterpLayout& L,
                        const InterpConfig& config, uint32_t radius, T* d_out, uint32_t* d_corrupt,
                        cudaStream_t stream) {
    check_grid(L);
    const KernelConfig cfg = kernel_config(L, config);
    {
        cuda::DeviceBuffer<uint64_t> zeros(1, stream);
        const auto is_zero = thrust::make_transform_iterator(d_codes, IsZeroCode{});
        size_t temp_bytes = 0;
        GSZ_CUDA(cub::DeviceReduce::Sum(nullptr, temp_bytes, is_zero, zeros.data(),
                                        static_cast<int64_t>(L.num_elements), stream));
        cuda::DeviceBuffer<uint8_t> temp(temp_bytes, stream);
        GSZ_CUDA(cub::DeviceReduce::Sum(temp.data(), temp_bytes, is_zero, zeros.data(),
                                        static_cast<int64_t>(L.num_elements), stream));
        check_outlier_count_kernel<<<1, 1, 0, stream>>>(zeros.data(), num_outliers, d_corrupt);
        GSZ_CUDA_LAUNCHED("check_outlier_count_kernel");
    }
    interp_decode_kernel<T><<<static_cast<unsigned>(L.num_tiles), threads_for(L), smem_bytes<T>(L), stream>>>(
        d_codes, d_anchors, d_outlier_index, d_outlier_value, num_outliers, L, cfg, radius, d_out, d_corrupt);
    GSZ_CUDA_LAUNCHED("interp_decode_kernel");
}

template std::vector<double> interp_gather_cuda<float>(const float*, const std::vector<uint64_t>&, cudaStream_t);
template std::vector<double> interp_gather_cuda<double>(const double*, const std::vector<uint64_t>&, cudaStream_t);
template void interp_encode_cuda<float>(const float*, const InterpLayout&, const InterpConfig&, double, uint32_t,
                                        InterpDeviceEncoded<float>&, cudaStream_t);
template void interp_encode_cuda<double>(const double*, const InterpLayout&, const InterpConfig&, double, uint32_t,
                                         InterpDeviceEncoded<double>&, cudaStream_t);
template void interp_decode_cuda<float>(const uint16_t*, const float*, const uint64_t*, const float*, uint64_t,
                                        const InterpLayout&, const InterpConfig&, uint32_t, float*, uint32_t*,
                                        cudaStream_t);
template void interp_decode_cuda<double>(const uint16_t*, const double*, const uint64_t*, const double*, uint64_t,
                                         const InterpLayout&, const InterpConfig&, uint32_t, double*, uint32_t*,
                                         cudaStream_t);

}  // namespace gsz::predict
