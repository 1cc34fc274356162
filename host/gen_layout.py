#!/usr/bin/env python3
"""gen_layout.py HEADER... > layout_table.c

Writes the C table behind sgl_attn_layout_json() and sgl_attn_struct_size():
for every struct the given headers define (plus DLPack's DLDevice, DLDataType,
DLTensor and DLManagedTensor), its sizeof and _Alignof and, per field, the
offsetof and sizeof the compiler computes; and the value of every integer
constant (enum members, #define SGL_ATTN_* numbers).  The compiler does the
arithmetic, so the table is the layout of the library it is linked into; a
language binding compares its own mirrors against it when it loads.

The parser reads the house style of our two headers: one declaration per
statement, function pointers as `ret (*name)(...)`, arrays with constant
bounds, no nested struct definitions.  A declaration it cannot read stops the
build with the line it choked on, never a silently missing field.
Standard library only.
"""
import re
import sys

# DLPack's structs: their field names are fixed by the DLPack standard (0.6,
# the version the ABI names); offsets and sizes still come from the compiler.
DLPACK = {
    "DLDevice": [("device_type", "DLDeviceType"), ("device_id", "int32_t")],
    "DLDataType": [("code", "uint8_t"), ("bits", "uint8_t"), ("lanes", "uint16_t")],
    "DLTensor": [("data", "void *"), ("device", "DLDevice"), ("ndim", "int32_t"), ("dtype", "DLDataType"),
                 ("shape", "int64_t *"), ("strides", "int64_t *"), ("byte_offset", "uint64_t")],
    "DLManagedTensor": [("dl_tensor", "DLTensor"), ("manager_ctx", "void *"), ("deleter", "fn")],
}

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


class GenError(Exception):
    pass


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def drop_preprocessor(body):
    """Directive lines inside a struct body (#if defined(__GNUC__) around an attribute)."""
    return "\n".join(line for line in body.split("\n") if not line.strip().startswith("#"))


def parse_fields(struct, body):
    """[(name, type_text)] in declaration order."""
    fields = []
    body = drop_preprocessor(body)
    body = re.sub(r"__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)", "", body)
    for stmt in body.split(";"):
        decl = " ".join(stmt.split())
        if not decl:
            continue
        fn = re.match(r"^(.*?)\(\s*\*\s*(" + IDENT + r")\s*\)\s*\((.*)\)$", decl)
        if fn:
            fields.append((fn.group(2), "fn"))
            continue
        if "(" in decl or "{" in decl:
            raise GenError(f"{struct}: cannot read the declaration '{decl}'")
        # "const char *const *aliases", "uint16_t abi_major, abi_minor", "char x[A][32]"
        parts = [p.strip() for p in decl.split(",")]
        first = re.match(r"^(.*?)(\**)\s*(" + IDENT + r")((?:\s*\[[^\]]+\])*)$", parts[0])
        if not first:
            raise GenError(f"{struct}: cannot read the declaration '{decl}'")
        base = first.group(1).strip()
        for i, p in enumerate(parts):
            m = first if i == 0 else re.match(r"^(\**)\s*(" + IDENT + r")((?:\s*\[[^\]]+\])*)$", p)
            if not m:
                raise GenError(f"{struct}: cannot read '{p}' in '{decl}'")
            stars, name, dims = (m.group(2), m.group(3), m.group(4)) if i == 0 else m.groups()
            ty = (base + (" " + stars if stars else "")).strip()
            dims = "".join(dims.split())
            fields.append((name, ty + dims))
    return fields


def parse_structs(text):
    structs = []
    # typedef struct NAME { ... } NAME;   and   struct NAME { ... };
    for m in re.finditer(r"(typedef\s+)?struct\s+(" + IDENT + r")\s*\{", text):
        start = m.end()
        depth, i = 1, start
        while depth:
            if i >= len(text):
                raise GenError(f"struct {m.group(2)}: no closing brace")
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        body = text[start:i - 1]
        if "{" in body:
            raise GenError(f"struct {m.group(2)}: nested definitions are not read")
        tail = re.match(r"\s*(" + IDENT + r")?\s*;", text[i:])
        if not tail:
            raise GenError(f"struct {m.group(2)}: cannot read what follows the closing brace")
        name = m.group(2)
        structs.append((name, m.group(1) is not None, parse_fields(name, body)))
    return structs


def parse_constants(text):
    names = []
    for m in re.finditer(r"enum\s*(?:" + IDENT + r")?\s*\{([^}]*)\}", text):
        for item in m.group(1).split(","):
            item = item.strip()
            if item:
                n = re.match(r"^(" + IDENT + r")", item)
                if not n:
                    raise GenError(f"cannot read the enum member '{item}'")
                names.append(n.group(1))
    for m in re.finditer(r"^\s*#\s*define\s+(SGL_ATTN_[A-Z0-9_]+)[ \t]+([^\n]+)$", text, flags=re.M):
        value = m.group(2).strip()
        if re.fullmatch(r"[0-9xXa-fA-FuUlL()<>\s+*-]+", value):
            names.append(m.group(1))
    seen, out = set(), []
    for n in names:
        if n not in seen:
            seen.add(n)
            out.append(n)
    return out


def c_str(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main(argv):
    if len(argv) < 2:
        sys.stderr.write("usage: gen_layout.py HEADER... > layout_table.c\n")
        return 2
    structs, consts, includes = [], [], []
    for path in argv[1:]:
        with open(path, encoding="utf-8") as f:
            text = strip_comments(f.read())
        structs += parse_structs(text)
        consts += [c for c in parse_constants(text) if c not in consts]
        includes.append(path.rsplit("/", 1)[-1])
    out = []
    w = out.append
    w("/* layout_table.c - generated by host/gen_layout.py from " + " ".join(argv[1:]) + "; do not edit.")
    w(" * sizeof, _Alignof and offsetof of every public struct and field, and every")
    w(" * integer constant, as this compiler lays them out (sgl_attn_layout_json). */")
    w("#include <stddef.h>")
    w("#include <stdint.h>")
    for inc in includes:
        w(f'#include "{inc}"')
    w('#include "layout_impl.h"')
    w("")
    w("#define FIELD(T, f, ty) {#f, offsetof(T, f), sizeof(((T *)0)->f), ty}")
    table = []
    for name, _, fields in [(n, True, f) for n, f in DLPACK.items()] + structs:
        cty = name  # every struct has a typedef of its own name
        w(f"static const layout_field fields_{name}[] = {{")
        for fname, fty in fields:
            w(f"    FIELD({cty}, {fname}, {c_str(fty)}),")
        w("};")
        table.append(f"    {{{c_str(name)}, sizeof({cty}), _Alignof({cty}), fields_{name}, "
                     f"sizeof fields_{name} / sizeof fields_{name}[0]}},")
    w("")
    w("static const layout_struct layout_structs[] = {")
    out += table
    w("};")
    w("")
    w("static const layout_const layout_consts[] = {")
    for c in consts:
        w(f"    {{{c_str(c)}, (long long)({c})}},")
    w("};")
    w("")
    w("LAYOUT_DEFINE_API(layout_structs, layout_consts)")
    sys.stdout.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except (GenError, OSError) as e:
        sys.stderr.write(f"gen_layout.py: {e}\n")
        sys.exit(1)
