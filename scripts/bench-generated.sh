#!/usr/bin/env bash
# Train on synthetic, test on real (DP-KPS, Table 2; issue 37 item 4), on MTSamples: a
# classifier (`dpkps train`: the recipient's MLP over the bundled sentence model's embeddings
# of whole texts) trained on each arm, plain and with Deep CORAL (the held-out notes' texts as
# the recipient's unlabelled set, as the paper's recipient does), every arm tested on the same
# held-out real notes:
#   real-k       K real training notes per class (the paper's same-count comparison);
#   dp-novote    K per class drawn at random (seeded) from the vote's own candidates;
#   dp-vote      K per class kept by `dpkps select` (ε_select, top-k) from C × K candidates
#                per class, generated from DP keyphrase sequences (ε_voc, ε_kde);
#   nodp         K per class generated from noiseless sequences (the same pipeline, noise off:
#                NOT DP);
#   real-all     every real training note.
# The split is made here (seeded; duplicate texts dropped, classes balanced to the smallest):
# the test notes never reach the DP stages or the vote, whose private corpus is the training
# split only. The sequences come from `dpkps evaluate --export-sequences` on the training split
# (its own hold-out set to the least it allows, one note per class), so they are marked not
# recorded: `generate --unrecorded-sequences` sends them to the local server only (MTSamples is
# public). Figures only: nothing passes or fails on them, and they are NOT differentially
# private (computed on the corpus; it is public here).
#
#   scripts/bench.sh --generated         (or this script directly)
#
# Every stage resumes: the split, the sequences, each generation job (`generate` resumes its
# folder), the vote and every classifier are kept under DPKPS_GEN_OUT, so a rerun re-scores
# without calling the LLM (and without a second vote: delete vote/ to draw it again).
#
# Environment (defaults in brackets):
#   DPKPS_GEN_CLASSES   ;-separated MTSamples specialties
#                       ["Cardiovascular / Pulmonary;Orthopedic;Gastroenterology;Neurology"]
#   DPKPS_GEN_PER_CLASS K: documents per class in each generated arm and in real-k [40]
#   DPKPS_GEN_CANDIDATES C: DP candidates generated per kept document [2]
#   DPKPS_GEN_HOLDOUT   the test share of every class [0.2]
#   DPKPS_GEN_MAX_TOKENS tokens per document at most [256: a 150-word note is about 200]
#   DPKPS_GEN_REPLY_CHECK on, or off (`generate --no-reply-check`: every reply kept as it
#                       came, no second request for a list, loop or glossary) [off: on one
#                       thread the second requests cost about 40% more time]
#   DPKPS_GEN_TIMEOUT   seconds before a request is abandoned and retried [900: three jobs
#                       share one 1-thread server, which can fall to a few tokens per second]
#   DPKPS_GEN_EPS       ε_voc, ε_kde and ε_select ["1 10 1"]
#   DPKPS_GEN_SEED      the draw: the split's, the DP draws' and the subsets' seed [0]
#   DPKPS_GEN_SEQ_FLAGS more `dpkps evaluate` flags for the sequences, e.g. the settings of
#                       the first two draws (before issue 39's defaults): "--top-n 1000
#                       --distinctiveness 0 --distinct-sets false" [none: the defaults]
#   DPKPS_GEN_PROMPT    name (the default template, with the class name) or noname (without
#                       it, as the paper's prompt) [name]
#   DPKPS_GEN_TRAIN_SEEDS classifier seeds per arm (initial weights, minibatch order) [3]
#   DPKPS_GEN_STOP      generate-only | score-only | cut: stop after generation; or score what is
#                       on disk (fewer documents than asked: K is lowered to what every class
#                       has); or, after the jobs were stopped (killed) and with no server on
#                       the port, close them where they are: the pending documents are marked
#                       failed (one attempt each, to the dead endpoint: nothing reaches a model),
#                       synthetic.jsonl is written from the documents done, then scored
#   DPKPS_GEN_OUT       output folder [target/bench-generated/seedS]
#   DPKPS_LLM_ENDPOINT, DPKPS_LLM_MODEL  another OpenAI-compatible endpoint (its key, if any,
#                       in DPKPS_LLM_KEY); by default the local model of scripts/local-llm.sh,
#                       started here on DPKPS_LLM_PORT [8011] with one thread
#   DPKPS_BIN           a built dpkps [target/release/dpkps, built here]
#   DPKPS_MTSAMPLES     the corpus [../shared/data/mtsamples.csv]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$DPKPS_ROOT"
corpus=${DPKPS_MTSAMPLES:-$DPKPS_ROOT/../shared/data/mtsamples.csv}
[[ -f $corpus ]] || { echo "MTSamples not found at $corpus (set DPKPS_MTSAMPLES)" >&2; exit 2; }
classes=${DPKPS_GEN_CLASSES:-Cardiovascular / Pulmonary;Orthopedic;Gastroenterology;Neurology}
per_class=${DPKPS_GEN_PER_CLASS:-40}
cands=${DPKPS_GEN_CANDIDATES:-2}
holdout=${DPKPS_GEN_HOLDOUT:-0.2}
max_tokens=${DPKPS_GEN_MAX_TOKENS:-256}
reply_check=${DPKPS_GEN_REPLY_CHECK:-off}
timeout=${DPKPS_GEN_TIMEOUT:-900}
read -r eps_voc eps_kde eps_select <<<"${DPKPS_GEN_EPS:-1 10 1}"
seed=${DPKPS_GEN_SEED:-0}
prompt=${DPKPS_GEN_PROMPT:-name}
train_seeds=${DPKPS_GEN_TRAIN_SEEDS:-3}
stop=${DPKPS_GEN_STOP:-}
out=${DPKPS_GEN_OUT:-target/bench-generated/seed$seed}
[[ -n ${DPKPS_BIN:-} ]] || cargo build --release --locked --bin dpkps -q
bin=${DPKPS_BIN:-target/release/dpkps}
mkdir -p "$out"
t0=$SECONDS
ledger=$out/ledger.json
tr ';' '\n' <<<"$classes" | sed 's/^ *//; s/ *$//; /^$/d' >"$out/classes.txt"
ncls=$(wc -l <"$out/classes.txt")

