/* test_host_internals.c - the host's checks one by one, linked against the
 * host objects to reach hidden functions: descriptor and caps checks,
 * negotiation edge cases, the ELF diagnosis behind load errors, and the
 * caps intersection on random inputs. */
#include <elf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host_internal.h"
#include "th.h"

/* ------------------------------------------------------------ caps check */

static sgl_attn_caps valid_caps(void) {
    sgl_attn_caps c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    c.available = 1;
    c.arch_major = 9;
    c.arch_minor = 0;
    c.arch_min_major = 8;
    c.arch_min_minor = 0;
    c.arch_max_major = 9;
    c.arch_max_minor = 0;
    c.q_dtypes = c.kv_dtypes = SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16;
    c.attn_kinds = SGL_ATTN_KIND_MHA;
    c.features = SGL_ATTN_FEAT_DECODE;
    c.n_page_sizes = 2;
    c.page_sizes[0] = 16;
    c.page_sizes[1] = 64;
    c.n_head_dims = 1;
    c.head_dims[0] = (sgl_attn_head_dims){128, 128};
    return c;
}

static void caps_case(void (*mutate)(sgl_attn_caps *), const char *msg) {
    sgl_attn_caps c = valid_caps();
    char why[256] = "";
    assert_int_equal(plugin_caps_check(&c, why, sizeof why), 0);
    mutate(&c);
    assert_int_not_equal(plugin_caps_check(&c, why, sizeof why), 0);
    th_contains(why, msg);
}

static void m_list(sgl_attn_caps *c) { c->n_page_sizes = 17; }
static void m_page0(sgl_attn_caps *c) { c->page_sizes[1] = 0; }
static void m_hd0(sgl_attn_caps *c) { c->head_dims[0].v = 0; }
static void m_reason(sgl_attn_caps *c) { memset(c->reason, 'x', sizeof c->reason); }
static void m_name(sgl_attn_caps *c) { memset(c->arch_name, 'y', sizeof c->arch_name); }
static void m_inverted(sgl_attn_caps *c) { c->arch_min_major = 10; }
static void m_bits(sgl_attn_caps *c) { c->features |= 1u << 30; } /* past the ABI 1.2 bits */
static void m_dtype(sgl_attn_caps *c) { c->kv_dtypes |= 1u << 7; }
static void m_avail(sgl_attn_caps *c) { c->available = 2; }
static void m_arch(sgl_attn_caps *c) { c->arch_major = -5; }

static void test_caps_check(void **state) {
    (void)state;
    caps_case(m_list, "n_page_sizes is 17 (the limit is 16)");
    caps_case(m_page0, "page_sizes[1] is 0 (expected >= 1)");
    caps_case(m_hd0, "head_dims[0] is (128, 0)");
    caps_case(m_reason, "caps reason is not NUL-terminated");
    caps_case(m_name, "caps arch_name is not NUL-terminated");
    caps_case(m_inverted, "arch range 10.0..9.0 is inverted");
    caps_case(m_bits, "caps features has unknown bits 0x40000000");
    caps_case(m_dtype, "caps kv_dtypes has unknown bits 0x80");
    caps_case(m_avail, "caps available is 2 (expected 0 or 1)");
    caps_case(m_arch, "caps arch_major is -5 (expected -1..1000)");
}

/* ----------------------------------------------------------- descriptor */

static int dummy_probe(uint32_t i, sgl_attn_caps *c) {
    (void)i;
    (void)c;
    return 0;
}
static int dummy_create(const sgl_attn_create_args *a, sgl_attn_backend **o) {
    (void)a;
    (void)o;
    return 0;
}

static sgl_attn_plugin valid_desc(void) {
    sgl_attn_plugin d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.abi_major = 1;
    d.name = "ok_name_1";
    d.platform = SGL_ATTN_PLATFORM_CUDA;
    d.role = SGL_ATTN_ROLE_FULL;
    d.probe = dummy_probe;
    d.create = dummy_create;
    return d;
}

