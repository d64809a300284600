/**
 * How a playground link carries a lab: the page URL's fragment is `#script=` + the base64url (RFC 4648 §5,
 * no padding) of the script's UTF-8 text, then `&variant=NAME` when a bug switch is flipped. The fragment
 * never reaches a server, so a link works from a file:// page and from any static host alike.
 */

/** What a link restores: the script and the variant switch (undefined: every variant). */
export interface PlaygroundState {
  readonly script: string;
  readonly variant: string | undefined;
}

/** base64url of `text`'s UTF-8 bytes, without padding. */
export function toBase64Url(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let bin = '';
  for (let i = 0; i < bytes.length; i += 8192) bin += String.fromCharCode(...bytes.subarray(i, i + 8192));
  return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** The text whose UTF-8 bytes `b64` encodes (base64url or base64, padded or not); undefined when malformed. */
export function fromBase64Url(b64: string): string | undefined {
  const std = b64.replace(/-/g, '+').replace(/_/g, '/');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(std) || std.replace(/=+$/, '').length % 4 === 1) return undefined;
  try {
    const bin = atob(std.replace(/=+$/, '') + '='.repeat((4 - (std.replace(/=+$/, '').length % 4)) % 4));
    return new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
  } catch {
    return undefined;
  }
}

/** The fragment (with its `#`) for `state`. */
export function encodeFragment(state: PlaygroundState): string {
  return `#script=${toBase64Url(state.script)}${state.variant !== undefined ? `&variant=${encodeURIComponent(state.variant)}` : ''}`;
}

/** The state a fragment (`location.hash`, with or without `#`) carries; undefined when it carries no script. */
export function decodeFragment(hash: string): PlaygroundState | undefined {
  const params = new Map<string, string>();
  for (const part of hash.replace(/^#/, '').split('&')) {
    const eq = part.indexOf('=');
    if (eq > 0) params.set(part.slice(0, eq), part.slice(eq + 1));
  }
  const encoded = params.get('script');
  if (encoded === undefined) return undefined;
  const script = fromBase64Url(encoded);
  if (script === undefined) return undefined;
  const variant = params.get('variant');
  let name: string | undefined;
  try {
    name = variant !== undefined && variant !== '' ? decodeURIComponent(variant) : undefined;
  } catch {
    name = undefined;
  }
  return { script, variant: name };
}
