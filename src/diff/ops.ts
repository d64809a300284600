/**
 * The differential workload's operations: plain JSON data (printable, shrinkable by fast-check), turned
 * into requests in message form per side at run time. Everything a side assigns itself is referenced
 * symbolically and resolved against that side's own state:
 *  - leases by the order in which the run granted them (`{ granted: i }`: the i-th lease granted, modulo
 *    how many there are), or by a fixed ID (`{ id }`: an unknown or client-chosen lease);
 *  - watch streams by a small index (opened on first use, on both sides);
 *  - revisions relative to the current or the compaction revision (both sides agree on both while they
 *    have not diverged), or absolute (0, negative).
 *  - callers by user name (`as`): each side holds the token its own Authenticate returned for that user
 *    (simple tokens are random, so they differ between the sides); a user this side holds no token for
 *    calls without one, and BOGUS_CALLER sends a token neither side issued.
 * Keys are latin1 strings, so "\u0000" and "ÿ" (0xff) are single bytes.
 */
export type LeaseRef = { readonly granted: number } | { readonly id: string };

/** A revision: `cur + delta`, `compact + delta`, or `abs`. */
export type RevSpec =
  | { readonly from: 'cur'; readonly delta: number }
  | { readonly from: 'compact'; readonly delta: number }
  | { readonly from: 'abs'; readonly rev: number };

/** The end of a key range: single key, prefix, from-key ("\0"), an explicit end key, or none at all. */
export type EndSpec = 'single' | 'prefix' | 'fromKey' | { readonly end: string };

export interface RangeOp {
  readonly key: string;
  readonly end: EndSpec;
  readonly limit?: number | undefined;
  readonly revision?: RevSpec | undefined;
  readonly sortOrder?: 'NONE' | 'ASCEND' | 'DESCEND' | undefined;
  readonly sortTarget?: 'KEY' | 'VERSION' | 'CREATE' | 'MOD' | 'VALUE' | undefined;
  readonly keysOnly?: boolean | undefined;
  readonly countOnly?: boolean | undefined;
  readonly serializable?: boolean | undefined;
  readonly minMod?: RevSpec | undefined;
  readonly maxMod?: RevSpec | undefined;
  readonly minCreate?: RevSpec | undefined;
  readonly maxCreate?: RevSpec | undefined;
}

export interface PutOp {
  readonly key: string;
  /** The value, or a length for a generated value ("x" repeated: oversized requests). */
  readonly value: string | { readonly size: number };
  readonly lease?: LeaseRef | undefined;
  readonly prevKv?: boolean | undefined;
  readonly ignoreValue?: boolean | undefined;
  readonly ignoreLease?: boolean | undefined;
}

export interface DeleteOp {
  readonly key: string;
  readonly end: EndSpec;
  readonly prevKv?: boolean | undefined;
}

export interface CompareSpec {
  readonly key: string;
  readonly end?: EndSpec | undefined;
  readonly target: 'VERSION' | 'CREATE' | 'MOD' | 'VALUE' | 'LEASE';
  readonly result: 'EQUAL' | 'GREATER' | 'LESS' | 'NOT_EQUAL';
  /** VERSION: a number; CREATE/MOD: a revision; VALUE: a string; LEASE: a lease. */
  readonly operand: number | RevSpec | string | LeaseRef;
}

export type TxnOpSpec =
  | { readonly range: RangeOp }
  | { readonly put: PutOp }
  | { readonly del: DeleteOp }
  | { readonly txn: TxnSpec };

export interface TxnSpec {
  readonly compare: readonly CompareSpec[];
  readonly success: readonly TxnOpSpec[];
  readonly failure: readonly TxnOpSpec[];
}

export interface WatchCreateOp {
  readonly stream: number;
  readonly key: string;
  readonly end: EndSpec;
  readonly start?: RevSpec | undefined;
  readonly noPut?: boolean | undefined;
  readonly noDelete?: boolean | undefined;
  readonly prevKv?: boolean | undefined;
  readonly progressNotify?: boolean | undefined;
  /** A client-chosen watch ID (0: let the server choose). */
  readonly watchId?: number | undefined;
}

export type Op =
  | { readonly op: 'put'; readonly put: PutOp }
  | { readonly op: 'range'; readonly range: RangeOp }
  | { readonly op: 'delete'; readonly del: DeleteOp }
  | { readonly op: 'txn'; readonly txn: TxnSpec }
  /** A txn of `count` ranges (128 is allowed, 129 is too many ops). */
  | { readonly op: 'bigTxn'; readonly count: number }
  | { readonly op: 'compact'; readonly rev: RevSpec; readonly physical: boolean }
  | { readonly op: 'watch'; readonly watch: WatchCreateOp }
  | { readonly op: 'watchCancel'; readonly stream: number; readonly watchId: number }
  | { readonly op: 'watchProgress'; readonly stream: number }
  | { readonly op: 'grant'; readonly ttl: number; readonly id?: string }
  | { readonly op: 'revoke'; readonly lease: LeaseRef }
  | { readonly op: 'keepAlive'; readonly lease: LeaseRef }
  | { readonly op: 'timeToLive'; readonly lease: LeaseRef; readonly keys: boolean }
  | { readonly op: 'leases' }
  // Auth. Passwords are passwordOf(name), so a reset can always authenticate as root; Authenticate can
  // send a wrong one.
  | { readonly op: 'userAdd'; readonly name: string; readonly noPassword?: boolean | undefined }
  | { readonly op: 'userDelete'; readonly name: string }
  | { readonly op: 'userGet'; readonly name: string }
  | { readonly op: 'userList' }
  | { readonly op: 'userGrantRole'; readonly user: string; readonly role: string }
  | { readonly op: 'userRevokeRole'; readonly user: string; readonly role: string }
  | { readonly op: 'roleAdd'; readonly name: string }
  | { readonly op: 'roleDelete'; readonly name: string }
  | { readonly op: 'roleGet'; readonly name: string }
  | { readonly op: 'roleList' }
  | { readonly op: 'roleGrantPermission'; readonly role: string; readonly perm: PermSpec }
  | { readonly op: 'roleRevokePermission'; readonly role: string; readonly key: string; readonly end: EndSpec }
  | { readonly op: 'authEnable' }
  | { readonly op: 'authDisable' }
  | { readonly op: 'authenticate'; readonly user: string; readonly wrongPassword?: boolean | undefined }
  /** `req` issued by user `user` (with this side's token for it). */
  | { readonly op: 'as'; readonly user: string; readonly req: Op };

/** A key permission: READ, WRITE or READWRITE on a key, a range, a prefix or from a key. */
export interface PermSpec {
  readonly type: 'READ' | 'WRITE' | 'READWRITE';
  readonly key: string;
  readonly end: EndSpec;
}

/** The password every generated user gets. */
export function passwordOf(name: string): string {
  return `pw-${name}`;
}

/** A caller whose token neither side issued (etcd: invalid auth token). */
export const BOGUS_CALLER = '?bogus';
export const BOGUS_TOKEN = 'bogusbogusbogusb.1';
