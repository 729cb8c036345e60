// A local OpenAI-compatible chat-completions server for development, benchmarks and the
// end-to-end test with a real model (tests/e2e/llm_real.mjs). It runs one GGUF model on the CPU
// with node-llama-cpp's prebuilt llama.cpp binary (@node-llama-cpp/linux-x64): nothing is built,
// downloaded or fetched at run time. Start it with `scripts/local-llm.sh serve`, which installs
// it first.
//
//   GET  /health                  {"status":"ok","model":ID}
//   GET  /v1/models               {"object":"list","data":[{"id":ID,...}]}
//   POST /v1/chat/completions     non-streaming: model, messages, temperature, top_p,
//                                 max_tokens (or max_completion_tokens), stop, seed,
//                                 frequency_penalty, presence_penalty; llama-server's top_k,
//                                 min_p, repeat_penalty. Other fields are ignored.
//
// The prompt is the model's own chat template (tokenizer.chat_template in the GGUF) rendered
// with the request's messages and add_generation_prompt, as llama-server --jinja and vLLM do;
// generation ends at the model's end-of-generation token ("stop"), a stop string ("stop"), or
// max_tokens or the end of the context ("length"). Sampling settings a request leaves out take
// llama-server's defaults: temperature 0.8, top_p 0.95, top_k 40, min_p 0.05, no repeat
// penalty. `usage` counts the prompt's tokens and the generated ones; `timings` (as
// llama-server adds) says how long the request waited and generated.
//
// One request generates at a time (the others wait in a queue, at most --max-queue; beyond it
// 503 with Retry-After). A client that disconnects stops its generation. It listens on loopback
// only. CORS: a browser origin in --allow-origin (default: pages on 127.0.0.1 or localhost at
// any port, and `null`, a page opened from a file) gets Access-Control-Allow-Origin with its
// origin and preflights allowing `authorization` and `content-type`; another origin gets a bare
// 403, as Ollama answers an origin it does not allow. Errors are JSON in OpenAI's shape
// ({"error":{"message","type","param","code"}}) with their HTTP status.
import http from 'node:http';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Template } from '@huggingface/jinja';
import { getLlama, LlamaCompletion, LlamaLogLevel } from 'node-llama-cpp';
import { MODEL_PATH, MODEL_ID, checkModel } from './model.mjs';

const USAGE = `usage: node tests/llm/server.mjs [options]
  --model FILE          GGUF file (default: the pinned model, ${path.relative(process.cwd(), MODEL_PATH) || MODEL_PATH})
  --name ID             model id served (default: ${MODEL_ID} for the pinned model, else the file name)
  --host HOST           loopback address to listen on: 127.0.0.1 (default), localhost or ::1
  --port N              port (default 8000, the app's default endpoint; 0 picks a free one)
  --threads N           CPU threads for llama.cpp (default 1)
  --ctx N               context size in tokens (default 4096)
  --allow-origin O      a browser origin allowed by CORS (repeatable): exact, scheme://host:* for any
                        port, null, or * for every origin (default: http://127.0.0.1:*,
                        http://localhost:*, null)
  --api-key KEY         require "authorization: Bearer KEY" (default: no key)
  --max-queue N         requests waiting at most (default 16; beyond: 503)
  --quiet               no line per request on stderr`;

