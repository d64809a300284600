/** etcd's authentication and authorization: users, roles, key permissions, simple tokens. */
export { AuthStore, ROOT_USER, ROOT_ROLE, ROOT_PERMISSION, type AuthInfo, type AuthStoreOptions, type AuthSetup, type AuthSnapshot } from './store.js';
export { RangePermissions, PermissionTree, covers, permissionInterval, type ByteInterval, type KeyPermission, type PermissionType } from './range_perm.js';
export { SimpleTokens, DEFAULT_TOKEN_TTL_MS, type TokenProvider, type TokenProviderFactory } from './simple_token.js';
export { PasswordHasher, type PasswordHash } from './password.js';
export { checkRangeAuth, checkPutAuth, checkDeleteRangeAuth, checkTxnAuth, checkLeaseKeysAuth, type LeaseKeys } from './enforce.js';
export * from './errors.js';
