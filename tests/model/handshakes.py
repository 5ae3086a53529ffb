#!/usr/bin/env python3
"""The solo publisher's handshakes, checked over every ordering.

Each handshake of runtime/core/src/solo.cpp, channel.cpp and ring.hpp is
written below as a few threads of steps (the shared words they touch, and
nothing else), and run in every interleaving of those steps and of the moments
each buffered store becomes visible. A handshake passes when no ordering ends
in its bad outcome (two publishers with one of them solo, a sleeper nobody
wakes, a half-written entry accepted).

The model is an operational one, weaker than x86-64 and close to what the C++
memory model and ARMv8 allow for these shapes:
  - every store, and the write of every read-modify-write, waits in its
    thread's buffer and becomes visible later, in any order across locations
    (in program order per location): a load may pass an earlier store
    (store-load) and a store an earlier store (store-store);
  - a release store or release fence keeps later stores behind earlier ones;
  - a read-modify-write reads the newest value and no other write to that
    word can come between its read and its write (its write may still wait);
  - a seq_cst fence waits until its thread's buffer is empty, so two threads
    that each store, fence and load cannot both miss the other's store;
  - membarrier (the heavy side of an asymmetric fence) empties every thread's
    buffer at once; its light side, a compiler barrier, is nothing here.
What it does not cover: loads performed out of order with each other (load-
load, load buffering), which the handshakes' acquire loads forbid and which
the seqlock readers re-check; the payload copies; more than the threads
written here (one holder, one registrant, one sleeper); the kernel's futex
(a wake is modelled as the waker seeing the sleeper's bit, which is what the
futex word's re-check makes sufficient); and the compiler, whose reorderings
the same C++ orders forbid.

Each handshake is checked as the code is (it must hold), and without the
order the code relies on (the fence removed, or the revoker's wake): the
model must find the bad outcome there, so a model too strong to see the bug
fails this test too.

Usage: handshakes.py [-v]    exit 0 when every result is as expected.
"""

import sys
from dataclasses import dataclass

# Instructions: tuples, first item the opcode.
#   ("st", loc, val, rel)        store (rel: release store)
#   ("ld", loc, reg)             load into reg
#   ("cas", loc, exp, new, reg)  compare-and-swap, acq_rel; reg = 1 on success
#   ("or", loc, bits)            fetch_or
#   ("fence_sc",) ("fence_rel",) ("membarrier",)
#   ("await", loc, val)          a wait loop: blocks until loc == val
#   ("jeq", reg, val, label) ("jne", reg, val, label) ("jmp", label)
#   ("set", reg, val) ("label", name) ("halt",)


@dataclass(frozen=True)
class Thread:
    name: str
    code: tuple


def assemble(code):
    """Labels to indices; returns a tuple of instructions without labels."""
    out, labels = [], {}
    for ins in code:
        if ins[0] == "label":
            labels[ins[1]] = len(out)
        else:
            out.append(ins)
    fixed = []
    for ins in out:
        if ins[0] in ("jeq", "jne"):
            ins = (ins[0], ins[1], ins[2], labels[ins[3]])
        elif ins[0] == "jmp":
            ins = ("jmp", labels[ins[1]])
        fixed.append(ins)
    fixed.append(("halt",))
    return tuple(fixed)


BARRIER = ("|",)


