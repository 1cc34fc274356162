/* gauntlet_dep.c - libgauntlet_dep.so, the dependency bad_missing_dep.so is
 * linked against; the gauntlet never puts it on the loader's path. */
int gauntlet_dep_function(void) __attribute__((visibility("default")));
int gauntlet_dep_function(void) {
    return 0;
}
