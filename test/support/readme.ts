import { readFileSync } from 'node:fs';
import path from 'node:path';

export interface CodeBlock {
  /** The fence's language (`ts`, `bash`, …; empty when none). */
  lang: string;
  /** The text between the fences, with its final newline. */
  code: string;
  /** The nearest heading above the block, as written (`### Your first tool turn`). */
  heading: string;
}

/** Every fenced code block of a Markdown file, with the heading it sits under. */
export function codeBlocks(file: string): CodeBlock[] {
  const blocks: CodeBlock[] = [];
  let heading = '';
  let open: CodeBlock | null = null;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (open) {
      if (line.startsWith('```')) {
        blocks.push(open);
        open = null;
      } else open.code += `${line}\n`;
    } else if (line.startsWith('```')) open = { lang: line.slice(3).trim(), code: '', heading };
    else if (/^#{1,6} /.test(line)) heading = line.trim();
  }
  return blocks;
}

/** The README's blocks of one language under one heading, in order. */
export function readmeBlocks(root: string, heading: string, lang: string): string[] {
  return codeBlocks(path.join(root, 'README.md'))
    .filter((block) => block.heading === heading && block.lang === lang)
    .map((block) => block.code);
}
