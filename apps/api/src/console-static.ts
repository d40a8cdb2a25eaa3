import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import express, { type NextFunction, type Request, type Response } from 'express';

/** Where `npm run build` puts the console (dist/console), seen from this file's place in dist/apps/api/src. */
const CONSOLE_DIR = fileURLToPath(new URL('../../../console/', import.meta.url));

// The console talks to this origin only and is never framed: a strict policy costs it nothing.
const SECURITY_HEADERS: Record<string, string> = {
  'Content-Security-Policy': "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
};

/**
 * The admin console at /console: its built files, and its index.html for any other path below it
 * (the app routes in the browser). Public like /docs: it holds no data; every call it makes is
 * authenticated with the key the user signs in with. Absent when the console was not built.
 */
export function consoleStatic(): express.RequestHandler {
  const index = `${CONSOLE_DIR}index.html`;
  const files = express.static(CONSOLE_DIR, { index: false, fallthrough: true, immutable: true, maxAge: '1y' });
  return (req: Request, res: Response, next: NextFunction) => {
    if (!existsSync(index)) return next();
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(name, value);
    // Hashed assets are cached for good; the page itself never is, so a new build is picked up.
    if (req.path.startsWith('/assets/')) return files(req, res, next);
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    res.setHeader('Cache-Control', 'no-cache');
    res.sendFile(index);
  };
}
