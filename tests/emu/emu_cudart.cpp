/* emu_cudart.cpp - the part of the CUDA runtime the linear plugins, cuda_attn
 * and their tests call, over host memory, for the CPU emulator.  One device
 * ("EMU": SM 9.0 with the H200's limits, or built with -DEMU_SM=80, SM 8.0 with
 * the A100's, so that cuda_attn takes its SM 8.x paths); every call runs at once in call order, which is
 * a legal schedule of the streams the plugins use.  Allocations are poisoned
 * (NaN bytes) so a read of memory nobody wrote shows.  Graph capture records
 * the launches on the capturing stream; a graph launch replays them. */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "emu_prelude.h"
#include "emu_sm90.h"

#ifndef EMU_SM
#define EMU_SM 90
#endif
#if EMU_SM == 90
#define EMU_SMS 132
#define EMU_SMEM_OPTIN 232448
#define EMU_SMEM_SM 233472
#define EMU_L2 (60 << 20)
#elif EMU_SM == 80
#define EMU_SMS 108
#define EMU_SMEM_OPTIN 166912
#define EMU_SMEM_SM 167936
#define EMU_L2 (40 << 20)
#else
#error "EMU_SM: 80 or 90"
#endif

void emu_capture_begin(cudaStream_t st, std::vector<std::function<void()>> *list);
void emu_capture_end(void);
int emu_capturing(cudaStream_t st);

namespace {
std::vector<std::function<void()>> *capturing;
cudaStream_t capture_stream;

[[noreturn]] void die(const char *what) {
    fprintf(stderr, "EMU runtime: %s\n", what);
    abort();
}
void no_capture(cudaStream_t st, const char *what) {
    if (capturing && (st == capture_stream || st == nullptr)) {
        fprintf(stderr, "EMU runtime: %s during stream capture\n", what);
        abort();
    }
}
} // namespace

extern "C" {

cudaError_t cudaMalloc(void **p, size_t n) {
    no_capture(nullptr, "cudaMalloc");
    /* the exact size, so that AddressSanitizer (SAN=asan) sees any overrun */
    if (posix_memalign(p, 256, n ? n : 1)) return cudaErrorMemoryAllocation;
    std::memset(*p, 0xff, n);
    return cudaSuccess;
}
cudaError_t cudaFree(void *p) {
    free(p);
    return cudaSuccess;
}
/* Mapped pinned host memory: host memory the emulated kernels read as is. */
cudaError_t cudaHostAlloc(void **p, size_t n, unsigned int flags) {
    (void)flags;
    no_capture(nullptr, "cudaHostAlloc");
    *p = calloc(1, n ? n : 1);
    return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaHostGetDevicePointer(void **d, void *h, unsigned int flags) {
    (void)flags;
    *d = h;
    return cudaSuccess;
}
cudaError_t cudaFreeHost(void *p) {
    free(p);
    return cudaSuccess;
}
cudaError_t cudaMemset(void *p, int v, size_t n) {
    no_capture(nullptr, "cudaMemset");
    std::memset(p, v, n);
    return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t st) {
    no_capture(st, "cudaMemsetAsync");
    std::memset(p, v, n);
    return cudaSuccess;
}
cudaError_t cudaMemset2DAsync(void *p, size_t pitch, int v, size_t w, size_t h, cudaStream_t st) {
    no_capture(st, "cudaMemset2DAsync");
    if (w > pitch && h > 1) return cudaErrorInvalidValue;
    for (size_t r = 0; r < h; r++) std::memset((char *)p + r * pitch, v, w);
    return cudaSuccess;
}
cudaError_t cudaMemcpy(void *d, const void *s, size_t n, enum cudaMemcpyKind k) {
    (void)k;
    no_capture(nullptr, "cudaMemcpy");
    std::memmove(d, s, n);
    return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, enum cudaMemcpyKind k, cudaStream_t st) {
    (void)k;
    no_capture(st, "cudaMemcpyAsync");
    std::memmove(d, s, n);
    return cudaSuccess;
}
cudaError_t cudaMemcpy2DAsync(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h,
                              enum cudaMemcpyKind k, cudaStream_t st) {
    (void)k;
    no_capture(st, "cudaMemcpy2DAsync");
    if ((w > dp || w > sp) && h > 1) return cudaErrorInvalidValue;
    for (size_t r = 0; r < h; r++) std::memmove((char *)d + r * dp, (const char *)s + r * sp, w);
    return cudaSuccess;
}
cudaError_t cudaSetDevice(int d) { return d == 0 ? cudaSuccess : cudaErrorInvalidDevice; }
cudaError_t cudaGetDevice(int *d) {
    *d = 0;
    return cudaSuccess;
}
cudaError_t cudaGetDeviceCount(int *n) {
    *n = 1;
    return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int d) {
    if (d != 0) return cudaErrorInvalidDevice;
    std::memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "EMU (CUDA emulated on the CPU)");
    p->major = EMU_SM / 10;
    p->minor = EMU_SM % 10;
    p->multiProcessorCount = EMU_SMS;
    p->totalGlobalMem = (size_t)16 << 30;
    p->sharedMemPerBlock = 49152;
    p->sharedMemPerBlockOptin = EMU_SMEM_OPTIN;
    p->sharedMemPerMultiprocessor = EMU_SMEM_SM;
    p->l2CacheSize = EMU_L2;
    p->maxThreadsPerMultiProcessor = 2048;
    p->maxThreadsPerBlock = 1024;
    p->warpSize = 32;
    return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int *v, enum cudaDeviceAttr a, int d) {
    struct cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, d) != cudaSuccess) return cudaErrorInvalidDevice;
    switch (a) {
    case cudaDevAttrComputeCapabilityMajor: *v = p.major; break;
    case cudaDevAttrComputeCapabilityMinor: *v = p.minor; break;
    case cudaDevAttrMultiProcessorCount: *v = p.multiProcessorCount; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *v = (int)p.sharedMemPerBlockOptin; break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *v = (int)p.sharedMemPerMultiprocessor; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *v = (int)p.sharedMemPerBlock; break;
    case cudaDevAttrL2CacheSize: *v = p.l2CacheSize; break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: *v = p.maxThreadsPerMultiProcessor; break;
    case cudaDevAttrMaxThreadsPerBlock: *v = p.maxThreadsPerBlock; break;
    case cudaDevAttrWarpSize: *v = p.warpSize; break;
    default: die("cudaDeviceGetAttribute of an attribute the emulator does not know");
    }
    return cudaSuccess;
}
/* EMU_TMAP=absent: the driver has no tensor map encoder (its entry point is
 * not found); EMU_TMAP=refuse: the encoder refuses every map
 * (CUDA_ERROR_INVALID_VALUE).  A test runs the plugins' TMA producers'
 * fallbacks with them. */
