#!/usr/bin/env bash
# bench/gpu/prefill_dims.sh - issue 23's "d64 and d256, causal and non-causal: quote them beside
# cuDNN": cuda_attn's prefill at head dims 64 / 128 / 256 with 2048 / d heads (FA3's grid), causal
# and non-causal (attn=1: every new token sees all of its request's keys), b x s = 16k tokens at
# s = 1k / 4k / 16k, bf16, page 16, the save-KV launch included, beside PyTorch SDPA flash and cuDNN
# in the same call (contiguous q / k / v; their outputs checked on sampled rows against float64).
# ~1.5 min (run.sh cap 180).  The check covers the matrix's d64 / d256 / attn=1 extends and one 1k prefill per
# (d, mask) at the benched head counts.  Steps: prefill_anchored in common.sh.
#   Dry run here: PREFILL_PLUGIN=cpu_ref PREFILL_SMALL=1 OUT=/tmp/x bash bench/gpu/prefill_dims.sh
. "$(dirname "$0")/common.sh"
need "$P/cuda_attn.so"
prefill_anchored dims cuda_attn '^extend:.*(d=64|d=256|attn=1)'
echo "prefill_dims: done [$SECONDS s]"
