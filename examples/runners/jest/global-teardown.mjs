// jest globalTeardown: closes the served simulator of global-setup.mjs (same process, so globalThis carries it).
export default async function globalTeardown() {
  await globalThis.etcdsimServed.close();
}
