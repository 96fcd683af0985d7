// The CUDA backend's recipe for the lorenzo pipeline: the same stages in the
// same order as the CPU recipe, on device buffers; the codebook is built on
// the host from the GPU histogram (huffman_build), and the archive is
// assembled by the same code as on the CPU, so the bytes are identical.
#include "pipeline/bench.hpp"
#include "pipeline/components.hpp"
#include "pipeline/fast_sections.hpp"
#include "pipeline/interp_sections.hpp"
#include "pipeline/lorenzo_sections.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/pipeline_cuda.hpp"

#include "encode/ans_cuda.hpp"
#include "encode/huffman_cuda.hpp"
#include "encode/run_tokens_cuda.hpp"
#include "predict/fast/fast_cuda.hpp"
#include "predict/fill/fill_mask_cuda.hpp"
#include "predict/interp/interp_cuda.hpp"
#include "runtime/cuda/stage_trace.hpp"
#include "predict/lorenzo/lorenzo_cuda.hpp"
#include "runtime/cuda/device_buffer.hpp"

#include <cub/block/block_reduce.cuh>
#include <cuda/std/limits>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <span>

namespace gsz::pipeline {

namespace {

constexpr int kRangeThreads = 256;
constexpr unsigned kRangeMaxBlocks = 2048;

template <class T>
struct MinMax {
    T lo, hi;
};

// The range pass kept on the device: the last CTA of the range kernel
// combines the partials and derives the absolute bound as plan_header does
// (rel: bound * (max - min) in double), so an encoder can read the bound from
// device memory and follow the range pass without a round trip.  The host
// reads `lo`, `hi`, `any` later, plans the header from them and checks that
// it derived the same bound.
struct DeviceRange {
    double lo, hi, eb_abs;
    uint32_t any;
};

// The host's view of a range the device left.
FiniteRange finite_range_of(const DeviceRange& d) {
    FiniteRange r;
    r.any = d.any != 0;
    r.min = r.any ? d.lo : std::numeric_limits<double>::quiet_NaN();
    r.max = r.any ? d.hi : std::numeric_limits<double>::quiet_NaN();
    return r;
}

// Where the last CTA leaves the range, and how it knows it is the last.
struct RangeFinish {
    DeviceRange* out = nullptr;
    unsigned* done = nullptr;    // CTAs finished; zero between launches (the last CTA resets it)
    bool rel = false;
    double bound = 0;
    predict::QuantParams* quant = nullptr;  // not null: the Lorenzo encoder's parameters for the bound
    uint32_t radius = 0;
};

// Per-block min/max of the finite values, combined by the last CTA to finish
// (RangeFinish).  min and max are exact and order-independent,
// so the result matches the CPU.  16-byte loads, four in flight per thread,
// keep HBM busy (a memory-bound pass).
template <class T>
__global__ void __launch_bounds__(kRangeThreads)
    finite_range_kernel(const T* __restrict__ data, uint64_t n, MinMax<T>* __restrict__ partials,
                        RangeFinish finish, bool skip, uint64_t skip_bits) {
    T lo = ::cuda::std::numeric_limits<T>::infinity(), hi = -::cuda::std::numeric_limits<T>::infinity();
    auto take = [&](T v) {
        if (isfinite(v) && !(skip && predict::fill_bits_of(v) == skip_bits)) {
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
    };
    constexpr int kPer = 16 / sizeof(T);
    constexpr int kUnroll = 4;  // 8 in flight, or a grid of exactly the resident CTAs: within 3% (bench/NOTES.md)
    const uint64_t stride = uint64_t{gridDim.x} * kRangeThreads;
    const uint64_t tid = blockIdx.x * uint64_t{kRangeThreads} + threadIdx.x;
    const uint64_t vectors = reinterpret_cast<uintptr_t>(data) % 16 == 0 ? n / kPer : 0;
    // Read from the end backwards: the array's start, which the pass after
    // this one reads first, is then what the L2 cache holds.
    const uint4* vec_end = reinterpret_cast<const uint4*>(data) + vectors - 1;
    for (uint64_t base = tid; base < vectors; base += kUnroll * stride) {
        uint4 q[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u)
            if (base + u * stride < vectors) q[u] = __ldcg(vec_end - (base + u * stride));
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            if (base + u * stride < vectors) {
                T v[kPer];
                memcpy(v, &q[u], 16);
#pragma unroll
                for (int k = 0; k < kPer; ++k) take(v[k]);
            }
        }
    }
    for (uint64_t i = vectors * kPer + tid; i < n; i += stride) take(data[i]);
    using BlockReduce = cub::BlockReduce<T, kRangeThreads>;
    __shared__ typename BlockReduce::TempStorage storage;
    const T block_lo = BlockReduce(storage).Reduce(lo, [](T a, T b) { return a < b ? a : b; });
    __syncthreads();
    const T block_hi = BlockReduce(storage).Reduce(hi, [](T a, T b) { return a > b ? a : b; });
    if (threadIdx.x == 0) partials[blockIdx.x] = {block_lo, block_hi};

    // The last CTA (threadFenceReduction's pattern): partials written, fenced, counted.
    __shared__ bool last;
    if (threadIdx.x == 0) {
        __threadfence();
        last = atomicAdd(finish.done, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;
    lo = ::cuda::std::numeric_limits<T>::infinity();
    hi = -::cuda::std::numeric_limits<T>::infinity();
    for (unsigned i = threadIdx.x; i < gridDim.x; i += kRangeThreads) {
        const T plo = __ldcg(&partials[i].lo), phi = __ldcg(&partials[i].hi);
        lo = plo < lo ? plo : lo;
        hi = phi > hi ? phi : hi;
    }
    lo = BlockReduce(storage).Reduce(lo, [](T a, T b) { return a < b ? a : b; });
    __syncthreads();
    hi = BlockReduce(storage).Reduce(hi, [](T a, T b) { return a > b ? a : b; });
    if (threadIdx.x == 0) {
        const bool any = lo <= hi;
        const double dlo = static_cast<double>(lo), dhi = static_cast<double>(hi);
        finish.out->lo = dlo;
        finish.out->hi = dhi;
        finish.out->any = any;
        const double eb_abs = finish.rel ? (any ? finish.bound * (dhi - dlo) : 0.0) : finish.bound;
        finish.out->eb_abs = eb_abs;
        if (finish.quant) *finish.quant = predict::QuantParams::from_bound(eb_abs, finish.radius);
        *finish.done = 0;
    }
}

// Launches the range pass (of the values that are not `skip`'s fill value,
// where one is given: fill_choice.hpp), whose last CTA leaves a DeviceRange at
// scratch[0] (its counter next, then the Lorenzo parameters when
// lorenzo_radius is not 0, at *quant, then the partials); scratch grows when
// needed and is meant to be kept across calls (an allocation costs tens of
// microseconds of host time, during which the GPU would wait for its first
// kernel), and the whole step is one launch for the same reason.
template <class T>
DeviceRange* finite_range_on_device(const T* d_data, uint64_t n, const gsz_params& params,
                                    cuda::DeviceBuffer<uint8_t>& scratch, cudaStream_t stream,
                                    uint32_t lorenzo_radius = 0, predict::QuantParams** quant = nullptr,
                                    const predict::FillValue* skip = nullptr) {
    const auto blocks = static_cast<unsigned>(
        std::max<uint64_t>(1, std::min<uint64_t>(kRangeMaxBlocks, (n + kRangeThreads * 8 - 1) / (kRangeThreads * 8))));
    constexpr size_t kDoneAt = (sizeof(DeviceRange) + 15) / 16 * 16, kQuantAt = kDoneAt + 16;
    constexpr size_t kPartialsAt = kQuantAt + (sizeof(predict::QuantParams) + 15) / 16 * 16;
    const bool fresh = scratch.capacity() < kPartialsAt + blocks * sizeof(MinMax<T>);
    scratch.allocate(kPartialsAt + blocks * sizeof(MinMax<T>), stream);
    if (fresh) GSZ_CUDA(cudaMemsetAsync(scratch.data() + kDoneAt, 0, sizeof(unsigned), stream));
    RangeFinish finish;
    finish.out = reinterpret_cast<DeviceRange*>(scratch.data());
    finish.done = reinterpret_cast<unsigned*>(scratch.data() + kDoneAt);
    finish.rel = params.error_mode == GSZ_ERROR_REL;
    finish.bound = params.error_bound;
    if (lorenzo_radius) {
        finish.quant = reinterpret_cast<predict::QuantParams*>(scratch.data() + kQuantAt);
        finish.radius = lorenzo_radius;
        *quant = finish.quant;
    }
    auto* partials = reinterpret_cast<MinMax<T>*>(scratch.data() + kPartialsAt);
    finite_range_kernel<T><<<blocks, kRangeThreads, 0, stream>>>(d_data, n, partials, finish, skip && skip->on,
                                                                 skip ? skip->bits : 0);
    GSZ_CUDA_LAUNCHED("finite_range_kernel");
    return finish.out;
}

cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }

// Copies a device array to the host only when a host copy is not given.
template <class T>
const T* host_view(const T* h_data, const T* d_data, uint64_t n, std::vector<T>& storage, cudaStream_t stream) {
    if (h_data) return h_data;
    cuda::copy_to_host(storage, d_data, n, stream);
    return storage.data();
}

// The quant-codes' entropy stage on the device (code_stage.hpp): histograms
// on the device, the choice and the codebook or tables on the host (the CPU's
// code), run tokens, Huffman or rANS encoding on the device.
struct DeviceCodeStage {
    std::optional<RunTokensParams> runs;
    encode::HuffmanCodebook book;
    encode::HuffmanDeviceStream stream;
    bool words_pending = false;  // stream.num_words not read back yet
    uint64_t num_symbols = 0;
    std::optional<encode::AnsTables> ans;  // set: rANS, the Huffman members unused
    encode::AnsDeviceStream ans_stream;
    cuda::DeviceBuffer<uint64_t> hist;           // kept across calls
    cuda::PinnedBuffer<uint64_t> hist_host;
    cuda::DeviceBuffer<uint64_t> ans_hist;       // "ans": (context, symbol) counts, kept across calls
    cuda::PinnedBuffer<uint64_t> ans_hist_host;
    cuda::Event ans_sampled;                     // the sampled layouts' histograms are in ans_hist_host
    encode::HuffmanDeviceBook device_book;       // the encoder's table, its buffer kept across calls
    encode::HuffmanDeviceBuilder builder;        // the codebook built on the device (Huffman only)
    bool book_on_device = false;                 // `book` is still on the device (fetch_codes reads it)
    uint32_t alphabet = 0;
};

// The histogram of d_symbols, read back through page-locked memory (one
// synchronization); `d_hist` and `h_hist` are reused across calls.  The
// result lies in `h_hist` (valid until its next use): copying it to a fresh
// host vector cost ~0.1 ms per call on the lent H100 hosts.  `extra` words
// after it, zeroed, are lent to `launch_extra` (work of the same batch, such
// as the runs' sample) and come back with it, at h_hist.data() + alphabet + 1.
void histogram_launch(const uint16_t* d_symbols, uint64_t n, uint32_t alphabet, cudaStream_t stream,
                      cuda::DeviceBuffer<uint64_t>& d_hist, cuda::PinnedBuffer<uint64_t>& h_hist, uint32_t extra = 0,
                      const std::function<void(uint64_t*)>& launch_extra = {}) {
    const size_t words = size_t{alphabet} + 1 + extra;
    d_hist.allocate(words, stream);  // the entry after the histogram flags a bad symbol
    uint32_t* d_bad = reinterpret_cast<uint32_t*>(d_hist.data() + alphabet);
    GSZ_CUDA(cudaMemsetAsync(d_bad, 0, (1 + extra) * sizeof(uint64_t), stream));
    if (extra && launch_extra) launch_extra(d_hist.data() + alphabet + 1);
    encode::histogram_cuda(d_symbols, n, alphabet, d_hist.data(), d_bad, stream);
    h_hist.allocate(words);
    GSZ_CUDA(cudaMemcpyAsync(h_hist.data(), d_hist.data(), words * sizeof(uint64_t), cudaMemcpyDeviceToHost, stream));
}

// histogram_launch's histogram, once the stream has been synchronized.
std::span<const uint64_t> histogram_read(uint32_t alphabet, const cuda::PinnedBuffer<uint64_t>& h_hist) {
    GSZ_CHECK(h_hist.data()[alphabet] == 0, GSZ_STATUS_INTERNAL, "quant-code outside the alphabet");
    return {h_hist.data(), alphabet};
}

std::span<const uint64_t> histogram_on_device(const uint16_t* d_symbols, uint64_t n, uint32_t alphabet,
                                          cudaStream_t stream, cuda::DeviceBuffer<uint64_t>& d_hist,
                                          cuda::PinnedBuffer<uint64_t>& h_hist, uint32_t extra = 0,
                                          const std::function<void(uint64_t*)>& launch_extra = {}) {
    histogram_launch(d_symbols, n, alphabet, stream, d_hist, h_hist, extra, launch_extra);
    GSZ_CUDA(cudaStreamSynchronize(stream));
    return histogram_read(alphabet, h_hist);
}

// "ans"'s (context, symbol) histograms counted and copied to page-locked
// memory, without waiting (the codes' histogram's synchronization covers the
// first): one per context layout of `tries` (code_stage_ans_tries: the
// sample the class lag and the strips are chosen on, code_stage_encode_cpu),
// one after the other, over every `sample_stride`-th chunk of codes.
uint32_t ans_bins(const encode::AnsContextShape& shape, const AnsLayoutTry& t) {
    return shape.with_strips(t.strip_width).num_contexts() * encode::kAnsAlphabet;
}

void ans_histogram_launch(const uint16_t* d_codes, uint64_t n, uint32_t radius, const encode::AnsContextShape& shape,
                          std::span<const AnsLayoutTry> tries, uint32_t sample_stride, DeviceCodeStage& out,
                          cudaStream_t stream) {
    uint64_t counted = 0;
    for (const AnsLayoutTry& t : tries) counted += ans_bins(shape, t);
    constexpr uint64_t kMostBins = 2 * (encode::kAnsMaxLevels * encode::kAnsClasses + encode::kAnsMaxContexts) *
                                   encode::kAnsAlphabet;  // two lags, raster and strips
    GSZ_CHECK(counted <= kMostBins, GSZ_STATUS_INTERNAL, "ans histograms: %llu bins",
              static_cast<unsigned long long>(counted));
    out.ans_hist.allocate(kMostBins + 1, stream);
    uint32_t* d_bad = reinterpret_cast<uint32_t*>(out.ans_hist.data() + counted);  // a bad code's flag
    GSZ_CUDA(cudaMemsetAsync(d_bad, 0, sizeof(uint64_t), stream));
    uint64_t at = 0;
    for (const AnsLayoutTry& t : tries) {
        encode::ans_histogram_cuda(d_codes, n, radius, shape.with_strips(t.strip_width), out.ans_hist.data() + at,
                                   d_bad, stream, t.class_lag, sample_stride);
        at += ans_bins(shape, t);
    }
    out.ans_hist_host.allocate(kMostBins + 1);
    GSZ_CUDA(cudaMemcpyAsync(out.ans_hist_host.data(), out.ans_hist.data(), (counted + 1) * sizeof(uint64_t),
                             cudaMemcpyDeviceToHost, stream));
}

// The launched histograms, once the stream has been synchronized (in
// `out.ans_hist_host`, valid until its next use), in the order of `tries`.
std::vector<std::span<const uint64_t>> ans_histogram_read(const encode::AnsContextShape& shape,
                                                          std::span<const AnsLayoutTry> tries,
                                                          const DeviceCodeStage& out) {
    std::vector<std::span<const uint64_t>> h;
    uint64_t at = 0;
    for (const AnsLayoutTry& t : tries) {
        h.emplace_back(out.ans_hist_host.data() + at, ans_bins(shape, t));
        at += ans_bins(shape, t);
    }
    GSZ_CHECK(out.ans_hist_host.data()[at] == 0, GSZ_STATUS_INTERNAL, "quant-code outside the alphabet");
    return h;
}

// GSZ_HOST_CODEBOOK=1 in the environment: Huffman-only codebooks built on the
// host from the histogram read back, as before the device build (for A/B runs).
constexpr uint32_t kDeviceCodebookMinAlphabet = 4096;

bool host_codebook_forced() {
    static const bool forced = [] {
        const char* v = std::getenv("GSZ_HOST_CODEBOOK");
        return v != nullptr && std::strcmp(v, "1") == 0;
    }();
    return forced;
}

// `after_histogram(zero_codes, s)` enqueues GPU work that needs the codes'
// histogram (the count of code 0) on stream s: `stream`, or a side stream
// that `stream` waits for before this function returns.
void code_stage_encode_cuda(const uint16_t* d_codes, uint64_t n, uint32_t radius,
                            const encode::AnsContextShape& shape, gsz_lossless mode, DeviceCodeStage& out,
                            cudaStream_t stream,
                            const std::function<void(uint64_t zero_codes, cudaStream_t s)>& after_histogram = {}) {
    const uint32_t alphabet = 2 * radius;
    out.ans.reset();  // `out` may hold an earlier call's choice
    out.runs.reset();
    out.book_on_device = false;
    out.alphabet = alphabet;
    cuda::StageTrace trace(stream, "code stage");
    // Huffman's look-back states, initialized before the histogram's synchronization.
    if (mode == GSZ_LOSSLESS_NONE)
        encode::huffman_encode_prepare(n, kHuffmanChunkSymbols, out.stream, stream);
    // Huffman only, wide alphabets (interp's): the histogram, the codebook and
    // the encoder run on the device one after the other, the host waiting
    // once, for the book's sizes (its build took 0.2-0.6 ms of host time there
    // on interp's books).  Lorenzo's 1,024 symbols build faster on the host
    // than the device's sort and one-block build run (H200: 413 against 443
    // GB/s at etopoT rel 1e-4, bench/RESULTS.md).
    // The after-histogram work (interp's outlier selection, a pass over the
    // codes) runs on a side stream beside the sort and the one-block build,
    // which leave most of the GPU idle: forked once the histogram is counted.
    thread_local cuda::StreamFork beside_build(false);
    bool after_histogram_done = false;
    if (mode == GSZ_LOSSLESS_NONE && alphabet > kDeviceCodebookMinAlphabet && n < (uint64_t{1} << 32) &&
        !host_codebook_forced()) {
        out.hist.allocate(size_t{alphabet} + 1, stream);
        uint64_t* d_bad = out.hist.data() + alphabet;
        GSZ_CUDA(cudaMemsetAsync(d_bad, 0, sizeof(uint64_t), stream));
        encode::histogram_cuda(d_codes, n, alphabet, out.hist.data(), reinterpret_cast<uint32_t*>(d_bad), stream);
        out.hist_host.allocate(size_t{alphabet} + 1);
        GSZ_CUDA(cudaMemcpyAsync(out.hist_host.data() + alphabet, d_bad, sizeof(uint64_t), cudaMemcpyDeviceToHost,
                                 stream));
        GSZ_CUDA(cudaMemcpyAsync(out.hist_host.data(), out.hist.data(), sizeof(uint64_t), cudaMemcpyDeviceToHost,
                                 stream));   // the zero codes' count
        const cudaStream_t side = after_histogram ? beside_build.fork(stream) : stream;
        encode::huffman_build_cuda(out.hist.data(), alphabet, n, out.builder, out.device_book, stream);
        if (after_histogram) {
            GSZ_CUDA(cudaStreamSynchronize(side));   // the histogram and its copies (the build is queued)
            after_histogram(out.hist_host.data()[0], side);
            beside_build.join(stream);
            after_histogram_done = true;
        }
        GSZ_CUDA(cudaStreamSynchronize(stream));
        GSZ_CHECK(out.hist_host.data()[alphabet] == 0, GSZ_STATUS_INTERNAL, "quant-code outside the alphabet");
        trace.mark("histogram, codebook");
        if (encode::huffman_build_cuda_finish(out.builder, alphabet, out.device_book)) {
            const encode::HuffmanBuildResult& built = *out.builder.result_host.data();
            out.book_on_device = true;
            out.num_symbols = n;
            const uint64_t max_words = built.total_bits / 32 + (n + kHuffmanChunkSymbols - 1) / kHuffmanChunkSymbols + 1;
            encode::huffman_encode_cuda(out.device_book, d_codes, n, kHuffmanChunkSymbols, out.stream, stream,
                                        max_words);
            out.words_pending = true;
            trace.mark("huffman encode");
            return;
        }
        // More used symbols than the device build takes: the host builds the book below.
    }
    // Both histograms before one synchronization (the codes' is needed first).
    const bool try_ans = code_stage_try_ans(mode);
    const bool try_lag2 = try_ans && code_stage_try_class_lag2(shape);
    const uint32_t lag_stride = try_lag2 ? encode::ans_class_lag_sample_stride(n) : 1u;
    const std::vector<AnsLayoutTry> tries =
        try_lag2 ? code_stage_ans_tries(shape, n) : std::vector<AnsLayoutTry>{AnsLayoutTry{}};
    if (try_ans) ans_histogram_launch(d_codes, n, radius, shape, tries, lag_stride, out, stream);
    // On a sample, the layout is chosen while the GPU counts the codes'
    // histogram, which is read after the chosen layout's full one (the
    // host's choice left the GPU idle: run 91, etopoT rel 1e-4 0.40 -> 0.27
    // ms from the samples to the full histogram).
    const bool choose_beside = try_lag2 && lag_stride > 1;
    if (choose_beside) GSZ_CUDA(cudaEventRecord(out.ans_sampled, stream));
    // The runs' sample, of the zero-error code (the dominant one is not known
    // yet), counted into words after the codes' histogram and read back with it.
    const bool sample_runs = code_stage_sample_runs(mode, radius, n);
    const uint32_t digit_words = sample_runs ? static_cast<uint32_t>(encode::RunDigits{}.size()) : 0u;
    std::function<void(uint64_t*)> count_sample;
    if (sample_runs)
        count_sample = [&](uint64_t* d_digits) {
            encode::run_digits_cuda(d_codes, n, radius, alphabet, encode::run_sample_stride(n), d_digits, stream,
                                    false);
        };
    std::span<const uint64_t> code_hist;
    if (choose_beside) {
        histogram_launch(d_codes, n, alphabet, stream, out.hist, out.hist_host, digit_words, count_sample);
        GSZ_CUDA(cudaEventSynchronize(out.ans_sampled));
        trace.mark("ans samples");
    } else {
        code_hist = histogram_on_device(d_codes, n, alphabet, stream, out.hist, out.hist_host, digit_words, count_sample);
        trace.mark(try_ans ? "histograms" : "histogram");
        // GPU work that overlaps the host's codebook build and the class lag's
        // choice (it may use the histogram).
        if (after_histogram && !after_histogram_done) after_histogram(code_hist[0], stream);
    }
    // The class lag and the strips, as code_stage_encode_cpu: from every
    // layout's histogram; on a sample, the chosen layout's full histogram is
    // queued next (read after the next synchronization).
    std::span<const uint64_t> ans_hist;
    uint32_t ans_lag = 1, ans_strip = 0;
    bool ans_hist_queued = false;
    double ans_bits = 0;  // rANS's estimate for the runs' sample
    if (try_lag2) {
        const std::vector<std::span<const uint64_t>> hists = ans_histogram_read(shape, tries, out);
        uint64_t chosen_bits = 0;
        const size_t chosen = code_stage_choose_layout(tries, hists, shape, n, &chosen_bits);
        ans_lag = tries[chosen].class_lag;
        ans_strip = tries[chosen].strip_width;
        // (before the chosen layout's full histogram is queued into the same page-locked buffer;
        // the choice has built its tables: no second build on the stream's path)
        if (sample_runs) ans_bits = code_stage_ans_bits(hists[chosen], shape.levels, ans_lag, n, chosen_bits, ans_strip);
        if (lag_stride > 1) {
            const AnsLayoutTry full[1] = {tries[chosen]};
            ans_histogram_launch(d_codes, n, radius, shape, full, 1, out, stream);
            ans_hist_queued = true;
        } else {
            ans_hist = hists[chosen];
        }
        trace.mark("ans class lag");
    } else if (try_ans) {
        ans_hist = ans_histogram_read(shape, tries, out)[0];
        if (sample_runs) ans_bits = code_stage_ans_bits(ans_hist, shape.levels, 1, n);
    }
    bool synchronized = false;
    if (choose_beside) {
        // The codes' histogram and the chosen layout's full one, together.
        GSZ_CUDA(cudaStreamSynchronize(stream));
        synchronized = true;
        code_hist = histogram_read(alphabet, out.hist_host);
        trace.mark("codes' histogram, full layout histogram");
        if (after_histogram && !after_histogram_done) after_histogram(code_hist[0], stream);
    }
    // Run tokens counted, their histogram derived; written only if chosen.
    // Skipped where the sample says rANS wins clearly, as code_stage_encode_cpu.
    encode::RunTokenPlan token_plan;
    std::vector<uint64_t> token_hist;
    uint32_t dominant = 0;
    if (code_stage_try_runs(mode, radius, code_hist, n)) {
        dominant = encode::run_dominant_code(code_hist, n);
        encode::RunDigits sample{};
        if (sample_runs) std::copy_n(out.hist_host.data() + alphabet + 1, sample.size(), sample.begin());
        if (!(sample_runs && dominant == radius && code_stage_runs_outclassed(code_hist, dominant, sample, n, ans_bits))) {
            token_hist = encode::run_tokens_count_cuda(d_codes, n, dominant, alphabet, code_hist, token_plan, stream);
            synchronized = true;  // it reads its histogram back
            trace.mark("run tokens");
        }
    }
    if (ans_hist_queued) {
        if (!synchronized) GSZ_CUDA(cudaStreamSynchronize(stream));
        synchronized = true;
        const AnsLayoutTry full[1] = {{ans_lag, ans_strip}};
        ans_hist = ans_histogram_read(shape, full, out)[0];
    }
    // The previous call's book lends its storage (fresh pages cost ~1-2 us each on the lent hosts).
    encode::HuffmanCodebook storage = std::move(out.book);
    CodeStageChoice choice =
        code_stage_choose(mode, code_hist, token_hist, dominant, ans_hist, ans_lag, shape.levels, n, &storage, ans_strip);
    trace.mark("codebook (host)");
    if (choice.ans) {
        encode::ans_encode_cuda(*choice.ans, d_codes, n, radius, shape, choice.ans_lane_symbols, out.ans_stream,
                                stream);
        out.ans = std::move(choice.ans);
        trace.mark("ans encode");
        return;
    }
    out.runs = choice.runs;
    out.book = std::move(choice.book);
    const uint64_t num_tokens = token_plan.num_tokens;
    out.num_symbols = out.runs ? num_tokens : n;
    cuda::DeviceBuffer<uint16_t> d_tokens;
    if (out.runs) encode::run_tokens_write_cuda(d_codes, n, dominant, alphabet, token_plan, d_tokens, stream);
    encode::huffman_upload_encoder(out.book, out.device_book, stream);
    const encode::HuffmanDeviceBook& d_book = out.device_book;
    // The word count's bound from the histogram: the encoder need not wait for the exact count.
    const uint64_t max_words = encode::huffman_max_words(out.runs ? std::span<const uint64_t>(token_hist) : code_hist, out.book,
                                                         out.num_symbols, kHuffmanChunkSymbols);
    trace.mark("encoder table");
    encode::huffman_encode_cuda(d_book, out.runs ? d_tokens.data() : d_codes, out.num_symbols, kHuffmanChunkSymbols,
                                out.stream, stream, max_words);
    out.words_pending = true;
    trace.mark("huffman encode");
    // d_tokens is released stream-ordered, after the encoder has read it.
}

// The host copy of the device stage's output, for the archive writer.
EncodedCodes fetch_codes(DeviceCodeStage& cs, cudaStream_t stream) {
    if (!cs.ans && cs.words_pending) {
        encode::huffman_stream_read_words(cs.stream, stream);
        cs.words_pending = false;
    }
    EncodedCodes h;
    if (cs.ans) {
        const auto& d = cs.ans_stream;
        h.ans = cs.ans;
        h.ans_stream.num_symbols = d.num_symbols;
        h.ans_stream.lane_symbols = d.lane_symbols;
        h.ans_stream.start_state = d.start_state;
        cuda::copy_to_host(h.ans_stream.lane_state, d.lane_state.data(), d.num_lanes, stream);
        cuda::copy_to_host(h.ans_stream.lane_words, d.lane_words.data(), d.num_lanes, stream);
        cuda::copy_to_host(h.ans_stream.words, d.words.data(), d.num_words, stream);
        return h;
    }
    h.runs = cs.runs;
    if (cs.book_on_device) {
        cs.book = encode::huffman_build_cuda_fetch(cs.builder, cs.alphabet, stream);
        cs.book_on_device = false;
    }
    h.book = cs.book;
    h.stream.num_symbols = cs.num_symbols;
    h.stream.chunk_symbols = kHuffmanChunkSymbols;
    cuda::copy_to_host(h.stream.chunk_bits, cs.stream.chunk_bits.data(), cs.stream.num_chunks, stream);
    cuda::copy_to_host(h.stream.words, cs.stream.words.data(), cs.stream.num_words, stream);
    return h;
}

// The code stage's sections in device memory, the Huffman codebook's
// canonical tables among them (its decode tables are built at decoding).
struct DeviceCodeSections {
    encode::HuffmanDeviceBook book;
    cuda::DeviceBuffer<uint32_t> words, chunk_bits;
    cuda::DeviceBuffer<uint64_t> chunk_offset;
    cuda::DeviceBuffer<uint16_t> ans_words;
    cuda::DeviceBuffer<uint32_t> ans_state;
    cuda::DeviceBuffer<uint64_t> ans_offset;
};

template <class T>
void upload(cuda::DeviceBuffer<T>& dst, const T* src, size_t count, cudaStream_t stream) {
    dst.allocate(count, stream);
    if (count) GSZ_CUDA(cudaMemcpyAsync(dst.data(), src, count * sizeof(T), cudaMemcpyHostToDevice, stream));
}

void upload_code_sections(const CodeStagePlan& plan, DeviceCodeSections& ds, cudaStream_t stream) {
    if (plan.ans) {
        const auto& a = *plan.ans;
        upload(ds.ans_words, reinterpret_cast<const uint16_t*>(a.words.data()), a.words.size() / 2, stream);
        upload(ds.ans_state, a.lane_state.data(), a.lane_state.size(), stream);
        upload(ds.ans_offset, a.lane_word_offset.data(), a.lane_word_offset.size(), stream);
        return;
    }
    const auto& sv = plan.stream;
    encode::huffman_upload_book(plan.book, ds.book, stream);
    upload(ds.words, reinterpret_cast<const uint32_t*>(sv.words.data()), sv.words.size() / 4, stream);
    upload(ds.chunk_bits, sv.chunk_bits.data(), sv.chunk_bits.size(), stream);
    upload(ds.chunk_offset, sv.chunk_word_offset.data(), sv.chunk_word_offset.size(), stream);
}

// Decodes the codes into d_codes[0..n); a bad chunk or bad run tokens set
// *d_corrupt.  When the codes are a plain Huffman stream and zero_counts is
// given, the number of 0 codes per granule of codes goes there (ceil(n /
// granule) counts and a last 0) and the granule is returned; otherwise 0.
uint32_t code_stage_decode_cuda(const CodeStagePlan& plan, DeviceCodeSections& ds, uint32_t radius,
                                const encode::AnsContextShape& shape, uint16_t* d_codes, uint64_t n,
                                uint32_t* d_corrupt, cudaStream_t stream,
                                cuda::DeviceBuffer<uint32_t>* zero_counts = nullptr) {
    if (plan.ans) {
        encode::ans_decode_cuda(plan.ans->tables, ds.ans_words.data(), ds.ans_state.data(), ds.ans_offset.data(), n,
                                plan.ans->lane_symbols, radius, shape, plan.ans->start_state, d_codes, d_corrupt,
                                stream);
        return 0;
    }
    cuda::StageTrace trace(stream, "code stage decode");
    encode::huffman_build_decode_tables(plan.book, ds.book, stream);
    const encode::HuffmanDeviceBook& d_book = ds.book;
    trace.mark("decode tables");
    if (!plan.runs) {
        const uint32_t granule = plan.stream.chunk_symbols;  // a count per Huffman chunk
        uint32_t* counts = nullptr;
        if (zero_counts && granule > 0) {
            const uint64_t granules = (n + granule - 1) / granule;
            zero_counts->allocate(granules + 1, stream);
            GSZ_CUDA(cudaMemsetAsync(zero_counts->data() + granules, 0, sizeof(uint32_t), stream));
            counts = zero_counts->data();
        }
        encode::huffman_decode_cuda(d_book, ds.words.data(), ds.words.size(), ds.chunk_bits.data(),
                                    ds.chunk_offset.data(), n, granule, d_codes, d_corrupt, stream, counts);
        return counts ? granule : 0;
    }
    const uint64_t num_tokens = plan.stream.num_symbols;
    cuda::DeviceBuffer<uint16_t> d_tokens(num_tokens, stream);
    encode::huffman_decode_cuda(d_book, ds.words.data(), ds.words.size(), ds.chunk_bits.data(),
                                ds.chunk_offset.data(), num_tokens, plan.stream.chunk_symbols, d_tokens.data(),
                                d_corrupt, stream);
    encode::run_tokens_decode_cuda(d_tokens.data(), num_tokens, plan.runs->dominant, 2 * radius, d_codes, n,
                                   d_corrupt, stream);
    return 0;
}

// Compression up to "every section is in device memory": the part the
// device-resident benchmark times.  The codebook step runs on the host.
// Kept across calls where it can be (gsz bench, repeated compressions).
template <class T>
struct DeviceCompressed {
    format::Header header;
    predict::LorenzoLayout layout;
    uint32_t radius = 0;
    DeviceCodeStage codes;
    predict::LorenzoDeviceCodes<T> lorenzo;
    cuda::DeviceBuffer<uint8_t> range_scratch;
    struct Readback {
        DeviceRange range;
        uint64_t outliers;
    };
    cuda::PinnedBuffer<Readback> readback;
    cuda::Event range_ready;             // the range (and the fill value's sample) are on the host
    // A fill value: found on the interp tuner's points (choose_fill), its
    // points coded as its stand-in, its mask computed when the archive is written.
    cuda::DeviceBuffer<T> sample_values;
    cuda::PinnedBuffer<T> sample_host;
    cuda::DeviceBuffer<T> stand_ins;
    predict::FillValue fill;
    predict::FillMask fill_mask;
};

// The range pass derives the bound on the device and the encoder follows it
// without a round trip.  The range and the fill value's sample come back
// while the encoder runs: the host plans the header and looks for a fill
// value then, and where it finds one, codes the data again with the fill
// points as its stand-in (the first pass, on the original values, assumed
// none: fields without one wait for nothing).  When the bound turns out not
// to be lossy the codes are dropped.
template <class T>
void compress_on_device(const gsz_params& params, const T* d_data, DeviceCompressed<T>& dc, cudaStream_t stream) {
    const uint64_t n = params_num_elements(params);
    cuda::StageTrace trace(stream, "lorenzo compress");
    dc.layout = predict::lorenzo_layout(params.rank, params.dims);
    dc.radius = quant_radius(params);
    dc.fill = {};
    const uint64_t num_samples =
        params.fill == GSZ_FILL_OFF
            ? 0
            : predict::interp_tune_sample_launch(d_data, predict::interp_layout(params.rank, params.dims),
                                                 dc.sample_values, dc.sample_host, stream);
    predict::QuantParams* d_quant = nullptr;
    const DeviceRange* d_range =
        finite_range_on_device(d_data, n, params, dc.range_scratch, stream, dc.radius, &d_quant);
    dc.readback.allocate(1);
    auto* rb = dc.readback.data();
    GSZ_CUDA(cudaMemcpyAsync(&rb->range, d_range, sizeof(DeviceRange), cudaMemcpyDeviceToHost, stream));
    GSZ_CUDA(cudaEventRecord(dc.range_ready, stream));
    predict::lorenzo_encode_cuda_async(d_data, dc.layout, predict::QuantParams{}, d_quant, dc.lorenzo, stream);
    GSZ_CUDA(cudaEventSynchronize(dc.range_ready));
    if (num_samples)
        dc.fill = choose_fill<T>(params, std::span<const T>(dc.sample_host.data(), num_samples),
                                 finite_range_of(rb->range));
    if (dc.fill.on) {   // the other values' range and bound (as choose_fill_cpu), and their Lorenzo parameters
        d_range = finite_range_on_device(d_data, n, params, dc.range_scratch, stream, dc.radius, &d_quant, &dc.fill);
        GSZ_CUDA(cudaMemcpyAsync(&rb->range, d_range, sizeof(DeviceRange), cudaMemcpyDeviceToHost, stream));
        GSZ_CUDA(cudaStreamSynchronize(stream));
    }
    dc.header = plan_header(params, finite_range_of(rb->range));
    trace.mark("finite range");
    if (dc.header.pipeline == GSZ_PIPELINE_STORE) return;
    GSZ_CHECK(dc.header.error_bound_abs == rb->range.eb_abs, GSZ_STATUS_INTERNAL,
              "lorenzo: the device derived bound %.17g, the host %.17g", rb->range.eb_abs, dc.header.error_bound_abs);
    if (dc.fill.on) {   // as the CPU's pipeline: the fill points coded as the stand-in
        dc.stand_ins.allocate(n, stream);
        predict::fill_substitute_cuda(d_data, n, dc.fill, dc.stand_ins.data(), stream);
        predict::lorenzo_encode_cuda_async(dc.stand_ins.data(), dc.layout, predict::QuantParams{}, d_quant,
                                           dc.lorenzo, stream);
    }
    trace.mark("predict");
    GSZ_CUDA(cudaMemcpyAsync(&rb->outliers, dc.lorenzo.outlier_total(dc.layout), sizeof(uint64_t),
                             cudaMemcpyDeviceToHost, stream));
    // The code stage synchronizes after its histogram (rb->outliers is filled
    // then); the outliers are gathered while the host builds the codebook.
    code_stage_encode_cuda(dc.lorenzo.codes.data(), n, dc.radius, lorenzo_ans_shape(), params.lossless, dc.codes,
                           stream, [&](uint64_t, cudaStream_t s) {
                               predict::lorenzo_compact_outliers_cuda(dc.layout, rb->outliers, dc.lorenzo, s);
                           });
    trace.mark("code stage");
}

// Copies the sections to the host and writes the archive (the same code as
// the CPU backend), falling back to the lossless archive when smaller.
template <class T>
std::vector<uint8_t> fetch_archive(DeviceCompressed<T>& dc, const T* d_data, const T* h_data, uint64_t n,
                                   cudaStream_t stream) {
    std::vector<T> host_copy;
    if (dc.header.pipeline == GSZ_PIPELINE_STORE)
        return store_compress(dc.header, host_view(h_data, d_data, n, host_copy, stream));
    const EncodedCodes codes = fetch_codes(dc.codes, stream);
    std::vector<T> outliers;
    cuda::copy_to_host(outliers, dc.lorenzo.outliers.data(), dc.lorenzo.num_outliers, stream);
    // As the CPU's pipeline: a fill value no point holds is not recorded (it changed no code).
    if (dc.fill.on) {
        dc.fill_mask = predict::fill_mask_encode_cuda(d_data, dc.layout.dims, dc.fill, stream);
        if (dc.fill_mask.points == 0) dc.fill = {};
    }
    std::vector<uint8_t> archive = lorenzo_assemble<T>(dc.header, dc.radius, dc.layout, codes,
                                                       std::span<const T>(outliers), dc.fill, dc.fill_mask);
    if (archive.size() <= n * sizeof(T)) return archive;
    return smaller_of_lossy_and_store(std::move(archive), dc.header, host_view(h_data, d_data, n, host_copy, stream));
}

// The fast pipeline's counterparts of the three steps above.
// Kept across calls where it can be (gsz bench, repeated compressions): its
// buffers then grow once and are reused without allocation calls.
template <class T>
struct FastDeviceCompressed {
    format::Header header;
    predict::FastLayout layout;
    predict::FastDeviceStreams<T> streams;
    cuda::DeviceBuffer<uint8_t> range_scratch;
};

// The range pass, the bound and the encoder run back to back on the device;
// the host plans the header once everything is done (one synchronization).
// When the bound turns out not to be lossy the streams are dropped.
template <class T>
void fast_compress_on_device(const gsz_params& params, const T* d_data, FastDeviceCompressed<T>& dc,
                             cudaStream_t stream) {
    const uint64_t n = params_num_elements(params);
    cuda::StageTrace trace(stream, "fast compress");
    dc.layout = predict::FastLayout::make(n, fast_block_size(params));
    predict::fast_encode_cuda_prepare(d_data, dc.layout, dc.streams, stream);
    const DeviceRange* d_range = finite_range_on_device(d_data, n, params, dc.range_scratch, stream);
    trace.mark("finite range");
    predict::fast_encode_cuda_async(d_data, dc.layout, &d_range->eb_abs, dc.streams, stream, d_range,
                                    sizeof(DeviceRange));
    trace.mark("encode");
    DeviceRange range;
    predict::fast_encode_cuda_sizes(dc.layout, dc.streams, stream, &range, sizeof range);
    trace.mark("sizes");
    dc.header = plan_header(params, finite_range_of(range));
    GSZ_CHECK(dc.header.pipeline == GSZ_PIPELINE_STORE || dc.header.error_bound_abs == range.eb_abs,
              GSZ_STATUS_INTERNAL, "fast: the device derived bound %.17g, the host %.17g", range.eb_abs,
              dc.header.error_bound_abs);
}

template <class T>
std::vector<uint8_t> fast_fetch_archive(FastDeviceCompressed<T>& dc, const T* d_data, const T* h_data, uint64_t n,
                                        cudaStream_t stream) {
    std::vector<T> host_copy;
    if (dc.header.pipeline == GSZ_PIPELINE_STORE)
        return store_compress(dc.header, host_view(h_data, d_data, n, host_copy, stream));
    const auto& s = dc.streams;
    std::vector<uint8_t> codes, leads, bytes;
    std::vector<T> mids;
    cuda::copy_to_host(codes, s.codes.data(), s.codes.size(), stream);
    cuda::copy_to_host(mids, s.mids.data(), s.mids.size(), stream);
    cuda::copy_to_host(leads, s.leads.data(), s.leads.size(), stream);
    cuda::copy_to_host(bytes, s.bytes.data(), s.bytes.size(), stream);
    FastParams fp;
    fp.block_size = dc.layout.block;
    fp.num_blocks = dc.layout.num_blocks;
    for (const uint8_t c : codes) {
        fp.num_constant += c == predict::kFastConstant;
        fp.num_raw += c == predict::kFastRaw;
    }
    std::vector<uint8_t> archive =
        fast_assemble(dc.header, fp, codes,
                      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(mids.data()), mids.size() * sizeof(T)),
                      leads, bytes);
    if (archive.size() <= n * sizeof(T)) return archive;
    return smaller_of_lossy_and_store(std::move(archive), dc.header, host_view(h_data, d_data, n, host_copy, stream));
}

// Like FastDeviceCompressed, kept across calls where it can be.
template <class T>
struct FastDeviceArchive {
    FastDecodePlan plan;
    cuda::DeviceBuffer<uint8_t> codes, leads, bytes;
    cuda::DeviceBuffer<T> mids;
    predict::FastDecodeScratch scratch;
};

template <class T>
void fast_upload_archive(const format::Archive& archive, FastDeviceArchive<T>& da, cudaStream_t stream) {
    da.plan = fast_plan_decode(archive);
    const auto& v = da.plan.streams;
    da.codes.allocate(v.codes.size(), stream);
    da.mids.allocate(v.mids.size() / sizeof(T), stream);
    da.leads.allocate(v.leads.size(), stream);
    da.bytes.allocate(v.bytes.size(), stream);
    GSZ_CUDA(cudaMemcpyAsync(da.codes.data(), v.codes.data(), v.codes.size(), cudaMemcpyHostToDevice, stream));
    GSZ_CUDA(cudaMemcpyAsync(da.mids.data(), v.mids.data(), v.mids.size(), cudaMemcpyHostToDevice, stream));
    if (!v.leads.empty())
        GSZ_CUDA(cudaMemcpyAsync(da.leads.data(), v.leads.data(), v.leads.size(), cudaMemcpyHostToDevice, stream));
    if (!v.bytes.empty())
        GSZ_CUDA(cudaMemcpyAsync(da.bytes.data(), v.bytes.data(), v.bytes.size(), cudaMemcpyHostToDevice, stream));
    GSZ_CUDA(cudaStreamSynchronize(stream));
}

template <class T>
void fast_decode_on_device(FastDeviceArchive<T>& da, T* d_out, cudaStream_t stream) {
    predict::fast_decode_cuda<T>(da.codes.data(), da.mids.data(), da.leads.data(), da.leads.size(), da.bytes.data(),
                                 da.bytes.size(), da.plan.layout, d_out, da.scratch, stream);
}

// The interp pipeline's counterparts: the tuner's sample is gathered on the
// device and tuned on the host by the CPU's code, so both backends choose alike.
template <class T>
struct InterpDeviceCompressed {
    format::Header header;
    InterpParams params;
    DeviceCodeStage codes;
    predict::InterpDeviceEncoded<T> enc;
    // The range pass's and the tuner's sample's buffers, kept across calls.
    cuda::DeviceBuffer<uint8_t> range_scratch;
    cuda::PinnedBuffer<DeviceRange> range_host;
    cuda::DeviceBuffer<T> tune_values;
    cuda::PinnedBuffer<T> tune_host;
    cuda::PinnedBuffer<T> stride_host;   // 1-D: the anchor stride's sample (predict::interp_stride_segments)
    cuda::Event sample_ready;            // the tuner's sample is in tune_host
    std::vector<uint8_t> lorenzo_tiles;
    cuda::DeviceBuffer<T> stand_ins;     // with a fill value: what the anchors, Lorenzo tiles and outliers code
    predict::FillMask fill_mask;
};

// The range and the tuner's sample come back together (one synchronization);
// the host then plans the header and tunes.
template <class T>
void interp_compress_on_device(const gsz_params& params, const T* d_data, InterpDeviceCompressed<T>& dc,
                               cudaStream_t stream) {
    const uint64_t n = params_num_elements(params);
    cuda::StageTrace trace(stream, "interp compress");
    InterpParams& p = dc.params;
    p.layout = predict::interp_layout(params.rank, params.dims);
    const uint64_t num_samples =
        predict::interp_tune_sample_launch(d_data, p.layout, dc.tune_values, dc.tune_host, stream);
    GSZ_CUDA(cudaEventRecord(dc.sample_ready, stream));
    // 1-D: the anchor stride's sample comes back with the range (the tuner's
    // sample does not depend on the stride).
    std::vector<uint64_t> stride_starts;
    const uint64_t stride_len = std::min(p.layout.dims[0], predict::kInterpStrideSegment);
    if (p.layout.rank == 1) {
        stride_starts = predict::interp_stride_segments(p.layout.dims[0]);
        dc.stride_host.allocate(stride_starts.size() * stride_len);
        for (size_t k = 0; k < stride_starts.size(); ++k)
            GSZ_CUDA(cudaMemcpyAsync(dc.stride_host.data() + k * stride_len, d_data + stride_starts[k],
                                     stride_len * sizeof(T), cudaMemcpyDeviceToHost, stream));
    }
    const DeviceRange* d_range = finite_range_on_device(d_data, n, params, dc.range_scratch, stream);
    dc.range_host.allocate(1);
    GSZ_CUDA(cudaMemcpyAsync(dc.range_host.data(), d_range, sizeof(DeviceRange), cudaMemcpyDeviceToHost, stream));
    // The tuner's choice needs neither the bound nor the range: made while the
    // range pass reads the data (the GPU idled 0.1-0.18 ms while the host tuned).
    // Read where they lie: a host copy (0.4 MB as double) cost ~0.2 ms on the lent hosts.
    GSZ_CUDA(cudaEventSynchronize(dc.sample_ready));
    predict::InterpOverrides overrides = interp_overrides(params, p.layout.rank);
    const predict::InterpTuneChoice choice =
        predict::interp_tune(p.layout, std::span<const T>(dc.tune_host.data(), num_samples), overrides);
    GSZ_CUDA(cudaStreamSynchronize(stream));
    // A fill value: the header takes the other values' range (as choose_fill_cpu).
    const predict::FillValue fill = choose_fill<T>(params, std::span<const T>(dc.tune_host.data(), num_samples),
                                                   finite_range_of(*dc.range_host.data()));
    if (fill.on) {
        const DeviceRange* d_rest = finite_range_on_device(d_data, n, params, dc.range_scratch, stream, 0, nullptr, &fill);
        GSZ_CUDA(cudaMemcpyAsync(dc.range_host.data(), d_rest, sizeof(DeviceRange), cudaMemcpyDeviceToHost, stream));
        GSZ_CUDA(cudaStreamSynchronize(stream));
    }
    dc.header = plan_header(params, finite_range_of(*dc.range_host.data()));
    trace.mark("finite range, tuning");
    if (dc.header.pipeline == GSZ_PIPELINE_STORE) return;
    p.radius = quant_radius(params);
    const double eb = dc.header.error_bound_abs, range = dc.header.value_max - dc.header.value_min;
    if (p.layout.rank == 1) {
        const predict::InterpChoice1d choice = predict::interp_choose_stride_1d(
            std::span<const T>(dc.stride_host.data(), stride_starts.size() * stride_len), stride_len, eb, range,
            p.radius, overrides);
        p.layout = predict::interp_layout(params.rank, params.dims, choice.stride);
        if (choice.lorenzo) overrides.tiles = predict::kTilesLorenzo;   // as the CPU's pipeline
    }
    // The anchor stage needs only the level bounds, which need no sample: its
    // kernels run while the host tunes (the GPU idled 0.05-0.11 ms here).
    // A fill value: the anchors, Lorenzo tiles and outliers code its stand-ins (interp_pipeline.cpp).
    // As the CPU's pipeline: tuned without the sample points next to the fill value.
    const predict::InterpTuneChoice tuned =
        fill.on ? predict::interp_tune(p.layout, std::span<const T>(dc.tune_host.data(), num_samples), overrides,
                                       interp_tune_skip<T>(fill))
                : choice;
    const T* coded = d_data;
    if (fill.on) {
        dc.stand_ins.allocate(n, stream);
        predict::fill_substitute_cuda(d_data, n, fill, dc.stand_ins.data(), stream);
        coded = dc.stand_ins.data();
    }
    const predict::InterpConfig bounds = predict::interp_level_bounds(p.layout, eb, range, overrides);
    predict::interp_anchors_launch_cuda(coded, p.layout, bounds, eb, p.radius, overrides.anchors, dc.enc, stream);
    p.config = predict::interp_configure(p.layout, tuned, eb, range, overrides);
    p.config.fill = fill;
    GSZ_CHECK(p.config.level_eb[p.layout.num_levels - 1] == bounds.level_eb[p.layout.num_levels - 1],
              GSZ_STATUS_INTERNAL, "interp: the anchors' level bound differs from the tuned one");
    trace.mark("configuration");
    predict::interp_anchors_finish_cuda(coded, p.layout, overrides.anchors, dc.enc, stream);
    p.config.anchors = dc.enc.anchor_mode;
    trace.mark("anchors");
    predict::interp_encode_tiles_cuda(coded, p.layout, p.config, dc.header.error_bound_abs, p.radius, dc.enc,
                                      stream, fill.on ? d_data : nullptr);
    trace.mark("tiles");
    // The outliers are the zero codes, whose number the codes' histogram gives:
    // selected while the codebook is built (on the device: beside its build).
    code_stage_encode_cuda(dc.enc.codes.data(), n, p.radius, interp_ans_shape(p, params.ans_strips), params.lossless, dc.codes,
                           stream, [&](uint64_t zero_codes, cudaStream_t s) {
                               predict::interp_outliers_cuda(coded, zero_codes, dc.enc, s);
                           });
}

template <class T>
std::vector<uint8_t> interp_fetch_archive(InterpDeviceCompressed<T>& dc, const T* d_data, const T* h_data,
                                          uint64_t n, cudaStream_t stream) {
    std::vector<T> host_copy;
    if (dc.header.pipeline == GSZ_PIPELINE_STORE)
        return store_compress(dc.header, host_view(h_data, d_data, n, host_copy, stream));
    const EncodedCodes codes = fetch_codes(dc.codes, stream);
    InterpAnchorSection<T> anchors;
    std::vector<T> outlier_value;
    std::vector<uint64_t> outlier_index;
    if (dc.enc.anchor_mode == predict::kAnchorsRaw)
        cuda::copy_to_host(anchors.raw, dc.enc.anchor_start.data(), dc.params.layout.num_anchors, stream);
    anchors.listed = dc.enc.listed;
    anchors.listed_residual = dc.enc.listed_residual;
    std::vector<uint64_t> selected;
    cuda::copy_to_host(selected, dc.enc.count.data(), 1, stream);
    GSZ_CHECK(selected[0] == dc.enc.num_outliers, GSZ_STATUS_INTERNAL, "interp: %llu zero codes, %llu selected",
              static_cast<unsigned long long>(dc.enc.num_outliers), static_cast<unsigned long long>(selected[0]));
    // As the CPU's pipeline: a guard that decided no prediction is not recorded.
    std::vector<unsigned long long> tiles;
    cuda::copy_to_host(tiles, dc.enc.zero_codes.data(), 2, stream);
    if (tiles[1] == 0) dc.params.config.jump = predict::kInterpNoJump;
    dc.lorenzo_tiles.clear();
    if (dc.params.config.tiles != predict::kTilesSpline) {
        cuda::copy_to_host(dc.lorenzo_tiles, dc.enc.lorenzo_tiles.data(), dc.params.layout.num_tiles, stream);
        if (std::find(dc.lorenzo_tiles.begin(), dc.lorenzo_tiles.end(), 1) == dc.lorenzo_tiles.end())
            dc.lorenzo_tiles.clear();
    }
    cuda::copy_to_host(outlier_index, dc.enc.outlier_index.data(), dc.enc.num_outliers, stream);
    cuda::copy_to_host(outlier_value, dc.enc.outlier_value.data(), dc.enc.num_outliers, stream);
    // As the CPU's pipeline: a fill value no point holds is not recorded (it changed no code).
    dc.fill_mask = predict::fill_mask_encode_cuda(d_data, dc.params.layout.dims, dc.params.config.fill, stream);
    if (dc.fill_mask.points == 0) dc.params.config.fill = {};
    std::vector<uint8_t> archive = interp_assemble<T>(dc.header, dc.params, codes, anchors, outlier_index,
                                                      outlier_value, dc.lorenzo_tiles, dc.fill_mask);
    if (archive.size() <= n * sizeof(T)) return archive;
    return smaller_of_lossy_and_store(std::move(archive), dc.header, host_view(h_data, d_data, n, host_copy, stream));
}

template <class T>
struct InterpDeviceArchive {
    InterpDecodePlan<T> plan;
    DeviceCodeSections code_sections;
    cuda::DeviceBuffer<uint64_t> outlier_index, anchor_listed, anchor_residual;
    cuda::DeviceBuffer<T> raw_anchors, outlier_value;
    cuda::DeviceBuffer<uint8_t> lorenzo_tiles;
};

template <class T>
void interp_upload_archive(const format::Archive& archive, InterpDeviceArchive<T>& da, cudaStream_t stream) {
    da.plan = interp_plan_decode<T>(archive);
    upload_code_sections(da.plan.codes, da.code_sections, stream);
    upload(da.raw_anchors, da.plan.anchors.raw.data(), da.plan.anchors.raw.size(), stream);
    upload(da.anchor_listed, da.plan.anchors.listed.data(), da.plan.anchors.listed.size(), stream);
    upload(da.anchor_residual, da.plan.anchors.listed_residual.data(), da.plan.anchors.listed_residual.size(), stream);
    upload(da.outlier_index, da.plan.outlier_index.data(), da.plan.outlier_index.size(), stream);
    upload(da.outlier_value, da.plan.outlier_value.data(), da.plan.outlier_value.size(), stream);
    upload(da.lorenzo_tiles, da.plan.lorenzo_tiles.data(), da.plan.lorenzo_tiles.size(), stream);
    GSZ_CUDA(cudaStreamSynchronize(stream));
}

template <class T>
void interp_decode_on_device(InterpDeviceArchive<T>& da, uint64_t n, T* d_out, cudaStream_t stream) {
    const auto& plan = da.plan;
    cuda::DeviceBuffer<uint16_t> d_codes(n, stream);
    cuda::DeviceBuffer<uint32_t> d_corrupt(2, stream);
    d_corrupt.zero(stream);
    cuda::StageTrace trace(stream, "interp decompress");
    code_stage_decode_cuda(plan.codes, da.code_sections, plan.params.radius, interp_ans_shape(plan.params),
                           d_codes.data(), n, d_corrupt.data(), stream);
    trace.mark("codes");
    cuda::DeviceBuffer<T> d_anchors(plan.params.layout.num_anchors, stream);
    predict::interp_anchors_decode_cuda<T>(d_codes.data(), da.raw_anchors.data(), da.anchor_listed.data(),
                                           da.anchor_residual.data(), plan.anchors.listed.size(),
                                           da.outlier_index.data(), da.outlier_value.data(),
                                           plan.outlier_index.size(), plan.params.layout, plan.params.config,
                                           plan.params.radius, d_anchors.data(), d_corrupt.data() + 1, stream);
    trace.mark("anchors");
    predict::interp_decode_cuda<T>(d_codes.data(), d_anchors.data(), da.outlier_index.data(),
                                   da.outlier_value.data(), plan.outlier_index.size(),
                                   plan.lorenzo_tiles.empty() ? nullptr : da.lorenzo_tiles.data(), plan.params.layout,
                                   plan.params.config, plan.params.radius, d_out, d_corrupt.data() + 1, stream);
    trace.mark("tiles");
    if (plan.params.config.fill.on) {
        predict::fill_mask_apply_cuda(plan.fill_mask, plan.params.layout.dims, plan.params.config.fill, d_out, stream);
        trace.mark("fill mask");
    }
    std::vector<uint32_t> corrupt;
    cuda::copy_to_host(corrupt, d_corrupt.data(), 2, stream);
    GSZ_CHECK(corrupt[0] == 0, GSZ_STATUS_CORRUPT,
              "huffman_bitstream or ans_stream: a chunk or lane does not decode, or the run tokens do not add up to the codes");
    GSZ_CHECK(corrupt[1] == 0, GSZ_STATUS_CORRUPT,
              "interp: the zero quant-codes are not the listed outliers, a raw anchor's code is not the radius, or "
              "the listed coded anchors are not those with code 0");
}

template <class T>
std::vector<uint8_t> compress_typed(const gsz_params& params, const T* d_data, const T* h_data, cudaStream_t stream) {
    if (params.pipeline == GSZ_PIPELINE_INTERP) {
        InterpDeviceCompressed<T> dc;
        interp_compress_on_device(params, d_data, dc, stream);
        return interp_fetch_archive(dc, d_data, h_data, params_num_elements(params), stream);
    }
    if (params.pipeline == GSZ_PIPELINE_FAST) {
        FastDeviceCompressed<T> dc;
        fast_compress_on_device(params, d_data, dc, stream);
        return fast_fetch_archive(dc, d_data, h_data, params_num_elements(params), stream);
    }
    DeviceCompressed<T> dc;
    compress_on_device(params, d_data, dc, stream);
    return fetch_archive(dc, d_data, h_data, params_num_elements(params), stream);
}

// A validated archive's sections in device memory: decoding starts here.
// The scratch buffers are kept across calls where the archive object is.
template <class T>
struct DeviceArchive {
    LorenzoDecodePlan<T> plan;
    DeviceCodeSections code_sections;
    cuda::DeviceBuffer<T> outliers;
    cuda::DeviceBuffer<uint16_t> codes;
    cuda::DeviceBuffer<uint32_t> corrupt;
    cuda::DeviceBuffer<uint32_t> granule_zeros;  // outliers per Huffman chunk, counted by its decoder
    predict::LorenzoDecodeScratch scratch;
    cuda::PinnedBuffer<uint32_t> corrupt_host;
};

template <class T>
void upload_archive(const format::Archive& archive, DeviceArchive<T>& da, cudaStream_t stream) {
    da.plan = lorenzo_plan_decode<T>(archive);
    upload_code_sections(da.plan.codes, da.code_sections, stream);
    upload(da.outliers, da.plan.outliers.data(), da.plan.outliers.size(), stream);
    GSZ_CUDA(cudaStreamSynchronize(stream));
}

// Decoding from device-resident sections: the part the benchmark times.
// One synchronization, at the end, for the corruption flags.
template <class T>
void decode_on_device(DeviceArchive<T>& da, uint64_t n, T* d_out, cudaStream_t stream) {
    const auto& plan = da.plan;
    cuda::StageTrace trace(stream, "lorenzo decompress");
    da.codes.allocate(n, stream);
    da.corrupt.allocate(1, stream);
    da.corrupt.zero(stream);
    const uint32_t granule = code_stage_decode_cuda(plan.codes, da.code_sections, plan.params.radius,
                                                    lorenzo_ans_shape(), da.codes.data(), n, da.corrupt.data(), stream,
                                                    &da.granule_zeros);
    trace.mark("code stage");
    predict::LorenzoGranuleCounts granules;
    if (granule > 0) granules = {da.granule_zeros.data(), granule};
    predict::lorenzo_decode_cuda<T>(da.codes.data(), da.outliers.data(), plan.outliers.size(), plan.layout,
                                    plan.quant, d_out, da.scratch, stream, da.corrupt.data(), granules);
    trace.mark("lorenzo");
    da.corrupt_host.allocate(1);
    GSZ_CUDA(cudaMemcpyAsync(da.corrupt_host.data(), da.corrupt.data(), sizeof(uint32_t), cudaMemcpyDeviceToHost,
                             stream));
    GSZ_CUDA(cudaStreamSynchronize(stream));
    trace.mark("flags back");
    const uint32_t corrupt = *da.corrupt_host.data();
    GSZ_CHECK((corrupt & predict::kLorenzoCorruptOutliers) == 0, GSZ_STATUS_CORRUPT,
              "outlier_values: the archive's codes mark a different number of outliers than it holds");
    GSZ_CHECK(corrupt == 0, GSZ_STATUS_CORRUPT,
              "huffman_bitstream or ans_stream: a chunk or lane does not decode, or the run tokens do not add up to the codes");
    if (plan.params.fill.on) {
        predict::fill_mask_apply_cuda(plan.fill_mask, plan.layout.dims, plan.params.fill, d_out, stream);
        trace.mark("fill mask");
    }
}

template <class T>
void decompress_typed(const format::Archive& archive, T* d_out, cudaStream_t stream) {
    if (archive.header.pipeline == GSZ_PIPELINE_INTERP) {
        InterpDeviceArchive<T> ia;
        interp_upload_archive(archive, ia, stream);
        interp_decode_on_device(ia, archive.header.num_elements(), d_out, stream);
        return;
    }
    if (archive.header.pipeline == GSZ_PIPELINE_FAST) {
        FastDeviceArchive<T> fa;
        fast_upload_archive(archive, fa, stream);
        fast_decode_on_device(fa, d_out, stream);
        return;
    }
    DeviceArchive<T> da;
    upload_archive(archive, da, stream);
    decode_on_device(da, archive.header.num_elements(), d_out, stream);
}

void select_device() {
    std::string why;
    GSZ_CHECK(cuda_backend_available(&why), GSZ_STATUS_NO_DEVICE, "CUDA backend unavailable: %s", why.c_str());
    // Keep freed blocks in the stream-ordered pool instead of returning them
    // to the driver at every synchronization: repeated calls then allocate
    // without driver round trips.
    static const bool pool_configured = [] {
        int device = 0;
        cudaMemPool_t pool;
        if (cudaGetDevice(&device) == cudaSuccess && cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess) {
            uint64_t keep = UINT64_MAX;
            cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
        }
        cudaGetLastError();
        return true;
    }();
    (void)pool_configured;
}

// Component dims on device memory (components.hpp): the sample that decides,
// read as doubles, and the moves between the array and its view.
template <class T>
__global__ void component_sample_kernel(const T* __restrict__ data, const uint64_t* __restrict__ index, uint64_t n,
                                        double* __restrict__ out) {
    const uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
    if (i < n) out[i] = static_cast<double>(data[index[i]]);
}

// out[(c·outer + o)·inner + j] = in[(o·count + c)·inner + j] (Apart), or the
// reverse; one thread per element of the output.  I: the index type, 32-bit
// where the array allows (64-bit division is a long software routine).
template <class T, bool Apart, class I>
__global__ void component_move_kernel(const T* __restrict__ in, T* __restrict__ out, I inner, I count, I outer) {
    const I total = inner * count * outer;
    for (I i = blockIdx.x * I{blockDim.x} + threadIdx.x; i < total; i += I{gridDim.x} * blockDim.x) {
        const I j = i % inner, rest = i / inner;
        // i's coordinates in the output's order: apart [c][o][j], together [o][c][j]
        const I first = rest % (Apart ? outer : count), second = rest / (Apart ? outer : count);
        const I o = Apart ? first : second, c = Apart ? second : first;
        out[i] = in[Apart ? (o * count + c) * inner + j : (c * outer + o) * inner + j];
    }
}

// The common case, components fastest (inner = 1: N x C particles): a block
// moves 512 points through shared memory, so both the interleaved side and the
// component-major side are read and written in whole contiguous runs (the
// element-wise kernel reads the interleaved side with a stride of C).
constexpr uint32_t kComponentTile = 512;

template <class T, bool Apart>
__global__ void __launch_bounds__(256) component_move_fastest_kernel(const T* __restrict__ in, T* __restrict__ out,
                                                                     uint64_t count, uint64_t outer) {
    __shared__ T tile[kComponentTile * format::kMaxComponentExtent];
    const uint64_t o0 = blockIdx.x * uint64_t{kComponentTile};
    const uint32_t points = static_cast<uint32_t>(outer - o0 < kComponentTile ? outer - o0 : kComponentTile);
    const uint32_t values = points * static_cast<uint32_t>(count);
    // interleaved side: values o0*count .. (o0+points)*count, contiguous
    if constexpr (Apart) {
        for (uint32_t v = threadIdx.x; v < values; v += blockDim.x) tile[v] = in[o0 * count + v];
    } else {
        for (uint32_t v = threadIdx.x; v < values; v += blockDim.x) {
            const uint32_t c = v / points, t = v % points;   // component-major side, run c
            tile[t * count + c] = in[c * outer + o0 + t];
        }
    }
    __syncthreads();
    if constexpr (Apart) {
        for (uint32_t v = threadIdx.x; v < values; v += blockDim.x) {
            const uint32_t c = v / points, t = v % points;
            out[c * outer + o0 + t] = tile[t * count + c];
        }
    } else {
        for (uint32_t v = threadIdx.x; v < values; v += blockDim.x) out[o0 * count + v] = tile[v];
    }
}

template <class T>
int32_t choose_component_dim_device(const gsz_params& p, const T* d_data, cudaStream_t stream) {
    if (p.components != GSZ_COMPONENTS_AUTO) return -1;
    return choose_component_dim(p.rank, p.dims, p.pipeline, [&](const std::vector<uint64_t>& index) {
        cuda::DeviceBuffer<uint64_t> d_index(index.size(), stream);
        cuda::DeviceBuffer<double> d_values(index.size(), stream);
        GSZ_CUDA(cudaMemcpyAsync(d_index.data(), index.data(), index.size() * sizeof(uint64_t),
                                 cudaMemcpyHostToDevice, stream));
        const auto blocks = static_cast<unsigned>((index.size() + 255) / 256);
        component_sample_kernel<T><<<blocks, 256, 0, stream>>>(d_data, d_index.data(), index.size(), d_values.data());
        GSZ_CUDA_LAUNCHED("component_sample_kernel");
        std::vector<double> values;
        cuda::copy_to_host(values, d_values.data(), index.size(), stream);
        return values;
    });
}

template <class T, bool Apart>
void move_components_on_device(const T* in, T* out, const ComponentSplit& s, cudaStream_t stream) {
    if (s.inner == 1 && s.outer > 0) {
        const uint64_t tiles = (s.outer + kComponentTile - 1) / kComponentTile;
        GSZ_CHECK(tiles < (uint64_t{1} << 31), GSZ_STATUS_INTERNAL, "component move: %llu tiles",
                  static_cast<unsigned long long>(tiles));
        component_move_fastest_kernel<T, Apart>
            <<<static_cast<unsigned>(tiles), 256, 0, stream>>>(in, out, s.count, s.outer);
        GSZ_CUDA_LAUNCHED("component_move_fastest_kernel");
        return;
    }
    const auto blocks = static_cast<unsigned>(std::max<uint64_t>(std::min<uint64_t>((s.elements() + 255) / 256, 65535u * 8), 1));
    if (s.elements() < (uint64_t{1} << 32) - uint64_t{blocks} * 256)   // no 32-bit index (or step) wraps
        component_move_kernel<T, Apart, uint32_t><<<blocks, 256, 0, stream>>>(
            in, out, static_cast<uint32_t>(s.inner), static_cast<uint32_t>(s.count), static_cast<uint32_t>(s.outer));
    else
        component_move_kernel<T, Apart, uint64_t><<<blocks, 256, 0, stream>>>(in, out, s.inner, s.count, s.outer);
    GSZ_CUDA_LAUNCHED("component_move_kernel");
}

}  // namespace

bool cuda_backend_available(std::string* why) {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
        if (why) *why = err != cudaSuccess ? cudaGetErrorString(err) : "no CUDA device found";
        cudaGetLastError();  // clear the sticky error of the failed query
        return false;
    }
    return true;
}

