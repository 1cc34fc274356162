/* test_lin_gpu.c - the five CUDA linear wrappers against the float64
 * reference, on a GPU (skipped with the probe's reason elsewhere).
 *
 * For each kind, kernel variant (SGL_ATTN_LIN_KERNEL simple / fast, the
 * phase-2 tile SGL_ATTN_LIN_VT), activation dtype and state dtype, one
 * scenario of batches over two own layers: ragged extends across chunk
 * boundaries, state carried across extend calls, a slot restarted without
 * prefix, decode with a padded row, verify keeping the draft states then
 * state_commit, state_copy / state_clear, verify without keep, an extend
 * with an empty request.  Then CUDA-graph capture and replay of a decode
 * step (different slots at replay), and bad inputs (clear errors, no launch).
 *
 *   test_lin_gpu [plugin_dir]     LT_QUICK=1: the fast variants of each kind, the
 *                                 tiles, the split kernels, a graph, bad inputs;
 *                                 LT_QUICK=2: gdn fast and its graph (compute-sanitizer
 *                                 runs); LT_QUICK=3: only the split kernels (their
 *                                 configs and graphs: the new kernels' sanitizer run);
 *                                 LT_QUICK=4: only the stream decode (SGL_ATTN_LIN_DECODE=stream,
 *                                 stream_cp, stream_pdl, stream_pdl64, stream_one(_nopf)); LT_QUICK=5: a few of those
 *                                 with f32 activations (extends token by token: their
 *                                 compute-sanitizer run); LT_QUICK=6: three gdn split extends
 *                                 (the split prep's sanitizer run, SGL_ATTN_LIN_PREP / _UT from the environment);
 *                                 LT_QUICK=7: two of those (VT 32 and 16), for racecheck;
 *                                 LT_QUICK=8: the scan state pass (SGL_ATTN_LIN_CSTATE=scan, small
 *                                 groups): the scenario and long ragged requests over many groups;
 *                                 LT_QUICK=9: one request of LT_LONG tokens (default 16384; one head), scan
 *                                 (groups of 16) and the default pass, for the precision of long chains;
 *                                 LT_QUICK=10 / 11: the scan's memcheck / racecheck sets;
 *                                 LT_QUICK=12: prep v3 / output v2 ("pp3,co2"), each beside the defaults
 *                                 LT_QUICK=14: the v3 state pass (SGL_ATTN_LIN_CSTATE=v3), LT_QUICK=15: its
 *                                 sanitizer set; LT_QUICK=16 / 17: the same of v4 (SGL_ATTN_LIN_CSTATE=v4);
 *                                 LT_QUICK=18 / 19: the same of v5 (SGL_ATTN_LIN_CSTATE=v5; 18 also one
 *                                 request of LT_LONG tokens beside the default pass);
 *                                 LT_QUICK=20 / 21: the same of v6 (SGL_ATTN_LIN_CSTATE=v6, the wgmma
 *                                 state pass; on the emulator, which has no wgmma, v5 runs)
 *   LT_SPLIT=0: leave the split kernels out; LT_STREAM=0: the stream decode
 *   LT_DECODE=a,b: only the configs and graphs whose decode option (fused, split, stream,
 *   stream_cp, stream_pdl, stream_pdl64, stream_one, stream_one_nopf, stream_one_static; + "+dp1" /
 *   "+dp2" / "+dp3" for the configs pinned to prep v1 / v2 / v3, e.g. stream_pdl+dp2) is one of these
 *   SGL_ATTN_LIN_DECPREP set: the configs without "dp1" / "dp2" / "dp3" run with it
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

typedef struct cfg {
    int kind;
    lt_shape sh;
    int io_dt;
    uint32_t st;       /* SGL_ATTN_DT_F32 / BF16 */
    const char *variant, *vt;
    int l2norm;
    double x_sigma;
    const char *split; /* NULL: the default kernels; else any of "dec", "c1", "c2" (the split kernels; the others run
                          fused), "stream" / "stream_cp" / "stream_pdl" / "stream_pdl64" (the stream decode,
                          first in the list), "ut3" (SGL_ATTN_LIN_UT=v3: the prep fused into the UT kernel),
                          "pp3" (SGL_ATTN_LIN_PREP=v3), "co2" (SGL_ATTN_LIN_COUT=v2),
                          "scanM" (SGL_ATTN_LIN_CSTATE=scan, groups of M chunks), "cs3" (SGL_ATTN_LIN_CSTATE=v3:
                          8 compute warps in the state pass), "cs4" (v4: named-barrier hand-offs; auto), "cs2" (v2, two
                          __syncthreads per chunk), "cs5" (v5: P = -W^T KD
                          first, one product per chunk, Unew in the output kernel), "cs6" (v6: v5's pass on wgmma;
                          SM 9.0, V % 64 == 0, else v5); "long":
                          scenario_long() instead of scenario(), "huge": scenario_one_long() */
} cfg;

/* the shapes: TC-eligible (K = 128, V % 32 == 0) and odd ones (fallbacks) */
static const lt_shape SH_GDN = {2, 4, 128, 64, 4, 0}, SH_KDA = {2, 2, 128, 128, 4, 0},
                      SH_MAMBA2 = {2, 4, 128, 64, 4, 0}, SH_LIGHT = {2, 2, 128, 128, 0, 0},
                      SH_SHORT = {0, 0, 0, 0, 3, 200}, SH_GDN_ODD = {1, 3, 96, 40, 4, 0},
                      SH_MAMBA2_ODD = {1, 2, 64, 48, 2, 0}, SH_KDA_SMALL = {1, 1, 32, 32, 3, 0},
                      SH_GDN96 = {1, 2, 128, 96, 4, 0}, SH_GDN40 = {1, 2, 128, 40, 4, 0},
                      SH_GDN128 = {1, 2, 128, 128, 4, 0}, /* the output kernel's two column halves */
                      SH_GDN_LONG = {1, 1, 128, 64, 4, 0}; /* LT_QUICK=9: one head keeps the reference short */

/* SGL_ATTN_LIN_DECODE of a cfg's split list: its first item when that is a stream form */
static const char *dec_of(const char *split) {
    static char buf[32];
    if (split && !strncmp(split, "stream", 6)) {
        snprintf(buf, sizeof buf, "%.*s", (int)strcspn(split, ","), split);
        return buf;
    }
    return split && strstr(split, "dec") ? "split" : "fused";
}

/* a split list with "dp1" / "dp2" / "dp3": the stream decode's prep v1 / v2 / v3 (SGL_ATTN_LIN_DECPREP;
 * v2 is the default); its LT_DECODE name is the decode option + "+dp1" ... (stream_pdl+dp2); 0: none */
