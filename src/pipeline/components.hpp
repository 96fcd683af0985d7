// Component dims: a small dim whose entries are separate quantities (the x,
// y, z of N particles stored as N x 3, the channels of a vector field).
// Lorenzo and interp predict along every dim, so across such a dim they
// predict one quantity from another: the N x 3 halo particles compress 36x
// (lorenzo) and 12x (interp) at rel 1e-2 as N x 3, 66x and 29x as three
// arrays of N.  When a sample says the components are better predicted
// apart, the pipelines run on a view of the array with that dim moved to the
// slowest position and merged into the slowest of the others:
//
//   array [outer][C][inner] (dim k of extent C, `inner` = the faster dims'
//   product, `outer` = the slower dims')  ->  view [C][outer][inner],
//   dims {d_0, ..., d_(k-1), d_(k+1), ..., d_(r-1) * C}, rank r - 1.
//
// The archive header keeps the array's own dims and names k (header flag
// 0x1, docs/FORMAT.md); a decoder rebuilds the view, decodes it and moves
// the components back.  Both backends decide from the same sample with the
// same sums, so they write the same archive.
#pragma once

#include "format/archive.hpp"

#include <gsz/gsz.h>

#include <cstdint>
#include <span>
#include <vector>

namespace gsz::pipeline {

// The array as the permutation sees it: [outer][count][inner].
struct ComponentSplit {
    uint64_t inner = 1, count = 1, outer = 1;
    uint64_t elements() const { return inner * count * outer; }
};

ComponentSplit component_split(uint32_t rank, const uint64_t* dims, uint32_t k);

// The view's rank and dims (fastest first, entries >= rank set to 1).
void component_view_dims(uint32_t rank, const uint64_t* dims, uint32_t k, uint32_t& view_rank, uint64_t* view_dims);

// The dims a component choice may name, for a pipeline that runs on views
// (the lossy ones: lorenzo, interp, fast), in increasing order: extent 2..kMaxComponentExtent,
// and the slowest other dim of extent > 1 at least kComponentMinRun long (the
// view's slowest dim holds the components one after another: sz_testfloat's
// 8 variables over 8 copies lost a third of interp's ratio to tiles that
// straddle two variables).
inline constexpr uint64_t kComponentMinRun = 128;
std::vector<uint32_t> component_candidates(uint32_t rank, const uint64_t* dims, gsz_pipeline pipeline);

// The sample that decides, for candidate k: per point four raster indices,
// v(c, m), v(c, m-1), v(c-1, m), v(c-1, m-1), with c the point's component
// (>= 1) and m its coordinate along the fastest other dim of extent > 1
// (>= 1).  Up to kComponentSamples points spread evenly over the array.
inline constexpr uint64_t kComponentSamples = 1024;
std::vector<uint64_t> component_sample_indices(uint32_t rank, const uint64_t* dims, uint32_t k);

// From the sampled values (in the order of the indices): whether predicting
// each component from its own neighbour, |v(c,m) - v(c,m-1)|, beats the
// cross-component (Lorenzo) step, |v(c,m) - v(c,m-1) - v(c-1,m) + v(c-1,m-1)|,
// summed in double over the points whose terms are finite, and by how much
// (cross / own; 0 when it does not).
double component_gain(std::span<const double> values);

// The choice for an array: the candidate with the largest gain > 1, or -1.
// `gather(indices)` returns the values at those raster indices as doubles
// (a backend reads them where the data lies).
template <class Gather>
int32_t choose_component_dim(uint32_t rank, const uint64_t* dims, gsz_pipeline pipeline, Gather&& gather) {
    int32_t best = -1;
    double best_gain = 1.0;
    for (const uint32_t k : component_candidates(rank, dims, pipeline)) {
        const std::vector<double> values = gather(component_sample_indices(rank, dims, k));
        const double gain = component_gain(values);
        if (gain > best_gain) best = static_cast<int32_t>(k), best_gain = gain;
    }
    return best;
}

// The params a pipeline runs on for the view (dims and rank replaced).
gsz_params component_view_params(const gsz_params& params, uint32_t k);

// The view of an archive whose header names a component dim: the header a
// pipeline wrote for the view (view dims, no component dim), same sections.
format::Archive component_view_archive(const format::Archive& archive);

// An archive a pipeline wrote for the view, rewritten with the array's header
// (its dims and component dim k); sections unchanged.
std::vector<uint8_t> component_archive(std::span<const uint8_t> view_archive, uint32_t rank, const uint64_t* dims,
                                       uint32_t k);

// [outer][count][inner] -> [count][outer][inner] and back (host memory).
void components_apart_cpu(const void* in, void* out, const ComponentSplit& s, size_t element_bytes, int num_threads);
void components_together_cpu(const void* in, void* out, const ComponentSplit& s, size_t element_bytes,
                             int num_threads);

}  // namespace gsz::pipeline
