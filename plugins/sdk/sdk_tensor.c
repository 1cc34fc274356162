/* sdk_tensor.c - see sdk_tensor.h.  The checks read only header fields, in
 * an order that never follows a pointer an earlier check found bad: NULL,
 * device, rank and extents, dtype, element count, data, alignment, strides. */
#include "sdk_tensor.h"

#include <stdio.h>

#include "sdk_text.h"

int sgl_sdk_host_readable(const DLTensor *t) {
    int32_t d = (int32_t)t->device.device_type;
    return d > 0 && d < 32 && (SGL_SDK_DEV_HOST & SGL_SDK_DEV(d));
}

static int device_ok(const DLTensor *t, const sgl_sdk_tensor_spec *s, char *err, size_t n) {
    const int32_t type = (int32_t)t->device.device_type, id = t->device.device_id;
    const int known = type > 0 && type < 32;
    if (s->devices && !(known && (s->devices & SGL_SDK_DEV(type)))) {
        char want[128] = "";
        if (s->devices == SGL_SDK_DEV_HOST) {
            sgl_sdk_str(want, sizeof want, "host memory (cpu, cuda_host or rocm_host)");
        } else if (s->devices == SGL_SDK_DEV_NOT_HOST) {
            sgl_sdk_str(want, sizeof want, "device memory from the plugin's device_ops");
        } else {
            for (int d = 1; d < 32; d++)
                if (s->devices & SGL_SDK_DEV(d))
                    sgl_sdk_append(want, sizeof want, "%s%s", want[0] ? " or " : "", sgl_sdk_device_name(d));
            sgl_sdk_append(want, sizeof want, " memory");
        }
        if (known && (SGL_SDK_DEV_HOST & SGL_SDK_DEV(type)))
            sgl_sdk_str(err, n, "%s is in host memory (DLPack device type %d, %s); expected %s", s->name, (int)type,
                        sgl_sdk_device_name(type), want);
        else
            sgl_sdk_str(err, n, "%s is on DLPack device type %d (%s:%d); expected %s", s->name, (int)type,
                        sgl_sdk_device_name(type), (int)id, want);
        return 0;
    }
    if (s->device_id >= 0 && known && !(SGL_SDK_DEV_HOST & SGL_SDK_DEV(type)) && id != s->device_id) {
        sgl_sdk_str(err, n, "%s is on %s:%d; expected device %d (the backend's)", s->name, sgl_sdk_device_name(type),
                    (int)id, (int)s->device_id);
        return 0;
    }
    return 1;
}

static int shape_ok(const DLTensor *t, const sgl_sdk_tensor_spec *s, char *err, size_t n) {
    if (t->ndim < 0 || t->ndim > 8 || (t->ndim > 0 && !t->shape)) {
        sgl_sdk_str(err, n, "%s has ndim %d%s; expected %d dims", s->name, (int)t->ndim,
                    t->ndim > 0 && !t->shape ? " and no shape" : "", (int)s->ndim);
        return 0;
    }
    for (int i = 0; i < t->ndim; i++)
        if (t->shape[i] < 0) {
            sgl_sdk_str(err, n, "%s.shape[%d] = %lld; expected >= 0", s->name, i, (long long)t->shape[i]);
            return 0;
        }
    const int at_least = (s->flags & SGL_SDK_T_AT_LEAST) != 0;
    int ok = t->ndim == s->ndim;
    for (int i = 0; ok && i < s->ndim; i++)
        ok = s->shape[i] == SGL_SDK_ANY || t->shape[i] == s->shape[i] || (at_least && t->shape[i] > s->shape[i]);
    /* [n0, n1 * n2] for a [n0, n1, n2] spec */
    const int merged = !ok && (s->flags & SGL_SDK_T_MERGED) && s->ndim == 3 && t->ndim == 2;
    if (merged) {
        ok = (s->shape[0] == SGL_SDK_ANY || t->shape[0] == s->shape[0]) &&
             (s->shape[1] == SGL_SDK_ANY || s->shape[2] == SGL_SDK_ANY || t->shape[1] == s->shape[1] * s->shape[2]);
    }
    if (ok) return 1;
    char got[160], want[160];
    sgl_sdk_shape_str(got, sizeof got, t->ndim, t->shape);
    if (at_least) {
        sgl_sdk_str(want, sizeof want, "[");
        for (int i = 0; i < s->ndim; i++)
            if (s->shape[i] == SGL_SDK_ANY) sgl_sdk_append(want, sizeof want, "%s*", i ? ", " : "");
            else sgl_sdk_append(want, sizeof want, "%s>= %lld", i ? ", " : "", (long long)s->shape[i]);
        sgl_sdk_append(want, sizeof want, "]");
    } else {
        sgl_sdk_shape_str(want, sizeof want, s->ndim, s->shape);
    }
    sgl_sdk_str(err, n, "%s has shape %s; expected %s%s%s%s%s", s->name, got, want,
                (s->flags & SGL_SDK_T_MERGED) && s->ndim == 3 ? " (or the last two merged)" : "",
                s->meaning ? " (" : "", s->meaning ? s->meaning : "", s->meaning ? ")" : "");
    return 0;
}

