/* emu_simt.cpp - a CPU emulator of CUDA blocks for the linear kernels'
 * tests: every thread of a block is a fiber with its own stack, switched by
 * a few lines of x86-64 assembly; blocks run one after another.
 *
 * Synchronisation follows CUDA: __syncthreads waits for every thread of the
 * block that has not exited; a warp collective (shuffle, __syncwarp,
 * ldmatrix, mma) waits for all 32 lanes, and it is an error (reported with
 * the kernel's block and thread, then abort) when lanes of one warp meet at
 * different collectives, when a lane has exited, or when no fiber can make
 * progress (a divergent barrier).  Shared memory is poisoned (NaN) before
 * every block so reads of unwritten values show.
 *
 * Hopper (emu_sm90.h): mbarriers (arrivals and transaction bytes per phase,
 * parity waits that block the fiber: a phase that never completes ends in
 * the no-progress abort), the TMA tiled load and the bulk copy (data landed
 * when a thread observes its barrier's completed phase), and wgmma as a
 * rendezvous of the warpgroup's 128 threads whose accumulators land at the
 * wait_group that retires their group. */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "emu_prelude.h"
#include "emu_sm90.h"
#include "emu_pdl.h"

/* AddressSanitizer must know when the stack changes (emu runs under SAN=asan). */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define EMU_ASAN 1
#endif

emu_dim3 threadIdx, blockIdx, blockDim, gridDim;

extern "C" void emu_ctx_switch(void **save_sp, void *to_sp);
asm(R"(
    .text
    .globl emu_ctx_switch
    .type emu_ctx_switch, @function
emu_ctx_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size emu_ctx_switch, .-emu_ctx_switch
)");

namespace {

enum { RUN = 0, WAIT = 1, DONE = 2 };
enum { OP_NONE = 0, OP_SYNCWARP, OP_SHFL, OP_LDSM, OP_MMA, OP_VOTE, OP_MMA_TF32 };
constexpr size_t STACK = 192 * 1024;

struct Copy {
    void *dst;
    unsigned group; /* the commit group it belongs to (the open one until committed) */
    unsigned n;     /* bytes: 4, 8 or 16 */
    unsigned char data[16];
};

struct Fiber {
    void *sp;
    char *stack;
    unsigned tid;
    int state;
    std::vector<Copy> pending; /* cp.async not yet waited for */
    unsigned committed;        /* cp.async groups committed so far */
    int nbar_id;               /* the named barrier it waits at (-1: none) */
    unsigned nbar_phase;       /* ... and that barrier's phase when it arrived */
    bool on_mbar;              /* waits on the mbarrier at mbar_addr */
    uint32_t mbar_addr;
    bool on_wg;                /* waits at a warpgroup rendezvous (wgmma) */
    struct WgAcc {             /* wgmma accumulators not yet retired by a wait_group */
        unsigned group;
        float *d;
        int n;
        float v[128];
    };
    std::vector<WgAcc> wg_acc;
    unsigned wg_committed; /* wgmma commit groups so far */
};

struct Warp {
    int arrived = 0, op = OP_NONE;
    unsigned char in[32][64];
    unsigned char out[32][64];
};

std::vector<Fiber> fibers;
std::vector<Warp> warps;
Fiber *cur;
void *sched_sp;
std::function<void()> *body;
int live, bar_arrived, bar_or_acc, bar_or_result;
/* named barriers (bar.sync / bar.arrive id, n): arrivals of the open phase, its count, its phase */
struct NamedBar {
    int arrived, n;
    unsigned phase;
} nbar[16];
std::vector<unsigned char> dyn;

[[noreturn]] void die(const char *what) {
    fprintf(stderr, "EMU: %s (block %u,%u,%u thread %u of %u)\n", what, blockIdx.x, blockIdx.y, blockIdx.z,
            cur ? cur->tid : 0u, blockDim.x * blockDim.y * blockDim.z);
    abort();
}

#ifdef EMU_ASAN
const void *main_bottom;
size_t main_size;
#endif

/* scheduler -> fiber f */
void enter(Fiber &f) {
#ifdef EMU_ASAN
    void *fake = nullptr;
    __sanitizer_start_switch_fiber(&fake, f.stack, STACK);
    emu_ctx_switch(&sched_sp, f.sp);
    __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#else
    emu_ctx_switch(&sched_sp, f.sp);
#endif
}

/* fiber -> scheduler; finished: the fiber never resumes */
void leave(bool finished) {
#ifdef EMU_ASAN
    void *fake = nullptr;
    __sanitizer_start_switch_fiber(finished ? nullptr : &fake, main_bottom, main_size);
    emu_ctx_switch(&cur->sp, sched_sp);
    __sanitizer_finish_switch_fiber(fake, &main_bottom, &main_size);
#else
    (void)finished;
    emu_ctx_switch(&cur->sp, sched_sp);
#endif
}

void set_thread(const Fiber *f) {
    threadIdx.x = f->tid % blockDim.x;
    threadIdx.y = f->tid / blockDim.x % blockDim.y;
    threadIdx.z = f->tid / (blockDim.x * blockDim.y);
}

void wait_here() {
    cur->state = WAIT;
    leave(false);
    set_thread(cur);
}

void release_block() {
    for (auto &f : fibers)
        if (f.state == WAIT && f.nbar_id < 0 && !f.on_mbar && !f.on_wg) f.state = RUN;
    bar_arrived = 0;
    bar_or_result = bar_or_acc;
    bar_or_acc = 0;
}

void trampoline() {
#ifdef EMU_ASAN
    __sanitizer_finish_switch_fiber(nullptr, &main_bottom, &main_size);
#endif
    (*body)();
    if (!cur->pending.empty()) die("a thread exited with cp.async copies it never waited for");
    if (!cur->wg_acc.empty()) die("a thread exited with wgmma results it never waited for (wgmma.wait_group)");
    cur->state = DONE;
    live--;
    Warp &w = warps[cur->tid / 32];
    if (w.arrived) die("a lane exited while its warp waits at a collective");
    if (bar_arrived && bar_arrived == live) release_block();
    leave(true);
    die("a finished fiber was resumed");
}

/* The calling lane's part of a warp collective: its input in, its result
 * out (both up to 64 bytes); `compute` fills every lane's out from all ins,
 * called by the last lane to arrive. */
void warp_collective(int op, const void *in, size_t in_n, void *out, size_t out_n,
                     void (*compute)(Warp &, int)) {
    const unsigned lane = cur->tid % 32;
    Warp &w = warps[cur->tid / 32];
    const unsigned nthreads = blockDim.x * blockDim.y * blockDim.z;
    const unsigned base = cur->tid / 32 * 32;
    const unsigned lanes = nthreads - base < 32 ? nthreads - base : 32;
    if (lanes != 32) die("a warp collective in a partial warp");
    if (w.arrived && w.op != op) die("lanes of one warp met at different collectives");
    w.op = op;
    if (in_n) std::memcpy(w.in[lane], in, in_n);
    if (++w.arrived == 32) {
        compute(w, op);
        w.arrived = 0;
        w.op = OP_NONE;
        for (unsigned l = 0; l < 32; l++)
            if (fibers[base + l].state == WAIT && !fibers[base + l].on_mbar && !fibers[base + l].on_wg)
                fibers[base + l].state = RUN;
    } else {
        for (unsigned l = 0; l < 32; l++)
            if (fibers[base + l].state == DONE) die("a warp collective with an exited lane");
        wait_here();
    }
    if (out_n) std::memcpy(out, w.out[lane], out_n);
}

float bf16f(uint16_t h) { return __uint_as_float((uint32_t)h << 16); }
float f16f(uint16_t h) {
    uint32_t s = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, u;
    if (e == 0) {
        if (!m) return __uint_as_float(s);
        int k = -1;
        do { k++; m <<= 1; } while (!(m & 0x400u));
        u = s | ((uint32_t)(127 - 15 - k) << 23) | ((m & 0x3ffu) << 13);
    } else if (e == 31) {
        u = s | 0x7f800000u | (m << 13);
    } else {
        u = s | ((e + 127 - 15) << 23) | (m << 13);
    }
    return __uint_as_float(u);
}

} // namespace

