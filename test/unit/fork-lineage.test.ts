import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type BasedSegment, composeLineage, type ForkPoint, type LineageSegment } from '#libs/engine';
import { DomainError } from '#libs/errors';
import { codeOf } from './support/aggregate-fixtures.js';

// composeLineage: the lineage of a new fork from its source's lineage and the fork point. Then a
// model test of the invariants: random fork trees over simulated item and turn seqs, each session's
// lineage view (its own rows, then each ancestor's rows up to that ancestor's bound, by seq) equals
// the history a naive fork would have copied.

const point = (over: Partial<ForkPoint> & Pick<ForkPoint, 'ownerSessionId' | 'itemSeq' | 'turnSeq'>): ForkPoint => ({
  turnId: 't',
  ownerWorkdirId: over.ownerSessionId,
  position: 'after',
  ...over,
});

describe('composeLineage', () => {
  it('a fork of a session at its own turn: one segment, bounded by the point', () => {
    assert.deepEqual(composeLineage({ id: 'S', forkItemSeq: null, forkTurnSeq: null, lineage: [] }, point({ ownerSessionId: 'S', itemSeq: '7', turnSeq: 2 }), 8), [
      { depth: 1, sessionId: 'S', uptoItemSeq: '7', uptoTurnSeq: 2 },
    ]);
  });

  it('a fork of a fork at the fork\'s own turn: the fork, then its ancestors as they were (already within the bound)', () => {
    const lineage: BasedSegment[] = [{ depth: 1, sessionId: 'S', uptoItemSeq: '7', uptoTurnSeq: 2, base: '0', turnBase: 0 }];
    assert.deepEqual(composeLineage({ id: 'F', forkItemSeq: '7', forkTurnSeq: 2, lineage }, point({ ownerSessionId: 'F', itemSeq: '12', turnSeq: 3 }), 8), [
      { depth: 1, sessionId: 'F', uptoItemSeq: '12', uptoTurnSeq: 3 },
      { depth: 2, sessionId: 'S', uptoItemSeq: '7', uptoTurnSeq: 2 },
    ]);
  });

  it('an inherited point drops the nearer sessions and clamps the owner: the depth does not grow', () => {
    const lineage: BasedSegment[] = [
      { depth: 1, sessionId: 'F', uptoItemSeq: '12', uptoTurnSeq: 3, base: '7', turnBase: 2 },
      { depth: 2, sessionId: 'S', uptoItemSeq: '7', uptoTurnSeq: 2, base: '0', turnBase: 0 },
    ];
    assert.deepEqual(composeLineage({ id: 'G', forkItemSeq: '12', forkTurnSeq: 3, lineage }, point({ ownerSessionId: 'S', itemSeq: '4', turnSeq: 1 }), 8), [
      { depth: 1, sessionId: 'S', uptoItemSeq: '4', uptoTurnSeq: 1 },
    ]);
    assert.deepEqual(composeLineage({ id: 'G', forkItemSeq: '12', forkTurnSeq: 3, lineage }, point({ ownerSessionId: 'F', itemSeq: '9', turnSeq: 3 }), 8), [
      { depth: 1, sessionId: 'F', uptoItemSeq: '9', uptoTurnSeq: 3 },
      { depth: 2, sessionId: 'S', uptoItemSeq: '7', uptoTurnSeq: 2 },
    ]);
  });

  it('leaves out a segment holding nothing up to the bound (a fork before the owner\'s first own turn)', () => {
    const lineage: BasedSegment[] = [{ depth: 1, sessionId: 'S', uptoItemSeq: '7', uptoTurnSeq: 2, base: '0', turnBase: 0 }];
    assert.deepEqual(composeLineage({ id: 'F', forkItemSeq: '7', forkTurnSeq: 2, lineage }, point({ ownerSessionId: 'F', itemSeq: '7', turnSeq: 2, position: 'before' }), 8), [
      { depth: 1, sessionId: 'S', uptoItemSeq: '7', uptoTurnSeq: 2 },
    ]);
    assert.deepEqual(composeLineage({ id: 'S', forkItemSeq: null, forkTurnSeq: null, lineage: [] }, point({ ownerSessionId: 'S', itemSeq: '0', turnSeq: 0, position: 'before' }), 8), []);
  });

  it('keeps a segment whose own turns up to the point hold no item (a failed manual compaction): its turns are the fork\'s history', () => {
    // F (forked from S after item 7, turn 2) ran turn 3 without items; a fork of F after turn 3 keeps F for that turn.
    const lineage: BasedSegment[] = [{ depth: 1, sessionId: 'S', uptoItemSeq: '7', uptoTurnSeq: 2, base: '0', turnBase: 0 }];
    assert.deepEqual(composeLineage({ id: 'F', forkItemSeq: '7', forkTurnSeq: 2, lineage }, point({ ownerSessionId: 'F', itemSeq: '7', turnSeq: 3 }), 8), [
      { depth: 1, sessionId: 'F', uptoItemSeq: '7', uptoTurnSeq: 3 },
      { depth: 2, sessionId: 'S', uptoItemSeq: '7', uptoTurnSeq: 2 },
    ]);
    // The same of an ancestor: G (a fork of F at turn 4) forked at F's item-less turn 3.
    const ofG: BasedSegment[] = [
      { depth: 1, sessionId: 'F', uptoItemSeq: '9', uptoTurnSeq: 4, base: '7', turnBase: 2 },
      { depth: 2, sessionId: 'S', uptoItemSeq: '7', uptoTurnSeq: 2, base: '0', turnBase: 0 },
    ];
    assert.deepEqual(composeLineage({ id: 'G', forkItemSeq: '9', forkTurnSeq: 4, lineage: ofG }, point({ ownerSessionId: 'F', itemSeq: '7', turnSeq: 3 }), 8), [
      { depth: 1, sessionId: 'F', uptoItemSeq: '7', uptoTurnSeq: 3 },
      { depth: 2, sessionId: 'S', uptoItemSeq: '7', uptoTurnSeq: 2 },
    ]);
  });

  it('refuses a lineage deeper than the limit with fork_depth_exceeded (details.limit), and accepts one at the limit', () => {
    const lineage: BasedSegment[] = [
      { depth: 1, sessionId: 'B', uptoItemSeq: '20', uptoTurnSeq: 4, base: '10', turnBase: 2 },
      { depth: 2, sessionId: 'A', uptoItemSeq: '10', uptoTurnSeq: 2, base: '0', turnBase: 0 },
    ];
    const source = { id: 'C', forkItemSeq: '20', forkTurnSeq: 4, lineage };
    const at = point({ ownerSessionId: 'C', itemSeq: '25', turnSeq: 5 });
    assert.equal(composeLineage(source, at, 3).length, 3);
    assert.equal(codeOf(() => composeLineage(source, at, 2)), 'fork_depth_exceeded');
    try {
      composeLineage(source, at, 2);
    } catch (error) {
      assert.deepEqual((error as DomainError).details, { limit: 2 });
    }
    // The same source forked at an inherited turn is within the limit.
    assert.equal(composeLineage(source, point({ ownerSessionId: 'B', itemSeq: '15', turnSeq: 3 }), 2).length, 2);
  });

  it('big seqs keep their precision (bigint as text)', () => {
    const big = '9007199254740993';
    assert.deepEqual(composeLineage({ id: 'S', forkItemSeq: null, forkTurnSeq: null, lineage: [] }, point({ ownerSessionId: 'S', itemSeq: big, turnSeq: 1 }), 8), [
      { depth: 1, sessionId: 'S', uptoItemSeq: big, uptoTurnSeq: 1 },
    ]);
  });
});

