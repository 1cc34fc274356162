#!/usr/bin/env python3
"""check_plugin_includes.py - a plugin sees abi/, the plugin SDK and its own
directory, nothing else of the tree (docs/contributing.md).

Two views of the same rule:
  - the compiler's dependency files (.d) of every plugin object under
    OBJDIR/plugins/: each header the compiler read from this tree must be in
    abi/, plugins/sdk/ or the directory of the object's source;
  - the #include lines of every source under plugins/: a "" include resolves
    beside the source (and stays in its directory) or in abi/ or plugins/sdk/;
    neither form may name a header of host/ or of another plugin's directory.
No crossing is allowed: what two plugins share lives in plugins/sdk/.

  check_plugin_includes.py [--root DIR] [--objdir DIR]   exit 1 listing each violation
  check_plugin_includes.py --selftest                    the checker against a tree built to fail it
"""
import argparse
import os
import re
import sys
import tempfile

SHARED = ("abi/", "plugins/sdk/")
SOURCE_EXT = (".c", ".h", ".cu", ".cuh", ".hip", ".cl")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def own_dir(path):
    return os.path.dirname(path) + "/"


def allowed(src_dir, header):
    return header.startswith(SHARED) or header.startswith(src_dir)


def rel(root, path):
    """path relative to root with no .., or None when it lies outside."""
    full = os.path.normpath(os.path.join(root, path))
    r = os.path.relpath(full, root)
    return None if r.startswith("..") else r


def dep_rule(text):
    """target and prerequisites of the first rule of a .d file."""
    text = text.replace("\\\n", " ")
    first = text.split("\n", 1)[0]
    if ":" not in first:
        return None, []
    target, prereqs = first.split(":", 1)
    return target.strip(), prereqs.split()


def check_deps(root, objdir):
    bad = []
    base = os.path.join(root, objdir, "plugins")
    for d, _, files in os.walk(base):
        for f in files:
            if not f.endswith(".d"):
                continue
            path = os.path.join(d, f)
            with open(path, encoding="utf-8", errors="replace") as fh:
                target, prereqs = dep_rule(fh.read())
            if not prereqs:
                continue
            src = rel(root, prereqs[0])
            if src is None or not os.path.exists(os.path.join(root, src)):
                continue  # a stale .d of a source that is gone
            src_dir = own_dir(src)
            for p in prereqs[1:]:
                h = rel(root, p)
                if h is None or h.startswith(objdir + "/") or allowed(src_dir, h):
                    continue
                bad.append("%s: %s reads %s" % (os.path.relpath(path, root), src, h))
    return bad


def check_sources(root):
    bad = []
    plugin_dirs = set()
    for d, _, files in os.walk(os.path.join(root, "plugins")):
        if any(f.endswith(SOURCE_EXT) for f in files):
            plugin_dirs.add(os.path.relpath(d, root) + "/")
    host = os.path.join(root, "host")
    for d in sorted(plugin_dirs):
        for f in sorted(os.listdir(os.path.join(root, d))):
            if not f.endswith(SOURCE_EXT):
                continue
            src = d + f
            with open(os.path.join(root, src), encoding="utf-8", errors="replace") as fh:
                lines = fh.read().split("\n")
            for n, line in enumerate(lines, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                quoted, name = m.group(1) == '"', m.group(2)
                where = "%s:%d: #include %s" % (src, n, line.split("include", 1)[1].strip())
                if os.path.exists(os.path.join(host, name)) or name.startswith(("host/", "../host/")):
                    bad.append(where + " names a host header")
                    continue
                if not quoted:
                    if rel(root, os.path.join(d, name)) and os.path.exists(os.path.join(root, d, name)):
                        bad.append(where + ": its own header with <>; use \"\"")
                    continue
                beside = rel(root, os.path.join(d, name))
                if beside and os.path.exists(os.path.join(root, beside)):
                    if not allowed(d, beside):
                        bad.append(where + " reaches %s outside the plugin's directory" % beside)
                    continue
                found = [s + name for s in SHARED if os.path.exists(os.path.join(root, s, name))]
                if found:
                    continue
                others = [p + name for p in sorted(plugin_dirs) if os.path.exists(os.path.join(root, p, name))]
                if others:
                    bad.append(where + " is a header of %s" % others[0])
                # otherwise a system or toolkit header (cuda_runtime_api.h ...)
    return bad


def selftest():
    """The checker must fail a tree that breaks the rule each way, and pass a clean one."""
    with tempfile.TemporaryDirectory() as root:
        def put(path, text=""):
            full = os.path.join(root, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w") as fh:
                fh.write(text)
        put("abi/sgl_attn_abi.h")
        put("plugins/sdk/sdk_text.h")
        put("host/host_internal.h")
        put("plugins/b/b.h")
        put("plugins/a/a.h")
        put("plugins/a/a.c", '#include "a.h"\n#include "sgl_attn_abi.h"\n#include "sdk_text.h"\n#include <stdio.h>\n')
        put("build/obj/plugins/a/a.d", "build/obj/plugins/a/a.o: plugins/a/a.c plugins/a/a.h \\\n abi/sgl_attn_abi.h "
            "plugins/sdk/sdk_text.h\nplugins/a/a.h:\n")
        clean = check_deps(root, "build/obj") + check_sources(root)
        if clean:
            print("selftest: a clean tree failed:", *clean, sep="\n  ")
            return 1
        put("plugins/a/bad.c", '#include "host_internal.h"\n#include "../b/b.h"\n#include "b.h"\n#include <a.h>\n')
        put("build/obj/plugins/a/bad.d", "build/obj/plugins/a/bad.o: plugins/a/bad.c host/host_internal.h plugins/b/b.h\n")
        found = check_deps(root, "build/obj") + check_sources(root)
        want = ["reads host/host_internal.h", "reads plugins/b/b.h", "names a host header",
                "reaches plugins/b/b.h", "is a header of plugins/b/b.h", "its own header with <>"]
        missing = [w for w in want if not any(w in f for f in found)]
        if missing or len(found) != len(want):
            print("selftest: expected one violation each of", want, "got:", *found, sep="\n  ")
            return 1
    print("check_plugin_includes selftest: ok (a clean tree passes, %d kinds of violation caught)" % len(want))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=".")
    ap.add_argument("--objdir", default="build/obj")
    ap.add_argument("--selftest", action="store_true")
    a = ap.parse_args()
    if a.selftest:
        return selftest()
    root = os.path.abspath(a.root)
    if not os.path.isdir(os.path.join(root, a.objdir, "plugins")):
        print("check_plugin_includes: no %s/plugins: build first" % a.objdir)
        return 1
    bad = check_deps(root, a.objdir) + check_sources(root)
    for b in bad:
        print("plugin include rule: " + b)
    if bad:
        print("%d violation(s): a plugin includes only abi/, plugins/sdk/ and its own directory" % len(bad))
        return 1
    ndeps = sum(f.endswith(".d") for _, _, fs in os.walk(os.path.join(root, a.objdir, "plugins")) for f in fs)
    print("plugin includes: ok (%d dependency files, the sources under plugins/)" % ndeps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