static const char long_name[] = "a123456789b123456789c123456789d123456789e123456789f123456789g1234";
static const char *const many[] = {"a", "b", "c", "d", "e", "f", "g", "h", "i",
                                   "j", "k", "l", "m", "n", "o", "p", "q", NULL};

static void test_descriptor_check(void **state) {
    (void)state;
    char why[256];
    sgl_attn_plugin d = valid_desc();
    assert_int_equal(plugin_descriptor_check(&d, why, sizeof why), 0);
#define EXPECT(stmt, msg)                                                      \
    do {                                                                       \
        d = valid_desc();                                                      \
        stmt;                                                                  \
        why[0] = 0;                                                            \
        assert_int_not_equal(plugin_descriptor_check(&d, why, sizeof why), 0); \
        th_contains(why, msg);                                                 \
    } while (0)
    EXPECT(d.name = NULL, "descriptor name is NULL (expected [a-z0-9_]{1,63})");
    EXPECT(d.name = "", "descriptor name is empty");
    EXPECT(d.name = long_name, "descriptor name is longer than 63 characters");
    EXPECT(d.name = "Flash", "descriptor name \"Flash\" has 'F' at position 0");
    EXPECT(d.name = "a-b", "has '-' at position 1");
    EXPECT(d.name = "a\nb", "has byte 0x0a at position 1");
    EXPECT(d.platform = 99, "descriptor platform has unknown value 99 (expected 0..5)");
    EXPECT(d.platform = -1, "descriptor platform has unknown value -1");
    EXPECT(d.role = 0, "descriptor role has unknown value 0 (expected 1..3)");
    EXPECT(d.role = 7, "descriptor role has unknown value 7");
    EXPECT(d.hybrid_kind = 42, "descriptor hybrid_kind has unknown value 42");
    EXPECT(d.role = SGL_ATTN_ROLE_HYBRID, "role is hybrid but hybrid_kind is none");
    EXPECT(d.hybrid_kind = SGL_ATTN_HYBRID_GDN, "hybrid_kind is gdn but the role is not hybrid");
    EXPECT((d.role = SGL_ATTN_ROLE_HYBRID, d.hybrid_kind = SGL_ATTN_HYBRID_CUSTOM), "descriptor custom_kind is NULL");
    EXPECT(d.probe = NULL, "no probe function");
    EXPECT(d.create = NULL, "no create function");
    EXPECT(d.aliases = many, "descriptor aliases has more than 16 entries");
    EXPECT(d.version = long_name, "descriptor version is longer than 31 characters");
}

/* ----------------------------------------------------------- negotiation */

static sgl_attn_plugin neg_desc;
static int neg_mode;

static int test_entry(const sgl_attn_host_api *host, sgl_attn_plugin_answer *a) {
    assert_int_equal(host->abi_major, 1);
    assert_int_equal(host->abi_minor_max, SGL_ATTN_ABI_MINOR);
    assert_int_equal(a->struct_size, sizeof *a);
    neg_desc = valid_desc();
    a->abi_major = 1;
    a->abi_minor = 0;
    a->plugin = &neg_desc;
    switch (neg_mode) {
    case 1: a->plugin = NULL; break;
    case 2: neg_desc.struct_size = 64; break;
    case 3:
        snprintf(a->refusal, sizeof a->refusal, "needs ABI 1.4 for paged MLA");
        a->abi_minor = 4;
        return SGL_ATTN_E_ABI;
    case 4: neg_desc.abi_minor = 2; break;
    case 5: return SGL_ATTN_E_DEVICE;
    case 6: neg_desc.name = "Bad"; break;
    }
    return SGL_ATTN_OK;
}

