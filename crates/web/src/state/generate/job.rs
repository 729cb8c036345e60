//! The job's life in this tab: send a reviewed job, find one left by an earlier visit, resume
//! it or retry its failures, discard it. Every step that sends or replaces a job takes the
//! job's Web Lock first, so that two tabs of this browser never work on the same job.

use leptos::prelude::*;

use dpkps_core::llm::Job;
use crate::io::jobstore;
use crate::io::web_lock::{lock_held, try_lock};

use super::GenState;
use crate::state::app::AppState;

/// The Web Lock a job runs under (every tab and window of this origin).
fn lock_name(job_id: &str) -> String {
    format!("dpkps-job-{job_id}")
}

impl GenState {
    /// Sends a reviewed job: saved first, then generated, under the job's Web Lock.
    pub fn start(&self, mut job: Job) {
        if !self.claim() {
            return;
        }
        let this = *self;
        this.error.set(None);
        this.recent.set(Vec::new());
        // A new job replaces the saved one: the old Resume banner would resume or discard it.
        this.resumable.set(None);
        this.elsewhere.set(false);
        // The previous job's progress must not show while the new one is being saved.
        this.job.set(None);
        job.outcomes.clear();
        leptos::task::spawn_local(async move {
            // The saved job may be generating in another tab: not replaced under its feet.
            let old = jobstore::load_job().await.ok().flatten().map(|j| j.id);
            let old_lock = match old {
                Some(id) if id != job.id => match try_lock(&lock_name(&id)).await {
                    Ok(Some(l)) => Some(l),
                    Ok(None) => {
                        this.error.set(Some(
                            "Nothing was sent: another tab or window of this browser is generating the saved job. \
                             Stop it there (or wait until it finishes), then send this one."
                                .into(),
                        ));
                        return this.release();
                    }
                    Err(e) => {
                        this.error.set(Some(format!("Nothing was sent: {e}.")));
                        return this.release();
                    }
                },
                _ => None,
            };
            let lock = match try_lock(&lock_name(&job.id)).await {
                Ok(Some(l)) => l,
                Ok(None) => {
                    this.error.set(Some("Nothing was sent: this job is already running in another tab.".into()));
                    return this.release();
                }
                Err(e) => {
                    this.error.set(Some(format!("Nothing was sent: {e}.")));
                    return this.release();
                }
            };
            if let Err(e) = jobstore::save_new_job(&job).await {
                this.error.set(Some(format!("{e}. Nothing was sent: without storage a crash would lose documents.")));
                return this.release();
            }
            drop(old_lock);
            GenState::set_job(Some(job));
            this.reviewed.set(false);
            this.generate(lock, false).await;
        });
    }

    /// Looks for a job left by an earlier visit (called once at start).
    pub fn restore(&self) {
        let this = *self;
        leptos::task::spawn_local(async move {
            match jobstore::load_job().await {
                Ok(Some(job)) => {
                    let left = job.pending(true).len();
                    let (done, total) = (job.done(), job.items.len());
                    let name = lock_name(&job.id);
                    GenState::set_job(Some(job));
                    this.refresh();
                    if left > 0 {
                        this.elsewhere.set(lock_held(&name).await);
                        this.resumable.set(Some((done, total)));
                    }
                }
                Ok(None) => {}
                Err(e) => this.error.set(Some(e)),
            }
        });
    }

    pub fn resume(&self) {
        self.continue_job(true);
    }

    pub fn retry_failed(&self) {
        self.continue_job(true);
    }

    /// Resume or retry: under the job's Web Lock, from what is saved (another tab may have
    /// finished documents since this page read the job).
    fn continue_job(&self, retry_failed: bool) {
        if self.needs_key() {
            self.error.set(Some(
                "This job was sent with an API key, which this browser does not remember: enter the key (API key field), \
                 then Resume. Nothing was sent."
                    .into(),
            ));
            return;
        }
        let Some(id) = self.with_job(|j| j.id.clone()) else { return };
        if !self.claim() {
            return;
        }
        let this = *self;
        this.error.set(None);
        leptos::task::spawn_local(async move {
            let lock = match try_lock(&lock_name(&id)).await {
                Ok(Some(l)) => l,
                Ok(None) => {
                    this.elsewhere.set(true);
                    this.error.set(Some(
                        "Nothing was sent: this job is being generated in another tab or window of this browser. \
                         Resume here once it has stopped there."
                            .into(),
                    ));
                    return this.release();
                }
                Err(e) => {
                    this.error.set(Some(format!("Nothing was sent: {e}.")));
                    return this.release();
                }
            };
            match jobstore::load_job().await {
                Ok(Some(job)) if job.id == id => GenState::set_job(Some(job)),
                Ok(_) => {
                    GenState::set_job(None);
                    this.job.set(None);
                    this.resumable.set(None);
                    this.error.set(Some("Nothing was sent: this job was replaced or discarded in another tab.".into()));
                    return this.release();
                }
                Err(e) => {
                    this.error.set(Some(format!("Nothing was sent: {e}.")));
                    return this.release();
                }
            }
            this.resumable.set(None);
            this.elsewhere.set(false);
            this.generate(lock, retry_failed).await;
        });
    }

    /// Discards the loaded job: its saved record, outcomes and audit entries
    /// (`jobstore::discard_job`), and this tab's replay check of it (`app`).
    pub fn discard(&self, app: AppState) {
        let Some(id) = self.with_job(|j| j.id.clone()) else { return };
        if !self.claim() {
            return;
        }
        let this = *self;
        leptos::task::spawn_local(async move {
            match try_lock(&lock_name(&id)).await {
                Ok(Some(_lock)) => match jobstore::discard_job(&id).await {
                    Ok(()) => {
                        GenState::set_job(None);
                        this.job.set(None);
                        this.resumable.set(None);
                        this.recent.set(Vec::new());
                        // Its replay check (private spans) goes with it.
                        app.forget_replay(&id);
                        app.forget_vote(&id);
                    }
                    Err(e) => this.error.set(Some(format!("Not discarded: {e}"))),
                },
                Ok(None) => this.error.set(Some("Not discarded: this job is being generated in another tab.".into())),
                Err(e) => this.error.set(Some(e)),
            }
            this.release();
        });
    }

}
