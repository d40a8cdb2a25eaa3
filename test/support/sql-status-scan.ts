// Finds the status literals SQL in the source writes or compares: what the reverse state test
// (test/unit/status-literals.test.ts) holds to the declared machines. A scan of text, not a SQL
// parser: it reads template literals (where this code base writes its SQL), resolves which table a
// column belongs to from the statement's FROM / JOIN / UPDATE / INSERT INTO and their aliases, and
// reports each literal with its file and line.

/** A status literal found in SQL: the column as written, its table when the statement tells, and where. */
export interface StatusLiteral {
  table: string | null;
  column: string;
  value: string;
  line: number;
  text: string;
}

/** One template literal's text (each `${…}` replaced by a placeholder) and its offset in the file. */
interface Template {
  text: string;
  offset: number;
}

/** The template literals of a source file, nested ones (inside `${…}`) included as templates of their own. */
export function templates(source: string): Template[] {
  const found: Template[] = [];
  // Skips comments and quoted strings outside templates, so a backtick in them opens nothing.
  const scanCode = (from: number, stopAtBrace: boolean): number => {
    let depth = 0;
    let i = from;
    while (i < source.length) {
      const c = source[i];
      if (c === '/' && source[i + 1] === '/') i = source.indexOf('\n', i) === -1 ? source.length : source.indexOf('\n', i);
      else if (c === '/' && source[i + 1] === '*') i = source.indexOf('*/', i + 2) + 2;
      else if (c === "'" || c === '"') i = skipQuoted(source, i);
      else if (c === '`') i = scanTemplate(i);
      else {
        if (c === '{') depth += 1;
        if (c === '}') {
          if (stopAtBrace && depth === 0) return i + 1;
          depth -= 1;
        }
        i += 1;
      }
    }
    return i;
  };
  const scanTemplate = (start: number): number => {
    let text = '';
    let i = start + 1;
    while (i < source.length && source[i] !== '`') {
      if (source[i] === '\\') {
        text += source.slice(i, i + 2);
        i += 2;
      } else if (source[i] === '$' && source[i + 1] === '{') {
        i = scanCode(i + 2, true);
        text += '$X';
      } else {
        text += source[i];
        i += 1;
      }
    }
    found.push({ text, offset: start + 1 });
    return i + 1;
  };
  scanCode(0, false);
  return found;
}

function skipQuoted(source: string, start: number): number {
  const quote = source[start];
  let i = start + 1;
  while (i < source.length && source[i] !== quote && source[i] !== '\n') i += source[i] === '\\' ? 2 : 1;
  return i + 1;
}

const NOT_ALIAS = new Set(['where', 'set', 'on', 'left', 'right', 'inner', 'outer', 'join', 'using', 'group', 'order', 'limit', 'returning', 'values', 'select', 'for', 'as', 'union', 'cross', 'lateral', 'natural', 'full', 'having', 'window', 'offset', 'default', 'on', 'and', 'or']);

/** alias → table (a table is its own alias) for the tables a statement names; the first UPDATE / INSERT / FROM table is its subject. */
function tablesOf(sql: string, tables: ReadonlySet<string>): { aliases: Map<string, string>; subject: string | null } {
  const aliases = new Map<string, string>();
  let subject: string | null = null;
  for (const match of sql.matchAll(/\b(from|join|update|into)\s+([a-z_][a-z0-9_]*)(?:\s+(?:as\s+)?([a-z_][a-z0-9_]*))?/gi)) {
    const table = match[2].toLowerCase();
    if (!tables.has(table)) continue;
    aliases.set(table, table);
    const alias = match[3]?.toLowerCase();
    if (alias && !NOT_ALIAS.has(alias)) aliases.set(alias, table);
    subject ??= table;
  }
  return { aliases, subject };
}

const quoted = (list: string): string[] => [...list.matchAll(/'([^']*)'/g)].map((m) => m[1]);

