#!/usr/bin/env bash
# The command-line tool as a user drives it: help, round trip, refusals,
# exit codes, no partial outputs.  Usage: test_cli.sh path/to/gsz repo_dir
set -u
GSZ=$1
REPO=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0; passes=0
ok()   { passes=$((passes + 1)); }
bad()  { echo "FAIL: $*"; fails=$((fails + 1)); }
expect_exit() {  # expected_code description cmd...
    local want=$1 what=$2; shift 2
    "$@" >"$T/out" 2>"$T/err"; local got=$?
    if [ "$got" -eq "$want" ]; then ok; else bad "$what: exit $got, wanted $want; stderr: $(cat "$T/err")"; fi
}

SAMPLE=$REPO/data/sperr_wmag_91x91x91.f32

# help explains the dims order
"$GSZ" --help >"$T/help" 2>&1 || true
grep -q "fastest-varying first" "$T/help" && ok || bad "--help does not explain the dims order"
"$GSZ" compress --help >"$T/help" 2>&1 || true
for flag in -i -o -t -l -m -e -p --device --json --force --verify --radius --interp-alpha --interp-beta \
    --interp-spline --interp-order --interp-anchors --interp-anchor-stride --progress --ans-strips; do
    grep -q -- "$flag" "$T/help" && ok || bad "compress --help lacks $flag"
done
expect_exit 0 "--version" "$GSZ" --version
expect_exit 2 "no subcommand" "$GSZ"
expect_exit 2 "unknown flag" "$GSZ" compress --bogus

# round trip with --verify and --json
expect_exit 0 "compress" "$GSZ" compress -i "$SAMPLE" -o "$T/a.gsz" -t f32 -l 91x91x91 -m rel -e 1e-3 --verify --json
python3 -c "import json,sys; j=json.load(open('$T/out')); assert j['ratio']>5 and j['bound_violations']==0 and j['psnr']>60, j" \
    && ok || bad "compress --json: $(cat "$T/out")"
expect_exit 0 "decompress" "$GSZ" decompress -i "$T/a.gsz" -o "$T/a.out" --json
python3 -c "import json; j=json.load(open('$T/out')); assert j['num_elements']==91**3" && ok || bad "decompress --json"
[ "$(stat -c %s "$T/a.out")" -eq 3014284 ] && ok || bad "decompressed size"
python3 - "$SAMPLE" "$T/a.out" "$T/a.gsz" <<'PY' && ok || bad "decompressed values outside the bound"
import struct, sys, json, subprocess
a = open(sys.argv[1], 'rb').read(); b = open(sys.argv[2], 'rb').read()
n = len(a) // 4
x = struct.unpack(f'<{n}f', a); y = struct.unpack(f'<{n}f', b)
eb = 1e-3 * (max(x) - min(x))
assert max(abs(p - q) for p, q in zip(x, y)) <= eb
PY
expect_exit 0 "info" "$GSZ" info -i "$T/a.gsz"
grep -q "lorenzo" "$T/out" && ok || bad "info does not name the pipeline"
grep -q "^sections  *header, section table" "$T/out" && grep -q "pipeline_params" "$T/out" && ok \
    || bad "info text lacks the sections: $(cat "$T/out")"
expect_exit 0 "info --json" "$GSZ" info -i "$T/a.gsz" --json
python3 -c "import json; j=json.load(open('$T/out')); assert j['dims']==[91,91,91] and j['dtype']=='f32'" && ok || bad "info --json"
# where the bytes go: the header and the sections add up to the archive's size
python3 - "$T/out" "$T/a.gsz" <<'PY' && ok || bad "info --json sections: $(cat "$T/out")"
import json, os, sys
j = json.load(open(sys.argv[1]))
names = [s['name'] for s in j['sections']]
assert names[0] == 'pipeline_params' and 'unknown' not in names, names
assert j['header_bytes'] + sum(s['bytes'] for s in j['sections']) == os.path.getsize(sys.argv[2]) == j['archive_bytes']
PY

# -p auto: the smaller of lorenzo's and interp's archives (interp on the smooth sample at 1e-2), named by
# the pipeline it kept; bench refuses it
expect_exit 0 "compress -p auto" "$GSZ" compress -i "$SAMPLE" -o "$T/auto.gsz" -t f32 -l 91x91x91 -m rel -e 1e-2 \
    -p auto --verify --json
python3 -c "import json; j=json.load(open('$T/out')); assert j['pipeline']=='interp' and j['bound_violations']==0, j" \
    && ok || bad "compress -p auto --json: $(cat "$T/out")"
