import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, type Principal } from '#libs/auth';
import { BudgetDeletedDto, BudgetDto, BudgetListDto, CreateBudget, CreateBudgetDto, DeleteBudget, GetBudget, ListBudgets, ListQueryDto, UpdateBudget, UpdateBudgetDto } from '#libs/protocol';
import { BUDGET_DELETED_EXAMPLE, BUDGET_EXAMPLE, BUDGET_LIST_EXAMPLE, CREATE_BUDGET_EXAMPLE } from '../openapi/budget-examples.js';
import { TAGS } from '../openapi/tags.js';
import { ApiErrors } from './api-errors.decorator.js';

const ApiBudgetId = () =>
  ApiParam({ name: 'budget_id', description: 'A budget of the caller\'s account; through an app-bound key, one of its app (another account\'s or another app\'s answers 404).', schema: { type: 'string', format: 'uuid' } });

/** Budgets: limits on what a scope spends per period. Registered before AgentsController (`/agents/budgets` is no agent). */
@ApiTags(TAGS.budgets.name)
@ApiBearerAuth()
@Controller('api/v1/agents/budgets')
export class BudgetsController {
  constructor(
    private readonly createBudget: CreateBudget,
    private readonly listBudgets: ListBudgets,
    private readonly getBudget: GetBudget,
    private readonly updateBudget: UpdateBudget,
    private readonly deleteBudget: DeleteBudget,
  ) {}

  @Post()
  @ApiOperation({
    operationId: 'createBudget',
    summary: 'Create a budget',
    description:
      'Limits on what one scope spends per period (`lifetime`, or the UTC `day` or `month`): cost, tokens, model calls, tool calls, turns, wall time. Checked before every model and tool call of a turn in scope against what is committed plus what calls in flight reserved; when a limit is reached the turn waits at a `budget` waitpoint (`pause`) or fails with `budget_exceeded` (`fail`). The scope must be the caller\'s: its session (a tree\'s root covers the tree) or project (404 otherwise), an agent it may use, an app (an app-bound key: its own), an end user, or (administrators only, else 403) a product user\'s whole account. A budget made through an app-bound key (with or without `X-End-User-Id`) is that app\'s: whatever its scope, it counts and bounds only the calls of the app\'s end users, never another app\'s nor the product user\'s own sessions.',
  })
  @ApiBody({ type: CreateBudgetDto, examples: { project: { value: CREATE_BUDGET_EXAMPLE } } })
  @ApiCreatedResponse({ type: BudgetDto, description: 'The budget, with what its scope spent in the current period.', example: BUDGET_EXAMPLE })
  @ApiErrors('forbidden', 'not_found', 'validation_failed', 'invalid_json')
  create(@CurrentPrincipal() principal: Principal, @Body() body: CreateBudgetDto): Promise<BudgetDto> {
    return this.createBudget.execute(principal, body);
  }

  @Get()
  @ApiOperation({
    operationId: 'listBudgets',
    summary: 'List budgets',
    description: 'The budgets of the caller\'s account (and those an administrator made on other accounts) in a stable (created_at, id) order, newest first by default, each with `spent`. A product user sees every budget of its account, its apps\' included; an app-bound key only its app\'s, whichever end user it names.',
  })
  @ApiOkResponse({ type: BudgetListDto, description: 'One page of budgets.', example: BUDGET_LIST_EXAMPLE })
  @ApiErrors('validation_failed', 'invalid_cursor')
  list(@CurrentPrincipal() principal: Principal, @Query() query: ListQueryDto): Promise<BudgetListDto> {
    return this.listBudgets.execute(principal, { after: query.after, limit: query.limit ?? 50, order: query.order ?? 'desc' });
  }

  @Get(':budget_id')
  @ApiOperation({ operationId: 'getBudget', summary: 'Get a budget', description: 'One budget, with what its scope spent in the current period (`spent`, committed calls only).' })
  @ApiBudgetId()
  @ApiOkResponse({ type: BudgetDto, description: 'The budget.', example: BUDGET_EXAMPLE })
  @ApiErrors('not_found')
  get(@CurrentPrincipal() principal: Principal, @Param('budget_id') id: string): Promise<BudgetDto> {
    return this.getBudget.execute(principal, id);
  }

  @Post(':budget_id')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'updateBudget',
    summary: 'Update a budget',
    description: 'Changes the fields given (`limits` and `metadata` are replaced whole). A raised limit is room for the next check: approve a turn waiting at the budget to go on. A budget on a user\'s account is changed by administrators only (403); an app-bound key changes only its app\'s budgets (any of them, whichever end user it names: the app\'s backend holds the key), another\'s is 404.',
  })
  @ApiBudgetId()
  @ApiBody({ type: UpdateBudgetDto, examples: { raise: { value: { limits: { cost_microusd: 10_000_000 } } } } })
  @ApiOkResponse({ type: BudgetDto, description: 'The budget as updated.', example: BUDGET_EXAMPLE })
  @ApiErrors('forbidden', 'not_found', 'validation_failed', 'invalid_json')
  update(@CurrentPrincipal() principal: Principal, @Param('budget_id') id: string, @Body() body: UpdateBudgetDto): Promise<BudgetDto> {
    return this.updateBudget.execute(principal, id, body);
  }

  @Delete(':budget_id')
  @ApiOperation({ operationId: 'deleteBudget', summary: 'Delete a budget', description: 'The budget bounds nothing more. A budget on a user\'s account is removed by administrators only (403); an app-bound key removes only its app\'s budgets, another\'s is 404.' })
  @ApiBudgetId()
  @ApiOkResponse({ type: BudgetDeletedDto, description: 'Deleted.', example: BUDGET_DELETED_EXAMPLE })
  @ApiErrors('forbidden', 'not_found')
  delete(@CurrentPrincipal() principal: Principal, @Param('budget_id') id: string): Promise<BudgetDeletedDto> {
    return this.deleteBudget.execute(principal, id);
  }
}