namespace {

// Device-resident compression with a component dim: the view moved apart on
// the device, the store fallback from a host copy of the array.
template <class T>
std::vector<uint8_t> compress_components_device(const gsz_params& params, const T* d_data, uint32_t k,
                                                cudaStream_t stream) {
    const ComponentSplit split = component_split(params.rank, params.dims, k);
    cuda::DeviceBuffer<T> apart(split.elements(), stream);
    move_components_on_device<T, true>(d_data, apart.data(), split, stream);
    return compress_components(
        params, k,
        [&](const gsz_params& view) { return compress_cuda_device(view, apart.data(), stream); },
        [&](const format::Header& h) {
            std::vector<T> host;
            cuda::copy_to_host(host, d_data, split.elements(), stream);
            return store_compress(h, host.data());
        });
}

}  // namespace

std::vector<uint8_t> compress_cuda_device(const gsz_params& params, const void* d_data, void* stream) {
    params_validate(params);
    select_device();
    const cudaStream_t s = as_stream(stream);
    if (params.dtype == GSZ_DTYPE_F32) {
        const auto* d = static_cast<const float*>(d_data);
        if (const int32_t k = choose_component_dim_device(params, d, s); k >= 0)
            return compress_components_device(params, d, static_cast<uint32_t>(k), s);
        return compress_typed<float>(params, d, nullptr, s);
    }
    const auto* d = static_cast<const double*>(d_data);
    if (const int32_t k = choose_component_dim_device(params, d, s); k >= 0)
        return compress_components_device(params, d, static_cast<uint32_t>(k), s);
    return compress_typed<double>(params, d, nullptr, s);
}

