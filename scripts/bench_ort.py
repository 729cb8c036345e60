#!/usr/bin/env python3
"""Reference figures for the embedding benchmark: the bundled model under onnxruntime.

Issue 5 sets the wasm target relative to onnxruntime on one thread (wasm >= 0.7x), so that
yardstick is measured on the same machine, on the same terms, batched the same way as
`dpkps bench embed` and the worker benchmark: the first N MeSH terms of the bundled medical
vocabulary, sorted by token count, batch 1 and 32, padding to the longest in a batch,
truncation at 256 tokens. Not part of the product or of the tests; it needs
`pip install onnxruntime tokenizers numpy` (scripts/bench.sh --ort sets up a venv).

    python3 scripts/bench_ort.py [N_TERMS [THREADS]]

THREADS (default 1) sets onnxruntime's intra-op threads, to compare with the app's worker plus
its helper workers on the same cores.
"""
import pathlib
import sys
import time

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

ROOT = pathlib.Path(__file__).resolve().parent.parent
N = int(sys.argv[1]) if len(sys.argv) > 1 else 512
THREADS = int(sys.argv[2]) if len(sys.argv) > 2 else 1


def mesh_terms(n):
    # As PublicVocabulary::parse: trimmed lines, no blanks or # comments, first spelling kept.
    seen, out = set(), []
    for line in (ROOT / "www/vocab/medical_mesh2017.txt").read_text(encoding="utf-8").splitlines():
        t = line.strip()
        key = " ".join("".join(c if c.isalnum() else " " for c in t.lower()).split())
        if not t or t.startswith("#") or not key or key in seen:
            continue
        seen.add(key)
        out.append(t)
        if len(out) == n:
            break
    return out


def main():
    tok = Tokenizer.from_file(str(ROOT / "models/tokenizer.json"))
    tok.enable_truncation(256)
    tok.enable_padding()
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = THREADS
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    t0 = time.perf_counter()
    sess = ort.InferenceSession(str(ROOT / "models/all-MiniLM-L6-v2.int8w.onnx"), opts, providers=["CPUExecutionProvider"])
    load = time.perf_counter() - t0
    names = {i.name for i in sess.get_inputs()}
    terms = mesh_terms(N)
    terms.sort(key=lambda t: len(tok.encode(t).ids))
    threads = "one thread" if THREADS == 1 else f"{THREADS} threads"
    print(f"reference: onnxruntime {ort.__version__}, {threads}, {len(terms)} MeSH terms, sorted by token count")
    print(f"  model load + optimise: {load:.2f} s")
    tokens = sum(len(tok.encode(t).ids) for t in terms)
    print(f"  tokens per term: {tokens / len(terms):.1f} on average (with [CLS] and [SEP])")
    for batch in (1, 32):
        t = time.perf_counter()
        for i in range(0, len(terms), batch):
            enc = tok.encode_batch(terms[i : i + batch])
            ids = np.array([e.ids for e in enc], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": np.array([e.attention_mask for e in enc], dtype=np.int64)}
            if "token_type_ids" in names:
                feeds["token_type_ids"] = np.zeros_like(ids)
            sess.run(None, feeds)
        secs = time.perf_counter() - t
        print(f"  batch {batch:>2}: {len(terms) / secs:>6.1f} terms/s ({secs:.2f} s)")


if __name__ == "__main__":
    main()
