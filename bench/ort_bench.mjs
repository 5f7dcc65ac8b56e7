// Benchmark driver (not a test) for bench/compare.sh: Kiln and ONNX Runtime side by side on
// every model directory (model.onnx + test_data_set_0/input_*.pb) under a models folder.
//
//   node bench/ort_bench.mjs --kiln-bin build/bin/kiln-bench-model [--models ../shared/models]
//        [--ort-dir bench/.ort] [--threads 1,2] [--warmup 20] [--runs 100] [--budget-ms 8000]
//        [--only mlp,resnet18] [--extra-model DIR ...] [--records-dir DIR [--geomean-models a,b,...]] [--list-models]
//
// --records-dir DIR: each row measures three runtimes in the same protocol: Kiln with default
// schedules, Kiln tuned (`kiln-bench-model --records DIR/<model>.t<threads>.jsonl`, the records
// of this machine at that thread count) and ORT, and prints default, tuned and ORT p50 with the
// ratios tuned/ORT, default/ORT and tuned/default, then per thread count the geometric means of
// the ratios over --geomean-models (default: the four models above 1 M multiply-adds). A model
// without a records file there is measured default vs ORT only.
// --list-models: prints the model names in the order they are benchmarked, one a line, and exits
// (bench/tune.sh tunes in this order).
// --ort-profile DIR: ORT's own per-node profile of one model (enableProfiling) at the first
// --threads value: after --warmup runs, --runs profiled runs; prints every node in execution
// order with its median kernel time (ms) and share, to set beside
// `kiln-bench-model DIR --profile` (profiling slows ORT: compare node by node, not the sum with
// compare.sh's latency).
//
// Each runtime runs in its own child process speaking one line protocol (ready JSON, then "N" →
// {"ms":[...]}): Kiln in `kiln-bench-model DIR --serve` (compiles, warms up, runs batches), ONNX
// Runtime in this script started with --serve-ort (intraOpNumThreads = N, interOpNumThreads = 1,
// graphOptimizationLevel 'all', executionMode 'sequential', CPU EP, default spinning). The two
// alternate in small batches (A B B A ...) so machine noise hits both alike, and the idle one is
// frozen with SIGSTOP during the other's batch: a thread pool that spins while idle (ORT's does
// by default) would otherwise steal the cores the measured runtime is using. Kiln times
// Executable::Run in C++; ORT times `await session.run()` (a few µs of N-API overhead).
// --runs is capped so that one runtime's runs of one model take about --budget-ms.
//
// --decode DIR (bench/decode.sh): a language model with a KV cache (symbolic dims, DIR/greedy.txt)
// through one Kiln artifact and through ORT, both running the same greedy loop in their own
// process (`kiln-bench-model DIR --decode --serve`; --serve-ort-decode here): the prompt with an
// empty cache, then one step per token, each feeding the token chosen and the present_* outputs
// back as past_*; the first generation of each must give greedy.txt's tokens. Per thread count:
// prompt latency, decode step latency and tokens/s, Kiln/ORT ratios. Then per data set of DIR:
// one decode step (or prompt) at that set's shapes through the one symbolic artifact, a per-shape
// compile and ORT, with the ratios symbolic/per-shape and symbolic/ORT.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

// ---- arguments ----------------------------------------------------------------------------
const opts = {
  kilnBin: 'build/bin/kiln-bench-model',
  models: '../shared/models',
  extraModels: [],  // model directories benchmarked after --models' (e.g. the int8 ResNet-18)
  ortDir: 'bench/.ort',
  threads: [1, 2],
  warmup: 20,
  runs: 100,
  budgetMs: 8000,
  only: null,
  recordsDir: null,
  geomeanModels: ['squeezenet1_1', 'mobilenet_v2', 'resnet18', 'transformer_encoder'],
  listModels: false,
  ortProfile: null,
  decode: null,  // --decode DIR
  dataSet: 0,    // --data-set N: the test_data_set_N inputs --serve-ort runs
};
{
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const v = () => {
      if (i + 1 >= argv.length) throw new Error(`missing value for ${a}`);
      return argv[++i];
    };
    if (a === '--kiln-bin') opts.kilnBin = v();
    else if (a === '--models') opts.models = v();
    else if (a === '--extra-model') opts.extraModels.push(v());
    else if (a === '--ort-dir') opts.ortDir = v();
    else if (a === '--threads') opts.threads = v().split(',').map(Number).filter((n) => n > 0);
    else if (a === '--warmup') opts.warmup = Number(v());
    else if (a === '--runs') opts.runs = Number(v());
    else if (a === '--budget-ms') opts.budgetMs = Number(v());
    else if (a === '--only') opts.only = v().split(',');
    else if (a === '--records-dir') opts.recordsDir = v();
    else if (a === '--geomean-models') opts.geomeanModels = v().split(',');
    else if (a === '--list-models') opts.listModels = true;
    else if (a === '--ort-profile') opts.ortProfile = v();
    else if (a === '--serve-ort') opts.serveOrt = [v(), Number(v()), Number(v())];
    else if (a === '--serve-ort-decode') opts.serveOrtDecode = [v(), Number(v()), Number(v())];
    else if (a === '--data-set') opts.dataSet = Number(v());
    else if (a === '--decode') opts.decode = v();
    else {
      console.error(`ort_bench.mjs: unknown argument ${a}`);
      process.exit(2);
    }
  }
}