# 1. The task and its split (public data): the chosen classes' notes, texts that occur more than
# once dropped (MTSamples files some notes under several specialties), every class cut to the
# smallest's size, then a stratified test share. train.csv is the private corpus of every DP
# stage and of the vote; test.jsonl (labelled) and unlabelled.jsonl (its texts) are the
# recipient's.
if [[ ! -f $out/split.json ]]; then
  python3 - "$corpus" "$out" "$holdout" "$seed" <<'EOF'
import csv, json, random, sys, collections
src, out, holdout, seed = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
classes = [c.strip() for c in open(f'{out}/classes.txt', encoding='utf-8') if c.strip()]
csv.field_size_limit(1 << 30)
rows = [(r['transcription'].strip(), r['medical_specialty'].strip()) for r in csv.DictReader(open(src, newline='', encoding='utf-8'))]
rows = [(t, l) for t, l in rows if l in classes and t]
seen = collections.Counter(t for t, _ in rows)
by = {c: sorted({t for t, l in rows if l == c and seen[t] == 1}) for c in classes}
for c, ts in by.items():
    if len(ts) < 10:
        sys.exit(f'{c!r}: {len(ts)} notes; need 10 or more')
n = min(len(ts) for ts in by.values())
rng = random.Random(f'split-{seed}')
train, test = [], []
for c in classes:
    ts = by[c][:]
    rng.shuffle(ts)
    ts = ts[:n]
    k = round(holdout * n)
    test += [(t, c) for t in ts[:k]]
    train += [(t, c) for t in ts[k:]]
rng.shuffle(train); rng.shuffle(test)
with open(f'{out}/train.csv', 'w', newline='', encoding='utf-8') as f:
    w = csv.writer(f); w.writerow(['transcription', 'medical_specialty']); w.writerows(train)
with open(f'{out}/real-all.jsonl', 'w', encoding='utf-8') as f:
    for t, l in train: f.write(json.dumps({'text': t, 'label': l}) + '\n')
with open(f'{out}/test.jsonl', 'w', encoding='utf-8') as f:
    for t, l in test: f.write(json.dumps({'text': t, 'label': l}) + '\n')
