#!/usr/bin/python3
"""sass_diff.py - do two builds of CUDA kernels compile to the same machine code?

usage: scripts/sass_diff.py [--nvdisasm PATH] [--abi7] [--rename REGEX=REPL]... [--diffs DIR] BASE_DIR NEW_DIR

For a change that must leave kernels as they were (a fold of copied code, a
move), on a machine without a GPU.  BASE_DIR and NEW_DIR hold one cubin per
source and architecture, NAME.sm_XX.cubin, with its ptxas -v log beside it,
NAME.sm_XX.ptxas, built with the module's flags one architecture at a time:
  nvcc -std=c++17 -O3 -lineinfo -gencode arch=compute_80,code=sm_80 \
       -Iabi -Iplugins/sdk -Xptxas -v -cubin F.cu -o DIR/F.sm_80.cubin 2> DIR/F.sm_80.ptxas
(and the same with 90a).  For every kernel of BASE_DIR (its name after the
--rename substitutions, in order: a kernel that changed name or template
parameters) it finds the kernel of that name and architecture in NEW_DIR and
prints one line:
  same-bytes   the .text sections are byte-identical;
  same-sass    the disassembly is the same once branch labels are numbered per
               function (the bytes differ only where a label or symbol does);
  DIFFERS      with the instruction counts, registers and the opcodes whose
               counts differ (--diffs DIR: the unified diff of each);
and "ptxas CHANGED" where the resource lines (registers, spills, stack, smem,
cmem) differ.  The last line counts them; exit 1 when any kernel differs.
nvdisasm: the toolkit's; where it has none, Debian's nvidia-cuda-toolkit
package (non-free) carries one (apt-get download, dpkg -x): an nvdisasm older
than the compiler needs --abi7, which rewrites a copy of each cubin's ELF
header into the form it reads (the code is not touched).
"""
import argparse, difflib, glob, os, re, struct, subprocess, sys, tempfile


