import { Placeholder } from './Placeholder.js';

export function QueuesPage() {
  return <Placeholder title="Queues" />;
}
