/** `keel status` and the gateway's listening line name the dashboard's address as a browser can open it. */
import { describe, expect, it } from 'vitest';
import { browserUrl } from '../../sdk/gateway.js';

describe('browserUrl', () => {
  it('a wildcard or loopback bind is localhost; another address is kept', () => {
    expect(browserUrl('http://0.0.0.0:3100')).toBe('http://localhost:3100/');
    expect(browserUrl('http://[::]:3100')).toBe('http://localhost:3100/');
    expect(browserUrl('http://127.0.0.1:8080')).toBe('http://localhost:8080/');
    expect(browserUrl('http://[::1]:8080')).toBe('http://localhost:8080/');
    expect(browserUrl('http://192.168.1.20:3100')).toBe('http://192.168.1.20:3100/');
    expect(browserUrl('http://[fd00::5]:3100')).toBe('http://[fd00::5]:3100/');
    expect(browserUrl('not a url')).toBe('not a url');
  });
});
