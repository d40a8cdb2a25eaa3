import { AgentsClient } from '#libs/sdk';

const client = new AgentsClient({ baseUrl: process.env.AGENTS_URL ?? 'http://127.0.0.1:3000', apiKey: process.env.AGENTS_API_KEY ?? '' });

// A session with its first input; the Idempotency-Key is generated and reused by every retry.
const session = await client.sessions.create({ agent_id: 'default-chatbot', input: 'Hello from the SDK' });

// Follow the turn that takes this input, and only it: reconnects with Last-Event-ID, never repeats
// an event, re-reads the turn on a resync, ends when the turn completes, fails or is cancelled.
const events = client.sessions.events(session.id, { untilInputId: session.yuxi.receipt!.input_id! });
for await (const event of events) {
  if (event.type === 'agent.session.turn.output_text.delta') process.stdout.write(event.delta);
}

// The durable result, whatever the stream showed.
const turn = await client.sessions.turn(session.id, events.turnId!);
console.log(`\n${turn.status}`);
