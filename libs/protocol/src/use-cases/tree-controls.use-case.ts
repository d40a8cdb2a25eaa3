import { Injectable } from '@nestjs/common';
import type { Principal } from '#libs/auth';
import { type IdempotentResponse, TreeControls } from '#libs/engine';
import type { TreeContinueEventDto, TreeStopEventDto } from '../dto/update-session.dto.js';
import { Acceptance } from './acceptance.js';

/** `yuxi.session.tree.stop` on any session of a tree: every active turn cancelled, waitpoints cleared, every queue paused. */
@Injectable()
export class StopTree {
  constructor(
    private readonly acceptance: Acceptance,
    private readonly controls: TreeControls,
  ) {}

  async execute(principal: Principal, sessionId: string, event: TreeStopEventDto, key: string): Promise<IdempotentResponse> {
    return this.acceptance.treeControl(principal, sessionId, key, event, async (manager, target) => this.controls.stop(manager, await this.controls.lock(manager, target)));
  }
}

/** `yuxi.session.tree.continue`: once the stopped tree's work has settled (409 before), its retained queues resume. */
@Injectable()
export class ContinueTree {
  constructor(
    private readonly acceptance: Acceptance,
    private readonly controls: TreeControls,
  ) {}

  async execute(principal: Principal, sessionId: string, event: TreeContinueEventDto, key: string): Promise<IdempotentResponse> {
    return this.acceptance.treeControl(principal, sessionId, key, event, async (manager, target) => this.controls.continue(manager, await this.controls.lock(manager, target)));
  }
}
