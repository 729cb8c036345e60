#!/usr/bin/env bash
# Train on synthetic, test on real (DP-KPS, Table 2): on MTSamples, one classifier (softmax over
# the bundled sentence model's embeddings of whole texts) trained on
#   (a) real training documents, as many per class as (b) has;
#   (b) documents generated from DP keyphrase sequences;
#   (c) documents generated from noiseless sequences (the same pipeline, noise off: NOT DP);
# (b) and (c) each with and without the class name in the prompt; all tested on the same
# held-out real documents. Prints the table, the ratios (b)/(a), and the prompts sent.
# Figures only: nothing passes or fails on them, and they are NOT differentially private
# (computed on the corpus; it is public here).
#
#   scripts/bench.sh --generated         (or this script directly)
#
# Environment (defaults in brackets):
#   DPKPS_GEN_CLASSES   ;-separated MTSamples specialties
#                       ["Cardiovascular / Pulmonary;Orthopedic;Gastroenterology"]
#   DPKPS_GEN_PER_CLASS sequences (so documents) per class and arm [10]
#   DPKPS_GEN_MAX_TOKENS tokens per document at most [320: a 150-word note is about 200]
#   DPKPS_GEN_TIMEOUT   seconds before a request is abandoned and retried [600: one thread
#                       beside builds can fall to a few tokens per second]
#   DPKPS_GEN_EPS       ε_voc and ε_kde ["1 10"]
#   DPKPS_GEN_SEED      the split's (and the DP draws') seed [0]
#   DPKPS_GEN_OUT       output folder [target/bench-generated]; a rerun resumes its jobs
#   DPKPS_LLM_ENDPOINT, DPKPS_LLM_MODEL  another OpenAI-compatible endpoint (its key, if any,
#                       in DPKPS_LLM_KEY); by default the local model of scripts/local-llm.sh,
#                       started here on port 8011 with one thread
#   DPKPS_BIN           a built dpkps [target/release/dpkps, built here]
#   DPKPS_MTSAMPLES     the corpus [../shared/data/mtsamples.csv]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$DPKPS_ROOT"
corpus=${DPKPS_MTSAMPLES:-$DPKPS_ROOT/../shared/data/mtsamples.csv}
[[ -f $corpus ]] || { echo "MTSamples not found at $corpus (set DPKPS_MTSAMPLES)" >&2; exit 2; }
classes=${DPKPS_GEN_CLASSES:-Cardiovascular / Pulmonary;Orthopedic;Gastroenterology}
per_class=${DPKPS_GEN_PER_CLASS:-10}
max_tokens=${DPKPS_GEN_MAX_TOKENS:-320}
timeout=${DPKPS_GEN_TIMEOUT:-600}
read -r eps_voc eps_kde <<<"${DPKPS_GEN_EPS:-1 10}"
seed=${DPKPS_GEN_SEED:-0}
out=${DPKPS_GEN_OUT:-target/bench-generated}
[[ -n ${DPKPS_BIN:-} ]] || cargo build --release --locked --bin dpkps -q
bin=${DPKPS_BIN:-target/release/dpkps}
mkdir -p "$out"
t0=$SECONDS

# The task's corpus: the rows of the chosen classes (public data), balanced by the evaluation.
python3 - "$corpus" "$out/corpus.csv" "$classes" <<'EOF'
import csv, sys
src, dst, classes = sys.argv[1], sys.argv[2], [c.strip() for c in sys.argv[3].split(';') if c.strip()]
csv.field_size_limit(1 << 30)
with open(src, newline='', encoding='utf-8') as f, open(dst, 'w', newline='', encoding='utf-8') as g:
    r = csv.DictReader(f)
    w = csv.DictWriter(g, fieldnames=['transcription', 'medical_specialty'])
    w.writeheader()
    n = {c: 0 for c in classes}
    for row in r:
        label = row['medical_specialty'].strip()
        if label in n and row['transcription'].strip():
            w.writerow({'transcription': row['transcription'], 'medical_specialty': label})
            n[label] += 1
missing = [c for c, k in n.items() if k == 0]
if missing:
    sys.exit(f'no MTSamples note has the specialty {missing}')
print('task corpus:', ', '.join(f'{c}: {k}' for c, k in n.items()), file=sys.stderr)
EOF
k=$(awk -F';' '{print NF}' <<<"$classes")
task=(--corpus "$out/corpus.csv" --text-col transcription --label-col medical_specialty --vocabulary medical
  --eps-voc "$eps_voc" --eps-kde "$eps_kde" --top-classes "$k" --balance --seeds 1 --seed "$seed" --sampler histogram)

echo "==> DP and noiseless keyphrase sequences from the training split ($per_class per class)"
"$bin" evaluate "${task[@]}" --no-dp --per-class "$per_class" --export-sequences "$out/sequences" --json "$out/sequences-eval.json" 2>"$out/sequences-eval.log" |
  grep -E '^(task|held out|ε_voc|arm|dp-|nodp-)' || true

endpoint=${DPKPS_LLM_ENDPOINT:-}
model=${DPKPS_LLM_MODEL:-}
if [[ -z $endpoint ]]; then
  port=8011
  scripts/local-llm.sh serve --port "$port" --threads 1 >"$out/llm-server.log" 2>&1 &
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
echo "==> generating with $model at $endpoint"

# crates/core/src/llm/prompt.rs's DEFAULT_TEMPLATE, and the same without the class name (the paper's prompt
# leaves it out).
template_name='Keyphrases (separated by semicolons): {keyphrases}.

Write a realistic {doc_type} ({label}) of about 150 words, in two or three paragraphs of full sentences. Use each keyphrase above naturally in the sentences, in any order; do not list, number or define them. Write only the {doc_type}.'
template_noname=${template_name/ (\{label\})/}
sets=()
for arm in dp nodp; do
  for name in name noname; do
    set_dir=$out/$arm-$name
    template=$template_name
    [[ $name == noname ]] && template=$template_noname
    g0=$SECONDS
    # MTSamples is a public corpus: its evaluate-exported sequences (noiseless, or DP with no
    # ε recorded) may go to the local server, which --unrecorded-sequences acknowledges.
    "$bin" generate --sequences "$out/sequences/$arm-histogram-seed$seed.jsonl" --endpoint "$endpoint" --model "$model" \
      --unrecorded-sequences --concurrency 1 --max-tokens "$max_tokens" --timeout "$timeout" --template "$template" --out-dir "$set_dir" 2>"$set_dir.log" || { tail -5 "$set_dir.log" >&2; exit 1; }
    sent=$(grep -c '"phase":"sending"' "$set_dir/audit.jsonl" || true)
    echo "$arm-$name: $(tail -1 "$set_dir.log" | sed 's/ to .*//'); $sent prompts sent; $((SECONDS - g0)) s"
    sets+=(--synthetic "$arm-$name=$set_dir/synthetic.jsonl")
  done
done

echo "==> train on each set, test on the held-out real documents"
"$bin" evaluate "${task[@]}" --per-class "$per_class" "${sets[@]}" --json "$out/report.json" 2>"$out/report.log" |
  grep -E '^(task|held out|arm|synthetic|real-text|majority)' || true
echo "train-on-synthetic benchmark took $((SECONDS - t0)) s (figures in $out/report.json)"
