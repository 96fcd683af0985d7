// The fast pipeline (SZx/cuSZx): per block constant / truncated / raw, with
// leading-byte codes; no entropy coder.  Predictor: predict/fast/.
#include "pipeline/fast_sections.hpp"
#include "pipeline/pipeline.hpp"

#include "runtime/status.hpp"

#include <cmath>

namespace gsz::pipeline {

void FastParams::write(ByteWriter& out) const {
    out.put(block_size);
    out.put(uint32_t{0});  // reserved
    out.put(num_blocks);
    out.put(num_constant);
    out.put(num_raw);
}

FastParams FastParams::read(std::span<const uint8_t> bytes) {
    ByteReader in(bytes, "pipeline_params");
    FastParams p;
    p.block_size = in.get<uint32_t>("block size");
    const uint32_t reserved = in.get<uint32_t>("reserved");
    p.num_blocks = in.get<uint64_t>("block count");
    p.num_constant = in.get<uint64_t>("constant block count");
    p.num_raw = in.get<uint64_t>("raw block count");
    in.expect_end();
    GSZ_CHECK(predict::fast_block_size_valid(p.block_size), GSZ_STATUS_CORRUPT,
              "pipeline_params: block size %u is not 64, 128 or 256", p.block_size);
    GSZ_CHECK(reserved == 0, GSZ_STATUS_CORRUPT, "pipeline_params: reserved field is %u", reserved);
    GSZ_CHECK(p.num_constant <= p.num_blocks && p.num_raw <= p.num_blocks - p.num_constant, GSZ_STATUS_CORRUPT,
              "pipeline_params: %llu constant and %llu raw of %llu blocks",
              static_cast<unsigned long long>(p.num_constant), static_cast<unsigned long long>(p.num_raw),
              static_cast<unsigned long long>(p.num_blocks));
    return p;
}

std::vector<uint8_t> fast_assemble(const format::Header& header, const FastParams& params,
                                   std::span<const uint8_t> codes, std::span<const uint8_t> mids,
                                   std::span<const uint8_t> leads, std::span<const uint8_t> bytes) {
    ByteWriter params_bytes;
    params.write(params_bytes);
    const format::SectionData sections[] = {
        {format::SectionKind::pipeline_params, params_bytes.bytes()},
        {format::SectionKind::fast_block_codes, codes},
        {format::SectionKind::fast_block_mids, mids},
        {format::SectionKind::fast_lead_codes, leads},
        {format::SectionKind::fast_mid_bytes, bytes},
    };
    return format::archive_write(header, sections);
}

FastDecodePlan fast_plan_decode(const format::Archive& archive) {
    const format::Header& h = archive.header;
    GSZ_CHECK(h.error_bound_abs > 0 && std::isfinite(h.error_bound_abs), GSZ_STATUS_CORRUPT,
              "fast archive with unusable bound %g", h.error_bound_abs);
    FastDecodePlan plan;
    plan.params = FastParams::read(archive.section(format::SectionKind::pipeline_params));
    plan.layout = predict::FastLayout::make(h.num_elements(), plan.params.block_size);
    GSZ_CHECK(plan.params.num_blocks == plan.layout.num_blocks, GSZ_STATUS_CORRUPT,
              "pipeline_params: %llu blocks, the dims need %llu",
              static_cast<unsigned long long>(plan.params.num_blocks),
              static_cast<unsigned long long>(plan.layout.num_blocks));
    plan.streams.codes = archive.section(format::SectionKind::fast_block_codes);
    plan.streams.mids = archive.section(format::SectionKind::fast_block_mids);
    plan.streams.leads = archive.section(format::SectionKind::fast_lead_codes);
    plan.streams.bytes = archive.section(format::SectionKind::fast_mid_bytes);
    const uint64_t nb = plan.layout.num_blocks;
    GSZ_CHECK(plan.streams.codes.size() == nb, GSZ_STATUS_CORRUPT, "fast_block_codes: %zu bytes for %llu blocks",
              plan.streams.codes.size(), static_cast<unsigned long long>(nb));
    GSZ_CHECK(plan.streams.mids.size() == nb * h.element_bytes(), GSZ_STATUS_CORRUPT,
              "fast_block_mids: %zu bytes for %llu blocks", plan.streams.mids.size(),
              static_cast<unsigned long long>(nb));
    GSZ_CHECK(plan.streams.bytes.size() <= h.num_elements() * h.element_bytes(), GSZ_STATUS_CORRUPT,
              "fast_mid_bytes: %zu bytes, more than the values themselves", plan.streams.bytes.size());
    return plan;
}

namespace {

template <class T>
std::vector<uint8_t> compress_typed(const gsz_params& params, const format::Header& header, const T* data) {
    const auto layout = predict::FastLayout::make(header.num_elements(), fast_block_size(params));
    predict::FastEncoded<T> enc;
    predict::fast_encode_cpu(data, layout, header.error_bound_abs, enc, params.num_threads);
    FastParams fp;
    fp.block_size = layout.block;
    fp.num_blocks = layout.num_blocks;
    fp.num_constant = enc.num_constant;
    fp.num_raw = enc.num_raw;
    const auto mids = std::as_bytes(std::span<const T>(enc.mids));
    return fast_assemble(header, fp, enc.codes,
                         std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(mids.data()), mids.size()),
                         enc.leads, enc.bytes);
}

}  // namespace

std::vector<uint8_t> fast_compress(const gsz_params& params, const format::Header& header, const void* data) {
    if (header.dtype == GSZ_DTYPE_F32) return compress_typed(params, header, static_cast<const float*>(data));
    return compress_typed(params, header, static_cast<const double*>(data));
}

void fast_decompress(const format::Archive& archive, void* out, int num_threads) {
    const FastDecodePlan plan = fast_plan_decode(archive);
    if (archive.header.dtype == GSZ_DTYPE_F32)
        predict::fast_decode_cpu(plan.streams, plan.layout, static_cast<float*>(out), num_threads);
    else
        predict::fast_decode_cpu(plan.streams, plan.layout, static_cast<double*>(out), num_threads);
}

void fast_describe(const format::Archive& archive, gsz_archive_info& info) {
    const FastParams fp = FastParams::read(archive.section(format::SectionKind::pipeline_params));
    info.block_size = fp.block_size;
    info.num_blocks = fp.num_blocks;
    info.num_constant_blocks = fp.num_constant;
    info.num_raw_blocks = fp.num_raw;
}

}  // namespace gsz::pipeline
