#!/usr/bin/env bash
# install_dirs_check.sh TMPDIR - `make install` with GNU directories, as a
# packager runs it: PREFIX=/usr puts the conf in /etc and the staged attnctl
# finds it there; the man page and the bash completion are installed (and
# the completion parses); `make uninstall` removes every file it wrote.
set -euo pipefail
stage=$1
fail() { echo "install-dirs-check: FAIL: $*" >&2; exit 1; }
ok() { echo "install-dirs-check: ok: $*"; }
make=${MAKE:-make}

rm -rf "$stage"
$make --no-print-directory install DESTDIR="$stage" PREFIX=/usr >/dev/null
for f in usr/bin/attnctl usr/lib/libsglattn.so.1.0.0 usr/include/sglattn/sgl_attn.h usr/lib/pkgconfig/sglattn.pc \
         etc/sglattn/sglattn.json usr/share/bash-completion/completions/attnctl usr/lib/sglattn/install-manifest.txt; do
    [ -e "$stage/$f" ] || fail "$f missing after make install PREFIX=/usr"
done
[ ! -e "$stage/usr/etc" ] || fail "PREFIX=/usr installed a conf under /usr/etc"
if command -v help2man >/dev/null; then
    [ -f "$stage/usr/share/man/man1/attnctl.1" ] || fail "no man page although help2man is installed"
    for c in list-plugins devices search-paths select run check bench report; do
        grep -q "Command $c:" "$stage/usr/share/man/man1/attnctl.1" || fail "the man page lacks the $c command"
    done
    grep -qE 'caps(\\)?-from' "$stage/usr/share/man/man1/attnctl.1" || fail "the man page lacks select's options"
    ok "man page with every command"
fi
bash -n "$stage/usr/share/bash-completion/completions/attnctl" || fail "the completion script does not parse"
grep -q 'complete -F _attnctl attnctl' "$stage/usr/share/bash-completion/completions/attnctl" || fail "completion"
out=$(env -i "$stage/usr/bin/attnctl" search-paths) || fail "staged attnctl search-paths exited $?"
grep -q "^conf: $stage/etc/sglattn/sglattn.json$" <<<"$out" || fail "the staged /usr install does not read /etc: $out"
ok "PREFIX=/usr: conf in /etc, found by the installed library; man page and completion installed"

$make --no-print-directory uninstall DESTDIR="$stage" PREFIX=/usr >/dev/null
left=$(find "$stage" -type f -o -type l)
[ -z "$left" ] || fail "make uninstall left: $left"
ok "make uninstall removed every file"
rm -rf "$stage"