static void test_negotiate(void **state) {
    (void)state;
    sgl_attn_host_api api = {.struct_size = sizeof api, .abi_major = 1, .abi_minor_max = SGL_ATTN_ABI_MINOR};
    sgl_attn_plugin d;
    uint16_t ma, mi;
    char why[256];
    static const struct {
        int status;
        const char *msg;
    } want[] = {
        {SGL_ATTN_PLUGIN_USABLE, ""}, /* a plugin built for 1.0 loads in this 1.2 host */
        {SGL_ATTN_PLUGIN_LOAD_ERROR, "entry point answered OK but gave no descriptor (plugin is NULL)"},
        {SGL_ATTN_PLUGIN_ABI_MISMATCH, "descriptor struct_size 64 is smaller than ABI 1.0 requires (120)"},
        {SGL_ATTN_PLUGIN_ABI_MISMATCH, "plugin ABI 1.4, host ABI 1.2: newer minor: needs ABI 1.4 for paged MLA"},
        {SGL_ATTN_PLUGIN_ABI_MISMATCH, "descriptor says ABI 1.2 but the entry point answered 1.0"},
        {SGL_ATTN_PLUGIN_LOAD_ERROR, "entry point failed with device (-4)"},
        {SGL_ATTN_PLUGIN_LOAD_ERROR, "descriptor name \"Bad\" has 'B'"},
    };
    for (neg_mode = 0; neg_mode < (int)(sizeof want / sizeof want[0]); neg_mode++) {
        why[0] = 0;
        int st = plugin_negotiate(test_entry, &api, &d, &ma, &mi, why, sizeof why);
        if (st != want[neg_mode].status) fail_msg("mode %d: status %d (%s)", neg_mode, st, why);
        th_contains(why, want[neg_mode].msg);
    }
    neg_mode = 0;
    assert_int_equal(plugin_negotiate(test_entry, &api, &d, &ma, &mi, why, sizeof why), SGL_ATTN_PLUGIN_USABLE);
    assert_string_equal(d.name, "ok_name_1");
    assert_ptr_equal(d.probe, dummy_probe);
}

/* A plugin built for 1.0, 1.1 or 1.2, each with the descriptor size and the
 * answer of its own header (sgl_attn_answer as that header had it: it
 * refuses a host older than itself). */
static int ver_minor;
static sgl_attn_plugin ver_desc;
static int ver_entry(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer) {
    static const uint32_t desc_size[] = {120, 120, 120}; /* the descriptor has not grown since 1.0 */
    memset(&ver_desc, 0, sizeof ver_desc);
    ver_desc.struct_size = desc_size[ver_minor];
    ver_desc.abi_major = 1;
    ver_desc.abi_minor = (uint16_t)ver_minor;
    ver_desc.name = "ver_plugin";
    ver_desc.platform = SGL_ATTN_PLATFORM_CPU;
    ver_desc.role = SGL_ATTN_ROLE_FULL;
    ver_desc.probe = dummy_probe;
    ver_desc.create = (int (*)(const sgl_attn_create_args *, sgl_attn_backend **))1;
    answer->abi_major = 1;
    answer->abi_minor = (uint16_t)ver_minor;
    answer->plugin = &ver_desc;
    if (host->abi_minor_max < ver_minor) {
        snprintf(answer->refusal, sizeof answer->refusal, "host ABI too old for this plugin");
        return SGL_ATTN_E_ABI;
    }
    return SGL_ATTN_OK;
}

/* Negotiation across minors: 1.0, 1.1 and 1.2 plugins load in a 1.2 host;
 * in a host that offers 1.1 the 1.2 plugin is refused with both versions
 * named, the others load. */