static int dp_of(const char *split) {
    return !split ? 0 : strstr(split, "dp1") ? 1 : strstr(split, "dp2") ? 2 : strstr(split, "dp3") ? 3 : 0;
}

/* LT_DECODE unset, or the split list's decode option is one of its items */
static int dec_wanted(const char *split) {
    char d[48];
    static const char *const dpn[4] = {"", "+dp1", "+dp2", "+dp3"};
    snprintf(d, sizeof d, "%s%s", dec_of(split), dpn[dp_of(split)]);
    const char *want = getenv("LT_DECODE");
    if (!want || !*want) return 1;
    const size_t n = strlen(d);
    for (const char *p = want; *p;) {
        const size_t m = strcspn(p, ",");
        if (m == n && !strncmp(p, d, n)) return 1;
        p += m + (p[m] == ',');
    }
    return 0;
}

/* SGL_ATTN_LIN_DECPREP as the test started (the configs without dp1 / dp2 run with it) */
static char decprep0[16];
static int decprep0_set;

/* SGL_ATTN_LIN_UT as the test started (a whole run with v3: SGL_ATTN_LIN_UT=v3 test_lin_gpu) */
static char ut_env[16];
static int ut_env_set;

/* SGL_ATTN_LIN_PREP / COUT as the test started (the configs without "pp3" / "co2" run with them) */
static const char *env_prep, *env_cout;

/* SGL_ATTN_LIN_CSTATE / CSCAN_M as the caller's environment had them (a cfg's "scanM" overrides) */
static const char *env_cstate, *env_cscan_m;
static void set_env(const char *k, const char *v) {
    if (v) setenv(k, v, 1);
    else unsetenv(k);
}

/* SGL_ATTN_LIN_DECODE / CHUNK1 / CHUNK2 / DECPREP (and the scan) from a cfg's split list; SGL_ATTN_LIN_UT=v3
 * with "ut3", else the outer value */
static void set_split(const char *split) {
    const char *scan = split ? strstr(split, "scan") : NULL;
    set_env("SGL_ATTN_LIN_CSTATE", scan                              ? "scan"
                                   : split && strstr(split, "cs2") ? "v2"
                                   : split && strstr(split, "cs3") ? "v3"
                                   : split && strstr(split, "cs4") ? "v4"
                                   : split && strstr(split, "cs5") ? "v5"
                                   : split && strstr(split, "cs6") ? "v6"
                                                                   : env_cstate);
    char m[16];
    snprintf(m, sizeof m, "%d", scan ? atoi(scan + 4) : 0);
    set_env("SGL_ATTN_LIN_CSCAN_M", scan && atoi(scan + 4) > 0 ? m : env_cscan_m);
    setenv("SGL_ATTN_LIN_DECODE", dec_of(split), 1);
    static const char *const dpv[4] = {"", "v1", "v2", "v3"};
    if (dp_of(split)) setenv("SGL_ATTN_LIN_DECPREP", dpv[dp_of(split)], 1);
    else if (decprep0_set) setenv("SGL_ATTN_LIN_DECPREP", decprep0, 1);
    else unsetenv("SGL_ATTN_LIN_DECPREP");
    setenv("SGL_ATTN_LIN_CHUNK1", split && strstr(split, "c1") ? "split" : "fused", 1);
    setenv("SGL_ATTN_LIN_CHUNK2", split && strstr(split, "c2") ? "split" : "fused", 1);
    if (split && strstr(split, "ut3")) setenv("SGL_ATTN_LIN_UT", "v3", 1);
    else if (ut_env_set) setenv("SGL_ATTN_LIN_UT", ut_env, 1);
    else unsetenv("SGL_ATTN_LIN_UT");
    set_env("SGL_ATTN_LIN_PREP", split && strstr(split, "pp3") ? "v3" : env_prep);
    set_env("SGL_ATTN_LIN_COUT", split && strstr(split, "co2") ? "v2" : env_cout);
}

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
    /* verify without keep moves the main state */
    scen_batch(s, SGL_ATTN_MODE_TARGET_VERIFY, 2, (int[]){7, 5}, (int[]){2, 2}, NULL, 0);
    /* an empty request in an extend */
    scen_batch(s, SGL_ATTN_MODE_EXTEND, 3, (int[]){0, 7, 2}, (int[]){64, 3, 0}, (int[]){0, 4, 0}, 0);
}

static int contains(const char *s, const char *sub) { return s && strstr(s, sub) != NULL; }

/* Long ragged requests over many scan groups (small groups: LT_QUICK=8), state carried in, a padded
 * request, then a decode step reading the pool (lt_max_tokens >= 1653) */
static void scenario_long(lt_scen *s) {
    scen_batch(s, SGL_ATTN_MODE_EXTEND, 3, (int[]){2, 5, 0}, (int[]){1000, 3, 650}, (int[]){0, 0, 0}, 0);
    scen_batch(s, SGL_ATTN_MODE_EXTEND, 4, (int[]){5, -1, 2, 0}, (int[]){700, 70, 129, 64}, (int[]){3, 0, 1000, 650},
               0);
    scen_batch(s, SGL_ATTN_MODE_DECODE, 3, (int[]){2, 5, 0}, (int[]){1, 1, 1}, NULL, 0);
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
    const int scen = contains(c->split, "long") ? 1 : contains(c->split, "huge") ? 2 : 0;
    char label[128];
    snprintf(label, sizeof label, "%s %s vt=%s io=%s state=%s%s%s%s V=%d%s", plugin_name(c->kind), c->variant, c->vt,
             lt_dt_name(c->io_dt), c->st == SGL_ATTN_DT_BF16 ? "bf16" : "f32", c->l2norm ? "" : " l2norm=0",
             c->split ? " split=" : "", c->split ? c->split : "", c->sh.dv,
             scen == 2 ? " (one request of LT_LONG tokens)" : "");
    lt_max_tokens = scen == 1 ? 2048 : scen == 2 ? long_tokens() : 512;
    lt_slow_decay = scen != 0;
    setenv("SGL_ATTN_LIN_KERNEL", c->variant, 1);
    setenv("SGL_ATTN_LIN_VT", c->vt, 1);
    set_split(c->split);
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
    if (scen == 1) scenario_long(&s);
    else if (scen == 2) scenario_one_long(&s);
    else scenario(&s);
    printf("%-4s %-70s worst NMSE %.3g (limit %.1g)\n", lt_failures == before ? "ok" : "FAIL", label, s.worst, s.tol);
    fflush(stdout);
    scen_close(&s);
}

/* Capture one decode step of both own layers in a CUDA graph; replay it,
 * then change the slots in device memory, re-plan with the replay hook and
 * replay again: the outputs follow the reference each time. */
