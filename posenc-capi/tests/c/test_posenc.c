/*
 * C-side tests of the posenc C API: links the static library and checks results against
 * values computed here, independently, with C's own double-precision cos/sin/pow.
 *
 * Build and run: posenc-capi/run-c-tests.sh. The last line printed is "N passed, M failed";
 * the exit status is non-zero if anything failed.
 */
/* dup, dup2, fileno, lseek: to watch what the library writes on stderr (POSIX). */
#define _POSIX_C_SOURCE 200809L

#include "posenc.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

_Static_assert(sizeof(PosencRope) == 8 + 8 * POSENC_ROPE_STORAGE_WORDS, "PosencRope size is the ABI");

static int passed = 0, failed = 0;

#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        if (cond) {                                                                            \
            passed++;                                                                          \
        } else {                                                                               \
            failed++;                                                                          \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                        \
            printf(__VA_ARGS__);                                                               \
            printf("\n");                                                                      \
        }                                                                                      \
    } while (0)

/* Evaluates the call once: the detail then belongs to that call (a second evaluation would
 * replace the string the first pointer points to). */
#define CHECK_CODE(got, want)                                                                  \
    do {                                                                                       \
        int got_code_ = (got);                                                                 \
        CHECK(got_code_ == (want), "%s returned %d (%s), expected %s = %d; detail: %s", #got,  \
              got_code_, posenc_error_message(got_code_), #want, (want),                       \
              posenc_last_error_detail());                                                     \
    } while (0)

/* ------------------------------------------------------------ half-precision helpers */

static double f16_to_double(uint16_t h) {
    int sign = h >> 15, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    double v;
    if (exp == 0)
        v = ldexp(man, -24);
    else if (exp == 31)
        v = man ? NAN : INFINITY;
    else
        v = ldexp(man + 1024, exp - 25);
    return sign ? -v : v;
}

/* Round-to-nearest-even double -> binary16 (finite, in-range inputs). */
static uint16_t double_to_f16(double v) {
    uint16_t sign = v < 0 ? 0x8000 : 0;
    double a = fabs(v);
    if (a == 0) return sign;
    int e;
    frexp(a, &e); /* a = m * 2^e, m in [0.5, 1) */
    int exp = e - 1;  /* a in [2^exp, 2^(exp+1)) */
    if (exp < -14) exp = -14; /* subnormal range: fixed quantum 2^-24 */
    double q = ldexp(1.0, exp - 10);
    double n = nearbyint(a / q); /* default rounding mode: to nearest, ties to even */
    uint32_t bits;
    if (n >= 2048) { /* rounded up into the next binade */
        n /= 2;
        exp += 1;
    }
    if (n < 1024) /* subnormal */
        bits = (uint32_t)n;
    else
        bits = ((uint32_t)(exp + 15) << 10) | ((uint32_t)n - 1024);
    return (uint16_t)(sign | bits);
}

