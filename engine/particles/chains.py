"""Chains of sticks: a cloth's stretch and shear sticks and ropes (sticks of priority 0 and
below added chained: not a soft body's, nor a cloth's bending) cut into straight paths that
are solved exactly.

Why: colour-by-colour Gauss-Seidel moves a correction one stick per pass, so a cloth 30 sticks
long needs hundreds of passes to carry its weight to the pins; at one iteration a pinned curtain
sagged 89, 26 and 8.9 mm at 5, 10 and 20 substeps (converged: 4.2), a 5 kg box went through a
light sheet, and a sheet pulled at two pins held its stretch in every other stick (1.2, 1.0,
1.2, ...: alternate projections hand the strain back and forth), so it tore at a third of its
factor. A chain's sticks couple only with their neighbours, so the linearised XPBD system of a
chain is tridiagonal and is solved exactly in one pass (line relaxation; Deul et al. 2018 solve
rods the same way): a grid cloth's rows, then its columns, each converged along its length
(and its diagonals likewise).

``stick_chains`` builds the chains once (the builder): at each movable particle its sticks are
paired into straight continuations (most nearly opposite first, within 60 degrees of straight),
the pairs linked into paths, paths cut where they would meet a particle twice or close a loop,
and at pinned particles; a path pinned at both ends is damped (rigid and straight it would be
singular: nothing could change its length). Chains sharing no movable particle form a group,
solved on all cores at once; groups run one after another (Gauss-Seidel between them).
"""

from __future__ import annotations

import numpy as np

# Two sticks at a particle continue each other when their directions away from it are within
# 60 degrees of opposite (a grid's row and column meet at 90: they stay apart).
STRAIGHT = -0.5
# chain_flags bits
SHAKE, DAMPED = 1, 2


