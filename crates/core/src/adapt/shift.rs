//! A domain shift made from a corpus, to test and measure the adaptation: the same
//! notes written as another site's records system would export them. Each note is
//!
//! - cut into its sections (MTSamples-style "HEADING:" runs) and written in reverse order, so
//!   the part an embedding model reads first (it reads 256 tokens) is another part of the note;
//! - written with common clinical abbreviations expanded ("HTN" → "hypertension");
//! - upper-cased;
//! - framed by a long boilerplate header and footer that every exported record carries.
//!
//! The labels are untouched: a classifier trained on notes as they are should still know a
//! cardiology note from a neurology one, and what it loses is the shift's cost. Deterministic
//! (no randomness): the same note always gives the same rewrite.

/// Every record of the shifted site starts with this.
pub const HEADER: &str = "REGIONAL HEALTH NETWORK - ELECTRONIC HEALTH RECORD EXPORT. CONFIDENTIAL PATIENT INFORMATION: \
    THIS DOCUMENT CONTAINS PROTECTED HEALTH INFORMATION AND IS INTENDED ONLY FOR THE USE OF THE CARE TEAM. \
    DOCUMENT TYPE: CLINICAL NOTE. SOURCE SYSTEM: TRANSCRIPTION SERVICE, INTERFACE VERSION 7. STATUS: FINAL, \
    ELECTRONICALLY SIGNED. PLEASE VERIFY ALL MEDICATIONS AND ALLERGIES AGAINST THE ACTIVE RECORD BEFORE ACTING \
    ON THIS NOTE. BEGIN NOTE:";

/// …and ends with this.
pub const FOOTER: &str = "END OF NOTE. THIS RECORD WAS TRANSCRIBED FROM DICTATION AND MAY CONTAIN ERRORS OF \
    TRANSCRIPTION. IF YOU HAVE RECEIVED IT IN ERROR, NOTIFY THE SENDER AND DESTROY ALL COPIES. \
    REGIONAL HEALTH NETWORK, HEALTH INFORMATION MANAGEMENT.";

/// Whole-word abbreviations (case-sensitive) and what the shifted site writes instead.
const ABBREVIATIONS: &[(&str, &str)] = &[
    ("HTN", "hypertension"),
    ("DM", "diabetes mellitus"),
    ("CAD", "coronary artery disease"),
    ("CHF", "congestive heart failure"),
    ("COPD", "chronic obstructive pulmonary disease"),
    ("MI", "myocardial infarction"),
    ("GERD", "gastroesophageal reflux disease"),
    ("UTI", "urinary tract infection"),
    ("MRI", "magnetic resonance imaging"),
    ("CT", "computed tomography"),
    ("EKG", "electrocardiogram"),
    ("ECG", "electrocardiogram"),
    ("BP", "blood pressure"),
    ("IV", "intravenous"),
    ("ER", "emergency room"),
    ("NKDA", "no known drug allergies"),
    ("mg", "milligrams"),
    ("mL", "milliliters"),
    ("cm", "centimeters"),
    ("prn", "as needed"),
    ("p.o.", "by mouth"),
    ("b.i.d.", "twice a day"),
    ("t.i.d.", "three times a day"),
    ("q.d.", "every day"),
    ("s/p", "status post"),
    ("pt", "patient"),
    ("yo", "year old"),
];

/// The note as the shifted site would export it (module docs).
pub fn rewrite(note: &str) -> String {
    let mut sections = split_sections(note);
    sections.reverse();
    let body = sections.join(" ");
    let expanded = expand(&body);
    format!("{HEADER} {} {FOOTER}", expanded.to_uppercase())
}

/// Cuts before each heading: a run of two or more upper-case words or letters (with spaces,
/// slashes, ampersands, hyphens or parentheses) ending in ':'.
fn split_sections(note: &str) -> Vec<String> {
    let bytes = note.as_bytes();
    let mut cuts = vec![0usize];
    let mut k = 0;
    while k < bytes.len() {
        if bytes[k] == b':' {
            // Walk back over the heading.
            let mut start = k;
            while start > 0 && matches!(bytes[start - 1], b'A'..=b'Z' | b' ' | b'/' | b'&' | b'-' | b'(' | b')') {
                start -= 1;
            }
            while start < k && bytes[start] == b' ' {
                start += 1;
            }
            let letters = bytes[start..k].iter().filter(|b| b.is_ascii_uppercase()).count();
            if letters >= 2 && start > *cuts.last().unwrap_or(&0) {
                cuts.push(start);
            }
        }
        k += 1;
    }
    cuts.push(note.len());
    cuts.windows(2)
        .filter_map(|w| note.get(w[0]..w[1]))
        .map(|s| s.trim_matches(|c: char| c == ',' || c.is_whitespace()).to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Replaces whole-word abbreviations (a word: bounded by anything but letters, digits, '.' and '/').
fn expand(text: &str) -> String {
    let is_word = |c: char| c.is_alphanumeric() || c == '.' || c == '/';
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    let mut rest = text;
    while let Some(start) = rest.find(is_word) {
        out.push_str(&rest[..start]);
        let tail = &rest[start..];
        let end = tail.find(|c: char| !is_word(c)).unwrap_or(tail.len());
        let word = &tail[..end];
        // A sentence's full stop is not part of the abbreviation ("HTN." → "hypertension.").
        let (core, stop) = match ABBREVIATIONS.iter().find(|(a, _)| *a == word) {
            Some(_) => (word, ""),
            None => match word.strip_suffix('.') {
                Some(w) => (w, "."),
                None => (word, ""),
            },
        };
        match ABBREVIATIONS.iter().find(|(a, _)| *a == core) {
            Some((_, long)) => {
                out.push_str(long);
                out.push_str(stop);
            }
            None => out.push_str(word),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_reversed_abbreviations_expanded_upper_case_and_framed() {
        let note = "HISTORY OF PRESENT ILLNESS: , A 60 yo man with HTN and CAD.,PLAN: , Aspirin 81 mg p.o. daily.";
        let r = rewrite(note);
        assert!(r.starts_with(HEADER) && r.ends_with(FOOTER), "{r}");
        let body = &r[HEADER.len()..r.len() - FOOTER.len()];
        assert_eq!(
            body.trim(),
            "PLAN: , ASPIRIN 81 MILLIGRAMS BY MOUTH DAILY. HISTORY OF PRESENT ILLNESS: , A 60 YEAR OLD MAN WITH HYPERTENSION AND CORONARY ARTERY DISEASE."
        );
    }

    #[test]
    fn a_note_without_headings_is_one_section() {
        assert_eq!(split_sections("no headings here: at all"), vec!["no headings here: at all".to_string()]);
        assert_eq!(expand("MI, pt. s/p CABG"), "myocardial infarction, patient. status post CABG");
    }
}
