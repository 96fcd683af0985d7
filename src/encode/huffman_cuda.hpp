// GPU side of the Huffman stage: histogram, codebook upload, chunked encode
// and decode, producing and reading exactly the CPU layout of huffman.hpp
// (same chunk_bits, same words, bit for bit).  The codebook is built on the
// host (huffman_build) from the histogram the GPU counted, or, for wide
// alphabets without a lossless stage after Huffman, on the device with the
// same lengths (huffman_build_cuda).
#pragma once

#include "encode/huffman.hpp"
#include "runtime/cuda/device_buffer.hpp"

#include <cuda_runtime.h>

#include <cstdint>
#include <span>
#include <vector>

namespace gsz::encode {

// d_hist[s] = number of symbols equal to s, for s < alphabet (d_hist is
// zeroed here).  Privatized shared-memory counters, integer atomics: the
// result does not depend on scheduling.  A symbol >= alphabet sets
// *d_bad_symbol to 1 (the caller checks it; the pipeline never produces one).
void histogram_cuda(const uint16_t* d_symbols, uint64_t n, uint32_t alphabet, uint64_t* d_hist,
                    uint32_t* d_bad_symbol, cudaStream_t stream);

// The codebook on the device: encode table and decode tables, in one buffer
// that one copy fills (the pointers point into it).
struct HuffmanDeviceBook {
    uint32_t alphabet_size = 0;
    uint32_t max_length = 0;
    uint32_t num_sorted = 0;
    uint32_t sub_entries = 0;  // decode subtables after the packed codes in `lut`
    bool pairs = false;        // the decode root holds pair entries (huffman_table.hpp)
    bool decode_ready = false; // the decode root and subtables are built
    cuda::DeviceBuffer<uint32_t> tables;
    const uint32_t* codes = nullptr;           // [codes_count] the encoder's entries (code | length << 24)
    uint32_t codes_base = 0;                   // of the symbols codes_base.. (huffman_upload_encoder: the coded ones)
    uint32_t codes_count = 0;
    uint32_t window_base = 0;                  // the one-pass encoder's 4,096 shared-memory entries from here, if wider
    const uint32_t* lut = nullptr;             // decode root, packed codes, decode subtables (huffman_cuda.cu)
    const uint32_t* first_code = nullptr;      // [kHuffmanMaxCodeLength + 1]
    const uint32_t* first_index = nullptr;     // [kHuffmanMaxCodeLength + 1]
    const uint32_t* count = nullptr;           // [kHuffmanMaxCodeLength + 1]
    const uint16_t* sorted_symbols = nullptr;  // [num_sorted] symbols by (length, symbol)
};

// Uploads the codebook without waiting (one copy from page-locked staging
// memory, which the next upload on this thread reuses once the copy is done)
// and builds the decode tables: huffman_upload_book, then
// huffman_build_decode_tables.
HuffmanDeviceBook huffman_upload(const HuffmanCodebook& book, cudaStream_t stream);
// The two steps apart: the copy of the book's canonical tables and encoder
// entries into `d` (reusing its buffer), and the decode tables (root, pair
// entries, subtables) built from them by a kernel, on the stream.  The host
// only counts what the tables will hold (huffman_decoder_shape); a book whose
// subtables do not all fit has its tables built on the host and copied.
void huffman_upload_book(const HuffmanCodebook& book, HuffmanDeviceBook& d, cudaStream_t stream);
void huffman_build_decode_tables(const HuffmanCodebook& book, HuffmanDeviceBook& d, cudaStream_t stream);

// The same with the encoder's entries only (`codes`; the decode pointers stay
// null): building the decode tables is host time on compression's critical
// path, between the histogram and the encoder (10-20 us at 1024 symbols).
HuffmanDeviceBook huffman_upload_encoder(const HuffmanCodebook& book, cudaStream_t stream);
// The same into `d`, reusing its device buffer (no allocation once it is large enough).
void huffman_upload_encoder(const HuffmanCodebook& book, HuffmanDeviceBook& d, cudaStream_t stream);

// The one-pass encoder's shared-memory window of a book wider than it: the
// first of its entries, centred on the shortest code's symbol (the first in
// (length, symbol) order) within the coded symbols codes_base.. .
uint32_t huffman_encoder_window(uint32_t shortest_symbol, uint32_t codes_base, uint32_t codes_count);

// The codebook built on the device from the device's histogram, so that
// compression's path has no host step between the histogram and the encoder
// (the host's build took 0.2-0.6 ms there on interp's wide books): the same
// lengths as huffman_build's, bit for bit (the same two-queue merges, done a
// phase at a time: every node lighter than the sum of the two lightest is
// merged in one parallel step, and that sum at least doubles from phase to
// phase), then the canonical codes as the encoder's entries.
inline constexpr uint32_t kHuffmanDeviceMaxUsed = 16384;   // more used symbols: built on the host
struct HuffmanBuildResult {
    uint32_t status = 0;           // 0 built; 1 left to the host (too many used symbols); 2 empty histogram
    uint32_t num_used = 0;
    uint32_t max_length = 0;
    uint32_t codes_base = 0;       // smallest used symbol
    uint32_t codes_count = 0;      // largest used symbol - codes_base + 1
    uint32_t shortest_symbol = 0;  // first in (length, symbol) order
    uint64_t total_bits = 0;       // sum over the symbols of count * length
};
struct HuffmanDeviceBuilder {     // buffers kept across calls
    cuda::DeviceBuffer<uint64_t> keys, sorted;
    cuda::DeviceBuffer<uint8_t> sort_temp;
    cuda::DeviceBuffer<uint32_t> parent;
    cuda::DeviceBuffer<uint8_t> lengths;
    cuda::DeviceBuffer<HuffmanBuildResult> result;
    cuda::PinnedBuffer<HuffmanBuildResult> result_host;
};
// Launches the build over d_hist[0..alphabet) (whose counts sum to `total`,
// below 2^32) without waiting: the entries into book.tables, the lengths into
// b.lengths, the result into b.result_host once the stream gets there.
void huffman_build_cuda(const uint64_t* d_hist, uint32_t alphabet, uint64_t total, HuffmanDeviceBuilder& b,
                        HuffmanDeviceBook& book, cudaStream_t stream);
// After the stream has synchronized: b.result_host's status 0 sets the
// book's host-side fields (the encoder's window among them) and returns true.
bool huffman_build_cuda_finish(const HuffmanDeviceBuilder& b, uint32_t alphabet, HuffmanDeviceBook& book);
// The host's codebook of a finished device build (copies the lengths back; synchronizes).
HuffmanCodebook huffman_build_cuda_fetch(const HuffmanDeviceBuilder& b, uint32_t alphabet, cudaStream_t stream);

struct HuffmanDeviceStream {
    uint64_t num_symbols = 0;
    uint32_t chunk_symbols = 0;
    uint64_t num_chunks = 0;
    cuda::DeviceBuffer<uint32_t> chunk_bits;         // [num_chunks]
    cuda::DeviceBuffer<uint64_t> chunk_word_offset;  // [num_chunks + 1], exclusive prefix of words per chunk
    cuda::DeviceBuffer<uint32_t> words;              // [num_words]
    uint64_t num_words = 0;
    cuda::DeviceBuffer<uint8_t> tile_state;          // the one-pass encoder's look-back, kept across calls
    uint64_t ready_tiles = 0;                        // tile states huffman_encode_prepare initialized
};

// Encode d_symbols[0..n) in chunks of chunk_symbols; fills `out` so that
// chunk_bits and words equal huffman_encode_cpu's output exactly (padding bits
// zero).  Every symbol must have a code (the pipeline guarantees it: the book
// was built from these symbols' histogram).
// max_words, when not 0, bounds the stream's words (from the histogram and
// the code lengths): the encoder then does not wait to learn the exact count;
// out.num_words stays 0 until huffman_stream_read_words reads it back.
void huffman_encode_cuda(const HuffmanDeviceBook& book, const uint16_t* d_symbols, uint64_t n,
                         uint32_t chunk_symbols, HuffmanDeviceStream& out, cudaStream_t stream,
                         uint64_t max_words = 0);

// Optional, before huffman_encode_cuda on the same stream: initializes what
// the encode of n symbols in chunks of chunk_symbols will need before any
// symbol is read (the one-pass encoder's look-back states), so that the work
// runs while the host builds the codebook.  An encode of another shape
// initializes its own.
void huffman_encode_prepare(uint64_t n, uint32_t chunk_symbols, HuffmanDeviceStream& out, cudaStream_t stream);

// Sets out.num_words from the device (synchronizes) after an encode with max_words.
void huffman_stream_read_words(HuffmanDeviceStream& out, cudaStream_t stream);

// Words a chunked stream of these symbol counts and code lengths can take at most.
uint64_t huffman_max_words(std::span<const uint64_t> histogram, const HuffmanCodebook& book, uint64_t n,
                           uint32_t chunk_symbols);

// Decode a stream whose chunk table was validated on the host
// (huffman_stream_read).  d_words holds the bitstream; d_chunk_bits and
// d_chunk_word_offset the validated table.  A chunk with an invalid codeword,
// too few bits or nonzero leftover/padding bits sets *d_corrupt to 1 (the
// caller turns it into GSZ_STATUS_CORRUPT); the decoder never reads or writes
// out of bounds whatever the bits say.  With d_zero_counts, chunk c's number
// of decoded 0 symbols goes to d_zero_counts[c] (Lorenzo's outliers, counted
// while decoding instead of by another pass; for a chunk flagged corrupt the
// count need not match what d_out holds).
void huffman_decode_cuda(const HuffmanDeviceBook& book, const uint32_t* d_words, uint64_t num_words,
                         const uint32_t* d_chunk_bits, const uint64_t* d_chunk_word_offset, uint64_t num_symbols,
                         uint32_t chunk_symbols, uint16_t* d_out, uint32_t* d_corrupt, cudaStream_t stream,
                         uint32_t* d_zero_counts = nullptr);

}  // namespace gsz::encode