static void test_negotiate_versions(void **state) {
    (void)state;
    sgl_attn_plugin d;
    uint16_t ma, mi;
    char why[256];
    for (int host_minor = 1; host_minor <= 2; host_minor++) {
        sgl_attn_host_api api = {.struct_size = sizeof api, .abi_major = 1, .abi_minor_max = (uint16_t)host_minor};
        for (ver_minor = 0; ver_minor <= 2; ver_minor++) {
            why[0] = 0;
            int st = plugin_negotiate(ver_entry, &api, &d, &ma, &mi, why, sizeof why);
            if (ver_minor <= host_minor) {
                if (st != SGL_ATTN_PLUGIN_USABLE)
                    fail_msg("plugin 1.%d in host 1.%d: status %d (%s)", ver_minor, host_minor, st, why);
                assert_int_equal(mi, ver_minor);
            } else {
                assert_int_equal(st, SGL_ATTN_PLUGIN_ABI_MISMATCH);
                th_contains(why, "plugin ABI 1.2, host ABI 1.1: newer minor");
            }
        }
    }
    /* The real header's helper refuses a 1.1 host from a 1.2 plugin too. */
    sgl_attn_host_api old = {.struct_size = sizeof old, .abi_major = 1, .abi_minor_max = 1};
    sgl_attn_plugin_answer ans;
    memset(&ans, 0, sizeof ans);
    ans.struct_size = sizeof ans;
    static const sgl_attn_plugin self = {.struct_size = sizeof self, .abi_major = 1, .abi_minor = SGL_ATTN_ABI_MINOR};
    assert_int_equal(sgl_attn_answer(&old, &ans, &self), SGL_ATTN_E_ABI);
    assert_int_equal(ans.abi_minor, SGL_ATTN_ABI_MINOR);
}

/* ------------------------------------------------------------------ ELF */

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc(*n);
    assert_int_equal(fread(b, 1, *n, f), *n);
    fclose(f);
    return b;
}

static void load_expect(const char *path, const char *msg) {
    loaded_module m;
    char why[512] = "";
    assert_int_equal(module_load(path, &m, why, sizeof why), SGL_ATTN_PLUGIN_LOAD_ERROR);
    assert_null(m.handle);
    th_contains(why, msg);
}

static void test_elf_diagnosis(void **state) {
    (void)state;
    char good[PATH_MAX], p[PATH_MAX];
    th_fake("good", "fake_good.so", good, sizeof good);
    size_t n;
    char *img = slurp(good, &n);
    char *tmp = th_tmpdir();
    snprintf(p, sizeof p, "%s/x.so", tmp);

    th_write(p, img, 2000);
    load_expect(p, "truncated ELF (2000 bytes, its headers need");
    th_write(p, img, 40);
    load_expect(p, "truncated ELF (40 bytes, the ELF header alone is 64)");

    char *mod = malloc(n);
    memcpy(mod, img, n);
    mod[EI_CLASS] = ELFCLASS32;
    th_write(p, mod, n);
    load_expect(p, "ELF class 32-bit, this host is 64-bit");

    memcpy(mod, img, n);
    Elf64_Ehdr *eh = (Elf64_Ehdr *)mod;
#if defined(__x86_64__)
    eh->e_machine = EM_AARCH64;
    th_write(p, mod, n);
    load_expect(p, "ELF for another machine (ARM aarch64), this host is x86-64");
#endif
    memcpy(mod, img, n);
    eh->e_type = ET_REL;
    th_write(p, mod, n);
    load_expect(p, "not a shared object: ELF type REL");

    const unsigned char bin[] = {0x00, 0x01, 0xfe, 0x80, 0x11};
    th_write(p, bin, sizeof bin);
    load_expect(p, "not an ELF file (first bytes 00 01 fe 80)");

    char u[PATH_MAX], md[PATH_MAX];
    load_expect(th_fake("undefined", "fake_undefined.so", u, sizeof u),
                "undefined symbol sgl_attn_fake_symbol_nobody_defines");
    load_expect(th_fake("missing_dep", "fake_missing_dep.so", md, sizeof md),
                "missing dependency libsglfake_gone.so");
    load_expect(th_fake("no_entry", "fake_no_entry.so", md, sizeof md), "no entry point sgl_attn_plugin_entry");
    snprintf(p, sizeof p, "%s/absent.so", tmp);
    load_expect(p, "cannot open: No such file or directory");

    /* And the good one loads, with its entry. */
    loaded_module m;
    char why[256] = "";
    assert_int_equal(module_load(good, &m, why, sizeof why), SGL_ATTN_PLUGIN_USABLE);
    assert_non_null(m.handle);
    assert_non_null(m.entry);
    module_unload(&m, 0);
    assert_null(m.handle);
    free(mod);
    free(img);
    th_rmrf(tmp);
    free(tmp);
}

