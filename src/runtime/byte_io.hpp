// Little-endian byte serialization with a checked reader.
// ByteReader never reads past its end: every read checks the remaining length
// first and fails with GSZ_STATUS_CORRUPT, naming what it was reading.
#pragma once

#include "runtime/status.hpp"

#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>
#include <vector>

namespace gsz {

static_assert(std::endian::native == std::endian::little,
              "gsz archives are little-endian; big-endian hosts need byte swaps here");

class ByteWriter {
public:
    template <class T>
    void put(T value) {
        static_assert(std::is_trivially_copyable_v<T>);
        const auto* p = reinterpret_cast<const uint8_t*>(&value);
        bytes_.insert(bytes_.end(), p, p + sizeof(T));
    }
    void put_bytes(std::span<const uint8_t> data) { bytes_.insert(bytes_.end(), data.begin(), data.end()); }
    template <class T>
    void put_array(std::span<const T> values) {
        static_assert(std::is_trivially_copyable_v<T>);
        put_bytes({reinterpret_cast<const uint8_t*>(values.data()), values.size_bytes()});
    }
    size_t size() const { return bytes_.size(); }
    std::vector<uint8_t>& bytes() { return bytes_; }
    std::vector<uint8_t> take() { return std::move(bytes_); }

private:
    std::vector<uint8_t> bytes_;
};

class ByteReader {
public:
    explicit ByteReader(std::span<const uint8_t> data, const char* what = "archive")
        : data_(data), what_(what) {}

    template <class T>
    T get(const char* field) {
        static_assert(std::is_trivially_copyable_v<T>);
        require(sizeof(T), field);
        T value;
        std::memcpy(&value, data_.data() + pos_, sizeof(T));
        pos_ += sizeof(T);
        return value;
    }
    // A view of the next `count` bytes.
    std::span<const uint8_t> get_bytes(uint64_t count, const char* field) {
        require(count, field);
        auto view = data_.subspan(pos_, static_cast<size_t>(count));
        pos_ += static_cast<size_t>(count);
        return view;
    }
    template <class T>
    std::vector<T> get_array(uint64_t count, const char* field) {
        GSZ_CHECK(count <= remaining() / sizeof(T), GSZ_STATUS_CORRUPT,
                  "%s: %s needs %llu x %zu bytes but only %zu remain", what_, field,
                  static_cast<unsigned long long>(count), sizeof(T), remaining());
        std::vector<T> out(static_cast<size_t>(count));
        if (count) std::memcpy(out.data(), data_.data() + pos_, static_cast<size_t>(count) * sizeof(T));
        pos_ += static_cast<size_t>(count) * sizeof(T);
        return out;
    }
    size_t remaining() const { return data_.size() - pos_; }
    size_t position() const { return pos_; }
    // Readers must consume their whole section: trailing bytes mean corruption.
    void expect_end() const {
        GSZ_CHECK(remaining() == 0, GSZ_STATUS_CORRUPT, "%s: %zu unexpected trailing bytes", what_,
                  remaining());
    }

private:
    void require(uint64_t n, const char* field) const {
        GSZ_CHECK(n <= remaining(), GSZ_STATUS_CORRUPT, "%s: truncated while reading %s (%llu bytes needed, %zu left)",
                  what_, field, static_cast<unsigned long long>(n), remaining());
    }
    std::span<const uint8_t> data_;
    size_t pos_ = 0;
    const char* what_;
};

}  // namespace gsz
