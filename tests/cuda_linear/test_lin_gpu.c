/* test_lin_gpu.c - the five CUDA linear wrappers against the float64
 * reference, on a GPU (skipped with the probe's reason elsewhere; the CPU
 * emulator of CUDA runs the same scenarios as test_lin_emu).
 *
 * For each config (kind, shape, kernel variant SGL_ATTN_LIN_KERNEL simple /
 * fast, the phase-2 tile SGL_ATTN_LIN_VT, activation dtype, state dtype),
 * one scenario of batches over two own layers: ragged extends across chunk
 * boundaries, state carried across extend calls, a slot restarted without
 * prefix, decode with a padded row, verify keeping the draft states then
 * state_commit, state_copy / state_clear, verify without keep (as many tokens
 * as the pool keeps draft steps for, then more: the fused decode at K = 128),
 * an extend with an empty request.  Then CUDA-graph capture and replay of a
 * decode step (different slots at replay), and bad inputs (clear errors, no
 * launch).  The configs are chosen so that every kernel runs (the comment of
 * each says which it is there for; docs/cuda_linear.md lists where each runs).
 *
 *   test_lin_gpu [plugin_dir]     every config, the graphs and the bad inputs
 *     LT_QUICK=1   the quick set: every kernel and instantiation at least once (each kind's defaults, both
 *                  tiles, both state dtypes, f16 / f32 activations, bf16 conv weights, the token-by-token
 *                  variant, the fused decode's K), a graph, bad inputs
 *     LT_QUICK=2   gdn's defaults and its graph (compute-sanitizer racecheck of the common path)
 *     LT_QUICK=3   the chunked extend's configs (its kernels under compute-sanitizer memcheck)
 *     LT_QUICK=4   the decode configs and graphs (stream decode, both preps, fused decode)
 *     LT_QUICK=7   the state pass on both tiles and state dtypes (racecheck; bench/gpu/race_chunk_state.sh)
 *     LT_QUICK=9   one request of LT_LONG tokens (default 16384; one head), then half as many on its state:
 *                  the precision of long chunk chains (auto cuts a request of 512+ chunks: LT_LONG=32768 takes it)
 *     LT_QUICK=10  the state pass by segments (chunk_segment.cu) with segments of 1-3 chunks
 *                  (SGL_ATTN_LIN_SEGMENT): every kind it serves, both tiles and state dtypes
 *     LT_QUICK=11  caller-owned state (ABI 1.2): each config's scenario, with batched state operations
 *                  (ops->state_batch), first on the wrapper's pool (outputs recorded), then with the state in
 *                  the test's tensors (at the batch's slots, or through linear.state_indices at slots past
 *                  create's max_reqs): the outputs exactly the pool run's and within the float64 reference's
 *                  limits, the tensors' states the reference's; a graph of a decode step and a state_batch
 *                  copy on caller-owned state; caller-state bad inputs
 *     LT_QUICK=12  LT_QUICK=11's first config (gdn's defaults), its graph and bad inputs (racecheck of the
 *                  caller-state kernels)
 *     LT_QUICK=13  the fused chunk kernel (fused_chunk = always, chunk_fused_cp.cu): gdn at V 64 / 128, both
 *                  state dtypes, every scenario with an extend, chunk ends at every offset, caller-owned
 *                  state; the configs the option does not serve (memcheck / racecheck of the kernel)
 *     LT_QUICK=14  the stream decode's L2 prefetch ahead: each decode config (LT_QUICK=4's) without it
 *                  (decode_l2_ahead_blocks=0; outputs recorded), then with the prefetch 1, 3, 5 or 7 blocks
 *                  ahead (the tests' grids are far smaller than the default distance), then with the option
 *                  unset (the default: SMs blocks ahead for the bf16 state, past every test grid; none for
 *                  the float32 state): the outputs the same bits, the create line naming the distance; on the
 *                  emulator the prefetched bytes counted (some where the stream decode runs, none past the
 *                  grid or without it; the emulator also reads each prefetch's first and last byte, for
 *                  ASan); then the decode and verify graphs with the option (the full run takes the quick
 *                  set's decode configs)
 *     LT_QUICK=15  kda's chunked extend (phase 1's q.k and k.k on tensor cores, the decays factored at a
 *                  reference row, the diagonal 8 x 8 blocks in float32 with the channels over the lanes; bf16
 *                  activations on the prep + UT pair, whose UT kernel writes A over kda's dead G, f16 on the
 *                  fused kernel): kda configs
 *                  within the float64 limits: the common scenario (bf16 / f16 activations, both state dtypes),
 *                  long ragged requests with a padded one, chunk ends at every offset, segments, strong gates
 *                  (a chunk's log-decay spanning hundreds), conv width 2 (the general prep; width 4 takes the
 *                  stream prep), and l2norm off with a bf16 state and bf16 conv weights
 *     LT_QUICK=16  the chunked prep as a stream along time (chunk_prep_stream.cu, gdn's prep at conv width 4;
 *                  mamba2's bf16 configs of the sets 1, 3 and 10 take it too, and an odd head count's):
 *                  gdn configs within the float64 limits (V 64 / 96 / 128, an odd tile count, both state
 *                  dtypes, bf16 conv weights, l2norm off, long ragged requests with a padded one, segments,
 *                  and conv width 2, which takes the general prep)
 *     LT_QUICK=18  mamba2's bf16 fused phase 2 (chunk_fused_state.cu; option fused_phase2 = always, since the
 *                  tests' batches do not fill the SMs): each bf16 mamba2 config of the sets 1, 3 and 10 against
 *                  the float64 reference, at conv width 4 in the group form (C and B per group, x and dt from
 *                  the stream prep, no UT kernel: other bits than with it off), at conv width 2 (the general
 *                  prep) in the per-head form (the same bits as with it off); the other kinds refuse always on
 *                  the create line
 *     LT_QUICK=17  two of LT_QUICK=13's configs (V 64 f32 state through the common scenario, V 128 bf16
 *                  state at the segment scenario's lengths): a racecheck of chunk_fused_cp.cu that ends
 *                  within the lever's cap
 * Exit 0 when everything passed (or SKIP), 1 on a failure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "lt_scen.h"


enum { GDN = SGL_ATTN_HYBRID_GDN, KDA = SGL_ATTN_HYBRID_KDA, MAMBA2 = SGL_ATTN_HYBRID_MAMBA2,
       SHORT = SGL_ATTN_HYBRID_SHORT_CONV, LIGHT = SGL_ATTN_HYBRID_LIGHTNING };

static const char *plugin_name(int kind) {
    switch (kind) {
    case GDN: return "gdn_cuda";
    case KDA: return "kda_cuda";
    case MAMBA2: return "mamba2_cuda";
    case SHORT: return "short_conv_cuda";
    default: return "lightning_cuda";
    }
}

static const sgl_attn_plugin *plugins[8];

/* the sets a config belongs to: the full run, LT_QUICK = 1, 2, 3, 4, 7, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18 */
enum { F = 1, Q1 = 2, Q2 = 4, Q3 = 8, Q4 = 16, Q7 = 32, Q9 = 64, Q10 = 128, Q11 = 256, Q12 = 512, Q13 = 1024,
       Q14 = 2048, Q15 = 4096, Q16 = 8192, Q17 = 16384, Q18 = 32768 };
/* scenario: the common one, long ragged requests, one request of LT_LONG tokens, segment boundaries, the
 * common one then batched state operations, chunk ends at every offset, long ragged requests under strong
 * gates */
enum { SCEN = 0, LONG = 1, HUGE = 2, SEGS = 3, OPS = 4, OFFS = 5, STRONG = 6 };

typedef struct cfg {
    int sets;
    int kind;
    lt_shape sh;
    int io_dt;
    uint32_t st; /* SGL_ATTN_DT_F32 / BF16 */
    const char *variant, *vt;
    int l2norm;
    double x_sigma;
    int scen;
    int w16; /* conv weights and bias in bf16 (else float32) */
    const char *seg; /* SGL_ATTN_LIN_SEGMENT (NULL: auto) */
} cfg;

/* the shapes: {hk, hv, K, V, conv width, hidden (short_conv)} */
static const lt_shape SH_GDN = {2, 4, 128, 64, 4, 0}, SH_KDA = {2, 2, 128, 128, 4, 0},
                      SH_MAMBA2 = {2, 4, 128, 64, 4, 0}, SH_LIGHT = {2, 2, 128, 128, 0, 0},
                      SH_SHORT = {0, 0, 0, 0, 3, 200}, SH_GDN_ODD = {1, 3, 96, 40, 4, 0},
                      SH_MAMBA2_ODD = {1, 2, 64, 48, 2, 0}, SH_KDA_SMALL = {1, 1, 32, 32, 3, 0},
                      SH_MAMBA2_W2 = {2, 4, 128, 64, 2, 0}, /* the general prep: the fused phase 2's per-head form */
                      SH_GDN96 = {1, 2, 128, 96, 4, 0}, SH_GDN40 = {1, 2, 128, 40, 4, 0},
                      SH_GDN128 = {1, 2, 128, 128, 4, 0}, /* the output kernel's two column halves */
                      SH_GDN_W2 = {2, 4, 128, 64, 2, 0},  /* conv width 2: the general preps for gdn */
                      SH_GDN256 = {1, 1, 256, 32, 4, 0},  /* K = 256: the fused decode's widest rows */
                      SH_GDN_LONG = {1, 1, 128, 64, 4, 0}, /* LT_QUICK=9: one head keeps the reference short */
                      SH_GDN_HV3 = {1, 3, 128, 64, 4, 0},  /* the stream prep: 3 value heads at V 64 in two tiles
                                                            * (the second's upper half past HV), 4 tiles in all */
                      SH_MAMBA2_HV3 = {1, 3, 128, 64, 4, 0},
                      SH_KDA_W2 = {2, 2, 128, 128, 2, 0};  /* conv width 2: the general prep for kda */

static double tol_of(const cfg *c) {
    if (c->st == SGL_ATTN_DT_BF16) return 2e-3; /* the state itself rounded every step */
    return c->io_dt == LT_F32 ? 1e-8 : 1e-4;    /* docs/harness.md limits */
}

static void scenario(lt_scen *s) {
    /* B0: slot 6 gets a state; B2 restarts it without prefix */
    scen_batch(s, SGL_ATTN_MODE_EXTEND, 1, (int[]){6}, (int[]){9}, (int[]){0}, 0);
    /* B1: ragged, across chunk boundaries (64) */
    scen_batch(s, SGL_ATTN_MODE_EXTEND, 3, (int[]){5, 1, 3}, (int[]){70, 1, 130}, (int[]){0, 0, 0}, 0);
    /* B2: state carried across extend calls */
    scen_batch(s, SGL_ATTN_MODE_EXTEND, 3, (int[]){1, 3, 6}, (int[]){65, 17, 1}, (int[]){1, 130, 0}, 0);
    /* B3, B4: decode, a padded row */
    scen_batch(s, SGL_ATTN_MODE_DECODE, 4, (int[]){5, -1, 1, 3}, (int[]){1, 1, 1, 1}, NULL, 0);
    scen_batch(s, SGL_ATTN_MODE_DECODE, 4, (int[]){3, 5, 1, 6}, (int[]){1, 1, 1, 1}, NULL, 0);
    /* B5: verify keeping the draft states, commit steps 2, keep, 0 */
    scen_batch(s, SGL_ATTN_MODE_TARGET_VERIFY, 3, (int[]){1, 5, 6}, (int[]){3, 3, 3}, NULL, 1);
    scen_commit(s, (int[]){2, -1, 0});
    scen_batch(s, SGL_ATTN_MODE_DECODE, 3, (int[]){1, 5, 6}, (int[]){1, 1, 1}, NULL, 0);
    /* prefix reuse */
    scen_copy(s, 5, 7);
    scen_clear(s, 3);
    scen_batch(s, SGL_ATTN_MODE_DECODE, 2, (int[]){7, 3}, (int[]){1, 1}, NULL, 0);
    /* verify without keep moves the main state; then more tokens than the pool keeps draft steps for (the
     * stream decode's scratch holds LT_STEPS: the fused decode takes K = 128 there) */
    scen_batch(s, SGL_ATTN_MODE_TARGET_VERIFY, 2, (int[]){7, 5}, (int[]){2, 2}, NULL, 0);
    scen_batch(s, SGL_ATTN_MODE_TARGET_VERIFY, 2, (int[]){5, 7}, (int[]){LT_STEPS + 2, LT_STEPS + 2}, NULL, 0);
    /* an empty request in an extend */
    scen_batch(s, SGL_ATTN_MODE_EXTEND, 3, (int[]){0, 7, 2}, (int[]){64, 3, 0}, (int[]){0, 4, 0}, 0);
}

