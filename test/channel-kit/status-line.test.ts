import { describe, expect, it } from 'vitest';
import { statusLine } from '../../sdk/channel-kit/index.js';

describe('statusLine', () => {
  it('names the step once, whether or not the thought already starts with it', () => {
    expect(statusLine({ typingOnly: false, step: 1, thought: 'Step 1: calling recall_memory.' })).toBe(
      '\u23f3 Step 1: calling recall_memory.',
    );
    expect(statusLine({ typingOnly: false, step: 2, thought: 'step 2:  calling a, b.' })).toBe('\u23f3 Step 2: calling a, b.');
    expect(statusLine({ typingOnly: false, step: 3, thought: 'Looking it up' })).toBe('\u23f3 Step 3: Looking it up');
    // Without a step number the thought is shown as it is.
    expect(statusLine({ typingOnly: false, thought: 'Step 4: calling x.' })).toBe('\u23f3 Step 4: calling x.');
    expect(statusLine({ typingOnly: false, step: 5, thought: 'Step 5:' })).toBe('\u23f3 Step 5: Working…');
  });
});
