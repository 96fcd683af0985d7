// GPU Huffman stage against the CPU coder: same histogram, bit-identical
// encoded stream, and a decoder with the same accept/reject rules.
#include "encode/huffman.hpp"
#include "encode/huffman_cuda.hpp"
#include "encode/huffman_table.hpp"
#include "encode/huffman_test_books.hpp"
#include "runtime/cuda/device_buffer.hpp"

#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace gsz::encode {
namespace {

// Checked once: the reason is printed with every skip.
bool device_available(std::string& why) {
    static const std::pair<bool, std::string> probe = [] {
        int count = 0;
        const cudaError_t err = cudaGetDeviceCount(&count);
        if (err != cudaSuccess) {
            cudaGetLastError();  // clear the sticky-free error state
            return std::pair<bool, std::string>{false, std::string("cudaGetDeviceCount: ") + cudaGetErrorString(err)};
        }
        if (count == 0) return std::pair<bool, std::string>{false, std::string("cudaGetDeviceCount returned 0")};
        return std::pair<bool, std::string>{true, std::string()};
    }();
    why = probe.second;
    return probe.first;
}

class HuffmanCuda : public ::testing::Test {
protected:
    void SetUp() override {
        std::string why;
        if (!device_available(why)) GTEST_SKIP() << "no CUDA device: " << why;
        ASSERT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
    }
    void TearDown() override {
        if (stream_) {
            EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
            cudaStreamDestroy(stream_);
        }
    }
    cudaStream_t stream_ = nullptr;
};

// ---- data ----

struct XorShift {
    uint64_t s;
    uint64_t operator()() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return s;
    }
};

// Quant-code-like: two-sided geometric around alphabet/2; about 60% of the
// symbols are the centre.  Fast enough for tens of millions.
std::vector<uint16_t> skewed_symbols(size_t n, uint32_t alphabet, uint64_t seed) {
    XorShift rng{seed * 0x9E3779B97F4A7C15ull + 1};
    std::vector<uint16_t> out(n);
    const int center = static_cast<int>(alphabet / 2);
    for (auto& s : out) {
        const uint64_t r = rng();
        const int mag = __builtin_ctzll(r | (1ull << 40)) + static_cast<int>((r >> 48) & 3) * (r & 1 ? 0 : 1);
        const int v = (r >> 63) ? center + mag : center - mag;
        s = static_cast<uint16_t>(std::clamp(v, 0, static_cast<int>(alphabet) - 1));
    }
    return out;
}

std::vector<uint16_t> uniform_symbols(size_t n, uint32_t alphabet, uint64_t seed) {
    XorShift rng{seed + 12345};
    std::vector<uint16_t> out(n);
    for (auto& s : out) s = static_cast<uint16_t>(rng() % alphabet);
    return out;
}

// Fibonacci counts: the deepest trees, so the length limit (24) is hit.
std::vector<uint16_t> fibonacci_symbols(int num_symbols) {
    std::vector<uint16_t> out;
    uint64_t f0 = 1, f1 = 1;
    for (int s = 0; s < num_symbols; ++s) {
        out.insert(out.end(), f0, static_cast<uint16_t>(s));
        f0 = std::exchange(f1, f0 + f1);
    }
    std::shuffle(out.begin(), out.end(), std::mt19937(2));
    return out;
}

// ---- device helpers ----

template <class T>
cuda::DeviceBuffer<T> to_device(const std::vector<T>& v, cudaStream_t stream, size_t offset = 0) {
    cuda::DeviceBuffer<T> d(v.size() + offset, stream);
    if (!v.empty())
        EXPECT_EQ(cudaMemcpyAsync(d.data() + offset, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice, stream),
                  cudaSuccess);
    return d;
}

template <class T>
std::vector<T> to_host(const T* d, size_t count, cudaStream_t stream) {
    std::vector<T> v;
    cuda::copy_to_host(v, d, count, stream);
    return v;
}

std::vector<uint64_t> word_offsets(const std::vector<uint32_t>& chunk_bits) {
    std::vector<uint64_t> off(chunk_bits.size() + 1, 0);
    for (size_t c = 0; c < chunk_bits.size(); ++c) off[c + 1] = off[c] + (uint64_t{chunk_bits[c]} + 31) / 32;
    return off;
}

struct GpuDecoded {
    bool corrupt = false;
    std::vector<uint16_t> out;
};

// Decodes a host-side stream on the GPU; out_offset shifts the output (alignment).
GpuDecoded gpu_decode(const HuffmanDeviceBook& book, const std::vector<uint32_t>& words,
                      const std::vector<uint32_t>& chunk_bits, const std::vector<uint64_t>& offsets, uint64_t n,
                      uint32_t chunk, cudaStream_t stream, size_t out_offset = 0) {
    auto d_words = to_device(words, stream);
    auto d_bits = to_device(chunk_bits, stream);
    auto d_off = to_device(offsets, stream);
    cuda::DeviceBuffer<uint16_t> d_out(n + out_offset, stream);
    cuda::DeviceBuffer<uint32_t> d_corrupt(1, stream);
    d_corrupt.zero(stream);
    huffman_decode_cuda(book, d_words.data(), words.size(), d_bits.data(), d_off.data(), n, chunk,
                        d_out.data() + out_offset, d_corrupt.data(), stream);
    GpuDecoded r;
    r.out = to_host(d_out.data() + out_offset, n, stream);
    r.corrupt = to_host(d_corrupt.data(), 1, stream)[0] != 0;
    return r;
}

