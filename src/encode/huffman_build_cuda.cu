// The Huffman codebook built on the device (huffman_cuda.hpp): huffman_build's
// code lengths, bit for bit, and the encoder's entries.
//
// huffman_build merges the two lightest nodes of two queues (the leaves in
// (weight, symbol) order, then the merged nodes in creation order, whose
// weights never decrease; a leaf first on equal weights) until one is left.
// Here the same merges run a phase at a time.  With t the sum of the two
// lightest nodes, no node merged from now on weighs less than t, so every
// node lighter than t is popped before any of them, in the queues' merged
// order: the phase pairs those nodes in that order, all at once, and an odd
// one out pairs with the next pop (a leaf, an older merged node or the
// phase's first new one), as the serial loop would.  After a phase every node
// weighs at least t, twice the lightest before it, so phases are at most
// log2(total) + 1 (32 for the sub-2^32 totals built here).  Node numbers are
// huffman_build's (leaves 0..n-1 in order, merged nodes n.. in creation
// order), so the tree, the depths and the length limit's result are its own.
//
// The used symbols are put in (weight, symbol) order by a device-wide radix
// sort of one key per symbol (a block radix sort of the used ones inside the
// build block was measured slower: 649 against 361 + 127 us, ncu, wmagT rel
// 1e-4); the rest runs in one block of 1,024 threads: the phases, the depths,
// the limit, and the canonical codes from a shared length table.
#include "encode/huffman_cuda.hpp"
#include "encode/huffman_limit.hpp"

#include "runtime/cuda/cuda_check.hpp"

#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <bit>
#include <vector>

