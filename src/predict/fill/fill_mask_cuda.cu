// The fill mask on the device (fill_mask_cuda.hpp).
#include "predict/fill/fill_mask_cuda.hpp"

#include "runtime/cuda/cuda_check.hpp"
#include "runtime/cuda/device_buffer.hpp"
#include "runtime/status.hpp"

#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>

namespace gsz::predict {

namespace {

constexpr unsigned kThreads = 256;

unsigned grid_for(uint64_t n) {
    return static_cast<unsigned>(std::max<uint64_t>(1, std::min<uint64_t>((n + kThreads - 1) / kThreads, 1u << 16)));
}

struct Dims {
    uint64_t x, y, z;
};

template <class T>
struct MaskOf {
    const T* data;
    Dims d;
    FillValue fill;
    __device__ bool operator()(uint64_t x, uint64_t y, uint64_t z) const {
        return fill_holds(fill, data[(z * d.y + y) * d.x + x]);
    }
};

// Whether point i is a one of the mask's residual (fill_residual_at).
template <class T>
struct IsResidualOne {
    MaskOf<T> m;
    __device__ bool operator()(uint64_t i) const {
        const uint64_t x = i % m.d.x, r = i / m.d.x;
        return fill_residual_at(m, x, r % m.d.y, r / m.d.y);
    }
};

template <class T>
__global__ void substitute_kernel(const T* __restrict__ data, uint64_t n, FillValue fill, T* __restrict__ out) {
    for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < n; i += uint64_t{gridDim.x} * blockDim.x)
        out[i] = fill_stand_in(fill, data[i]);
}

// counts[0] += fill points, counts[1] += residual ones (integer sums: any order).
template <class T>
__global__ void mask_count_kernel(IsResidualOne<T> one, uint64_t n, unsigned long long* __restrict__ counts) {
    unsigned long long points = 0, ones = 0;
    for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < n; i += uint64_t{gridDim.x} * blockDim.x) {
        points += fill_holds(one.m.fill, one.m.data[i]);
        ones += one(i);
    }
    for (int s = 16; s > 0; s /= 2) {
        points += __shfl_down_sync(~0u, points, s);
        ones += __shfl_down_sync(~0u, ones, s);
    }
    if (threadIdx.x % 32 == 0) {
        if (points) atomicAdd(counts, points);
        if (ones) atomicAdd(counts + 1, ones);
    }
}

__global__ void scatter_kernel(const uint64_t* __restrict__ pos, uint64_t count, uint8_t* __restrict__ m) {
    for (uint64_t k = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; k < count;
         k += uint64_t{gridDim.x} * blockDim.x)
        m[pos[k]] = 1;
}

// The residual's inverse, one XOR prefix per line: along x (a thread a row),
// y (a thread a column of a plane) and z (a thread a point of a plane).
__global__ void prefix_x_kernel(uint8_t* m, Dims d) {
    for (uint64_t r = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; r < d.y * d.z;
         r += uint64_t{gridDim.x} * blockDim.x) {
        uint8_t* row = m + r * d.x;
        uint8_t acc = 0;
        for (uint64_t x = 0; x < d.x; ++x) row[x] = acc ^= row[x];
    }
}

__global__ void prefix_y_kernel(uint8_t* m, Dims d) {
    for (uint64_t c = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; c < d.x * d.z;
         c += uint64_t{gridDim.x} * blockDim.x) {
        uint8_t* col = m + (c / d.x) * d.x * d.y + c % d.x;
        uint8_t acc = 0;
        for (uint64_t y = 0; y < d.y; ++y) col[y * d.x] = acc ^= col[y * d.x];
    }
}

__global__ void prefix_z_kernel(uint8_t* m, Dims d) {
    const uint64_t plane = d.x * d.y;
    for (uint64_t p = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; p < plane;
         p += uint64_t{gridDim.x} * blockDim.x) {
        uint8_t acc = 0;
        for (uint64_t z = 0; z < d.z; ++z) m[z * plane + p] = acc ^= m[z * plane + p];
    }
}

template <class T>
__global__ void apply_kernel(const uint8_t* __restrict__ m, uint64_t n, T value, T* __restrict__ out,
                             unsigned long long* __restrict__ points) {
    unsigned long long count = 0;
    for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < n; i += uint64_t{gridDim.x} * blockDim.x)
        if (m[i]) {
            out[i] = value;
            ++count;
        }
    for (int s = 16; s > 0; s /= 2) count += __shfl_down_sync(~0u, count, s);
    if (threadIdx.x % 32 == 0 && count) atomicAdd(points, count);
}

}  // namespace

template <class T>
void fill_substitute_cuda(const T* d_data, uint64_t n, const FillValue& fill, T* d_out, cudaStream_t stream) {
    substitute_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(d_data, n, fill, d_out);
    GSZ_CUDA_LAUNCHED("fill substitute_kernel");
}

