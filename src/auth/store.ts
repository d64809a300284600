/**
 * etcd's auth store (server/auth/store.go and the auth applier, server/etcdserver/apply/auth.go): users,
 * roles and their key permissions, the enabled flag and the auth revision, and the permission checks the
 * server makes before it applies a request. Every rule and error is etcd's:
 *  - the auth revision starts at 1 and every successful change (user/role add, delete, password change,
 *    grant, revoke, AuthDisable) bumps it by one; AuthEnable, a no-op grant of a role the user already
 *    has and failed requests do not;
 *  - AuthEnable needs user `root` with role `root`; while enabled, `root` cannot be deleted, `root` cannot
 *    lose role `root`, and role `root` cannot be deleted (ErrInvalidAuthMgmt);
 *  - a user with role `root` may do anything; others need READ/WRITE covering the request's keys.
 */
import { bytesEqual, compareBytes } from '../mvcc/index.js';
import { fail } from '../etcd/index.js';
import type { Clock, SimRandom } from '../sim/index.js';
import { PasswordHasher, type PasswordHash } from './password.js';
import { RangePermissions, type KeyPermission, type PermissionType } from './range_perm.js';
import { SimpleTokens, type TokenProvider, type TokenProviderFactory } from './simple_token.js';
import {
  ErrAuthFailed,
  ErrAuthNotEnabled,
  ErrInvalidAuthMgmt,
  ErrInvalidAuthToken,
  ErrAuthOldRevision,
  ErrNoPasswordUser,
  ErrPermissionDenied,
  ErrPermissionNotGiven,
  ErrPermissionNotGranted,
  ErrRoleAlreadyExist,
  ErrRoleEmpty,
  ErrRoleNotFound,
  ErrRoleNotGranted,
  ErrRootRoleNotExist,
  ErrRootUserNotExist,
  ErrUserAlreadyExist,
  ErrUserEmpty,
  ErrUserNotFound,
} from './errors.js';

export const ROOT_USER = 'root';
export const ROOT_ROLE = 'root';
/** What RoleGet answers for role root (store.go rootPerm): READWRITE over every key. */
export const ROOT_PERMISSION: KeyPermission = Object.freeze({ permType: 'READWRITE', key: new Uint8Array(0), rangeEnd: Uint8Array.of(0) });

/** Who is calling: the user a valid token names. Undefined = no token (auth disabled, or none sent). */
export interface AuthInfo {
  readonly username: string;
  /** The auth revision a JWT was issued at (a simple token always names the current one: undefined). */
  readonly revision?: number | undefined;
}

interface User {
  readonly name: string;
  password: PasswordHash | undefined;
  roles: string[];
  readonly noPassword: boolean;
}

interface Role {
  readonly name: string;
  perms: KeyPermission[];
}

export interface AuthStoreOptions {
  readonly clock: Clock;
  readonly random: SimRandom;
  /** --auth-token-ttl in seconds (300). */
  readonly tokenTTL?: number | undefined;
  /** --auth-token jwt,...: another kind of token than simple ones (jwt_token.ts). */
  readonly tokenProvider?: TokenProviderFactory | undefined;
  /** bcrypt cost, 4..31 (etcd's --bcrypt-cost; default 4, bcrypt's fastest; see password.ts). */
  readonly hashCost?: number | undefined;
  /** RoleGet of role root answers ROOT_PERMISSION (etcd ≥ 3.6, PR #13006); else its own, empty list. */
  readonly rootPermInRoleGet?: boolean | undefined;
  /**
   * A token sent while auth is disabled is still looked up (etcd 3.4: AuthInfoFromCtx does not look at the
   * enabled flag, and disabling drops every token), so any token then fails with ErrInvalidAuthToken
   * (observed on 3.4.23: Range, Put, DeleteRange, Txn, Compact, LeaseGrant, LeaseRevoke, admin RPCs and
   * Watch creates; LeaseTimeToLive, LeaseKeepAlive and LeaseLeases do not look).
   */
  readonly tokensCheckedWhileDisabled?: boolean | undefined;
  /**
   * A txn's permission check descends into nested txns (etcd ≥ 3.5). etcd 3.4's checkTxnAuth checks the
   * compares and the range / put / delete ops of both branches but skips a nested txn entirely (observed
   * on 3.4.23: a user without any permission runs a txn whose branches hold only nested txns).
   */
  readonly checksNestedTxns?: boolean | undefined;
  /**
   * LeaseTimeToLive and LeaseKeepAlive check the caller (token, then READ / WRITE on the attached keys):
   * etcd ≥ 3.5.9 and 3.4.26 (CVE-2023-32082). etcd 3.4.23 checks neither, not even the token (observed).
   */
  readonly checksLeaseAccess?: boolean | undefined;
}

