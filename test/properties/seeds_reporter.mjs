// A node:test reporter for the many-seeds property runner (test/properties/seeds.ts): one JSON line per
// finished test, {"type":"pass"|"fail","name","nesting","file","message"}, so the runner reads each
// failure's name and whole message (the harness's report: seed, path, shrunk counterexample) without
// parsing TAP. Plain JavaScript: node loads a --test-reporter module before tsx's hooks are in place.

/** node:test wraps what a test threw (ERR_TEST_FAILURE); the original error is its cause. */
function messageOf(error) {
  if (error === undefined || error === null) return undefined;
  const cause = error.cause;
  if (cause !== null && typeof cause === 'object' && typeof cause.message === 'string') return cause.message;
  return typeof error.message === 'string' ? error.message : String(error);
}

export default async function* seedsReporter(source) {
  for await (const ev of source) {
    if (ev.type !== 'test:pass' && ev.type !== 'test:fail') continue;
    const d = ev.data ?? {};
    yield `${JSON.stringify({
      type: ev.type === 'test:pass' ? 'pass' : 'fail',
      name: d.name ?? '',
      nesting: d.nesting ?? 0,
      file: d.file,
      message: ev.type === 'test:fail' ? messageOf(d.details?.error) : undefined,
    })}\n`;
  }
}