expect_exit 0 "compress -p interp" "$GSZ" compress -i "$SAMPLE" -o "$T/interp.gsz" -t f32 -l 91x91x91 -m rel -e 1e-2 \
    -p interp
cmp -s "$T/auto.gsz" "$T/interp.gsz" && ok || bad "-p auto did not keep interp's archive"
expect_exit 1 "bench -p auto" "$GSZ" bench -i "$SAMPLE" -t f32 -l 91x91x91 -m rel -e 1e-2 -p auto --device cpu
grep -q "bench lorenzo and interp" "$T/err" && ok || bad "bench -p auto: $(cat "$T/err")"

# the fast pipeline: round trip, info names it and its blocks, --block checked
expect_exit 0 "compress -p fast" "$GSZ" compress -i "$SAMPLE" -o "$T/f.gsz" -t f32 -l 91x91x91 -m rel -e 1e-3 \
    -p fast --block 256 --verify --json
python3 -c "import json; j=json.load(open('$T/out')); assert j['pipeline']=='fast' and j['bound_violations']==0 and j['ratio']>2, j" \
    && ok || bad "compress -p fast --json: $(cat "$T/out")"
expect_exit 0 "info fast" "$GSZ" info -i "$T/f.gsz" --json
python3 -c "import json; j=json.load(open('$T/out')); assert j['pipeline']=='fast' and j['block_size']==256 and j['num_blocks']==(91**3+255)//256, j" \
    && ok || bad "info --json for fast: $(cat "$T/out")"
expect_exit 0 "info fast text" "$GSZ" info -i "$T/f.gsz"
grep -q "blocks of 256" "$T/out" && ok || bad "info text lacks the fast blocks: $(cat "$T/out")"
expect_exit 0 "decompress fast" "$GSZ" decompress -i "$T/f.gsz" -o "$T/f.out"
expect_exit 1 "bad --block" "$GSZ" compress -i "$SAMPLE" -o "$T/g.gsz" -t f32 -l 91x91x91 -e 1e-3 -p fast --block 100
[ ! -e "$T/g.gsz" ] && ok || bad "bad --block left an output"
expect_exit 1 "unknown pipeline" "$GSZ" compress -i "$SAMPLE" -o "$T/g.gsz" -t f32 -l 91x91x91 -e 1e-3 -p zfp
grep -q "lorenzo, interp, fast" "$T/err" && ok || bad "unknown pipeline message: $(cat "$T/err")"

# the interp pipeline: round trip within the bound, info shows the tuning, overrides honoured, bad ones refused
expect_exit 0 "compress -p interp" "$GSZ" compress -i "$SAMPLE" -o "$T/i.gsz" -t f32 -l 91x91x91 -m rel -e 1e-3 \
    -p interp --verify --json
python3 -c "import json; j=json.load(open('$T/out')); assert j['pipeline']=='interp' and j['bound_violations']==0 and j['nonfinite_mismatches']==0 and j['ratio']>6.32 and j['psnr']>65.05, j" \
    && ok || bad "compress -p interp --json: $(cat "$T/out")"
expect_exit 0 "decompress interp" "$GSZ" decompress -i "$T/i.gsz" -o "$T/i.out" --compare "$SAMPLE" --json
python3 -c "import json; j=json.load(open('$T/out')); c=j['compare']; assert j['pipeline']=='interp' and c['nonfinite_mismatches']==0 and c['max_abs_error']<=j['error_bound_abs'] and c['psnr']>65.05, j" \
    && ok || bad "decompress interp --compare: $(head -c 400 "$T/out")"
python3 - "$SAMPLE" "$T/i.out" <<'PY' && ok || bad "interp: decompressed values outside the bound"
import struct, sys
a = open(sys.argv[1], 'rb').read(); b = open(sys.argv[2], 'rb').read()
n = len(a) // 4
x = struct.unpack(f'<{n}f', a); y = struct.unpack(f'<{n}f', b)
eb = 1e-3 * (max(x) - min(x))
assert len(b) == len(a) and max(abs(p - q) for p, q in zip(x, y)) <= eb
PY
expect_exit 0 "info interp" "$GSZ" info -i "$T/i.gsz"
grep -q "interp" "$T/out" && grep -q "anchors (every 8 points)" "$T/out" && grep -q "interp tuning   alpha 1.5, beta 4, order" "$T/out" \
    && ok || bad "info text lacks the interp lines: $(cat "$T/out")"
