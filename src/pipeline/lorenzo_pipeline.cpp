// The lorenzo pipeline (cuSZ): lattice + Lorenzo -> quant-codes and exact
// outliers -> histogram -> canonical Huffman -> chunked bitstream.
#include "pipeline/pipeline.hpp"

#include "pipeline/fill_choice.hpp"
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
    out.put(static_cast<uint8_t>(fill.on ? kLorenzoFlagFill : 0u));
    if (fill.on) out.put(fill.bits);
}

LorenzoParams LorenzoParams::read(std::span<const uint8_t> bytes, const format::Header& header) {
    ByteReader in(bytes, "pipeline_params");
    LorenzoParams p;
    p.radius = in.get<uint32_t>("radius");
    for (uint32_t& c : p.chunk) c = in.get<uint32_t>("chunk extent");
    p.lorenzo_rank = in.get<uint32_t>("lorenzo rank");
    p.huffman_chunk_symbols = in.get<uint32_t>("huffman chunk symbols");
    p.num_outliers = in.get<uint64_t>("outlier count");
    if (header.format_version >= 15) {
        const uint32_t flags = in.get<uint8_t>("flags");
        GSZ_CHECK((flags & ~kLorenzoFlagFill) == 0, GSZ_STATUS_CORRUPT,
                  "pipeline_params: lorenzo flags %#x (known: 0x1, a fill value)", flags);
        if (flags & kLorenzoFlagFill) p.fill = {true, in.get<uint64_t>("fill value")};
    }
    in.expect_end();
    GSZ_CHECK(p.radius >= 1 && p.radius <= 32768, GSZ_STATUS_CORRUPT, "pipeline_params: radius %u out of range",
              p.radius);
    GSZ_CHECK(!p.fill.on || header.dtype == GSZ_DTYPE_F64 || p.fill.bits >> 32 == 0, GSZ_STATUS_CORRUPT,
              "pipeline_params: fill value bits %#llx are wider than float32",
              static_cast<unsigned long long>(p.fill.bits));
    return p;
}

template <class T>
std::vector<uint8_t> lorenzo_assemble(const format::Header& header, uint32_t radius,
                                      const predict::LorenzoLayout& layout, const EncodedCodes& codes,
                                      std::span<const T> outliers, const predict::FillValue& fill,
                                      const predict::FillMask& fill_mask) {
    LorenzoParams lp;
    lp.radius = radius;
    for (int d = 0; d < 3; ++d) lp.chunk[d] = layout.chunk[d];
    lp.lorenzo_rank = layout.rank;
    lp.huffman_chunk_symbols = kHuffmanChunkSymbols;
    lp.num_outliers = outliers.size();
    lp.fill = fill;

    ByteWriter params_bytes, outlier_bytes;
    CodeStageSections cs;
    lp.write(params_bytes);
    code_stage_write(codes, cs);
    outlier_bytes.put_array(outliers);

    std::vector<format::SectionData> sections = {{format::SectionKind::pipeline_params, params_bytes.bytes()}};
    for (const auto& s : cs.sections()) sections.push_back(s);
    sections.push_back({format::SectionKind::outlier_values, outlier_bytes.bytes()});
    const std::vector<uint8_t> mask_bytes = fill.on ? predict::fill_mask_write(fill_mask) : std::vector<uint8_t>{};
    if (fill.on) sections.push_back({format::SectionKind::fill_mask, mask_bytes});
    return format::archive_write(header, sections);
}

template <class T>
LorenzoDecodePlan<T> lorenzo_plan_decode(const format::Archive& archive) {
    const format::Header& h = archive.header;
    GSZ_CHECK(h.error_bound_abs > 0 && std::isfinite(1.0 / (2.0 * h.error_bound_abs)), GSZ_STATUS_CORRUPT,
              "lorenzo archive with unusable bound %g", h.error_bound_abs);
    LorenzoDecodePlan<T> plan;
    plan.params = LorenzoParams::read(archive.section(format::SectionKind::pipeline_params), h);
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
    GSZ_CHECK(lp.fill.on == archive.has(format::SectionKind::fill_mask), GSZ_STATUS_CORRUPT,
              "fill_mask: the section is %s but pipeline_params %s a fill value", lp.fill.on ? "missing" : "present",
              lp.fill.on ? "records" : "records no");
    if (lp.fill.on) plan.fill_mask = predict::fill_mask_read(archive.section(format::SectionKind::fill_mask), n);
    return plan;
}