std::vector<uint8_t> compress_cuda(const gsz_params& params, const void* h_data) {
    params_validate(params);
    select_device();
    const uint64_t bytes = params_num_elements(params) * dtype_bytes(params.dtype);
    cudaStream_t s = nullptr;
    cuda::DeviceBuffer<uint8_t> d_data(bytes, s);
    GSZ_CUDA(cudaMemcpyAsync(d_data.data(), h_data, bytes, cudaMemcpyHostToDevice, s));
    if (params.dtype == GSZ_DTYPE_F32)
        return compress_typed(params, reinterpret_cast<const float*>(d_data.data()), static_cast<const float*>(h_data),
                              s);
    return compress_typed(params, reinterpret_cast<const double*>(d_data.data()), static_cast<const double*>(h_data), s);
}

void decompress_cuda_device(const format::Archive& archive, void* d_out, void* stream) {
    check_section_set(archive);
    select_device();
    const cudaStream_t s = as_stream(stream);
    if (const int32_t k = archive.header.component_dim; k >= 0) {   // decode the view, then move back
        const format::Header& h = archive.header;
        const ComponentSplit split = component_split(h.rank, h.dims, static_cast<uint32_t>(k));
        cuda::DeviceBuffer<uint8_t> apart(split.elements() * h.element_bytes(), s);
        decompress_cuda_device(component_view_archive(archive), apart.data(), stream);
        if (h.dtype == GSZ_DTYPE_F32)
            move_components_on_device<float, false>(reinterpret_cast<const float*>(apart.data()),
                                                    static_cast<float*>(d_out), split, s);
        else
            move_components_on_device<double, false>(reinterpret_cast<const double*>(apart.data()),
                                                     static_cast<double*>(d_out), split, s);
        GSZ_CUDA(cudaStreamSynchronize(s));
        return;
    }
    if (archive.header.pipeline == GSZ_PIPELINE_STORE) {  // zstd runs on the host
        std::vector<uint8_t> host(archive.header.num_elements() * archive.header.element_bytes());
        store_decompress(archive, host.data());
        GSZ_CUDA(cudaMemcpyAsync(d_out, host.data(), host.size(), cudaMemcpyHostToDevice, s));
        GSZ_CUDA(cudaStreamSynchronize(s));
        return;
    }
    GSZ_CHECK(archive.header.pipeline == GSZ_PIPELINE_LORENZO || archive.header.pipeline == GSZ_PIPELINE_FAST ||
                  archive.header.pipeline == GSZ_PIPELINE_INTERP,
              GSZ_STATUS_UNSUPPORTED, "pipeline %d on CUDA", archive.header.pipeline);
    if (archive.header.dtype == GSZ_DTYPE_F32)
        decompress_typed(archive, static_cast<float*>(d_out), s);
    else
        decompress_typed(archive, static_cast<double*>(d_out), s);
}