struct CpuDecoded {
    bool table_ok = false;  // huffman_stream_read accepted the chunk table
    bool corrupt = false;
    std::vector<uint64_t> offsets;
    std::vector<uint16_t> out;
};

CpuDecoded cpu_decode(const HuffmanCodebook& book, const std::vector<uint32_t>& words,
                      const std::vector<uint32_t>& chunk_bits, uint64_t n, uint32_t chunk) {
    HuffmanStream s;
    s.num_symbols = n;
    s.chunk_symbols = chunk;
    s.chunk_bits = chunk_bits;
    s.words = words;
    ByteWriter wc, wb;
    huffman_chunks_write(s, wc, kHuffmanNarrowCountsVersion);
    huffman_bitstream_write(s, wb);
    const std::vector<uint8_t> chunks = wc.take(), bits = wb.take();
    CpuDecoded r;
    HuffmanStreamView view;
    try {
        view = huffman_stream_read(chunks, bits, n, kHuffmanNarrowCountsVersion);
    } catch (const Error&) {
        return r;
    }
    r.table_ok = true;
    r.offsets = view.chunk_word_offset;
    r.out.assign(n, 0);
    try {
        huffman_decode_cpu(book, view, r.out, 1);
    } catch (const Error& e) {
        EXPECT_EQ(e.status(), GSZ_STATUS_CORRUPT) << e.what();
        r.corrupt = true;
    }
    return r;
}

// Histogram, encode and decode on the GPU against the CPU, for each chunk size.
// `offset` shifts the device copy of the symbols (unaligned loads).
void expect_gpu_matches_cpu(const std::vector<uint16_t>& symbols, uint32_t alphabet,
                            const std::vector<uint32_t>& chunks, cudaStream_t stream, size_t offset = 0) {
    const uint64_t n = symbols.size();
    auto d_symbols = to_device(symbols, stream, offset);
    const uint16_t* d_sym = d_symbols.data() + offset;

    cuda::DeviceBuffer<uint64_t> d_hist(alphabet, stream);
    cuda::DeviceBuffer<uint32_t> d_bad(1, stream);
    d_bad.zero(stream);
    histogram_cuda(d_sym, n, alphabet, d_hist.data(), d_bad.data(), stream);
    const std::vector<uint64_t> hist = histogram_cpu(symbols, alphabet, 0);
    ASSERT_EQ(to_host(d_hist.data(), alphabet, stream), hist) << "alphabet " << alphabet << " n " << n;
    ASSERT_EQ(to_host(d_bad.data(), 1, stream)[0], 0u);

    const HuffmanCodebook book = huffman_build(hist);
    const HuffmanDeviceBook d_book = huffman_upload(book, stream);
    const HuffmanDeviceBook d_encoder = huffman_upload_encoder(book, stream);  // what compression uploads
    for (size_t c = 0; c < chunks.size(); ++c) {
        const uint32_t chunk = chunks[c];
        SCOPED_TRACE("alphabet " + std::to_string(alphabet) + " n " + std::to_string(n) + " chunk " +
                     std::to_string(chunk) + " offset " + std::to_string(offset));
        const HuffmanStream cpu = huffman_encode_cpu(book, symbols, chunk, 0);
        const std::vector<uint64_t> offsets = word_offsets(cpu.chunk_bits);

        HuffmanDeviceStream gpu;
        huffman_encode_cuda(c % 2 ? d_encoder : d_book, d_sym, n, chunk, gpu, stream);
        EXPECT_EQ(gpu.num_symbols, n);
        EXPECT_EQ(gpu.chunk_symbols, chunk);
        ASSERT_EQ(gpu.num_chunks, cpu.chunk_bits.size());
        ASSERT_EQ(gpu.num_words, cpu.words.size());
        EXPECT_EQ(to_host(gpu.chunk_bits.data(), gpu.num_chunks, stream), cpu.chunk_bits);
        EXPECT_EQ(to_host(gpu.chunk_word_offset.data(), gpu.num_chunks + 1, stream), offsets);
        const std::vector<uint32_t> words = to_host(gpu.words.data(), gpu.num_words, stream);
        if (words != cpu.words) {
            size_t first = 0;
            while (first < words.size() && words[first] == cpu.words[first]) ++first;
            ADD_FAILURE() << "words differ first at " << first << " of " << words.size();
        }

        // As the pipeline encodes: words sized by the histogram's bound, the count read back after.
        HuffmanDeviceStream bounded;
        huffman_encode_prepare(n, chunk, bounded, stream);  // look-back states before the codebook
        huffman_encode_cuda(d_encoder, d_sym, n, chunk, bounded, stream, huffman_max_words(hist, book, n, chunk));
        huffman_stream_read_words(bounded, stream);
        ASSERT_EQ(bounded.num_words, cpu.words.size());
        EXPECT_EQ(to_host(bounded.chunk_bits.data(), bounded.num_chunks, stream), cpu.chunk_bits);
        EXPECT_EQ(to_host(bounded.chunk_word_offset.data(), bounded.num_chunks + 1, stream), offsets);
        EXPECT_TRUE(to_host(bounded.words.data(), bounded.num_words, stream) == cpu.words) << "bounded words differ";

        // The CPU stream decoded on the GPU (output deliberately misaligned once).
        const GpuDecoded dec = gpu_decode(d_book, cpu.words, cpu.chunk_bits, offsets, n, chunk, stream, offset);
        EXPECT_FALSE(dec.corrupt);
        EXPECT_TRUE(dec.out == symbols) << "decoded symbols differ";

        // The GPU stream decoded in place, counting each chunk's 0 symbols.
        cuda::DeviceBuffer<uint16_t> d_out(n, stream);
        cuda::DeviceBuffer<uint32_t> d_corrupt(1, stream);
        d_corrupt.zero(stream);
        cuda::DeviceBuffer<uint32_t> d_zeros(gpu.num_chunks, stream);
        huffman_decode_cuda(d_book, gpu.words.data(), gpu.num_words, gpu.chunk_bits.data(),
                            gpu.chunk_word_offset.data(), n, chunk, d_out.data(), d_corrupt.data(), stream,
                            d_zeros.data());
        EXPECT_EQ(to_host(d_corrupt.data(), 1, stream)[0], 0u);
        EXPECT_TRUE(to_host(d_out.data(), n, stream) == symbols);
        std::vector<uint32_t> zeros(gpu.num_chunks, 0);
        for (uint64_t i = 0; i < n; ++i) zeros[i / chunk] += symbols[i] == 0;
        EXPECT_EQ(to_host(d_zeros.data(), gpu.num_chunks, stream), zeros);
    }
    // An encoder-only book has no decode tables: decoding with it is refused.
    HuffmanDeviceStream gpu;
    huffman_encode_cuda(d_encoder, d_sym, n, chunks[0], gpu, stream);
    cuda::DeviceBuffer<uint16_t> d_out(n, stream);
    cuda::DeviceBuffer<uint32_t> d_corrupt(1, stream);
    try {
        huffman_decode_cuda(d_encoder, gpu.words.data(), gpu.num_words, gpu.chunk_bits.data(),
                            gpu.chunk_word_offset.data(), n, chunks[0], d_out.data(), d_corrupt.data(), stream);
        ADD_FAILURE() << "decoding with an encoder-only book was accepted";
    } catch (const Error& e) {
        EXPECT_EQ(e.status(), GSZ_STATUS_INVALID_ARGUMENT) << e.what();
    }
}

