#!/usr/bin/env bash
# Builds gsz and runs every test CI runs:
#   1. Release build (CUDA compiled too when nvcc is present) + the whole CTest suite
#   2. AddressSanitizer + UBSan build running the unit, edge-case and hostile-archive tests
#   3. libFuzzer targets for the archive reader and decoders (60 s on the full decoder)
# GPU tests need a GPU; on a machine without one they are reported as skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# gsz assess --report renders with matplotlib; without it the report test says it is skipped.
python3 -c "import matplotlib, numpy" 2>/dev/null || timeout 300 python3 -m pip install -q matplotlib numpy \
    >/dev/null 2>&1 || echo "gsz: matplotlib could not be installed: the --report test will be skipped"
jobs=$(nproc)
fuzz_seconds=${GSZ_FUZZ_SECONDS:-60}

echo "== 1/3 release build and tests"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$jobs"
(cd build && ctest -j"$jobs" --output-on-failure)

echo "== 2/3 AddressSanitizer + UBSan"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGSZ_ENABLE_CUDA=OFF \
    -DGSZ_SANITIZE=address,undefined -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" >/dev/null
cmake --build build-asan -j"$jobs" --target gsz_unit_tests gsz_edge_tests gsz_hostile_tests
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for t in gsz_unit_tests gsz_edge_tests gsz_hostile_tests; do
    ./build-asan/tests/$t --gtest_brief=1
done
# The HDF5 filter plugin under the sanitizers too, loaded by HDF5 into the test (h5repack, an
# uninstrumented program, cannot load an instrumented plugin: that test runs in step 1 only).
asan_targets=$(cmake --build build-asan --target help)  # (not piped into grep -q: pipefail and SIGPIPE)
if grep -q gsz_hdf5_tests <<<"$asan_targets"; then
    cmake --build build-asan -j"$jobs" --target gsz_hdf5_tests
    ./build-asan/tests/gsz_hdf5_tests --gtest_brief=1 --gtest_filter=-*H5repack*
else
    echo "gsz: HDF5 not found: the filter plugin's sanitizer run is skipped"
fi

echo "== 3/3 libFuzzer (clang)"
cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DGSZ_ENABLE_CUDA=OFF -DGSZ_BUILD_TESTS=OFF -DGSZ_BUILD_FUZZ=ON -DGSZ_SANITIZE=address,undefined \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" >/dev/null
cmake --build build-fuzz -j"$jobs" --target decompress_fuzz archive_parse_fuzz huffman_decode_fuzz fast_decode_fuzz ans_decode_fuzz fill_mask_fuzz
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
for f in tests/golden/v*/*.gsz; do   # every version the reader supports (same names in each)
    cp "$f" "$corpus/$(basename "$(dirname "$f")")_$(basename "$f")"
done
./build-fuzz/fuzz/decompress_fuzz -max_total_time="$fuzz_seconds" -rss_limit_mb=2048 -print_final_stats=1 "$corpus" 2>&1 | tail -n 3
./build-fuzz/fuzz/archive_parse_fuzz -max_total_time=20 -rss_limit_mb=2048 "$corpus" 2>&1 | tail -n 1
./build-fuzz/fuzz/huffman_decode_fuzz -max_total_time=20 -rss_limit_mb=2048 2>&1 | tail -n 1
./build-fuzz/fuzz/fast_decode_fuzz -max_total_time=20 -rss_limit_mb=2048 2>&1 | tail -n 1
./build-fuzz/fuzz/fill_mask_fuzz -max_total_time=20 -rss_limit_mb=2048 2>&1 | tail -n 1
ans_corpus="$corpus/ans"   # seeded with the rANS sections of the golden lorenzo archives
python3 fuzz/ans_seeds.py "$ans_corpus" tests/golden/v*/*.gsz
./build-fuzz/fuzz/ans_decode_fuzz -max_total_time=20 -rss_limit_mb=2048 "$ans_corpus" 2>&1 | tail -n 1
echo "gsz: all tests passed"
