/* test_cuda_attn_plan.c - the pure-C parts of cuda_attn, no GPU needed:
 * buffer sizing and grid bounds (attn_kernels/sizing.c, shared with hip_attn)
 * against the split arithmetic the plan kernel uses (random lengths), the
 * kernel option and which kernels run where, tensor and model checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "attn_kernels/plan_math.h"
#include "attn_kernels/sizing.h"
#include "cuda_attn.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(uint32_t n) { /* xorshift64*, [0, n) */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 0x2545f4914f6cdd1dull) >> 33) % n;
}

/* The tiles of a random kernel choice (portable, mma or wgmma) for (d, group). */
static attn_tiles random_tiles(int d, int group) {
    attn_kernels k;
    memset(&k, 0, sizeof k);
    ca_choose_kernels((int)rnd(CA_KERNEL_COUNT_), (int)rnd(2), d, group, (int)rnd(2), &k);
    k.head_dim = d;
    return attn_kernel_tiles(&k, group);
}

/* The decode plan's item and part counts stay under the buffers and the grid
 * bound for any lengths. */
/* A random instance (kv heads, GQA group, head dim 64 << rnd(d_shift), max
 * requests and context, SMs) sized for bps decode blocks per SM, and a random
 * batch of it: bs requests, a quarter of them empty. */
typedef struct {
    attn_sizing s;
    int hkv, sms, bs;
    int64_t lens[512], total;
} random_decode;
static void random_decode_batch(random_decode *r, uint32_t d_shift, int bps) {
    const int hkv = 1 << rnd(5), group = 1 + (int)rnd(16), hq = hkv * group;
    const int d = 64 << rnd(d_shift);
    const int max_reqs = 1 + (int)rnd(512), max_ctx = 1 + (int)rnd(200000);
    r->hkv = hkv;
    r->sms = 1 + (int)rnd(160);
    attn_tiles t = random_tiles(d, group);
    char err[256];
    assert_int_equal(attn_sizing_compute(&r->s, max_reqs, 4096, max_ctx, hq, hkv, d, &t, r->sms, bps, err, sizeof err),
                     0);
    r->bs = 1 + (int)rnd((uint32_t)max_reqs);
    r->total = 0;
    for (int i = 0; i < r->bs; i++) {
        r->lens[i] = rnd(4) == 0 ? 0 : rnd((uint32_t)max_ctx + 1);
        r->total += r->lens[i];
    }
}

static void test_decode_bounds_random(void **state) {
    (void)state;
    static random_decode r;
    for (int trial = 0; trial < 2000; trial++) {
        /* blocks per SM: the default 4, times CA_FP8_DEC_WAVE_SPLITS for an fp8 pool's sizing */
        random_decode_batch(&r, 3, 4 * (rnd(2) ? CA_FP8_DEC_WAVE_SPLITS : 1));
        const attn_sizing *s = &r.s;
        const int64_t chunk = attn_plan_chunk(r.total, s->decode_target_items, s->decode_min_chunk, s->decode_chunk_align);
        assert_true(chunk >= s->decode_min_chunk && chunk % s->decode_chunk_align == 0);
        int64_t items = 0, parts = 0;
        for (int i = 0; i < r.bs; i++) {
            const int n = attn_plan_nsplit(r.lens[i], chunk);
            assert_true(n >= 1);
            /* the splits cover the request exactly: (n-1) chunks < len <= n chunks */
            if (r.lens[i] > 0) assert_true((int64_t)(n - 1) * chunk < r.lens[i] && r.lens[i] <= (int64_t)n * chunk);
            items += n;
            if (n > 1) parts += n;
        }
        assert_true(items <= attn_decode_grid_items(s, r.bs));
        assert_true(items <= s->decode_max_items);
        assert_true(parts <= s->decode_max_parts);
        /* every decode launch's grid.y fits the counters of a request */
        assert_true(r.hkv * s->decode_hblocks <= s->counters_per_req);
    }
}

/* The wave rule (an fp8 pool's decode plan): create's table holds the rule's aim
 * per batch size (within the target); for any lengths the plan at that aim
 * with ceil splits stays under the grid bound and the item buffers, its
 * parts under theirs. */
static void test_decode_wave_bounds_random(void **state) {
    (void)state;
    static int32_t aims[513];
    static random_decode r;
    for (int trial = 0; trial < 2000; trial++) {
        random_decode_batch(&r, 2, 4 * CA_FP8_DEC_WAVE_SPLITS);
        const attn_sizing *s = &r.s;
        const int64_t slots = (int64_t)r.sms * CA_FP8_DEC_SM_BLOCKS;
        const int bpi = r.hkv * s->decode_hblocks;
        ca_dec_wave_aims(s, slots, bpi, aims);
        const int bs = r.bs;
        const int32_t aim = aims[bs];
        assert_int_equal(aim, attn_plan_wave_aim(bs, s->decode_target_items, slots, bpi));
        assert_true(aim >= 1 && aim <= s->decode_target_items);
        const int n = attn_plan_wave_splits(bs, s->decode_target_items, slots, bpi);
        assert_true(aim == (int64_t)n * bs || (n == 1 && aim == s->decode_target_items && bs > aim));
        const int64_t chunk = attn_plan_chunk(r.total, aim, s->decode_min_chunk, s->decode_chunk_align);
        int64_t items = 0, parts = 0;
        for (int i = 0; i < bs; i++) {
            int ni = attn_plan_nsplit(r.lens[i], chunk);
            ni = attn_plan_nsplit(r.lens[i], attn_plan_split_len(r.lens[i], ni, s->decode_chunk_align));
            items += ni;
            if (ni > 1) parts += ni;
        }
        assert_true(items <= ca_dec_wave_grid_items(s, aim, bs));
        assert_true(items <= s->decode_max_items);
        assert_true(parts <= s->decode_max_parts);
    }
}

static void test_extend_bounds_random(void **state) {
    (void)state;
    for (int trial = 0; trial < 2000; trial++) {
        const int d = 64 << rnd(3);
        attn_tiles t = random_tiles(d, 1 + (int)rnd(8));
        const int max_reqs = 1 + (int)rnd(256), max_tokens = 1 + (int)rnd(32768);
        attn_sizing s;
        char err[256];
        assert_int_equal(attn_sizing_compute(&s, max_reqs, max_tokens, 65536, 8, 8, d, &t, 132, 4, err, sizeof err), 0);
        const int bs = 1 + (int)rnd((uint32_t)max_reqs);
        int64_t tokens = 0, items = 0;
        for (int i = 0; i < bs; i++) {
            int64_t left = max_tokens - tokens;
            int64_t e = left > 0 ? rnd((uint32_t)(left / (bs - i) * 2 + 1)) : 0;
            if (e > left) e = left;
            tokens += e;
            items += (e + s.extend_block_m - 1) / s.extend_block_m;
        }
        assert_true(tokens <= max_tokens);
        assert_true(items <= attn_extend_grid_items(&s, bs, (int32_t)tokens));
        assert_true(items <= s.extend_max_items);
    }
}

/* The regions carved from the one allocation are aligned and disjoint. */
static void test_layout(void **state) {
    (void)state;
    for (int trial = 0; trial < 200; trial++) {
        attn_tiles t = random_tiles(128, 4);
        attn_sizing s;
        char err[256];
        const int hkv = 1 + (int)rnd(16);
        assert_int_equal(attn_sizing_compute(&s, 1 + (int)rnd(1000), 1 + (int)rnd(20000), 1 + (int)rnd(100000),
                                             hkv * 4, hkv, 128, &t, 132, 4, err, sizeof err), 0);
        size_t starts[] = {s.off_ditems[0], s.off_ditems[1], s.off_ditems[2], s.off_eitems[0], s.off_eitems[1],
                           s.off_num, s.off_part_o, s.off_part_lse, s.off_counters, s.total_bytes};
        size_t sizes[] = {s.decode_max_items * sizeof(attn_decode_item), s.decode_max_items * sizeof(attn_decode_item),
                          s.decode_max_items * sizeof(attn_decode_item), s.extend_max_items * sizeof(attn_extend_item),
                          s.extend_max_items * sizeof(attn_extend_item), 5 * sizeof(int32_t),
                          (size_t)s.decode_max_parts * s.hq * 128 * 4, (size_t)s.decode_max_parts * s.hq * 4,
                          (size_t)s.max_reqs * s.counters_per_req * 4};
        for (int i = 0; i < 9; i++) {
            assert_int_equal(starts[i] % 256, 0);
            assert_true(starts[i] + sizes[i] <= starts[i + 1]);
        }
    }
}

static void test_sizing_refuses(void **state) {
    (void)state;
    attn_tiles t = attn_portable_tiles(4);
    attn_sizing s;
    char err[256];
    assert_int_equal(attn_sizing_compute(&s, 0, 16, 16, 8, 2, 128, &t, 132, 4, err, sizeof err), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "max_reqs 0"));
    assert_int_equal(attn_sizing_compute(&s, 4, 16, 16, 6, 4, 128, &t, 132, 4, err, sizeof err), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "num_q_heads 6"));
}

