// Internal error handling: a failure is one line, in zstd's manner.
//   GSZ_CHECK(cond, GSZ_STATUS_CORRUPT, "section %u overruns", k);
// throws gsz::Error, which the C API layer turns into a gsz_status plus the
// context's detail message.  Nothing here prints or exits.
#pragma once

#include <gsz/gsz.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

namespace gsz {

class Error : public std::runtime_error {
public:
    Error(gsz_status status, const std::string& message)
        : std::runtime_error(message), status_(status) {}
    gsz_status status() const noexcept { return status_; }

private:
    gsz_status status_;
};

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
inline std::string format_message(const char* fmt, ...) {
    char buf[512];
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, args);
    va_end(args);
    return buf;
}

// The int a C caller stored in an enum field.  C allows any int there, while
// C++ leaves loading a value outside the enumerators' range undefined, so
// validators read the bits and only then trust the enum.
template <class Enum>
int enum_bits(const Enum& e) {
    static_assert(sizeof(Enum) == sizeof(int), "C enums are int-sized");
    int v;
    std::memcpy(&v, &e, sizeof v);
    return v;
}

[[noreturn]] inline void fail(gsz_status status, const std::string& message) {
    throw Error(status, message);
}

}  // namespace gsz

#define GSZ_CHECK(cond, status, ...)                                            \
    do {                                                                        \
        if (!(cond)) ::gsz::fail((status), ::gsz::format_message(__VA_ARGS__)); \
    } while (0)
