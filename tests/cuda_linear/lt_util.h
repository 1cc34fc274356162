/* lt_util.h - what the CUDA linear GPU tests share (with lt_check.h): random
 * numbers, tensors on the device with a
 * float64 copy of exactly what the device holds, loading a plugin .so
 * directly, and a fake inner backend that counts what reaches it. */
#ifndef LT_UTIL_H
#define LT_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "lt_check.h"
#include "sgl_attn_abi.h"

/* ---------------------------------------------------------------- random */
typedef struct lt_rng { uint64_t s; } lt_rng;
double lt_uniform(lt_rng *r); /* [0, 1) */
double lt_normal(lt_rng *r);
int lt_range(lt_rng *r, int lo, int hi); /* [lo, hi] */

/* ---------------------------------------------------------------- dtypes */
enum { LT_F32 = 0, LT_F16 = 1, LT_BF16 = 2, LT_I32 = 3, LT_I64 = 4, LT_F64 = 5 };
DLDataType lt_dl(int dt);
size_t lt_esz(int dt);
double lt_round(int dt, double v); /* v as it reads back from dtype dt */
const char *lt_dt_name(int dt);

/* ------------------------------------------------------- device tensors */
typedef struct lt_tensor {
    DLTensor t;
    int64_t shape[4];
    int dt;
    size_t n;
    void *dev;     /* device (or host, when host != 0) payload */
    double *ref;   /* the values as the device holds them */
    int on_host;
} lt_tensor;

/* Allocate (zeroed); on_host: pageable host memory (kDLCPU) instead. */
void lt_make(lt_tensor *x, int dt, int ndim, const int64_t *shape, int on_host);
void lt_free(lt_tensor *x);
/* N(0, sigma) values rounded to the dtype, uploaded; ref keeps them. */
void lt_fill_normal(lt_tensor *x, lt_rng *r, double sigma);
void lt_fill_uniform(lt_tensor *x, lt_rng *r, double lo, double hi);
void lt_upload(lt_tensor *x);                 /* ref -> device (rounded) */
void lt_set(lt_tensor *x, size_t i, double v); /* one value (index tensors too), into ref; call lt_upload */
void lt_poison(lt_tensor *x);                 /* NaN everywhere on the device */
void lt_download(lt_tensor *x, double *out);  /* device -> doubles */
/* NMSE of the device values against want over n elements; NaN when any
 * device value is not finite. */
double lt_nmse(lt_tensor *x, const double *want);
void lt_sync(void);

/* ------------------------------------------------------------- plugins */
/* Load dir/<name>.so and negotiate; NULL with a note when it fails. */
const sgl_attn_plugin *lt_load(const char *dir, const char *name, void **handle);
/* the bytes the stream decode's L2 prefetches asked for so far (the CPU emulator counts them; -1 on a GPU) */
long long lt_l2_prefetch_bytes(void);
/* The host API the tests hand plugins (no options; the log keeps the CUDA linear wrappers' last create line in
 * lt_create_log and prints nothing). */
const sgl_attn_host_api *lt_host_api(void);
extern char lt_create_log[512];
/* device 0's SMs (-1 when the runtime does not say) */
int lt_sm_count(void);

/* ----------------------------------------------------------- fake inner */
typedef struct lt_inner {
    sgl_attn_backend base;
    int n_meta, n_extend, n_decode, n_graph_init, n_capture, n_replay;
    int last_layer;
} lt_inner;
void lt_inner_init(lt_inner *f);
/* caps the fake inner claims (CUDA, every feature) */
void lt_inner_caps(sgl_attn_caps *c);

#endif
