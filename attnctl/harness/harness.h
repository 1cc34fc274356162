/*
 * harness.h - the conformance and bench harness behind `attnctl check`,
 * `attnctl bench` and `attnctl run` (docs/harness.md).
 *
 * A *family* owns some case MODEs ("decode", "extend", "gdn"...): it parses
 * their keys, builds random inputs, runs the plugin under test and compares
 * with its float64 reference.  The harness core gives every family the same
 * tools: cases, random numbers, dtypes, tensors staged on the plugin's device
 * with sentinels, NMSE, backend creation and the timing loop.  Families live
 * in their own files and are listed by registry.c; the linear-attention
 * kinds are rows of one table (linear_kinds.c) run by one engine.
 */
#ifndef ATTNCTL_HARNESS_H
#define ATTNCTL_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "sgl_attn.h"

#if defined(__GNUC__)
#define HARNESS_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define HARNESS_PRINTF(a, b)
#endif

/* ------------------------------------------------------------ random (rng.c) */

/* xoshiro256** seeded through splitmix64: the same seed gives the same inputs
 * on every machine. */
typedef struct hrng {
    uint64_t s[4];
} hrng;

void hrng_seed(hrng *r, uint64_t seed);
uint64_t hrng_next(hrng *r);
double hrng_uniform(hrng *r);                       /* [0, 1) */
double hrng_normal(hrng *r);                        /* N(0, 1) */
int64_t hrng_range(hrng *r, int64_t lo, int64_t hi); /* uniform in [lo, hi] */
void hrng_shuffle(hrng *r, int64_t *v, size_t n);
/* A fresh seed for a run (time and pid), printed so it can be replayed. */
uint64_t hrng_fresh_seed(void);
/* The seed of one case of a run: mixes the run seed with the case text, so a
 * case gives the same inputs whether run alone (--filter) or in the matrix. */
uint64_t hrng_case_seed(uint64_t run_seed, const char *case_text);

/* ------------------------------------------------------------ dtypes (dtype.c) */

typedef enum hdtype {
    HDT_F32 = 0,
    HDT_F16,
    HDT_BF16,
    HDT_F64,
    HDT_I32,
    HDT_I64,
    HDT_FP8_E4M3, /* e4m3fn, DLPack 1.1's code; a float type (pools) */
    HDT_U8,       /* masks (tree verify's custom_mask) */
    /* ABI 1.2 fp8 pools of the paged12 family: e4m3 under our private
     * DLPack code (0x80, the same bytes as HDT_FP8_E4M3) and e5m2 (12) */
    HDT_E4M3,
    HDT_E5M2,
    HDT_COUNT_
} hdtype;

size_t hdtype_size(hdtype t);
const char *hdtype_name(hdtype t);          /* "f32", "bf16", "i32"... */
int hdtype_parse(const char *s, hdtype *t); /* 0 ok, -1 unknown */
DLDataType hdtype_dl(hdtype t);
uint32_t hdtype_bit(hdtype t);              /* SGL_ATTN_DT_*, 0 for integers */
int hdtype_is_float(hdtype t);
/* Element i of a buffer of type t, as a double (exact for every type here). */
double hdtype_load(hdtype t, const void *buf, size_t i);
/* Store v as element i, rounding to nearest even; integers are truncated. */
void hdtype_store(hdtype t, void *buf, size_t i, double v);
/* v as it reads back after a store into t. */
double hdtype_round(hdtype t, double v);

/* ------------------------------------------------------------ cases (case.c) */

#define HCASE_TEXT_MAX 256
#define HCASE_MAX_KEYS 32

/* A parsed case string "MODE:key=value,..." (docs/contributing.md grammar).
 * Values stay text; families read them with hcase_int / hcase_num / hcase_str,
 * which name the case, the key and the value in their errors. */
