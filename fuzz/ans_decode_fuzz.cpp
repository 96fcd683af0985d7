// libFuzzer target for the rANS ("ans" lossless stage) readers and decoder.
// Input: u16 tables bytes, u16 lanes bytes, u8 levels (1..8), u8 radius
// choice (bits 0-1), lanes layout (bit 2: fixed, as format versions 3-6;
// else bit 4: packed with lanes from state 2^16, as versions 7-10; else
// packed with lanes from state 1), tables layout (bit 3: without the class
// lag and table references, as versions 3-7; else bit 5: without the strip
// width, as versions 8-11; else with it) and shape (bit 6: rows of 32, 64
// or 128 codes by levels' byte / 8, the code count rounded to whole rows of
// at least two, where strips may fit; else a small first dim),
// u32 code count (capped), then the ans_tables section, the ans_lanes section
// and the stream (the rest).
// Invariant beyond "no crash": a stream that decodes is canonical (rANS is a
// bijection on normalized states), so re-encoding the codes with the same
// tables and lane length must give back exactly the same states and words.
#include "encode/ans.hpp"

#include <algorithm>
#include <cstring>

namespace {

constexpr uint64_t kMaxCodes = uint64_t{1} << 18;

uint16_t read_u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace gsz::encode;
    constexpr size_t kHead = 10;
    if (size < kHead) return 0;
    const size_t table_bytes = read_u16(data), lane_bytes = read_u16(data + 2);
    const uint32_t levels = 1 + data[4] % kAnsMaxLevels;
    const uint32_t radii[4] = {1, 64, 512, 32768};
    const uint32_t radius = radii[data[5] % 4];
    const AnsLanesLayout layout = data[5] & 4    ? AnsLanesLayout::fixed
                                  : data[5] & 16 ? AnsLanesLayout::packed
                                                 : AnsLanesLayout::packed_from_one;
    const AnsTablesLayout tables_layout = data[5] & 8    ? AnsTablesLayout::plain
                                          : data[5] & 32 ? AnsTablesLayout::lagged
                                                         : AnsTablesLayout::striped;
    uint32_t count = 0;
    std::memcpy(&count, data + 6, 4);
    uint64_t n = 1 + count % kMaxCodes;
    AnsContextShape shape;
    shape.levels = levels;
    if (data[5] & 64) {  // rows of 32, 64 or 128: strips may fit
        shape.dims[0] = uint64_t{32} << (data[4] / 8 % 3);
        shape.dims[1] = std::max<uint64_t>(2, n / shape.dims[0]);
        n = shape.dims[0] * shape.dims[1];
    } else {
        shape.dims[0] = 1 + data[4] / 8;  // a small first dim, so the levels vary along the codes
        shape.dims[1] = n / shape.dims[0] + 1;
    }
    if (size - kHead < table_bytes + lane_bytes) return 0;
    const std::span<const uint8_t> tables(data + kHead, table_bytes);
    const std::span<const uint8_t> lanes(data + kHead + table_bytes, lane_bytes);
    const std::span<const uint8_t> stream(data + kHead + table_bytes + lane_bytes,
                                          size - kHead - table_bytes - lane_bytes);
    try {
        const AnsStreamView view = ans_stream_read(tables, lanes, stream, n, shape, layout, tables_layout);
        std::vector<uint16_t> codes(n);
        ans_decode_cpu(view, radius, shape, codes, 1);
        const AnsStream again = ans_encode_cpu(view.tables, codes, radius, shape, view.lane_symbols, 1, layout);
        if (again.lane_state != view.lane_state || again.words.size() * 2 != view.words.size() ||
            (!again.words.empty() && std::memcmp(again.words.data(), view.words.data(), view.words.size()) != 0))
            __builtin_trap();
    } catch (const gsz::Error&) {
    }
    return 0;
}