static int contains(const char *s, const char *sub) { return s && strstr(s, sub) != NULL; }

/* The common scenario, then batched state operations (ops->state_batch): a verify keeping its draft states,
 * track (step 1 of slot 1 into slot 0, an entry skipped by step -1) and commit (a kept and a skipped entry)
 * on device indices; a copy batch (one src read twice, a skipped entry) and a clear on host indices; then a
 * decode step over the slots they wrote */
static void scenario_ops(lt_scen *s) {
    scenario(s);
    scen_batch(s, SGL_ATTN_MODE_TARGET_VERIFY, 3, (int[]){1, 5, 6}, (int[]){3, 3, 3}, NULL, 1);
    scen_state_batch(s, SGL_ATTN_STATE_TRACK, 2, (int[]){0, 2}, (int[]){1, 6}, (int[]){1, -1}, 0);
    scen_state_batch(s, SGL_ATTN_STATE_COMMIT, 3, (int[]){5, 6, -1}, NULL, (int[]){2, -1, 0}, 0);
    scen_state_batch(s, SGL_ATTN_STATE_COPY, 3, (int[]){2, -1, 4}, (int[]){1, 3, 1}, NULL, 1);
    scen_state_batch(s, SGL_ATTN_STATE_CLEAR, 2, (int[]){3, 7}, NULL, NULL, 1);
    scen_batch(s, SGL_ATTN_MODE_DECODE, 7, (int[]){0, 1, 2, 3, 4, 5, 6}, (int[]){1, 1, 1, 1, 1, 1, 1}, NULL, 0);
}

/* Long ragged requests over many chunks, state carried in, a padded request, then a decode step reading the
 * pool (lt_max_tokens >= 1653) */
static void scenario_long(lt_scen *s) {
    scen_batch(s, SGL_ATTN_MODE_EXTEND, 3, (int[]){2, 5, 0}, (int[]){1000, 3, 650}, (int[]){0, 0, 0}, 0);
    scen_batch(s, SGL_ATTN_MODE_EXTEND, 4, (int[]){5, -1, 2, 0}, (int[]){700, 70, 129, 64}, (int[]){3, 0, 1000, 650},
               0);
    scen_batch(s, SGL_ATTN_MODE_DECODE, 3, (int[]){2, 5, 0}, (int[]){1, 1, 1}, NULL, 0);
}

/* The state pass by segments of a few chunks (the config's segment_chunks): requests of 1-5 chunks whose
 * lengths end at many offsets inside a chunk, so that segment ends fall on whole chunks and on a request's
 * last, partial one; long and short requests mixed with a padded one; state carried across calls; then a
 * decode step reading the pool (lt_max_tokens >= 2048) */
static void scenario_seg(lt_scen *s) {
    scen_batch(s, SGL_ATTN_MODE_EXTEND, 8, (int[]){0, 1, 2, 3, 4, 5, 6, 7},
               (int[]){127, 128, 129, 191, 192, 193, 255, 257}, (int[]){0, 0, 0, 0, 0, 0, 0, 0}, 0);
    scen_batch(s, SGL_ATTN_MODE_EXTEND, 5, (int[]){2, 5, -1, 0, 7}, (int[]){700, 3, 70, 321, 1},
               (int[]){129, 193, 0, 127, 257}, 0);
    scen_batch(s, SGL_ATTN_MODE_EXTEND, 4, (int[]){6, 2, 1, 3}, (int[]){385, 64, 63, 449},
               (int[]){255, 829, 128, 191}, 0);
    scen_batch(s, SGL_ATTN_MODE_DECODE, 4, (int[]){2, 6, 0, 3}, (int[]){1, 1, 1, 1}, NULL, 0);
}

/* Chunk ends at every offset: 8 extend calls of 8 requests, request k of call b with 8 b + k new tokens
 * mod 64 (64 for 0), one or two chunks, each call continuing the slots' states (so a request's chunk
 * boundaries fall at every offset of its history too); then a call with a padded request, and a decode
 * step reading the pool (lt_max_tokens >= 1024) */
static void scenario_offsets(lt_scen *s) {
    int pre[8] = {0};
    for (int b = 0; b < 8; b++) {
        int slots[8], lens[8], pfx[8];
        for (int k = 0; k < 8; k++) {
            const int r = 8 * b + k;
            slots[k] = k;
            lens[k] = 64 * ((b + k) & 1) + (r ? r : 64);
            pfx[k] = pre[k];
            pre[k] += lens[k];
        }
        scen_batch(s, SGL_ATTN_MODE_EXTEND, 8, slots, lens, pfx, 0);
    }
    scen_batch(s, SGL_ATTN_MODE_EXTEND, 3, (int[]){3, -1, 5}, (int[]){70, 33, 1}, (int[]){pre[3], 0, pre[5]}, 0);
    scen_batch(s, SGL_ATTN_MODE_DECODE, 4, (int[]){0, 3, 5, 7}, (int[]){1, 1, 1, 1}, NULL, 0);
}

/* One request of LT_LONG tokens from zero, then LT_LONG / 2 more on its state */
static int long_tokens(void) {
    const int t = getenv("LT_LONG") ? atoi(getenv("LT_LONG")) : 16384;
    return t > 64 ? t : 64;
}
static void scenario_one_long(lt_scen *s) {
    const int t = long_tokens();
    scen_batch(s, SGL_ATTN_MODE_EXTEND, 1, (int[]){3}, (int[]){t}, (int[]){0}, 0);
    scen_batch(s, SGL_ATTN_MODE_EXTEND, 1, (int[]){3}, (int[]){t / 2}, (int[]){t}, 0);
}

static void run_cfg(const cfg *c) {
    char label[128];
    snprintf(label, sizeof label, "%s %s vt=%s io=%s state=%s%s K=%d V=%d W=%d%s", plugin_name(c->kind), c->variant,
             c->vt, lt_dt_name(c->io_dt), c->st == SGL_ATTN_DT_BF16 ? "bf16" : "f32", c->l2norm ? "" : " l2norm=0",
             c->sh.dk, c->sh.dv, c->sh.conv_w,
             c->scen == LONG ? " (long requests)" : c->scen == STRONG ? " (long requests, strong gates)"
             : c->scen == HUGE ? " (one request of LT_LONG tokens)"
             : c->scen == SEGS ? " (segments)"
             : c->scen == OFFS ? " (chunk ends at every offset)"
             : lt_caller_mode == 1 ? " caller state"
             : lt_caller_mode == 2 ? " caller state+indices"
             : c->scen == OPS  ? " pool+state_batch"
             : c->w16         ? " (bf16 conv weights)"
                              : "");
    if (c->seg) {
        const size_t l = strlen(label);
        snprintf(label + l, sizeof label - l, " seg=%s", c->seg);
    }
    const char *l2a_b = getenv("SGL_ATTN_LIN_DECODE_L2_AHEAD_BLOCKS");
    if (l2a_b) { /* l2a_tests */
        const size_t l = strlen(label);
        snprintf(label + l, sizeof label - l, " l2_ahead=%s blocks", l2a_b);
    }
    lt_max_tokens = c->scen == LONG || c->scen == SEGS || c->scen == STRONG ? 2048 : c->scen == OFFS ? 1024 : c->scen == HUGE ? long_tokens() : 512;
    lt_weight_dt = c->w16 ? LT_BF16 : LT_F32;
    lt_slow_decay = c->scen == STRONG ? -1 : c->scen != SCEN;
    setenv("SGL_ATTN_LIN_KERNEL", c->variant, 1);
    setenv("SGL_ATTN_LIN_VT", c->vt, 1);
    setenv("SGL_ATTN_LIN_SEGMENT", c->seg ? c->seg : "auto", 1);
    lt_scen s;
    const int before = lt_failures;
    if (scen_open(&s, plugins[c->kind], c->kind, &c->sh, c->io_dt, c->st, tol_of(c), 0x1234 + (uint64_t)c->kind,
                  label) != 0) {
        LT_CHECK(0, "%s: could not create the instance", label);
        scen_close(&s);
        return;
    }
    s.l2norm = c->l2norm;
    s.x_sigma = c->x_sigma;
    if (c->scen == LONG || c->scen == STRONG) scenario_long(&s);
    else if (c->scen == HUGE) scenario_one_long(&s);
    else if (c->scen == SEGS) scenario_seg(&s);
    else if (c->scen == OFFS) scenario_offsets(&s);
    else if (c->scen == OPS) scenario_ops(&s);
    else scenario(&s);
    scen_check_caller_state(&s);
    printf("%-4s %-70s worst NMSE %.3g (limit %.1g)\n", lt_failures == before ? "ok" : "FAIL", label, s.worst, s.tol);
    fflush(stdout);
    scen_close(&s);
}

/* The scenario of a graph test: the fast kernels under the plan-time rules,
 * f32 weights, bf16 activations, f32 state, caller-owned state when asked;
 * label names the test.  Nonzero (the failure recorded) when it cannot open. */
static int graph_scen_open(lt_scen *s, int kind, const lt_shape *sh, int caller, uint64_t seed, const char *what,
                           char *label, size_t label_size) {
    lt_weight_dt = LT_F32;
    lt_caller_mode = caller; /* caller-owned state: the slot kernel and the tensors' pointers captured too */
    setenv("SGL_ATTN_LIN_KERNEL", "fast", 1);
    setenv("SGL_ATTN_LIN_VT", "auto", 1);
    setenv("SGL_ATTN_LIN_SEGMENT", "auto", 1);
    snprintf(label, label_size, "%s %s%s", plugin_name(kind), what, caller ? " (caller state+indices)" : "");
    const int opened = scen_open(s, plugins[kind], kind, sh, LT_BF16, SGL_ATTN_DT_F32, 1e-4, seed, label);
    lt_caller_mode = 0;
    if (opened != 0) {
        LT_CHECK(0, "%s: could not create the instance", label);
        scen_close(s);
    }
    return opened;
}

/* The two graph tests' end: the graph, the layers' tensors and the batch's
 * slots / lengths freed, the verdict line (failures since before), the
 * scenario closed. */
static void graph_scen_close(lt_scen *s, cudaGraphExec_t exec, cudaGraph_t graph, lt_io *io, lt_tensor *si,
                             lt_tensor *sl, const char *label, int before) {
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    for (int l = 0; l < LT_OWN; l++) lt_io_free(&io[l]);
    lt_free(si);
    lt_free(sl);
    printf("%-4s %-70s worst NMSE %.3g\n", lt_failures == before ? "ok" : "FAIL", label, s->worst);
    scen_close(s);
}