/* A host whose conf sets plugin_options.cuda_attn.<g_opt_key> = g_opt_val
 * (NULL: unset) and nothing else; option_args: create args over it. */
static const char *g_opt_key, *g_opt_val;
static const char *one_option(void *ctx, const char *plugin, const char *key) {
    (void)ctx;
    return !strcmp(plugin, "cuda_attn") && !strcmp(key, g_opt_key) ? g_opt_val : NULL;
}
static const sgl_attn_host_api k_opt_host = {.struct_size = sizeof k_opt_host, .abi_major = SGL_ATTN_ABI_MAJOR,
                                             .abi_minor_max = SGL_ATTN_ABI_MINOR, .get_option = one_option};
static void option_args(sgl_attn_create_args *a, const char *key, char *err, size_t err_size) {
    memset(a, 0, sizeof *a);
    a->struct_size = sizeof *a;
    a->host = &k_opt_host;
    a->error = err;
    a->error_size = err_size;
    g_opt_key = key;
    g_opt_val = NULL;
}

/* The option's values as the creating host gives them, unset and empty as
 * auto, and an unknown one refused with the option, the value and the
 * accepted list. */
static void test_kernel_option(void **state) {
    (void)state;
    char err[256] = "";
    sgl_attn_create_args a;
    option_args(&a, "kernel", err, sizeof err);
    int o = -7;
    for (int v = 0; v < CA_KERNEL_COUNT_; v++) {
        g_opt_val = ca_kernel_option_name(v);
        assert_int_equal(ca_read_options(&a, &o), 0);
        assert_int_equal(o, v);
    }
    g_opt_val = "MMA"; /* any case */
    assert_int_equal(ca_read_options(&a, &o), 0);
    assert_int_equal(o, CA_KERNEL_MMA);
    const char *unset[] = {NULL, ""};
    for (size_t i = 0; i < 2; i++) {
        g_opt_val = unset[i];
        o = -7;
        assert_int_equal(ca_read_options(&a, &o), 0);
        assert_int_equal(o, CA_KERNEL_AUTO);
    }
    const char *bad[] = {"fast", "simple", "wgmma", "mma "};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        g_opt_val = bad[i];
        assert_int_equal(ca_read_options(&a, &o), SGL_ATTN_E_INVALID);
        assert_non_null(strstr(err, "plugin option cuda_attn.kernel"));
        assert_non_null(strstr(err, bad[i]));
        assert_non_null(strstr(err, "expected auto, mma or portable"));
    }
    /* a 1.0 host (no create_args.host): the defaults */
    a.struct_size = (uint32_t)offsetof(sgl_attn_create_args, host);
    g_opt_val = "bad";
    assert_int_equal(ca_read_options(&a, &o), 0);
    assert_int_equal(o, CA_KERNEL_AUTO);
}

/* The tiles of the benched decode shapes: d128, GQA group 4, the default
 * kernels of an SM 9.0 card. */
static attn_tiles benched_decode_tiles(void) {
    attn_kernels k;
    memset(&k, 0, sizeof k);
    ca_choose_kernels(CA_KERNEL_AUTO, 1, 128, 4, 1, &k);
    k.head_dim = 128;
    return attn_kernel_tiles(&k, 4);
}

/* The fp8 pool's wave rule at the benched shapes (GQA 32/8, d128, 132 SMs x 6 fp8
 * blocks = 792 slots, 8 blocks an item; sizing 4 x 8 blocks an SM: 528 items,
 * so B 64 may take up to 8 splits, B 128 up to 4).  The rule's arithmetic by
 * hand: blocks = 8 B n, efficiency blocks / (ceil(blocks / 792) x 792):
 *   B 64:  n 1..8: 512 .646, 1024 .646, 1536 .970, 2048 .862, 2560 .808,
 *          3072 .970, 3584 .905, 4096 .862: best .970, the smallest n within
 *          95 % of it (>= .921) is 3;
 *   B 128: n 1..4: 1024 .646, 2048 .862, 3072 .970, 4096 .862: 3.
 * At 3 splits the chunk is ceil(L / 3) rounded up to 64 columns: 1408 / 2752 /
 * 5504 at L 4k / 8k / 16k, so each request takes exactly 3 (the 16-bit
 * plan's floor rule would give 2 from the rounded chunk). */
static void test_fp8_wave_plan(void **state) {
    (void)state;
    const attn_tiles t = benched_decode_tiles();
    attn_sizing s;
    char err[256];
    assert_int_equal(attn_sizing_compute(&s, 256, 4096, 65536, 32, 8, 128, &t, 132, 4 * CA_FP8_DEC_WAVE_SPLITS, err,
                                         sizeof err), 0);
    assert_int_equal(s.decode_target_items, 528);
    const int64_t slots = 132 * CA_FP8_DEC_SM_BLOCKS;
    assert_int_equal(slots, 792);
    const int bpi = 8 * s.decode_hblocks;
    assert_int_equal(bpi, 8);
    static int32_t aims[257];
    ca_dec_wave_aims(&s, slots, bpi, aims);
    static const struct {
        int b, l, n, split;
    } rows[] = {{64, 4096, 3, 1408},  {64, 8192, 3, 2752},  {64, 16384, 3, 5504},
                {128, 4096, 3, 1408}, {128, 8192, 3, 2752}, {128, 16384, 3, 5504}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const int64_t total = (int64_t)rows[i].b * rows[i].l;
        const int n = attn_plan_wave_splits(rows[i].b, s.decode_target_items, slots, bpi);
        assert_int_equal(n, rows[i].n);
        assert_int_equal(aims[rows[i].b], rows[i].b * rows[i].n);
        const int64_t chunk = attn_plan_chunk(total, aims[rows[i].b], s.decode_min_chunk, s.decode_chunk_align);
        assert_int_equal(chunk, rows[i].split);
        const int ni = attn_plan_nsplit(rows[i].l, chunk);
        assert_int_equal(ni, rows[i].n);
        assert_int_equal(attn_plan_split_len(rows[i].l, ni, s.decode_chunk_align), rows[i].split);
        assert_int_equal(attn_plan_nsplit(rows[i].l, rows[i].split), rows[i].n);
        /* the grid: 3 B planned items + B spare, within the sized items */
        assert_int_equal(ca_dec_wave_grid_items(&s, aims[rows[i].b], rows[i].b), 4 * rows[i].b);
        assert_true(4 * rows[i].b <= s.decode_max_items);
    }
    /* the emulator's second fp8 decode (B 16, L 2048): n 1..33, blocks 128 n: n 6 768 / 792 = .970 is
     * the best (12, 18, 24, 30 the same), so 6 splits of 384 columns, against 16 of 128 by the default
     * aim (chunk max(128, ceil(32768 / 264)) = 128) */
    assert_int_equal(attn_plan_wave_splits(16, 528, slots, bpi), 6);
    assert_int_equal(attn_plan_chunk(16 * 2048, aims[16], s.decode_min_chunk, s.decode_chunk_align), 384);
    /* one request: blocks 8 n, n 99 fills the 792 slots (1.000), the smallest within 95 % is 95 */
    assert_int_equal(attn_plan_wave_splits(1, 528, slots, bpi), 95);
    /* more requests than the target: one split each, the aim held at the target */
    assert_int_equal(attn_plan_wave_splits(600, 528, slots, bpi), 1);
    assert_int_equal(attn_plan_wave_aim(600, 528, slots, bpi), 528);
    /* degenerate inputs: one split */
    assert_int_equal(attn_plan_wave_splits(0, 528, slots, bpi), 1);
    assert_int_equal(attn_plan_wave_splits(1, 0, slots, bpi), 1);
    assert_int_equal(attn_plan_wave_splits(1, 528, 0, bpi), 1);
    assert_int_equal(attn_plan_wave_aim(0, 528, slots, bpi), 1);
}

/* The levers' reader (each lever an instance's switch, off by default; none
 * is live now, so a name no option has stands in): a boolean, off when unset
 * or empty and on a 1.0 host (no create_args.host); a value that is not a
 * boolean refused with the option and the value named; not a removed name,
 * so the kernel option's reader passes it by. */
static void test_lever_options(void **state) {
    (void)state;
    static const char *const levers[] = {"next_lever"};
    static const struct {
        const char *v;
        int want;
    } ok[] = {{NULL, 0}, {"", 0}, {"0", 0}, {"off", 0}, {"false", 0}, {"No", 0},
              {"1", 1},  {"on", 1}, {"true", 1}, {"TRUE", 1}};
    static const char *const bad[] = {"2", "-1", "maybe", "64"};
    for (size_t l = 0; l < sizeof levers / sizeof levers[0]; l++) {
        char err[256] = "";
        sgl_attn_create_args a;
        option_args(&a, levers[l], err, sizeof err);
        for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
            int on = -7;
            g_opt_val = ok[i].v;
            assert_int_equal(ca_read_lever(&a, levers[l], &on), 0);
            assert_int_equal(on, ok[i].want);
        }
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            int on = -7;
            err[0] = 0;
            g_opt_val = bad[i];
            assert_int_equal(ca_read_lever(&a, levers[l], &on), SGL_ATTN_E_INVALID);
            assert_non_null(strstr(err, levers[l]));
            assert_non_null(strstr(err, bad[i]));
        }
        int k = -7;
        err[0] = 0;
        g_opt_val = "1";
        assert_int_equal(ca_read_options(&a, &k), 0);
        assert_int_equal(k, CA_KERNEL_AUTO);
        assert_string_equal(err, "");
        a.struct_size = (uint32_t)offsetof(sgl_attn_create_args, host);
        int on = -7;
        assert_int_equal(ca_read_lever(&a, levers[l], &on), 0);
        assert_int_equal(on, 0);
    }
}

