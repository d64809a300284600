/**
 * Where a command's lines go and how a user error ends it — shared by every command, and kept apart from
 * program.ts (commander and the command table) so that `etcdsim etcd`, which reads etcd's own command line,
 * loads neither commander nor any other command when it starts (start-up is most of an e2e test's time).
 */

/** Where a command's lines go: `out` its results, `err` errors and warnings. */
export interface CliIo {
  out(line: string): void;
  err(line: string): void;
}

export const consoleIo: CliIo = {
  out: (line) => console.log(line),
  err: (line) => console.error(line),
};

/** A user error: printed as one line (`etcdsim CMD: message`), then the command exits with `exitCode`. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = 2,
  ) {
    super(message);
  }
}

/**
 * A reader that stops reading (`etcdsim run --list | head -1`) is no error of ours: stop quietly, as a
 * command killed by SIGPIPE does, instead of a stack trace.
 */
export function exitQuietlyOnClosedPipe(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
      throw err;
    });
  }
}