// ---- tests ----

TEST_F(HuffmanCuda, QuantCodesAlphabet1024) {
    auto symbols = skewed_symbols(1000003, 1024, 1);
    for (size_t i = 0; i < symbols.size(); i += 97 + i % 13) symbols[i] = 0;  // outliers, counted by the decoder
    expect_gpu_matches_cpu(symbols, 1024, {4096, 1000, 1, 7, 65, 4097, 70000, 1u << 20}, stream_);
    expect_gpu_matches_cpu(symbols, 1024, {4096, 1000}, stream_, 3);  // unaligned input and output
}

TEST_F(HuffmanCuda, TilesDenserThanTheStage) {
    // The one-pass encoder stages a tile in twice the average tile's words;
    // one tile in 16 here is ~10 bits per symbol against ~1.6 on average, so
    // those are packed in place after the look-back (and the rest staged).
    std::vector<uint16_t> symbols(16 * 1024 * 40 + 777);
    XorShift rng{5};
    for (size_t i = 0; i < symbols.size(); ++i) {
        const bool dense = (i / (16 * 1024)) % 16 == 3;
        const uint64_t r = rng();
        symbols[i] = static_cast<uint16_t>(dense ? r % 1024 : ((r & 15) != 0 ? 512 : 511 + (r >> 4) % 3));
    }
    expect_gpu_matches_cpu(symbols, 1024, {1024, 4096, 300, 2000}, stream_);
}

TEST_F(HuffmanCuda, PairAndSingleDecodeLoops) {
    // ~1.4 bits per code: nearly every root index holds two codes, so the
    // decoder runs its pair loop (odd chunk sizes end rounds on a single step).
    std::vector<uint16_t> sharp(400009);
    XorShift rng{77};
    for (auto& s : sharp) {
        const uint64_t r = rng();
        s = static_cast<uint16_t>((r & 7) != 0 ? 512 : 510 + (r >> 3) % 5);
    }
    EXPECT_TRUE(huffman_upload(huffman_build(histogram_cpu(sharp, 1024, 0)), stream_).pairs);
    expect_gpu_matches_cpu(sharp, 1024, {4096, 1000, 65, 7, 1}, stream_);
    // The same codes on symbols above 1023: no pair entries, the single loop.
    std::vector<uint16_t> high(sharp);
    for (auto& s : high) s = static_cast<uint16_t>(s + 2048);
    EXPECT_FALSE(huffman_upload(huffman_build(histogram_cpu(high, 4096, 0)), stream_).pairs);
    expect_gpu_matches_cpu(high, 4096, {4096, 1000, 65}, stream_);
}

