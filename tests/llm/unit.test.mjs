// Unit tests of the local LLM tools that need no model: the server's CORS rule and request
// checks, the prompt bench's copy of the app's prompt filling, and the reply classifier.
// Run: node --test tests/llm/ (scripts/test.sh does).
import test from 'node:test';
import assert from 'node:assert/strict';
import { originAllowed, readRequest } from './server.mjs';
import { messages, substitute, APP_DEFAULT } from './prompt_bench.mjs';
import { classify } from './reply.mjs';

const LOOPBACK = ['http://127.0.0.1:*', 'http://localhost:*', 'null'];

test('CORS: loopback pages at any port and null are allowed, nothing else', () => {
  for (const o of ['http://127.0.0.1:8080', 'http://127.0.0.1', 'http://localhost:5173', 'null']) assert.ok(originAllowed(LOOPBACK, o), o);
  for (const o of ['http://127.0.0.2:8080', 'https://127.0.0.1:8080', 'http://localhost.example.org:80', 'http://127.0.0.1:80x', 'http://evil.example', 'undefined']) {
    assert.ok(!originAllowed(LOOPBACK, o), o);
  }
  assert.ok(originAllowed(['https://intranet.example'], 'https://intranet.example'));
  assert.ok(!originAllowed(['https://intranet.example'], 'https://intranet.example:8443'));
  assert.ok(originAllowed(['*'], 'https://anything.example'));
});

test('requests: defaults, the app\'s body, and refusals with their field', () => {
  const r = readRequest({ model: 'm', messages: [{ role: 'system', content: 's' }, { role: 'user', content: 'u' }], temperature: 0.8, max_tokens: 512, stream: false }, 'm');
  assert.deepEqual(r.messages, [{ role: 'system', content: 's' }, { role: 'user', content: 'u' }]);
  assert.equal(r.maxTokens, 512);
  assert.equal(r.temperature, 0.8);
  assert.equal(r.topP, 0.95);
  assert.equal(r.repeatPenalty, false);
  const d = readRequest({ messages: [{ role: 'developer', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] }], stop: 'END', max_completion_tokens: 7, frequency_penalty: 0.5 }, 'm');
  assert.deepEqual(d.messages, [{ role: 'system', content: 'ab' }]);
  assert.deepEqual(d.stop, ['END']);
  assert.equal(d.maxTokens, 7);
  assert.equal(d.temperature, 0.8);
  assert.deepEqual(d.repeatPenalty, { lastTokens: 64, penalty: 1, frequencyPenalty: 0.5, presencePenalty: 0 });
  const refused = (body, status, param) => {
    assert.throws(() => readRequest(body, 'm'), (e) => e.status === status && e.param === param, JSON.stringify(body));
  };
  const ok = [{ role: 'user', content: 'x' }];
  refused({ model: 'other', messages: ok }, 404, 'model');
  refused({ messages: [] }, 400, 'messages');
  refused({ messages: [{ role: 'tool', content: 'x' }] }, 400, 'messages[0].role');
  refused({ messages: [{ role: 'user', content: 3 }] }, 400, 'messages[0].content');
  refused({ messages: ok, stream: true }, 400, 'stream');
  refused({ messages: ok, n: 2 }, 400, 'n');
  refused({ messages: ok, temperature: 2.5 }, 400, 'temperature');
  refused({ messages: ok, max_tokens: 0 }, 400, 'max_tokens');
  refused({ messages: ok, max_tokens: 1.5 }, 400, 'max_tokens');
  refused({ messages: ok, stop: ['a', 'b', 'c', 'd', 'e'] }, 400, 'stop');
  refused({ messages: ok, stop: [''] }, 400, 'stop');
  assert.throws(() => readRequest([], 'm'), (e) => e.status === 400);
});

