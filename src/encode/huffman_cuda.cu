// GPU Huffman stage: histogram, chunked encode and chunk-parallel decode,
// bit-identical to huffman.cpp (see huffman.hpp for the layout).
//
// Encode splits every chunk into slices of at most kSliceSymbols symbols; a
// group of G lanes (G = 1..32, a power of two, sized so a lane gets about
// kLaneSymbols symbols) handles one slice, each lane a contiguous sub-range.
// Bit positions come from integer prefix sums (lanes: shuffle scan; slices of
// one chunk: huffman_scan_kernel; chunks: cub::DeviceScan), so the output does
// not depend on scheduling.  A lane stores the 32-bit words its bits cover
// completely and ORs (atomically) the at most two words it shares with its
// neighbours; the words start zeroed, and bit ranges are disjoint.
//
// The device book's `lut` buffer holds the decode table (kLutSize entries)
// followed by one packed entry per symbol for the encoder (code | length << 24),
// so encoding gathers one word per symbol.
//
// The per-lane and per-chunk logic lives in __host__ __device__ functions so
// it can be checked on the host against the CPU coder.
#include "encode/huffman_cuda.hpp"
#include "encode/huffman_table.hpp"

#include "runtime/cuda/cuda_check.hpp"

#include <cub/agent/single_pass_scan_operators.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cstring>
#include <cstddef>
#include <limits>
#include <span>
#include <utility>
#include <vector>

namespace gsz::encode {
namespace {

constexpr int kMaxLen = kHuffmanMaxCodeLength;
constexpr uint32_t kMaxChunkSymbols = 1u << 20;  // same limit as huffman.cpp
// The decode table's root (huffman_table.hpp), 8 KiB of shared memory.
constexpr uint32_t kLutSize = kHuffmanRootSize;
// Encode entry: code | length << 24 (codes have at most 24 bits).
constexpr uint32_t kCodeLengthShift = 24;
constexpr uint32_t kCodeMask = (1u << kCodeLengthShift) - 1;

constexpr uint32_t kSliceSymbols = 4096;  // longest run one lane group packs; longer chunks are split
constexpr uint32_t kLaneSymbols = 64;     // aimed-for symbols per lane
constexpr int kCodecThreads = 256;
constexpr int kDecodeThreads = 128;
// Symbols by code staged in shared memory up to this many (4 KiB).  Only the
// canonical search reads them (codes the subtables leave: < 0.01%), and a
// large table cost occupancy: interp rel 1e-4's 13,701 symbols (27 KiB) left
// 3 decoder blocks per SM, its decoding 0.80 ms against 0.38 for lorenzo's.
constexpr uint32_t kSharedSorted = 2048;
constexpr int kHistThreads = 512;
constexpr uint32_t kHistMaxReplicas = 8;
constexpr size_t kHistSmallSmem = 48 * 1024;  // no opt-in needed, several blocks per SM
constexpr size_t kHistLargeSmem = 96 * 1024;  // large alphabets: two blocks per SM on sm_90
constexpr uint32_t kHistWindowReplicas = 4;     // large alphabets: 6,112 bins in the window, 32 at the top
constexpr uint32_t kFullMask = 0xffffffffu;

constexpr uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

// ---------------------------------------------------------------------------
// Per-thread logic, shared by the kernels and the host checks.

// Read-only global load (the non-coherent path on the device).  Never for
// shared-memory pointers.
template <class T>
__host__ __device__ inline T load_ro(const T* p) {
#ifdef __CUDA_ARCH__
    return __ldg(p);
#else
    return *p;
#endif
}

// Histogram: an unaligned head (< 8 symbols, or all of them if the pointer is
// not even 2-byte aligned), a body of 16-byte vectors, a tail (< 8 symbols).
struct HistPartition {
    uint64_t head = 0, num_vec = 0, tail_begin = 0, num_scalar = 0;
};

__host__ __device__ inline HistPartition hist_partition(const uint16_t* p, uint64_t n) {
    const auto addr = reinterpret_cast<uintptr_t>(p);
    HistPartition h;
    h.head = (addr & 1) != 0 ? n : ((16 - (addr & 15)) & 15) / 2;
    if (h.head > n) h.head = n;
    h.num_vec = (n - h.head) / 8;
    h.tail_begin = h.head + 8 * h.num_vec;
    h.num_scalar = h.head + (n - h.tail_begin);
    return h;
}

// Index of the j-th scalar (head, then tail) symbol.
__host__ __device__ inline uint64_t hist_scalar_index(const HistPartition& h, uint64_t j) {
    return j < h.head ? j : h.tail_begin + (j - h.head);
}

struct HistConfig {
    uint32_t replicas = 1;    // power of two; lane l counts into copy l % replicas
    uint32_t window_lo = 0;   // the bins [window_lo, window_lo + width) are counted in shared memory
    uint32_t width = 0;
    uint32_t tail = 0;        // and the alphabet's last `tail` bins, after the window's
    size_t smem_bytes = 0;
};

// Bins at the top of a large alphabet kept in shared memory: the run tokens
// of interp's codes (alphabet 65,526 + kRunClasses) lie there, and counting
// them by global atomics on 16 addresses took 5.7 ms on wmagT.
constexpr uint32_t kHistTail = 32;

// Replicas spread the dominant symbol's updates over several counters.  An
// alphabet too large for shared memory (interp's 65,526 quant-codes) keeps a
// window of bins around its middle there, where quant-codes cluster (code
// radius is a zero residual), and counts the symbols outside it by global
// atomics: one pass over the symbols.
HistConfig hist_config(uint32_t alphabet, size_t smem_optin) {
    HistConfig c;
    for (uint32_t r = kHistMaxReplicas; r >= 1; r /= 2) {
        if (size_t{alphabet} * 4 * r <= kHistSmallSmem) {
            c.replicas = r;
            c.width = alphabet;
            c.smem_bytes = size_t{alphabet} * 4 * r;
            return c;
        }
    }
    const size_t budget = std::max(kHistSmallSmem, std::min(smem_optin, kHistLargeSmem));
    c.replicas = kHistWindowReplicas;
    c.width = static_cast<uint32_t>(budget / (4 * c.replicas)) - kHistTail;
    c.window_lo = alphabet / 2 - c.width / 2;
    c.tail = std::min(kHistTail, alphabet - (c.window_lo + c.width));
    c.smem_bytes = size_t{c.width + c.tail} * 4 * c.replicas;
    return c;
}

// How the symbols map to (slice, lane).  Slice k belongs to chunk
// k / slices_per_chunk; slices past the end of the last chunk are empty.
struct SliceLayout {
    uint64_t n = 0;
    uint64_t num_chunks = 0;
    uint64_t num_slices = 0;
    uint32_t chunk_symbols = 0;
    uint32_t slice_symbols = 0;
    uint32_t slices_per_chunk = 0;
    uint32_t lane_symbols = 0;
    uint32_t group = 1;  // lanes per slice: power of two <= 32
};

SliceLayout make_slice_layout(uint64_t n, uint32_t chunk_symbols) {
    SliceLayout l;
    l.n = n;
    l.chunk_symbols = chunk_symbols;
    l.num_chunks = ceil_div(n, chunk_symbols);
    l.slice_symbols = std::min(chunk_symbols, kSliceSymbols);
    l.slices_per_chunk = static_cast<uint32_t>(ceil_div(chunk_symbols, l.slice_symbols));
    l.num_slices = l.num_chunks * l.slices_per_chunk;
    const uint64_t lanes_wanted = ceil_div(l.slice_symbols, kLaneSymbols);
    while (l.group < 32 && l.group < lanes_wanted) l.group *= 2;
    l.lane_symbols = static_cast<uint32_t>(ceil_div(l.slice_symbols, l.group));
    return l;
}

struct SymbolRange {
    uint64_t begin = 0, end = 0;
};

__host__ __device__ inline uint64_t slice_chunk(const SliceLayout& l, uint64_t k) {
    return l.slices_per_chunk == 1 ? k : k / l.slices_per_chunk;
}

// Symbols of lane `lane` of slice k (empty when k >= num_slices).
__host__ __device__ inline SymbolRange lane_range(const SliceLayout& l, uint64_t k, uint32_t lane) {
    if (k >= l.num_slices) return {};
    const uint64_t c = slice_chunk(l, k);
    const uint64_t s = k - c * l.slices_per_chunk;
    const uint64_t chunk_begin = c * l.chunk_symbols;
    const uint64_t chunk_end = chunk_begin + l.chunk_symbols < l.n ? chunk_begin + l.chunk_symbols : l.n;
    const uint64_t slice_begin = chunk_begin + s * l.slice_symbols;
    const uint64_t slice_end = slice_begin + l.slice_symbols < chunk_end ? slice_begin + l.slice_symbols : chunk_end;
    const uint64_t b = slice_begin + uint64_t{lane} * l.lane_symbols;
    if (b >= slice_end) return {};
    return {b, b + l.lane_symbols < slice_end ? b + l.lane_symbols : slice_end};
}

// The encoder's view of the book: packed entries in global memory of the
// symbols [base, base + alphabet), which hold every symbol the book codes
// (HuffmanDeviceBook::codes_base).  Other symbols get entry 0, i.e. length 0
// (the pipeline never produces them; this only keeps the table reads in bounds).
struct PackedCodes {
    const uint32_t* table = nullptr;  // [alphabet] code | length << 24
    uint32_t alphabet = 0;
    uint32_t base = 0;
    __host__ __device__ uint32_t entry(uint32_t s) const {
        return s - base < alphabet ? load_ro(table + (s - base)) : 0u;   // wraps below base
    }
};

// The same entries copied to shared memory by the staged packer (alphabets up
// to kSharedCodes): a gather of 32 scattered entries is then a few bank
// conflicts instead of one L1 wavefront per cache line it touches (wmagT rel
// 1e-4: pack 418 -> 400 us; its scattered stores were the larger part, see
// huffman_pack_kernel).
constexpr uint32_t kSharedCodes = 12288;  // 48 KiB, no opt-in
struct SharedCodes {
    const uint32_t* table = nullptr;  // shared memory
    uint32_t alphabet = 0;
    uint32_t base = 0;
    __device__ uint32_t entry(uint32_t s) const { return s - base < alphabet ? table[s - base] : 0u; }
};

// Copies the entries to shared memory; every thread of the block calls it.
__device__ inline SharedCodes stage_codes(const PackedCodes& book, uint32_t* s_table) {
    for (uint32_t i = threadIdx.x; i < book.alphabet; i += blockDim.x) s_table[i] = load_ro(book.table + i);
    __syncthreads();
    return {s_table, book.alphabet, book.base};
}

// The one-pass encoder's view of a book wider than its shared-memory table
// (interp's quant-codes at tight bounds span 10^4 symbols): `count` entries
// from symbol `lo`, around the most frequent symbol, in shared memory; the
// rare symbols outside them are read from the global table.
struct WindowedCodes {
    const uint32_t* table = nullptr;  // shared memory
    uint32_t lo = 0;
    uint32_t count = 0;
    PackedCodes global;
    __device__ uint32_t entry(uint32_t s) const {
        const uint32_t k = s - lo;  // wraps below lo
        return k < count ? table[k] : global.entry(s);
    }
};

// Copies the window's entries to shared memory; every thread of the block calls it.
__device__ inline WindowedCodes stage_window(const PackedCodes& book, uint32_t lo, uint32_t count,
                                             uint32_t* s_table) {
    for (uint32_t i = threadIdx.x; i < count; i += blockDim.x) s_table[i] = load_ro(book.table + (lo - book.base) + i);
    __syncthreads();
    return {s_table, lo, count, book};
}

// Calls f(entry) for the entries of p[begin..end) in order.  In the aligned
// body the next 16-byte vector is loaded, and all 8 gathers issued, before
// any entry is used: the latency of one table lookup covers eight.
template <class Book, class F>
__host__ __device__ inline void for_each_entry(const uint16_t* p, uint64_t begin, uint64_t end, const Book& book,
                                               F&& f) {
    uint64_t i = begin;
    while (i < end && (reinterpret_cast<uintptr_t>(p + i) & 15) != 0) f(book.entry(load_ro(p + i++)));
    if (i + 8 <= end) {
        uint4 q = load_ro(reinterpret_cast<const uint4*>(p + i));
        for (;;) {
            const bool more = i + 16 <= end;
            const uint4 next = more ? load_ro(reinterpret_cast<const uint4*>(p + i + 8)) : q;
            // Little-endian: the lower half of each word is the earlier symbol.
            const uint32_t e0 = book.entry(q.x & 0xFFFFu), e1 = book.entry(q.x >> 16);
            const uint32_t e2 = book.entry(q.y & 0xFFFFu), e3 = book.entry(q.y >> 16);
            const uint32_t e4 = book.entry(q.z & 0xFFFFu), e5 = book.entry(q.z >> 16);
            const uint32_t e6 = book.entry(q.w & 0xFFFFu), e7 = book.entry(q.w >> 16);
            f(e0), f(e1), f(e2), f(e3), f(e4), f(e5), f(e6), f(e7);
            i += 8;
            if (!more) break;
            q = next;
        }
    }
    for (; i < end; ++i) f(book.entry(load_ro(p + i)));
}

template <class Book>
__host__ __device__ inline uint32_t range_bits(const uint16_t* symbols, SymbolRange r, const Book& book) {
    uint32_t bits = 0;
    for_each_entry(symbols, r.begin, r.end, book, [&](uint32_t e) { bits += e >> kCodeLengthShift; });
    return bits;
}

// Packs r's codewords MSB-first starting at chunk-relative bit `start_bit`,
// exactly like huffman_encode_cpu's pass 2.  Calls emit(word, value, shared)
// with the chunk-relative word index; `shared` marks a word that other lanes
// may also write (the first one when start_bit is not word-aligned, and the
// final partial one); every other emitted word lies entirely inside this
// lane's bits.  The bits of a word outside this lane's range are zero.
template <class Book, class Emit>
__host__ __device__ inline void pack_range(const uint16_t* symbols, SymbolRange r, const Book& book,
                                           uint32_t start_bit, Emit&& emit) {
    // `acc` holds `pending` (< 32) unwritten bits right-aligned; the first
    // start_bit % 32 of them are the zeros in front of this lane's bits.
    uint64_t acc = 0;
    uint32_t pending = start_bit & 31;
    uint32_t word = start_bit >> 5;
    bool shared = pending != 0;
    for_each_entry(symbols, r.begin, r.end, book, [&](uint32_t e) {
        const uint32_t len = e >> kCodeLengthShift;
        acc = (acc << len) | (e & kCodeMask);
        pending += len;
        if (pending >= 32) {
            pending -= 32;
            emit(word++, static_cast<uint32_t>(acc >> pending), shared);
            shared = false;
        }
    });
    if (pending > 0) emit(word, static_cast<uint32_t>(acc << (32 - pending)), true);
}

// The canonical search's tables (shared memory, except `sorted` when it is
// too large to copy).
struct SearchTables {
    const uint32_t* limit = nullptr;        // [kMaxLen + 1] end of length-l codes, left-aligned in 24 bits
    const uint32_t* first_code = nullptr;   // [kMaxLen + 1]
    const uint32_t* first_index = nullptr;  // [kMaxLen + 1]
    const uint16_t* sorted = nullptr;       // global, or shared when sorted_shared
    bool sorted_shared = false;
    uint32_t num_sorted = 0;
    uint32_t max_length = 0;