namespace gsz::encode {
namespace {

constexpr int kMaxLen = kHuffmanMaxCodeLength;
constexpr uint32_t kBuildThreads = 1024;
constexpr uint32_t kMaxLeaves = kHuffmanDeviceMaxUsed;
constexpr uint32_t kMaxPhases = 64;       // 33 suffice below 2^32 (see above); more: left to the host
constexpr uint32_t kMaxDepth = 63;        // a tree of weights below 2^32 is at most 46 deep
constexpr uint64_t kUnusedKey = ~uint64_t{0};
constexpr size_t kBuildSmem = kMaxLeaves * (2 * sizeof(uint32_t) + 2 * sizeof(uint16_t) + sizeof(uint8_t));
constexpr uint32_t kWarps = kBuildThreads / 32;
// The length table by symbol (65,536 at most) reuses merged_w once the tree is built.
static_assert(kMaxLeaves * sizeof(uint32_t) >= kHuffmanMaxAlphabet);

// The sort's input: one key per symbol, weight (< 2^32) << 16 | symbol for
// used ones, all ones for unused ones (last).
__global__ void huffman_leaf_keys_kernel(const uint64_t* __restrict__ hist, uint32_t alphabet,
                                         uint64_t* __restrict__ keys, HuffmanBuildResult* result) {
    const uint32_t s = blockIdx.x * blockDim.x + threadIdx.x;
    const uint64_t w = s < alphabet ? hist[s] : 0;
    if (s < alphabet) keys[s] = w != 0 ? (w << 16 | s) : kUnusedKey;
    const int used = __syncthreads_count(w != 0);
    if (threadIdx.x == 0 && used != 0) atomicAdd(&result->num_used, static_cast<uint32_t>(used));
}

// First index in a[lo, hi) whose value is >= v (lower) or > v (upper).
__device__ uint32_t first_not_below(const uint32_t* a, uint32_t lo, uint32_t hi, uint32_t v) {
    while (lo < hi) {
        const uint32_t mid = (lo + hi) / 2;
        if (a[mid] < v) lo = mid + 1; else hi = mid;
    }
    return lo;
}
__device__ uint32_t first_above(const uint32_t* a, uint32_t lo, uint32_t hi, uint32_t v) {
    while (lo < hi) {
        const uint32_t mid = (lo + hi) / 2;
        if (a[mid] <= v) lo = mid + 1; else hi = mid;
    }
    return lo;
}

// One block: the leaves, the tree, the lengths and the canonical entries.
__global__ void __launch_bounds__(kBuildThreads)
    huffman_build_kernel(uint32_t alphabet, const uint64_t* __restrict__ sorted,
                         uint32_t* __restrict__ parent, uint8_t* __restrict__ lengths, uint32_t* __restrict__ entries,
                         HuffmanBuildResult* result) {
    extern __shared__ __align__(16) uint32_t smem[];
    uint32_t* leaf_w = smem;                                               // [kMaxLeaves]
    uint32_t* merged_w = leaf_w + kMaxLeaves;                              // [kMaxLeaves]
    auto* order = reinterpret_cast<uint16_t*>(merged_w + kMaxLeaves);      // a phase's nodes in pop order
    auto* merged_parent = order + kMaxLeaves;                              // [kMaxLeaves] merged index
    auto* merged_depth = reinterpret_cast<uint8_t*>(merged_parent + kMaxLeaves);   // [kMaxLeaves]
    auto* symbol_length = reinterpret_cast<uint8_t*>(merged_w);           // [range], after the tree
    __shared__ uint32_t s_phase_start[kMaxPhases + 1];
    __shared__ uint32_t s_next_leaf, s_next_merged, s_merged, s_phases;
    __shared__ uint32_t s_count[kMaxDepth + 1];          // leaves per depth, then per length
    __shared__ uint32_t s_first_code[kMaxLen + 1];
    __shared__ uint32_t s_warp_count[kWarps][kMaxLen + 1];   // a warp's segment's symbols per length, then its offsets
    __shared__ uint32_t s_max_depth, s_lo, s_hi, s_shortest;
    __shared__ unsigned long long s_bits;

    const uint32_t tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const uint32_t lanes_below = (1u << lane) - 1;
    for (uint32_t d = tid; d <= kMaxDepth; d += kBuildThreads) s_count[d] = 0;
    if (tid == 0) {
        s_next_leaf = s_next_merged = s_merged = s_phases = 0;
        s_max_depth = 0;
        s_lo = alphabet, s_hi = 0, s_shortest = 0;
        s_bits = 0;
    }
    __syncthreads();

    const uint32_t n = result->num_used;   // huffman_leaf_keys_kernel's count
    if (n > kMaxLeaves || n == 0) {   // uniform
        if (tid == 0) result->status = n == 0 ? 2 : 1;
        return;
    }
    {   // the leaves' weights, the used range
        uint32_t lo = alphabet, hi = 0;
        for (uint32_t i = tid; i < n; i += kBuildThreads) {
            const auto sym = static_cast<uint32_t>(sorted[i] & 0xFFFF);
            leaf_w[i] = static_cast<uint32_t>(sorted[i] >> 16);
            lo = min(lo, sym), hi = max(hi, sym);
        }
        lo = __reduce_min_sync(~0u, lo), hi = __reduce_max_sync(~0u, hi);
        if (lane == 0) atomicMin(&s_lo, lo), atomicMax(&s_hi, hi);
    }
    __syncthreads();
    const auto weight = [&](uint32_t node) { return node < n ? leaf_w[node] : merged_w[node - n]; };
    // Leaves' parents in global memory (read once), merged nodes' in shared (the depths' walk).
    const auto set_parent = [&](uint32_t node, uint32_t merged) {
        if (node < n)
            parent[node] = merged;
        else
            merged_parent[node - n] = static_cast<uint16_t>(merged);
    };

    // The merges, a phase at a time (n - 1 of them).  Every thread finds the
    // phase's bounds itself (the same shared reads, broadcast); thread 0
    // moves the queue state after the phase's last reads of it.
    bool failed = false;
    while (s_merged + 1 < n) {
        const uint32_t nl = s_next_leaf, nm = s_next_merged, m = s_merged;
        uint32_t l = nl, q = nm, w[2];
        for (uint32_t& x : w) x = (l < n && (q == m || leaf_w[l] <= merged_w[q])) ? leaf_w[l++] : merged_w[q++];
        const uint32_t t = w[0] + w[1];   // <= the total, < 2^32
        const uint32_t kl = first_not_below(leaf_w, nl, n, t) - nl, km = first_not_below(merged_w, nm, m, t) - nm;
        const uint32_t k = kl + km, pairs = k / 2;
        // The phase's nodes in pop order: a leaf before a merged node of equal weight.
        for (uint32_t i = tid; i < kl; i += kBuildThreads)
            order[i + first_not_below(merged_w, nm, nm + km, leaf_w[nl + i]) - nm] = static_cast<uint16_t>(nl + i);
        for (uint32_t j = tid; j < km; j += kBuildThreads)
            order[j + first_above(leaf_w, nl, nl + kl, merged_w[nm + j]) - nl] = static_cast<uint16_t>(n + nm + j);
        __syncthreads();
        for (uint32_t p = tid; p < pairs; p += kBuildThreads) {
            const uint32_t a = order[2 * p], b = order[2 * p + 1];
            merged_w[m + p] = weight(a) + weight(b);
            set_parent(a, m + p);
            set_parent(b, m + p);
        }
        __syncthreads();
        if (tid == 0) {
            uint32_t ql = nl + kl, qm = nm + km, created = m + pairs;
            if (k % 2 == 1) {   // the odd one out and the next pop
                const uint32_t y = order[k - 1];
                const uint32_t z = (ql < n && (qm == created || leaf_w[ql] <= merged_w[qm])) ? ql++ : n + qm++;
                merged_w[created] = weight(y) + weight(z);
                set_parent(y, created);
                set_parent(z, created);
                ++created;
            }
            s_phase_start[s_phases] = m;
            s_next_leaf = ql, s_next_merged = qm, s_merged = created;
            ++s_phases;
        }
        __syncthreads();
        if (s_phases == kMaxPhases && s_merged + 1 < n) {   // uniform; never for totals below 2^32
            failed = true;
            break;
        }
    }
    if (failed) {
        if (tid == 0) result->status = 1;
        return;
    }

    // Depths top-down, the phases last to first: a merged node's parent was
    // made in a later phase, or is its own phase's last node (the odd pair's).
    if (n > 1) {
        const uint32_t phases = s_phases;
        if (tid == 0) {
            s_phase_start[phases] = n - 1;
            merged_depth[n - 2] = 0;   // the root
        }
        __syncthreads();
        for (uint32_t p = phases; p-- > 0;) {
            const uint32_t lo = s_phase_start[p], last = s_phase_start[p + 1] - 1;
            if (tid == 0 && last != n - 2) merged_depth[last] = merged_depth[merged_parent[last]] + 1;
            __syncthreads();
            for (uint32_t j = lo + tid; j < last; j += kBuildThreads)
                merged_depth[j] = merged_depth[merged_parent[j]] + 1;
            __syncthreads();
        }
    }
    // Leaves: depths counted (a shared atomic per warp and depth), then
    // (limited to kMaxLen if deeper) lengths.  The length table by symbol is
    // cleared meanwhile (merged_w is free).
    const uint32_t range_lo = s_lo, range = s_hi - s_lo + 1;
    for (uint32_t i = tid; i < (range + 3) / 4; i += kBuildThreads) reinterpret_cast<uint32_t*>(symbol_length)[i] = 0;
    for (uint32_t base = 0; base < n; base += kBuildThreads) {
        const uint32_t i = base + tid;
        const uint32_t d = i >= n ? 0 : n == 1 ? 1 : min(merged_depth[parent[i]] + 1u, kMaxDepth);
        if (i < n) order[i] = static_cast<uint16_t>(d);
        const uint32_t peers = __match_any_sync(0xFFFFFFFFu, d);
        if (d != 0 && (peers & lanes_below) == 0) atomicAdd(&s_count[d], __popc(peers));
        const uint32_t deepest = __reduce_max_sync(0xFFFFFFFFu, d);
        if (lane == 0) atomicMax(&s_max_depth, deepest);
    }
    __syncthreads();
    const bool limited = s_max_depth > kMaxLen;
    if (tid == 0 && limited) {
        uint64_t count[kMaxLen + 1] = {};
        for (uint32_t d = 1; d <= kMaxDepth; ++d) count[min(d, uint32_t{kMaxLen})] += s_count[d];
        huffman_limit_counts(count);
        for (int len = 1; len <= kMaxLen; ++len) s_count[len] = static_cast<uint32_t>(count[len]);
    }
    __syncthreads();
    unsigned long long bits = 0;
    for (uint32_t i = tid; i < n; i += kBuildThreads) {
        uint32_t len = order[i];
        if (limited) {   // the longest lengths to the lightest leaves, as limit_lengths
            uint32_t before = 0;
            for (len = kMaxLen; len > 1 && i >= before + s_count[len]; --len) before += s_count[len];
        }
        const auto sym = static_cast<uint32_t>(sorted[i] & 0xFFFF);
        lengths[sym] = static_cast<uint8_t>(len);
        symbol_length[sym - range_lo] = static_cast<uint8_t>(len);
        bits += static_cast<unsigned long long>(leaf_w[i]) * len;
    }
    if (tid == 0) {   // canonical codes: first code per length
        uint32_t code = 0;
        for (int len = 1; len <= kMaxLen; ++len) {
            s_first_code[len] = code;
            code = (code + s_count[len]) << 1;
        }
    }
    __syncthreads();

    // Codes in (length, symbol) order.  Each warp owns a segment of the used
    // range: it counts its symbols per length, a scan per length over the
    // warps gives each segment's first rank, then the warp walks its segment
    // again, ranking 32 symbols at a time by a match on their lengths.
    const uint32_t segment = (range + kWarps - 1) / kWarps;
    const uint32_t seg_lo = min(range, warp * segment), seg_hi = min(range, (warp + 1) * segment);
    if (lane <= kMaxLen) s_warp_count[warp][lane] = 0;
    __syncwarp();
    for (uint32_t at = seg_lo; at < seg_hi; at += 32) {
        const uint32_t s = at + lane;
        const uint32_t len = s < seg_hi ? symbol_length[s] : 0;
        const uint32_t peers = __match_any_sync(0xFFFFFFFFu, len);
        if (len != 0 && (peers & lanes_below) == 0) s_warp_count[warp][len] += __popc(peers);
        __syncwarp();
    }
    __syncthreads();
    if (tid >= 1 && tid <= kMaxLen) {
        uint32_t rank = 0;
        for (uint32_t w = 0; w < kWarps; ++w) {
            const uint32_t c = s_warp_count[w][tid];
            s_warp_count[w][tid] = rank;
            rank += c;
        }
    }
    __syncthreads();
    for (uint32_t at = seg_lo; at < seg_hi; at += 32) {
        const uint32_t s = at + lane;
        const uint32_t len = s < seg_hi ? symbol_length[s] : 0;
        const uint32_t peers = __match_any_sync(0xFFFFFFFFu, len);
        if (len != 0) {
            const uint32_t rank = s_warp_count[warp][len] + __popc(peers & lanes_below);
            entries[range_lo + s] = (s_first_code[len] + rank) | (len << 24);
            if (rank == 0 && s_first_code[len] == 0) s_shortest = range_lo + s;   // the shortest length's first code
        } else if (s < seg_hi) {
            entries[range_lo + s] = 0;
        }
        __syncwarp();
        if (len != 0 && (peers & lanes_below) == 0) s_warp_count[warp][len] += __popc(peers);
        __syncwarp();
    }
    // The entries outside the used range (the encoder reads only inside it; zero for a tidy table).
    for (uint32_t s = tid; s < alphabet; s += kBuildThreads)
        if (s < range_lo || s >= range_lo + range) entries[s] = 0;
    // A warp's sum first: 1,024 threads on one 64-bit shared counter spin
    // (a compare-and-swap loop; ~20% of the block's stall samples, ncu).
    for (uint32_t o = 16; o > 0; o /= 2) bits += __shfl_down_sync(0xFFFFFFFFu, bits, o);
    if (lane == 0) atomicAdd(&s_bits, bits);
    __syncthreads();
    if (tid == 0) {
        uint32_t max_length = 0;
        for (int len = 1; len <= kMaxLen; ++len)
            if (s_count[len] != 0) max_length = len;
        result->status = 0;
        result->max_length = max_length;
        result->codes_base = s_lo;
        result->codes_count = s_hi - s_lo + 1;
        result->shortest_symbol = s_shortest;
        result->total_bits = s_bits;
    }
}

}  // namespace

void huffman_build_cuda(const uint64_t* d_hist, uint32_t alphabet, uint64_t total, HuffmanDeviceBuilder& b,
                        HuffmanDeviceBook& book, cudaStream_t stream) {
    GSZ_CHECK(alphabet >= 1 && alphabet <= kHuffmanMaxAlphabet && total < (uint64_t{1} << 32),
              GSZ_STATUS_INVALID_ARGUMENT, "huffman_build_cuda: alphabet %u, total %llu", alphabet,
              static_cast<unsigned long long>(total));
    b.keys.allocate(alphabet, stream);
    b.sorted.allocate(alphabet, stream);
    b.parent.allocate(kMaxLeaves, stream);
    b.lengths.allocate(alphabet, stream);
    b.result.allocate(1, stream);
    b.result_host.allocate(1);
    book.tables.allocate(alphabet, stream);
    GSZ_CUDA(cudaMemsetAsync(b.lengths.data(), 0, alphabet, stream));
    GSZ_CUDA(cudaMemsetAsync(b.result.data(), 0, sizeof(HuffmanBuildResult), stream));
    huffman_leaf_keys_kernel<<<(alphabet + 255) / 256, 256, 0, stream>>>(d_hist, alphabet, b.keys.data(),
                                                                         b.result.data());
    GSZ_CUDA_LAUNCHED("huffman_leaf_keys_kernel");
    // Sorted by the weight's bits alone: the radix sort is stable and the keys
    // come in symbol order, so equal weights stay in symbol order.  Weights
    // are at most `total`, below the all-ones field of the unused keys, which
    // stay last.  wmagT's 94M codes: 27 bits in 4 passes instead of 48 in 6.
    const int begin_bit = 16, end_bit = begin_bit + static_cast<int>(std::bit_width(total + 1));   // <= 49
    size_t temp_bytes = 0;
    GSZ_CUDA(cub::DeviceRadixSort::SortKeys(nullptr, temp_bytes, b.keys.data(), b.sorted.data(),
                                            static_cast<int>(alphabet), begin_bit, end_bit, stream));
    b.sort_temp.allocate(temp_bytes, stream);
    GSZ_CUDA(cub::DeviceRadixSort::SortKeys(b.sort_temp.data(), temp_bytes, b.keys.data(), b.sorted.data(),
                                            static_cast<int>(alphabet), begin_bit, end_bit, stream));
    static const bool configured = [] {
        GSZ_CUDA(cudaFuncSetAttribute(huffman_build_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(kBuildSmem)));
        return true;
    }();
    (void)configured;
    huffman_build_kernel<<<1, kBuildThreads, kBuildSmem, stream>>>(alphabet, b.sorted.data(), b.parent.data(),
                                                                   b.lengths.data(), book.tables.data(),
                                                                   b.result.data());
    GSZ_CUDA_LAUNCHED("huffman_build_kernel");
    GSZ_CUDA(cudaMemcpyAsync(b.result_host.data(), b.result.data(), sizeof(HuffmanBuildResult),
                             cudaMemcpyDeviceToHost, stream));
}

bool huffman_build_cuda_finish(const HuffmanDeviceBuilder& b, uint32_t alphabet, HuffmanDeviceBook& book) {
    const HuffmanBuildResult& r = *b.result_host.data();
    if (r.status != 0) return false;
    GSZ_CHECK(r.num_used >= 1 && r.max_length >= 1 && r.max_length <= kMaxLen && r.codes_count >= 1 &&
                  uint64_t{r.codes_base} + r.codes_count <= alphabet,
              GSZ_STATUS_INTERNAL, "huffman_build_cuda: inconsistent result");
    book.lut = book.first_code = book.first_index = book.count = nullptr;
    book.sorted_symbols = nullptr;
    book.sub_entries = 0;
    book.pairs = false;
    book.decode_ready = false;
    book.alphabet_size = alphabet;
    book.max_length = r.max_length;
    book.num_sorted = r.num_used;
    book.codes_base = r.codes_base;
    book.codes_count = r.codes_count;
    book.window_base = huffman_encoder_window(r.shortest_symbol, r.codes_base, r.codes_count);
    book.codes = book.tables.data() + r.codes_base;
    return true;
}

HuffmanCodebook huffman_build_cuda_fetch(const HuffmanDeviceBuilder& b, uint32_t alphabet, cudaStream_t stream) {
    std::vector<uint8_t> lengths;
    cuda::copy_to_host(lengths, b.lengths.data(), alphabet, stream);
    return huffman_book_from_lengths(lengths);
}

}  // namespace gsz::encode