expect_exit 0 "info interp --json" "$GSZ" info -i "$T/i.gsz" --json
python3 - "$T/out" <<'PY' && ok || bad "info --json for interp: $(cat "$T/out")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j['pipeline'] == 'interp' and 1 <= j['radius'] <= 32768, j
assert sorted(j['interp_order']) == ['x', 'y', 'z'], j
assert abs(j['interp_alpha'] - 1.5) < 1e-9 and j['interp_beta'] == 4, j
assert j['interp_anchor_stride'] == 8 and j['interp_num_anchors'] == 12 ** 3, j
assert len(j['interp_spline']) == 3 and set(j['interp_spline']) <= {'natural', 'not-a-knot'}, j
assert 'num_outliers' in j, j
PY
expect_exit 0 "compress -p interp with overrides" "$GSZ" compress -i "$SAMPLE" -o "$T/io.gsz" -t f32 -l 91x91x91 \
    -m rel -e 1e-3 -p interp --interp-order xzy --interp-alpha 1.3 --interp-beta 2.5 --interp-spline natural --radius 1000 \
    --verify --json
python3 -c "import json; j=json.load(open('$T/out')); assert j['bound_violations']==0, j" && ok || bad "interp overrides: $(cat "$T/out")"
expect_exit 0 "info interp overrides" "$GSZ" info -i "$T/io.gsz" --json
python3 -c "import json; j=json.load(open('$T/out')); assert j['interp_order']=='xzy' and j['interp_alpha']==1.3 and j['interp_beta']==2.5 and j['interp_spline']==['natural']*3 and j['radius']==1000, j" \
    && ok || bad "info does not show the interp overrides: $(cat "$T/out")"
expect_exit 0 "interp as 1-D" "$GSZ" compress -i "$SAMPLE" -o "$T/i1.gsz" -t f32 -l 753571 -m abs -e 1e-2 -p interp \
    --interp-order x --verify --threads 1
# 1-D: the anchor stride, forced or chosen (format version 9), shown by info; other ranks refuse it
expect_exit 0 "interp 1-D stride 4" "$GSZ" compress -i "$SAMPLE" -o "$T/i4.gsz" -t f32 -l 753571 -m rel -e 1e-3 -p interp \
    --interp-anchor-stride 4 --verify --json
python3 -c "import json; j=json.load(open('$T/out')); assert j['bound_violations']==0, j" && ok || bad "stride 4: $(cat "$T/out")"
expect_exit 0 "info of stride 4" "$GSZ" info -i "$T/i4.gsz" --json
python3 -c "import json; j=json.load(open('$T/out')); assert j['interp_anchor_stride']==4 and j['format_version']==15, j" \
    && ok || bad "info does not show stride 4: $(cat "$T/out")"
# ans in column strips (format version 12): forced on a 2-D view of the sample (64 columns), off, and refused values
head -c $((64 * 11774 * 4)) "$SAMPLE" > "$T/s64.f32"
expect_exit 0 "ans strips on" "$GSZ" compress -i "$T/s64.f32" -o "$T/st.gsz" -t f32 -l 64x11774 -m rel -e 1e-2 -p interp \
    --ans-strips on --verify --json
python3 -c "import json; j=json.load(open('$T/out')); assert j['bound_violations']==0, j" && ok || bad "strips: $(cat "$T/out")"
expect_exit 0 "info of strips" "$GSZ" info -i "$T/st.gsz" --json
python3 -c "import json; j=json.load(open('$T/out')); assert j['lossless']=='ans' and j['ans_strip_width']==64, j" \
    && ok || bad "info does not show the strips: $(cat "$T/out")"
"$GSZ" info -i "$T/st.gsz" | grep -q "row above, in strips of 64 columns" && ok || bad "info text lacks the strips"
expect_exit 0 "ans strips off" "$GSZ" compress -i "$T/s64.f32" -o "$T/so.gsz" -t f32 -l 64x11774 -m rel -e 1e-2 -p interp \
    --ans-strips off --lossless ans
expect_exit 0 "info of strips off" "$GSZ" info -i "$T/so.gsz" --json
python3 -c "import json; j=json.load(open('$T/out')); assert j['ans_strip_width']==0, j" && ok || bad "strips off: $(cat "$T/out")"
expect_exit 1 "--ans-strips bogus" "$GSZ" compress -i "$T/s64.f32" -o "$T/sb.gsz" -t f32 -l 64x11774 -e 1e-2 -p interp \
    --ans-strips maybe
[ ! -e "$T/sb.gsz" ] && ok || bad "a refused --ans-strips left an output"
expect_exit 0 "interp Lorenzo tiles" "$GSZ" compress -i "$SAMPLE" -o "$T/lt.gsz" -t f32 -l 91x91x91 -m rel -e 1e-4 \
    -p interp --interp-tiles each --verify --json