    // The entry for a code the tables left unresolved; length 0: no code.
    __device__ uint32_t entry(uint32_t window) const {
        const uint32_t r = huffman_search(limit, first_code, first_index, max_length, num_sorted, window);
        if (HuffmanEntry::length(r) == 0) return 0;
        const uint32_t rank = HuffmanEntry::symbol(r);
        return HuffmanEntry::make(sorted_shared ? sorted[rank] : load_ro(sorted + rank), HuffmanEntry::length(r));
    }
};

// One lane's chunk, symbol by symbol, with huffman.cpp's decode_chunk's
// accept/reject rules.  The 64-bit buffer holds the next bits MSB-first,
// at least 32 before each lookup.  Past the chunk's last word it is fed that
// word again (no bounds branch per refill): bits past the end are only ever
// peeked, never part of an accepted code (huffman_table.hpp), so the verdict
// -- the bits read must be exactly the chunk's -- is decode_chunk's, which
// feeds zeros.  The next word is loaded one refill early.
struct LaneReader {
    const uint32_t* words = nullptr;
    uint32_t last = 0;  // the chunk's last word (it has at least one)
    uint32_t next = 0;  // words fed to the buffer
    uint32_t ahead = 0;
    uint64_t buf = 0;
    int avail = 0;

    __device__ void start(const uint32_t* chunk_words, uint32_t num_words) {
        words = chunk_words;
        last = num_words - 1;
        ahead = load_ro(words);
    }

    // The next 32 bits, MSB first (the buffer refilled when it holds 32 or fewer).
    __device__ __forceinline__ uint32_t peek() {
        if (avail <= 32) {
            buf |= uint64_t{ahead} << (32 - avail);
            avail += 32;
            ++next;
            ahead = load_ro(words + min(next, last));
        }
        return static_cast<uint32_t>(buf >> 32);
    }
    __device__ __forceinline__ void consume(uint32_t len) {
        buf <<= len;
        avail -= static_cast<int>(len);
    }

    // Decodes the next code (a root without pair entries).
    __device__ __forceinline__ uint32_t decode(const uint32_t* root, const uint32_t* sub, const SearchTables& search,
                                               bool& bad) {
        const uint32_t window = peek();
        uint32_t e = huffman_lookup(root, sub, window);
        if (HuffmanEntry::length(e) == 0) {
            e = search.entry(window);
            bad |= HuffmanEntry::length(e) == 0;
        }
        consume(HuffmanEntry::length(e));
        return HuffmanEntry::symbol(e);
    }

    // Decodes the next code, or the next two where the root holds them as a
    // pair and `pair_ok`: returns how many, the symbols in s0 (and s1).
    __device__ __forceinline__ uint32_t step(const uint32_t* root, const uint32_t* sub, const SearchTables& search,
                                             bool pair_ok, bool& bad, uint32_t& s0, uint32_t& s1) {
        const uint32_t window = peek();
        uint32_t e = root[window >> (32 - kHuffmanRootBits)];
        uint32_t len, taken = 1;
        if (e & HuffmanPair::kFlag) {
            s0 = HuffmanPair::first(e);
            s1 = HuffmanPair::second(e);
            len = HuffmanPair::first_length(e);
            if (pair_ok) {
                len += HuffmanPair::second_length(e);
                taken = 2;
            }
        } else {
            e = huffman_lookup_below(e, sub, window);
            if (HuffmanEntry::length(e) == 0) {
                e = search.entry(window);
                bad |= HuffmanEntry::length(e) == 0;
            }
            len = HuffmanEntry::length(e);
            s0 = HuffmanEntry::symbol(e);
        }
        consume(len);
        return taken;
    }