def explore(threads, init, bad, verbose=False):
    """Every reachable final state; returns (bad finals, stuck states, states seen)."""
    progs = [assemble(t.code) for t in threads]
    n = len(progs)
    mem0 = tuple(sorted(init.items()))
    start = (tuple([0] * n), tuple([()] * n), tuple([()] * n), mem0)
    seen = {start}
    stack = [start]
    bad_finals, stuck = [], []

    # Registers and memory are sorted tuples of (name, value), so that a
    # state can be hashed; an absent name reads 0.
    def get(pairs, name):
        return dict(pairs).get(name, 0)

    def put(pairs, name, v):
        d = dict(pairs)
        d[name] = v
        return tuple(sorted(d.items()))

    regs_get = mem_get = get
    regs_set = mem_set = put

    def read(bufs, mem, t, loc):
        for e in reversed(bufs[t]):
            if e is not BARRIER and e[0] == loc:
                return e[1]
        return mem_get(mem, loc)

    def pending_elsewhere(bufs, t, loc):
        return any(e is not BARRIER and e[0] == loc for u, b in enumerate(bufs) if u != t for e in b)

    def drainable(buf):
        """Indices of entries that may become visible now."""
        out, locs = [], set()
        for i, e in enumerate(buf):
            if e is BARRIER:
                break
            if e[0] not in locs:
                out.append(i)
            locs.add(e[0])
        return out

    def normalize(buf):
        buf = list(buf)
        while buf and buf[0] is BARRIER:
            buf.pop(0)
        return tuple(buf)

    def flush(bufs, mem, t):
        for e in bufs[t]:
            if e is not BARRIER:
                mem = mem_set(mem, e[0], e[1])
        return mem

    def push(state_list, s):
        if s not in seen:
            seen.add(s)
            state_list.append(s)

    while stack:
        pcs, regs, bufs, mem = stack.pop()
        moved = False
        # Buffered stores becoming visible.
        for t in range(n):
            for i in drainable(bufs[t]):
                loc, val = bufs[t][i][0], bufs[t][i][1]
                nb = list(bufs)
                nb[t] = normalize(bufs[t][:i] + bufs[t][i + 1:])
                push(stack, (pcs, regs, tuple(nb), mem_set(mem, loc, val)))
                moved = True
        # Threads' next steps.
        for t in range(n):
            ins = progs[t][pcs[t]]
            op = ins[0]
            if op == "halt":
                continue
            npcs = list(pcs)
            npcs[t] += 1
            nregs, nbufs, nmem = list(regs), list(bufs), mem
            enabled = True
            if op == "st":
                _, loc, val, rel = ins
                if pending_elsewhere(bufs, t, loc):
                    enabled = False  # another thread's locked RMW write
                else:
                    nbufs[t] = normalize(bufs[t] + ((BARRIER,) if rel else ()) + ((loc, val),))
            elif op == "ld":
                nregs[t] = regs_set(regs[t], ins[2], read(bufs, mem, t, ins[1]))
            elif op in ("cas", "or"):
                loc = ins[1]
                if pending_elsewhere(bufs, t, loc):
                    enabled = False
                else:
                    cur = read(bufs, mem, t, loc)
                    if op == "cas":
                        ok = cur == ins[2]
                        nregs[t] = regs_set(regs[t], ins[4], 1 if ok else 0)
                        # acq_rel: its write is a release (behind earlier stores).
                        if ok:
                            nbufs[t] = normalize(bufs[t] + (BARRIER, (loc, ins[3])))
                    else:
                        nbufs[t] = normalize(bufs[t] + ((loc, cur | ins[2]),))
            elif op == "fence_sc":
                enabled = not bufs[t]
            elif op == "fence_rel":
                nbufs[t] = normalize(bufs[t] + (BARRIER,))
            elif op == "membarrier":
                for u in range(n):
                    nmem = flush(nbufs, nmem, u)
                    nbufs[u] = ()
            elif op == "await":
                enabled = read(bufs, mem, t, ins[1]) == ins[2]
            elif op in ("jeq", "jne"):
                v = regs_get(regs[t], ins[1])
                if (v == ins[2]) == (op == "jeq"):
                    npcs[t] = ins[3]
            elif op == "jmp":
                npcs[t] = ins[1]
            elif op == "set":
                nregs[t] = regs_set(regs[t], ins[1], ins[2])
            else:
                raise ValueError(ins)
            if enabled:
                push(stack, (tuple(npcs), tuple(nregs), tuple(nbufs), nmem))
                moved = True
        if not moved:
            done = all(progs[t][pcs[t]][0] == "halt" for t in range(n))
            final = {threads[t].name: dict(regs[t]) for t in range(n)}
            final["mem"] = dict(mem)
            if not done:
                stuck.append(final)
            elif bad(final):
                bad_finals.append(final)
    if verbose:
        print(f"    {len(seen)} states")
    return bad_finals, stuck, len(seen)


