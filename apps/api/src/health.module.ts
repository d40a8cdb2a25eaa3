import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { QueueModule } from '#libs/queue';

/**
 * What HealthController checks with: Terminus, and the workers' presence (QueueModule). Terminus
 * logs nothing itself: a failing dependency is already logged (once per interval) where it fails,
 * and probes run every few seconds.
 */
@Module({
  imports: [TerminusModule.forRoot({ logger: false }), QueueModule],
  exports: [TerminusModule, QueueModule],
})
export class HealthModule {}
