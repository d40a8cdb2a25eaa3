import 'reflect-metadata';
import { after, before, mock, type Mock } from 'node:test';
import { ConsoleLogger, Logger } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';

/**
 * Orchestrator unit tests without Postgres or Redis (as Immich's `newTestService`): the class under
 * test is built with every constructor dependency replaced by an automatic mock, found from the
 * metadata the compiler emits for decorated classes (`design:paramtypes`; a parameter injected by
 * token, `@Inject(token)` / `@InjectDataSource()`, from Nest's `self:paramtypes`). A mock answers
 * every method with a `mock.fn()` of node:test, created on first use, which a test programs and
 * inspects:
 *
 *   const { sut, mocks } = newTestService(RunRecovery);
 *   mocks.get(RunsRepository).lockExpiredRun.mock.mockImplementation(async () => true);
 *   assert.equal(mocks.get(RunsRepository).interruptRun.mock.callCount(), 1);
 *
 * An unprogrammed method answers undefined (a resolved undefined for a method declared `async`). Plain fields (settings) are set on the mock:
 * `mocks.get(AppConfig).runMaxTakeovers = 3`. The DataSource is a fake (`FakeDataSource`) whose
 * `transaction(fn)` runs `fn` with a fake manager and records whether it committed.
 */

type AnyFunction = (...args: any[]) => any;
export type Token<T = unknown> = abstract new (...args: any[]) => T;

/** A dependency as a test sees it: each method a node:test mock with the method's own signature. */
export type Mocked<T> = { -readonly [K in keyof T]: T[K] extends AnyFunction ? Mock<T[K]> : T[K] };

/** A fake EntityManager: records its raw queries (answered `[]` unless programmed); repositories are mocked, so this is mostly an identity to pass through. */
export interface FakeManager extends EntityManager {
  readonly query: Mock<EntityManager['query']>;
  /** Which transaction of the data source it belongs to, from 1. */
  readonly transactionNumber: number;
}

/** What one `transaction(fn)` did: its manager, and whether `fn` resolved (commit) or threw (rollback). */
export interface RecordedTransaction {
  manager: FakeManager;
  outcome: 'open' | 'committed' | 'rolled_back';
}

/** A fake TypeORM DataSource: `transaction(fn)` (with or without an isolation level) runs `fn` with a fresh fake manager. */
export class FakeDataSource {
  readonly transactions: RecordedTransaction[] = [];
  /** What a raw query of a manager answers unless its `query` mock is programmed (the rows of a read that is not a repository's). */
  answer: (sql: string, parameters?: unknown[]) => unknown = () => [];
  /** A statement outside any transaction (its own), answered as a manager's. */
  readonly query = mock.fn(async (sql: string, parameters?: unknown[]): Promise<unknown> => this.answer(sql, parameters));
  /** The manager outside any transaction (transaction number 0). */
  readonly manager: FakeManager = fakeManager(0, (sql, parameters) => this.answer(sql, parameters));

  readonly transaction = mock.fn(async (...args: unknown[]): Promise<unknown> => {
    const fn = args.find((arg): arg is (manager: EntityManager) => Promise<unknown> => typeof arg === 'function');
    if (!fn) throw new Error('FakeDataSource.transaction: no function given');
    const recorded: RecordedTransaction = { manager: fakeManager(this.transactions.length + 1, (sql, parameters) => this.answer(sql, parameters)), outcome: 'open' };
    this.transactions.push(recorded);
    try {
      const result = await fn(recorded.manager);
      recorded.outcome = 'committed';
      return result;
    } catch (error) {
      recorded.outcome = 'rolled_back';
      throw error;
    }
  });

  /** The transactions that committed, in order. */
  get committed(): RecordedTransaction[] {
    return this.transactions.filter((t) => t.outcome === 'committed');
  }
}

function fakeManager(transactionNumber: number, answer: (sql: string, parameters?: unknown[]) => unknown): FakeManager {
  const manager = { transactionNumber, query: mock.fn(async (sql: string, parameters?: unknown[]) => answer(sql, parameters)) } as unknown as FakeManager & { transaction: unknown };
  // A nested transaction runs on the same manager (TypeORM reuses the connection).
  manager.transaction = async (...args: unknown[]) => (args.find((arg) => typeof arg === 'function') as (m: EntityManager) => unknown)(manager);
  return manager;
}

/**
 * Builds a mock whose every method is created on first use as a `mock.fn()`. Given the class it
 * stands for, a method the class declares `async` answers a resolved promise (of undefined) until
 * programmed, as the real one never returns a bare value; any other answers undefined.
 */
