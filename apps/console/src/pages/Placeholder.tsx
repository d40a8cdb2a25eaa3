/** A page still being built: it says so rather than showing nothing. */
export function Placeholder({ title }: { title: string }) {
  const id = `${title.toLowerCase().replace(/\W+/g, '-')}-title`;
  return (
    <section aria-labelledby={id}>
      <h1 id={id}>{title}</h1>
      <p className="empty">This page is not built yet.</p>
    </section>
  );
}