/* Capture one decode step of both own layers in a CUDA graph; replay it,
 * then change the slots in device memory, re-plan with the replay hook and
 * replay again: the outputs follow the reference each time. */
static void graph_test(int kind, const lt_shape *sh, int caller) {
    lt_scen s;
    char label[96];
    if (graph_scen_open(&s, kind, sh, caller, 99, "graph capture/replay", label, sizeof label)) return;
    const int before = lt_failures;
    scen_batch(&s, SGL_ATTN_MODE_EXTEND, 4, (int[]){0, 1, 2, 3}, (int[]){5, 66, 1, 20}, (int[]){0, 0, 0, 0}, 0);
    int rc = s.b->ops->init_graph_state(s.b, 4, 4);
    LT_CHECK(rc == SGL_ATTN_OK, "init_graph_state: %d %s", rc, s.b->ops->last_error(s.b));
    int slots[4] = {0, 1, 2, 3}, n[4] = {1, 1, 1, 1}, seq[4] = {6, 67, 2, 21};
    lt_tensor si, sl;
    lt_index_tensor(&si, 4, slots, 0);
    lt_index_tensor(&sl, 4, seq, 0);
    sgl_attn_batch bt;
    lt_batch_init(&bt, SGL_ATTN_MODE_DECODE, 4, 4, 1, &si, s.stream);
    bt.seq_lens = &sl.t;
    sgl_attn_graph_args g;
    lt_graph_args_init(&g, &bt);
    rc = s.b->ops->init_forward_metadata_capture(s.b, &g);
    LT_CHECK(rc == SGL_ATTN_OK, "capture hook: %d %s", rc, s.b->ops->last_error(s.b));
    lt_io io[LT_OWN];
    s.cur_bs = 4;
    memcpy(s.cur_slots, slots, sizeof slots);
    for (int l = 0; l < LT_OWN; l++) lt_io_make(&s, l, 4, 0, &bt, &io[l]);
    cudaStream_t st = (cudaStream_t)s.stream;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    lt_tensor cd, cs; /* caller state: the indices of the graph's state_batch copy (allocated before capture) */
    memset(&cd, 0, sizeof cd);
    memset(&cs, 0, sizeof cs);
    if (caller) {
        lt_index_tensor(&cd, 1, (int[]){scen_cslot(&s, 5)}, 0);
        lt_index_tensor(&cs, 1, (int[]){scen_cslot(&s, 1)}, 0);
    }
    cudaError_t e = cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal);
    for (int l = 0; l < LT_OWN && e == cudaSuccess; l++) {
        rc = s.b->ops->forward_decode(s.b, &io[l].fa);
        LT_CHECK(rc == SGL_ATTN_OK, "forward_decode under capture: %d %s", rc, s.b->ops->last_error(s.b));
    }
    /* caller state: a state_batch copy (device indices) in the graph too: slot 1's state to slot 5 */
    if (caller) {
        for (int l = 0; l < LT_OWN && e == cudaSuccess; l++) {
            sgl_attn_linear_io sio;
            scen_state_io(&s, l, &sio);
            sgl_attn_state_batch_args sa;
            lt_state_args(&sa, SGL_ATTN_STATE_COPY, 1, &cd, &cs, NULL, &sio, s.stream);
            rc = s.b->ops->state_batch(s.b, &sa);
            LT_CHECK(rc == SGL_ATTN_OK, "state_batch under capture: %d %s", rc, s.b->ops->last_error(s.b));
        }
    }
    if (e == cudaSuccess) e = cudaStreamEndCapture(st, &graph);
    if (e == cudaSuccess) e = cudaGraphInstantiate(&exec, graph, 0);
    LT_CHECK(e == cudaSuccess, "capture: %s", cudaGetErrorString(e));
    for (int rep = 0; rep < 3 && e == cudaSuccess; rep++) {
        if (rep == 2) { /* other slots, one padded, same grid */
            const int s2[4] = {3, 2, -1, 0};
            memcpy(slots, s2, sizeof slots);
            for (int i = 0; i < 4; i++) lt_set(&si, (size_t)i, slots[i]);
            lt_upload(&si);
            for (int l = 0; l < LT_OWN && caller == 2; l++) { /* the layers' own slots, in place */
                for (int i = 0; i < 4; i++) lt_set(&io[l].csi, (size_t)i, scen_cslot(&s, slots[i]));
                lt_upload(&io[l].csi);
            }
            rc = s.b->ops->init_forward_metadata_replay(s.b, &g);
            LT_CHECK(rc == SGL_ATTN_OK, "replay hook: %d %s", rc, s.b->ops->last_error(s.b));
        }
        for (int l = 0; l < LT_OWN; l++) lt_poison(&io[l].out);
        e = cudaGraphLaunch(exec, st);
        if (e == cudaSuccess) e = cudaStreamSynchronize(st);
        LT_CHECK(e == cudaSuccess, "replay %d: %s", rep, cudaGetErrorString(e));
        for (int l = 0; l < LT_OWN && e == cudaSuccess; l++)
            lt_io_check(&s, l, &io[l], SGL_ATTN_MODE_DECODE, 4, slots, n, NULL, 0, 4);
        for (int l = 0; l < LT_OWN && caller; l++) { /* the graph's copy, in the reference */
            memcpy(s.conv[l][5], s.conv[l][1], s.conv_n * sizeof(double));
            memcpy(s.ssm[l][5], s.ssm[l][1], s.ssm_n * sizeof(double));
            s.live[5] = 1;
        }
    }
    scen_check_caller_state(&s);
    if (cd.ref) lt_free(&cd);
    if (cs.ref) lt_free(&cs);
    LT_CHECK(s.inner.n_capture == 1 && s.inner.n_replay == 1 && s.inner.n_graph_init == 1,
             "graph hooks reached the inner %d/%d/%d times", s.inner.n_graph_init, s.inner.n_capture,
             s.inner.n_replay);
    LT_CHECK(s.b->ops->graph_seq_len_fill_value(s.b) == 7, "the fill value is the inner's");
    graph_scen_close(&s, exec, graph, io, &si, &sl, label, before);
}

/* Bad inputs: a clear error naming the argument, nothing launched. */
/* New random inputs in a layer's captured tensors (the replayed graph reads them there). */
static void refill_io(lt_scen *s, lt_io *o) {
    if (o->x.ref) lt_fill_normal(&o->x, &s->r, s->x_sigma);
    if (o->a.ref) lt_fill_normal(&o->a, &s->r, 1.0);
    if (o->b.ref) lt_fill_normal(&o->b, &s->r, 1.0);
    if (o->q.ref) lt_fill_normal(&o->q, &s->r, 0.2);
    if (o->k.ref) lt_fill_normal(&o->k, &s->r, 0.2);
    if (o->v.ref) lt_fill_normal(&o->v, &s->r, 1.0);
}

/* One verify batch (SGL_ATTN_FEAT_GRAPH_VERIFY) of 4 requests x LT_STEPS
 * draft tokens, keeping the draft states, captured once and replayed: the
 * same batch, then other slots, padded requests (slot -1), a batch_size
 * below the captured one (the plan pads the captured grid's other requests: the
 * previous batch's third request had a slot this one uses),
 * each with new inputs and followed by state_commit of random accepted steps,
 * so that the next replay starts from the committed state.  Every replay's
 * outputs against the float64 reference, padded rows exact zeros.  The hooks
 * refuse a changed tokens_per_req (E_STATE, naming it) and a replay of a
 * verify before any verify capture; the graph still replays after a refusal. */
static void verify_graph_test(int kind, const lt_shape *sh, int caller) {
    enum { VBS = 4, TPR = LT_STEPS, VT = VBS * TPR };
    lt_scen s;
    char label[96];
    if (graph_scen_open(&s, kind, sh, caller, 123, "verify graph capture/replay", label, sizeof label)) return;
    const int before = lt_failures;
    scen_batch(&s, SGL_ATTN_MODE_EXTEND, 6, (int[]){0, 1, 2, 3, 4, 5}, (int[]){5, 66, 1, 20, 9, 3},
               (int[]){0, 0, 0, 0, 0, 0}, 0);
    int rc = s.b->ops->init_graph_state(s.b, VBS, VT);
    LT_CHECK(rc == SGL_ATTN_OK, "init_graph_state: %d %s", rc, s.b->ops->last_error(s.b));
    int slots[VBS] = {0, 1, 2, 3}, n[VBS] = {TPR, TPR, TPR, TPR}, seq[VBS] = {5 + TPR, 66 + TPR, 1 + TPR, 20 + TPR};
    lt_tensor si, sl;
    lt_index_tensor(&si, VBS, slots, 0);
    lt_index_tensor(&sl, VBS, seq, 0);
    sgl_attn_batch bt;
    lt_batch_init(&bt, SGL_ATTN_MODE_TARGET_VERIFY, VBS, VT, TPR, &si, s.stream);
    bt.seq_lens = &sl.t;
    sgl_attn_graph_args g;
    lt_graph_args_init(&g, &bt);
    /* nothing captured yet: a verify replay is out of order */
    rc = s.b->ops->init_forward_metadata_replay(s.b, &g);
    LT_CHECK(rc == SGL_ATTN_E_STATE && contains(s.b->ops->last_error(s.b), "no verify batch was captured"),
             "verify replay before a verify capture: %d %s", rc, s.b->ops->last_error(s.b));
    rc = s.b->ops->init_forward_metadata_capture(s.b, &g);
    LT_CHECK(rc == SGL_ATTN_OK, "capture hook: %d %s", rc, s.b->ops->last_error(s.b));
    lt_io io[LT_OWN];
    s.cur_bs = VBS;
    memcpy(s.cur_slots, slots, sizeof slots);
    for (int l = 0; l < LT_OWN; l++) lt_io_make(&s, l, VT, 1, &bt, &io[l]);
    cudaStream_t st = (cudaStream_t)s.stream;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    cudaError_t e = cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal);
    for (int l = 0; l < LT_OWN && e == cudaSuccess; l++) {
        rc = s.b->ops->forward_decode(s.b, &io[l].fa);
        LT_CHECK(rc == SGL_ATTN_OK, "verify forward under capture: %d %s", rc, s.b->ops->last_error(s.b));
    }
    if (e == cudaSuccess) e = cudaStreamEndCapture(st, &graph);
    if (e == cudaSuccess) e = cudaGraphInstantiate(&exec, graph, 0);
    LT_CHECK(e == cudaSuccess, "capture: %s", cudaGetErrorString(e));
    /* the replays: slots (-1 padding) and batch sizes */
    static const int rslots[][VBS] = {{0, 1, 2, 3}, {3, 5, 0, 4}, {2, -1, 1, -1}, {1, 3, -1, -1}, {1, 4, 0, 2}};
    static const int rbs[] = {VBS, VBS, VBS, 2, VBS};
    static const int acc[][VBS] = {{2, 0, -1, 1}, {1, 2, 0, -1}, {0, -1, 2, -1}, {2, 1, -1, -1}, {1, 1, 0, 2}};
    const int nrep = (int)(sizeof rbs / sizeof *rbs);
    for (int rep = 0; rep < nrep && e == cudaSuccess; rep++) {
        const int bs = rbs[rep], T = bs * TPR;
        memcpy(slots, rslots[rep], sizeof slots);
        for (int i = 0; i < VBS; i++) lt_set(&si, (size_t)i, slots[i]);
        lt_upload(&si);
        for (int l = 0; l < LT_OWN && caller == 2; l++) { /* the layers' own slots, in place; -1 past bs */
            for (int i = 0; i < VBS; i++) lt_set(&io[l].csi, (size_t)i, i < bs ? scen_cslot(&s, slots[i]) : -1);
            lt_upload(&io[l].csi);
        }
        for (int l = 0; l < LT_OWN; l++) refill_io(&s, &io[l]);
        bt.batch_size = g.batch_size = bs;
        bt.num_tokens = g.num_tokens = T;
        if (rep == 1) { /* a changed tokens_per_req is refused, then the graph replays as captured */
            bt.tokens_per_req = TPR - 1;
            bt.num_tokens = g.num_tokens = bs * (TPR - 1);
            rc = s.b->ops->init_forward_metadata_replay(s.b, &g);
            LT_CHECK(rc == SGL_ATTN_E_STATE && contains(s.b->ops->last_error(s.b), "tokens_per_req = 2") &&
                         contains(s.b->ops->last_error(s.b), "captured with 3"),
                     "replay with another tokens_per_req: %d %s", rc, s.b->ops->last_error(s.b));
            rc = s.b->ops->init_forward_metadata_capture(s.b, &g);
            LT_CHECK(rc == SGL_ATTN_E_STATE && contains(s.b->ops->last_error(s.b), "tokens_per_req"),
                     "capture with another tokens_per_req: %d %s", rc, s.b->ops->last_error(s.b));
            bt.tokens_per_req = TPR;
            bt.num_tokens = g.num_tokens = T;
        }
        rc = s.b->ops->init_forward_metadata_replay(s.b, &g);
        LT_CHECK(rc == SGL_ATTN_OK, "replay hook %d: %d %s", rep, rc, s.b->ops->last_error(s.b));
        for (int l = 0; l < LT_OWN; l++) lt_poison(&io[l].out);
        e = cudaGraphLaunch(exec, st);
        if (e == cudaSuccess) e = cudaStreamSynchronize(st);
        LT_CHECK(e == cudaSuccess, "replay %d: %s", rep, cudaGetErrorString(e));
        for (int l = 0; l < LT_OWN && e == cudaSuccess; l++) {
            const size_t full = io[l].out.n; /* the rows of this batch: the captured grid writes the rest */
            io[l].out.n = full / VT * (size_t)T;
            lt_io_check(&s, l, &io[l], SGL_ATTN_MODE_TARGET_VERIFY, bs, slots, n, NULL, 1, T);
            io[l].out.n = full;
        }
        /* the replayed verify's draft states, committed (the wrapper's pool: state_commit) */
        s.verify_bs = bs;
        memcpy(s.verify_slots, slots, (size_t)bs * sizeof(int));
        scen_commit(&s, acc[rep]);
    }
    scen_check_caller_state(&s);
    LT_CHECK(s.inner.n_capture == 1 && s.inner.n_replay == nrep && s.inner.n_graph_init == 1,
             "graph hooks reached the inner %d/%d/%d times (expected 1/1/%d)", s.inner.n_graph_init,
             s.inner.n_capture, s.inner.n_replay, nrep);
    graph_scen_close(&s, exec, graph, io, &si, &sl, label, before);
}

