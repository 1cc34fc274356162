/* validate_fake.h - the validation layer over a fake inner backend, for the
 * tests of the layer alone (test_validate, test_validate_v12): the inner
 * counts the calls that reach it, each by kind and all together, so a test
 * can say that a refused call never got there. */
#ifndef SGL_ATTN_VALIDATE_FAKE_H
#define SGL_ATTN_VALIDATE_FAKE_H

#include "batch_fixture.h"

int sgl_attn_validate_entry(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer);

/* Which optional ops the fake inner offers. */
enum {
    VF_BARE = 0,
    VF_GRAPH = 1, /* init_graph_state, init_forward_metadata_capture, state_clear */
    VF_V12 = 2,   /* forward_ragged, init_forward_metadata_in_graph, state_batch, indexer_topk */
    VF_ALL = VF_GRAPH | VF_V12,
    VF_V11_SIZE = 4, /* a vtable of ABI 1.1's size, which ends before forward_ragged */
};

typedef struct fake_inner {
    sgl_attn_backend base;
    sgl_attn_backend_ops ops;
    int n_init, n_decode, n_extend, n_graph, n_state, n_destroy;
    int calls;     /* every call that reached it */
    int fail_init; /* answer init with SGL_ATTN_E_DEVICE and a message */
    char err[64];
} fake_inner;

void fake_make(fake_inner *f, int ops);
/* The layer's plugin, checked to be the validate layer. */
const sgl_attn_plugin *validate_plugin(void);
/* A validation layer over `inner` (made here with `ops`) for the fixture's
 * model and claims; fails the test when create refuses. */
sgl_attn_backend *make_layer(fx *f, fake_inner *inner, int ops);
/* The fixture's forward call, decode or extend by its batch's mode. */
int run_forward(sgl_attn_backend *b, fx *f);

#endif
