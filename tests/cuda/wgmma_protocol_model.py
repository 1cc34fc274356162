#!/usr/bin/env python3
"""wgmma_protocol_model.py - the synchronisation protocol of cuda_attn's
sm_90a extend kernel (plugins/cuda/mha/extend_wgmma_sm90.cuh), replayed on
the host under random interleavings: no GPU needed.

Agents mirror the kernel's code step by step: the producer warpgroup (its 128
threads act alike: one agent, barrier counts scaled down) and the two
consumer warpgroups.  cp.async groups land at random later times; wgmma
groups complete at random times before their wait_group returns.  Checked on
every step:
  - deadlock: no agent can move and nothing is in flight;
  - a consumer's wgmma reads a stage / the Q buffer that does not hold the
    tile / pair it expects (not landed, or overwritten);
  - the producer writes a stage or Q while a wgmma still reads it;
  - every pair's output is produced exactly once per consumer warpgroup.
Both producers (cp.async only; TMA boxes + cp.async) run this sequence of
barrier operations.  With TMA the boxes' bytes complete the stage's full
phase instead of the producer waiting for them; the consumers see the same
thing (the phase completes only once every copy landed), so the model
covers it, with the producer running ahead no further than in the kernel.
Dual chunk (the DCA instantiation: two stages, the three query variants in
one Q event): at a tile that crosses a part boundary the consumer issues
further wgmma groups reading Q and the stage's K (wg_dca_boundary's slices,
each waited on) after the tile's S and before it releases Q; the model
marks random tiles so.
F8 (the fp8 prefix pass, wg_producer_f8: two stages): the producer's cp.async
groups fill a 2-stage byte ring in the tiles' order across pairs, two tiles
ahead; it converts tile c from its byte stage once its wait_group (1 while
tile c + 1's group is in flight, else 0) returns and the 16-bit stage is
free, stores it (st.shared: in place at once) and arrives on the stage's
full barrier, then refills that byte stage with tile c + 2; Q is stored the
same way.  Also checked: a conversion reads the byte stage holding its tile,
landed, and no byte stage is refilled before its tile was converted.
The model must be kept in step with the kernel by hand.
usage: wgmma_protocol_model.py [RUNS]   (exit 0: all runs clean)
"""
import random
import sys


class MBar:
    """mbarrier: phase counter, pending arrivals; waits look at parity only."""

    def __init__(self, count):
        self.count, self.pending, self.phase = count, count, 0

    def arrive(self):
        self.pending -= 1
        assert self.pending >= 0
        if self.pending == 0:
            self.phase += 1
            self.pending = self.count

    def done(self, parity):  # try_wait.parity
        return (self.phase & 1) != parity


class World:
    def __init__(self, rng, stages, pairs, dca=False, f8=False):
        self.rng, self.ST, self.dca, self.f8 = rng, stages, dca, f8
        self.byte = [None] * 2  # F8's byte ring: landed content (pair, tile)
        self.pairs = pairs  # ntiles of each (item, head) pair this block walks
        self.full = [MBar(1) for _ in range(stages)]
        self.empty = [MBar(2) for _ in range(stages)]
        self.q_full, self.q_empty = MBar(1), MBar(2)
        self.stage = [None] * stages  # landed content: (pair, tile)
        self.stage_writing = [None] * stages  # in-flight cp.async content
        self.q = None
        self.q_writing = None
        self.readers = {}  # ('K'|'V'|'Q', idx) -> set of consumer ids with wgmma in flight
        self.groups = []  # producer cp.async groups in flight
        self.issued = []  # every group the producer committed, in order
        self.outputs = {}
        self.errors = []

    def err(self, msg):
        self.errors.append(msg)


