import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { Calculator } from '#libs/tools';

// The calculator builtin: mathjs in a sandboxed worker thread, with a time bound per evaluation
// (a component test: each Calculator starts a thread, and the runaway case waits out its bound).

describe('calculator', () => {
  const calculator = new Calculator();
  after(() => calculator.close());

  it('evaluates arithmetic with 14 significant digits', async () => {
    assert.deepEqual(await calculator.evaluate('(3 + 4) * 2 ^ 10'), { success: true, output: '7168' });
    assert.deepEqual(await calculator.evaluate('1 / 3'), { success: true, output: '0.33333333333333' });
    assert.deepEqual(await calculator.evaluate('0.1 + 0.2'), { success: true, output: '0.3' });
    assert.deepEqual(await calculator.evaluate('x = 2; x * 3'), { success: true, output: '6' });
  });

  it('refuses the functions that parse, rewrite or extend mathjs', async () => {
    for (const expression of ['import({}, {})', 'createUnit("x")', 'evaluate("1")', 'parse("1")', 'compile("1")', 'config({number: "BigNumber"})']) {
      const outcome = await calculator.evaluate(expression);
      assert.equal(outcome.success, false, expression);
      assert.match(outcome.output, /^calculator error: function \w+ is disabled$/, expression);
    }
    // A refused config call changed nothing for later expressions.
    assert.deepEqual(await calculator.evaluate('1 / 3'), { success: true, output: '0.33333333333333' });
  });

  it('reports syntax errors and unknown symbols as failed outcomes', async () => {
    assert.match((await calculator.evaluate('2 +')).output, /^calculator error: /);
    assert.match((await calculator.evaluate('constructor')).output, /^calculator error: /);
  });

  it('stops a runaway expression and keeps working afterwards', async () => {
    const quick = new Calculator(300);
    try {
      const outcome = await quick.evaluate('combinations(1e15, 5e14)');
      assert.deepEqual(outcome, { success: false, output: 'calculator error: the evaluation took longer than 300 ms' });
      assert.deepEqual(await quick.evaluate('6 * 7'), { success: true, output: '42' });
    } finally {
      quick.close();
    }
  });

  it('rejects with the abort reason when the call is cancelled', async () => {
    const controller = new AbortController();
    controller.abort(new Error('turn cancelled'));
    await assert.rejects(calculator.evaluate('1 + 1', controller.signal), /turn cancelled/);
  });
});
