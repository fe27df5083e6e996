// Validates `snailtrail flamegraph --format speedscope` output against speedscope's own
// file-format-schema.json (npm package speedscope, a devDependency) with ajv.
// Usage: node speedscope_schema.mjs FILE.speedscope.json...   Exit 77 (CTest: skipped)
// when node_modules lacks the packages (`make deps` installs them).
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const require = createRequire(path.join(root, 'package.json'));
let Ajv, schema;
try {
  Ajv = require('ajv');
  schema = JSON.parse(
    readFileSync(require.resolve('speedscope/dist/release/file-format-schema.json'), 'utf8'));
} catch (e) {
  console.log(`skipped: ${e.message.split('\n')[0]} (run make deps)`);
  process.exit(77);
}
const ajv = new (Ajv.default ?? Ajv)({ allErrors: true, strict: false });
const validate = ajv.compile(schema);
let failed = 0;
for (const file of process.argv.slice(2)) {
  const doc = JSON.parse(readFileSync(file, 'utf8'));
  if (!validate(doc)) {
    failed++;
    console.log(`${file}: not valid:\n${JSON.stringify(validate.errors.slice(0, 5), null, 1)}`);
    continue;
  }
  // What the schema cannot say: frame indices in range, one weight per sample.
  const frames = doc.shared.frames.length;
  for (const p of doc.profiles) {
    if (p.samples.length !== p.weights.length) throw new Error(`${file}: ${p.name}: samples and weights differ in length`);
    for (const s of p.samples) for (const f of s)
      if (!Number.isInteger(f) || f < 0 || f >= frames) throw new Error(`${file}: ${p.name}: frame ${f} out of range`);
  }
  console.log(`${file}: valid (${doc.profiles.length} profiles, ${frames} frames)`);
}
process.exit(failed ? 1 : 0);
