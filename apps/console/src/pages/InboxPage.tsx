import { Placeholder } from './Placeholder.js';

export function InboxPage() {
  return <Placeholder title="Inbox" />;
}
