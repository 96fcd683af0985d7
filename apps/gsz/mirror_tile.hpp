// Mirror tiling for `gsz bench --tile`: a larger field built from a smaller
// one without seams.  Copy k along an axis is flipped along that axis when k
// is odd, so neighbours across every copy boundary are equal values of the
// original (a field of dims X x Y tiled 2x4 becomes 2X x 4Y).  Dims and tile
// factors are listed fastest-varying first, as everywhere in gsz.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

namespace gsz::cli {

// The dims of the tiled field: dims[d] * tiles[d].
inline std::vector<uint64_t> mirror_tiled_dims(std::span<const uint64_t> dims, std::span<const uint64_t> tiles) {
    if (dims.empty() || dims.size() > 4 || tiles.size() != dims.size())
        throw std::invalid_argument("mirror_tile: give 1 to 4 dims and one tile factor per dim");
    std::vector<uint64_t> out(dims.size());
    for (size_t d = 0; d < dims.size(); ++d) {
        if (dims[d] == 0 || tiles[d] == 0) throw std::invalid_argument("mirror_tile: dims and factors must be >= 1");
        out[d] = dims[d] * tiles[d];
    }
    return out;
}

// Coordinate in the original of output coordinate `o` along an axis of n points.
inline uint64_t mirror_coordinate(uint64_t o, uint64_t n) {
    const uint64_t r = o % n;
    return (o / n) % 2 ? n - 1 - r : r;
}

// Writes the tiled field (product of mirror_tiled_dims values) to dst.
template <class T>
void mirror_tile(const T* src, std::span<const uint64_t> dims, std::span<const uint64_t> tiles, T* dst) {
    const std::vector<uint64_t> out_dims = mirror_tiled_dims(dims, tiles);
    uint64_t n[4] = {1, 1, 1, 1}, m[4] = {1, 1, 1, 1};   // source and output dims, padded to rank 4
    std::copy(dims.begin(), dims.end(), n);
    std::copy(out_dims.begin(), out_dims.end(), m);

    // One output row (fastest axis) at a time: tiles[0] copies of one source
    // row, alternately forward and reversed.
    for (uint64_t o3 = 0; o3 < m[3]; ++o3) {
        const uint64_t s3 = mirror_coordinate(o3, n[3]);
        for (uint64_t o2 = 0; o2 < m[2]; ++o2) {
            const uint64_t s2 = mirror_coordinate(o2, n[2]);
            for (uint64_t o1 = 0; o1 < m[1]; ++o1) {
                const uint64_t s1 = mirror_coordinate(o1, n[1]);
                const T* row = src + ((s3 * n[2] + s2) * n[1] + s1) * n[0];
                T* out = dst + ((o3 * m[2] + o2) * m[1] + o1) * m[0];
                for (uint64_t k = 0; k < m[0] / n[0]; ++k, out += n[0]) {
                    if (k % 2) std::reverse_copy(row, row + n[0], out);
                    else std::copy(row, row + n[0], out);
                }
            }
        }
    }
}

template <class T>
std::vector<T> mirror_tile(std::span<const T> src, std::span<const uint64_t> dims, std::span<const uint64_t> tiles) {
    uint64_t count = 1, out_count = 1;
    for (uint64_t d : dims) count *= d;
    for (uint64_t d : mirror_tiled_dims(dims, tiles)) out_count *= d;
    if (src.size() != count) throw std::invalid_argument("mirror_tile: source size does not match the dims");
    std::vector<T> out(out_count);
    mirror_tile(src.data(), dims, tiles, out.data());
    return out;
}

}  // namespace gsz::cli
