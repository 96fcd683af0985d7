#!/usr/bin/env bash
# Builds gsz and compresses the bundled real field (SPERR wmag 91^3, f32) at
# three relative bounds with the lorenzo pipeline and once with the fast one,
# verifying every value and printing ratio, max error, PSNR and throughput.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target gsz >/dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for eb in 1e-2 1e-3 1e-4; do
    ./build/gsz compress -i data/sperr_wmag_91x91x91.f32 -t f32 -l 91x91x91 -m rel -e "$eb" -o "$out/wmag.gsz" \
        --verify --force
done
./build/gsz decompress -i "$out/wmag.gsz" -o "$out/wmag.f32"
./build/gsz info -i "$out/wmag.gsz"
# The fast pipeline (SZx-style block coding): lower ratio, several times the speed.
./build/gsz compress -i data/sperr_wmag_91x91x91.f32 -t f32 -l 91x91x91 -m rel -e 1e-3 -p fast -o "$out/wmag_fast.gsz" \
    --verify --force
