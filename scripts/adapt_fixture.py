#!/usr/bin/env python3
"""Writes tests/fixtures/mtsamples_shift.csv for tests/it/adapt.rs: a small, balanced extract of
MTSamples (CC0; ../shared/data/mtsamples.csv or $DPKPS_MTSAMPLES), PER_CLASS notes of each of
CLASSES, each cut to its first MAX_CHARS characters (at a word boundary). Deterministic: the
notes are taken in file order after sorting by note_id."""
import csv, os, sys

CLASSES = ["Cardiovascular / Pulmonary", "Orthopedic", "Gastroenterology", "Neurology"]
PER_CLASS = 48
MAX_CHARS = 1800

src = os.environ.get("DPKPS_MTSAMPLES", os.path.join(os.path.dirname(__file__), "../../shared/data/mtsamples.csv"))
out = os.path.join(os.path.dirname(__file__), "../tests/fixtures/mtsamples_shift.csv")
rows = sorted(csv.DictReader(open(src, newline="", encoding="utf-8")), key=lambda r: int(r["note_id"]))
picked = {c: [] for c in CLASSES}
for r in rows:
    c, t = r["medical_specialty"].strip(), r["transcription"].strip()
    if c in picked and len(picked[c]) < PER_CLASS and len(t) > 400:
        if len(t) > MAX_CHARS:
            t = t[:MAX_CHARS].rsplit(" ", 1)[0]
        picked[c].append(t)
with open(out, "w", newline="", encoding="utf-8") as f:
    w = csv.writer(f)
    w.writerow(["text", "label"])
    # Interleaved by class, so that any prefix is balanced.
    for k in range(PER_CLASS):
        for c in CLASSES:
            w.writerow([picked[c][k], c])
print(f"wrote {out}: {PER_CLASS * len(CLASSES)} notes", file=sys.stderr)
