#!/usr/bin/env bash
# fetch_cjson.sh OUT - cJSON's source, for the fuzz build only.
#
# Debian's libcjson is not instrumented, so libFuzzer cannot see inside the
# JSON parser the conf and model readers stand on; the fuzzers compile
# cJSON.c in instead.  The source is the Debian source package of the
# installed version (`apt-get source`), fetched through a private apt
# configuration under OUT: the machine's sources.list, apt lists and caches
# are left alone, and no root is needed beyond what apt itself wants.
# Nothing is vendored in the repository.  Exit 0 with OUT/include/cjson/cJSON.h
# and OUT/cjson/cJSON.c in place, or 1 with the reason on stderr.
#
#   FUZZ_DEBSRC   the deb-src line (default: Debian 12 main from deb.debian.org)
set -uo pipefail
out=${1:?usage: fetch_cjson.sh OUT}
mkdir -p "$out" && out=$(cd "$out" && pwd)
if [ -f "$out/cjson/cJSON.c" ] && [ -f "$out/include/cjson/cJSON.h" ]; then exit 0; fi

fail() { echo "fetch_cjson: $*" >&2; exit 1; }
command -v apt-get >/dev/null || fail "apt-get not found (Debian/Ubuntu only)"
command -v dpkg-source >/dev/null || fail "dpkg-source not found: install dpkg-dev (scripts/install-deps.sh does)"

want=$(dpkg-query -W -f='${Version}' libcjson-dev 2>/dev/null) || fail "libcjson-dev is not installed"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
src_line=${FUZZ_DEBSRC:-"deb-src [signed-by=$keyring] http://deb.debian.org/debian bookworm main"}

apt_dir="$out/apt"
rm -rf "$apt_dir" "$out/src"
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$out/src"
echo "$src_line" > "$apt_dir/sources.list"
opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o "Dir::Etc::SourceParts=$apt_dir/none"
      -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
      -o "Debug::NoLocking=1" -o "APT::Sandbox::User=root" -o "Acquire::Retries=2")
apt-get "${opts[@]}" -qq update > "$apt_dir/update.log" 2>&1 ||
    fail "apt-get update of the private deb-src list failed (offline?): $(tail -n 2 "$apt_dir/update.log" | tr '\n' ' ')"
(cd "$out/src" && apt-get "${opts[@]}" -qq source "cjson=$want" > "$apt_dir/source.log" 2>&1) ||
    (cd "$out/src" && apt-get "${opts[@]}" -qq source cjson >> "$apt_dir/source.log" 2>&1) ||
    fail "apt-get source cjson failed: $(tail -n 2 "$apt_dir/source.log" | tr '\n' ' ')"
dir=$(find "$out/src" -maxdepth 1 -type d -name 'cjson-*' | head -n 1)
[ -n "$dir" ] && [ -f "$dir/cJSON.c" ] && [ -f "$dir/cJSON.h" ] || fail "no cJSON.c in the unpacked source"
got=$(dpkg-parsechangelog -l "$dir/debian/changelog" -S Version 2>/dev/null || echo unknown)
[ "$got" = "$want" ] || echo "fetch_cjson: note: source $got, installed library $want" >&2
mkdir -p "$out/cjson" "$out/include/cjson"
cp "$dir/cJSON.c" "$out/cjson/cJSON.c"
cp "$dir/cJSON.h" "$out/include/cjson/cJSON.h"
echo "$got" > "$out/cjson/VERSION"
echo "fetch_cjson: cJSON $got source in $out/cjson"
