// Checksum repair for the fuzz targets: mutated bytes almost never pass the
// archive's checksums, which would hide every later check from the fuzzer, so
// the targets also try each input with its checksums rewritten (zstd's
// fuzzers skip checksums for the same reason).  Lenient on purpose: it finds
// where the checksums sit in whatever bytes it gets and rewrites only those.
#pragma once

#include "format/archive.hpp"

#include <cstring>
#include <vector>

namespace gsz::fuzz {

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

// Fixed container (versions 1..7): rewrites the section checksums of
// in-bounds entries, then the header checksum, leaving every other byte as
// the fuzzer made it.
inline void repair_fixed(std::vector<uint8_t>& a) {
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

// Compact container (version >= 8): walks the header as leniently as it
// can (any rank byte, any varint) to find where the two checksums sit, then
// rewrites the payloads' checksum and the header's.
inline void repair_compact(std::vector<uint8_t>& a) {
    size_t pos = kCompactPrefixBytes;
    if (a.size() < pos) return;
    if (a[8] & kHeaderFlagComponents) ++pos;
    auto skip_varint = [&] {
        for (int i = 0; i < 10 && pos < a.size(); ++i)
            if (!(a[pos++] & 0x80)) return true;
        return false;
    };
    const unsigned rank = a[5] >= 1 && a[5] <= 4 ? a[5] : 1;
    for (unsigned i = 0; i < rank; ++i)
        if (!skip_varint()) return;
    pos += 32;
    if (pos >= a.size()) return;
    const unsigned n = a[pos++];
    for (unsigned i = 0; i < n; ++i) {
        ++pos;
        if (pos >= a.size() || !skip_varint()) return;
    }
    if (a.size() < pos + 16) return;
    poke<uint64_t>(a, pos, checksum64({a.data() + pos + 16, a.size() - pos - 16}));
    poke<uint64_t>(a, pos + 8, checksum64({a.data(), pos + 8}));
}

inline void repair_checksums(std::vector<uint8_t>& a) {
    if (a.size() < 4) return;
    if (a[3] >= kFirstCompactVersion)
        repair_compact(a);
    else
        repair_fixed(a);
}

}  // namespace gsz::fuzz