python3 -c "import json; j=json.load(open('$T/out')); assert j['bound_violations']==0, j" && ok || bad "tiles: $(cat "$T/out")"
expect_exit 0 "info of Lorenzo tiles" "$GSZ" info -i "$T/lt.gsz" --json
python3 -c "import json; j=json.load(open('$T/out')); assert j['interp_tiles']==432 and 0<j['interp_lorenzo_tiles']<432, j" \
    && ok || bad "info does not show Lorenzo tiles: $(cat "$T/out")"
# The default (auto): on this smooth field the sample's Lorenzo tiles save too little; every tile spline-coded.
expect_exit 0 "interp tiles by default" "$GSZ" compress -i "$SAMPLE" -o "$T/ld.gsz" -t f32 -l 91x91x91 -m rel -e 1e-4 \
    -p interp --verify --json
expect_exit 0 "info of the default tiles" "$GSZ" info -i "$T/ld.gsz" --json
python3 -c "import json; j=json.load(open('$T/out')); assert j['interp_lorenzo_tiles']==0, j" \
    && ok || bad "the gate let Lorenzo tiles through on wmag: $(cat "$T/out")"
expect_exit 1 "bad --interp-tiles" "$GSZ" compress -i "$SAMPLE" -o "$T/x.gsz" -t f32 -l 91x91x91 -e 1e-3 -p interp \
    --interp-tiles sometimes
expect_exit 0 "info text of stride 4" "$GSZ" info -i "$T/i4.gsz"
grep -q "every 4 points" "$T/out" && ok || bad "info text lacks the stride: $(cat "$T/out")"
expect_exit 0 "decompress stride 4" "$GSZ" decompress -i "$T/i4.gsz" -o "$T/i4.out"
for stride in 0 1 3 1024 x; do
    expect_exit 1 "bad --interp-anchor-stride $stride" "$GSZ" compress -i "$SAMPLE" -o "$T/ib.gsz" -t f32 -l 753571 \
        -e 1e-3 -p interp --interp-anchor-stride "$stride"
    grep -q -- "stride" "$T/err" && ok || bad "bad stride $stride message: $(cat "$T/err")"
    [ ! -e "$T/ib.gsz" ] && ok || bad "bad stride $stride left an output"
done
expect_exit 1 "--interp-anchor-stride on 3-D" "$GSZ" compress -i "$SAMPLE" -o "$T/ib.gsz" -t f32 -l 91x91x91 -e 1e-3 \
    -p interp --interp-anchor-stride 4
grep -q "1-D" "$T/err" && ok || bad "3-D stride message: $(cat "$T/err")"
for order in xx w xy zyxw yzq; do
    expect_exit 1 "bad --interp-order $order" "$GSZ" compress -i "$SAMPLE" -o "$T/ib.gsz" -t f32 -l 91x91x91 -e 1e-3 \
        -p interp --interp-order "$order"
    grep -q -- "interp" "$T/err" && grep -q -- "order" "$T/err" && ok || bad "bad --interp-order $order message: $(cat "$T/err")"
    [ "$(wc -l <"$T/err")" -eq 1 ] && ok || bad "bad --interp-order $order: message is not one line: $(cat "$T/err")"
    [ ! -e "$T/ib.gsz" ] && ok || bad "bad --interp-order $order left an output"
done
expect_exit 1 "3 letters of --interp-order for 2 dims" "$GSZ" compress -i "$SAMPLE" -o "$T/ib.gsz" -t f32 -l 8281x1x91 \
    -e 1e-3 -p interp --interp-order zyx
grep -q "x, y, z" "$T/err" && ok || bad "2-D --interp-order message: $(cat "$T/err")"
expect_exit 1 "bad --interp-spline" "$GSZ" compress -i "$SAMPLE" -o "$T/ib.gsz" -t f32 -l 91x91x91 -e 1e-3 -p interp \
    --interp-spline cubic
grep -q "not-a-knot" "$T/err" && ok || bad "--interp-spline message: $(cat "$T/err")"
expect_exit 1 "bad --interp-alpha" "$GSZ" compress -i "$SAMPLE" -o "$T/ib.gsz" -t f32 -l 91x91x91 -e 1e-3 -p interp \
    --interp-alpha 0.5
grep -q "alpha" "$T/err" && ok || bad "--interp-alpha message: $(cat "$T/err")"
expect_exit 1 "bad --interp-beta" "$GSZ" compress -i "$SAMPLE" -o "$T/ib.gsz" -t f32 -l 91x91x91 -e 1e-3 -p interp \
    --interp-beta 0.5
