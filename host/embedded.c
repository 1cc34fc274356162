/* embedded.c - plugins compiled into libsglattn, scanned after the plugin
 * directories (so a plugin file of the same name shadows them).  Each is
 * there only when its module defines its objects (CPU_REF_OBJS,
 * VALIDATE_OBJS in the Makefile), which also defines the macro below. */
#include "host_internal.h"

#ifdef SGL_ATTN_EMBED_CPU_REF
int sgl_attn_cpu_ref_entry(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer);
#endif
#ifdef SGL_ATTN_EMBED_VALIDATE
int sgl_attn_validate_entry(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer);
#endif

const embedded_plugin sgl_attn_embedded_plugins[] = {
#ifdef SGL_ATTN_EMBED_CPU_REF
    {"cpu_ref", sgl_attn_cpu_ref_entry},
#endif
#ifdef SGL_ATTN_EMBED_VALIDATE
    {"validate", sgl_attn_validate_entry},
#endif
    {NULL, NULL} /* C11 has no empty arrays; not counted */
};

const size_t sgl_attn_embedded_plugin_count =
    sizeof sgl_attn_embedded_plugins / sizeof sgl_attn_embedded_plugins[0] - 1;
