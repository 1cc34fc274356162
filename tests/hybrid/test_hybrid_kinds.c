/* test_hybrid_kinds.c - each stateful kind, through its plugin's backend,
 * against the float64 reference of attnctl/harness/linear_ref.c:
 *   - ragged extends with lengths crossing the chunk size, a padded row (-1),
 *   - a second extend continuing the stored state (prefix > 0) and a fresh
 *     request reusing a slot (prefix 0: its old state must be ignored),
 *   - decode steps after that, two linear layers with their own state,
 *   - full-attention layers reaching the inner untouched,
 * for the f32 path at several chunk sizes (and token by token), the f64 path
 * (token by token and chunked: the chunked algebra exact to 1e-20), and
 * bf16 inputs. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hyb_scen.h"

static void scenario(int kind, const tu_shape *shape, uint32_t in_dt, uint32_t state_dt, int chunk,
                     double tol, uint64_t seed) {
    scen s;
    scen_open(&s, kind, shape, in_dt, state_dt, chunk, tol, seed, 0);
    const int L = chunk > 4 ? chunk : 4;
    {   /* fresh requests, ragged, one padded row; slot 3 gets a state to be discarded later */
        int slots[] = {2, -1, 0, 5, 3}, n[] = {5, 3, L + 3, 2 * L + 1, 4}, pre[] = {0, 0, 0, 0, 0};
        run_batch(&s, SGL_ATTN_MODE_EXTEND, 5, slots, n, pre, 0);
    }
    {   /* continue 0 and 2 from their states; 3 is a new request (prefix 0); 6 new */
        int slots[] = {0, 2, 3, 6}, n[] = {7, L, 1, L - 1}, pre[] = {L + 3, 5, 0, 0};
        run_batch(&s, SGL_ATTN_MODE_EXTEND, 4, slots, n, pre, 0);
    }
    for (int step = 0; step < 3; step++) {
        int slots[] = {0, 2, -1, 3, 5, 6}, n[] = {1, 1, 1, 1, 1, 1};
        int pre[] = {L + 10 + step, 5 + L + step, 0, 1 + step, 2 * L + 1 + step, L - 1 + step};
        run_batch(&s, SGL_ATTN_MODE_DECODE, 6, slots, n, pre, 0);
    }
    scen_close(&s);
}

static const tu_shape gdn_shape = {2, 4, 16, 8, 4, 0};  /* HK 2, HV 4 (GQA), K 16 != V 8 */
static const tu_shape mamba_shape = {2, 4, 8, 6, 4, 0}; /* G 2, H 4, N 8, P 6 */
static const tu_shape sc_shape = {0, 0, 0, 0, 3, 24};   /* D 24, width 3 */
static const tu_shape light_shape = {3, 3, 12, 10, 0, 0};

static void all_forms(int kind, const tu_shape *sh, uint64_t seed) {
    const uint32_t F32 = SGL_ATTN_DT_F32, F64 = SGL_ATTN_DT_F64;
    scenario(kind, sh, F64, F64, -1, 1e-20, seed + 1);  /* the reference path, token by token */
    scenario(kind, sh, F64, F64, 5, 1e-20, seed + 2);   /* chunked, exact in f64 */
    scenario(kind, sh, F64, F64, 16, 1e-20, seed + 3);
    scenario(kind, sh, F32, F32, 0, 1e-11, seed + 4);    /* f32 token by token */
    scenario(kind, sh, F32, F32, 1, 1e-11, seed + 5);
    scenario(kind, sh, F32, F32, 16, 1e-11, seed + 6);
    scenario(kind, sh, F32, F32, -1, 1e-11, seed + 7);   /* default chunk (64) */
    scenario(kind, sh, SGL_ATTN_DT_BF16, F32, -1, 1e-4, seed + 8); /* bf16 in/out */
}

static void test_gdn(void **st) { (void)st; all_forms(SGL_ATTN_HYBRID_GDN, &gdn_shape, 1000); }
static void test_kda(void **st) { (void)st; all_forms(SGL_ATTN_HYBRID_KDA, &gdn_shape, 2000); }
static void test_mamba2(void **st) { (void)st; all_forms(SGL_ATTN_HYBRID_MAMBA2, &mamba_shape, 3000); }
static void test_short_conv(void **st) { (void)st; all_forms(SGL_ATTN_HYBRID_SHORT_CONV, &sc_shape, 4000); }
static void test_lightning(void **st) { (void)st; all_forms(SGL_ATTN_HYBRID_LIGHTNING, &light_shape, 5000); }

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gdn),        cmocka_unit_test(test_kda),
        cmocka_unit_test(test_mamba2),     cmocka_unit_test(test_short_conv),
        cmocka_unit_test(test_lightning),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
