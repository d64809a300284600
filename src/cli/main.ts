/**
 * The `etcdsim` command (bin/etcdsim.js loads this): `demo` (the default), `serve`, `run`, `diff` and `playground`,
 * declared in program.ts. The exit code is the command's; `serve` keeps running until SIGTERM / SIGINT.
 */
import { exitQuietlyOnClosedPipe } from './io.js';
import { runCli } from './program.js';

exitQuietlyOnClosedPipe();

process.exitCode = await runCli(process.argv.slice(2));