typedef struct hcase {
    char text[HCASE_TEXT_MAX];
    char mode[24];
    size_t n;
    struct {
        char key[24];
        char val[48];
    } kv[HCASE_MAX_KEYS];
} hcase;

int hcase_parse(const char *text, hcase *c, char *err, size_t err_size);
const char *hcase_get(const hcase *c, const char *key); /* NULL if absent */
/* 0 ok (out = value or def when absent), -1 with err set when not an integer
 * in [lo, hi]. */
int hcase_int(const hcase *c, const char *key, long def, long lo, long hi, long *out, char *err,
              size_t err_size);
int hcase_num(const hcase *c, const char *key, double def, double lo, double hi, double *out,
              char *err, size_t err_size);
int hcase_dtype(const hcase *c, const char *key, hdtype def, hdtype *out, char *err,
                size_t err_size);
/* Every key of c must be in `allowed` (NULL-terminated); else -1 naming the
 * unknown key and listing the allowed ones. */
int hcase_check_keys(const hcase *c, const char *const *allowed, char *err, size_t err_size);
/* -1 with err = "case '<text>': <what>" (a case parser's refusal). */
int hcase_bad(const hcase *c, char *err, size_t err_size, const char *what);
/* In a case parser with `c`, `err` and `err_size` in scope: integer key into
 * dst (def when absent), or return -1 with err set. */
#define HCASE_INT(key, def, lo, hi, dst)                                              \
    do {                                                                              \
        long v_;                                                                      \
        if (hcase_int(c, key, def, lo, hi, &v_, err, err_size)) return -1;            \
        dst = v_;                                                                     \
    } while (0)

/* ------------------------------------------------------------ results (result.c) */

typedef enum hverdict {
    HV_PASS = 0,
    HV_FAIL = 1,        /* wrong numbers, NaN, unwritten output, sentinel touched, crash-free error */
    HV_UNSUPPORTED = 2, /* the probe, supports_model or forward (SGL_ATTN_E_UNSUPPORTED) declined */
    HV_ERROR = 3        /* the case itself is bad, or the harness could not run it */
} hverdict;

typedef struct hresult {
    int verdict;         /* hverdict */
    char message[768];   /* why not PASS; for PASS, optional detail */
    double nmse;         /* worst NMSE over the compared outputs; -1 when none */
    double threshold;    /* the NMSE limit applied */
    double max_abs_err;
    double ms_plugin;    /* wall time of the plugin's calls (check: one call, incl. sync) */
    double ms_ref;       /* wall time of the reference */
} hresult;

void hresult_init(hresult *r);
void hresult_fail(hresult *r, const char *fmt, ...) HARNESS_PRINTF(2, 3);
void hresult_unsupported(hresult *r, const char *fmt, ...) HARNESS_PRINTF(2, 3);
void hresult_error(hresult *r, const char *fmt, ...) HARNESS_PRINTF(2, 3);
const char *hverdict_name(int v); /* "pass", "FAIL", "not supported", "ERROR" */

/* ------------------------------------------------------------ device (device.c) */

/* The memory a plugin reads: host memory when ops is NULL, else device
 * memory through the plugin's device_ops. */
typedef struct hdev {
    const sgl_attn_device_ops *ops;
    int32_t device;    /* the plugin's own device index */
    int32_t platform;  /* sgl_attn_platform of the plugin */
    void *stream;      /* from ops->stream_create when offered, else NULL */
} hdev;

/* DLDevice of tensors the plugin reads. */
DLDevice hdev_dl(const hdev *d);
int hdev_sync(const hdev *d, char *err, size_t err_size);
/* Create / destroy the stream (no-op for host memory). */
int hdev_open(hdev *d, const sgl_attn_device_ops *ops, int32_t device, int32_t platform,
              char *err, size_t err_size);
void hdev_close(hdev *d);

/* ------------------------------------------------------------ tensors (tensor.c) */

#define HT_MAX_DIMS 4
#define HT_GUARD_BYTES 4096