# --- The handshakes -------------------------------------------------------
# Words: solo (0 shared, 1 granted), entry (the registrant's publisher
# entry: 0 free, 1 claimed), waiters (the sleepers' bits), slot (1 once the
# message is committed), busy (the holder's solo_busy), fields (an entry's
# counters: 5 the old holder's, 0 the new one's).


# A subscriber going to sleep (Channel::enter_waiters, then its last check):
# its bit, a fence, the grant (membarrier while one is held), the slot.
SLEEPER = (
    ("or", "waiters", 1),
    ("fence_sc",),
    ("ld", "solo", "g"),
    ("jeq", "g", 0, "check"),
    ("membarrier",),
    ("label", "check"),
    ("ld", "slot", "s"),
)


def grant_vs_registration(fixed):
    """take_solo_grant + keep_solo_grant against a registering publisher's claim + end_solo."""
    holder = [
        ("cas", "solo", 0, 1, "granted"),
        ("jeq", "granted", 0, "out"),
    ] + ([("fence_sc",)] if fixed else []) + [
        ("ld", "entry", "other"),          # publishers_present
        ("jeq", "other", 0, "keep"),
        ("cas", "solo", 1, 2, "reverted"),  # revert
        ("set", "keeps", 0),
        ("jmp", "out"),
        ("label", "keep"),
        ("set", "keeps", 1),
        ("label", "out"),
    ]
    registrant = [
        ("cas", "entry", 0, 1, "claimed"),
    ] + ([("fence_sc",)] if fixed else []) + [
        ("ld", "solo", "seen"),            # end_solo
        ("jne", "seen", 1, "out"),
        ("cas", "solo", 1, 2, "revoked"),
        ("label", "out"),
    ]
    threads = [Thread("holder", tuple(holder)), Thread("registrant", tuple(registrant))]

    def bad(f):
        # The holder keeps a grant that the registrant neither saw nor revoked.
        return f["holder"].get("keeps") == 1 and f["mem"]["solo"] == 1

    return threads, {"solo": 0, "entry": 0}, bad


def grant_vs_sleeper(fixed):
    """A new grant's first solo publish against a subscriber going to sleep."""
    holder = [
        ("cas", "solo", 0, 1, "granted"),
    ] + ([("fence_sc",)] if fixed else []) + [
        # solo publish: commit (plain release store), compiler barrier, wake check
        ("st", "slot", 1, True),
        ("ld", "waiters", "w"),
    ]
    threads = [Thread("holder", tuple(holder)), Thread("sleeper", SLEEPER)]

    def bad(f):
        return f["sleeper"]["s"] == 0 and f["holder"]["w"] == 0

    return threads, {"solo": 0, "waiters": 0, "slot": 0}, bad


def revocation_in_flight(fixed):
    """A solo publish in flight, its revoker, and a sleeper after the revocation."""
    holder = [
        ("st", "busy", 1, True),           # solo_begin's busy stores (release)
        ("ld", "solo", "g"),               # grant check (after a compiler barrier)
        ("jeq", "g", 0, "out"),
        ("st", "slot", 1, True),           # commit
        ("ld", "waiters", "w"),            # fence-free wake check
        ("st", "busy", 0, True),           # solo_end
        ("jmp", "end"),
        ("label", "out"),
        ("st", "busy", 0, True),           # revoked: busy cleared, shared path
        ("label", "end"),
    ]
    revoker = [
        ("cas", "solo", 1, 0, "revoked"),
        ("membarrier",),
        ("await", "busy", 0),
    ] + ([("fence_sc",), ("ld", "waiters", "w")] if fixed else [])
    threads = [Thread("holder", tuple(holder)), Thread("revoker", tuple(revoker)), Thread("sleeper", SLEEPER)]

    def bad(f):
        woken = f["holder"].get("w", 0) != 0 or f["revoker"].get("w", 0) != 0
        # A sleeper that finds no message must be woken once one is committed.
        return f["sleeper"]["s"] == 0 and f["mem"]["slot"] == 1 and not woken

    return threads, {"solo": 1, "waiters": 0, "slot": 0, "busy": 0}, bad


