import { readdirSync, readFileSync } from 'node:fs';

/**
 * The processes of a server this harness started: its own pid and its children (Postgres forks a
 * backend per connection), read from /proc. Nothing else is ever signalled.
 */
export function processTree(rootPid: number): number[] {
  const pids = [rootPid];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // The parent pid is the 2nd field after the parenthesised command name.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === rootPid) pids.push(Number(entry));
    } catch {
      // the process ended meanwhile
    }
  }
  return pids;
}