// The decode tables the device builds (huffman_build_decode_tables) are
// word for word the host's (huffman_decode_table, huffman_pair_root), into
// one buffer reused book after book; a book whose subtables do not all fit
// takes the host path.
TEST_F(HuffmanCuda, DecodeTablesBuiltOnTheDeviceMatchTheHost) {
    std::vector<HuffmanCodebook> books = huffman_edge_books();
    for (double spread : {0.05, 0.3, 3.0, 40.0})
        for (uint32_t alphabet : {2u, 1024u, 1500u, 4096u}) {
            std::vector<uint64_t> hist(alphabet, 0);
            XorShift rng{alphabet + static_cast<uint64_t>(spread * 100)};
            for (int i = 0; i < 200000; ++i) {  // a two-sided geometric around the middle
                const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
                const auto d = static_cast<int64_t>(-spread * std::log1p(-u)) * ((rng() & 1) ? 1 : -1);
                ++hist[static_cast<size_t>(std::clamp<int64_t>(alphabet / 2 + d, 0, alphabet - 1))];
            }
            books.push_back(huffman_build(hist));
        }
    HuffmanDeviceBook d;
    int paired = 0, with_sub = 0;
    for (size_t b = 0; b < books.size(); ++b) {
        const HuffmanCodebook& book = books[b];
        huffman_upload_book(book, d, stream_);
        huffman_build_decode_tables(book, d, stream_);
        const HuffmanDecodeTable t = huffman_decode_table(book);
        const std::vector<uint32_t> root = d.pairs ? huffman_pair_root(t) : t.root;
        ASSERT_EQ(d.sub_entries, t.sub.size()) << "book " << b;
        std::vector<uint32_t> got(kHuffmanRootSize + book.alphabet_size + t.sub.size());
        ASSERT_EQ(cudaMemcpyAsync(got.data(), d.tables.data(), got.size() * sizeof(uint32_t), cudaMemcpyDeviceToHost,
                                  stream_),
                  cudaSuccess);
        ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
        for (uint32_t i = 0; i < kHuffmanRootSize; ++i) ASSERT_EQ(got[i], root[i]) << "book " << b << " root " << i;
        for (uint32_t s = 0; s < book.alphabet_size; ++s)
            ASSERT_EQ(got[kHuffmanRootSize + s], book.codes[s] | uint32_t{book.lengths[s]} << 24) << "book " << b;
        for (size_t i = 0; i < t.sub.size(); ++i)
            ASSERT_EQ(got[kHuffmanRootSize + book.alphabet_size + i], t.sub[i]) << "book " << b << " sub " << i;
        paired += d.pairs;
        with_sub += !t.sub.empty();
    }
    EXPECT_GE(paired, 3);
    EXPECT_GE(with_sub, 5);
}

TEST_F(HuffmanCuda, SingleSymbol) {
    const std::vector<uint16_t> symbols(100001, 5);
    expect_gpu_matches_cpu(symbols, 16, {4096, 1000, 1, 300}, stream_);
    expect_gpu_matches_cpu(std::vector<uint16_t>(1, 0), 1, {1, 4096}, stream_);
}

TEST_F(HuffmanCuda, TinyInputs) {
    expect_gpu_matches_cpu({0, 1, 2, 0}, 3, {1, 3, 4, 4096}, stream_);
    expect_gpu_matches_cpu({7, 7, 1, 7, 2}, 8, {1u << 20}, stream_);  // one chunk, mostly empty slices
}

TEST_F(HuffmanCuda, UniformAlphabet65536) {
    // 65536 bins do not fit shared memory: the histogram keeps a window of bins around the middle there and
    // counts the others by global atomics (uniform symbols: most of them).
    const auto symbols = uniform_symbols(3000017, 65536, 2);
    expect_gpu_matches_cpu(symbols, 65536, {1000, 4096, 70000}, stream_);
    expect_gpu_matches_cpu(skewed_symbols(500001, 65536, 3), 65536, {4096}, stream_, 1);
    expect_gpu_matches_cpu(uniform_symbols(200001, 20000, 4), 20000, {4096}, stream_);  // window of 6,112 bins
    // 16000 used symbols: the decoder's symbol table stays in global memory (the search reads it there).
    expect_gpu_matches_cpu(uniform_symbols(200001, 16000, 8), 16000, {4096, 1000}, stream_);
}

