/**
 * etcd's TLS flags of the client port beyond the files: `--cipher-suites` (Go's names, checked before
 * anything else starts: an unknown one stops etcd with `unexpected TLS cipher suite "X"`), `--tls-min-version`
 * and `--tls-max-version` (3.5+; TLS1.0 .. TLS1.3) and `--client-crl-file`: as etcd's listener, which
 * compares the serial numbers of the client's certificates with the CRL's and drops the connection on a
 * match, without looking at the CRL's dates or signature (OpenSSL's own CRL check would refuse every client
 * once the CRL's next update has passed, as etcd's test fixture's has). Node speaks TLS through OpenSSL, so Go's suite names become OpenSSL's; TLS 1.3's suites
 * cannot be chosen in Go (its names are accepted and change nothing), and a list of TLS 1.2 suites leaves TLS
 * 1.3 on with all of its own — as in etcd, where Go ignores the list for TLS 1.3.
 */
import { accessSync, constants, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { autoTlsFiles, loadX509 } from './auto_tls.js';
import { boolValue } from './flag_set.js';
import { CliError } from '../io.js';
import { canonicalSerial } from '../../http/index.js';

/** Go's cipher suite names (crypto/tls, secure and insecure, plus etcd's two aliases) as OpenSSL names them. */
const OPENSSL_NAMES: Readonly<Record<string, string | null>> = {
  TLS_RSA_WITH_RC4_128_SHA: 'RC4-SHA',
  TLS_RSA_WITH_3DES_EDE_CBC_SHA: 'DES-CBC3-SHA',
  TLS_RSA_WITH_AES_128_CBC_SHA: 'AES128-SHA',
  TLS_RSA_WITH_AES_256_CBC_SHA: 'AES256-SHA',
  TLS_RSA_WITH_AES_128_CBC_SHA256: 'AES128-SHA256',
  TLS_RSA_WITH_AES_128_GCM_SHA256: 'AES128-GCM-SHA256',
  TLS_RSA_WITH_AES_256_GCM_SHA384: 'AES256-GCM-SHA384',
  TLS_ECDHE_ECDSA_WITH_RC4_128_SHA: 'ECDHE-ECDSA-RC4-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA: 'ECDHE-ECDSA-AES128-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA: 'ECDHE-ECDSA-AES256-SHA',
  TLS_ECDHE_RSA_WITH_RC4_128_SHA: 'ECDHE-RSA-RC4-SHA',
  TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA: 'ECDHE-RSA-DES-CBC3-SHA',
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: 'ECDHE-RSA-AES128-SHA',
  TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA: 'ECDHE-RSA-AES256-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256: 'ECDHE-ECDSA-AES128-SHA256',
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256: 'ECDHE-RSA-AES128-SHA256',
  TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: 'ECDHE-RSA-AES128-GCM-SHA256',
  TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: 'ECDHE-ECDSA-AES128-GCM-SHA256',
  TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: 'ECDHE-RSA-AES256-GCM-SHA384',
  TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: 'ECDHE-ECDSA-AES256-GCM-SHA384',
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-RSA-CHACHA20-POLY1305',
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-ECDSA-CHACHA20-POLY1305',
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305: 'ECDHE-RSA-CHACHA20-POLY1305',
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305: 'ECDHE-ECDSA-CHACHA20-POLY1305',
  // TLS 1.3's: Go takes the names and does not let them be configured.
  TLS_AES_128_GCM_SHA256: null,
  TLS_AES_256_GCM_SHA384: null,
  TLS_CHACHA20_POLY1305_SHA256: null,
};

/** TLS 1.3's suites, which stay on whatever the TLS 1.2 list is (Node would otherwise cap at TLS 1.2). */
const TLS13_SUITES = 'TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256';

const TLS_VERSIONS: Readonly<Record<string, 'TLSv1' | 'TLSv1.1' | 'TLSv1.2' | 'TLSv1.3'>> = { 'TLS1.0': 'TLSv1', 'TLS1.1': 'TLSv1.1', 'TLS1.2': 'TLSv1.2', 'TLS1.3': 'TLSv1.3' };

/** A revoked-serials entry that drops every client: a CRL file that cannot be read. */
export const ALL_REVOKED = '*';

/** What the flags add to the client port's TLS options (src/grpc/server.ts TlsOptions). */
export interface TlsFlagOptions {
  readonly ciphers?: string | undefined;
  readonly minVersion?: 'TLSv1' | 'TLSv1.1' | 'TLSv1.2' | 'TLSv1.3' | undefined;
  readonly maxVersion?: 'TLSv1' | 'TLSv1.1' | 'TLSv1.2' | 'TLSv1.3' | undefined;
  /** Serial numbers (upper-case hex, as Node's X509Certificate gives them) the CRL revokes. */
  readonly revokedSerials?: readonly string[] | undefined;
}

/** The TLS flags checked as etcd checks them (exit 1 with its words), as options for the client port. */
export async function tlsFlagOptions(get: (flag: string) => string | undefined): Promise<TlsFlagOptions> {
  const suites = (get('cipher-suites') ?? '').split(',').filter((s) => s !== '');
  const names: string[] = [];
  for (const s of suites) {
    const n = OPENSSL_NAMES[s];
    if (n === undefined) throw new CliError(`unexpected TLS cipher suite ${JSON.stringify(s)}`, 1);
    if (n !== null) names.push(n);
  }
  const version = (flag: string): TlsFlagOptions['minVersion'] => {
    const v = get(flag);
    if (v === undefined || v === '') return undefined;
    const n = TLS_VERSIONS[v];
    if (n === undefined) throw new CliError(`unexpected TLS version ${JSON.stringify(v)} (must be one of: TLS1.0, TLS1.1, TLS1.2, TLS1.3)`, 1);
    return n;
  };
  const minVersion = version('tls-min-version');
  const maxVersion = version('tls-max-version');
  const order = ['TLSv1', 'TLSv1.1', 'TLSv1.2', 'TLSv1.3'];
  if (minVersion !== undefined && maxVersion !== undefined && order.indexOf(minVersion) > order.indexOf(maxVersion)) {
    throw new CliError(`min version (${get('tls-min-version')}) is greater than max version (${get('tls-max-version')})`, 1);
  }
  if (minVersion === 'TLSv1.3' && suites.length > 0) throw new CliError('cipher suites cannot be configured when only TLS1.3 is enabled', 1);
  const crlFile = get('client-crl-file');
  let revokedSerials: string[] | undefined;
  if (crlFile !== undefined && crlFile !== '') {
    let file: Buffer | undefined;
    try {
      file = readFileSync(crlFile);
    } catch {
      // etcd reads the file at each connection and drops the connection when it cannot: every one, here.
      file = undefined;
    }
    revokedSerials = file === undefined ? [ALL_REVOKED] : await revokedSerialsOf(file, crlFile);
  }
  return { ciphers: names.length === 0 ? undefined : `${names.join(':')}:${TLS13_SUITES}`, minVersion, maxVersion, revokedSerials };
}

/** The serial numbers a CRL (PEM or DER, as Go's x509.ParseCRL reads) revokes. */
async function revokedSerialsOf(file: Buffer, path: string): Promise<string[]> {
  const { X509Crl } = await loadX509();
  try {
    const text = file.toString('latin1');
    const crl = new X509Crl(text.includes('-----BEGIN') ? text : new Uint8Array(file));
    return crl.entries.map((e) => canonicalSerial(e.serialNumber));
  } catch (err) {
    throw new CliError(`${path}: ${(err as Error).message}`, 1);
  }
}

/** Go's error for a file that cannot be opened, as etcd stops with it. */
export function openError(path: string, err: unknown): CliError {
  return new CliError(`open ${path}: ${(err as { code?: string }).code === 'ENOENT' ? 'no such file or directory' : 'permission denied'}`, 1);
}

/** The files a member's peer port serves TLS with, and the CA it holds peers to (--peer-client-cert-auth). */
export interface PeerTlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
  readonly trustedCaFile?: string | undefined;
}