if (opts.listModels) {
  for (const dir of modelDirs()) console.log(path.basename(dir));
  process.exit(0);
}

const require = createRequire(path.resolve(opts.ortDir, 'package.json'));
const ort = require('onnxruntime-node');

// ---- ONNX TensorProto (protobuf wire format), enough for test-data inputs -------------------
const DTYPES = { 1: 'float32', 6: 'int32', 7: 'int64', 9: 'bool', 11: 'float64' };

function readTensorProto(file) {
  const buf = fs.readFileSync(file);
  let pos = 0;
  const varint = () => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const b = buf[pos++];
      result |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return result;
      shift += 7n;
    }
  };
  const dims = [];
  let dataType = 1;
  let name = '';
  let raw = null;
  const floats = [];
  const int64s = [];
  const int32s = [];
  while (pos < buf.length) {
    const key = Number(varint());
    const field = key >> 3;
    const wire = key & 7;
    if (wire === 0) {
      const v = varint();
      if (field === 1) dims.push(Number(v));
      else if (field === 2) dataType = Number(v);
      else if (field === 5) int32s.push(Number(BigInt.asIntN(32, v)));
      else if (field === 7) int64s.push(BigInt.asIntN(64, v));
    } else if (wire === 2) {
      const len = Number(varint());
      const bytes = buf.subarray(pos, pos + len);
      pos += len;
      if (field === 9) raw = bytes;
      else if (field === 8) name = bytes.toString('utf8');
      else if (field === 1 || field === 5 || field === 7) {
        // packed varints
        const save = pos;
        let p = 0;
        const sub = () => {
          let r = 0n;
          let s = 0n;
          for (;;) {
            const b = bytes[p++];
            r |= BigInt(b & 0x7f) << s;
            if (b < 0x80) return r;
            s += 7n;
          }
        };
        while (p < bytes.length) {
          const v = sub();
          if (field === 1) dims.push(Number(v));
          else if (field === 5) int32s.push(Number(BigInt.asIntN(32, v)));
          else int64s.push(BigInt.asIntN(64, v));
        }
        pos = save;
      } else if (field === 4) {
        for (let i = 0; i + 4 <= bytes.length; i += 4) floats.push(bytes.readFloatLE(i));
      }
    } else if (wire === 5) {
      if (field === 4) floats.push(buf.readFloatLE(pos));
      pos += 4;
    } else if (wire === 1) {
      pos += 8;
    } else {
      throw new Error(`${file}: unsupported protobuf wire type ${wire}`);
    }
  }
  const type = DTYPES[dataType];
  if (!type) throw new Error(`${file}: unsupported TensorProto data_type ${dataType}`);
  const count = dims.reduce((a, b) => a * b, 1);
  let data;
  const fromRaw = (Ctor) => {
    // Copy into an aligned buffer (raw_data may sit at any offset); little-endian host assumed.
    const copy = new Uint8Array(raw.length);
    copy.set(raw);
    return new Ctor(copy.buffer, 0, count);
  };
  if (type === 'float32') data = raw ? fromRaw(Float32Array) : Float32Array.from(floats);
  else if (type === 'float64') data = fromRaw(Float64Array);
  else if (type === 'int64') data = raw ? fromRaw(BigInt64Array) : BigInt64Array.from(int64s);
  else if (type === 'int32') data = raw ? fromRaw(Int32Array) : Int32Array.from(int32s);
  else if (type === 'bool') data = raw ? fromRaw(Uint8Array) : Uint8Array.from(int32s);
  if (data.length !== count) throw new Error(`${file}: ${data.length} elements, dims say ${count}`);
  return { name, type, dims, data };
}