/* A tensor the plugin reads or writes, with a host copy.  Both copies are
 * laid out guard | payload | guard; the guards hold a pattern derived from
 * the tensor's address, so a write past either end shows up when the device
 * copy is downloaded and compared.  For host memory the "device" copy is a
 * second buffer, so host and device plugins go through the same code. */
typedef struct htensor {
    DLTensor t;                 /* what the plugin sees: data = the device payload */
    int64_t shape[HT_MAX_DIMS];
    hdtype dt;
    size_t count;               /* elements */
    size_t bytes;               /* payload bytes */
    unsigned char *host;        /* guard | payload | guard on the host */
    void *dev_base;             /* guard | payload | guard on the device */
    const hdev *dev;
    const char *name;           /* for messages: "out", "k_cache"... */
} htensor;

/* Allocate host and device copies; the payload starts zeroed. */
int htensor_alloc(htensor *t, const hdev *d, const char *name, hdtype dt, int ndim,
                  const int64_t *shape, char *err, size_t err_size);
void htensor_free(htensor *t);
void *htensor_data(htensor *t);             /* host payload */
const void *htensor_cdata(const htensor *t);
/* A host-memory DLTensor view of the host payload (for *_cpu mirrors). */
DLTensor htensor_host_view(htensor *t);
/* Copy host -> device, guards included. */
int htensor_upload(htensor *t, char *err, size_t err_size);
/* Copy device -> host, guards included; then check the guards: -1 with err
 * naming the tensor, the side and the first changed byte. */
int htensor_download(htensor *t, char *err, size_t err_size);
/* Fill the host payload with the poison pattern (a NaN with payload 0x2a5 /
 * its f16/bf16/f64 equivalent) so that an unwritten element is recognised. */
void htensor_poison(htensor *t);
int htensor_is_poison(const htensor *t, size_t i);
/* Fill with N(0, sigma) values rounded to the tensor's dtype. */
void htensor_fill_normal(htensor *t, hrng *r, double sigma);
/* Uniform values of deviation sigma: cheaper, for large pools. */
void htensor_fill_uniform(htensor *t, hrng *r, double sigma);
/* Index tensors (i32 / i64): set / get element i. */
void htensor_set_index(htensor *t, size_t i, int64_t v);
int64_t htensor_get_index(const htensor *t, size_t i);

/* ------------------------------------------------------------ metrics (metrics.c) */

/* NMSE = sum (x - ref)^2 / sum ref^2 over n elements.  Any NaN/Inf in x, or a
 * poisoned (never written) element, fails with the first index named. */
typedef struct hcompare {
    double nmse;
    double max_abs_err;
    size_t worst_index;
    size_t first_bad;     /* index of the first NaN/Inf/poison, or SIZE_MAX */
    int bad_kind;         /* 0 none, 1 NaN/Inf, 2 never written (poison) */
    double sum_err2;      /* Σ(x − ref)² and Σ ref² over the finite elements: a family that */
    double sum_ref2;      /* judges several calls as one output pools these */
} hcompare;

void hcompare_run(const htensor *x, const double *ref, hcompare *out);

/* One call of a case made of several (the linear family: a prefix, then extend / decode / verify, then
 * the decode after state_commit), as hcompare_run measured it. */
typedef struct hcall_err {
    const char *what;            /* the call, for the message */
    double err2, ref2, max_abs;  /* Σ(out − ref)², Σ ref², the largest error */
    size_t n, worst_at;          /* elements compared, where the largest error is */
} hcall_err;
/* The calls' verdict (docs/harness.md, "NMSE limits"): each call's mean squared error over the larger
 * of its own mean squared output and that of all the calls together.  Returns the worst call's index
 * and sets *score to its value (compared with the dtype's limit); -1 when n <= 0. */
int hcalls_judge(const hcall_err *calls, int n, double *score);
/* The documented NMSE limit of a dtype (docs/harness.md). */
double hthreshold(hdtype t);

