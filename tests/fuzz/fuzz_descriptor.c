/* fuzz_descriptor.c - libFuzzer target: what a plugin hands the host at
 * load.  The input becomes a plugin's answer to negotiation (versions,
 * return code, refusal text, descriptor with any struct_size, strings that
 * may be NULL, long or full of control bytes, lists with or without their
 * terminator, any enum values) and two probe results; the host's
 * plugin_negotiate, plugin_descriptor_check, plugin_caps_check and
 * stack_caps_intersect must judge them without crashing, and an
 * intersection must never claim more than either side. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct reader {
    const uint8_t *p;
    size_t n;
} reader;

static uint32_t take(reader *r, unsigned bytes) {
    uint32_t v = 0;
    for (unsigned i = 0; i < bytes; i++) {
        v = (v << 8) | (r->n ? *r->p : 0);
        if (r->n) r->p++, r->n--;
    }
    return v;
}

/* Strings live in one pool that always ends in NUL, so even an "unterminated"
 * one stops inside memory we own; the checks' own bounds are what is tested. */
typedef struct pool {
    char buf[4096];
    size_t used;
} pool;

static const char *take_str(reader *r, pool *pl) {
    uint32_t tag = take(r, 1);
    if (tag < 16) return NULL;
    size_t len = tag < 200 ? tag % 80 : take(r, 1) + 40; /* up to 295: past every limit */
    if (pl->used + len + 1 >= sizeof pl->buf) return NULL;
    char *s = pl->buf + pl->used;
    for (size_t i = 0; i < len; i++)
        s[i] = (char)(r->n ? take(r, 1) : 'a');
    s[len] = 0;
    pl->used += len + 1;
    return s;
}

static int dummy_probe(uint32_t index, sgl_attn_caps *caps) {
    (void)index, (void)caps;
    return SGL_ATTN_E_NOT_FOUND;
}

static int dummy_create(const sgl_attn_create_args *a, sgl_attn_backend **out) {
    (void)a;
    *out = NULL;
    return SGL_ATTN_E_UNSUPPORTED;
}

static int dummy_mem(int32_t device, size_t bytes, void **ptr) {
    (void)device, (void)bytes, (void)ptr;
    return 1;
}
static int dummy_free(int32_t device, void *ptr) {
    (void)device, (void)ptr;
    return 1;
}
static int dummy_copy(int32_t device, void *dst, const void *src, size_t bytes) {
    (void)device, (void)dst, (void)src, (void)bytes;
    return 1;
}
static int dummy_sync(int32_t device, void *stream) {
    (void)device, (void)stream;
    return 1;
}
static int dummy_stream(int32_t device, void **stream) {
    (void)device, (void)stream;
    return 1;
}

/* The fake plugin's state for one input: the entry reads it (test-only). */
typedef struct fake {
    sgl_attn_plugin desc;
    sgl_attn_device_ops dops;
    const char *aliases[SGL_ATTN_MAX_LIST + 2];
    const char *model_types[SGL_ATTN_MAX_LIST + 2];
    uint16_t major, minor;
    int rc;
    int null_plugin;
    char refusal[SGL_ATTN_REASON_MAX];
} fake;

static fake g_fake;

static int fake_entry(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer) {
    (void)host;
    answer->abi_major = g_fake.major;
    answer->abi_minor = g_fake.minor;
    answer->plugin = g_fake.null_plugin ? NULL : &g_fake.desc;
    memcpy(answer->refusal, g_fake.refusal, sizeof answer->refusal); /* maybe unterminated */
    return g_fake.rc;
}

static void fill_list(reader *r, pool *pl, const char **list) {
    uint32_t n = take(r, 1) % (SGL_ATTN_MAX_LIST + 3); /* 0..18 entries before the NULL */
    memset(list, 0, sizeof(const char *) * (SGL_ATTN_MAX_LIST + 2));
    for (uint32_t i = 0; i < n && i < SGL_ATTN_MAX_LIST + 1; i++) {
        const char *s = take_str(r, pl);
        list[i] = s ? s : "x";
    }
}

static void fill_caps(reader *r, sgl_attn_caps *c) {
    uint8_t raw[sizeof *c];
    for (size_t i = 0; i < sizeof raw; i++)
        raw[i] = (uint8_t)take(r, 1);
    memcpy(c, raw, sizeof raw);
}