// ---- Kiln child process ---------------------------------------------------------------------
class BenchServer {
  constructor(command, args) {
    this.child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    this.stderr = '';
    this.child.stderr.on('data', (d) => (this.stderr += d));
    this.lines = [];
    this.waiters = [];
    this.closed = false;
    const rl = readline.createInterface({ input: this.child.stdout });
    rl.on('line', (line) => {
      if (this.waiters.length) this.waiters.shift()(line);
      else this.lines.push(line);
    });
    const onEnd = () => {
      this.closed = true;
      while (this.waiters.length) this.waiters.shift()(null);
    };
    rl.on('close', onEnd);
    this.child.on('error', (e) => {
      this.stderr += String(e);
      onEnd();
    });
  }
  nextLine() {
    if (this.lines.length) return Promise.resolve(this.lines.shift());
    if (this.closed) return Promise.resolve(null);
    return new Promise((resolve) => this.waiters.push(resolve));
  }
  async message() {
    const line = await this.nextLine();
    if (line === null) {
      const why = this.stderr.trim().split('\n').pop() || 'benchmark process exited';
      return { error: why.replace(/^kiln-bench-model: /, '') };
    }
    try {
      return JSON.parse(line);
    } catch {
      return { error: `bad reply: ${line}` };
    }
  }
  async run(n) {
    return (await this.reply(n)).ms;
  }
  // The whole reply to a batch of n: {ms: [...]} and whatever else the server times.
  async reply(n) {
    this.child.stdin.write(`${n}\n`);
    const m = await this.message();
    if (m.error) throw new Error(m.error);
    return m;
  }
  // Freezes / thaws the whole process (all its threads).
  pause() {
    if (!this.closed) this.child.kill('SIGSTOP');
  }
  resume() {
    if (!this.closed) this.child.kill('SIGCONT');
  }
  close() {
    this.resume();
    if (!this.closed) this.child.stdin.end('q\n');
  }
}

// ---- ONNX Runtime child process (--serve-ort DIR THREADS WARMUP) -----------------------------
// The session options of every ORT run here: CPU EP, `threads` intra-op threads, one inter-op
// thread, all graph optimizations, sequential execution (plus `extra`).
const sessionOptions = (threads, extra = {}) => ({
  executionProviders: ['cpu'],
  intraOpNumThreads: threads,
  interOpNumThreads: 1,
  graphOptimizationLevel: 'all',
  executionMode: 'sequential',
  ...extra,
});

// The --serve protocol after the ready line: for each line "N" replies with `batch(N)` as one
// JSON line; "q" or the end of input ends it.
async function serveBatches(batch) {
  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    if (line === 'q') break;
    process.stdout.write(JSON.stringify(await batch(Number(line))) + '\n');
  }
}

async function serveOrt(dir, threads, warmup) {
  const reply = (o) => process.stdout.write(JSON.stringify(o) + '\n');
  let session;
  let feeds;
  try {
    const setDir = path.join(dir, `test_data_set_${opts.dataSet}`);
    const inputFiles = fs
      .readdirSync(setDir)
      .filter((f) => /^input_\d+\.pb$/.test(f))
      .sort((a, b) => Number(a.match(/\d+/)[0]) - Number(b.match(/\d+/)[0]));
    const inputs = inputFiles.map((f) => readTensorProto(path.join(setDir, f)));
    const t0 = performance.now();
    session = await ort.InferenceSession.create(path.join(dir, 'model.onnx'), sessionOptions(threads));
    const createMs = performance.now() - t0;
    feeds = {};
    session.inputNames.forEach((name, i) => {
      const t = inputs[i];
      feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
    });
    for (let i = 0; i < warmup; i++) await session.run(feeds);
    reply({ ready: true, compile_ms: createMs });
  } catch (e) {
    reply({ error: String(e.message || e).split('\n')[0] });
    return;
  }
  await serveBatches(async (n) => {
    const ms = [];
    for (let i = 0; i < n; i++) {
      const s = performance.now();
      await session.run(feeds);
      ms.push(performance.now() - s);
    }
    return { ms };
  });
  if (session.release) await session.release();
}

