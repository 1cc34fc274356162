#!/usr/bin/env python3
"""call_cycles.py - no two source files call each other, directly or through others.

usage: call_cycles.py [--objdir DIR] [--nm NM] [-v] FOLDER...

For each FOLDER (a source folder such as host or attnctl), every object under
OBJDIR/FOLDER whose source file still exists is read with `nm`: the global
symbols it defines and the undefined ones it uses (functions and data alike;
static functions are local and do not matter).  An object built from one
source in several variants (foo.o, foo.f64.o) counts as that source.

The file-level graph has an edge a -> b when a uses a symbol that b defines.
A use resolves to a definer in the same FOLDER when there is one, else to
every definer among the folders read.  Each strongly connected component of
more than one file is a cycle: it is printed with one closed path through it
and the symbols on each step, and the exit status is 1.  Exit 0 when the graph
is acyclic, 2 on a usage or tool error.

Python 3 standard library only.
"""

import argparse
import os
import subprocess
import sys

SOURCE_EXTS = (".c", ".cc", ".cpp", ".cu", ".hip", ".S", ".s")


def source_of(obj_rel):
    """The source path (relative to the tree) an object was built from, or None.

    build/obj/host/log.o -> host/log.c; plugins/hybrid/gdn.f64.o -> plugins/hybrid/gdn.c.
    """
    stem = obj_rel[: -len(".o")]
    while True:
        for ext in SOURCE_EXTS:
            if os.path.isfile(stem + ext):
                return stem + ext
        dot = stem.rfind(".")
        if dot <= stem.rfind("/"):
            return None
        stem = stem[:dot]


def read_symbols(nm, path):
    """(defined, used) global symbol sets of one object."""
    try:
        out = subprocess.run([nm, "-P", path], check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit("call_cycles: %s %s: %s" % (nm, path, e))
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind in ("U", "w", "v"):  # undefined, weak undefined
            used.add(name)
        elif kind.isupper():  # T D B R C W V G S I u ...: global definitions
            defined.add(name)
    return defined, used


def scan(objdir, folders, nm):
    """files: {source: (folder, defined, used)} over every folder's objects."""
    files = {}
    for folder in folders:
        root = os.path.join(objdir, folder)
        if not os.path.isdir(root):
            print("call_cycles: %s: no objects under %s (not built here); skipped" % (folder, root))
            continue
        n = 0
        for dirpath, _, names in os.walk(root):
            for nm_ in sorted(names):
                if not nm_.endswith(".o"):
                    continue
                obj = os.path.join(dirpath, nm_)
                src = source_of(os.path.relpath(obj, objdir))
                if src is None:  # stale object of a deleted source, or a generated one
                    continue
                d, u = read_symbols(nm, obj)
                f, d0, u0 = files.get(src, (folder, set(), set()))
                files[src] = (f, d0 | d, u0 | u)
                n += 1
        if n == 0:
            print("call_cycles: %s: no objects of existing sources under %s; skipped" % (folder, root))
    return files


def build_graph(files):
    """edges: {a: {b: sorted symbols a uses from b}}"""
    definers = {}
    for src, (folder, defined, _) in files.items():
        for s in defined:
            definers.setdefault(s, []).append(src)
    edges = {src: {} for src in files}
    for src, (folder, defined, used) in files.items():
        for s in used - defined:
            ds = definers.get(s)
            if not ds:
                continue  # libc, another library, or a folder not read
            local = [d for d in ds if files[d][0] == folder]
            for d in local or ds:
                if d != src:
                    edges[src].setdefault(d, []).append(s)
    for src in edges:
        for d in edges[src]:
            edges[src][d].sort()
    return edges


def tarjan(nodes, edges):
    """Strongly connected components (iterative Tarjan), each a sorted list."""
    index, low, on_stack = {}, {}, set()
    stack, comps, counter = [], [], 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                comps.append(sorted(comp))
    return comps


def closed_path(comp, edges):
    """One cycle through the component's first file (breadth-first, shortest)."""
    members = set(comp)
    start = comp[0]
    prev = {start: None}
    queue = [start]
    while queue:
        nxt = []
        for v in queue:
            for w in sorted(edges[v]):
                if w not in members:
                    continue
                if w == start:
                    path = [v]
                    while prev[path[-1]] is not None:
                        path.append(prev[path[-1]])
                    path.reverse()
                    return path + [start]
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        queue = nxt
    return [start]


def main(argv):
    ap = argparse.ArgumentParser(description="Fail when source files call each other in a cycle.")
    ap.add_argument("--objdir", default="build/obj", help="the build's object folder (default build/obj)")
    ap.add_argument("--nm", default=os.environ.get("NM", "nm"), help="the nm to run (default $NM or nm)")
    ap.add_argument("-v", "--verbose", action="store_true", help="also print every file's edges")
    ap.add_argument("folders", nargs="+", help="source folders, e.g. host attnctl plugins/cpu")
    a = ap.parse_args(argv)
    folders = [f.rstrip("/") for f in a.folders]
    files = scan(a.objdir, folders, a.nm)
    if not files:
        print("call_cycles: no objects read (build first: make)")
        return 2
    edges = build_graph(files)
    if a.verbose:
        for src in sorted(edges):
            for d in sorted(edges[src]):
                print("  %s -> %s: %s" % (src, d, ", ".join(edges[src][d])))
    cycles = [c for c in tarjan(sorted(files), edges) if len(c) > 1]
    n_edges = sum(len(v) for v in edges.values())
    if not cycles:
        print("call_cycles: %d files, %d file-to-file edges in %s: no cycles" % (len(files), n_edges, " ".join(folders)))
        return 0
    for comp in cycles:
        print("call_cycles: %d files call each other: %s" % (len(comp), ", ".join(comp)))
        path = closed_path(comp, edges)
        for x, y in zip(path, path[1:]):
            syms = edges[x][y]
            more = " (+%d more)" % (len(syms) - 4) if len(syms) > 4 else ""
            print("    %s -> %s  (%s%s)" % (x, y, ", ".join(syms[:4]), more))
    print("call_cycles: %d cycle%s in %s" % (len(cycles), "" if len(cycles) == 1 else "s", " ".join(folders)))
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
