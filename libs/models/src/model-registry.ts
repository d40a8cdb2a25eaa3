import { Injectable } from '@nestjs/common';
import { AppConfig } from '#libs/config';
import { DomainError } from '#libs/errors';
import type { ModelProvider } from './model.types.js';
import { OpenAiProvider } from './openai.provider.js';
import { ScriptedProvider } from './scripted.provider.js';

const MODEL_REF = /^([a-z][a-z0-9_-]*):(\S{1,160})$/;

/** Resolves `provider:model` references; validation at receipt keeps a bad model from ever reaching a run. */
@Injectable()
export class ModelRegistry {
  private readonly providers: Map<string, ModelProvider>;

  constructor(scripted: ScriptedProvider, openai: OpenAiProvider, config: AppConfig) {
    this.providers = new Map<string, ModelProvider>([[openai.provider, openai]]);
    // SCRIPTED_MODELS=disabled: production deployments refuse the demo model everywhere (422 invalid_model).
    if (config.scriptedModelsEnabled) this.providers.set(scripted.provider, scripted);
    this.allowlist = config.modelAllowlist;
  }

  private readonly allowlist: readonly string[] | null;

  /**
   * Throws 422 invalid_model unless the reference names a known provider, and 422
   * model_not_allowed when the deployment's MODEL_ALLOWLIST does not list it. Every model a
   * caller names passes here: agent definitions, session and per-message overrides.
   */
  validate(ref: string): string {
    const match = MODEL_REF.exec(ref);
    if (!match?.[1] || !this.providers.has(match[1])) {
      throw new DomainError('invalid_model', `Unknown model "${ref}"; expected provider:model with provider one of ${[...this.providers.keys()].join(', ')}`);
    }
    if (!modelAllowed(this.allowlist, ref)) throw new DomainError('model_not_allowed', `Model "${ref}" is not in this deployment's MODEL_ALLOWLIST`);
    return ref;
  }

  resolve(ref: string): { provider: ModelProvider; model: string } {
    const match = MODEL_REF.exec(ref);
    const provider = match?.[1] ? this.providers.get(match[1]) : undefined;
    if (!provider || !match?.[2]) throw new Error(`model ${ref} has no provider`);
    return { provider, model: match[2] };
  }
}

/** Whether MODEL_ALLOWLIST (null: no list) lets `ref` through: an exact entry, or `provider:*`. */
export function modelAllowed(allowlist: readonly string[] | null, ref: string): boolean {
  if (allowlist === null) return true;
  const provider = ref.slice(0, ref.indexOf(':'));
  return allowlist.includes(ref) || allowlist.includes(`${provider}:*`);
}