static int dtype_rc(const DLTensor *t, const sgl_sdk_tensor_spec *s, char *err, size_t n) {
    char got[SGL_SDK_NAME_MAX], want[96];
    const uint32_t bit = sgl_attn_dtype_bit(t->dtype);
    if (!s->dtypes) {
        if (t->dtype.code == kDLInt && t->dtype.lanes == 1 && (t->dtype.bits == 32 || t->dtype.bits == 64))
            return SGL_ATTN_OK;
        sgl_sdk_str(err, n, "%s has dtype %s; expected int32 or int64", s->name, sgl_sdk_dtype_name(t->dtype, got));
        return SGL_ATTN_E_INVALID;
    }
    if (bit & s->dtypes) return SGL_ATTN_OK;
    sgl_sdk_dtype_set_name(s->dtypes, want, sizeof want);
    sgl_sdk_str(err, n, "%s has dtype %s; expected %s", s->name, sgl_sdk_dtype_name(t->dtype, got), want);
    return SGL_ATTN_E_UNSUPPORTED;
}

/* Strides as given, or the compact ones. */
static void strides_of(const DLTensor *t, int64_t st[8]) {
    int64_t e = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        st[i] = t->strides ? t->strides[i] : e;
        e *= t->shape[i];
    }
}

/* A 2-D tensor checked against a 3-D spec (SGL_SDK_T_MERGED). */
static int is_merged(const DLTensor *t, const sgl_sdk_tensor_spec *s) {
    return (s->flags & SGL_SDK_T_MERGED) && s->ndim == 3 && t->ndim == 2;
}

