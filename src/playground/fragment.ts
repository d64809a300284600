/**
 * How a playground link carries a lab: the page URL's fragment is `#script=` + the base64url (RFC 4648 §5,
 * no padding) of the script's UTF-8 text, then `&variant=NAME` when a bug switch is flipped, `&seed=N`
 * when the seed is not 0 and `&lab=NAME` when the script is a bundled lab's, edited or not (the page's title). The fragment never reaches a server, so a link works from a file:// page and from
 * any static host alike.
 */

/** What a link restores: the script, the variant switch (undefined: every variant), the seed (absent: 0). */
export interface PlaygroundState {
  readonly script: string;
  readonly variant: string | undefined;
  /** Seed of the run's random choices (lease IDs), as `etcdsim run --seed`; absent means 0. */
  readonly seed?: number | undefined;
  /** The bundled lab the script came from, kept through edits (absent: a script of the learner's own). */
  readonly lab?: string | undefined;
}

/** A seed as the page and a link take it: a non-negative integer the run can use exactly (at most 2^53 - 1). */
export function parseSeed(text: string): number | undefined {
  if (!/^\d{1,16}$/.test(text.trim())) return undefined;
  const n = Number(text.trim());
  return Number.isSafeInteger(n) ? n : undefined;
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
  const seed = state.seed !== undefined && state.seed !== 0 ? `&seed=${state.seed}` : '';
  const lab = state.lab !== undefined ? `&lab=${encodeURIComponent(state.lab)}` : '';
  return `#script=${toBase64Url(state.script)}${state.variant !== undefined ? `&variant=${encodeURIComponent(state.variant)}` : ''}${seed}${lab}`;
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
  const name = decoded(variant);
  const seedText = params.get('seed');
  const seed = seedText !== undefined ? parseSeed(seedText) : undefined;
  const lab = decoded(params.get('lab'));
  return { script, variant: name, ...(seed !== undefined && seed !== 0 ? { seed } : {}), ...(lab !== undefined ? { lab } : {}) };
}

/** A percent-encoded parameter's text; undefined when absent, empty or malformed. */
function decoded(v: string | undefined): string | undefined {
  if (v === undefined || v === '') return undefined;
  try {
    return decodeURIComponent(v);
  } catch {
    return undefined;
  }
}
