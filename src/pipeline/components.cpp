// Component dims: the choice, the view and the permutation (components.hpp).
#include "pipeline/components.hpp"

#include "runtime/parallel.hpp"
#include "runtime/status.hpp"

#include <cmath>
#include <cstring>

namespace gsz::pipeline {

ComponentSplit component_split(uint32_t rank, const uint64_t* dims, uint32_t k) {
    ComponentSplit s;
    for (uint32_t d = 0; d < rank; ++d) {
        if (d < k) s.inner *= dims[d];
        if (d > k) s.outer *= dims[d];
    }
    s.count = dims[k];
    return s;
}

void component_view_dims(uint32_t rank, const uint64_t* dims, uint32_t k, uint32_t& view_rank, uint64_t* view_dims) {
    // The other dims of extent > 1 in order, the components merged into the
    // slowest of them (the size-1 dims between change no raster index).
    view_rank = 0;
    for (uint32_t d = 0; d < GSZ_MAX_RANK; ++d) view_dims[d] = 1;
    for (uint32_t d = 0; d < rank; ++d)
        if (d != k && dims[d] > 1) view_dims[view_rank++] = dims[d];
    GSZ_CHECK(view_rank >= 1, GSZ_STATUS_INTERNAL, "component dim %u is the only dim of extent > 1", k);
    view_dims[view_rank - 1] *= dims[k];
}

std::vector<uint32_t> component_candidates(uint32_t rank, const uint64_t* dims, gsz_pipeline pipeline) {
    std::vector<uint32_t> out;
    if (pipeline != GSZ_PIPELINE_LORENZO && pipeline != GSZ_PIPELINE_INTERP && pipeline != GSZ_PIPELINE_FAST) return out;
    for (uint32_t k = 0; k < rank; ++k) {
        if (dims[k] < 2 || dims[k] > format::kMaxComponentExtent) continue;
        // The components land one after another along the slowest other dim
        // of extent > 1: it must be long enough that the few predictions (or
        // interp tiles) across their boundaries cost little.
        uint64_t slowest = 0;
        for (uint32_t d = 0; d < rank; ++d)
            if (d != k && dims[d] > 1) slowest = dims[d];
        if (slowest >= kComponentMinRun) out.push_back(k);
    }
    return out;
}

std::vector<uint64_t> component_sample_indices(uint32_t rank, const uint64_t* dims, uint32_t k) {
    uint64_t stride[GSZ_MAX_RANK], n = 1;
    for (uint32_t d = 0; d < rank; ++d) stride[d] = n, n *= dims[d];
    uint32_t m = rank;
    for (uint32_t d = 0; d < rank && m == rank; ++d)
        if (d != k && dims[d] > 1) m = d;
    GSZ_CHECK(m < rank, GSZ_STATUS_INTERNAL, "component dim %u has no neighbour dim", k);
    const uint64_t points = n < kComponentSamples ? n : kComponentSamples;
    std::vector<uint64_t> idx;
    idx.reserve(4 * points);
    for (uint64_t s = 0; s < points; ++s) {
        // Evenly spread raster positions, then the point's component and its
        // coordinate along m moved off 0 so that both predecessors exist.
        const uint64_t at = points > 1 ? static_cast<uint64_t>(static_cast<unsigned __int128>(s) * (n - 1) /
                                                               (points - 1))
                                       : 0;
        uint64_t i = 0;
        for (uint32_t d = 0; d < rank; ++d) {
            uint64_t c = at / stride[d] % dims[d];
            if ((d == k || d == m) && c == 0) c = 1;
            i += c * stride[d];
        }
        idx.push_back(i);
        idx.push_back(i - stride[m]);
        idx.push_back(i - stride[k]);
        idx.push_back(i - stride[k] - stride[m]);
    }
    return idx;
}

double component_gain(std::span<const double> v) {
    double own = 0, cross = 0;
    for (size_t p = 0; p + 4 <= v.size(); p += 4) {
        const double step = v[p] - v[p + 1], across = step - (v[p + 2] - v[p + 3]);
        if (!std::isfinite(step) || !std::isfinite(across)) continue;   // NaN, Inf, or a fill's overflow
        own += std::fabs(step);
        cross += std::fabs(across);
    }
    if (!(cross > own)) return 0;
    return own > 0 ? cross / own : HUGE_VAL;
}

gsz_params component_view_params(const gsz_params& params, uint32_t k) {
    gsz_params v = params;
    uint64_t dims[GSZ_MAX_RANK];
    component_view_dims(params.rank, params.dims, k, v.rank, dims);
    for (uint32_t d = 0; d < GSZ_MAX_RANK; ++d) v.dims[d] = dims[d];
    return v;
}

format::Archive component_view_archive(const format::Archive& archive) {
    format::Archive v = archive;
    format::Header& h = v.header;
    GSZ_CHECK(h.component_dim >= 0, GSZ_STATUS_INTERNAL, "component_view_archive: the archive has no component dim");
    uint64_t dims[GSZ_MAX_RANK];
    component_view_dims(h.rank, h.dims, static_cast<uint32_t>(h.component_dim), h.rank, dims);
    for (uint32_t d = 0; d < GSZ_MAX_RANK; ++d) h.dims[d] = dims[d];
    h.component_dim = -1;
    return v;
}

std::vector<uint8_t> component_archive(std::span<const uint8_t> view_archive, uint32_t rank, const uint64_t* dims,
                                       uint32_t k) {
    const format::Archive view = format::archive_parse(view_archive);
    format::Header h = view.header;
    h.rank = rank;
    for (uint32_t d = 0; d < GSZ_MAX_RANK; ++d) h.dims[d] = d < rank ? dims[d] : 1;
    h.component_dim = static_cast<int32_t>(k);
    std::vector<format::SectionData> sections;
    sections.reserve(view.sections.size());
    for (const format::Section& s : view.sections) sections.push_back({s.kind, s.bytes});
    return format::archive_write(h, sections);
}

namespace {

// out[(c·outer + o)·inner + j] = in[(o·count + c)·inner + j] (apart), or the
// reverse (together); E an unsigned type of the element's size.
template <class E, bool Apart>
void move_components(const E* in, E* out, const ComponentSplit& s, int num_threads) {
    const auto outer = static_cast<int64_t>(s.outer);
#pragma omp parallel for num_threads(num_threads) schedule(static) if (num_threads > 1 && s.elements() > (1u << 16))
    for (int64_t o = 0; o < outer; ++o) {
        for (uint64_t c = 0; c < s.count; ++c) {
            const uint64_t grouped = (static_cast<uint64_t>(o) * s.count + c) * s.inner;
            const uint64_t apart = (c * s.outer + static_cast<uint64_t>(o)) * s.inner;
            const E* src = in + (Apart ? grouped : apart);
            E* dst = out + (Apart ? apart : grouped);
            if (s.inner == 1)
                *dst = *src;
            else
                std::memcpy(dst, src, s.inner * sizeof(E));
        }
    }
}

template <bool Apart>
void move_components_bytes(const void* in, void* out, const ComponentSplit& s, size_t element_bytes, int num_threads) {
    num_threads = resolve_threads(num_threads);
    if (element_bytes == 8)
        move_components<uint64_t, Apart>(static_cast<const uint64_t*>(in), static_cast<uint64_t*>(out), s,
                                         num_threads);
    else
        move_components<uint32_t, Apart>(static_cast<const uint32_t*>(in), static_cast<uint32_t*>(out), s,
                                         num_threads);
}

}  // namespace

void components_apart_cpu(const void* in, void* out, const ComponentSplit& s, size_t element_bytes, int num_threads) {
    move_components_bytes<true>(in, out, s, element_bytes, num_threads);
}

void components_together_cpu(const void* in, void* out, const ComponentSplit& s, size_t element_bytes,
                             int num_threads) {
    move_components_bytes<false>(in, out, s, element_bytes, num_threads);
}

}  // namespace gsz::pipeline