static void error_tests(void) {
    lt_weight_dt = LT_F32;
    setenv("SGL_ATTN_LIN_KERNEL", "fast", 1);
    setenv("SGL_ATTN_LIN_VT", "auto", 1);
    lt_scen s;
    const int before = lt_failures;
    /* without the debug option sync_check nothing waits for the device: a slot only the device holds is
     * checked by the plan kernel, which skips its request and notes the error in the fault record (mapped
     * host memory); the next metadata call reports it, with no sync of its own, and clears it */
    unsetenv("SGL_ATTN_LIN_SYNC_CHECK");
    if (scen_open(&s, plugins[GDN], GDN, &SH_GDN, LT_BF16, SGL_ATTN_DT_F32, 1e-4, 7, "gdn_cuda no sync_check") != 0) {
        LT_CHECK(0, "could not create the instance");
        scen_close(&s);
        return;
    }
    {
        lt_tensor si;
        lt_index_tensor(&si, 2, (int[]){1, 99}, 0);
        sgl_attn_batch bt;
        lt_batch_init(&bt, SGL_ATTN_MODE_DECODE, 2, 2, 1, &si, s.stream);
        int rc = s.b->ops->init_forward_metadata(s.b, &bt);
        LT_CHECK(rc == SGL_ATTN_OK, "device slot 99 without sync_check: rc %d, '%s'", rc, s.b->ops->last_error(s.b));
        /* a slot past the pool is a caller-owned layer's business; a layer on the pool makes it an error */
        lt_io pio;
        lt_io_make(&s, 0, 2, 0, &bt, &pio);
        rc = s.b->ops->forward_decode(s.b, &pio.fa);
        LT_CHECK(rc == SGL_ATTN_OK, "pool forward with device slot 99: rc %d, '%s'", rc, s.b->ops->last_error(s.b));
        LT_CHECK(cudaStreamSynchronize((cudaStream_t)s.stream) == cudaSuccess, "sync after the bad plan");
        lt_io_free(&pio);
        lt_set(&si, 1, 2); /* a good batch: its plan kernel notes the earlier batch's error */
        lt_upload(&si);
        rc = s.b->ops->init_forward_metadata(s.b, &bt);
        LT_CHECK(rc == SGL_ATTN_OK, "the batch after: rc %d, '%s'", rc, s.b->ops->last_error(s.b));
        LT_CHECK(cudaStreamSynchronize((cudaStream_t)s.stream) == cudaSuccess, "sync after the next plan");
        rc = s.b->ops->init_forward_metadata(s.b, &bt);
        LT_CHECK(rc == SGL_ATTN_E_INVALID && contains(s.b->ops->last_error(s.b), "batch.state_indices[1] = 99") &&
                     contains(s.b->ops->last_error(s.b), "earlier batch") &&
                     contains(s.b->ops->last_error(s.b), "used"),
                 "the next call reports slot 99: rc %d, '%s'", rc, s.b->ops->last_error(s.b));
        LT_CHECK(cudaStreamSynchronize((cudaStream_t)s.stream) == cudaSuccess, "sync after the report");
        rc = s.b->ops->init_forward_metadata(s.b, &bt);
        LT_CHECK(rc == SGL_ATTN_OK, "reported once, then cleared: rc %d, '%s'", rc, s.b->ops->last_error(s.b));
        /* an int64 slot at 2^32 + 1 (low word 1, a valid slot) is refused whole, never wrapped */
        lt_tensor s64;
        lt_make(&s64, LT_I64, 1, (int64_t[]){2}, 0);
        lt_set(&s64, 0, 1);
        lt_set(&s64, 1, 4294967297.0);
        lt_upload(&s64);
        bt.state_indices = &s64.t;
        rc = s.b->ops->init_forward_metadata(s.b, &bt);
        LT_CHECK(rc == SGL_ATTN_OK, "int64 slot 2^32+1 planned: rc %d, '%s'", rc, s.b->ops->last_error(s.b));
        LT_CHECK(cudaStreamSynchronize((cudaStream_t)s.stream) == cudaSuccess, "sync after the int64 plan");
        rc = s.b->ops->init_forward_metadata(s.b, &bt);
        LT_CHECK(rc == SGL_ATTN_E_INVALID && contains(s.b->ops->last_error(s.b), "batch.state_indices[1] = 4294967297"),
                 "int64 slot 2^32+1 reported whole: rc %d, '%s'", rc, s.b->ops->last_error(s.b));
        lt_free(&s64);
        lt_free(&si);
    }
    scen_close(&s);
    /* with it: the device-found errors are reported */
    setenv("SGL_ATTN_LIN_SYNC_CHECK", "1", 1);
    const int opened = scen_open(&s, plugins[GDN], GDN, &SH_GDN, LT_BF16, SGL_ATTN_DT_F32, 1e-4, 7, "gdn_cuda errors");
    unsetenv("SGL_ATTN_LIN_SYNC_CHECK");
    if (opened != 0) {
        LT_CHECK(0, "could not create the instance");
        scen_close(&s);
        return;
    }
    const sgl_attn_backend_ops *ops = s.b->ops;
    lt_tensor si, el, ep;
    sgl_attn_batch bt;
    lt_batch_init(&bt, SGL_ATTN_MODE_DECODE, 2, 2, 1, &si, s.stream);
    /* a slot past the pool, only on the device: the plan kernel finds it, and with sync_check a layer on the
     * pool refuses it at once (a caller-owned layer would take it) */
    lt_index_tensor(&si, 2, (int[]){1, 99}, 0);
    int rc = ops->init_forward_metadata(s.b, &bt);
    LT_CHECK(rc == SGL_ATTN_OK, "device slot 99 planned: rc %d, '%s'", rc, ops->last_error(s.b));
    {
        lt_io pio;
        lt_io_make(&s, 0, 2, 0, &bt, &pio);
        rc = ops->forward_decode(s.b, &pio.fa);
        LT_CHECK(rc == SGL_ATTN_E_INVALID && contains(ops->last_error(s.b), "state_indices[1] = 99"),
                 "device slot 99 on the pool: rc %d, '%s'", rc, ops->last_error(s.b));
        lt_io_free(&pio);
    }
    lt_free(&si);
    /* batched state operations on the pool, device indices: a slot out of range, a copy that writes a slot
     * another entry reads (the check kernel: nothing written, reported with sync_check) */
    {
        lt_tensor d, sr;
        lt_index_tensor(&d, 2, (int[]){1, 99}, 0);
        sgl_attn_state_batch_args sa;
        lt_state_args(&sa, SGL_ATTN_STATE_CLEAR, 2, &d, NULL, NULL, NULL, s.stream);
        rc = ops->state_batch(s.b, &sa);
        LT_CHECK(rc == SGL_ATTN_E_INVALID && contains(ops->last_error(s.b), "state_batch dst[1] = 99"),
                 "state_batch dst 99 (device): rc %d, '%s'", rc, ops->last_error(s.b));
        lt_free(&d);
        lt_index_tensor(&d, 2, (int[]){1, 2}, 0);
        lt_index_tensor(&sr, 2, (int[]){2, 3}, 0);
        sa.op = SGL_ATTN_STATE_COPY;
        sa.src = &sr.t;
        rc = ops->state_batch(s.b, &sa);
        LT_CHECK(rc == SGL_ATTN_E_INVALID && contains(ops->last_error(s.b), "dst[1] = 2 is also src[0]"),
                 "state_batch copy conflict (device): rc %d, '%s'", rc, ops->last_error(s.b));
        sa.op = SGL_ATTN_STATE_CLEAR;
        rc = ops->state_batch(s.b, &sa);
        LT_CHECK(rc == SGL_ATTN_E_INVALID && contains(ops->last_error(s.b), "src is set; clear reads no src"),
                 "state_batch clear with src: rc %d, '%s'", rc, ops->last_error(s.b));
        lt_free(&d);
        lt_free(&sr);
    }
    /* duplicate slots, host memory */
    lt_index_tensor(&si, 2, (int[]){4, 4}, 1);
    rc = ops->init_forward_metadata(s.b, &bt);
    LT_CHECK(rc == SGL_ATTN_E_INVALID && contains(ops->last_error(s.b), "already uses"), "duplicate slots: rc %d, '%s'",
             rc, ops->last_error(s.b));
    lt_free(&si);
    /* extend lengths that do not sum to num_tokens (device only) */
    lt_index_tensor(&si, 2, (int[]){1, 2}, 0);
    lt_index_tensor(&el, 2, (int[]){3, 3}, 0);
    lt_index_tensor(&ep, 2, (int[]){0, 0}, 0);
    bt.forward_mode = SGL_ATTN_MODE_EXTEND;
    bt.num_tokens = 7;
    bt.state_indices = &si.t;
    bt.extend_seq_lens = &el.t;
    bt.extend_prefix_lens = &ep.t;
    rc = ops->init_forward_metadata(s.b, &bt);
    LT_CHECK(rc == SGL_ATTN_E_INVALID && contains(ops->last_error(s.b), "sum to 6"), "length sum: rc %d, '%s'", rc,
             ops->last_error(s.b));
    /* a good batch, then a forward with a wrong x */
    bt.num_tokens = 6;
    rc = ops->init_forward_metadata(s.b, &bt);
    LT_CHECK(rc == SGL_ATTN_OK, "good extend: rc %d '%s'", rc, ops->last_error(s.b));
    lt_io io;
    lt_io_make(&s, 0, 6, 0, &bt, &io);
    io.x.shape[1] -= 1;
    rc = ops->forward_extend(s.b, &io.fa);
    LT_CHECK(rc == SGL_ATTN_E_INVALID && contains(ops->last_error(s.b), "linear.x has shape"), "bad x: rc %d, '%s'", rc,
             ops->last_error(s.b));
    io.x.shape[1] += 1;
    io.x.t.device.device_type = kDLCPU;
    rc = ops->forward_extend(s.b, &io.fa);
    LT_CHECK(rc == SGL_ATTN_E_INVALID && contains(ops->last_error(s.b), "gdn_cuda layer 0: linear.x is in host memory"),
             "host x: rc %d, '%s'", rc, ops->last_error(s.b));
    io.x.t.device.device_type = kDLCUDA;
    io.io.kind = KDA;
    rc = ops->forward_extend(s.b, &io.fa);
    LT_CHECK(rc == SGL_ATTN_E_INVALID && contains(ops->last_error(s.b), "linear->kind"), "kind: rc %d, '%s'", rc,
             ops->last_error(s.b));
    io.io.kind = GDN;
    io.fa.linear = NULL;
    rc = ops->forward_extend(s.b, &io.fa);
    LT_CHECK(rc == SGL_ATTN_E_INVALID && contains(ops->last_error(s.b), "args->linear is NULL"), "no io: rc %d, '%s'",
             rc, ops->last_error(s.b));
    io.fa.linear = &io.io;
    io.layer.layer_id = 4;
    rc = ops->forward_extend(s.b, &io.fa);
    LT_CHECK(rc == SGL_ATTN_E_INVALID && contains(ops->last_error(s.b), "layer_id 4"), "layer 4: rc %d, '%s'", rc,
             ops->last_error(s.b));
    io.layer.layer_id = 0;
    /* commit without a verify that kept states */
    rc = ops->state_commit(s.b, &si.t);
    LT_CHECK(rc == SGL_ATTN_E_STATE, "commit before verify: rc %d '%s'", rc, ops->last_error(s.b));
    rc = ops->state_clear(s.b, 8);
    LT_CHECK(rc == SGL_ATTN_E_INVALID && contains(ops->last_error(s.b), "slot 8"), "clear 8: rc %d '%s'", rc,
             ops->last_error(s.b));
    rc = ops->state_copy(s.b, -1, 2);
    LT_CHECK(rc == SGL_ATTN_E_INVALID, "copy -1: rc %d", rc);
    lt_io_free(&io);
    lt_free(&si);
    lt_free(&el);
    lt_free(&ep);
    /* a verify that keeps, then accepted steps out of range (device: nothing copied, reported) */
    scen_batch(&s, SGL_ATTN_MODE_TARGET_VERIFY, 2, (int[]){1, 2}, (int[]){3, 3}, NULL, 1);
    lt_index_tensor(&si, 2, (int[]){1, 3}, 0);
    rc = ops->state_commit(s.b, &si.t);
    LT_CHECK(rc == SGL_ATTN_E_INVALID && contains(ops->last_error(s.b), "accepted_steps[1] = 3"),
             "accepted 3: rc %d '%s'", rc, ops->last_error(s.b));
    lt_free(&si);
    lt_index_tensor(&si, 2, (int[]){-2, 0}, 1);
    rc = ops->state_commit(s.b, &si.t);
    LT_CHECK(rc == SGL_ATTN_E_INVALID && contains(ops->last_error(s.b), "accepted_steps[0] = -2"),
             "accepted -2 (host): rc %d '%s'", rc, ops->last_error(s.b));
    lt_free(&si);
    /* the states did not move: a decode still matches the reference */
    scen_batch(&s, SGL_ATTN_MODE_DECODE, 2, (int[]){1, 2}, (int[]){1, 1}, NULL, 0);
    cudaError_t e = cudaDeviceSynchronize();
    LT_CHECK(e == cudaSuccess, "the device is fine after the bad inputs: %s", cudaGetErrorString(e));
    printf("%-4s %-70s\n", lt_failures == before ? "ok" : "FAIL", "gdn_cuda bad inputs");
    scen_close(&s);
}

