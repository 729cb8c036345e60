//! The privacy ledger's options: the file, the budget and the account.

use std::path::PathBuf;

use clap::Args;

use crate::cli::error::CliError;

#[derive(Args, Clone)]
pub(crate) struct LedgerArgs {
    /// Privacy ledger file [default: $DPKPS_LEDGER, else ~/.local/share/dpkps/ledger.json].
    #[arg(long)]
    pub(crate) ledger: Option<PathBuf>,
    /// The most ε ever spent on this corpus (with --account: under the account), stored in
    /// the ledger: a run that would exceed it is refused. Required before the first run; later
    /// runs use the stored one, a lower value replaces it, a higher one needs --raise-budget.
    /// Between 0.001 and 1000, as every ε.
    #[arg(long)]
    pub(crate) budget: Option<f64>,
    /// Confirms that --budget raises the stored budget (the raise is recorded in the ledger
    /// and shown in the privacy report).
    #[arg(long, requires = "budget")]
    pub(crate) raise_budget: bool,
    /// Budget account (the dataset's name), required: runs are recorded under it, --budget
    /// caps all that is spent under it whatever extract is read, and the corpus is sketched
    /// under it, so that a later extract overlapping it by 20% or more, under any account, is
    /// held to its budget too (the app does the same, under its own default account).
    #[arg(long, env = "DPKPS_ACCOUNT", required = true)]
    pub(crate) account: Option<String>,
}

impl LedgerArgs {
    /// The account's name as given: the page trims it, so a name with spaces around it (or a
    /// blank one) would not be the account the ledger holds under that name: refused.
    pub(crate) fn check_account(&self) -> Result<(), CliError> {
        match &self.account {
            Some(a) if a.trim().is_empty() || a.trim() != a => {
                Err(CliError::Input { path: "--account".into(), message: format!("{a:?}: give the account's name without leading or trailing spaces") })
            }
            _ => Ok(()),
        }
    }
}