/* The removed options (levers deleted or made the only behaviour) are
 * refused by name whatever their value; an unknown key is not an option of
 * this plugin and is ignored. */
static void test_removed_options_refused(void **state) {
    (void)state;
    static const char *const keys[] = {"fp8_cvt", "verify_head_pairs", "tree_mask_ahead", "extend_new_ragged",
                                       "fp8_prefix_kernel", "save_in_extend", "fp8_prefix_ring", "fp8_dec_splits",
                                       "fp8_dec_min_blocks", "fp8_dec_wave", "ragged192_bn64",
                                       "tree_prefix_plain", "dec16_fast_merge", "prefill_qdbl",
                                       "decode_fused_save", "extend_wgmma_dims", "prefill_tma_save"};
    static const char *const vals[] = {"hw", "int", "0", "1", "4", "6", "wgmma"};
    for (size_t j = 0; j < sizeof keys / sizeof keys[0]; j++) {
        char err[256] = "";
        sgl_attn_create_args a;
        option_args(&a, keys[j], err, sizeof err);
        for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
            err[0] = 0;
            g_opt_val = vals[i];
            int k = -7;
            assert_int_equal(ca_read_options(&a, &k), SGL_ATTN_E_INVALID);
            assert_non_null(strstr(err, keys[j]));
            assert_non_null(strstr(err, "no longer an option"));
        }
    }
    char err[256] = "";
    sgl_attn_create_args a;
    option_args(&a, "no_such_option", err, sizeof err);
    g_opt_val = "1";
    int k = -7, on = -7;
    assert_int_equal(ca_read_options(&a, &k), 0);
    assert_int_equal(k, CA_KERNEL_AUTO);
    assert_int_equal(ca_read_lever(&a, "some_lever", &on), 0);
    assert_int_equal(on, 0);
    assert_string_equal(err, "");
}

/* Which kernels run where (cuda_attn_choice.c's rules, written out here). */
static void test_kernel_choice(void **state) {
    (void)state;
    static const struct {
        int option, image, d, group, fp8, extend, decode, dc_extend; /* dc_extend: dual chunk's extend */
    } rows[] = {
        {CA_KERNEL_AUTO, 1, 128, 4, 0, ATTN_EXTEND_WGMMA, ATTN_DECODE_REG, ATTN_EXTEND_WGMMA},
        {CA_KERNEL_AUTO, 1, 128, 1, 0, ATTN_EXTEND_WGMMA, ATTN_DECODE_REG, ATTN_EXTEND_WGMMA},
        {CA_KERNEL_AUTO, 1, 128, 8, 0, ATTN_EXTEND_WGMMA, ATTN_DECODE_REG, ATTN_EXTEND_WGMMA},
        {CA_KERNEL_AUTO, 1, 128, 9, 0, ATTN_EXTEND_WGMMA, ATTN_DECODE_MMA, ATTN_EXTEND_WGMMA},
        {CA_KERNEL_AUTO, 1, 128, 16, 0, ATTN_EXTEND_WGMMA, ATTN_DECODE_MMA, ATTN_EXTEND_WGMMA},
        {CA_KERNEL_AUTO, 0, 128, 4, 0, ATTN_EXTEND_MMA, ATTN_DECODE_REG, ATTN_EXTEND_MMA},
        {CA_KERNEL_AUTO, 0, 64, 12, 0, ATTN_EXTEND_MMA, ATTN_DECODE_MMA, ATTN_EXTEND_MMA},
        {CA_KERNEL_MMA, 1, 128, 4, 0, ATTN_EXTEND_MMA, ATTN_DECODE_MMA, ATTN_EXTEND_MMA},
        {CA_KERNEL_MMA, 0, 64, 1, 0, ATTN_EXTEND_MMA, ATTN_DECODE_MMA, ATTN_EXTEND_MMA},
        /* fp8 e4m3 pools: the mma extend, SM 9.0 included (the wgmma one reads 16-bit pools);
         * dual chunk refuses them, and dc_extend follows the extend all the same */
        {CA_KERNEL_AUTO, 1, 128, 4, 1, ATTN_EXTEND_MMA, ATTN_DECODE_REG, ATTN_EXTEND_MMA},
        {CA_KERNEL_AUTO, 1, 64, 8, 1, ATTN_EXTEND_MMA, ATTN_DECODE_REG, ATTN_EXTEND_MMA},
        {CA_KERNEL_AUTO, 0, 128, 1, 1, ATTN_EXTEND_MMA, ATTN_DECODE_REG, ATTN_EXTEND_MMA},
        {CA_KERNEL_MMA, 1, 128, 4, 1, ATTN_EXTEND_MMA, ATTN_DECODE_MMA, ATTN_EXTEND_MMA},
        {CA_KERNEL_PORTABLE, 1, 128, 4, 0, ATTN_EXTEND_PORTABLE, ATTN_DECODE_PORTABLE, ATTN_EXTEND_MMA},
        {CA_KERNEL_PORTABLE, 0, 256, 16, 0, ATTN_EXTEND_PORTABLE, ATTN_DECODE_PORTABLE, ATTN_EXTEND_MMA},
        /* the wgmma extend at d64 / d256 too on SM 9.0 with 16-bit pools and kernel=auto only;
         * dual chunk keeps its mma extend there (its wgmma form is d128's) */
        {CA_KERNEL_AUTO, 1, 64, 4, 0, ATTN_EXTEND_WGMMA, ATTN_DECODE_REG, ATTN_EXTEND_MMA},
        {CA_KERNEL_AUTO, 1, 64, 12, 0, ATTN_EXTEND_WGMMA, ATTN_DECODE_MMA, ATTN_EXTEND_MMA},
        {CA_KERNEL_AUTO, 1, 256, 4, 0, ATTN_EXTEND_WGMMA, ATTN_DECODE_MMA, ATTN_EXTEND_MMA},
        {CA_KERNEL_AUTO, 0, 64, 4, 0, ATTN_EXTEND_MMA, ATTN_DECODE_REG, ATTN_EXTEND_MMA},
        {CA_KERNEL_AUTO, 1, 96, 4, 0, ATTN_EXTEND_MMA, ATTN_DECODE_MMA, ATTN_EXTEND_MMA},
        {CA_KERNEL_AUTO, 0, 256, 4, 0, ATTN_EXTEND_MMA, ATTN_DECODE_MMA, ATTN_EXTEND_MMA},
        {CA_KERNEL_AUTO, 1, 64, 8, 1, ATTN_EXTEND_MMA, ATTN_DECODE_REG, ATTN_EXTEND_MMA},
        {CA_KERNEL_AUTO, 1, 256, 4, 1, ATTN_EXTEND_MMA, ATTN_DECODE_MMA, ATTN_EXTEND_MMA},
        {CA_KERNEL_MMA, 1, 256, 4, 0, ATTN_EXTEND_MMA, ATTN_DECODE_MMA, ATTN_EXTEND_MMA},
        {CA_KERNEL_PORTABLE, 1, 64, 4, 0, ATTN_EXTEND_PORTABLE, ATTN_DECODE_PORTABLE, ATTN_EXTEND_MMA},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        attn_kernels k;
        memset(&k, 0, sizeof k);
        ca_choose_kernels(rows[i].option, rows[i].image, rows[i].d, rows[i].group, rows[i].fp8, &k);
        assert_int_equal(k.extend, rows[i].extend);
        assert_int_equal(k.decode, rows[i].decode);
        assert_int_equal(k.kv_fp8, rows[i].fp8);
        assert_int_equal(k.dc_extend, rows[i].dc_extend);
    }
    /* the tiles each plans with */
    attn_kernels k = {.extend = ATTN_EXTEND_WGMMA, .decode = ATTN_DECODE_REG, .dtype = ATTN_DT_BF16, .head_dim = 128,
                      .sm_count = 132, .tma = 1, .dc_extend = ATTN_EXTEND_WGMMA};
    attn_tiles t = attn_kernel_tiles(&k, 4);
    assert_int_equal(t.extend_block_m, 128);
    assert_int_equal(t.extend_block_n, 128);
    assert_int_equal(t.decode_heads_per_block, 16);
    assert_int_equal(t.decode_chunk_align, 64);
    k.head_dim = 256; /* the wgmma extend at d256: 128-row items, 64-column tiles */
    t = attn_kernel_tiles(&k, 4);
    assert_int_equal(t.extend_block_m, 128);
    assert_int_equal(t.extend_block_n, 64);
    k.head_dim = 64;
    t = attn_kernel_tiles(&k, 4);
    assert_int_equal(t.extend_block_m, 128);
    assert_int_equal(t.extend_block_n, 128);
    k.extend = ATTN_EXTEND_MMA, k.decode = ATTN_DECODE_MMA, k.head_dim = 256;
    t = attn_kernel_tiles(&k, 4);
    assert_int_equal(t.extend_block_m, 64);
    assert_int_equal(t.extend_block_n, 32);
    k.head_dim = 64;
    assert_int_equal(attn_kernel_tiles(&k, 4).extend_block_n, 64);
    k.extend = ATTN_EXTEND_PORTABLE, k.decode = ATTN_DECODE_PORTABLE;
    assert_int_equal(attn_kernel_tiles(&k, 1).decode_heads_per_block, 1);
    assert_int_equal(attn_kernel_tiles(&k, 4).decode_heads_per_block, 4);
    assert_int_equal(attn_kernel_tiles(&k, 4).extend_block_m, 16);
}