/* Caller-owned state, bad inputs: a clear error naming the field; a slot only the device holds is skipped
 * and reported by the next metadata call */
static void caller_error_tests(void) {
    lt_weight_dt = LT_F32;
    setenv("SGL_ATTN_LIN_KERNEL", "fast", 1);
    setenv("SGL_ATTN_LIN_VT", "auto", 1);
    lt_caller_mode = 2;
    lt_scen s;
    const int before = lt_failures;
    const int opened = scen_open(&s, plugins[GDN], GDN, &SH_GDN, LT_BF16, SGL_ATTN_DT_F32, 1e-4, 11, "gdn_cuda caller");
    lt_caller_mode = 0;
    if (opened != 0) {
        LT_CHECK(0, "could not create the instance");
        scen_close(&s);
        return;
    }
    const sgl_attn_backend_ops *ops = s.b->ops;
    scen_batch(&s, SGL_ATTN_MODE_EXTEND, 2, (int[]){0, 1}, (int[]){5, 3}, (int[]){0, 0}, 0);
    lt_tensor si;
    lt_index_tensor(&si, 2, (int[]){0, 1}, 0);
    sgl_attn_batch bt;
    lt_batch_init(&bt, SGL_ATTN_MODE_DECODE, 2, 2, 1, &si, s.stream);
    s.cur_bs = 2;
    s.cur_slots[0] = 0;
    s.cur_slots[1] = 1;
    int rc = ops->init_forward_metadata(s.b, &bt);
    LT_CHECK(rc == SGL_ATTN_OK, "caller decode plan: rc %d '%s'", rc, ops->last_error(s.b));
    lt_io io;
    lt_io_make(&s, 0, 2, 0, &bt, &io);
    /* the ssm state of another shape; then none, with the conv state set */
    DLTensor bad = *io.io.ssm_state;
    int64_t bshape[4] = {LT_CSLOTS, SH_GDN.hv, SH_GDN.dv, SH_GDN.dk - 1};
    bad.shape = bshape;
    io.io.ssm_state = &bad;
    rc = ops->forward_decode(s.b, &io.fa);
    LT_CHECK(rc == SGL_ATTN_E_INVALID && contains(ops->last_error(s.b), "linear.ssm_state has shape"),
             "ssm_state shape: rc %d '%s'", rc, ops->last_error(s.b));
    io.io.ssm_state = NULL;
    rc = ops->forward_decode(s.b, &io.fa);
    LT_CHECK(rc == SGL_ATTN_E_INVALID && contains(ops->last_error(s.b), "linear.ssm_state is NULL"),
             "ssm_state NULL: rc %d '%s'", rc, ops->last_error(s.b));
    /* state indices without a state tensor */
    io.io.conv_state = NULL;
    rc = ops->forward_decode(s.b, &io.fa);
    LT_CHECK(rc == SGL_ATTN_E_INVALID && contains(ops->last_error(s.b), "linear.state_indices is set without a state"),
             "state_indices alone: rc %d '%s'", rc, ops->last_error(s.b));
    io.io.conv_state = &s.cst[0].t;
    io.io.ssm_state = &s.sst[0].t;
    /* a bf16 state in an f32 instance */
    bad = s.sst[0].t;
    bad.dtype = lt_dl(LT_BF16);
    io.io.ssm_state = &bad;
    rc = ops->forward_decode(s.b, &io.fa);
    LT_CHECK(rc == SGL_ATTN_E_UNSUPPORTED && contains(ops->last_error(s.b), "linear.ssm_state has dtype bfloat16"),
             "ssm_state dtype: rc %d '%s'",
             rc, ops->last_error(s.b));
    io.io.ssm_state = &s.sst[0].t;
    /* state indices in pageable host memory: the forward reads them on the device */
    lt_tensor hsi;
    lt_index_tensor(&hsi, 2, (int[]){11, 10}, 1);
    io.io.state_indices = &hsi.t;
    rc = ops->forward_decode(s.b, &io.fa);
    LT_CHECK(rc == SGL_ATTN_E_UNSUPPORTED && contains(ops->last_error(s.b), "linear.state_indices is in pageable"),
             "host state_indices: rc %d '%s'", rc, ops->last_error(s.b));
    lt_free(&hsi);
    /* a slot past the tensors, on the device: its request skipped (zeros), reported by the next call */
    lt_tensor dsi;
    lt_index_tensor(&dsi, 2, (int[]){11, 50}, 0);
    io.io.state_indices = &dsi.t;
    lt_poison(&io.out);
    rc = ops->forward_decode(s.b, &io.fa);
    LT_CHECK(rc == SGL_ATTN_OK, "device slot 50: forward rc %d '%s'", rc, ops->last_error(s.b));
    LT_CHECK(cudaStreamSynchronize((cudaStream_t)s.stream) == cudaSuccess, "sync after slot 50");
    double got[2 * 4 * 64];
    lt_download(&io.out, got);
    int zeros = 1;
    for (int e = 4 * 64; e < 2 * 4 * 64; e++) zeros &= got[e] == 0.0;
    LT_CHECK(zeros, "the request at slot 50 reads back as zeros");
    rc = ops->init_forward_metadata(s.b, &bt);
    LT_CHECK(rc == SGL_ATTN_E_INVALID && contains(ops->last_error(s.b), "state_indices)[1] = 50"),
             "slot 50 reported: rc %d '%s'", rc, ops->last_error(s.b));
    /* two requests on one slot */
    lt_set(&dsi, 1, 11);
    lt_upload(&dsi);
    rc = ops->init_forward_metadata(s.b, &bt);
    LT_CHECK(rc == SGL_ATTN_OK, "plan: rc %d '%s'", rc, ops->last_error(s.b));
    rc = ops->forward_decode(s.b, &io.fa);
    LT_CHECK(rc == SGL_ATTN_OK, "repeated slot: forward rc %d '%s'", rc, ops->last_error(s.b));
    LT_CHECK(cudaStreamSynchronize((cudaStream_t)s.stream) == cudaSuccess, "sync after the repeat");
    rc = ops->init_forward_metadata(s.b, &bt);
    LT_CHECK(rc == SGL_ATTN_E_INVALID && contains(ops->last_error(s.b), "already uses"), "repeat reported: rc %d '%s'",
             rc, ops->last_error(s.b));
    lt_free(&dsi);
    lt_io_free(&io);
    /* state_batch on the tensors, host indices: checked at once with the CPU wrappers' messages */
    {
        lt_tensor d, st;
        lt_index_tensor(&d, 2, (int[]){3, 3}, 1);
        lt_index_tensor(&st, 2, (int[]){0, 1}, 1);
        sgl_attn_linear_io sio;
        scen_state_io(&s, 0, &sio);
        sgl_attn_state_batch_args sa;
        lt_state_args(&sa, SGL_ATTN_STATE_COMMIT, 2, &d, NULL, &st, &sio, s.stream);
        rc = ops->state_batch(s.b, &sa);
        LT_CHECK(rc == SGL_ATTN_E_INVALID && contains(ops->last_error(s.b), "dst[1] = 3 repeats dst[0]"),
                 "state_batch repeat (host): rc %d '%s'", rc, ops->last_error(s.b));
        lt_set(&d, 1, 12);
        lt_upload(&d);
        rc = ops->state_batch(s.b, &sa);
        LT_CHECK(rc == SGL_ATTN_E_INVALID && contains(ops->last_error(s.b), "dst[1] = 12; expected -1 (skip) or a slot "
                                                                           "0..11 (state->conv_state has 12 slots)"),
                 "state_batch dst 12 (host): rc %d '%s'", rc, ops->last_error(s.b));
        lt_set(&d, 1, 4);
        lt_upload(&d);
        lt_set(&st, 1, LT_STEPS);
        lt_upload(&st);
        rc = ops->state_batch(s.b, &sa);
        LT_CHECK(rc == SGL_ATTN_E_INVALID && contains(ops->last_error(s.b), "steps[1] = 3"),
                 "state_batch step 3 (host): rc %d '%s'", rc, ops->last_error(s.b));
        sio.kind = KDA;
        rc = ops->state_batch(s.b, &sa);
        LT_CHECK(rc == SGL_ATTN_E_INVALID && contains(ops->last_error(s.b), "state->kind"), "state kind: rc %d '%s'",
                 rc, ops->last_error(s.b));
        sio.kind = GDN;
        sio.intermediate_ssm_state = NULL;
        rc = ops->state_batch(s.b, &sa);
        LT_CHECK(rc == SGL_ATTN_E_INVALID && contains(ops->last_error(s.b), "intermediate_ssm_state"),
                 "commit without intermediate states: rc %d '%s'", rc, ops->last_error(s.b));
        lt_free(&d);
        lt_free(&st);
    }
    cudaError_t e = cudaDeviceSynchronize();
    LT_CHECK(e == cudaSuccess, "the device is fine after the bad inputs: %s", cudaGetErrorString(e));
    lt_free(&si);
    printf("%-4s %-70s\n", lt_failures == before ? "ok" : "FAIL", "gdn_cuda caller-owned state bad inputs");
    scen_close(&s);
}

