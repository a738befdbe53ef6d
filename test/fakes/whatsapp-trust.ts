/**
 * Makes baileys trust the loopback WhatsApp fake (test/fakes/whatsapp-server.ts). Import it for its side effect
 * before (or after — the key is read at handshake time) creating a baileys socket: it replaces
 * `WA_CERT_DETAILS.PUBLIC_KEY`, the root key baileys' Noise handler verifies the server's certificate chain with,
 * by the fake's fixed root public key. `@whiskeysockets/baileys`' index re-exports `lib/Defaults`, so the object
 * patched here is the one `lib/Utils/noise-handler.js` reads.
 *
 * Child processes: preload the plain-JS twin, `NODE_OPTIONS=--import=/work/main/test/fakes/whatsapp-trust.mjs`.
 */
import { WA_CERT_DETAILS } from '@whiskeysockets/baileys';

/** Public half (Curve25519, without the 0x05 type byte) of the fake's fixed root key; same as in whatsapp-trust.mjs. */
export const FAKE_WA_ROOT_PUBLIC_KEY_HEX = 'ea8f4e4179ca2d6e809f5116e8326a10058140541853326d5efc84ac8963553a';

WA_CERT_DETAILS.PUBLIC_KEY = Buffer.from(FAKE_WA_ROOT_PUBLIC_KEY_HEX, 'hex');