/* ------------------------------------------------------- intersection */

static uint32_t rnd(uint32_t n) { return (uint32_t)rand() % n; }

static sgl_attn_caps random_caps(void) {
    sgl_attn_caps c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    c.available = 1;
    c.arch_major = c.arch_minor = c.arch_min_major = c.arch_min_minor = c.arch_max_major = c.arch_max_minor = -1;
    c.q_dtypes = 1 + rnd(31);
    c.kv_dtypes = 1 + rnd(31);
    c.attn_kinds = 1 + rnd(31);
    c.features = 3 | rnd(512);
    if (rnd(2)) {
        c.n_head_dims = 1 + rnd(6);
        for (uint32_t i = 0; i < c.n_head_dims; i++)
            c.head_dims[i] = (sgl_attn_head_dims){(uint16_t)(64 * (1 + rnd(4))), (uint16_t)(64 * (1 + rnd(4)))};
    } else {
        c.head_dim_qk_max = rnd(2) ? 0 : 64 * (1 + rnd(8));
        c.head_dim_v_max = rnd(2) ? 0 : 64 * (1 + rnd(8));
    }
    if (rnd(2)) {
        c.n_page_sizes = 1 + rnd(5);
        for (uint32_t i = 0; i < c.n_page_sizes; i++) c.page_sizes[i] = 1u << rnd(8);
    } else {
        c.page_size_max = rnd(3) ? 1u << rnd(9) : 0;
    }
    return c;
}

static int pair_ok(const sgl_attn_caps *c, sgl_attn_head_dims d) {
    if (c->n_head_dims) {
        for (uint32_t i = 0; i < c->n_head_dims; i++)
            if (c->head_dims[i].qk == d.qk && c->head_dims[i].v == d.v) return 1;
        return 0;
    }
    return (!c->head_dim_qk_max || d.qk <= c->head_dim_qk_max) && (!c->head_dim_v_max || d.v <= c->head_dim_v_max);
}

static int page_ok(const sgl_attn_caps *c, uint32_t p) {
    if (c->n_page_sizes) {
        for (uint32_t i = 0; i < c->n_page_sizes; i++)
            if (c->page_sizes[i] == p) return 1;
        return 0;
    }
    return !c->page_size_max || p <= c->page_size_max;
}

/* Properties, on random pairs: the result serves exactly what both serve. */
static void test_intersection_random(void **state) {
    (void)state;
    srand(20261202);
    int ok = 0, refused = 0;
    for (int t = 0; t < 2000; t++) {
        sgl_attn_caps a = random_caps(), b = random_caps(), o;
        char why[256];
        int rc = stack_caps_intersect(&a, &b, &o, why, sizeof why);
        if (rc != SGL_ATTN_OK) {
            refused++;
            assert_true(!(a.q_dtypes & b.q_dtypes) || !(a.kv_dtypes & b.kv_dtypes) ||
                        !(a.attn_kinds & b.attn_kinds) || strstr(why, "head dims") || strstr(why, "page size"));
            continue;
        }
        ok++;
        assert_int_equal(o.q_dtypes, a.q_dtypes & b.q_dtypes);
        assert_int_equal(o.kv_dtypes, a.kv_dtypes & b.kv_dtypes);
        assert_int_equal(o.attn_kinds, a.attn_kinds & b.attn_kinds);
        /* the wrapper's (a's) caller-owned linear state is its own: kept whatever the inner claims */
        assert_int_equal(o.features, (a.features & b.features) | (a.features & SGL_ATTN_FEAT_CALLER_STATE));
        assert_int_equal(plugin_caps_check(&o, why, sizeof why), 0);
        /* Every head-dim pair and page size: in o iff in both. */
        for (uint16_t qk = 64; qk <= 512; qk += 64)
            for (uint16_t v = 64; v <= 512; v += 64) {
                sgl_attn_head_dims d = {qk, v};
                assert_int_equal(pair_ok(&o, d), pair_ok(&a, d) && pair_ok(&b, d));
            }
        for (uint32_t p = 1; p <= 1024; p *= 2) assert_int_equal(page_ok(&o, p), page_ok(&a, p) && page_ok(&b, p));
    }
    print_message("intersections: %d ok, %d refused\n", ok, refused);
    assert_true(ok > 100 && refused > 100);
}