static int emu_tmap_mode(void) {
    const char *m = getenv("EMU_TMAP");
    if (!m || !*m) return 0;
    if (!strcmp(m, "absent")) return 1;
    if (!strcmp(m, "refuse")) return 2;
    die("EMU_TMAP: expected absent or refuse");
    return 0;
}
/* The driver's tensor map encoder, emulated: the map's parameters (checked
 * as the driver checks them, for the cases the emulated TMA copy serves:
 * up to 3 dims, element strides 1, no interleave) go into the opaque 128
 * bytes, where lk_emu_tma_load reads them. */
static CUresult emu_encode_tiled(CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank, void *addr,
                                 const cuuint64_t *dims, const cuuint64_t *strides, const cuuint32_t *box,
                                 const cuuint32_t *estr, CUtensorMapInterleave il, CUtensorMapSwizzle sw,
                                 CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob) {
    (void)l2;
    if (emu_tmap_mode() == 2) return CUDA_ERROR_INVALID_VALUE;
    emu_tmap m;
    std::memset(&m, 0, sizeof m);
    switch (type) {
    case CU_TENSOR_MAP_DATA_TYPE_UINT8: m.elem = 1; break;
    case CU_TENSOR_MAP_DATA_TYPE_UINT16:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
    case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16: m.elem = 2; break;
    case CU_TENSOR_MAP_DATA_TYPE_UINT32:
    case CU_TENSOR_MAP_DATA_TYPE_INT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32: m.elem = 4; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    if (!map || rank < 1 || rank > 3 || !addr || (uintptr_t)addr % 16 || il != CU_TENSOR_MAP_INTERLEAVE_NONE)
        return CUDA_ERROR_INVALID_VALUE;
    m.swizzle = sw == CU_TENSOR_MAP_SWIZZLE_NONE   ? 0
                : sw == CU_TENSOR_MAP_SWIZZLE_32B  ? 32
                : sw == CU_TENSOR_MAP_SWIZZLE_64B  ? 64
                : sw == CU_TENSOR_MAP_SWIZZLE_128B ? 128
                                                   : ~0u;
    if (m.swizzle == ~0u) return CUDA_ERROR_INVALID_VALUE;
    for (cuuint32_t i = 0; i < rank; i++) {
        if (!dims[i] || dims[i] > (1ull << 32) || !box[i] || box[i] > 256 || estr[i] != 1)
            return CUDA_ERROR_INVALID_VALUE;
        m.dims[i] = dims[i];
        m.box[i] = box[i];
        if (i) {
            if (strides[i - 1] % 16 || strides[i - 1] >= (1ull << 40)) return CUDA_ERROR_INVALID_VALUE;
            m.strides[i - 1] = strides[i - 1];
        }
    }
    for (cuuint32_t i = rank; i < 3; i++) m.dims[i] = m.box[i] = 1;
    if ((box[0] * m.elem) % 16 || (m.swizzle && box[0] * m.elem > m.swizzle)) return CUDA_ERROR_INVALID_VALUE;
    m.magic = EMU_TMAP_MAGIC;
    m.rank = rank;
    m.addr = (uint64_t)(uintptr_t)addr;
    m.oob_nan = oob == CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA;
    std::memset(map, 0, sizeof *map);
    std::memcpy(map, &m, sizeof m);
    return CUDA_SUCCESS;
}

/* The driver entry points: cuTensorMapEncodeTiled (emulated above); no other. */
cudaError_t cudaGetDriverEntryPointByVersion(const char *sym, void **fn, unsigned cuda_version,
                                             unsigned long long flags, enum cudaDriverEntryPointQueryResult *st) {
    (void)cuda_version, (void)flags;
    const bool enc = !strcmp(sym, "cuTensorMapEncodeTiled") && emu_tmap_mode() != 1;
    *fn = enc ? (void *)&emu_encode_tiled : nullptr;
    if (st) *st = enc ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
    return cudaSuccess;
}
/* A __device__ variable is a host variable here. */
cudaError_t cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t n, size_t offset, enum cudaMemcpyKind k) {
    (void)k;
    no_capture(nullptr, "cudaMemcpyFromSymbol");
    std::memcpy(dst, (const char *)symbol + offset, n);
    return cudaSuccess;
}
/* No registers on the emulator: numRegs is what nvcc gives the one kernel
 * whose setup reads it (the wgmma extend, __launch_bounds__(384, 1): 168,
 * ATTN_WG_REGS_ENTRY), so its setmaxnreg split's check passes as on the
 * device. */
