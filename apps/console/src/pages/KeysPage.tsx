import { Placeholder } from './Placeholder.js';

export function KeysPage() {
  return <Placeholder title="API keys" />;
}
