// The test command's TypeScript loader: `node --import ./test/support/ts_loader.mjs --test ...`.
//
// Why not tsx, which the rest of the tree still uses for one-off runs (replay lines, scripts, Stryker): every test
// file is a process of its own, and tsx costs each one about half a CPU-second before the first test runs (its
// own start, and a failed resolution per `.js` specifier before it tries the `.ts` file), about a fifth of the
// suite's time on CI's two cores. This loader does the little the suite needs — ESM TypeScript whose imports
// name `.js` files — and keeps every module at its own path, so `import.meta.url` points into src/ and test/ as
// under tsx (no compiled mirror whose relative paths would differ). The hooks live in ts_hooks.mjs and run on
// the loader thread Node gives module hooks.
import { register } from 'node:module';

// Inline source maps in the transpiled code: a failure's stack names the .ts file's own lines, as tsx's do.
process.setSourceMapsEnabled(true);
register('./ts_hooks.mjs', import.meta.url);