/* ------------------------------------------------------------ barriers */

void __syncthreads(void) { (void)__syncthreads_or(0); }

int __syncthreads_or(int v) {
    if (warps[cur->tid / 32].arrived) die("__syncthreads while lanes of its warp wait at a warp collective");
    bar_or_acc |= v != 0;
    if (++bar_arrived == live) release_block();
    else wait_here();
    return bar_or_result;
}

void lk_emu_bar(int id, int n, int wait) {
    if (id < 1 || id > 15 || n <= 0 || n % 32) die("a named barrier with a bad id or thread count");
    /* bar.arrive does not block: lanes of its warp that ran on to the warp's
     * next collective (fibers are not in lockstep) may wait there already */
    if (wait && warps[cur->tid / 32].arrived) die("a named barrier while lanes of its warp wait at a warp collective");
    NamedBar &b = nbar[id];
    if (b.arrived && b.n != n) die("a named barrier's arrivals disagree on its thread count");
    b.n = n;
    if (++b.arrived == n) { /* the phase completes: its waiters run on */
        b.arrived = 0;
        b.phase++;
        for (auto &f : fibers)
            if (f.state == WAIT && f.nbar_id == id) {
                f.state = RUN;
                f.nbar_id = -1;
            }
        return;
    }
    if (!wait) return;
    cur->nbar_id = id;
    cur->nbar_phase = b.phase;
    wait_here();
    if (cur->nbar_id >= 0 || nbar[id].phase == cur->nbar_phase) die("a named barrier waiter resumed early");
}

void __syncwarp(unsigned mask) {
    if (mask != 0xffffffffu) die("__syncwarp with a partial mask");
    warp_collective(OP_SYNCWARP, nullptr, 0, nullptr, 0, [](Warp &, int) {});
}

/* ----------------------------------------------------------- shuffles */

float __shfl_xor_sync(unsigned mask, float v, int lane_mask, int width) {
    if (mask != 0xffffffffu || width != 32) die("shuffle with a partial mask or width");
    float r;
    struct A { float v; int m; } a = {v, lane_mask};
    warp_collective(OP_SHFL, &a, sizeof a, &r, sizeof r, [](Warp &w, int) {
        for (int l = 0; l < 32; l++) {
            A x;
            std::memcpy(&x, w.in[l], sizeof x);
            std::memcpy(w.out[l], w.in[l ^ (x.m & 31)], sizeof(float));
        }
    });
    return r;
}

int __shfl_sync(unsigned mask, int v, int src, int width) {
    if (mask != 0xffffffffu || width != 32) die("shuffle with a partial mask or width");
    int r;
    int a[2] = {v, src};
    warp_collective(OP_SHFL, a, sizeof a, &r, sizeof r, [](Warp &w, int) {
        for (int l = 0; l < 32; l++) {
            int x[2];
            std::memcpy(x, w.in[l], sizeof x);
            std::memcpy(w.out[l], w.in[x[1] & 31], sizeof(int));
        }
    });
    return r;
}

float __shfl_sync(unsigned mask, float v, int src, int width) {
    int r = __shfl_sync(mask, (int)__float_as_uint(v), src, width);
    return __uint_as_float((uint32_t)r);
}

