import type { NextFunction, Request, Response } from 'express';

/**
 * Swagger UI's page: its own scripts and styles (the bundle injects inline styles, and its init
 * script is a file of the same origin), images as data: URLs (the logo), calls to this origin
 * (Try it out, /openapi.json). Never framed (clickjacking of the Authorize dialog).
 */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * Headers every response carries, set before anything else answers (errors of the middleware
 * chain, SSE, file bytes included): `nosniff` everywhere, so no browser reads a JSON error or a
 * file as a page; `no-store` on the API, whose answers are one caller's data and must not stay in
 * a browser or proxy cache; a strict CSP and no framing on the docs page.
 */
export function securityHeaders(req: Request, res: Response, next: NextFunction): void {
  res.setHeader('X-Content-Type-Options', 'nosniff');
  const path = req.path.toLowerCase();
  if (path.startsWith('/api/')) res.setHeader('Cache-Control', 'no-store');
  else if (path === '/docs' || path.startsWith('/docs/')) {
    res.setHeader('Content-Security-Policy', DOCS_CSP);
    res.setHeader('X-Frame-Options', 'DENY');
  }
  next();
}
