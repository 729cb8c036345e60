#!/usr/bin/env python3
"""Regenerates www/vocab/medical_mesh2017.txt from the MeSH 2017 descriptor names.

    python3 scripts/vocab_medical.py SOURCE > www/vocab/medical_mesh2017.txt

SOURCE is the list of MeSH 2017 descriptor names, one per line (in this project's shared
data: mesh2017_descriptor_names.txt, from jzsh2000/pubmed data/mesh/2017MeshTree.txt).

Why: MeSH writes many descriptors inverted, head first ("Anesthesia, General",
"Arthritis, Rheumatoid"). Text normalisation strips the comma, so the term would only match
"anesthesia general", which notes almost never say, and in a prompt it reads as two
keyphrases. This script puts such names in natural order ("General Anesthesia"). It is a
fixed transform of the public list, independent of any corpus.

The rule (anything else is kept exactly as written):

  "Head, Modifier" becomes "Modifier Head" when
  1. the name has exactly one comma, and it is followed by one space: names with more commas
     are lists or chemical names ("Amino Acids, Peptides, and Proteins", "1,2-Dimethyl..."),
     and a comma without a space is a chemical locant;
  2. both parts start with a letter: "46, XX Disorders of Sex Development",
     "Aged, 80 and over", "History, 15th Century", "Iraq War, 2003-2011" are not inversions;
  3. the modifier has no connecting word (and, or, of, for, with, without, as, in, on, to,
     by, at, from, the, not, than): those mark a list ("Hand, Foot and Mouth Disease") or a
     trailing phrase ("Nevus, Sebaceous of Jadassohn", "Clinical Trials, Phase I as Topic")
     that would read wrongly in front.

Exact duplicate lines are dropped, the first kept (a natural-order name may equal a name
listed earlier); the app and the CLI also drop lines whose normalised form repeats.
Progress goes to stderr.
"""

import sys

CONNECTING = {"and", "or", "of", "for", "with", "without", "as", "in", "on", "to", "by", "at",
              "from", "the", "not", "than"}


def natural_order(name):
    """The name in natural order, or None when the rule does not apply."""
    if name.count(",") != 1:
        return None
    head, sep, modifier = name.partition(", ")
    if not sep or not head or not modifier or modifier.startswith(" "):
        return None
    if not (head[0].isalpha() and modifier[0].isalpha()):
        return None
    if any(w in CONNECTING for w in modifier.split()):
        return None
    return f"{modifier} {head}"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    seen = set()
    turned = dropped = 0
    with open(sys.argv[1], encoding="utf-8") as f:
        for line in f:
            name = line.strip()
            if not name:
                continue
            natural = natural_order(name)
            if natural is not None:
                turned += 1
                name = natural
            if name in seen:
                dropped += 1
                continue
            seen.add(name)
            print(name)
    print(f"{turned} names put in natural order, {dropped} duplicates dropped", file=sys.stderr)


if __name__ == "__main__":
    main()
