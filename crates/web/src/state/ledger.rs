//! The budget account, the ledger's export and import, the browser's storage persistence, and
//! the (non-DP) utility check on a separate tuning file.
//!
//! The ledger itself lives in the worker's IndexedDB (`crate::worker`); this module only asks
//! the worker (`Request::Account`, `ExportLedger`, `ImportLedger`) and keeps the answers. The
//! budget is checked here at the Run button ([`LedgerState::with_account`]) and again by the
//! worker.

use std::cell::RefCell;

use leptos::prelude::*;
use web_sys::File;

use dpkps_core::protocol::{AccountStatus, FieldError, LedgerEvent, Request, RunSettings};
use crate::engine;
use crate::io::{download, storage};
use crate::text;

use super::app::AppState;

thread_local! {
    static TUNING_FILE: RefCell<Option<File>> = const { RefCell::new(None) };
}

/// Where the last account name is remembered (a name the curator chose; no data).
const ACCOUNT_KEY: &str = "dpkps-account";

#[derive(Clone, Copy)]
pub struct LedgerState {
    pub account: RwSignal<String>,
    /// The budget field, as typed (empty: the stored one; a first run needs one).
    pub budget: RwSignal<String>,
    /// The curator confirms that the typed budget raises the stored one.
    pub raise: RwSignal<bool>,
    /// Export the overlap sketches too (off by default: they allow membership tests).
    pub export_sketches: RwSignal<bool>,
    pub status: RwSignal<Option<AccountStatus>>,
    /// `Some(false)`: the browser refused persistent storage.
    pub persisted: RwSignal<Option<bool>>,
    pub message: RwSignal<Option<String>>,
    pub tuning_name: RwSignal<Option<String>>,
}

/// Sets up the state (call once in `App`), asks the browser to keep this origin's storage, and
/// keeps the account's status current.
pub fn init(app: AppState) {
    let st = LedgerState {
        account: RwSignal::new(storage::get(ACCOUNT_KEY).unwrap_or_else(|| "default".into())),
        budget: RwSignal::new(String::new()),
        raise: RwSignal::new(false),
        export_sketches: RwSignal::new(false),
        status: RwSignal::new(None),
        persisted: RwSignal::new(None),
        message: RwSignal::new(None),
        tuning_name: RwSignal::new(None),
    };
    provide_context(st);
    // Called outside the component tree: hold the state itself, not the context.
    engine::on_ledger(move |ev| st.apply(ev));
    storage::request_persistence(move |granted| st.persisted.set(Some(granted)));
    // A confirmed raise holds for the value it was given for: any edit of the budget, and every
    // finished run, asks again.
    Effect::watch(move || st.budget.get(), move |_, _, _| st.raise.set(false), false);
    Effect::watch(move || app.result.get().map(|r| r.epsilon_total), move |_, _, _| st.raise.set(false), false);
    Effect::watch(move || app.dp_check.get().map(|c| c.id), move |_, _, _| st.raise.set(false), false);
    // The account name the curator typed is remembered for the next visit (not at start).
    Effect::watch(move || st.account.get(), |name, _, _| storage::set(ACCOUNT_KEY, Some(name.trim())), false);
    // Ask again whenever the corpus, the account, a finished run or a check changes.
    Effect::new(move |_| {
        let loaded = app.summary.get().is_some();
        let _ = (st.account.get(), app.result.get().map(|r| r.epsilon_total), app.evaluation.get().is_some(), app.dp_check.get().map(|c| c.id));
        if loaded && app.job.get().is_none() {
            st.refresh();
        }
    });
}