static double bf16_to_double(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Round-to-nearest-even float -> bfloat16 (finite inputs). */
static uint16_t float_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fff + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

/* Spacing of a format with `mant` fraction bits at |v| (normal range). */
static double ulp_at(double v, int mant) {
    int e;
    if (v == 0) return ldexp(1.0, -24);
    frexp(fabs(v), &e);
    return ldexp(1.0, e - 1 - mant);
}

/* f32 results: within 1e-6 of the exact value (the contract gives ~5e-7 for |x| <= 1).
 * Half results: the f32 value rounded once, so within half an ulp of the format plus that. */
#define TOL32 1e-6

/* ------------------------------------------------------------ independent reference */

/* RoPE in double: pairs (2i, 2i+1) or (i, i + rot/2), angle p * base^(-2i/rot). */
static void rope_ref(double *out, const double *x, int n_tok, int heads, int hd, int rot,
                     int rotate_half, const int32_t *pos, double base, int inverse) {
    for (int t = 0; t < n_tok; t++)
        for (int h = 0; h < heads; h++) {
            const double *row = x + (t * heads + h) * hd;
            double *o = out + (t * heads + h) * hd;
            for (int c = 0; c < hd; c++) o[c] = row[c];
            for (int i = 0; i < rot / 2; i++) {
                double th = pos[t] * pow(base, -2.0 * i / rot);
                if (inverse) th = -th;
                int a = rotate_half ? i : 2 * i, b = rotate_half ? i + rot / 2 : 2 * i + 1;
                o[a] = row[a] * cos(th) - row[b] * sin(th);
                o[b] = row[b] * cos(th) + row[a] * sin(th);
            }
        }
}

static PosencRopeConfig config(size_t head_dim, float base, PosencLayout layout) {
    PosencRopeConfig c;
    memset(&c, 0, sizeof c); /* rotary_dim 0 = head_dim, scaling NONE */
    c.head_dim = head_dim;
    c.base = base;
    c.layout = layout;
    return c;
}

static const char *layout_name(PosencLayout l) {
    return l == POSENC_LAYOUT_INTERLEAVED ? "interleaved" : "rotate_half";
}

/* ------------------------------------------------------------ tests */

/* The brief's case: 1 token, 1 head, head_dim 4, base 10000, position 1:
 * pair 0 rotates by 1 rad, pair 1 by 0.01 rad. */
static void test_known_rotation(void) {
    const double x[4] = {0.5, -0.25, 0.75, 1.0}; /* exact in f32, f16 and bf16 */
    const int32_t pos[1] = {1};
    for (int li = 0; li < 2; li++) {
        PosencLayout l = li ? POSENC_LAYOUT_ROTATE_HALF : POSENC_LAYOUT_INTERLEAVED;
        PosencRopeConfig cfg = config(4, 10000.0f, l);
        PosencRope rope;
        CHECK_CODE(posenc_rope_init(&cfg, &rope), POSENC_OK);

        /* Expected values written out by hand (not through rope_ref). */
        double c1 = cos(1.0), s1 = sin(1.0), c2 = cos(0.01), s2 = sin(0.01), want[4];
        if (l == POSENC_LAYOUT_INTERLEAVED) {
            want[0] = x[0] * c1 - x[1] * s1;
            want[1] = x[1] * c1 + x[0] * s1;
            want[2] = x[2] * c2 - x[3] * s2;
            want[3] = x[3] * c2 + x[2] * s2;
        } else {
            want[0] = x[0] * c1 - x[2] * s1;
            want[2] = x[2] * c1 + x[0] * s1;
            want[1] = x[1] * c2 - x[3] * s2;
            want[3] = x[3] * c2 + x[1] * s2;
        }

        float xf[4];
        uint16_t xh[4], xb[4];
        for (int i = 0; i < 4; i++) {
            xf[i] = (float)x[i];
            xh[i] = double_to_f16(x[i]);
            xb[i] = float_to_bf16((float)x[i]);
        }
        CHECK_CODE(posenc_rope_apply_f32(&rope, xf, 4, 1, pos, 1), POSENC_OK);
        CHECK_CODE(posenc_rope_apply_f16(&rope, xh, 4, 1, pos, 1), POSENC_OK);
        CHECK_CODE(posenc_rope_apply_bf16(&rope, xb, 4, 1, pos, 1), POSENC_OK);
        for (int i = 0; i < 4; i++) {
            CHECK(fabs(xf[i] - want[i]) <= TOL32, "f32 %s [%d]: got %.9g want %.9g",
                  layout_name(l), i, xf[i], want[i]);
            double h = f16_to_double(xh[i]);
            CHECK(fabs(h - want[i]) <= 0.5 * ulp_at(want[i], 10) + TOL32,
                  "f16 %s [%d]: got %.9g (0x%04x) want %.9g", layout_name(l), i, h, xh[i],
                  want[i]);
            double b = bf16_to_double(xb[i]);
            CHECK(fabs(b - want[i]) <= 0.5 * ulp_at(want[i], 7) + TOL32,
                  "bf16 %s [%d]: got %.9g (0x%04x) want %.9g", layout_name(l), i, b, xb[i],
                  want[i]);
        }
        /* The f16 result is the rounding of the exact value (no near-ties in this case). */
        for (int i = 0; i < 4; i++)
            CHECK(xh[i] == double_to_f16(want[i]), "f16 %s [%d]: bits 0x%04x, want 0x%04x",
                  layout_name(l), i, xh[i], double_to_f16(want[i]));
    }
}

/* Several tokens (negative positions too), several heads, partial rotary, both layouts,
 * every dtype, apply and inverse. */
static void test_general_shapes(void) {
    enum { T = 3, H = 2, D = 8, R = 6, N = T * H * D };
    const int32_t pos[T] = {3, -2, 17};
    double x[N], want[N], back[N];
    for (int i = 0; i < N; i++) x[i] = ((i * 7) % 11 - 5) * 0.125; /* exact in every dtype */
    for (int li = 0; li < 2; li++) {
        PosencLayout l = li ? POSENC_LAYOUT_ROTATE_HALF : POSENC_LAYOUT_INTERLEAVED;
        PosencRopeConfig cfg = config(D, 10000.0f, l);
        cfg.rotary_dim = R;
        PosencRope rope;
        CHECK_CODE(posenc_rope_init(&cfg, &rope), POSENC_OK);
        CHECK(posenc_rope_head_dim(&rope) == D && posenc_rope_rotary_dim(&rope) == R,
              "dims %zu %zu", posenc_rope_head_dim(&rope), posenc_rope_rotary_dim(&rope));
        rope_ref(want, x, T, H, D, R, li, pos, 10000.0, 0);
        rope_ref(back, x, T, H, D, R, li, pos, 10000.0, 1);

        float xf[N], xi[N];
        uint16_t xh[N], xb[N];
        for (int i = 0; i < N; i++) {
            xf[i] = xi[i] = (float)x[i];
            xh[i] = double_to_f16(x[i]);
            xb[i] = float_to_bf16((float)x[i]);
        }
        CHECK_CODE(posenc_rope_apply_f32(&rope, xf, N, H, pos, T), POSENC_OK);
        CHECK_CODE(posenc_rope_apply_inverse_f32(&rope, xi, N, H, pos, T), POSENC_OK);
        CHECK_CODE(posenc_rope_apply_f16(&rope, xh, N, H, pos, T), POSENC_OK);
        CHECK_CODE(posenc_rope_apply_bf16(&rope, xb, N, H, pos, T), POSENC_OK);
        int bad32 = 0, badinv = 0, bad16 = 0, badb16 = 0, tail = 0;
        for (int i = 0; i < N; i++) {
            bad32 += fabs(xf[i] - want[i]) > TOL32;
            badinv += fabs(xi[i] - back[i]) > TOL32;
            bad16 += fabs(f16_to_double(xh[i]) - want[i]) > 0.5 * ulp_at(want[i], 10) + TOL32;
            badb16 += fabs(bf16_to_double(xb[i]) - want[i]) > 0.5 * ulp_at(want[i], 7) + TOL32;
            if (i % D >= R) tail += xf[i] != (float)x[i]; /* past rotary_dim: bit-for-bit */
        }
        CHECK(bad32 == 0, "f32 %s: %d values off", layout_name(l), bad32);
        CHECK(badinv == 0, "f32 inverse %s: %d values off", layout_name(l), badinv);
        CHECK(bad16 == 0, "f16 %s: %d values off", layout_name(l), bad16);
        CHECK(badb16 == 0, "bf16 %s: %d values off", layout_name(l), badb16);
        CHECK(tail == 0, "%s: %d channels past rotary_dim changed", layout_name(l), tail);

        /* inverse(apply(x)) = x, in every dtype. */
        CHECK_CODE(posenc_rope_apply_inverse_f32(&rope, xf, N, H, pos, T), POSENC_OK);
        CHECK_CODE(posenc_rope_apply_inverse_f16(&rope, xh, N, H, pos, T), POSENC_OK);
        CHECK_CODE(posenc_rope_apply_inverse_bf16(&rope, xb, N, H, pos, T), POSENC_OK);
        int round = 0;
        for (int i = 0; i < N; i++) {
            round += fabs(xf[i] - x[i]) > TOL32;
            /* two roundings of values in pairs of magnitude < 1: within an ulp of 1 */
            round += fabs(f16_to_double(xh[i]) - x[i]) > ulp_at(1.0, 10);
            round += fabs(bf16_to_double(xb[i]) - x[i]) > ulp_at(1.0, 7);
        }
        CHECK(round == 0, "%s: inverse(apply(x)) != x at %d values", layout_name(l), round);
    }
}

static void test_tables_and_frequencies(void) {
    PosencRopeConfig cfg = config(4, 10000.0f, POSENC_LAYOUT_ROTATE_HALF);
    PosencRope rope;
    CHECK_CODE(posenc_rope_init(&cfg, &rope), POSENC_OK);
    float w[2] = {0, 0};
    CHECK_CODE(posenc_rope_inv_freq(&rope, w, 2), POSENC_OK);
    CHECK(w[0] == 1.0f && w[1] == 0.01f, "inv_freq = {%.9g, %.9g}", w[0], w[1]);
    CHECK(posenc_rope_attention_factor(&rope) == 1.0f, "attention factor %g",
          posenc_rope_attention_factor(&rope));

    const int32_t pos[3] = {0, 1, -1000};
    float c[6], s[6];
    CHECK_CODE(posenc_rope_fill_cos_sin(&rope, pos, 3, c, 6, s, 6), POSENC_OK);
    int bad = 0;
    for (int t = 0; t < 3; t++)
        for (int i = 0; i < 2; i++) {
            double th = pos[t] * (double)w[i]; /* the contract: p times the f32 frequency */
            bad += fabs(c[t * 2 + i] - cos(th)) > 3e-7 || fabs(s[t * 2 + i] - sin(th)) > 3e-7;
        }
    CHECK(bad == 0, "fill_cos_sin: %d values off", bad);
    /* Each table has its own length: a sin table declared one short is refused, and neither
     * table is written (the 6th sin element included). */
    float c2[6], s2[6];
    memcpy(c2, c, sizeof c2);
    memcpy(s2, s, sizeof s2);
    for (int i = 0; i < 6; i++) c[i] = s[i] = -2.0f;
    CHECK_CODE(posenc_rope_fill_cos_sin(&rope, pos, 3, c, 6, s, 5), POSENC_ERR_LENGTH_MISMATCH);
    bad = 0;
    for (int i = 0; i < 6; i++) bad += c[i] != -2.0f || s[i] != -2.0f;
    CHECK(bad == 0, "failed fill_cos_sin wrote %d values", bad);
    memcpy(c, c2, sizeof c2);
    memcpy(s, s2, sizeof s2);

    /* Rotation with the caller's tables: pair 0 by +90 degrees, pair 1 by 0. */
    float x[4] = {1, 2, 3, 4};
    const float tc[2] = {0, 1}, ts[2] = {1, 0};
    CHECK_CODE(posenc_apply_with_table_f32(x, 4, 1, 4, POSENC_LAYOUT_ROTATE_HALF, tc, ts, 2),
               POSENC_OK);
    CHECK(x[0] == -3 && x[1] == 2 && x[2] == 1 && x[3] == 4, "with_table: {%g %g %g %g}", x[0],
          x[1], x[2], x[3]);
    uint16_t h[4] = {double_to_f16(1), double_to_f16(2), double_to_f16(3), double_to_f16(4)};
    CHECK_CODE(posenc_apply_with_table_f16(h, 4, 1, 4, POSENC_LAYOUT_INTERLEAVED, tc, ts, 2),
               POSENC_OK);
    CHECK(f16_to_double(h[0]) == -2 && f16_to_double(h[1]) == 1 && f16_to_double(h[2]) == 3 &&
              f16_to_double(h[3]) == 4,
          "with_table f16 interleaved");
    uint16_t b[4] = {float_to_bf16(1), float_to_bf16(2), float_to_bf16(3), float_to_bf16(4)};
    CHECK_CODE(posenc_apply_with_table_bf16(b, 4, 1, 4, POSENC_LAYOUT_ROTATE_HALF, tc, ts, 2),
               POSENC_OK);
    CHECK(bf16_to_double(b[0]) == -3 && bf16_to_double(b[2]) == 1, "with_table bf16");

    /* Scaling through the tagged struct. */
    cfg.scaling.kind = POSENC_SCALING_LINEAR;
    cfg.scaling.params.linear.factor = 2.0f;
    CHECK_CODE(posenc_rope_init(&cfg, &rope), POSENC_OK);
    CHECK_CODE(posenc_rope_inv_freq(&rope, w, 2), POSENC_OK);
    CHECK(w[0] == 0.5f && w[1] == 0.005f, "linear inv_freq = {%.9g, %.9g}", w[0], w[1]);

    PosencRopeConfig y = config(128, 1e6f, POSENC_LAYOUT_ROTATE_HALF);
    y.scaling.kind = POSENC_SCALING_YARN;
    y.scaling.params.yarn.factor = 4.0f; /* the other fields 0: HF's defaults */
    y.scaling.params.yarn.original_max_positions = 32768;
    CHECK_CODE(posenc_rope_init(&y, &rope), POSENC_OK);
    CHECK(fabs(posenc_rope_attention_factor(&rope) - (0.1 * log(4.0) + 1.0)) < 1e-6,
          "yarn attention factor %.9g", posenc_rope_attention_factor(&rope));

    const float factors[2] = {1.0f, 2.0f};
    cfg.scaling.kind = POSENC_SCALING_FREQ_FACTORS;
    cfg.scaling.params.freq_factors.factors = factors;
    cfg.scaling.params.freq_factors.len = 2;
    CHECK_CODE(posenc_rope_init(&cfg, &rope), POSENC_OK);
    CHECK_CODE(posenc_rope_inv_freq(&rope, w, 2), POSENC_OK);
    CHECK(w[0] == 1.0f && w[1] == 0.005f, "freq_factors inv_freq = {%.9g, %.9g}", w[0], w[1]);

    PosencRopeConfig l3 = config(128, 500000.0f, POSENC_LAYOUT_ROTATE_HALF);
    l3.scaling.kind = POSENC_SCALING_LLAMA3;
    l3.scaling.params.llama3.factor = 8.0f;
    l3.scaling.params.llama3.low_freq_factor = 1.0f;
    l3.scaling.params.llama3.high_freq_factor = 4.0f;
    l3.scaling.params.llama3.original_max_positions = 8192;
    CHECK_CODE(posenc_rope_init(&l3, &rope), POSENC_OK);
    float w3[64];
    CHECK_CODE(posenc_rope_inv_freq(&rope, w3, 64), POSENC_OK);
    CHECK(w3[0] == 1.0f && fabs(w3[63] - pow(500000.0, -126.0 / 128) / 8) < 1e-12 * 8,
          "llama3 inv_freq[0] %.9g [63] %.9g", w3[0], w3[63]);
}

static void test_errors(void) {
    /* Odd head_dim: a specific code, and the output struct untouched. */
    PosencRopeConfig cfg = config(5, 10000.0f, POSENC_LAYOUT_INTERLEAVED);
    PosencRope rope, copy;
    memset(&rope, 0xAB, sizeof rope);
    memcpy(&copy, &rope, sizeof rope);
    CHECK_CODE(posenc_rope_init(&cfg, &rope), POSENC_ERR_INVALID_HEAD_DIM);
    CHECK(memcmp(&rope, &copy, sizeof rope) == 0, "failed init changed the PosencRope");
    CHECK(strlen(posenc_last_error_detail()) > 0, "no error detail");

    /* Odd head_dim with caller tables: code, and x unchanged. */
    float x[6] = {1, 2, 3, 4, 5, 6}, x0[6];
    memcpy(x0, x, sizeof x);
    const float tc[1] = {0}, ts[1] = {1};
    CHECK_CODE(posenc_apply_with_table_f32(x, 6, 2, 3, POSENC_LAYOUT_INTERLEAVED, tc, ts, 1),
               POSENC_ERR_INVALID_HEAD_DIM);
    CHECK(memcmp(x, x0, sizeof x) == 0, "failed apply_with_table changed x");

    cfg = config(4, 10000.0f, POSENC_LAYOUT_INTERLEAVED);
    CHECK_CODE(posenc_rope_init(&cfg, &rope), POSENC_OK);
    const int32_t pos[2] = {1, 2};
    CHECK_CODE(posenc_rope_apply_f32(&rope, x, 6, 1, pos, 2), POSENC_ERR_LENGTH_MISMATCH);
    CHECK_CODE(posenc_rope_apply_f32(&rope, x, 4, 0, pos, 1), POSENC_ERR_ZERO_HEADS);
    CHECK_CODE(posenc_rope_apply_f32(&rope, NULL, 4, 1, pos, 1), POSENC_ERR_NULL_POINTER);
    CHECK_CODE(posenc_rope_apply_f32(&rope, x, 4, 1, NULL, 1), POSENC_ERR_NULL_POINTER);
    CHECK_CODE(posenc_rope_apply_f32(NULL, x, 4, 1, pos, 1), POSENC_ERR_NULL_POINTER);
    CHECK_CODE(posenc_rope_apply_f32(&rope, NULL, 0, 1, NULL, 0), POSENC_OK); /* empty */
    CHECK_CODE(posenc_rope_apply_f32(&rope, x, 4, 1, (const int32_t *)(x + 2), 1),
               POSENC_ERR_OVERLAPPING_BUFFERS);
    CHECK(memcmp(x, x0, sizeof x) == 0, "failed apply changed x");

    PosencRope zero;
    memset(&zero, 0, sizeof zero);
    CHECK_CODE(posenc_rope_apply_f32(&zero, x, 4, 1, pos, 1), POSENC_ERR_UNINITIALIZED_ROPE);
    CHECK(isnan(posenc_rope_attention_factor(&zero)), "attention factor of an uninit rope");

    cfg.layout = 7;
    CHECK_CODE(posenc_rope_init(&cfg, &rope), POSENC_ERR_INVALID_ENUM);
    cfg = config(4, -1.0f, POSENC_LAYOUT_INTERLEAVED);
    CHECK_CODE(posenc_rope_init(&cfg, &rope), POSENC_ERR_INVALID_PARAMETER);
    cfg = config(4, 10000.0f, POSENC_LAYOUT_INTERLEAVED);
    cfg.rotary_dim = 6;
    CHECK_CODE(posenc_rope_init(&cfg, &rope), POSENC_ERR_INVALID_ROTARY_DIM);
    cfg = config(2 * POSENC_MAX_ROTARY_DIM, 10000.0f, POSENC_LAYOUT_INTERLEAVED);
    CHECK_CODE(posenc_rope_init(&cfg, &rope), POSENC_ERR_ROTARY_DIM_TOO_LARGE);
    cfg = config(4, 10000.0f, POSENC_LAYOUT_INTERLEAVED);
    cfg.scaling.kind = POSENC_SCALING_LLAMA3;
    cfg.scaling.params.llama3.factor = 8.0f;
    cfg.scaling.params.llama3.low_freq_factor = 4.0f;
    cfg.scaling.params.llama3.high_freq_factor = 1.0f;
    cfg.scaling.params.llama3.original_max_positions = 8192;
    CHECK_CODE(posenc_rope_init(&cfg, &rope), POSENC_ERR_PARAMETER_OUT_OF_RANGE);

    float out[4];
    CHECK_CODE(posenc_sinusoidal_fill_f32(3, 10000.0f, POSENC_SINUSOIDAL_INTERLEAVED, out, 3, 0),
               POSENC_ERR_INVALID_MODEL_DIM);
    CHECK_CODE(posenc_sinusoidal_fill_f32(2, 10000.0f, POSENC_SINUSOIDAL_INTERLEAVED, out, 3, 0),
               POSENC_ERR_NOT_WHOLE_ROWS);

    /* Every code has a message; unknown codes too. */
    const int codes[] = {POSENC_OK,
                         POSENC_ERR_INVALID_HEAD_DIM,
                         POSENC_ERR_INVALID_ROTARY_DIM,
                         POSENC_ERR_ROTARY_DIM_TOO_LARGE,
                         POSENC_ERR_INVALID_MODEL_DIM,
                         POSENC_ERR_ZERO_HEADS,
                         POSENC_ERR_LENGTH_MISMATCH,
                         POSENC_ERR_NOT_WHOLE_ROWS,
                         POSENC_ERR_INVALID_PARAMETER,
                         POSENC_ERR_SHAPE_OVERFLOW,
                         POSENC_ERR_BACKEND_UNAVAILABLE,
                         POSENC_ERR_PARAMETER_OUT_OF_RANGE,
                         POSENC_ERR_UNSUPPORTED_SCALING,
                         POSENC_ERR_UNKNOWN,
                         POSENC_ERR_NULL_POINTER,
                         POSENC_ERR_MISALIGNED_POINTER,
                         POSENC_ERR_OVERLAPPING_BUFFERS,
                         POSENC_ERR_INVALID_ENUM,
                         POSENC_ERR_UNINITIALIZED_ROPE,
                         POSENC_ERR_PANIC,
                         12345};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        const char *m = posenc_error_message(codes[i]);
        CHECK(m != NULL && strlen(m) > 0, "empty message for %d", codes[i]);
    }
}

