#!/usr/bin/env bash
# bench/gpu/mla_extend.sh - issue 23's "MLA extend/prefill (absorbed, 128 heads): time it and quote
# it": cuda_mla's forward_extend (576 / 512, one latent head, page 64, bf16, the KV save included)
# at 128 heads on prefills of b x s = 16k tokens (s = 1k / 4k / 16k) and chunked-prefill extends
# (1k new over 7k cached, B 4; 4k over 12k, B 1), and at 16 heads on two prefills, beside PyTorch in
# the same call: SDPA over the absorbed shapes (where a backend takes 576), the matmul path made
# causal, and cuDNN over the expanded 192 / 128 heads an engine's MLA prefill runs (with and
# without the up-projection); torch's outputs checked on sampled rows against float64 (~2 min;
# run.sh cap 240).
# The check covers the matrix's MLA extends and a prefill and an extend at 16 and 128 heads.
# Steps: prefill_anchored in common.sh.  SGL_ATTN_MLA_LOG=1: the kernel each plan ran, in the logs.
#   Dry run here: PREFILL_PLUGIN=cpu_ref PREFILL_SMALL=1 OUT=/tmp/x bash bench/gpu/mla_extend.sh
. "$(dirname "$0")/common.sh"
need "$P/cuda_mla.so"
export SGL_ATTN_MLA_STRICT=1 SGL_ATTN_MLA_LOG=1
prefill_anchored mla cuda_mla '^extend:.*mla=1'
step "the kernels the plans ran"
grep -hoE 'plan: mode [0-9]+, [0-9]+ requests, [0-9]+ rows a request.*runs [a-z0-9]+ \([^)]*\)' "$OUT/bench_mla.log" \
  2> /dev/null | sed 's/asked auto, //' | sort | uniq -c | head -12
echo "mla_extend: done [$SECONDS s]"
