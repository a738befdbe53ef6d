/** Kept for kernel imports: the implementation lives in the SDK so plugins can use it too. */
export { isPidAlive } from '../../sdk/pid.js';
