#!/usr/bin/env python3
"""json_seeds.py - the large and deep seeds of the conf and model fuzzers.

Writes tests/fuzz/corpus/{conf,model}/{large,deep}_*.json (run by
`make fuzz-seeds`; the files are committed).  Each is at most about 32 KiB
(libFuzzer's longest input is the longest seed's: larger seeds slow every
mutation); the timing check of the replays (replay_main.c) covers sizes
up to 16 MiB.  Python's json writes them, so
they are what an engine would read.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def nest(depth, leaf):
    v = leaf
    for i in range(depth):
        v = [v] if i % 2 else {"d": v}
    return v


def model_base(layers=4):
    return {"model_type": "llama", "num_hidden_layers": layers, "num_attention_heads": 8, "head_dim": 64}


def seeds():
    out = {}
    m = model_base()
    m.update({"k%d" % i: i for i in range(2200)})
    out["model/large_keys.json"] = json.dumps(m)
    m = model_base(1024)
    m.update({"model_type": "qwen3_next", "full_attention_interval": 4,
              "layer_types": ["full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(1024)],
              "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_key_head_dim": 128,
              "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4})
    out["model/large_layer_types.json"] = json.dumps(m, indent=1)
    m = model_base()
    m["_name_or_path"] = "x" * 30000
    out["model/large_string.json"] = json.dumps(m)
    m = model_base()
    m["bulk"] = nest(62, 1)  # the reader allows 64 levels; the object is one more
    out["model/deep_63.json"] = json.dumps(m)
    m["bulk"] = nest(64, 1)
    out["model/deep_65.json"] = json.dumps(m)
    c = {"sglattn_conf": 1, "aliases": {}, "model_rules": []}
    for i in range(150):
        c["aliases"]["a%d" % i] = {"plugins": ["cpu_ref"], "requires": [{"id": "r%d" % i, "message": "m",
                                                                         "mla": bool(i % 2)}]}
        c["model_rules"].append({"id": "mr%d" % i, "dsa": True, "served_by": "a%d" % i, "message": "m"})
    c["priority"] = {"p%d" % i: i for i in range(600)}
    out["conf/large_aliases.json"] = json.dumps(c)
    c = {"sglattn_conf": 1, "_comment": nest(62, "leaf")}
    out["conf/deep_63.json"] = json.dumps(c)
    c["_comment"] = nest(64, "leaf")
    out["conf/deep_65.json"] = json.dumps(c)
    return out


def main():
    for name, text in seeds().items():
        path = os.path.join(HERE, "corpus", name)
        with open(path, "w") as f:
            f.write(text + "\n")
        print("%s: %d bytes" % (path, len(text) + 1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
