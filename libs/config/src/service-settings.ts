import { parseAllowedHosts } from '#libs/outbound';
import { bool, int, parseRedisNodes, type RedisNode } from './env-values.js';

// The settings of the services the apps reach (a Redis cluster, a web search provider, file
// storage), each parsed from the environment as a whole: AppConfig reads them at start.

export interface RedisClusterSettings {
  /** Seed nodes: the client learns the others (and who owns which slot) from any of them. */
  nodes: RedisNode[];
  /**
   * Session event streams are spread over this many hash tags (libs/events stream-keys): each api
   * process blocks on at most one reader connection per shard, however many SSE subscribers it has.
   */
  streamShards: number;
}

/** The most event-stream shards: the readers of one api process stay a bounded handful. */
export const MAX_STREAM_SHARDS = 256;

export function redisClusterSettings(env: NodeJS.ProcessEnv): RedisClusterSettings | null {
  const streamShards = int(env, 'REDIS_CLUSTER_STREAM_SHARDS', 16);
  if (streamShards < 1 || streamShards > MAX_STREAM_SHARDS) throw new Error(`REDIS_CLUSTER_STREAM_SHARDS must be 1 to ${MAX_STREAM_SHARDS}, got ${streamShards}`);
  const raw = env.REDIS_CLUSTER_NODES?.trim();
  if (!raw) return null;
  return { nodes: parseRedisNodes(raw), streamShards };
}

export const WEB_SEARCH_PROVIDERS = ['searxng', 'brave', 'tavily'] as const;
export type WebSearchProviderName = (typeof WEB_SEARCH_PROVIDERS)[number];

/** Where the `web_search` builtin sends its queries, and how it authenticates there. */
export interface WebSearchSettings {
  provider: WebSearchProviderName;
  /** The provider's base URL (SearXNG: the instance; Brave, Tavily: their API origin unless overridden). */
  url: string;
  /** The API key as a setting (Brave, Tavily); never logged. */
  apiKey: string | undefined;
  /** The name of a shared secret (libs/secrets) holding the API key, read at each search: a rotation needs no restart. */
  apiKeySecret: string | undefined;
  /** One search, connect to last byte; past it the model gets an error output. */
  timeoutMs: number;
  /** Results one search returns at most (the model may ask for fewer). */
  maxResults: number;
  /** host or host:port entries that skip the private-address refusal (a self-hosted SearXNG on the internal network). */
  allowedHosts: string[];
}

const WEB_SEARCH_DEFAULT_URLS: Partial<Record<WebSearchProviderName, string>> = { brave: 'https://api.search.brave.com', tavily: 'https://api.tavily.com' };

export function webSearchSettings(env: NodeJS.ProcessEnv): WebSearchSettings | null {
  const provider = env.WEB_SEARCH_PROVIDER || '';
  if (provider === '') return null;
  if (!(WEB_SEARCH_PROVIDERS as readonly string[]).includes(provider)) throw new Error(`WEB_SEARCH_PROVIDER must be ${WEB_SEARCH_PROVIDERS.join(', ')} or empty (off), got "${provider}"`);
  const name = provider as WebSearchProviderName;
  const url = env.WEB_SEARCH_URL || WEB_SEARCH_DEFAULT_URLS[name];
  if (!url) throw new Error(`WEB_SEARCH_URL is required with WEB_SEARCH_PROVIDER=${name} (the instance's base URL, e.g. http://searxng:8080)`);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`WEB_SEARCH_URL must be an absolute http(s) URL, got "${url}"`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error(`WEB_SEARCH_URL must be an absolute http(s) URL, got "${url}"`);
  const apiKey = env.WEB_SEARCH_API_KEY || undefined;
  const apiKeySecret = env.WEB_SEARCH_API_KEY_SECRET || undefined;
  if (apiKey && apiKeySecret) throw new Error('WEB_SEARCH_API_KEY and WEB_SEARCH_API_KEY_SECRET are exclusive: give the key, or the name of the shared secret holding it');
  if (apiKeySecret !== undefined && !/^[A-Za-z0-9_.-]{1,64}$/.test(apiKeySecret)) throw new Error('WEB_SEARCH_API_KEY_SECRET must be the name of a secret (letters, digits, ".", "_", "-"; at most 64)');
  if (name !== 'searxng' && !apiKey && !apiKeySecret) throw new Error(`WEB_SEARCH_PROVIDER=${name} needs its API key: WEB_SEARCH_API_KEY, or WEB_SEARCH_API_KEY_SECRET naming a shared secret`);
  let allowedHosts: string[];
  try {
    allowedHosts = parseAllowedHosts(env.WEB_SEARCH_ALLOWED_HOSTS ?? '');
  } catch (error) {
    throw new Error(`WEB_SEARCH_ALLOWED_HOSTS: ${(error as Error).message}`, { cause: error });
  }
  const maxResults = int(env, 'WEB_SEARCH_MAX_RESULTS', 5);
  if (maxResults < 1 || maxResults > 20) throw new Error(`WEB_SEARCH_MAX_RESULTS must be 1 to 20, got ${maxResults}`);
  return { provider: name, url, apiKey, apiKeySecret, timeoutMs: Math.max(100, int(env, 'WEB_SEARCH_TIMEOUT_MS', 10_000)), maxResults, allowedHosts };
}

export type StorageSettings =
  | { driver: 'local'; dir: string }
  | {
      driver: 's3';
      bucket: string;
      region: string;
      /** For MinIO and other S3-compatible stores; unset: AWS. */
      endpoint: string | undefined;
      /** Unset: the AWS SDK's default credential chain (environment, profile, instance role). */
      credentials: { accessKeyId: string; secretAccessKey: string } | undefined;
      forcePathStyle: boolean;
      /** Every key lives under this prefix (a bucket shared with other data). */
      keyPrefix: string;
    };

export function storageSettings(env: NodeJS.ProcessEnv): StorageSettings {
  const driver = env.STORAGE_DRIVER || 'local';
  if (driver === 'local') return { driver, dir: env.STORAGE_DIR || '.data/files' };
  if (driver !== 's3') throw new Error(`STORAGE_DRIVER must be local or s3, got "${driver}"`);
  const accessKeyId = env.S3_ACCESS_KEY_ID || undefined;
  const secretAccessKey = env.S3_SECRET_ACCESS_KEY || undefined;
  if ((accessKeyId === undefined) !== (secretAccessKey === undefined)) throw new Error('S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY are set together (or neither, for the default AWS credential chain)');
  const keyPrefix = env.S3_KEY_PREFIX || '';
  if (keyPrefix !== '' && !/^[A-Za-z0-9][A-Za-z0-9._/-]*\/$/.test(keyPrefix)) throw new Error('S3_KEY_PREFIX must be letters, digits, ".", "_", "-" and "/", ending with "/"');
  if (!env.S3_BUCKET) throw new Error('S3_BUCKET is required with STORAGE_DRIVER=s3');
  return {
    driver,
    bucket: env.S3_BUCKET,
    region: env.S3_REGION || 'us-east-1',
    endpoint: env.S3_ENDPOINT || undefined,
    credentials: accessKeyId && secretAccessKey ? { accessKeyId, secretAccessKey } : undefined,
    forcePathStyle: bool(env, 'S3_FORCE_PATH_STYLE', false),
    keyPrefix,
  };
}
