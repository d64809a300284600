/** etcd's auth errors (server/auth/store.go), with the codes v3rpc/util.go togRPCError maps them to (rpctypes/error.go). */
import { errorKind, GrpcCode } from '../etcd/index.js';

/** @public */
export const ErrRootUserNotExist = errorKind(GrpcCode.FAILED_PRECONDITION, 'etcdserver: root user does not exist');
/** @public */
export const ErrRootRoleNotExist = errorKind(GrpcCode.FAILED_PRECONDITION, 'etcdserver: root user does not have root role');
/** @public */
export const ErrUserAlreadyExist = errorKind(GrpcCode.FAILED_PRECONDITION, 'etcdserver: user name already exists');
/** @public */
export const ErrUserEmpty = errorKind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: user name is empty');
/** @public */
export const ErrUserNotFound = errorKind(GrpcCode.FAILED_PRECONDITION, 'etcdserver: user name not found');
/** @public */
export const ErrRoleAlreadyExist = errorKind(GrpcCode.FAILED_PRECONDITION, 'etcdserver: role name already exists');
/** @public */
export const ErrRoleNotFound = errorKind(GrpcCode.FAILED_PRECONDITION, 'etcdserver: role name not found');
/** @public */
export const ErrRoleEmpty = errorKind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: role name is empty');
/** @public */
export const ErrAuthFailed = errorKind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: authentication failed, invalid user ID or password');
/** @public */
export const ErrPermissionNotGiven = errorKind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: permission not given');
/** @public */
export const ErrPermissionDenied = errorKind(GrpcCode.PERMISSION_DENIED, 'etcdserver: permission denied');
/** @public */
export const ErrRoleNotGranted = errorKind(GrpcCode.FAILED_PRECONDITION, 'etcdserver: role is not granted to the user');
/** @public */
export const ErrPermissionNotGranted = errorKind(GrpcCode.FAILED_PRECONDITION, 'etcdserver: permission is not granted to the role');
/** @public */
export const ErrAuthNotEnabled = errorKind(GrpcCode.FAILED_PRECONDITION, 'etcdserver: authentication is not enabled');
/** @public */
export const ErrInvalidAuthToken = errorKind(GrpcCode.UNAUTHENTICATED, 'etcdserver: invalid auth token');
export const ErrAuthOldRevision = errorKind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: revision of auth store is old');
/** @public */
export const ErrInvalidAuthMgmt = errorKind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: invalid auth management');
/** auth.ErrNoPasswordUser has no rpctypes mapping: togRPCError sends it as Unknown with the auth package's text. @public */
export const ErrNoPasswordUser = errorKind(GrpcCode.UNKNOWN, 'auth: authentication failed, password was given for no password user');
