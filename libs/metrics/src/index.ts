export { CLIENT_CLOSED_STATUS, httpMetricsMiddleware, routePatterns } from './http-metrics.js';
export {
  type MetricDefinition,
  Metrics,
  metrics,
  type PostgresComponent,
  type ProcessRole,
  type QueueCount,
  type SandboxCommandResultLabel,
  type TakeoverReason,
  type TokenUsage,
  type ToolCallOutcome,
  type ToolSource,
  type TurnOutcome,
} from './metrics.js';
export { MetricsModule } from './metrics.module.js';
export { instrumentRedis } from './redis-metrics.js';
export { routeLabel, routeMatcher, type RouteMatcher, type RoutePattern, UNMATCHED_ROUTE } from './route-label.js';
export { toolSourceLabel } from './tool-source.js';
