import { Module } from '@nestjs/common';
import { ModelRegistry } from './model-registry.js';
import { ScriptedProvider } from './scripted.provider.js';

@Module({
  providers: [ScriptedProvider, ModelRegistry],
  exports: [ModelRegistry],
})
export class ModelsModule {}
