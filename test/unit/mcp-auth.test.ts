import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type ResolvedSecret, SecretCipher, type SecretsStore } from '#libs/secrets';
import { credentialsKey, McpAuth, type McpToolDeclaration, parseToolDeclarations } from '#libs/tools';

describe('SecretCipher', () => {
  const cipher = new SecretCipher('k'.repeat(32));
  const owner = '0193a5b0-0a1b-7c2d-8e3f-4a5b6c7d8e09';

  it('opens what it sealed, for the same owner and name', () => {
    const sealed = cipher.seal('token-value', owner, 'github');
    assert.ok(!sealed.includes(Buffer.from('token-value')), 'the value is not stored in clear');
    assert.equal(cipher.open(sealed, owner, 'github'), 'token-value');
    assert.equal(cipher.open(cipher.seal('shared-value', null, 'github'), null, 'github'), 'shared-value');
  });

  it('refuses a value moved to another owner or name, altered, or sealed under another key', () => {
    const sealed = cipher.seal('token-value', owner, 'github');
    assert.throws(() => cipher.open(sealed, null, 'github'));
    assert.throws(() => cipher.open(sealed, owner, 'gitlab'));
    const altered = Buffer.from(sealed);
    altered[altered.length - 1] ^= 1;
    assert.throws(() => cipher.open(altered, owner, 'github'));
    assert.throws(() => new SecretCipher('x'.repeat(32)).open(sealed, owner, 'github'));
    assert.throws(() => cipher.open(Buffer.from([9, 1, 2]), owner, 'github'), /known format/);
  });
});

describe('MCP tool auth declarations', () => {
  const mcp = (extra: object) => ({ type: 'mcp', server_label: 's', server_url: 'https://mcp.example/mcp', ...extra });

  it('accepts a bearer or client credentials reference as written', () => {
    const bearer = { type: 'bearer', secret: 'github.token_1' };
    const oauth = { type: 'oauth_client_credentials', secret: 'cs', client_id: 'agent-client', issuer: 'https://as.example', scope: 'mcp:tools mcp:read' };
    const { tools, errors } = parseToolDeclarations([mcp({ auth: bearer }), { ...mcp({ auth: oauth }), server_label: 't' }]);
    assert.deepEqual(errors, []);
    assert.deepEqual(
      tools.map((t) => (t.type === 'mcp' ? t.auth : undefined)),
      [bearer, oauth],
    );
  });

  it('refuses values, namespaces, missing fields and a competing Authorization header, each by path', () => {
    const problems = (tool: object) => parseToolDeclarations([tool]).errors;
    assert.match(problems(mcp({ auth: { type: 'bearer', secret: 's', token: 'x' } })).join(), /tools\[0\]\.auth\.token: unknown field/);
    assert.match(problems(mcp({ auth: { type: 'bearer', secret: 'has space' } })).join(), /auth\.secret: must be the name of a secret/);
    assert.match(problems(mcp({ auth: { type: 'basic', secret: 's' } })).join(), /tools\[0\]\.auth: must be/);
    assert.match(problems(mcp({ auth: { type: 'oauth_client_credentials', secret: 's', client_id: 'c', issuer: 'not a url' } })).join(), /auth\.issuer/);
    assert.match(problems(mcp({ auth: { type: 'oauth_client_credentials', secret: 's', client_id: 'c', issuer: 'https://as.example', scope: 'a  b' } })).join(), /auth\.scope/);
    assert.match(problems(mcp({ auth: { type: 'bearer', secret: 's' }, headers: { authorization: 'Bearer x' } })).join(), /headers\.Authorization/);
    assert.match(problems(mcp({ secrets_owner_id: null })).join(), /secrets_owner_id: unknown field/);
  });
});