/* ------------------------------------------------------------ targets (target.c) */

/* The plugin (stack) under test on one device.
 *
 * "a/b/c" names an explicit stack, outermost first, ending with a
 * full-attention plugin; the host builds it (sgl_attn_create_stack).  A
 * full-attention plugin named alone is a stack of one.  A hybrid wrapper or
 * a layer named alone is stacked by the host: each case's backend comes from
 * sgl_attn_select with the plugin as backend, the case's model and the
 * platform the target stages on, so which inner it runs over follows the
 * host's rules.  Tensors are staged on the plugin's own platform and device
 * (host memory for one that runs anywhere, such as a layer). */
typedef struct htarget_last {
    char label[160]; /* the stack the last case ran on, "" before one or when refused */
} htarget_last;

typedef struct htarget {
    sgl_attn_host *host;
    const char *names[4];      /* explicit stack, outermost first; one name when selected */
    size_t n_names;
    char name_buf[4][SGL_ATTN_NAME_MAX + 1];
    char label[160];           /* "cuda_mha", "validate/cpu_ref"; selected: the named plugin */
    long plugin_index;         /* the plugin whose device ops stage the tensors */
    sgl_attn_plugin_info info; /* outermost plugin */
    sgl_attn_plugin_info inner_info; /* innermost full-attention plugin; a wrapper
                                * named alone: the wrapper (its inner is per case) */
    sgl_attn_caps caps;        /* caps of inner_info's plugin on `device` */
    uint32_t device;
    hdev dev;
    int selected;              /* the stack is the host's selection per case */
    int32_t platform;          /* the platform staged on (the selection's restriction) */
    htarget_last *last;        /* selected: what the last case ran on (owned) */
    /* attnctl run: an already-created backend; NULL = families create one */
    sgl_attn_backend *fixed;
} htarget;

/* Resolve `spec` ("name" or "a/b/c") on `host`: -1 with err when a name is
 * unknown or not loaded, or the host has no stack for it. */
int htarget_open(htarget *t, sgl_attn_host *host, const char *spec, uint32_t device, char *err,
                 size_t err_size);
void htarget_close(htarget *t);
/* The stack a case ran on: the last selection for a selected target, else
 * the label. */
const char *htarget_stack_label(const htarget *t);
/* Create the stack for model m (t->fixed when set).  Returns SGL_ATTN_OK, or
 * sets r: unsupported when the host or a plugin refused the model (with
 * their reason), else fail. */
int htarget_create(const htarget *t, const sgl_attn_model *m, const sgl_attn_create_options *o,
                   sgl_attn_backend **b, hresult *r);
void htarget_destroy(const htarget *t, sgl_attn_backend *b);
/* A float64 reference backend (cpu_ref) for model m, host memory. */
int href_create(sgl_attn_host *host, const sgl_attn_model *m, const sgl_attn_create_options *o,
                sgl_attn_backend **b, char *err, size_t err_size);
/* Set r from a failed plugin call: UNSUPPORTED stays "not supported", any
 * other status is a failure; last_error is quoted. */
void hresult_from_call(hresult *r, sgl_attn_backend *b, const char *what, int rc);

/* ------------------------------------------------------------ families */

/* One call of a bench: whatever the family prepared, run again.  It must
 * allocate nothing and not synchronise; the timing loop synchronises. */
typedef struct hbench {
    void *state;
    int (*call)(void *state, char *err, size_t err_size);
    void (*release)(void *state);
    double flops;   /* per call, counted as docs/harness.md says */
    double bytes;   /* per call, the fewest bytes moved */
} hbench;

/* A family's callbacks receive the family itself, so one engine can serve
 * several families that differ only in data (linear_kinds.c). */