def producer(w):
    """wg_producer."""
    g, kq, pending = 0, 0, None
    ST = w.ST

    def signal(keep):
        nonlocal pending
        if pending is None:
            return
        mine = list(w.issued[:-keep] if keep else w.issued)
        yield lambda: all(gr["landed"] for gr in mine)  # cp.async.wait_group keep
        # fence.proxy.async; mbarrier.arrive
        pending.arrive()
        pending = None

    def issue_tile(pi, j):
        nonlocal g, pending
        s = g % ST
        ph = ((g // ST) & 1) ^ 1
        yield lambda: w.empty[s].done(ph)
        for kind in ("K", "V"):
            if w.readers.get((kind, s)):
                w.err(f"producer overwrites {kind} stage {s} while a wgmma reads it (tile {g})")
        w.stage[s] = None  # being overwritten
        gr = {"kind": "stage", "idx": s, "content": (pi, j), "landed": False}
        w.groups.append(gr)
        w.issued.append(gr)
        yield None
        yield from signal(1)
        pending = w.full[s]
        g += 1

    for pi, nt in enumerate(w.pairs):
        if nt > 0:
            yield from issue_tile(pi, 0)
        yield from signal(0)
        ph = (kq & 1) ^ 1
        yield lambda: w.q_empty.done(ph)
        if w.readers.get(("Q", 0)):
            w.err(f"producer overwrites Q while a wgmma reads it (pair {pi})")
        w.q = None
        gr = {"kind": "q", "idx": 0, "content": pi, "landed": False}
        w.groups.append(gr)
        w.issued.append(gr)
        yield None
        pending = w.q_full
        kq += 1
        for j in range(1, nt):
            yield from issue_tile(pi, j)
    yield from signal(0)


def producer_f8(w):
    """wg_producer_f8."""
    ST, B8 = w.ST, 2
    tiles = [(pi, j) for pi, nt in enumerate(w.pairs) for j in range(nt)]  # the cursor's order
    issued = []  # the byte groups, in order
    conv, kq = 0, 0

    def issue():
        n = len(issued)
        if n >= len(tiles):
            return
        b = n % B8
        if n - B8 >= conv:
            w.err(f"producer refills byte stage {b} with tile {n} before tile {n - B8} was converted")
        w.byte[b] = None  # being overwritten
        gr = {"kind": "byte", "idx": b, "content": tiles[n], "landed": False}
        w.groups.append(gr)
        issued.append(gr)

    def convert():
        nonlocal conv
        keep = 1 if len(issued) > conv + 1 else 0
        mine = list(issued[:len(issued) - keep])
        yield lambda: all(gr["landed"] for gr in mine)  # cp.async.wait_group keep
        s = conv % ST
        ph = ((conv // ST) & 1) ^ 1
        yield lambda: w.empty[s].done(ph)
        for kind in ("K", "V"):
            if w.readers.get((kind, s)):
                w.err(f"producer overwrites {kind} stage {s} while a wgmma reads it (tile {conv})")
        if w.byte[conv % B8] != tiles[conv]:
            w.err(f"conversion of tile {tiles[conv]} reads byte stage {conv % B8} = {w.byte[conv % B8]}")
        w.stage[s] = tiles[conv]  # st.shared: in place at once
        yield None
        w.full[s].arrive()  # fence.proxy.async; mbarrier.arrive
        conv += 1
        issue()

    for _ in range(B8):
        issue()
    for pi, nt in enumerate(w.pairs):
        if nt > 0:
            yield from convert()
        ph = (kq & 1) ^ 1
        yield lambda: w.q_empty.done(ph)
        if w.readers.get(("Q", 0)):
            w.err(f"producer overwrites Q while a wgmma reads it (pair {pi})")
        w.q = pi  # wg_load_q_f8: st.shared
        yield None
        w.q_full.arrive()
        kq += 1
        for _ in range(1, nt):
            yield from convert()
    if conv != len(tiles):
        w.err(f"producer converted {conv} of {len(tiles)} tiles")


def consumer(w, wg):
    """wg_consumer."""
    ST = w.ST
    g, kq = 0, 0
    inflight = []  # wgmma groups of this warpgroup: list of list of (kind, idx)

    def read(kind, idx, want):
        have = w.q if kind == "Q" else w.stage[idx]
        if have != want:
            w.err(f"wg{wg} wgmma reads {kind}[{idx}] = {have}, expected {want}")
        w.readers.setdefault((kind, idx), set()).add(wg)

    def commit(reads):
        inflight.append(reads)

    def wait(n):  # wgmma.wait_group n: the oldest groups complete (after a random while)
        while len(inflight) > n:
            yield None
            done = inflight.pop(0)
            for kind, idx in done:
                w.readers[(kind, idx)].discard(wg)

    for pi, nt in enumerate(w.pairs):
        ph = kq & 1
        yield lambda: w.q_full.done(ph)
        kq += 1
        if nt == 0:
            w.q_empty.arrive()
        for j in range(nt):
            s = g % ST
            ph = (g // ST) & 1
            yield lambda: w.full[s].done(ph)
            read("Q", 0, pi)
            read("K", s, (pi, j))
            commit([("Q", 0), ("K", s)])
            yield from wait(0)
            if w.dca and w.rng.random() < 0.3:  # a boundary tile: 1 .. 8 slices, each a group waited on
                for _ in range(w.rng.randint(1, 8)):
                    yield None
                    read("Q", 0, pi)
                    read("K", s, (pi, j))
                    commit([("Q", 0), ("K", s)])
                    yield from wait(0)
            if j == nt - 1:
                w.q_empty.arrive()
            yield None
            read("V", s, (pi, j))
            commit([("V", s)])
            yield from wait(0)
            w.empty[s].arrive()
            g += 1
        key = (pi, wg)
        w.outputs[key] = w.outputs.get(key, 0) + 1
        yield None


def run(seed, stages, pairs, dca=False, f8=False):
    rng = random.Random(seed)
    w = World(rng, stages, pairs, dca, f8)
    live = {"P": producer_f8(w) if f8 else producer(w), "C0": consumer(w, 0), "C1": consumer(w, 1)}
    waiting = {a: None for a in live}  # the predicate an agent is parked on
    for _ in range(1000000):
        if not live and not w.groups:
            break
        runnable = [a for a in live if waiting[a] is None or waiting[a]()]
        choices = runnable + (["land"] if w.groups else [])
        if not choices:
            return "deadlock: " + ", ".join(sorted(live))
        pick = rng.choice(choices)
        if pick == "land":  # some in-flight cp.async group lands (any order)
            gr = w.groups.pop(rng.randrange(len(w.groups)))
            gr["landed"] = True
            if gr["kind"] == "stage":
                w.stage[gr["idx"]] = gr["content"]
            elif gr["kind"] == "byte":
                w.byte[gr["idx"]] = gr["content"]
            else:
                w.q = gr["content"]
            continue
        try:
            waiting[pick] = next(live[pick])
        except StopIteration:
            del live[pick]
        if w.errors:
            return w.errors[0]
    else:
        return "no end"
    for pi in range(len(pairs)):
        for wg in (0, 1):
            if w.outputs.get((pi, wg)) != 1:
                return f"pair {pi} wg {wg} stored {w.outputs.get((pi, wg), 0)} times"
    return None


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    bad = 0
    # extend_wg_cfg<DQK, DV, NQ, F8, BNT>::STAGES: 3 at qk 128, 4 at qk 192 on 64-column tiles
    # (forward_ragged's DeepSeek shape: the same protocol, a deeper ring), 2 for dual chunk (three
    # Q tiles, boundary slices) and 2 for F8 (beside its byte ring)
    for stages, dca, f8 in ((3, False, False), (4, False, False), (2, True, False), (2, False, True)):
        fails, first = 0, None
        for r in range(runs):
            rng = random.Random(r * 7919 + stages + 100 * dca + 1000 * f8)
            n = rng.randint(1, 6)
            pairs = [rng.choice([0, 1, 1, 2, 3, 5, 8]) for _ in range(n)]
            res = run(r, stages, pairs, dca, f8)
            if res:
                fails += 1
                first = first or f"{res} (pairs {pairs}, seed {r})"
        print(f"{'PASS' if fails == 0 else 'FAIL'} stages {stages}{' dual chunk' if dca else ''}"
              f"{' fp8 byte ring' if f8 else ''}: "
              f"{fails}/{runs} runs failed" + (f"; first: {first}" if first else ""))
        bad += fails
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
