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
 * every block so reads of unwritten values show. */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "emu_prelude.h"

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
enum { OP_NONE = 0, OP_SYNCWARP, OP_SHFL, OP_LDSM, OP_MMA, OP_VOTE };
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
        if (f.state == WAIT && f.nbar_id < 0) f.state = RUN;
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
            if (fibers[base + l].state == WAIT) fibers[base + l].state = RUN;
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
    if (warps[cur->tid / 32].arrived) die("a named barrier while lanes of its warp wait at a warp collective");
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
        for (int l = 0; l < 32; l++) {
            const int g = l / 4, q = l % 4;
            float d[4];
            for (int e = 0; e < 4; e++) {
                const int row = g + 8 * (e >> 1), col = 2 * q + (e & 1);
                float s = C[row][col];
                for (int k = 0; k < 16; k++) s += A[row][k] * B[k][col];
                d[e] = s;
            }
            std::memcpy(w.out[l], d, 16);
        }
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
        if (!progress) die("no thread can make progress (a barrier not every thread reaches)");
    }
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