/* Every config, with the sets it belongs to and what it is there for. */
static const cfg configs[] = {
    /* each kind's defaults (fast, bf16, f32 state, tile by batch size): gdn: the w4 chunk prep, UT, state pass
     * (tile 16), output kernel, the w4 decode prep (bf16 x, f32 weights, f32 state), the stream kernel (f32),
     * the fused decode at K = 128 (the long verify), commit; kda: the fused phase 1 (bf16), the general
     * decode prep; mamba2, lightning: the general chunk prep (conv / no conv); short_conv: its kernels */
    {F | Q1 | Q2 | Q3 | Q4, GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, SCEN, 0, NULL},
    {F | Q1 | Q3 | Q4 | Q15, KDA, SH_KDA, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, SCEN, 0, NULL},
    {F | Q1 | Q3 | Q4, MAMBA2, SH_MAMBA2, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, SCEN, 0, NULL},
    {F | Q1, SHORT, SH_SHORT, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, SCEN, 0, NULL},
    {F | Q1 | Q3 | Q4, LIGHT, SH_LIGHT, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, SCEN, 0, NULL},
    /* the state pass's two tiles; the bf16 state (stream kernel and w4 decode prep on bf16 rows) */
    {F | Q1 | Q3, GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "16", 1, 1, SCEN, 0, NULL},
    {F | Q1 | Q3 | Q7, GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "32", 1, 1, SCEN, 0, NULL},
    {F | Q1 | Q3 | Q4, GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_BF16, "fast", "auto", 1, 1, SCEN, 0, NULL},
    /* the token-by-token kernels (kernel=simple; f32 activations extend token by token, and the w4 decode
     * prep takes f32 x and weights) */
    {F | Q1, GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "simple", "auto", 1, 1, SCEN, 0, NULL},
    {F | Q1 | Q4, GDN, SH_GDN, LT_F32, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, SCEN, 0, NULL},
    /* f16 activations: the fused phase 1 (f16) and the fused state pass (tiles 32, 16), the general decode
     * prep for gdn */
    {F | Q1 | Q3, GDN, SH_GDN, LT_F16, SGL_ATTN_DT_F32, "fast", "32", 1, 1, SCEN, 0, NULL},
    {F | Q1 | Q3, LIGHT, SH_LIGHT, LT_F16, SGL_ATTN_DT_F32, "fast", "16", 1, 1, SCEN, 0, NULL},
    /* the w4 decode prep's other instantiations: bf16 conv weights (as models often pass them) with bf16 /
     * f32 state and x; f32 x with a bf16 state */
    {F | Q1 | Q4, GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_BF16, "fast", "auto", 1, 1, SCEN, 1, NULL},
    {F | Q1 | Q4, GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "32", 1, 1, SCEN, 1, NULL},
    {F | Q1 | Q4, GDN, SH_GDN, LT_F32, SGL_ATTN_DT_BF16, "fast", "auto", 1, 1, SCEN, 0, NULL},
    {F | Q1 | Q4, GDN, SH_GDN, LT_F32, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, SCEN, 1, NULL},
    {F | Q1 | Q4, GDN, SH_GDN, LT_F32, SGL_ATTN_DT_BF16, "fast", "auto", 1, 1, SCEN, 1, NULL},
    /* the fused decode's other K: 32, 64, 256 */
    {F | Q1 | Q4, KDA, SH_KDA_SMALL, LT_F32, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, SCEN, 0, NULL},
    {F | Q1 | Q4, MAMBA2, SH_MAMBA2_ODD, LT_F32, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, SCEN, 0, NULL},
    {F | Q1 | Q4, GDN, SH_GDN256, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, SCEN, 0, NULL},
    /* the other kinds token by token, and with f32 activations */
    {F, KDA, SH_KDA, LT_F32, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, SCEN, 0, NULL},
    {F, KDA, SH_KDA, LT_BF16, SGL_ATTN_DT_F32, "simple", "auto", 1, 1, SCEN, 0, NULL},
    {F, MAMBA2, SH_MAMBA2, LT_F32, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, SCEN, 0, NULL},
    {F, MAMBA2, SH_MAMBA2, LT_BF16, SGL_ATTN_DT_F32, "simple", "auto", 1, 1, SCEN, 0, NULL},
    {F, SHORT, SH_SHORT, LT_F32, SGL_ATTN_DT_F32, "simple", "auto", 1, 1, SCEN, 0, NULL},
    {F, LIGHT, SH_LIGHT, LT_F32, SGL_ATTN_DT_F32, "simple", "auto", 1, 1, SCEN, 0, NULL},
    /* the rest of the chunked extend: bf16 state per kind, both tiles, V 96 (a short column half in the
     * output kernel) and 128 (two), conv width 2 (the general chunk and decode preps for gdn), l2norm off */
    {F | Q3 | Q4 | Q15, KDA, SH_KDA, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, SCEN, 0, NULL},
    {F | Q3, MAMBA2, SH_MAMBA2, LT_BF16, SGL_ATTN_DT_F32, "fast", "16", 1, 1, SCEN, 0, NULL},
    {F | Q3, MAMBA2, SH_MAMBA2_W2, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, SCEN, 0, NULL},
    {F | Q3 | Q4, MAMBA2, SH_MAMBA2, LT_BF16, SGL_ATTN_DT_BF16, "fast", "32", 1, 1, SCEN, 0, NULL},
    {F | Q3 | Q4, LIGHT, SH_LIGHT, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, SCEN, 0, NULL},
    {F | Q3, GDN, SH_GDN96, LT_BF16, SGL_ATTN_DT_F32, "fast", "32", 1, 1, SCEN, 0, NULL},
    {F | Q3 | Q4 | Q7, GDN, SH_GDN96, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, SCEN, 0, NULL},
    {F | Q3, GDN, SH_GDN128, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, SCEN, 0, NULL},
    {F | Q3 | Q4, GDN, SH_GDN_W2, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, SCEN, 0, NULL},
    {F | Q3 | Q4, GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 0, 0.05, SCEN, 0, NULL},
    /* long ragged requests over many chunks (state carried in, padding, slowly decaying gates); the serial
     * state pass under auto (fewer than 3 segments of 16 chunks) and with seg=0 */
    {F | Q3, GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "32", 1, 1, LONG, 0, NULL},
    {F | Q3, GDN, SH_GDN96, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, LONG, 0, NULL},
    {F | Q3, MAMBA2, SH_MAMBA2, LT_BF16, SGL_ATTN_DT_F32, "fast", "32", 1, 1, LONG, 0, NULL},
    {F | Q3, LIGHT, SH_LIGHT, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, LONG, 0, NULL},
    {F | Q3 | Q15, KDA, SH_KDA, LT_BF16, SGL_ATTN_DT_F32, "fast", "16", 1, 1, LONG, 0, NULL},
    {F | Q3, GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "32", 1, 1, LONG, 0, "0"},
    /* the state pass by segments of 1-3 chunks (the join runs from 3 segments on): gdn on both tiles and
     * state dtypes, V 96 (a tile count not a power of two), kda (per-channel gates), the declin kinds
     * (product rows with U = 0) */
    {F | Q10, GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "16", 1, 1, SEGS, 0, "1"},
    {F | Q10, GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_BF16, "fast", "32", 1, 1, SEGS, 0, "2"},
    {F | Q10, GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "32", 1, 1, SEGS, 0, "3"},
    {F | Q10, GDN, SH_GDN96, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, SEGS, 0, "2"},
    {F | Q10 | Q15, KDA, SH_KDA, LT_BF16, SGL_ATTN_DT_F32, "fast", "16", 1, 1, SEGS, 0, "1"},
    {F | Q10, MAMBA2, SH_MAMBA2, LT_BF16, SGL_ATTN_DT_BF16, "fast", "32", 1, 1, SEGS, 0, "3"},
    {F | Q10, LIGHT, SH_LIGHT, LT_BF16, SGL_ATTN_DT_F32, "fast", "16", 1, 1, SEGS, 0, "1"},
    /* f16 activations keep the fused phase 2, serial: the option changes nothing there */
    {F | Q10, GDN, SH_GDN, LT_F16, SGL_ATTN_DT_F32, "fast", "16", 1, 1, SEGS, 0, "1"},
    /* kda's phase 1 (q.k and k.k on tensor cores, the decays factored at a reference row; LT_QUICK=15 with the
     * kda configs above; bf16 on the prep + UT pair, f16 on the fused kernel): f16 activations (the fused
     * kernel), chunk ends at every offset, strong gates (A_log in [0.5, 1.5]: a chunk's per-channel log-decay
     * spans hundreds, so exp(G_t - G_i) of the chunk's ends underflows float32: the factored operands must not
     * overflow where the plain exp would), conv width 2 (the general prep; width 4 takes the stream prep), and
     * l2norm off with a bf16 state and bf16 conv weights */
    {F | Q15, KDA, SH_KDA, LT_F16, SGL_ATTN_DT_F32, "fast", "32", 1, 1, SCEN, 0, NULL},
    {F | Q15, KDA, SH_KDA, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, OFFS, 0, NULL},
    {F | Q15, KDA, SH_KDA, LT_BF16, SGL_ATTN_DT_F32, "fast", "32", 1, 1, STRONG, 0, NULL},
    {F | Q15, KDA, SH_KDA, LT_F16, SGL_ATTN_DT_F32, "fast", "16", 1, 1, STRONG, 0, NULL},
    {F | Q15, KDA, SH_KDA_W2, LT_BF16, SGL_ATTN_DT_F32, "fast", "16", 1, 1, SCEN, 0, NULL},
    {F | Q15, KDA, SH_KDA, LT_BF16, SGL_ATTN_DT_BF16, "fast", "32", 0, 0.05, LONG, 1, NULL},
    /* shapes the fast kernels do not take: K 96 (token by token), V 40 (extend token by token, a partial
     * stream tile), and the token-by-token variant on them; l2norm off token by token */
    {F, GDN, SH_GDN_ODD, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, SCEN, 0, NULL},
    {F, GDN, SH_GDN_ODD, LT_F32, SGL_ATTN_DT_F32, "simple", "auto", 1, 1, SCEN, 0, NULL},
    {F | Q4, GDN, SH_GDN40, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, SCEN, 0, NULL},
    {F, GDN, SH_GDN, LT_F32, SGL_ATTN_DT_F32, "simple", "auto", 0, 0.05, SCEN, 0, NULL},
    /* one long request (LT_QUICK=9 only) */
    {Q9, GDN, SH_GDN_LONG, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, HUGE, 0, NULL},
    /* the stream prep (LT_QUICK=16): the gdn shapes it serves, in scenarios with ragged batches across chunk
     * boundaries, state carried across extend calls, a restarted slot, an empty request, long requests with a
     * padded one, segment ends at many chunk offsets; and conv width 2, which it does not take */
    {F | Q16, GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, SCEN, 0, NULL},
    {F | Q16, GDN, SH_GDN96, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, SCEN, 0, NULL},
    {F | Q16, GDN, SH_GDN128, LT_BF16, SGL_ATTN_DT_BF16, "fast", "32", 1, 1, SCEN, 1, NULL},
    {F | Q16, GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 0, 0.05, SCEN, 0, NULL},
    {F | Q16, GDN, SH_GDN_HV3, LT_BF16, SGL_ATTN_DT_F32, "fast", "32", 1, 1, LONG, 0, NULL},
    {F | Q16, GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, LONG, 1, NULL},
    {F | Q16, GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "32", 1, 1, SEGS, 0, "2"},
    {F | Q16, GDN, SH_GDN_W2, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, SCEN, 0, NULL},
    /* mamba2 with an odd head count: its values, scales and gates at V 64 two heads a tile, the last tile half
     * past HV (LT_QUICK=18 runs it under fused_phase2 = always too: the group form's gates) */
    {F | Q16 | Q3, MAMBA2, SH_MAMBA2_HV3, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, LONG, 0, NULL},
};