function parseArgs(argv) {
  const o = { model: MODEL_PATH, name: null, host: '127.0.0.1', port: 8000, threads: 1, ctx: 4096, origins: [], apiKey: null, maxQueue: 16, quiet: false };
  const int = (flag, v, min, max) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min || n > max) fail(`${flag} must be a whole number from ${min} to ${max}, not ${JSON.stringify(v)}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => {
      if (i + 1 >= argv.length) fail(`${a} needs a value`);
      return argv[++i];
    };
    switch (a) {
      case '--model': o.model = path.resolve(val()); break;
      case '--name': o.name = val(); break;
      case '--host': o.host = val(); break;
      case '--port': o.port = int(a, val(), 0, 65535); break;
      case '--threads': o.threads = int(a, val(), 1, 256); break;
      case '--ctx': o.ctx = int(a, val(), 256, 131072); break;
      case '--allow-origin': o.origins.push(val()); break;
      case '--api-key': o.apiKey = val(); break;
      case '--max-queue': o.maxQueue = int(a, val(), 0, 10000); break;
      case '--quiet': o.quiet = true; break;
      case '-h': case '--help': console.log(USAGE); process.exit(0); break;
      default: fail(`unknown option ${a}`);
    }
  }
  if (!['127.0.0.1', 'localhost', '::1'].includes(o.host)) {
    fail(`--host ${o.host}: this server has no access control but CORS and an optional key; it listens on loopback only`);
  }
  if (o.origins.length === 0) o.origins = ['http://127.0.0.1:*', 'http://localhost:*', 'null'];
  o.name ??= o.model === MODEL_PATH ? MODEL_ID : path.basename(o.model).replace(/\.gguf$/i, '');
  return o;
}

function fail(msg) {
  console.error(`server.mjs: ${msg}\n${USAGE}`);
  process.exit(2);
}

/** Does the CORS list allow this browser origin? `scheme://host:*` allows any port (or none). */
export function originAllowed(patterns, origin) {
  return patterns.some((p) => {
    if (p === '*' || p === origin) return true;
    if (!p.endsWith(':*')) return false;
    const base = p.slice(0, -2);
    return origin === base || (origin.startsWith(`${base}:`) && /^\d+$/.test(origin.slice(base.length + 1)));
  });
}

class HttpError extends Error {
  constructor(status, message, { type = 'invalid_request_error', param = null, code = null, headers = {} } = {}) {
    super(message);
    Object.assign(this, { status, type, param, code, headers });
  }
}

const bad = (message, param = null, code = null) => new HttpError(400, message, { param, code });

/** The request's fields, checked; defaults for what it leaves out. */
export function readRequest(body, modelName) {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw bad('the body must be a JSON object');
  if (body.model !== undefined && body.model !== modelName) {
    throw new HttpError(404, `The model \`${body.model}\` does not exist: this server serves \`${modelName}\``, { param: 'model', code: 'model_not_found' });
  }
  if (body.stream === true) throw bad('stream is not supported by this server: send "stream": false', 'stream');
  if (body.n !== undefined && body.n !== 1) throw bad('n must be 1', 'n');
  if (!Array.isArray(body.messages) || body.messages.length === 0) throw bad('messages must be a non-empty array', 'messages');
  const messages = body.messages.map((m, i) => {
    const param = `messages[${i}]`;
    if (m === null || typeof m !== 'object') throw bad(`${param} must be an object`, param);
    const role = m.role === 'developer' ? 'system' : m.role;
    if (!['system', 'user', 'assistant'].includes(role)) throw bad(`${param}.role must be system, developer, user or assistant, not ${JSON.stringify(m.role)}`, `${param}.role`);
    let content = m.content;
    if (Array.isArray(content)) {
      if (!content.every((p) => p && p.type === 'text' && typeof p.text === 'string')) throw bad(`${param}.content: only text parts are supported`, `${param}.content`);
      content = content.map((p) => p.text).join('');
    }
    if (typeof content !== 'string') throw bad(`${param}.content must be a string`, `${param}.content`);
    return { role, content };
  });
  const num = (name, def, min, max, integer = false) => {
    const v = body[name];
    if (v === undefined || v === null) return def;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max || (integer && !Number.isInteger(v))) {
      throw bad(`${name} must be ${integer ? 'a whole number' : 'a number'} from ${min} to ${max}, not ${JSON.stringify(v)}`, name);
    }
    return v;
  };
  const maxTokens = num('max_completion_tokens', undefined, 1, 1e9, true) ?? num('max_tokens', undefined, 1, 1e9, true);
  let stop = body.stop ?? [];
  if (typeof stop === 'string') stop = [stop];
  if (!Array.isArray(stop) || stop.length > 4 || !stop.every((s) => typeof s === 'string' && s !== '')) {
    throw bad('stop must be a non-empty string or up to 4 of them', 'stop');
  }
  const frequency = num('frequency_penalty', 0, -2, 2);
  const presence = num('presence_penalty', 0, -2, 2);
  const repeat = num('repeat_penalty', 1, 0, 10);
  return {
    messages,
    maxTokens,
    stop,
    temperature: num('temperature', 0.8, 0, 2),
    topP: num('top_p', 0.95, 0, 1),
    topK: num('top_k', 40, 0, 1e6, true),
    minP: num('min_p', 0.05, 0, 1),
    seed: num('seed', undefined, 0, 2 ** 32 - 1, true),
    repeatPenalty: frequency === 0 && presence === 0 && repeat === 1
      ? false
      : { lastTokens: 64, penalty: repeat, frequencyPenalty: frequency, presencePenalty: presence },
  };
}

