export { ModelRegistry } from './model-registry.js';
export { ModelError, type ModelEvent, type ModelMessage, type ModelProvider, type ModelRequest } from './model.types.js';
export { ModelsModule } from './models.module.js';
