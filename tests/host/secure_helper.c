/* secure_helper.c - test_host_paths runs a setgid copy of this: it opens a
 * host with the environment's plugin path and prints what the host used. */
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>

#include "sgl_attn.h"

int main(void) {
    printf("secure=%lu\n", getauxval(AT_SECURE));
    sgl_attn_host_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.no_default_dir = 1;
    o.no_conf = 1;
    sgl_attn_host *h;
    char err[256];
    if (sgl_attn_host_open(&o, &h, err, sizeof err) != SGL_ATTN_OK) {
        printf("open failed: %s\n", err);
        return 1;
    }
    for (size_t i = 0; i < sgl_attn_host_search_path_count(h); i++) {
        const char *d, *s, *n;
        sgl_attn_host_search_path(h, i, &d, &s, &n);
        printf("row source=%s dir=%s note=%s\n", s, d, n);
    }
    for (size_t i = 0; i < sgl_attn_host_plugin_count(h); i++) {
        sgl_attn_plugin_info in = {.struct_size = sizeof in};
        sgl_attn_host_plugin_info(h, i, &in);
        printf("plugin %s %s\n", in.name, in.source);
    }
    sgl_attn_host_close(h);
    return 0;
}