const FINISH = { eogToken: 'stop', stopGenerationTrigger: 'stop', customStopTrigger: 'stop', maxTokens: 'length' };

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const summary = await checkModel(opts.model, { pinned: opts.model === MODEL_PATH });
  const llama = await getLlama({
    gpu: false, // the CPU binary only
    build: 'never', // never compile llama.cpp; a missing prebuilt binary is an error
    skipDownload: true, // and never download its sources
    usePrebuiltBinaries: true,
    maxThreads: opts.threads,
    logLevel: LlamaLogLevel.warn,
    logger: (level, message) => process.stderr.write(`llama.cpp ${level}: ${message.trimEnd()}\n`),
  });
  const model = await llama.loadModel({ modelPath: opts.model, gpuLayers: 0 });
  const context = await model.createContext({ contextSize: opts.ctx, threads: opts.threads });
  const completion = new LlamaCompletion({ contextSequence: context.getSequence() });
  const template = new Template(model.fileInfo.metadata.tokenizer.chat_template);
  const specials = { bos_token: model.tokens.bosString ?? '', eos_token: model.tokens.eosString ?? '' };

  let pending = 0; // accepted chat requests not yet answered (queued or generating)
  let tail = Promise.resolve();
  const queue = (job) => {
    const run = tail.then(job);
    tail = run.catch(() => {});
    return run;
  };

  async function chat(body, signal) {
    const r = readRequest(body, opts.name);
    let prompt;
    try {
      prompt = template.render({ messages: r.messages, add_generation_prompt: true, ...specials });
    } catch (e) {
      throw bad(`the model's chat template refused these messages: ${e.message}`, 'messages');
    }
    const tokens = model.tokenize(prompt, true);
    const room = context.contextSize - tokens.length;
    if (room < 1) {
      throw bad(`the prompt is ${tokens.length} tokens; this server's context holds ${context.contextSize} (--ctx)`, 'messages', 'context_length_exceeded');
    }
    if (pending - 1 > opts.maxQueue) {
      throw new HttpError(503, `${pending - 1} requests are ahead of this one (--max-queue ${opts.maxQueue})`, { type: 'server_error', code: 'queue_full', headers: { 'retry-after': '5' } });
    }
    const maxTokens = Math.min(r.maxTokens ?? room, room);
    const queued = performance.now();
    return queue(async () => {
      if (signal.aborted) throw signal.reason;
      const t0 = performance.now();
      let first = null;
      let generated = 0;
      const out = await completion.generateCompletionWithMeta(tokens, {
        maxTokens,
        temperature: r.temperature,
        topP: r.topP,
        topK: r.topK,
        minP: r.minP,
        seed: r.seed,
        repeatPenalty: r.repeatPenalty,
        customStopTriggers: r.stop.length ? r.stop : undefined,
        disableContextShift: true,
        signal,
        onToken: (t) => {
          first ??= performance.now();
          generated += t.length;
        },
      });
      const t1 = performance.now();
      if (out.metadata.stopReason === 'abort') throw signal.reason ?? new Error('aborted');
      const finish = FINISH[out.metadata.stopReason] ?? 'stop';
      const secs = (t1 - (first ?? t1)) / 1000;
      return {
        id: `chatcmpl-${randomBytes(12).toString('hex')}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: opts.name,
        choices: [{ index: 0, message: { role: 'assistant', content: out.response }, finish_reason: finish, logprobs: null }],
        usage: { prompt_tokens: tokens.length, completion_tokens: generated, total_tokens: tokens.length + generated },
        timings: {
          queue_ms: Math.round(t0 - queued),
          prompt_ms: Math.round((first ?? t1) - t0),
          generation_ms: Math.round(t1 - (first ?? t1)),
          tokens_per_second: generated > 1 && secs > 0 ? Number(((generated - 1) / secs).toFixed(2)) : null,
        },
      };
    });
  }

  const server = http.createServer(async (req, res) => {
    const t0 = performance.now();
    const origin = req.headers.origin;
    const cors = {};
    const send = (status, obj, extra = {}) => {
      const body = JSON.stringify(obj);
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...cors, ...extra });
      res.end(body);
    };
    const sendError = (e) => {
      const status = e instanceof HttpError ? e.status : 500;
      const err = e instanceof HttpError ? e : { message: `generation failed: ${e.message}`, type: 'server_error', param: null, code: null, headers: {} };
      send(status, { error: { message: err.message, type: err.type, param: err.param, code: err.code } }, err.headers);
      return `${status} ${err.message}`;
    };
    let note = '';
    try {
      const url = new URL(req.url, 'http://localhost');
      if (origin !== undefined) {
        if (!originAllowed(opts.origins, origin)) {
          // No CORS headers: the browser refuses the reply, as it would Ollama's.
          req.resume();
          note = sendError(new HttpError(403, `origin ${origin} is not allowed (--allow-origin)`, { type: 'forbidden' }));
          return;
        }
        Object.assign(cors, { 'access-control-allow-origin': origin, vary: 'Origin', 'access-control-expose-headers': 'retry-after' });
      }
      if (req.method === 'OPTIONS') {
        const headers = { 'access-control-allow-methods': 'GET, POST, OPTIONS', 'access-control-allow-headers': 'authorization, content-type', 'access-control-max-age': '600' };
        if (req.headers['access-control-request-private-network'] === 'true') headers['access-control-allow-private-network'] = 'true';
        res.writeHead(204, { ...cors, ...headers });
        res.end();
        return;
      }
      const route = `${req.method} ${url.pathname.replace(/\/+$/, '')}`;
      const known = { '/health': 'GET', '/v1/models': 'GET', '/v1/chat/completions': 'POST' };
      const want = known[url.pathname.replace(/\/+$/, '')];
      if (!want) throw new HttpError(404, `no such endpoint: ${url.pathname}`, { code: 'not_found' });
      if (req.method !== want) throw new HttpError(405, `${url.pathname} takes ${want}`, { headers: { allow: `${want}, OPTIONS` } });
      if (route === 'GET /health') {
        send(200, { status: 'ok', model: opts.name });
        return;
      }
      if (opts.apiKey !== null && req.headers.authorization !== `Bearer ${opts.apiKey}`) {
        throw new HttpError(401, 'a wrong or missing API key', { code: 'invalid_api_key' });
      }
      if (route === 'GET /v1/models') {
        send(200, { object: 'list', data: [{ id: opts.name, object: 'model', created: 0, owned_by: 'local', meta: { file: path.basename(opts.model), name: summary.name, n_ctx: context.contextSize } }] });
        return;
      }
      // POST /v1/chat/completions
      const chunks = [];
      let size = 0;
      for await (const c of req) {
        size += c.length;
        if (size > 1 << 20) throw new HttpError(413, 'the body is over 1 MiB');
        chunks.push(c);
      }
      let body;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch (e) {
        throw bad(`the body is not JSON (${e.message})`);
      }
      const ac = new AbortController();
      res.on('close', () => { if (!res.writableFinished) ac.abort(new Error('the client went away')); });
      pending++;
      try {
        const reply = await chat(body, ac.signal);
        send(200, reply);
        const t = reply.timings;
        note = `200 prompt=${reply.usage.prompt_tokens} completion=${reply.usage.completion_tokens} finish=${reply.choices[0].finish_reason} ` +
          `queue=${(t.queue_ms / 1000).toFixed(1)}s prompt=${(t.prompt_ms / 1000).toFixed(1)}s gen=${(t.generation_ms / 1000).toFixed(1)}s (${t.tokens_per_second} tok/s)`;
      } finally {
        pending--;
      }
    } catch (e) {
      if (res.destroyed) note = `client went away (${e.message})`;
      else note = sendError(e);
    } finally {
      if (!opts.quiet && req.method !== 'OPTIONS') {
        process.stderr.write(`${new Date().toISOString()} ${req.method} ${req.url} ${origin ?? '-'} ${note || res.statusCode} [${((performance.now() - t0) / 1000).toFixed(1)} s]\n`);
      }
    }
  });
  server.listen(opts.port, opts.host, () => {
    const { port } = server.address();
    const host = opts.host === '::1' ? '[::1]' : opts.host;
    console.log(`listening http://${host}:${port}/v1 model=${opts.name} (${summary.name}, ${path.basename(opts.model)}) threads=${opts.threads} ctx=${context.contextSize} origins=${opts.origins.join(',')}`);
  });
  const stop = () => {
    server.close();
    llama.dispose().finally(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((e) => {
    console.error(`server.mjs: ${e.stack ?? e}`);
    process.exit(1);
  });
}