static void test_sinusoidal(void) {
    /* d_model 2: PE[p][0] = sin(p), PE[p][1] = cos(p). */
    enum { P = 6 };
    float pe[P * 2];
    CHECK_CODE(posenc_sinusoidal_fill_f32(2, 10000.0f, POSENC_SINUSOIDAL_INTERLEAVED, pe, P * 2, 0),
               POSENC_OK);
    int bad = 0;
    for (int p = 0; p < P; p++)
        bad += fabs(pe[2 * p] - sin(p)) > TOL32 || fabs(pe[2 * p + 1] - cos(p)) > TOL32;
    CHECK(bad == 0, "sinusoidal d=2: %d rows off", bad);

    /* From a first position, and d_model 4 split: sin(p), sin(p/100), cos(p), cos(p/100). */
    float s4[3 * 4];
    CHECK_CODE(posenc_sinusoidal_fill_f32(4, 10000.0f, POSENC_SINUSOIDAL_SPLIT, s4, 12, 1000),
               POSENC_OK);
    bad = 0;
    for (int r = 0; r < 3; r++) {
        double p = 1000 + r;
        bad += fabs(s4[4 * r] - sin(p)) > TOL32 || fabs(s4[4 * r + 1] - sin(p / 100)) > TOL32 ||
               fabs(s4[4 * r + 2] - cos(p)) > TOL32 || fabs(s4[4 * r + 3] - cos(p / 100)) > TOL32;
    }
    CHECK(bad == 0, "sinusoidal split d=4 from 1000: %d rows off", bad);
    CHECK_CODE(posenc_sinusoidal_fill_f32(4, 10000.0f, POSENC_SINUSOIDAL_SPLIT_COS_FIRST, s4, 12,
                                          1000),
               POSENC_OK);
    bad = 0;
    for (int r = 0; r < 3; r++) {
        double p = 1000 + r;
        bad += fabs(s4[4 * r] - cos(p)) > TOL32 || fabs(s4[4 * r + 1] - cos(p / 100)) > TOL32 ||
               fabs(s4[4 * r + 2] - sin(p)) > TOL32 || fabs(s4[4 * r + 3] - sin(p / 100)) > TOL32;
    }
    CHECK(bad == 0, "sinusoidal cos-first d=4 from 1000: %d rows off", bad);

    /* Explicit positions (negative too), and add. */
    const int32_t pos[3] = {-5, 0, 123456};
    float fp[6], x[6] = {1, 1, 1, 1, 1, 1};
    CHECK_CODE(posenc_sinusoidal_fill_positions_f32(2, 10000.0f, POSENC_SINUSOIDAL_INTERLEAVED,
                                                    fp, 6, pos, 3),
               POSENC_OK);
    CHECK_CODE(posenc_sinusoidal_add_f32(2, 10000.0f, POSENC_SINUSOIDAL_INTERLEAVED, x, 6, pos, 3),
               POSENC_OK);
    bad = 0;
    for (int r = 0; r < 3; r++) {
        bad += fabs(fp[2 * r] - sin(pos[r])) > TOL32 || fabs(fp[2 * r + 1] - cos(pos[r])) > TOL32;
        bad += fabs(x[2 * r] - (1 + sin(pos[r]))) > 2 * TOL32 ||
               fabs(x[2 * r + 1] - (1 + cos(pos[r]))) > 2 * TOL32;
    }
    CHECK(bad == 0, "sinusoidal positions/add: %d values off", bad);

    /* Half precision: rounded once. */
    uint16_t h[P * 2], b[P * 2];
    CHECK_CODE(posenc_sinusoidal_fill_f16(2, 10000.0f, POSENC_SINUSOIDAL_INTERLEAVED, h, P * 2, 0),
               POSENC_OK);
    CHECK_CODE(posenc_sinusoidal_fill_bf16(2, 10000.0f, POSENC_SINUSOIDAL_INTERLEAVED, b, P * 2, 0),
               POSENC_OK);
    bad = 0;
    for (int p = 0; p < P; p++) {
        double sp = sin(p), cp = cos(p);
        bad += fabs(f16_to_double(h[2 * p]) - sp) > 0.5 * ulp_at(sp, 10) + TOL32;
        bad += fabs(f16_to_double(h[2 * p + 1]) - cp) > 0.5 * ulp_at(cp, 10) + TOL32;
        bad += fabs(bf16_to_double(b[2 * p]) - sp) > 0.5 * ulp_at(sp, 7) + TOL32;
        bad += fabs(bf16_to_double(b[2 * p + 1]) - cp) > 0.5 * ulp_at(cp, 7) + TOL32;
    }
    CHECK(bad == 0, "sinusoidal f16/bf16: %d values off", bad);
    uint16_t hp[6], hx[6], bp[6], bx[6];
    for (int i = 0; i < 6; i++) hx[i] = double_to_f16(1.0), bx[i] = float_to_bf16(1.0f);
    CHECK_CODE(posenc_sinusoidal_fill_positions_f16(2, 10000.0f, 0, hp, 6, pos, 3), POSENC_OK);
    CHECK_CODE(posenc_sinusoidal_fill_positions_bf16(2, 10000.0f, 0, bp, 6, pos, 3), POSENC_OK);
    CHECK_CODE(posenc_sinusoidal_add_f16(2, 10000.0f, 0, hx, 6, pos, 3), POSENC_OK);
    CHECK_CODE(posenc_sinusoidal_add_bf16(2, 10000.0f, 0, bx, 6, pos, 3), POSENC_OK);
    bad = 0;
    for (int r = 0; r < 3; r++) {
        double sp = sin(pos[r]);
        bad += fabs(f16_to_double(hp[2 * r]) - sp) > 0.5 * ulp_at(sp, 10) + TOL32;
        bad += fabs(bf16_to_double(bp[2 * r]) - sp) > 0.5 * ulp_at(sp, 7) + TOL32;
        bad += fabs(f16_to_double(hx[2 * r]) - (1 + sp)) > 0.5 * ulp_at(1 + sp, 10) + TOL32;
        bad += fabs(bf16_to_double(bx[2 * r]) - (1 + sp)) > 0.5 * ulp_at(1 + sp, 7) + TOL32;
    }
    CHECK(bad == 0, "sinusoidal f16/bf16 positions/add: %d values off", bad);
}

static PosencPositions pos_list(const int32_t *p, size_t n) {
    PosencPositions r;
    memset(&r, 0, sizeof r);
    r.kind = POSENC_POSITIONS_LIST;
    r.list = p;
    r.len = n;
    return r;
}

static PosencPositions pos_range(int32_t start, size_t n) {
    PosencPositions r;
    memset(&r, 0, sizeof r);
    r.kind = POSENC_POSITIONS_RANGE;
    r.start = start;
    r.len = n;
    return r;
}

static void test_alibi(void) {
    /* 8 heads (a power of two): slope k = 2^-(k+1), exactly. */
    float s[12];
    CHECK_CODE(posenc_alibi_slopes(8, s, 8), POSENC_OK);
    int bad = 0;
    for (int k = 0; k < 8; k++) bad += s[k] != (float)ldexp(1.0, -(k + 1));
    CHECK(bad == 0, "alibi slopes(8): %d off", bad);
    /* 12 heads: c = 8, extra heads 2^(-4(2(k-8)+1)/8) = 2^-0.5, 2^-1.5, ... */
    CHECK_CODE(posenc_alibi_slopes(12, s, 12), POSENC_OK);
    CHECK(s[0] == 0.5f && s[1] == 0.25f && s[2] == 0.125f && s[8] == (float)sqrt(0.5),
          "alibi slopes(12) = %.9g %.9g %.9g .. %.9g", s[0], s[1], s[2], s[8]);
    CHECK(fabs(s[9] - pow(2.0, -1.5)) < 1e-7 && fabs(s[11] - pow(2.0, -3.5)) < 1e-7,
          "alibi slopes(12) extra heads %.9g %.9g", s[9], s[11]);
    CHECK_CODE(posenc_alibi_slopes_max_bias(4, 4.0f, s, 4), POSENC_OK);
    CHECK(s[0] == 0.5f && s[3] == 0.0625f, "max_bias 4: %.9g %.9g", s[0], s[3]);

    /* One head (slope 0.5), query at 1, keys 0, 1, 2. */
    const float half[1] = {0.5f};
    const int32_t q1[1] = {1};
    float sym[3], causal[3];
    CHECK_CODE(posenc_alibi_bias_f32(half, 1, pos_list(q1, 1), pos_range(0, 3),
                                     POSENC_ALIBI_SYMMETRIC, sym, 3),
               POSENC_OK);
    CHECK_CODE(posenc_alibi_bias_f32(half, 1, pos_list(q1, 1), pos_range(0, 3),
                                     POSENC_ALIBI_CAUSAL, causal, 3),
               POSENC_OK);
    CHECK(sym[0] == -0.5f && sym[1] == 0.0f && sym[2] == -0.5f, "symmetric: %g %g %g", sym[0],
          sym[1], sym[2]);
    CHECK(causal[0] == -0.5f && causal[1] == 0.0f && causal[2] == 0.5f, "causal: %g %g %g",
          causal[0], causal[1], causal[2]);

    /* Two heads, a decode step: query 9 against keys 0..9; f16 and bf16 are exact here. */
    const float two[2] = {0.25f, 0.0625f};
    float b32[20];
    uint16_t b16[20], bb16[20];
    PosencPositions q = pos_range(9, 1), k = pos_range(0, 10);
    CHECK_CODE(posenc_alibi_bias_f32(two, 2, q, k, POSENC_ALIBI_CAUSAL, b32, 20), POSENC_OK);
    CHECK_CODE(posenc_alibi_bias_f16(two, 2, q, k, POSENC_ALIBI_CAUSAL, b16, 20), POSENC_OK);
    CHECK_CODE(posenc_alibi_bias_bf16(two, 2, q, k, POSENC_ALIBI_CAUSAL, bb16, 20), POSENC_OK);
    bad = 0;
    for (int h = 0; h < 2; h++)
        for (int j = 0; j < 10; j++) {
            double want = two[h] * (j - 9);
            bad += b32[h * 10 + j] != want || f16_to_double(b16[h * 10 + j]) != want ||
                   bf16_to_double(bb16[h * 10 + j]) != want;
        }
    CHECK(bad == 0, "alibi decode-step bias: %d off", bad);

    /* BLOOM: positions from a left-padded mask, one query at 0. */
    const uint8_t mask[5] = {0, 0, 1, 1, 1};
    int32_t kp[5];
    CHECK_CODE(posenc_alibi_positions_from_mask_u8(mask, 5, kp, 5), POSENC_OK);
    CHECK(kp[0] == 0 && kp[1] == 0 && kp[2] == 0 && kp[3] == 1 && kp[4] == 2,
          "mask positions %d %d %d %d %d", kp[0], kp[1], kp[2], kp[3], kp[4]);
    const int64_t mask64[3] = {1, 0, 1};
    CHECK_CODE(posenc_alibi_positions_from_mask_i64(mask64, 3, kp, 3), POSENC_OK);
    CHECK(kp[0] == 0 && kp[1] == 0 && kp[2] == 1, "i64 mask positions");

    /* Errors, output unchanged. */
    float out[3] = {7, 7, 7};
    CHECK_CODE(posenc_alibi_slopes(0, out, 0), POSENC_ERR_ZERO_HEADS);
    /* 4 heads into a buffer declared 3 long: refused, nothing written (out[3] would be the
     * first float past the buffer; out_len bounds the writes, not n_heads). */
    CHECK_CODE(posenc_alibi_slopes(4, out, 3), POSENC_ERR_LENGTH_MISMATCH);
    CHECK_CODE(posenc_alibi_slopes_max_bias(4, 8.0f, out, 3), POSENC_ERR_LENGTH_MISMATCH);
    CHECK_CODE(posenc_alibi_slopes(2, out, 3), POSENC_ERR_LENGTH_MISMATCH);
    int32_t kp3[3] = {-1, -1, -1};
    CHECK_CODE(posenc_alibi_positions_from_mask_u8(mask, 5, kp3, 3), POSENC_ERR_LENGTH_MISMATCH);
    CHECK(kp3[0] == -1 && kp3[1] == -1 && kp3[2] == -1, "failed mask call changed out");
    CHECK_CODE(posenc_alibi_bias_f32(half, 1, pos_list(q1, 1), pos_range(0, 3), 5, out, 3),
               POSENC_ERR_INVALID_ENUM);
    CHECK_CODE(posenc_alibi_bias_f32(half, 1, pos_list(q1, 1), pos_range(0, 3),
                                     POSENC_ALIBI_CAUSAL, out, 2),
               POSENC_ERR_LENGTH_MISMATCH);
    CHECK_CODE(posenc_alibi_bias_f32(half, 1, pos_list(NULL, 1), pos_range(0, 3),
                                     POSENC_ALIBI_CAUSAL, out, 3),
               POSENC_ERR_NULL_POINTER);
    CHECK(out[0] == 7 && out[1] == 7 && out[2] == 7, "failed alibi call changed out");
}

