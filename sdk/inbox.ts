/**
 * Capability `agent:inbox` (the agent plugin): input for an action that is running now, such as the press of a
 * button that action sent. The loop reads it before its next model call.
 */

/**
 * One input handed to a running action.
 * @example
 * const input: AgentInput = { text: '[button pressed] yes', untrusted: true, from: 'chatA:5' };
 */
export interface AgentInput {
  /** What the model is shown, as a user message (cut at 4,000 characters). */
  text: string;
  /**
   * Whoever gave it is not trusted (not an admin): the text reaches the model inside
   * `<channel_input untrusted="true">`, and every later skill call of the action counts as untrusted.
   */
  untrusted?: boolean;
  /** Who gave it, for the record (e.g. `chatA:5`). */
  from?: string;
  /**
   * Called once if the action ends without the model having read the input (it finished, failed or was cancelled
   * between the offer and its next step), so the offering channel can treat it as a new message instead.
   */
  onUnread?(): void;
}

/**
 * Capability `agent:inbox`: hands input to an action running in this process.
 * @example
 * const inbox = ctx.use('agent:inbox');
 * if (inbox?.offer(actionId, { text: '[button pressed] yes', untrusted: true })) return `to-action:${actionId}`;
 * // false: the action is not running here (finished, unknown, or its inbox is full); make a new message of it.
 */
export interface AgentInboxCapability {
  /** True when the action is running in this process and took the input; false changes nothing. */
  offer(actionId: string, input: AgentInput): boolean;
  /** Whether the action is running in this process now. */
  running(actionId: string): boolean;
}