impl LedgerState {
    /// Ledger answers from the worker.
    fn apply(self, ev: LedgerEvent) {
        let st = self;
        match ev {
            LedgerEvent::Status(s) => {
                if st.budget.get_untracked().trim().is_empty() {
                    if let Some(b) = s.budget {
                        st.budget.set(b.to_string());
                    }
                }
                st.status.set(Some(s));
            }
            LedgerEvent::Exported { json, sketches } => {
                download::ledger(&json);
                st.message.set(Some(if sketches {
                    "Ledger exported (dpkps-ledger.json) with the overlap sketches. Keep it with the data: with this browser's key, they can tell whether a document was in a recorded corpus.".into()
                } else {
                    "Ledger exported (dpkps-ledger.json): runs, ε, budgets and accounts, without the overlap sketches. Keep it with the data.".into()
                }));
            }
            LedgerEvent::Imported { summary } => {
                let foreign = match summary.foreign_runs {
                    0 => String::new(),
                    n => format!(
                        " {n} of them come from a ledger kept with another key (another browser or the CLI): their corpora cannot be \
                         recognised here, so their ε counts against every budget in this browser."
                    ),
                };
                st.message.set(Some(format!(
                    "Ledger imported: {} run(s) added, {} completed, {} utility check(s) added; runs already here were not counted twice.{foreign}",
                    summary.runs_added, summary.runs_extended, summary.checks_added
                )));
                if st.status.get_untracked().is_some() {
                    st.refresh();
                }
            }
            LedgerEvent::Failed { message } => st.message.set(Some(message)),
        }
    }

    /// Asks the worker for the account's state with the loaded corpus.
    pub fn refresh(&self) {
        let name = self.account.get_untracked();
        if !name.trim().is_empty() {
            engine::send(&Request::Account { name }, &[]);
        }
    }

    /// A new account name (typed): its budget is read from the ledger again.
    pub fn set_account(&self, name: String) {
        self.budget.set(String::new());
        self.raise.set(false);
        self.account.set(name);
    }

    /// The run's budget account as the page has it (None: no name given).
    pub fn account_name(&self) -> Option<String> {
        dpkps_core::protocol::account_name(Some(&self.account.get()))
    }

    /// The status of the account named now (None until the worker answers for it).
    fn current_status(&self) -> Option<AccountStatus> {
        self.status.get().filter(|s| s.name == self.account.get().trim())
    }

    /// The account's line: spent, budget, this corpus.
    pub fn status_text(&self) -> Option<String> {
        self.current_status().map(|s| text::account_status(&s))
    }

    /// The overlap warning for the account named now, if any.
    pub fn overlap_warning(&self) -> Option<String> {
        text::overlap_warning(&self.current_status()?)
    }

    /// The stored budget when the typed one is above it (the confirmation box is shown then).
    pub fn raise_over(&self) -> Option<f64> {
        let stored = self.current_status()?.budget?;
        let typed = self.budget.get().trim().parse::<f64>().ok()?;
        (typed > stored).then_some(stored)
    }

    /// The settings with the account and budget, refused (field "budget") without a budget, with
    /// an unconfirmed raise of the stored one, or if the run would take the account over its
    /// budget (`ledger::budget`'s rules). The worker checks again against what is recorded then.
    pub fn with_account(&self, app: AppState, parsed: Result<RunSettings, Vec<FieldError>>) -> Result<RunSettings, Vec<FieldError>> {
        self.with_account_for(parsed, |s| app.planned_in_all(s))
    }