def shared_commit_wake(fixed):
    """The shared path: commit CAS, fence, wake check; against a sleeper."""
    publisher = [
        ("cas", "slot", 0, 1, "c"),
    ] + ([("fence_sc",)] if fixed else []) + [
        ("ld", "waiters", "w"),
    ]
    sleeper = [
        ("or", "waiters", 1),
        ("fence_sc",),
        ("ld", "slot", "s"),
    ]
    threads = [Thread("publisher", tuple(publisher)), Thread("sleeper", tuple(sleeper))]

    def bad(f):
        return f["sleeper"]["s"] == 0 and f["publisher"]["w"] == 0

    return threads, {"slot": 0, "waiters": 0}, bad


def entry_seqlock(fixed):
    """claim_entry's refill of an entry against publisher_count's seqlock read."""
    writer = [
        ("cas", "entry", 0, 1, "claimed"),
    ] + ([("fence_rel",)] if fixed else []) + [
        ("st", "fields", 0, False),        # the counters reset (relaxed)
        ("st", "entry", 2, True),          # Live (release)
    ]
    reader = [
        ("ld", "entry", "s1"),             # acquire
        ("ld", "fields", "v"),
        # acquire fence: loads stay in order in this model
        ("ld", "entry", "s2"),
    ]
    threads = [Thread("writer", tuple(writer)), Thread("reader", tuple(reader))]

    def bad(f):
        r = f["reader"]
        # Accepted as the free entry's (equal states, both free) with a
        # field of the new holder's.
        return r["s1"] == r["s2"] == 0 and r["v"] == 0

    return threads, {"entry": 0, "fields": 5}, bad


HANDSHAKES = [
    ("grant CAS vs. registration claim (solo.cpp take_solo_grant, keep_solo_grant, channel.cpp claim_entry)", grant_vs_registration),
    ("grant CAS vs. a sleeper (solo.cpp take_solo_grant, keep_solo_grant, channel.cpp enter_waiters)", grant_vs_sleeper),
    ("revocation vs. a solo publish in flight and a sleeper (solo.cpp end_solo)", revocation_in_flight),
    ("shared commit vs. a sleeper (ring.hpp wake_waiters)", shared_commit_wake),
    ("entry refill vs. its seqlock reader (channel.cpp claim_entry, publisher_count)", entry_seqlock),
]


def main():
    verbose = "-v" in sys.argv
    failures = 0
    passed = 0
    for title, make in HANDSHAKES:
        for fixed in (True, False):
            threads, init, bad = make(fixed)
            bads, stuck, states = explore(threads, init, bad, verbose)
            variant = "as built" if fixed else "without its order"
            if stuck:
                print(f"FAIL {title} [{variant}]: {len(stuck)} stuck states, e.g. {stuck[0]}")
                failures += 1
                continue
            if fixed and bads:
                print(f"FAIL {title} [{variant}]: bad outcome reachable: {bads[0]}")
                failures += 1
            elif not fixed and not bads:
                print(f"FAIL {title} [{variant}]: the model finds no bad outcome (too strong to test this)")
                failures += 1
            else:
                print(f"ok   {title} [{variant}]: {states} states, "
                      f"{'no bad outcome' if fixed else f'{len(bads)} bad outcomes, as expected'}")
                passed += 1
    print(f"{passed} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