describe('McpAuth', () => {
  const reads: [string | null, string][] = [];
  let version = 1;
  const store = {
    resolve: (owner: string | null, name: string): Promise<ResolvedSecret | null> => {
      reads.push([owner, name]);
      return Promise.resolve(name === 'missing' ? null : { value: `value-${version}`, version });
    },
  } as unknown as SecretsStore;
  const decl = (auth: McpToolDeclaration['auth'], owner?: string | null): McpToolDeclaration => ({
    type: 'mcp',
    server_label: 's',
    server_url: 'https://mcp.example/mcp',
    auth,
    ...(owner === undefined ? {} : { secrets_owner_id: owner }),
  });
  const oauth = { type: 'oauth_client_credentials' as const, secret: 'cs', client_id: 'agent-client', issuer: 'https://as.example', scope: 'mcp:tools' };

  it('reads a secret once per cache period, and again when told the server refused it', async () => {
    const auth = new McpAuth(store);
    reads.length = 0;
    assert.equal((await auth.secret({ owner: 'u1', name: 'a' })).value, 'value-1');
    await auth.secret({ owner: 'u1', name: 'a' });
    assert.equal(reads.length, 1, 'cached');
    version = 2;
    assert.equal((await auth.secret({ owner: 'u1', name: 'a' }, { fresh: true })).value, 'value-2');
    assert.deepEqual(reads, [['u1', 'a'], ['u1', 'a']]);
    await assert.rejects(auth.secret({ owner: null, name: 'missing' }), /no secret named "missing" in the shared secrets/);
  });

  it('gives a client credentials provider that stamps the declared issuer and reads a rotated client secret after a refusal', async () => {
    const auth = new McpAuth(store);
    const { authProvider } = auth.transportOptions(decl(oauth, null));
    assert.ok(authProvider);
    version = 3;
    assert.deepEqual(await authProvider.clientInformation(), { client_id: 'agent-client', client_secret: 'value-3', issuer: 'https://as.example' });
    assert.equal(authProvider.redirectUrl, undefined, 'a non-interactive flow');
    assert.equal(authProvider.prepareTokenRequest?.('advertised')?.toString(), 'grant_type=client_credentials&scope=mcp%3Atools');
    version = 4;
    await authProvider.invalidateCredentials?.('all');
    assert.equal(((await authProvider.clientInformation()) as { client_secret: string }).client_secret, 'value-4');
  });

  it('shares tokens between providers of the same reference, until they near expiry or are invalidated', async () => {
    const auth = new McpAuth(store);
    const one = auth.transportOptions(decl(oauth, null)).authProvider!;
    const two = auth.transportOptions(decl(oauth, null)).authProvider!;
    const otherOwner = auth.transportOptions(decl(oauth, 'u1')).authProvider!;
    await one.saveTokens({ access_token: 'at-1', token_type: 'Bearer', expires_in: 3600 });
    assert.equal((await two.tokens())?.access_token, 'at-1');
    assert.equal(await otherOwner.tokens(), undefined, "another owner's reference has its own tokens");
    await two.invalidateCredentials?.('tokens');
    assert.equal(await one.tokens(), undefined);
    await one.saveTokens({ access_token: 'at-2', token_type: 'Bearer', expires_in: 10 });
    assert.equal(await one.tokens(), undefined, 'a token within the expiry margin is not used');
  });

  it('fails closed on a reference without a namespace, and keys sessions by reference, not value', async () => {
    const auth = new McpAuth(store);
    const { fetch } = auth.transportOptions(decl({ type: 'bearer', secret: 'a' }));
    assert.ok(fetch);
    await assert.rejects(fetch('https://mcp.example/mcp'), /no secrets namespace/);
    assert.deepEqual(auth.transportOptions(decl(undefined)), {});
    assert.notEqual(credentialsKey(decl({ type: 'bearer', secret: 'a' }, 'u1')), credentialsKey(decl({ type: 'bearer', secret: 'a' }, 'u2')));
    assert.notEqual(credentialsKey(decl({ type: 'bearer', secret: 'a' }, null)), credentialsKey(decl({ type: 'bearer', secret: 'b' }, null)));
  });
});
