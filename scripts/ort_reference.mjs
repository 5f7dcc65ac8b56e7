// One ONNX Runtime inference for reference outputs (scripts/make-symbolic-batch-refs):
//   node scripts/ort_reference.mjs --ort-dir bench/.ort [--optimized] MODEL.onnx DIR
// reads DIR/input.bin (float32, little-endian) and DIR/input.json ({name, dims}), runs the
// model on ORT's CPU execution provider with graph optimizations disabled (--optimized: all of
// them, so that ORT runs a QDQ model's convolutions as int8 QLinearConv kernels, as deployed),
// and writes output 0 as DIR/output.bin and DIR/output.json ({name, dims}).
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const args = process.argv.slice(2);
let ortDir = 'bench/.ort';
if (args[0] === '--ort-dir') {
  ortDir = args[1];
  args.splice(0, 2);
}
let optimized = false;
if (args[0] === '--optimized') {
  optimized = true;
  args.splice(0, 1);
}
if (args.length !== 2) {
  console.error('usage: node scripts/ort_reference.mjs [--ort-dir DIR] [--optimized] MODEL.onnx DIR');
  process.exit(2);
}
const [modelPath, dir] = args;
const require = createRequire(path.resolve(ortDir, 'package.json'));
const ort = require('onnxruntime-node');

const meta = JSON.parse(fs.readFileSync(path.join(dir, 'input.json'), 'utf8'));
const raw = fs.readFileSync(path.join(dir, 'input.bin'));
const data = new Float32Array(raw.buffer, raw.byteOffset, raw.byteLength / 4);
const session = await ort.InferenceSession.create(modelPath, {
  executionProviders: ['cpu'],
  graphOptimizationLevel: optimized ? 'all' : 'disabled',
});
const result = await session.run({ [meta.name]: new ort.Tensor('float32', data, meta.dims) });
const name = session.outputNames[0];
const out = result[name];
fs.writeFileSync(path.join(dir, 'output.bin'), Buffer.from(out.data.buffer, out.data.byteOffset,
                                                             out.data.byteLength));
fs.writeFileSync(path.join(dir, 'output.json'), JSON.stringify({ name, dims: out.dims }));
console.log(`${modelPath}: ${name} [${out.dims.join(',')}]`);
