/** The `etcdsim` command line. */
import { runDemo, runWatchLeaseDemo } from './demo.js';

const [command = 'demo'] = process.argv.slice(2);
switch (command) {
  case 'demo':
    runDemo((line) => console.log(line));
    runWatchLeaseDemo((line) => console.log(line));
    break;
  default:
    console.error(`etcdsim: unknown command ${JSON.stringify(command)} (try: etcdsim demo)`);
    process.exitCode = 2;
}
