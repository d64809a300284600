/** The HTTP front door: etcd's HTTP endpoints (/health, /version, /metrics, the gRPC gateway) on the client port. */
export { alarmUnhealthy, answerUnhealthy, createClientHttp, type ClientHttp } from './handler.js';
export { canonicalSerial, listenClientPort, type ClientPort, type ClientPortOptions, type TlsServerOptions } from './port.js';
export { httpStatusFromCode, type HttpRequest, type HttpResponse } from './gateway.js';
export { messageFromJson, messageToJson, readJsonValue, type JsonValue } from './json.js';
export { routeAt, type Route } from './gateway_routes.js';
export { serveHttpOverH2 } from './h2_exchange.js';

// For the floors above, which import this folder only through this index (test/layout/index_imports.test.ts).
export { handleClusterControl, SERVED_CLIENT } from './cluster_control.js';