#define EMU_FUNC_REGS 168
cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *a, const void *f) {
    (void)f;
    std::memset(a, 0, sizeof *a);
    a->numRegs = EMU_FUNC_REGS;
    a->maxThreadsPerBlock = 1024;
    a->maxDynamicSharedSizeBytes = 49152;
    a->ptxVersion = a->binaryVersion = EMU_SM;
    return cudaSuccess;
}
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
cudaError_t cudaPeekAtLastError(void) { return cudaSuccess; }
const char *cudaGetErrorName(cudaError_t e) { return e == cudaSuccess ? "cudaSuccess" : "cudaErrorEmu"; }
const char *cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "emulated error"; }
cudaError_t cudaDeviceSynchronize(void) {
    no_capture(nullptr, "cudaDeviceSynchronize");
    return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t st) {
    no_capture(st, "cudaStreamSynchronize");
    return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *st, unsigned flags) {
    (void)flags;
    *st = (cudaStream_t)malloc(16);
    return *st ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaStreamDestroy(cudaStream_t st) {
    free(st);
    return cudaSuccess;
}
cudaError_t cudaStreamIsCapturing(cudaStream_t st, enum cudaStreamCaptureStatus *s) {
    *s = emu_capturing(st) ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
    return cudaSuccess;
}
cudaError_t cudaStreamBeginCapture(cudaStream_t st, enum cudaStreamCaptureMode mode) {
    (void)mode;
    if (capturing) die("nested capture");
    capturing = new std::vector<std::function<void()>>();
    capture_stream = st;
    emu_capture_begin(st, capturing);
    return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t st, cudaGraph_t *g) {
    if (!capturing || st != capture_stream) die("end of a capture that did not begin");
    *g = (cudaGraph_t)capturing;
    capturing = nullptr;
    emu_capture_end();
    return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *e, cudaGraph_t g, unsigned long long flags) {
    (void)flags;
    *e = (cudaGraphExec_t)g;
    return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t st) {
    no_capture(st, "cudaGraphLaunch");
    for (auto &f : *(std::vector<std::function<void()>> *)e) f();
    return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e) {
    (void)e; /* owned by the graph */
    return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t g) {
    delete (std::vector<std::function<void()>> *)g;
    return cudaSuccess;
}
cudaError_t cudaFuncSetAttribute(const void *f, enum cudaFuncAttribute a, int v) {
    (void)f;
    if (a == cudaFuncAttributeMaxDynamicSharedMemorySize && (v < 0 || v > EMU_SMEM_OPTIN)) return cudaErrorInvalidValue;
    return cudaSuccess;
}

/* events: the host clock when recorded (every call has run by then) */
cudaError_t cudaEventCreate(cudaEvent_t *e) {
    *e = (cudaEvent_t)calloc(1, sizeof(double));
    return *e ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags) {
    (void)flags;
    return cudaEventCreate(e);
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t st) {
    no_capture(st, "cudaEventRecord");
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    *(double *)e = ts.tv_sec + ts.tv_nsec * 1e-9;
    return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
    (void)e;
    return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
    *ms = (float)((*(double *)b - *(double *)a) * 1e3);
    return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
    free(e);
    return cudaSuccess;
}

} // extern "C"
