// The lorenzo pipeline (cuSZ): lattice + Lorenzo -> quant-codes and exact
// outliers -> histogram -> canonical Huffman -> chunked bitstream.
#include "pipeline/pipeline.hpp"

#include "pipeline/lorenzo_sections.hpp"
#include "runtime/status.hpp"

#include <cmath>
#include <cstring>

namespace gsz::pipeline {

void LorenzoParams::write(ByteWriter& out) const {
    out.put(radius);
    for (uint32_t c : chunk) out.put(c);
    out.put(lorenzo_rank);
    out.put(huffman_chunk_symbols);
    out.put(num_outliers);
}

LorenzoParams LorenzoParams::read(std::span<const uint8_t> bytes) {
    ByteReader in(bytes, "pipeline_params");
    LorenzoParams p;
    p.radius = in.get<uint32_t>("radius");
    for (uint32_t& c : p.chunk) c = in.get<uint32_t>("chunk extent");
    p.lorenzo_rank = in.get<uint32_t>("lorenzo rank");
    p.huffman_chunk_symbols = in.get<uint32_t>("huffman chunk symbols");
    p.num_outliers = in.get<uint64_t>("outlier count");
    in.expect_end();
    GSZ_CHECK(p.radius >= 1 && p.radius <= 32768, GSZ_STATUS_CORRUPT, "pipeline_params: radius %u out of range",
              p.radius);
    return p;
}

template <class T>
std::vector<uint8_t> lorenzo_assemble(const format::Header& header, uint32_t radius,
                                      const predict::LorenzoLayout& layout, const EncodedCodes& codes,
                                      std::span<const T> outliers) {
    LorenzoParams lp;
    lp.radius = radius;
    for (int d = 0; d < 3; ++d) lp.chunk[d] = layout.chunk[d];
    lp.lorenzo_rank = layout.rank;
    lp.huffman_chunk_symbols = kHuffmanChunkSymbols;
    lp.num_outliers = outliers.size();

    ByteWriter params_bytes, outlier_bytes;
    CodeStageSections cs;
    lp.write(params_bytes);
    code_stage_write(codes, cs);
    outlier_bytes.put_array(outliers);

    std::vector<format::SectionData> sections = {{format::SectionKind::pipeline_params, params_bytes.bytes()}};
    for (const auto& s : cs.sections()) sections.push_back(s);
    sections.push_back({format::SectionKind::outlier_values, outlier_bytes.bytes()});
    return format::archive_write(header, sections);
}

template <class T>
LorenzoDecodePlan<T> lorenzo_plan_decode(const format::Archive& archive) {
    const format::Header& h = archive.header;
    GSZ_CHECK(h.error_bound_abs > 0 && std::isfinite(1.0 / (2.0 * h.error_bound_abs)), GSZ_STATUS_CORRUPT,
              "lorenzo archive with unusable bound %g", h.error_bound_abs);
    LorenzoDecodePlan<T> plan;
    plan.params = LorenzoParams::read(archive.section(format::SectionKind::pipeline_params));
    const LorenzoParams& lp = plan.params;
    const uint64_t n = h.num_elements();

    // The geometry the encoder derived from the header must match the stored one.
    const predict::LorenzoLayout derived = predict::lorenzo_layout(h.rank, h.dims);
    GSZ_CHECK(lp.lorenzo_rank == derived.rank, GSZ_STATUS_CORRUPT,
              "pipeline_params: lorenzo rank %u, but the dims give %u", lp.lorenzo_rank, derived.rank);
    plan.layout = predict::lorenzo_layout_from(derived.rank, derived.dims, lp.chunk, n);

    const auto outlier_section = archive.section(format::SectionKind::outlier_values);
    GSZ_CHECK(lp.num_outliers <= n && outlier_section.size() == lp.num_outliers * sizeof(T), GSZ_STATUS_CORRUPT,
              "outlier_values: %zu bytes for %llu outliers", outlier_section.size(),
              static_cast<unsigned long long>(lp.num_outliers));

    plan.codes = code_stage_read(archive, lp.radius, lp.huffman_chunk_symbols, n, lorenzo_ans_shape());

    plan.outliers.resize(lp.num_outliers);
    if (!plan.outliers.empty()) std::memcpy(plan.outliers.data(), outlier_section.data(), outlier_section.size());
    plan.quant = predict::QuantParams::from_bound(h.error_bound_abs, lp.radius);
    return plan;
}

template std::vector<uint8_t> lorenzo_assemble<float>(const format::Header&, uint32_t, const predict::LorenzoLayout&,
                                                      const EncodedCodes&, std::span<const float>);
template std::vector<uint8_t> lorenzo_assemble<double>(const format::Header&, uint32_t, const predict::LorenzoLayout&,
                                                      const EncodedCodes&, std::span<const double>);
template LorenzoDecodePlan<float> lorenzo_plan_decode<float>(const format::Archive&);
template LorenzoDecodePlan<double> lorenzo_plan_decode<double>(const format::Archive&);

namespace {

template <class T>
std::vector<uint8_t> compress_typed(const gsz_params& params, const format::Header& header, const T* data) {
    const int threads = params.num_threads;
    const predict::LorenzoLayout layout = predict::lorenzo_layout(header.rank, header.dims);
    const uint32_t radius = quant_radius(params);
    const auto quant = predict::QuantParams::from_bound(header.error_bound_abs, radius);

    predict::LorenzoCodes<T> lc;
    predict::lorenzo_encode_cpu(data, layout, quant, lc, threads);

    EncodedCodes ec = code_stage_encode_cpu(lc.codes, radius, lorenzo_ans_shape(), params.lossless, threads);
    lc.codes = {};  // the largest buffer; free it before the archive is assembled
    return lorenzo_assemble<T>(header, radius, layout, ec, lc.outliers);
}

template <class T>
void decompress_typed(const format::Archive& archive, T* out, int threads) {
    const LorenzoDecodePlan<T> plan = lorenzo_plan_decode<T>(archive);
    std::vector<uint16_t> codes(archive.header.num_elements());
    code_stage_decode_cpu(plan.codes, plan.params.radius, lorenzo_ans_shape(), codes, threads);
    predict::lorenzo_decode_cpu<T>(codes, plan.outliers, plan.layout, plan.quant, out, threads);
}

}  // namespace

std::vector<uint8_t> lorenzo_compress(const gsz_params& params, const format::Header& header, const void* data) {
    if (header.dtype == GSZ_DTYPE_F32) return compress_typed(params, header, static_cast<const float*>(data));
    return compress_typed(params, header, static_cast<const double*>(data));
}

void lorenzo_decompress(const format::Archive& archive, void* out, int num_threads) {
    if (archive.header.dtype == GSZ_DTYPE_F32)
        decompress_typed(archive, static_cast<float*>(out), num_threads);
    else
        decompress_typed(archive, static_cast<double*>(out), num_threads);
}

void lorenzo_describe(const format::Archive& archive, gsz_archive_info& info) {
    const LorenzoParams lp = LorenzoParams::read(archive.section(format::SectionKind::pipeline_params));
    info.radius = lp.radius;
    info.num_outliers = lp.num_outliers;
    describe_code_stage(archive, lp.radius, info);
}

}  // namespace gsz::pipeline
