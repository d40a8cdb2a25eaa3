import { Placeholder } from './Placeholder.js';

export function UsersPage() {
  return <Placeholder title="Users" />;
}