typedef struct harness_family harness_family;
struct harness_family {
    const char *name;               /* "full", "gdn" */
    const char *const *modes;       /* case MODEs it owns, NULL-terminated */
    /* 1 if `check` with no --plugin should run this family on a plugin with
     * this descriptor and caps */
    int (*applies)(const harness_family *f, const sgl_attn_plugin_info *info, const sgl_attn_caps *caps);
    /* The conformance matrix, NULL-terminated case strings: the full one and
     * the --quick one. */
    const char *const *matrix;
    const char *const *quick_matrix;
    /* Default cases of `attnctl bench` when none is given. */
    const char *const *bench_cases;
    /* Check one case against the float64 reference; fills r. */
    void (*check)(const harness_family *f, const htarget *t, const hcase *c, uint64_t seed, hresult *r);
    /* Prepare a bench of one case (inputs staged once, backend created,
     * metadata initialised).  Returns 0, or -1 with r set.  NULL: no bench. */
    int (*bench_prepare)(const harness_family *f, const htarget *t, const hcase *c, uint64_t seed, hbench *b,
                         hresult *r);
};

/* The families (registry.c lists them in this order): the full-attention one
 * (full_family.c), then the linear-attention kinds, one row each of the table
 * in linear_kinds.c (NULL-terminated), then any others. */
#if defined(__GNUC__)
#define HARNESS_WEAK __attribute__((weak))
#else
#define HARNESS_WEAK
#endif
extern const harness_family harness_family_full;
/* ABI 1.2 additions: LSE, fp8 KV and MLA rope split on the paged forwards
 * (paged12_family.c); forward_ragged (ragged_family.c). */
extern const harness_family harness_family_paged12;
extern const harness_family harness_family_ragged;
extern const harness_family *const harness_families_linear[];
/* DeepSeek sparse attention: sparse MLA over given indices, the indexer
 * (dsa_family.c; they apply to plugins whose caps.dsa_ops declare them) */
extern const harness_family harness_family_dsa_sparse;
extern const harness_family harness_family_dsa_indexer;
/* Any other family: define this NULL-terminated list in one file of yours. */
extern const harness_family *const harness_families_extra[] HARNESS_WEAK;
/* The `applies` of a family that judges every full-attention plugin (the
 * full, paged12 and ragged families: their cases say themselves, through
 * "not supported", what a plugin's caps leave out). */
int harness_applies_full(const harness_family *f, const sgl_attn_plugin_info *info, const sgl_attn_caps *caps);

/* Every family linked in, in a fixed order. */
size_t harness_family_count(void);
const harness_family *harness_family_at(size_t i);
/* The family that owns `mode`, or NULL. */
const harness_family *harness_family_for_mode(const char *mode);
/* Does family f judge target t?  A layer over a backend is judged as that
 * backend. */
int harness_family_applies(const harness_family *f, const htarget *t);

/* ------------------------------------------------------------ timing (timing.c) */

double htime_now(void); /* monotonic seconds */

typedef struct hbench_stats {
    double median_s;   /* per call, median over batches */
    double min_s, max_s;
    int batches;
    long calls;        /* timed calls in all */
    long calls_per_batch;
    long warmup_calls; /* untimed calls before the timed ones */
} hbench_stats;

/* Warm up (synchronised batches of 1, 2, 4, ... calls until 3 calls and
 * 0.2 s), then time batches of calls with one synchronize per batch until
 * min_time seconds and at least 5 batches; per-call median.  No call is
 * queued unsynchronised past the clock's targets by more than one batch. */
int hbench_time(const hbench *b, const hdev *d, double min_time, hbench_stats *out, char *err,
                size_t err_size);

/* The same on any clock and synchronize (tests/cli/test_bench_timing.c runs
 * it on a simulated device with a launch queue). */
typedef struct hbench_clock {
    double (*now)(void *ctx);
    int (*sync)(void *ctx, char *err, size_t err_size);
    void *ctx;
} hbench_clock;
int hbench_time_on(const hbench *b, const hbench_clock *k, double min_time, hbench_stats *out, char *err,
                   size_t err_size);

#endif
