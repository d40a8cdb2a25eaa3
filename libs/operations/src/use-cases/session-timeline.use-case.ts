import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AppConfig } from '#libs/config';
import type { PageQuery } from '#libs/database';
import { RunsRepository, SessionsRepository, StepsRepository, TurnsRepository } from '#libs/engine';
import type { SessionTimelineDto } from '../dto/timeline.dto.js';
import { toTimelineMember, toTimelineSession, toTimelineTurns } from '../timeline-projection.js';

/** Members shown with a timeline: a tree's fan-out is capped far below this by its agent. */
const MEMBERS_SHOWN = 100;

/**
 * A session's timeline for operators, whoever owns it: one page of turns with their runs and steps.
 * Four reads whatever the page holds (turns, runs, steps, members), never the whole history.
 */
@Injectable()
export class GetSessionTimeline {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly sessions: SessionsRepository,
    private readonly turns: TurnsRepository,
    private readonly runs: RunsRepository,
    private readonly steps: StepsRepository,
    private readonly config: AppConfig,
  ) {}

  async execute(sessionId: string, page: PageQuery): Promise<SessionTimelineDto> {
    const session = await this.sessions.getAnyOwner(sessionId);
    const { rows: turns, hasMore } = await this.turns.listTurns(session, page);
    const ids = turns.map((turn) => turn.id);
    const [runs, steps, members] = await Promise.all([
      this.runs.timelineRuns(ids),
      this.steps.timelineSteps(this.dataSource.manager, ids),
      this.sessions.membersOf(session.id, MEMBERS_SHOWN),
    ]);
    const data = toTimelineTurns(turns, runs, steps);
    return {
      object: 'list',
      data,
      first_id: data[0]?.id ?? null,
      last_id: data.at(-1)?.id ?? null,
      has_more: hasMore,
      session: toTimelineSession(session),
      members: members.map(toTimelineMember),
      model_requests: this.config.modelRequestAudit ? 'recorded' : 'not_recorded',
    };
  }
}
