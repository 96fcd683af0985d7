// libFuzzer target for archive_parse.  Any input must either be rejected with
// gsz::Error or parse into something that archive_write turns back into the
// very same bytes: the format has exactly one encoding of each archive, so a
// mismatch means the parser accepted something the spec does not allow.
//
// Mutated bytes almost never pass the checksums, which would hide every later
// check from the fuzzer; so each input is also tried with its checksums
// repaired (zstd's fuzzers skip checksums for the same reason).
#include "format/archive.hpp"
#include "runtime/status.hpp"

#include <cstring>
#include <vector>

namespace {

using namespace gsz::format;

template <class T>
T peek(const std::vector<uint8_t>& a, size_t offset) {
    T value;
    std::memcpy(&value, a.data() + offset, sizeof(T));
    return value;
}

template <class T>
void poke(std::vector<uint8_t>& a, size_t offset, T value) {
    std::memcpy(a.data() + offset, &value, sizeof(T));
}

// Rewrites the section checksums of in-bounds entries, then the header
// checksum, leaving every other byte as the fuzzer made it.
void repair_checksums(std::vector<uint8_t>& a) {
    if (a.size() < kHeaderBytes) return;
    const uint32_t n = peek<uint32_t>(a, 72);
    if (n > kMaxSections || a.size() - kHeaderBytes < size_t{n} * kSectionEntryBytes) return;
    for (uint32_t i = 0; i < n; ++i) {
        const size_t e = kHeaderBytes + size_t{i} * kSectionEntryBytes;
        const uint64_t offset = peek<uint64_t>(a, e + 8);
        const uint64_t length = peek<uint64_t>(a, e + 16);
        if (offset <= a.size() && length <= a.size() - offset)
            poke<uint64_t>(a, e + 24, checksum64({a.data() + offset, static_cast<size_t>(length)}));
    }
    std::vector<uint8_t> covered(a.begin(), a.begin() + 120);
    covered.insert(covered.end(), a.begin() + kHeaderBytes, a.begin() + kHeaderBytes + size_t{n} * kSectionEntryBytes);
    poke<uint64_t>(a, 120, checksum64(covered));
}

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
    repair_checksums(repaired);
    check_one(repaired);
    return 0;
}