/* A stack captures verify graphs only where both layers' backends do: the
 * wrapper's own layers and the inner's full-attention layers are in one graph. */
static void test_stack_graph_verify(void **state) {
    (void)state;
    char why[256];
    for (int w = 0; w < 2; w++)
        for (int i = 0; i < 2; i++) {
            sgl_attn_caps own = valid_caps(), inner = valid_caps(), o;
            own.features |= SGL_ATTN_FEAT_GRAPH_CAPTURE | SGL_ATTN_FEAT_CALLER_STATE;
            inner.features |= SGL_ATTN_FEAT_GRAPH_CAPTURE;
            inner.features &= ~(uint32_t)SGL_ATTN_FEAT_CALLER_STATE;
            if (w) own.features |= SGL_ATTN_FEAT_GRAPH_VERIFY;
            else own.features &= ~(uint32_t)SGL_ATTN_FEAT_GRAPH_VERIFY;
            if (i) inner.features |= SGL_ATTN_FEAT_GRAPH_VERIFY;
            else inner.features &= ~(uint32_t)SGL_ATTN_FEAT_GRAPH_VERIFY;
            assert_int_equal(stack_caps_intersect(&own, &inner, &o, why, sizeof why), SGL_ATTN_OK);
            assert_int_equal(!!(o.features & SGL_ATTN_FEAT_GRAPH_VERIFY), w && i);
            assert_true(o.features & SGL_ATTN_FEAT_GRAPH_CAPTURE);
            assert_true(o.features & SGL_ATTN_FEAT_CALLER_STATE); /* the wrapper's own, kept */
        }
}

static void test_arch_range(void **state) {
    (void)state;
    sgl_attn_caps own = valid_caps(), inner = valid_caps(), o;
    char why[256];
    own.arch_min_major = 8;
    own.arch_min_minor = 0;
    own.arch_max_major = 8;
    own.arch_max_minor = 9;
    inner.arch_min_major = inner.arch_max_major = -1;
    inner.arch_major = 9;
    inner.arch_minor = 0;
    assert_int_equal(stack_caps_intersect(&own, &inner, &o, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
    th_contains(why, "the device's arch 9.0 is outside the range 8.0..8.9");
    inner.arch_major = 8;
    inner.arch_minor = 6;
    assert_int_equal(stack_caps_intersect(&own, &inner, &o, why, sizeof why), SGL_ATTN_OK);
    assert_int_equal(o.arch_min_major, 8);
    assert_int_equal(o.arch_max_minor, 9);
    inner.available = 0;
    snprintf(inner.reason, sizeof inner.reason, "no driver");
    assert_int_equal(stack_caps_intersect(&own, &inner, &o, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
    th_contains(why, "the inner is not available: no driver");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_caps_check),      cmocka_unit_test(test_descriptor_check),
        cmocka_unit_test(test_negotiate),       cmocka_unit_test(test_elf_diagnosis),
        cmocka_unit_test(test_negotiate_versions),
        cmocka_unit_test(test_intersection_random), cmocka_unit_test(test_stack_graph_verify),
        cmocka_unit_test(test_arch_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
