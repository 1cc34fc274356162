#!/usr/bin/env python3
"""emu_cu.py - turn a .cu file into C++ that g++ builds for the CPU emulator.

The two CUDA forms that are syntax, not names a header can define:
  kern<<<grid, block[, smem[, stream]]>>>(args)
      -> lk_emu_launch_k("kern", grid, block, smem, stream, [](auto... a) { kern(a...); }, args)
         (the arguments are evaluated and copied at the launch, as CUDA does,
         so a captured graph replays the values of the capture)
  extern __shared__ [__align__(n)] [unsigned|signed] T name[];
      -> T *name = (T *)lk_emu_dyn_smem();
Everything else (inline PTX included) has its emulated twin under #ifdef
LK_EMU in the headers, so the kernel bodies are compiled as written.
A #line directive keeps the compiler's messages on the .cu file's lines.

usage: emu_cu.py IN.cu OUT.cpp
"""
import re
import sys

SMEM = re.compile(
    r"extern\s+__shared__\s+(?:__align__\s*\(\s*\d+\s*\)\s+)?((?:(?:unsigned|signed)\s+)?[A-Za-z_][\w:]*)\s+(\w+)\s*\[\s*\]\s*;"
)


def fail(path, text, pos, what):
    line = text.count("\n", 0, pos) + 1
    sys.exit(f"{path}:{line}: emu_cu.py: {what}")


def match_close(text, i, open_c, close_c):
    """index just past the bracket that closes text[i] (== open_c)"""
    depth = 0
    j = i
    while j < len(text):
        c = text[j]
        if c == open_c:
            depth += 1
        elif c == close_c:
            depth -= 1
            if depth == 0:
                return j + 1
        elif c in "\"'":
            q = c
            j += 1
            while text[j] != q:
                j += 2 if text[j] == "\\" else 1
        j += 1
    return -1


def split_top(s):
    """split s at the commas outside any brackets; '<' right after a name opens template arguments"""
    out, depth, tdepth, cur = [], 0, 0, ""
    for i, c in enumerate(s):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "<" and i and (s[i - 1].isalnum() or s[i - 1] == "_"):
            tdepth += 1
        elif c == ">" and tdepth:
            tdepth -= 1
        if c == "," and depth == 0 and tdepth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += c
    if cur.strip():
        out.append(cur.strip())
    return out


def callee_start(text, end):
    """start of the kernel expression that ends at text[end] (exclusive): name, ::, <template args>"""
    i = end
    while True:
        while i > 0 and text[i - 1].isspace():
            i -= 1
        if text[i - 1] == ">":  # template arguments: back to the matching '<'
            depth = 0
            while True:
                i -= 1
                if text[i] == ">":
                    depth += 1
                elif text[i] == "<":
                    depth -= 1
                    if depth == 0:
                        break
            continue
        j = i
        while j > 0 and (text[j - 1].isalnum() or text[j - 1] == "_"):
            j -= 1
        if j == i:
            return i
        i = j
        if text[i - 2 : i] == "::":
            i -= 2
            continue
        return i


def rewrite(path, text):
    text = SMEM.sub(lambda m: f"{m.group(1)} *{m.group(2)} = ({m.group(1)} *)lk_emu_dyn_smem();", text)
    out, pos = [], 0
    while True:
        k = text.find("<<<", pos)
        if k < 0:
            break
        s = callee_start(text, k)
        e = text.find(">>>", k)
        if e < 0:
            fail(path, text, k, "<<< without >>>")
        cfg = split_top(text[k + 3 : e])
        if not 2 <= len(cfg) <= 4:
            fail(path, text, k, "a launch configuration of other than 2 to 4 parts")
        cfg += ["0", "0"][: 4 - len(cfg)]
        a = e + 3
        while text[a].isspace():
            a += 1
        if text[a] != "(":
            fail(path, text, a, "no argument list after >>>")
        z = match_close(text, a, "(", ")")
        args = text[a + 1 : z - 1]
        kern = text[s:k].strip()
        new = (
            f'lk_emu_launch_k("{" ".join(kern.split())}", {cfg[0]}, {cfg[1]}, {cfg[2]}, {cfg[3]}, '
            f"[](auto... emu_a) {{ {kern}(emu_a...); }}"
            + (f", {args})" if args.strip() else ")")
        )
        # keep the line count, so #line holds for what follows
        new += "\n" * (text.count("\n", s, z) - new.count("\n"))
        out.append(text[pos:s])
        out.append(new)
        pos = z
    out.append(text[pos:])
    return "".join(out)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, dst = sys.argv[1], sys.argv[2]
    with open(src) as f:
        text = f.read()
    with open(dst, "w") as f:
        f.write(f'#line 1 "{src}"\n' + rewrite(src, text))


main()