/** Users, roles and permissions to start with (applied before any request, auth revision bumps included). @public */
export interface AuthSetup {
  readonly users?: readonly { name: string; password?: string; noPassword?: boolean; roles?: readonly string[] }[] | undefined;
  readonly roles?: readonly { name: string; permissions?: readonly { permType: PermissionType; key: Uint8Array | string; rangeEnd?: Uint8Array | string }[] }[] | undefined;
  /** Turn auth on once users and roles exist (needs user root with role root). */
  readonly enable?: boolean | undefined;
}

/**
 * The auth store's persistent state — what etcd keeps in its backend's auth, authUsers and authRoles
 * buckets and therefore ships in a snapshot: the enabled flag, the auth revision, every user (password
 * hash, roles, no_password option) and every role (permissions in stored order). Tokens are not part of it:
 * etcd holds simple tokens in the member's memory only.
 * @public
 */
export interface AuthSnapshot {
  readonly enabled: boolean;
  readonly revision: number;
  readonly users: ReadonlyArray<{ readonly name: string; readonly password: PasswordHash | undefined; readonly roles: readonly string[]; readonly noPassword: boolean }>;
  readonly roles: ReadonlyArray<{ readonly name: string; readonly perms: readonly KeyPermission[] }>;
}

const copyPerm = (p: KeyPermission): KeyPermission => ({ permType: p.permType, key: Uint8Array.from(p.key), rangeEnd: Uint8Array.from(p.rangeEnd) });

export class AuthStore {
  private enabledFlag = false;
  private rev = 1;
  private readonly users = new Map<string, User>();
  private readonly roles = new Map<string, Role>();
  private permCache = new Map<string, RangePermissions>();
  readonly tokens: TokenProvider;
  readonly hasher: PasswordHasher;
  private readonly rootPermInRoleGet: boolean;
  private readonly tokensCheckedWhileDisabled: boolean;
  /** See AuthStoreOptions.checksNestedTxns. */
  readonly checksNestedTxns: boolean;
  /** See AuthStoreOptions.checksLeaseAccess. */
  readonly checksLeaseAccess: boolean;

  constructor(opts: AuthStoreOptions) {
    this.rootPermInRoleGet = opts.rootPermInRoleGet ?? true;
    this.tokensCheckedWhileDisabled = opts.tokensCheckedWhileDisabled ?? false;
    this.checksNestedTxns = opts.checksNestedTxns ?? true;
    this.checksLeaseAccess = opts.checksLeaseAccess ?? true;
    this.tokens = opts.tokenProvider !== undefined ? opts.tokenProvider(opts.clock) : new SimpleTokens(opts.clock, opts.random.fork('token'), (opts.tokenTTL ?? 300) * 1000);
    this.hasher = new PasswordHasher(opts.random.fork('salt'), opts.hashCost);
  }

  get enabled(): boolean {
    return this.enabledFlag;
  }

  /** Whether a request's token is looked up now: while enabled, and on etcd 3.4 also while disabled. */
  get checksTokens(): boolean {
    return this.enabledFlag || this.tokensCheckedWhileDisabled;
  }

  /** The auth revision (AuthStatus authRevision). */
  get revision(): number {
    return this.rev;
  }

  private commit(): void {
    this.rev++;
    this.permCache.clear();
  }

  // -------------------------------------------------------------------------------------------------
  // Enable / disable / authenticate

  authEnable(): void {
    if (this.enabledFlag) return; // "already enabled; ignored"
    const root = this.users.get(ROOT_USER);
    if (root === undefined) fail(ErrRootUserNotExist);
    if (!root.roles.includes(ROOT_ROLE)) fail(ErrRootRoleNotExist);
    this.enabledFlag = true;
    this.permCache.clear();
  }