/* ------------------------------------------------------------ stderr capture */

static FILE *capture_file;
static int saved_stderr = -1;

/* Points fd 2 at a temporary file; returns 0 if that is not possible. */
static int begin_capture(void) {
    fflush(stderr);
    capture_file = tmpfile();
    if (capture_file == NULL) return 0;
    saved_stderr = dup(2);
    if (saved_stderr < 0 || dup2(fileno(capture_file), 2) < 0) return 0;
    return 1;
}

/* Restores fd 2; returns how many bytes were written to it meanwhile, the first of them in
 * buf (NUL-terminated). */
static long end_capture(char *buf, size_t cap) {
    fflush(stderr);
    dup2(saved_stderr, 2);
    close(saved_stderr);
    long n = (long)lseek(fileno(capture_file), 0, SEEK_END);
    rewind(capture_file);
    size_t got = fread(buf, 1, cap - 1, capture_file);
    buf[got] = 0;
    fclose(capture_file);
    return n;
}

/* A corrupted PosencRope (its stored rotary_dim overwritten by a stray write, the magic
 * intact) makes the library fail an internal bounds check: the call returns
 * POSENC_ERR_PANIC with a detail, writes nothing, and prints nothing on the host's stderr. */
static void test_corrupted_rope_is_silent(void) {
    PosencRopeConfig cfg = config(200, 10000.0f, POSENC_LAYOUT_INTERLEAVED);
    cfg.rotary_dim = 130; /* the only stored word equal to 130 (head_dim 200, offset 0, ...) */
    PosencRope rope;
    CHECK_CODE(posenc_rope_init(&cfg, &rope), POSENC_OK);
    int hits = 0;
    for (size_t i = 0; i < POSENC_ROPE_STORAGE_WORDS; i++)
        if (rope.storage[i] == 130) {
            rope.storage[i] = UINT64_MAX;
            hits++;
        }
    CHECK(hits == 1, "rotary_dim in %d words of PosencRope (posenc's layout changed?)", hits);
    if (hits != 1) return;

    char seen[512];
    /* Control: the capture sees what is written to fd 2. */
    CHECK(begin_capture(), "cannot redirect stderr");
    CHECK(write(2, "x\n", 2) == 2, "write to fd 2");
    long n = end_capture(seen, sizeof seen);
    CHECK(n == 2 && strcmp(seen, "x\n") == 0, "capture control: %ld bytes '%s'", n, seen);

    float w[65];
    for (int i = 0; i < 65; i++) w[i] = 7.0f;
    CHECK(begin_capture(), "cannot redirect stderr");
    int rc = posenc_rope_inv_freq(&rope, w, 65);
    n = end_capture(seen, sizeof seen);
    CHECK_CODE(rc, POSENC_ERR_PANIC);
    CHECK(n == 0, "the library printed %ld bytes on stderr: %s", n, seen);
    CHECK(strstr(posenc_last_error_detail(), "panic in posenc") != NULL, "detail '%s'",
          posenc_last_error_detail());
    int changed = 0;
    for (int i = 0; i < 65; i++) changed += w[i] != 7.0f;
    CHECK(changed == 0, "failed call changed %d values", changed);
}

static void test_library_info(void) {
    const char *b = posenc_backend_name();
    CHECK(b != NULL && (strcmp(b, "scalar") == 0 || strcmp(b, "portable") == 0 ||
                        strcmp(b, "avx2") == 0 || strcmp(b, "avx512") == 0),
          "backend name '%s'", b ? b : "(null)");
    CHECK(strlen(posenc_version()) > 0, "empty version");
    printf("posenc %s, backend %s\n", posenc_version(), b);
}

/* ------------------------------------------------------------ runtime entry points */

static PosencAngles at_positions(const int32_t *p, size_t n) {
    PosencAngles a = {POSENC_ANGLES_POSITIONS, n, p, NULL, 0};
    return a;
}

static PosencAngles at_table(const float *t, size_t len, size_t n) {
    PosencAngles a = {POSENC_ANGLES_TABLE, n, NULL, t, len};
    return a;
}

/* Angles from a table equal angles from positions bit for bit, and both match the double
 * reference; Q+K with GQA in one call; views; rotary_offset; M-RoPE text tokens. */
static void test_runtime_rotation(void) {
    enum { T = 3, HQ = 4, HK = 2, D = 16, NQ = T * HQ * D, NK = T * HK * D };
    const int32_t pos[T] = {5, -9, 1000};
    PosencRopeConfig cfg = config(D, 10000.0f, POSENC_LAYOUT_ROTATE_HALF);
    PosencRope rope;
    CHECK_CODE(posenc_rope_init(&cfg, &rope), POSENC_OK);
    size_t tl = posenc_rope_table_len(&rope, T);
    CHECK(tl == 2 * T * D / 2, "table_len %zu", tl);
    float table[2 * T * D / 2];
    CHECK_CODE(posenc_rope_table(&rope, pos, T, table, tl), POSENC_OK);
    CHECK_CODE(posenc_rope_table(&rope, pos, T, table, tl - 1), POSENC_ERR_LENGTH_MISMATCH);

    double xq[NQ], xk[NK], wq[NQ], wk[NK];
    float q[NQ], k[NK], q2[NQ], k2[NK];
    for (int i = 0; i < NQ; i++) xq[i] = ((i * 5) % 13 - 6) * 0.0625;
    for (int i = 0; i < NK; i++) xk[i] = ((i * 3) % 7 - 3) * 0.25;
    rope_ref(wq, xq, T, HQ, D, D, 1, pos, 10000.0, 0);
    rope_ref(wk, xk, T, HK, D, D, 1, pos, 10000.0, 0);
    for (int i = 0; i < NQ; i++) q[i] = q2[i] = (float)xq[i];
    for (int i = 0; i < NK; i++) k[i] = k2[i] = (float)xk[i];
    PosencAngles ap = at_positions(pos, T), at = at_table(table, tl, T);
    CHECK_CODE(posenc_rope_apply_qk_f32(&rope, q, NQ, HQ, k, NK, HK, &at), POSENC_OK);
    CHECK_CODE(posenc_rope_rotate_f32(&rope, POSENC_OP_APPLY, q2, NQ, HQ, &ap), POSENC_OK);
    CHECK_CODE(posenc_rope_rotate_f32(&rope, POSENC_OP_APPLY, k2, NK, HK, &ap), POSENC_OK);
    CHECK(memcmp(q, q2, sizeof q) == 0 && memcmp(k, k2, sizeof k) == 0,
          "table + qk differs from positions, one buffer at a time");
    int bad = 0;
    for (int i = 0; i < NQ; i++) bad += fabs(q[i] - wq[i]) > 4 * TOL32;
    for (int i = 0; i < NK; i++) bad += fabs(k[i] - wk[i]) > 4 * TOL32;
    CHECK(bad == 0, "%d values off the double reference", bad);
    /* Shift back by -pos: the keys return (within rounding). */
    int32_t neg[T];
    for (int t = 0; t < T; t++) neg[t] = -pos[t];
    PosencAngles an = at_positions(neg, T);
    CHECK_CODE(posenc_rope_rotate_f32(&rope, POSENC_OP_SHIFT, k, NK, HK, &an), POSENC_OK);
    bad = 0;
    for (int i = 0; i < NK; i++) bad += fabs(k[i] - xk[i]) > 4 * TOL32;
    CHECK(bad == 0, "%d keys did not return", bad);
    CHECK_CODE(posenc_rope_rotate_f32(&rope, 7, k, NK, HK, &an), POSENC_ERR_INVALID_ENUM);

    /* Views: q and k heads side by side in a fused [T][HQ + HK][D] buffer. */
    float fused[T * (HQ + HK) * D];
    for (int t = 0; t < T; t++) {
        for (int i = 0; i < HQ * D; i++) fused[t * (HQ + HK) * D + i] = (float)xq[t * HQ * D + i];
        for (int i = 0; i < HK * D; i++)
            fused[t * (HQ + HK) * D + HQ * D + i] = (float)xk[t * HK * D + i];
    }
    PosencView views[2] = {{HQ, (HQ + HK) * D, D, 0}, {HK, (HQ + HK) * D, D, HQ * D}};
    CHECK_CODE(posenc_rope_apply_views_f32(&rope, fused, T * (HQ + HK) * D, views, 2, &at),
               POSENC_OK);
    bad = 0;
    for (int t = 0; t < T; t++) {
        bad += memcmp(fused + t * (HQ + HK) * D, q2 + t * HQ * D, HQ * D * sizeof(float)) != 0;
        bad += memcmp(fused + t * (HQ + HK) * D + HQ * D, k2 + t * HK * D,
                      HK * D * sizeof(float)) != 0;
    }
    CHECK(bad == 0, "views differ from contiguous rotation in %d rows", bad);

    /* rotary_offset: channels 8..15 rotate as a head of 8 would, 0..7 untouched. */
    PosencRopeConfig oc = config(D, 10000.0f, POSENC_LAYOUT_INTERLEAVED);
    oc.rotary_dim = 8;
    oc.rotary_offset = 8;
    PosencRope orope;
    CHECK_CODE(posenc_rope_init(&oc, &orope), POSENC_OK);
    float xo[D];
    double win[8], wout[8];
    for (int i = 0; i < D; i++) xo[i] = (float)(i * 0.125 - 1.0);
    for (int i = 0; i < 8; i++) win[i] = xo[8 + i];
    rope_ref(wout, win, 1, 1, 8, 8, 0, pos + 2, 10000.0, 0);
    CHECK_CODE(posenc_rope_apply_f32(&orope, xo, D, 1, pos + 2, 1), POSENC_OK);
    bad = 0;
    for (int i = 0; i < 8; i++) bad += xo[i] != (float)(i * 0.125 - 1.0);
    for (int i = 0; i < 8; i++) bad += fabs(xo[8 + i] - wout[i]) > 4 * TOL32;
    CHECK(bad == 0, "rotary_offset: %d values wrong", bad);
    oc.rotary_offset = 10;
    CHECK_CODE(posenc_rope_init(&oc, &orope), POSENC_ERR_PARAMETER_OUT_OF_RANGE);
    oc.rotary_offset = 0;
    oc.rounding = 9;
    CHECK_CODE(posenc_rope_init(&oc, &orope), POSENC_ERR_INVALID_ENUM);

    /* M-RoPE: a text token (all three axes equal) is plain RoPE at that position. */
    PosencRopeConfig mc = config(D, 10000.0f, POSENC_LAYOUT_ROTATE_HALF);
    mc.axes = POSENC_AXES_MROPE;
    mc.sections[0] = 2;
    mc.sections[1] = 3;
    mc.sections[2] = 3;
    PosencRope mrope;
    CHECK_CODE(posenc_rope_init(&mc, &mrope), POSENC_OK);
    const int32_t axes[3] = {1000, 1000, 1000};
    float xm[D], xp[D];
    for (int i = 0; i < D; i++) xm[i] = xp[i] = (float)xq[i];
    CHECK_CODE(posenc_rope_apply_axes_f32(&mrope, xm, D, 1, axes, 3, 3), POSENC_OK);
    CHECK_CODE(posenc_rope_apply_f32(&rope, xp, D, 1, pos + 2, 1), POSENC_OK);
    CHECK(memcmp(xm, xp, sizeof xm) == 0, "M-RoPE text token differs from plain RoPE");
    CHECK_CODE(posenc_rope_apply_axes_f32(&mrope, xm, D, 1, axes, 3, 1),
               POSENC_ERR_LENGTH_MISMATCH);
}