with open(f'{out}/unlabelled.jsonl', 'w', encoding='utf-8') as f:
    for t, _ in test: f.write(json.dumps({'text': t}) + '\n')
info = {'classes': classes, 'per_class': n, 'train_per_class': n - round(holdout * n), 'test_per_class': round(holdout * n),
        'dropped_duplicate_texts': sum(1 for t, v in seen.items() if v > 1), 'seed': seed}
json.dump(info, open(f'{out}/split.json', 'w'), indent=1)
print(f"split: {len(classes)} classes x {n} notes (duplicated texts dropped: {info['dropped_duplicate_texts']}); "
      f"{info['train_per_class']} train / {info['test_per_class']} test per class", file=sys.stderr)
EOF
fi

# 2. DP (ε_voc, ε_kde; class counts off: every class gets the same number) and noiseless
# keyphrase sequences from the training split, C × K per class; then the generation inputs:
# two DP halves (K per class each) and the noiseless K per class, classes interleaved, so
# that a job cut short leaves every class about as many documents.
if [[ ! -f $out/seq/nodp.jsonl ]]; then
  echo "==> DP and noiseless keyphrase sequences from the training split ($((cands * per_class)) per class)"
  "$bin" evaluate --corpus "$out/train.csv" --text-col transcription --label-col medical_specialty --vocabulary medical \
    --eps-voc "$eps_voc" --eps-kde "$eps_kde" --eps-counts off --holdout 0.001 --seeds 1 --seed "$seed" --sampler histogram \
    --no-dp --per-class $((cands * per_class)) --export-sequences "$out/sequences" --ledger "$ledger" \
    ${DPKPS_GEN_SEQ_FLAGS:-} --json "$out/sequences-eval.json" 2>"$out/sequences-eval.log" | grep -E '^(task|held out|ε_voc|dp-|nodp-)' || true
  mkdir -p "$out/seq"
  python3 - "$out" "$seed" "$per_class" "$cands" <<'EOF'
import json, sys, collections
out, seed, k, c = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
def read(arm):
    by = collections.defaultdict(list)
    for line in open(f'{out}/sequences/{arm}-histogram-seed{seed}.jsonl', encoding='utf-8'):
        if line.strip():
            by[json.loads(line)['label']].append(line)
    return by
def write(name, by, lo, hi):
    with open(f'{out}/seq/{name}.jsonl', 'w', encoding='utf-8') as f:
        for i in range(lo, hi):
            for label in sorted(by):
                if i < len(by[label]):
                    f.write(by[label][i])
dp, nodp = read('dp'), read('nodp')
for label in sorted(dp):
    print(f'  {label}: {len(dp[label])} DP, {len(nodp[label])} noiseless sequences', file=sys.stderr)
for h in range(c):
    write(f'dp{h}', dp, h * k, (h + 1) * k)
write('nodp', nodp, 0, k)
EOF
fi

# crates/core/src/llm/prompt.rs's DEFAULT_TEMPLATE, or the same without the class name.
template='Keyphrases (separated by semicolons): {keyphrases}.

Write a realistic {doc_type} ({label}) of about 150 words, in two or three paragraphs of full sentences. Use each keyphrase above naturally in the sentences, in any order; do not list, number or define them. Write only the {doc_type}.'
[[ $prompt == noname ]] && template=${template/ (\{label\})/}

