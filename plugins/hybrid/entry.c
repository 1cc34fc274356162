/* entry.c - the one exported symbol of a wrapper .so; compiled once per
 * kind with -DHYB_DESC=hyb_plugin_<kind>. */
#include "hyb.h"

#ifndef HYB_DESC
#error "build with -DHYB_DESC=hyb_plugin_<kind>"
#endif

extern const sgl_attn_plugin HYB_DESC;

SGL_ATTN_EXPORT int sgl_attn_plugin_entry(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer);

SGL_ATTN_EXPORT int sgl_attn_plugin_entry(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer) {
    return sgl_attn_answer(host, answer, &HYB_DESC);
}