  authDisable(): void {
    if (!this.enabledFlag) return;
    this.enabledFlag = false;
    this.commit();
    this.tokens.clear();
  }

  /** CheckPassword then Authenticate: a token for a valid name and password. */
  authenticate(name: string, password: string, index: number): string {
    this.checkPassword(name, password);
    return this.tokens.assign(name, index, this.rev);
  }

  /** etcd's CheckPassword: the name and password are a user's (what a member checks before proposing). */
  checkPassword(name: string, password: string): void {
    if (!this.enabledFlag) fail(ErrAuthNotEnabled);
    const u = this.users.get(name);
    if (u === undefined) fail(ErrAuthFailed);
    if (u.noPassword) fail(ErrNoPasswordUser);
    if (u.password === undefined || !this.hasher.verify(password, u.password)) fail(ErrAuthFailed);
  }

  /** The random part of the next simple token, drawn by the member that proposes an Authenticate ('' for JWTs). */
  tokenPrefix(): string {
    return this.tokens instanceof SimpleTokens ? this.tokens.prefix() : '';
  }

  /**
   * Authenticate as a member of a cluster applies it, the password checked by the proposer: a token for
   * `name` naming the entry's `index`, with the random part the proposer drew (`prefix`), so every member
   * holds the same simple token.
   */
  assignToken(name: string, index: number, prefix: string): string {
    if (!this.enabledFlag) fail(ErrAuthNotEnabled);
    if (!this.users.has(name)) fail(ErrAuthFailed);
    return this.tokens.assign(name, index, this.rev, prefix);
  }

  /**
   * AuthInfoFromCtx: undefined while auth is disabled (unless tokensCheckedWhileDisabled) or when no token
   * was sent; the token's user when it is valid; ErrInvalidAuthToken when it is unknown or expired.
   */
  authInfo(token: string | undefined): AuthInfo | undefined {
    if (!this.checksTokens || token === undefined) return undefined;
    const info = this.tokens.info(token);
    if (info === undefined) fail(ErrInvalidAuthToken);
    return info.revision === undefined ? { username: info.user } : { username: info.user, revision: info.revision };
  }

  // -------------------------------------------------------------------------------------------------
  // Users

  userAdd(name: string, password: string, noPassword = false): void {
    if (name.length === 0) fail(ErrUserEmpty);
    if (this.users.has(name)) fail(ErrUserAlreadyExist);
    this.users.set(name, { name, password: noPassword ? undefined : this.hasher.hash(password), roles: [], noPassword });
    this.commit();
  }

  userDelete(name: string): void {
    if (this.enabledFlag && name === ROOT_USER) fail(ErrInvalidAuthMgmt);
    if (!this.users.delete(name)) fail(ErrUserNotFound);
    this.commit();
    this.tokens.invalidateUser(name);
  }

  userChangePassword(name: string, password: string): void {
    const u = this.users.get(name);
    if (u === undefined) fail(ErrUserNotFound);
    u.password = u.noPassword ? undefined : this.hasher.hash(password);
    this.commit();
    this.tokens.invalidateUser(name);
  }

  userGrantRole(user: string, role: string): void {
    const u = this.users.get(user);
    if (u === undefined) fail(ErrUserNotFound);
    if (role !== ROOT_ROLE && !this.roles.has(role)) fail(ErrRoleNotFound);
    if (u.roles.includes(role)) return; // "ignored grant role request": no error, no revision
    u.roles = [...u.roles, role].sort();
    this.commit();
  }

  userRevokeRole(name: string, role: string): void {
    if (this.enabledFlag && name === ROOT_USER && role === ROOT_ROLE) fail(ErrInvalidAuthMgmt);
    const u = this.users.get(name);
    if (u === undefined) fail(ErrUserNotFound);
    if (!u.roles.includes(role)) fail(ErrRoleNotGranted);
    u.roles = u.roles.filter((r) => r !== role);
    this.commit();
  }

  /** UserGet: the user's roles, sorted. */
  userGet(name: string): string[] {
    const u = this.users.get(name);
    if (u === undefined) fail(ErrUserNotFound);
    return [...u.roles];
  }

