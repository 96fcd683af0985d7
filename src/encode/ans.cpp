// Context-modelled rANS of quant-codes on the CPU, and the tables and
// sections both backends share (see ans.hpp).
#include "encode/ans.hpp"

#include "runtime/parallel.hpp"
#include "runtime/status.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

namespace gsz::encode {
namespace {

constexpr gsz_status kCorrupt = GSZ_STATUS_CORRUPT;

// The first [begin, end) of lane l.
std::pair<uint64_t, uint64_t> lane_range(uint64_t lane, uint32_t lane_symbols, uint64_t n) {
    const uint64_t begin = lane * lane_symbols;
    return {begin, std::min<uint64_t>(n, begin + lane_symbols)};
}

uint64_t lane_count(uint64_t n, uint32_t lane_symbols) { return n / lane_symbols + (n % lane_symbols != 0); }

// The stage's archive bytes for `bits` of n codes under tables of
// `table_bytes` (ans_tables_bytes): the words, the lanes at
// kAnsLaneBitsEstimate each, the tables.
uint64_t stage_bytes(uint64_t table_bytes, uint64_t bits, uint64_t n) {
    const uint64_t lanes = lane_count(n, ans_lane_symbols(n, bits));
    return bits / 8 + 2 + (lanes * kAnsLaneBitsEstimate + 7) / 8 + 1 + table_bytes;
}

uint64_t stage_bytes(const AnsTables& tables, uint64_t bits, uint64_t n) {
    return stage_bytes(ans_tables_bytes(tables), bits, n);
}

// Defined with ans_build_tables below.
std::optional<AnsCandidateEstimate> estimate_unshared(const AnsCandidate& c, uint32_t levels, uint64_t n,
                                                      uint64_t counted);

}  // namespace

uint32_t ans_strip_width_for(const AnsContextShape& shape) {
    if (shape.levels > kAnsMaxStripLevels || shape.dims[1] * shape.dims[2] < 2) return 0;
    for (uint32_t w = kAnsMaxStripWidth; w >= kAnsMinStripWidth; w /= 2)
        if (shape.dims[0] % w == 0) return w;
    return 0;
}

bool ans_strips_fit(const AnsContextShape& shape, uint32_t width, uint64_t n) {
    if (width == 0) return true;
    return (width & (width - 1)) == 0 && width >= kAnsMinStripWidth && width <= kAnsMaxStripWidth &&
           shape.dims[0] % width == 0 && shape.dims[1] * shape.dims[2] >= 2 && shape.levels <= kAnsMaxStripLevels &&
           shape.dims[0] * shape.dims[1] * shape.dims[2] == n;
}

std::vector<uint64_t> ans_histogram_cpu(std::span<const uint16_t> codes, uint32_t radius,
                                        const AnsContextShape& shape, int num_threads, uint32_t class_lag,
                                        uint32_t sample_stride) {
    GSZ_CHECK(radius >= 1 && radius <= 32768 && shape.levels >= 1 && shape.levels <= kAnsMaxLevels &&
                  class_lag >= 1 && class_lag <= kAnsMaxClassLag && sample_stride >= 1 &&
                  ans_strips_fit(shape, shape.strip_width, codes.size()),
              GSZ_STATUS_INVALID_ARGUMENT,
              "ans histogram: radius %u, %u levels, class lag %u, sample stride %u, strips of %u", radius,
              shape.levels, class_lag, sample_stride, shape.strip_width);
    const size_t bins = size_t{shape.num_contexts()} * kAnsAlphabet;
    const uint64_t n = codes.size();
    const uint32_t aboves = shape.aboves(), strip = shape.strip_width;
    // Counts the codes of coding indices [begin, end) into h; the
    // kAnsLookBack codes before `begin` give the run and the classes before
    // it (counted from the array's first code, as the coders know no lanes here).
    const auto count = [&](uint64_t begin, uint64_t end, std::vector<uint64_t>& h, bool& out_of_range) {
        const uint64_t warm = begin >= kAnsLookBack ? begin - kAnsLookBack : 0;
        AnsCursor cur = shape.cursor();
        cur.seek(warm);
        uint32_t zeros = 0, class1 = 0, class2 = 0;  // the classes of the codes one and two back
        for (uint64_t i = warm; i < end; ++i, cur.next()) {
            const uint32_t code = codes[strip ? cur.raster() : i];
            if (i >= begin) {
                out_of_range |= code >= 2 * radius;
                const uint32_t prev_class = class_lag == 2 ? class2 : class1;
                const uint32_t nonzero =
                    strip && cur.y >= 1 && i >= strip + kAnsAboveReach ? ans_above_nonzero(codes.data(), cur, radius) : 0;
                const uint32_t above = strip ? ans_above_class(i, 0, cur.y, strip, nonzero) : 0u;
                const uint32_t ctx = ans_context(cur.level(), above, ans_context_class(i, zeros, prev_class), aboves);
                ++h[size_t{ctx} * kAnsAlphabet + ans_symbol_of(std::min(code, 2 * radius - 1), radius).symbol];
            }
            class2 = class1;
            class1 = ans_class_of(code, radius);
            zeros = code == radius ? std::min(zeros + 1, kAnsLookBack) : 0;
        }
    };
    const int threads = resolve_threads(num_threads);
    std::vector<std::vector<uint64_t>> partial(static_cast<size_t>(threads));
    std::vector<uint8_t> bad(static_cast<size_t>(threads), 0);
    const uint64_t chunks = (n + kAnsSampleChunk - 1) / kAnsSampleChunk;
    const uint64_t sampled = (chunks + sample_stride - 1) / sample_stride;
#pragma omp parallel num_threads(threads)
    {
        std::vector<uint64_t> h(bins, 0);
        bool out_of_range = false;
        if (sample_stride == 1) {
            const auto [begin, end] = thread_range(n);
            count(begin, end, h, out_of_range);
        } else {
            const auto [first, last] = thread_range(sampled);
            for (uint64_t c = first; c < last; ++c) {
                const uint64_t begin = ans_sample_chunk(c, sample_stride, strip != 0) * kAnsSampleChunk;
                if (begin < n) count(begin, std::min(n, begin + kAnsSampleChunk), h, out_of_range);
            }
        }
        bad[static_cast<size_t>(thread_index())] = out_of_range;
        partial[static_cast<size_t>(thread_index())] = std::move(h);
    }
    std::vector<uint64_t> hist(bins, 0);
    for (size_t t = 0; t < partial.size(); ++t) {
        GSZ_CHECK(!bad[t], GSZ_STATUS_INTERNAL, "ans histogram: quant-code outside the alphabet");
        for (size_t b = 0; b < partial[t].size(); ++b) hist[b] += partial[t][b];
    }
    return hist;
}

namespace {

// A sample's bits stand for the n codes (its tables, whatever their size, are written once).
uint64_t sample_bits_for_n(uint64_t bits, uint64_t counted, uint64_t n) {
    return counted == 0 || counted == n ? bits
                                        : static_cast<uint64_t>(static_cast<double>(bits) * static_cast<double>(n) /
                                                                static_cast<double>(counted));
}

}  // namespace

uint32_t ans_class_lag_sample_stride(uint64_t n) { return n > kAnsFullLagHistogramCodes ? kAnsLagSampleStride : 1u; }

uint32_t ans_choose_class_lag(std::span<const uint64_t> lag1, std::span<const uint64_t> lag2, uint32_t levels,
                              uint64_t n, uint64_t* chosen_bits) {
    const AnsCandidate c[2] = {{lag1, 1, 0}, {lag2, 2, 0}};
    return ans_choose_candidate(c, levels, n, chosen_bits) == 1 ? 2u : 1u;
}

std::vector<AnsCandidateEstimate> ans_estimate_candidates(std::span<const AnsCandidate> candidates, uint32_t levels,
                                                          uint64_t n) {
    std::vector<AnsCandidateEstimate> out;
    for (const AnsCandidate& c : candidates) {
        uint64_t counted = 0;
        for (const uint64_t v : c.histogram) counted += v;
        // Strips' tables (4x the contexts) are compared unshared: sharing's
        // greedy search over ~200 contexts costs the host tens of
        // milliseconds, and it only pays on small fields.  A sample's codes
        // weigh as the n they stand for in the test for sharing.  Unshared
        // tables are estimated without being built; shared ones (small
        // fields) are built, sharing deciding both numbers.
        if (const std::optional<AnsCandidateEstimate> e = estimate_unshared(c, levels, n, counted)) {
            out.push_back(*e);
            continue;
        }
        const AnsTables t = ans_build_tables(c.histogram, levels, c.strip_width == 0, c.class_lag, c.strip_width, n);
        const uint64_t bits = ans_estimated_bits(t, c.histogram);
        out.push_back({bits, stage_bytes(t, sample_bits_for_n(bits, counted, n), n)});
    }
    return out;
}

size_t ans_choose_candidate(std::span<const AnsCandidate> candidates, uint32_t levels, uint64_t n,
                            uint64_t* chosen_bits, uint64_t* chosen_bytes) {
    const std::vector<AnsCandidateEstimate> e = ans_estimate_candidates(candidates, levels, n);
    const size_t best = ans_smallest_estimate(e);
    if (chosen_bits) *chosen_bits = e.empty() ? 0 : e[best].bits;
    if (chosen_bytes) *chosen_bytes = e.empty() ? UINT64_MAX : e[best].bytes;
    return best;
}

namespace {

// Frequencies summing to kAnsScale for one context's counts (total > 0):
// each used symbol gets round(count * scale / total), at least 1; the
// difference to kAnsScale is taken from or given to the largest entries.
void normalize(const uint64_t* count, uint32_t* freq) {
    uint64_t total = 0;
    for (uint32_t s = 0; s < kAnsAlphabet; ++s) total += count[s];
    int64_t sum = 0;
    for (uint32_t s = 0; s < kAnsAlphabet; ++s) {
        freq[s] = 0;
        if (count[s] == 0) continue;
        // 64-bit where count * scale cannot overflow (every histogram gsz counts), 128-bit otherwise.
        const auto scaled = count[s] < (uint64_t{1} << 50) && total < (uint64_t{1} << 62)
                                ? (count[s] * kAnsScale + total / 2) / total
                                : static_cast<uint64_t>(
                                      (static_cast<unsigned __int128>(count[s]) * kAnsScale + total / 2) / total);
        freq[s] = static_cast<uint32_t>(std::max<uint64_t>(1, scaled));
        sum += freq[s];
    }
    // At most 56 symbols of at least 1 each: the largest always has room.
    while (sum != kAnsScale) {
        uint32_t big = 0;
        for (uint32_t s = 1; s < kAnsAlphabet; ++s)
            if (freq[s] > freq[big]) big = s;
        if (sum < kAnsScale) {
            freq[big] += static_cast<uint32_t>(kAnsScale - sum);
            sum = kAnsScale;
        } else {
            const int64_t take = std::min<int64_t>(sum - kAnsScale, freq[big] - 1);
            freq[big] -= static_cast<uint32_t>(take);
            sum -= take;
        }
    }
}

void pack(const uint32_t* freq, uint32_t* entry) {
    uint32_t cum = 0;
    for (uint32_t s = 0; s < kAnsAlphabet; ++s) {
        entry[s] = freq[s] ? (freq[s] | cum << 16) : 0;
        cum += freq[s];
    }
}

}  // namespace

namespace {

// One context's table: u8 used; with used <= 7 the symbols as u8 each, else a
// 56-bit presence mask (7 bytes); then frequency - 1 of every listed symbol
// but the last (whose frequency is what the others leave of kAnsScale) as a
// minimal 1- or 2-byte varint (7 bits per byte, low first).
constexpr uint32_t kAnsListedSymbols = 7;
constexpr uint32_t kAnsMaskBytes = 7;

// Cost of a frequency in 1/256 bits: 256 * (scale_bits - log2 f).
const std::vector<uint32_t>& freq_cost_q8() {
    static const std::vector<uint32_t> cost = [] {
        std::vector<uint32_t> c(kAnsScale + 1, 0);
        for (uint32_t f = 1; f <= kAnsScale; ++f)
            c[f] = static_cast<uint32_t>(std::lround(256.0 * (kAnsScaleBits - std::log2(static_cast<double>(f)))));
        return c;
    }();
    return cost;
}

// What write_table spends on a table of these frequencies.
uint64_t table_bytes(const uint32_t* freq) {
    uint32_t used = 0;
    for (uint32_t s = 0; s < kAnsAlphabet; ++s) used += freq[s] != 0;
    if (used == 0) return 1;
    uint64_t bytes = 1 + (used <= kAnsListedSymbols ? used : kAnsMaskBytes);
    uint32_t listed = 0;
    for (uint32_t s = 0; s < kAnsAlphabet; ++s)
        if (freq[s] && ++listed < used) bytes += freq[s] - 1 < 128 ? 1 : 2;
    return bytes;
}

// What write_tables spends on k empty contexts in a row (the empty_runs
// layout): a 0 for one alone, else kAnsEmptyRun and a count for up to 257.
uint64_t empty_contexts_bytes(uint64_t k) {
    uint64_t bytes = 0;
    while (k > 0) {
        const uint64_t m = k == 1 ? 1 : std::min<uint64_t>(k, 257);
        bytes += m == 1 ? 1 : 2;
        k -= m;
    }
    return bytes;
}

// Whether tables of tables_q8 (their bytes, in 1/256 bits) weigh against
// the codes' codes_q8 enough for sharing: a large field's tables are a few
// KB of MBs, and its compression keeps the host step short.  A sample's
// `counted` codes weigh as the `coded` codes they stand for (its tables do
// not shrink with it).
bool sharing_weighs(uint64_t tables_q8, uint64_t codes_q8, uint64_t counted, uint64_t coded) {
    return coded > counted && counted > 0 ? static_cast<double>(tables_q8) * 64.0 * static_cast<double>(counted) >
                                                static_cast<double>(codes_q8) * static_cast<double>(coded)
                                          : tables_q8 * 64 > codes_q8;
}

// A table repeated by reference: the marker byte and the context it repeats.
constexpr uint64_t kTableRefBytes = 2;

// The counts context `ctx`'s table is normalized from: its own, or for a
// lane start (above class none) its level's over every class and above
// class, or for the none above class (with strips) its class's over every
// above class: those contexts take codes the histogram counts elsewhere.
// Lane starts with an above class are never taken (the window is outside
// the lane): no table.
void define_counts(std::span<const uint64_t> histogram, uint32_t ctx, uint32_t aboves, uint64_t* out) {
    const uint32_t cls = ctx % kAnsClasses, above = ctx / kAnsClasses % aboves;
    const size_t level_base = size_t{ctx / (kAnsClasses * aboves)} * aboves * kAnsClasses;
    std::fill_n(out, kAnsAlphabet, uint64_t{0});
    const auto add = [&](size_t context) {
        for (uint32_t s = 0; s < kAnsAlphabet; ++s) out[s] += histogram[context * kAnsAlphabet + s];
    };
    if (cls == kAnsStartClass) {
        if (above == 0)
            for (uint32_t c = 0; c < aboves * kAnsClasses; ++c) add(level_base + c);
    } else if (above == 0) {
        for (uint32_t a = 0; a < aboves; ++a) add(level_base + a * kAnsClasses + cls);
    } else {
        add(ctx);
    }
}

// Context ctx's own table's frequencies (ans_build_tables'), all 0 when it
// has none; whether it has one.
bool context_frequencies(std::span<const uint64_t> histogram, uint32_t ctx, uint32_t aboves, uint32_t* freq) {
    uint64_t count[kAnsAlphabet];
    define_counts(histogram, ctx, aboves, count);
    uint64_t total = 0;
    for (uint32_t s = 0; s < kAnsAlphabet; ++s) total += count[s];
    if (total == 0) {
        std::fill_n(freq, kAnsAlphabet, 0u);
        return false;
    }
    normalize(count, freq);
    return true;
}

// Contexts that share one table: the counts it is normalized from (a lane
// start's are its level's, so it holds every symbol), the counts coded with
// it, and what it costs them in 1/256 bits: its bytes, a reference for every
// member but the first, and the codes (without their uniform bits, which no
// table changes).
struct TableGroup {
    uint64_t define[kAnsAlphabet];
    uint64_t coded[kAnsAlphabet];
    uint32_t members;
    uint64_t cost_q8;
};

uint64_t group_cost_q8(const uint64_t* define, const uint64_t* coded, uint32_t members) {
    uint32_t freq[kAnsAlphabet];
    normalize(define, freq);
    const auto& cost = freq_cost_q8();
    uint64_t q8 = (table_bytes(freq) + (members - 1) * kTableRefBytes) * 8 * 256;
    for (uint32_t s = 0; s < kAnsAlphabet; ++s) q8 += coded[s] * cost[std::max<uint32_t>(freq[s], 1)];
    return q8;
}

// Shares tables between the contexts `used_ctx` (those with a table, in
// order) of tables `t` built from `histogram`: greedily, the pair whose merge
// saves the most, lower contexts first on ties, until no merge saves; a merged
// group's table is normalized from its pooled counts and kept at its lowest
// context, which the others name in t.source.
void share_tables(std::span<const uint64_t> histogram, const std::vector<uint32_t>& used_ctx, AnsTables& t) {
    std::vector<TableGroup> groups(used_ctx.size());   // one per used context, in context order
    for (size_t m = 0; m < groups.size(); ++m) {
        const uint32_t ctx = used_ctx[m];
        TableGroup& g = groups[m];
        define_counts(histogram, ctx, t.aboves(), g.define);
        std::copy_n(histogram.data() + size_t{ctx} * kAnsAlphabet, kAnsAlphabet, g.coded);
        g.members = 1;
        g.cost_q8 = group_cost_q8(g.define, g.coded, 1);
    }

    const size_t k = groups.size();
    std::vector<int64_t> delta(k * k, 0);
    std::vector<uint8_t> alive(k, 1);
    auto merged_delta = [&](size_t i, size_t j) {
        uint64_t define[kAnsAlphabet], coded[kAnsAlphabet];
        for (uint32_t s = 0; s < kAnsAlphabet; ++s) {
            define[s] = groups[i].define[s] + groups[j].define[s];
            coded[s] = groups[i].coded[s] + groups[j].coded[s];
        }
        return static_cast<int64_t>(group_cost_q8(define, coded, groups[i].members + groups[j].members)) -
               static_cast<int64_t>(groups[i].cost_q8 + groups[j].cost_q8);
    };
    for (size_t i = 0; i < k; ++i)
        for (size_t j = i + 1; j < k; ++j) delta[i * k + j] = merged_delta(i, j);
    std::vector<uint32_t> group_of(k);
    for (size_t i = 0; i < k; ++i) group_of[i] = static_cast<uint32_t>(i);
    for (;;) {
        int64_t best = 0;
        size_t bi = 0, bj = 0;
        for (size_t i = 0; i < k; ++i) {
            if (!alive[i]) continue;
            for (size_t j = i + 1; j < k; ++j)
                if (alive[j] && delta[i * k + j] < best) {
                    best = delta[i * k + j];
                    bi = i;
                    bj = j;
                }
        }
        if (best >= 0) break;
        TableGroup& g = groups[bi];
        for (uint32_t s = 0; s < kAnsAlphabet; ++s) {
            g.define[s] += groups[bj].define[s];
            g.coded[s] += groups[bj].coded[s];
        }
        g.members += groups[bj].members;
        g.cost_q8 = group_cost_q8(g.define, g.coded, g.members);
        alive[bj] = 0;
        for (size_t m = 0; m < k; ++m)
            if (group_of[m] == bj) group_of[m] = static_cast<uint32_t>(bi);
        for (size_t m = 0; m < k; ++m)
            if (alive[m] && m != bi) delta[std::min(m, bi) * k + std::max(m, bi)] = merged_delta(std::min(m, bi), std::max(m, bi));
    }
    t.source.resize(t.num_contexts());
    for (uint32_t ctx = 0; ctx < t.num_contexts(); ++ctx) t.source[ctx] = static_cast<uint8_t>(ctx);
    for (size_t m = 0; m < k; ++m) {
        const size_t g = group_of[m];
        uint32_t freq[kAnsAlphabet];
        normalize(groups[g].define, freq);
        pack(freq, t.entry.data() + size_t{used_ctx[m]} * kAnsAlphabet);
        t.source[used_ctx[m]] = static_cast<uint8_t>(used_ctx[g]);
    }
}

}  // namespace

AnsTables ans_build_tables(std::span<const uint64_t> histogram, uint32_t levels, bool share, uint32_t class_lag,
                           uint32_t strip_width, uint64_t coded) {
    AnsTables t;
    t.levels = levels;
    t.class_lag = class_lag;
    t.strip_width = strip_width;
    GSZ_CHECK(levels >= 1 && levels <= kAnsMaxLevels && class_lag >= 1 && class_lag <= kAnsMaxClassLag &&
                  (strip_width == 0 || levels <= kAnsMaxStripLevels) &&
                  histogram.size() == size_t{t.num_contexts()} * kAnsAlphabet,
              GSZ_STATUS_INTERNAL, "ans tables: histogram of %zu bins for %u levels, class lag %u, strips of %u",
              histogram.size(), levels, class_lag, strip_width);
    t.entry.assign(histogram.size(), 0);
    // Each context's table, and with `share` what it costs (its bytes, the
    // codes' bits) and which contexts have one.
    const auto& cost = freq_cost_q8();
    uint64_t tables_q8 = 0, codes_q8 = 0;
    std::vector<uint32_t> used_ctx;
    for (uint32_t ctx = 0; ctx < t.num_contexts(); ++ctx) {
        uint32_t freq[kAnsAlphabet];
        if (!context_frequencies(histogram, ctx, t.aboves(), freq)) continue;
        pack(freq, t.entry.data() + size_t{ctx} * kAnsAlphabet);
        if (!share) continue;
        const uint64_t* coded_counts = histogram.data() + size_t{ctx} * kAnsAlphabet;
        tables_q8 += table_bytes(freq) * 8 * 256;
        for (uint32_t s = 0; s < kAnsAlphabet; ++s) codes_q8 += coded_counts[s] * cost[std::max<uint32_t>(freq[s], 1)];
        used_ctx.push_back(ctx);
    }
    if (!share) return t;
    uint64_t counted = 0;
    for (const uint64_t c : histogram) counted += c;
    if (used_ctx.size() < 2 || !sharing_weighs(tables_q8, codes_q8, counted, coded)) return t;
    share_tables(histogram, used_ctx, t);
    return t;
}

namespace {

std::optional<AnsCandidateEstimate> estimate_unshared(const AnsCandidate& c, uint32_t levels, uint64_t n,
                                                      uint64_t counted) {
    // The candidate's tables as ans_build_tables would make them (the same
    // frequencies), ans_estimated_bits' sum and ans_tables_bytes' count in
    // one pass without the entries: the host's layout choice, which the
    // GPU's compression waits for, weighs 2-4 candidates of up to 240
    // contexts each.
    AnsTables shape;
    shape.levels = levels;
    shape.class_lag = c.class_lag;
    shape.strip_width = c.strip_width;
    GSZ_CHECK(levels >= 1 && levels <= kAnsMaxLevels && c.class_lag >= 1 && c.class_lag <= kAnsMaxClassLag &&
                  (c.strip_width == 0 || levels <= kAnsMaxStripLevels) &&
                  c.histogram.size() == size_t{shape.num_contexts()} * kAnsAlphabet,
              GSZ_STATUS_INTERNAL, "ans estimate: histogram of %zu bins for %u levels, class lag %u, strips of %u",
              c.histogram.size(), levels, c.class_lag, c.strip_width);
    const bool share = c.strip_width == 0;  // ans_estimate_candidates' rule
    const auto& cost = freq_cost_q8();
    uint64_t bits_q8 = 0, table_bytes_total = 10, tables_q8 = 0, codes_q8 = 0;  // 10: ans_tables_bytes' header
    uint32_t used = 0, empty = 0;   // empty: contexts without a table since the last table
    for (uint32_t ctx = 0; ctx < shape.num_contexts(); ++ctx) {
        uint32_t freq[kAnsAlphabet];
        const bool has = context_frequencies(c.histogram, ctx, shape.aboves(), freq);
        const uint64_t bytes = table_bytes(freq);  // 1 for a context without a table
        if (bytes == 1) {
            ++empty;
            continue;
        }
        table_bytes_total += bytes + empty_contexts_bytes(empty);
        empty = 0;
        if (!has) continue;
        const uint64_t* own = c.histogram.data() + size_t{ctx} * kAnsAlphabet;
        for (uint32_t s = 0; s < kAnsAlphabet; ++s) {
            if (own[s] == 0) continue;
            const uint64_t q8 = own[s] * cost[std::max<uint32_t>(freq[s], 1)];
            codes_q8 += q8;
            bits_q8 += q8 + own[s] * 256u * ans_extra_bits(s);
        }
        tables_q8 += bytes * 8 * 256;
        ++used;
    }
    table_bytes_total += empty_contexts_bytes(empty);
    if (share && used >= 2 && sharing_weighs(tables_q8, codes_q8, counted, n)) return std::nullopt;
    const uint64_t bits = bits_q8 / 256;
    return AnsCandidateEstimate{bits, stage_bytes(table_bytes_total, sample_bits_for_n(bits, counted, n), n)};
}

}  // namespace

uint64_t ans_estimated_bits(const AnsTables& tables, std::span<const uint64_t> histogram) {
    const auto& cost = freq_cost_q8();
    uint64_t q8 = 0;
    for (size_t b = 0; b < histogram.size(); ++b) {
        if (histogram[b] == 0) continue;
        const uint32_t s = static_cast<uint32_t>(b % kAnsAlphabet);
        const uint32_t f = AnsTables::freq(tables.entry[b]);
        q8 += histogram[b] * (cost[std::max<uint32_t>(f, 1)] + 256u * ans_extra_bits(s));
    }
    return q8 / 256;
}

uint32_t ans_lane_symbols(uint64_t n, uint64_t payload_bits) {
    // ~4% of the payload in lane states and word counts, up to the lanes a
    // GPU runs at once.
    const uint64_t lanes =
        std::clamp<uint64_t>(payload_bits / (kAnsLanePayloadShare * kAnsLaneBitsEstimate), 1, kAnsMaxLanes);
    uint64_t s = n / lanes + (n % lanes != 0);
    s = std::clamp<uint64_t>((s + 63) / 64 * 64, 256, kAnsMaxLaneSymbols);
    return static_cast<uint32_t>(s);
}

uint64_t ans_estimated_bytes(const AnsTables& tables, std::span<const uint64_t> histogram, uint64_t n) {
    return stage_bytes(tables, ans_estimated_bits(tables, histogram), n);
}

uint64_t ans_estimated_bytes(const AnsTables& tables, uint64_t estimated_bits, uint64_t n) {
    return stage_bytes(tables, estimated_bits, n);
}

AnsStream ans_encode_cpu(const AnsTables& tables, std::span<const uint16_t> codes, uint32_t radius,
                         const AnsContextShape& shape, uint32_t lane_symbols, int num_threads,
                         AnsLanesLayout layout) {
    const AnsContextShape coded = shape.with_strips(tables.strip_width);
    GSZ_CHECK(lane_symbols >= 1 && tables.levels == shape.levels &&
                  tables.entry.size() == size_t{tables.num_contexts()} * kAnsAlphabet &&
                  ans_strips_fit(shape, tables.strip_width, codes.size()) &&
                  (tables.strip_width == 0 || lane_symbols % kAnsStripLaneMultiple == 0),
              GSZ_STATUS_INTERNAL, "ans encode: lane of %u codes, %u / %u levels, strips of %u", lane_symbols,
              tables.levels, shape.levels, tables.strip_width);
    const uint64_t n = codes.size();
    const uint32_t aboves = tables.aboves(), strip = tables.strip_width;
    AnsStream out;
    out.num_symbols = n;
    out.lane_symbols = lane_symbols;
    out.start_state = ans_start_state(layout);
    const uint64_t lanes = lane_count(n, lane_symbols);
    out.lane_state.assign(lanes, 0);
    out.lane_words.assign(lanes, 0);
    std::vector<std::vector<uint16_t>> lane_out(lanes);
    std::vector<uint8_t> missing(lanes, 0);
    const int threads = resolve_threads(num_threads);
#pragma omp parallel num_threads(threads)
    {
        std::vector<uint16_t> gathered;  // with strips: the lane's codes in coding order
        std::vector<uint8_t> above;      // and their above classes
#pragma omp for schedule(dynamic, 16)
        for (uint64_t lane = 0; lane < lanes; ++lane) {
            const auto [begin, end] = lane_range(lane, lane_symbols, n);
            const uint64_t count = end - begin;
            std::span<const uint16_t> lc = codes.subspan(begin, count);
            AnsCursor cur = coded.cursor();
            if (strip) {
                gathered.resize(count);
                above.resize(count);
                cur.seek(begin);
                for (uint64_t k = 0; k < count; ++k, cur.next()) {
                    gathered[k] = codes[cur.raster()];
                    const uint32_t nonzero =
                        cur.y >= 1 && k >= strip + kAnsAboveReach ? ans_above_nonzero(codes.data(), cur, radius) : 0;
                    above[k] = static_cast<uint8_t>(ans_above_class(begin + k, begin, cur.y, strip, nonzero));
                }
                lc = gathered;
            }
            std::vector<uint16_t>& words = lane_out[lane];
            words.reserve(count / 2 + 16);
            cur.seek(end - 1);
            uint32_t x = out.start_state;
            uint16_t word;
            // Which of the kAnsLookBack codes before k are residual 0 (inside the lane).
            uint32_t zmask = 0;
            for (uint32_t j = 0; j < kAnsLookBack && count - 1 - j > 0; ++j)
                zmask |= static_cast<uint32_t>(lc[count - 2 - j] == radius) << j;
            for (uint64_t k = count; k-- > 0; cur.prev()) {
                const AnsSymbol s = ans_symbol_of(lc[k], radius);
                const uint32_t cls = k < kAnsLookBack  // a lane start: no look back
                                         ? kAnsStartClass
                                         : ans_context_class(k, ans_zeros_in_mask(zmask),
                                                             ans_class_of(lc[k - tables.class_lag], radius));
                zmask = zmask >> 1 |
                        (k >= kAnsLookBack + 1 ? static_cast<uint32_t>(lc[k - kAnsLookBack - 1] == radius) : 0u)
                            << (kAnsLookBack - 1);
                const uint32_t ctx = ans_context(cur.level(), strip ? above[k] : 0u, cls, aboves);
                const uint32_t e = tables.entry[size_t{ctx} * kAnsAlphabet + s.symbol];
                if (e == 0) {
                    missing[lane] = 1;
                    break;
                }
                if (s.extra_bits && ans_encode_put(x, 1, s.extra, s.extra_bits, &word)) words.push_back(word);
                if (ans_encode_put(x, AnsTables::freq(e), AnsTables::cum(e), kAnsScaleBits, &word))
                    words.push_back(word);
            }
            std::reverse(words.begin(), words.end());
            out.lane_state[lane] = x;
            out.lane_words[lane] = static_cast<uint32_t>(words.size());
        }
    }
    for (uint64_t lane = 0; lane < lanes; ++lane)
        GSZ_CHECK(!missing[lane], GSZ_STATUS_INTERNAL, "ans encode: a code without a table entry (lane %llu)",
                  static_cast<unsigned long long>(lane));
    uint64_t total = 0;
    for (const auto& w : lane_out) total += w.size();
    out.words.reserve(total);
    for (auto& w : lane_out) {
        out.words.insert(out.words.end(), w.begin(), w.end());
        std::vector<uint16_t>().swap(w);
    }
    return out;
}

namespace {


void put_varint(ByteWriter& out, uint32_t v) {  // v < 2^14
    if (v < 128) {
        out.put(static_cast<uint8_t>(v));
    } else {
        out.put(static_cast<uint8_t>(0x80u | (v & 0x7Fu)));
        out.put(static_cast<uint8_t>(v >> 7));
    }
}

void write_table(const uint32_t* e, ByteWriter& out) {
    uint32_t used = 0;
    for (uint32_t s = 0; s < kAnsAlphabet; ++s) used += e[s] != 0;
    out.put(static_cast<uint8_t>(used));
    if (used == 0) return;
    if (used <= kAnsListedSymbols) {
        for (uint32_t s = 0; s < kAnsAlphabet; ++s)
            if (e[s]) out.put(static_cast<uint8_t>(s));
    } else {
        uint8_t mask[kAnsMaskBytes] = {};
        for (uint32_t s = 0; s < kAnsAlphabet; ++s)
            if (e[s]) mask[s / 8] |= static_cast<uint8_t>(1u << (s % 8));
        for (const uint8_t m : mask) out.put(m);
    }
    uint32_t listed = 0;
    for (uint32_t s = 0; s < kAnsAlphabet; ++s)
        if (e[s] && ++listed < used) put_varint(out, AnsTables::freq(e[s]) - 1);
}

}  // namespace

namespace {

// Whether context ctx has a table of its own with no symbol (unused).
bool empty_context(const AnsTables& tables, uint32_t ctx) {
    if (!tables.source.empty() && tables.source[ctx] != ctx) return false;
    const uint32_t* e = tables.entry.data() + size_t{ctx} * kAnsAlphabet;
    return std::all_of(e, e + kAnsAlphabet, [](uint32_t x) { return AnsTables::freq(x) == 0; });
}

// How many empty contexts follow ctx's (at most 256: kAnsEmptyRun's byte counts 2 to 257).
uint32_t empty_run_after(const AnsTables& tables, uint32_t ctx) {
    uint32_t k = 0;
    while (k < 256 && ctx + 1 + k < tables.num_contexts() && empty_context(tables, ctx + 1 + k)) ++k;
    return k;
}

// Every context's table, or its reference to the earlier context whose table
// it repeats; in the empty_runs layout an empty table's 0 says how many more follow.
void write_tables(const AnsTables& tables, ByteWriter& out, AnsTablesLayout layout) {
    for (uint32_t ctx = 0; ctx < tables.num_contexts(); ++ctx) {
        if (!tables.source.empty() && tables.source[ctx] != ctx) {
            out.put(static_cast<uint8_t>(kAnsTableRef));
            out.put(tables.source[ctx]);
        } else if (layout == AnsTablesLayout::empty_runs && empty_context(tables, ctx) &&
                   empty_run_after(tables, ctx) > 0) {
            const uint32_t more = empty_run_after(tables, ctx);
            out.put(static_cast<uint8_t>(kAnsEmptyRun));
            out.put(static_cast<uint8_t>(more - 1));
            ctx += more;
        } else {
            write_table(tables.entry.data() + size_t{ctx} * kAnsAlphabet, out);
        }
    }
}

}  // namespace

uint64_t ans_tables_bytes(const AnsTables& tables) {
    // What write_tables writes in the current layout, counted (the candidates'
    // choice sizes ~200 tables each).
    uint64_t bytes = 10;
    uint32_t freq[kAnsAlphabet];
    for (uint32_t ctx = 0; ctx < tables.num_contexts(); ++ctx) {
        if (!tables.source.empty() && tables.source[ctx] != ctx) {
            bytes += kTableRefBytes;
            continue;
        }
        const uint32_t* e = tables.entry.data() + size_t{ctx} * kAnsAlphabet;
        for (uint32_t s = 0; s < kAnsAlphabet; ++s) freq[s] = AnsTables::freq(e[s]);
        const uint64_t b = table_bytes(freq);
        if (b == 1) {   // empty: with the empty ones after it, a run (or its own 0)
            const uint32_t more = empty_run_after(tables, ctx);
            bytes += empty_contexts_bytes(1 + more);
            ctx += more;
            continue;
        }
        bytes += b;
    }
    return bytes;
}

void ans_tables_write(const AnsTables& tables, uint32_t lane_symbols, ByteWriter& out, AnsTablesLayout layout) {
    GSZ_CHECK(layout != AnsTablesLayout::plain || (tables.class_lag == 1 && tables.source.empty()),
              GSZ_STATUS_INTERNAL, "ans tables: lag %u or shared tables in the layout of versions 3-7",
              tables.class_lag);
    GSZ_CHECK(layout >= AnsTablesLayout::striped || tables.strip_width == 0, GSZ_STATUS_INTERNAL,
              "ans tables: strips in the layout of versions 3-11");
    out.put(lane_symbols);
    out.put(static_cast<uint8_t>(tables.levels));
    out.put(static_cast<uint8_t>(kAnsClasses));
    out.put(static_cast<uint8_t>(kAnsAlphabet));
    out.put(static_cast<uint8_t>(kAnsScaleBits));
    if (layout != AnsTablesLayout::plain) out.put(static_cast<uint8_t>(tables.class_lag));
    // The strip width as its log2, 0 for raster order.
    if (layout == AnsTablesLayout::striped || layout == AnsTablesLayout::empty_runs)
        out.put(static_cast<uint8_t>(tables.strip_width ? ans_floor_log2(tables.strip_width) : 0u));
    write_tables(tables, out, layout);
}

namespace {

// Bits packed low first into bytes (the packed ans_lanes layout), 32 at a
// time through a 64-bit accumulator: a GPU compression's archive packs up to
// 2^17 lanes on the host, inside its end-to-end time.
class BitWriter {
public:
    // Room for `max_bits` more bits is made at once; finish() trims it.
    BitWriter(std::vector<uint8_t>& out, uint64_t max_bits) : out_(out), start_(out.size()) {
        out_.resize(start_ + (max_bits + 63) / 64 * 8 + 8);
        at_ = out_.data() + start_;
    }
    void put(uint64_t value, uint32_t bits) {  // bits <= 32, value < 2^bits
        acc_ |= value << fill_;
        fill_ += bits;
        if (fill_ >= 32) {
            const auto word = static_cast<uint32_t>(acc_);
            std::memcpy(at_, &word, 4);
            at_ += 4;
            acc_ >>= 32;
            fill_ -= 32;
        }
    }
    void finish() {  // the last bits, zeros up to the byte
        for (; fill_ > 0; fill_ = fill_ > 8 ? fill_ - 8 : 0, acc_ >>= 8) *at_++ = static_cast<uint8_t>(acc_);
        out_.resize(static_cast<size_t>(at_ - out_.data()));
    }

private:
    std::vector<uint8_t>& out_;
    size_t start_;
    uint8_t* at_;
    uint64_t acc_ = 0;
    uint32_t fill_ = 0;
};

class BitReader {
public:
    BitReader(std::span<const uint8_t> data, size_t byte_offset) : data_(data), bit_(8 * byte_offset) {}
    // The next `bits` bits (<= 32) without consuming them; bits past the end read as 0.
    uint64_t peek() const {
        const size_t byte = bit_ >> 3;
        uint64_t v = 0;
        if (byte + 8 <= data_.size()) {
            std::memcpy(&v, data_.data() + byte, 8);
        } else {
            for (size_t b = byte; b < data_.size(); ++b) v |= uint64_t{data_[b]} << (8 * (b - byte));
        }
        return v >> (bit_ & 7u);  // at least 57 valid bits
    }
    uint32_t get(uint32_t bits, const char* field) {  // bits <= 32
        GSZ_CHECK(bits <= 8 * data_.size() - bit_, kCorrupt, "ans_lanes: the section ends inside a lane's %s", field);
        const uint32_t v = static_cast<uint32_t>(peek() & ((uint64_t{1} << bits) - 1u));
        bit_ += bits;
        return v;
    }
    // The zero bits before the next one bit (which is consumed too), at most
    // `limit` (< 57; more is corrupt).
    uint32_t zeros(uint32_t limit, const char* field) {
        const uint64_t v = peek();
        const uint32_t z = v ? static_cast<uint32_t>(__builtin_ctzll(v)) : 64u;
        GSZ_CHECK(z <= limit, kCorrupt, "ans_lanes: a lane's %s is longer than any count", field);
        get(z + 1, field);  // checks the end of the section
        return z;
    }
    // The padding after the last lane: zero bits to the end of its byte, then nothing.
    void expect_end() const {
        const size_t byte = (bit_ + 7) / 8;
        GSZ_CHECK(byte == data_.size(), kCorrupt, "ans_lanes: %zu unexpected trailing bytes", data_.size() - byte);
        GSZ_CHECK((bit_ & 7u) == 0 || (data_[bit_ >> 3] >> (bit_ & 7u)) == 0, kCorrupt,
                  "ans_lanes: padding bits are not zero");
    }

private:
    std::span<const uint8_t> data_;
    size_t bit_;
};

uint32_t bit_length(uint32_t v) { return v ? ans_floor_log2(v) + 1 : 0; }

// The least final state a lane of `words` words may have: 2^16 once a word
// was emitted (the encoder's states stay at or above it from then on), else
// the start state.
uint32_t lane_state_floor(bool from_one, uint32_t words) { return from_one && words == 0 ? 1u : kAnsStateLow; }

// Word counts are below 2^25 (2 per code, lanes below 2^24 codes).
constexpr uint32_t kMaxWordBits = 26;

}  // namespace

void ans_lanes_write(const AnsStream& stream, ByteWriter& out, AnsLanesLayout layout) {
    GSZ_CHECK(stream.start_state == ans_start_state(layout), GSZ_STATUS_INTERNAL,
              "ans lanes: a stream started at state %u in a layout whose lanes start at %u", stream.start_state,
              ans_start_state(layout));
    const uint64_t lanes = stream.num_lanes();
    if (layout == AnsLanesLayout::fixed) {
        for (uint64_t lane = 0; lane < lanes; ++lane) {
            out.put(stream.lane_state[lane]);
            out.put(stream.lane_words[lane]);
        }
        return;
    }
    // The order k of the counts' exponential-Golomb code: the one that
    // minimizes the sum over lanes of k + 2 * max(0, bit length of words - k)
    // (the code's length but where (words >> k) + 1 gains a bit), the
    // smallest on ties: one pass over the counts' bit lengths.
    uint64_t lengths[kMaxWordBits + 1] = {};
    for (uint64_t lane = 0; lane < lanes; ++lane) ++lengths[std::min(bit_length(stream.lane_words[lane]), kMaxWordBits)];
    uint32_t order = 0;
    uint64_t best = UINT64_MAX;
    for (uint32_t k = 0; k < kMaxWordBits; ++k) {
        uint64_t cost = 0;
        for (uint32_t b = 0; b <= kMaxWordBits; ++b) cost += lengths[b] * (k + 2 * (b > k ? b - k : 0));
        if (cost < best) best = cost, order = k;
    }
    const bool from_one = layout == AnsLanesLayout::packed_from_one;
    for (uint64_t lane = 0; lane < lanes; ++lane)
        GSZ_CHECK(stream.lane_state[lane] >= lane_state_floor(from_one, stream.lane_words[lane]), GSZ_STATUS_INTERNAL,
                  "ans lanes: lane %llu ends at state %u with %u words", static_cast<unsigned long long>(lane),
                  stream.lane_state[lane], stream.lane_words[lane]);
    std::vector<uint8_t>& bytes = out.bytes();
    bytes.push_back(static_cast<uint8_t>(order));
    BitWriter bits(bytes, lanes * (5 + 31 + 2 * kMaxWordBits + 1));
    const uint32_t low_mask = (1u << order) - 1u;
    // The state as its bit length above its floor's (4 bits; 5 for a lane
    // that starts at 1 and emitted no word) and the bits below its top one.
    const auto put_state = [&](uint32_t x, uint32_t floor_log) {
        const uint32_t top = ans_floor_log2(x);
        bits.put(top - floor_log, floor_log ? 4 : 5);
        bits.put(x & ((1u << top) - 1u), top);
    };
    for (uint64_t lane = 0; lane < lanes; ++lane) {
        const uint32_t x = stream.lane_state[lane], w = stream.lane_words[lane];
        if (!from_one) put_state(x, 16);
        // m = (words >> k) + 1 as z = floor(log2 m) zeros, a one, then the z
        // bits of m below its top one.
        const uint32_t m = (w >> order) + 1, z = ans_floor_log2(m);
        const uint64_t rest = m ^ (1u << z);
        if (2 * z + 1 <= 32) {
            bits.put(rest << (z + 1) | uint64_t{1} << z, 2 * z + 1);
        } else {  // long counts at a small order
            bits.put(uint64_t{1} << z, z + 1);
            bits.put(rest, z);
        }
        bits.put(w & low_mask, order);
        if (from_one) put_state(x, w ? 16 : 0);
    }
    bits.finish();
}

void ans_stream_write(const AnsStream& stream, ByteWriter& out) {
    out.put_array(std::span<const uint16_t>(stream.words));
}

AnsStreamView ans_stream_read(std::span<const uint8_t> tables_section, std::span<const uint8_t> lanes_section,
                              std::span<const uint8_t> stream_section, uint64_t n, uint32_t levels,
                              AnsLanesLayout layout, AnsTablesLayout tables_layout) {
    AnsContextShape shape;
    shape.dims[0] = n;
    shape.levels = levels;
    return ans_stream_read(tables_section, lanes_section, stream_section, n, shape, layout, tables_layout);
}

AnsStreamView ans_stream_read(std::span<const uint8_t> tables_section, std::span<const uint8_t> lanes_section,
                              std::span<const uint8_t> stream_section, uint64_t n, const AnsContextShape& shape,
                              AnsLanesLayout layout, AnsTablesLayout tables_layout) {
    const bool lagged = tables_layout != AnsTablesLayout::plain;
    const uint32_t levels = shape.levels;
    AnsStreamView v;
    ByteReader in(tables_section, "ans_tables");
    v.num_symbols = n;
    v.lane_symbols = in.get<uint32_t>("lane length");
    const uint32_t stored_levels = in.get<uint8_t>("levels");
    const uint32_t classes = in.get<uint8_t>("classes");
    const uint32_t alphabet = in.get<uint8_t>("alphabet");
    const uint32_t scale_bits = in.get<uint8_t>("scale bits");
    GSZ_CHECK(v.lane_symbols >= 1 && v.lane_symbols <= kAnsMaxLaneSymbols, kCorrupt, "ans_tables: lanes of %u codes",
              v.lane_symbols);
    GSZ_CHECK(stored_levels == levels && classes == kAnsClasses && alphabet == kAnsAlphabet &&
                  scale_bits == kAnsScaleBits,
              kCorrupt, "ans_tables: %u levels, %u classes, %u symbols, %u-bit tables (expected %u, %u, %u, %u)",
              stored_levels, classes, alphabet, scale_bits, levels, kAnsClasses, kAnsAlphabet, kAnsScaleBits);
    v.tables.levels = levels;
    v.tables.class_lag = lagged ? in.get<uint8_t>("class lag") : 1u;
    GSZ_CHECK(v.tables.class_lag >= 1 && v.tables.class_lag <= kAnsMaxClassLag, kCorrupt,
              "ans_tables: class lag %u (1 or 2)", v.tables.class_lag);
    if (tables_layout >= AnsTablesLayout::striped) {
        const uint32_t log = in.get<uint8_t>("strip width");
        if (log != 0) {
            const uint32_t w = log < 32 ? 1u << log : 0u;
            GSZ_CHECK(w != 0 && ans_strips_fit(shape, w, n) && v.lane_symbols % kAnsStripLaneMultiple == 0, kCorrupt, "ans_tables: strips of 2^%u columns for %llu x %llu x %llu codes of %u levels, lanes of %u", log,
                      static_cast<unsigned long long>(shape.dims[0]), static_cast<unsigned long long>(shape.dims[1]),
                      static_cast<unsigned long long>(shape.dims[2]), levels, v.lane_symbols);
            v.tables.strip_width = w;
        }
    }
    v.tables.entry.assign(size_t{v.tables.num_contexts()} * kAnsAlphabet, 0);
    v.tables.source.resize(v.tables.num_contexts());
    bool own[kAnsMaxContexts] = {};   // contexts with a table of their own
    for (uint32_t ctx = 0; ctx < v.tables.num_contexts(); ++ctx) {
        v.tables.source[ctx] = static_cast<uint8_t>(ctx);
        const uint32_t used = in.get<uint8_t>("used symbols");
        if (used == kAnsTableRef && lagged) {
            // A reference names an earlier context's own table (never another
            // reference), so each set of shared tables has one encoding.
            const uint32_t src = in.get<uint8_t>("table reference");
            GSZ_CHECK(src < ctx && own[src], kCorrupt,
                      "ans_tables: context %u repeats context %u, which has no table of its own before it", ctx, src);
            std::copy_n(v.tables.entry.data() + size_t{src} * kAnsAlphabet, kAnsAlphabet,
                        v.tables.entry.data() + size_t{ctx} * kAnsAlphabet);
            v.tables.source[ctx] = static_cast<uint8_t>(src);
            continue;
        }
        if (used == kAnsEmptyRun && tables_layout == AnsTablesLayout::empty_runs) {   // 2 to 257 empty contexts
            const uint32_t more = in.get<uint8_t>("empty contexts") + 1u;
            GSZ_CHECK(more < v.tables.num_contexts() - ctx, kCorrupt,
                      "ans_tables: a run of %u empty contexts from context %u of %u", more + 1, ctx,
                      v.tables.num_contexts());
            for (uint32_t k = 1; k <= more; ++k) v.tables.source[ctx + k] = static_cast<uint8_t>(ctx + k);
            ctx += more;
            continue;
        }
        GSZ_CHECK(used <= kAnsAlphabet, kCorrupt, "ans_tables: context %u lists %u symbols", ctx, used);
        if (used == 0) continue;
        own[ctx] = true;
        uint32_t symbols[kAnsAlphabet];
        if (used <= kAnsListedSymbols) {
            for (uint32_t k = 0; k < used; ++k) {
                symbols[k] = in.get<uint8_t>("symbol");
                GSZ_CHECK(symbols[k] < kAnsAlphabet && (k == 0 || symbols[k] > symbols[k - 1]), kCorrupt,
                          "ans_tables: context %u: symbol %u out of order or range", ctx, symbols[k]);
            }
        } else {
            uint32_t k = 0;
            for (uint32_t b = 0; b < kAnsMaskBytes; ++b) {
                const uint32_t m = in.get<uint8_t>("symbol mask");
                for (uint32_t bit = 0; bit < 8; ++bit)
                    if (m >> bit & 1u) {
                        GSZ_CHECK(k < used, kCorrupt, "ans_tables: context %u: more symbols than %u", ctx, used);
                        symbols[k++] = 8 * b + bit;
                    }
            }
            GSZ_CHECK(k == used, kCorrupt, "ans_tables: context %u: %u symbols in the mask, %u said", ctx, k, used);
        }
        uint32_t cum = 0;
        uint32_t* e = v.tables.entry.data() + size_t{ctx} * kAnsAlphabet;
        for (uint32_t k = 0; k < used; ++k) {
            uint32_t f = kAnsScale - cum;  // the last symbol: what the others leave
            if (k + 1 < used) {
                const uint32_t lo = in.get<uint8_t>("frequency");
                uint32_t value = lo;
                if (lo & 0x80u) {
                    const uint32_t hi = in.get<uint8_t>("frequency");
                    GSZ_CHECK(hi != 0 && hi < 128, kCorrupt, "ans_tables: context %u: frequency not a minimal varint",
                              ctx);
                    value = (lo & 0x7Fu) | hi << 7;
                }
                f = value + 1;
            }
            GSZ_CHECK(f >= 1 && cum + f <= kAnsScale && (k + 1 == used || cum + f < kAnsScale), kCorrupt,
                      "ans_tables: context %u: frequencies do not sum to %u", ctx, kAnsScale);
            e[symbols[k]] = f | cum << 16;
            cum += f;
        }
    }
    in.expect_end();

    const uint64_t lanes = lane_count(n, v.lane_symbols);
    if (layout == AnsLanesLayout::fixed) {
        GSZ_CHECK(lanes_section.size() / 8 == lanes && lanes_section.size() % 8 == 0, kCorrupt,
                  "ans_lanes: %zu bytes for %llu lanes of %u codes", lanes_section.size(),
                  static_cast<unsigned long long>(lanes), v.lane_symbols);
    } else {
        // At least 21 bits a lane (4 + 16 of state, 1 of word count), 6 when
        // lanes start at 1 (5 of state, 1 of word count): no allocation for
        // lanes the section cannot hold.
        const uint64_t least_bits = layout == AnsLanesLayout::packed_from_one ? 6 : 21;
        GSZ_CHECK(!lanes_section.empty() && (lanes_section.size() - 1) * 8 / least_bits >= lanes, kCorrupt,
                  "ans_lanes: %zu bytes for %llu lanes of %u codes", lanes_section.size(),
                  static_cast<unsigned long long>(lanes), v.lane_symbols);
    }
    ByteReader lin(lanes_section, "ans_lanes");
    const uint32_t order = layout != AnsLanesLayout::fixed ? lin.get<uint8_t>("word count order") : 0u;
    GSZ_CHECK(order < kMaxWordBits, kCorrupt, "ans_lanes: word counts coded with order %u", order);
    BitReader bits(lanes_section, 1);
    const bool from_one = layout == AnsLanesLayout::packed_from_one;
    v.start_state = ans_start_state(layout);
    v.lane_state.resize(lanes);
    v.lane_word_offset.resize(lanes + 1);
    v.lane_word_offset[0] = 0;
    const auto get_state = [&](uint32_t floor_log) {
        const uint32_t top = floor_log + bits.get(floor_log ? 4 : 5, "state");  // <= 31
        return 1u << top | bits.get(top, "state");
    };
    for (uint64_t lane = 0; lane < lanes; ++lane) {
        uint32_t state = 0, words = 0;
        if (layout == AnsLanesLayout::fixed) {
            state = lin.get<uint32_t>("lane state");
            words = lin.get<uint32_t>("lane words");
        } else {
            if (!from_one) state = get_state(16);
            const uint32_t zeros = bits.zeros(kMaxWordBits - order, "word count");  // z
            const uint32_t m = (1u << zeros | bits.get(zeros, "word count")) - 1u;  // < 2^(26 - order)
            words = m << order | bits.get(order, "word count");
            if (from_one) state = get_state(words ? 16 : 0);
        }
        const uint64_t count = lane_range(lane, v.lane_symbols, n).second - lane * v.lane_symbols;
        GSZ_CHECK(state >= lane_state_floor(from_one, words) && words <= 2 * count, kCorrupt,
                  "ans_lanes: lane %llu: state %u, %u words for %llu codes", static_cast<unsigned long long>(lane),
                  state, words, static_cast<unsigned long long>(count));
        v.lane_state[lane] = state;
        v.lane_word_offset[lane + 1] = v.lane_word_offset[lane] + words;
    }
    if (layout != AnsLanesLayout::fixed) bits.expect_end();
    GSZ_CHECK(stream_section.size() % 2 == 0 && stream_section.size() / 2 == v.lane_word_offset[lanes], kCorrupt,
              "ans_stream: %zu bytes, the lanes hold %llu words", stream_section.size(),
              static_cast<unsigned long long>(v.lane_word_offset[lanes]));
    v.words = stream_section;
    return v;
}

AnsDecodeTable ans_decode_table(const AnsTables& tables) {
    constexpr uint32_t buckets = kAnsScale >> kAnsDecodeBucketBits, width = 1u << kAnsDecodeBucketBits;
    AnsDecodeTable t;
    t.bucket.assign(size_t{tables.num_contexts()} * buckets, 0xFF);
    t.end.assign(size_t{tables.num_contexts()} * kAnsAlphabet, 0);
    for (uint32_t ctx = 0; ctx < tables.num_contexts(); ++ctx)
        for (uint32_t s = 0; s < kAnsAlphabet; ++s) {
            const uint32_t e = tables.entry[size_t{ctx} * kAnsAlphabet + s];
            if (!e) continue;
            // The reader's tables tile [0, kAnsScale) in symbol order (ans_stream_read).
            const uint32_t cum = AnsTables::cum(e), end = cum + AnsTables::freq(e);
            t.end[size_t{ctx} * kAnsAlphabet + s] = static_cast<uint16_t>(end);
            for (uint32_t b = (cum + width - 1) / width; b * width < end; ++b)
                t.bucket[size_t{ctx} * buckets + b] = static_cast<uint8_t>(s);
        }
    return t;
}

void ans_decode_cpu(const AnsStreamView& stream, uint32_t radius, const AnsContextShape& shape,
                    std::span<uint16_t> codes, int num_threads) {
    const uint64_t n = stream.num_symbols;
    const uint64_t lanes = stream.lane_state.size();
    GSZ_CHECK(codes.size() == n && stream.lane_symbols >= 1 && lanes == lane_count(n, stream.lane_symbols) &&
                  stream.lane_word_offset.size() == lanes + 1 && stream.lane_word_offset[lanes] * 2 <= stream.words.size() &&
                  stream.tables.levels == shape.levels,
              GSZ_STATUS_INVALID_ARGUMENT, "ans decode: stream view is inconsistent");
    const AnsContextShape coded = shape.with_strips(stream.tables.strip_width);
    GSZ_CHECK(ans_strips_fit(shape, stream.tables.strip_width, n), GSZ_STATUS_INVALID_ARGUMENT,
              "ans decode: strips of %u columns over %llu codes of another shape", stream.tables.strip_width,
              static_cast<unsigned long long>(n));
    const uint32_t aboves = stream.tables.aboves(), strip = stream.tables.strip_width;
    const AnsDecodeTable table = ans_decode_table(stream.tables);
    const uint32_t* entry = stream.tables.entry.data();
    std::vector<uint8_t> bad(lanes, 0);
    const int threads = resolve_threads(num_threads);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 16)
    for (uint64_t lane = 0; lane < lanes; ++lane) {
        const auto [begin, end] = lane_range(lane, stream.lane_symbols, n);
        uint64_t pos = stream.lane_word_offset[lane];
        const uint64_t stop = stream.lane_word_offset[lane + 1];
        const uint8_t* w = stream.words.data();
        // Lanes started at 1 run out of words before their last codes (the
        // encoder's first, coded before it emitted a word); started at 2^16,
        // a lane that asks for one more word is corrupt.
        const bool may_run_out = stream.start_state < kAnsStateLow;
        const auto refill = [&](uint32_t& x) {
            if (!ans_decode_needs_word(x)) return true;
            if (pos == stop) return may_run_out;
            x = x << 16 | (uint32_t{w[2 * pos]} | uint32_t{w[2 * pos + 1]} << 8);
            ++pos;
            return true;
        };
        uint32_t x = stream.lane_state[lane];
        const bool lag2 = stream.tables.class_lag == 2;
        uint32_t prev_class = 0, prev2_class = 0, zeros = 0;  // of the codes one and two back
        AnsCursor cur = coded.cursor();
        cur.seek(begin);
        bool ok = true;
        for (uint64_t i = begin; ok && i < end; ++i, cur.next()) {
            // With strips the window above was decoded earlier in this lane (ans_above_class).
            const uint64_t at = strip ? cur.raster() : i;
            const uint32_t nonzero = strip && cur.y >= 1 && i >= begin + strip + kAnsAboveReach
                                         ? ans_above_nonzero(codes.data(), cur, radius)
                                         : 0u;
            const uint32_t above = strip ? ans_above_class(i, begin, cur.y, strip, nonzero) : 0u;
            const uint32_t ctx = ans_context(cur.level(), above,
                                             ans_context_class(i - begin, zeros, lag2 ? prev2_class : prev_class),
                                             aboves);
            const uint32_t slot = x & (kAnsScale - 1);
            const uint32_t s = ans_decode_symbol(table, ctx, slot);
            if (s == 0xFF) {  // a context without a table
                ok = false;
                break;
            }
            const uint32_t e = entry[size_t{ctx} * kAnsAlphabet + s];
            x = ans_decode_advance(x, AnsTables::freq(e), AnsTables::cum(e), kAnsScaleBits);
            ok = refill(x);
            uint32_t extra = 0;
            if (const uint32_t k = ans_extra_bits(s); ok && k) {
                extra = x & ((1u << k) - 1u);
                x >>= k;
                ok = refill(x);
            }
            const uint32_t code = ans_code_of(s, extra, radius);
            ok = ok && code != kAnsBadCode;
            codes[at] = static_cast<uint16_t>(ok ? code : 0);
            prev2_class = prev_class;
            prev_class = ans_class_of_symbol(s);
            zeros = s == kAnsZeroSymbol ? std::min(zeros + 1, kAnsLookBack) : 0;
        }
        bad[lane] = !(ok && x == stream.start_state && pos == stop);
    }
    for (uint64_t lane = 0; lane < lanes; ++lane)
        GSZ_CHECK(!bad[lane], kCorrupt, "ans_stream: lane %llu does not decode", static_cast<unsigned long long>(lane));
}

}  // namespace gsz::encode