void decompress_cuda(const format::Archive& archive, void* h_out) {
    select_device();
    const uint64_t bytes = archive.header.num_elements() * archive.header.element_bytes();
    cudaStream_t s = nullptr;
    cuda::DeviceBuffer<uint8_t> d_out(bytes, s);
    decompress_cuda_device(archive, d_out.data(), s);
    GSZ_CUDA(cudaMemcpyAsync(h_out, d_out.data(), bytes, cudaMemcpyDeviceToHost, s));
    GSZ_CUDA(cudaStreamSynchronize(s));
}

void copy_to_device(void* d_dst, const void* h_src, size_t bytes, void* stream) {
    GSZ_CUDA(cudaMemcpyAsync(d_dst, h_src, bytes, cudaMemcpyHostToDevice, as_stream(stream)));
    GSZ_CUDA(cudaStreamSynchronize(as_stream(stream)));
}

void copy_to_host(void* h_dst, const void* d_src, size_t bytes, void* stream) {
    GSZ_CUDA(cudaMemcpyAsync(h_dst, d_src, bytes, cudaMemcpyDeviceToHost, as_stream(stream)));
    GSZ_CUDA(cudaStreamSynchronize(as_stream(stream)));
}

namespace {

// What each pipeline keeps from one repetition to the next, as an
// application compressing every time step would: its device buffers (and
// page-locked host buffers), grown by the warm-up, so that timed calls make
// no allocation calls.  (Interp's were made per call until 2026-11-25: a
// page-locked allocation then cost up to 1.5 ms per compression.)
template <class T>
struct BenchBuffers {
    FastDeviceCompressed<T> compressed;
    FastDeviceArchive<T> archive;
    DeviceCompressed<T> lorenzo_compressed;
    DeviceArchive<T> lorenzo_archive;
    InterpDeviceCompressed<T> interp_compressed;
    InterpDeviceArchive<T> interp_archive;
};

// Device-resident compression time: input in device memory -> every section
// in device memory (kernels plus the host codebook step); fetching the
// sections and writing the archive on the host are not timed.
template <class T, class Timer>
double bench_typed_compress(const gsz_params& params, const void* d_in, cudaStream_t s, Timer& timed,
                            std::vector<uint8_t>& archive, BenchBuffers<T>& fast) {
    const T* d_data = static_cast<const T*>(d_in);
    if (params.pipeline == GSZ_PIPELINE_INTERP) {
        InterpDeviceCompressed<T>& ic = fast.interp_compressed;
        const double t = timed([&] { interp_compress_on_device(params, d_data, ic, s); });
        archive = interp_fetch_archive(ic, d_data, static_cast<const T*>(nullptr), params_num_elements(params), s);
        return t;
    }
    if (params.pipeline == GSZ_PIPELINE_FAST) {
        FastDeviceCompressed<T>& fc = fast.compressed;
        const double t = timed([&] { fast_compress_on_device(params, d_data, fc, s); });
        archive = fast_fetch_archive(fc, d_data, static_cast<const T*>(nullptr), params_num_elements(params), s);
        return t;
    }
    DeviceCompressed<T>& dc = fast.lorenzo_compressed;
    const double t = timed([&] { compress_on_device(params, d_data, dc, s); });
    archive = fetch_archive(dc, d_data, static_cast<const T*>(nullptr), params_num_elements(params), s);
    return t;
}

// Device-resident decompression time: validated sections in device memory ->
// values in device memory.
template <class T, class Timer>
double bench_typed_decompress(const std::vector<uint8_t>& archive, void* d_out, cudaStream_t s, Timer& timed,
                              BenchBuffers<T>& fast) {
    const format::Archive parsed = format::archive_parse(archive);
    if (parsed.header.pipeline == GSZ_PIPELINE_FAST) {
        FastDeviceArchive<T>& fa = fast.archive;
        fast_upload_archive(parsed, fa, s);
        return timed([&] { fast_decode_on_device(fa, static_cast<T*>(d_out), s); });
    }
    if (parsed.header.pipeline == GSZ_PIPELINE_INTERP) {
        InterpDeviceArchive<T>& ia = fast.interp_archive;
        interp_upload_archive(parsed, ia, s);
        return timed([&] { interp_decode_on_device(ia, parsed.header.num_elements(), static_cast<T*>(d_out), s); });
    }
    if (parsed.header.pipeline != GSZ_PIPELINE_LORENZO)
        return timed([&] { decompress_cuda_device(parsed, d_out, s); });
    DeviceArchive<T>& da = fast.lorenzo_archive;
    upload_archive(parsed, da, s);
    return timed([&] { decode_on_device(da, parsed.header.num_elements(), static_cast<T*>(d_out), s); });
}

}  // namespace

