import { type ReactNode, useEffect, useLayoutEffect, useState } from 'react';

export interface Column<T> {
  header: string;
  /** A CSS width for the column (the table lays out fixed, so rows keep one height). */
  width: string;
  cell: (row: T) => ReactNode;
  /** A cell's full text when it is cut to fit (shown on hover). */
  title?: (row: T) => string | undefined;
}

interface Props<T> {
  /** The accessible name of the scrolling region and the table's caption. */
  label: string;
  rows: T[];
  rowKey: (row: T) => string;
  columns: Column<T>[];
  /** Every row has this height, in pixels (cells cut their text to one line). */
  rowHeight?: number;
  /** Rows rendered beyond each edge of the view. */
  overscan?: number;
  /** Whether rows beyond `rows` exist (aria-rowcount is then unknown: -1). */
  hasMore?: boolean;
  /** Called when the view nears the last loaded row: load the next page. */
  onNearEnd?: () => void;
}

/**
 * A real <table> that renders only the rows in view plus an overscan: spacer rows keep the scroll
 * height of the rows left out, and aria-rowcount / aria-rowindex tell assistive technology where
 * each rendered row sits in the whole. It scrolls inside its own focusable region (keyboard
 * scrolling works), both ways on a narrow screen.
 */
export function VirtualTable<T>({ label, rows, rowKey, columns, rowHeight = 44, overscan = 10, hasMore = false, onNearEnd }: Props<T>) {
  const [scroller, setScroller] = useState<HTMLDivElement | null>(null);
  const view = useScrollView(scroller);
  const { start, end } = visibleRange(view, rows.length, rowHeight, overscan);
  const nearEnd = end >= rows.length - overscan;
  useEffect(() => {
    if (nearEnd && hasMore) onNearEnd?.();
  }, [nearEnd, hasMore, rows.length, onNearEnd]);
  const before = start * rowHeight;
  const after = (rows.length - end) * rowHeight;
  return (
    <div className="vtable" ref={setScroller} tabIndex={0} role="region" aria-label={`${label} (scrolls)`}>
      <table aria-rowcount={hasMore ? -1 : rows.length + 1}>
        <caption className="visually-hidden">{label}</caption>
        <colgroup>
          {columns.map((column) => (
            <col key={column.header} style={{ width: column.width }} />
          ))}
        </colgroup>
        <thead>
          <tr aria-rowindex={1}>
            {columns.map((column) => (
              <th key={column.header} scope="col">
                {column.header}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {before > 0 && <Spacer height={before} span={columns.length} />}
          {rows.slice(start, end).map((row, offset) => (
            <tr key={rowKey(row)} aria-rowindex={start + offset + 2} style={{ height: rowHeight }}>
              {columns.map((column) => (
                <td key={column.header} title={column.title?.(row)}>
                  {column.cell(row)}
                </td>
              ))}
            </tr>
          ))}
          {after > 0 && <Spacer height={after} span={columns.length} />}
        </tbody>
      </table>
    </div>
  );
}

function Spacer({ height, span }: { height: number; span: number }) {
  return (
    <tr aria-hidden="true" className="vspacer" style={{ height }}>
      <td colSpan={span} />
    </tr>
  );
}

interface ScrollView {
  top: number;
  height: number;
  /** Height of the sticky header above the first row. */
  header: number;
}

/** The scroll position and height of `element`, kept current (once per frame) on scroll and resize. */
function useScrollView(element: HTMLElement | null): ScrollView {
  const [view, setView] = useState<ScrollView>({ top: 0, height: 800, header: 0 });
  useLayoutEffect(() => {
    if (!element) return;
    let frame = 0;
    const measure = () => {
      frame = 0;
      const header = element.querySelector('thead')?.getBoundingClientRect().height ?? 0;
      setView((current) =>
        current.top === element.scrollTop && current.height === element.clientHeight && current.header === header ? current : { top: element.scrollTop, height: element.clientHeight, header },
      );
    };
    const schedule = () => {
      if (!frame) frame = requestAnimationFrame(measure);
    };
    measure();
    element.addEventListener('scroll', schedule, { passive: true });
    const resized = new ResizeObserver(schedule);
    resized.observe(element);
    return () => {
      element.removeEventListener('scroll', schedule);
      resized.disconnect();
      if (frame) cancelAnimationFrame(frame);
    };
  }, [element]);
  return view;
}

/** The rows [start, end) to render: those in view, plus `overscan` on each side. */
export function visibleRange(view: ScrollView, count: number, rowHeight: number, overscan: number): { start: number; end: number } {
  const top = Math.max(0, view.top - view.header);
  const start = Math.max(0, Math.floor(top / rowHeight) - overscan);
  const end = Math.min(count, Math.ceil((top + view.height) / rowHeight) + overscan);
  return { start, end: Math.max(start, end) };
}
