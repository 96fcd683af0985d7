// Lorenzo predictor with dual quantization: chunk geometry and the CPU backend.
// The array is cut into independent chunks (zero outside each chunk), which is
// what makes both the CPU (OpenMP over chunks) and the GPU (a block per chunk)
// parallel.  Quant-codes and outliers are laid out in "stream order": chunks in
// raster order of the chunk grid, points in raster order inside each chunk.
#pragma once

#include "predict/lorenzo/lorenzo_math.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace gsz::predict {

// The most points a chunk may hold (format rule): a GPU block of 256 threads
// handles a chunk with 8 points per thread.
inline constexpr uint32_t kLorenzoMaxChunkPoints = 2048;

struct LorenzoLayout {
    uint32_t rank = 1;                 // 1..3, after squeezing size-1 dims and merging 4-D to 3-D
    uint64_t dims[3] = {1, 1, 1};      // fastest first
    uint32_t chunk[3] = {1, 1, 1};     // chunk extents, fastest first
    uint64_t grid[3] = {1, 1, 1};      // chunks along each dim
    uint64_t num_chunks = 1;
    uint64_t num_elements = 1;

    struct ChunkBox {
        uint64_t origin[3];   // first point of the chunk
        uint32_t extent[3];   // in-array extent (shorter at the far edges)
        uint64_t stream_offset;
        GSZ_HD uint64_t size() const { return uint64_t{extent[0]} * extent[1] * extent[2]; }
    };

    GSZ_HD ChunkBox chunk_box(uint64_t chunk_id) const {
        const uint64_t c[3] = {chunk_id % grid[0], (chunk_id / grid[0]) % grid[1], chunk_id / (grid[0] * grid[1])};
        return chunk_box_at(c);
    }
    // The box of the chunk at grid coordinates c (callers that can divide
    // more cheaply than in 64 bits compute c themselves).
    GSZ_HD ChunkBox chunk_box_at(const uint64_t (&c)[3]) const {
        ChunkBox box{};
        for (int d = 0; d < 3; ++d) {
            box.origin[d] = c[d] * chunk[d];
            const uint64_t left = dims[d] - box.origin[d];
            box.extent[d] = static_cast<uint32_t>(left < chunk[d] ? left : chunk[d]);
        }
        // Chunks before this one: all full z-slabs, then full-height rows of
        // this slab, then the chunks to the left in this row.
        box.stream_offset = box.origin[2] * dims[1] * dims[0] +
                            uint64_t{box.extent[2]} * box.origin[1] * dims[0] +
                            uint64_t{box.extent[2]} * box.extent[1] * box.origin[0];
        return box;
    }
};

// Default geometry for an array (rank 1..4, dims fastest first): size-1 dims
// are dropped, a remaining 4-D shape runs as 3-D with its two slowest dims
// merged, and chunks are 1024 (1-D), 32x32 (2-D) or 32x8x8 (3-D).
LorenzoLayout lorenzo_layout(uint32_t rank, const uint64_t* dims);

// Geometry with explicit chunk extents, as read from an archive.  Throws
// GSZ_STATUS_CORRUPT when the extents are not those a valid archive can hold.
LorenzoLayout lorenzo_layout_from(uint32_t predictor_rank, const uint64_t* predictor_dims,
                                  const uint32_t* chunk, uint64_t num_elements);

template <class T>
struct LorenzoCodes {
    std::vector<uint16_t> codes;   // one per element, stream order
    std::vector<T> outliers;       // exact values where codes == 0, stream order
};

template <class T>
void lorenzo_encode_cpu(const T* data, const LorenzoLayout& layout, const QuantParams& params,
                        LorenzoCodes<T>& out, int num_threads);

// `codes` holds one code per element in stream order; `outliers` the values of
// the zero codes.  Throws GSZ_STATUS_CORRUPT if the zero-code count differs
// from outliers.size().
template <class T>
void lorenzo_decode_cpu(std::span<const uint16_t> codes, std::span<const T> outliers,
                        const LorenzoLayout& layout, const QuantParams& params, T* out,
                        int num_threads);

}  // namespace gsz::predict
