#!/usr/bin/env bash
# The column encoders counting the code stage's histograms (GSZ_LORENZO_FUSED_COUNTS=1, session 55): on the GPU
# machine, with .gpu-deps and .gpu-data from scripts/make-gpu-bundle.sh (fields in .gpu-data/fields optional):
# build, the CUDA tests, memcheck and racecheck, lorenzo CLI cases CPU = CUDA with it on, A/B benchmarks, ncu.
# Output files go to $OUT.
set -uo pipefail
export PATH="$PATH:/usr/local/cuda/bin"
deps=$PWD/.gpu-deps
export CPATH=$deps/include
t0=$(date +%s)
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$deps >$OUT/configure.log 2>&1 || { tail -30 $OUT/configure.log; exit 1; }
cmake --build build-gpu -j16 --target gsz gsz_cuda_tests >$OUT/build.log 2>&1 || { grep -B2 -A12 "error" $OUT/build.log | head -80; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
nvidia-smi --query-gpu=name --format=csv,noheader
g=build-gpu/gsz
build-gpu/tests/gsz_cuda_tests --gtest_filter='CudaBackend.LorenzoKernelsMatchCpu:CudaBackend.RealFieldsByteIdentical:CudaBackend.EdgeCasesByteIdentical:CudaBackend.AnsByteIdentical:CudaBackend.RunsByteIdentical:CudaBackend.DevicePointerApi:CudaBackend.AutoSameOnBothBackendsAndFromDevicePointers:CudaBackend.GoldenArchivesOfEveryVersionDecodeAsOnTheCpu' 2>&1 | tail -25
echo "tests $(( $(date +%s) - t0 )) s"
compute-sanitizer --tool memcheck --error-exitcode 1 build-gpu/tests/gsz_cuda_tests --gtest_filter='CudaBackend.LorenzoKernelsMatchCpu' --gtest_brief=1 2>&1 | tail -4
GSZ_LORENZO_FUSED_COUNTS=1 compute-sanitizer --tool racecheck --error-exitcode 1 $g compress --device cuda -i data/sperr_wmag_91x91x91.f32 -t f32 -l 91x91x91 -m rel -e 1e-3 -p lorenzo -o /tmp/r.gsz --force 2>&1 | tail -3
echo "sanitizers $(( $(date +%s) - t0 )) s"
# CLI cases: CPU = CUDA archives, lorenzo default stage, every shared field carried
n=0; bad=0
for f in .gpu-data/fields/*.f32 .gpu-data/fields/*.f64 .gpu-data/etopo5_relief_2161x4320.f32 data/sperr_wmag_91x91x91.f32; do
  [ -f "$f" ] || continue
  name=$(basename "$f"); type=${name##*.}; stem=${name%.*}
  dims=$(echo "${stem##*_}" | tr x '\n' | tac | paste -sd x)
  for b in rel:1e-2 rel:1e-3 rel:1e-4 abs:1e-2; do
    m=${b%%:*}; e=${b#*:}
    $g compress --device cpu -i $f -t $type -l $dims -m $m -e $e -p lorenzo -o /tmp/a.gsz --force >/dev/null 2>&1
    GSZ_LORENZO_FUSED_COUNTS=1 $g compress --device cuda -i $f -t $type -l $dims -m $m -e $e -p lorenzo -o /tmp/b.gsz --force >/dev/null 2>&1
    if cmp -s /tmp/a.gsz /tmp/b.gsz; then n=$((n+1)); else bad=$((bad+1)); echo "DIFFER: $name $b"; fi
  done
done
echo "CLI lorenzo cases CPU = CUDA: $n, differ: $bad"
E=.gpu-data/etopo5_relief_2161x4320.f32
W=data/sperr_wmag_91x91x91.f32
etopo=(-i $E -t f32 -l 4320x2161 --tile 4x2)
wmag=(-i $W -t f32 -l 91x91x91 --tile 5x5x5)
b() { $g bench "$@" --device cuda --repeat 10 --json 2>/dev/null | python3 -c 'import json,sys; j=json.load(sys.stdin); print(f"{j[\"pipeline\"]:8s} {j.get(\"lossless\",\"\"):6s} {j[\"error_bound\"]:g} ratio {j[\"ratio\"]:.3f} c {j[\"compress_gbps\"]:.1f} d {j[\"decompress_gbps\"]:.1f} ce2e {j[\"compress_e2e_gbps\"]:.1f}")'; }
for round in 1 2; do
for eb in 1e-2 1e-3 1e-4; do
  for f in etopo wmag; do
    declare -n arr=$f
    echo "$f rel $eb fused:    $(GSZ_LORENZO_FUSED_COUNTS=1 b "${arr[@]}" -m rel -e $eb -p lorenzo)"
    echo "$f rel $eb separate: $(b "${arr[@]}" -m rel -e $eb -p lorenzo)"
  done
done
done 2>&1 | tee $OUT/bench.txt
echo "bench $(( $(date +%s) - t0 )) s"
echo "== ncu fused lorenzo etopoT rel 1e-3"
GSZ_LORENZO_FUSED_COUNTS=1 ncu --metrics gpu__time_duration.sum,sm__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__grid_size --csv $g bench "${etopo[@]}" -m rel -e 1e-3 -p lorenzo --device cuda --repeat 1 --warmup 0 2>/dev/null > $OUT/ncu_fused.csv
GSZ_LORENZO_FUSED_COUNTS=1 ncu --metrics gpu__time_duration.sum,sm__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__grid_size --csv $g bench "${wmag[@]}" -m rel -e 1e-3 -p lorenzo --device cuda --repeat 1 --warmup 0 2>/dev/null > $OUT/ncu_fused_wmag.csv
echo "== trace"
GSZ_LORENZO_FUSED_COUNTS=1 GSZ_TRACE=events $g bench "${etopo[@]}" -m rel -e 1e-3 -p lorenzo --device cuda --repeat 2 --json 2>&1 >/dev/null | grep "lorenzo compress\|code stage" | tail -14
echo "total $(( $(date +%s) - t0 )) s"