long __shfl_up_sync(unsigned mask, long v, unsigned delta, int width) {
    if (mask != 0xffffffffu || width != 32) die("shuffle with a partial mask or width");
    long r;
    struct A { long v; unsigned d; } a = {v, delta};
    warp_collective(OP_SHFL, &a, sizeof a, &r, sizeof r, [](Warp &w, int) {
        for (int l = 0; l < 32; l++) {
            A x;
            std::memcpy(&x, w.in[l], sizeof x);
            const int src = l - (int)x.d < 0 ? l : l - (int)x.d; /* below lane 0: own value */
            std::memcpy(w.out[l], w.in[src], sizeof(long));
        }
    });
    return r;
}

unsigned __ballot_sync(unsigned mask, int pred) {
    if (mask != 0xffffffffu) die("__ballot_sync with a partial mask");
    unsigned r;
    const int p = pred != 0;
    warp_collective(OP_VOTE, &p, sizeof p, &r, sizeof r, [](Warp &w, int) {
        unsigned b = 0;
        for (int l = 0; l < 32; l++) {
            int x;
            std::memcpy(&x, w.in[l], sizeof x);
            b |= (unsigned)x << l;
        }
        for (int l = 0; l < 32; l++) std::memcpy(w.out[l], &b, sizeof b);
    });
    return r;
}

int atomicCAS(int *address, int compare, int val) {
    const int old = *address;
    if (old == compare) *address = val;
    return old;
}

float __ldcg(const float *p) { return *p; }

/* lg2.approx (cuda_runtime.h declares it): log2f, within the hardware's error */
extern "C" float __log2f(float x) __THROW { return log2f(x); }

/* ------------------------------------------------------------ cp.async */

static void cp_async(void *dst, const void *src, int n, bool dyn_only) {
    const unsigned char *lo = dyn.data(), *hi = dyn.data() + dyn.size();
    if (n != 4 && n != 8 && n != 16) die("cp.async of other than 4, 8 or 16 bytes");
    if (dyn_only && ((const unsigned char *)dst < lo || (const unsigned char *)dst + n > hi))
        die("cp.async outside shared memory");
    if ((uintptr_t)dst % n || (src && (uintptr_t)src % n)) die("cp.async address not aligned to its size");
    Copy c;
    c.dst = dst;
    c.group = cur->committed;
    c.n = (unsigned)n;
    if (src) std::memcpy(c.data, src, n); /* the source is read now, as the issue does */
    else std::memset(c.data, 0, n);
    cur->pending.push_back(c);
}

void lk_emu_cp_async_n(void *dst, const void *src, int n) { cp_async(dst, src, n, true); }

void lk_emu_cp_async16_any(void *dst, const void *src, bool pred) { cp_async(dst, pred ? src : nullptr, 16, false); }

void lk_emu_cp_async16(void *dst, const void *src, bool pred) { lk_emu_cp_async_n(dst, pred ? src : nullptr, 16); }

void lk_emu_cp_async_wait(void) {
    for (const Copy &c : cur->pending) std::memcpy(c.dst, c.data, c.n);
    cur->pending.clear();
}

void lk_emu_cp_async_commit(void) { cur->committed++; }

void lk_emu_cp_async_wait_n(int n) {
    if (n < 0) die("cp.async.wait_group with a negative count");
    const unsigned keep_from = cur->committed > (unsigned)n ? cur->committed - (unsigned)n : 0u;
    std::vector<Copy> rest;
    for (const Copy &c : cur->pending) {
        if (c.group < keep_from) std::memcpy(c.dst, c.data, c.n);
        else rest.push_back(c);
    }
    cur->pending.swap(rest);
}

void lk_emu_aligned(const void *p, size_t n) {
    if ((uintptr_t)p % n) die("a vector access is not aligned to its size");
}

void __trap(void) { die("__trap (an instruction this device lacks, or a kernel's own trap)"); }

/* ------------------------------------------------------ tensor cores */

void lk_emu_ldsm(uint32_t r[4], const void *p, int trans) {
    if ((uintptr_t)p % 16) die("ldmatrix row address not 16-byte aligned");
    const unsigned char *lo = dyn.data(), *hi = dyn.data() + dyn.size();
    if ((const unsigned char *)p < lo || (const unsigned char *)p + 16 > hi) die("ldmatrix outside shared memory");
    struct A { const void *p; int t; } a = {p, trans};
    warp_collective(OP_LDSM, &a, sizeof a, r, 16, [](Warp &w, int) {
        A a0;
        std::memcpy(&a0, w.in[0], sizeof a0);
        for (int l = 0; l < 32; l++) {
            uint32_t out[4];
            for (int m = 0; m < 4; m++) { /* matrix m: rows at lanes 8m .. 8m+7 */
                uint16_t e[2];
                for (int k = 0; k < 2; k++) {
                    int row, col;
                    if (!a0.t) row = l / 4, col = 2 * (l % 4) + k;
                    else row = 2 * (l % 4) + k, col = l / 4;
                    A ar;
                    std::memcpy(&ar, w.in[8 * m + row], sizeof ar);
                    if (ar.t != a0.t) {
                        fprintf(stderr, "EMU: ldmatrix lanes disagree on .trans\n");
                        abort();
                    }
                    std::memcpy(&e[k], (const uint16_t *)ar.p + col, 2);
                }
                out[m] = (uint32_t)e[0] | ((uint32_t)e[1] << 16);
            }
            std::memcpy(w.out[l], out, 16);
        }
    });
}

/* each lane's d = C + A B at its four accumulator places (row g or g + 8, columns 2q, 2q + 1): the
 * m16n8k16 and m16n8k8 collectives' common output */
template <int K> static void mma_out(Warp &w, const float (&A)[16][K], const float (&B)[K][8], const float (&C)[16][8]) {
    for (int l = 0; l < 32; l++) {
        const int g = l / 4, q = l % 4;
        float d[4];
        for (int e = 0; e < 4; e++) {
            const int row = g + 8 * (e >> 1), col = 2 * q + (e & 1);
            float s = C[row][col];
            for (int k = 0; k < K; k++) s += A[row][k] * B[k][col];
            d[e] = s;
        }
        std::memcpy(w.out[l], d, 16);
    }
}