// ------------------------------------------------------------------ the model test

interface Turn {
  id: string;
  seq: number;
  items: { id: string; seq: number }[];
}
interface Sim {
  id: string;
  base: number;
  turnBase: number;
  lineage: LineageSegment[];
  turns: Turn[];
  itemSeq: number;
  turnSeq: number;
  /** What a fork that copied rows would hold: turn ids and item ids in history order. */
  naiveTurns: string[];
  naiveItems: string[];
}

/** A small deterministic generator (mulberry32), so a failure names its seed. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The lineage view: own turns/items, then each ancestor's up to its bounds, ordered by seq (the reads' seg CTE). */
function view(sims: Map<string, Sim>, s: Sim): { turns: Turn[]; items: { id: string; seq: number }[] } {
  const segs = [{ sim: s, hiItem: Infinity, hiTurn: Infinity }, ...s.lineage.map((l) => ({ sim: sims.get(l.sessionId)!, hiItem: Number(l.uptoItemSeq), hiTurn: l.uptoTurnSeq }))];
  const turns = segs.flatMap((g) => g.sim.turns.filter((t) => t.seq <= g.hiTurn)).sort((a, b) => a.seq - b.seq);
  const items = segs.flatMap((g) => g.sim.turns.flatMap((t) => t.items).filter((i) => i.seq <= g.hiItem)).sort((a, b) => a.seq - b.seq);
  return { turns, items };
}

/** The fork point as ForkPoints computes it from the rows: the owner's last item at or before the bound turn, else its base. */
function pointOf(sims: Map<string, Sim>, owner: Sim, turn: Turn, position: 'after' | 'before'): ForkPoint {
  const bound = position === 'after' ? turn.seq : turn.seq - 1;
  const withItems = owner.turns.filter((t) => t.seq <= bound && t.items.length > 0).pop();
  const itemSeq = withItems ? withItems.items[withItems.items.length - 1]!.seq : owner.base;
  void sims;
  return { turnId: turn.id, ownerSessionId: owner.id, ownerWorkdirId: owner.id, position, itemSeq: String(itemSeq), turnSeq: bound };
}