    // After the chunk's last symbol: the bits read must be exactly num_bits,
    // and the last word's padding zero.
    __device__ bool finish(uint32_t num_bits) const {
        if (uint64_t{next} * 32 - static_cast<uint64_t>(avail) != num_bits) return false;
        return num_bits % 32 == 0 || (load_ro(words + last) << (num_bits % 32)) == 0;
    }
};

// Host: the device book's `lut` buffer: the decode table's root with pair
// entries, the packed encode entries, then the decode subtables.
constexpr double kPairRootShare = 0.9;

// The encoder's entry per symbol, code | length << 24, of the symbols
// first, first + 1, ... (as many as `out` holds; all of them by default).
// Only the coded symbols are visited (interp's alphabet has 65,526 entries,
// of which 10^2..10^4 are used); the others get entry 0.
void encoder_entries(const HuffmanCodebook& book, std::span<uint32_t> out, uint32_t first = 0) {
    std::fill(out.begin(), out.end(), 0u);
    for (const uint16_t s : book.sorted_symbols) {
        GSZ_CHECK(s >= first && s - first < out.size() && book.lengths[s] >= 1 && book.lengths[s] <= kMaxLen &&
                      (book.codes[s] >> book.lengths[s]) == 0,
                  GSZ_STATUS_INVALID_ARGUMENT, "huffman: codebook tables are inconsistent");
        out[s - first] = book.codes[s] | (uint32_t{book.lengths[s]} << kCodeLengthShift);
    }
}

std::vector<uint32_t> build_lut(const HuffmanCodebook& book, uint32_t& sub_entries, bool& pairs) {
    const HuffmanDecodeTable table = huffman_decode_table(book);
    // Pair entries where nearly every index holds two codes (ncu, H100: the
    // pair loop's extra work costs more than the steps it saves when a
    // quarter of the steps decode one code, wmagT rel 1e-3).
    std::vector<uint32_t> root = huffman_pair_root(table);
    const auto num_pairs = static_cast<uint32_t>(
        std::count_if(root.begin(), root.end(), [](uint32_t e) { return (e & HuffmanPair::kFlag) != 0; }));
    pairs = num_pairs >= kPairRootShare * kLutSize;
    if (!pairs) root = table.root;
    std::vector<uint32_t> lut(kLutSize + book.alphabet_size + table.sub.size(), 0);
    std::copy(root.begin(), root.end(), lut.begin());
    encoder_entries(book, std::span<uint32_t>(lut.data() + kLutSize, book.alphabet_size));
    std::copy(table.sub.begin(), table.sub.end(), lut.begin() + kLutSize + book.alphabet_size);
    sub_entries = static_cast<uint32_t>(table.sub.size());
    return lut;
}

// ---------------------------------------------------------------------------
// Warp helpers.  All 32 lanes must call them together; `width` (the group
// size) is a power of two <= 32.

__device__ inline uint32_t group_sum(uint32_t v, uint32_t width) {
    for (uint32_t o = width / 2; o > 0; o /= 2) v += __shfl_xor_sync(kFullMask, v, o, width);
    return v;
}

__device__ inline uint32_t group_exclusive_sum(uint32_t v, uint32_t lane_in_group, uint32_t width) {
    uint32_t inclusive = v;
    for (uint32_t d = 1; d < width; d *= 2) {
        const uint32_t t = __shfl_up_sync(kFullMask, inclusive, d, width);
        if (lane_in_group >= d) inclusive += t;
    }
    return inclusive - v;
}

// ---------------------------------------------------------------------------
// Kernels.

__global__ void __launch_bounds__(kHistThreads)
    histogram_count_kernel(const uint16_t* __restrict__ d_symbols, uint64_t n, uint32_t alphabet, uint32_t lo,
                           uint32_t width, uint32_t tail, uint32_t replicas, unsigned long long* __restrict__ d_hist,
                           uint32_t* __restrict__ d_bad_symbol) {
    // [bin * replicas + replica]: a bin's copies sit in distinct banks; the
    // window's bins, then the tail's
    extern __shared__ uint32_t s_count[];
    const uint32_t bins = width + tail;
    for (uint32_t i = threadIdx.x; i < bins * replicas; i += blockDim.x) s_count[i] = 0;
    __syncthreads();

    const uint32_t replica = threadIdx.x & (replicas - 1);
    const uint32_t tail_lo = alphabet - tail;
    bool bad = false;
    auto add = [&](uint32_t s) {
        const uint32_t b = s - lo;  // wraps above width when s < lo
        if (b < width)
            atomicAdd(&s_count[b * replicas + replica], 1u);
        else if (s >= alphabet)
            bad = true;
        else if (s >= tail_lo)
            atomicAdd(&s_count[(width + s - tail_lo) * replicas + replica], 1u);
        else
            atomicAdd(d_hist + s, 1ull);   // outside the window and the tail (large alphabets only)
    };
    const HistPartition part = hist_partition(d_symbols, n);
    const uint64_t tid = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
    const uint64_t stride = uint64_t{gridDim.x} * blockDim.x;
    const auto* vec = reinterpret_cast<const uint4*>(d_symbols + part.head);
    for (uint64_t v = tid; v < part.num_vec; v += stride) {
        const uint4 q = __ldg(vec + v);
        add(q.x & 0xFFFFu), add(q.x >> 16), add(q.y & 0xFFFFu), add(q.y >> 16);
        add(q.z & 0xFFFFu), add(q.z >> 16), add(q.w & 0xFFFFu), add(q.w >> 16);
    }
    for (uint64_t j = tid; j < part.num_scalar; j += stride) add(__ldg(d_symbols + hist_scalar_index(part, j)));
    if (bad) *d_bad_symbol = 1;
    __syncthreads();

    for (uint32_t b = threadIdx.x; b < bins; b += blockDim.x) {
        uint32_t sum = 0;  // < 2^32: the host sizes the grid so a block sees fewer symbols
        for (uint32_t r = 0; r < replicas; ++r) sum += s_count[b * replicas + r];
        if (sum != 0) atomicAdd(d_hist + (b < width ? lo + b : tail_lo + (b - width)), static_cast<unsigned long long>(sum));
    }
}

// Bits per slice; with one slice per chunk (d_chunk_words != nullptr) these
// are the chunk bit counts, and the chunk's word count goes beside them.
// With several lanes per slice, each lane's bits go to d_lane_bits for the
// pack kernel (which then reads the symbols once).
__global__ void __launch_bounds__(kCodecThreads)
    huffman_measure_kernel(const uint16_t* __restrict__ d_symbols, SliceLayout l, PackedCodes book,
                           uint32_t* __restrict__ d_slice_bits, uint64_t* __restrict__ d_chunk_words,
                           uint32_t* __restrict__ d_lane_bits) {
    const uint32_t lane = threadIdx.x & 31;
    const uint32_t sub = lane / l.group, j = lane % l.group;
    const uint32_t groups_per_warp = 32 / l.group;
    const uint64_t warp = (uint64_t{blockIdx.x} * blockDim.x + threadIdx.x) / 32;
    const uint64_t num_warps = uint64_t{gridDim.x} * blockDim.x / 32;
    // `first` is the same for the whole warp: every lane reaches the shuffles.
    for (uint64_t first = warp * groups_per_warp; first < l.num_slices; first += num_warps * groups_per_warp) {
        const uint64_t k = first + sub;
        const uint32_t lane_bits = range_bits(d_symbols, lane_range(l, k, j), book);
        if (d_lane_bits && k < l.num_slices) d_lane_bits[k * l.group + j] = lane_bits;
        const uint32_t bits = group_sum(lane_bits, l.group);
        if (j == 0 && k < l.num_slices) {
            d_slice_bits[k] = bits;
            if (d_chunk_words) d_chunk_words[k] = (uint64_t{bits} + 31) / 32;
        }
    }
}

// Several slices per chunk: turns slice bit counts (in place) into bit
// offsets inside the chunk, and writes the chunk's bits and word count.
// One warp per chunk; chunk bits < 2^20 * 24, so u32 sums are exact.
__global__ void __launch_bounds__(kCodecThreads)
    huffman_scan_kernel(SliceLayout l, uint32_t* __restrict__ d_slice, uint32_t* __restrict__ d_chunk_bits,
                        uint64_t* __restrict__ d_chunk_words) {
    const uint32_t lane = threadIdx.x & 31;
    const uint64_t warp = (uint64_t{blockIdx.x} * blockDim.x + threadIdx.x) / 32;
    const uint64_t num_warps = uint64_t{gridDim.x} * blockDim.x / 32;
    for (uint64_t c = warp; c < l.num_chunks; c += num_warps) {
        uint32_t* slice = d_slice + c * l.slices_per_chunk;
        uint32_t carry = 0;
        for (uint32_t base = 0; base < l.slices_per_chunk; base += 32) {
            const uint32_t idx = base + lane;
            const uint32_t v = idx < l.slices_per_chunk ? slice[idx] : 0;
            const uint32_t before = group_exclusive_sum(v, lane, 32);
            if (idx < l.slices_per_chunk) slice[idx] = carry + before;
            carry += __shfl_sync(kFullMask, before + v, 31);
        }
        if (lane == 0) {
            d_chunk_bits[c] = carry;
            d_chunk_words[c] = (uint64_t{carry} + 31) / 32;
        }
    }
}

// A group packs its chunk at `out` (the chunk's first word; the group owns
// its `words` words): zeroed first, then each lane stores the words its bits
// complete and ORs the ones it shares.  Every lane of the warp calls it.
template <class Book>
__device__ inline void pack_chunk_zeroed(const uint16_t* symbols, SymbolRange r, const Book& book, uint32_t start_bit,
                                         uint32_t* out, uint32_t words, uint32_t j, uint32_t group) {
    for (uint32_t w = j; w < words; w += group) out[w] = 0;
    __syncwarp();
    if (r.begin < r.end) {
        pack_range(symbols, r, book, start_bit, [&](uint32_t w, uint32_t v, bool shared) {
            if (v == 0) return;
            if (shared)
                atomicOr(out + w, v);
            else
                out[w] = v;
        });
    }
}

// Packs every slice into d_words.  d_lane_bits: bits of lane j of slice k at
// [k * group + j] (the chunk bit counts when group == 1).  d_slice_offset:
// in-chunk bit offset per slice (nullptr with one slice per chunk).
// kStaged (streams of 4+ bits per symbol in whole chunks, the pipeline's
// 1024-symbol chunks at tight bounds): the code table is copied to shared
// memory, and a group packs its chunk into a stretch of shared memory and
// then copies it out, the group's lanes storing consecutive words: packing
// straight to global memory stored each lane's words in a different cache
// line per instruction, which bound the kernel at long codes.  A chunk too
// long for the stretch, or short, is packed in place after its group has
// zeroed it.  Otherwise lanes pack in place into d_words zeroed beforehand
// (slices of one chunk share boundary words; at low bit rates the detour
// through shared memory costs more than it saves: 141 -> 172 us at ~2 bits).
constexpr uint32_t kPackStageWords = 512;    // per group: chunks of up to 16 bits per symbol on average
constexpr uint32_t kPackStageMinWords = 128;  // H100, wmagT: staged 146 -> 172 us at ~2 bits per symbol, 400 -> 202 at ~8

template <bool kStaged>
__global__ void __launch_bounds__(kCodecThreads)
    huffman_pack_kernel(const uint16_t* __restrict__ d_symbols, SliceLayout l, PackedCodes codes,
                        const uint32_t* __restrict__ d_lane_bits, const uint32_t* __restrict__ d_slice_offset,
                        const uint64_t* __restrict__ d_chunk_word_offset, uint32_t* d_words,
                        uint32_t stretch_words) {
    extern __shared__ uint32_t s_mem[];  // the code table (kStaged), then the word stretches of each group
    const auto book = [&] {
        if constexpr (kStaged) return stage_codes(codes, s_mem);
        else return codes;
    }();
    const uint32_t lane = threadIdx.x & 31;
    const uint32_t sub = lane / l.group, j = lane % l.group;
    const uint32_t groups_per_warp = 32 / l.group;
    const uint32_t table_words = kStaged ? (codes.alphabet + 3) / 4 * 4 : 0;
    uint32_t* stretch = s_mem + table_words + ((threadIdx.x / 32) * groups_per_warp + sub) * stretch_words;
    const bool whole_chunks = l.slices_per_chunk == 1;
    const uint64_t warp = (uint64_t{blockIdx.x} * blockDim.x + threadIdx.x) / 32;
    const uint64_t num_warps = uint64_t{gridDim.x} * blockDim.x / 32;
    for (uint64_t first = warp * groups_per_warp; first < l.num_slices; first += num_warps * groups_per_warp) {
        const uint64_t k = first + sub;
        const SymbolRange r = lane_range(l, k, j);
        const uint32_t bits = k < l.num_slices ? d_lane_bits[k * l.group + j] : 0u;
        const uint32_t before = group_exclusive_sum(bits, j, l.group);
        const uint64_t chunk = slice_chunk(l, k);
        uint32_t* dst = d_words + (k < l.num_slices ? d_chunk_word_offset[chunk] : 0);
        if (!kStaged || !whole_chunks) {
            if (r.begin < r.end) {
                const uint32_t start = (d_slice_offset ? d_slice_offset[k] : 0u) + before;
                pack_range(d_symbols, r, book, start, [&](uint32_t w, uint32_t v, bool shared) {
                    if (v == 0) return;  // the words start zeroed
                    if (shared)
                        atomicOr(dst + w, v);
                    else
                        dst[w] = v;
                });
            }
            continue;
        }
        // The chunk's words (0 for a slice past the end).
        const uint32_t words = k < l.num_slices
                                   ? static_cast<uint32_t>(d_chunk_word_offset[chunk + 1] - d_chunk_word_offset[chunk])
                                   : 0u;
        // The same for the group.  Short chunks (under ~4 bits per symbol)
        // are packed in place: their few stores cost less than the detour.
        const bool staged = kStaged && words >= kPackStageMinWords && words <= stretch_words;
        pack_chunk_zeroed(d_symbols, r, book, before, staged ? stretch : dst, words, j, l.group);
        __syncwarp();
        if (staged)
            for (uint32_t w = j; w < words; w += l.group) dst[w] = stretch[w];
        __syncwarp();  // the stretch is free again
    }
}

// One pass for whole chunks of 257..4096 symbols (the pipelines' 1024):
// a CTA codes a tile of kCodecThreads / group consecutive chunks, a group
// per chunk.  The lanes count their bits, the tile's chunk word counts are
// scanned inside the CTA, and the tile's total is published for a decoupled
// look-back (CUB's single-pass scan protocol); meanwhile each group packs its
// chunk into the CTA's stage at its tile-local offset.  Once warp 0 knows
// where the tile starts, the CTA copies the stage out with consecutive words
// per thread.  A tile longer than the stage is packed in place after the
// look-back instead (chunks start on words, so a group owns its chunk's
// words).  Replaces the measure pass, the scan of word counts and the pack
// pass, which read the symbols twice (bench/NOTES.md).
constexpr uint32_t kTileMaxChunks = 32;
constexpr uint32_t kLaneVectors = 8;  // 64 symbols per lane (1024-symbol chunks) are held in registers

// pack_range into the CTA's stage, for the one-pass encoder, without
// atomics in the loop: a word is stored whole by the lane whose bits complete
// it (bits of earlier lanes in it are zeros there), and a lane's last,
// incomplete word is returned for the caller to OR in after a __syncwarp, by
// when every whole-word store of the group is done.  Every word of a chunk
// but its last is completed by some lane.  Addresses are 32-bit shared-memory
// addresses in PTX: through generic pointers the compiler rebuilt the shared
// window's base for every store (ncu: ~34 instructions per symbol in
// pack_range's loop here).
// `entries(f)` calls f with the lane's entries in order.
template <class Entries>
__device__ inline void pack_range_staged(Entries&& entries, uint32_t start_bit, uint32_t* chunk_stage,
                                         uint32_t& tail_addr, uint32_t& tail) {
    uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(chunk_stage)) + (start_bit >> 5) * 4;
    uint64_t acc = 0;  // `pending` (< 32) bits not yet stored, right-aligned
    uint32_t pending = start_bit & 31;
    entries([&](uint32_t e) {
        const uint32_t len = e >> kCodeLengthShift;
        acc = (acc << len) | (e & kCodeMask);
        pending += len;
        if (pending >= 32) {
            pending -= 32;
            asm volatile("st.shared.u32 [%0], %1;" ::"r"(addr), "r"(static_cast<uint32_t>(acc >> pending)) : "memory");
            addr += 4;
        }
    });
    tail_addr = addr;
    tail = pending > 0 ? static_cast<uint32_t>(acc << (32 - pending)) : 0u;
}
constexpr uint32_t kTileMinChunkSymbols = 257;  // group >= 8: at most 32 chunks per tile
constexpr uint32_t kTileMaxAlphabet = 4096;     // 16 KiB of code table; wider books keep this many entries (kWindowed)
constexpr size_t kTileSmemBudget = 36 * 1024;   // table + stage; registers allow 4 CTAs per SM (64 each)

struct AddWords {
    __device__ uint64_t operator()(uint64_t a, uint64_t b) const { return a + b; }
};
using WordsTileState = cub::ScanTileState<uint64_t>;
using WordsPrefixOp = cub::TilePrefixCallbackOp<uint64_t, AddWords, WordsTileState>;

__global__ void words_tile_init_kernel(WordsTileState state, int tiles) { state.InitializeStatus(tiles); }

// kWindowed: a book wider than kTileMaxAlphabet symbols, whose entries from
// `window_lo` on are in shared memory (WindowedCodes).
template <bool kWindowed>
__global__ void __launch_bounds__(kCodecThreads)
    huffman_encode_tiles_kernel(const uint16_t* __restrict__ d_symbols, SliceLayout l, PackedCodes codes,
                                uint32_t window_lo, WordsTileState tile_state, uint32_t* __restrict__ d_chunk_bits,
                                uint64_t* __restrict__ d_chunk_word_offset, uint32_t* __restrict__ d_words,
                                uint32_t stage_words) {
    __shared__ uint32_t s_chunk_words[kTileMaxChunks];
    __shared__ uint64_t s_prefix;
    __shared__ typename WordsPrefixOp::TempStorage s_lookback;
    extern __shared__ uint32_t s_mem[];  // the code table (or its window), then the tile's stage
    const uint32_t table_entries = kWindowed ? kTileMaxAlphabet : codes.alphabet;
    const auto book = [&] {
        if constexpr (kWindowed) return stage_window(codes, window_lo, kTileMaxAlphabet, s_mem);
        else return stage_codes(codes, s_mem);
    }();
    uint32_t* stage = s_mem + (table_entries + 3) / 4 * 4;

    const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x / 32;
    const uint32_t j = lane % l.group;            // lane in its group
    const uint32_t g = threadIdx.x / l.group;     // the group's chunk in the tile
    const uint32_t tile_chunks = blockDim.x / l.group;
    const auto tile = static_cast<int>(blockIdx.x);
    const uint64_t chunk = uint64_t{blockIdx.x} * tile_chunks + g;
    const SymbolRange r = lane_range(l, chunk, j);  // empty past the last chunk

    // The lane's symbols: in registers when they are 64 whole 16-byte-aligned
    // vectors (the pipelines' 1024-symbol chunks; one read, all loads in
    // flight at once), else read where they lie, twice.
    const bool in_registers = kLaneVectors * 8 == l.lane_symbols && r.end - r.begin == l.lane_symbols &&
                              (reinterpret_cast<uintptr_t>(d_symbols + r.begin) & 15) == 0;
    uint4 q[kLaneVectors];
    if (in_registers) {
        const auto* v = reinterpret_cast<const uint4*>(d_symbols + r.begin);
#pragma unroll
        for (uint32_t k = 0; k < kLaneVectors; ++k) q[k] = __ldg(v + k);
    }
    const auto entries = [&](auto&& f) {
        if (in_registers) {
#pragma unroll
            for (uint32_t k = 0; k < kLaneVectors; ++k) {
                const uint32_t e0 = book.entry(q[k].x & 0xFFFFu), e1 = book.entry(q[k].x >> 16);
                const uint32_t e2 = book.entry(q[k].y & 0xFFFFu), e3 = book.entry(q[k].y >> 16);
                const uint32_t e4 = book.entry(q[k].z & 0xFFFFu), e5 = book.entry(q[k].z >> 16);
                const uint32_t e6 = book.entry(q[k].w & 0xFFFFu), e7 = book.entry(q[k].w >> 16);
                f(e0), f(e1), f(e2), f(e3), f(e4), f(e5), f(e6), f(e7);
            }
        } else {
            for_each_entry(d_symbols, r.begin, r.end, book, f);
        }
    };

    // Bits: the lane's, where they start in the chunk, the chunk's.
    uint32_t bits = 0;
    entries([&](uint32_t e) { bits += e >> kCodeLengthShift; });
    const uint32_t before = group_exclusive_sum(bits, j, l.group);
    const uint32_t chunk_bits = group_sum(bits, l.group);
    const uint32_t words = (chunk_bits + 31) / 32;
    if (j == 0) s_chunk_words[g] = words;
    __syncthreads();
    // Every warp scans the tile's word counts (no second barrier): lane k holds chunk k's.
    const uint32_t mine = lane < tile_chunks ? s_chunk_words[lane] : 0u;
    const uint32_t inclusive = mine + group_exclusive_sum(mine, lane, 32);
    const uint32_t chunk_at = __shfl_sync(kFullMask, inclusive - mine, g % 32);
    const uint32_t tile_words = __shfl_sync(kFullMask, inclusive, 31);
    const bool staged = tile_words <= stage_words;

    if (warp == 0 && lane == 0) {  // publish at once; the look-back comes after warp 0's packing
        if (tile == 0)
            tile_state.SetInclusive(0, tile_words);
        else
            tile_state.SetPartial(tile, tile_words);
    }
    if (staged) {  // the group's chunk into the stage; its last word is only ORed into, so it starts at zero
        uint32_t* out = stage + chunk_at;
        if (j == 0 && words > 0) out[words - 1] = 0;
        __syncwarp();
        uint32_t tail_addr = 0, tail = 0;
        if (r.begin < r.end) pack_range_staged(entries, before, out, tail_addr, tail);
        __syncwarp();
        if (tail != 0) asm volatile("red.shared.or.b32 [%0], %1;" ::"r"(tail_addr), "r"(tail) : "memory");
    }
    if (warp == 0) {
        uint64_t prefix = 0;
        if (tile != 0) {
            WordsPrefixOp op(tile_state, s_lookback, AddWords{}, tile);
            prefix = op(tile_words);  // lane 0's is the tile's exclusive prefix; marks the tile inclusive
        }
        if (lane == 0) s_prefix = prefix;
    }
    __syncthreads();
    const uint64_t prefix = s_prefix;
    if (staged) {
#pragma unroll 4
        for (uint32_t w = threadIdx.x; w < tile_words; w += blockDim.x) d_words[prefix + w] = stage[w];
    } else {  // in place: the group owns its chunk's words
        pack_chunk_zeroed(d_symbols, r, book, before, d_words + prefix + chunk_at, words, j, l.group);
    }
    if (j == 0 && chunk < l.num_chunks) {
        d_chunk_bits[chunk] = chunk_bits;
        d_chunk_word_offset[chunk] = prefix + chunk_at;
    }
    if (threadIdx.x == 0 && blockIdx.x == gridDim.x - 1) d_chunk_word_offset[l.num_chunks] = prefix + tile_words;
}

// One thread per chunk, a warp's 32 chunks in lock step.  Symbols are
// staged per lane in shared memory, 64 at a time (128 bytes), and the warp
// stores the 32 staged lines together, four whole lines per instruction: a
// lane storing its own symbols would touch 32 lines per store instruction
// (bench/NOTES.md).  A line is 33 words apart from the next, so neither the
// lanes' pair stores nor the warp's reads meet in a bank.  The chunk table
// was validated on the host; it is re-checked here only as far as memory
// safety needs.
constexpr uint32_t kStageSymbols = 64;
constexpr uint32_t kStageStride = kStageSymbols / 2 + 1;  // words per lane's line

// A 2-byte store into the staging lines (words, read back as words after a
// __syncwarp): PTX, so no C++ object is accessed through another type.
__device__ __forceinline__ void stage_symbol(uint32_t shared_addr, uint32_t symbol) {
    asm volatile("st.shared.u16 [%0], %1;" ::"r"(shared_addr), "h"(static_cast<uint16_t>(symbol)) : "memory");
}

template <bool kPairs>
__global__ void __launch_bounds__(kDecodeThreads)
    huffman_decode_kernel(const uint32_t* __restrict__ d_lut, uint32_t alphabet, uint32_t sub_entries,
                          const uint32_t* __restrict__ d_first_code, const uint32_t* __restrict__ d_first_index,
                          const uint32_t* __restrict__ d_count, const uint16_t* __restrict__ d_sorted,
                          uint32_t num_sorted, uint32_t max_length, const uint32_t* __restrict__ d_words,
                          uint64_t num_words, const uint32_t* __restrict__ d_chunk_bits,
                          const uint64_t* __restrict__ d_chunk_word_offset, uint64_t num_symbols,
                          uint32_t chunk_symbols, uint64_t num_chunks, uint16_t* d_out, uint32_t* d_corrupt,
                          uint32_t* __restrict__ d_zero_counts) {
    __shared__ uint32_t s_root[kLutSize];
    __shared__ uint32_t s_limit[kMaxLen + 1], s_first_code[kMaxLen + 1], s_first_index[kMaxLen + 1];
    __shared__ uint32_t s_stage[kDecodeThreads * kStageStride];
    // Dynamic: the subtables, then the symbols by code when they fit (kSharedSorted).
    extern __shared__ uint32_t s_dynamic[];
    uint32_t* s_sub = s_dynamic;
    uint16_t* s_sorted = reinterpret_cast<uint16_t*>(s_dynamic + sub_entries);
    const bool sorted_shared = num_sorted <= kSharedSorted;
    for (uint32_t i = threadIdx.x; i < kLutSize; i += blockDim.x) s_root[i] = __ldg(d_lut + i);
    for (uint32_t i = threadIdx.x; i < sub_entries; i += blockDim.x) s_sub[i] = __ldg(d_lut + kLutSize + alphabet + i);
    if (sorted_shared)
        for (uint32_t i = threadIdx.x; i < num_sorted; i += blockDim.x) s_sorted[i] = __ldg(d_sorted + i);
    for (uint32_t len = threadIdx.x; len <= kMaxLen; len += blockDim.x) {
        const uint32_t fc = __ldg(d_first_code + len);
        s_first_code[len] = fc;
        s_first_index[len] = __ldg(d_first_index + len);
        s_limit[len] = len == 0 ? 0u : (fc + __ldg(d_count + len)) << (kMaxLen - len);
    }
    __syncthreads();
    SearchTables search;
    search.limit = s_limit;
    search.first_code = s_first_code;
    search.first_index = s_first_index;
    search.sorted = sorted_shared ? s_sorted : d_sorted;
    search.sorted_shared = sorted_shared;
    search.num_sorted = num_sorted;
    search.max_length = max_length;

    const uint32_t lane = threadIdx.x & 31;
    const uint32_t* warp_stage = s_stage + (threadIdx.x - lane) * kStageStride;
    uint32_t* line = s_stage + threadIdx.x * kStageStride;
    const auto line_addr = static_cast<uint32_t>(__cvta_generic_to_shared(line));
    // 16-byte stores when every staged line starts 16-byte aligned in d_out.
    const bool vector_stores = reinterpret_cast<uintptr_t>(d_out) % 16 == 0 && chunk_symbols % 8 == 0;
    const uint64_t stride = uint64_t{gridDim.x} * blockDim.x;
    for (uint64_t first = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x - lane; first < num_chunks;
         first += stride) {  // the same for the whole warp
        const uint64_t c = first + lane;
        uint32_t count = 0, bits = 0;
        LaneReader reader;
        bool ok = c < num_chunks, bad = false;
        if (ok) {
            const uint64_t begin = c * chunk_symbols;
            count = static_cast<uint32_t>(min(uint64_t{chunk_symbols}, num_symbols - begin));
            const uint64_t lo = d_chunk_word_offset[c], hi = d_chunk_word_offset[c + 1];
            bits = d_chunk_bits[c];
            // Every symbol takes a bit: a chunk without words is corrupt.
            ok = hi > lo && hi <= num_words && hi - lo == (uint64_t{bits} + 31) / 32;
            if (ok) reader.start(d_words + lo, static_cast<uint32_t>(hi - lo));
            else *d_corrupt = 1;
        }
        uint16_t* out = d_out + (ok ? c * chunk_symbols : 0);
        const uint32_t rounds = __reduce_max_sync(kFullMask, ok ? (count + kStageSymbols - 1) / kStageSymbols : 0u);
        uint32_t zeros = 0;  // symbols 0 decoded (off the decoding chain: nearly free)
        for (uint32_t r = 0; r < rounds; ++r) {
            const uint32_t base = r * kStageSymbols;
            uint32_t n = 0;
            if (ok && base < count) {
                n = min(kStageSymbols, count - base);
                if constexpr (kPairs) {
                    // Pair steps while two symbols are left, then a single one.
                    uint32_t k = 0, s0, s1;
                    while (k + 1 < n) {
                        const uint32_t taken = reader.step(s_root, s_sub, search, true, bad, s0, s1);
                        stage_symbol(line_addr + 2 * k, s0);
                        zeros += s0 == 0;
                        if (taken == 2) {
                            stage_symbol(line_addr + 2 * k + 2, s1);
                            zeros += s1 == 0;
                        }
                        k += taken;
                    }
                    if (k < n) {
                        reader.step(s_root, s_sub, search, false, bad, s0, s1);
                        stage_symbol(line_addr + 2 * k, s0);
                        zeros += s0 == 0;
                    }
                } else if (n == kStageSymbols) {
#pragma unroll 4
                    for (uint32_t i = 0; i < kStageSymbols / 2; ++i) {
                        const uint32_t s0 = reader.decode(s_root, s_sub, search, bad);
                        const uint32_t s1 = reader.decode(s_root, s_sub, search, bad);
                        line[i] = s0 | s1 << 16;
                        zeros += (s0 == 0) + (s1 == 0);
                    }
                } else {
                    for (uint32_t i = 0; i < n / 2; ++i) {
                        const uint32_t s0 = reader.decode(s_root, s_sub, search, bad);
                        const uint32_t s1 = reader.decode(s_root, s_sub, search, bad);
                        line[i] = s0 | s1 << 16;
                        zeros += (s0 == 0) + (s1 == 0);
                    }
                    if (n % 2 != 0) {
                        const uint32_t s0 = reader.decode(s_root, s_sub, search, bad);
                        line[n / 2] = s0;
                        zeros += s0 == 0;
                    }
                }
            }
            __syncwarp();
            // Lane l stores 8 symbols (segment l % 8) of the line of lane 4k + l / 8.
#pragma unroll
            for (uint32_t k = 0; k < 8; ++k) {
                const uint32_t owner = 4 * k + lane / 8, seg = lane % 8;
                const uint32_t owner_n = __shfl_sync(kFullMask, n, owner);
                uint16_t* dst = reinterpret_cast<uint16_t*>(
                                    __shfl_sync(kFullMask, reinterpret_cast<unsigned long long>(out), owner)) +
                                base + 8 * seg;
                const uint32_t* src = warp_stage + owner * kStageStride + 4 * seg;
                if (8 * seg + 8 <= owner_n && vector_stores) {
                    *reinterpret_cast<uint4*>(dst) = make_uint4(src[0], src[1], src[2], src[3]);
                } else {
                    for (uint32_t q = 8 * seg; q < owner_n && q < 8 * seg + 8; ++q)
                        dst[q - 8 * seg] = static_cast<uint16_t>(src[(q - 8 * seg) / 2] >> (16 * (q % 2)));
                }
            }
            __syncwarp();
        }
        if (ok && (bad || !reader.finish(bits))) *d_corrupt = 1;
        // The count of a chunk that did not decode says nothing about what
        // its codes hold; a reader of the counts checks them (lorenzo_cuda.cu).
        if (d_zero_counts && c < num_chunks) d_zero_counts[c] = zeros;
    }
}

// The decode tables built on the device from the canonical tables, entry for
// entry what huffman_decode_table (and huffman_pair_root when `pairs`) build
// on the host: on the lent hosts that build and its upload kept the GPU idle
// for 60-80 us before every decompression (bench/NOTES.md).  One block; the
// host checked that every wanted subtable fits (huffman_decoder_shape), so
// the subtables are allocated by one scan in prefix order.
constexpr int kTableThreads = 1024;
constexpr uint32_t kRootPerThread = kLutSize / kTableThreads;
constexpr uint32_t kSubPerThread = kHuffmanSubCapacity / kTableThreads;
constexpr uint32_t kTableSharedSorted = 4096;
static_assert(kRootPerThread * kTableThreads == kLutSize && kSubPerThread * kTableThreads == kHuffmanSubCapacity);

struct MaxOf {
    __device__ uint32_t operator()(uint32_t a, uint32_t b) const { return a > b ? a : b; }
};

__global__ void __launch_bounds__(kTableThreads)
    huffman_decode_tables_kernel(uint32_t* __restrict__ d_root, uint32_t* __restrict__ d_sub,
                                 const uint32_t* __restrict__ d_first_code, const uint32_t* __restrict__ d_first_index,
                                 const uint32_t* __restrict__ d_count, const uint16_t* __restrict__ d_sorted,
                                 uint32_t num_sorted, uint32_t max_length, bool pairs) {
    constexpr uint32_t kRoot = kHuffmanRootBits;
    using Scan = cub::BlockScan<uint32_t, kTableThreads>;
    __shared__ typename Scan::TempStorage s_scan;
    __shared__ uint32_t s_limit[kMaxLen + 1], s_first_code[kMaxLen + 1], s_first_index[kMaxLen + 1];
    __shared__ uint32_t s_root[kLutSize];
    __shared__ uint32_t s_owner[kHuffmanSubCapacity];  // 1 + the root prefix a subtable entry belongs to
    __shared__ uint16_t s_sorted[kTableSharedSorted];   // the symbols by code, when they fit (a global load less per entry)
    const bool sorted_shared = num_sorted <= kTableSharedSorted;
    if (sorted_shared)
        for (uint32_t i = threadIdx.x; i < num_sorted; i += kTableThreads) s_sorted[i] = d_sorted[i];
    if (threadIdx.x <= kMaxLen) {
        const uint32_t len = threadIdx.x, fc = d_first_code[len];
        s_first_code[len] = fc;
        s_first_index[len] = d_first_index[len];
        s_limit[len] = len == 0 ? 0u : (fc + d_count[len]) << (kMaxLen - len);
    }
    for (uint32_t i = threadIdx.x; i < kHuffmanSubCapacity; i += kTableThreads) s_owner[i] = 0;
    __syncthreads();
    // The code at the top of `window` among lengths from `from` on, as an entry (0: none).
    const auto code_at = [&](uint32_t from, uint32_t window) {
        const uint32_t r =
            huffman_search_from(from, s_limit, s_first_code, s_first_index, max_length, num_sorted, window);
        const uint32_t len = HuffmanEntry::length(r);
        if (len == 0) return 0u;
        const uint32_t rank = HuffmanEntry::symbol(r);
        return HuffmanEntry::make(sorted_shared ? s_sorted[rank] : d_sorted[rank], len);
    };

    // Root entries, two consecutive prefixes per thread (the scan's blocked
    // order): a code of at most kRoot bits, or a prefix of longer codes,
    // whose longest is the code at the prefix's last window (canonical codes
    // under a prefix grow in length), or the book's longest when that window
    // is past the last code of an incomplete book.
    uint32_t entry[kRootPerThread], size[kRootPerThread], offset[kRootPerThread];
#pragma unroll
    for (uint32_t k = 0; k < kRootPerThread; ++k) {
        const uint32_t p = threadIdx.x * kRootPerThread + k;
        const uint32_t e = code_at(1, p << (32 - kRoot));
        size[k] = 0;
        entry[k] = e;
        if (HuffmanEntry::length(e) > kRoot) {
            const uint32_t end = code_at(kRoot + 1, (p << (32 - kRoot)) | ((1u << (32 - kRoot)) - 1));
            const uint32_t longest = HuffmanEntry::length(end) != 0 ? HuffmanEntry::length(end) : max_length;
            size[k] = 1u << min(longest - kRoot, uint32_t{kHuffmanSubMaxBits});
            entry[k] = 0;
        }
    }
    Scan(s_scan).ExclusiveSum(size, offset);
#pragma unroll
    for (uint32_t k = 0; k < kRootPerThread; ++k) {
        const uint32_t p = threadIdx.x * kRootPerThread + k;
        if (size[k] != 0) {
            entry[k] = offset[k] | static_cast<uint32_t>(__ffs(size[k]) - 1) << HuffmanEntry::kSubShift;
            s_owner[offset[k]] = p + 1;
        }
        s_root[p] = entry[k];
    }
    __syncthreads();

    // Root out, with pair entries where asked (huffman_pair_root's rule).
    const auto direct = [](uint32_t e) { return (e >> HuffmanEntry::kSubShift) == 0 && HuffmanEntry::length(e) != 0; };
#pragma unroll
    for (uint32_t k = 0; k < kRootPerThread; ++k) {
        const uint32_t i = threadIdx.x * kRootPerThread + k;
        uint32_t out = entry[k];
        const uint32_t len1 = HuffmanEntry::length(out);
        if (pairs && direct(out) && len1 < kRoot && HuffmanEntry::symbol(out) <= HuffmanPair::kMaxSymbol) {
            const uint32_t e2 = s_root[(i << len1) & (kLutSize - 1)];
            const uint32_t len2 = HuffmanEntry::length(e2);
            if (direct(e2) && len1 + len2 <= kRoot && HuffmanEntry::symbol(e2) <= HuffmanPair::kMaxSymbol)
                out = HuffmanPair::kFlag | HuffmanEntry::symbol(out) | HuffmanEntry::symbol(e2) << 10 | len1 << 20 |
                      len2 << 24;
        }
        d_root[i] = out;
    }

    // Subtable entries: the prefix an entry belongs to is the last one
    // starting at or before it (a max-scan of the starts).
    uint32_t owner[kSubPerThread];
#pragma unroll
    for (uint32_t k = 0; k < kSubPerThread; ++k) owner[k] = s_owner[threadIdx.x * kSubPerThread + k];
    __syncthreads();  // s_scan is reused
    Scan(s_scan).InclusiveScan(owner, owner, MaxOf{});
#pragma unroll
    for (uint32_t k = 0; k < kSubPerThread; ++k) {
        const uint32_t j = threadIdx.x * kSubPerThread + k;
        if (owner[k] == 0) continue;
        const uint32_t p = owner[k] - 1, r = s_root[p];
        const uint32_t bits = r >> HuffmanEntry::kSubShift, first = HuffmanEntry::symbol(r);
        if (j >= first + (1u << bits)) continue;  // past the last subtable
        const uint32_t window = p << (32 - kRoot) | (j - first) << (32 - kRoot - bits);
        const uint32_t e = code_at(kRoot + 1, window);
        d_sub[j] = HuffmanEntry::length(e) <= kRoot + bits ? e : 0u;
    }
}

// ---------------------------------------------------------------------------
// Host helpers.

struct DeviceProps {
    int sms = 1;
    size_t smem_optin = kHistSmallSmem;
};

DeviceProps device_props() {
    int device = 0, sms = 0, optin = 0;
    GSZ_CUDA(cudaGetDevice(&device));
    GSZ_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    GSZ_CUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    DeviceProps p;
    p.sms = std::max(sms, 1);
    p.smem_optin = static_cast<size_t>(std::max(optin, 0));
    return p;
}

// Grid for `threads_needed` threads with grid-stride loops past a few waves.
unsigned grid_for(uint64_t threads_needed, int block, int sms) {
    const uint64_t cap = uint64_t(sms) * 64;
    return static_cast<unsigned>(std::max<uint64_t>(1, std::min(ceil_div(threads_needed, block), cap)));
}

template <class T>
void upload(cuda::DeviceBuffer<T>& dst, const std::vector<T>& src, cudaStream_t stream) {
    dst.allocate(src.size(), stream);
    if (!src.empty())
        GSZ_CUDA(cudaMemcpyAsync(dst.data(), src.data(), src.size() * sizeof(T), cudaMemcpyHostToDevice, stream));
}

void check_host_book(const HuffmanCodebook& book) {
    GSZ_CHECK(book.alphabet_size >= 1 && book.alphabet_size <= kHuffmanMaxAlphabet &&
                  book.lengths.size() == book.alphabet_size && book.codes.size() == book.alphabet_size &&
                  book.first_code.size() == kMaxLen + 1 && book.first_index.size() == kMaxLen + 1 &&
                  book.count.size() == kMaxLen + 1 && book.max_length >= 1 && book.max_length <= kMaxLen,
              GSZ_STATUS_INVALID_ARGUMENT, "huffman: codebook is not initialized");
    uint64_t used = 0, kraft = 0;
    for (int len = 1; len <= kMaxLen; ++len) {
        used += book.count[len];
        kraft += uint64_t{book.count[len]} << (kMaxLen - len);
    }
    GSZ_CHECK(used >= 1 && used == book.sorted_symbols.size() && kraft <= (uint64_t{1} << kMaxLen),
              GSZ_STATUS_INVALID_ARGUMENT, "huffman: codebook tables are inconsistent");
}

void check_encoder_book(const HuffmanDeviceBook& book) {
    GSZ_CHECK(book.alphabet_size >= 1 && book.alphabet_size <= kHuffmanMaxAlphabet && book.max_length >= 1 &&
                  book.max_length <= kMaxLen && book.codes && book.codes_count >= 1 &&
                  book.codes_base + uint64_t{book.codes_count} <= book.alphabet_size &&
                  book.tables.size() >= book.codes_count,
              GSZ_STATUS_INVALID_ARGUMENT, "huffman: device codebook is not initialized");
}

void check_device_book(const HuffmanDeviceBook& book) {
    GSZ_CHECK(book.alphabet_size >= 1 && book.alphabet_size <= kHuffmanMaxAlphabet && book.max_length >= 1 &&
                  book.max_length <= kMaxLen && book.num_sorted >= 1 && book.lut && book.first_code &&
                  book.first_index && book.count && book.sorted_symbols &&
                  book.sub_entries <= kHuffmanSubCapacity && book.decode_ready &&
                  book.tables.size() >= kLutSize + book.alphabet_size + kHuffmanSubCapacity + 3 * (kMaxLen + 1) +
                                            (book.num_sorted + 1) / 2,
              GSZ_STATUS_INVALID_ARGUMENT, "huffman: device codebook is not initialized");
}

}  // namespace

