import { Module } from '@nestjs/common';
import { ModelRegistry } from './model-registry.js';
import { OpenAiProvider } from './openai.provider.js';
import { ScriptedProvider } from './scripted.provider.js';

@Module({
  providers: [ScriptedProvider, OpenAiProvider, ModelRegistry],
  exports: [ModelRegistry],
})
export class ModelsModule {}