def _pair_straight(ends: np.ndarray, positions: np.ndarray, movable: np.ndarray) -> np.ndarray:
    """partner (m, 2): the stick that continues stick s through its end e (-1: none there).

    At each movable particle its sticks are paired most nearly opposite first (greedy, in rounds:
    a pair that is the best of both its sticks is taken, then the rest again; the same pairs as
    taking them one by one from the best), pairs further than 60 degrees from straight not at all."""
    m = len(ends)
    partner = np.full((m, 2), -1, np.int64)
    slot_particle = ends.ravel()  # slot 2 s + e: stick s at its end e
    d = positions[ends[:, 1]] - positions[ends[:, 0]]
    d = d / np.maximum(np.linalg.norm(d, axis=1), 1e-300)[:, None]
    out = np.repeat(d, 2, axis=0) * np.tile([1.0, -1.0], m)[:, None]  # away from the particle
    order = np.argsort(slot_particle, kind="stable")
    sorted_particle = slot_particle[order]
    first = np.searchsorted(sorted_particle, sorted_particle, side="left")
    degree = np.searchsorted(sorted_particle, sorted_particle, side="right") - first
    rank_in = np.arange(len(order)) - first
    keep = movable[sorted_particle]
    pa, pb = [], []
    for k in range(1, int(degree.max(initial=0))):
        # slot at rank r pairs with the slot k further on at the same particle
        sel = np.flatnonzero(keep & (rank_in + k < degree))
        pa.append(order[sel])
        pb.append(order[sel + k])
    if not pa:
        return partner
    ca, cb = np.concatenate(pa), np.concatenate(pb)
    cos = np.einsum("ij,ij->i", out[ca], out[cb])
    ok = cos <= STRAIGHT
    ca, cb, cos = ca[ok], cb[ok], cos[ok]
    rank = np.empty(len(cos), np.int64)
    rank[np.lexsort((cb, ca, cos))] = np.arange(len(cos))
    live = np.ones(len(cos), bool)
    while np.any(live):
        best = np.full(2 * m, len(cos), np.int64)
        np.minimum.at(best, ca[live], rank[live])
        np.minimum.at(best, cb[live], rank[live])
        take = live & (best[ca] == rank) & (best[cb] == rank)
        sa, sb = ca[take], cb[take]
        partner[sa // 2, sa % 2] = sb // 2
        partner[sb // 2, sb % 2] = sa // 2
        done = np.zeros(2 * m, bool)
        done[sa] = done[sb] = True
        live &= ~(done[ca] | done[cb])
    return partner


def stick_chains(i: np.ndarray, j: np.ndarray, positions: np.ndarray, movable: np.ndarray):
    """Chains over sticks i, j (m,) at rest positions (n, 3).

    Returns (chain_sticks, chain_flip, chain_offsets, chain_flags, group_offsets): chain k is
    the sticks ``chain_sticks[chain_offsets[k]:chain_offsets[k + 1]]`` in path order,
    ``chain_flip`` (1) where a stick runs j -> i along its chain, ``chain_flags[k]``: SHAKE where
    it touches no other chain, DAMPED where it is pinned at both ends (see below); group g is
    the chains ``group_offsets[g]:group_offsets[g + 1]``, no movable particle in two of them.
    Every stick is in exactly one chain (a lone stick is a chain of one)."""
    m = len(i)
    if m == 0:
        z = np.zeros(0, np.int64)
        return z, np.zeros(0, np.int8), np.zeros(1, np.int64), np.zeros(0, np.int8), np.zeros(1, np.int64)
    ends = np.stack([i, j], axis=1)  # (m, 2)
    partner = _pair_straight(ends, positions, movable)
    ends_l, partner_l = ends.tolist(), partner.tolist()
    seen = np.zeros(m, bool)
    pieces: list[list[tuple[int, int]]] = []  # each chain's (stick, flip)

    def walk(s: int, entry: int) -> None:
        """From stick s entered at its end ``entry``, along partners; where the path would meet a
        particle twice, a new chain starts."""
        while s >= 0 and not seen[s]:
            path, visited = [], {ends_l[s][entry]}
            while s >= 0 and not seen[s]:
                b = ends_l[s][1 - entry]
                if b in visited:
                    break
                seen[s] = True
                path.append((s, entry))  # entry 0: runs i -> j (flip 0)
                visited.add(b)
                nxt = partner_l[s][1 - entry]
                s = nxt
                if nxt >= 0:
                    entry = 0 if ends_l[nxt][0] == b else 1
            pieces.append(path)

    # Paths first, from the end of each stick that has no partner there; then loops (cut open).
    for s in range(m):
        if seen[s]:
            continue
        if partner_l[s][0] < 0:
            walk(s, 0)
        elif partner_l[s][1] < 0:
            walk(s, 1)
    for s in range(m):
        if not seen[s]:
            walk(s, 0)
    # Group: longest first, each taking the lowest group free at all its movable particles.
    pieces.sort(key=lambda p: (-len(p), p[0][0]))
    used: dict[int, int] = {}
    group = []
    for path in pieces:
        parts = {ends_l[s][0] for s, _ in path} | {ends_l[s][1] for s, _ in path}
        parts = [p for p in parts if movable[p]]
        taken = 0
        for p in parts:
            taken |= used.get(p, 0)
        g = (~taken & (taken + 1)).bit_length() - 1
        group.append(g)
        for p in parts:
            used[p] = used.get(p, 0) | (1 << g)
    # A chain no other chain touches (a rope, a lone stick) moves along its sticks' directions at
    # the substep's start (SHAKE, as project_sticks: a swinging rope keeps its energy); chains
    # that cross others (a cloth's rows and columns) along their directions now: along the
    # start directions a 33 x 33 curtain's crossing rows and columns blew up at 5 substeps.
    share: dict[int, int] = {}
    for path in pieces:
        for p in {ends_l[s][e] for s, _ in path for e in (0, 1)}:
            share[p] = share.get(p, 0) + 1
    alone = [all(share[ends_l[s][e]] == 1 or not movable[ends_l[s][e]] for s, _ in path for e in (0, 1))
             for path in pieces]
    # A chain pinned at both ends is damped (see CHAIN_DAMPING in the kernels): rigid and
    # straight, nothing could change its length, and its system would be singular.
    held = [len(path) >= 2 and not movable[ends_l[path[0][0]][path[0][1]]]
            and not movable[ends_l[path[-1][0]][1 - path[-1][1]]] for path in pieces]
    by_group = sorted(range(len(pieces)), key=lambda k: (group[k], k))
    chain_sticks = np.array([s for k in by_group for s, _ in pieces[k]], np.int64)
    chain_flip = np.array([e for k in by_group for _, e in pieces[k]], np.int8)
    chain_offsets = np.concatenate([[0], np.cumsum([len(pieces[k]) for k in by_group])]).astype(np.int64)
    chain_flags = np.array([int(alone[k]) * SHAKE + int(held[k]) * DAMPED for k in by_group], np.int8)
    groups = np.array([group[k] for k in by_group], np.int64)
    group_offsets = np.searchsorted(groups, np.arange(groups.max() + 2)).astype(np.int64)
    return chain_sticks, chain_flip, chain_offsets, chain_flags, group_offsets