# 3. Generation: the C DP halves and the noiseless set as C + 1 jobs at once against one
# server (it answers one request at a time, the others queue), so every set advances at the
# same pace.
jobs=()
for ((h = 0; h < cands; h++)); do jobs+=("dp$h"); done
jobs+=(nodp)
if [[ $stop == cut ]]; then
  endpoint=${DPKPS_LLM_ENDPOINT:-http://127.0.0.1:${DPKPS_LLM_PORT:-8011}/v1}
  model=${DPKPS_LLM_MODEL:-$(node -p "require('./tests/llm/model.json').id")}
  ! curl -s --max-time 5 "$endpoint/models" >/dev/null 2>&1 || { echo "something answers at $endpoint: stop it before a cut" >&2; exit 2; }
  for job in "${jobs[@]}"; do
    [[ -f $out/gen/$job/synthetic.jsonl ]] && continue
    # The prompts that reached the model: the audit's sending lines before the cut.
    echo "$(grep -c '"phase":"sending"' "$out/gen/$job/audit.jsonl" || true)" >"$out/gen/$job/sent-before-cut"
    check=()
    [[ $reply_check == off ]] && check=(--no-reply-check)
    "$bin" generate --sequences "$out/seq/$job.jsonl" --endpoint "$endpoint" --model "$model" \
      --unrecorded-sequences --concurrency 1 --max-tokens "$max_tokens" --timeout 5 --attempts 1 --template "$template" "${check[@]}" \
      --out-dir "$out/gen/$job" 2>>"$out/gen-$job.log" || true
    [[ -f $out/gen/$job/synthetic.jsonl ]] || { echo "$job: no synthetic.jsonl after the cut (see $out/gen-$job.log)" >&2; exit 1; }
  done
  date -u +%FT%TZ >>"$out/generation-cut"
elif [[ $stop != score-only ]]; then
  endpoint=${DPKPS_LLM_ENDPOINT:-}
  model=${DPKPS_LLM_MODEL:-}
  if [[ -z $endpoint ]]; then
    port=${DPKPS_LLM_PORT:-8011}
    scripts/local-llm.sh serve --port "$port" --threads 1 --max-queue 64 >>"$out/llm-server.log" 2>&1 &
    server=$!
    trap 'kill $server 2>/dev/null || true' EXIT
    endpoint=http://127.0.0.1:$port/v1
    model=$(node -p "require('./tests/llm/model.json').id")
    for _ in $(seq 1 300); do
      curl -sf "$endpoint/models" >/dev/null 2>&1 && break
      kill -0 "$server" 2>/dev/null || { cat "$out/llm-server.log" >&2; exit 1; }
      sleep 1
    done
  fi
  echo "==> generating with $model at $endpoint: ${jobs[*]} ($(cat "$out"/seq/*.jsonl | wc -l) documents)"
  g0=$SECONDS
  date -u +%FT%TZ >>"$out/generation-started"
  check=()
  [[ $reply_check == off ]] && check=(--no-reply-check)
  pids=()
  for job in "${jobs[@]}"; do
    "$bin" generate --sequences "$out/seq/$job.jsonl" --endpoint "$endpoint" --model "$model" \
      --unrecorded-sequences --concurrency 1 --max-tokens "$max_tokens" --timeout "$timeout" --template "$template" "${check[@]}" \
      --out-dir "$out/gen/$job" 2>>"$out/gen-$job.log" &
    pids+=($!)
  done
  failed=0
  for i in "${!jobs[@]}"; do
    wait "${pids[$i]}" || { failed=1; echo "${jobs[$i]}: generate exited non-zero (tail of $out/gen-${jobs[$i]}.log):" >&2; tail -3 "$out/gen-${jobs[$i]}.log" >&2; }
  done
  echo "$((SECONDS - g0))" >>"$out/generation-seconds"
  date -u +%FT%TZ >>"$out/generation-ended"
  [[ -n ${server:-} ]] && { kill "$server" 2>/dev/null || true; }
  ((failed == 0)) || echo "some documents failed: rerun to resume (or DPKPS_GEN_STOP=score-only to score what there is)" >&2
  [[ $stop == generate-only ]] && exit $failed
  ((failed == 0)) || exit 1
fi
sent=0
for job in "${jobs[@]}"; do
  n=$(cat "$out/gen/$job/sent-before-cut" 2>/dev/null || grep -c '"phase":"sending"' "$out/gen/$job/audit.jsonl" || true)
  echo "$job: $(wc -l <"$out/gen/$job/synthetic.jsonl") documents, $n prompts sent"
  sent=$((sent + n))
done
echo "prompts sent in all: $sent; generation wall time: $(paste -sd+ "$out/generation-seconds" 2>/dev/null | bc 2>/dev/null || echo '?') s"

# 4. The candidates (every DP half, K' per class each, K' ≤ K: what every class has in every
# job), the no-vote arm (K' drawn from them, seeded), the noiseless arm (K') and real-k (K'
# real training notes, seeded).
# DPKPS_GEN_SUBSET_DRAWS R [1]: also R − 1 more draws of the no-vote and real-k subsets
# (classifier seed 0 each), for the spread that the choice of subset alone makes.
draws=${DPKPS_GEN_SUBSET_DRAWS:-1}
python3 - "$out" "$seed" "$per_class" "$draws" "${jobs[@]}" <<'EOF'
import json, random, sys, collections
out, seed, k, draws, jobs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:]
def read(path):
    by = collections.defaultdict(list)
    for line in open(path, encoding='utf-8'):
        if line.strip():
            by[json.loads(line)['label']].append(line)
    return by
