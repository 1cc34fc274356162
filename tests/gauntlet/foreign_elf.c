/* foreign_elf.c - a freestanding shared object built for another ELF class
 * (-m32) or machine (aarch64) when a cross toolchain is at hand; the
 * gauntlet patches a copy of good.so instead when it is not. */
int sgl_attn_plugin_entry(void);
int sgl_attn_plugin_entry(void) {
    return 0;
}
