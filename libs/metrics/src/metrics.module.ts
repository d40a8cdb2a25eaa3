import { type DynamicModule, Module } from '@nestjs/common';
import { Metrics, metrics, type ProcessRole } from './metrics.js';

/**
 * Registers this process's metrics (`api` or `worker`) and provides them to every module (global):
 * inject `Metrics`, or import the `metrics` instance where there is no injection.
 */
@Module({})
export class MetricsModule {
  static forRoot(role: ProcessRole): DynamicModule {
    metrics.register(role);
    return { module: MetricsModule, global: true, providers: [{ provide: Metrics, useValue: metrics }], exports: [Metrics] };
  }
}