TEST_F(HuffmanCuda, WindowOfAWideBook) {
    // Interp's quant-codes at tight bounds: two-sided geometric around the
    // middle, spread over ~10^4 symbols with rare ones far out; the one-pass
    // encoder keeps 4,096 entries around the middle in shared memory and
    // reads the others (both sides of the window) from global memory.
    const uint32_t alphabet = 65526;
    std::vector<uint16_t> symbols(2000003);
    XorShift rng{31};
    for (auto& s : symbols) {
        const uint64_t r = rng();
        const double u = static_cast<double>((r >> 11) & 0xFFFFF) / 0x100000 + 0x1p-21;
        const auto magnitude = static_cast<uint32_t>(-700.0 * std::log(u));  // up to ~10,000
        const uint32_t mid = alphabet / 2;
        s = static_cast<uint16_t>((r & 511) == 0 ? (r >> 32) % alphabet
                                  : (r & 1024) ? mid + std::min(magnitude, mid - 1) : mid - std::min(magnitude, mid));
    }
    expect_gpu_matches_cpu(symbols, alphabet, {1024, 1000, 300}, stream_);
    expect_gpu_matches_cpu(symbols, alphabet, {1024}, stream_, 1);  // unaligned: symbols read where they lie
}

TEST_F(HuffmanCuda, HistogramTailOfLargeAlphabet) {
    // Interp's run tokens: the codes cluster around the alphabet's middle, the
    // tokens are its last 16 symbols (counted in shared memory with the
    // window's bins), a few codes lie in between (global atomics).
    const uint32_t alphabet = 65520 + 16;
    std::vector<uint16_t> symbols(1000003);
    XorShift rng{21};
    for (auto& s : symbols) {
        const uint64_t r = rng();
        s = static_cast<uint16_t>((r & 3) == 0 ? alphabet - 1 - (r >> 8) % 16
                                  : (r & 31) == 1 ? (r >> 8) % alphabet
                                                  : 32760 - 8 + (r >> 8) % 17);
    }
    const std::vector<uint64_t> expect = histogram_cpu(symbols, alphabet, 0);
    auto d_symbols = to_device(symbols, stream_);
    cuda::DeviceBuffer<uint64_t> d_hist(alphabet, stream_);
    cuda::DeviceBuffer<uint32_t> d_bad(1, stream_);
    d_bad.zero(stream_);
    histogram_cuda(d_symbols.data(), symbols.size(), alphabet, d_hist.data(), d_bad.data(), stream_);
    EXPECT_EQ(to_host(d_bad.data(), 1, stream_)[0], 0u);
    EXPECT_EQ(to_host(d_hist.data(), alphabet, stream_), expect);
}

TEST_F(HuffmanCuda, LongCodes) {
    const auto symbols = fibonacci_symbols(30);  // ~2.2M symbols, codes up to 24 bits
    const auto book = huffman_build(histogram_cpu(symbols, 64, 0));
    ASSERT_GE(book.max_length, 20u);
    expect_gpu_matches_cpu(symbols, 64, {4096, 1000, 1, 1u << 20}, stream_);
}

TEST_F(HuffmanCuda, PackThroughSharedMemory) {
    // ~10 bits per symbol in whole chunks: the staged packer, with chunks
    // that fit its stretch (1000, 1024 symbols), chunks too long for it (4096:
    // packed in place) and short ones (65); the fibonacci book's long codes
    // (LongCodes) and the skewed books' short ones take the other paths.
    const auto symbols = uniform_symbols(300007, 1024, 12);
    expect_gpu_matches_cpu(symbols, 1024, {1000, 1024, 4096, 65, 1}, stream_);
    expect_gpu_matches_cpu(symbols, 1024, {1024}, stream_, 3);  // unaligned input and output
}

TEST_F(HuffmanCuda, LargeInput) {
    // Many blocks, several grid-stride rounds, multi-slice chunks.
    const auto symbols = skewed_symbols(50000017, 1024, 5);
    expect_gpu_matches_cpu(symbols, 1024, {4096, 1u << 20}, stream_);
}

TEST_F(HuffmanCuda, HistogramFlagsOutOfRangeSymbols) {
    for (uint32_t alphabet : {1000u, 30000u}) {
        auto symbols = skewed_symbols(100000, alphabet, 6);
        symbols[12345] = static_cast<uint16_t>(alphabet);
        symbols[99999] = 65535;
        auto d_symbols = to_device(symbols, stream_);
        cuda::DeviceBuffer<uint64_t> d_hist(alphabet, stream_);
        cuda::DeviceBuffer<uint32_t> d_bad(1, stream_);
        d_bad.zero(stream_);
        histogram_cuda(d_symbols.data(), symbols.size(), alphabet, d_hist.data(), d_bad.data(), stream_);
        EXPECT_EQ(to_host(d_bad.data(), 1, stream_)[0], 1u) << alphabet;
        // In-range symbols are still counted.
        std::vector<uint64_t> expect(alphabet, 0);
        for (uint16_t s : symbols)
            if (s < alphabet) ++expect[s];
        EXPECT_EQ(to_host(d_hist.data(), alphabet, stream_), expect);
    }
}

