//! The stages that spend ε, named once. Every DP mechanism records its spends under one of
//! these (`crate::dp::laplace::spend` takes a [`SpendStage`], not a string), the ledger's check
//! refuses a record of any other name, and `crate::run::mechanisms` says what each one costs a
//! run. It sits in the ledger, below `crate::dp`, because the ledger must know the stages to
//! read a record and the mechanisms write into the ledger: the names cannot live above both.
//!
//! The names are what ledger files hold: changing one would make every stored ledger with
//! that stage unreadable, so they are fixed strings, not derived from the variant names.

/// Declares [`SpendStage`], its list and its names from one table, so that a stage cannot be
/// added without a name or left out of [`SpendStage::ALL`] (which the ledger's check reads: a
/// stage missing there would make every ledger that records it unreadable).
macro_rules! spend_stages {
    ($($(#[$doc:meta])* $variant:ident = $name:literal,)*) => {
        /// A stage of the pipeline that spends ε (the ledger's composition unit: spends of one
        /// stage on disjoint classes compose in parallel, stages add up).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum SpendStage {
            $($(#[$doc])* $variant,)*
        }

        impl SpendStage {
            /// Every stage, in the order a run spends them (and its report states them).
            pub const ALL: &'static [SpendStage] = &[$(SpendStage::$variant,)*];

            /// The name the ledger records (fixed: stored ledgers hold it).
            pub const fn name(self) -> &'static str {
                match self {
                    $(SpendStage::$variant => $name,)*
                }
            }
        }
    };
}

spend_stages! {
    /// The private vocabulary Ṽ (`crate::dp::vocabulary`).
    Vocabulary = "vocabulary",
    /// The per-class DP summaries (`crate::dp::summary`): "kde" from when every summary was a
    /// DP-KDE; the histograms record it too.
    Summary = "kde",
    /// The DP class counts (`crate::dp::counts`).
    ClassCounts = "class counts",
    /// The DP utility check (`crate::dp::selection`), a run of its own.
    UtilityCheck = "utility check",
    /// The DP vote over generated candidates (`crate::dp::vote`), a run of its own after
    /// generation (`crate::run::vote`).
    Vote = "vote",
}

impl SpendStage {
    /// The stage a ledger record names; `None` for a name this code does not know.
    pub fn from_name(name: &str) -> Option<SpendStage> {
        SpendStage::ALL.iter().copied().find(|s| s.name() == name)
    }
}

impl std::fmt::Display for SpendStage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::SpendStage;

    #[test]
    fn stage_names_are_the_ones_stored_ledgers_hold() {
        let names: Vec<&str> = SpendStage::ALL.iter().map(|s| s.name()).collect();
        assert_eq!(names, ["vocabulary", "kde", "class counts", "utility check", "vote"]);
        for &s in SpendStage::ALL {
            assert_eq!(SpendStage::from_name(s.name()), Some(s));
        }
        assert_eq!(SpendStage::from_name("Vocabulary"), None);
    }
}