    /// [`Self::with_account`] for a job that records `planned(settings)` (a run, or the DP
    /// utility check: `super::check`).
    pub fn with_account_for(
        &self,
        parsed: Result<RunSettings, Vec<FieldError>>,
        planned: impl Fn(&RunSettings) -> f64,
    ) -> Result<RunSettings, Vec<FieldError>> {
        let account = self.account_name();
        let budget_text = self.budget.get();
        let budget = match budget_text.trim() {
            "" => Ok(None),
            t => t.parse::<f64>().map(Some).map_err(|_| FieldError { field: "budget", message: format!("{t:?} is not a number") }),
        };
        let status = self.status.get();
        match (parsed, budget) {
            (Ok(mut s), Ok(budget)) => {
                s.account = account;
                s.budget = budget;
                s.raise_budget = self.raise.get();
                let mut errs = s.check().into_iter().filter(|e| e.field == "budget").collect::<Vec<_>>();
                let status = status.filter(|st| s.account.as_deref() == Some(st.name.as_str()));
                let spent = status.as_ref().map_or(0.0, |st| st.spent);
                let stored = status.as_ref().and_then(|st| st.budget);
                if errs.is_empty() {
                    if let Some(e) = budget_rule(s.budget, stored, s.raise_budget) {
                        errs.push(e);
                    }
                }
                if errs.is_empty() {
                    if let Err(e) = s.check_budget_of(spent, planned(&s)) {
                        errs.push(e);
                    }
                }
                if errs.is_empty() {
                    Ok(s)
                } else {
                    Err(errs)
                }
            }
            (Ok(_), Err(e)) => Err(vec![e]),
            (Err(mut errs), b) => {
                if let Err(e) = b {
                    errs.push(e);
                }
                Err(errs)
            }
        }
    }

    /// The note by the Run button: spent so far on the loaded corpus, and what a run with
    /// `parsed` adds (with the account, as the run will be sent: it is part of what a reuse of
    /// the private vocabulary must match). None before a corpus is loaded.
    pub fn ledger_note(&self, app: AppState, parsed: &Result<RunSettings, Vec<FieldError>>) -> Option<String> {
        let s = app.summary.get()?;
        let settings = parsed.as_ref().ok().map(|p| RunSettings { account: self.account_name(), ..p.clone() });
        let vote = settings.as_ref().map_or(0.0, RunSettings::epsilon_after_generation);
        let planned = settings.map(|p| {
            let e = app.planned_epsilon(&p);
            (e, e < p.epsilon())
        });
        let vote_note = match planned {
            Some((run, _)) if vote > 0.0 => text::vote::planned_note(run, vote),
            _ => String::new(),
        };
        Some(text::ledger_note(&s, planned) + &vote_note)
    }

    /// Exports the ledger (the worker answers with the JSON, downloaded in [`Self::apply`]).
    pub fn export(&self) {
        engine::send(&Request::ExportLedger { sketches: self.export_sketches.get_untracked() }, &[]);
    }

    /// Imports a ledger file into the worker's.
    pub fn import(&self, file: File) {
        self.message.set(None);
        engine::send(&Request::ImportLedger, &[file]);
    }

    pub fn choose_tuning_file(&self, f: Option<File>) {
        self.tuning_name.set(f.as_ref().map(File::name));
        TUNING_FILE.with(|t| *t.borrow_mut() = f);
    }

    /// The utility check on the tuning file (needs valid settings and a chosen file).
    pub fn check_on_tuning(&self, app: AppState, parsed: Result<RunSettings, Vec<FieldError>>) {
        let (Ok(settings), Some(file)) = (parsed, TUNING_FILE.with(|t| t.borrow().clone())) else { return };
        app.error.set(None);
        app.evaluate_tuning(settings, file);
    }
}

/// The ledger's budget rule (`ledger::in_force`, which the worker applies again) at the Run
/// button, in the page's words: a budget before the first run, and a raise only when confirmed.
fn budget_rule(typed: Option<f64>, stored: Option<f64>, raise: bool) -> Option<FieldError> {
    use dpkps_core::ledger::Refusal;
    let message = match dpkps_core::ledger::in_force(stored, typed, raise).err()? {
        Refusal::NoBudget => "set a budget: the most ε this account may ever spend (it is stored, and every later run is held to it)".to_string(),
        Refusal::RaiseNotConfirmed { stored, given } => {
            format!("{given} is above the account's stored budget of {stored}: tick “confirm the raise” below to raise it (recorded in the ledger and the report)")
        }
    };
    Some(FieldError { field: "budget", message })
}
