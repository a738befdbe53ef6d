/**
 * Makes baileys trust the loopback WhatsApp fake (test/fakes/whatsapp-server.ts): WhatsApp's Noise handshake ends
 * with a certificate chain the client verifies against WhatsApp's root key (`WA_CERT_DETAILS.PUBLIC_KEY`), which the
 * fake cannot sign with. Importing this module (side effect only) replaces that key, in the one baileys module
 * instance the process uses, with the fake's fixed root public key.
 *
 * Plain JS so it can be a Node preload for child processes:
 *   NODE_OPTIONS=--import=/work/main/test/fakes/whatsapp-trust.mjs node dist/cli.js …
 * `@whiskeysockets/baileys` resolves from the repository root (the node_modules above this file).
 * test/fakes/whatsapp-trust.ts does the same for TypeScript importers; keep the key in step with
 * FAKE_ROOT_PRIVATE_KEY in whatsapp-server.ts.
 */
import { WA_CERT_DETAILS } from '@whiskeysockets/baileys';

/** Public half (Curve25519, without the 0x05 type byte) of the fake's fixed root key. */
export const FAKE_WA_ROOT_PUBLIC_KEY_HEX = 'ea8f4e4179ca2d6e809f5116e8326a10058140541853326d5efc84ac8963553a';

WA_CERT_DETAILS.PUBLIC_KEY = Buffer.from(FAKE_WA_ROOT_PUBLIC_KEY_HEX, 'hex');