grep -q "beta" "$T/err" && ok || bad "--interp-beta message: $(cat "$T/err")"
[ ! -e "$T/ib.gsz" ] && ok || bad "refused interp options left an output"
expect_exit 0 "bench -p interp" "$GSZ" bench -i "$SAMPLE" -t f32 -l 91x91x91 -m rel -e 1e-3 -p interp --device cpu \
    --repeat 1 --warmup 0 --json
python3 -c "import json; j=json.load(open('$T/out')); assert j['bound_violations']==0 and j['ratio']>6, j" \
    && ok || bad "bench -p interp: $(cat "$T/out")"

# assess: the JSON keys users script against, PSNR as compress --verify reports it
expect_exit 0 "compress for assess" "$GSZ" compress -i "$SAMPLE" -o "$T/s.gsz" -t f32 -l 91x91x91 -m rel -e 1e-3 --verify --json --force
cp "$T/out" "$T/verify.json"
expect_exit 0 "decompress for assess" "$GSZ" decompress -i "$T/s.gsz" -o "$T/s.out" --force
expect_exit 0 "assess --json" "$GSZ" assess --orig "$SAMPLE" --dec "$T/s.out" -t f32 -l 91x91x91 --archive "$T/s.gsz" \
    --autocorr-lags 10 --json
python3 - "$T/out" "$T/verify.json" <<'PY' && ok || bad "assess --json: $(head -c 400 "$T/out")"
import json, sys
j = json.load(open(sys.argv[1])); v = json.load(open(sys.argv[2]))
for k in ["max_abs_error", "mse", "rmse", "nrmse", "psnr", "snr", "pearson", "ssim", "error_autocorr", "error_pdf",
          "derivative1", "laplacian", "compression_ratio", "bit_rate"]:
    assert k in j, k
assert len(j["error_autocorr"]) == 10 and len(j["error_pdf"]["mass"]) == 2000
assert abs(j["psnr"] - v["psnr"]) < 1e-9 and abs(j["max_abs_error"] - v["max_abs_error"]) < 1e-12
assert abs(j["compression_ratio"] - v["ratio"]) < 1e-9 and 0.9 < j["ssim"] <= 1
PY
expect_exit 0 "decompress --compare" "$GSZ" decompress -i "$T/s.gsz" -o "$T/s2.out" --compare "$SAMPLE" --json
python3 -c "import json; j=json.load(open('$T/out')); c=j['compare']; assert abs(c['psnr']-json.load(open('$T/verify.json'))['psnr'])<1e-9 and c['max_abs_error']<=j['error_bound_abs'], c" \
    && ok || bad "decompress --compare: $(head -c 300 "$T/out")"
expect_exit 0 "assess text" "$GSZ" assess --orig "$SAMPLE" --dec "$T/s.out" -t f32 -l 91x91x91 --metrics basic
grep -q "PSNR" "$T/out" && ok || bad "assess text lacks PSNR"
expect_exit 1 "assess size mismatch" "$GSZ" assess --orig "$SAMPLE" --dec "$T/s.gsz" -t f32 -l 91x91x91
grep -q "bytes" "$T/err" && ok || bad "assess size mismatch message: $(cat "$T/err")"
expect_exit 1 "assess bad metrics" "$GSZ" assess --orig "$SAMPLE" --dec "$T/s.out" -t f32 -l 91x91x91 --metrics nope

# assess --report: an HTML page with the pictures (needs matplotlib; skipped, visibly, without it)
if python3 -c "import matplotlib, numpy" 2>/dev/null; then
    expect_exit 0 "assess --report" "$GSZ" assess --orig "$SAMPLE" --dec "$T/s.out" -t f32 -l 91x91x91 \
        --archive "$T/s.gsz" --autocorr-lags 10 --report "$T/report"
    for f in index.html original.png decompressed.png error.png error_pdf.png autocorr.png rate_distortion.png; do
        [ -s "$T/report/$f" ] && ok || bad "--report did not write $f"
    done
    grep -q "psnr" "$T/report/index.html" && ok || bad "report page lacks the numbers"
    touch "$T/notadir"
    expect_exit 1 "assess --report onto a file" "$GSZ" assess --orig "$SAMPLE" --dec "$T/s.out" -t f32 -l 91x91x91 \
        --metrics basic --report "$T/notadir"
else
    echo "SKIP: assess --report (python3 has no matplotlib/numpy)"
fi

