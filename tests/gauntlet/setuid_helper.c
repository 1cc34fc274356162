/* setuid_helper.c - what a setuid/setgid program linked to libsglattn sees.
 * test_gauntlet_setuid installs copies of it setuid-root / setgid-root and
 * runs them as nobody with SGL_ATTN_PLUGIN_PATH set.  Prints AT_SECURE (so the
 * test knows the kernel really treated it as privileged), the host's notes,
 * and whether the plugin on that path was found. */
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>

#include "sgl_attn.h"

/* ASan build: LeakSanitizer cannot inspect a setgid (non-dumpable) process
 * and cannot even read ASAN_OPTIONS from its /proc/self/environ, so the
 * helper turns it off itself.  Unused in other builds. */
const char *__asan_default_options(void);
__attribute__((visibility("default"), used)) const char *__asan_default_options(void) {
    return "detect_leaks=0";
}

int main(void) {
    printf("AT_SECURE=%lu\n", getauxval(AT_SECURE));
    sgl_attn_host_options o = {.struct_size = sizeof o};
    o.no_conf = 1;
    o.no_default_dir = 1;
    o.log_level = SGL_ATTN_LOG_ERROR;
    sgl_attn_host *h = NULL;
    char err[512];
    if (sgl_attn_host_open(&o, &h, err, sizeof err) != SGL_ATTN_OK) {
        printf("open failed: %s\n", err);
        return 1;
    }
    for (size_t i = 0; i < sgl_attn_host_search_path_count(h); i++) {
        const char *dir, *source, *note;
        if (sgl_attn_host_search_path(h, i, &dir, &source, &note) == SGL_ATTN_OK)
            printf("path|%s|%s|%s\n", dir, source, note);
    }
    printf("gauntlet_good: %s\n",
           sgl_attn_host_find_plugin(h, "gauntlet_good") >= 0 ? "found" : "absent");
    sgl_attn_host_close(h);
    return 0;
}
