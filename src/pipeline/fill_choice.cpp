#include "pipeline/fill_choice.hpp"

#include "predict/interp/interp.hpp"
#include "runtime/status.hpp"

namespace gsz::pipeline {

template <class T>
predict::FillValue choose_fill(const gsz_params& params, std::span<const T> sample, const FiniteRange& range) {
    switch (enum_bits(params.fill)) {
        case GSZ_FILL_AUTO: return predict::fill_detect<T>(sample, range.min, range.max);
        case GSZ_FILL_OFF: return {};
        case GSZ_FILL_VALUE: return predict::fill_from_value<T>(params.fill_value, sample);
        default: fail(GSZ_STATUS_INVALID_ARGUMENT, format_message("fill %d is not auto, off or value",
                                                                  enum_bits(params.fill)));
    }
}

template <class T>
std::vector<T> fill_sample_cpu(const T* data, uint32_t rank, const uint64_t* dims) {
    const std::vector<uint64_t> idx = predict::interp_tune_indices(predict::interp_layout(rank, dims));
    std::vector<T> sample(idx.size());
    for (size_t i = 0; i < idx.size(); ++i) sample[i] = data[idx[i]];
    return sample;
}

template <class T>
predict::FillValue choose_fill_cpu(const gsz_params& params, const T* data, FiniteRange& range) {
    if (params.pipeline != GSZ_PIPELINE_LORENZO && params.pipeline != GSZ_PIPELINE_INTERP) return {};
    if (params.fill == GSZ_FILL_OFF) return {};
    const predict::FillValue fill =
        choose_fill<T>(params, fill_sample_cpu(data, params.rank, params.dims), range);
    if (fill.on) range = finite_range_cpu(data, params_num_elements(params), params.num_threads, &fill.bits);
    return fill;
}

void describe_fill(const format::Archive& archive, const predict::FillValue& fill, gsz_archive_info& info) {
    info.has_fill = fill.on;
    if (!fill.on) return;
    const auto mask = archive.section(format::SectionKind::fill_mask);
    info.fill_value = archive.header.dtype == GSZ_DTYPE_F32 ? predict::fill_value_as<float>(fill)
                                                            : predict::fill_value_as<double>(fill);
    info.fill_mask_bytes = mask.size();
    info.fill_points = predict::fill_mask_read(mask, archive.header.num_elements()).points;
}

template predict::FillValue choose_fill<float>(const gsz_params&, std::span<const float>, const FiniteRange&);
template predict::FillValue choose_fill<double>(const gsz_params&, std::span<const double>, const FiniteRange&);
template predict::FillValue choose_fill_cpu<float>(const gsz_params&, const float*, FiniteRange&);
template predict::FillValue choose_fill_cpu<double>(const gsz_params&, const double*, FiniteRange&);
template std::vector<float> fill_sample_cpu<float>(const float*, uint32_t, const uint64_t*);
template std::vector<double> fill_sample_cpu<double>(const double*, uint32_t, const uint64_t*);

}  // namespace gsz::pipeline
