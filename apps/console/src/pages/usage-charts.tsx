import { BarController, BarElement, CategoryScale, Chart, type ChartConfiguration, Legend, LinearScale, LineController, LineElement, PointElement, Tooltip } from 'chart.js';
import { useEffect, useRef } from 'react';

// Only the pieces these charts draw: bars, a line, two linear axes over categories, a legend and tooltips.
Chart.register(BarController, BarElement, LineController, LineElement, PointElement, CategoryScale, LinearScale, Legend, Tooltip);

/** The console's colours (styles.css), so charts follow the light or dark scheme. */
function palette(): { fg: string; muted: string; line: string; accent: string; second: string } {
  const css = getComputedStyle(document.documentElement);
  const read = (name: string, fallback: string) => css.getPropertyValue(name).trim() || fallback;
  return { fg: read('--fg', '#1b1f24'), muted: read('--muted', '#57606a'), line: read('--line', '#d0d7de'), accent: read('--accent', '#0a58ca'), second: read('--chart-second', '#b35900') };
}

/**
 * A chart.js chart on a canvas. The canvas is an image to assistive technology, named by `label`;
 * the numbers it draws are in a table next to it (the page's job).
 */
function CanvasChart({ label, config, data, tall }: { label: string; config: (colors: ReturnType<typeof palette>) => ChartConfiguration; data: unknown; tall?: boolean }) {
  // Redrawn when the numbers change, not on every render of the page.
  const signature = JSON.stringify(data);
  const canvas = useRef<HTMLCanvasElement>(null);
  useEffect(() => {
    if (!canvas.current) return undefined;
    const chart = new Chart(canvas.current, config(palette()));
    return () => chart.destroy();
    // eslint-disable-next-line react-hooks/exhaustive-deps -- `config` is rebuilt each render; `signature` is what it draws.
  }, [signature, label]);
  return (
    <div className={tall ? 'chart-box tall' : 'chart-box'}>
      <canvas ref={canvas} role="img" aria-label={label} />
    </div>
  );
}

const axis = (colors: ReturnType<typeof palette>, title?: string) => ({
  ticks: { color: colors.muted },
  grid: { color: colors.line },
  ...(title ? { title: { display: true, text: title, color: colors.muted } } : {}),
});

/** Cost per day (bars, left axis) and tokens per day (line, right axis). */
export function SpendOverTime({ days, cost, tokens, label }: { days: string[]; cost: number[]; tokens: number[]; label: string }) {
  const config = (colors: ReturnType<typeof palette>): ChartConfiguration => ({
    type: 'bar',
    data: {
      labels: days,
      datasets: [
        { type: 'bar', label: 'Cost (USD)', data: cost, backgroundColor: colors.accent, yAxisID: 'cost', order: 2 },
        { type: 'line', label: 'Tokens', data: tokens, borderColor: colors.second, backgroundColor: colors.second, pointRadius: 2, yAxisID: 'tokens', order: 1 },
      ],
    },
    options: {
      maintainAspectRatio: false,
      animation: false,
      interaction: { mode: 'index', intersect: false },
      plugins: { legend: { labels: { color: colors.fg } } },
      scales: {
        x: { ...axis(colors), ticks: { color: colors.muted, maxRotation: 0, autoSkip: true } },
        cost: { ...axis(colors, 'USD'), position: 'left', beginAtZero: true },
        tokens: { ...axis(colors, 'tokens'), position: 'right', beginAtZero: true, grid: { drawOnChartArea: false } },
      },
    },
  });
  return <CanvasChart label={label} config={config} data={[days, cost, tokens]} tall />;
}

/** A horizontal bar per item (the top sessions or agents), longest first. */
export function TopBars({ labels, values, label, series }: { labels: string[]; values: number[]; label: string; series: string }) {
  const config = (colors: ReturnType<typeof palette>): ChartConfiguration => ({
    type: 'bar',
    data: { labels, datasets: [{ label: series, data: values, backgroundColor: colors.accent }] },
    options: {
      indexAxis: 'y',
      maintainAspectRatio: false,
      animation: false,
      plugins: { legend: { display: false } },
      scales: { x: { ...axis(colors, series), beginAtZero: true }, y: { ...axis(colors), grid: { display: false } } },
    },
  });
  return <CanvasChart label={label} config={config} data={[labels, values, series]} />;
}
