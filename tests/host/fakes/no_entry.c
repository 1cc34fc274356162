/* no_entry.c - a shared object that exports something, but not the entry. */
#include "sgl_attn_abi.h"

SGL_ATTN_EXPORT int sgl_attn_plugin_entry_typo(void);
int sgl_attn_plugin_entry_typo(void) { return 0; }
