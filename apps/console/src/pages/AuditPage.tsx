import { Placeholder } from './Placeholder.js';

export function AuditPage() {
  return <Placeholder title="Audit" />;
}
