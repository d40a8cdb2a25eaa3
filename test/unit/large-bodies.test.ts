import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { describe, it } from 'node:test';
import type { NextFunction, Request, Response } from 'express';
import { LARGE_BODY_BYTES, LargeBodyGate } from '#libs/auth';

// The per-user gate on large bodies in flight: slots taken before the body is read, given back
// when the response finishes or the connection closes, never twice.

function exchange(actorId: string, headers: Record<string, string>) {
  const res = Object.assign(new EventEmitter(), {
    locals: {},
    headersSent: false,
    statusCode: 200,
    headers: {} as Record<string, string>,
    body: undefined as unknown,
    setHeader(name: string, value: string) {
      this.headers[name.toLowerCase()] = value;
    },
    status(code: number) {
      this.statusCode = code;
      return this;
    },
    json(body: unknown) {
      this.body = body;
      return this;
    },
  });
  const req = { method: 'POST', path: '/x', headers, principal: { actorId }, header: (name: string) => headers[name.toLowerCase()] };
  return { req: req as unknown as Request, res };
}

function pass(gate: LargeBodyGate, actorId: string, headers: Record<string, string> = { 'content-length': String(LARGE_BODY_BYTES + 1) }) {
  const { req, res } = exchange(actorId, headers);
  let passed = false;
  gate.middleware(() => true)(req, res as unknown as Response, (() => (passed = true)) as NextFunction);
  return { passed, res };
}

describe('large bodies in flight per user', () => {
  it('admits max large bodies per user, refuses the next with 429 and Retry-After, and frees a slot on finish or close', () => {
    const gate = new LargeBodyGate(2);
    const a = pass(gate, 'u1');
    const b = pass(gate, 'u1');
    assert.deepEqual([a.passed, b.passed], [true, true]);
    const refused = pass(gate, 'u1');
    assert.equal(refused.passed, false);
    assert.equal(refused.res.statusCode, 429);
    assert.equal(refused.res.headers['retry-after'], '1');
    assert.equal((refused.res.body as any).error.code, 'too_many_large_bodies');
    assert.equal(pass(gate, 'u2').passed, true, 'another user has slots of its own');
    assert.equal(pass(gate, 'u1', { 'content-length': String(LARGE_BODY_BYTES) }).passed, true, 'a body of 1 MiB or less is not large');
    assert.equal(pass(gate, 'u1', { 'transfer-encoding': 'chunked' }).passed, false, 'a body of unknown length counts as large');

    a.res.emit('finish');
    a.res.emit('close');
    const c = pass(gate, 'u1');
    assert.equal(c.passed, true, 'a finished response freed one slot (once, though finish and close both came)');
    assert.equal(pass(gate, 'u1').passed, false);
    b.res.emit('close');
    assert.equal(pass(gate, 'u1').passed, true, 'a closed connection freed its slot');
  });

  it('0 means no limit, and keys without slots are forgotten', () => {
    const off = new LargeBodyGate(0);
    for (let i = 0; i < 10; i++) assert.equal(pass(off, 'u').passed, true);
    const gate = new LargeBodyGate(1);
    const one = pass(gate, 'u');
    assert.equal(gate.size, 1);
    one.res.emit('close');
    assert.equal(gate.size, 0);
  });
});
