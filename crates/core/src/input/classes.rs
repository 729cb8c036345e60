//! The public class set: which classes a release has, decided by the curator, not by the data.
//!
//! # Why the class set must be public
//! If every distinct value of the label column became a class, adding one document with a
//! new label would add a class to the release (its DP summaries, its sequences, the prompts'
//! `{label}`, the report): the output's *shape* would reveal that document, ε = ∞. So the
//! classes are an input the curator declares before the run, from names that are public by
//! assumption (ARCHITECTURE.md, "What is public"). The app may offer the observed values to
//! pick from, with a warning that the names will appear in the outputs and prompts.
//!
//! # Neighbouring relation
//! Add or remove one document; its label is a value of the label column, and every document is
//! assigned by the fixed rule [`ClassSet::assign`]: a declared class by exact (trimmed) name,
//! otherwise the "other" class or nothing (dropped), as the curator chose before the run. Every
//! declared class gets its DP summaries whether or not any document falls into it (noise
//! only), so the release has the same classes and shape on neighbouring corpora. Because a
//! document is in at most one class, per-class mechanisms compose in parallel.
//!
//! A corpus without a label column has one class, [`ClassSet::UNLABELLED`].

use serde::{Deserialize, Serialize};

use crate::base::ParamError;

/// What happens to a document whose label is not a declared class (or that has no label).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum OtherLabels {
    /// Left out of every per-class release (the DP vocabulary still counts it unless the
    /// vocabulary is per class).
    Drop,
    /// Gathered into one more class with this (public) name.
    Class { name: String },
}

/// The declared classes, in the order the curator gave them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassSet {
    /// Declared class names (trimmed, distinct, non-empty).
    declared: Vec<String>,
    other: OtherLabels,
    /// Whether documents are labelled at all (false: one class for the whole corpus).
    labelled: bool,
}

impl ClassSet {
    /// The one class of an unlabelled corpus.
    pub const UNLABELLED: &'static str = "(all documents)";
    /// The default name of the "other" class.
    pub const OTHER: &'static str = "other";
    /// Most classes a release may have (each costs a DP summary and sequences).
    pub const MAX_CLASSES: usize = 1000;
    /// Longest class name, in characters (names go into prompts and file names).
    pub const MAX_NAME_CHARS: usize = 200;

    /// The class set of a corpus without labels: every document is in [`Self::UNLABELLED`].
    pub fn unlabelled() -> ClassSet {
        ClassSet { declared: vec![Self::UNLABELLED.to_string()], other: OtherLabels::Drop, labelled: false }
    }

    /// Declared classes with a rule for other labels. Refuses an empty list, empty or too
    /// long names, duplicates, and an "other" class whose name is also declared.
    pub fn declared<S: AsRef<str>>(names: &[S], other: OtherLabels) -> Result<ClassSet, ParamError> {
        let mut declared: Vec<String> = Vec::with_capacity(names.len());
        for n in names {
            let n = n.as_ref().trim();
            if n.is_empty() {
                return Err(ParamError::new("the classes", "\"\"", "must not contain an empty name"));
            }
            if n.chars().count() > Self::MAX_NAME_CHARS {
                return Err(ParamError::new("the classes", format!("{:?}…", n.chars().take(20).collect::<String>()), "have a name longer than 200 characters"));
            }
            if declared.iter().any(|d| d == n) {
                return Err(ParamError::new("the classes", format!("{n:?}"), "are named twice"));
            }
            declared.push(n.to_string());
        }
        if declared.is_empty() {
            return Err(ParamError::new("the classes", "none", "must name at least one class (the label values that may appear in the outputs)"));
        }
        if let OtherLabels::Class { name } = &other {
            let name = name.trim();
            if name.is_empty() {
                return Err(ParamError::new("the name of the other class", "\"\"", "must not be empty"));
            }
            if declared.iter().any(|d| d == name) {
                return Err(ParamError::new("the name of the other class", format!("{name:?}"), "is already a declared class; choose another name"));
            }
        }
        let total = declared.len() + usize::from(matches!(other, OtherLabels::Class { .. }));
        if total > Self::MAX_CLASSES {
            return Err(ParamError::new("the number of classes", total, "must be at most 1000"));
        }
        let other = match other {
            OtherLabels::Class { name } => OtherLabels::Class { name: name.trim().to_string() },
            d => d,
        };
        Ok(ClassSet { declared, other, labelled: true })
    }