TEST_F(HuffmanCuda, CorruptStreamsMatchCpuVerdict) {
    const auto symbols = skewed_symbols(20000, 1024, 7);
    const auto book = huffman_build(histogram_cpu(symbols, 1024, 0));
    const auto d_book = huffman_upload(book, stream_);
    std::mt19937_64 rng(8);
    int rejected = 0;
    for (uint32_t chunk : {1000u, 4096u}) {
        const HuffmanStream clean = huffman_encode_cpu(book, symbols, chunk, 0);
        for (int trial = 0; trial < 60; ++trial) {
            auto bits = clean.chunk_bits;
            auto words = clean.words;
            const size_t c = rng() % bits.size();
            const uint64_t first_word = word_offsets(bits)[c];
            switch (trial % 4) {
                case 0:  // flipped bits anywhere
                    for (int k = 0; k < 1 + trial % 3; ++k) words[rng() % words.size()] ^= 1u << (rng() % 32);
                    break;
                case 1:  // one bit fewer / more in the table (same word count unless it crosses a word)
                    bits[c] += (trial & 4) ? 1 : -1;
                    break;
                case 2:  // a nonzero padding bit
                    if (bits[c] % 32 == 0) bits[c] -= 1;  // make room for padding (a bit count error as well)
                    words[first_word + bits[c] / 32] |= 1u;
                    break;
                default:  // garbage in one chunk
                    for (uint64_t w = first_word; w < first_word + (bits[c] + 31) / 32; ++w)
                        words[w] = static_cast<uint32_t>(rng());
                    break;
            }
            const CpuDecoded cpu = cpu_decode(book, words, bits, symbols.size(), chunk);
            if (!cpu.table_ok) continue;  // the host rejects it before any decoding
            const GpuDecoded gpu = gpu_decode(d_book, words, bits, cpu.offsets, symbols.size(), chunk, stream_);
            ASSERT_EQ(gpu.corrupt, cpu.corrupt) << "trial " << trial << " chunk " << chunk;
            if (!cpu.corrupt) {
                EXPECT_TRUE(gpu.out == cpu.out) << "trial " << trial;
            } else {
                ++rejected;
            }
        }
    }
    EXPECT_GT(rejected, 40);
}

TEST_F(HuffmanCuda, RandomBitsWithIncompleteBooks) {
    // Incomplete codes leave invalid codewords; long codes take the fallback path.
    const std::vector<std::vector<std::pair<uint16_t, uint8_t>>> books = {
        {{0, 1}, {3, 2}},
        {{2, 1}},
        {{0, 1}, {1, 2}, {2, 3}, {3, 5}, {4, 12}, {5, 13}, {6, 20}, {7, 24}},
    };
    std::mt19937_64 rng(9);
    int accepted = 0, rejected = 0;
    for (const auto& entries : books) {
        ByteWriter w;
        w.put<uint32_t>(16);
        w.put<uint32_t>(static_cast<uint32_t>(entries.size()));
        for (auto [s, len] : entries) {
            w.put<uint16_t>(s);
            w.put<uint8_t>(len);
        }
        ByteReader in(w.bytes(), "codebook");
        const HuffmanCodebook book = huffman_codebook_read(in, 16);
        const auto d_book = huffman_upload(book, stream_);
        for (int trial = 0; trial < 40; ++trial) {
            const uint32_t chunk = 1 + static_cast<uint32_t>(rng() % 50);
            const uint64_t n = 1 + rng() % 400;
            const uint64_t num_chunks = (n + chunk - 1) / chunk;
            std::vector<uint32_t> bits(num_chunks);
            std::vector<uint32_t> words;
            for (uint64_t c = 0; c < num_chunks; ++c) {
                const uint64_t count = std::min<uint64_t>(chunk, n - c * chunk);
                // Short chunks decode validly more often; the whole range is allowed by the table check.
                const uint64_t max_bits = count * (trial % 2 ? 2 : book.max_length);
                bits[c] = static_cast<uint32_t>(count + rng() % (max_bits - count + 1));
                const uint32_t nw = (bits[c] + 31) / 32;
                for (uint32_t k = 0; k < nw; ++k) {
                    uint32_t v = static_cast<uint32_t>(rng());
                    if (rng() % 3) v &= static_cast<uint32_t>(rng());
                    if (k + 1 == nw && bits[c] % 32) v &= ~(0xFFFFFFFFu >> (bits[c] % 32));  // zero padding
                    words.push_back(v);
                }
            }
            const CpuDecoded cpu = cpu_decode(book, words, bits, n, chunk);
            ASSERT_TRUE(cpu.table_ok);
            const GpuDecoded gpu = gpu_decode(d_book, words, bits, cpu.offsets, n, chunk, stream_, trial % 2);
            ASSERT_EQ(gpu.corrupt, cpu.corrupt) << "trial " << trial;
            if (!cpu.corrupt) {
                EXPECT_TRUE(gpu.out == cpu.out) << "trial " << trial;
                ++accepted;
            } else {
                ++rejected;
            }
        }
        // A real stream of this book is accepted.
        std::vector<uint16_t> symbols(3000);
        for (auto& s : symbols) s = entries[rng() % entries.size()].first;
        const HuffmanStream st = huffman_encode_cpu(book, symbols, 333, 0);
        const GpuDecoded gpu =
            gpu_decode(d_book, st.words, st.chunk_bits, word_offsets(st.chunk_bits), symbols.size(), 333, stream_);
        EXPECT_FALSE(gpu.corrupt);
        EXPECT_TRUE(gpu.out == symbols);
    }
    EXPECT_GT(rejected, 0);
    RecordProperty("accepted", accepted);
}