static void graph_test(int kind, const lt_shape *sh, const char *split) {
    if (!dec_wanted(split)) return;
    setenv("SGL_ATTN_LIN_KERNEL", "fast", 1);
    setenv("SGL_ATTN_LIN_VT", "auto", 1);
    set_split(split);
    lt_scen s;
    char label[96];
    snprintf(label, sizeof label, "%s graph capture/replay%s%s", plugin_name(kind), split ? " split=" : "",
             split ? split : "");
    if (scen_open(&s, plugins[kind], kind, sh, LT_BF16, SGL_ATTN_DT_F32, 1e-4, 99, label) != 0) {
        LT_CHECK(0, "%s: could not create the instance", label);
        scen_close(&s);
        return;
    }
    const int before = lt_failures;
    scen_batch(&s, SGL_ATTN_MODE_EXTEND, 4, (int[]){0, 1, 2, 3}, (int[]){5, 66, 1, 20}, (int[]){0, 0, 0, 0}, 0);
    int rc = s.b->ops->init_graph_state(s.b, 4, 4);
    LT_CHECK(rc == SGL_ATTN_OK, "init_graph_state: %d %s", rc, s.b->ops->last_error(s.b));
    int slots[4] = {0, 1, 2, 3}, n[4] = {1, 1, 1, 1}, seq[4] = {6, 67, 2, 21};
    lt_tensor si, sl;
    lt_index_tensor(&si, 4, slots, 0);
    lt_index_tensor(&sl, 4, seq, 0);
    sgl_attn_batch bt;
    memset(&bt, 0, sizeof bt);
    bt.struct_size = sizeof bt;
    bt.forward_mode = SGL_ATTN_MODE_DECODE;
    bt.batch_size = 4;
    bt.num_tokens = 4;
    bt.page_size = 1;
    bt.tokens_per_req = 1;
    bt.state_indices = &si.t;
    bt.seq_lens = &sl.t;
    bt.stream = s.stream;
    sgl_attn_graph_args g;
    memset(&g, 0, sizeof g);
    g.struct_size = sizeof g;
    g.batch_size = 4;
    g.num_tokens = 4;
    g.forward_mode = SGL_ATTN_MODE_DECODE;
    g.batch = &bt;
    rc = s.b->ops->init_forward_metadata_capture(s.b, &g);
    LT_CHECK(rc == SGL_ATTN_OK, "capture hook: %d %s", rc, s.b->ops->last_error(s.b));
    lt_io io[LT_OWN];
    for (int l = 0; l < LT_OWN; l++) lt_io_make(&s, l, 4, 0, &bt, &io[l]);
    cudaStream_t st = (cudaStream_t)s.stream;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    cudaError_t e = cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal);
    for (int l = 0; l < LT_OWN && e == cudaSuccess; l++) {
        rc = s.b->ops->forward_decode(s.b, &io[l].fa);
        LT_CHECK(rc == SGL_ATTN_OK, "forward_decode under capture: %d %s", rc, s.b->ops->last_error(s.b));
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
            rc = s.b->ops->init_forward_metadata_replay(s.b, &g);
            LT_CHECK(rc == SGL_ATTN_OK, "replay hook: %d %s", rc, s.b->ops->last_error(s.b));
        }
        for (int l = 0; l < LT_OWN; l++) lt_poison(&io[l].out);
        e = cudaGraphLaunch(exec, st);
        if (e == cudaSuccess) e = cudaStreamSynchronize(st);
        LT_CHECK(e == cudaSuccess, "replay %d: %s", rep, cudaGetErrorString(e));
        for (int l = 0; l < LT_OWN && e == cudaSuccess; l++)
            lt_io_check(&s, l, &io[l], SGL_ATTN_MODE_DECODE, 4, slots, n, NULL, 0, 4);
    }
    LT_CHECK(s.inner.n_capture == 1 && s.inner.n_replay == 1 && s.inner.n_graph_init == 1,
             "graph hooks reached the inner %d/%d/%d times", s.inner.n_graph_init, s.inner.n_capture,
             s.inner.n_replay);
    LT_CHECK(s.b->ops->graph_seq_len_fill_value(s.b) == 7, "the fill value is the inner's");
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    for (int l = 0; l < LT_OWN; l++) lt_io_free(&io[l]);
    lt_free(&si);
    lt_free(&sl);
    printf("%-4s %-70s worst NMSE %.3g\n", lt_failures == before ? "ok" : "FAIL", label, s.worst);
    scen_close(&s);
}