test('the bench fills prompts as crates/core/src/llm/prompt.rs does', () => {
  // The expectations of crates/core/src/llm/prompt.rs's own tests.
  const m = messages(APP_DEFAULT, ['heart failure', 'edema', 'heart failure'], 'cardio');
  assert.equal(m.length, 2);
  assert.equal(m[0].content, 'You write realistic, fictional clinical notes in flowing prose: full sentences and paragraphs, never lists. Every person and detail is invented.');
  assert.ok(m[1].content.startsWith('Keyphrases (separated by semicolons): heart failure; edema.\n\nWrite a realistic clinical note (cardio) of about 150 words'), m[1].content);
  assert.ok(m[1].content.includes('(cardio)') && m[1].content.includes(': heart failure; edema.'), m[1].content);
  const shot = messages({ ...APP_DEFAULT, few_shot: [{ keyphrases: ['cough'], label: 'pulmo', text: 'Ex.' }] }, ['heart failure', 'edema', 'heart failure'], 'cardio');
  assert.deepEqual(shot.map((x) => x.role), ['system', 'user', 'assistant', 'user']);
  assert.ok(shot[1].content.includes('(pulmo)') && shot[1].content.includes(': cough.') && shot[2].content === 'Ex.', shot[1].content);
  assert.ok(shot[3].content.includes('(cardio)') && shot[3].content.includes(': heart failure; edema.'), shot[3].content);
  const k = messages(APP_DEFAULT, ['Amino Acids, Peptides, and Proteins', 'Cough'], null)[1].content;
  assert.ok(k.includes('(clinical note)') && k.includes(': Amino Acids, Peptides, and Proteins; Cough.'), k);
  const odd = { doc_type: 'note {keyphrases}', system: '', template: '[{doc_type}] [{label}] [{keyphrases}] {unknown} {' };
  const u = messages(odd, ['{label}', 'x {doc_type}'], 'L {label}');
  assert.equal(u.length, 1);
  assert.equal(u[0].content, '[note {keyphrases}] [L {label}] [{label}; x {doc_type}] {unknown} {');
  assert.equal(substitute('{a}{b}', { '{a}': '{b}', '{b}': 'B' }), '{b}B');
});

// The same cases are in crates/core/src/llm/check.rs (`the_cases_of_reply_mjs`): the two are kept in step.
test('replies are classified: prose, list, glossary, loop, copy, short, refusal', () => {
  const k = ['Heart Failure', 'Edema', 'Chest Pain', 'Atrial Fibrillation'];
  const prose = 'Mr. Harlan Voss, a 67-year-old retired machinist, came to the clinic with two weeks of chest pain on exertion and ankle edema. '
    + 'He has a history of heart failure with reduced ejection fraction. On examination his pulse was irregular, and the ECG confirmed atrial fibrillation. '
    + 'We increased his diuretic, started anticoagulation after discussing the risks, and arranged an echocardiogram and a review in one week.';
  assert.deepEqual({ ...classify(prose, k), density: undefined }, { kind: 'prose', used: 4, distinct: 4, words: 67, sentences: 4, density: undefined });
  assert.equal(classify('Heart Failure; Edema; Chest Pain; Atrial Fibrillation.', k).kind, 'list');
  assert.equal(classify('Cardiology:\n- Heart Failure\n- Edema\n- Chest Pain\n- Atrial Fibrillation', k).kind, 'list');
  assert.equal(classify('Heart failure; edema; chest pain; atrial fibrillation; edema; chest pain; edema; chest pain; edema; chest pain; edema; heart failure', k).kind, 'list');
  const glossary = '**Heart Failure:** The heart cannot pump enough blood for the body.\n\n**Edema:** Swelling caused by fluid in the tissues of the legs.\n\n'
    + '**Chest Pain:** Discomfort in the chest that may come from the heart.\n\n**Atrial Fibrillation:** An irregular rhythm of the upper chambers of the heart.';
  assert.equal(classify(glossary, k).kind, 'glossary');
  const loop = 'The patient was seen today for review of his symptoms. ' + 'He reports chest pain and edema when walking. '.repeat(4);
  assert.equal(classify(loop, k).kind, 'loop');
  assert.equal(classify('The patient, a retired teacher, has heart failure and edema; chest pain and atrial fibrillation are stable today.', k).kind, 'short');
  assert.equal(classify("I'm sorry, I can't assist with that request.", k).kind, 'refusal');
  // A few-shot example given back (with a sentence added) is a copy, not a document.
  const example = 'Maria Feldt, a 58-year-old bookkeeper, came in with five days of productive cough and fever. A chest X-ray showed pneumonia, and we started antibiotics.';
  assert.equal(classify(`${example} She also has chest pain.`, k, [example]).kind, 'copy');
  assert.equal(classify(prose, k, [example]).kind, 'prose');
  assert.equal(classify(prose.replace(/atrial fibrillation/i, 'an arrhythmia'), k).used, 3);
});
