import { Injectable } from '@nestjs/common';
import type { PublicEvent } from './event.types.js';

/**
 * What an outbox subscriber is given for each appended batch: the stamped events, and how to add
 * to the append's statement. The statement inserts the batch as the CTE named `rowsCte`, which
 * returns each row's `seq`, `type`, `payload` and `event_id`; a subscriber may add CTEs that read it
 * (named with a prefix of its own: the statement may hold a caller's CTEs too), so that
 * what it writes commits (or fails) with the facts the events announce, in one statement.
 */
export interface OutboxAppend {
  sessionId: string;
  events: readonly PublicEvent[];
  /** Stands for each row's sequence number until the insert knows it: a JSON body built with it as a string value has it replaced. */
  seqToken: string;
  /** The placeholder of that token as JSON writes it (`"…"`): `replace(body, <it>, ins.seq::text)` puts the number there. */
  readonly seqTokenParam: string;
  /** Adds a value to the statement and returns its placeholder (`$n`). */
  param(value: unknown): string;
  /** The placeholder of the session id (a uuid). */
  readonly sessionParam: string;
  /** The CTE that inserts the batch's rows. */
  readonly rowsCte: string;
}

/** What a subscriber adds to one append's statement. */
export interface OutboxContribution {
  /** CTEs (`name AS (…)`), after the insert's. */
  ctes: string[];
  /** A scalar SQL expression over them: the statement returns it, and the batch keeps it under the subscriber's name when it is a non-empty text array. */
  result: string;
}

/** A lib that acts on the outbox's appended rows in the same statement (webhooks write their deliveries). */
export interface OutboxSubscriber {
  /** Names what the batch keeps of its result (OutboxBatch.fanOut). */
  readonly name: string;
  /** Null when the batch concerns it not: the append keeps its plain INSERT. */
  contribute(append: OutboxAppend): OutboxContribution | null;
}

/**
 * The subscribers of this process's outbox. A lib registers its subscriber when its module starts
 * (the events lib imports none of them); every append offers them its batch.
 */
@Injectable()
export class OutboxSubscribers {
  private readonly subscribers: OutboxSubscriber[] = [];

  register(subscriber: OutboxSubscriber): void {
    if (!this.subscribers.some((known) => known.name === subscriber.name)) this.subscribers.push(subscriber);
  }

  all(): readonly OutboxSubscriber[] {
    return this.subscribers;
  }
}
