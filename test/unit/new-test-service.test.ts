import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { automock, newTestService } from './support/new-test-service.js';

// The helper that builds orchestrators with mocked repositories (test/unit/support/new-test-service.ts).
@Injectable()
class Rows {
  async find(_manager: EntityManager, id: string): Promise<{ id: string } | null> {
    return { id };
  }
}

@Injectable()
class Clock {
  readonly zone: string = 'UTC';
  now(): Date {
    return new Date();
  }
}

interface Mailer {
  send(to: string): Promise<void>;
}

@Injectable()
class Orchestrator {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly rows: Rows,
    private readonly clock: Clock,
    @Inject('MAILER') private readonly mailer: Mailer,
    private readonly sameRows: Rows,
  ) {}

  async run(id: string): Promise<string> {
    return this.dataSource.transaction(async (manager) => {
      const row = await this.rows.find(manager, id);
      if (!row) return 'none';
      await manager.query('SELECT 1');
      await this.mailer.send(`${row.id}@${this.clock.zone}`);
      return this.sameRows === this.rows ? 'sent once' : 'sent twice';
    });
  }
}

const manager = () => ({}) as EntityManager;

describe('newTestService', () => {
  it('builds the class with a mock for each constructor dependency, found by its type or injection token', async () => {
    const { sut, mocks, dataSource } = newTestService(Orchestrator);
    mocks.get(Rows).find.mock.mockImplementation(async (_manager, id) => ({ id }));
    mocks.get(Clock).zone = 'CET';
    assert.equal(await sut.run('a'), 'sent once', 'one mock per token: a class injected twice gets the same mock');
    const [manager, id] = mocks.get(Rows).find.mock.calls[0]!.arguments;
    assert.equal(id, 'a');
    assert.equal(manager, dataSource.transactions[0]!.manager, 'the repository got the transaction\'s manager');
    assert.deepEqual(mocks.get<Mailer>('MAILER').send.mock.calls[0]!.arguments, ['a@CET']);
    assert.equal(mocks.at(3), mocks.get('MAILER'));
  });

  it('records each transaction, its queries and whether it committed or rolled back', async () => {
    const { sut, mocks, dataSource } = newTestService(Orchestrator);
    mocks.get(Rows).find.mock.mockImplementation(async (_manager, id) => ({ id }));
    await sut.run('a');
    mocks.get<Mailer>('MAILER').send.mock.mockImplementation(async () => {
      throw new Error('mail server down');
    });
    await assert.rejects(sut.run('b'), /mail server down/);
    assert.deepEqual(dataSource.transactions.map((t) => t.outcome), ['committed', 'rolled_back']);
    assert.equal(dataSource.committed.length, 1);
    assert.equal(dataSource.transactions[1]!.manager.transactionNumber, 2);
    assert.deepEqual(dataSource.transactions[0]!.manager.query.mock.calls.map((c) => c.arguments[0]), ['SELECT 1']);
  });

  it('answers a raw query of a transaction\'s manager with the data source\'s `answer` ([] unless set)', async () => {
    const { sut, mocks, dataSource } = newTestService(Orchestrator);
    mocks.get(Rows).find.mock.mockImplementation(async (_manager, id) => ({ id }));
    dataSource.answer = (sql) => [{ sql }];
    await sut.run('a');
    assert.deepEqual(await dataSource.transactions[0]!.manager.query.mock.calls[0]!.result, [{ sql: 'SELECT 1' }]);
  });

  it('takes a given value for a token instead of a mock (the rest stay unprogrammed)', async () => {
    const clock = new Clock();
    const { sut, mocks } = newTestService(Orchestrator, [[Clock, clock]]);
    assert.equal(await sut.run('a'), 'none');
    assert.equal(mocks.get(Clock), clock);
    assert.equal(mocks.get<Mailer>('MAILER').send.mock.callCount(), 0);
  });

  it('a method declared async answers a resolved promise until programmed; any other method, undefined', async () => {
    const { mocks } = newTestService(Orchestrator);
    const found = mocks.get(Rows).find(manager(), 'a');
    assert.ok(found instanceof Promise);
    assert.equal(await found, undefined);
    assert.equal(mocks.get(Clock).now(), undefined);
    assert.equal(mocks.get<Mailer>('MAILER').send('x'), undefined, 'an interface: nothing to tell an async method by');
  });

  it('refuses a token the service does not take, and a class without constructor metadata', () => {
    const { mocks } = newTestService(Orchestrator);
    class Other {}
    assert.throws(() => mocks.get(Other), /takes no Other/);
    class Undecorated {
      constructor(readonly rows: Rows) {}
    }
    assert.throws(() => newTestService(Undecorated), /no constructor metadata/);
  });

  it('a mock is not a promise: awaiting one does not call it', async () => {
    const rows = automock<Rows>('rows');
    assert.equal(await Promise.resolve(rows), rows);
    assert.equal(rows.find.name, 'rows.find');
  });
});