void lk_emu_mma(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1, int bf16) {
    struct In { uint32_t a[4], b[2]; float c[4]; int bf; } x;
    std::memcpy(x.a, a, 16);
    x.b[0] = b0, x.b[1] = b1;
    std::memcpy(x.c, c, 16);
    x.bf = bf16;
    warp_collective(OP_MMA, &x, sizeof x, c, 16, [](Warp &w, int) {
        float A[16][16], B[16][8], C[16][8];
        In l0;
        std::memcpy(&l0, w.in[0], sizeof l0);
        auto cv = [&](uint32_t v, int hi) {
            const uint16_t h = (uint16_t)(hi ? v >> 16 : v & 0xffffu);
            return l0.bf ? bf16f(h) : f16f(h);
        };
        for (int l = 0; l < 32; l++) {
            In t;
            std::memcpy(&t, w.in[l], sizeof t);
            if (t.bf != l0.bf) {
                fprintf(stderr, "EMU: mma lanes disagree on the operand type\n");
                abort();
            }
            const int g = l / 4, q = l % 4;
            for (int k = 0; k < 2; k++) {
                A[g][2 * q + k] = cv(t.a[0], k);
                A[g + 8][2 * q + k] = cv(t.a[1], k);
                A[g][8 + 2 * q + k] = cv(t.a[2], k);
                A[g + 8][8 + 2 * q + k] = cv(t.a[3], k);
                B[2 * q + k][g] = cv(t.b[0], k);
                B[8 + 2 * q + k][g] = cv(t.b[1], k);
                C[g][2 * q + k] = t.c[k];
                C[g + 8][2 * q + k] = t.c[2 + k];
            }
        }
        mma_out(w, A, B, C);
    });
}

/* cvt.rna.tf32.f32: the 19 high bits, rounded to nearest with ties away from zero (NaN and inf kept) */
uint32_t lk_emu_cvt_tf32(float f) {
    const uint32_t u = __float_as_uint(f);
    if ((u & 0x7f800000u) == 0x7f800000u) return (u & 0xffffe000u) | ((u & 0x7fffffu) ? 0x400000u : 0u);
    return (u + 0x1000u) & 0xffffe000u;
}

/* mma.sync m16n8k8 row.col f32.tf32.tf32.f32: the operands' low 13 bits are ignored, as on the device */
void lk_emu_mma_tf32(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
    struct In { uint32_t a[4], b[2]; float c[4]; } x;
    std::memcpy(x.a, a, 16);
    x.b[0] = b0, x.b[1] = b1;
    std::memcpy(x.c, c, 16);
    warp_collective(OP_MMA_TF32, &x, sizeof x, c, 16, [](Warp &w, int) {
        float A[16][8], B[8][8], C[16][8];
        auto cv = [](uint32_t v) { return __uint_as_float(v & 0xffffe000u); };
        for (int l = 0; l < 32; l++) {
            In t;
            std::memcpy(&t, w.in[l], sizeof t);
            const int g = l / 4, q = l % 4;
            A[g][q] = cv(t.a[0]);
            A[g + 8][q] = cv(t.a[1]);
            A[g][q + 4] = cv(t.a[2]);
            A[g + 8][q + 4] = cv(t.a[3]);
            B[q][g] = cv(t.b[0]);
            B[q + 4][g] = cv(t.b[1]);
            for (int k = 0; k < 2; k++) {
                C[g][2 * q + k] = t.c[k];
                C[g + 8][2 * q + k] = t.c[2 + k];
            }
        }
        mma_out(w, A, B, C);
    });
}

/* --------------------------------------------------------- fp8 e4m3 */

namespace {
/* the e4m3 byte's value (bits 6..0; 0x7f: NaN) */
double e4m3_value(unsigned b) {
    const unsigned e = (b >> 3) & 15u, m = b & 7u;
    return e ? std::ldexp(1.0 + m / 8.0, (int)e - 7) : std::ldexp((double)m, -9);
}
/* f16 bits of an e4m3 byte: every e4m3 value is an f16 normal or zero */
uint16_t e4m3_to_f16(unsigned b) {
    const uint16_t s = (uint16_t)((b & 0x80u) << 8);
    if ((b & 0x7fu) == 0x7fu) return (uint16_t)(s | 0x7fffu);
    const unsigned e = (b >> 3) & 15u, m = b & 7u;
    if (e) return (uint16_t)(s | ((e + 8u) << 10) | (m << 7));
    if (!m) return s;
    const unsigned p = m >= 4 ? 2u : m >= 2 ? 1u : 0u; /* 2^(p - 9) * (1 + rest / 2^p) */
    return (uint16_t)(s | ((p + 6u) << 10) | ((m - (1u << p)) << (10u - p)));
}
} // namespace

uint32_t lk_emu_cvt_f16x2_e4m3x2(uint32_t x) {
    return (uint32_t)e4m3_to_f16(x & 0xffu) | ((uint32_t)e4m3_to_f16((x >> 8) & 0xffu) << 16);
}

/* by search over the 127 finite magnitudes: independent of the kernels' own rounding code */
uint32_t lk_emu_cvt_e4m3_f32(float f) {
    const uint32_t s = (__float_as_uint(f) >> 24) & 0x80u;
    if (f != f) return s | 0x7fu;
    const double a = std::fabs((double)f);
    unsigned best = 0;
    for (unsigned b = 1; b < 0x7f; b++) {
        const double d = std::fabs(e4m3_value(b) - a), db = std::fabs(e4m3_value(best) - a);
        if (d < db || (d == db && !(b & 1u))) best = b;
    }
    return s | best;
}

/* ------------------------------------------------- Hopper (emu_sm90.h) */