// ---- ONNX Runtime greedy decoding (--serve-ort-decode DIR THREADS WARMUP) --------------------
// The loop of `kiln-bench-model --decode`: DIR/greedy.txt's prompt with every past* input empty
// (its symbolic dims 0), then one step per expected token, feeding the argmax of the last logits
// row and each present* output as the matching past* input.
async function serveOrtDecode(dir, threads, warmup) {
  const reply = (o) => process.stdout.write(JSON.stringify(o) + '\n');
  const fields = {};
  for (const line of fs.readFileSync(path.join(dir, 'greedy.txt'), 'utf8').split('\n')) {
    const parts = line.trim().split(/\s+/);
    if (parts[0]) fields[parts[0]] = parts.slice(1).map(Number);
  }
  const prompt = fields.prompt ?? [];
  const expected = fields.tokens ?? [];
  let session;
  let createMs = 0;
  try {
    const t0 = performance.now();
    session = await ort.InferenceSession.create(path.join(dir, 'model.onnx'), sessionOptions(threads));
    createMs = performance.now() - t0;
  } catch (e) {
    reply({ error: String(e.message || e).split('\n')[0] });
    return;
  }
  const pastNames = session.inputNames.filter((n) => n.startsWith('past'));
  const idsName = session.inputNames.find((n) => !n.startsWith('past'));
  const logitsName = session.outputNames.includes('logits') ? 'logits' : session.outputNames[0];
  // Empty caches: the model's declared dims with every symbolic dim 0.
  const declared = {};
  for (const m of session.inputMetadata ?? []) declared[m.name] = m.shape;
  const empty = {};
  for (const name of pastNames) {
    const dims = (declared[name] ?? []).map((d) => (typeof d === 'number' && d >= 0 ? d : 0));
    empty[name] = new ort.Tensor('float32', new Float32Array(0), dims);
  }
  const generate = async (check) => {
    let feeds = { ...empty };
    let ids = prompt;
    let promptMs = 0;
    let stepsMs = 0;
    for (let step = 0; step < expected.length; step++) {
      feeds[idsName] = new ort.Tensor('int64', BigInt64Array.from(ids.map(BigInt)), [1, ids.length]);
      const s = performance.now();
      const out = await session.run(feeds);
      const ms = performance.now() - s;
      if (step === 0) promptMs = ms;
      else stepsMs += ms;
      const logits = out[logitsName];
      const vocab = logits.dims[logits.dims.length - 1];
      const last = logits.data.subarray(logits.data.length - vocab);
      let token = 0;
      for (let v = 1; v < vocab; v++) if (last[v] > last[token]) token = v;
      if (check && token !== expected[step]) {
        throw new Error(`ORT token ${step} is ${token}, greedy.txt says ${expected[step]}`);
      }
      const next = {};
      for (const name of pastNames) next[name] = out['present' + name.slice(4)];
      feeds = next;
      ids = [token];
    }
    return { promptMs, stepMs: expected.length > 1 ? stepsMs / (expected.length - 1) : 0 };
  };
  try {
    if (!idsName || !prompt.length || !expected.length) throw new Error(`${dir}: no token input or no greedy.txt prompt/tokens`);
    for (let i = 0; i < Math.max(1, warmup); i++) await generate(i === 0);
    reply({ ready: true, compile_ms: createMs });
  } catch (e) {
    reply({ error: String(e.message || e).split('\n')[0] });
    return;
  }
  await serveBatches(async (n) => {
    const r = { ms: [], prompt_ms: [], step_ms: [] };
    for (let i = 0; i < n; i++) {
      const s = performance.now();
      const g = await generate(false);
      r.ms.push(performance.now() - s);
      r.prompt_ms.push(g.promptMs);
      r.step_ms.push(g.stepMs);
    }
    return r;
  });
  if (session.release) await session.release();
}

/** Loads DIR's test_data_set_0 inputs as ORT feeds for `session`. */
function loadFeeds(dir, session) {
  const inputFiles = fs
    .readdirSync(path.join(dir, 'test_data_set_0'))
    .filter((f) => /^input_\d+\.pb$/.test(f))
    .sort((a, b) => Number(a.match(/\d+/)[0]) - Number(b.match(/\d+/)[0]));
  const inputs = inputFiles.map((f) => readTensorProto(path.join(dir, 'test_data_set_0', f)));
  const feeds = {};
  session.inputNames.forEach((name, i) => {
    const t = inputs[i];
    feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
  });
  return feeds;
}

async function profileOrt(dir, threads, warmup, runs) {
  const prefix = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ort-profile-')), 'profile');
  const session = await ort.InferenceSession.create(
    path.join(dir, 'model.onnx'),
    sessionOptions(threads, { enableProfiling: true, profileFilePrefix: prefix }),
  );
  const feeds = loadFeeds(dir, session);
  for (let i = 0; i < warmup + runs; i++) await session.run(feeds);
  session.endProfiling();
  const file = fs.readdirSync(path.dirname(prefix)).find((f) => f.endsWith('.json'));
  const events = JSON.parse(fs.readFileSync(path.join(path.dirname(prefix), file), 'utf8'));
  const nodes = new Map();  // name -> {op, us: []}, in first execution order
  for (const e of events) {
    if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time')) continue;
    const name = e.name.slice(0, -'_kernel_time'.length);
    if (!nodes.has(name)) nodes.set(name, { op: e.args?.op_name ?? '?', us: [] });
    nodes.get(name).us.push(e.dur);
  }
  const rows = [...nodes].map(([name, n]) => ({ name, op: n.op, us: percentile(n.us.slice(warmup), 50) }));
  const total = rows.reduce((a, r) => a + r.us, 0);
  console.log(`ORT ${ort.env.versions?.common ?? ''} per-node profile: ${path.basename(dir)}, ${threads} thread(s), median of ${runs} runs after ${warmup}; sum ${(total / 1000).toFixed(3)} ms`);
  rows.forEach((r, i) => {
    console.log(`${String(i).padStart(4)} ${r.op.padEnd(20)} ${(r.us / 1000).toFixed(3).padStart(8)} ms ${((100 * r.us) / total).toFixed(1).padStart(5)}%  ${short(r.name, 80)}`);
  });
  if (session.release) await session.release();
}

