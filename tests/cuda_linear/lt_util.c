/* lt_util.c - see lt_util.h. */
#include "lt_util.h"

#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

static void die_cuda(cudaError_t e, const char *what) {
    if (e == cudaSuccess) return;
    fprintf(stderr, "FATAL: %s: %s (%s)\n", what, cudaGetErrorName(e), cudaGetErrorString(e));
    exit(2);
}

/* ---------------------------------------------------------------- random */

double lt_uniform(lt_rng *r) {
    r->s ^= r->s >> 12, r->s ^= r->s << 25, r->s ^= r->s >> 27;
    return (double)((r->s * 0x2545f4914f6cdd1dull) >> 11) / 9007199254740992.0;
}
double lt_normal(lt_rng *r) {
    double u = lt_uniform(r), v = lt_uniform(r);
    return sqrt(-2 * log(u + 1e-300)) * cos(6.283185307179586 * v);
}
int lt_range(lt_rng *r, int lo, int hi) { return lo + (int)(lt_uniform(r) * (hi - lo + 1)); }

/* ---------------------------------------------------------------- dtypes */

DLDataType lt_dl(int dt) {
    DLDataType t = {kDLFloat, 32, 1};
    switch (dt) {
    case LT_F16: t.bits = 16; break;
    case LT_BF16: t.code = kDLBfloat; t.bits = 16; break;
    case LT_I32: t.code = kDLInt; break;
    case LT_I64: t.code = kDLInt; t.bits = 64; break;
    case LT_F64: t.bits = 64; break;
    default: break;
    }
    return t;
}

size_t lt_esz(int dt) {
    switch (dt) {
    case LT_F16:
    case LT_BF16: return 2;
    case LT_I64:
    case LT_F64: return 8;
    default: return 4;
    }
}

const char *lt_dt_name(int dt) {
    static const char *const n[] = {"f32", "f16", "bf16", "i32", "i64", "f64"};
    return dt >= 0 && dt <= LT_F64 ? n[dt] : "?";
}

