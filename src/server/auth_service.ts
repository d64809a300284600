/**
 * etcdserverpb.Auth over one member's AuthStore (src/auth), message form in and out. Which calls need the
 * root role while auth is enabled is etcd's (apply/auth.go needAdminPermission): all but Authenticate and
 * AuthStatus; UserGet is also allowed on oneself and RoleGet on a role one has. Every call but a failed
 * password check is one Raft entry, as etcd proposes each. Headers carry the current store revision.
 */
import type { AuthInfo, KeyPermission, PermissionType } from '../auth/index.js';
import { bytesIn, bytesOut, header } from './convert.js';
import { asGrpc, invalidArgument } from './errors.js';
import type { CallContext } from './call_context.js';
import type * as M from './messages.js';
import type { EtcdServer } from './etcd_server.js';

/** Permission types by number and by name (etcd's and etcd3's spellings). */
const PERM_TYPES: Readonly<Record<string, PermissionType>> = {
  '0': 'READ',
  '1': 'WRITE',
  '2': 'READWRITE',
  READ: 'READ',
  WRITE: 'WRITE',
  READWRITE: 'READWRITE',
  Read: 'READ',
  Write: 'WRITE',
  Readwrite: 'READWRITE',
};

export function permissionIn(p: M.PermissionInput): KeyPermission {
  const t = PERM_TYPES[String(p.permType ?? 0)];
  if (t === undefined) throw invalidArgument(`invalid permType ${String(p.permType)}`);
  return { permType: t, key: bytesIn(p.key, 'key'), rangeEnd: bytesIn(p.range_end, 'range_end') };
}

export function permissionOut(p: KeyPermission): M.Permission {
  return { permType: p.permType, key: bytesOut(p.key), range_end: bytesOut(p.rangeEnd) };
}

/** @public */
export class AuthService {
  /** @internal */
  constructor(private readonly server: EtcdServer) {}

  #hdr(): M.ResponseHeader {
    return header(this.server.identity, this.server.mvcc.currentRevision);
  }

  /** A Raft-proposed auth request: the caller's token is resolved first, then the entry counts. */
  private proposed<T>(ctx: CallContext | undefined, admin: boolean, fn: (ai: AuthInfo | undefined) => T): T {
    const server = this.server;
    return asGrpc(() => {
      const ai = server.authInfo(ctx);
      server.noteRaftEntry();
      if (admin) server.auth.checkAdmin(ai);
      return fn(ai);
    });
  }

  #simple(ctx: CallContext | undefined, fn: () => void): M.AuthHeaderResponse {
    this.proposed(ctx, true, fn);
    return { header: this.#hdr() };
  }

  authEnable(_req: M.AuthEnableRequest = {}, ctx?: CallContext): M.AuthHeaderResponse {
    return this.#simple(ctx, () => this.server.auth.authEnable());
  }

  authDisable(_req: M.AuthDisableRequest = {}, ctx?: CallContext): M.AuthHeaderResponse {
    return this.#simple(ctx, () => this.server.auth.authDisable());
  }

  authStatus(_req: M.AuthStatusRequest = {}, ctx?: CallContext): M.AuthStatusResponse {
    const auth = this.server.auth;
    this.proposed(ctx, false, () => undefined);
    return { header: this.#hdr(), enabled: auth.enabled, authRevision: String(auth.revision) };
  }

  /** Authenticate: a password check (no Raft entry when it fails), then a proposed token assignment. */
  authenticate(req: M.AuthenticateRequest, _ctx?: CallContext): M.AuthenticateResponse {
    const server = this.server;
    const token = asGrpc(() => server.auth.authenticate(req.name ?? '', req.password ?? '', server.raftIndex + 1));
    server.noteRaftEntry();
    return { header: this.#hdr(), token };
  }

  userAdd(req: M.AuthUserAddRequest, ctx?: CallContext): M.AuthHeaderResponse {
    return this.#simple(ctx, () => this.server.auth.userAdd(req.name ?? '', req.password ?? '', req.options?.no_password === true));
  }

  userGet(req: M.AuthUserGetRequest, ctx?: CallContext): M.AuthUserGetResponse {
    const auth = this.server.auth;
    const name = req.name ?? '';
    const roles = this.proposed(ctx, false, (ai) => {
      if (!auth.isAdmin(ai) && name !== ai?.username) auth.checkAdmin(ai);
      return auth.userGet(name);
    });
    return { header: this.#hdr(), roles };
  }

  userList(_req: M.AuthUserListRequest = {}, ctx?: CallContext): M.AuthUserListResponse {
    const users = this.proposed(ctx, true, () => this.server.auth.userList());
    return { header: this.#hdr(), users };
  }

  userDelete(req: M.AuthUserDeleteRequest, ctx?: CallContext): M.AuthHeaderResponse {
    return this.#simple(ctx, () => this.server.auth.userDelete(req.name ?? ''));
  }

  userChangePassword(req: M.AuthUserChangePasswordRequest, ctx?: CallContext): M.AuthHeaderResponse {
    return this.#simple(ctx, () => this.server.auth.userChangePassword(req.name ?? '', req.password ?? ''));
  }

  userGrantRole(req: M.AuthUserGrantRoleRequest, ctx?: CallContext): M.AuthHeaderResponse {
    return this.#simple(ctx, () => this.server.auth.userGrantRole(req.user ?? '', req.role ?? ''));
  }

  userRevokeRole(req: M.AuthUserRevokeRoleRequest, ctx?: CallContext): M.AuthHeaderResponse {
    return this.#simple(ctx, () => this.server.auth.userRevokeRole(req.name ?? '', req.role ?? ''));
  }

  roleAdd(req: M.AuthRoleAddRequest, ctx?: CallContext): M.AuthHeaderResponse {
    return this.#simple(ctx, () => this.server.auth.roleAdd(req.name ?? ''));
  }

  roleGet(req: M.AuthRoleGetRequest, ctx?: CallContext): M.AuthRoleGetResponse {
    const auth = this.server.auth;
    const role = req.role ?? '';
    const perms = this.proposed(ctx, false, (ai) => {
      if (!auth.isAdmin(ai) && !(ai !== undefined && auth.hasRole(ai.username, role))) auth.checkAdmin(ai);
      return auth.roleGet(role);
    });
    return { header: this.#hdr(), perm: perms.map(permissionOut) };
  }

  roleList(_req: M.AuthRoleListRequest = {}, ctx?: CallContext): M.AuthRoleListResponse {
    const roles = this.proposed(ctx, true, () => this.server.auth.roleList());
    return { header: this.#hdr(), roles };
  }

  roleDelete(req: M.AuthRoleDeleteRequest, ctx?: CallContext): M.AuthHeaderResponse {
    return this.#simple(ctx, () => this.server.auth.roleDelete(req.role ?? ''));
  }

  roleGrantPermission(req: M.AuthRoleGrantPermissionRequest, ctx?: CallContext): M.AuthHeaderResponse {
    const perm = req.perm == null ? undefined : permissionIn(req.perm);
    return this.#simple(ctx, () => this.server.auth.roleGrantPermission(req.name ?? '', perm));
  }

  roleRevokePermission(req: M.AuthRoleRevokePermissionRequest, ctx?: CallContext): M.AuthHeaderResponse {
    return this.#simple(ctx, () => this.server.auth.roleRevokePermission(req.role ?? '', bytesIn(req.key, 'key'), bytesIn(req.range_end, 'range_end')));
  }
}
