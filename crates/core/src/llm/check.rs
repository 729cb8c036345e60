//! Is a generated reply a document? The per-document check behind the runner's one retry.
//!
//! Small instruct models, asked to "write a note that mentions these keyphrases", often hand
//! the keyphrases back instead: as a bare list, as a glossary ("**Pain:** a feeling of …"), or
//! as a loop of one sentence. Such a reply teaches a downstream classifier little more than the
//! keyphrase sequence itself, and it is the product's output, so the runner checks every reply
//! and asks once more when it is not prose that uses the keyphrases ([`ReplyCheck::usable`]).
//!
//! The check reads only the reply, the keyphrases of its prompt (DP outputs) and the prompt's
//! few-shot examples (public); nothing private. `tests/llm/reply.mjs` is the same
//! classification for the benchmarks written in JavaScript; the two are kept in step.

use serde::{Deserialize, Serialize};

/// What a reply is: prose, or one of the ways a model fails the task. The first that holds,
/// in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplyForm {
    /// An apology or "I can't help" in under 40 words.
    Refusal,
    /// A third or more of its 4-word runs come from one few-shot example.
    Copy,
    /// The keyphrases given back: at most 3 other words, or half or more of its words are
    /// keyphrase words.
    List,
    /// A third or more of its sentences, or half or more of its 4-word runs, are repeats.
    Loop,
    /// At least 3 (and half) of the keyphrases each open a line as a heading or a
    /// "Keyphrase: definition" item: a note in name only.
    Glossary,
    /// Under 40 words, or under 2 sentences.
    Short,
    Prose,
}

impl ReplyForm {
    pub fn as_str(self) -> &'static str {
        match self {
            ReplyForm::Refusal => "refusal",
            ReplyForm::Copy => "copy",
            ReplyForm::List => "list",
            ReplyForm::Loop => "loop",
            ReplyForm::Glossary => "glossary",
            ReplyForm::Short => "short",
            ReplyForm::Prose => "prose",
        }
    }

    /// In plain words, for the audit log and the page.
    pub fn describe(self) -> &'static str {
        match self {
            ReplyForm::Refusal => "a refusal",
            ReplyForm::Copy => "a copy of a few-shot example",
            ReplyForm::List => "the keyphrases given back as a list",
            ReplyForm::Loop => "a loop of repeated sentences",
            ReplyForm::Glossary => "a glossary of the keyphrases",
            ReplyForm::Short => "too short to be a document",
            ReplyForm::Prose => "prose",
        }
    }

    pub const ALL: [ReplyForm; 7] = [
        ReplyForm::Prose,
        ReplyForm::List,
        ReplyForm::Glossary,
        ReplyForm::Loop,
        ReplyForm::Short,
        ReplyForm::Copy,
        ReplyForm::Refusal,
    ];
}

/// The check of one reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplyCheck {
    pub form: ReplyForm,
    /// How many of the prompt's distinct keyphrases the reply uses (whole words, any case,
    /// punctuation ignored, the last word singular or plural) …
    pub used: usize,
    /// … of how many.
    pub distinct: usize,
}

impl ReplyCheck {
    /// Prose that uses at least half of its keyphrases: kept without a retry.
    pub fn usable(&self) -> bool {
        self.form == ReplyForm::Prose && 2 * self.used >= self.distinct
    }

    /// Which of two replies to keep: prose before anything else, then more keyphrases used;
    /// the first on a tie.
    pub fn better_than(&self, other: &ReplyCheck) -> bool {
        let key = |c: &ReplyCheck| (c.form == ReplyForm::Prose, c.used);
        key(self) > key(other)
    }

    /// Why a reply was not kept as it was, in plain words.
    pub fn why_not_usable(&self) -> String {
        if self.form != ReplyForm::Prose {
            format!("the reply is {}", self.form.describe())
        } else {
            format!("the reply uses {} of its {} keyphrases", self.used, self.distinct)
        }
    }
}

/// Lower case; every run of characters other than letters and digits becomes one space.
fn norm(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut gap = false;
    for c in s.chars() {
        if c.is_alphanumeric() {
            if gap && !out.is_empty() {
                out.push(' ');
            }
            gap = false;
            out.extend(c.to_lowercase());
        } else {
            gap = true;
        }
    }
    out
}

