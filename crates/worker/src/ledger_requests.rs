//! The ledger's requests (`Account`, `ExportLedger`, `ImportLedger`): answered beside any
//! running job, under the ledger's own lock in [`super::store`], never under the job's. They
//! read the loaded corpus's keys only, never its documents.

use web_sys::File;

use super::files;
use super::store::Store;
use super::STATE;
use dpkps_core::protocol::{limits, AccountStatus, LedgerEvent, Request};

/// Export, import and the account's state: under the ledger lock, beside any running job.
pub async fn ledger_request(req: Request, files: Vec<File>) -> Result<LedgerEvent, String> {
    let store = Store::open().await?;
    match req {
        Request::ExportLedger { sketches } => {
            let local = super::local_key::local_keys(&store).await?;
            let json = store
                .update_ledger(move |b| {
                    b.key_with(&local).map_err(|e| e.to_string())?;
                    Ok(b.for_export(sketches).to_json())
                })
                .await?;
            Ok(LedgerEvent::Exported { json, sketches })
        }
        Request::ImportLedger => {
            let file = files.first().ok_or("attach the ledger file")?;
            let bytes = files::all(file, "a ledger file", limits::LEDGER)?;
            let text = String::from_utf8(bytes).map_err(|_| format!("{}: not a dpkps ledger (not UTF-8 text)", file.name()))?;
            let local = super::local_key::local_keys(&store).await?;
            // Keyed here, or (made elsewhere) counted against every budget: `LedgerBook::for_import`.
            let other = dpkps_core::ledger::LedgerBook::from_json(&text).map_err(|e| format!("{}: {e}", file.name()))?.for_import(&local);
            let summary = store
                .update_ledger(move |b| {
                    b.key_with(&local).map_err(|e| e.to_string())?;
                    Ok(b.merge(&other))
                })
                .await?;
            Ok(LedgerEvent::Imported { summary })
        }
        Request::Account { name } => {
            let name = dpkps_core::protocol::account_name(Some(&name)).ok_or("name the budget account (the dataset)")?;
            // The loaded corpus's keys (a copy: the job may start meanwhile).
            let keys = STATE.with(|s| s.try_borrow().ok().and_then(|s| s.loaded.as_ref().map(|l| l.corpus.keys.clone())));
            let keys = keys.ok_or("load a corpus first (or wait for the running step to finish)")?;
            let book = store.ledger().await?;
            let ledger = book.ledger(&keys.fingerprint);
            let overlapping = book.overlapping(&keys);
            let fps: Vec<String> = overlapping.iter().map(|(_, fp, _)| fp.clone()).collect();
            let holder = dpkps_core::ledger::Holder::Account(&name);
            // As the run's report will count them: on this corpus, on corpora overlapping it and
            // on overlapping tuning files (`LedgerBook::checks_touching`).
            let (checks, _) = book.checks_touching(&keys.fingerprint, &[fps.clone(), book.tuning_overlapping(&keys)].concat());
            Ok(LedgerEvent::Status(AccountStatus {
                spent: book.spent_for(holder, &keys.fingerprint, &fps),
                budget: book.stored_budget(holder),
                other_accounts: overlapping.into_iter().filter(|(a, _, _)| *a != name).map(|(a, _, o)| (a, o)).collect(),
                corpus_spent: ledger.total_epsilon(),
                corpus_runs: ledger.runs.len(),
                overlaps: book.overlaps(&name, &keys).into_iter().map(|(_, o)| o).collect(),
                non_dp_checks: checks.len(),
                settings_compared: checks.iter().map(|c| c.settings_compared).sum(),
                name,
            }))
        }
        _ => Err("internal: not a ledger request".into()),
    }
}
