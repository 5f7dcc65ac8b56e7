// Calibration ranges for scripts/qdq_quantize.py: runs MODEL.onnx (made by `qdq_quantize.py
// points`) on ONNX Runtime's CPU execution provider with INPUT.bin (float32, little-endian) of
// shape DIMS and writes {output name: [min, max]} as JSON to OUT.json.
//   node scripts/ort_ranges.mjs --ort-dir bench/.ort MODEL.onnx INPUT_NAME INPUT.bin DIMS OUT.json
// (DIMS comma-separated, e.g. 1,3,224,224)
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const args = process.argv.slice(2);
let ortDir = 'bench/.ort';
if (args[0] === '--ort-dir') {
  ortDir = args[1];
  args.splice(0, 2);
}
if (args.length !== 5) {
  console.error('usage: node scripts/ort_ranges.mjs [--ort-dir DIR] MODEL.onnx INPUT_NAME INPUT.bin DIMS OUT.json');
  process.exit(2);
}
const [modelPath, inputName, inputPath, dims, outPath] = args;
const require = createRequire(path.resolve(ortDir, 'package.json'));
const ort = require('onnxruntime-node');
const raw = fs.readFileSync(inputPath);
const data = new Float32Array(raw.buffer, raw.byteOffset, raw.byteLength / 4);
const session = await ort.InferenceSession.create(modelPath, {
  executionProviders: ['cpu'],
  graphOptimizationLevel: 'disabled',
});
const feeds = { [inputName]: new ort.Tensor('float32', Float32Array.from(data), dims.split(',').map(Number)) };
const results = await session.run(feeds);
const ranges = {};
for (const [name, t] of Object.entries(results)) {
  let lo = Infinity, hi = -Infinity;
  for (const v of t.data) { if (v < lo) lo = v; if (v > hi) hi = v; }
  ranges[name] = [lo, hi];
}
fs.writeFileSync(outPath, JSON.stringify(ranges, null, 1) + '\n');
