import assert from 'node:assert/strict';
import { env } from './env.js';
import { newKey } from './http.js';
import { bootstrap, postEventAs } from './identity.js';
import { SseStream } from './sse.js';
import { withWorkerStopped } from './worker-process.js';

/** An input long enough that each event carrying it fills a stream node (4 KB), the unit MAXLEN trims by. */
export const NODE_FILLING_INPUT = `filler-${'x'.repeat(4500)}`;

/**
 * Moves a session's replay window on, for real: an input (a message unless `event` says otherwise:
 * any input the session accepts now that publishes an event) is accepted by the api replica whose
 * replay window is one stream node (EVENTS_REPLAY_MAXLEN=1), which publishes its events with that
 * MAXLEN and so trims every full node before them, as the deployment's MAXLEN does under load.
 * The worker is stopped meanwhile, so that publish is the only one (neither the worker's turn nor
 * its outbox relay appends the events first); it is done once a subscriber saw it. What the
 * session published before must fill more than one node (NODE_FILLING_INPUT does); a message
 * then runs as a turn once the worker goes on. Returns the input's receipt.
 */
export async function moveReplayWindow(sessionId: string, event: object = { type: 'agent.session.input.message', input: 'after the window moved' }): Promise<{ input_id: string }> {
  return withWorkerStopped(async () => {
    const witness = await SseStream.open(sessionId);
    try {
      const after = await postEventAs(bootstrap, sessionId, event, newKey('window'), env.apiUrlShortWindow);
      assert.equal(after.status, 202, after.text);
      await witness.waitFor((e) => e.type === 'yuxi.session.event.accepted' && e.data.receipt?.input_id === after.body.input_id);
      return after.body;
    } finally {
      witness.close();
    }
  });
}