    /// Parses a list written one name per line (`#` starts a comment line) or comma-separated
    /// on one line (the CLI's `--classes a,b,c`).
    pub fn parse_names(text: &str, comma_separated: bool) -> Vec<String> {
        if comma_separated {
            text.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect()
        } else {
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(str::to_string)
                .collect()
        }
    }

    /// Every class of the release, in order: the declared ones, then "other" if kept.
    pub fn names(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.declared.iter().map(String::as_str).collect();
        if let OtherLabels::Class { name } = &self.other {
            v.push(name);
        }
        v
    }

    pub fn len(&self) -> usize {
        self.declared.len() + usize::from(matches!(self.other, OtherLabels::Class { .. }))
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn name(&self, class: usize) -> &str {
        match self.declared.get(class) {
            Some(n) => n,
            None => match &self.other {
                OtherLabels::Class { name } => name,
                OtherLabels::Drop => "",
            },
        }
    }

    pub fn other(&self) -> &OtherLabels {
        &self.other
    }

    pub fn is_labelled(&self) -> bool {
        self.labelled
    }

    /// The class of a document with this label: a declared class by exact trimmed name,
    /// otherwise "other" or `None` (dropped). Unlabelled class sets put everything in class 0.
    pub fn assign(&self, label: Option<&str>) -> Option<usize> {
        if !self.labelled {
            return Some(0);
        }
        if let Some(l) = label.map(str::trim) {
            if let Some(i) = self.declared.iter().position(|d| d == l) {
                return Some(i);
            }
        }
        match self.other {
            OtherLabels::Class { .. } => Some(self.declared.len()),
            OtherLabels::Drop => None,
        }
    }

    /// A sentence for the report: what the class set is and what happened to other labels.
    pub fn describe(&self) -> String {
        if !self.labelled {
            return "no label column: one class for the whole corpus".into();
        }
        let rule = match &self.other {
            OtherLabels::Drop => "documents with any other label, or none, were left out of the per-class releases".to_string(),
            OtherLabels::Class { name } => format!("documents with any other label, or none, were gathered into the class {name:?}"),
        };
        format!("{} class(es) declared by the curator before the run (public by assumption); {rule}", self.declared.len())
    }
}

/// A class's name as reports and the page write it (the corpus without labels is one class).
pub fn class_name(label: &Option<String>) -> String {
    label.clone().unwrap_or_else(|| "(all documents)".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_classes_assign_by_exact_trimmed_name() {
        let cs = ClassSet::declared(&["a", " b "], OtherLabels::Class { name: "other".into() }).unwrap();
        assert_eq!(cs.names(), vec!["a", "b", "other"]);
        assert_eq!(cs.assign(Some("a")), Some(0));
        assert_eq!(cs.assign(Some(" b")), Some(1));
        assert_eq!(cs.assign(Some("A")), Some(2), "names are case-sensitive; unknown goes to other");
        assert_eq!(cs.assign(None), Some(2));
        let drop = ClassSet::declared(&["a"], OtherLabels::Drop).unwrap();
        assert_eq!(drop.len(), 1);
        assert_eq!(drop.assign(Some("z")), None);
        assert_eq!(ClassSet::unlabelled().assign(Some("anything")), Some(0));
    }

    #[test]
    fn bad_class_sets_are_refused_with_why() {
        let other = || OtherLabels::Drop;
        assert!(ClassSet::declared::<&str>(&[], other()).is_err());
        assert!(ClassSet::declared(&["a", ""], other()).is_err());
        assert!(ClassSet::declared(&["a", "a "], other()).is_err());
        assert!(ClassSet::declared(&["a"], OtherLabels::Class { name: "a".into() }).is_err());
        assert!(ClassSet::declared(&["a"], OtherLabels::Class { name: " ".into() }).is_err());
        let long = "x".repeat(201);
        assert!(ClassSet::declared(&[long.as_str()], other()).is_err());
        let many: Vec<String> = (0..1001).map(|i| i.to_string()).collect();
        assert!(ClassSet::declared(&many, other()).is_err());
    }

    #[test]
    fn names_parse_from_lines_or_commas() {
        assert_eq!(ClassSet::parse_names("a, b ,,c", true), vec!["a", "b", "c"]);
        assert_eq!(ClassSet::parse_names("# classes\nSurgery\n\n Urology \n", false), vec!["Surgery", "Urology"]);
    }
}