def elf_sections(path):
    b = open(path, 'rb').read()
    shoff, = struct.unpack_from('<Q', b, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from('<HHH', b, 0x3a)
    hdrs = [struct.unpack_from('<IIQQQQIIQQ', b, shoff + i * shentsize) for i in range(shnum)]
    stro = hdrs[shstrndx][4]
    out = {}
    for h in hdrs:
        name = b[stro + h[0]:b.index(b'\0', stro + h[0])].decode()
        out[name] = (h, b[h[4]:h[4] + h[5]] if h[1] != 8 else b'')
    return out


def abi7(src, dst):
    b = bytearray(open(src, 'rb').read())
    flags, = struct.unpack_from('<I', b, 0x30)
    sm = (flags >> 8) & 0xff
    b[7], b[8] = 0x33, 7
    struct.pack_into('<I', b, 0x30, (sm << 16) | 0x500 | sm)
    open(dst, 'wb').write(b)


def disasm(nvdisasm, path, patch):
    with tempfile.TemporaryDirectory() as d:
        p = path
        if patch:
            p = os.path.join(d, 'k.cubin')
            abi7(path, p)
        txt = subprocess.run([nvdisasm, p], check=True, capture_output=True, text=True).stdout
    funcs, cur = {}, None
    for line in txt.split('\n'):
        m = re.match(r'\s*\.section\s+\.text\.(\S+?),', line)
        if m:
            cur = m.group(1)
            funcs[cur] = []
            continue
        if line.startswith('//----'):
            cur = None
        if cur is None:
            continue
        m = re.match(r'\s*/\*[0-9a-f]+\*/\s+(.*?)\s*;', line)
        if m:
            funcs[cur].append(m.group(1))
        elif re.match(r'\.L_x_\d+:', line.strip()):
            funcs[cur].append(line.strip())
    return funcs


def normalise(ins, name):
    labels = {}

    def lab(m):
        return labels.setdefault(m.group(0), 'L%d' % len(labels))
    out = []
    for s in ins:
        s = s.replace(name, 'K')
        s = re.sub(r'\.L_x_\d+', lab, s)
        s = re.sub(r'\$__internal_\d+_\$', '$__internal_$', s)
        out.append(re.sub(r'\s+', ' ', s))
    return out


def ptxas_res(d):
    res = {}
    for f in glob.glob(os.path.join(d, '*.ptxas')):
        cur = None
        for line in open(f):
            m = re.search(r"Compiling entry function '(\S+)' for '(\S+)'", line)
            if m:
                cur = (m.group(1), m.group(2))
                res[cur] = []
            elif cur and ('bytes stack frame' in line or 'Used ' in line):
                res[cur].append(re.sub(r'\s+', ' ', line.replace('ptxas info    :', '')).strip())
    return res


def collect(d, nvdisasm, patch):
    k = {}
    for f in sorted(glob.glob(os.path.join(d, '*.cubin'))):
        arch = re.search(r'\.(sm_\w+)\.cubin$', f).group(1)
        secs = elf_sections(f)
        for name, ins in disasm(nvdisasm, f, patch).items():
            h, data = secs['.text.' + name]
            k[(name, arch)] = (data, normalise(ins, name))
    return k


def opcode(s):
    s = re.sub(r'^@!?U?P\w+\s+', '', s)
    return s.split(' ')[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--nvdisasm', default='nvdisasm')
    ap.add_argument('--abi7', action='store_true')
    ap.add_argument('--rename', action='append', default=[])
    ap.add_argument('--diffs')
    ap.add_argument('base')
    ap.add_argument('new')
    a = ap.parse_args()
    ren = [r.split('=', 1) for r in a.rename]
    B, N = collect(a.base, a.nvdisasm, a.abi7), collect(a.new, a.nvdisasm, a.abi7)
    RB, RN = ptxas_res(a.base), ptxas_res(a.new)
    seen, bad = set(), 0
    for (name, arch) in sorted(B, key=lambda k: (k[1], k[0])):
        new = name
        for pat, rep in ren:
            new = re.sub(pat, rep, new)
        seen.add((new, arch))
        tag = f'{arch} {name}' + (f' -> {new}' if new != name else '')
        if (new, arch) not in N:
            print(f'MISSING  {tag}')
            bad += 1
            continue
        (bd, bs), (nd, ns) = B[(name, arch)], N[(new, arch)]
        rb, rn = RB.get((name, arch)), RN.get((new, arch))
        regs = lambda r: re.search(r'Used (\d+) registers', ' '.join(r or [])).group(1) if r else '?'
        br, nr = regs(rb), regs(rn)
        res = f'; ptxas CHANGED: {rb} -> {rn}' if rb != rn else ''
        if bd == nd:
            print(f'same-bytes {tag} ({len(bs)} instructions, {br} registers){res}')
        elif bs == ns:
            print(f'same-sass  {tag} ({len(bs)} instructions, {br} registers){res}')
        else:
            bad += 1
            ob, on = {}, {}
            for s in bs:
                ob[opcode(s)] = ob.get(opcode(s), 0) + 1
            for s in ns:
                on[opcode(s)] = on.get(opcode(s), 0) + 1
            ops = ', '.join(f'{o} {ob.get(o, 0)}->{on.get(o, 0)}' for o in sorted(set(ob) | set(on))
                            if ob.get(o, 0) != on.get(o, 0))
            d = [l for l in difflib.unified_diff(bs, ns, lineterm='', n=0) if l[:1] in '+-' and l[:3] not in ('+++', '---')]
            print(f'DIFFERS    {tag}: {len(bs)} -> {len(ns)} instructions, {br} -> {nr} registers, '
                  f'{len(d)} diff lines; opcodes: {ops or "same counts"}{res}')
            if a.diffs:
                os.makedirs(a.diffs, exist_ok=True)
                with open(os.path.join(a.diffs, f'{arch}.{name[:120]}.diff'), 'w') as f:
                    f.write('\n'.join(difflib.unified_diff(bs, ns, lineterm='', n=3)))
    for (name, arch) in sorted(set(N) - seen):
        print(f'NEW        {arch} {name}')
    print(f'{len(B) - bad} of {len(B)} kernels the same, {bad} differ or are missing')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
