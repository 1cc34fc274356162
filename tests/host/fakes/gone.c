/* gone.c - libsglfake_gone.so: a dependency the missing_dep fake links
 * against at build time, but which is not on its run-time search path. */
#include "sgl_attn_abi.h"

SGL_ATTN_EXPORT int sglfake_gone(void);
int sglfake_gone(void) { return 7; }