namespace {
struct TmaChunk {
    uint32_t addr;
    unsigned char b[16];
};
struct Mbar {
    uint32_t addr;
    int expected, pending;   /* arrivals per phase, still missing in the open one */
    long long tx;            /* the open phase's transaction bytes: expected minus completed */
    unsigned phase;          /* phases completed */
    std::vector<TmaChunk> land; /* TMA data of the open phase, landed when it completes */
    std::vector<TmaChunk> held; /* ... of completed phases, landed when a thread observes one (try_wait) */
};
std::vector<Mbar> mbars;
struct WgIn {
    float c[128], out[128];
    uint32_t a[4];
    int has_a, n, scale_d, tnsp, bf16;
    uint64_t da, db;
};
struct WgMeet {
    int arrived = 0;
    WgIn *in[128];
};
std::vector<WgMeet> wgmeet;

unsigned char *smem_at(uint32_t a, size_t n, const char *what) {
    if (a < EMU_SMEM_WINDOW || (size_t)(a - EMU_SMEM_WINDOW) + n > dyn.size()) die(what);
    return dyn.data() + (a - EMU_SMEM_WINDOW);
}

Mbar &mbar_get(uint32_t a) {
    for (auto &b : mbars)
        if (b.addr == a) return b;
    die("an mbarrier operation at an address no mbarrier.init set up");
}

/* the open phase completes once every arrival and every byte are in */
void mbar_complete_if_due(Mbar &b) {
    if (b.pending || b.tx) return;
    /* the data lands when a thread first observes the completion (the
     * latest moment a reader ordered by it can rely on), so a reader that
     * no wait orders after the copy sees the poisoned bytes even where the
     * phase completed long before */
    b.held.insert(b.held.end(), b.land.begin(), b.land.end());
    b.land.clear();
    b.phase++;
    b.pending = b.expected;
    for (auto &f : fibers)
        if (f.state == WAIT && f.on_mbar && f.mbar_addr == b.addr) f.state = RUN;
}

/* the 128-byte swizzle of a shared-window address: bits [4:6] ^= bits [7:9] */
uint32_t sw128(uint32_t a) { return a ^ (((a >> 7) & 7u) << 4); }

void desc_check(uint64_t d) {
    if ((d >> 62) != 1) die("a wgmma descriptor whose swizzle mode is not 128B (the only one the emulator reads)");
    if ((d >> 49) & 7u) die("a wgmma descriptor with a nonzero base offset");
}
uint32_t desc_start(uint64_t d) { return (uint32_t)(d & 0x3FFFu) << 4; }
uint32_t desc_lbo(uint64_t d) { return (uint32_t)((d >> 16) & 0x3FFFu) << 4; }
uint32_t desc_sbo(uint64_t d) { return (uint32_t)((d >> 32) & 0x3FFFu) << 4; }
float half_at(uint32_t a, int bf) {
    uint16_t h;
    std::memcpy(&h, smem_at(a, 2, "a wgmma operand outside shared memory"), 2);
    return bf ? bf16f(h) : f16f(h);
}
/* element (row r, k) of a K-major sw128 operand: 8-row atoms SBO apart, rows 128 B apart */
float kmajor(uint64_t d, int r, int k, int bf) {
    return half_at(sw128(desc_start(d) + (uint32_t)(r >> 3) * desc_sbo(d) + (uint32_t)(r & 7) * 128u + 2u * k), bf);
}
/* element (k, n) of an MN-major sw128 B: 64-wide n blocks LBO apart, 8-k atoms SBO apart */
float mnmajor(uint64_t d, int k, int n, int bf) {
    return half_at(sw128(desc_start(d) + (uint32_t)(n >> 6) * desc_lbo(d) + (uint32_t)(k >> 3) * desc_sbo(d) +
                         (uint32_t)(k & 7) * 128u + 2u * (n & 63)),
                   bf);
}

void wgmma_compute(WgMeet &m) {
    const WgIn &i0 = *m.in[0];
    for (int t = 1; t < 128; t++) {
        const WgIn &x = *m.in[t];
        if (x.has_a != i0.has_a || x.n != i0.n || x.scale_d != i0.scale_d || x.tnsp != i0.tnsp || x.bf16 != i0.bf16 ||
            x.db != i0.db || (!x.has_a && x.da != i0.da))
            die("threads of a warpgroup disagree on a wgmma's shape, type, scale-d or descriptors");
    }
    const int N = i0.n, bf = i0.bf16;
    static float A[64][16], B[16][256];
    auto hv = [&](uint32_t v, int hi) {
        const uint16_t h = (uint16_t)(hi ? v >> 16 : v & 0xffffu);
        return bf ? bf16f(h) : f16f(h);
    };
    if (i0.has_a) { /* the m64k16 A fragment: a[i] = row 16w + g + 8 (i & 1), columns 8 (i >> 1) + 2q, +1 */
        for (int t = 0; t < 128; t++) {
            const int w = t / 32, g = t % 32 / 4, q = t % 4;
            for (int i = 0; i < 4; i++) {
                const int row = 16 * w + g + 8 * (i & 1), col = 8 * (i >> 1) + 2 * q;
                A[row][col] = hv(m.in[t]->a[i], 0);
                A[row][col + 1] = hv(m.in[t]->a[i], 1);
            }
        }
    } else {
        desc_check(i0.da);
        for (int r = 0; r < 64; r++)
            for (int k = 0; k < 16; k++) A[r][k] = kmajor(i0.da, r, k, bf);
    }
    desc_check(i0.db);
    for (int k = 0; k < 16; k++)
        for (int n = 0; n < N; n++) B[k][n] = i0.tnsp ? mnmajor(i0.db, k, n, bf) : kmajor(i0.db, n, k, bf);
    /* D: d[4j + v] = row 16w + g + 8 (v >> 1), column 8j + 2q + (v & 1) */
    for (int t = 0; t < 128; t++) {
        const int w = t / 32, g = t % 32 / 4, q = t % 4;
        WgIn &x = *m.in[t];
        for (int j = 0; j < N / 8; j++)
            for (int v = 0; v < 4; v++) {
                const int row = 16 * w + g + 8 * (v >> 1), col = 8 * j + 2 * q + (v & 1);
                float s = i0.scale_d ? x.c[4 * j + v] : 0.f;
                for (int k = 0; k < 16; k++) s += A[row][k] * B[k][col];
                x.out[4 * j + v] = s;
            }
    }
}
} // namespace

