/* dtype.c - the harness's element types: names, DLPack codes, and exact
 * loads / round-to-nearest-even stores, written independently of any plugin. */
#include <math.h>
#include <string.h>

#include "harness.h"

static const struct {
    const char *name;
    size_t size;
    DLDataType dl;
    uint32_t bit;
} T[HDT_COUNT_] = {
    [HDT_F32] = {"f32", 4, {kDLFloat, 32, 1}, SGL_ATTN_DT_F32},
    [HDT_F16] = {"f16", 2, {kDLFloat, 16, 1}, SGL_ATTN_DT_F16},
    [HDT_BF16] = {"bf16", 2, {kDLBfloat, 16, 1}, SGL_ATTN_DT_BF16},
    [HDT_F64] = {"f64", 8, {kDLFloat, 64, 1}, SGL_ATTN_DT_F64},
    [HDT_I32] = {"i32", 4, {kDLInt, 32, 1}, 0},
    [HDT_I64] = {"i64", 8, {kDLInt, 64, 1}, 0},
    [HDT_FP8_E4M3] = {"fp8_e4m3", 1, {SGL_ATTN_DL_FLOAT8_E4M3FN_CODE, 8, 1}, SGL_ATTN_DT_FP8_E4M3},
    [HDT_U8] = {"u8", 1, {kDLUInt, 8, 1}, 0},
    [HDT_E4M3] = {"e4m3", 1, {SGL_ATTN_DL_FLOAT8_E4M3_CODE, 8, 1}, SGL_ATTN_DT_FP8_E4M3},
    [HDT_E5M2] = {"e5m2", 1, {SGL_ATTN_DL_FLOAT8_E5M2_CODE, 8, 1}, SGL_ATTN_DT_FP8_E5M2},
};

size_t hdtype_size(hdtype t) { return T[t].size; }
const char *hdtype_name(hdtype t) { return T[t].name; }
DLDataType hdtype_dl(hdtype t) { return T[t].dl; }
uint32_t hdtype_bit(hdtype t) { return T[t].bit; }
int hdtype_is_float(hdtype t) { return t <= HDT_F64 || t == HDT_FP8_E4M3; }

int hdtype_parse(const char *s, hdtype *t) {
    for (int i = 0; i < HDT_COUNT_; i++)
        if (!strcmp(s, T[i].name)) {
            *t = (hdtype)i;
            return 0;
        }
    if (!strcmp(s, "fp32") || !strcmp(s, "float32")) return *t = HDT_F32, 0;
    if (!strcmp(s, "fp16") || !strcmp(s, "float16")) return *t = HDT_F16, 0;
    if (!strcmp(s, "bfloat16")) return *t = HDT_BF16, 0;
    if (!strcmp(s, "fp8") || !strcmp(s, "float8_e4m3fn") || !strcmp(s, "e4m3fn")) return *t = HDT_FP8_E4M3, 0;
    return -1;
}

static float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static double f16_value(uint16_t h) {
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
    return (h & 0x8000) ? -v : v;
}

/* Round to nearest even in f16 by arithmetic on the value. */
static uint16_t f16_bits(double x) {
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    if (isnan(x)) return 0x7e00;
    double a = fabs(x);
    if (a < 0x1p-14) return (uint16_t)(sign | (uint16_t)nearbyint(a * 0x1p24));
    int e;
    frexp(a, &e);
    e -= 1;
    double m = nearbyint(ldexp(a, 10 - e));
    if (m >= 2048) m /= 2, e += 1;
    if (e > 15) return (uint16_t)(sign | 0x7c00);
    return (uint16_t)(sign | (uint16_t)((e + 15) << 10) | (uint16_t)(m - 1024));
}

/* bf16: the f32 value rounded at bit 16, ties to even. */
static uint16_t bf16_bits(double x) {
    float f = (float)x;
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    uint32_t low = u & 0xffffu, hi = u >> 16;
    if (low > 0x8000u || (low == 0x8000u && (hi & 1u))) hi++;
    return (uint16_t)hi;
}

/* fp8, either format (here: e5m2; e4m3 has its own pair below): mantissa
 * bits mb and bias; e4m3 (fn) has no infinities and one NaN mantissa
 * pattern at the top exponent. */
static double fp8_value(uint8_t c, int e5) {
    const int mb = e5 ? 2 : 3, bias = e5 ? 15 : 7, top = e5 ? 31 : 15;
    const int e = (c >> mb) & top, m = c & ((1 << mb) - 1);
    double v;
    if (e == top && (e5 || m == (1 << mb) - 1)) v = e5 && !m ? INFINITY : NAN;
    else v = e == 0 ? ldexp(m, 1 - bias - mb) : ldexp((1 << mb) + m, e - bias - mb);
    return (c & 0x80) ? -v : v;
}