TEST_F(HuffmanCuda, InconsistentTableIsCorruptNotACrash) {
    // huffman_stream_read would refuse these; the kernel must still stay in bounds.
    const auto symbols = skewed_symbols(10000, 256, 10);
    const auto book = huffman_build(histogram_cpu(symbols, 256, 0));
    const auto d_book = huffman_upload(book, stream_);
    const HuffmanStream st = huffman_encode_cpu(book, symbols, 1000, 0);
    const auto good = word_offsets(st.chunk_bits);
    {
        auto off = good;
        off[5] += 1;  // chunk 4 one word longer, chunk 5 shorter
        EXPECT_TRUE(gpu_decode(d_book, st.words, st.chunk_bits, off, symbols.size(), 1000, stream_).corrupt);
    }
    {
        auto off = good;
        off.back() += 1000;  // past the end of the words
        off[off.size() - 2] += 1000;
        EXPECT_TRUE(gpu_decode(d_book, st.words, st.chunk_bits, off, symbols.size(), 1000, stream_).corrupt);
    }
    {
        auto bits = st.chunk_bits;
        bits[3] = 0;  // no bits for a nonempty chunk
        EXPECT_TRUE(gpu_decode(d_book, st.words, bits, good, symbols.size(), 1000, stream_).corrupt);
    }
    {
        auto bits = st.chunk_bits;
        bits[2] = 0xFFFFFFFFu;  // word count cannot match
        EXPECT_TRUE(gpu_decode(d_book, st.words, bits, good, symbols.size(), 1000, stream_).corrupt);
    }
    // Truncated bitstream: the last chunk's words are missing.
    {
        auto words = st.words;
        words.resize(good[good.size() - 2]);
        EXPECT_TRUE(gpu_decode(d_book, words, st.chunk_bits, good, symbols.size(), 1000, stream_).corrupt);
    }
}

TEST_F(HuffmanCuda, EncodeReusesStreamBuffers) {
    // A second encode into the same HuffmanDeviceStream (larger then smaller) is exact.
    const auto big = skewed_symbols(300000, 1024, 11);
    const std::vector<uint16_t> small(big.begin() + 5, big.begin() + 1005);  // every symbol has a code
    const auto book = huffman_build(histogram_cpu(big, 1024, 0));
    const auto d_book = huffman_upload(book, stream_);
    HuffmanDeviceStream gpu;
    for (const auto* symbols : {&big, &small}) {
        auto d_symbols = to_device(*symbols, stream_);
        huffman_encode_cuda(d_book, d_symbols.data(), symbols->size(), 4096, gpu, stream_);
        const HuffmanStream cpu = huffman_encode_cpu(book, *symbols, 4096, 0);
        EXPECT_EQ(to_host(gpu.chunk_bits.data(), gpu.num_chunks, stream_), cpu.chunk_bits);
        EXPECT_EQ(to_host(gpu.words.data(), gpu.num_words, stream_), cpu.words);
    }
}

}  // namespace
}  // namespace gsz::encode