void histogram_cuda(const uint16_t* d_symbols, uint64_t n, uint32_t alphabet, uint64_t* d_hist,
                    uint32_t* d_bad_symbol, cudaStream_t stream) {
    GSZ_CHECK(alphabet >= 1 && alphabet <= kHuffmanMaxAlphabet, GSZ_STATUS_INVALID_ARGUMENT,
              "histogram: alphabet size %u out of [1, %u]", alphabet, kHuffmanMaxAlphabet);
    GSZ_CUDA(cudaMemsetAsync(d_hist, 0, size_t{alphabet} * sizeof(uint64_t), stream));
    if (n == 0) return;
    const DeviceProps props = device_props();
    const HistConfig cfg = hist_config(alphabet, props.smem_optin);
    if (cfg.smem_bytes > kHistSmallSmem)
        GSZ_CUDA(cudaFuncSetAttribute(histogram_count_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(cfg.smem_bytes)));
    int per_sm = 0;
    GSZ_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, histogram_count_kernel, kHistThreads,
                                                           cfg.smem_bytes));
    const uint64_t fill = uint64_t(props.sms) * std::max(per_sm, 1);
    uint64_t blocks = std::max<uint64_t>(1, std::min(fill, ceil_div(n, uint64_t{kHistThreads} * 8)));
    // u32 shared counters: a block must see fewer than 2^32 symbols.
    blocks = std::max(blocks, ceil_div(n, uint64_t{1} << 31));
    histogram_count_kernel<<<static_cast<unsigned>(blocks), kHistThreads, cfg.smem_bytes, stream>>>(
        d_symbols, n, alphabet, cfg.window_lo, cfg.width, cfg.tail, cfg.replicas,
        reinterpret_cast<unsigned long long*>(d_hist),
        d_bad_symbol);
    GSZ_CUDA_LAUNCHED("histogram_count_kernel");
}