static sgl_attn_model good_model(void) {
    sgl_attn_model m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    m.num_q_heads = 32;
    m.num_kv_heads = 8;
    m.head_dim_qk = m.head_dim_v = 128;
    m.dtype = m.kv_dtype = SGL_ATTN_DT_BF16;
    m.sliding_window = -1;
    return m;
}

/* A fake device tensor (never dereferenced by the checks). */
static DLTensor tensor(void *data, int ndim, int64_t *shape, uint8_t code, uint8_t bits) {
    DLTensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.device.device_type = kDLCUDA;
    t.device.device_id = 0;
    t.ndim = ndim;
    t.shape = shape;
    t.dtype.code = code;
    t.dtype.bits = bits;
    t.dtype.lanes = 1;
    return t;
}

/* Which extend batches take the direct extend (16-bit pools) or the fp8 split:
 * the host mirrors' prefix test and the plan's rule. */
static void test_direct_extend_choice(void **state) {
    (void)state;
    int32_t seq[3] = {100, 7, 300}, ext[3] = {100, 7, 300};
    int64_t seq64[3] = {100, 7, 300}, n3[1] = {3};
    DLTensor sl = tensor(seq, 1, n3, kDLInt, 32), el = tensor(ext, 1, n3, kDLInt, 32);
    sl.device.device_type = el.device.device_type = kDLCPU;
    sgl_attn_batch bt;
    memset(&bt, 0, sizeof bt);
    assert_int_equal(ca_no_prefix_shown(&bt, 3), 0); /* no mirrors: the host does not know */
    bt.seq_lens_cpu = &sl;
    assert_int_equal(ca_no_prefix_shown(&bt, 3), 0); /* one mirror only */
    bt.extend_seq_lens_cpu = &el;
    assert_int_equal(ca_no_prefix_shown(&bt, 3), 1);
    seq[1] = 8; /* request 1 has one cached token */
    assert_int_equal(ca_no_prefix_shown(&bt, 3), 0);
    assert_int_equal(ca_no_prefix_shown(&bt, 1), 1); /* the first request alone has none */
    seq[1] = 7;
    assert_int_equal(ca_no_prefix_shown(&bt, 4), 0); /* mirrors shorter than the batch */
    DLTensor sl64 = tensor(seq64, 1, n3, kDLInt, 64); /* int64 against int32 */
    sl64.device.device_type = kDLCPU;
    bt.seq_lens_cpu = &sl64;
    assert_int_equal(ca_no_prefix_shown(&bt, 3), 1);
    seq64[2] = 301;
    assert_int_equal(ca_no_prefix_shown(&bt, 3), 0);
    DLTensor sld = sl; /* a device tensor is no host mirror */
    sld.device.device_type = kDLCUDA;
    bt.seq_lens_cpu = &sld;
    assert_int_equal(ca_no_prefix_shown(&bt, 3), 0);
    /* the rule: direct, verify, graph, no_prefix -> planned */
    static const int rows[][5] = {
        {1, 0, 0, 1, 1}, {1, 0, 0, 0, 0}, {1, 1, 0, 1, 0}, {1, 0, 1, 1, 0}, {1, 1, 1, 0, 0},
        {0, 0, 0, 0, 1}, {0, 0, 0, 1, 1}, {0, 1, 0, 0, 1}, {0, 0, 1, 0, 1}, /* the fp8 split: every causal batch */
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        assert_int_equal(ca_split_planned(rows[i][0], rows[i][1], rows[i][2], rows[i][3]), rows[i][4]);
}

static void test_model_check(void **state) {
    (void)state;
    char why[256];
    sgl_attn_model m = good_model();
    assert_int_equal(ca_model_check(&m, why, sizeof why), 0);
    m.is_mla = 1;
    assert_int_equal(ca_model_check(&m, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(why, "MLA"));
    m = good_model();
    m.head_dim_qk = m.head_dim_v = 96;
    assert_int_equal(ca_model_check(&m, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(why, "head dim 96"));
    m = good_model();
    m.head_dim_v = 64;
    assert_int_equal(ca_model_check(&m, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(why, "qk 192 / v 128 (forward_ragged only)"));
    /* DeepSeek's MLA prefill shape in MHA form: created, for forward_ragged */
    m.head_dim_qk = 192;
    m.head_dim_v = 128;
    assert_int_equal(ca_model_check(&m, why, sizeof why), 0);
    m.kv_dtype = SGL_ATTN_DT_FP8_E4M3;
    assert_int_equal(ca_model_check(&m, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(why, "forward_ragged takes f16 / bf16 K and V"));
    m = good_model();
    m.head_dim_qk = m.head_dim_v = 192; /* 192 only as qk with v 128 */
    assert_int_equal(ca_model_check(&m, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(why, "head dim 192"));
    m = good_model();
    m.kv_dtype = SGL_ATTN_DT_F16;
    assert_int_equal(ca_model_check(&m, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(why, "kv dtype f16"));
    m = good_model();
    m.dtype = m.kv_dtype = SGL_ATTN_DT_F32;
    assert_int_equal(ca_model_check(&m, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(why, "f32"));
    m = good_model();
    m.num_kv_heads = 5;
    assert_int_equal(ca_model_check(&m, why, sizeof why), SGL_ATTN_E_INVALID);
    /* verify (several tokens per request) and the attention types are served */
    m = good_model();
    m.spec_tokens = 64;
    assert_int_equal(ca_model_check(&m, why, sizeof why), 0);
    m.attn_type = SGL_ATTN_TYPE_BIDIRECTIONAL;
    assert_int_equal(ca_model_check(&m, why, sizeof why), 0);
    m.attn_type = SGL_ATTN_TYPE_ENCODER_ONLY;
    assert_int_equal(ca_model_check(&m, why, sizeof why), 0);
    m.sliding_window = 128; /* a window on causal models only */
    assert_int_equal(ca_model_check(&m, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(why, "attn_type 2 with sliding_window 128"));
    m = good_model();
    m.attn_type = 3;
    assert_int_equal(ca_model_check(&m, why, sizeof why), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(why, "attn_type 3: expected 0 causal, 1 bidirectional or 2 encoder-only"));
    /* fp8 e4m3 pools: head dims 64 / 128 with groups up to 8 (the register-fed decode) */
    m = good_model();
    m.kv_dtype = SGL_ATTN_DT_FP8_E4M3;
    assert_int_equal(ca_model_check(&m, why, sizeof why), 0);
    m.head_dim_qk = m.head_dim_v = 256;
    assert_int_equal(ca_model_check(&m, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(why, "fp8_e4m3 KV with head dim 256"));
    m = good_model();
    m.kv_dtype = SGL_ATTN_DT_FP8_E4M3;
    m.num_q_heads = 16 * m.num_kv_heads;
    assert_int_equal(ca_model_check(&m, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(why, "GQA group 16"));
    m = good_model();
    m.kv_dtype = SGL_ATTN_DT_FP8_E5M2;
    assert_int_equal(ca_model_check(&m, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(why, "kv dtype fp8_e5m2"));
    /* dual chunk attention: dense served; the sparse prefill and fp8 pools refused by name */
    m = good_model();
    m.dca_chunk_size = 262144;
    m.dca_local_size = 8192;
    assert_int_equal(ca_model_check(&m, why, sizeof why), 0);
    m.dca_sparse = 1;
    m.dca_sparse_threshold = 32768;
    assert_int_equal(ca_model_check(&m, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(why, "sparse_attention_enabled"));
    assert_non_null(strstr(why, "above 32768 tokens"));
    m.dca_sparse = 0;
    m.kv_dtype = SGL_ATTN_DT_FP8_E4M3;
    assert_int_equal(ca_model_check(&m, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(why, "dual chunk attention with an fp8_e4m3 KV pool"));
}

/* ABI 1.2 fields cuda_attn does not serve: each refused by its name; a field
 * beyond the caller's struct_size (an older caller) is never read. */
static void test_refuse_unserved(void **state) {
    (void)state;
    char msg[512];
    ca_msg m = {msg, sizeof msg, "forward_decode"};
    static _Alignas(16) char buf[64];
    int64_t one[1] = {1};
    DLTensor t = tensor(buf, 1, one, kDLInt, 32);
    sgl_attn_layer L;
    memset(&L, 0, sizeof L);
    L.struct_size = sizeof L;
    sgl_attn_forward_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.layer = &L;
    assert_int_equal(ca_refuse_unserved_fwd(&m, &a), 0);
    L.q_descale = 1.f; /* 0 and 1 mean none */
    assert_int_equal(ca_refuse_unserved_fwd(&m, &a), 0);
    struct {
        const char *name;
        void (*set)(sgl_attn_layer *, sgl_attn_forward_args *, DLTensor *);
    } cases[] = {
        {"layer.q_descale ", NULL}, {"layer.q_descale_tensor", NULL}, {"forward args q_rope", NULL},
        {"forward args k_rope", NULL}, {"forward args topk_indices", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memset(&L, 0, sizeof L);
        L.struct_size = sizeof L;
        memset(&a, 0, sizeof a);
        a.struct_size = sizeof a;
        a.layer = &L;
        switch (i) {
        case 0: L.q_descale = 0.5f; break;
        case 1: L.q_descale_tensor = &t; break;
        case 2: a.q_rope = &t; break;
        case 3: a.k_rope = &t; break;
        default: a.topk_indices = &t; break;
        }
        assert_int_equal(ca_refuse_unserved_fwd(&m, &a), SGL_ATTN_E_UNSUPPORTED);
        assert_non_null(strstr(msg, cases[i].name));
        /* the same bytes from a 1.0 caller are past its structs: not read */
        L.struct_size = SGL_ATTN_LAYER_SIZE_V1_0;
        a.struct_size = SGL_ATTN_FORWARD_ARGS_SIZE_V1_0;
        assert_int_equal(ca_refuse_unserved_fwd(&m, &a), 0);
    }
    memset(&L, 0, sizeof L);
    L.struct_size = sizeof L;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.layer = &L;
    L.slot_map = &t; /* served (SGL_ATTN_FEAT_SLOT_MAP): ca_check_slot_map checks it */
    assert_int_equal(ca_refuse_unserved_fwd(&m, &a), 0);
    /* the LSE output is served (SGL_ATTN_FEAT_LSE): not refused */
    L.slot_map = NULL;
    const sgl_attn_dual_chunk dca = {0}; /* served: ca_check_dual_chunk checks it */
    a.dual_chunk = &dca;
    assert_int_equal(ca_refuse_unserved_fwd(&m, &a), 0);
    a.dual_chunk = NULL;
    a.lse = &t;
    assert_int_equal(ca_refuse_unserved_fwd(&m, &a), 0);
}

/* batch.encoder_out_cache_loc (ABI 1.2, SGL_ATTN_FEAT_ENCODER_LOC): served,
 * no longer refused; the host checks the tensor (dtype, shape, device, the
 * host mirror's sum), its entries are the device's (encoder_loc_check.cu);
 * an older caller's batch ends before the field, which is then not read. */
static void test_enc_loc_check(void **state) {
    (void)state;
    char msg[512];
    ca_msg m = {msg, sizeof msg, "init_forward_metadata"};
    static _Alignas(16) char buf[256];
    const int32_t bs = 3;
    int64_t n_lens[1] = {bs}, n_loc[1] = {12}, n2[2] = {3, 4};
    DLTensor lens = tensor(buf, 1, n_lens, kDLInt, 32);
    DLTensor loc = tensor(buf, 1, n_loc, kDLInt, 64);
    sgl_attn_batch bt;
    memset(&bt, 0, sizeof bt);
    bt.struct_size = sizeof bt;
    int64_t n = 0;
    /* none: nothing planned */
    assert_int_equal(ca_check_enc_loc(&m, &bt, 0, bs, &n), 0);
    assert_int_equal(n, -1);
    /* needs encoder_lens */
    bt.encoder_out_cache_loc = &loc;
    assert_int_equal(ca_check_enc_loc(&m, &bt, 0, bs, &n), SGL_ATTN_E_INVALID);
    assert_string_equal(msg, "init_forward_metadata: batch.encoder_out_cache_loc is set but batch.encoder_lens is NULL");
    bt.encoder_lens = &lens;
    /* served: int64 and int32, any length (the device checks the sum) */
    assert_int_equal(ca_check_enc_loc(&m, &bt, 0, bs, &n), 0);
    assert_int_equal(n, 12);
    loc.dtype.bits = 32;
    assert_int_equal(ca_check_enc_loc(&m, &bt, 0, bs, &n), 0);
    assert_int_equal(n, 12);
    /* an older caller (ABI 1.1: the batch ends before the field) is never read */
    bt.struct_size = (uint32_t)offsetof(sgl_attn_batch, encoder_out_cache_loc);
    n = 7;
    assert_int_equal(ca_check_enc_loc(&m, &bt, 0, bs, &n), 0);
    assert_int_equal(n, -1);
    bt.struct_size = sizeof bt;
    /* dtype */
    loc.dtype.code = kDLFloat;
    assert_int_equal(ca_check_enc_loc(&m, &bt, 0, bs, &n), SGL_ATTN_E_INVALID);
    assert_string_equal(msg, "init_forward_metadata: batch.encoder_out_cache_loc has dtype float32; expected int32 or int64");
    assert_int_equal(n, -1);
    loc.dtype.code = kDLInt;
    /* shape: 1-D */
    DLTensor loc2 = tensor(buf, 2, n2, kDLInt, 32);
    bt.encoder_out_cache_loc = &loc2;
    assert_int_equal(ca_check_enc_loc(&m, &bt, 0, bs, &n), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(msg, "init_forward_metadata: batch.encoder_out_cache_loc has shape [3, 4]"));
    bt.encoder_out_cache_loc = &loc;
    /* device: another GPU, host memory */
    loc.device.device_id = 1;
    assert_int_equal(ca_check_enc_loc(&m, &bt, 0, bs, &n), SGL_ATTN_E_INVALID);
    assert_string_equal(msg, "init_forward_metadata: batch.encoder_out_cache_loc is on cuda:1; expected device 0 (the backend's)");
    loc.device.device_id = 0;
    loc.device.device_type = kDLCPU;
    assert_int_equal(ca_check_enc_loc(&m, &bt, 0, bs, &n), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(msg, "init_forward_metadata: batch.encoder_out_cache_loc is in host memory"));
    loc.device.device_type = kDLCUDA;
    /* not compact */
    int64_t st2[1] = {2};
    loc.strides = st2;
    assert_int_equal(ca_check_enc_loc(&m, &bt, 0, bs, &n), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(msg, "batch.encoder_out_cache_loc"));
    loc.strides = NULL;
    /* more entries than 32 bits count */
    n_loc[0] = (int64_t)INT32_MAX + 1;
    assert_int_equal(ca_check_enc_loc(&m, &bt, 0, bs, &n), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(msg, "batch.encoder_out_cache_loc.shape[0] = 2147483648; expected at most 2^31 - 1"));
    n_loc[0] = 12;
    /* the host mirror of encoder_lens: its sum must be the length */
    static int32_t lens_host[3] = {5, 0, 7};
    DLTensor lens_cpu = tensor(lens_host, 1, n_lens, kDLInt, 32);
    lens_cpu.device.device_type = kDLCPU;
    bt.encoder_lens_cpu = &lens_cpu;
    assert_int_equal(ca_check_enc_loc(&m, &bt, 0, bs, &n), 0);
    assert_int_equal(n, 12);
    lens_host[1] = 2;
    assert_int_equal(ca_check_enc_loc(&m, &bt, 0, bs, &n), SGL_ATTN_E_INVALID);
    assert_string_equal(msg, "init_forward_metadata: batch.encoder_out_cache_loc has 12 entries: expected the sum of "
                             "encoder_lens, 14");
    assert_int_equal(n, -1);
    /* an empty batch of encoder tokens is fine */
    lens_host[0] = lens_host[1] = lens_host[2] = 0;
    n_loc[0] = 0;
    assert_int_equal(ca_check_enc_loc(&m, &bt, 0, bs, &n), 0);
    assert_int_equal(n, 0);
}

/* batch.page_table and layer.slot_map (ABI 1.2): the host's checks, each
 * failure naming the field; their entries are checked on the device. */
static void test_page_table_slot_map(void **state) {
    (void)state;
    char msg[512];
    ca_msg m = {msg, sizeof msg, "init_forward_metadata"};
    static _Alignas(16) char buf[256];
    int32_t sh = -1;
    const int bs = 1 + (int)rnd(8);
    int64_t shape[2] = {bs, 8};
    DLTensor pt = tensor(buf, 2, shape, kDLInt, 32);
    /* power-of-two pages: the shift */
    for (int ps = 1, want = 0; ps <= 1024; ps <<= 1, want++) {
        assert_int_equal(ca_check_page_table(&m, &pt, 0, bs, ps, &sh), 0);
        assert_int_equal(sh, want);
    }
    pt.dtype.bits = 64; /* int64 pages */
    assert_int_equal(ca_check_page_table(&m, &pt, 0, bs, 16, &sh), 0);
    assert_int_equal(sh, 4);
    pt.dtype.bits = 32;
    /* more rows than the batch (a preallocated table) */
    assert_int_equal(ca_check_page_table(&m, &pt, 0, bs - 1 > 0 ? bs - 1 : 1, 16, &sh), 0);
    /* a page size the kernels cannot shift by: unsupported, and named */
    assert_int_equal(ca_check_page_table(&m, &pt, 0, bs, 12, &sh), SGL_ATTN_E_UNSUPPORTED);
    assert_string_equal(msg, "init_forward_metadata: batch.page_table with page_size 12: cuda_attn serves page "
                             "tables of power-of-two page sizes");
    assert_int_equal(ca_check_page_table(&m, &pt, 0, bs, 0, &sh), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(msg, "page_size 0"));
    /* fewer rows than requests */
    assert_int_equal(ca_check_page_table(&m, &pt, 0, bs + 1, 16, &sh), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(msg, "init_forward_metadata: batch.page_table has shape"));
    /* not an index dtype, not 2-D, not on the device, NULL */
    DLTensor bad = tensor(buf, 2, shape, kDLFloat, 32);
    assert_int_equal(ca_check_page_table(&m, &bad, 0, bs, 16, &sh), SGL_ATTN_E_INVALID);
    assert_string_equal(msg, "init_forward_metadata: batch.page_table has dtype float32; expected int32 or int64");
    bad = tensor(buf, 1, shape, kDLInt, 32);
    assert_int_not_equal(ca_check_page_table(&m, &bad, 0, bs, 16, &sh), 0);
    assert_non_null(strstr(msg, "batch.page_table"));
    bad = pt;
    bad.device.device_type = kDLCPU;
    assert_int_equal(ca_check_page_table(&m, &bad, 0, bs, 16, &sh), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(msg, "init_forward_metadata: batch.page_table is in host memory"));
    assert_int_equal(ca_check_page_table(&m, NULL, 0, bs, 16, &sh), SGL_ATTN_E_INVALID);
    assert_string_equal(msg, "init_forward_metadata: batch.page_table is NULL");
    /* pages x page size past 31 bits of columns */
    shape[1] = ((int64_t)INT32_MAX >> 4) + 1;
    assert_int_equal(ca_check_page_table(&m, &pt, 0, bs, 16, &sh), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(msg, "batch.page_table has 134217728 pages per request of 16 tokens"));
    shape[1] = (int64_t)INT32_MAX >> 4;
    assert_int_equal(ca_check_page_table(&m, &pt, 0, bs, 16, &sh), 0);

    m.call = "forward_decode";
    int64_t n[1] = {1 + (int64_t)rnd(1000)};
    DLTensor map = tensor(buf, 1, n, kDLInt, 64);
    assert_int_equal(ca_check_slot_map(&m, &map, 0), 0);
    map.dtype.bits = 32;
    assert_int_equal(ca_check_slot_map(&m, &map, 0), 0);
    map.dtype.code = kDLFloat;
    assert_int_equal(ca_check_slot_map(&m, &map, 0), SGL_ATTN_E_INVALID);
    assert_string_equal(msg, "forward_decode: layer.slot_map has dtype float32; expected int32 or int64");
    map.dtype.code = kDLInt;
    map.device.device_id = 2;
    assert_int_equal(ca_check_slot_map(&m, &map, 0), SGL_ATTN_E_INVALID);
    assert_string_equal(msg, "forward_decode: layer.slot_map is on cuda:2; expected device 0 (the backend's)");
    map.device.device_id = 0;
    int64_t zero[1] = {0};
    map.shape = zero;
    assert_int_equal(ca_check_slot_map(&m, &map, 0), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(msg, "forward_decode: layer.slot_map has shape"));
    int64_t big[1] = {(int64_t)INT32_MAX + 1};
    map.shape = big;
    assert_int_equal(ca_check_slot_map(&m, &map, 0), SGL_ATTN_E_UNSUPPORTED);
    assert_string_equal(msg, "forward_decode: layer.slot_map has 2147483648 entries: expected at most 2147483647 (31 bits)");
    assert_int_equal(ca_check_slot_map(&m, NULL, 0), SGL_ATTN_E_INVALID);
    assert_string_equal(msg, "forward_decode: layer.slot_map is NULL");
}

/* forward_ragged's checks: scalars, the LSE tensor, host mirrors of cu_seqlens. */
static void test_ragged_checks(void **state) {
    (void)state;
    char msg[512];
    ca_msg m = {msg, sizeof msg, "forward_ragged"};
    sgl_attn_ragged_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.batch_size = 3;
    a.num_q_heads = 16;
    a.num_kv_heads = 16;
    a.head_dim_qk = 192;
    a.head_dim_v = 128;
    a.sm_scale = 0.07f;
    a.causal = 1;
    assert_int_equal(ca_check_ragged_shape(&m, &a, 4), 0);
    a.head_dim_qk = 128;
    assert_int_equal(ca_check_ragged_shape(&m, &a, 4), 0);
    a.batch_size = 5;
    assert_int_equal(ca_check_ragged_shape(&m, &a, 4), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(msg, "forward_ragged: batch_size 5: expected 0..4 (create's max_reqs)"));
    a.batch_size = 3;
    a.head_dim_qk = 256;
    a.head_dim_v = 256;
    assert_int_equal(ca_check_ragged_shape(&m, &a, 4), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(msg, "head_dim_qk 256 / head_dim_v 256: cuda_attn serves qk 128 / v 128 and qk 192 / v 128"));
    a.head_dim_qk = 192;
    a.head_dim_v = 128;
    a.num_kv_heads = 5;
    assert_int_equal(ca_check_ragged_shape(&m, &a, 4), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(msg, "num_kv_heads 5"));
    a.num_kv_heads = 16;
    a.causal = 2;
    assert_int_equal(ca_check_ragged_shape(&m, &a, 4), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(msg, "causal 2"));
    a.causal = 0;
    a.logit_softcap = -1.f;
    assert_int_equal(ca_check_ragged_shape(&m, &a, 4), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(msg, "logit_softcap -1"));

    /* the LSE: compact fp32 [T, hq] */
    static _Alignas(16) float lbuf[64];
    int64_t ls[2] = {4, 16}, lbad[2] = {4, 8};
    DLTensor lse = tensor(lbuf, 2, ls, kDLFloat, 32);
    assert_int_equal(ca_check_lse(&m, &lse, "lse", 0, 4, 16), 0);
    lse.shape = lbad;
    assert_int_not_equal(ca_check_lse(&m, &lse, "lse", 0, 4, 16), 0);
    assert_non_null(strstr(msg, "forward_ragged: lse"));
    lse.shape = ls;
    lse.dtype.bits = 16;
    assert_int_not_equal(ca_check_lse(&m, &lse, "lse", 0, 4, 16), 0);
    assert_non_null(strstr(msg, "forward_ragged: lse has dtype"));

    /* host mirrors: 0 first, never decreasing, at most the rows */
    int32_t cu[4] = {0, 100, 100, 350};
    int64_t n4[1] = {4};
    DLTensor mir = tensor(cu, 1, n4, kDLInt, 32);
    mir.device.device_type = kDLCPU;
    int64_t longest = 0;
    assert_int_equal(ca_check_cu_mirror(&m, NULL, "cu_seqlens_q_cpu", 3, 350, &longest), 0);
    assert_int_equal(longest, -1);
    assert_int_equal(ca_check_cu_mirror(&m, &mir, "cu_seqlens_q_cpu", 3, 350, &longest), 0);
    assert_int_equal(longest, 250);
    assert_int_equal(ca_check_cu_mirror(&m, &mir, "cu_seqlens_q_cpu", 3, 349, &longest), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(msg, "cu_seqlens_q_cpu[3] = 350 after 100: expected 0 first, never decreasing, at most 349"));
    cu[2] = 99;
    assert_int_equal(ca_check_cu_mirror(&m, &mir, "cu_seqlens_k_cpu", 3, 350, &longest), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(msg, "cu_seqlens_k_cpu[2] = 99 after 100"));
    cu[2] = 100;
    cu[0] = 1;
    assert_int_equal(ca_check_cu_mirror(&m, &mir, "cu_seqlens_k_cpu", 3, 350, &longest), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(msg, "cu_seqlens_k_cpu[0] = 1"));
    cu[0] = 0;
    mir.device.device_type = kDLCUDA; /* a mirror lives in host memory */
    assert_int_not_equal(ca_check_cu_mirror(&m, &mir, "cu_seqlens_k_cpu", 3, 350, &longest), 0);
    assert_non_null(strstr(msg, "forward_ragged: cu_seqlens_k_cpu"));
}

/* Served now: the attention types (checked per forward against the plan). */
static void test_served_fields(void **state) {
    (void)state;
    char msg[512];
    ca_msg m = {msg, sizeof msg, "forward_extend"};
    sgl_attn_layer L;
    memset(&L, 0, sizeof L);
    L.struct_size = sizeof L;
    sgl_attn_forward_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.layer = &L;
    L.attn_type = SGL_ATTN_TYPE_BIDIRECTIONAL;
    assert_int_equal(ca_refuse_unserved_fwd(&m, &a), 0);
    L.attn_type = SGL_ATTN_TYPE_ENCODER_ONLY;
    assert_int_equal(ca_refuse_unserved_fwd(&m, &a), 0);
}

/* batch.custom_mask: a compact 1-D uint8 / bool tensor on the backend's device. */
static void test_mask_check(void **state) {
    (void)state;
    char msg[512];
    ca_msg m = {msg, sizeof msg, "init_forward_metadata"};
    static _Alignas(16) unsigned char buf[64];
    int64_t n[1] = {64}, n2[2] = {8, 8}, st[1] = {2};
    DLTensor t = tensor(buf, 1, n, kDLUInt, 8);
    assert_int_equal(ca_check_mask(&m, &t, 0), 0);
    t.dtype.code = 6; /* kDLBool */
    assert_int_equal(ca_check_mask(&m, &t, 0), 0);
    t.dtype.code = kDLInt;
    t.dtype.bits = 32;
    assert_int_equal(ca_check_mask(&m, &t, 0), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(msg, "init_forward_metadata: batch.custom_mask: its dtype is not uint8 or bool"));
    t = tensor(buf, 2, n2, kDLUInt, 8);
    assert_int_equal(ca_check_mask(&m, &t, 0), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(msg, "not 1-D"));
    t = tensor(buf, 1, n, kDLUInt, 8);
    assert_int_equal(ca_check_mask(&m, &t, 1), SGL_ATTN_E_INVALID); /* another device */
    assert_non_null(strstr(msg, "not in this device's memory"));
    t.device.device_type = kDLCPU;
    assert_int_equal(ca_check_mask(&m, &t, 0), SGL_ATTN_E_INVALID);
    t = tensor(buf, 1, n, kDLUInt, 8);
    t.strides = st;
    assert_int_equal(ca_check_mask(&m, &t, 0), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(msg, "not compact"));
    t = tensor(NULL, 1, n, kDLUInt, 8);
    assert_int_equal(ca_check_mask(&m, &t, 0), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(msg, "data is NULL"));
}

/* A forward's dual_chunk block: sizes, the features it cannot go with (each
 * named), q_succ / q_inter shaped and typed like q. */
static void test_dual_chunk_check(void **state) {
    (void)state;
    static _Alignas(16) char buf[64];
    char msg[512];
    ca_msg m = {msg, sizeof msg, "forward_extend"};
    const int T = 1 + (int)rnd(64), hq = 8;
    int64_t shape[3] = {T, hq, 128}, bad_shape[3] = {T, hq, 64};
    DLTensor qs = tensor(buf, 3, shape, kDLBfloat, 16), qi = qs;
    sgl_attn_layer L;
    memset(&L, 0, sizeof L);
    L.struct_size = sizeof L;
    L.layer_id = 3;
    L.sliding_window = -1;
    sgl_attn_dual_chunk dc = {sizeof dc, 256, 32, 1024, &qs, &qi};
    sgl_attn_forward_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.layer = &L;
    a.dual_chunk = &dc;
    ca_dca_ctx c = {0, 0, 0, SGL_ATTN_DT_BF16, T, hq, 128};
    int64_t s1[3], s2[3];
    assert_int_equal(ca_check_dual_chunk(&m, &a, &c, s1, s2), 0);
    assert_int_equal(s1[0], (int64_t)hq * 128);
    assert_int_equal(s2[1], 128);
    dc.local_size = 256; /* must stay below chunk_size */
    assert_int_equal(ca_check_dual_chunk(&m, &a, &c, s1, s2), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(msg, "local_size 256"));
    dc.local_size = 32;
    dc.original_max_position = -1;
    assert_int_equal(ca_check_dual_chunk(&m, &a, &c, s1, s2), SGL_ATTN_E_INVALID);
    dc.original_max_position = 0;
    dc.struct_size = 8;
    assert_int_equal(ca_check_dual_chunk(&m, &a, &c, s1, s2), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(msg, "dual_chunk.struct_size 8"));
    dc.struct_size = sizeof dc;
    static const char *const other[] = {"cross attention", "encoder-decoder", "sliding window", "soft-cap",
                                        "sinks", "fp8_e4m3", "layer.slot_map", "batch.page_table",
                                        "forward args lse"};
    DLTensor sk = qs;
    sgl_attn_batch bt;
    memset(&bt, 0, sizeof bt);
    bt.struct_size = sizeof bt;
    a.batch = &bt;
    assert_int_equal(ca_check_dual_chunk(&m, &a, &c, s1, s2), 0);
    for (int i = 0; i < 9; i++) {
        sgl_attn_layer L2 = L;
        ca_dca_ctx c2 = c;
        bt.page_table = NULL;
        switch (i) {
        case 0: L2.is_cross = 1; break;
        case 1: c2.has_enc = 1; break;
        case 2: L2.sliding_window = 128; break;
        case 3: L2.logit_softcap = 30.f; break;
        case 4: L2.sinks = &sk; break;
        case 5: c2.kv_fp8 = 1; break;
        case 6: L2.slot_map = &sk; break;
        case 7: bt.page_table = &sk; break;
        default: a.lse = &sk; break;
        }
        a.layer = &L2;
        assert_int_equal(ca_check_dual_chunk(&m, &a, &c2, s1, s2), SGL_ATTN_E_UNSUPPORTED);
        assert_non_null(strstr(msg, other[i]));
        assert_non_null(strstr(msg, "layer 3"));
    }
    a.layer = &L;
    a.lse = NULL;
    bt.page_table = NULL;
    DLTensor qb = tensor(buf, 3, bad_shape, kDLBfloat, 16);
    dc.q_inter = &qb;
    assert_int_equal(ca_check_dual_chunk(&m, &a, &c, s1, s2), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(msg, "dual_chunk.q_inter"));
    DLTensor qh = tensor(buf, 3, shape, kDLFloat, 16); /* f16, not q's bf16 */
    dc.q_inter = &qi;
    dc.q_succ = &qh;
    assert_int_not_equal(ca_check_dual_chunk(&m, &a, &c, s1, s2), 0);
    assert_non_null(strstr(msg, "dual_chunk.q_succ"));
    dc.q_succ = NULL;
    assert_int_not_equal(ca_check_dual_chunk(&m, &a, &c, s1, s2), 0);
    assert_non_null(strstr(msg, "dual_chunk.q_succ"));
}

/* An fp8 pool's scales: the floats (finite, > 0) or the [1] fp32 device tensors. */
static void test_kv_scales(void **state) {
    (void)state;
    char msg[512];
    ca_msg m = {msg, sizeof msg, "forward_decode"};
    static _Alignas(16) float sbuf[4];
    int64_t one[1] = {1}, two[1] = {2};
    sgl_attn_layer L;
    memset(&L, 0, sizeof L);
    L.struct_size = sizeof L;
    L.k_scale = 0.5f;
    L.v_scale = 2.f;
    const float *kd = (const float *)1, *vd = (const float *)1;
    assert_int_equal(ca_check_kv_scales(&m, &L, 0, &kd, &vd), 0);
    assert_null(kd);
    assert_null(vd);
    L.v_scale = 0.f;
    assert_int_equal(ca_check_kv_scales(&m, &L, 0, &kd, &vd), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(msg, "v_scale 0 for the fp8 pool"));
    DLTensor kt = tensor(sbuf, 1, one, kDLFloat, 32), vt = tensor(sbuf + 1, 1, one, kDLFloat, 32);
    L.k_scale_tensor = &kt;
    L.v_scale_tensor = &vt; /* the tensor replaces the float 0 */
    assert_int_equal(ca_check_kv_scales(&m, &L, 0, &kd, &vd), 0);
    assert_ptr_equal(kd, sbuf);
    assert_ptr_equal(vd, sbuf + 1);
    vt.shape = two;
    assert_int_not_equal(ca_check_kv_scales(&m, &L, 0, &kd, &vd), 0);
    assert_non_null(strstr(msg, "layer.v_scale_tensor"));
    vt.shape = one;
    vt.dtype.bits = 16;
    assert_int_not_equal(ca_check_kv_scales(&m, &L, 0, &kd, &vd), 0);
    assert_non_null(strstr(msg, "layer.v_scale_tensor"));
}

static void test_tensor_checks(void **state) {
    (void)state;
    static _Alignas(16) char buf[64];
    char msg[512];
    ca_msg m = {msg, sizeof msg, "forward_decode"};
    int64_t st[3];
    const int hq = 1 + (int)rnd(32), T = 1 + (int)rnd(64);
    int64_t shape[3] = {T, hq, 128};
    DLTensor q = tensor(buf, 3, shape, kDLBfloat, 16);
    assert_int_equal(ca_check_float3(&m, &q, "q", 0, SGL_ATTN_DT_BF16, T, hq, 128, 1, st), 0);
    assert_int_equal(st[0], (int64_t)hq * 128);
    assert_int_equal(st[1], 128);
    /* merged [T, hq * D] as sglang passes it */
    int64_t merged[2] = {T, (int64_t)hq * 128};
    DLTensor q2 = tensor(buf, 2, merged, kDLBfloat, 16);
    assert_int_equal(ca_check_float3(&m, &q2, "q", 0, SGL_ATTN_DT_BF16, T, hq, 128, 1, st), 0);
    assert_int_equal(st[0], (int64_t)hq * 128);
    assert_int_equal(st[1], 128);
    assert_int_equal(st[2], 1);
    assert_int_equal(ca_check_float3(&m, &q2, "k_cache", 0, SGL_ATTN_DT_BF16, T, hq, 128, 0, st), SGL_ATTN_E_INVALID);
    /* wrong dtype: a valid one we do not serve is unsupported, and named */
    DLTensor qf = tensor(buf, 3, shape, kDLFloat, 16);
    assert_int_equal(ca_check_float3(&m, &qf, "q", 0, SGL_ATTN_DT_BF16, T, hq, 128, 1, st), SGL_ATTN_E_UNSUPPORTED);
    assert_string_equal(msg, "forward_decode: q has dtype float16; expected bfloat16");
    /* wrong head dim */
    int64_t bad[3] = {T, hq, 96};
    DLTensor qb = tensor(buf, 3, bad, kDLBfloat, 16);
    assert_int_equal(ca_check_float3(&m, &qb, "q", 0, SGL_ATTN_DT_BF16, T, hq, 128, 1, st), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(msg, "forward_decode: q has shape"));
    assert_non_null(strstr(msg, ", 96]; expected"));
    /* wrong device and host memory */
    DLTensor qd = q;
    qd.device.device_id = 3;
    assert_int_equal(ca_check_float3(&m, &qd, "q", 0, SGL_ATTN_DT_BF16, T, hq, 128, 1, st), SGL_ATTN_E_INVALID);
    assert_string_equal(msg, "forward_decode: q is on cuda:3; expected device 0 (the backend's)");
    qd.device.device_type = kDLCPU;
    assert_int_equal(ca_check_float3(&m, &qd, "q", 0, SGL_ATTN_DT_BF16, T, hq, 128, 1, st), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(msg, "forward_decode: q is in host memory"));
    /* misaligned data and odd strides are refused, not launched */
    DLTensor qm = tensor(buf + 2, 3, shape, kDLBfloat, 16);
    assert_int_equal(ca_check_float3(&m, &qm, "q", 0, SGL_ATTN_DT_BF16, T, hq, 128, 1, st), SGL_ATTN_E_UNSUPPORTED);
    assert_string_equal(msg, "forward_decode: q: data + byte_offset is not 16-byte aligned");
    int64_t strides[3] = {hq * 128 + 4, 128, 1};
    DLTensor qs = q;
    qs.strides = strides;
    assert_int_equal(ca_check_float3(&m, &qs, "q", 0, SGL_ATTN_DT_BF16, T, hq, 128, 1, st), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(msg, "expected a multiple of 16 bytes (aligned rows)"));
    strides[0] = (int64_t)hq * 256; /* a strided view (every other token row) is fine */
    assert_int_equal(ca_check_float3(&m, &qs, "q", 0, SGL_ATTN_DT_BF16, T, hq, 128, 1, st), 0);
    assert_int_equal(st[0], (int64_t)hq * 256);
    /* index tensors */
    int64_t n1[1] = {T};
    DLTensor ix = tensor(buf, 1, n1, kDLInt, 64);
    assert_int_equal(ca_check_index1(&m, &ix, "seq_lens", 0, T), 0);
    assert_int_equal(ca_check_index1(&m, &ix, "seq_lens", 0, T + 1), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(msg, "forward_decode: seq_lens has shape"));
    assert_non_null(strstr(msg, "; expected [>= "));
    DLTensor ixf = tensor(buf, 1, n1, kDLFloat, 32);
    assert_int_equal(ca_check_index1(&m, &ixf, "seq_lens", 0, T), SGL_ATTN_E_INVALID);
    assert_string_equal(msg, "forward_decode: seq_lens has dtype float32; expected int32 or int64");
    assert_int_equal(ca_check_index1(&m, NULL, "seq_lens", 0, T), SGL_ATTN_E_INVALID);
    assert_string_equal(msg, "forward_decode: seq_lens is NULL");
    /* req_to_token: at least the rows and columns asked, each extent in 32 bits */
    int64_t r2t[2] = {8, 64};
    DLTensor rt = tensor(buf, 2, r2t, kDLInt, 32);
    assert_int_equal(ca_check_index2(&m, &rt, "req_to_token", 0, 1, 1), 0);
    r2t[1] = (int64_t)INT32_MAX + 1;
    assert_int_equal(ca_check_index2(&m, &rt, "req_to_token", 0, 1, 1), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(msg, "req_to_token.shape[1] = 2147483648; expected at most 2^31 - 1"));
    /* the KV pool: any number of slots, up to 2^31 - 1 */
    int64_t pool[3] = {(int64_t)INT32_MAX + 1, 2, 64};
    DLTensor kc = tensor(buf, 3, pool, kDLFloat, 16);
    assert_int_equal(ca_check_float3(&m, &kc, "layer.k_cache", 0, SGL_ATTN_DT_F16, SGL_SDK_ANY, 2, 64, 0, st),
                     SGL_ATTN_E_UNSUPPORTED);
    pool[0] = 1000;
    assert_int_equal(ca_check_float3(&m, &kc, "layer.k_cache", 0, SGL_ATTN_DT_F16, SGL_SDK_ANY, 2, 64, 0, st), 0);
    assert_int_equal(st[0], 128);
    assert_int_equal(st[1], 64);
    /* sinks: compact float32 [hq] */
    int64_t ns[1] = {hq};
    DLTensor sk = tensor(buf, 1, ns, kDLFloat, 32);
    assert_int_equal(ca_check_f32_1(&m, &sk, "layer.sinks", 0, hq), 0);
    sk.dtype.bits = 16;
    assert_int_equal(ca_check_f32_1(&m, &sk, "layer.sinks", 0, hq), SGL_ATTN_E_UNSUPPORTED);
    assert_string_equal(msg, "forward_decode: layer.sinks has dtype float16; expected float32");
    /* an fp8 e4m3 pool [slots, 2, 64] in either code: element strides of bytes */
    static _Alignas(16) char pool8[3 * 2 * 64];
    int64_t ps[3] = {3, 2, 64};
    DLTensor kc8 = tensor(pool8, 3, ps, SGL_ATTN_DL_FLOAT8_E4M3FN_CODE, 8);
    assert_int_equal(ca_check_float3(&m, &kc8, "layer.k_cache", 0, SGL_ATTN_DT_FP8_E4M3, 3, 2, 64, 0, st), 0);
    assert_int_equal(st[0], 128);
    assert_int_equal(st[1], 64);
    kc8.dtype.code = SGL_ATTN_DL_FLOAT8_E4M3_CODE;
    assert_int_equal(ca_check_float3(&m, &kc8, "layer.k_cache", 0, SGL_ATTN_DT_FP8_E4M3, 3, 2, 64, 0, st), 0);
    kc8.dtype.code = SGL_ATTN_DL_FLOAT8_E5M2_CODE;
    assert_int_not_equal(ca_check_float3(&m, &kc8, "layer.k_cache", 0, SGL_ATTN_DT_FP8_E4M3, 3, 2, 64, 0, st), 0);
    assert_non_null(strstr(msg, "layer.k_cache"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_bounds_random), cmocka_unit_test(test_extend_bounds_random),
        cmocka_unit_test(test_layout),               cmocka_unit_test(test_sizing_refuses),
        cmocka_unit_test(test_kernel_option),        cmocka_unit_test(test_removed_options_refused),
        cmocka_unit_test(test_lever_options),
        cmocka_unit_test(test_fp8_wave_plan),    cmocka_unit_test(test_decode_wave_bounds_random),
        cmocka_unit_test(test_kernel_choice),
        cmocka_unit_test(test_model_check),          cmocka_unit_test(test_tensor_checks),
        cmocka_unit_test(test_refuse_unserved),      cmocka_unit_test(test_kv_scales),
        cmocka_unit_test(test_dual_chunk_check),
        cmocka_unit_test(test_page_table_slot_map),
        cmocka_unit_test(test_ragged_checks),
        cmocka_unit_test(test_served_fields),        cmocka_unit_test(test_mask_check),
        cmocka_unit_test(test_enc_loc_check),
        cmocka_unit_test(test_direct_extend_choice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