/**
 * The peer TLS flags, checked as etcd checks them when it sets up its peer listeners: an https peer URL
 * needs --peer-cert-file and --peer-key-file, or --peer-auto-tls (which generates them into
 * DATA-DIR/fixtures/peer, as etcd does); a named file must be readable. Returns the files a member of a
 * cluster of processes serves and dials its peers with (a single member serves no peer: for it the check
 * is all), undefined for plain peer URLs. A peer is held to --peer-trusted-ca-file only with
 * --peer-client-cert-auth, on both ends of a stream: etcd's dialer also checks the listener's certificate
 * against the CA without it, which ours leaves to the listener's side (both ends are etcdsim members).
 */
export async function checkPeerTls(get: (flag: string) => string | undefined, dataDir: string): Promise<PeerTlsFiles | undefined> {
  const listen = (get('listen-peer-urls') ?? 'http://localhost:2380').split(',');
  for (const flag of ['peer-cert-file', 'peer-key-file', 'peer-trusted-ca-file']) {
    const f = get(flag);
    if (f === undefined || f === '') continue;
    try {
      accessSync(f, constants.R_OK);
    } catch (err) {
      throw openError(f, err);
    }
  }
  const tlsUrl = listen.find((u) => u.startsWith('https://'));
  if (tlsUrl === undefined) return undefined;
  const certFile = get('peer-cert-file') ?? '';
  const keyFile = get('peer-key-file') ?? '';
  const ca = get('peer-trusted-ca-file') ?? '';
  const trustedCaFile = boolValue(get('peer-client-cert-auth')) && ca !== '' ? ca : undefined;
  if (certFile !== '' && keyFile !== '') return { certFile, keyFile, trustedCaFile };
  if (boolValue(get('peer-auto-tls'))) {
    // Self-signed: no CA can vouch for a peer's certificate, as with etcd's --peer-auto-tls.
    return autoTlsFiles(join(dataDir, 'fixtures', 'peer'), listen, Number(get('self-signed-cert-validity') ?? '1'));
  }
  throw new CliError(`cannot listen on TLS for ${tlsUrl.replace(/^https:\/\//, '').replace(/\/.*$/, '')}: KeyFile and CertFile are not presented`, 1);
}