# refusals: no overwrite without --force, output untouched
cp "$T/a.gsz" "$T/keep.gsz"
expect_exit 1 "overwrite refused" "$GSZ" compress -i "$SAMPLE" -o "$T/a.gsz" -t f32 -l 91x91x91 -m abs -e 0.5
grep -q "exists" "$T/err" && ok || bad "overwrite message: $(cat "$T/err")"
cmp -s "$T/a.gsz" "$T/keep.gsz" && ok || bad "refused overwrite changed the file"
expect_exit 0 "overwrite with --force" "$GSZ" compress -i "$SAMPLE" -o "$T/a.gsz" -t f32 -l 91x91x91 -m abs -e 0.5 --force
expect_exit 1 "decompress onto existing" "$GSZ" decompress -i "$T/a.gsz" -o "$T/a.out"

# progress: phase lines on stderr only (so --json stays parsable), none by default off a terminal
expect_exit 0 "compress --progress on" "$GSZ" compress -i "$SAMPLE" -o "$T/p.gsz" -t f32 -l 91x91x91 -e 1e-3 \
    --verify --json --progress on
python3 -c "import json; json.load(open('$T/out'))" && ok || bad "--progress on broke --json: $(cat "$T/out")"
for phase in "reading $SAMPLE" "verifying" "writing $T/p.gsz"; do
    grep -qF "gsz: $phase" "$T/err" && ok || bad "compress --progress on lacks '$phase': $(cat "$T/err")"
done
# the backend named is the one the machine has
grep -qE "gsz: compressing \(lorenzo, (cpu|cuda)\)" "$T/err" && ok || bad "compress --progress on: $(cat "$T/err")"
expect_exit 0 "decompress --progress on" "$GSZ" decompress -i "$T/p.gsz" -o "$T/p.out" --json --progress on
python3 -c "import json; json.load(open('$T/out'))" && ok || bad "decompress --progress on broke --json"
grep -qE "gsz: decompressing \(lorenzo, (cpu|cuda)\)" "$T/err" && ok || bad "decompress --progress: $(cat "$T/err")"
expect_exit 0 "compress, progress auto off a terminal" "$GSZ" compress -i "$SAMPLE" -o "$T/p.gsz" -t f32 \
    -l 91x91x91 -e 1e-3 --force
[ ! -s "$T/err" ] && ok || bad "progress printed off a terminal by default: $(cat "$T/err")"
expect_exit 1 "bad --progress" "$GSZ" compress -i "$SAMPLE" -o "$T/pb.gsz" -t f32 -l 91x91x91 -e 1e-3 --progress maybe
[ ! -e "$T/pb.gsz" ] && ok || bad "bad --progress left an output"

# bad input: one-line message, exit 1, no output left behind
expect_exit 1 "wrong size" "$GSZ" compress -i "$SAMPLE" -o "$T/w.gsz" -t f32 -l 90x91x91 -e 1e-3
grep -q "needs" "$T/err" && ok || bad "wrong-size message: $(cat "$T/err")"
[ ! -e "$T/w.gsz" ] && ok || bad "partial output left after failure"
expect_exit 1 "bad dims" "$GSZ" compress -i "$SAMPLE" -o "$T/w.gsz" -t f32 -l 91xx91 -e 1e-3
expect_exit 1 "bad type" "$GSZ" compress -i "$SAMPLE" -o "$T/w.gsz" -t f16 -l 91x91x91 -e 1e-3
expect_exit 1 "negative bound" "$GSZ" compress -i "$SAMPLE" -o "$T/w.gsz" -t f32 -l 91x91x91 -e -1
expect_exit 1 "missing input" "$GSZ" compress -i "$T/nope" -o "$T/w.gsz" -t f32 -l 91x91x91 -e 1e-3
head -c 1000 "$T/keep.gsz" >"$T/trunc.gsz"
expect_exit 1 "truncated archive" "$GSZ" decompress -i "$T/trunc.gsz" -o "$T/t.out"
[ "$(wc -l <"$T/err")" -eq 1 ] && ok || bad "failure message is not one line: $(cat "$T/err")"
[ ! -e "$T/t.out" ] && ok || bad "partial output left after a corrupt archive"
expect_exit 1 "not an archive" "$GSZ" info -i "$SAMPLE"
grep -q "not a gsz archive" "$T/err" && ok || bad "garbage message: $(cat "$T/err")"
ls "$T" | grep -q "gsz-tmp" && bad "temporary files left behind" || ok

# lossless and f64
expect_exit 0 "lossless" "$GSZ" compress -i "$SAMPLE" -o "$T/l.gsz" -t f32 -l 91x91x91 -m abs -e 0
expect_exit 0 "lossless back" "$GSZ" decompress -i "$T/l.gsz" -o "$T/l.out"
cmp -s "$SAMPLE" "$T/l.out" && ok || bad "-e 0 is not lossless"
expect_exit 0 "as 1-D" "$GSZ" compress -i "$SAMPLE" -o "$T/d.gsz" -t f32 -l 753571 -m rel -e 1e-4 --verify --threads 1