fn four_grams(text: &str) -> Vec<String> {
    let n = norm(text);
    let w: Vec<&str> = n.split(' ').filter(|w| !w.is_empty()).collect();
    w.windows(4).map(|g| g.join(" ")).collect()
}

fn is_refusal(text: &str) -> bool {
    let t = text.to_lowercase().replace('\u{2019}', "'");
    ["i'm sorry", "i am sorry", "as an ai", "i can't assist", "i cannot assist", "i can't help", "i cannot help"]
        .iter()
        .any(|p| t.contains(p))
        || ["provide", "write"].iter().any(|v| t.contains(&format!("i can't {v}")) || t.contains(&format!("i cannot {v}")))
}

/// Checks `text`, written for `keyphrases`, against the prompt's few-shot `examples`.
pub fn check_reply(text: &str, keyphrases: &[String], examples: &[&str]) -> ReplyCheck {
    let mut keys: Vec<String> = Vec::new();
    for k in keyphrases.iter().map(|k| norm(k)).filter(|k| !k.is_empty()) {
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    // Longest first: a keyphrase inside a longer one is taken out after it.
    keys.sort_by_key(|k| std::cmp::Reverse(k.len()));
    let flat = format!(" {} ", norm(text));
    // A keyphrase counts as used in the singular or plural ("Headache", "headaches").
    let forms = |k: &str| [format!(" {k} "), format!(" {k}s "), format!(" {k}es ")];
    let used = keys.iter().filter(|k| forms(k).iter().any(|f| flat.contains(f.as_str()))).count();
    let words = flat.split(' ').filter(|w| !w.is_empty()).count();
    let mut rest = flat.clone();
    for k in &keys {
        for f in forms(k) {
            rest = rest.replace(&f, "  ");
        }
    }
    let rest_words: Vec<&str> = rest.split(' ').filter(|w| !w.is_empty()).collect();
    let other = rest_words
        .iter()
        .filter(|w| !w.chars().all(|c| c.is_ascii_digit()) && !["and", "keyphrases", "keyphrase"].contains(w))
        .count();
    let density = if words == 0 { 0.0 } else { (words - rest_words.len()) as f64 / words as f64 };
    let sentences: Vec<String> = split_sentences(text).map(norm).filter(|s| s.split(' ').count() >= 4).collect();
    let distinct_sentences = sentences.iter().collect::<std::collections::HashSet<_>>().len();
    let sentence_repeats = sentences.len() - distinct_sentences;
    let grams = four_grams(text);
    let gram_repeats = grams.len() - grams.iter().collect::<std::collections::HashSet<_>>().len();
    let copied = examples
        .iter()
        .map(|e| {
            let ex: std::collections::HashSet<String> = four_grams(e).into_iter().collect();
            if grams.is_empty() {
                0.0
            } else {
                grams.iter().filter(|g| ex.contains(*g)).count() as f64 / grams.len() as f64
            }
        })
        .fold(0.0, f64::max);
    let headed = headed_keyphrases(text, &keys);
    let form = if words < 40 && is_refusal(text) {
        ReplyForm::Refusal
    } else if copied >= 1.0 / 3.0 {
        ReplyForm::Copy
    } else if other <= 3 || density >= 0.5 {
        ReplyForm::List
    } else if (sentences.len() >= 3 && 3 * sentence_repeats >= sentences.len()) || (grams.len() >= 20 && 2 * gram_repeats >= grams.len()) {
        ReplyForm::Loop
    } else if headed >= 3 && 2 * headed >= keys.len() {
        ReplyForm::Glossary
    } else if words < 40 || sentences.len() < 2 {
        ReplyForm::Short
    } else {
        ReplyForm::Prose
    };
    ReplyCheck { form, used, distinct: keys.len() }
}

/// Sentences: split after `.`, `!` or `?` followed by white space, and at line breaks.
fn split_sentences(text: &str) -> impl Iterator<Item = &str> {
    let mut cuts = Vec::new();
    let mut prev: Option<char> = None;
    for (i, c) in text.char_indices() {
        if c == '\n' || (c.is_whitespace() && matches!(prev, Some('.' | '!' | '?'))) {
            cuts.push(i);
        }
        prev = Some(c);
    }
    let mut start = 0;
    cuts.into_iter().chain(std::iter::once(text.len())).map(move |end| {
        let s = &text[start..end];
        start = end;
        s
    })
}

/// How many distinct keyphrases open a line as a heading or a "Keyphrase: …" item
/// ("**Pain:** …", "## Pain", "- Pain: …").
fn headed_keyphrases(text: &str, keys: &[String]) -> usize {
    let mut headed: Vec<&str> = Vec::new();
    for line in text.lines() {
        let bare = line.trim_start_matches(|c: char| c.is_whitespace() || "-*•·#>.)".contains(c) || c.is_ascii_digit());
        let head = norm(bare.split(':').next().unwrap_or(""));
        let found = keys.iter().find(|k| head == **k || (line.contains(':') && head.starts_with(k.as_str()) && head.len() <= k.len() + 12));
        if let Some(k) = found {
            if !headed.contains(&k.as_str()) {
                headed.push(k);
            }
        }
    }
    headed.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kp(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    const PROSE: &str = "The patient, a 54-year-old man, came to the clinic with chest pain that began two days ago \
        while climbing stairs. He also reported shortness of breath at night and swelling of both ankles. \
        An electrocardiogram showed no acute changes, and his troponin was normal. We discussed the findings \
        with him and his wife, started a diuretic, and arranged an echocardiogram for next week.";

    #[test]
    fn prose_that_uses_the_keyphrases_is_usable() {
        let keys = kp(&["Chest Pain", "Shortness of Breath", "Echocardiograms", "Troponin", "Diuretic"]);
        let c = check_reply(PROSE, &keys, &[]);
        assert_eq!(c.form, ReplyForm::Prose);
        // "Echocardiograms" is not in the text in that form (the text has the singular): the
        // plural rule reads the text's form, not the keyphrase's.
        assert_eq!((c.used, c.distinct), (4, 5));
        assert!(c.usable());
        let few = check_reply(PROSE, &kp(&["Chest Pain", "Asthma", "Gout", "Rash"]), &[]);
        assert_eq!((few.form, few.used), (ReplyForm::Prose, 1));
        assert!(!few.usable() && few.why_not_usable().contains("uses 1 of its 4"), "{}", few.why_not_usable());
    }

    #[test]
    fn the_ways_a_model_fails_are_told_apart() {
        let keys = kp(&["Chest Pain", "Dyspnea", "Edema", "Troponin", "Aspirin"]);
        let list = "Chest Pain; Dyspnea; Edema; Troponin; Aspirin.";
        assert_eq!(check_reply(list, &keys, &[]).form, ReplyForm::List);
        let numbered = "1. Chest pain\n2. Dyspnea\n3. Edema\n4. Troponin\n5. Aspirin";
        assert_eq!(check_reply(numbered, &keys, &[]).form, ReplyForm::List);
        let glossary = "**Chest Pain:** a pain felt in the chest, often from the heart or the lungs or the wall.\n\
            **Dyspnea:** a feeling of not getting enough air into the lungs during the day.\n\
            **Edema:** swelling caused by fluid trapped in the tissues of the body, often the legs.\n\
            **Troponin:** a protein released into the blood when the heart muscle is damaged.";
        assert_eq!(check_reply(glossary, &keys, &[]).form, ReplyForm::Glossary);
        let sentence = "The patient reports chest pain and mild dyspnea on exertion today. ";
        let looped = sentence.repeat(6);
        assert_eq!(check_reply(&looped, &keys, &[]).form, ReplyForm::Loop);
        let short = "Chest pain and dyspnea were noted in the patient, with edema and a raised troponin.";
        assert_eq!(check_reply(short, &keys, &[]).form, ReplyForm::Short);
        assert_eq!(check_reply("I'm sorry, but I can't assist with that request.", &keys, &[]).form, ReplyForm::Refusal);
        let c = check_reply(PROSE, &keys, &[PROSE]);
        assert_eq!(c.form, ReplyForm::Copy);
        assert!(!c.usable() && c.why_not_usable() == "the reply is a copy of a few-shot example");
    }

    /// The cases of `tests/llm/unit.test.mjs` for `tests/llm/reply.mjs`: the two checks agree.
    #[test]
    fn the_cases_of_reply_mjs() {
        let k = kp(&["Heart Failure", "Edema", "Chest Pain", "Atrial Fibrillation"]);
        let prose = "Mr. Harlan Voss, a 67-year-old retired machinist, came to the clinic with two weeks of chest pain on exertion and ankle edema. \
            He has a history of heart failure with reduced ejection fraction. On examination his pulse was irregular, and the ECG confirmed atrial fibrillation. \
            We increased his diuretic, started anticoagulation after discussing the risks, and arranged an echocardiogram and a review in one week.";
        assert_eq!(check_reply(prose, &k, &[]), ReplyCheck { form: ReplyForm::Prose, used: 4, distinct: 4 });
        let form = |text: &str| check_reply(text, &k, &[]).form;
        assert_eq!(form("Heart Failure; Edema; Chest Pain; Atrial Fibrillation."), ReplyForm::List);
        assert_eq!(form("Cardiology:\n- Heart Failure\n- Edema\n- Chest Pain\n- Atrial Fibrillation"), ReplyForm::List);
        assert_eq!(
            form("Heart failure; edema; chest pain; atrial fibrillation; edema; chest pain; edema; chest pain; edema; chest pain; edema; heart failure"),
            ReplyForm::List
        );
        let glossary = "**Heart Failure:** The heart cannot pump enough blood for the body.\n\n**Edema:** Swelling caused by fluid in the tissues of the legs.\n\n\
            **Chest Pain:** Discomfort in the chest that may come from the heart.\n\n**Atrial Fibrillation:** An irregular rhythm of the upper chambers of the heart.";
        assert_eq!(form(glossary), ReplyForm::Glossary);
        let looped = format!("The patient was seen today for review of his symptoms. {}", "He reports chest pain and edema when walking. ".repeat(4));
        assert_eq!(form(&looped), ReplyForm::Loop);
        assert_eq!(
            form("The patient, a retired teacher, has heart failure and edema; chest pain and atrial fibrillation are stable today."),
            ReplyForm::Short
        );
        assert_eq!(form("I'm sorry, I can't assist with that request."), ReplyForm::Refusal);
        let example = "Maria Feldt, a 58-year-old bookkeeper, came in with five days of productive cough and fever. A chest X-ray showed pneumonia, and we started antibiotics.";
        assert_eq!(check_reply(&format!("{example} She also has chest pain."), &k, &[example]).form, ReplyForm::Copy);
        assert_eq!(check_reply(prose, &k, &[example]).form, ReplyForm::Prose);
        assert_eq!(check_reply(&prose.replacen("atrial fibrillation", "an arrhythmia", 1), &k, &[]).used, 3);
    }

    #[test]
    fn which_reply_to_keep() {
        let c = |form, used| ReplyCheck { form, used, distinct: 6 };
        assert!(c(ReplyForm::Prose, 1).better_than(&c(ReplyForm::List, 6)));
        assert!(c(ReplyForm::Prose, 4).better_than(&c(ReplyForm::Prose, 3)));
        assert!(!c(ReplyForm::Prose, 3).better_than(&c(ReplyForm::Prose, 3)), "the first is kept on a tie");
        assert!(c(ReplyForm::Glossary, 5).better_than(&c(ReplyForm::List, 2)));
    }

    #[test]
    fn words_are_compared_without_case_or_punctuation() {
        assert_eq!(norm("  Heart-Failure,  NYHA (III)é "), "heart failure nyha iii é");
        let keys = kp(&["Heart-Failure", "héart"]);
        let c = check_reply("Heart failure. HÉART!", &keys, &[]);
        assert_eq!(c.used, 2);
        assert_eq!(split_sentences("A b. C d!\nE? f").collect::<Vec<_>>(), ["A b.", " C d!", "\nE?", " f"]);
    }
}