/* Nearest fp8 value, ties to even, saturating at the largest finite one
 * (448 / 57344), as an engine's fp8 KV store does; NaN stays NaN. */
static uint8_t fp8_bits(double x, int e5) {
    const int mb = e5 ? 2 : 3, bias = e5 ? 15 : 7;
    const uint8_t sign = signbit(x) ? 0x80 : 0, max_code = e5 ? 0x7b : 0x7e;
    if (isnan(x)) return 0x7f;
    const double a = fabs(x);
    if (a >= fp8_value(max_code, e5)) return sign | max_code;
    /* the spacing of values at a's binade (subnormals: the least normal's) */
    int e;
    frexp(a, &e);
    e -= 1;
    if (e < 1 - bias) e = 1 - bias;
    const double q = ldexp(1.0, e - mb);
    const double n = nearbyint(a / q); /* steps of q; ties to even */
    const double v = n * q;
    /* encode v exactly */
    if (v < ldexp(1.0, 1 - bias)) return sign | (uint8_t)nearbyint(v / ldexp(1.0, 1 - bias - mb));
    int ve;
    frexp(v, &ve);
    ve -= 1;
    const int m = (int)nearbyint(ldexp(v, mb - ve)) - (1 << mb);
    return sign | (uint8_t)(((ve + bias) << mb) | m);
}

/* e4m3fn: bias 7, no inf, S.1111.111 is NaN, subnormals 2^-9 apart. */
static double e4m3_value(uint8_t b) {
    const int e = (b >> 3) & 15, m = b & 7;
    const double v = e == 15 && m == 7 ? NAN : e == 0 ? ldexp(m, -9) : ldexp(8 + m, e - 10);
    return (b & 0x80) ? -v : v;
}

/* Round to nearest even in e4m3 by arithmetic on the value, saturating at
 * +-448 (the largest finite value) as the plugins' fp8 saves do. */
static uint8_t e4m3_bits(double x) {
    const uint8_t sign = signbit(x) ? 0x80 : 0;
    if (isnan(x)) return (uint8_t)(sign | 0x7f);
    double a = fabs(x);
    if (a >= 448.0) return (uint8_t)(sign | 0x7e);
    if (a < 0x1p-6) return (uint8_t)(sign | (uint8_t)nearbyint(a * 0x1p9)); /* 8 = 2^-6, the smallest normal */
    int e;
    frexp(a, &e);
    e -= 1;
    double m = nearbyint(ldexp(a, 3 - e));
    if (m >= 16) m /= 2, e += 1;
    if (e > 8 || (e == 8 && m > 14)) return (uint8_t)(sign | 0x7e);
    return (uint8_t)(sign | (uint8_t)((e + 7) << 3) | (uint8_t)(m - 8));
}

double hdtype_load(hdtype t, const void *buf, size_t i) {
    switch (t) {
    case HDT_F32: return ((const float *)buf)[i];
    case HDT_F16: return f16_value(((const uint16_t *)buf)[i]);
    case HDT_BF16: return bits_f32((uint32_t)((const uint16_t *)buf)[i] << 16);
    case HDT_F64: return ((const double *)buf)[i];
    case HDT_I32: return ((const int32_t *)buf)[i];
    case HDT_I64: return (double)((const int64_t *)buf)[i];
    case HDT_FP8_E4M3:
    case HDT_E4M3: return e4m3_value(((const uint8_t *)buf)[i]);
    case HDT_E5M2: return fp8_value(((const uint8_t *)buf)[i], 1);
    case HDT_U8: return ((const uint8_t *)buf)[i];
    default: return NAN;
    }
}

void hdtype_store(hdtype t, void *buf, size_t i, double v) {
    switch (t) {
    case HDT_F32: ((float *)buf)[i] = (float)v; break;
    case HDT_F16: ((uint16_t *)buf)[i] = f16_bits(v); break;
    case HDT_BF16: ((uint16_t *)buf)[i] = bf16_bits(v); break;
    case HDT_F64: ((double *)buf)[i] = v; break;
    case HDT_I32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case HDT_I64: ((int64_t *)buf)[i] = (int64_t)v; break;
    case HDT_FP8_E4M3:
    case HDT_E4M3: ((uint8_t *)buf)[i] = e4m3_bits(v); break;
    case HDT_E5M2: ((uint8_t *)buf)[i] = fp8_bits(v, 1); break;
    case HDT_U8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    default: break;
    }
}

double hdtype_round(hdtype t, double v) {
    unsigned char tmp[8];
    hdtype_store(t, tmp, 0, v);
    return hdtype_load(t, tmp, 0);
}
