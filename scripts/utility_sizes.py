#!/usr/bin/env python3
"""Issue 39: DP / non-private accuracy by corpus size, on seeded MTSamples subsets.

Subsets (seeded, written to target/utility-sizes/): for each size K in --sizes,
  top5-K: each of the 5 largest specialties cut to min(K, what it has) notes;
  two-K:  Cardiovascular / Pulmonary cut to min(K, 371) notes and K notes of the other
          specialties (relabelled by `--one-vs-rest`, not balanced).
Then one `dpkps evaluate` per cell (--sampler, the histogram by default; --no-dp, --seeds S), one
at a time, and a table, one line a cell: task, `nonprivate` accuracy, each DP and noiseless arm over
`nonprivate` (embedding view, accuracy; mean ± half the range over the seeds, then the sd), |Ṽ| and its
noise share, class-distinctive terms in Ṽ / in the exact top-N / in all, and per arm the mean
over classes of distinct sequences (as sets) per sequence, distinct terms used, and the share
of keyphrase slots that are terms distinctive for the class (crates/core/src/eval/signal_loss.rs).

  scripts/utility_sizes.py [--sizes 100,250,500,1000] [--tasks top5,two] [--seeds 3]
                           [--eps 1,10] [--sampler histogram|all|…] [--words K]
                           [-- any further evaluate option]
--words K cuts every note to its first K words (subsets and reports named …-K-wK…), to imitate
a corpus of short documents.
The figures are NOT differentially private (computed on the corpus; it is public here).
"""
import argparse, collections, csv, json, os, random, statistics, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TWO = "Cardiovascular / Pulmonary"


def load(path):
    csv.field_size_limit(1 << 30)
    with open(path, newline="", encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r["transcription"].strip()]
    for r in rows:
        r["medical_specialty"] = r["medical_specialty"].strip()
    return rows


def subset(rows, task, k, seed):
    rng = random.Random(f"{task}-{k}-{seed}")
    by = {}
    for r in rows:
        by.setdefault(r["medical_specialty"], []).append(r)
    if task == "top5":
        top = sorted(by, key=lambda c: (-len(by[c]), c))[:5]
        out = [r for c in top for r in rng.sample(by[c], min(k, len(by[c])))]
    else:
        rest = [r for c in by if c != TWO for r in by[c]]
        out = rng.sample(by[TWO], min(k, len(by[TWO]))) + rng.sample(rest, k)
    rng.shuffle(out)
    return out


def shorten(rows, words):
    """Each note cut to its first `words` words (0: whole); the same notes as uncut."""
    if words <= 0:
        return rows
    return [dict(r, transcription=" ".join(r["transcription"].split()[:words])) for r in rows]


