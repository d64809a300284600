/**
 * The worker-thread pool behind every many-seeds run (`etcdsim diff --seeds`, `etcdsim diff --cluster
 * --seeds`): N worker threads (node:worker_threads), each set up once (an etcd of its own, say), then fed
 * one job at a time from a shared queue until it is empty. No scheduler beyond that: a job's result must
 * not depend on which worker ran it, so results come back sorted by the caller's key, not in finishing
 * order.
 *
 * A worker module calls `serveJobs` (below); the pool side is `runPool`.
 */
import { parentPort, Worker, workerData } from 'node:worker_threads';

/** Messages from the pool to a worker. */
export type ToWorker<Job> = { readonly type: 'job'; readonly job: Job } | { readonly type: 'stop' };

/** Messages from a worker to the pool. */
export type FromWorker<Ready, Result> =
  | { readonly type: 'ready'; readonly ready: Ready }
  | { readonly type: 'result'; readonly result: Result }
  | { readonly type: 'failed'; readonly message: string };

export interface PoolOptions<Job, Ready, Result> {
  /** The worker module's base name in this directory, e.g. 'seeds_worker' (its .ts under tsx, else .js). */
  readonly worker: string;
  /** What each worker gets as workerData; the number of workers is its length (capped at the jobs). */
  readonly workerData: readonly unknown[];
  readonly jobs: readonly Job[];
  /** Called once per worker that finished its setup. */
  readonly onReady?: ((worker: number, ready: Ready) => void) | undefined;
  /** Called as each job finishes (in finishing order). */
  readonly onResult?: ((result: Result) => void) | undefined;
}

/**
 * The worker module's entry: its .ts source under tsx (registering tsx in the worker first, since a worker
 * does not inherit the parent's loader hooks), its compiled .js otherwise.
 */
function workerEntry(name: string): string {
  const fromSource = import.meta.url.endsWith('.ts');
  const url = new URL(`./${name}${fromSource ? '.ts' : '.js'}`, import.meta.url).href;
  if (!fromSource) return `import(${JSON.stringify(url)})`;
  const tsx = import.meta.resolve('tsx/esm/api');
  return `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(url)}); })`;
}

/**
 * Runs every job on a pool of worker threads and resolves to the results in finishing order (the caller
 * sorts them by its own key). Rejects, once every worker stopped, when a worker could not set up or died;
 * on the first such failure the others are told to stop after their current job, so each can tear down
 * what it set up (a throwaway etcd) before it exits.
 */
export async function runPool<Job, Ready, Result>(o: PoolOptions<Job, Ready, Result>): Promise<Result[]> {
  const queue = [...o.jobs];
  const workers = Math.min(o.workerData.length, Math.max(1, queue.length));
  if (workers < 1) throw new RangeError('runPool needs at least one worker');
  const results: Result[] = [];
  const code = workerEntry(o.worker);
  let error: Error | undefined;
  await new Promise<void>((resolve) => {
    const pool: Worker[] = [];
    let running = workers;
    const fail = (err: Error): void => {
      if (error !== undefined) return;
      error = err;
      for (const w of pool) w.postMessage({ type: 'stop' } satisfies ToWorker<Job>);
    };
    for (let i = 0; i < workers; i++) {
      const w = new Worker(code, { eval: true, workerData: o.workerData[i] });
      pool.push(w);
      const next = (): void => {
        const job = error === undefined ? queue.shift() : undefined;
        w.postMessage((job === undefined ? { type: 'stop' } : { type: 'job', job }) satisfies ToWorker<Job>);
      };
      w.on('message', (m: FromWorker<Ready, Result>) => {
        switch (m.type) {
          case 'ready':
            o.onReady?.(i, m.ready);
            next();
            break;
          case 'result':
            results.push(m.result);
            o.onResult?.(m.result);
            next();
            break;
          case 'failed':
            fail(new Error(`worker ${i}: ${m.message}`));
            break;
        }
      });
      w.once('error', (err) => fail(err instanceof Error ? err : new Error(String(err))));
      w.once('exit', (exitCode) => {
        if (exitCode !== 0) fail(new Error(`worker ${i} exited with code ${exitCode}`));
        if (--running === 0) resolve();
      });
    }
  });
  if (error !== undefined) throw error;
  if (results.length < o.jobs.length) throw new Error(`the workers stopped after ${results.length} of ${o.jobs.length} jobs`);
  return results;
}

/** An error's message on one line. */
export function oneLineMessage(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).replace(/\s*\n\s*/g, ' ');
}

export interface JobServer<Data, Job, Ready, Result> {
  /** Sets the worker up (e.g. starts its etcd); what it returns is posted as the worker's 'ready'. */
  setup(data: Data): Promise<Ready>;
  /** Runs one job; it should turn the job's own errors into a result (a throw fails the whole run). */
  run(job: Job): Promise<Result>;
  /** Tears down what setup built (also after a failed setup). */
  teardown(): Promise<void>;
}

/**
 * The worker side of `runPool`: sets up, says it is ready, runs each job it is sent (one at a time: a stop
 * that arrives during a job takes effect after it) and posts its result, then tears down and exits.
 */
export function serveJobs<Data, Job, Ready, Result>(server: JobServer<Data, Job, Ready, Result>): void {
  const port = parentPort;
  if (port === null) throw new Error('serveJobs runs in a worker thread');
  const post = (m: FromWorker<Ready, Result>): void => port.postMessage(m);
  const shutdown = async (): Promise<void> => {
    await server.teardown();
    process.exit(0); // ends this thread only
  };
  let chain: Promise<void> = Promise.resolve();
  port.on('message', (m: ToWorker<Job>) => {
    chain = chain.then(async () => {
      if (m.type === 'stop') return shutdown();
      try {
        post({ type: 'result', result: await server.run(m.job) });
      } catch (err) {
        // A job should turn its own errors into a result; one that throws stops the whole run.
        post({ type: 'failed', message: oneLineMessage(err) });
      }
    });
  });
  server.setup(workerData as Data).then(
    (ready) => post({ type: 'ready', ready }),
    async (err: unknown) => {
      post({ type: 'failed', message: oneLineMessage(err) });
      await shutdown();
    },
  );
}
