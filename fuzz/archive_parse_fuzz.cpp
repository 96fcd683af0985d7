// libFuzzer target for archive_parse.  Any input must either be rejected with
// gsz::Error or parse into something that archive_write turns back into the
// very same bytes: the format has exactly one encoding of each archive, so a
// mismatch means the parser accepted something the spec does not allow.
//
// Each input is also tried with its checksums repaired (archive_repair.hpp).
#include "archive_repair.hpp"
#include "format/archive.hpp"
#include "runtime/status.hpp"

#include <cstring>
#include <vector>

namespace {

using namespace gsz::format;

void check_one(std::span<const uint8_t> input) {
    Archive archive;
    try {
        archive = archive_parse(input);
    } catch (const gsz::Error&) {
        return;
    }
    std::vector<SectionData> sections;
    sections.reserve(archive.sections.size());
    for (const auto& s : archive.sections) sections.push_back({s.kind, s.bytes});
    // archive_write throwing on a parsed archive is itself a finding, so no catch.
    const std::vector<uint8_t> again = archive_write(archive.header, sections);
    if (again.size() != input.size() || (!input.empty() && std::memcmp(again.data(), input.data(), input.size()) != 0))
        __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    check_one({data, size});
    std::vector<uint8_t> repaired(data, data + size);
    gsz::fuzz::repair_checksums(repaired);
    check_one(repaired);
    return 0;
}