gen = {j: read(f'{out}/gen/{j}/synthetic.jsonl') for j in jobs}
classes = [c.strip() for c in open(f'{out}/classes.txt', encoding='utf-8') if c.strip()]
kk = min(min(len(g[c]) for c in classes) for g in gen.values())
kk = min(kk, k)
if kk < k:
    print(f'only {kk} documents per class in every set (asked {k}): the arms keep {kk} per class', file=sys.stderr)
dp = [j for j in jobs if j.startswith('dp')]
rng = random.Random(f'subsets-{seed}')
with open(f'{out}/candidates.jsonl', 'w', encoding='utf-8') as f, open(f'{out}/dp-novote.jsonl', 'w', encoding='utf-8') as g, \
     open(f'{out}/nodp.jsonl', 'w', encoding='utf-8') as h:
    for c in classes:
        pool = [line for j in dp for line in gen[j][c][:kk]]
        f.writelines(pool)
        g.writelines(rng.sample(pool, kk))
        h.writelines(gen['nodp'][c][:kk])
real = read(f'{out}/real-all.jsonl')
with open(f'{out}/real-k.jsonl', 'w', encoding='utf-8') as f:
    for c in classes:
        f.writelines(rng.sample(real[c], kk))
for r in range(1, draws):
    rr = random.Random(f'subsets-{seed}-{r}')
    with open(f'{out}/dp-novote-r{r}.jsonl', 'w', encoding='utf-8') as g, open(f'{out}/real-k-r{r}.jsonl', 'w', encoding='utf-8') as f:
        for c in classes:
            g.writelines(rr.sample([line for j in dp for line in gen[j][c][:kk]], kk))
            f.writelines(rr.sample(real[c], kk))
open(f'{out}/kept-per-class', 'w').write(f'{kk}\n')
EOF
kept=$(cat "$out/kept-per-class")

# 5. The vote: the training split's notes (never the test notes) vote for their nearest
# candidate of their class; ε_select recorded in this folder's ledger; the k best noisy counts
# kept. Drawn once per folder (delete vote/ to draw it again).
if [[ -f $out/vote/kept.jsonl && $(cat "$out/vote/candidates.sha256" 2>/dev/null) != "$(sha256sum <"$out/candidates.jsonl") $kept" ]]; then
  echo "the candidates or K changed since the vote in $out/vote: drawing it again (the old one moved to vote-$(date +%s))" >&2
  mv "$out/vote" "$out/vote-$(date +%s)"
fi
if [[ ! -f $out/vote/kept.jsonl ]]; then
  echo "==> the DP vote (ε_select = $eps_select) over $(wc -l <"$out/candidates.jsonl") candidates, keeping $kept per class"
  "$bin" select --corpus "$out/train.csv" --text-col transcription --label-col medical_specialty --classes-file "$out/classes.txt" \
    --generated "$out/candidates.jsonl" --unrecorded-candidates --eps-select "$eps_select" --keep "$kept" \
    --account bench-generated --budget 100 --ledger "$ledger" --out-dir "$out/vote" 2>"$out/vote.log"
  echo "$(sha256sum <"$out/candidates.jsonl") $kept" >"$out/vote/candidates.sha256"
fi
cp "$out/vote/kept.jsonl" "$out/dp-vote.jsonl"