namespace {

// Median seconds of the device moves apart and together (component_move_kernel)
// of this array, by CUDA events, `repeat` times each.
template <class T>
std::pair<double, double> time_component_moves(const void* host_data, const ComponentSplit& split, int repeat) {
    cudaStream_t s = nullptr;
    cuda::DeviceBuffer<T> a(split.elements(), s), b(split.elements(), s);
    GSZ_CUDA(cudaMemcpyAsync(a.data(), host_data, split.elements() * sizeof(T), cudaMemcpyHostToDevice, s));
    cudaEvent_t start, stop;
    GSZ_CUDA(cudaEventCreate(&start));
    GSZ_CUDA(cudaEventCreate(&stop));
    auto median_of = [&](auto&& body) {
        std::vector<double> t;
        for (int i = 0; i < std::max(repeat, 1) + 1; ++i) {   // one untimed first
            GSZ_CUDA(cudaEventRecord(start, s));
            body();
            GSZ_CUDA(cudaEventRecord(stop, s));
            GSZ_CUDA(cudaEventSynchronize(stop));
            float ms = 0;
            GSZ_CUDA(cudaEventElapsedTime(&ms, start, stop));
            if (i > 0) t.push_back(ms / 1e3);
        }
        std::sort(t.begin(), t.end());
        return t[t.size() / 2];
    };
    const double apart = median_of([&] { move_components_on_device<T, true>(a.data(), b.data(), split, s); });
    const double together = median_of([&] { move_components_on_device<T, false>(b.data(), a.data(), split, s); });
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    return {apart, together};
}

}  // namespace