void sm90_block_start(unsigned nthreads) {
    mbars.clear();
    wgmeet.assign((nthreads + 127) / 128, WgMeet());
}

void sm90_block_end(void) {
    for (const Mbar &b : mbars)
        if (!b.land.empty() || b.tx)
            die("a block ended with an mbarrier phase still waiting for TMA bytes (expect_tx without its copy, or a "
                "copy never awaited)");
}

uint32_t lk_emu_smem_addr(const void *p) {
    const unsigned char *c = (const unsigned char *)p;
    if (c < dyn.data() || c > dyn.data() + dyn.size()) die("a shared-window address of a pointer outside dynamic shared memory");
    return EMU_SMEM_WINDOW + (uint32_t)(c - dyn.data());
}

void lk_emu_mbar_init(uint32_t a, uint32_t count) {
    if (a % 8) die("mbarrier.init at an address not 8-byte aligned");
    if (!count || count >= (1u << 20)) die("mbarrier.init with a count outside 1 .. 2^20 - 1");
    std::memset(smem_at(a, 8, "mbarrier.init outside shared memory"), 0, 8);
    for (auto &b : mbars)
        if (b.addr == a) {
            for (auto &f : fibers)
                if (f.state == WAIT && f.on_mbar && f.mbar_addr == a) die("mbarrier.init of a barrier a thread waits on");
            b = Mbar{a, (int)count, (int)count, 0, 0, {}, {}};
            return;
        }
    mbars.push_back(Mbar{a, (int)count, (int)count, 0, 0, {}, {}});
}

void lk_emu_mbar_arrive(uint32_t a) {
    Mbar &b = mbar_get(a);
    if (b.pending <= 0) die("an mbarrier arrive past the phase's expected count");
    b.pending--;
    mbar_complete_if_due(b);
}

void lk_emu_mbar_expect_tx(uint32_t a, uint32_t bytes) {
    Mbar &b = mbar_get(a);
    b.tx += bytes;
    mbar_complete_if_due(b);
}

bool lk_emu_mbar_test(uint32_t a, uint32_t parity) {
    Mbar &b = mbar_get(a);
    const bool done = (b.phase & 1u) != (parity & 1u);
    if (done) {
        for (const TmaChunk &c : b.held) std::memcpy(smem_at(c.addr, 16, "TMA data outside shared memory"), c.b, 16);
        b.held.clear();
    }
    return done;
}

void lk_emu_mbar_wait(uint32_t a, uint32_t parity) {
    while (!lk_emu_mbar_test(a, parity)) {
        cur->on_mbar = true;
        cur->mbar_addr = a;
        wait_here();
        cur->on_mbar = false;
    }
}

void lk_emu_tma_load(uint32_t dst, const void *tmap, const int32_t *co, int rank, uint32_t bar) {
    emu_tmap m;
    std::memcpy(&m, tmap, sizeof m);
    if (m.magic != EMU_TMAP_MAGIC) die("a TMA copy with a tensor map cuTensorMapEncodeTiled did not write");
    if ((int)m.rank != rank) die("a TMA copy whose rank is not its tensor map's");
    if (dst % 128) die("a TMA copy into shared memory not 128-byte aligned");
    const uint32_t row = m.box[0] * m.elem;
    if (m.swizzle && row != m.swizzle) die("a swizzled TMA box whose rows are not the swizzle span (not emulated)");
    uint32_t nrows = 1;
    for (int i = 1; i < rank; i++) nrows *= m.box[i];
    const uint32_t bytes = row * nrows;
    smem_at(dst, bytes, "a TMA copy past shared memory");
    Mbar &b = mbar_get(bar);
    const uint32_t mask = m.swizzle ? m.swizzle / 16 - 1 : 0;
    for (uint32_t r = 0; r < nrows; r++) {
        int64_t c[3] = {co[0], 0, 0};
        bool row_in = true;
        uint32_t rr = r;
        for (int i = 1; i < rank; i++) {
            c[i] = (int64_t)co[i] + rr % m.box[i];
            rr /= m.box[i];
            row_in = row_in && c[i] >= 0 && (uint64_t)c[i] < m.dims[i];
        }
        for (uint32_t ch = 0; ch < row / 16; ch++) {
            TmaChunk t;
            for (uint32_t e = 0; e < 16 / m.elem; e++) {
                const int64_t x = c[0] + (int64_t)(ch * 16 / m.elem + e);
                if (row_in && x >= 0 && (uint64_t)x < m.dims[0])
                    std::memcpy(t.b + e * m.elem,
                                (const unsigned char *)(uintptr_t)m.addr + x * m.elem + c[1] * (int64_t)m.strides[0] +
                                    c[2] * (int64_t)m.strides[1],
                                m.elem);
                else
                    std::memset(t.b + e * m.elem, m.oob_nan ? 0xff : 0, m.elem);
            }
            const uint32_t a = dst + r * row + ch * 16;
            t.addr = a ^ (((a >> 7) & mask) << 4);
            b.land.push_back(t);
        }
    }
    b.tx -= bytes;
    mbar_complete_if_due(b);
}


