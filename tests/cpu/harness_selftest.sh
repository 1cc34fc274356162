#!/usr/bin/env bash
# harness_selftest.sh ATTNCTL PLUGIN_DIR - `attnctl check` must catch each way
# tests/cpu/harness_victim.c breaks a correct result, and pass the unbroken one.
set -u
attnctl=$1 dir=$2
export SGL_ATTN_NO_UNLOAD=1
fails=0
# expect MODE EXIT TEXT [CASE]: the check exits EXIT and says TEXT
expect() {
    local mode=$1 want_rc=$2 text=$3 case=${4:-decode:b=3,l=200,hq=4,hkv=2,d=64,dtype=f32,page=16,ragged=1}
    local out rc
    out=$(SGL_ATTN_VICTIM=$mode "$attnctl" check --plugin-path "$dir" --plugin harness_victim --case "$case" 2>&1)
    rc=$?
    if [[ $rc -ne $want_rc || $out != *"$text"* ]]; then
        echo "FAIL: victim '$mode': exit $rc (want $want_rc), output lacks '$text':"
        echo "$out" | sed 's/^/    /'
        fails=$((fails + 1))
    else
        echo "ok: victim '$mode' -> exit $rc, '$text'"
    fi
}
expect ok 0 "1 passed"
expect ok 0 "1 passed" "extend:b=2,l=150,q=60,hq=4,hkv=1,d=32,dtype=bf16,page=1,ragged=1"
expect oob 1 "guard byte 0 past its end"
expect under 1 "guard byte 1 before its start"
expect nowrite 1 "was never written"
expect nan 1 "is NaN or Inf"
expect nmse 1 "NMSE"
expect pool 1 "k_cache slot 0 changed"
expect input 1 "the input q was modified"
expect unsup 0 "not supported"
expect invalid 1 "harness_victim refuses on purpose"
# DeepSeek sparse attention: sparse MLA over given indices, and the indexer
sparse=sparse_decode:b=3,l=120,hq=4,dtype=f32,page=16,topk=32,neg=1,ragged=1
indexer=indexer_extend:b=2,l=100,q=40,ih=4,id=128,dtype=f32,page=16,topk=24,ragged=1
expect ok 0 "1 passed" "$sparse"
expect nmse 1 "NMSE" "$sparse"
expect ok 0 "1 passed" "$indexer"
expect topk 1 "valid entries; expected" "$indexer"
expect idxcache 1 "index_k_scale[0][0]" "$indexer"
expect future 1 "(not causal)" "indexer_extend:b=2,l=100,q=40,ih=4,id=128,dtype=bf16,page=16,topk=24"
[[ $fails -eq 0 ]] && echo "harness self-test: all caught" || echo "harness self-test: $fails not caught"
exit $((fails > 0))