  /** UserList: every user name, sorted (bolt key order). */
  userList(): string[] {
    return [...this.users.keys()].sort();
  }

  // -------------------------------------------------------------------------------------------------
  // Roles

  roleAdd(name: string): void {
    if (name.length === 0) fail(ErrRoleEmpty);
    if (this.roles.has(name)) fail(ErrRoleAlreadyExist);
    this.roles.set(name, { name, perms: [] });
    this.commit();
  }

  /** RoleGet: the role's permissions in key order (role root: READWRITE over everything, from etcd 3.6). */
  roleGet(name: string): KeyPermission[] {
    const r = this.roles.get(name);
    if (r === undefined) fail(ErrRoleNotFound);
    return name === ROOT_ROLE && this.rootPermInRoleGet ? [ROOT_PERMISSION] : [...r.perms];
  }

  roleList(): string[] {
    return [...this.roles.keys()].sort();
  }

  roleDelete(name: string): void {
    if (this.enabledFlag && name === ROOT_ROLE) fail(ErrInvalidAuthMgmt);
    if (!this.roles.delete(name)) fail(ErrRoleNotFound);
    for (const u of this.users.values()) if (u.roles.includes(name)) u.roles = u.roles.filter((r) => r !== name);
    this.commit();
  }

  /**
   * RoleGrantPermission: the list stays sorted by key. Only the first permission whose key is >= the new
   * one's is looked at: if it has the same key and range_end its type is replaced, otherwise the grant is
   * inserted (after the permissions with an equal key), even when a later permission has the same key and
   * range_end (observed on 3.4.23: READ "b", READ from "b", WRITE from "b" keeps all three). Not modelled:
   * with more than 12 permissions etcd's unstable sort.Sort (pdqsort) reorders equal keys — observed on
   * 3.4.23 (go1.19 build) putting each new grant before the equal-key ones, which changes RoleGet's order
   * and which permission a later grant updates.
   */
  roleGrantPermission(name: string, perm: KeyPermission | undefined): void {
    if (perm === undefined) fail(ErrPermissionNotGiven);
    const r = this.roles.get(name);
    if (r === undefined) fail(ErrRoleNotFound);
    const copy: KeyPermission = { permType: perm.permType, key: Uint8Array.from(perm.key), rangeEnd: Uint8Array.from(perm.rangeEnd) };
    const idx = r.perms.findIndex((p) => compareBytes(p.key, perm.key) >= 0);
    const at = idx === -1 ? undefined : r.perms[idx];
    if (at !== undefined && bytesEqual(at.key, perm.key) && bytesEqual(at.rangeEnd, perm.rangeEnd)) {
      r.perms = r.perms.map((p, i) => (i === idx ? copy : p));
    } else {
      r.perms = [...r.perms, copy].sort((a, b) => compareBytes(a.key, b.key));
    }
    this.commit();
  }

  roleRevokePermission(name: string, key: Uint8Array, rangeEnd: Uint8Array): void {
    const r = this.roles.get(name);
    if (r === undefined) fail(ErrRoleNotFound);
    const kept = r.perms.filter((p) => !bytesEqual(p.key, key) || !bytesEqual(p.rangeEnd, rangeEnd));
    if (kept.length === r.perms.length) fail(ErrPermissionNotGranted);
    r.perms = kept;
    this.commit();
  }

  // -------------------------------------------------------------------------------------------------
  // Snapshot / restore

  /** The persistent state (deep copy): users, roles, permissions, enabled flag, auth revision. No tokens. */
  snapshot(): AuthSnapshot {
    return {
      enabled: this.enabledFlag,
      revision: this.rev,
      users: [...this.users.values()].map((u) => ({ name: u.name, password: u.password, roles: [...u.roles], noPassword: u.noPassword })),
      roles: [...this.roles.values()].map((r) => ({ name: r.name, perms: r.perms.map(copyPerm) })),
    };
  }

