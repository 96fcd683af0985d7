// GSZ_HD marks per-element arithmetic that is compiled for both the host and
// the device, so the CPU and CUDA backends round identically (built with
// -ffp-contract=off on the host and --fmad=false on the device).
#pragma once

#if defined(__CUDACC__)
#define GSZ_HD __host__ __device__ __forceinline__
#else
#define GSZ_HD inline
#endif
