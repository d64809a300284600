/**
 * etcd's `--auto-tls` / `--peer-auto-tls`: when no certificate is given, etcd generates a self-signed one
 * (transport.SelfCert) into `<data-dir>/fixtures/client` (peer: `fixtures/peer`) as `cert.pem` and
 * `key.pem`: an ECDSA P-256 key, subject organization "etcd", valid for `--self-signed-cert-validity` years
 * (1 by default), for every host of the listen URLs (IP addresses as IP SANs, names as DNS SANs), for server
 * authentication. Files already there are used as they are, as etcd reuses them on a restart. Clients then
 * connect with `--insecure-skip-tls-verify`, as they must against etcd.
 */
import { webcrypto } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import type * as X509 from '@peculiar/x509';
import { hostEpochMs } from '../../sim/index.js';

export interface TlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
}

const pem = (label: string, der: ArrayBuffer): string => `-----BEGIN ${label}-----\n${Buffer.from(der).toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '')}\n-----END ${label}-----\n`;

/** The files in `dir`, generated unless both are there already. */
export async function autoTlsFiles(dir: string, urls: readonly string[], validityYears: number): Promise<TlsFiles> {
  const certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');
  if (existsSync(certFile) && existsSync(keyFile)) return { certFile, keyFile };
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // Wall time from src/sim, the one owner of host time: a certificate's validity is the host's calendar.
  const { cert, pkcs8 } = await selfSignedCertificate(urls, validityYears, new Date(hostEpochMs()));
  writeFileSync(keyFile, pem('PRIVATE KEY', pkcs8), { mode: 0o600 });
  writeFileSync(certFile, cert);
  return { certFile, keyFile };
}

/** @peculiar/x509, with the Reflect metadata polyfill its dependency injection needs loaded first. */
export async function loadX509(): Promise<typeof X509> {
  await import('reflect-metadata');
  return import('@peculiar/x509');
}

/**
 * What a member started with --auto-tls / --peer-auto-tls does whatever its flags, done once ahead of it
 * (src/cli/etcd/main.ts prepareMember, while the start-up snapshot is built): the x509 modules evaluated and a
 * certificate made, which builds the ASN.1 schemas they keep for every later one. It writes nothing.
 */
export async function prepareAutoTls(): Promise<void> {
  await selfSignedCertificate(['https://localhost:2380', 'https://127.0.0.1:2380'], 1, new Date(0));
}

/** A self-signed certificate for the listen URLs' hosts, as etcd's transport.SelfCert makes it, valid from `notBefore`. */
async function selfSignedCertificate(urls: readonly string[], validityYears: number, notBefore: Date): Promise<{ cert: string; pkcs8: ArrayBuffer }> {
  const x509 = await loadX509();
  x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof X509.cryptoProvider.set>[0]);
  const alg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const keys = await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify']);
  const hosts = [...new Set(urls.map((u) => new URL(u).hostname.replace(/^\[|\]$/g, '')))];
  const notAfter = new Date(notBefore.getTime() + Math.max(1, validityYears) * 365 * 24 * 3600 * 1000);
  const serial = Buffer.from(webcrypto.getRandomValues(new Uint8Array(16)));
  serial[0] = serial[0]! & 0x7f;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial.toString('hex'),
    name: 'O=etcd',
    notBefore,
    notAfter,
    signingAlgorithm: alg,
    keys: keys as unknown as Parameters<typeof X509.X509CertificateGenerator.createSelfSigned>[0]["keys"],
    extensions: [
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension(hosts.map((h) => (isIP(h) !== 0 ? { type: 'ip' as const, value: h } : { type: 'dns' as const, value: h }))),
    ],
  });
  const pkcs8 = await webcrypto.subtle.exportKey('pkcs8', keys.privateKey);
  return { cert: cert.toString('pem') + '\n', pkcs8 };
}
