/* wgmma_absent.cpp - the sm_90a launchers (extend_wgmma_sm90.cu) for the
 * emulated cuda_attn builds over the SM 8.0 runtime (build/emu-plugins,
 * emu-plugins-fp8hw): the image is absent, as in a binary without sm_90a,
 * and the plugin takes its mma.sync paths.  The SM 9.0 build
 * (emu-plugins-sm90) links the real extend_wgmma_sm90.cu instead.  The setups and launches are never
 * reached; they refuse if they are. */
#include "cuda_launch.h"
#include "dual_chunk.h"

extern "C" {
int attn_wgmma_available(int device) {
    (void)device;
    return 0;
}
int attn_extend_wgmma_setup(int dtype, int head_dim, int *tma_ok) {
    (void)dtype, (void)head_dim;
    *tma_ok = 0;
    return (int)cudaErrorInvalidDeviceFunction;
}
int attn_launch_extend_wgmma(int dtype, int head_dim, const attn_fwd *p, const attn_kv_tmaps *tm, int sm_count,
                             int grid_items, void *stream) {
    (void)dtype, (void)head_dim, (void)p, (void)tm, (void)sm_count, (void)grid_items, (void)stream;
    return (int)cudaErrorInvalidDeviceFunction;
}
int attn_extend_wgmma_fp8_setup(int dtype) {
    (void)dtype;
    return (int)cudaErrorInvalidDeviceFunction;
}
int attn_launch_extend_wgmma_fp8(int dtype, const attn_fwd *p, int sm_count, int grid_items, void *stream) {
    (void)dtype, (void)p, (void)sm_count, (void)grid_items, (void)stream;
    return (int)cudaErrorInvalidDeviceFunction;
}
int attn_ragged_wgmma_setup(int dtype, int dqk, int dv, int *tma_ok) {
    (void)dtype, (void)dqk, (void)dv;
    *tma_ok = 0;
    return (int)cudaErrorInvalidDeviceFunction;
}
int attn_launch_ragged_wgmma(int dtype, int dqk, int dv, const attn_fwd *p, const attn_kv_tmaps *tm, int sm_count,
                             int grid_items, void *stream) {
    (void)dtype, (void)dqk, (void)dv, (void)p, (void)tm, (void)sm_count, (void)grid_items, (void)stream;
    return (int)cudaErrorInvalidDeviceFunction;
}
int attn_new_wgmma_setup(int dtype, int *tma_ok) {
    (void)dtype;
    *tma_ok = 0;
    return (int)cudaErrorInvalidDeviceFunction;
}
int attn_launch_new_wgmma(int dtype, const attn_fwd *p, const attn_kv_tmaps *tm, int sm_count, int grid_items,
                          void *stream) {
    (void)dtype, (void)p, (void)tm, (void)sm_count, (void)grid_items, (void)stream;
    return (int)cudaErrorInvalidDeviceFunction;
}
int attn_dual_chunk_extend_wgmma_setup(int dtype, int head_dim, int *tma_ok) {
    (void)dtype, (void)head_dim;
    *tma_ok = 0;
    return (int)cudaErrorInvalidDeviceFunction;
}
int attn_launch_dual_chunk_extend_wgmma(int dtype, int head_dim, const attn_fwd *p, const attn_dca *dc,
                                        const attn_kv_tmaps *tm, int sm_count, int grid_items, void *stream) {
    (void)dtype, (void)head_dim, (void)p, (void)dc, (void)tm, (void)sm_count, (void)grid_items, (void)stream;
    return (int)cudaErrorInvalidDeviceFunction;
}
}
