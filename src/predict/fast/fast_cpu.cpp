// CPU backend of the `fast` predictor: OpenMP over contiguous ranges of blocks,
// each block planned, verified and written in one pass into per-thread
// buffers that are joined in order, so the streams do not depend on the
// thread count.  Decoding counts each block's explicit bytes first (from its
// lead codes) to find where every block starts.
#include "predict/fast/fast.hpp"

#include "runtime/parallel.hpp"
#include "runtime/status.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

namespace gsz::predict {

namespace {

// A growable byte buffer that does not zero what it hands out, with slack at
// the end so whole patterns can be stored where only part of one is kept.
class ByteSink {
public:
    uint8_t* reserve_more(size_t bytes) {
        if (size_ + bytes + kSlack > data_.size()) data_.resize(std::max(2 * data_.size(), size_ + bytes + kSlack));
        return data_.data() + size_;
    }
    void commit(size_t bytes) { size_ += bytes; }
    size_t size() const { return size_; }
    const uint8_t* data() const { return data_.data(); }

private:
    static constexpr size_t kSlack = 8;
    std::vector<uint8_t> data_;   // grows geometrically; zeroing it is amortized away
    size_t size_ = 0;
};

static_assert(std::endian::native == std::endian::little, "the byte-order tricks below assume little-endian");

template <class Bits>
Bits byteswap(Bits v) {
    if constexpr (sizeof(Bits) == 4) return __builtin_bswap32(v);
    else return __builtin_bswap64(v);
}

// A mask of the k most significant bytes (k <= sizeof(Bits)).
template <class Bits>
Bits top_bytes(uint32_t k) {
    return k == 0 ? Bits{0} : ~Bits{0} << (8 * (sizeof(Bits) - k));
}

// Appends a non-constant block's lead codes and explicit bytes; returns false
// (with nothing appended) as soon as a value would leave the bound.
template <bool kCheck, class T>
bool try_block(const T* x, uint32_t len, T mu, uint8_t code, double eb, ByteSink& leads, ByteSink& bytes) {
    using Bits = typename FastTraits<T>::Bits;
    const uint32_t kept = fast_kept_bytes<T>(code);
    const uint32_t lead_count = FastLayout::lead_bytes(len);
    uint8_t* lead_out = leads.reserve_more(lead_count);
    std::memset(lead_out, 0, lead_count);
    uint8_t* const byte_start = bytes.reserve_more(size_t{len} * kept);
    uint8_t* byte_out = byte_start;
    Bits previous = 0;
    for (uint32_t i = 0; i < len; ++i) {
        const Bits p = fast_pattern(x[i], mu, code);
        if (kCheck && !fast_within(x[i], fast_reconstruct<T>(p, mu, code), eb)) return false;
        const uint32_t lead = fast_lead<T>(p, previous, kept);
        lead_out[i / 4] |= static_cast<uint8_t>(lead << (2 * (i % 4)));
        // Bytes lead..kept-1, most significant first: store the whole pattern
        // big-endian from byte `lead` on and keep only kept - lead of them.
        // (little-endian host: shifting right drops the first `lead` bytes).
        const Bits from_lead = byteswap(p) >> (8 * lead);
        std::memcpy(byte_out, &from_lead, sizeof(Bits));
        byte_out += kept - lead;
        previous = p;
    }
    leads.commit(lead_count);
    bytes.commit(static_cast<size_t>(byte_out - byte_start));
    return true;
}

// The decision both backends make for a block, and its streams: non-finite ->
// raw; constant when the mid value holds every value; else the first
// truncation, one bit more, or raw, whichever first keeps every value within eb.
template <class T>
void encode_block(const T* x, uint32_t len, double eb, uint8_t& code, T& mu, ByteSink& leads, ByteSink& bytes) {
    T lo = x[0], hi = x[0];
    bool finite = true;
    for (uint32_t i = 0; i < len; ++i) {
        finite &= std::isfinite(x[i]);
        lo = x[i] < lo ? x[i] : lo;
        hi = x[i] > hi ? x[i] : hi;
    }
    code = kFastRaw;
    mu = 0;
    if (finite) {
        const FastFirstPlan<T> plan = fast_first_plan(lo, hi, eb);
        if (plan.code == kFastConstant) {
            code = kFastConstant;
            mu = plan.mu;
            return;
        }
        const uint8_t tries[2] = {plan.code, plan.code == kFastRaw ? kFastRaw : fast_next_code<T>(plan.code)};
        for (const uint8_t c : tries) {
            if (c == kFastRaw) break;
            const bool done = fast_truncation_safe(lo, hi, plan.mu, c, eb)
                                  ? try_block<false>(x, len, plan.mu, c, eb, leads, bytes)
                                  : try_block<true>(x, len, plan.mu, c, eb, leads, bytes);
            if (done) {
                code = c;
                mu = plan.mu;
                return;
            }
        }
    }
    try_block<false>(x, len, T(0), kFastRaw, eb, leads, bytes);
}

template <class T>
T load_mid(const uint8_t* mids, uint64_t b) {
    T v;
    std::memcpy(&v, mids + b * sizeof(T), sizeof(T));
    return v;
}

}  // namespace

template <class T>
void fast_encode_cpu(const T* data, const FastLayout& layout, double eb, FastEncoded<T>& out, int num_threads) {
    const uint64_t nb = layout.num_blocks;
    out.codes.resize(nb);
    out.mids.resize(nb);
    const int threads = resolve_threads(num_threads);

    // Each thread encodes a contiguous range of blocks into its own buffers;
    // joined in thread order, they are the single-threaded streams.
    std::vector<ByteSink> leads(threads), bytes(threads);
    ParallelErrors errors;
#pragma omp parallel num_threads(threads)
    errors.capture([&] {
        const auto [first, last] = thread_range(nb);
        auto& my_leads = leads[thread_index()];
        auto& my_bytes = bytes[thread_index()];
        my_leads.reserve_more((last - first) * layout.block / 4);
        my_bytes.reserve_more((last - first) * layout.block * 2);
        for (uint64_t b = first; b < last; ++b)
            encode_block(data + b * layout.block, layout.block_len(b), eb, out.codes[b], out.mids[b], my_leads,
                         my_bytes);
    });
    errors.rethrow();

    auto join = [&](std::vector<ByteSink>& parts, std::vector<uint8_t>& joined) {
        size_t total = 0;
        for (const auto& p : parts) total += p.size();
        joined.resize(total);
        size_t at = 0;
        for (auto& p : parts) {
            if (p.size()) std::memcpy(joined.data() + at, p.data(), p.size());
            at += p.size();
            p = {};
        }
    };
    join(leads, out.leads);
    join(bytes, out.bytes);
    out.num_constant = out.num_raw = 0;
    for (uint64_t b = 0; b < nb; ++b) {
        out.num_constant += out.codes[b] == kFastConstant;
        out.num_raw += out.codes[b] == kFastRaw;
    }
}

template <class T>
void fast_decode_cpu(const FastStreamsView& in, const FastLayout& layout, T* out, int num_threads) {
    using Bits = typename FastTraits<T>::Bits;
    const uint64_t nb = layout.num_blocks;
    GSZ_CHECK(in.codes.size() == nb, GSZ_STATUS_CORRUPT, "fast_block_codes: %zu bytes for %llu blocks",
              in.codes.size(), static_cast<unsigned long long>(nb));
    GSZ_CHECK(in.mids.size() == nb * sizeof(T), GSZ_STATUS_CORRUPT, "fast_block_mids: %zu bytes for %llu blocks",
              in.mids.size(), static_cast<unsigned long long>(nb));

    // Lead-code offsets from the codes alone; then, from the lead codes, each
    // block's explicit byte count (checked against B as it goes).
    std::vector<uint64_t> lead_offset(nb + 1);
    for (uint64_t b = 0; b < nb; ++b) {
        const uint8_t code = in.codes[b];
        GSZ_CHECK(fast_code_valid<T>(code), GSZ_STATUS_CORRUPT, "fast_block_codes: block %llu has code %u",
                  static_cast<unsigned long long>(b), code);
        lead_offset[b + 1] = lead_offset[b] + (code != kFastConstant ? FastLayout::lead_bytes(layout.block_len(b)) : 0);
    }
    GSZ_CHECK(in.leads.size() == lead_offset[nb], GSZ_STATUS_CORRUPT,
              "fast_lead_codes: %zu bytes, the block codes need %llu", in.leads.size(),
              static_cast<unsigned long long>(lead_offset[nb]));

    const int threads = resolve_threads(num_threads);
    std::vector<uint64_t> byte_offset(nb + 1, 0);
    std::vector<uint8_t> bad(nb, 0);
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t b = 0; b < static_cast<int64_t>(nb); ++b) {
        const uint8_t code = in.codes[b];
        if (code == kFastConstant) continue;
        const uint32_t kept = fast_kept_bytes<T>(code), len = layout.block_len(b);
        const uint8_t* leads = in.leads.data() + lead_offset[b];
        uint64_t total = 0;
        for (uint32_t i = 0; i < len; ++i) {
            const uint32_t lead = (leads[i / 4] >> (2 * (i % 4))) & 3u;
            bad[b] |= lead > kept;
            total += kept - std::min(lead, kept);
        }
        byte_offset[b + 1] = total;
    }
    for (uint64_t b = 0; b < nb; ++b) {
        GSZ_CHECK(!bad[b], GSZ_STATUS_CORRUPT, "fast_lead_codes: block %llu copies more bytes than it keeps",
                  static_cast<unsigned long long>(b));
        byte_offset[b + 1] += byte_offset[b];
    }
    GSZ_CHECK(in.bytes.size() == byte_offset[nb], GSZ_STATUS_CORRUPT,
              "fast_mid_bytes: %zu bytes, the lead codes need %llu", in.bytes.size(),
              static_cast<unsigned long long>(byte_offset[nb]));

#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t b = 0; b < static_cast<int64_t>(nb); ++b) {
        const uint8_t code = in.codes[b];
        const T mu = load_mid<T>(in.mids.data(), b);
        const uint32_t len = layout.block_len(b);
        T* x = out + b * uint64_t{layout.block};
        if (code == kFastConstant) {
            std::fill(x, x + len, mu);
            continue;
        }
        const uint32_t kept = fast_kept_bytes<T>(code);
        const uint8_t* leads = in.leads.data() + lead_offset[b];
        const uint8_t* bytes = in.bytes.data() + byte_offset[b];
        const uint8_t* const bytes_end = in.bytes.data() + in.bytes.size();
        const Bits kept_mask = top_bytes<Bits>(kept);
        Bits previous = 0;
        for (uint32_t i = 0; i < len; ++i) {
            const uint32_t lead = (leads[i / 4] >> (2 * (i % 4))) & 3u;
            // The next explicit bytes, most significant first, read as one
            // big-endian word (byte by byte near the end of the stream).
            Bits word = 0;
            if (bytes_end - bytes >= static_cast<ptrdiff_t>(sizeof(Bits))) {
                std::memcpy(&word, bytes, sizeof(Bits));
            } else {
                std::memcpy(&word, bytes, static_cast<size_t>(bytes_end - bytes));
            }
            const Bits lead_mask = top_bytes<Bits>(lead);
            const Bits p = (previous & lead_mask) | ((byteswap(word) >> (8 * lead)) & kept_mask & ~lead_mask);
            bytes += kept - lead;
            x[i] = fast_reconstruct<T>(p, mu, code);
            previous = p;
        }
    }
}

template void fast_encode_cpu<float>(const float*, const FastLayout&, double, FastEncoded<float>&, int);
template void fast_encode_cpu<double>(const double*, const FastLayout&, double, FastEncoded<double>&, int);
template void fast_decode_cpu<float>(const FastStreamsView&, const FastLayout&, float*, int);
template void fast_decode_cpu<double>(const FastStreamsView&, const FastLayout&, double*, int);

}  // namespace gsz::predict
