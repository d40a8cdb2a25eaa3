import { AppConfig } from './app-config.js';
import { logSettings } from './logging.js';
import { tracingSettings } from '#libs/telemetry';

/**
 * What keeps a process from starting, as one short line that says what to do, or null. Checked
 * before the application is built, so a missing setting is the first thing a start prints rather
 * than a stack trace after a hundred lines of start-up logs.
 */
export function startupProblem(service: 'api' | 'worker', env: NodeJS.ProcessEnv = process.env): string | null {
  let config: AppConfig;
  try {
    logSettings(env);
    tracingSettings(env, service);
    config = new AppConfig(env);
  } catch (error) {
    return `${service} cannot start: ${(error as Error).message}`;
  }
  if (service === 'api' && !config.apiKeyHashSecret) {
    return (
      'api cannot start: API_KEY_HASH_SECRET is not set. Set it to a random secret of at least 32 characters ' +
      '(openssl rand -hex 32), the same on every api replica, and keep it: API keys are stored hashed with it, ' +
      'and a changed secret verifies none of them.'
    );
  }
  return null;
}
