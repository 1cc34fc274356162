#!/usr/bin/env python3
"""narrow_ring_model.py - protocol model of mla_narrow.cu's sub-tile ring (no GPU).

mbarriers with phases and try_wait.parity; a producer that streams 9 sub-tiles a
block across items (empty waits at parity ph ^ 1, arrive.expect_tx, TMA data
landing later in any order); a consumer that waits the full barriers, releases
the rope slot after S, issues S of the next block before releasing the value
slots of the current one, as the kernel does.  Random interleavings; each read
asserts the slot holds the (item, block, sub-tile) expected, so a release too
early, a wrong parity or a deadlock shows.  Run: python3 tests/cuda_mla/narrow_ring_model.py
"""
import random, sys
class MBar:
    def __init__(s): s.phase=0; s.pending=1; s.tx=0
    def done(s, parity): return parity != (s.phase & 1)   # try_wait.parity: phase with this parity completed
    def arrive(s):
        s.pending-=1; s.check()
    def expect(s, b): s.tx+=b; s.arrive_noc()
    def arrive_noc(s): s.pending-=1; s.check()
    def complete_tx(s,b): s.tx-=b; s.check()
    def check(s):
        if s.pending==0 and s.tx==0: s.phase+=1; s.pending=1
def sim(NS, items, seed):
    rnd=random.Random(seed)
    full=[MBar() for _ in range(NS)]; empty=[MBar() for _ in range(NS)]
    slot=[None]*NS; inflight=[]
    def producer():
        idx,ph=0,0
        for it,nblk in enumerate(items):
            for j in range(nblk):
                for k in range(9):
                    while not empty[idx].done(ph^1): yield
                    full[idx].expect(1); inflight.append((idx,(it,j,k)))
                    idx+=1
                    if idx==NS: idx,ph=0,ph^1
    def consumer():
        pos=(0,0)
        def adv(p,k):
            i,ph=p[0]+k,p[1]
            if i>=NS: i,ph=i-NS,ph^1
            return (i,ph)
        for it,nblk in enumerate(items):
            def qk(p,j):
                for k in range(9):
                    i,ph=adv(p,k)
                    while not full[i].done(ph): yield
                    assert slot[i]==(it,j,k),(slot[i],(it,j,k))
            yield from qk(pos,0); empty[adv(pos,8)[0]].arrive()
            for j in range(nblk):
                for k in range(8): assert slot[adv(pos,k)[0]]==(it,j,k)   # PV reads values
                nxt=adv(pos,9)
                if j+1<nblk:
                    yield from qk(nxt,j+1)
                    for k in range(8): empty[adv(pos,k)[0]].arrive()
                    empty[adv(nxt,8)[0]].arrive()
                else:
                    for k in range(8): empty[adv(pos,k)[0]].arrive()
                pos=nxt
    P,C=producer(),consumer(); pd=cd=False; steps=0
    while not (pd and cd):
        steps+=1
        if steps>10**6: return "deadlock"
        r=rnd.random()
        if r<0.3 and inflight:
            i=rnd.randrange(len(inflight)); idx,tag=inflight.pop(i); slot[idx]=tag; full[idx].complete_tx(1)
        elif r<0.65 and not pd:
            try: next(P)
            except StopIteration: pd=True
        elif not cd:
            try: next(C)
            except StopIteration: cd=True
        elif inflight:
            idx,tag=inflight.pop(0); slot[idx]=tag; full[idx].complete_tx(1)
    return "ok"
bad=0
for seed in range(300):
    rnd=random.Random(seed); NS=rnd.choice([18,22,23,25])
    items=[rnd.randint(1,7) for _ in range(rnd.randint(1,6))]
    r=sim(NS,items,seed)
    if r!="ok": bad+=1; print(seed,NS,items,r)
print("ring model:", "OK" if not bad else f"{bad} failures")
sys.exit(1 if bad else 0)