# bench: timed runs in memory on a mirror-tiled field, checked against the bound
"$GSZ" bench --help >"$T/help" 2>&1 || true
for flag in -i -t -l -m -e --device --repeat --warmup --tile --threads --json; do
    grep -q -- "$flag" "$T/help" && ok || bad "bench --help lacks $flag"
done
expect_exit 0 "bench" "$GSZ" bench -i "$SAMPLE" -t f32 -l 91x91x91 -m rel -e 1e-3 --device cpu --repeat 2 --warmup 1 \
    --tile 2x1x1 --json
python3 - "$T/out" <<'PY' && ok || bad "bench --json: $(cat "$T/out")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j['dims'] == [182, 91, 91] and j['original_bytes'] == 2 * 3014284, j
assert j['ratio'] > 5 and j['psnr'] > 60 and j['bound_violations'] == 0 and 0 < j['max_error_over_eb'] <= 1, j
for k in ('compress_s', 'decompress_s', 'compress_e2e_s', 'decompress_e2e_s'):
    assert len(j[k]) == 2 and all(t > 0 for t in j[k]), (k, j)
for k in ('compress_gbps', 'decompress_gbps', 'compress_e2e_gbps', 'decompress_e2e_gbps'):
    assert j[k] > 0, (k, j)
assert j['device'].startswith('cpu'), j
PY
expect_exit 0 "bench text" "$GSZ" bench -i "$SAMPLE" -t f32 -l 91x91x91 -e 1e-2 --device cpu --repeat 1 --warmup 0
grep -q "ratio" "$T/out" && grep -q "GB/s" "$T/out" && ok || bad "bench text output: $(cat "$T/out")"
expect_exit 1 "bench tile rank" "$GSZ" bench -i "$SAMPLE" -t f32 -l 91x91x91 -e 1e-3 --device cpu --tile 2x2
grep -q "one factor per dim" "$T/err" && ok || bad "bench --tile message: $(cat "$T/err")"
expect_exit 1 "bench repeat 0" "$GSZ" bench -i "$SAMPLE" -t f32 -l 91x91x91 -e 1e-3 --device cpu --repeat 0
expect_exit 2 "bench without -e" "$GSZ" bench -i "$SAMPLE" -t f32 -l 91x91x91
# --device cuda runs on a GPU, or fails with one line naming why
"$GSZ" bench -i "$SAMPLE" -t f32 -l 91x91x91 -e 1e-3 --device cuda --repeat 1 --warmup 0 --json >"$T/out" 2>"$T/err"
case $? in
    0) python3 -c "import json; j=json.load(open('$T/out')); assert j['backend']=='cuda' and j['bound_violations']==0" \
           && ok || bad "bench --device cuda: $(cat "$T/out")" ;;
    1) [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q -- "--device cuda" "$T/err" && ok \
           || bad "bench --device cuda: $(cat "$T/err")" ;;
    *) bad "bench --device cuda: unexpected exit; stderr: $(cat "$T/err")" ;;
esac