template std::vector<uint8_t> lorenzo_assemble<float>(const format::Header&, uint32_t, const predict::LorenzoLayout&,
                                                      const EncodedCodes&, std::span<const float>,
                                                      const predict::FillValue&, const predict::FillMask&);
template std::vector<uint8_t> lorenzo_assemble<double>(const format::Header&, uint32_t, const predict::LorenzoLayout&,
                                                      const EncodedCodes&, std::span<const double>,
                                                      const predict::FillValue&, const predict::FillMask&);
template LorenzoDecodePlan<float> lorenzo_plan_decode<float>(const format::Archive&);
template LorenzoDecodePlan<double> lorenzo_plan_decode<double>(const format::Archive&);

namespace {

template <class T>
std::vector<uint8_t> compress_typed(const gsz_params& params, const format::Header& header, const T* data,
                                    predict::FillValue fill) {
    const int threads = params.num_threads;
    const predict::LorenzoLayout layout = predict::lorenzo_layout(header.rank, header.dims);
    const uint32_t radius = quant_radius(params);
    const auto quant = predict::QuantParams::from_bound(header.error_bound_abs, radius);

    // A fill value (land cells): its points are coded as a stand-in inside the
    // data's range and kept by the mask, not as jumps of 1e20 and outliers.
    predict::FillMask fill_mask;
    std::vector<T> stand_ins;
    if (fill.on) {
        fill_mask = predict::fill_mask_encode_cpu(data, layout.dims, fill, threads);
        if (fill_mask.points == 0) fill = {};   // no point holds it: nothing to record
        else stand_ins = predict::fill_substitute_cpu(data, header.num_elements(), fill, threads);
    }
    predict::LorenzoCodes<T> lc;
    predict::lorenzo_encode_cpu(fill.on ? stand_ins.data() : data, layout, quant, lc, threads);
    stand_ins = {};

    EncodedCodes ec = code_stage_encode_cpu(lc.codes, radius, lorenzo_ans_shape(), params.lossless, threads);
    lc.codes = {};  // the largest buffer; free it before the archive is assembled
    return lorenzo_assemble<T>(header, radius, layout, ec, lc.outliers, fill, fill_mask);
}

template <class T>
void decompress_typed(const format::Archive& archive, T* out, int threads) {
    const LorenzoDecodePlan<T> plan = lorenzo_plan_decode<T>(archive);
    std::vector<uint16_t> codes(archive.header.num_elements());
    code_stage_decode_cpu(plan.codes, plan.params.radius, lorenzo_ans_shape(), codes, threads);
    predict::lorenzo_decode_cpu<T>(codes, plan.outliers, plan.layout, plan.quant, out, threads);
    if (plan.params.fill.on)
        predict::fill_mask_apply_cpu(plan.fill_mask, plan.layout.dims, plan.params.fill, out, threads);
}

}  // namespace

std::vector<uint8_t> lorenzo_compress(const gsz_params& params, const format::Header& header, const void* data,
                                      const predict::FillValue& fill) {
    if (header.dtype == GSZ_DTYPE_F32) return compress_typed(params, header, static_cast<const float*>(data), fill);
    return compress_typed(params, header, static_cast<const double*>(data), fill);
}

void lorenzo_decompress(const format::Archive& archive, void* out, int num_threads) {
    if (archive.header.dtype == GSZ_DTYPE_F32)
        decompress_typed(archive, static_cast<float*>(out), num_threads);
    else
        decompress_typed(archive, static_cast<double*>(out), num_threads);
}

void lorenzo_describe(const format::Archive& archive, gsz_archive_info& info) {
    const LorenzoParams lp =
        LorenzoParams::read(archive.section(format::SectionKind::pipeline_params), archive.header);
    info.radius = lp.radius;
    info.num_outliers = lp.num_outliers;
    describe_code_stage(archive, lp.radius, info);
    describe_fill(archive, lp.fill, info);
}

}  // namespace gsz::pipeline