namespace {

// Copies `words` words to dst through this thread's page-locked staging
// area (one copy, no waiting); fill(h) writes them.  The previous upload's
// copy must have read the area before it is written again (usually long done).
template <class Fill>
void stage_copy(uint32_t* dst, size_t words, cudaStream_t stream, Fill&& fill) {
    struct Staging {
        cuda::PinnedBuffer<uint32_t> host;
        cudaEvent_t copied = nullptr;
        ~Staging() {
            if (copied) cudaEventDestroy(copied);
        }
    };
    static thread_local Staging staging;
    if (!staging.copied)
        GSZ_CUDA(cudaEventCreateWithFlags(&staging.copied, cudaEventDisableTiming));
    else
        GSZ_CUDA(cudaEventSynchronize(staging.copied));
    staging.host.allocate(words);
    fill(staging.host.data());
    GSZ_CUDA(cudaMemcpyAsync(dst, staging.host.data(), words * sizeof(uint32_t), cudaMemcpyHostToDevice, stream));
    GSZ_CUDA(cudaEventRecord(staging.copied, stream));
}

template <class Fill>
void upload_tables(HuffmanDeviceBook& d, size_t words, cudaStream_t stream, Fill&& fill) {
    d.tables.allocate(words, stream);
    stage_copy(d.tables.data(), words, stream, std::forward<Fill>(fill));
}

}  // namespace

