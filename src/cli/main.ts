/**
 * The `etcdsim` command (bin/etcdsim.js loads this): `demo` (the default), `serve`, `run`, `diff` and `playground`,
 * declared in program.ts. The exit code is the command's; `serve` keeps running until SIGTERM / SIGINT.
 */
import { runCli } from './program.js';

// A reader that stops reading (`etcdsim run --list | head -1`) is no error of ours: stop quietly, as a
// command killed by SIGPIPE does, instead of a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw err;
  });
}

process.exitCode = await runCli(process.argv.slice(2));