def write(rows, path):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=["transcription", "medical_specialty"], extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def spread(xs):
    """Mean, half the range, and the sample sd (None for a single value)."""
    sd = statistics.stdev(xs) if len(xs) > 1 else None
    return statistics.mean(xs), (max(xs) - min(xs)) / 2, sd


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100,250,500,1000")
    ap.add_argument("--tasks", default="top5,two")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--eps", default="1,10")
    ap.add_argument("--sampler", default="histogram", help="`dpkps evaluate --sampler`: one sampler, or all")
    ap.add_argument("--vocab", default="medical", help="the public list: medical (MeSH, 28k), english (GloVe, 340k) or a list file")
    ap.add_argument("--reuse", action="store_true", help="summarise a cell's existing report instead of running it again")
    ap.add_argument("--name", default="base", help="a name for this grid's reports")
    ap.add_argument("--words", type=int, default=0,
                    help="cut every note to its first K words (a short-document corpus: news items, encyclopaedia abstracts)")
    ap.add_argument("--corpus", default=os.environ.get("DPKPS_MTSAMPLES", os.path.join(ROOT, "..", "shared", "data", "mtsamples.csv")))
    ap.add_argument("rest", nargs="*", help="further `dpkps evaluate` options (after --)")
    a = ap.parse_args()
    binary = os.environ.get("DPKPS_BIN", os.path.join(ROOT, "target", "release", "dpkps"))
    out = os.path.join(ROOT, "target", "utility-sizes")
    os.makedirs(out, exist_ok=True)
    rows = load(a.corpus)
    ev, ek = a.eps.split(",")
    # A list file is named by its file name in the reports' names and lines.
    tag = os.path.splitext(os.path.basename(a.vocab))[0] if os.sep in a.vocab else a.vocab
    lines = []
    for task in a.tasks.split(","):
        for k in [int(x) for x in a.sizes.split(",")]:
            cut = f"-w{a.words}" if a.words > 0 else ""
            sub = os.path.join(out, f"{task}-{k}{cut}.csv")
            if not os.path.exists(sub):
                write(shorten(subset(rows, task, k, 0), a.words), sub)
            # The sampler is in the name unless it is the histogram (the earlier reports' names).
            sampler = "" if a.sampler == "histogram" else f"-{a.sampler.replace(',', '+')}"
            rep = os.path.join(out, f"{a.name}{sampler}-{tag}-{task}-{k}{cut}-{ev}-{ek}.json")
            cmd = [binary, "evaluate", "--corpus", sub, "--text-col", "transcription", "--label-col", "medical_specialty",
                   "--vocabulary", a.vocab, "--eps-voc", ev, "--eps-kde", ek, "--seeds", str(a.seeds), "--no-dp",
                   "--sampler", a.sampler, "--json", rep, "--ledger", os.path.join(out, "ledger.json")]
            cmd += ["--one-vs-rest", TWO, "--no-balance"] if task == "two" else ["--top-classes", "5"]
            cmd += a.rest
            t0 = time.time()
            if a.reuse and os.path.exists(rep):
                line = summarise(rep, f"{tag} {task}-{k}{cut}", 0)
                print(line, flush=True)
                lines.append(line)
                continue
            r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if r.returncode != 0:
                print(f"{task}-{k}: failed: {r.stderr[-2000:]}", file=sys.stderr)
                continue
            line = summarise(rep, f"{tag} {task}-{k}{cut}", time.time() - t0)
            print(line, flush=True)
            lines.append(line)
    print("\n".join(lines))


def summarise(rep, name, secs):
    with open(rep) as f:
        j = json.load(f)
    # Per arm (embedding view): each run's accuracy, keyed by seed and its place among the runs
    # of that seed (`--same-split`: every run splits with seed 0, so `nonprivate` is the same in
    # each), and every run's per-class sequence figures.
    runs, per_class = {}, {}
    for arm in j["arms"]:
        if arm.get("view", "embedding") != "embedding":
            continue
        place = collections.Counter()
        for r in arm["runs"]:
            runs.setdefault(arm["arm"], {})[(r["seed"], place[r["seed"]])] = r["accuracy"]
            place[r["seed"]] += 1
            per_class.setdefault(arm["arm"], []).extend((r.get("sequences") or {}).get("per_class", []))
    # A run with nothing to train (every class noise-dominated) has no result; an arm may have
    # none, and then appears only there.
    unscored = collections.Counter(e["arm"] for e in j.get("nothing_to_train", []))
    base = runs["nonprivate"]
    cells = [name, f"{statistics.mean(base.values()):.3f}"]
    arms = [x for x in dict.fromkeys([*runs, *unscored]) if x.startswith(("dp-", "nodp-"))]
    for arm in arms:
        note = f" ({unscored[arm]} run(s) with nothing to train)" if unscored[arm] else ""
        if arm not in runs:
            cells.append(f"{arm}: no run scored{note}")
            continue
        m, s, sd = spread([x / base[key] for key, x in runs[arm].items()])
        sd = f", sd {sd:.3f}" if sd is not None else ""
        cells.append(f"{arm} {m:.2f} ± {s:.2f}{sd}{note}")
    for e in j.get("refused", []):
        cells.append(f"{e['arm']} refused: {e['reason']}")
    d = j.get("task", {}).get("vocabulary_diagnosis")
    if d:
        cells.append(f"|Ṽ| {d['vocabulary']:.0f}, noise {d['noise_share']:.2f}")
        cells.append(f"{d['distinctive_in_vocab']:.0f} / {d['distinctive_in_exact']:.0f} / {d['distinctive']:.0f}")
    for arm in arms:
        per = per_class.get(arm)
        if per:
            sets = statistics.mean(c["distinct_sets"] / max(c["sequences"], 1) for c in per)
            terms = statistics.mean(c["distinct_terms"] for c in per)
            dist = statistics.mean(c["distinctive_share"] for c in per)
            cells.append(f"{arm}: {sets:.2f} sets, {terms:.0f} terms, {dist:.2f} distinctive")
    cells.append(f"{secs:.0f} s")
    return " | ".join(cells)


if __name__ == "__main__":
    main()
