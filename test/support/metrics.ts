import { readFileSync } from 'node:fs';

/** One sample of a Prometheus text exposition. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** A scrape: every sample, and the `# TYPE` of each metric family. */
export interface Scrape {
  samples: Sample[];
  types: Map<string, string>;
}

export async function scrape(baseUrl: string): Promise<Scrape> {
  const res = await fetch(`${baseUrl}/metrics`);
  if (res.status !== 200) throw new Error(`GET ${baseUrl}/metrics answered ${res.status}`);
  return parseExposition(await res.text());
}

export function parseExposition(text: string): Scrape {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) types.set(type[1]!, type[2]!);
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`unparsable exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[key!] = value!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return { samples, types };
}

/** The sum of a metric's samples whose labels include `where` (a histogram: pass `name_count`). */
export function total(scrape: Scrape, name: string, where: Record<string, string> = {}): number {
  return scrape.samples
    .filter((s) => s.name === name && Object.entries(where).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

/** A row of the metric table in docs/metrics.md. */
export interface DocumentedMetric {
  name: string;
  type: string;
  labels: string[];
  processes: string[];
}

/** The table of docs/metrics.md: `| \`name\` | type | labels | processes | meaning |`. */
export function documentedMetrics(): DocumentedMetric[] {
  const text = readFileSync(new URL('../../../docs/metrics.md', import.meta.url), 'utf8');
  const rows: DocumentedMetric[] = [];
  for (const line of text.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    const name = /^`(yuxi_\w+)`$/.exec(cells[1] ?? '')?.[1];
    if (!name) continue;
    const list = (cell: string | undefined): string[] => (cell ?? '').split(',').map((l) => l.replaceAll('`', '').trim()).filter((l) => l && l !== '—');
    rows.push({ name, type: cells[2] ?? '', labels: list(cells[3]), processes: list(cells[4]) });
  }
  return rows;
}
