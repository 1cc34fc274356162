/* entry.c - the one exported symbol of a wrapper .so; compiled once per
 * kind with -DHYB_DESC=hyb_plugin_<kind> (the descriptors live apart, in
 * plugin_<kind>.c, so tests and the bench link all of them). */
#include "hyb.h"
#include "sdk_plugin.h"

#ifndef HYB_DESC
#error "build with -DHYB_DESC=hyb_plugin_<kind>"
#endif

extern const sgl_attn_plugin HYB_DESC;

SGL_SDK_ENTRY_FN(SGL_ATTN_EXPORT, sgl_attn_plugin_entry, HYB_DESC, sgl_sdk_no_hook)
