/**
 * Throwaway certificates for the TLS tests, made with openssl in a temp dir: P-256 keys, CAs and
 * certificates they sign, two days valid.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export class TestPki {
  readonly dir: string;

  constructor(prefix: string) {
    this.dir = mkdtempSync(join(tmpdir(), prefix));
  }

  /** The path of file `name` (e.g. 'ca.crt') in the PKI's dir. */
  path(name: string): string {
    return join(this.dir, name);
  }

  /** A self-signed CA: `<name>.crt`, `<name>.key`. */
  ca(name: string): void {
    this.openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.crt`, '-subj', `/CN=etcdsim test ${name}`, '-days', '2');
  }

  /** A key and a certificate with subject `subj` (e.g. '/CN=root'), signed by CA `caName`, with extensions `ext`. */
  issue(name: string, subj: string, caName: string, ext: string): void {
    writeFileSync(this.path(`${name}.ext`), ext);
    this.openssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subj);
    this.openssl('x509', '-req', '-in', `${name}.csr`, '-CA', `${caName}.crt`, '-CAkey', `${caName}.key`, '-CAcreateserial', '-out', `${name}.crt`, '-days', '2', '-extfile', `${name}.ext`);
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }

  private openssl(...args: string[]): void {
    execFileSync('openssl', args, { cwd: this.dir, stdio: ['ignore', 'ignore', 'pipe'] });
  }
}

/** A server certificate for loopback clients (IP 127.0.0.1 and localhost). */
export const SERVER_EXT = 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n';
export const CLIENT_EXT = 'extendedKeyUsage=clientAuth\n';