/* The fused chunk kernel (option fused_chunk = always: every batch, whatever its size; LT_QUICK=13):
 * gdn's bf16 extend at V 64 and 128 on both state dtypes, through the common scenario (state carried
 * across calls, ragged batches across chunk boundaries, a restart, an empty request), long ragged requests
 * with a padded one, the segment scenario's lengths, chunk ends at every offset; caller-owned state; and
 * where the option does not apply (V 96, f16 activations, mamba2) the unfused kernels under it */
typedef struct fcfg {
    cfg c;
    int mode; /* caller-owned state as in ccfg (0: the pool only) */
} fcfg;
static const fcfg fused_configs[] = {
    {{F | Q13 | Q17, GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, SCEN, 0, NULL}, 0},
    {{F | Q13, GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_BF16, "fast", "auto", 1, 1, SCEN, 0, NULL}, 0},
    {{F | Q13, GDN, SH_GDN128, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, SCEN, 0, NULL}, 0},
    {{F | Q13, GDN, SH_GDN128, LT_BF16, SGL_ATTN_DT_BF16, "fast", "auto", 1, 1, SCEN, 1, NULL}, 0},
    {{F | Q13, GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, LONG, 0, NULL}, 0},
    {{F | Q13 | Q17, GDN, SH_GDN128, LT_BF16, SGL_ATTN_DT_BF16, "fast", "auto", 1, 1, SEGS, 0, NULL}, 0},
    {{F | Q13, GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, OFFS, 0, NULL}, 0},
    {{F | Q13, GDN, SH_GDN128, LT_BF16, SGL_ATTN_DT_BF16, "fast", "auto", 1, 1, OFFS, 0, NULL}, 0},
    {{F | Q13, GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 0, 0.05, SCEN, 0, NULL}, 0},
    {{F | Q13, GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, OPS, 0, NULL}, 2},
    /* segment_chunks set: the fused kernel takes the batch unsegmented (it has no segmented mode) */
    {{F | Q13, GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, SEGS, 0, "2"}, 0},
    /* one request of LT_LONG tokens on one head: the precision of one long chain of chunks */
    {{Q13, GDN, SH_GDN_LONG, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, HUGE, 0, NULL}, 0},
    /* the configs below keep the unfused kernels under the option */
    {{F | Q13, GDN, SH_GDN96, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, SCEN, 0, NULL}, 0},
    {{F | Q13, GDN, SH_GDN, LT_F16, SGL_ATTN_DT_F32, "fast", "16", 1, 1, SCEN, 0, NULL}, 0},
    {{F | Q13, MAMBA2, SH_MAMBA2, LT_BF16, SGL_ATTN_DT_F32, "fast", "32", 1, 1, SCEN, 0, NULL}, 0},
};

/* Caller-owned state (LT_QUICK=11; the full run takes three): each config runs scenario_ops on the pool (recorded),
 * then with the state in the test's tensors (mode 1: the batch's slots; 2: linear.state_indices), the outputs
 * the same bits.  Each kind's defaults (the stream decode, the chunked extend, the fused decode for the long
 * verify, short_conv's kernels), the bf16 state, the token-by-token variant, f32 activations (token-by-token
 * extend), the fused decode's K = 32 */
typedef struct ccfg {
    cfg c;
    int mode;
} ccfg;
static const ccfg caller_configs[] = {
    {{F | Q11 | Q12, GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, OPS, 0, NULL}, 2},
    {{Q11, GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_BF16, "fast", "auto", 1, 1, OPS, 0, NULL}, 1},
    {{Q11, KDA, SH_KDA, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, OPS, 0, NULL}, 2},
    {{Q11, MAMBA2, SH_MAMBA2, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, OPS, 0, NULL}, 2},
    {{F | Q11, SHORT, SH_SHORT, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, OPS, 0, NULL}, 2},
    {{F | Q11, LIGHT, SH_LIGHT, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, OPS, 0, NULL}, 1},
    {{Q11, GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "simple", "auto", 1, 1, OPS, 0, NULL}, 2},
    {{Q11, GDN, SH_GDN, LT_F32, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, OPS, 0, NULL}, 1},
    {{Q11, KDA, SH_KDA_SMALL, LT_F32, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, OPS, 0, NULL}, 2},
};


/* The stream decode's L2 prefetch ahead (LT_QUICK=14; the full run: the decode configs also in the quick set):
 * each config without it (decode_l2_ahead_blocks=0; outputs recorded), then prefetching 1, 3, 5 or 7 blocks
 * ahead, then with the option unset (the default: one block per SM for the bf16 state, 132 or 108 on the
 * emulator, past every grid here; none for the float32 state): the same bits.  The create line names the
 * distance where the stream decode runs (K = 128, the fast variant): the option's, else the default's (SMs for
 * the bf16 state, none for the float32 state; lin_decode_l2a_blocks, test_lin_pure).  Where the emulator counts
 * the prefetched bytes: some at the small distances where the stream decode runs, none at 0, past the grid or
 * without the stream decode.  Then the decode and verify graphs, 2 blocks ahead. */
static void l2a_tests(int set) {
    static const char *const dist[] = {"1", "3", "5", "7"};
    const int counted = lt_l2_prefetch_bytes() >= 0; /* the emulator */
    const int sms = lt_sm_count();
    LT_CHECK(sms > 0, "the device's SM count: %d", sms);
    int k = 0;
    char want[96];
    for (size_t i = 0; i < sizeof configs / sizeof *configs; i++) {
        const cfg *c = &configs[i];
        if (!(c->sets & Q4) || (set == F && !(c->sets & Q1))) continue;
        const int stream = c->kind != SHORT && c->sh.dk == 128 && !strcmp(c->variant, "fast");
        lt_rec_reset();
        lt_rec_mode = 1;
        setenv("SGL_ATTN_LIN_DECODE_L2_AHEAD_BLOCKS", "0", 1);
        long long b0 = lt_l2_prefetch_bytes();
        lt_create_log[0] = 0;
        run_cfg(c);
        long long b1 = lt_l2_prefetch_bytes();
        LT_CHECK(!counted || b1 == b0, "config %zu, decode_l2_ahead_blocks=0: %lld bytes prefetched", i, b1 - b0);
        LT_CHECK(!strstr(lt_create_log, "L2 prefetch") && (!stream || strstr(lt_create_log, "(stream decode)")),
                 "config %zu, decode_l2_ahead_blocks=0: the create line \"%s\"", i, lt_create_log);
        const char *d = dist[k++ % 4];
        setenv("SGL_ATTN_LIN_DECODE_L2_AHEAD_BLOCKS", d, 1);
        lt_rec_mode = 2;
        lt_create_log[0] = 0;
        run_cfg(c);
        b0 = b1;
        b1 = lt_l2_prefetch_bytes();
        LT_CHECK(!counted || (stream ? b1 > b0 : b1 == b0), "config %zu, decode_l2_ahead_blocks=%s: %lld bytes prefetched "
                 "(the stream decode %s)", i, d, b1 - b0, stream ? "runs: expected some" : "does not run: expected none");
        snprintf(want, sizeof want, "(stream decode, L2 prefetch %s blocks ahead)", d);
        LT_CHECK(stream ? !!strstr(lt_create_log, want) : !strstr(lt_create_log, "L2 prefetch"),
                 "config %zu, decode_l2_ahead_blocks=%s: the create line \"%s\"", i, d, lt_create_log);
        unsetenv("SGL_ATTN_LIN_DECODE_L2_AHEAD_BLOCKS");
        lt_rec_rewind();
        lt_create_log[0] = 0;
        run_cfg(c);
        b0 = b1;
        b1 = lt_l2_prefetch_bytes();
        LT_CHECK(!counted || b1 == b0, "config %zu, the default distance (past every test grid): %lld bytes prefetched",
                 i, b1 - b0);
        if (stream && c->st == SGL_ATTN_DT_BF16) {
            snprintf(want, sizeof want, "(stream decode, L2 prefetch %d blocks ahead)", sms);
            LT_CHECK(!!strstr(lt_create_log, want), "config %zu, bf16 state, the default: the create line \"%s\" "
                     "lacks \"%s\"", i, lt_create_log, want);
        } else {
            LT_CHECK(!strstr(lt_create_log, "L2 prefetch") && (!stream || strstr(lt_create_log, "(stream decode)")),
                     "config %zu, %s, the default: no prefetch expected; the create line \"%s\"", i,
                     stream ? "f32 state" : "no stream decode", lt_create_log);
        }
        lt_rec_mode = 0;
        lt_rec_reset();
    }
    setenv("SGL_ATTN_LIN_DECODE_L2_AHEAD_BLOCKS", "2", 1);
    const long long g0 = lt_l2_prefetch_bytes();
    graph_test(GDN, &SH_GDN, 0);
    verify_graph_test(GDN, &SH_GDN, 0);
    verify_graph_test(MAMBA2, &SH_MAMBA2, 0);
    LT_CHECK(!counted || lt_l2_prefetch_bytes() > g0, "decode_l2_ahead_blocks=2: the graphs prefetched nothing");
    unsetenv("SGL_ATTN_LIN_DECODE_L2_AHEAD_BLOCKS");
}