/* Bad inputs: a clear error naming the argument, nothing launched. */
static void error_tests(void) {
    setenv("SGL_ATTN_LIN_KERNEL", "fast", 1);
    setenv("SGL_ATTN_LIN_VT", "auto", 1);
    set_split(NULL);
    lt_scen s;
    const int before = lt_failures;
    if (scen_open(&s, plugins[GDN], GDN, &SH_GDN, LT_BF16, SGL_ATTN_DT_F32, 1e-4, 7, "gdn_cuda errors") != 0) {
        LT_CHECK(0, "could not create the instance");
        scen_close(&s);
        return;
    }
    const sgl_attn_backend_ops *ops = s.b->ops;
    lt_tensor si, el, ep;
    sgl_attn_batch bt;
    memset(&bt, 0, sizeof bt);
    bt.struct_size = sizeof bt;
    bt.forward_mode = SGL_ATTN_MODE_DECODE;
    bt.batch_size = 2;
    bt.num_tokens = 2;
    bt.page_size = 1;
    bt.tokens_per_req = 1;
    bt.stream = s.stream;
    /* a slot out of range, only on the device: the plan kernel finds it */
    lt_index_tensor(&si, 2, (int[]){1, 99}, 0);
    bt.state_indices = &si.t;
    int rc = ops->init_forward_metadata(s.b, &bt);
    LT_CHECK(rc == SGL_ATTN_E_INVALID && contains(ops->last_error(s.b), "state_indices[1] = 99"),
             "device slot 99: rc %d, '%s'", rc, ops->last_error(s.b));
    lt_free(&si);
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
    LT_CHECK(rc == SGL_ATTN_E_UNSUPPORTED && contains(ops->last_error(s.b), "kDLCPU"), "host x: rc %d, '%s'", rc,
             ops->last_error(s.b));
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

/* prep v3 (SGL_ATTN_LIN_PREP=v3) and the output kernel v2 (SGL_ATTN_LIN_COUT=v2): V 64, 96, 128 (one
 * and two column halves, a partial one), both state dtypes; with full: l2norm off, mamba2 (its skip:
 * v1's stores), lightning, long ragged requests, and what takes other paths (f16 / f32 activations,
 * V 40, K 96, kda).  pair: each followed by the default kernels on the same config (the same
 * NMSE when the outputs are the same: LT_QUICK=12) */
static int add_pc(cfg *cs, int cap, int n, int full, int pair) {
    const char *pc = "c1,c2,pp3,co2";
    const cfg a[] = {
        {GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, pc},
        {GDN, SH_GDN128, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, pc},
        {GDN, SH_GDN96, LT_BF16, SGL_ATTN_DT_BF16, "fast", "32", 1, 1, pc},
        {GDN, SH_GDN128, LT_BF16, SGL_ATTN_DT_F32, "fast", "32", 1, 1, pc},
        {GDN, SH_GDN40, LT_BF16, SGL_ATTN_DT_F32, "fast", "32", 1, 1, pc},
        {GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 0, 0.05, pc},
        {GDN, SH_GDN, LT_F16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, pc},
        {GDN, SH_GDN, LT_F32, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, pc},
        {GDN, SH_GDN_ODD, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, pc},
        {MAMBA2, SH_MAMBA2, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, pc},
        {LIGHT, SH_LIGHT, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, pc},
        {KDA, SH_KDA, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, pc},
        {GDN, SH_GDN128, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, "c1,c2,pp3,co2,long"},
    };
    const int na = full ? (int)(sizeof a / sizeof a[0]) : 3;
    for (int k = 0; k < na; k++) {
        if (n + 2 > cap) { /* as CS_ADD in main: a test-writing error, said as one */
            printf("FAIL: more than %d configs: raise cs[] in test_lin_gpu.c\n", cap);
            exit(1);
        }
        cs[n++] = a[k];
        if (pair) {
            cs[n] = a[k];
            cs[n++].split = strstr(a[k].split, "long") ? "c1,c2,long" : "c1,c2";
        }
    }
    return n;
}

int main(int argc, char **argv) {
    const char *dir = lt_plugdir(argc, argv);
    const int quick = getenv("LT_QUICK") ? atoi(getenv("LT_QUICK")) : 0;
    if (getenv("SGL_ATTN_LIN_DECPREP")) {
        snprintf(decprep0, sizeof decprep0, "%s", getenv("SGL_ATTN_LIN_DECPREP"));
        decprep0_set = 1;
    }
    if (getenv("SGL_ATTN_LIN_UT")) {
        ut_env_set = 1;
        snprintf(ut_env, sizeof ut_env, "%s", getenv("SGL_ATTN_LIN_UT"));
    }
    env_cstate = getenv("SGL_ATTN_LIN_CSTATE");
    {
        static char prep0[16], cout0[16]; /* copies: set_split rewrites the environment */
        if (getenv("SGL_ATTN_LIN_PREP")) env_prep = strncpy(prep0, getenv("SGL_ATTN_LIN_PREP"), sizeof prep0 - 1);
        if (getenv("SGL_ATTN_LIN_COUT")) env_cout = strncpy(cout0, getenv("SGL_ATTN_LIN_COUT"), sizeof cout0 - 1);
    }
    env_cscan_m = getenv("SGL_ATTN_LIN_CSCAN_M");
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
    printf("device: %s (%s)%s\n", caps.device_name, caps.arch_name, quick ? ", quick subset" : "");
    cfg cs[256];
    int n = 0;
    /* every config through one bounds check: an overflow of cs is a test-writing error, said as one */
#define CS_ADD(...)                                                                                       \
    do {                                                                                                  \
        if (n >= (int)(sizeof cs / sizeof *cs)) {                                                         \
            printf("FAIL: more than %d configs: raise cs[] in test_lin_gpu.c\n", (int)(sizeof cs / sizeof *cs)); \
            return 1;                                                                                     \
        }                                                                                                 \
        cs[n++] = __VA_ARGS__;                                                                              \
    } while (0)
    const struct { int kind; const lt_shape *sh; } main_shapes[] = {
        {GDN, &SH_GDN}, {KDA, &SH_KDA}, {MAMBA2, &SH_MAMBA2}, {SHORT, &SH_SHORT}, {LIGHT, &SH_LIGHT}};
    for (int k = 0; k < 5; k++) {
        const char *vars[] = {"fast", "simple"};
        const int ios[] = {LT_BF16, LT_F32};
        for (int v = 0; v < 2; v++)
            for (int d = 0; d < 2; d++) {
                if (quick && (v == 1 || d == 1)) continue;
                CS_ADD((cfg){main_shapes[k].kind, *main_shapes[k].sh, ios[d], SGL_ATTN_DT_F32, vars[v], "auto", 1, 1, NULL});
            }
    }
    /* the tensor-core tiles, f16 operands, bf16 state, the fallbacks, l2norm off */
    CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "16", 1, 1, NULL});
    CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "32", 1, 1, NULL});
    CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_BF16, "fast", "auto", 1, 1, NULL});
    if (!quick) {
        CS_ADD((cfg){GDN, SH_GDN, LT_F16, SGL_ATTN_DT_F32, "fast", "32", 1, 1, NULL});
        CS_ADD((cfg){KDA, SH_KDA, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, NULL});
        CS_ADD((cfg){MAMBA2, SH_MAMBA2, LT_BF16, SGL_ATTN_DT_F32, "fast", "16", 1, 1, NULL});
        CS_ADD((cfg){LIGHT, SH_LIGHT, LT_F16, SGL_ATTN_DT_F32, "fast", "32", 1, 1, NULL});
        CS_ADD((cfg){MAMBA2, SH_MAMBA2, LT_BF16, SGL_ATTN_DT_BF16, "fast", "32", 1, 1, NULL});
        CS_ADD((cfg){GDN, SH_GDN_ODD, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, NULL});
        CS_ADD((cfg){GDN, SH_GDN_ODD, LT_F32, SGL_ATTN_DT_F32, "simple", "auto", 1, 1, NULL});
        CS_ADD((cfg){MAMBA2, SH_MAMBA2_ODD, LT_F32, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, NULL});
        CS_ADD((cfg){KDA, SH_KDA_SMALL, LT_F32, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, NULL});
        CS_ADD((cfg){GDN, SH_GDN, LT_F32, SGL_ATTN_DT_F32, "simple", "auto", 0, 0.05, NULL});
        CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 0, 0.05, NULL});
    }
    if (quick == 2) n = 1; /* gdn fast bf16 */
    /* the split kernels (SGL_ATTN_LIN_DECODE / CHUNK1 / CHUNK2 = split; auto splits CHUNK1/2) */
    const int split_on = !getenv("LT_SPLIT") || atoi(getenv("LT_SPLIT"));
    if (quick >= 3) n = 0;
    if (split_on && quick != 2 && quick < 4) {
        const char *all = "dec,c1,c2";
        CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, all});
        CS_ADD((cfg){GDN, SH_GDN96, LT_BF16, SGL_ATTN_DT_F32, "fast", "32", 1, 1, all});
        CS_ADD((cfg){GDN, SH_GDN96, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, all});
        CS_ADD((cfg){KDA, SH_KDA, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, all});
        CS_ADD((cfg){MAMBA2, SH_MAMBA2, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, all});
        CS_ADD((cfg){LIGHT, SH_LIGHT, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, all});
        CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_BF16, "fast", "auto", 1, 1, all});
        if (!quick || quick == 3) {
            CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "16", 1, 1, "c1"});
            CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "32", 1, 1, "c2"});
            CS_ADD((cfg){GDN, SH_GDN, LT_F16, SGL_ATTN_DT_F32, "fast", "32", 1, 1, all});
            CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 0, 0.05, all});
            CS_ADD((cfg){KDA, SH_KDA, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, all});
            CS_ADD((cfg){MAMBA2, SH_MAMBA2, LT_BF16, SGL_ATTN_DT_BF16, "fast", "32", 1, 1, all});
            CS_ADD((cfg){LIGHT, SH_LIGHT, LT_F16, SGL_ATTN_DT_F32, "fast", "32", 1, 1, all});
            CS_ADD((cfg){LIGHT, SH_LIGHT, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, all});
            CS_ADD((cfg){GDN, SH_GDN_ODD, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, all});
            CS_ADD((cfg){GDN, SH_GDN, LT_F32, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, all});
        }
        /* the fused prep + UT (SGL_ATTN_LIN_UT=v3): V 64, 96 (bf16 state, 12 of 16 channel octets), l2norm
         * off; V 40 and K 96 (no tensor-core extend: the other paths) */
        const char *u3 = "c1,c2,ut3";
        CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, u3});
        CS_ADD((cfg){GDN, SH_GDN96, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, u3});
        if (!quick || quick == 3) {
            CS_ADD((cfg){GDN, SH_GDN40, LT_BF16, SGL_ATTN_DT_F32, "fast", "32", 1, 1, u3});
            CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 0, 0.05, u3});
            CS_ADD((cfg){GDN, SH_GDN_ODD, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, u3});
        }
        n = add_pc(cs, (int)(sizeof cs / sizeof *cs), n, !quick || quick == 3, 0);
    }
    /* the stream decode (SGL_ATTN_LIN_DECODE=stream; extends: the default split phases): every
     * recurrent kind, both state dtypes, partial row tiles (V 96 bf16, V 40), f32 and f16
     * activations, l2norm off, and a shape it does not serve (K 96: the fused kernel) */
    const int stream_on = !getenv("LT_STREAM") || atoi(getenv("LT_STREAM"));
    if (stream_on && quick == 5) {
        CS_ADD((cfg){GDN, SH_GDN, LT_F32, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, "stream"});
        CS_ADD((cfg){GDN, SH_GDN96, LT_F32, SGL_ATTN_DT_BF16, "fast", "auto", 1, 1, "stream"});
        CS_ADD((cfg){MAMBA2, SH_MAMBA2, LT_F32, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, "stream"});
        CS_ADD((cfg){GDN, SH_GDN, LT_F32, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, "stream_cp"});
        CS_ADD((cfg){GDN, SH_GDN96, LT_F32, SGL_ATTN_DT_BF16, "fast", "auto", 1, 1, "stream_cp"});
        CS_ADD((cfg){KDA, SH_KDA, LT_F32, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, "stream_cp"});
        /* programmatic dependent launch: the state loads before griddepcontrol.wait */
        CS_ADD((cfg){GDN, SH_GDN, LT_F32, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, "stream_pdl"});
        CS_ADD((cfg){KDA, SH_KDA, LT_F32, SGL_ATTN_DT_BF16, "fast", "auto", 1, 1, "stream_pdl"});
        CS_ADD((cfg){GDN, SH_GDN40, LT_F32, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, "stream_pdl64"});
        CS_ADD((cfg){GDN, SH_GDN96, LT_F32, SGL_ATTN_DT_BF16, "fast", "auto", 1, 1, "stream_pdl64"});
        CS_ADD((cfg){MAMBA2, SH_MAMBA2, LT_F32, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, "stream_pdl64"});
        /* one launch, ticketed prep and stream items with ready flags (stream_one) */
        CS_ADD((cfg){GDN, SH_GDN, LT_F32, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, "stream_one"});
        CS_ADD((cfg){GDN, SH_GDN96, LT_F32, SGL_ATTN_DT_BF16, "fast", "auto", 1, 1, "stream_one"});
        CS_ADD((cfg){MAMBA2, SH_MAMBA2, LT_F32, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, "stream_one"});
        /* the prep v2 (SGL_ATTN_LIN_DECPREP=v2): gdn, both state dtypes, V 96 */
        CS_ADD((cfg){GDN, SH_GDN, LT_F32, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, "stream_pdl,dp2"});
        CS_ADD((cfg){GDN, SH_GDN96, LT_F32, SGL_ATTN_DT_BF16, "fast", "auto", 1, 1, "stream_pdl,dp2"});
        CS_ADD((cfg){GDN, SH_GDN, LT_F32, SGL_ATTN_DT_F32, "fast", "auto", 0, 0.05, "stream,dp2"});
        /* the prep v3 (SGL_ATTN_LIN_DECPREP=v3): the same three */
        CS_ADD((cfg){GDN, SH_GDN, LT_F32, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, "stream_pdl,dp3"});
        CS_ADD((cfg){GDN, SH_GDN96, LT_F32, SGL_ATTN_DT_BF16, "fast", "auto", 1, 1, "stream_pdl,dp3"});
        CS_ADD((cfg){GDN, SH_GDN, LT_F32, SGL_ATTN_DT_F32, "fast", "auto", 0, 0.05, "stream,dp3"});
        /* the prep v1 (SGL_ATTN_LIN_DECPREP=v1) where v2, the default, would serve */
        CS_ADD((cfg){GDN, SH_GDN, LT_F32, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, "stream_pdl,dp1"});
        CS_ADD((cfg){GDN, SH_GDN96, LT_F32, SGL_ATTN_DT_BF16, "fast", "auto", 1, 1, "stream_pdl,dp1"});
    }
    if (stream_on && quick != 2 && quick != 3 && quick != 5) {
        const char *st = "stream,c1,c2";
        CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, st});
        CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_BF16, "fast", "auto", 1, 1, st});
        CS_ADD((cfg){GDN, SH_GDN96, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, st});
        CS_ADD((cfg){GDN, SH_GDN40, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, st});
        CS_ADD((cfg){KDA, SH_KDA, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, st});
        CS_ADD((cfg){MAMBA2, SH_MAMBA2, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, st});
        CS_ADD((cfg){LIGHT, SH_LIGHT, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, st});
        if (!quick || quick == 4) {
            CS_ADD((cfg){GDN, SH_GDN, LT_F32, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, st});
            CS_ADD((cfg){GDN, SH_GDN, LT_F16, SGL_ATTN_DT_F32, "fast", "32", 1, 1, st});
            CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 0, 0.05, st});
            CS_ADD((cfg){KDA, SH_KDA, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, st});
            CS_ADD((cfg){MAMBA2, SH_MAMBA2, LT_BF16, SGL_ATTN_DT_BF16, "fast", "32", 1, 1, st});
            CS_ADD((cfg){LIGHT, SH_LIGHT, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, st});
            CS_ADD((cfg){GDN, SH_GDN_ODD, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, st});
        }
        /* the cp.async form (SGL_ATTN_LIN_DECODE=stream_cp) */
        const char *cp = "stream_cp,c1,c2";
        CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, cp});
        CS_ADD((cfg){GDN, SH_GDN96, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, cp});
        CS_ADD((cfg){GDN, SH_GDN40, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, cp});
        if (!quick || quick == 4) {
            CS_ADD((cfg){KDA, SH_KDA, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, cp});
            CS_ADD((cfg){MAMBA2, SH_MAMBA2, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, cp});
            CS_ADD((cfg){LIGHT, SH_LIGHT, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, cp});
            CS_ADD((cfg){GDN, SH_GDN, LT_F32, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, cp});
        }
        /* programmatic dependent launch of the stream kernel (stream_pdl) and its 8-warp blocks (stream_pdl64,
         * 64 fp32 / 128 bf16 rows: V 40 and 96 partial, V 64 / 128 bf16 one block per head) */
        const char *pd = "stream_pdl,c1,c2", *pw = "stream_pdl64,c1,c2";
        CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, pd});
        CS_ADD((cfg){GDN, SH_GDN96, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, pd});
        CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, pw});
        CS_ADD((cfg){GDN, SH_GDN40, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, pw});
        CS_ADD((cfg){GDN, SH_GDN96, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, pw});
        if (!quick || quick == 4) {
            CS_ADD((cfg){KDA, SH_KDA, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, pd});
            CS_ADD((cfg){MAMBA2, SH_MAMBA2, LT_BF16, SGL_ATTN_DT_BF16, "fast", "32", 1, 1, pd});
            CS_ADD((cfg){LIGHT, SH_LIGHT, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, pd});
            CS_ADD((cfg){GDN, SH_GDN40, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, pd});
            CS_ADD((cfg){KDA, SH_KDA, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, pw});
            CS_ADD((cfg){MAMBA2, SH_MAMBA2, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, pw});
            CS_ADD((cfg){LIGHT, SH_LIGHT, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, pw});
            CS_ADD((cfg){GDN, SH_GDN, LT_F32, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, pw});
        }
        /* stream_one: prep and stream items of one launch (tickets, ready flags); V 40 / 96 partial tiles */
        const char *po = "stream_one,c1,c2";
        CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, po});
        CS_ADD((cfg){GDN, SH_GDN96, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, po});
        CS_ADD((cfg){GDN, SH_GDN40, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, po});
        if (!quick || quick == 4) {
            CS_ADD((cfg){KDA, SH_KDA, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, po});
            CS_ADD((cfg){KDA, SH_KDA, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, po});
            CS_ADD((cfg){MAMBA2, SH_MAMBA2, LT_BF16, SGL_ATTN_DT_BF16, "fast", "32", 1, 1, po});
            CS_ADD((cfg){LIGHT, SH_LIGHT, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, po});
            CS_ADD((cfg){GDN, SH_GDN, LT_F32, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, po});
            CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 0, 0.05, po});
            CS_ADD((cfg){GDN, SH_GDN_ODD, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, po});
        }
        /* the stream decode's prep v2 (SGL_ATTN_LIN_DECPREP=v2, "dp2"; gdn with conv width 4, bf16 / f32
         * x; the other kinds and f16 x take v1): V 64 / 96 / 40, both state dtypes, l2norm off, each form
         * that runs the prep kernel */
        const char *d2 = "stream_pdl,c1,c2,dp2";
        CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, d2});
        CS_ADD((cfg){GDN, SH_GDN96, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, d2});
        CS_ADD((cfg){GDN, SH_GDN40, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, d2});
        if (!quick || quick == 4) {
            CS_ADD((cfg){GDN, SH_GDN, LT_F32, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, d2});
            CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_BF16, "fast", "auto", 1, 1, d2});
            CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 0, 0.05, d2});
            CS_ADD((cfg){GDN, SH_GDN, LT_F16, SGL_ATTN_DT_F32, "fast", "32", 1, 1, d2});
            CS_ADD((cfg){KDA, SH_KDA, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, d2});
            CS_ADD((cfg){MAMBA2, SH_MAMBA2, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, d2});
            CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, "stream,c1,c2,dp2"});
            CS_ADD((cfg){GDN, SH_GDN96, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, "stream_cp,c1,c2,dp2"});
            CS_ADD((cfg){GDN, SH_GDN40, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, "stream_pdl64,c1,c2,dp2"});
        }
        /* the prep v3 (SGL_ATTN_LIN_DECPREP=v3, "dp3": v2's shapes in a persistent grid): the same set */
        const char *d3 = "stream_pdl,c1,c2,dp3";
        CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, d3});
        CS_ADD((cfg){GDN, SH_GDN96, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, d3});
        CS_ADD((cfg){GDN, SH_GDN40, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, d3});
        if (!quick || quick == 4) {
            CS_ADD((cfg){GDN, SH_GDN, LT_F32, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, d3});
            CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_BF16, "fast", "auto", 1, 1, d3});
            CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 0, 0.05, d3});
            CS_ADD((cfg){GDN, SH_GDN, LT_F16, SGL_ATTN_DT_F32, "fast", "32", 1, 1, d3});
            CS_ADD((cfg){KDA, SH_KDA, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, d3});
            CS_ADD((cfg){MAMBA2, SH_MAMBA2, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, d3});
            CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, "stream,c1,c2,dp3"});
            CS_ADD((cfg){GDN, SH_GDN96, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, "stream_cp,c1,c2,dp3"});
            CS_ADD((cfg){GDN, SH_GDN40, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, "stream_pdl64,c1,c2,dp3"});
        }
        /* the same without the prep items' L2 prefetch (stream_one_nopf), and with the block index as the
         * ticket (stream_one_static) */
        const char *pn = "stream_one_nopf,c1,c2", *ps = "stream_one_static,c1,c2";
        CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, pn});
        CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, ps});
        CS_ADD((cfg){GDN, SH_GDN96, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, ps});
        if (!quick || quick == 4) {
            CS_ADD((cfg){MAMBA2, SH_MAMBA2, LT_BF16, SGL_ATTN_DT_BF16, "fast", "32", 1, 1, pn});
            CS_ADD((cfg){KDA, SH_KDA, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, ps});
        }
    }
    /* LT_QUICK=6: three gdn split extends (V 64 and 96, bf16 state, l2norm off): the sanitizer run of
     * the split phase-1 prep (SGL_ATTN_LIN_PREP=v2 from the environment) */
    if (quick == 6) {
        n = 0;
        CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, "c1,c2"});
        CS_ADD((cfg){GDN, SH_GDN96, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, "c1,c2"});
        CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 0, 0.05, "c1,c2"});
    }
    /* the scan state pass (SGL_ATTN_LIN_CSTATE=scan): groups of 2-3 chunks so that the scenario's requests
     * (up to 3 chunks) and the long ones (up to 16) span several; row tiles 64 (V 64) and 32 (V 96); every
     * kind the split phase 2 serves; both state dtypes; in the full run and LT_QUICK=3, 8 */
    if (split_on && (!quick || quick == 3 || quick == 8)) {
        if (quick == 8) n = 0;
        CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, "c1,c2,scan2"});
        CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, "c1,c2,scan2,long"});
        CS_ADD((cfg){GDN, SH_GDN96, LT_BF16, SGL_ATTN_DT_BF16, "fast", "auto", 1, 1, "c1,c2,scan3,long"});
        CS_ADD((cfg){GDN, SH_GDN96, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, "c1,c2,scan1,long"});
        CS_ADD((cfg){MAMBA2, SH_MAMBA2, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, "c1,c2,scan2,long"});
        CS_ADD((cfg){LIGHT, SH_LIGHT, LT_BF16, SGL_ATTN_DT_BF16, "fast", "auto", 1, 1, "c1,c2,scan3,long"});
        CS_ADD((cfg){KDA, SH_KDA, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, "c1,c2,scan2,long"});
        CS_ADD((cfg){GDN, SH_GDN, LT_F16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, "c1,c2,scan2"}); /* fused */
    }
    /* the v3 state pass (SGL_ATTN_LIN_CSTATE=v3, 8 compute warps): row tiles 16 and 32, both state
     * dtypes, every kind the split phase 2 serves, the scenario's and the long ragged requests (state
     * carried in, padding); in the full run and LT_QUICK=3, 14 */
    if (split_on && (!quick || quick == 3 || quick == 14)) {
        if (quick == 14) n = 0;
        CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "16", 1, 1, "c1,c2,cs3"});
        CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "32", 1, 1, "c1,c2,cs3,long"});
        CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "16", 0, 0.05, "c1,c2,cs3"});
        CS_ADD((cfg){GDN, SH_GDN96, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, "c1,c2,cs3,long"});
        CS_ADD((cfg){GDN, SH_GDN96, LT_BF16, SGL_ATTN_DT_BF16, "fast", "32", 1, 1, "c1,c2,cs3"});
        CS_ADD((cfg){MAMBA2, SH_MAMBA2, LT_BF16, SGL_ATTN_DT_F32, "fast", "32", 1, 1, "c1,c2,cs3,long"});
        CS_ADD((cfg){LIGHT, SH_LIGHT, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, "c1,c2,cs3,long"});
        CS_ADD((cfg){KDA, SH_KDA, LT_BF16, SGL_ATTN_DT_F32, "fast", "16", 1, 1, "c1,c2,cs3,long"});
        CS_ADD((cfg){KDA, SH_KDA, LT_BF16, SGL_ATTN_DT_BF16, "fast", "32", 1, 1, "c1,c2,cs3"});
        CS_ADD((cfg){GDN, SH_GDN, LT_F16, SGL_ATTN_DT_F32, "fast", "16", 1, 1, "c1,c2,cs3"}); /* fused */
    }
    if (quick == 15) { /* v3 under compute-sanitizer: both row tiles, both state dtypes */
        n = 0;
        CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "16", 1, 1, "c1,c2,cs3"});
        CS_ADD((cfg){GDN, SH_GDN96, LT_BF16, SGL_ATTN_DT_BF16, "fast", "32", 1, 1, "c1,c2,cs3"});
    }
    /* the v4 state pass (SGL_ATTN_LIN_CSTATE=v4, named-barrier hand-offs): row tiles 16 and 32, both state
     * dtypes, every kind the split phase 2 serves, the scenario's and the long ragged requests (state
     * carried in, padding); in the full run and LT_QUICK=3, 16 */
    if (split_on && (!quick || quick == 3 || quick == 16)) {
        if (quick == 16) n = 0;
        CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "16", 1, 1, "c1,c2,cs4"});
        CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "32", 1, 1, "c1,c2,cs4,long"});
        CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "16", 0, 0.05, "c1,c2,cs4"});
        CS_ADD((cfg){GDN, SH_GDN96, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, "c1,c2,cs4,long"});
        CS_ADD((cfg){GDN, SH_GDN96, LT_BF16, SGL_ATTN_DT_BF16, "fast", "32", 1, 1, "c1,c2,cs4"});
        CS_ADD((cfg){MAMBA2, SH_MAMBA2, LT_BF16, SGL_ATTN_DT_F32, "fast", "32", 1, 1, "c1,c2,cs4,long"});
        CS_ADD((cfg){LIGHT, SH_LIGHT, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, "c1,c2,cs4,long"});
        CS_ADD((cfg){KDA, SH_KDA, LT_BF16, SGL_ATTN_DT_F32, "fast", "16", 1, 1, "c1,c2,cs4,long"});
        CS_ADD((cfg){KDA, SH_KDA, LT_BF16, SGL_ATTN_DT_BF16, "fast", "32", 1, 1, "c1,c2,cs4"});
        CS_ADD((cfg){GDN, SH_GDN, LT_F16, SGL_ATTN_DT_F32, "fast", "16", 1, 1, "c1,c2,cs4"}); /* fused */
    }
    if (split_on && (!quick || quick == 3)) { /* v2, opt-in since v4 became auto: both tiles and state dtypes */
        CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "16", 1, 1, "c1,c2,cs2,long"});
        CS_ADD((cfg){KDA, SH_KDA, LT_BF16, SGL_ATTN_DT_BF16, "fast", "32", 1, 1, "c1,c2,cs2"});
    }
    if (quick == 17) { /* v4 under compute-sanitizer: both row tiles, both state dtypes */
        n = 0;
        CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "16", 1, 1, "c1,c2,cs4"});
        CS_ADD((cfg){GDN, SH_GDN96, LT_BF16, SGL_ATTN_DT_BF16, "fast", "32", 1, 1, "c1,c2,cs4"});
    }
    /* the v5 state pass (SGL_ATTN_LIN_CSTATE=v5: gdn and kda; the other kinds keep v2 under the switch): row
     * tiles 16 and 32, both state dtypes, V 64 and 96 (the output kernel's Unew with a short column half),
     * l2norm off, the scenario's and the long ragged requests (state carried in, slowly decaying gates,
     * padding); in the full run and LT_QUICK=3, 18 (which adds one long request beside the default pass) */
    if (split_on && (!quick || quick == 3 || quick == 18)) {
        if (quick == 18) n = 0;
        CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "16", 1, 1, "c1,c2,cs5"});
        CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "32", 1, 1, "c1,c2,cs5,long"});
        CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "16", 0, 0.05, "c1,c2,cs5"});
        CS_ADD((cfg){GDN, SH_GDN96, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, "c1,c2,cs5,long"});
        CS_ADD((cfg){KDA, SH_KDA, LT_BF16, SGL_ATTN_DT_F32, "fast", "16", 1, 1, "c1,c2,cs5,long"});
        CS_ADD((cfg){KDA, SH_KDA, LT_BF16, SGL_ATTN_DT_BF16, "fast", "32", 1, 1, "c1,c2,cs5"});
        CS_ADD((cfg){MAMBA2, SH_MAMBA2, LT_BF16, SGL_ATTN_DT_F32, "fast", "32", 1, 1, "c1,c2,cs5"}); /* v2 runs */
        if (quick == 18) {
            CS_ADD((cfg){GDN, SH_GDN_LONG, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, "c1,c2,cs5,huge"});
            CS_ADD((cfg){GDN, SH_GDN_LONG, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, "c1,c2,huge"});
        }
    }
    /* the v6 state pass (wgmma; V % 64 == 0, else v5 runs): both state dtypes, V 64 and 128, kda, l2norm off,
     * the scenario's and the long ragged requests, one long request beside the default pass */
    if (split_on && quick == 20) {
        n = 0;
        CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "16", 1, 1, "c1,c2,cs6"});
        CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "16", 1, 1, "c1,c2,cs6,long"});
        CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 0, 0.05, "c1,c2,cs6,long"});
        CS_ADD((cfg){GDN, SH_GDN96, LT_BF16, SGL_ATTN_DT_F32, "fast", "16", 1, 1, "c1,c2,cs6"}); /* V 96: v5 */
        CS_ADD((cfg){KDA, SH_KDA, LT_BF16, SGL_ATTN_DT_F32, "fast", "16", 1, 1, "c1,c2,cs6,long"});
        CS_ADD((cfg){KDA, SH_KDA, LT_BF16, SGL_ATTN_DT_BF16, "fast", "32", 1, 1, "c1,c2,cs6"});
        CS_ADD((cfg){GDN, SH_GDN_LONG, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, "c1,c2,cs6,huge"});
        CS_ADD((cfg){GDN, SH_GDN_LONG, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, "c1,c2,huge"});
    }
    if (quick == 21) { /* v6 under compute-sanitizer: both state dtypes, gdn and kda */
        n = 0;
        CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "16", 1, 1, "c1,c2,cs6"});
        CS_ADD((cfg){KDA, SH_KDA, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, "c1,c2,cs6"});
    }
    if (quick == 19) { /* v5 under compute-sanitizer: both row tiles, both state dtypes */
        n = 0;
        CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "16", 1, 1, "c1,c2,cs5"});
        CS_ADD((cfg){GDN, SH_GDN96, LT_BF16, SGL_ATTN_DT_BF16, "fast", "32", 1, 1, "c1,c2,cs5"});
    }
    if (quick == 9) { /* long chains: the scan's products of many P_c against float64, beside the serial pass */
        n = 0;
        CS_ADD((cfg){GDN, SH_GDN_LONG, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, "c1,c2,scan16,huge"});
        CS_ADD((cfg){GDN, SH_GDN_LONG, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, "c1,c2,huge"});
    }
    if (quick == 10 || quick == 11) { /* the scan under compute-sanitizer: row tiles 64 and 32, all three steps */
        n = 0;
        CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "auto", 1, 1, quick == 10 ? "c1,c2,scan1" : "c1,c2,scan2"});
        CS_ADD((cfg){GDN, SH_GDN96, LT_BF16, SGL_ATTN_DT_BF16, "fast", "auto", 1, 1, quick == 10 ? "c1,c2,scan1" : "c1,c2,scan2"});
    }
    if (quick == 12) n = add_pc(cs, (int)(sizeof cs / sizeof *cs), 0, 1, 1); /* prep v3 / output v2 beside the defaults */
    if (quick == 7) { /* racecheck's shorter set: both state tiles */
        n = 0;
        CS_ADD((cfg){GDN, SH_GDN, LT_BF16, SGL_ATTN_DT_F32, "fast", "32", 1, 1, "c1,c2"});
        CS_ADD((cfg){GDN, SH_GDN96, LT_BF16, SGL_ATTN_DT_BF16, "fast", "16", 1, 1, "c1,c2"});
    }
    for (int i = 0; i < n; i++)
        if (dec_wanted(cs[i].split)) run_cfg(&cs[i]);
    if (quick < 3) graph_test(GDN, &SH_GDN, NULL);
    if (quick == 12) graph_test(GDN, &SH_GDN96, "c1,c2,pp3,co2");
    if (!quick) graph_test(MAMBA2, &SH_MAMBA2, NULL);
    if (stream_on && quick != 2 && quick != 3 && quick != 5 && quick < 6) {
        graph_test(GDN, &SH_GDN, "stream,c1,c2");
        graph_test(GDN, &SH_GDN, "stream_cp,c1,c2");
        if (!quick || quick == 4) graph_test(MAMBA2, &SH_MAMBA2, "stream,c1,c2");
        graph_test(GDN, &SH_GDN, "stream_pdl,c1,c2");
        graph_test(GDN, &SH_GDN, "stream_pdl64,c1,c2");
        if (!quick || quick == 4) graph_test(KDA, &SH_KDA, "stream_pdl,c1,c2");
        graph_test(GDN, &SH_GDN, "stream_one,c1,c2");
        graph_test(GDN, &SH_GDN, "stream_one_static,c1,c2");
        if (!quick || quick == 4) graph_test(MAMBA2, &SH_MAMBA2, "stream_one,c1,c2");
        graph_test(GDN, &SH_GDN, "stream_pdl,c1,c2,dp2");
        graph_test(GDN, &SH_GDN, "stream_pdl,c1,c2,dp3");
    }
    if (split_on && quick != 2 && quick < 4) {
        graph_test(GDN, &SH_GDN, "dec,c1,c2");
        if (!quick || quick == 3) graph_test(KDA, &SH_KDA, "dec,c1,c2");
        graph_test(GDN, &SH_GDN, "c1,c2,ut3");
        graph_test(GDN, &SH_GDN96, "c1,c2,pp3,co2");
    }
    if (quick < 2) error_tests();
    printf("%d failure%s\n", lt_failures, lt_failures == 1 ? "" : "s");
    (void)handles;
    return lt_failures ? 1 : 0;
}