static uint16_t f2bf(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
static float bf2f(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static uint16_t f2h(float f) { /* round to nearest even; range of the tests is small */
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000u, au = u & 0x7fffffffu;
    if (au > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);
    if (au >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);
    if (au < 0x38800000u) {
        if (au < 0x33000000u) return (uint16_t)sign;
        uint32_t e = au >> 23, man = (au & 0x7fffffu) | 0x800000u, shift = 126 - e;
        uint32_t r = man >> shift, rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1u))) r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = (au >> 13) - ((127 - 15) << 10), rem = au & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) r++;
    return (uint16_t)(sign | r);
}
static float h2f(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, u;
    if (e == 0) {
        if (!m) u = sign;
        else {
            int k = -1;
            do { k++; m <<= 1; } while (!(m & 0x400u));
            u = sign | ((uint32_t)(127 - 15 - k) << 23) | ((m & 0x3ffu) << 13);
        }
    } else if (e == 31) {
        u = sign | 0x7f800000u | (m << 13);
    } else {
        u = sign | ((e + 127 - 15) << 23) | (m << 13);
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

double lt_round(int dt, double v) {
    switch (dt) {
    case LT_F32: return (double)(float)v;
    case LT_BF16: return (double)bf2f(f2bf((float)v));
    case LT_F16: return (double)h2f(f2h((float)v));
    case LT_I32: return (double)(int32_t)v;
    case LT_I64: return (double)(int64_t)v;
    default: return v;
    }
}

static void store(int dt, void *buf, size_t i, double v) {
    switch (dt) {
    case LT_F32: ((float *)buf)[i] = (float)v; break;
    case LT_BF16: ((uint16_t *)buf)[i] = f2bf((float)v); break;
    case LT_F16: ((uint16_t *)buf)[i] = f2h((float)v); break;
    case LT_I32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case LT_I64: ((int64_t *)buf)[i] = (int64_t)v; break;
    default: ((double *)buf)[i] = v; break;
    }
}
static double load(int dt, const void *buf, size_t i) {
    switch (dt) {
    case LT_F32: return ((const float *)buf)[i];
    case LT_BF16: return bf2f(((const uint16_t *)buf)[i]);
    case LT_F16: return h2f(((const uint16_t *)buf)[i]);
    case LT_I32: return ((const int32_t *)buf)[i];
    case LT_I64: return (double)((const int64_t *)buf)[i];
    default: return ((const double *)buf)[i];
    }
}

/* ------------------------------------------------------- device tensors */

void lt_make(lt_tensor *x, int dt, int ndim, const int64_t *shape, int on_host) {
    memset(x, 0, sizeof *x);
    x->dt = dt;
    x->n = 1;
    for (int i = 0; i < ndim; i++) x->n *= (size_t)(x->shape[i] = shape[i]);
    x->on_host = on_host;
    const size_t bytes = x->n ? x->n * lt_esz(dt) : 1; /* exact: overruns show under the emulator's ASan */
    if (on_host) {
        x->dev = calloc(1, bytes);
        if (!x->dev) die_cuda(cudaErrorMemoryAllocation, "host tensor");
    } else {
        die_cuda(cudaMalloc(&x->dev, bytes), "cudaMalloc");
        die_cuda(cudaMemset(x->dev, 0, bytes), "cudaMemset");
    }
    x->ref = calloc(x->n ? x->n : 1, sizeof(double));
    if (!x->ref) die_cuda(cudaErrorMemoryAllocation, "ref copy");
    x->t.data = x->dev;
    x->t.device.device_type = on_host ? kDLCPU : kDLCUDA;
    x->t.device.device_id = 0;
    x->t.ndim = ndim;
    x->t.dtype = lt_dl(dt);
    x->t.shape = x->shape;
    x->t.strides = NULL;
    x->t.byte_offset = 0;
}

void lt_free(lt_tensor *x) {
    if (x->on_host) free(x->dev);
    else if (x->dev) cudaFree(x->dev);
    free(x->ref);
    memset(x, 0, sizeof *x);
}

void lt_upload(lt_tensor *x) {
    const size_t bytes = x->n * lt_esz(x->dt);
    void *h = malloc(bytes ? bytes : 1);
    if (!h) die_cuda(cudaErrorMemoryAllocation, "staging");
    for (size_t i = 0; i < x->n; i++) {
        x->ref[i] = lt_round(x->dt, x->ref[i]);
        store(x->dt, h, i, x->ref[i]);
    }
    if (x->on_host) memcpy(x->dev, h, bytes);
    else die_cuda(cudaMemcpy(x->dev, h, bytes, cudaMemcpyHostToDevice), "upload");
    free(h);
    /* the plugins run on non-blocking streams: the copy must be complete */
    if (!x->on_host) die_cuda(cudaDeviceSynchronize(), "upload sync");
}

void lt_fill_normal(lt_tensor *x, lt_rng *r, double sigma) {
    for (size_t i = 0; i < x->n; i++) x->ref[i] = sigma * lt_normal(r);
    lt_upload(x);
}

void lt_fill_uniform(lt_tensor *x, lt_rng *r, double lo, double hi) {
    for (size_t i = 0; i < x->n; i++) x->ref[i] = lo + (hi - lo) * lt_uniform(r);
    lt_upload(x);
}

void lt_set(lt_tensor *x, size_t i, double v) { x->ref[i] = v; }

void lt_poison(lt_tensor *x) {
    const size_t bytes = x->n * lt_esz(x->dt);
    if (x->on_host) memset(x->dev, 0xff, bytes);
    else die_cuda(cudaMemset(x->dev, 0xff, bytes), "poison"); /* all-ones: NaN in every float dtype */
    if (!x->on_host) die_cuda(cudaDeviceSynchronize(), "poison sync");
}

void lt_download(lt_tensor *x, double *out) {
    const size_t bytes = x->n * lt_esz(x->dt);
    void *h = malloc(bytes ? bytes : 1);
    if (!h) die_cuda(cudaErrorMemoryAllocation, "staging");
    if (x->on_host) memcpy(h, x->dev, bytes);
    else die_cuda(cudaMemcpy(h, x->dev, bytes, cudaMemcpyDeviceToHost), "download");
    for (size_t i = 0; i < x->n; i++) out[i] = load(x->dt, h, i);
    free(h);
}

double lt_nmse(lt_tensor *x, const double *want) {
    double *got = malloc((x->n ? x->n : 1) * sizeof *got);
    if (!got) die_cuda(cudaErrorMemoryAllocation, "nmse");
    lt_download(x, got);
    double num = 0, den = 0;
    for (size_t i = 0; i < x->n; i++) {
        if (!isfinite(got[i])) {
            free(got);
            return NAN;
        }
        num += (got[i] - want[i]) * (got[i] - want[i]);
        den += want[i] * want[i];
    }
    free(got);
    return den > 0 ? num / den : num;
}

void lt_sync(void) { die_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }

/* ------------------------------------------------------------- plugins */

char lt_create_log[512];

/* keeps the wrappers' create line (the kernels an instance chose); prints nothing */
static void host_log(void *ctx, int level, const char *plugin, const char *fmt, ...) {
    (void)ctx, (void)level;
    if (!plugin || strcmp(plugin, "cuda_linear")) return;
    char line[sizeof lt_create_log];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (strstr(line, " bytes on the device")) memcpy(lt_create_log, line, sizeof line);
}

int lt_sm_count(void) {
    int v = 0;
    return cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, 0) == cudaSuccess ? v : -1;
}
static const char *host_option(void *ctx, const char *plugin, const char *key) {
    (void)ctx, (void)plugin, (void)key;
    return NULL;
}

const sgl_attn_host_api *lt_host_api(void) {
    static sgl_attn_host_api api;
    api.struct_size = sizeof api;
    api.abi_major = SGL_ATTN_ABI_MAJOR;
    api.abi_minor_min = 0;
    api.abi_minor_max = SGL_ATTN_ABI_MINOR;
    api.host_version = "test";
    api.log = host_log;
    api.get_option = host_option;
    return &api;
}

#ifdef LT_EMU
extern long long lk_emu_l2_prefetch_bytes; /* tests/emu/emu_simt.cpp */
long long lt_l2_prefetch_bytes(void) { return lk_emu_l2_prefetch_bytes; }
#else
long long lt_l2_prefetch_bytes(void) { return -1; }
#endif

#ifdef LT_EMU
/* the CPU emulator build links the five plugins in, entries renamed */
int emu_entry_gdn_cuda(const sgl_attn_host_api *, sgl_attn_plugin_answer *);
int emu_entry_kda_cuda(const sgl_attn_host_api *, sgl_attn_plugin_answer *);
int emu_entry_mamba2_cuda(const sgl_attn_host_api *, sgl_attn_plugin_answer *);
int emu_entry_short_conv_cuda(const sgl_attn_host_api *, sgl_attn_plugin_answer *);
int emu_entry_lightning_cuda(const sgl_attn_host_api *, sgl_attn_plugin_answer *);
#endif

const sgl_attn_plugin *lt_load(const char *dir, const char *name, void **handle) {
    sgl_attn_plugin_entry_fn entry = NULL;
#ifdef LT_EMU
    (void)dir;
    *handle = NULL;
    entry = !strcmp(name, "gdn_cuda")          ? emu_entry_gdn_cuda
            : !strcmp(name, "kda_cuda")        ? emu_entry_kda_cuda
            : !strcmp(name, "mamba2_cuda")     ? emu_entry_mamba2_cuda
            : !strcmp(name, "short_conv_cuda") ? emu_entry_short_conv_cuda
            : !strcmp(name, "lightning_cuda")  ? emu_entry_lightning_cuda
                                               : NULL;
    const char *path = name;
#else
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.so", dir, name);
    *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!*handle) {
        lt_note("dlopen %s: %s", path, dlerror());
        return NULL;
    }
    entry = (sgl_attn_plugin_entry_fn)dlsym(*handle, SGL_ATTN_PLUGIN_ENTRY_SYMBOL);
#endif
    sgl_attn_plugin_answer ans;
    memset(&ans, 0, sizeof ans);
    ans.struct_size = sizeof ans;
    if (!entry || entry(lt_host_api(), &ans) != SGL_ATTN_OK || !ans.plugin) {
        lt_note("%s: no entry point or it refused (%s)", path, ans.refusal);
        return NULL;
    }
    return ans.plugin;
}

