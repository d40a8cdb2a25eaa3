/** Set by scripts/test.mjs, which starts a throwaway stack for the suite. */
function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the suite with npm test`);
  return value;
}

export const env = {
  apiUrl: required('TEST_API_URL'),
  apiKey: required('TEST_API_KEY'),
  databaseUrl: required('DATABASE_URL'),
  redisUrl: required('REDIS_URL'),
};
