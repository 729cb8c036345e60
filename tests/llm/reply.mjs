// What a generated document is: prose, or one of the ways a small model fails the task (the
// keyphrases given back as a list, a glossary of them, a loop, a copy of a few-shot example, a
// refusal, a line or two); and
// which of its keyphrases it uses. Read by tests/llm/prompt_bench.mjs and by the end-to-end
// test with the real model (tests/e2e/llm_real.mjs). No dependencies.

/** Lower case, every run of characters other than letters and digits one space. */
export const norm = (s) => s.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, ' ').trim();

const REFUSAL = /\b(I'?m sorry|I am sorry|I can(?:no|')t (?:assist|help|provide|write)|as an AI)\b/i;

/** The set of 4-word runs of `text` (normalised). */
function fourGrams(text) {
  const w = norm(text).split(' ').filter(Boolean);
  const out = [];
  for (let i = 0; i + 4 <= w.length; i++) out.push(w.slice(i, i + 4).join(' '));
  return out;
}

/**
 * Classifies `text` written for `keyphrases`; `examples` are the texts of the prompt's
 * few-shot examples, if any. Returns
 * - `kind`, the first that holds:
 *   - "refusal": an apology or "I can't assist" in under 40 words;
 *   - "copy": a third or more of its 4-word runs come from one of the examples;
 *   - "list": the keyphrases given back: at most 3 other words, or half or more of its words
 *     are keyphrase words (a list, or a list repeated);
 *   - "loop": a third or more of its sentences, or half or more of its 4-word runs, are repeats;
 *   - "glossary": at least 3 (and half) of the keyphrases each open a line as a heading or a
 *     "Keyphrase: definition" item: a note in name only;
 *   - "short": under 40 words or under 2 sentences;
 *   - "prose": otherwise;
 * - `used`, `distinct`: how many of the distinct keyphrases appear (whole words, any case,
 *   punctuation ignored, the last word singular or plural), of how many;
 * - `words`, `sentences`, `density` (the share of its words inside keyphrases).
 */
export function classify(text, keyphrases, examples = []) {
  const distinct = [...new Set(keyphrases)];
  const keys = distinct.map(norm).filter(Boolean).sort((a, b) => b.length - a.length);
  const flat = ` ${norm(text)} `;
  // A keyphrase counts as used in the singular or plural ("Headache", "headaches").
  const forms = (k) => [` ${k} `, ` ${k}s `, ` ${k}es `];
  const used = keys.filter((k) => forms(k).some((f) => flat.includes(f))).length;
  const wordList = flat.trim().split(' ').filter(Boolean);
  const words = wordList.length;
  // Words left once every keyphrase occurrence (longest first), number and "and" is taken out.
  let rest = flat;
  for (const k of keys) for (const f of forms(k)) rest = rest.split(f).join('  ');
  const left = rest.split(/\s+/).filter((w) => w && !/^\d+$/.test(w) && !['and', 'keyphrases', 'keyphrase'].includes(w));
  const density = words === 0 ? 0 : (words - rest.split(/\s+/).filter(Boolean).length) / words;
  const sentences = text.split(/(?<=[.!?])\s+|\n+/).map(norm).filter((s) => s.split(' ').length >= 4);
  const sentenceRepeats = sentences.length - new Set(sentences).size;
  const grams = fourGrams(text);
  const copied = Math.max(0, ...examples.map((e) => {
    const ex = new Set(fourGrams(e));
    return grams.length === 0 ? 0 : grams.filter((g) => ex.has(g)).length / grams.length;
  }));
  const gramRepeats = grams.length - new Set(grams).size;
  // Lines that open with a keyphrase and then a colon or nothing: "**Pain:** …", "## Pain".
  const headed = new Set();
  for (const line of text.split('\n')) {
    const l = norm(line.replace(/^[\s\-*•·#>\d.)]+/, '').split(/[:\n]/)[0]);
    const k = keys.find((x) => l === x || (line.includes(':') && l.startsWith(x) && l.length <= x.length + 12));
    if (k) headed.add(k);
  }
  let kind = 'prose';
  if (words < 40 && REFUSAL.test(text)) kind = 'refusal';
  else if (copied >= 1 / 3) kind = 'copy';
  else if (left.length <= 3 || density >= 0.5) kind = 'list';
  else if ((sentences.length >= 3 && sentenceRepeats / sentences.length >= 1 / 3) || (grams.length >= 20 && gramRepeats / grams.length >= 0.5)) kind = 'loop';
  else if (headed.size >= 3 && headed.size >= keys.length / 2) kind = 'glossary';
  else if (words < 40 || sentences.length < 2) kind = 'short';
  return { kind, used, distinct: keys.length, words, sentences: sentences.length, density: Number(density.toFixed(2)) };
}