export function automock<T>(name = 'mock', of?: Token<T>): Mocked<T> {
  const target: Record<string | symbol, unknown> = {};
  return new Proxy(target, {
    get(own, property) {
      if (property in own) return own[property];
      // Not a promise (an `await` of the mock must not call it), not a string, not iterable.
      if (typeof property === 'symbol' || property === 'then' || property === 'toJSON') return undefined;
      const fn = of && isAsyncMethod(of, property) ? mock.fn(async () => undefined) : mock.fn();
      Object.defineProperty(fn, 'name', { value: `${name}.${property}` });
      own[property] = fn;
      return fn;
    },
  }) as Mocked<T>;
}

/** Whether the class (or a class it extends) declares `property` as an async method; a getter is never read. */
function isAsyncMethod(of: Token, property: string): boolean {
  for (let proto: object | null = of.prototype as object; proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto) as object | null) {
    const descriptor = Object.getOwnPropertyDescriptor(proto, property);
    if (descriptor) return typeof descriptor.value === 'function' && (descriptor.value as AnyFunction).constructor.name === 'AsyncFunction';
  }
  return false;
}

/** The mocks a test service was built with, by the token each constructor parameter is injected by. */
export class Mocks {
  constructor(private readonly byToken: Map<unknown, unknown>, private readonly byIndex: unknown[]) {}

  /** The mock injected for `token` (a class, or the token of an `@Inject`). Throws when the service takes none. */
  get<T>(token: Token<T>): Mocked<T>;
  get<T = Record<string, AnyFunction>>(token: string | symbol): Mocked<T>;
  get(token: unknown): unknown {
    if (!this.byToken.has(token)) throw new Error(`newTestService: the service takes no ${describe(token)}`);
    return this.byToken.get(token);
  }

  /** The mock given to constructor parameter `index` (for a parameter typed as an interface, with no token). */
  at<T = Record<string, AnyFunction>>(index: number): Mocked<T> {
    if (index < 0 || index >= this.byIndex.length) throw new Error(`newTestService: no constructor parameter ${index}`);
    return this.byIndex[index] as Mocked<T>;
  }
}

export interface TestService<S> {
  sut: S;
  mocks: Mocks;
  /** The fake data source, also injected for a DataSource parameter (a new one when the service takes none). */
  dataSource: FakeDataSource;
}

/**
 * Builds `Service` with every constructor dependency auto-mocked. `overrides` gives a real (or
 * hand-made) value for a token instead: `[[AppConfig, new AppConfig({})]]`.
 */
export function newTestService<S>(Service: new (...args: never[]) => S, overrides: Iterable<readonly [unknown, unknown]> = []): TestService<S> {
  const given = new Map<unknown, unknown>(overrides);
  const types = (Reflect.getMetadata('design:paramtypes', Service) as unknown[] | undefined) ?? [];
  if (types.length !== Service.length) {
    throw new Error(`newTestService: ${Service.name} has no constructor metadata (is it decorated, e.g. @Injectable()?)`);
  }
  const declared = (Reflect.getMetadata('self:paramtypes', Service) as { index: number; param: unknown }[] | undefined) ?? [];
  const tokens = types.map((type, index) => declared.find((d) => d.index === index)?.param ?? type);
  const dataSource = (given.get(DataSource) as FakeDataSource | undefined) ?? new FakeDataSource();
  const byToken = new Map<unknown, unknown>();
  const byIndex = tokens.map((token, index) => {
    // A type the compiler erased (an interface, a union): no token to share, a mock of its own.
    const anonymous = token === undefined || token === Object || token === Function;
    const value = given.has(token) ? given.get(token) : token === DataSource ? dataSource : anonymous || !byToken.has(token) ? automock(describe(token, index), typeof token === 'function' && !anonymous ? (token as Token) : undefined) : byToken.get(token);
    if (!anonymous) byToken.set(token, value);
    return value;
  });
  const sut = new Service(...(byIndex as never[]));
  return { sut, mocks: new Mocks(byToken, byIndex), dataSource };
}

function describe(token: unknown, index?: number): string {
  if (typeof token === 'function' && token.name && token !== Object && token !== Function) return token.name;
  if (typeof token === 'string' || typeof token === 'symbol') return String(token);
  return index === undefined ? 'token' : `parameter ${index}`;
}

/**
 * Silences Nest's `Logger` (the warnings an orchestrator logs on the failure paths a test drives)
 * for the enclosing describe block, and gives it back its default console output after: unit test
 * files may share a process, so no file leaves the logger changed for the others.
 */
export function quietNestLogger(): void {
  before(() => Logger.overrideLogger(false));
  after(() => Logger.overrideLogger(new ConsoleLogger()));
}
