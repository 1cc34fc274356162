#!/usr/bin/env bash
# call_cycles_selftest.sh [CC] [PYTHON] - call_cycles.py must name a cycle
# between files (through a function or a data symbol, directly or through a
# third file) and pass a tree whose files call each other only one way;
# static functions, stale objects and variants of one source must not count.
set -u
cc=${1:-cc} py=${2:-python3}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
mkdir -p src obj/src
fails=0

build() { # build NAME SOURCE [CFLAGS...]: src/NAME.c compiled to obj/src/NAME.o
    local name=$1 text=$2
    shift 2
    printf '%s\n' "$text" > "src/$name.c"
    "$cc" -c -O0 "$@" "src/$name.c" -o "obj/src/$name.o" || exit 2
}
# expect RC TEXT: run the checker over src/, it exits RC and says TEXT
expect() {
    local want=$1 text=$2 out rc
    out=$("$py" "$here/call_cycles.py" --objdir obj src 2>&1)
    rc=$?
    if [[ $rc -ne $want || $out != *"$text"* ]]; then
        echo "FAIL: want exit $want and '$text', got exit $rc:"
        echo "$out" | sed 's/^/    /'
        fails=$((fails + 1))
    else
        echo "ok: exit $rc, '$text'"
    fi
}

# a leaf, and two files that use it: no cycle; a static function of the
# same name as another file's global does not count
build util 'int util_len(const char *s) { int n = 0; while (s[n]) n++; return n; }'
build a 'int util_len(const char *s); static int b_run(void) { return 0; } int a_run(void) { return util_len("x") + b_run(); }'
build b 'int util_len(const char *s); int a_run(void); int b_run(void) { return util_len("yy") + a_run(); }'
expect 0 "no cycles"

# a calls back into b: a direct cycle, named with the symbols
build a 'int util_len(const char *s); int b_run(void); int a_run(void) { return util_len("x") + b_run(); }'
expect 1 "src/a.c -> src/b.c  (b_run)"

# through a third file and a data symbol: b -> c (c_table) -> a -> b
build a 'int util_len(const char *s); extern int b_flag; int a_run(void) { return util_len("x") + b_flag; }'
build b 'int util_len(const char *s); extern const int c_table[]; int b_flag = 1; int b_run(void) { return c_table[0]; }'
build c 'int a_run(void); const int c_table[] = {1, 2}; int c_run(void) { return a_run(); }'
expect 1 "3 files call each other: src/a.c, src/b.c, src/c.c"

# a weak reference is a use too
build c 'const int c_table[] = {1, 2}; extern int a_weak(void) __attribute__((weak)); int c_run(void) { return a_weak ? a_weak() : 0; }'
build a 'int util_len(const char *s); extern int b_flag; int a_weak(void) { return util_len("x") + b_flag; }'
expect 1 "src/a.c -> src/b.c  (b_flag)"

# the cycle broken: c no longer calls a; a variant object of b (b.f64.o)
# counts as b.c, and an object whose source is gone is ignored
build c 'const int c_table[] = {1, 2}; int c_run(void) { return c_table[1]; }'
"$cc" -c -O0 -DVARIANT src/b.c -o obj/src/b.f64.o || exit 2
printf 'int gone(void); int gone_user(void) { return gone(); }\n' > src/gone.c
"$cc" -c -O0 src/gone.c -o obj/src/gone.o && rm src/gone.c
expect 0 "4 files"

[[ $fails -eq 0 ]] && echo "call_cycles self-test: all as expected" || echo "call_cycles self-test: $fails wrong"
exit $((fails > 0))