// ---- statistics and formatting --------------------------------------------------------------
function percentile(values, p) {
  const v = [...values].sort((a, b) => a - b);
  return v[Math.min(v.length - 1, Math.round(p * (v.length - 1)))];
}
const fmt = (x, w = 9) => (x === undefined || x === null || Number.isNaN(x) ? '-' : x < 1 ? x.toFixed(4) : x < 100 ? x.toFixed(3) : x.toFixed(1)).padStart(w);
const short = (s, n = 70) => (s.length > n ? s.slice(0, n - 1) + '…' : s);

// ---- one model at one thread count ----------------------------------------------------------
// The records file of a model at a thread count under --records-dir (`kiln tune --local
// --threads N --records-out` writes it; bench/tune.sh names them so).
const recordsFile = (model, threads) => path.join(opts.recordsDir, `${model}.t${threads}.jsonl`);

// Measures every runtime of `active` (a subset of `runtimes`, each {key, server}) in alternating
// batches, every other runtime of `runtimes` frozen during a batch, the order reversed every
// round (A B C, C B A, ...): about opts.budgetMs per runtime, at most opts.runs runs, at least 10.
// Leaves each runtime's replies in rt.timed (each field's values concatenated: ms, and what else
// the server times); returns the runs per runtime. A failure is thrown with e.runtime set.
async function alternate(runtimes, active) {
  const batchOf = async (rt, n) => {
    for (const other of runtimes) if (other !== rt) other.server.pause();
    rt.server.resume();
    try {
      return await rt.server.reply(n);
    } catch (e) {
      e.runtime = rt.key;
      throw e;
    } finally {
      for (const other of runtimes) if (other !== rt) other.server.resume();
    }
  };
  let per = 0;
  for (const rt of active) per = Math.max(per, percentile((await batchOf(rt, 3)).ms, 0.5));
  const runs = Math.max(10, Math.min(opts.runs, Math.floor(opts.budgetMs / Math.max(per, 1e-3))));
  const batch = Math.max(1, Math.round(runs / 10));
  for (const rt of active) rt.timed = { ms: [] };
  const more = () => active.some((rt) => rt.timed.ms.length < runs);
  for (let round = 0; more(); round++) {
    const order = round % 2 === 0 ? active : [...active].reverse();
    for (const rt of order) {
      const r = await batchOf(rt, batch);
      for (const [field, values] of Object.entries(r)) {
        if (Array.isArray(values)) (rt.timed[field] ??= []).push(...values);
      }
    }
  }
  return runs;
}

async function benchOne(dir, threads) {
  const row = { model: path.basename(dir), threads };
  const kilnArgs = [dir, '--threads', String(threads), '--warmup', String(opts.warmup), '--serve'];

  // Kiln default and ORT start at once: Kiln compiles (cold, in a fresh process) while ORT
  // builds its session. Kiln tuned (with --records-dir) compiles after both are ready, so the
  // default's compile time is measured as without it.
  const runtimes = [
    { key: 'kiln', server: new BenchServer(opts.kilnBin, kilnArgs) },
    {
      key: 'ort',
      server: new BenchServer(process.execPath, [
        fileURLToPath(import.meta.url), '--ort-dir', opts.ortDir, '--serve-ort', dir, String(threads), String(opts.warmup),
      ]),
    },
  ];
  const ready = async (rt, compileField) => {
    const m = await rt.server.message();
    if (m.error) row[`${rt.key}Error`] = m.error;
    else {
      row[compileField] = m.compile_ms;
      if (m.tuned_kernels !== undefined) row[`${rt.key}TunedKernels`] = m.tuned_kernels;
      if (m.kernels !== undefined) row[`${rt.key}Kernels`] = m.kernels;
    }
  };
  await ready(runtimes[0], 'kilnCompileMs');
  await ready(runtimes[1], 'ortCreateMs');
  if (opts.recordsDir) {
    const file = recordsFile(row.model, threads);
    if (fs.existsSync(file)) {
      const tuned = { key: 'tuned', server: new BenchServer(opts.kilnBin, [...kilnArgs, '--records', file]) };
      runtimes.splice(1, 0, tuned);  // measured in the order default, tuned, ORT (then reversed)
      await ready(tuned, 'tunedCompileMs');
      // An empty-handed tuned compile (no record for this machine's key) says why on stderr.
      const why = tuned.server.stderr.match(/has no record[^\n]*/);
      if (why) row.tunedNote = why[0].replace(/ \(hardware key[^)]*\)/, '');
    } else if (!row.kilnError) {
      row.tunedError = `no records file ${file}`;
    }
  }
  const active = runtimes.filter((rt) => !row[`${rt.key}Error`]);

  try {
    row.runs = await alternate(runtimes, active);
    for (const rt of active) {
      row[`${rt.key}P50`] = percentile(rt.timed.ms, 0.5);
      row[`${rt.key}P90`] = percentile(rt.timed.ms, 0.9);
    }
  } catch (e) {
    const key = e.runtime ?? 'kiln';
    row[`${key}Error`] = row[`${key}Error`] || String(e.message || e);
  } finally {
    for (const rt of runtimes) rt.server.close();
  }
  return row;
}

