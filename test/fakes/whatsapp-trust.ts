/**
 * Makes baileys in this process trust the loopback WhatsApp fake (test/fakes/whatsapp-server.ts): its Noise
 * certificate root, and its HTTPS media server for WhatsApp's media host names. The code is in whatsapp-trust.mjs,
 * plain JS so that child processes can preload the same file (`NODE_OPTIONS=--import=<abs>/test/fakes/whatsapp-trust.mjs`,
 * with `...fake.mediaEnv()` in their env); TypeScript importers import this module for its side effect.
 */
import './whatsapp-trust.mjs';
