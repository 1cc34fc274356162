/* attn_ref.c - float64 reference for the platform plugin tests (attn_ref.h). */
#include "attn_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

size_t rdt_size(rdt t) { return t == RT_F32 ? 4 : 2; }
const char *rdt_name(rdt t) { return t == RT_F32 ? "f32" : t == RT_F16 ? "f16" : "bf16"; }
double rdt_nmse_limit(rdt t) { return t == RT_F32 ? 1e-8 : t == RT_F16 ? 1e-5 : 1e-4; }

static uint16_t bf16_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
static float bf16_value(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

double rdt_round(rdt t, double v) {
    if (t == RT_F32) return (double)(float)v;
    if (t == RT_F16) return (double)(_Float16)(float)v;
    return (double)bf16_value(bf16_bits((float)v));
}

void rdt_store(rdt t, void *buf, size_t i, double v) {
    if (t == RT_F32) {
        ((float *)buf)[i] = (float)v;
    } else if (t == RT_F16) {
        ((_Float16 *)buf)[i] = (_Float16)(float)v;
    } else {
        ((uint16_t *)buf)[i] = bf16_bits((float)v);
    }
}

double rdt_load(rdt t, const void *buf, size_t i) {
    if (t == RT_F32) return ((const float *)buf)[i];
    if (t == RT_F16) return (double)((const _Float16 *)buf)[i];
    return bf16_value(((const uint16_t *)buf)[i]);
}

uint64_t rrng_u64(rrng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
int rrng_int(rrng *r, int lo, int hi) { return lo + (int)(rrng_u64(r) % (uint64_t)(hi - lo + 1)); }
double rrng_normal(rrng *r, double sigma) {
    double u1 = ((double)(rrng_u64(r) >> 11) + 1.0) / 9007199254740993.0;
    double u2 = (double)(rrng_u64(r) >> 11) / 9007199254740992.0;
    return sigma * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static void shuffle(rrng *r, int *v, int n) {
    for (int i = n - 1; i > 0; i--) {
        int j = rrng_int(r, 0, i), t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

int ref_batch_build(ref_batch *b, rrng *r, int bs, const int *seq, const int *ext, int page) {
    memset(b, 0, sizeof *b);
    b->bs = bs;
    b->page = page;
    int maxseq = 0, pages = 0;
    for (int i = 0; i < bs; i++) {
        b->T += ext[i];
        if (seq[i] > maxseq) maxseq = seq[i];
        pages += (seq[i] + page - 1) / page;
    }
    pages += 3; /* spare pages nobody owns */
    b->rows = bs + 2;
    b->cols = maxseq + 5;
    b->slots = (pages + 1) * page; /* + page 0, never handed out */
    b->seq = calloc((size_t)bs, sizeof(int));
    b->pre = calloc((size_t)bs, sizeof(int));
    b->ext = calloc((size_t)bs, sizeof(int));
    b->row = calloc((size_t)bs, sizeof(int));
    b->r2t = calloc((size_t)b->rows * (size_t)b->cols, sizeof(int64_t));
    b->loc = calloc((size_t)b->T + 1, sizeof(int64_t));
    b->tok_row = calloc((size_t)b->T + 1, sizeof(int));
    b->tok_pos = calloc((size_t)b->T + 1, sizeof(int));
    int *pg = calloc((size_t)pages, sizeof(int)), *rows = calloc((size_t)b->rows, sizeof(int));
    if (!b->seq || !b->pre || !b->ext || !b->row || !b->r2t || !b->loc || !b->tok_row || !b->tok_pos || !pg ||
        !rows) {
        free(pg);
        free(rows);
        ref_batch_free(b);
        return -1;
    }
    for (int i = 0; i < pages; i++) pg[i] = i + 1;
    shuffle(r, pg, pages);
    for (int i = 0; i < b->rows; i++) rows[i] = i;
    shuffle(r, rows, b->rows);
    for (size_t i = 0; i < (size_t)b->rows * (size_t)b->cols; i++) b->r2t[i] = rrng_int(r, 0, b->slots - 1);
    int next_page = 0, t = 0;
    for (int i = 0; i < bs; i++) {
        b->seq[i] = seq[i];
        b->ext[i] = ext[i];
        b->pre[i] = seq[i] - ext[i];
        b->row[i] = rows[i];
        int64_t *rr = b->r2t + (size_t)rows[i] * (size_t)b->cols;
        for (int p = 0; p < seq[i]; p += page) {
            int base = pg[next_page++] * page;
            for (int j = p; j < seq[i] && j < p + page; j++) rr[j] = base + (j - p);
        }
        for (int j = 0; j < ext[i]; j++, t++) {
            b->tok_row[t] = rows[i];
            b->tok_pos[t] = b->pre[i] + j;
            b->loc[t] = rr[b->pre[i] + j];
        }
    }
    free(pg);
    free(rows);
    return 0;
}

void ref_batch_free(ref_batch *b) {
    free(b->seq);
    free(b->pre);
    free(b->ext);
    free(b->row);
    free(b->r2t);
    free(b->loc);
    free(b->tok_row);
    free(b->tok_pos);
    memset(b, 0, sizeof *b);
}

void ref_attention(const ref_batch *b, const double *q, const double *kpool, const double *vpool, int Hq,
                   int Hkv, int Dqk, int Dv, double scale, double softcap, int window, const double *sinks,
                   double *out) {
    int group = Hq / Hkv;
    size_t kslot = (size_t)Hkv * (size_t)Dqk, vslot = vpool ? (size_t)Hkv * (size_t)Dv : (size_t)Dqk;
    double *s = malloc(sizeof(double) * (size_t)(b->cols + 1));
    if (!s) return;
    for (int t = 0; t < b->T; t++) {
        const int64_t *rr = b->r2t + (size_t)b->tok_row[t] * (size_t)b->cols;
        int pos = b->tok_pos[t], lo = window >= 0 && pos - window > 0 ? pos - window : 0;
        for (int h = 0; h < Hq; h++) {
            int kvh = h / group;
            const double *qv = q + ((size_t)t * Hq + h) * Dqk;
            double m = sinks ? sinks[h] : -INFINITY;
            for (int j = lo; j <= pos; j++) {
                const double *kv = kpool + (size_t)rr[j] * kslot + (size_t)kvh * Dqk;
                double dot = 0;
                for (int d = 0; d < Dqk; d++) dot += qv[d] * kv[d];
                dot *= scale;
                if (softcap > 0) dot = softcap * tanh(dot / softcap);
                s[j] = dot;
                if (dot > m) m = dot;
            }
            double l = sinks ? exp(sinks[h] - m) : 0;
            for (int j = lo; j <= pos; j++) l += (s[j] = exp(s[j] - m));
            double *o = out + ((size_t)t * Hq + h) * Dv;
            for (int d = 0; d < Dv; d++) {
                double acc = 0;
                for (int j = lo; j <= pos; j++) {
                    const double *vv = vpool ? vpool + (size_t)rr[j] * vslot + (size_t)kvh * Dv
                                             : kpool + (size_t)rr[j] * vslot;
                    acc += s[j] * vv[d];
                }
                o[d] = acc / l;
            }
        }
    }
    free(s);
}

double ref_nmse(const double *got, const double *ref, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(got[i])) return NAN;
        num += (got[i] - ref[i]) * (got[i] - ref[i]);
        den += ref[i] * ref[i];
    }
    return den > 0 ? num / den : num;
}