void lk_emu_bulk_g2s(uint32_t dst, const void *src, uint32_t bytes, uint32_t bar) {
    if (!bytes || bytes % 16) die("a bulk copy whose size is not a positive multiple of 16 bytes");
    if (dst % 16 || (uintptr_t)src % 16) die("a bulk copy address not 16-byte aligned");
    smem_at(dst, bytes, "a bulk copy past shared memory");
    Mbar &b = mbar_get(bar);
    for (uint32_t o = 0; o < bytes; o += 16) {
        TmaChunk t;
        t.addr = dst + o;
        std::memcpy(t.b, (const unsigned char *)src + o, 16);
        b.land.push_back(t);
    }
    b.tx -= bytes;
    mbar_complete_if_due(b);
}

void lk_emu_wgmma(float *d, int n, const uint32_t *a, uint64_t da, uint64_t db, int scale_d, int tnsp_b, int bf16) {
    if (n < 8 || n > 256 || n % 8) die("a wgmma of other than m64nNk16 with N = 8 .. 256 by 8");
    const unsigned nthreads = blockDim.x * blockDim.y * blockDim.z, base = cur->tid / 128 * 128;
    if (nthreads - base < 128) die("a wgmma in a partial warpgroup");
    if (warps[cur->tid / 32].arrived) die("a wgmma while lanes of its warp wait at a warp collective");
    WgIn in;
    in.has_a = a != nullptr;
    if (a) std::memcpy(in.a, a, 16);
    in.n = n, in.scale_d = scale_d != 0, in.tnsp = tnsp_b != 0, in.bf16 = bf16 != 0, in.da = da, in.db = db;
    /* the accumulators' value: the newest held result of an earlier wgmma on them, else the registers */
    Fiber::WgAcc *held = nullptr;
    for (auto it = cur->wg_acc.rbegin(); it != cur->wg_acc.rend(); ++it)
        if (it->d == d) {
            if (it->n != n / 2) die("wgmmas of different shapes on the same accumulators in flight");
            held = &*it;
            break;
        }
    std::memcpy(in.c, held ? held->v : d, sizeof(float) * (n / 2));
    WgMeet &m = wgmeet[cur->tid / 128];
    m.in[cur->tid % 128] = &in;
    if (++m.arrived == 128) {
        wgmma_compute(m);
        m.arrived = 0;
        for (unsigned l = 0; l < 128; l++) {
            Fiber &f = fibers[base + l];
            if (f.state == WAIT && f.on_wg) {
                f.state = RUN;
                f.on_wg = false;
            }
        }
    } else {
        for (unsigned l = 0; l < 128; l++)
            if (fibers[base + l].state == DONE) die("a wgmma with an exited thread in its warpgroup");
        cur->on_wg = true;
        wait_here();
        if (cur->on_wg) die("a wgmma waiter resumed early");
    }
    if (held && held->group == cur->wg_committed) {
        std::memcpy(held->v, in.out, sizeof(float) * (n / 2));
    } else {
        Fiber::WgAcc acc;
        acc.group = cur->wg_committed;
        acc.d = d;
        acc.n = n / 2;
        std::memcpy(acc.v, in.out, sizeof(float) * (n / 2));
        cur->wg_acc.push_back(acc);
    }
}

void lk_emu_wgmma_commit(void) { cur->wg_committed++; }

void lk_emu_wgmma_wait(int n) {
    if (n < 0) die("wgmma.wait_group with a negative count");
    std::vector<Fiber::WgAcc> rest;
    for (const auto &e : cur->wg_acc) {
        if (e.group + (unsigned)n < cur->wg_committed) std::memcpy(e.d, e.v, sizeof(float) * e.n);
        else rest.push_back(e);
    }
    cur->wg_acc.swap(rest);
}

/* -------------------------------------------------------------- launch */

void *lk_emu_dyn_smem(void) { return dyn.data(); }

static void free_stacks() {
    for (auto &f : fibers) free(f.stack);
    fibers.clear();
}

static void run_block(unsigned nthreads) {
    if (fibers.empty()) atexit(free_stacks);
    if (fibers.size() < nthreads) {
        const size_t old = fibers.size();
        fibers.resize(nthreads);
        for (size_t i = old; i < nthreads; i++) {
            fibers[i].stack = (char *)aligned_alloc(64, STACK);
            if (!fibers[i].stack) die("out of memory for fiber stacks");
        }
    }
    warps.assign((nthreads + 31) / 32, Warp());
    for (unsigned i = 0; i < nthreads; i++) {
        Fiber &f = fibers[i];
        f.tid = i;
        f.state = RUN;
        f.pending.clear();
        f.committed = 0;
        f.nbar_id = -1;
        f.on_mbar = f.on_wg = false;
        f.wg_acc.clear();
        f.wg_committed = 0;
#ifdef EMU_ASAN
        __asan_unpoison_memory_region(f.stack, STACK); /* redzones of the last block's frames */
#endif
        uintptr_t top = ((uintptr_t)f.stack + STACK) & ~(uintptr_t)15;
        void **sp = (void **)top;
        *--sp = nullptr;                   /* the trampoline's return address: never used */
        *--sp = (void *)&trampoline;
        for (int k = 0; k < 6; k++) *--sp = nullptr; /* rbp rbx r12 r13 r14 r15 */
        f.sp = sp;
    }
    live = (int)nthreads;
    sm90_block_start(nthreads);
    bar_arrived = bar_or_acc = bar_or_result = 0;
    std::memset(nbar, 0, sizeof nbar);
    for (;;) {
        bool progress = false, all_done = true;
        for (unsigned i = 0; i < nthreads; i++) {
            Fiber &f = fibers[i];
            if (f.state == DONE) continue;
            all_done = false;
            if (f.state != RUN) continue;
            cur = &f;
            set_thread(&f);
            enter(f);
            progress = true;
        }
        if (all_done) break;
        if (!progress) {
            for (unsigned i = 0; i < nthreads; i++)
                if (fibers[i].state == WAIT && fibers[i].on_mbar) {
                    cur = &fibers[i];
                    die("no thread can make progress: an mbarrier wait whose phase never completes");
                }
            die("no thread can make progress (a barrier not every thread reaches)");
        }
    }
    sm90_block_end();
    for (const NamedBar &b : nbar)
        if (b.arrived) die("a block ended with a named barrier's phase open (unmatched bar.arrive)");
    cur = nullptr;
}