// ---- main -----------------------------------------------------------------------------------
function modelDirs() {
  let names = fs
    .readdirSync(opts.models, { withFileTypes: true })
    .filter((d) => d.isDirectory() && fs.existsSync(path.join(opts.models, d.name, 'model.onnx')))
    .map((d) => d.name);
  // Small to big, as MANIFEST.tsv sizes say when it is there.
  const manifest = path.join(opts.models, 'MANIFEST.tsv');
  if (fs.existsSync(manifest)) {
    const size = {};
    for (const line of fs.readFileSync(manifest, 'utf8').split('\n').slice(1)) {
      const f = line.split('\t');
      if (f.length > 2) size[f[0]] = Number(f[2]);
    }
    names.sort((a, b) => (size[a] ?? Infinity) - (size[b] ?? Infinity) || a.localeCompare(b));
  } else {
    names.sort();
  }
  let dirs = names.map((n) => path.join(opts.models, n)).concat(opts.extraModels);
  if (opts.only) dirs = dirs.filter((d) => opts.only.includes(path.basename(d)));
  return dirs;
}

function geomean(values) {
  return values.length ? Math.exp(values.reduce((a, v) => a + Math.log(v), 0) / values.length) : NaN;
}
const rowNotes = (r, ratio) => {
  const notes = [];
  if (r.kilnError) notes.push(`kiln: ${short(r.kilnError, 100)}`);
  if (r.tunedError) notes.push(`tuned: ${short(r.tunedError, 100)}`);
  if (r.tunedNote) notes.push(`tuned: ${short(r.tunedNote, 100)}`);
  if (r.ortError) notes.push(`ort: ${short(r.ortError, 100)}`);
  if (!Number.isNaN(ratio) && ratio > 1.5) notes.push('> 1.5x');
  return notes.join('; ');
};

// Kiln (default schedules) vs ORT.
const twoWay = {
  head: `${'model'.padEnd(20)} ${'thr'.padStart(3)} | ${'Kiln p50'.padStart(9)} ${'Kiln p90'.padStart(9)} | ${'ORT p50'.padStart(9)} ${'ORT p90'.padStart(9)} | ${'Kiln/ORT'.padStart(8)} ${'runs'.padStart(5)}  (ms)`,
  line(r) {
    const ratio = r.kilnP50 / r.ortP50;
    const cols = `${fmt(r.kilnP50)} ${fmt(r.kilnP90)} | ${fmt(r.ortP50)} ${fmt(r.ortP90)} | ${fmt(ratio, 8)} ${String(r.runs ?? '-').padStart(5)}`;
    return `${r.model.padEnd(20)} ${String(r.threads).padStart(3)} | ${cols}  ${rowNotes(r, ratio)}`;
  },
};
// Kiln default, Kiln tuned and ORT (--records-dir).
const threeWay = {
  head: `${'model'.padEnd(20)} ${'thr'.padStart(3)} | ${'default'.padStart(9)} ${'tuned'.padStart(9)} ${'ORT'.padStart(9)} | ${'tuned/ORT'.padStart(9)} ${'def/ORT'.padStart(8)} ${'tun/def'.padStart(8)} | ${'tuned k'.padStart(7)} ${'runs'.padStart(5)}  (p50 ms)`,
  line(r) {
    const tunedOrt = r.tunedP50 / r.ortP50;
    const cols = `${fmt(r.kilnP50)} ${fmt(r.tunedP50)} ${fmt(r.ortP50)} | ${fmt(tunedOrt, 9)} ${fmt(r.kilnP50 / r.ortP50, 8)} ${fmt(r.tunedP50 / r.kilnP50, 8)}`;
    const k = r.tunedKernels === undefined ? '-' : `${r.tunedTunedKernels}/${r.tunedKernels}`;
    return `${r.model.padEnd(20)} ${String(r.threads).padStart(3)} | ${cols} | ${k.padStart(7)} ${String(r.runs ?? '-').padStart(5)}  ${rowNotes(r, tunedOrt)}`;
  },
};

