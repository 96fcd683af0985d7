// GPU tests skip themselves, visibly and with the reason, on a machine
// without a usable GPU (CTest reports them as skipped, never passed).
#pragma once

#include "pipeline/bench.hpp"

#include <gtest/gtest.h>

#include <string>

#define REQUIRE_GPU()                                                                  \
    do {                                                                               \
        std::string why;                                                               \
        if (!gsz::pipeline::cuda_backend_available(&why))                              \
            GTEST_SKIP() << "no usable GPU (" << why << "): CUDA backend not tested";  \
    } while (0)