/* ggml's reference quantizers, transcribed here in C (finite inputs). */
static uint16_t ggml_fp32_to_fp16(float f) {
    const float scale_to_inf = 0x1.0p+112f, scale_to_zero = 0x1.0p-110f;
    float base = (fabsf(f) * scale_to_inf) * scale_to_zero;
    uint32_t w, bits;
    memcpy(&w, &f, 4);
    const uint32_t shl1_w = w + w, sign = w & 0x80000000u;
    uint32_t bias = shl1_w & 0xFF000000u;
    if (bias < 0x71000000u) bias = 0x71000000u;
    uint32_t bb = (bias >> 1) + 0x07800000u;
    float bf;
    memcpy(&bf, &bb, 4);
    base = bf + base;
    memcpy(&bits, &base, 4);
    const uint32_t nonsign = ((bits >> 13) & 0x7C00u) + (bits & 0x0FFFu);
    return (uint16_t)((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
}

static void ref_quantize_q8_0(const float *x, PosencBlockQ8_0 *y, int nb) {
    for (int i = 0; i < nb; i++) {
        float amax = 0.0f;
        for (int j = 0; j < 32; j++) {
            const float v = fabsf(x[i * 32 + j]);
            amax = amax > v ? amax : v;
        }
        const float d = amax / ((1 << 7) - 1);
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = ggml_fp32_to_fp16(d);
        for (int j = 0; j < 32; j++) y[i].qs[j] = (int8_t)roundf(x[i * 32 + j] * id);
    }
}

static void ref_quantize_q4_0(const float *x, PosencBlockQ4_0 *y, int nb) {
    for (int i = 0; i < nb; i++) {
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < 32; j++) {
            const float v = x[i * 32 + j];
            if (amax < fabsf(v)) {
                amax = fabsf(v);
                max = v;
            }
        }
        const float d = max / -8;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = ggml_fp32_to_fp16(d);
        for (int j = 0; j < 16; j++) {
            const float x0 = x[i * 32 + j] * id, x1 = x[i * 32 + 16 + j] * id;
            const int8_t c0 = (int8_t)(x0 + 8.5f), c1 = (int8_t)(x1 + 8.5f);
            const uint8_t xi0 = c0 < 15 ? c0 : 15, xi1 = c1 < 15 ? c1 : 15;
            y[i].qs[j] = xi0;
            y[i].qs[j] |= xi1 << 4;
        }
    }
}

static void ref_dequantize_q8_0(const PosencBlockQ8_0 *b, float *y, int nb) {
    for (int i = 0; i < nb; i++) {
        const float d = (float)f16_to_double(b[i].d);
        for (int j = 0; j < 32; j++) y[i * 32 + j] = b[i].qs[j] * d;
    }
}

static void ref_dequantize_q4_0(const PosencBlockQ4_0 *b, float *y, int nb) {
    for (int i = 0; i < nb; i++) {
        const float d = (float)f16_to_double(b[i].d);
        for (int j = 0; j < 16; j++) {
            y[i * 32 + j] = ((b[i].qs[j] & 0x0F) - 8) * d;
            y[i * 32 + j + 16] = ((b[i].qs[j] >> 4) - 8) * d;
        }
    }
}

/* The one-pass K-cache shift equals "dequantize -> shift in float -> quantize" with ggml's
 * reference written in C, byte for byte; the conversions equal ggml's too. */
static void test_quantized_shift(void) {
    enum { T = 5, H = 3, D = 64, N = T * H * D, NB = N / 32 };
    const int32_t deltas[T] = {-512, -512, 7, 0, 100000};
    float x[N], f[N], g[N];
    for (int i = 0; i < N; i++) x[i] = (float)(sin(i * 0.37) * (1 + i % 5) * 0.3);
    PosencRopeConfig cfg = config(D, 500000.0f, POSENC_LAYOUT_ROTATE_HALF);
    cfg.rotary_dim = 48;
    PosencRope rope;
    CHECK_CODE(posenc_rope_init(&cfg, &rope), POSENC_OK);
    PosencAngles at = at_positions(deltas, T);

    PosencBlockQ8_0 k8[NB], w8[NB];
    CHECK_CODE(posenc_quantize_q8_0(x, N, k8, NB), POSENC_OK);
    ref_quantize_q8_0(x, w8, NB);
    CHECK(memcmp(k8, w8, sizeof k8) == 0, "posenc_quantize_q8_0 differs from ggml's reference");
    CHECK_CODE(posenc_dequantize_q8_0(k8, NB, f, N), POSENC_OK);
    ref_dequantize_q8_0(k8, g, NB);
    CHECK(memcmp(f, g, sizeof f) == 0, "posenc_dequantize_q8_0 differs");
    CHECK_CODE(posenc_rope_rotate_f32(&rope, POSENC_OP_SHIFT, g, N, H, &at), POSENC_OK);
    ref_quantize_q8_0(g, w8, NB);
    CHECK_CODE(posenc_rope_shift_q8_0(&rope, k8, NB, H, &at), POSENC_OK);
    CHECK(memcmp(k8, w8, sizeof k8) == 0, "q8_0 shift differs from the three passes");

    PosencBlockQ4_0 k4[NB], w4[NB];
    CHECK_CODE(posenc_quantize_q4_0(x, N, k4, NB), POSENC_OK);
    ref_quantize_q4_0(x, w4, NB);
    CHECK(memcmp(k4, w4, sizeof k4) == 0, "posenc_quantize_q4_0 differs from ggml's reference");
    ref_dequantize_q4_0(k4, g, NB);
    CHECK_CODE(posenc_rope_rotate_f32(&rope, POSENC_OP_SHIFT, g, N, H, &at), POSENC_OK);
    ref_quantize_q4_0(g, w4, NB);
    /* From a table of the deltas this time. */
    float table[2 * T * 24];
    CHECK_CODE(posenc_rope_table(&rope, deltas, T, table, 2 * T * 24), POSENC_OK);
    PosencAngles tat = at_table(table, 2 * T * 24, T);
    CHECK_CODE(posenc_rope_shift_q4_0(&rope, k4, NB, H, &tat), POSENC_OK);
    CHECK(memcmp(k4, w4, sizeof k4) == 0, "q4_0 shift differs from the three passes");

    /* Errors leave the cache alone: a block count off by one, head_dim 48 (not whole
     * blocks), a NULL cache. */
    memcpy(w8, k8, sizeof k8);
    CHECK_CODE(posenc_rope_shift_q8_0(&rope, k8, NB - 1, H, &at), POSENC_ERR_LENGTH_MISMATCH);
    PosencRopeConfig c48 = config(48, 10000.0f, POSENC_LAYOUT_ROTATE_HALF);
    PosencRope r48;
    CHECK_CODE(posenc_rope_init(&c48, &r48), POSENC_OK);
    CHECK_CODE(posenc_rope_shift_q8_0(&r48, k8, 9, 2, &at), POSENC_ERR_PARAMETER_OUT_OF_RANGE);
    CHECK(strstr(posenc_last_error_detail(), "head_dim") != NULL, "detail '%s'",
          posenc_last_error_detail());
    CHECK_CODE(posenc_rope_shift_q8_0(&rope, NULL, NB, H, &at), POSENC_ERR_NULL_POINTER);
    CHECK(memcmp(k8, w8, sizeof k8) == 0, "a failed shift changed the cache");
}

static void test_presets(void) {
    size_t n = posenc_preset_count();
    CHECK(n > 10, "only %zu presets", n);
    CHECK(posenc_preset_name(n) == NULL, "name past the end");
    int found = 0;
    for (size_t i = 0; i < n; i++) {
        const char *name = posenc_preset_name(i);
        PosencRope a, b;
        size_t h = 0, kv = 0;
        CHECK_CODE(posenc_rope_init_preset_index(i, &a, &h, &kv), POSENC_OK);
        CHECK_CODE(posenc_rope_init_preset(name, &b, NULL, NULL), POSENC_OK);
        float fa[256], fb[256];
        size_t half = posenc_rope_rotary_dim(&a) / 2;
        CHECK(half > 0 && half <= 256 && half == posenc_rope_rotary_dim(&b) / 2, "%s", name);
        CHECK_CODE(posenc_rope_inv_freq(&a, fa, half), POSENC_OK);
        CHECK_CODE(posenc_rope_inv_freq(&b, fb, half), POSENC_OK);
        CHECK(memcmp(fa, fb, half * sizeof(float)) == 0 &&
                  posenc_rope_attention_factor(&a) == posenc_rope_attention_factor(&b),
              "preset %s: by name and by index differ", name);
        if (strcmp(name, "Llama 3 8B") == 0) {
            found = 1;
            CHECK(h == 32 && kv == 8 && posenc_rope_head_dim(&a) == 128, "Llama 3 8B shape");
        }
    }
    CHECK(found, "no Llama 3 8B preset");
    PosencRope r;
    memset(&r, 0, sizeof r);
    CHECK_CODE(posenc_rope_init_preset("no such model", &r, NULL, NULL),
               POSENC_ERR_PARAMETER_OUT_OF_RANGE);
    CHECK(posenc_rope_head_dim(&r) == 0, "a failed preset init wrote the rope");
}

/* ------------------------------------------------------------ loading from model files */

/* Appends little-endian bytes of v (n bytes) to buf at *at. */
static void put_le(uint8_t *buf, size_t *at, uint64_t v, size_t n) {
    for (size_t i = 0; i < n; i++) buf[(*at)++] = (uint8_t)(v >> (8 * i));
}

static void put_key(uint8_t *buf, size_t *at, const char *key, uint32_t type) {
    size_t n = strlen(key);
    put_le(buf, at, n, 8);
    memcpy(buf + *at, key, n);
    *at += n;
    put_le(buf, at, type, 4);
}

/* A GGUF v3 header with no tensors and `n_kv` key/values, then `general.architecture`
 * (a string, the first of them); returns the length so far. */
static size_t put_gguf_start(uint8_t *buf, uint64_t n_kv, const char *arch) {
    size_t at = 0;
    memcpy(buf, "GGUF", 4);
    at = 4;
    put_le(buf, &at, 3, 4);
    put_le(buf, &at, 0, 8);
    put_le(buf, &at, n_kv, 8);
    put_key(buf, &at, "general.architecture", 8);
    put_le(buf, &at, strlen(arch), 8);
    memcpy(buf + at, arch, strlen(arch));
    return at + strlen(arch);
}

/* Two ropes are the same: rotary dims, frequencies, attention factor, layout's effect. */
static int same_rope(const PosencRope *a, const PosencRope *b) {
    float fa[256], fb[256];
    size_t half = posenc_rope_rotary_dim(a) / 2;
    if (half == 0 || half > 256 || posenc_rope_rotary_dim(b) / 2 != half ||
        posenc_rope_head_dim(a) != posenc_rope_head_dim(b))
        return 0;
    if (posenc_rope_inv_freq(a, fa, half) != POSENC_OK ||
        posenc_rope_inv_freq(b, fb, half) != POSENC_OK)
        return 0;
    /* The pairing: rotate one row with each and compare the bits. */
    size_t hd = posenc_rope_head_dim(a);
    float ra[512], rb[512];
    for (size_t i = 0; i < hd; i++) ra[i] = rb[i] = (float)i * 0.01f - 1.0f;
    int32_t pos = 1234;
    if (posenc_rope_apply_f32(a, ra, hd, 1, &pos, 1) != POSENC_OK ||
        posenc_rope_apply_f32(b, rb, hd, 1, &pos, 1) != POSENC_OK)
        return 0;
    return memcmp(fa, fb, half * sizeof(float)) == 0 && memcmp(ra, rb, hd * sizeof(float)) == 0 &&
           posenc_rope_attention_factor(a) == posenc_rope_attention_factor(b);
}

static void test_loading(void) {
    /* GGUF: a v3 header, 0 tensors, Qwen2.5 7B's three rope keys. */
    uint8_t file[256];
    size_t n = put_gguf_start(file, 3, "qwen2");
    size_t arch_at = n - 5;
    put_key(file, &n, "qwen2.attention.key_length", 4);
    put_le(file, &n, 128, 4);
    put_key(file, &n, "qwen2.rope.freq_base", 6);
    float base = 1e6f;
    uint32_t base_bits;
    memcpy(&base_bits, &base, 4);
    put_le(file, &n, base_bits, 4);

    PosencRope from_file, preset;
    memset(&from_file, 0, sizeof from_file);
    CHECK_CODE(posenc_rope_init_gguf(file, n, NULL, 0, &from_file), POSENC_OK);
    CHECK_CODE(posenc_rope_init_preset("Qwen2.5 7B", &preset, NULL, NULL), POSENC_OK);
    CHECK(same_rope(&from_file, &preset), "GGUF qwen2 is not the Qwen2.5 7B preset");

    PosencRope r;
    memset(&r, 0, sizeof r);
    CHECK_CODE(posenc_rope_init_gguf(file, n - 1, NULL, 0, &r), POSENC_ERR_MODEL_FILE);
    CHECK_CODE(posenc_rope_init_gguf(file, 40, NULL, 0, &r), POSENC_ERR_MODEL_FILE);
    CHECK(posenc_rope_head_dim(&r) == 0, "a failed GGUF init wrote the rope");
    memcpy(file + arch_at, "bloom", 5); /* an architecture llama.cpp runs with ALiBi */
    CHECK_CODE(posenc_rope_init_gguf(file, n, NULL, 0, &r), POSENC_ERR_NO_ROPE);
    CHECK(strstr(posenc_last_error_detail(), "general.architecture") != NULL, "detail '%s'",
          posenc_last_error_detail());

    /* config.json: Llama 3.1 8B's rope settings; the length counts, not a NUL. */
    const char *json =
        "{\"model_type\": \"llama\", \"hidden_size\": 4096, \"num_attention_heads\": 32,"
        " \"max_position_embeddings\": 131072, \"rope_theta\": 500000.0,"
        " \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0, \"low_freq_factor\": 1.0,"
        " \"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 8192}} trailing";
    size_t len = strlen(json) - strlen(" trailing");
    CHECK_CODE(posenc_rope_init_hf_config(json, len, 0, NULL, &from_file), POSENC_OK);
    CHECK_CODE(posenc_rope_init_preset("Llama 3.1 8B", &preset, NULL, NULL), POSENC_OK);
    CHECK(same_rope(&from_file, &preset), "config.json Llama 3.1 is not the Llama 3.1 8B preset");
    CHECK_CODE(posenc_rope_init_hf_config(json, strlen(json), 0, NULL, &r), POSENC_ERR_MODEL_FILE);

    /* Gemma 3: local and global layers, by index and by type; options ignored by both. */
    const char *gemma =
        "{\"model_type\": \"gemma3_text\", \"head_dim\": 256, \"rope_theta\": 1000000.0,"
        " \"rope_local_base_freq\": 10000.0, \"sliding_window_pattern\": 6,"
        " \"num_hidden_layers\": 12, \"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 8.0}}";
    PosencHfOptions opts = {0, 0};
    PosencRope local, global;
    CHECK_CODE(posenc_rope_init_preset("Gemma 3 4B (local layers)", &local, NULL, NULL), POSENC_OK);
    CHECK_CODE(posenc_rope_init_preset("Gemma 3 4B (global layers)", &global, NULL, NULL),
               POSENC_OK);
    for (size_t layer = 0; layer < 12; layer++) {
        CHECK_CODE(posenc_rope_init_hf_config(gemma, strlen(gemma), layer, &opts, &r), POSENC_OK);
        CHECK(same_rope(&r, layer % 6 == 5 ? &global : &local), "Gemma 3 layer %zu", layer);
    }
    CHECK_CODE(posenc_rope_init_hf_config_type(gemma, strlen(gemma), "full_attention", NULL, &r),
               POSENC_OK);
    CHECK(same_rope(&r, &global), "Gemma 3 full_attention");
    CHECK_CODE(posenc_rope_init_hf_config(gemma, strlen(gemma), 12, NULL, &r),
               POSENC_ERR_PARAMETER_OUT_OF_RANGE);
    const char *bert = "{\"head_dim\": 64, \"position_embedding_type\": \"absolute\"}";
    CHECK_CODE(posenc_rope_init_hf_config(bert, strlen(bert), 0, NULL, &r), POSENC_ERR_NO_ROPE);

    /* NoPE layers: SmolLM3 leaves every fourth layer unrotated, in HF (`no_rope_layers`'
     * default) and in llama.cpp (its step of 4). */
    const char *smol = "{\"model_type\": \"smollm3\", \"head_dim\": 128, \"num_hidden_layers\": 8}";
    for (size_t layer = 0; layer < 8; layer++) {
        int want = (layer + 1) % 4 == 0 ? POSENC_ERR_NO_ROPE : POSENC_OK;
        CHECK_CODE(posenc_rope_init_hf_config(smol, strlen(smol), layer, NULL, &r), want);
    }
    n = put_gguf_start(file, 2, "smollm3");
    put_key(file, &n, "smollm3.block_count", 4);
    put_le(file, &n, 8, 4);
    for (uint32_t layer = 0; layer < 8; layer++) {
        int rotates = -1;
        CHECK_CODE(posenc_gguf_layer_rotates(file, n, layer, &rotates), POSENC_OK);
        CHECK(rotates == ((layer + 1) % 4 != 0), "GGUF smollm3 layer %u: %d", layer, rotates);
    }
    int untouched = -1;
    CHECK_CODE(posenc_gguf_layer_rotates(file, n, 8, &untouched), POSENC_ERR_MODEL_FILE);
    CHECK(untouched == -1, "a failed query wrote its answer");
    memset(&r, 0, sizeof r);
    CHECK_CODE(posenc_rope_init_gguf_layer(file, n, NULL, 0, 3, &r), POSENC_ERR_NO_ROPE);
    CHECK(posenc_rope_head_dim(&r) == 0, "a NoPE layer wrote the rope");

    /* Gemma 3 by layer: five of every six slide (θ = 1e4, unscaled), the sixth is global. */
    n = put_gguf_start(file, 5, "gemma3");
    put_key(file, &n, "gemma3.attention.key_length", 4);
    put_le(file, &n, 256, 4);
    float f;
    uint32_t bits;
    put_key(file, &n, "gemma3.rope.freq_base", 6);
    f = 1e6f;
    memcpy(&bits, &f, 4);
    put_le(file, &n, bits, 4);
    put_key(file, &n, "gemma3.rope.scaling.type", 8);
    put_le(file, &n, 6, 8);
    memcpy(file + n, "linear", 6);
    n += 6;
    put_key(file, &n, "gemma3.rope.scaling.factor", 6);
    f = 8.0f;
    memcpy(&bits, &f, 4);
    put_le(file, &n, bits, 4);
    for (uint32_t layer = 0; layer < 12; layer++) {
        CHECK_CODE(posenc_rope_init_gguf_layer(file, n, NULL, 0, layer, &r), POSENC_OK);
        CHECK(same_rope(&r, layer % 6 == 5 ? &global : &local), "GGUF Gemma 3 layer %u", layer);
    }
}

/* ------------------------------------------------------------ fused entry points */

/* Copies token-major rows (tokens x heads x hd) into a cache through a view. */
static void scatter_u16(uint16_t *cache, const uint16_t *rows, size_t n_rows, PosencView v,
                        size_t hd) {
    for (size_t i = 0; i < n_rows; i++) {
        size_t t = i / v.n_heads, h = i % v.n_heads;
        memcpy(cache + v.offset + t * v.token_stride + h * v.head_stride, rows + i * hd,
               hd * sizeof *rows);
    }
}

/* Rotate-into (f32 -> bf16, f32 -> f16, bf16 -> f32, f16 -> f16), views-into and Q in place
 * + K into a cache: each equals rotating a float copy in place and rounding it once, with
 * the rounding done here in C. */
static void test_rotate_into(void) {
    enum { T = 3, HQ = 4, HK = 2, D = 16, CTX = 8, NQ = T * HQ * D, NK = T * HK * D,
           NC = HK * CTX * D };
    const int32_t pos[T] = {7, 8, 300};
    PosencRopeConfig cfg = config(D, 10000.0f, POSENC_LAYOUT_ROTATE_HALF);
    cfg.rotary_dim = 12;
    PosencRope rope;
    CHECK_CODE(posenc_rope_init(&cfg, &rope), POSENC_OK);
    float table[T * 12];
    CHECK_CODE(posenc_rope_table(&rope, pos, T, table, T * 12), POSENC_OK);
    PosencAngles ap = at_positions(pos, T), at = at_table(table, T * 12, T);

    float k[NK], kr[NK], q[NQ], qr[NQ];
    for (int i = 0; i < NK; i++) k[i] = kr[i] = (float)(((i * 7) % 19 - 9) * 0.15);
    for (int i = 0; i < NQ; i++) q[i] = qr[i] = (float)(((i * 5) % 13 - 6) * 0.2);
    CHECK_CODE(posenc_rope_rotate_f32(&rope, POSENC_OP_APPLY, kr, NK, HK, &ap), POSENC_OK);
    CHECK_CODE(posenc_rope_rotate_f32(&rope, POSENC_OP_APPLY, qr, NQ, HQ, &ap), POSENC_OK);
    uint16_t kb[NK], kh[NK];
    for (int i = 0; i < NK; i++) kb[i] = float_to_bf16(kr[i]), kh[i] = double_to_f16(kr[i]);

    /* f32 -> bf16 head-major slot at position 2, from the table; f32 -> f16 token-major. */
    PosencView hm = {HK, D, CTX * D, 2 * D}, tm = {HK, HK * D, D, 4 * HK * D};
    uint16_t cache[NC], want[NC];
    for (int i = 0; i < NC; i++) cache[i] = want[i] = 0x1234;
    scatter_u16(want, kb, T * HK, hm, D);
    CHECK_CODE(posenc_rope_apply_into(&rope, POSENC_DTYPE_F32, k, NK, HK, POSENC_DTYPE_BF16,
                                      cache, NC, hm, &at),
               POSENC_OK);
    CHECK(memcmp(cache, want, sizeof cache) == 0, "f32 -> bf16 head-major slot differs");
    for (int i = 0; i < NC; i++) cache[i] = want[i] = 0x1234;
    scatter_u16(want, kh, T * HK, tm, D);
    CHECK_CODE(posenc_rope_apply_into(&rope, POSENC_DTYPE_F32, k, NK, HK, POSENC_DTYPE_F16,
                                      cache, NC, tm, &ap),
               POSENC_OK);
    CHECK(memcmp(cache, want, sizeof cache) == 0, "f32 -> f16 token-major slot differs");

    /* bf16 -> f32: the bf16 values widened, rotated in float (no rounding on the way out). */
    uint16_t kbs[NK];
    float wide[NK], out[NK];
    for (int i = 0; i < NK; i++) kbs[i] = float_to_bf16(k[i]), wide[i] = (float)bf16_to_double(kbs[i]);
    CHECK_CODE(posenc_rope_rotate_f32(&rope, POSENC_OP_APPLY, wide, NK, HK, &ap), POSENC_OK);
    PosencView flat = {HK, HK * D, D, 0};
    CHECK_CODE(posenc_rope_apply_into(&rope, POSENC_DTYPE_BF16, kbs, NK, HK, POSENC_DTYPE_F32,
                                      out, NK, flat, &at),
               POSENC_OK);
    CHECK(memcmp(out, wide, sizeof out) == 0, "bf16 -> f32 differs from the widened rotation");

    /* views-into: K of a fused [T][q | k] row into the bf16 head-major slot. */
    float fused[T * (HQ + HK) * D];
    for (int t = 0; t < T; t++) {
        memcpy(fused + t * (HQ + HK) * D, q + t * HQ * D, HQ * D * sizeof(float));
        memcpy(fused + t * (HQ + HK) * D + HQ * D, k + t * HK * D, HK * D * sizeof(float));
    }
    PosencView kv = {HK, (HQ + HK) * D, D, HQ * D};
    for (int i = 0; i < NC; i++) cache[i] = want[i] = 0;
    scatter_u16(want, kb, T * HK, hm, D);
    CHECK_CODE(posenc_rope_apply_views_into(&rope, POSENC_DTYPE_F32, fused, T * (HQ + HK) * D,
                                            &kv, 1, POSENC_DTYPE_BF16, cache, NC, &hm, 1, &at),
               POSENC_OK);
    CHECK(memcmp(cache, want, sizeof cache) == 0, "views-into differs");

    /* Q in place + K into the cache (GQA). */
    float q2[NQ];
    memcpy(q2, q, sizeof q);
    for (int i = 0; i < NC; i++) cache[i] = 0;
    CHECK_CODE(posenc_rope_apply_qk_into(&rope, POSENC_DTYPE_F32, q2, NQ, HQ, k, NK, HK,
                                         POSENC_DTYPE_BF16, cache, NC, hm, &ap),
               POSENC_OK);
    CHECK(memcmp(q2, qr, sizeof q2) == 0, "qk-into: q differs from the in-place rotation");
    CHECK(memcmp(cache, want, sizeof cache) == 0, "qk-into: cache differs");

    /* Bad input, nothing written: unknown dtype, a slot past the end, dst overlapping src,
     * mismatched view counts, q of the wrong length. */
    memcpy(want, cache, sizeof cache);
    memcpy(q2, q, sizeof q);
    PosencView past = {HK, D, CTX * D, 7 * D};
    CHECK_CODE(posenc_rope_apply_into(&rope, 5, k, NK, HK, POSENC_DTYPE_BF16, cache, NC, hm, &ap),
               POSENC_ERR_INVALID_ENUM);
    CHECK_CODE(posenc_rope_apply_into(&rope, POSENC_DTYPE_F32, k, NK, HK, POSENC_DTYPE_BF16,
                                      cache, NC, past, &ap),
               POSENC_ERR_LENGTH_MISMATCH);
    CHECK_CODE(posenc_rope_apply_into(&rope, POSENC_DTYPE_BF16, cache, NK, HK, POSENC_DTYPE_BF16,
                                      cache + 8, NK, flat, &ap),
               POSENC_ERR_OVERLAPPING_BUFFERS);
    PosencView two[2] = {hm, hm};
    CHECK_CODE(posenc_rope_apply_views_into(&rope, POSENC_DTYPE_F32, fused, T * (HQ + HK) * D,
                                            &kv, 1, POSENC_DTYPE_BF16, cache, NC, two, 2, &at),
               POSENC_ERR_LENGTH_MISMATCH);
    CHECK_CODE(posenc_rope_apply_qk_into(&rope, POSENC_DTYPE_F32, q2, NQ - 1, HQ, k, NK, HK,
                                         POSENC_DTYPE_BF16, cache, NC, hm, &ap),
               POSENC_ERR_LENGTH_MISMATCH);
    CHECK(memcmp(cache, want, sizeof cache) == 0 && memcmp(q2, q, sizeof q) == 0,
          "a refused rotate-into wrote");
}

/* RMSNorm then RoPE in double, from the definitions (kind: 0 per head, 1 one-plus, 2 row). */
static void normed_ref(double *out, const float *x, int n_tok, int heads, int hd, int kind,
                       const float *w, double eps, const int32_t *pos, double base) {
    int row = heads * hd, group = kind == 2 ? row : hd;
    double *tmp = out;
    for (int t = 0; t < n_tok; t++)
        for (int g = 0; g < row / group; g++) {
            const float *xs = x + t * row + g * group;
            double ms = 0;
            for (int j = 0; j < group; j++) ms += (double)xs[j] * xs[j];
            double r = 1.0 / sqrt(ms / group + eps);
            for (int j = 0; j < group; j++)
                tmp[t * row + g * group + j] = xs[j] * r * (kind == 1 ? 1.0 + w[j] : w[j]);
        }
    double in[4 * 64];
    for (int t = 0; t < n_tok; t++) {
        memcpy(in, tmp + t * row, row * sizeof(double));
        rope_ref(out + t * row, in, 1, heads, hd, hd, 1, pos + t, base, 0);
    }
}

/* QK-norm + RoPE: in place against the double derivation; into a bf16 cache and Q+K against
 * the in-place results. */
static void test_qk_norm(void) {
    enum { T = 3, HQ = 4, HK = 2, D = 16, NQ = T * HQ * D, NK = T * HK * D };
    const int32_t pos[T] = {0, 3, 17};
    PosencRopeConfig cfg = config(D, 10000.0f, POSENC_LAYOUT_ROTATE_HALF);
    PosencRope rope;
    CHECK_CODE(posenc_rope_init(&cfg, &rope), POSENC_OK);
    PosencAngles ap = at_positions(pos, T);
    float wh[D], wr[HQ * D], x0[NQ], x[NQ];
    double ref[NQ];
    for (int i = 0; i < D; i++) wh[i] = 0.5f + i * 0.0625f;
    for (int i = 0; i < HQ * D; i++) wr[i] = 1.5f - i * 0.01f;
    for (int i = 0; i < NQ; i++) x0[i] = (float)(((i * 11) % 17 - 8) * 0.17);
    PosencRmsNorm norms[3] = {{POSENC_NORM_PER_HEAD, wh, D, 1e-6f},
                              {POSENC_NORM_PER_HEAD_ONE_PLUS, wh, D, 1e-6f},
                              {POSENC_NORM_PER_ROW, wr, HQ * D, 1e-6f}};
    for (int kind = 0; kind < 3; kind++) {
        memcpy(x, x0, sizeof x);
        normed_ref(ref, x0, T, HQ, D, kind, kind == 2 ? wr : wh, 1e-6, pos, 10000.0);
        CHECK_CODE(posenc_rope_apply_normed_f32(&rope, x, NQ, HQ, &norms[kind], &ap), POSENC_OK);
        int bad = 0;
        for (int i = 0; i < NQ; i++) bad += fabs(x[i] - ref[i]) > 8 * TOL32 * (1 + fabs(ref[i]));
        CHECK(bad == 0, "norm kind %d: %d values off the double reference", kind, bad);
    }

    /* Q (row norm) and K (one-plus) in place in one call == one at a time. */
    float q[NQ], k[NK], wq[NQ], wk[NK];
    for (int i = 0; i < NQ; i++) q[i] = wq[i] = x0[i];
    for (int i = 0; i < NK; i++) k[i] = wk[i] = x0[NQ - 1 - i];
    PosencRmsNorm *qn = &norms[2], *kn = &norms[1];
    CHECK_CODE(posenc_rope_apply_normed_f32(&rope, wq, NQ, HQ, qn, &ap), POSENC_OK);
    CHECK_CODE(posenc_rope_apply_normed_f32(&rope, wk, NK, HK, kn, &ap), POSENC_OK);
    CHECK_CODE(posenc_rope_apply_qk_normed_f32(&rope, q, NQ, HQ, qn, k, NK, HK, kn, &ap),
               POSENC_OK);
    CHECK(memcmp(q, wq, sizeof q) == 0 && memcmp(k, wk, sizeof k) == 0,
          "qk-normed differs from two normed calls");

    /* K normed into a bf16 token-major cache == the in-place f32 result rounded here. */
    enum { CTX = 5, NC = CTX * HK * D };
    uint16_t cache[NC], want[NC], kb[NK];
    for (int i = 0; i < NK; i++) kb[i] = float_to_bf16(wk[i]), k[i] = x0[NQ - 1 - i];
    PosencView slot = {HK, HK * D, D, 2 * HK * D};
    for (int i = 0; i < NC; i++) cache[i] = want[i] = 0;
    scatter_u16(want, kb, T * HK, slot, D);
    CHECK_CODE(posenc_rope_apply_normed_into(&rope, POSENC_DTYPE_F32, k, NK, HK, kn,
                                             POSENC_DTYPE_BF16, cache, NC, slot, &ap),
               POSENC_OK);
    CHECK(memcmp(cache, want, sizeof cache) == 0, "normed-into differs");
    for (int i = 0; i < NQ; i++) q[i] = x0[i];
    for (int i = 0; i < NC; i++) cache[i] = 0;
    CHECK_CODE(posenc_rope_apply_qk_normed_into(&rope, POSENC_DTYPE_F32, q, NQ, HQ, qn, k, NK, HK,
                                                kn, POSENC_DTYPE_BF16, cache, NC, slot, &ap),
               POSENC_OK);
    CHECK(memcmp(q, wq, sizeof q) == 0 && memcmp(cache, want, sizeof cache) == 0,
          "qk-normed-into differs");

    /* Bad input, nothing written: unknown kind, short weight, negative eps, NULL norm. */
    PosencRmsNorm bad_kind = {9, wh, D, 1e-6f}, short_w = {0, wh, D - 1, 1e-6f},
                  neg = {0, wh, D, -1.0f};
    for (int i = 0; i < NQ; i++) q[i] = x0[i];
    CHECK_CODE(posenc_rope_apply_normed_f32(&rope, q, NQ, HQ, &bad_kind, &ap),
               POSENC_ERR_INVALID_ENUM);
    CHECK_CODE(posenc_rope_apply_qk_normed_f32(&rope, q, NQ, HQ, qn, k, NK, HK, &short_w, &ap),
               POSENC_ERR_LENGTH_MISMATCH);
    CHECK_CODE(posenc_rope_apply_normed_into(&rope, POSENC_DTYPE_F32, k, NK, HK, &neg,
                                             POSENC_DTYPE_BF16, cache, NC, slot, &ap),
               POSENC_ERR_PARAMETER_OUT_OF_RANGE);
    CHECK_CODE(posenc_rope_apply_qk_normed_into(&rope, POSENC_DTYPE_F32, q, NQ, HQ, NULL, k, NK,
                                                HK, kn, POSENC_DTYPE_BF16, cache, NC, slot, &ap),
               POSENC_ERR_NULL_POINTER);
    CHECK(memcmp(q, x0, sizeof q) == 0 && memcmp(cache, want, sizeof cache) == 0,
          "a refused normed call wrote");
}

/* The backward: a rotation by -theta times the attention factor, by hand in double (YaRN,
 * factor != 1); <J v, w> = <v, J^T w>; Q+K, views and axes against the one-buffer form. */
static void test_backward(void) {
    enum { T = 3, H = 2, D = 16, N = T * H * D };
    const int32_t pos[T] = {1, 50, 300};
    PosencRopeConfig cfg = config(D, 10000.0f, POSENC_LAYOUT_INTERLEAVED);
    cfg.scaling.kind = POSENC_SCALING_YARN;
    cfg.scaling.params.yarn.factor = 4.0f;
    cfg.scaling.params.yarn.original_max_positions = 64;
    PosencRope rope;
    CHECK_CODE(posenc_rope_init(&cfg, &rope), POSENC_OK);
    double m = posenc_rope_attention_factor(&rope);
    CHECK(m > 1.05, "YaRN attention factor %f", m);
    float inv[D / 2];
    CHECK_CODE(posenc_rope_inv_freq(&rope, inv, D / 2), POSENC_OK);
    float table[T * D];
    CHECK_CODE(posenc_rope_table(&rope, pos, T, table, T * D), POSENC_OK);
    PosencAngles ap = at_positions(pos, T), at = at_table(table, T * D, T);

    float g[N], v[N], jv[N];
    for (int i = 0; i < N; i++) g[i] = (float)(((i * 3) % 11 - 5) * 0.21);
    for (int i = 0; i < N; i++) v[i] = jv[i] = (float)(((i * 7) % 13 - 6) * 0.11);
    float gt[N];
    memcpy(gt, g, sizeof g);
    CHECK_CODE(posenc_rope_rotate_f32(&rope, POSENC_OP_BACKWARD, gt, N, H, &at), POSENC_OK);
    int bad = 0;
    for (int i = 0; i < T * H; i++) {
        double p = pos[i / H];
        for (int j = 0; j < D / 2; j++) {
            double th = -p * inv[j], a = g[i * D + 2 * j], b = g[i * D + 2 * j + 1];
            bad += fabs(gt[i * D + 2 * j] - m * (a * cos(th) - b * sin(th))) > 2e-5;
            bad += fabs(gt[i * D + 2 * j + 1] - m * (b * cos(th) + a * sin(th))) > 2e-5;
        }
    }
    CHECK(bad == 0, "backward: %d values off m * R(-theta) g", bad);
    CHECK_CODE(posenc_rope_rotate_f32(&rope, POSENC_OP_APPLY, jv, N, H, &ap), POSENC_OK);
    double l = 0, r = 0;
    for (int i = 0; i < N; i++) l += (double)jv[i] * g[i], r += (double)v[i] * gt[i];
    CHECK(fabs(l - r) < 1e-4 * (1 + fabs(l)), "<Jv, w> = %.9g but <v, J^T w> = %.9g", l, r);

    /* Q+K (f32, K = the same g), views (head-major copy of g), axes (text tokens). */
    float gq[N], gk[N];
    memcpy(gq, g, sizeof g);
    memcpy(gk, g, sizeof g);
    CHECK_CODE(posenc_rope_apply_qk_backward_f32(&rope, gq, N, H, gk, N, H, &ap), POSENC_OK);
    CHECK(memcmp(gq, gt, sizeof gq) == 0 && memcmp(gk, gt, sizeof gk) == 0,
          "qk backward differs");
    float hmg[N];
    PosencView hm = {H, D, T * D, 0};
    for (int i = 0; i < T * H; i++)
        memcpy(hmg + (i % H) * T * D + (i / H) * D, g + i * D, D * sizeof(float));
    CHECK_CODE(posenc_rope_apply_views_backward_f32(&rope, hmg, N, &hm, 1, &at), POSENC_OK);
    bad = 0;
    for (int i = 0; i < T * H; i++)
        bad += memcmp(hmg + (i % H) * T * D + (i / H) * D, gt + i * D, D * sizeof(float)) != 0;
    CHECK(bad == 0, "views backward differs in %d heads", bad);
    int32_t axes[T];
    for (int t = 0; t < T; t++) axes[t] = pos[t];
    memcpy(gq, g, sizeof g);
    CHECK_CODE(posenc_rope_apply_axes_backward_f32(&rope, gq, N, H, axes, T, 1), POSENC_OK);
    CHECK(memcmp(gq, gt, sizeof gq) == 0, "axes backward differs");

    /* f16: m * R(-theta) of the f16 values, by hand in double, rounded once (within an f16
     * ulp: the f32 computation can move a value across a rounding boundary). */
    uint16_t gh[N], gh2[N];
    for (int i = 0; i < N; i++) gh[i] = gh2[i] = double_to_f16(g[i]);
    CHECK_CODE(posenc_rope_rotate_f16(&rope, POSENC_OP_BACKWARD, gh, N, H, &ap), POSENC_OK);
    bad = 0;
    for (int i = 0; i < T * H; i++) {
        double p = pos[i / H];
        for (int j = 0; j < D / 2; j++) {
            double th = -p * inv[j], a = f16_to_double(gh2[i * D + 2 * j]),
                   b = f16_to_double(gh2[i * D + 2 * j + 1]);
            double wa = m * (a * cos(th) - b * sin(th)), wb = m * (b * cos(th) + a * sin(th));
            bad += fabs(f16_to_double(gh[i * D + 2 * j]) - wa) > ulp_at(wa, 10);
            bad += fabs(f16_to_double(gh[i * D + 2 * j + 1]) - wb) > ulp_at(wb, 10);
        }
    }
    CHECK(bad == 0, "f16 backward: %d values off m * R(-theta) g", bad);

    /* Bad input, nothing written. */
    memcpy(gq, g, sizeof g);
    CHECK_CODE(posenc_rope_apply_qk_backward_f32(&rope, gq, N, H, gk, N - 1, H, &ap),
               POSENC_ERR_LENGTH_MISMATCH);
    PosencView twice[2] = {hm, hm};
    CHECK_CODE(posenc_rope_apply_views_backward_f32(&rope, gq, N, twice, 2, &at),
               POSENC_ERR_PARAMETER_OUT_OF_RANGE);
    CHECK_CODE(posenc_rope_apply_axes_backward_bf16(&rope, gh2, N, H, axes, T, 3),
               POSENC_ERR_LENGTH_MISMATCH); /* 3 axes for a rope of 1 */
    CHECK_CODE(posenc_rope_apply_axes_backward_bf16(&rope, gh2, N, H, axes, T - 1, 1),
               POSENC_ERR_LENGTH_MISMATCH); /* positions of 2 tokens for 3 tokens of g */
    CHECK_CODE(posenc_rope_rotate_f32(&rope, POSENC_OP_BACKWARD, gq, N, H, NULL),
               POSENC_ERR_NULL_POINTER);
    CHECK(memcmp(gq, g, sizeof g) == 0, "a refused backward wrote");
    bad = 0;
    for (int i = 0; i < N; i++) bad += gh2[i] != double_to_f16(g[i]);
    CHECK(bad == 0, "a refused axes backward wrote");
}

/* The f16 and bf16 forms of the suffixed fused functions: the norm rounds the float result of
 * the widened input once (rounded here in C), and Q+K, views and axes backward equal the
 * one-buffer backward of the same dtype. */
typedef struct {
    const char *name;
    uint16_t (*round)(float);
    double (*widen)(uint16_t);
    int (*rotate)(const PosencRope *, PosencOp, uint16_t *, size_t, size_t, const PosencAngles *);
    int (*normed)(const PosencRope *, uint16_t *, size_t, size_t, const PosencRmsNorm *,
                  const PosencAngles *);
    int (*qk_normed)(const PosencRope *, uint16_t *, size_t, size_t, const PosencRmsNorm *,
                     uint16_t *, size_t, size_t, const PosencRmsNorm *, const PosencAngles *);
    int (*qk_backward)(const PosencRope *, uint16_t *, size_t, size_t, uint16_t *, size_t, size_t,
                       const PosencAngles *);
    int (*views_backward)(const PosencRope *, uint16_t *, size_t, const PosencView *, size_t,
                          const PosencAngles *);
    int (*axes_backward)(const PosencRope *, uint16_t *, size_t, size_t, const int32_t *, size_t,
                         size_t);
} HalfApi;

static uint16_t round_f16(float f) { return double_to_f16(f); }

static void test_half_variants(void) {
    enum { T = 2, HQ = 4, HK = 2, D = 16, NQ = T * HQ * D, NK = T * HK * D };
    const int32_t pos[T] = {12, 345};
    const HalfApi apis[2] = {
        {"f16", round_f16, f16_to_double, posenc_rope_rotate_f16, posenc_rope_apply_normed_f16,
         posenc_rope_apply_qk_normed_f16, posenc_rope_apply_qk_backward_f16,
         posenc_rope_apply_views_backward_f16, posenc_rope_apply_axes_backward_f16},
        {"bf16", float_to_bf16, bf16_to_double, posenc_rope_rotate_bf16,
         posenc_rope_apply_normed_bf16, posenc_rope_apply_qk_normed_bf16,
         posenc_rope_apply_qk_backward_bf16, posenc_rope_apply_views_backward_bf16,
         posenc_rope_apply_axes_backward_bf16},
    };
    PosencRopeConfig cfg = config(D, 10000.0f, POSENC_LAYOUT_INTERLEAVED);
    cfg.scaling.kind = POSENC_SCALING_YARN;
    cfg.scaling.params.yarn.factor = 2.0f;
    cfg.scaling.params.yarn.original_max_positions = 128;
    PosencRope rope;
    CHECK_CODE(posenc_rope_init(&cfg, &rope), POSENC_OK);
    PosencAngles ap = at_positions(pos, T);
    float w[D];
    for (int i = 0; i < D; i++) w[i] = 0.25f * (i % 4) - 0.3f;
    PosencRmsNorm qn = {POSENC_NORM_PER_HEAD, w, D, 1e-6f},
                  kn = {POSENC_NORM_PER_HEAD_ONE_PLUS, w, D, 1e-5f};
    for (int a = 0; a < 2; a++) {
        const HalfApi *h = &apis[a];
        uint16_t q0[NQ], k0[NK], q[NQ], k[NK], wq[NQ], wk[NK];
        float f[NQ];
        for (int i = 0; i < NQ; i++) q0[i] = h->round((float)(((i * 7) % 15 - 7) * 0.19));
        for (int i = 0; i < NK; i++) k0[i] = h->round((float)(((i * 5) % 9 - 4) * 0.31));

        /* normed in place: the float result of the widened values, rounded once. */
        for (int i = 0; i < NQ; i++) f[i] = (float)h->widen(q0[i]), q[i] = q0[i];
        CHECK_CODE(posenc_rope_apply_normed_f32(&rope, f, NQ, HQ, &qn, &ap), POSENC_OK);
        CHECK_CODE(h->normed(&rope, q, NQ, HQ, &qn, &ap), POSENC_OK);
        int bad = 0;
        for (int i = 0; i < NQ; i++) bad += q[i] != h->round(f[i]);
        CHECK(bad == 0, "%s normed: %d values differ from the rounded float result", h->name, bad);

        /* qk_normed == normed on each buffer. */
        memcpy(wq, q, sizeof q);
        memcpy(wk, k0, sizeof k0);
        CHECK_CODE(h->normed(&rope, wk, NK, HK, &kn, &ap), POSENC_OK);
        memcpy(q, q0, sizeof q0);
        memcpy(k, k0, sizeof k0);
        CHECK_CODE(h->qk_normed(&rope, q, NQ, HQ, &qn, k, NK, HK, &kn, &ap), POSENC_OK);
        CHECK(memcmp(q, wq, sizeof q) == 0 && memcmp(k, wk, sizeof k) == 0,
              "%s qk_normed differs from two normed calls", h->name);

        /* Backward: Q+K, one token-major view, one axis == the one-buffer backward. */
        memcpy(wq, q0, sizeof q0);
        memcpy(wk, k0, sizeof k0);
        CHECK_CODE(h->rotate(&rope, POSENC_OP_BACKWARD, wq, NQ, HQ, &ap), POSENC_OK);
        CHECK_CODE(h->rotate(&rope, POSENC_OP_BACKWARD, wk, NK, HK, &ap), POSENC_OK);
        memcpy(q, q0, sizeof q0);
        memcpy(k, k0, sizeof k0);
        CHECK_CODE(h->qk_backward(&rope, q, NQ, HQ, k, NK, HK, &ap), POSENC_OK);
        CHECK(memcmp(q, wq, sizeof q) == 0 && memcmp(k, wk, sizeof k) == 0,
              "%s qk backward differs", h->name);
        PosencView tm = {HQ, HQ * D, D, 0};
        memcpy(q, q0, sizeof q0);
        CHECK_CODE(h->views_backward(&rope, q, NQ, &tm, 1, &ap), POSENC_OK);
        CHECK(memcmp(q, wq, sizeof q) == 0, "%s views backward differs", h->name);
        memcpy(q, q0, sizeof q0);
        CHECK_CODE(h->axes_backward(&rope, q, NQ, HQ, pos, T, 1), POSENC_OK);
        CHECK(memcmp(q, wq, sizeof q) == 0, "%s axes backward differs", h->name);

        /* Bad input, nothing written. */
        memcpy(q, q0, sizeof q0);
        memcpy(k, k0, sizeof k0);
        CHECK_CODE(h->normed(&rope, q, NQ, 0, &qn, &ap), POSENC_ERR_ZERO_HEADS);
        CHECK_CODE(h->qk_normed(&rope, q, NQ, HQ, &qn, q, NQ, HQ, &kn, &ap),
                   POSENC_ERR_OVERLAPPING_BUFFERS);
        CHECK_CODE(h->qk_backward(&rope, q, NQ, HQ, k, NK, 0, &ap), POSENC_ERR_ZERO_HEADS);
        CHECK_CODE(h->views_backward(&rope, q, NQ - 1, &tm, 1, &ap), POSENC_ERR_LENGTH_MISMATCH);
        CHECK_CODE(h->axes_backward(&rope, q, NQ, HQ, pos, T, 0),
                   POSENC_ERR_PARAMETER_OUT_OF_RANGE);
        CHECK(memcmp(q, q0, sizeof q) == 0 && memcmp(k, k0, sizeof k) == 0,
              "%s: a refused call wrote", h->name);
    }
}

int main(void) {
    test_library_info();
    test_known_rotation();
    test_general_shapes();
    test_tables_and_frequencies();
    test_errors();
    test_sinusoidal();
    test_alibi();
    test_corrupted_rope_is_silent();
    test_runtime_rotation();
    test_quantized_shift();
    test_presets();
    test_loading();
    test_rotate_into();
    test_qk_norm();
    test_backward();
    test_half_variants();
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
