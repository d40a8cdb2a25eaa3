/** Examples of the usage reports. */
export const USAGE_REPORT_EXAMPLE = {
  object: 'list',
  group_by: 'day',
  from: '2026-12-01T00:00:00.000Z',
  to: '2026-12-03T00:00:00.000Z',
  data: [
    { key: '2026-12-01', input_tokens: 182_400, output_tokens: 23_950, cached_tokens: 120_000, reasoning_tokens: 4_100, model_calls: 61, tool_calls: 48, cost_microusd: 412_730 },
    { key: '2026-12-02', input_tokens: 96_210, output_tokens: 11_020, cached_tokens: 40_500, reasoning_tokens: 0, model_calls: 30, tool_calls: 12, cost_microusd: 198_004 },
  ],
  has_more: false,
};

export const USAGE_REPORT_BY_AGENT_EXAMPLE = {
  object: 'list',
  group_by: 'agent',
  from: '2026-11-04T00:00:00.000Z',
  to: '2026-12-03T10:15:00.000Z',
  data: [
    { key: 'research-assistant', input_tokens: 1_240_000, output_tokens: 98_300, cached_tokens: 800_000, reasoning_tokens: 12_000, model_calls: 402, tool_calls: 377, cost_microusd: 2_913_500 },
    { key: 'default-chatbot', input_tokens: 51_000, output_tokens: 9_800, cached_tokens: 0, reasoning_tokens: 0, model_calls: 44, tool_calls: 0, cost_microusd: null },
  ],
  has_more: false,
};
