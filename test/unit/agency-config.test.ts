import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assertApprovalMode, assertModelOverride, atLeastPinned, managesAgent, mayTrustForSession } from '#libs/agents';
import { AppConfig } from '#libs/config';
import { modelAllowed, ModelRegistry, OpenAiProvider, ScriptedProvider } from '#libs/models';
import { codeOf } from './support/aggregate-fixtures.js';

const BASE = { DATABASE_URL: 'postgres://x', REDIS_URL: 'redis://x' };

function registry(env: Record<string, string>): ModelRegistry {
  const config = new AppConfig({ ...BASE, ...env });
  return new ModelRegistry(new ScriptedProvider(config), new OpenAiProvider(config), config);
}

describe('config: scripted models and the model allowlist', () => {
  it('has scripted models off unless SCRIPTED_MODELS=enabled', () => {
    assert.equal(new AppConfig(BASE).scriptedModelsEnabled, false);
    assert.equal(new AppConfig({ ...BASE, SCRIPTED_MODELS: 'enabled' }).scriptedModelsEnabled, true);
    assert.equal(new AppConfig({ ...BASE, SCRIPTED_MODELS: 'disabled' }).scriptedModelsEnabled, false);
    assert.throws(() => new AppConfig({ ...BASE, SCRIPTED_MODELS: 'yes' }), /SCRIPTED_MODELS/);
    assert.equal(codeOf(() => registry({}).validate('scripted:echo')), 'invalid_model');
    assert.equal(codeOf(() => registry({ SCRIPTED_MODELS: 'enabled' }).validate('scripted:echo')), null);
  });

  it('parses MODEL_ALLOWLIST and refuses what it does not list', () => {
    assert.equal(new AppConfig(BASE).modelAllowlist, null);
    assert.equal(new AppConfig({ ...BASE, MODEL_ALLOWLIST: ' , ' }).modelAllowlist, null);
    assert.deepEqual(new AppConfig({ ...BASE, MODEL_ALLOWLIST: 'openai:gpt-4o, scripted:*' }).modelAllowlist, ['openai:gpt-4o', 'scripted:*']);
    assert.throws(() => new AppConfig({ ...BASE, MODEL_ALLOWLIST: 'gpt-4o' }), /MODEL_ALLOWLIST/);
    assert.equal(modelAllowed(null, 'openai:anything'), true);
    assert.equal(modelAllowed(['openai:gpt-4o'], 'openai:gpt-4o'), true);
    assert.equal(modelAllowed(['openai:gpt-4o'], 'openai:gpt-4o-mini'), false);
    assert.equal(modelAllowed(['scripted:*'], 'scripted:echo'), true);
    assert.equal(modelAllowed(['scripted:*'], 'openai:scripted'), false);
    const models = registry({ SCRIPTED_MODELS: 'enabled', MODEL_ALLOWLIST: 'openai:gpt-4o' });
    assert.equal(codeOf(() => models.validate('openai:gpt-4o')), null);
    assert.equal(codeOf(() => models.validate('openai:o1')), 'model_not_allowed');
    assert.equal(codeOf(() => models.validate('scripted:echo')), 'model_not_allowed');
    assert.equal(codeOf(() => models.validate('nope:x')), 'invalid_model');
  });
});

describe('config: identity and secrets', () => {
  it('requires JWT_ISSUER with JWT_JWKS_URL', () => {
    const jwks = { ...BASE, JWT_JWKS_URL: 'https://idp.example/jwks', JWT_AUDIENCE: 'api' };
    assert.throws(() => new AppConfig(jwks), /JWT_ISSUER is required with JWT_JWKS_URL/);
    assert.equal(new AppConfig({ ...jwks, JWT_ISSUER: 'https://idp.example/' }).jwtIssuer, 'https://idp.example/');
    // An HS256 secret is this deployment's own: the issuer stays optional there.
    assert.doesNotThrow(() => new AppConfig({ ...BASE, JWT_SECRET: 'x'.repeat(32), JWT_AUDIENCE: 'api' }));
  });

  it('refuses a production start without SECRETS_KEY unless unsealed secrets are accepted', () => {
    assert.throws(() => new AppConfig({ ...BASE, NODE_ENV: 'production' }), /SECRETS_KEY is required in production/);
    assert.doesNotThrow(() => new AppConfig({ ...BASE, NODE_ENV: 'production', SECRETS_KEY: 'k'.repeat(32) }));
    assert.equal(new AppConfig({ ...BASE, NODE_ENV: 'production', ALLOW_UNSEALED_SECRETS: 'true' }).allowUnsealedSecrets, true);
    assert.throws(() => new AppConfig({ ...BASE, NODE_ENV: 'production', ALLOW_UNSEALED_SECRETS: 'false' }), /SECRETS_KEY/);
    assert.throws(() => new AppConfig({ ...BASE, ALLOW_UNSEALED_SECRETS: 'maybe' }), /ALLOW_UNSEALED_SECRETS/);
    // Outside production (npm start, npm test, the fault suite) nothing changes.
    assert.doesNotThrow(() => new AppConfig(BASE));
  });

  it('bounds the lifetime of keys minted with user tokens (30 days by default, at least a minute)', () => {
    assert.equal(new AppConfig(BASE).userTokenKeyMaxTtlS, 30 * 24 * 3600);
    assert.equal(new AppConfig({ ...BASE, USER_TOKEN_KEY_MAX_TTL_S: '3600' }).userTokenKeyMaxTtlS, 3600);
    assert.equal(new AppConfig({ ...BASE, USER_TOKEN_KEY_MAX_TTL_S: '5' }).userTokenKeyMaxTtlS, 60);
    assert.throws(() => new AppConfig({ ...BASE, USER_TOKEN_KEY_MAX_TTL_S: '-1' }), /USER_TOKEN_KEY_MAX_TTL_S/);
  });
});