# HDF5 / netCDF-4 datasets (--dataset), where gsz is built with HDF5
if "$GSZ" --version 2>&1 | grep -q "HDF5 datasets: yes"; then
    H=$T/h5; mkdir -p "$H"
    # An HDF5 file of the sample: its lossless archive decompressed into a dataset.
    expect_exit 0 "lossless archive" "$GSZ" compress -i "$SAMPLE" -o "$H/l.gsz" -t f32 -l 91x91x91 -e 0
    expect_exit 0 "decompress --dataset" "$GSZ" decompress -i "$H/l.gsz" -o "$H/w.h5" --dataset /fields/wmag
    # The dataset gives the type and dims: the archive is the raw input's, byte for byte.
    expect_exit 0 "compress --dataset" "$GSZ" compress -i "$H/w.h5" --dataset /fields/wmag -e 1e-3 -p interp -o "$H/w.gsz"
    expect_exit 0 "compress raw" "$GSZ" compress -i "$SAMPLE" -t f32 -l 91x91x91 -e 1e-3 -p interp -o "$H/r.gsz"
    cmp -s "$H/w.gsz" "$H/r.gsz" && ok || bad "compress --dataset: archive differs from the raw input's"
    # Decompressed into HDF5 with --compare against the original dataset: the bound holds.
    expect_exit 0 "decompress --dataset --compare" "$GSZ" decompress -i "$H/w.gsz" -o "$H/back.h5" --dataset /fields/wmag \
        --compare "$H/w.h5" --json
    python3 -c "import json; j=json.load(open('$T/out')); assert j['compare']['max_abs_error'] <= j['error_bound_abs'] and j['compare']['psnr'] > 60, j" \
        && ok || bad "decompress --dataset --compare: $(cat "$T/out")"
    expect_exit 0 "decompress raw" "$GSZ" decompress -i "$H/w.gsz" -o "$H/back.raw"
    if command -v h5dump >/dev/null 2>&1; then
        # Another HDF5 reader sees the dims and the same values.
        h5dump -H "$H/back.h5" | grep -q "DATASPACE  SIMPLE { ( 91, 91, 91 )" && ok || bad "h5dump: dims of the written dataset"
        h5dump -b LE -d /fields/wmag -o "$H/back.bin" "$H/back.h5" >/dev/null 2>&1 && cmp -s "$H/back.bin" "$H/back.raw" \
            && ok || bad "h5dump: the written dataset's values differ from the raw output"
    fi
    # Refusals, each with one line naming the problem; nothing written.
    expect_exit 1 "--dataset missing" "$GSZ" compress -i "$H/w.h5" --dataset /nope -e 1e-3 -o "$H/x.gsz"
    grep -q "no such dataset" "$T/err" && ok || bad "missing dataset message: $(cat "$T/err")"
    expect_exit 1 "--dataset on raw input" "$GSZ" compress -i "$SAMPLE" --dataset /x -e 1e-3 -o "$H/x.gsz"
    grep -q "not an HDF5" "$T/err" && ok || bad "raw input with --dataset: $(cat "$T/err")"
    expect_exit 1 "-t disagrees with the dataset" "$GSZ" compress -i "$H/w.h5" --dataset /fields/wmag -t f64 -e 1e-3 -o "$H/x.gsz"
    expect_exit 1 "-l disagrees with the dataset" "$GSZ" compress -i "$H/w.h5" --dataset /fields/wmag -l 91x91x90 -e 1e-3 -o "$H/x.gsz"
    [ ! -e "$H/x.gsz" ] && ok || bad "a refused compress left an output"
    expect_exit 2 "raw input without -t / -l" "$GSZ" compress -i "$SAMPLE" -e 1e-3 -o "$H/x.gsz"
    expect_exit 1 "HDF5 output exists" "$GSZ" decompress -i "$H/w.gsz" -o "$H/back.h5" --dataset /fields/wmag
    ls "$H" | grep -q "gsz-tmp" && bad "a temporary file was left behind" || ok
    # assess reads both arrays from the datasets: the same numbers as from the raw files.
    expect_exit 0 "assess --dataset" "$GSZ" assess --orig "$H/w.h5" --dec "$H/back.h5" --dataset /fields/wmag --json
    cp "$T/out" "$H/assess_h5.json"
    expect_exit 0 "assess raw" "$GSZ" assess --orig "$SAMPLE" --dec "$H/back.raw" -t f32 -l 91x91x91 --json
    python3 -c "
import json
a, b = json.load(open('$H/assess_h5.json')), json.load(open('$T/out'))
assert a['psnr'] == b['psnr'] and a['ssim'] == b['ssim'] and a['max_abs_error'] == b['max_abs_error'], (a, b)" \
        && ok || bad "assess --dataset differs from the raw assessment"
    expect_exit 1 "assess --dataset missing" "$GSZ" assess --orig "$H/w.h5" --dec "$H/back.h5" --dataset /nope
else
    echo "SKIPPED: --dataset tests (this gsz was built without HDF5)"
fi

expect_exit 2 "assess raw without -t / -l" "$GSZ" assess --orig "$SAMPLE" --dec "$SAMPLE"

# h5z: the HDF5 filter's values (rel 1e-4 is the double 0x3F1A36E2EB1C432D)
expect_exit 0 "h5z" "$GSZ" h5z -m rel -e 1e-4 -p interp
grep -q "UD=41973,0,4,2,3944497965,1058682594,3" "$T/out" && ok || bad "h5z: $(cat "$T/out")"
expect_exit 0 "h5z --json" "$GSZ" h5z -m abs -e 0.5 -p lorenzo --json
python3 -c "import json; j=json.load(open('$T/out')); assert j['filter_id']==41973 and j['cd_values']==[1,0,1071644672,1], j" \
    && ok || bad "h5z --json: $(cat "$T/out")"
expect_exit 1 "h5z bad mode" "$GSZ" h5z -m bogus -e 1e-3
expect_exit 1 "h5z bad bound" "$GSZ" h5z -e -1

echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