describe('composeLineage: the model of random fork trees', () => {
  it('every lineage view equals the naively copied history: the same ids, once each, in the same order', () => {
    let forks = 0;
    let refused = 0;
    for (let seed = 1; seed <= 60; seed += 1) {
      const rand = random(seed);
      const pick = <T>(list: T[]): T => list[Math.floor(rand() * list.length)]!;
      const sims = new Map<string, Sim>();
      let nextId = 0;
      const root: Sim = { id: 'R', base: 0, turnBase: 0, lineage: [], turns: [], itemSeq: 0, turnSeq: 0, naiveTurns: [], naiveItems: [] };
      sims.set(root.id, root);
      const maxDepth = 1 + Math.floor(rand() * 4);
      for (let step = 0; step < 40; step += 1) {
        const s = pick([...sims.values()]);
        if (rand() < 0.6) {
          // A turn: 0 to 3 items (a turn without items is rare but possible: a failed compaction).
          const turn: Turn = { id: `t${nextId++}`, seq: ++s.turnSeq, items: [] };
          const count = rand() < 0.15 ? 0 : 1 + Math.floor(rand() * 3);
          for (let i = 0; i < count; i += 1) turn.items.push({ id: `i${nextId++}`, seq: ++s.itemSeq });
          s.turns.push(turn);
          s.naiveTurns.push(turn.id);
          s.naiveItems.push(...turn.items.map((i) => i.id));
          continue;
        }
        const visible = view(sims, s).turns;
        if (visible.length === 0) continue;
        const turn = pick(visible);
        const owner = [...sims.values()].find((x) => x.turns.includes(turn))!;
        const position = rand() < 0.5 ? 'after' : 'before';
        const at = pointOf(sims, owner, turn, position);
        const based = s.lineage.map((l) => ({ ...l, base: String(sims.get(l.sessionId)!.base), turnBase: sims.get(l.sessionId)!.turnBase }));
        let lineage;
        try {
          lineage = composeLineage({ id: s.id, forkItemSeq: s === root ? null : String(s.base), forkTurnSeq: s === root ? null : s.turnBase, lineage: based }, at, maxDepth);
        } catch (error) {
          assert.equal((error as DomainError).code, 'fork_depth_exceeded');
          refused += 1;
          continue;
        }
        // What a copying fork holds: the source's turns up to the point, and their items.
        const cut = s.naiveTurns.indexOf(turn.id) + (position === 'after' ? 1 : 0);
        const keptTurns = s.naiveTurns.slice(0, cut);
        const itemsOf = new Map([...sims.values()].flatMap((x) => x.turns.map((t) => [t.id, t.items.map((i) => i.id)] as const)));
        const f: Sim = {
          id: `F${nextId++}`,
          base: Number(at.itemSeq),
          turnBase: at.turnSeq,
          lineage,
          turns: [],
          itemSeq: Number(at.itemSeq),
          turnSeq: at.turnSeq,
          naiveTurns: keptTurns,
          naiveItems: keptTurns.flatMap((id) => itemsOf.get(id)!),
        };
        sims.set(f.id, f);
        forks += 1;
      }
      for (const s of sims.values()) {
        const seen = view(sims, s);
        const ids = seen.items.map((i) => i.id);
        assert.deepEqual(ids, s.naiveItems, `seed ${seed}: the items of ${s.id}`);
        assert.equal(new Set(ids).size, ids.length, `seed ${seed}: each item once in ${s.id}`);
        assert.deepEqual(seen.turns.map((t) => t.id), s.naiveTurns, `seed ${seed}: the turns of ${s.id}, item-less ones included`);
        assert.ok(s.lineage.length <= maxDepth, `seed ${seed}: ${s.id} within the depth limit`);
        // Disjoint, decreasing ranges: each segment's own range (base, upto] lies below the nearer
        // one's, and a segment holds an item or a turn of its own.
        let above = s.base;
        let aboveTurn = s.turnBase;
        for (const l of s.lineage) {
          const { base, turnBase } = sims.get(l.sessionId)!;
          assert.ok(Number(l.uptoItemSeq) <= above && base <= Number(l.uptoItemSeq), `seed ${seed}: ${s.id} depth ${l.depth} range`);
          assert.ok(l.uptoTurnSeq <= aboveTurn && (base < Number(l.uptoItemSeq) || turnBase < l.uptoTurnSeq), `seed ${seed}: ${s.id} depth ${l.depth} holds something`);
          above = base;
          aboveTurn = turnBase;
        }
      }
    }
    assert.ok(forks > 200, `enough forks were made (${forks})`);
    assert.ok(refused > 0, `the depth limit was met (${refused})`);
  });
});