// The decoder's buffer: the root (kLutSize), the encoder's entries
// (alphabet), room for the largest subtables (kHuffmanSubCapacity), then the
// canonical tables and the symbols by code.
void huffman_upload_book(const HuffmanCodebook& book, HuffmanDeviceBook& d, cudaStream_t stream) {
    check_host_book(book);
    constexpr size_t kTable = kMaxLen + 1;
    const size_t sorted_words = (book.sorted_symbols.size() + 1) / 2;
    const size_t lut_words = kLutSize + book.alphabet_size + kHuffmanSubCapacity;
    const size_t words = lut_words + 3 * kTable + sorted_words;
    d.alphabet_size = book.alphabet_size;
    d.max_length = book.max_length;
    d.num_sorted = static_cast<uint32_t>(book.sorted_symbols.size());
    d.sub_entries = 0;
    d.pairs = false;
    d.decode_ready = false;
    upload_tables(d, words, stream, [&](uint32_t* h) {
        std::memset(h, 0, lut_words * sizeof(uint32_t));  // root and subtables: huffman_build_decode_tables
        encoder_entries(book, std::span<uint32_t>(h + kLutSize, book.alphabet_size));
        uint32_t* tables = h + lut_words;
        std::memcpy(tables, book.first_code.data(), kTable * sizeof(uint32_t));
        std::memcpy(tables + kTable, book.first_index.data(), kTable * sizeof(uint32_t));
        std::memcpy(tables + 2 * kTable, book.count.data(), kTable * sizeof(uint32_t));
        h[words - 1] = 0;  // the odd symbol count's padding
        std::memcpy(tables + 3 * kTable, book.sorted_symbols.data(), book.sorted_symbols.size() * sizeof(uint16_t));
    });
    const uint32_t* base = d.tables.data();
    d.lut = base;
    d.codes = base + kLutSize;
    d.codes_base = 0;
    d.codes_count = book.alphabet_size;
    d.window_base = 0;
    d.first_code = base + lut_words;
    d.first_index = d.first_code + kTable;
    d.count = d.first_index + kTable;
    d.sorted_symbols = reinterpret_cast<const uint16_t*>(d.count + kTable);
}