BenchResult bench_cuda(const BenchOptions& options, const void* host_data) {
    const gsz_params& params = options.params;
    params_validate(params);
    if (const int32_t k = choose_component_dim_host(params, host_data); k >= 0) {
        // The pipeline runs on the view; the moves the API makes around it
        // (on the device for device pointers, OpenMP on the host for host
        // memory) are timed apart and added to every repetition.
        const ComponentSplit split = component_split(params.rank, params.dims, static_cast<uint32_t>(k));
        const size_t bytes = dtype_bytes(params.dtype);
        std::vector<uint8_t> apart(split.elements() * bytes);
        const auto t0 = std::chrono::steady_clock::now();
        components_apart_cpu(host_data, apart.data(), split, bytes, params.num_threads);
        const double host_apart = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        BenchOptions view = options;
        view.params = component_view_params(params, static_cast<uint32_t>(k));
        view.params.components = GSZ_COMPONENTS_OFF;   // as compress_components runs it
        BenchResult r = bench_cuda(view, apart.data());
        r.archive = compress_components(
            params, static_cast<uint32_t>(k), [&](const gsz_params&) { return r.archive; },
            [&](const format::Header& h) { return store_compress(h, host_data); });
        r.archive_bytes = r.archive.size();
        const auto t1 = std::chrono::steady_clock::now();
        components_together_cpu(r.decoded.data(), apart.data(), split, bytes, params.num_threads);
        const double host_together = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
        r.decoded = std::move(apart);
        const auto [device_apart, device_together] =
            params.dtype == GSZ_DTYPE_F32 ? time_component_moves<float>(host_data, split, options.repeat)
                                          : time_component_moves<double>(host_data, split, options.repeat);
        for (double& t : r.compress_s) t += device_apart;
        for (double& t : r.decompress_s) t += device_together;
        for (double& t : r.compress_e2e_s) t += host_apart;
        for (double& t : r.decompress_e2e_s) t += host_together;
        return r;
    }
    select_device();
    int device = 0;
    GSZ_CUDA(cudaGetDevice(&device));
    cudaDeviceProp prop{};
    GSZ_CUDA(cudaGetDeviceProperties(&prop, device));

    BenchResult r;
    r.device = prop.name;
    r.original_bytes = params_num_elements(params) * dtype_bytes(params.dtype);
    cudaStream_t s = nullptr;
    GSZ_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    struct StreamGuard {
        cudaStream_t s;
        ~StreamGuard() { cudaStreamDestroy(s); }
    } guard{s};
    cudaEvent_t start, stop;
    GSZ_CUDA(cudaEventCreate(&start));
    GSZ_CUDA(cudaEventCreate(&stop));
    struct EventGuard {
        cudaEvent_t a, b;
        ~EventGuard() {
            cudaEventDestroy(a);
            cudaEventDestroy(b);
        }
    } events{start, stop};

    cuda::DeviceBuffer<uint8_t> d_in(r.original_bytes, s), d_out(r.original_bytes, s);
    GSZ_CUDA(cudaMemcpyAsync(d_in.data(), host_data, r.original_bytes, cudaMemcpyHostToDevice, s));
    GSZ_CUDA(cudaStreamSynchronize(s));
    std::vector<uint8_t> host_out(r.original_bytes);

    // Events bracket the whole call: host steps in between (codebook,
    // archive assembly, validation) delay the stop event, so they are counted.
    auto timed = [&](auto&& body) {
        GSZ_CUDA(cudaEventRecord(start, s));
        body();
        GSZ_CUDA(cudaEventRecord(stop, s));
        GSZ_CUDA(cudaEventSynchronize(stop));
        float ms = 0;
        GSZ_CUDA(cudaEventElapsedTime(&ms, start, stop));
        return ms / 1e3;
    };
    using Clock = std::chrono::steady_clock;
    auto wall = [](auto&& body) {
        const auto t0 = Clock::now();
        body();
        return std::chrono::duration<double>(Clock::now() - t0).count();
    };

    const uint64_t n = params_num_elements(params);
    BenchBuffers<float> fast_f32;
    BenchBuffers<double> fast_f64;
    for (int it = 0; it < options.warmup + options.repeat; ++it) {
        std::vector<uint8_t> archive;
        double c = 0, d = 0;
        if (params.dtype == GSZ_DTYPE_F32) {
            c = bench_typed_compress<float>(params, d_in.data(), s, timed, archive, fast_f32);
            d = bench_typed_decompress<float>(archive, d_out.data(), s, timed, fast_f32);
        } else {
            c = bench_typed_compress<double>(params, d_in.data(), s, timed, archive, fast_f64);
            d = bench_typed_decompress<double>(archive, d_out.data(), s, timed, fast_f64);
        }
        const double ce = wall([&] { archive = compress_cuda(params, host_data); });
        const double de = wall([&] { decompress_cuda(format::archive_parse(archive), host_out.data()); });
        if (it >= options.warmup) {
            r.compress_s.push_back(c);
            r.decompress_s.push_back(d);
            r.compress_e2e_s.push_back(ce);
            r.decompress_e2e_s.push_back(de);
        }
        r.archive = std::move(archive);
    }
    (void)n;
    r.archive_bytes = r.archive.size();
    r.decoded = std::move(host_out);
    return r;
}

}  // namespace gsz::pipeline
