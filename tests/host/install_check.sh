#!/usr/bin/env bash
# install_check.sh ROOT - use a `make install` tree as a user would: layout,
# soname and links, then attnctl and a pkg-config-built program run with an
# empty environment must find the plugins and conf beside the library.
set -euo pipefail
root=$(cd "$1" && pwd -P)
fail() { echo "install-check: FAIL: $*" >&2; exit 1; }
ok() { echo "install-check: ok: $*"; }

for f in lib/libsglattn.so.1.0.0 include/sglattn/sgl_attn.h include/sglattn/sgl_attn_abi.h \
         lib/pkgconfig/sglattn.pc bin/attnctl; do
    [ -f "$root/$f" ] || fail "$f missing"
done
[ -d "$root/lib/sglattn/plugins" ] || fail "lib/sglattn/plugins missing"
[ "$(readlink "$root/lib/libsglattn.so.1")" = libsglattn.so.1.0.0 ] || fail "libsglattn.so.1 link"
[ "$(readlink "$root/lib/libsglattn.so")" = libsglattn.so.1 ] || fail "libsglattn.so link"
soname=$(objdump -p "$root/lib/libsglattn.so.1.0.0" | awk '/SONAME/ {print $2}')
[ "$soname" = libsglattn.so.1 ] || fail "soname is '$soname'"
ok "layout, soname $soname"

# Only sgl_attn_* functions are exported.
extra=$(nm -D --defined-only "$root/lib/libsglattn.so.1.0.0" | awk '$2 ~ /[TW]/ {print $3}' | grep -v '^sgl_attn_' || true)
[ -z "$extra" ] || fail "exported beyond sgl_attn_*: $extra"
ok "exports: $(nm -D --defined-only "$root/lib/libsglattn.so.1.0.0" | awk '$2 ~ /[TW]/' | wc -l) sgl_attn_* functions"

# attnctl with no environment at all.
out=$(env -i "$root/bin/attnctl" search-paths) || fail "attnctl search-paths exited $?"
grep -q "^$root/lib/sglattn/plugins  *drop-in" <<<"$out" || fail "drop-in dir not beside the library: $out"
if [ -f "$root/etc/sglattn/sglattn.json" ]; then
    grep -q "^conf: $root/etc/sglattn/sglattn.json" <<<"$out" || fail "conf not found beside the library: $out"
    ok "conf found: $root/etc/sglattn/sglattn.json"
fi
json=$(env -i "$root/bin/attnctl" list-plugins --json) || fail "attnctl list-plugins --json exited $?"
n=0
for so in "$root"/lib/sglattn/plugins/*.so; do
    [ -e "$so" ] || continue
    grep -q "\"path\":\"$so\"" <<<"$json" || fail "$so not listed by the installed attnctl"
    n=$((n + 1))
done
env -i "$root/bin/attnctl" list-plugins >/dev/null || fail "attnctl list-plugins exited $?"
ok "installed attnctl lists all $n installed plugin files with an empty environment"

# A program built with pkg-config against the installed tree.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/t.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <sgl_attn.h>
int main(void) {
    sgl_attn_host *h;
    char err[256];
    sgl_attn_host_options o = {.struct_size = sizeof o, .no_conf = 1};
    if (sgl_attn_host_open(&o, &h, err, sizeof err)) { printf("open: %s\n", err); return 1; }
    const char *d, *s, *n;
    for (size_t i = 0; i < sgl_attn_host_search_path_count(h); i++) {
        sgl_attn_host_search_path(h, i, &d, &s, &n);
        if (!strcmp(s, "drop-in")) printf("drop-in %s\n", d);
    }
    printf("plugins %zu\n", sgl_attn_host_plugin_count(h));
    sgl_attn_host_close(h);
    return 0;
}
C
flags=$(PKG_CONFIG_PATH="$root/lib/pkgconfig" pkg-config --define-prefix --cflags --libs sglattn) \
    || fail "pkg-config sglattn"
cc -std=c11 -Wall -Werror "$tmp/t.c" -o "$tmp/t" $flags -Wl,-rpath,"$root/lib" || fail "building against the installed tree ($flags)"
got=$(env -i "$tmp/t") || fail "pkg-config-built program: $got"
grep -q "^drop-in $root/lib/sglattn/plugins$" <<<"$got" || fail "program's drop-in: $got"
ok "pkg-config build ($flags) runs and finds $root/lib/sglattn/plugins"

# The Python package, installed beside the library: it imports and lists the
# installed plugins with an empty environment (only the working directory on
# sys.path), and declares the sglang plugin entry point.
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3 || true)
site=$(find "$root/lib" -type f -path '*-packages/sglattn/__init__.py' 2>/dev/null | head -1)
if [ -z "$py" ]; then
    echo "install-check: skipped the Python package: no python3"
elif [ -z "$site" ]; then
    fail "the Python package is not installed under $root/lib (python3 is $py)"
else
    site=$(dirname "$(dirname "$site")")
    got=$(cd "$site" && env -i "$py" -c '
import sglattn
print("lib", sglattn.library_path)
for p in sglattn.Host().plugins():
    print("plugin", p.status, p.path)') || fail "import sglattn from $site with an empty environment: $got"
    lib=$(awk '$1 == "lib" {print $2}' <<<"$got")
    [ "$(readlink -f "$lib")" = "$root/lib/libsglattn.so.1.0.0" ] || fail "the package loaded $lib, not the installed library"
    n=0
    for so in "$root"/lib/sglattn/plugins/*.so; do
        [ -e "$so" ] || continue
        grep -q "^plugin [a-z-]* $so$" <<<"$got" || fail "$so not listed by the installed package: $got"
        n=$((n + 1))
    done
    ep=$(cd "$site" && env -i "$py" -c '
from importlib.metadata import entry_points
print(" ".join(e.value for e in entry_points(group="sglang.srt.plugins") if e.name == "sglattn"))')
    [ "$ep" = "sglattn.sglang:register" ] || fail "entry point sglang.srt.plugins/sglattn is '$ep'"
    ok "Python package at $site imports with an empty environment, loads $lib, lists all $n plugin files; sglang entry point declared"
fi