void huffman_build_decode_tables(const HuffmanCodebook& book, HuffmanDeviceBook& d, cudaStream_t stream) {
    GSZ_CHECK(d.alphabet_size == book.alphabet_size && d.num_sorted == book.sorted_symbols.size() && d.first_code &&
                  d.tables.size() >= kLutSize + d.alphabet_size + kHuffmanSubCapacity,
              GSZ_STATUS_INVALID_ARGUMENT, "huffman: the book was not uploaded by huffman_upload_book");
    const HuffmanDecoderShape shape = huffman_decoder_shape(book);
    d.sub_entries = shape.sub_entries;
    d.pairs = shape.pair_entries >= kPairRootShare * kLutSize;
    uint32_t* root = d.tables.data();
    uint32_t* sub = root + kLutSize + d.alphabet_size;
    if (shape.sub_demand <= kHuffmanSubCapacity) {
        huffman_decode_tables_kernel<<<1, kTableThreads, 0, stream>>>(root, sub, d.first_code, d.first_index, d.count,
                                                                     d.sorted_symbols, d.num_sorted, d.max_length,
                                                                     d.pairs);
        GSZ_CUDA_LAUNCHED("huffman_decode_tables_kernel");
    } else {  // some subtables do not fit (large alphabets): their greedy allocation on the host
        uint32_t sub_entries = 0;
        bool pairs = false;
        const std::vector<uint32_t> lut = build_lut(book, sub_entries, pairs);
        GSZ_CHECK(sub_entries == d.sub_entries && pairs == d.pairs, GSZ_STATUS_INTERNAL,
                  "huffman: decoder shape disagrees with the tables");
        stage_copy(root, lut.size(), stream, [&](uint32_t* h) { std::memcpy(h, lut.data(), lut.size() * sizeof(uint32_t)); });
    }
    d.decode_ready = true;
}

HuffmanDeviceBook huffman_upload(const HuffmanCodebook& book, cudaStream_t stream) {
    HuffmanDeviceBook d;
    huffman_upload_book(book, d, stream);
    huffman_build_decode_tables(book, d, stream);
    return d;
}

HuffmanDeviceBook huffman_upload_encoder(const HuffmanCodebook& book, cudaStream_t stream) {
    HuffmanDeviceBook d;
    huffman_upload_encoder(book, d, stream);
    return d;
}

uint32_t huffman_encoder_window(uint32_t shortest_symbol, uint32_t codes_base, uint32_t codes_count) {
    if (codes_count <= kTileMaxAlphabet) return codes_base;
    const uint32_t centred = shortest_symbol - std::min<uint32_t>(shortest_symbol, kTileMaxAlphabet / 2);
    return std::clamp(centred, codes_base, codes_base + codes_count - kTileMaxAlphabet);
}

void huffman_upload_encoder(const HuffmanCodebook& book, HuffmanDeviceBook& d, cudaStream_t stream) {
    check_host_book(book);
    d.lut = d.first_code = d.first_index = d.count = nullptr;
    d.sorted_symbols = nullptr;
    d.sub_entries = 0;
    d.pairs = false;
    d.decode_ready = false;
    d.alphabet_size = book.alphabet_size;
    d.max_length = book.max_length;
    d.num_sorted = static_cast<uint32_t>(book.sorted_symbols.size());
    // Only the entries from the smallest coded symbol to the largest: interp's
    // quant-codes use a few hundred of 65,526 symbols at loose bounds, and a
    // window that small fits the one-pass encoder's shared-memory table.
    const auto [lo, hi] = std::minmax_element(book.sorted_symbols.begin(), book.sorted_symbols.end());
    d.codes_base = *lo;
    d.codes_count = uint32_t{*hi} - *lo + 1;
    // The one-pass encoder's shared-memory window: centred on the shortest
    // code's symbol (sorted_symbols is in (length, symbol) order).
    d.window_base = huffman_encoder_window(book.sorted_symbols[0], d.codes_base, d.codes_count);
    upload_tables(d, d.codes_count, stream,
                  [&](uint32_t* h) { encoder_entries(book, std::span<uint32_t>(h, d.codes_count), d.codes_base); });
    d.codes = d.tables.data();
}

uint64_t huffman_max_words(std::span<const uint64_t> histogram, const HuffmanCodebook& book, uint64_t n,
                           uint32_t chunk_symbols) {
    uint64_t bits = 0;  // over the coded symbols: a symbol without a code has no count
    for (const uint16_t s : book.sorted_symbols)
        if (s < histogram.size()) bits += histogram[s] * book.lengths[s];
    // Every chunk starts on a word: at most one partial word per chunk.
    return bits / 32 + ceil_div(n, uint64_t{chunk_symbols}) + 1;
}

void huffman_stream_read_words(HuffmanDeviceStream& out, cudaStream_t stream) {
    uint64_t total = 0;
    GSZ_CUDA(cudaMemcpyAsync(&total, out.chunk_word_offset.data() + out.num_chunks, sizeof total,
                             cudaMemcpyDeviceToHost, stream));
    GSZ_CUDA(cudaStreamSynchronize(stream));
    GSZ_CHECK(total <= out.words.size(), GSZ_STATUS_INTERNAL, "huffman: %llu words exceed the bound %zu",
              static_cast<unsigned long long>(total), out.words.size());
    out.num_words = total;
}