/* mamba2's bf16 fused phase 2 (chunk_fused_state.cu; LT_QUICK=18, the full run the first config of each form):
 * the tests' batches do not fill the SMs, so each bf16 mamba2 config of the sets 1, 3 and 10 runs with
 * fused_phase2 = off (the state pass and the output kernel; outputs recorded), then always (the fused phase 2 at
 * tile 64 where V is a multiple of 64), then with the option unset (the default: off for these batches, so the
 * recorded bits again).  Every run is checked against the float64 reference.  Under always, conv width 4 takes the
 * stream prep and so the group form (the decays applied in float32 in the kernel where the per-head kernels fold
 * them into 16-bit operands): its outputs must differ in some bits from the recorded ones, or it did not run; the
 * general prep (conv width 2) keeps the per-head form: the same bits (the same products in the same order, the skip
 * added in the same place), as do forced segments (the segmented state pass runs).  The create line names the fused phase 2; the other kinds refuse always on it. */
static void fused_phase2_tests(int set) {
    int n = 0;
    unsigned forms_seen = 0;  /* the full run: 1 the group form's config ran, 2 the per-head form's */
    unsigned other_seen = 0;  /* the kinds whose create line was read */
    for (size_t i = 0; i < sizeof configs / sizeof *configs; i++) {
        const cfg *c = &configs[i];
        if (c->io_dt != LT_BF16 || strcmp(c->variant, "fast") || c->sh.dk != 128 || c->sh.dv % 32 ||
            !(c->sets & (Q1 | Q3 | Q10)))
            continue;
        if (c->kind != MAMBA2) { /* one create line of each other kind */
            if (set == F || (other_seen & 1u << c->kind)) continue;
            other_seen |= 1u << c->kind;
            setenv("SGL_ATTN_LIN_FUSED_PHASE2", "always", 1);
            lt_create_log[0] = 0;
            run_cfg(c);
            LT_CHECK(!!strstr(lt_create_log, "(fused_phase2=always ignored: it serves mamba2, bf16, V a multiple of 64)"),
                     "fused_phase2=always, config %zu (not mamba2): the create line \"%s\"", i, lt_create_log);
            unsetenv("SGL_ATTN_LIN_FUSED_PHASE2");
            continue;
        }
        /* forced segments take the segmented state pass, not the fused phase 2 */
        const int served = c->sh.dv % 64 == 0, group = served && !c->seg && c->sh.conv_w == 4;
        const unsigned form = group ? 1u : 2u;
        if (set == F && (forms_seen & form)) continue;
        forms_seen |= form;
        n++;
        lt_rec_reset();
        lt_rec_mode = 1;
        setenv("SGL_ATTN_LIN_FUSED_PHASE2", "off", 1);
        lt_create_log[0] = 0;
        run_cfg(c);
        LT_CHECK(!strstr(lt_create_log, "fused phase 2"), "fused_phase2=off, config %zu: the create line \"%s\"", i,
                 lt_create_log);
        setenv("SGL_ATTN_LIN_FUSED_PHASE2", "always", 1);
        lt_rec_mode = group ? 3 : 2;
        lt_rec_ndiff = 0;
        lt_create_log[0] = 0;
        run_cfg(c);
        LT_CHECK(served ? !!strstr(lt_create_log, "(fused phase 2: mamba2's bf16 extends always; C and B per group where "
                                                  "the stream prep runs)")
                        : !!strstr(lt_create_log, "(fused_phase2=always ignored"),
                 "fused_phase2=always, config %zu (V %d): the create line \"%s\"", i, c->sh.dv, lt_create_log);
        LT_CHECK(!group || lt_rec_ndiff > 0,
                 "fused_phase2=always, config %zu (conv width 4): every output has the unfused kernels' bits, so the "
                 "group form did not run", i);
        unsetenv("SGL_ATTN_LIN_FUSED_PHASE2");
        lt_rec_rewind();
        lt_rec_mode = 2;
        lt_create_log[0] = 0;
        run_cfg(c);
        LT_CHECK(!served || strstr(lt_create_log, "(fused phase 2: mamba2's bf16 extends whose heads fill the SMs;"),
                 "the default, config %zu: the create line \"%s\"", i, lt_create_log);
        lt_rec_mode = 0;
        lt_rec_reset();
    }
    LT_CHECK(n > 0, "fused_phase2: no bf16 mamba2 config ran");
    LT_CHECK(set != F || forms_seen == 3, "fused_phase2: the full run ran %s", forms_seen & 1 ? "no per-head form's config"
                                                                               : "no group form's config");
}

static void run_caller_cfg(const ccfg *cc) {
    lt_rec_reset();
    lt_rec_mode = 1;
    lt_caller_mode = 0;
    run_cfg(&cc->c);
    lt_rec_mode = 2;
    lt_caller_mode = cc->mode;
    run_cfg(&cc->c);
    lt_rec_mode = 0;
    lt_caller_mode = 0;
    lt_rec_reset();
}

static void run_fused_cfg(const fcfg *fc) {
    setenv("SGL_ATTN_LIN_FUSED_CHUNK", "always", 1);
    if (fc->mode) {
        const ccfg cc = {fc->c, fc->mode};
        run_caller_cfg(&cc);
    } else {
        run_cfg(&fc->c);
    }
    unsetenv("SGL_ATTN_LIN_FUSED_CHUNK");
}

int main(int argc, char **argv) {
    const char *dir = lt_plugdir(argc, argv);
    const int quick = getenv("LT_QUICK") ? atoi(getenv("LT_QUICK")) : 0;
    const int set = quick == 0 ? F : quick == 1 ? Q1 : quick == 2 ? Q2 : quick == 3 ? Q3 : quick == 4 ? Q4
                    : quick == 7 ? Q7 : quick == 9 ? Q9 : quick == 10 ? Q10 : quick == 11 ? Q11 : quick == 12 ? Q12
                    : quick == 13 ? Q13 : quick == 14 ? Q14 : quick == 15 ? Q15 : quick == 16 ? Q16 : quick == 17 ? Q17
                    : quick == 18 ? Q18 : 0;
    if (!set) {
        printf("FAIL: LT_QUICK=%d; expected 1, 2, 3, 4, 7, 9, 10, 11, 12, 13, 14, 15, 16, 17 or 18 (or unset: everything)\n",
               quick);
        return 1;
    }
    void *handles[8] = {0};
    const int kinds[] = {GDN, KDA, MAMBA2, SHORT, LIGHT};
    for (int i = 0; i < 5; i++) {
        plugins[kinds[i]] = lt_load(dir, plugin_name(kinds[i]), &handles[kinds[i]]);
        if (!plugins[kinds[i]]) {
            printf("FAIL: cannot load %s from %s\n", plugin_name(kinds[i]), dir);
            return 1;
        }
    }
    sgl_attn_caps caps;
    memset(&caps, 0, sizeof caps);
    caps.struct_size = sizeof caps;
    if (plugins[GDN]->probe(0, &caps) != SGL_ATTN_OK || !caps.available) {
        char why[400];
        snprintf(why, sizeof why, "gdn_cuda is not available here: %s", caps.reason);
        lt_skip(why);
    }
    printf("device: %s (%s)%s\n", caps.device_name, caps.arch_name, quick ? ", a subset" : "");
    /* the options under test come from each config; the caller's do not leak in */
    const char *const retired[] = {"SGL_ATTN_LIN_FUSED_PHASE2", "SGL_ATTN_LIN_FUSED_PHASE2_GROUP", /* set where tested */
                                   "SGL_ATTN_LIN_FUSED_PHASE2_X", "SGL_ATTN_LIN_FUSED_PHASE2_8W",
                                   "SGL_ATTN_LIN_FUSED_PHASE2_LEAN", "SGL_ATTN_LIN_FUSED_PHASE2_SKIP16",
                                   "SGL_ATTN_LIN_FUSED_PHASE2_MWARPS",
                                   "SGL_ATTN_LIN_DECODE", "SGL_ATTN_LIN_CHUNK1", "SGL_ATTN_LIN_CHUNK2",
                                   "SGL_ATTN_LIN_PREP",   "SGL_ATTN_LIN_UT",     "SGL_ATTN_LIN_COUT",
                                   "SGL_ATTN_LIN_CSTATE", "SGL_ATTN_LIN_CSCAN_M", "SGL_ATTN_LIN_CSCAN_VT",
                                   "SGL_ATTN_LIN_DECPREP", "SGL_ATTN_LIN_SYNC_CHECK", "SGL_ATTN_LIN_FUSED_CHUNK",
                                   "SGL_ATTN_LIN_DECODE_RING", "SGL_ATTN_LIN_DECODE_RING_GRID",
                                   "SGL_ATTN_LIN_DECODE_RING_FOLD", "SGL_ATTN_LIN_PREP_STREAM",
                                   "SGL_ATTN_LIN_FUSED_EXP2", "SGL_ATTN_LIN_FUSED_TMMA",
                                   "SGL_ATTN_LIN_DECODE_L2_AHEAD", "SGL_ATTN_LIN_DECODE_L2_AHEAD_BLOCKS",
                                   "SGL_ATTN_LIN_DECODE_PREP_WAVE", "SGL_ATTN_LIN_DECODE_PREP_WAVE_GRID",
                                   "SGL_ATTN_LIN_KDA_TC",
                                   "SGL_ATTN_LIN_DECODE_BULK_STATE", "SGL_ATTN_LIN_KDA_PAIR", "SGL_ATTN_LIN_KDA_UT_ALIAS", "SGL_ATTN_LIN_KDA_EXP2",
                                   "SGL_ATTN_LIN_KDA_DIAG_LANES", "SGL_ATTN_LIN_MAMBA2_STREAM_PREP", "SGL_ATTN_LIN_U_IN_PLACE"};
    for (size_t i = 0; i < sizeof retired / sizeof *retired; i++) unsetenv(retired[i]);
    for (size_t i = 0; i < sizeof configs / sizeof *configs; i++)
        if (configs[i].sets & set) run_cfg(&configs[i]);
    if (set & (F | Q1 | Q2 | Q4)) graph_test(GDN, &SH_GDN, 0);
    if (set & (F | Q4)) {
        graph_test(MAMBA2, &SH_MAMBA2, 0);
        graph_test(KDA, &SH_KDA, 0);
    }
    if (set & (F | Q11 | Q12)) graph_test(GDN, &SH_GDN, 2);
    if (set & (F | Q1 | Q2 | Q4)) verify_graph_test(GDN, &SH_GDN, 0);
    if (set & (F | Q4)) {
        verify_graph_test(MAMBA2, &SH_MAMBA2, 0);
        verify_graph_test(KDA, &SH_KDA, 0);
    }
    if (set & (F | Q11 | Q12)) verify_graph_test(GDN, &SH_GDN, 2);
    if (set & (F | Q14)) l2a_tests(set);
    if (set & (F | Q18)) fused_phase2_tests(set);
    for (size_t i = 0; i < sizeof caller_configs / sizeof *caller_configs; i++)
        if (caller_configs[i].c.sets & set) run_caller_cfg(&caller_configs[i]);
    for (size_t i = 0; i < sizeof fused_configs / sizeof *fused_configs; i++)
        if (fused_configs[i].c.sets & set) run_fused_cfg(&fused_configs[i]);
    if (set & (F | Q1)) error_tests();
    if (set & (F | Q11 | Q12)) caller_error_tests();
    printf("%d failure%s\n", lt_failures, lt_failures == 1 ? "" : "s");
    (void)handles;
    return lt_failures ? 1 : 0;
}