namespace gsz::encode {
namespace {

// The device-built codebook against huffman_build on the same histogram:
// lengths, the encoder's entries (canonical codes), and the sizes the host
// reads back.  Returns false where the device left the book to the host.
bool expect_device_build_matches_host(const std::vector<uint64_t>& hist, cudaStream_t stream) {
    const auto alphabet = static_cast<uint32_t>(hist.size());
    uint64_t total = 0;
    for (const uint64_t c : hist) total += c;
    cuda::DeviceBuffer<uint64_t> d_hist(alphabet, stream);
    EXPECT_EQ(cudaMemcpyAsync(d_hist.data(), hist.data(), alphabet * sizeof(uint64_t), cudaMemcpyHostToDevice, stream),
              cudaSuccess);
    HuffmanDeviceBuilder builder;
    HuffmanDeviceBook d_book;
    huffman_build_cuda(d_hist.data(), alphabet, total, builder, d_book, stream);
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    const HuffmanBuildResult r = *builder.result_host.data();
    uint32_t used = 0;
    for (const uint64_t c : hist) used += c != 0;
    EXPECT_EQ(r.num_used, used);
    if (!huffman_build_cuda_finish(builder, alphabet, d_book)) {
        EXPECT_EQ(r.status, 1u);
        EXPECT_GT(used, kHuffmanDeviceMaxUsed);
        return false;
    }
    const HuffmanCodebook host = huffman_build(hist);
    const HuffmanCodebook fetched = huffman_build_cuda_fetch(builder, alphabet, stream);
    EXPECT_EQ(fetched.lengths, host.lengths);
    EXPECT_EQ(fetched.codes, host.codes);
    std::vector<uint32_t> entries;
    cuda::copy_to_host(entries, d_book.tables.data(), alphabet, stream);
    uint64_t bits = 0;
    size_t wrong = 0;
    for (uint32_t s = 0; s < alphabet; ++s) {
        const uint32_t expect = host.lengths[s] ? host.codes[s] | uint32_t{host.lengths[s]} << 24 : 0u;
        wrong += entries[s] != expect;
        bits += hist[s] * host.lengths[s];
    }
    EXPECT_EQ(wrong, 0u) << "entries differing from the host's codes";
    EXPECT_EQ(r.total_bits, bits);
    EXPECT_EQ(d_book.max_length, host.max_length);
    EXPECT_EQ(d_book.codes_base, *std::min_element(host.sorted_symbols.begin(), host.sorted_symbols.end()));
    EXPECT_EQ(d_book.codes_base + d_book.codes_count - 1,
              *std::max_element(host.sorted_symbols.begin(), host.sorted_symbols.end()));
    EXPECT_EQ(r.shortest_symbol, host.sorted_symbols[0]);
    EXPECT_EQ(d_book.codes, d_book.tables.data() + d_book.codes_base);
    return true;
}

TEST_F(HuffmanCuda, DeviceBuildMatchesHost) {
    std::vector<uint64_t> h(16, 0);
    h[5] = 100001;   // one symbol: a 1-bit code
    EXPECT_TRUE(expect_device_build_matches_host(h, stream_));
    h.assign(1, 7);
    EXPECT_TRUE(expect_device_build_matches_host(h, stream_));
    h.assign(65536, 0);
    h[0] = 3, h[65535] = 1;   // two symbols at the alphabet's ends
    EXPECT_TRUE(expect_device_build_matches_host(h, stream_));
    h.assign(1024, 1000);   // equal weights everywhere: ties decide every merge
    EXPECT_TRUE(expect_device_build_matches_host(h, stream_));
    h.assign(1024, 0);
    for (uint32_t s = 0; s < 600; ++s) h[s] = 1 + s % 3;   // runs of tied small weights
    EXPECT_TRUE(expect_device_build_matches_host(h, stream_));
    // Fibonacci weights: a tree 40+ deep, cut to 24 bits by the length limit.
    h.assign(1024, 0);
    uint64_t a = 1, b = 1;
    for (uint32_t s = 100; s < 144; ++s) {
        h[s] = a;
        b = a + b, a = b - a;
    }
    for (uint32_t s = 144; s < 400; ++s) h[s] = 1;
    EXPECT_TRUE(expect_device_build_matches_host(h, stream_));
}

TEST_F(HuffmanCuda, DeviceBuildOfQuantCodeHistograms) {
    // Interp's codes at loose to tight bounds (two-sided geometric around the
    // middle with a tail of rare codes far out, up to 16K used symbols) and
    // uniform random ones; a total near 2^32.
    XorShift rng{77};
    for (const double scale : {0.5, 3.0, 40.0, 300.0, 1500.0}) {
        for (const uint64_t total : {uint64_t{1000}, uint64_t{1} << 20, uint64_t{94} << 20}) {
            std::vector<uint64_t> h(65536, 0);
            const uint32_t mid = 32768;
            const uint64_t draws = std::min<uint64_t>(total, 1u << 20);
            for (uint64_t i = 0; i < draws; ++i) {
                const uint64_t r = rng();
                const double u = static_cast<double>((r >> 11) & 0xFFFFF) / 0x100000 + 0x1p-21;
                const auto m = static_cast<uint32_t>(-scale * std::log(u));
                const uint32_t s = (r & 1023) == 0 ? static_cast<uint32_t>((r >> 32) % 65536)
                                   : (r & 1024)    ? mid + std::min(m, mid - 1)
                                                   : mid - std::min(m, mid);
                h[s] += total / draws;
            }
            SCOPED_TRACE("scale " + std::to_string(scale) + " total " + std::to_string(total));
            expect_device_build_matches_host(h, stream_);
        }
    }
    std::vector<uint64_t> h(65536, 0);
    for (uint32_t s = 0; s < 65536; ++s) h[s] = (rng() % 3 == 0) ? 1 + rng() % 65000 : 0;   // ~21,800 used
    EXPECT_FALSE(expect_device_build_matches_host(h, stream_));   // left to the host
    h.assign(65536, 0);
    for (uint32_t s = 0; s < kHuffmanDeviceMaxUsed; ++s) h[s * 4 + 1] = 1 + rng() % 200000;   // the most it builds (total < 2^32)
    EXPECT_TRUE(expect_device_build_matches_host(h, stream_));
}

}  // namespace
}  // namespace gsz::encode