/* An intersection claims nothing either side lacks. */
static void check_intersection(const sgl_attn_caps *a, const sgl_attn_caps *b, const sgl_attn_caps *o) {
    if (o->q_dtypes & ~(a->q_dtypes & b->q_dtypes)) abort();
    if (o->kv_dtypes & ~(a->kv_dtypes & b->kv_dtypes)) abort();
    if (o->attn_kinds & ~(a->attn_kinds & b->attn_kinds)) abort();
    if (o->features & ~(a->features & b->features)) abort();
    if (o->available && !(a->available && b->available)) abort();
    if (o->n_head_dims > SGL_ATTN_MAX_LIST || o->n_page_sizes > SGL_ATTN_MAX_LIST) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    reader r = {data, size};
    pool pl;
    pl.used = 0;
    memset(&g_fake, 0, sizeof g_fake);
    sgl_attn_plugin *d = &g_fake.desc;
    uint32_t shape = take(&r, 1);
    /* Mostly well-formed versions and sizes, so the checks behind them run. */
    g_fake.major = shape & 1 ? (uint16_t)take(&r, 2) : SGL_ATTN_ABI_MAJOR;
    g_fake.minor = shape & 2 ? (uint16_t)take(&r, 2) : SGL_ATTN_ABI_MINOR;
    g_fake.rc = shape & 4 ? -(int)(take(&r, 1) % 10) : SGL_ATTN_OK;
    g_fake.null_plugin = (shape & 0x18) == 0x18;
    for (size_t i = 0; i < sizeof g_fake.refusal; i++)
        g_fake.refusal[i] = shape & 0x20 ? (char)take(&r, 1) : 0;
    d->struct_size = shape & 0x40 ? take(&r, 2) : (uint32_t)sizeof *d;
    d->abi_major = shape & 0x80 ? (uint16_t)take(&r, 2) : g_fake.major;
    d->abi_minor = g_fake.minor;
    d->name = take_str(&r, &pl);
    d->version = take_str(&r, &pl);
    d->description = take_str(&r, &pl);
    d->license = take_str(&r, &pl);
    d->custom_kind = take_str(&r, &pl);
    d->platform = (int32_t)take(&r, 4);
    d->role = (int32_t)take(&r, 4);
    d->hybrid_kind = (int32_t)take(&r, 4);
    uint32_t ptrs = take(&r, 1);
    if (ptrs & 1) {
        fill_list(&r, &pl, g_fake.aliases);
        d->aliases = g_fake.aliases;
    }
    if (ptrs & 2) {
        fill_list(&r, &pl, g_fake.model_types);
        d->model_types = g_fake.model_types;
    }
    d->probe = ptrs & 4 ? NULL : dummy_probe;
    d->create = ptrs & 8 ? NULL : dummy_create;
    if (ptrs & 16) {
        /* device_ops of any size, each member there or NULL. */
        sgl_attn_device_ops *o = &g_fake.dops;
        uint32_t m = take(&r, 1);
        o->struct_size = ptrs & 32 ? take(&r, 1) : (uint32_t)sizeof *o;
        o->alloc = m & 1 ? NULL : dummy_mem;
        o->free = m & 2 ? NULL : dummy_free;
        o->copy_to_device = m & 4 ? NULL : dummy_copy;
        o->copy_to_host = m & 8 ? NULL : dummy_copy;
        o->synchronize = m & 16 ? NULL : dummy_sync;
        o->stream_create = m & 32 ? NULL : dummy_stream;
        o->stream_destroy = m & 64 ? NULL : dummy_sync;
        d->device_ops = o;
    }

    sgl_attn_host_api api;
    memset(&api, 0, sizeof api);
    api.struct_size = sizeof api;
    api.abi_major = SGL_ATTN_ABI_MAJOR;
    api.abi_minor_max = SGL_ATTN_ABI_MINOR;
    sgl_attn_plugin copy;
    uint16_t maj, min;
    char why[512];
    why[0] = 0;
    int st = plugin_negotiate(fake_entry, &api, &copy, &maj, &min, why, sizeof why);
    if (st != SGL_ATTN_PLUGIN_USABLE && (!why[0] || !memchr(why, 0, sizeof why))) abort();
    if (st == SGL_ATTN_PLUGIN_USABLE && (!copy.name || !copy.probe || !copy.create)) abort();
    /* Accepted device_ops have every memory call. */
    const sgl_attn_device_ops *ops = st == SGL_ATTN_PLUGIN_USABLE ? copy.device_ops : NULL;
    if (ops && (ops->struct_size < offsetof(sgl_attn_device_ops, synchronize) + sizeof ops->synchronize ||
                !ops->alloc || !ops->free || !ops->copy_to_device || !ops->copy_to_host || !ops->synchronize))
        abort();
    /* The check on its own, on the descriptor exactly as the plugin gave it. */
    why[0] = 0;
    if (plugin_descriptor_check(d, why, sizeof why) != 0 && !why[0]) abort();

    sgl_attn_caps a, b, o;
    fill_caps(&r, &a);
    fill_caps(&r, &b);
    int a_ok = plugin_caps_check(&a, why, sizeof why) == 0;
    int b_ok = plugin_caps_check(&b, why, sizeof why) == 0;
    if (a_ok && b_ok && stack_caps_intersect(&a, &b, &o, why, sizeof why) == SGL_ATTN_OK)
        check_intersection(&a, &b, &o);
    return 0;
}