describe('agent policy: overrides and pinned approval', () => {
  const owner = { isAdmin: false, actorId: 'owner', appId: null };
  const admin = { isAdmin: true, actorId: 'admin', appId: null };
  const other = { isAdmin: false, actorId: 'other', appId: null };
  const endUserOfOwner = { isAdmin: false, actorId: 'owner', appId: 'app' };
  const policy = { owner_id: 'owner', model: 'openai:base', allowed_models: ['openai:cheap'], tool_approval_mode: 'default' as const, tool_approval_pinned: true };

  it('knows who manages an agent', () => {
    assert.equal(managesAgent(owner, policy), true);
    assert.equal(managesAgent(admin, policy), true);
    assert.equal(managesAgent(other, policy), false);
    assert.equal(managesAgent(endUserOfOwner, policy), false, 'an app end user manages nothing');
    assert.equal(managesAgent(owner, { owner_id: null }), false, 'public agents are the administrators\'');
    assert.equal(managesAgent(admin, { owner_id: null }), true);
  });

  it('lets non-managers keep the agent\'s model or pick an allowed one, managers anything', () => {
    assert.equal(codeOf(() => assertModelOverride(other, policy, 'openai:base', 'openai:cheap', 'f')), null);
    assert.equal(codeOf(() => assertModelOverride(other, policy, 'openai:cheap', 'openai:base', 'f')), null, 'back to the agent\'s own');
    assert.equal(codeOf(() => assertModelOverride(other, policy, 'openai:base', 'openai:big', 'f')), 'model_not_allowed');
    assert.equal(codeOf(() => assertModelOverride(other, { ...policy, allowed_models: null }, 'openai:base', 'openai:cheap', 'f')), 'model_not_allowed');
    assert.equal(codeOf(() => assertModelOverride(owner, policy, 'openai:base', 'openai:big', 'f')), null);
    assert.equal(codeOf(() => assertModelOverride(admin, policy, 'openai:base', 'openai:big', 'f')), null);
    assert.equal(codeOf(() => assertModelOverride(other, undefined, 'openai:base', 'openai:big', 'f')), null, 'sessions from before policies: as before');
  });

  it('lets non-managers raise a pinned mode, never lower it; unpinned, anything goes', () => {
    assert.equal(codeOf(() => assertApprovalMode(other, policy, 'always_ask', 'f')), null);
    assert.equal(codeOf(() => assertApprovalMode(other, policy, 'default', 'f')), null);
    assert.equal(codeOf(() => assertApprovalMode(other, policy, 'always_trust', 'f')), 'tool_approval_pinned');
    assert.equal(codeOf(() => assertApprovalMode(other, { ...policy, tool_approval_mode: 'always_ask' }, 'default', 'f')), 'tool_approval_pinned');
    assert.equal(codeOf(() => assertApprovalMode(owner, policy, 'always_trust', 'f')), null);
    assert.equal(codeOf(() => assertApprovalMode(other, { ...policy, tool_approval_pinned: false }, 'always_trust', 'f')), null);
    assert.equal(mayTrustForSession(other, policy), false);
    assert.equal(mayTrustForSession(owner, policy), true);
    assert.equal(mayTrustForSession(other, { ...policy, tool_approval_pinned: false }), true);
    // Cooperation members: a coordinator's mode, never below a pinned member agent's.
    assert.equal(atLeastPinned('always_trust', policy), 'default');
    assert.equal(atLeastPinned('always_ask', policy), 'always_ask');
    assert.equal(atLeastPinned('always_trust', { ...policy, tool_approval_pinned: false }), 'always_trust');
    assert.equal(atLeastPinned('always_trust', undefined), 'always_trust');
  });
});

describe('config: TRUST_PROXY', () => {
  it('trusts no proxy unless told, then a hop count or the named addresses and subnets; never every hop', () => {
    assert.equal(new AppConfig(BASE).trustProxy, false);
    assert.equal(new AppConfig({ ...BASE, TRUST_PROXY: '0' }).trustProxy, false);
    assert.equal(new AppConfig({ ...BASE, TRUST_PROXY: '2' }).trustProxy, 2);
    assert.deepEqual(new AppConfig({ ...BASE, TRUST_PROXY: 'loopback, 10.0.0.0/8,fd00::1' }).trustProxy, ['loopback', '10.0.0.0/8', 'fd00::1']);
    assert.throws(() => new AppConfig({ ...BASE, TRUST_PROXY: 'true' }), /TRUST_PROXY=true/);
    assert.throws(() => new AppConfig({ ...BASE, TRUST_PROXY: 'proxy.internal' }), /TRUST_PROXY/);
  });
});