namespace {

bool one_pass(const SliceLayout& l) {
    return l.slices_per_chunk == 1 && l.chunk_symbols >= kTileMinChunkSymbols;
}

uint64_t one_pass_tiles(const SliceLayout& l) { return ceil_div(l.num_chunks, kCodecThreads / l.group); }

// The look-back's tile states for `tiles` tiles, initialized on the stream
// unless huffman_encode_prepare already did (that initialization is used once).
WordsTileState tile_state_for(HuffmanDeviceStream& out, uint64_t tiles, cudaStream_t stream) {
    GSZ_CHECK(tiles <= static_cast<uint64_t>(std::numeric_limits<int>::max()), GSZ_STATUS_INVALID_ARGUMENT,
              "huffman: %llu tiles are too many for one launch", static_cast<unsigned long long>(tiles));
    size_t state_bytes = 0;
    GSZ_CUDA(WordsTileState::AllocationSize(static_cast<int>(tiles), state_bytes));
    WordsTileState state;
    if (out.ready_tiles != tiles) {
        out.tile_state.allocate(state_bytes, stream);
        GSZ_CUDA(state.Init(static_cast<int>(tiles), out.tile_state.data(), state_bytes));
        const auto init_blocks = static_cast<unsigned>(ceil_div(tiles, 256));
        words_tile_init_kernel<<<init_blocks, 256, 0, stream>>>(state, static_cast<int>(tiles));
        GSZ_CUDA_LAUNCHED("words_tile_init_kernel");
    } else {
        GSZ_CUDA(state.Init(static_cast<int>(tiles), out.tile_state.data(), state_bytes));
    }
    out.ready_tiles = 0;
    return state;
}

// The one-pass encoder's launch (huffman_encode_tiles_kernel).
void encode_tiles(const PackedCodes& codes, uint32_t window_lo, uint32_t max_length, const uint16_t* d_symbols,
                  const SliceLayout& l, HuffmanDeviceStream& out, cudaStream_t stream, uint64_t max_words) {
    const uint32_t tile_chunks = kCodecThreads / l.group;
    const uint64_t tiles = one_pass_tiles(l);
    // Words: the histogram's bound, or the longest code's.
    const uint64_t longest_chunk_words = ceil_div(uint64_t{l.chunk_symbols} * max_length, 32);
    const uint64_t bound = max_words ? max_words : l.num_chunks * longest_chunk_words;
    out.words.allocate(bound, stream);
    // The stage: twice the average tile (a denser tile is packed in place),
    // within the shared-memory budget and no more than a tile can take.
    const bool windowed = codes.alphabet > kTileMaxAlphabet;
    GSZ_CHECK(!windowed || (window_lo >= codes.base && window_lo - codes.base <= codes.alphabet - kTileMaxAlphabet),
              GSZ_STATUS_INVALID_ARGUMENT, "huffman: encoder window at %u outside the book's %u symbols from %u",
              window_lo, codes.alphabet, codes.base);
    const size_t table_bytes = (size_t{windowed ? kTileMaxAlphabet : codes.alphabet} + 3) / 4 * 4 * sizeof(uint32_t);
    const uint64_t average = ceil_div(bound, tiles);
    const uint64_t stage_words = std::min<uint64_t>({std::max<uint64_t>(2 * average, 1024),
                                                     uint64_t{tile_chunks} * longest_chunk_words,
                                                     (kTileSmemBudget - table_bytes) / sizeof(uint32_t)});
    const size_t smem = table_bytes + stage_words * sizeof(uint32_t);

    const WordsTileState state = tile_state_for(out, tiles, stream);
    const auto kernel = windowed ? huffman_encode_tiles_kernel<true> : huffman_encode_tiles_kernel<false>;
    kernel<<<static_cast<unsigned>(tiles), kCodecThreads, smem, stream>>>(
        d_symbols, l, codes, window_lo, state, out.chunk_bits.data(), out.chunk_word_offset.data(), out.words.data(),
        static_cast<uint32_t>(stage_words));
    GSZ_CUDA_LAUNCHED("huffman_encode_tiles_kernel");
    if (max_words) {
        out.num_words = 0;  // huffman_stream_read_words reads it back
    } else {
        uint64_t total = 0;
        GSZ_CUDA(cudaMemcpyAsync(&total, out.chunk_word_offset.data() + l.num_chunks, sizeof total,
                                 cudaMemcpyDeviceToHost, stream));
        GSZ_CUDA(cudaStreamSynchronize(stream));
        out.num_words = total;
    }
}

}  // namespace

void huffman_encode_cuda(const HuffmanDeviceBook& book, const uint16_t* d_symbols, uint64_t n,
                         uint32_t chunk_symbols, HuffmanDeviceStream& out, cudaStream_t stream, uint64_t max_words) {
    check_encoder_book(book);
    GSZ_CHECK(chunk_symbols >= 1 && chunk_symbols <= kMaxChunkSymbols, GSZ_STATUS_INVALID_ARGUMENT,
              "huffman: chunk size %u out of [1, %u]", chunk_symbols, kMaxChunkSymbols);
    const SliceLayout l = make_slice_layout(n, chunk_symbols);
    GSZ_CHECK(l.num_chunks <= std::numeric_limits<uint32_t>::max(), GSZ_STATUS_INVALID_ARGUMENT,
              "huffman: %llu chunks do not fit the u32 chunk count", static_cast<unsigned long long>(l.num_chunks));
    out.num_symbols = n;
    out.chunk_symbols = chunk_symbols;
    out.num_chunks = l.num_chunks;
    out.chunk_bits.allocate(l.num_chunks, stream);
    out.chunk_word_offset.allocate(l.num_chunks + 1, stream);
    uint64_t* d_offset = out.chunk_word_offset.data();
    if (n == 0) {
        GSZ_CUDA(cudaMemsetAsync(d_offset, 0, sizeof(uint64_t), stream));
        out.words.allocate(0, stream);
        out.num_words = 0;
        return;
    }
    const DeviceProps props = device_props();

    const PackedCodes codes{book.codes, book.codes_count, book.codes_base};
    if (one_pass(l)) {
        encode_tiles(codes, book.window_base, book.max_length, d_symbols, l, out, stream, max_words);
        return;
    }

    GSZ_CUDA(cudaMemsetAsync(d_offset + l.num_chunks, 0, sizeof(uint64_t), stream));  // becomes the total

    // (a) bits per lane, slice and chunk; words per chunk into d_offset.
    cuda::DeviceBuffer<uint32_t> slices, lanes;
    uint32_t* d_slice = out.chunk_bits.data();
    if (l.slices_per_chunk > 1) {
        slices.allocate(l.num_slices, stream);
        d_slice = slices.data();
    }
    // One lane per slice only when chunk_symbols <= kLaneSymbols: then lane bits are chunk bits.
    const uint32_t* d_lane_bits = out.chunk_bits.data();
    if (l.group > 1) {
        lanes.allocate(l.num_slices * l.group, stream);
        d_lane_bits = lanes.data();
    }
    const unsigned codec_grid = grid_for(l.num_slices * l.group, kCodecThreads, props.sms);
    huffman_measure_kernel<<<codec_grid, kCodecThreads, 0, stream>>>(
        d_symbols, l, codes, d_slice, l.slices_per_chunk == 1 ? d_offset : nullptr,
        l.group > 1 ? lanes.data() : nullptr);
    GSZ_CUDA_LAUNCHED("huffman_measure_kernel");
    if (l.slices_per_chunk > 1) {
        huffman_scan_kernel<<<grid_for(l.num_chunks * 32, kCodecThreads, props.sms), kCodecThreads, 0, stream>>>(
            l, d_slice, out.chunk_bits.data(), d_offset);
        GSZ_CUDA_LAUNCHED("huffman_scan_kernel");
    }

    // (b) word offsets: exclusive prefix over num_chunks + 1 entries (the last is 0, giving the total).
    const uint64_t num_items = l.num_chunks + 1;
    size_t temp_storage_bytes = 0;
    GSZ_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, temp_storage_bytes, d_offset, num_items, stream));
    cuda::DeviceBuffer<uint8_t> temp(temp_storage_bytes, stream);
    GSZ_CUDA(cub::DeviceScan::ExclusiveSum(temp.data(), temp_storage_bytes, d_offset, num_items, stream));
    if (max_words) {  // no waiting: words for the bound; the count is read back later
        out.num_words = 0;
        out.words.allocate(max_words, stream);
    } else {
        uint64_t total = 0;
        GSZ_CUDA(cudaMemcpyAsync(&total, d_offset + l.num_chunks, sizeof total, cudaMemcpyDeviceToHost, stream));
        GSZ_CUDA(cudaStreamSynchronize(stream));
        out.num_words = total;
        out.words.allocate(total, stream);
    }

    // (c) pack.
    // Staged packing for whole chunks at 4+ bits per symbol on average (the
    // word count, or its bound, tells), with the table in shared memory.
    const uint64_t known_words = max_words ? max_words - std::min(max_words, l.num_chunks + 1) : out.num_words;
    const bool staged = l.slices_per_chunk == 1 && codes.alphabet <= kSharedCodes && known_words * 8 >= n;
    // A group's stretch: its slice's longest possible chunk, at most kPackStageWords.
    const auto stretch_words = static_cast<uint32_t>(
        std::min<uint64_t>(kPackStageWords, ceil_div(uint64_t{l.slice_symbols} * book.max_length, 32) + 1));
    const size_t pack_bytes =
        staged ? (size_t{codes.alphabet} + 3) / 4 * 4 * sizeof(uint32_t) +
                     size_t{kCodecThreads / 32} * (32 / l.group) * stretch_words * sizeof(uint32_t)
               : 0;
    if (!staged) out.words.zero(stream);
    auto pack = staged ? huffman_pack_kernel<true> : huffman_pack_kernel<false>;
    if (pack_bytes > 48 * 1024)
        GSZ_CUDA(cudaFuncSetAttribute(pack, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(pack_bytes)));
    pack<<<codec_grid, kCodecThreads, pack_bytes, stream>>>(
        d_symbols, l, codes, d_lane_bits, l.slices_per_chunk > 1 ? d_slice : nullptr, d_offset, out.words.data(),
        stretch_words);
    GSZ_CUDA_LAUNCHED("huffman_pack_kernel");
}

void huffman_encode_prepare(uint64_t n, uint32_t chunk_symbols, HuffmanDeviceStream& out, cudaStream_t stream) {
    if (n == 0 || chunk_symbols < 1 || chunk_symbols > kMaxChunkSymbols) return;
    const SliceLayout l = make_slice_layout(n, chunk_symbols);
    if (!one_pass(l)) return;
    const uint64_t tiles = one_pass_tiles(l);
    out.ready_tiles = 0;
    tile_state_for(out, tiles, stream);
    out.ready_tiles = tiles;
}

void huffman_decode_cuda(const HuffmanDeviceBook& book, const uint32_t* d_words, uint64_t num_words,
                         const uint32_t* d_chunk_bits, const uint64_t* d_chunk_word_offset, uint64_t num_symbols,
                         uint32_t chunk_symbols, uint16_t* d_out, uint32_t* d_corrupt, cudaStream_t stream,
                         uint32_t* d_zero_counts) {
    check_device_book(book);
    GSZ_CHECK(chunk_symbols >= 1 && chunk_symbols <= kMaxChunkSymbols, GSZ_STATUS_INVALID_ARGUMENT,
              "huffman: chunk size %u out of [1, %u]", chunk_symbols, kMaxChunkSymbols);
    const uint64_t num_chunks = ceil_div(num_symbols, chunk_symbols);
    if (num_chunks == 0) return;
    const unsigned blocks = static_cast<unsigned>(std::min<uint64_t>(ceil_div(num_chunks, kDecodeThreads), 1u << 20));
    const size_t dynamic_bytes = size_t{book.sub_entries} * sizeof(uint32_t) +
                                 (book.num_sorted <= kSharedSorted ? book.num_sorted * sizeof(uint16_t) : 0);
    // The staging lines and tables take ~25 KiB of static shared memory, so
    // large subtables and symbol tables need the opt-in above the default 48 KiB.
    const auto kernel = book.pairs ? huffman_decode_kernel<true> : huffman_decode_kernel<false>;
    if (dynamic_bytes > 20 * 1024)
        GSZ_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(dynamic_bytes)));
    kernel<<<blocks, kDecodeThreads, dynamic_bytes, stream>>>(
        book.lut, book.alphabet_size, book.sub_entries, book.first_code, book.first_index, book.count,
        book.sorted_symbols, book.num_sorted, book.max_length, d_words, num_words, d_chunk_bits, d_chunk_word_offset,
        num_symbols, chunk_symbols, num_chunks, d_out, d_corrupt, d_zero_counts);
    GSZ_CUDA_LAUNCHED("huffman_decode_kernel");
}

}  // namespace gsz::encode
