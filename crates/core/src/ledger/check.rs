//! The checks on a ledger that is read: the stored one (the page's IndexedDB record, the CLI's
//! file) and an imported one. The ledger is what enforces the budget, so a record it cannot
//! account for is refused whole rather than read in part: a spend with an ε that is not a
//! finite number in range (`NaN` would compare false with every budget, a negative ε would
//! give budget back), a stage the code does not know (its composition rule would be a guess),
//! a scope without a class, a run without an id (it could not be merged without double
//! counting), or a budget that is not a number.

use super::{LedgerBook, LedgerError, Scope, SpendStage};

/// Largest ε one spend may record: the largest any setting accepts (`crate::run::settings`).
pub const MAX_EPSILON: f64 = 1000.0;

/// At most this many problems are listed in the error (the rest are counted).
const LISTED: usize = 5;

impl LedgerBook {
    /// Every problem of this book, in plain words; `Ok` when there is none.
    pub fn check(&self) -> Result<(), LedgerError> {
        let mut problems = Vec::new();
        for (key, ledger) in &self.ledgers {
            for (i, run) in ledger.runs.iter().enumerate() {
                let at = format!("corpus {}, run {}", short(key), if run.id.is_empty() { format!("#{}", i + 1) } else { run.id.clone() });
                if run.id.trim().is_empty() {
                    problems.push(format!("{at}: the run has no id"));
                }
                for s in &run.spends {
                    if !(s.epsilon.is_finite() && s.epsilon > 0.0 && s.epsilon <= MAX_EPSILON) {
                        problems.push(format!("{at}: a spend of ε = {} (an ε must be a number above 0 and at most {MAX_EPSILON})", s.epsilon));
                    }
                    if SpendStage::from_name(&s.stage).is_none() {
                        let known: Vec<&str> = SpendStage::ALL.iter().map(|s| s.name()).collect();
                        problems.push(format!("{at}: a spend of the unknown stage {:?} (known: {})", s.stage, known.join(", ")));
                    }
                    if let Scope::Partition { label } = &s.scope {
                        if label.trim().is_empty() {
                            problems.push(format!("{at}: a spend on a class without a name"));
                        }
                    }
                }
            }
        }
        let bad = |b: f64| !(b.is_finite() && b >= 0.0);
        let budgets = self.accounts.iter().map(|(name, a)| (format!("the account “{name}”"), a.budget, &a.budget_changes)).chain(
            self.ledgers.iter().map(|(key, l)| (format!("corpus {}", short(key)), l.budget, &l.budget_changes)),
        );
        for (who, budget, changes) in budgets {
            let values = budget.into_iter().chain(changes.iter().flat_map(|c| c.old.into_iter().chain([c.new])));
            for b in values.filter(|&b| bad(b)) {
                problems.push(format!("{who} has a budget of {b} (a budget must be a number of at least 0)"));
            }
        }
        if problems.is_empty() {
            return Ok(());
        }
        let more = problems.len().saturating_sub(LISTED);
        problems.truncate(LISTED);
        let mut msg = problems.join("; ");
        if more > 0 {
            msg.push_str(&format!("; and {more} more"));
        }
        Err(LedgerError::Invalid(msg))
    }
}

/// The first characters of a corpus key, enough to tell corpora apart in a message.
fn short(key: &str) -> &str {
    key.get(..12).unwrap_or(key)
}