template <class T>
FillMask fill_mask_encode_cuda(const T* d_data, const uint64_t* dims, const FillValue& fill, cudaStream_t stream) {
    FillMask mask;
    if (!fill.on) return mask;
    const Dims d{dims[0], dims[1], dims[2]};
    const uint64_t n = d.x * d.y * d.z;
    const IsResidualOne<T> one{MaskOf<T>{d_data, d, fill}};
    // Counted first, so the positions' buffer is the ones', not the array's.
    cuda::DeviceBuffer<unsigned long long> counts(2, stream);
    counts.zero(stream);
    mask_count_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(one, n, counts.data());
    GSZ_CUDA_LAUNCHED("fill mask_count_kernel");
    std::vector<unsigned long long> c;
    cuda::copy_to_host(c, counts.data(), 2, stream);
    mask.points = c[0];
    if (c[1] == 0) return mask;
    cuda::DeviceBuffer<uint64_t> pos(c[1], stream), selected(1, stream);
    const thrust::counting_iterator<uint64_t> first(0);
    size_t temp_bytes = 0;
    GSZ_CUDA(cub::DeviceSelect::If(nullptr, temp_bytes, first, pos.data(), selected.data(), static_cast<int64_t>(n),
                                   one, stream));
    cuda::DeviceBuffer<uint8_t> temp(temp_bytes, stream);
    GSZ_CUDA(cub::DeviceSelect::If(temp.data(), temp_bytes, first, pos.data(), selected.data(),
                                   static_cast<int64_t>(n), one, stream));
    std::vector<uint64_t> count;
    cuda::copy_to_host(count, selected.data(), 1, stream);
    GSZ_CHECK(count[0] == c[1], GSZ_STATUS_INTERNAL, "fill mask: %llu residual ones counted, %llu selected", c[1],
              static_cast<unsigned long long>(count[0]));
    cuda::copy_to_host(mask.residual, pos.data(), c[1], stream);
    return mask;
}

template <class T>
void fill_mask_apply_cuda(const FillMask& mask, const uint64_t* dims, const FillValue& fill, T* d_out,
                          cudaStream_t stream) {
    const Dims d{dims[0], dims[1], dims[2]};
    const uint64_t n = d.x * d.y * d.z;
    cuda::DeviceBuffer<uint8_t> m(n, stream);
    m.zero(stream);
    if (!mask.residual.empty()) {
        cuda::DeviceBuffer<uint64_t> pos(mask.residual.size(), stream);
        GSZ_CUDA(cudaMemcpyAsync(pos.data(), mask.residual.data(), mask.residual.size() * sizeof(uint64_t),
                                 cudaMemcpyHostToDevice, stream));
        scatter_kernel<<<grid_for(mask.residual.size()), kThreads, 0, stream>>>(pos.data(), mask.residual.size(),
                                                                                 m.data());
        GSZ_CUDA_LAUNCHED("fill scatter_kernel");
        GSZ_CUDA(cudaStreamSynchronize(stream));   // pos is freed on leaving the scope
    }
    prefix_x_kernel<<<grid_for(d.y * d.z), kThreads, 0, stream>>>(m.data(), d);
    prefix_y_kernel<<<grid_for(d.x * d.z), kThreads, 0, stream>>>(m.data(), d);
    prefix_z_kernel<<<grid_for(d.x * d.y), kThreads, 0, stream>>>(m.data(), d);
    GSZ_CUDA_LAUNCHED("fill prefix kernels");
    cuda::DeviceBuffer<unsigned long long> points(1, stream);
    points.zero(stream);
    apply_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(m.data(), n, fill_value_as<T>(fill), d_out, points.data());
    GSZ_CUDA_LAUNCHED("fill apply_kernel");
    std::vector<unsigned long long> got;
    cuda::copy_to_host(got, points.data(), 1, stream);
    GSZ_CHECK(got[0] == mask.points, GSZ_STATUS_CORRUPT, "fill_mask: the residual gives %llu fill points, not %llu",
              got[0], static_cast<unsigned long long>(mask.points));
}

template void fill_substitute_cuda<float>(const float*, uint64_t, const FillValue&, float*, cudaStream_t);
template void fill_substitute_cuda<double>(const double*, uint64_t, const FillValue&, double*, cudaStream_t);
template FillMask fill_mask_encode_cuda<float>(const float*, const uint64_t*, const FillValue&, cudaStream_t);
template FillMask fill_mask_encode_cuda<double>(const double*, const uint64_t*, const FillValue&, cudaStream_t);
template void fill_mask_apply_cuda<float>(const FillMask&, const uint64_t*, const FillValue&, float*, cudaStream_t);
template void fill_mask_apply_cuda<double>(const FillMask&, const uint64_t*, const FillValue&, double*,
                                           cudaStream_t);

}  // namespace gsz::predict
