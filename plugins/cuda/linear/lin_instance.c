/* lin_instance.c - what every part of a wrapper instance reports and reads
 * with: its error text, an inner backend's failure, the plan arrays in its
 * device allocation.  A leaf: it calls nothing else of the plugin, so create,
 * planning, the forwards and the state ops use it without calling each other. */
#include <stdarg.h>
#include <stdio.h>

#include "lin.h"

void lin_set_err(lin_inst *w, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->err, sizeof w->err, fmt, ap);
    va_end(ap);
}

int lin_inner_failed(lin_inst *w, int rc, const char *what) {
    const char *(*le)(sgl_attn_backend *) = LIN_INNER_OP(w, last_error);
    const char *msg = le ? le(w->inner) : NULL;
    lin_set_err(w, "%s: inner backend %s failed (%d): %s", w->name, what, rc, msg && *msg ? msg : "no message");
    return rc;
}

lin_plan_dev lin_plan_ptrs(const lin_inst *w) {
    lin_plan_dev p;
    int32_t **f[16] = {&p.req_tok0, &p.req_n, &p.req_slot, &p.req_init, &p.req_chunk0, &p.req_nchunk, &p.tok_req,
                       &p.chunk_req, &p.chunk_tok0, &p.chunk_len, &p.num_chunks, &p.slot_owner, &p.verify_slot,
                       &p.err, &p.over, &p.cslot};
    for (int i = 0; i < 16; i++) *f[i] = (int32_t *)(w->dev + w->L.plan[i]);
    return p;
}