  /**
   * Replaces the persistent state with a snapshot's, as etcd's authStore.Recover does when a member applies
   * a snapshot: users and roles are then read from the restored buckets, the enabled flag and the auth
   * revision are reloaded. The member's tokens are left alone — Recover does not touch the token provider
   * (observed on 3.4.23: a follower that applied a leader's snapshot still accepts the simple tokens it held
   * before, even one whose user was deleted meanwhile (its requests are then denied) or whose password
   * changed, while a token issued by an Authenticate entry inside the snapshot is unknown to it). Since the
   * simulator's tokens never travel with a snapshot, a token issued by another member (the snapshot's
   * source) is unknown here too.
   */
  restore(s: AuthSnapshot): void {
    this.users.clear();
    for (const u of s.users) this.users.set(u.name, { name: u.name, password: u.password, roles: [...u.roles], noPassword: u.noPassword });
    this.roles.clear();
    for (const r of s.roles) this.roles.set(r.name, { name: r.name, perms: r.perms.map(copyPerm) });
    this.enabledFlag = s.enabled;
    this.rev = s.revision;
    this.permCache.clear();
  }

  // -------------------------------------------------------------------------------------------------
  // Checks

  hasRole(user: string, role: string): boolean {
    return this.users.get(user)?.roles.includes(role) ?? false;
  }

  /** isOpPermitted: READ/WRITE over a key or range; throws ErrUserEmpty / ErrPermissionDenied. */
  checkOp(ai: AuthInfo | undefined, kind: 'READ' | 'WRITE', key: Uint8Array, rangeEnd?: Uint8Array): void {
    if (!this.enabledFlag) return;
    if (ai === undefined) fail(ErrUserEmpty);
    // A JWT issued before the last auth change (etcd's isOpPermitted compares revisions).
    if (ai.revision !== undefined && ai.revision < this.rev) fail(ErrAuthOldRevision);
    const u = this.users.get(ai.username);
    if (u === undefined) fail(ErrPermissionDenied);
    if (u.roles.includes(ROOT_ROLE)) return;
    if (!this.permsOf(u).permits(kind, key, rangeEnd)) fail(ErrPermissionDenied);
  }

  /**
   * doSerialize's last check, after a read served without Raft (a Range, a read-only Txn): a token issued at
   * another auth revision than the store's is refused with ErrAuthOldRevision — a JWT after any auth change,
   * even while auth is off on 3.4.23, whose AuthInfoFromCtx reads a token then (observed: such a Range is
   * refused, test/shadow/jwt.test.ts). A simple token names the current revision.
   */
  checkServedRevision(ai: AuthInfo | undefined): void {
    if (ai?.revision !== undefined && ai.revision !== this.rev) fail(ErrAuthOldRevision);
  }

  /** IsAdminPermitted: the caller has role root (anyone, while auth is disabled). */
  checkAdmin(ai: AuthInfo | undefined): void {
    if (!this.enabledFlag) return;
    if (ai === undefined || ai.username === '') fail(ErrUserEmpty);
    const u = this.users.get(ai.username);
    if (u === undefined) fail(ErrUserNotFound);
    if (!u.roles.includes(ROOT_ROLE)) fail(ErrPermissionDenied);
  }

  /** True when checkAdmin would pass. */
  isAdmin(ai: AuthInfo | undefined): boolean {
    try {
      this.checkAdmin(ai);
      return true;
    } catch {
      return false;
    }
  }

  private permsOf(u: User): RangePermissions {
    let p = this.permCache.get(u.name);
    if (p === undefined) {
      p = new RangePermissions();
      for (const roleName of u.roles) for (const perm of this.roles.get(roleName)?.perms ?? []) p.add(perm);
      this.permCache.set(u.name, p);
    }
    return p;
  }

  /** Applies a setup as a root client would, in order: roles, users (with their roles), then enable. */
  apply(setup: AuthSetup): void {
    const bytes = (v: Uint8Array | string | undefined): Uint8Array => (v === undefined ? new Uint8Array(0) : typeof v === 'string' ? new TextEncoder().encode(v) : v);
    for (const r of setup.roles ?? []) {
      this.roleAdd(r.name);
      for (const p of r.permissions ?? []) this.roleGrantPermission(r.name, { permType: p.permType, key: bytes(p.key), rangeEnd: bytes(p.rangeEnd) });
    }
    for (const u of setup.users ?? []) {
      this.userAdd(u.name, u.password ?? '', u.noPassword ?? false);
      for (const role of u.roles ?? []) this.userGrantRole(u.name, role);
    }
    if (setup.enable === true) this.authEnable();
  }
}
