/**
 * A user plugin: copy the `greeter` folder into ~/.keel/plugins/ (or $KEEL_HOME/plugins/).
 */
import { definePlugin } from 'keel/sdk';
import manifest from './manifest.js';

export default definePlugin({
  manifest,
  setup(ctx) {
    ctx.skills.register('greet', ({ name }) => {
      // Read on every call, so `keel config set greeterGreeting ...` takes effect without a restart.
      const greeting = ctx.config.get('greeterGreeting');
      return `${greeting}, ${name}!`;
    });
    ctx.log.info('greeter ready');
  },
});