function printGeomeans(rows) {
  console.log(`\nGeometric mean of the p50 ratios over ${opts.geomeanModels.join(', ')}`);
  const head = `${'thr'.padStart(3)} | ${'tuned/ORT'.padStart(9)} ${'def/ORT'.padStart(8)} ${'tun/def'.padStart(8)} | models`;
  console.log(head);
  console.log('-'.repeat(head.length));
  for (const threads of opts.threads) {
    const these = rows.filter((r) => r.threads === threads && opts.geomeanModels.includes(r.model) &&
      r.tunedP50 > 0 && r.kilnP50 > 0 && r.ortP50 > 0);
    const g = (f) => fmt(geomean(these.map(f)), 8);
    console.log(`${String(threads).padStart(3)} | ${g((r) => r.tunedP50 / r.ortP50).padStart(9)} ${g((r) => r.kilnP50 / r.ortP50)} ${g((r) => r.tunedP50 / r.kilnP50)} | ${these.length} of ${opts.geomeanModels.length}`);
  }
}

async function main() {
  const cpus = os.cpus();
  const table = opts.recordsDir ? threeWay : twoWay;
  console.log(`Kiln vs ONNX Runtime ${ort.env.versions?.common ?? ''} (onnxruntime-node, CPU EP)`);
  console.log(`host: ${cpus.length} x ${cpus[0]?.model ?? '?'}; load average at start ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  console.log(`warm-up ${opts.warmup}, up to ${opts.runs} runs each (about ${opts.budgetMs} ms per runtime per row), alternating batches\n`);
  if (opts.recordsDir) console.log(`tuned: records from ${opts.recordsDir}/<model>.t<threads>.jsonl\n`);
  console.log(table.head);
  console.log('-'.repeat(table.head.length));
  const rows = [];
  for (const dir of modelDirs()) {
    for (const threads of opts.threads) {
      const r = await benchOne(dir, threads);
      rows.push(r);
      console.log(table.line(r));
    }
  }
  if (opts.recordsDir) printGeomeans(rows);

  console.log(`\nCompile time, cold (Kiln: a fresh process per model, CompileModelFile total; ORT: InferenceSession.create)`);
  const tunedCol = opts.recordsDir ? ` ${'tuned ms'.padStart(9)} |` : '';
  const chead = `${'model'.padEnd(20)} | ${'Kiln ms'.padStart(9)} |${tunedCol} ${'ORT ms'.padStart(9)} |`;
  console.log(chead);
  console.log('-'.repeat(chead.length));
  const seen = new Set();
  for (const r of rows) {
    if (seen.has(r.model)) continue;
    seen.add(r.model);
    let note = '';
    if (r.model === 'resnet18' && r.kilnCompileMs !== undefined) {
      note = r.kilnCompileMs < 20000 ? 'target < 20 s: OK' : 'target < 20 s: MISSED';
    }
    if (r.kilnError) note = `kiln: ${short(r.kilnError, 100)}`;
    const tuned = opts.recordsDir ? ` ${fmt(r.tunedCompileMs, 9)} |` : '';
    console.log(`${r.model.padEnd(20)} | ${fmt(r.kilnCompileMs, 9)} |${tuned} ${fmt(r.ortCreateMs, 9)} | ${note}`);
  }
  console.log(`\nload average at end ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
}

// ---- --decode DIR ---------------------------------------------------------------------------
// Starts one server per spec ({key, args} for kiln-bench-model, {key, ort: [mode args]} for ORT
// in this script), waits for each one's ready line, measures those that started (alternate),
// and stops them all. Returns the runtimes (each with .timed), the runs per runtime ('-' when
// none ran) and notes naming each runtime that failed to start or failed while measured.
async function measureAll(specs) {
  const runtimes = specs.map((sp) => ({
    key: sp.key,
    server: sp.ort
      ? new BenchServer(process.execPath, [fileURLToPath(import.meta.url), '--ort-dir', opts.ortDir, ...sp.ort])
      : new BenchServer(opts.kilnBin, sp.args),
  }));
  const notes = [];
  for (const rt of runtimes) {
    const m = await rt.server.message();
    if (m.error) notes.push(`${rt.key}: ${short(m.error, 100)}`);
    else rt.ready = m;
  }
  const active = runtimes.filter((rt) => rt.ready);
  let runs = '-';
  try {
    if (active.length) runs = await alternate(runtimes, active);
  } catch (e) {
    notes.push(`${e.runtime}: ${short(String(e.message || e), 100)}`);
  } finally {
    for (const rt of runtimes) rt.server.close();
  }
  return { runtimes, runs, notes };
}

async function decodeMain() {
  const dir = opts.decode;
  const cpus = os.cpus();
  console.log(`Greedy decoding with a KV cache: Kiln (one artifact, symbolic dims) vs ONNX Runtime ${ort.env.versions?.common ?? ''}, ${path.basename(dir)}`);
  console.log(`host: ${cpus.length} x ${cpus[0]?.model ?? '?'}; load average at start ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  const greedy = fs.readFileSync(path.join(dir, 'greedy.txt'), 'utf8');
  const count = (key) => (greedy.match(new RegExp(`^${key}\\s+(.*)$`, 'm'))?.[1].trim().split(/\s+/).length ?? 0);
  console.log(`generation: a prompt of ${count('prompt')} tokens, then ${count('tokens') - 1} decode steps (greedy.txt's tokens checked in each runtime's first generation)\n`);
  const head = `${'thr'.padStart(3)} | ${'Kiln prompt'.padStart(11)} ${'ORT prompt'.padStart(10)} ${'ratio'.padStart(6)} | ${'Kiln step'.padStart(9)} ${'ORT step'.padStart(9)} ${'ratio'.padStart(6)} | ${'Kiln tok/s'.padStart(10)} ${'ORT tok/s'.padStart(9)} | ${'runs'.padStart(4)}  (p50 ms)`;
  console.log(head);
  console.log('-'.repeat(head.length));
  for (const threads of opts.threads) {
    const t = String(threads);
    const w = String(opts.warmup);
    const { runtimes, runs, notes } = await measureAll([
      { key: 'kiln', args: [dir, '--decode', '--serve', '--threads', t, '--warmup', w] },
      { key: 'ort', ort: ['--serve-ort-decode', dir, t, w] },
    ]);
    const [k, o] = runtimes.map((rt) => rt.timed ?? {});
    const p = (x, f) => (x[f]?.length ? percentile(x[f], 0.5) : NaN);
    const kp = p(k, 'prompt_ms'), op = p(o, 'prompt_ms'), ks = p(k, 'step_ms'), os_ = p(o, 'step_ms');
    console.log(`${t.padStart(3)} | ${fmt(kp, 11)} ${fmt(op, 10)} ${fmt(kp / op, 6)} | ${fmt(ks, 9)} ${fmt(os_, 9)} ${fmt(ks / os_, 6)} | ${fmt(1000 / ks, 10)} ${fmt(1000 / os_, 9)} | ${String(runs).padStart(4)}  ${notes.join('; ')}`);
  }

  // One step at each data set's shapes: the symbolic artifact, a per-shape compile, ORT.
  const sets = fs.readdirSync(dir).filter((f) => /^test_data_set_\d+$/.test(f)).map((f) => Number(f.match(/\d+/)[0])).sort((a, b) => a - b);
  console.log(`\nOne step per data set: the symbolic artifact (sym), a compile at that set's shapes (shape), ORT`);
  const head2 = `${'set'.padStart(3)} ${'input shapes'.padEnd(28)} ${'thr'.padStart(3)} | ${'sym'.padStart(7)} ${'shape'.padStart(7)} ${'ORT'.padStart(7)} | ${'sym/shape'.padStart(9)} ${'sym/ORT'.padStart(7)} | ${'runs'.padStart(4)}  (p50 ms)`;
  console.log(head2);
  console.log('-'.repeat(head2.length));
  for (const set of sets) {
    const setDir = path.join(dir, `test_data_set_${set}`);
    const shapes = fs.readdirSync(setDir).filter((f) => /^input_\d+\.pb$/.test(f)).sort((a, b) => Number(a.match(/\d+/)[0]) - Number(b.match(/\d+/)[0]))
      .slice(0, 2).map((f) => `[${readTensorProto(path.join(setDir, f)).dims.join(',')}]`).join(' ');
    for (const threads of opts.threads) {
      const t = String(threads);
      const w = String(opts.warmup);
      const common = [dir, '--data-set', String(set), '--serve', '--threads', t, '--warmup', w];
      const { runtimes, runs, notes } = await measureAll([
        { key: 'sym', args: [...common, '--symbolic'] },
        { key: 'shape', args: common },
        { key: 'ort', ort: ['--data-set', String(set), '--serve-ort', dir, t, w] },
      ]);
      const [s, sh, o] = runtimes.map((rt) => (rt.timed?.ms?.length ? percentile(rt.timed.ms, 0.5) : NaN));
      console.log(`${String(set).padStart(3)} ${short(shapes, 28).padEnd(28)} ${t.padStart(3)} | ${fmt(s, 7)} ${fmt(sh, 7)} ${fmt(o, 7)} | ${fmt(s / sh, 9)} ${fmt(s / o, 7)} | ${String(runs).padStart(4)}  ${notes.join('; ')}`);
    }
  }
  console.log(`\nload average at end ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
}

(opts.serveOrt
  ? serveOrt(...opts.serveOrt)
  : opts.serveOrtDecode
    ? serveOrtDecode(...opts.serveOrtDecode)
    : opts.decode
      ? decodeMain()
      : opts.ortProfile
        ? profileOrt(opts.ortProfile, opts.threads[0] ?? 1, opts.warmup, Math.min(opts.runs, 50))
        : main()
).catch((e) => {
  console.error(e);
  process.exit(1);
});