/* Outer strides (and a merged tensor's inner step) in whole aligned rows. */
static int rows_rc(const DLTensor *t, const sgl_sdk_tensor_spec *s, const int64_t *st, size_t elem, char *err,
                   size_t n) {
    const size_t row = s->align ? s->align : elem;
    if (t->ndim == 0) return SGL_ATTN_OK;
    if (t->shape[t->ndim - 1] > 1 && st[t->ndim - 1] != 1) {
        sgl_sdk_str(err, n, "%s.strides[%d] = %lld; expected 1 (the innermost dim is contiguous)", s->name,
                    t->ndim - 1, (long long)st[t->ndim - 1]);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    for (int i = 0; i + 1 < t->ndim; i++)
        if (t->shape[i] > 1 && ((uint64_t)st[i] * elem) % row) {
            sgl_sdk_str(err, n, "%s.strides[%d] = %lld elements; expected a multiple of %zu bytes (aligned rows)",
                        s->name, i, (long long)st[i], row);
            return SGL_ATTN_E_UNSUPPORTED;
        }
    if (is_merged(t, s) && s->shape[1] > 1 && s->shape[2] != SGL_SDK_ANY && ((uint64_t)s->shape[2] * elem) % row) {
        sgl_sdk_str(err, n, "%s: rows of %lld elements (the last dim of the merged pair) are not a multiple of %zu "
                    "bytes (aligned rows)", s->name, (long long)s->shape[2], row);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    return SGL_ATTN_OK;
}

static int layout_rc(const DLTensor *t, const sgl_sdk_tensor_spec *s, size_t elem, char *err, size_t n) {
    int64_t st[8];
    strides_of(t, st);
    if (s->flags & SGL_SDK_T_ROWS) {
        int rc = rows_rc(t, s, st, elem, err, n);
        if (rc) return rc;
    }
    if (!t->strides) return SGL_ATTN_OK; /* compact: no gaps, no overlap */
    if (s->flags & SGL_SDK_T_COMPACT) {
        int64_t want = 1;
        for (int i = t->ndim - 1; i >= 0; i--) {
            if (t->shape[i] != 1 && st[i] != want) {
                sgl_sdk_str(err, n, "%s.strides[%d] = %lld; expected %lld (compact row-major tensors only)", s->name,
                            i, (long long)st[i], (long long)want);
                return SGL_ATTN_E_UNSUPPORTED;
            }
            want *= t->shape[i];
        }
        return SGL_ATTN_OK;
    }
    int64_t span = 0;
    for (int i = 0; i < t->ndim; i++) {
        int64_t step;
        if (st[i] < 0) {
            sgl_sdk_str(err, n, "%s.strides[%d] = %lld; expected >= 0", s->name, i, (long long)st[i]);
            return SGL_ATTN_E_INVALID;
        }
        if (t->shape[i] > 0 &&
            (__builtin_mul_overflow(st[i], t->shape[i] - 1, &step) || __builtin_add_overflow(span, step, &span))) {
            sgl_sdk_str(err, n, "%s: strides times shape overflow", s->name);
            return SGL_ATTN_E_INVALID;
        }
    }
    if (!(s->flags & SGL_SDK_T_WRITTEN)) return SGL_ATTN_OK;
    /* No element of an output may alias another: order the dims by stride,
     * innermost first (on equal strides the later, row-major inner, dim), and
     * ask that each steps past the whole extent of the one inside it. */
    int order[8];
    for (int i = 0; i < t->ndim; i++) order[i] = t->ndim - 1 - i;
    for (int i = 1; i < t->ndim; i++)
        for (int j = i; j > 0 && st[order[j]] < st[order[j - 1]]; j--) {
            int tmp = order[j];
            order[j] = order[j - 1];
            order[j - 1] = tmp;
        }
    int64_t need = 1;
    for (int k = 0; k < t->ndim; k++) {
        int d = order[k];
        if (t->shape[d] <= 1) continue;
        if (st[d] < need) {
            sgl_sdk_str(err, n, "%s.strides[%d] = %lld makes elements of this output overlap (expected >= %lld)",
                        s->name, d, (long long)st[d], (long long)need);
            return SGL_ATTN_E_INVALID;
        }
        if (__builtin_mul_overflow(st[d], t->shape[d], &need)) need = INT64_MAX;
    }
    return SGL_ATTN_OK;
}

int sgl_sdk_check_tensor(const DLTensor *t, const sgl_sdk_tensor_spec *s, char *err, size_t n) {
    if (!t) {
        if (s->flags & SGL_SDK_T_OPTIONAL) return SGL_ATTN_OK;
        sgl_sdk_str(err, n, "%s is NULL", s->name);
        return SGL_ATTN_E_INVALID;
    }
    if (!device_ok(t, s, err, n)) return SGL_ATTN_E_INVALID;
    if (!shape_ok(t, s, err, n)) return SGL_ATTN_E_INVALID;
    int rc = dtype_rc(t, s, err, n);
    if (rc) return rc;
    for (int i = 0; (s->flags & SGL_SDK_T_INT32) && i < t->ndim; i++)
        if (t->shape[i] > INT32_MAX) {
            sgl_sdk_str(err, n, "%s.shape[%d] = %lld; expected at most 2^31 - 1 (the kernels count in 32 bits)",
                        s->name, i, (long long)t->shape[i]);
            return SGL_ATTN_E_UNSUPPORTED;
        }
    int64_t numel = 1;
    for (int i = 0; i < t->ndim; i++)
        if (__builtin_mul_overflow(numel, t->shape[i], &numel)) {
            sgl_sdk_str(err, n, "%s: the element count of its shape overflows", s->name);
            return SGL_ATTN_E_INVALID;
        }
    if (numel > 0 && !t->data) {
        sgl_sdk_str(err, n, "%s.data is NULL", s->name);
        return SGL_ATTN_E_INVALID;
    }
    const size_t elem = (t->dtype.bits + 7u) / 8u;
    const uintptr_t at = (uintptr_t)t->data + (uintptr_t)t->byte_offset;
    if (numel > 0 && elem > 1 && at % elem) {
        sgl_sdk_str(err, n, "%s: data + byte_offset (%llu) is not aligned to its %zu-byte elements", s->name,
                    (unsigned long long)t->byte_offset, elem);
        return SGL_ATTN_E_INVALID;
    }
    if (numel > 0 && s->align > elem && at % s->align) {
        sgl_sdk_str(err, n, "%s: data + byte_offset is not %u-byte aligned", s->name, (unsigned)s->align);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    return layout_rc(t, s, elem ? elem : 1, err, n);
}

void sgl_sdk_strides(const DLTensor *t, const sgl_sdk_tensor_spec *s, int64_t st[SGL_SDK_MAX_DIMS]) {
    int64_t own[8];
    strides_of(t, own);
    for (int i = 0; i < SGL_SDK_MAX_DIMS; i++) st[i] = i < t->ndim && i < 8 ? own[i] : 1;
    if (is_merged(t, s)) { /* [n0, n1 * n2]: dim 1 steps over rows of n2 */
        const int64_t n2 = s->shape[2] != SGL_SDK_ANY ? s->shape[2]
                           : s->shape[1] > 0      ? t->shape[1] / s->shape[1]
                                                  : t->shape[1];
        st[2] = own[1];
        st[1] = n2 * own[1];
    }
}

int sgl_sdk_host_index(const DLTensor *t, int64_t n) {
    if (!t || !sgl_sdk_host_readable(t) || t->ndim != 1 || !t->shape || t->shape[0] < n || t->dtype.code != kDLInt ||
        t->dtype.lanes != 1 || (t->dtype.bits != 32 && t->dtype.bits != 64) || (n > 0 && !t->data))
        return 0;
    return !t->strides || t->shape[0] <= 1 || t->strides[0] == 1;
}

int64_t sgl_sdk_index_at(const DLTensor *t, int64_t i) {
    const int64_t s0 = t->strides ? t->strides[0] : 1;
    return sgl_sdk_idx(sgl_sdk_data(t), t->dtype.bits == 64, i * s0);
}

int64_t sgl_sdk_index_at2(const DLTensor *t, int64_t r, int64_t c) {
    const int64_t s0 = t->strides ? t->strides[0] : t->shape[1], s1 = t->strides ? t->strides[1] : 1;
    return sgl_sdk_idx(sgl_sdk_data(t), t->dtype.bits == 64, r * s0 + c * s1);
}

int sgl_sdk_check_index_range(const DLTensor *t, const char *name, int64_t n, int64_t lo, int64_t hi,
                              const char *meaning, char *err, size_t size) {
    for (int64_t i = 0; i < n; i++) {
        int64_t v = sgl_sdk_index_at(t, i);
        if (v < lo || v > hi) {
            sgl_sdk_str(err, size, "%s[%lld] = %lld; expected %lld..%lld%s%s%s", name, (long long)i, (long long)v,
                        (long long)lo, (long long)hi, meaning ? " (" : "", meaning ? meaning : "", meaning ? ")" : "");
            return SGL_ATTN_E_INVALID;
        }
    }
    return SGL_ATTN_OK;
}