namespace {
struct Capture {
    cudaStream_t stream = nullptr;
    std::vector<std::function<void()>> *list = nullptr;
} capture;
} // namespace

/* stream capture (emu_cudart.cpp) */
void emu_capture_begin(cudaStream_t st, std::vector<std::function<void()>> *list) {
    capture.stream = st;
    capture.list = list;
}
void emu_capture_end(void) {
    capture.stream = nullptr;
    capture.list = nullptr;
}
int emu_capturing(cudaStream_t st) { return capture.list && capture.stream == st; }

void lk_emu_trace(const char *name, dim3 grid, dim3 block, size_t smem) {
    static const char *t = getenv("EMU_TRACE");
    if (t && *t && strcmp(t, "0"))
        fprintf(stderr, "EMU launch %s grid %u,%u,%u block %u smem %zu\n", name, grid.x, grid.y, grid.z,
                block.x * block.y * block.z, smem);
}

void lk_emu_launch_fn(dim3 grid, dim3 block, size_t smem, cudaStream_t st, std::function<void()> fn) {
    if (emu_capturing(st)) {
        capture.list->push_back([=] { lk_emu_launch_fn(grid, block, smem, nullptr, fn); });
        return;
    }
    const unsigned nthreads = block.x * block.y * block.z;
    if (!nthreads || nthreads > 1024) {
        fprintf(stderr, "EMU: launch with %u threads per block\n", nthreads);
        abort();
    }
    if (smem > 232448) {
        fprintf(stderr, "EMU: launch with %zu bytes of dynamic shared memory (> 227 KiB)\n", smem);
        abort();
    }
    if (grid.y > 65535 || grid.z > 65535) {
        fprintf(stderr, "EMU: grid %u x %u x %u past the limits\n", grid.x, grid.y, grid.z);
        abort();
    }
    blockDim = {block.x, block.y, block.z};
    gridDim = {grid.x, grid.y, grid.z};
    body = &fn;
    /* EMU_ORDER=rev / shuf: the blocks in reverse / a shuffled order (a kernel
     * may not depend on the order its blocks run in) */
    const char *ord = getenv("EMU_ORDER");
    const int mode = ord && !strcmp(ord, "rev") ? 1 : ord && !strcmp(ord, "shuf") ? 2 : 0;
    const size_t nb = (size_t)grid.x * grid.y * grid.z;
    std::vector<size_t> order(nb);
    for (size_t b = 0; b < nb; b++) order[b] = mode == 1 ? nb - 1 - b : b;
    if (mode == 2) {
        static uint64_t st = 0x9e3779b97f4a7c15ull;
        for (size_t b = nb; b > 1; b--) {
            st = st * 6364136223846793005ull + 1442695040888963407ull;
            const size_t k = (size_t)((st >> 33) % b);
            const size_t t = order[b - 1];
            order[b - 1] = order[k];
            order[k] = t;
        }
    }
    for (size_t b = 0; b < nb; b++) {
        const size_t o = order[b];
        blockIdx = {(unsigned)(o % grid.x), (unsigned)(o / grid.x % grid.y), (unsigned)(o / ((size_t)grid.x * grid.y))};
        dyn.assign(smem ? smem : 16, 0xff); /* NaN in every float type */
        run_block(nthreads);
    }
    body = nullptr;
}

/* ------------------------------------------------ L2 prefetch */
extern "C" {
long long lk_emu_l2_prefetch_bytes = 0;
}
void lk_emu_l2_prefetch(const void *p, size_t n) {
    /* cp.async.bulk.prefetch.L2's rules: a 16-byte aligned address, a size a multiple of 16 (and a sane one) */
    if (((uintptr_t)p & 15) || (n & 15) || n > ((size_t)1 << 30)) {
        fprintf(stderr, "EMU: L2 prefetch of %zu bytes at %p: expected a 16-byte aligned address and a multiple of 16 "
                        "bytes (at most 1 GiB)\n", n, p);
        abort();
    }
    if (!n) return;
    const volatile unsigned char *b = (const volatile unsigned char *)p;
    (void)b[0];
    (void)b[n - 1];
    lk_emu_l2_prefetch_bytes += (long long)n;
}

/* ------------------------------------------------ programmatic dependent launch (emu_pdl.h) */
namespace {
int pdl_grid, pdl_waits;
} // namespace

void lk_emu_pdl_wait(void) {
    if (pdl_grid) pdl_waits++;
}
void lk_emu_pdl_trigger(void) {}

void lk_emu_launch_pdl_fn(int pdl, dim3 grid, dim3 block, size_t smem, cudaStream_t st, std::function<void()> fn) {
    if (!pdl) {
        lk_emu_launch_fn(grid, block, smem, st, fn);
        return;
    }
    if (emu_capturing(st)) { /* a programmatic edge in the graph: the same check at every replay */
        capture.list->push_back([=] { lk_emu_launch_pdl_fn(pdl, grid, block, smem, nullptr, fn); });
        return;
    }
    pdl_grid = 1;
    pdl_waits = 0;
    lk_emu_launch_fn(grid, block, smem, st, fn);
    pdl_grid = 0;
    if (!pdl_waits) {
        fprintf(stderr, "EMU: a programmatic dependent launch (grid %u,%u,%u) none of whose threads ran "
                        "griddepcontrol.wait: on the device it reads the grid before's output unordered\n",
                grid.x, grid.y, grid.z);
        abort();
    }
}
