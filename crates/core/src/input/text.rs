//! Text normalisation shared by vocabulary terms and documents.
//!
//! Both sides go through the same function so that a keyphrase matches wherever its words
//! appear, whatever the case, punctuation or spacing:
//!
//! - letters are lower-cased (Unicode `to_lowercase`);
//! - every character that is not alphanumeric (punctuation, hyphens, apostrophes, symbols,
//!   control characters, any whitespace) is a word separator, so "Heart-Failure," and
//!   "heart   failure" both become `heart failure`, and "Crohn's" becomes `crohn s`;
//! - runs of separators collapse to one space; no leading or trailing space.
//!
//! Deliberately NOT done: plural or stem folding ("failures" does not match "failure"), and
//! Unicode canonical composition. Stemming is ambiguous for clinical terms ("AIDS", "glasses",
//! "Lung Neoplasms" is itself plural) and a public vocabulary can list both forms. A public
//! vocabulary is public, so a user who wants plural forms can add them to their own list.

/// Writes the normalised form of `text` into `out` (which is cleared first).
pub fn normalize_into(text: &str, out: &mut String) {
    out.clear();
    push_normalized(text, out);
}

/// Appends the normalised form of `text` to `out`, keeping what `out` already holds.
pub fn push_normalized(text: &str, out: &mut String) {
    let start = out.len();
    let mut pending_space = false;
    for ch in text.chars() {
        if ch.is_alphanumeric() {
            if pending_space && out.len() > start {
                out.push(' ');
            }
            pending_space = false;
            if ch.is_ascii() {
                out.push(ch.to_ascii_lowercase());
            } else {
                out.extend(ch.to_lowercase());
            }
        } else {
            pending_space = true;
        }
    }
}

/// The normalised form of `text` (see the module docs).
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    normalize_into(text, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::normalize;

    #[test]
    fn case_punctuation_and_whitespace_fold() {
        assert_eq!(normalize("  Heart-Failure,\tCongestive\r\n"), "heart failure congestive");
        assert_eq!(normalize("Crohn's Disease"), "crohn s disease");
        assert_eq!(normalize("COVID-19"), "covid 19");
    }

    #[test]
    fn empty_and_separator_only_inputs_give_empty() {
        assert_eq!(normalize(""), "");
        assert_eq!(normalize(" \t-,;\u{0}\u{7f} "), "");
    }

    #[test]
    fn non_latin_scripts_are_kept_and_lowercased() {
        assert_eq!(normalize("Ωμέγα ΔΕΛΤΑ"), "ωμέγα δελτα");
        assert_eq!(normalize("心不全 (heart)"), "心不全 heart");
    }

    #[test]
    fn control_characters_separate_words() {
        assert_eq!(normalize("heart\u{0}failure\u{1b}[0m"), "heart failure 0m");
    }
}