/**
 * Every literal compared with or assigned to one of `columns` in the SQL of `source`: `col = 'x'`,
 * `col <> 'x'`, `col IN ('x', 'y')`, `SET col = 'x'`, a literal at the column's place in an INSERT's
 * VALUES or SELECT list, and `current_turn->>'status'` (a turn status) and `waitpoint->>'kind'`.
 * `tables` are the tables that have a machine: only they resolve a column's table.
 */
export function statusLiterals(source: string, columns: readonly string[], tables: ReadonlySet<string>): StatusLiteral[] {
  const found: StatusLiteral[] = [];
  const lineAt = (offset: number): number => source.slice(0, offset).split('\n').length;
  const columnAlt = columns.join('|');
  const comparison = new RegExp(`(?<![\\w'>])(?:([a-z_][a-z0-9_]*)\\.)?(${columnAlt})\\s*(?:=|<>|!=)\\s*'([^']*)'`, 'gi');
  const membership = new RegExp(`(?<![\\w'>])(?:([a-z_][a-z0-9_]*)\\.)?(${columnAlt})\\s+(?:not\\s+)?in\\s*\\(([^)]*)\\)`, 'gi');
  const json = /(?:([a-z_]+)\.)?(current_turn|waitpoint)'?\s*->>\s*'(status|kind)'\s*(?:(?:=|<>|!=)\s*('[^']*')|(?:not\s+)?in\s*\(([^)]*)\))/gi;
  for (const { text, offset } of templates(source)) {
    const { aliases, subject } = tablesOf(text, tables);
    const push = (qualifier: string | undefined, column: string, values: string[], at: number, table?: string | null): void => {
      const resolved = table !== undefined ? table : qualifier ? (aliases.get(qualifier.toLowerCase()) ?? null) : aliases.size === 1 ? [...aliases.values()][0] : subject;
      // `'${…}'`: a constant interpolated (a machine's state, typed where it is defined), not a literal.
      for (const value of values.filter((v) => !v.includes('$X'))) found.push({ table: resolved, column: column.toLowerCase(), value, line: lineAt(offset + at), text: text.slice(at, at + 80).split('\n')[0] });
    };
    for (const m of text.matchAll(comparison)) push(m[1], m[2], [m[3]], m.index);
    for (const m of text.matchAll(membership)) push(m[1], m[2], quoted(m[3]), m.index);
    for (const m of text.matchAll(json)) {
      const values = quoted(m[4] ?? m[5] ?? '');
      if (m[2].toLowerCase() === 'current_turn' && m[3] === 'status') push(undefined, 'status', values, m.index, 'turns');
      if (m[2].toLowerCase() === 'waitpoint' && m[3] === 'kind') push(undefined, 'waitpoint.kind', values, m.index, 'turns');
    }
    for (const m of text.matchAll(/\binsert\s+into\s+([a-z_]+)\s*\(([^)]*)\)\s*(values\s*\(|select\b)/gi)) {
      const table = m[1].toLowerCase();
      if (!tables.has(table)) continue;
      const names = m[2].split(',').map((name) => name.trim().toLowerCase());
      const rest = text.slice(m.index + m[0].length);
      const values = topLevelItems(rest);
      names.forEach((name, index) => {
        const value = values[index]?.trim();
        if (columns.includes(name) && value && /^'[^']*'$/.test(value)) push(undefined, name, [value.slice(1, -1)], m.index, table);
      });
    }
  }
  return found;
}

/** The comma-separated items of a VALUES tuple or SELECT list, up to its end (a closing paren or FROM at depth 0). */
function topLevelItems(text: string): string[] {
  const items: string[] = [];
  let depth = 0;
  let current = '';
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i];
    if (c === "'") {
      const end = text.indexOf("'", i + 1);
      current += text.slice(i, end + 1);
      i = end;
      continue;
    }
    if (c === '(') depth += 1;
    if (c === ')') {
      if (depth === 0) break;
      depth -= 1;
    }
    if (depth === 0 && /^\s+from\b/i.test(text.slice(i, i + 6))) break;
    if (c === ',' && depth === 0) {
      items.push(current);
      current = '';
    } else current += c;
  }
  items.push(current);
  return items;
}
