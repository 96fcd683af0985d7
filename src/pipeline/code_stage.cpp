// The quant-codes' entropy stage (see code_stage.hpp).
#include "pipeline/code_stage.hpp"

#include "runtime/parallel.hpp"
#include "runtime/status.hpp"

namespace gsz::pipeline {

void RunTokensParams::write(ByteWriter& out) const {
    out.put(dominant);
    out.put(classes);
}

RunTokensParams RunTokensParams::read(std::span<const uint8_t> bytes, uint32_t radius) {
    ByteReader in(bytes, "run_tokens");
    RunTokensParams p;
    p.dominant = in.get<uint32_t>("dominant code");
    p.classes = in.get<uint32_t>("run classes");
    in.expect_end();
    GSZ_CHECK(p.classes == encode::kRunClasses, GSZ_STATUS_CORRUPT, "run_tokens: %u run classes, this gsz knows %u",
              p.classes, encode::kRunClasses);
    GSZ_CHECK(2 * radius <= encode::kRunMaxAlphabet && p.dominant < 2 * radius, GSZ_STATUS_CORRUPT,
              "run_tokens: dominant code %u with radius %u", p.dominant, radius);
    return p;
}

bool code_stage_try_runs(gsz_lossless mode, uint32_t radius, std::span<const uint64_t> code_histogram) {
    if (mode == GSZ_LOSSLESS_NONE || 2 * radius > encode::kRunMaxAlphabet) return false;
    return mode == GSZ_LOSSLESS_RUNS || encode::run_tokens_promising(code_histogram);
}

CodeStageChoice code_stage_choose(gsz_lossless mode, std::span<const uint64_t> code_histogram,
                                  std::span<const uint64_t> token_histogram, uint32_t dominant) {
    CodeStageChoice c;
    if (token_histogram.empty()) {
        c.book = encode::huffman_build(code_histogram);
        return c;
    }
    encode::HuffmanCodebook runs_book, plain_book;
    if (mode == GSZ_LOSSLESS_AUTO) {
        // Both codebooks at once: each is a sequential build of up to 10^4
        // leaves (about a millisecond on the host, on the GPU pipeline's path).
        ParallelErrors errors;
#pragma omp parallel sections num_threads(2)
        {
#pragma omp section
            errors.capture([&] { runs_book = encode::huffman_build(token_histogram); });
#pragma omp section
            errors.capture([&] { plain_book = encode::huffman_build(code_histogram); });
        }
        errors.rethrow();
        const uint64_t plain = encode::huffman_estimated_bytes(plain_book, code_histogram, kHuffmanChunkSymbols);
        const uint64_t runs = encode::huffman_estimated_bytes(runs_book, token_histogram, kHuffmanChunkSymbols) + 8;
        if (plain <= runs) {
            c.book = std::move(plain_book);
            return c;
        }
    }
    if (mode != GSZ_LOSSLESS_AUTO) runs_book = encode::huffman_build(token_histogram);
    c.runs = RunTokensParams{dominant, encode::kRunClasses};
    c.book = std::move(runs_book);
    return c;
}

EncodedCodes code_stage_encode_cpu(std::span<const uint16_t> codes, uint32_t radius, gsz_lossless mode,
                                   int num_threads) {
    const uint32_t alphabet = 2 * radius;
    const auto code_hist = encode::histogram_cpu(codes, alphabet, num_threads);
    std::vector<uint16_t> tokens;
    std::vector<uint64_t> token_hist;
    uint32_t dominant = 0;
    if (code_stage_try_runs(mode, radius, code_hist)) {
        dominant = encode::run_dominant_code(code_hist);
        tokens = encode::run_tokens_encode_cpu(codes, dominant, alphabet, num_threads);
        token_hist = encode::histogram_cpu(tokens, alphabet + encode::kRunClasses, num_threads);
    }
    CodeStageChoice choice = code_stage_choose(mode, code_hist, token_hist, dominant);
    EncodedCodes out;
    out.runs = choice.runs;
    out.book = std::move(choice.book);
    out.stream = encode::huffman_encode_cpu(out.book, out.runs ? std::span<const uint16_t>(tokens) : codes,
                                            kHuffmanChunkSymbols, num_threads);
    return out;
}

void code_stage_write(const std::optional<RunTokensParams>& runs, const encode::HuffmanCodebook& book,
                      const encode::HuffmanStream& stream, CodeStageSections& out) {
    encode::huffman_codebook_write(book, out.book);
    encode::huffman_chunks_write(stream, out.chunks);
    encode::huffman_bitstream_write(stream, out.bitstream);
    if (runs) runs->write(out.runs);
}

CodeStagePlan code_stage_read(const format::Archive& archive, uint32_t radius, uint32_t huffman_chunk_symbols,
                              uint64_t n) {
    CodeStagePlan plan;
    uint32_t alphabet = 2 * radius;
    uint64_t symbols = n;
    const auto chunks = archive.section(format::SectionKind::huffman_chunks);
    if (archive.has(format::SectionKind::run_tokens)) {
        plan.runs = RunTokensParams::read(archive.section(format::SectionKind::run_tokens), radius);
        alphabet += plan.runs->classes;
        // Tokens stand for 1 to 2^classes codes each; the expansion checks the exact sum.
        ByteReader in(chunks, "huffman_chunks");
        symbols = in.get<uint64_t>("symbol count");
        GSZ_CHECK(symbols >= 1 && symbols <= n, GSZ_STATUS_CORRUPT, "huffman_chunks: %llu run tokens for %llu codes",
                  static_cast<unsigned long long>(symbols), static_cast<unsigned long long>(n));
    }
    ByteReader book_in(archive.section(format::SectionKind::huffman_codebook), "huffman_codebook");
    plan.book = encode::huffman_codebook_read(book_in, alphabet);
    book_in.expect_end();
    // The stream view checks the symbol count against the bitstream length
    // (>= 1 bit per symbol) before any buffer of that many symbols is allocated.
    plan.stream = encode::huffman_stream_read(chunks, archive.section(format::SectionKind::huffman_bitstream), symbols);
    GSZ_CHECK(plan.stream.chunk_symbols == huffman_chunk_symbols, GSZ_STATUS_CORRUPT,
              "huffman_chunks: chunk of %u symbols, pipeline_params says %u", plan.stream.chunk_symbols,
              huffman_chunk_symbols);
    return plan;
}

void code_stage_decode_cpu(const CodeStagePlan& plan, uint32_t radius, std::span<uint16_t> codes, int num_threads) {
    if (!plan.runs) {
        encode::huffman_decode_cpu(plan.book, plan.stream, codes, num_threads);
        return;
    }
    std::vector<uint16_t> tokens(plan.stream.num_symbols);
    encode::huffman_decode_cpu(plan.book, plan.stream, tokens, num_threads);
    encode::run_tokens_decode_cpu(tokens, plan.runs->dominant, 2 * radius, codes, num_threads);
}

void describe_code_stage(const format::Archive& archive, uint32_t radius, gsz_archive_info& info) {
    info.lossless = GSZ_LOSSLESS_NONE;
    if (archive.has(format::SectionKind::run_tokens)) {
        info.lossless = GSZ_LOSSLESS_RUNS;
        info.run_dominant_code = RunTokensParams::read(archive.section(format::SectionKind::run_tokens), radius).dominant;
    }
    ByteReader in(archive.section(format::SectionKind::huffman_chunks), "huffman_chunks");
    info.huffman_symbols = in.get<uint64_t>("symbol count");
}

}  // namespace gsz::pipeline
