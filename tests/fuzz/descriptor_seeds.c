/* descriptor_seeds.c - writes the seed inputs of fuzz_descriptor (in its
 * input layout) to the directory given: a well-formed full plugin with
 * usable caps, a custom hybrid, and a few that each break one rule.  Run by
 * hand when the ABI grows; its output is committed under
 * tests/fuzz/corpus/descriptor/.  `make fuzz-seeds` runs it. */
#include <stdio.h>
#include <string.h>

#include "sgl_attn_abi.h"

typedef struct out {
    unsigned char b[8192];
    size_t n;
} out;

static void u8(out *o, unsigned v) {
    o->b[o->n++] = (unsigned char)v;
}
static void be(out *o, unsigned long v, int bytes) {
    for (int i = bytes - 1; i >= 0; i--)
        u8(o, (unsigned)(v >> (8 * i)) & 0xff);
}
/* A string as take_str reads it: tag 80 + len for len < 80. */
static void str(out *o, const char *s) {
    if (!s) {
        u8(o, 0);
        return;
    }
    size_t len = strlen(s);
    u8(o, (unsigned)(80 + len));
    for (size_t i = 0; i < len; i++)
        u8(o, (unsigned char)s[i]);
}
static void caps(out *o, int usable) {
    sgl_attn_caps c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    c.arch_major = c.arch_minor = c.arch_min_major = c.arch_min_minor = -1;
    c.arch_max_major = c.arch_max_minor = -1;
    if (usable) {
        c.available = 1;
        strcpy(c.device_name, "seed");
        c.attn_kinds = SGL_ATTN_KIND_MHA | SGL_ATTN_KIND_GQA;
        c.q_dtypes = c.kv_dtypes = SGL_ATTN_DT_F32 | SGL_ATTN_DT_BF16;
        c.features = SGL_ATTN_FEAT_DECODE | SGL_ATTN_FEAT_EXTEND;
        c.n_head_dims = 2;
        c.head_dims[0].qk = c.head_dims[0].v = 128;
        c.head_dims[1].qk = c.head_dims[1].v = 64;
        c.n_page_sizes = 1;
        c.page_sizes[0] = 16;
    }
    memcpy(o->b + o->n, &c, sizeof c);
    o->n += sizeof c;
}

static void plugin(out *o, const char *name, int32_t platform, int32_t role, int32_t kind,
                   const char *custom, unsigned ptrs) {
    u8(o, 0); /* shape: default versions, rc OK, sizes as built */
    str(o, name);
    str(o, "1.0");
    str(o, "a seed plugin");
    str(o, "Apache-2.0");
    str(o, custom);
    be(o, (unsigned long)(uint32_t)platform, 4);
    be(o, (unsigned long)(uint32_t)role, 4);
    be(o, (unsigned long)(uint32_t)kind, 4);
    u8(o, ptrs);
    if (ptrs & 1) {
        u8(o, 2);
        str(o, "flashinfer");
        str(o, "fa3");
    }
    if (ptrs & 2) {
        u8(o, 1);
        str(o, "qwen3_next");
    }
}

static int save(const char *dir, const char *name, const out *o) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(o->b, 1, o->n, f) != o->n) {
        perror(path);
        return 1;
    }
    return fclose(f) != 0;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    int rc = 0;
    out o;
    o.n = 0;
    plugin(&o, "seed_full", SGL_ATTN_PLATFORM_CPU, SGL_ATTN_ROLE_FULL, 0, NULL, 1);
    caps(&o, 1);
    caps(&o, 1);
    rc |= save(argv[1], "full.bin", &o);
    o.n = 0;
    plugin(&o, "seed_custom", SGL_ATTN_PLATFORM_CUDA, SGL_ATTN_ROLE_HYBRID, SGL_ATTN_HYBRID_CUSTOM,
           "retention", 3);
    caps(&o, 1);
    caps(&o, 0);
    rc |= save(argv[1], "custom_hybrid.bin", &o);
    o.n = 0;
    plugin(&o, "Bad-Name", 7, 0, 99, NULL, 0);
    caps(&o, 0);
    rc |= save(argv[1], "bad_enums.bin", &o);
    o.n = 0;
    u8(&o, 0xff); /* every shape flag: odd versions, rc, refusal, sizes */
    be(&o, 2, 2);
    be(&o, 9, 2);
    u8(&o, 5);
    for (int i = 0; i < SGL_ATTN_REASON_MAX; i++)
        u8(&o, 'r');
    be(&o, 8, 2);
    be(&o, 1, 2);
    rc |= save(argv[1], "refusal.bin", &o);
    return rc;
}