# 6. Every arm's classifier, plain and with Deep CORAL, on DPKPS_GEN_TRAIN_SEEDS seeds, tested
# on the held-out notes.
arms=(real-k dp-novote dp-vote nodp real-all)
mkdir -p "$out/train"
echo "==> training (plain and Deep CORAL; $train_seeds seeds per arm); test: $(wc -l <"$out/test.jsonl") held-out notes"
extra=()
for ((r = 1; r < draws; r++)); do extra+=("dp-novote-r$r" "real-k-r$r"); done
for arm in "${arms[@]}" "${extra[@]}"; do
  n_seeds=$train_seeds
  [[ $arm == *-r[0-9]* ]] && n_seeds=1
  for ((s = 0; s < n_seeds; s++)); do
    dir=$out/train/$arm-s$s
    sum=$(sha256sum <"$out/$arm.jsonl")
    [[ -f $dir/report.json && $(cat "$dir/input.sha256" 2>/dev/null) == "$sum" ]] && continue
    mkdir -p "$dir"
    "$bin" train --synthetic "$out/$arm.jsonl" --unlabeled "$out/unlabelled.jsonl" --test "$out/test.jsonl" \
      --compare --seed "$s" --out-dir "$dir" >"$dir.log" 2>&1 || { tail -5 "$dir.log" >&2; exit 1; }
    echo "$sum" >"$dir/input.sha256"
  done
done
python3 - "$out" "$train_seeds" "$draws" "${arms[@]}" <<'EOF'
import json, sys, statistics as st
out, seeds, draws, arms = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
def scores(arm, seeds=seeds):
    got = {}
    for s in range(seeds):
        r = json.load(open(f'{out}/train/{arm}-s{s}/report.json'))
        for m in r['models']:
            key = 'coral' if m['coral_weight'] > 0 else 'plain'
            got.setdefault(key, []).append(m['test']['accuracy'])
    return got
res = {a: scores(a) for a in arms}
n = {a: sum(1 for l in open(f'{out}/{a}.jsonl') if l.strip()) for a in arms}
fmt = lambda v: f'{st.mean(v):.3f} ± {st.stdev(v) if len(v) > 1 else 0:.3f}'
print(f"{'arm':<12} {'documents':>9}  {'plain':>13}  {'Deep CORAL':>13}")
for a in arms:
    print(f"{a:<12} {n[a]:>9}  {fmt(res[a]['plain']):>13}  {fmt(res[a]['coral']):>13}")
m = {a: {k: st.mean(v) for k, v in res[a].items()} for a in arms}
for k in ('plain', 'coral'):
    v = m['dp-vote'][k]
    print(f"{k}: dp-vote / real-k = {v / m['real-k'][k]:.3f}; dp-vote / real-all = {v / m['real-all'][k]:.3f} "
          f"(goal ≥ 1 and ≥ 0.90); dp-vote − dp-novote = {v - m['dp-novote'][k]:+.3f} (goal ≥ +0.03)")
subsets = {}
if draws > 1:
    for a in ('dp-novote', 'real-k'):
        got = [scores(a, 1)] + [scores(f'{a}-r{r}', 1) for r in range(1, draws)]
        subsets[a] = {k: [g[k][0] for g in got] for k in ('plain', 'coral')}
        print(f"{a}, {draws} subset draws (classifier seed 0): plain {fmt(subsets[a]['plain'])}, Deep CORAL {fmt(subsets[a]['coral'])}")
forms = {}
for a in ('dp-novote', 'dp-vote', 'nodp'):
    lines = [json.loads(l) for l in open(f'{out}/{a}.jsonl') if l.strip()]
    f = {}
    for l in lines:
        f[l.get('form', '?')] = f.get(l.get('form', '?'), 0) + 1
    count = lambda u: len(u) if isinstance(u, list) else float(u)
    used = [count(l['keyphrases_used']) / max(1, len(l['keyphrases'])) for l in lines if l.get('keyphrases_used') is not None and l.get('keyphrases')]
    forms[a] = {'forms': f, 'keyphrases_used': st.mean(used) if used else None}
    print(f"{a}: forms {f}; keyphrases used {forms[a]['keyphrases_used']:.0%}" if used else f"{a}: forms {f}")
json.dump({'accuracy': res, 'documents': n, 'subset_draws': subsets, 'forms': forms}, open(f'{out}/table.json', 'w'), indent=1)
EOF
echo "train-on-synthetic benchmark took $((SECONDS - t0)) s (figures in $out/table.json)"