/* ----------------------------------------------------------- fake inner */

static lt_inner *inner_of(sgl_attn_backend *b) { return (lt_inner *)b; }
static int f_meta(sgl_attn_backend *b, const sgl_attn_batch *x) {
    (void)x;
    inner_of(b)->n_meta++;
    return SGL_ATTN_OK;
}
static int f_extend(sgl_attn_backend *b, const sgl_attn_forward_args *a) {
    inner_of(b)->n_extend++;
    inner_of(b)->last_layer = a->layer->layer_id;
    return SGL_ATTN_OK;
}
static int f_decode(sgl_attn_backend *b, const sgl_attn_forward_args *a) {
    inner_of(b)->n_decode++;
    inner_of(b)->last_layer = a->layer->layer_id;
    return SGL_ATTN_OK;
}
static int f_graph_init(sgl_attn_backend *b, int32_t bs, int32_t t) {
    (void)bs, (void)t;
    inner_of(b)->n_graph_init++;
    return SGL_ATTN_OK;
}
static int f_capture(sgl_attn_backend *b, const sgl_attn_graph_args *g) {
    (void)g;
    inner_of(b)->n_capture++;
    return SGL_ATTN_OK;
}
static int f_replay(sgl_attn_backend *b, const sgl_attn_graph_args *g) {
    (void)g;
    inner_of(b)->n_replay++;
    return SGL_ATTN_OK;
}
static int32_t f_fill(sgl_attn_backend *b) {
    (void)b;
    return 7;
}
static const char *f_err(sgl_attn_backend *b) {
    (void)b;
    return "";
}
static void f_destroy(sgl_attn_backend *b) { (void)b; }

static const sgl_attn_backend_ops fake_ops = {
    .struct_size = sizeof(sgl_attn_backend_ops),
    .init_forward_metadata = f_meta,
    .forward_extend = f_extend,
    .forward_decode = f_decode,
    .init_graph_state = f_graph_init,
    .init_forward_metadata_capture = f_capture,
    .init_forward_metadata_replay = f_replay,
    .graph_seq_len_fill_value = f_fill,
    .last_error = f_err,
    .destroy = f_destroy,
};

void lt_inner_init(lt_inner *f) {
    memset(f, 0, sizeof *f);
    f->base.ops = &fake_ops;
    f->base.ops_size = fake_ops.struct_size;
    f->last_layer = -1;
}

void lt_inner_caps(sgl_attn_caps *c) {
    memset(c, 0, sizeof *c);
    c->struct_size = sizeof *c;
    c->available = 1;
    c->q_dtypes = c->kv_dtypes = SGL_ATTN_DT_F32 | SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16;
    c->attn_kinds = SGL_ATTN_KIND_MHA | SGL_ATTN_KIND_GQA;
    c->features = SGL_ATTN_FEAT_EXTEND | SGL_ATTN_FEAT_DECODE | SGL_ATTN_FEAT_GRAPH_CAPTURE;
}
