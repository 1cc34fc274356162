/* fuzz_model.c - libFuzzer target: the model-description reader, both our
 * JSON and Hugging Face config.json (sgl_attn_model_from_json picks by
 * content), at tensor-parallel sizes 1 and 2.  Besides crashes it fails on a
 * model accepted with values no backend could use. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sgl_attn.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_accepted(const sgl_attn_model *m) {
    if (m->struct_size != sizeof *m) abort();
    if (!memchr(m->name, 0, sizeof m->name) || !memchr(m->model_type, 0, sizeof m->model_type) ||
        !memchr(m->hybrid_custom_kind, 0, sizeof m->hybrid_custom_kind))
        abort();
    if (m->num_layers < 1 || m->num_layers > SGL_ATTN_MAX_LAYERS) abort();
    if (m->num_q_heads < 1 || m->num_kv_heads < 1) abort();
    if (m->head_dim_qk < 1 || m->head_dim_v < 1) abort();
    if (m->hybrid_kind >= SGL_ATTN_HYBRID_COUNT_) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const int tps[] = {1, 2};
    for (size_t i = 0; i < sizeof tps / sizeof tps[0]; i++) {
        sgl_attn_model m;
        char err[512];
        err[0] = 0;
        memset(&m, 0xa5, sizeof m); /* the reader must not rely on a zeroed struct */
        int rc = sgl_attn_model_from_json((const char *)data, size, "config.json", tps[i], &m, err,
                                          sizeof err);
        if (rc == SGL_ATTN_OK)
            check_accepted(&m);
        else if (!err[0] || !memchr(err, 0, sizeof err))
            abort();
    }
    return 0;
}
