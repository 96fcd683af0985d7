// Experiment for issue 3 (not part of the build): can the Lorenzo encoder's
// lattice quantization skip its five double conversions per value?  The fast
// path below (a float multiply by RN_f(1/(2eb)), rint by the 1.5*2^23 magic
// number, one compare) is taken when |x*r| < 2^14 and x*r is not within 2^-8
// of a half-lattice point; bench/NOTES.md ("Lorenzo: a float-only lattice
// path") derives why it then gives the double path's q and a value the
// decoder reconstructs within the bound.  This program checks that on 40 M
// random and adversarial values (eb from 1e-7 to 12) and on real fields, and
// prints how often the fast path is taken.
//   g++ -O2 -std=c++20 -o /tmp/lattice bench/lattice_fast_check.cpp && /tmp/lattice ../shared/data/*.f32
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <algorithm>
#include <fstream>
#include <iterator>
#include <vector>

static bool lattice_double(float x, double r, double ebx2, double eb, int64_t& q, bool& ok) {
    const double v = (double)x * r;
    if (!(std::fabs(v) < 8388608.0)) { q = 0; ok = false; return true; }
    q = std::llrint(v);
    const float rec = (float)((double)q * ebx2);
    ok = std::fabs((double)rec - (double)x) <= eb;
    return true;
}
// fast: float product, rint by magic number; taken only if |v| < 2^14 and frac not within delta of .5
static bool lattice_fast(float x, float rf, int32_t& q) {
    const float v = x * rf;                      // one float multiply
    if (!(std::fabs(v) < 16384.0f)) return false;
    const float magic = 12582912.0f;             // 1.5 * 2^23: rint to nearest even
    volatile float t = v + magic;                // volatile: keep the rounding
    const float qf = t - magic;
    const float d = std::fabs(v - qf);           // exact (Sterbenz-ish: v, qf close)
    if (d > 0.5f - 0x1p-8f) return false;        // near a half: the double path decides
    q = (int32_t)qf;
    return true;
}
int main(int argc, char** argv) {
    std::mt19937_64 rng(1);
    long taken = 0, total = 0, mism = 0, notok = 0;
    for (double eb : {1e-1, 3.3e-3, 1e-4, 7.77e-6, 1e-2, 0.5, 12.0, 1e-7}) {
        const double ebx2 = 2 * eb, r = 1 / ebx2;
        const float rf = (float)r;
        std::uniform_real_distribution<double> u(-16384 * eb * 2, 16384 * eb * 2);
        for (int i = 0; i < 5000000; ++i) {
            float x = (float)u(rng);
            if (i % 3 == 0) {  // adversarial: near half-lattice points
                const int64_t k = (int64_t)(u(rng) / ebx2);
                x = std::nextafter((float)((k + 0.5) * ebx2), (i & 1) ? 1e30f : -1e30f);
            }
            int64_t qd; bool ok;
            lattice_double(x, r, ebx2, eb, qd, ok);
            ++total;
            int32_t qf;
            if (lattice_fast(x, rf, qf)) {
                ++taken;
                if (qf != qd) ++mism;
                if (!ok) ++notok;   // fast path would declare within bound: must never be an outlier
            }
        }
    }
    std::printf("random+adversarial: total %ld taken %.4f%% q mismatches %ld fast-but-outlier %ld\n", total, 100.0 * taken / total, mism, notok);
    // real fields
    for (int f = 1; f < argc; ++f) {
        std::ifstream in2(argv[f], std::ios::binary);
        in2.seekg(0, std::ios::end); size_t n = in2.tellg() / 4; in2.seekg(0);
        std::vector<float> x(n); in2.read((char*)x.data(), n * 4);
        float lo = 1e30f, hi = -1e30f;
        for (float a : x) if (std::isfinite(a)) lo = std::min(lo, a), hi = std::max(hi, a);
        for (double rel : {1e-2, 1e-3, 1e-4}) {
            const double eb = rel * ((double)hi - lo), ebx2 = 2 * eb, r = 1 / ebx2; const float rf = (float)r;
            long tk = 0, mm = 0, no = 0;
            for (float a : x) { int64_t qd; bool ok; lattice_double(a, r, ebx2, eb, qd, ok); int32_t qf;
                if (lattice_fast(a, rf, qf)) { ++tk; mm += qf != qd; no += !ok; } }
            std::printf("%s rel %g: fast %.3f%% mismatches %ld fast-but-outlier %ld\n", argv[f], rel, 100.0 * tk / n, mm, no);
        }
    }
}
