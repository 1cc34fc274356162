#!/usr/bin/env python3
"""Make a synthetic H200 machine file from `attnctl devices --json` of a
machine with the CUDA plugins built but no GPU (this workplace): each CUDA
plugin's device 0 becomes an available NVIDIA H200 (SM 9.0, 132 SMs, 141 GB)
with the score its probe gives an available device.  Stands in for
examples/machines/h200.json until bench/gpu/capture_machine.sh captures the
real one; tests/cli/data/README.md says how the file was made.

    attnctl devices --json --plugin-path DIR | synth_machine.py > h200-synthetic.json
"""
import json
import sys

# The probe's score for an available device (plugins/cuda/*: ca_probe, mla_probe, lin_probe).
SCORE = {"cuda_attn": 50, "cuda_mla": 60}
LINEAR_SCORE = 20

d = json.load(sys.stdin)
d["plugins"] = [p for p in d["plugins"] if p["status"] != "shadowed"]
users = []
for p in d["plugins"]:
    if p["platform"] != "cuda" or p["status"] not in ("usable", "unavailable"):
        continue
    dev = p["devices"][0]
    dev.update(available=True, reason=None, name="NVIDIA H200", arch="sm_90", arch_major=9, arch_minor=0,
               memory_bytes=150754820096, compute_units=132, score=SCORE.get(p["name"], LINEAR_SCORE))
    p["devices"] = [dev]
    p["status"], p["reason"] = "usable", None
    users.append({"name": p["name"], "available": True, "reason": None})
if users:
    d["devices"].append({"platform": "cuda", "index": 0, "name": "NVIDIA H200", "arch": "sm_90",
                         "memory_bytes": 150754820096, "compute_units": 132, "plugins": users})
json.dump(d, sys.stdout, indent=1)
sys.stdout.write("\n")
