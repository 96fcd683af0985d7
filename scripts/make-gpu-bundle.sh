#!/usr/bin/env bash
# Packs what a GPU machine without Debian's -dev packages needs to build gsz
# (headers of CLI11, nlohmann-json, GoogleTest, zstd and xxHash, their static
# libraries and CMake package files) into .gpu-deps/, and the etopo5 field into
# .gpu-data/ (both git-ignored).  Carry them to that machine with the
# repository; scripts/gpu-check uses them when present.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
lib=/usr/lib/x86_64-linux-gnu
rm -rf .gpu-deps
mkdir -p .gpu-deps/include .gpu-deps/lib/x86_64-linux-gnu/cmake .gpu-deps/share/cmake
cp -r /usr/include/{CLI,nlohmann,gtest,gmock} /usr/include/{xxhash.h,xxh3.h,zstd.h,zstd_errors.h,zdict.h} .gpu-deps/include/
cp $lib/{libzstd.a,libxxhash.a,libgtest.a,libgtest_main.a,libgmock.a,libgmock_main.a} .gpu-deps/lib/x86_64-linux-gnu/
cp -r $lib/cmake/GTest .gpu-deps/lib/x86_64-linux-gnu/cmake/
cp -r /usr/share/cmake/{CLI11,nlohmann_json} .gpu-deps/share/cmake/
mkdir -p .gpu-data
data=${GSZ_DATA_DIR:-../shared/data}
[ -f "$data/etopo5_relief_2161x4320.f32" ] && cp "$data/etopo5_relief_2161x4320.f32" .gpu-data/
du -sh .gpu-deps .gpu-data
