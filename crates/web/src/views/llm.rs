//! The LLM step: the resume banner, settings, "what leaves this browser", progress and
//! downloads. The state and its actions are `crate::state::generate`.

use leptos::prelude::*;
use wasm_bindgen::JsCast;

use dpkps_core::llm::Job;
use crate::io::download;
use crate::views::replay::ReplayPanel;
use crate::views::vote::VotePanel;
use crate::state::{app, gen};
use crate::text;

#[component]
fn Text(id: &'static str, label: &'static str, value: RwSignal<String>, #[prop(optional)] kind: Option<&'static str>) -> impl IntoView {
    view! {
        <label class="field">
            <span class="name">{label}</span>
            <input id=id type=kind.unwrap_or("text") prop:value=move || value.get() on:input=move |ev| value.set(event_target_value(&ev)) />
        </label>
    }
}

#[component]
pub fn ResumeBanner() -> impl IntoView {
    let app = app();
    let g = gen();
    move || {
        g.resumable.get().map(|(done, total)| {
            let elsewhere = g.elsewhere.get();
            view! {
                <div class="resume" role="alert" id="resume" data-elsewhere=elsewhere.to_string()>
                    <p>
                        {if elsewhere {
                            format!(
                                "This job is being generated in another tab or window of this browser ({done} of {total} documents \
                                 were saved when this page opened). Resume here only once it has stopped there; until then Resume \
                                 sends nothing. "
                            )
                        } else {
                            format!("A generation was interrupted: {done} of {total} documents are saved. ")
                        }}
                        "Resuming sends only the documents that are missing."
                    </p>
                    {move || g.needs_key().then(|| view! {
                        <label class="field">
                            <span class="name">"This job was sent with an API key, which this browser does not remember. API key:"</span>
                            <input id="resume-key" type="password" autocomplete="off" prop:value=move || g.key.get() on:input=move |ev| g.set_key(event_target_value(&ev)) />
                        </label>
                    })}
                    <div class="actions">
                        <button id="resume-btn" class="primary" prop:disabled=move || g.busy.get() || g.needs_key() on:click=move |_| g.resume()>"Resume"</button>
                        <button id="discard-btn" prop:disabled=move || g.busy.get() on:click=move |_| g.discard(app)>"Discard it"</button>
                    </div>
                </div>
            }
        })
    }
}

/// The Generate card: where and how to send, what leaves this browser, then the job's progress
/// and downloads. Shown once a run has released sequences or a job is loaded.
#[component]
pub fn Generate() -> impl IntoView {
    let app = app();
    let g = gen();
    let plan = Memo::new(move |_| app.result.get().map(|r| g.plan(&r)));
    // Anything that would be sent changes: reviewed again before sending.
    g.watch_review(plan);
    view! {
        <Show when=move || app.result.get().is_some() || g.job.get().is_some()>
            <section aria-labelledby="llm-h" class="card" id="llm">
                <h2 id="llm-h">"6. Generate documents with your LLM"</h2>
                <p class="hint">
                    "Any OpenAI-compatible chat-completions endpoint: vLLM, llama.cpp server, Ollama, or a hosted API. "
                    "This is post-processing of DP outputs: it costs no privacy."
                </p>
                <Connection />
                <PromptFields />
                <NoiseClasses />
                <Review plan=plan />
                {move || g.error.get().map(|e| view! { <p class="field-error" role="alert">{e}</p> })}
                <JobProgress />
                <Show when=move || g.job.get().is_some()>
                    <VotePanel />
                    <ReplayPanel />
                </Show>
            </section>
        </Show>
    }
}

/// The endpoint, model, key and request settings, and the connection test.
#[component]
fn Connection() -> impl IntoView {
    let g = gen();
    view! {
        <div class="grid">
            <EndpointField />
            <Text id="llm-model" label="Model" value=g.model />
            <ApiKeyField />
            <Text id="llm-temperature" label="Temperature" value=g.temperature />
            <Text id="llm-max-tokens" label="Max tokens" value=g.max_tokens />
            <Text id="llm-concurrency" label="Requests at once" value=g.concurrency />
            <Text id="llm-timeout" label="Timeout (s)" value=g.timeout_s />
            <Text id="llm-attempts" label="Attempts per document" value=g.attempts />
            <Text id="llm-frequency-penalty" label="Frequency penalty (−2…2; 0: not sent)" value=g.frequency_penalty />
            <label class="check">
                <input id="llm-check-replies" type="checkbox" prop:checked=move || g.check_replies.get() on:change=move |ev| g.check_replies.set(event_target_checked(&ev)) />
                "Ask once more when a reply is not prose that uses its keyphrases"
            </label>
            <Text id="llm-doctype" label="Document type" value=g.doc_type />
        </div>
        <div class="actions">
            <button id="test-connection" on:click=move |_| g.test_connection()>"Test connection"</button>
            <span id="connection" role="status">{move || g.connection.get()}</span>
        </div>
    }
}

/// The endpoint, with why it is refused as typed (not a URL, not among the allowed endpoints,
/// or one this browser would block), before anything is sent to it.
#[component]
fn EndpointField() -> impl IntoView {
    let g = gen();
    view! {
        <label class="field">
            <span class="name">"Endpoint (base URL)"</span>
            <input id="llm-endpoint" type="text" prop:value=move || g.endpoint.get() on:input=move |ev| g.endpoint.set(event_target_value(&ev)) />
            {move || g.endpoint_error().map(|e| view! { <span class="field-error" id="llm-endpoint-error" role="alert">{e}</span> })}
        </label>
    }
}

/// The API key and whether this browser remembers it (not offered to a page opened from a
/// file, `text::REMEMBER_FROM_FILE` says why).
#[component]
fn ApiKeyField() -> impl IntoView {
    let g = gen();
    view! {
        <label class="field">
            <span class="name">"API key (optional)"</span>
            <input id="llm-key" type="password" autocomplete="off" prop:value=move || g.key.get() on:input=move |ev| g.set_key(event_target_value(&ev)) />
            <label class="check">
                <input id="remember-key" type="checkbox" prop:disabled=!g.remember_allowed prop:checked=move || g.remember_key.get() on:change=move |ev| g.set_remember(event_target_checked(&ev)) />
                "Remember it in this browser"
            </label>
            {(!g.remember_allowed).then(|| view! { <span class="hint" id="remember-key-note">{text::REMEMBER_FROM_FILE}</span> })}
            {move || g.key_error().map(|e| view! { <span class="field-error" id="llm-key-error" role="alert">{e}</span> })}
        </label>
    }
}

/// The prompt's template, system message and few-shot examples: the text that is sent with
/// the DP keyphrases.
#[component]
fn PromptFields() -> impl IntoView {
    let g = gen();
    view! {
        <label class="field wide">
            <span class="name">"Prompt template (must contain {keyphrases}; may use {label} and {doc_type})"</span>
            <textarea id="llm-template" rows="3" prop:value=move || g.template.get() on:input=move |ev| g.template.set(event_target_value(&ev))></textarea>
        </label>
        <label class="field wide">
            <span class="name">"System message"</span>
            <textarea id="llm-system" rows="2" prop:value=move || g.system.get() on:input=move |ev| g.system.set(event_target_value(&ev))></textarea>
        </label>
        <details>
            <summary>"Few-shot examples (public only)"</summary>
            <label class="field wide">
                <span class="name">"Blocks separated by a blank line: “keyphrases: a, b”, optional “label: x”, then the text"</span>
                <textarea id="llm-examples" rows="5" prop:value=move || g.examples.get() on:input=move |ev| {
                    // Other examples: confirmed public again.
                    g.examples.set(event_target_value(&ev));
                    g.examples_public.set(false);
                }></textarea>
            </label>
            <label class="check">
                <input id="examples-public" type="checkbox" prop:checked=move || g.examples_public.get() on:change=move |ev| g.examples_public.set(event_target_checked(&ev)) />
                "These examples are public: none is taken from the private corpus."
            </label>
        </details>
    }
}

/// Classes whose release is noise-dominated: left out unless the curator includes them.
#[component]
fn NoiseClasses() -> impl IntoView {
    let app = app();
    let g = gen();
    move || {
        app.result.get().and_then(|r| text::noise_classes(&r).map(|n| (n, text::rerun_cost(&r)))).map(|((classes, prompts, names), cost)| {
            view! {
                <label class="check" id="include-noise-label">
                    <input id="include-noise" type="checkbox" prop:checked=move || g.include_noise.get() on:change=move |ev| {
                        // Another set of prompts: reviewed again before sending.
                        g.include_noise.set(event_target_checked(&ev));
                        g.reviewed.set(false);
                    } />
                    {format!(
                        "Also generate for the {classes} noise-dominated class(es) ({names}): {prompts} more prompts, seeded mostly \
                         by keyphrases the DP noise picked. No privacy cost. Raising ε_kde or merging classes costs a new run: {}.",
                        cost
                    )}
                </label>
            }
        })
    }
}

/// What is missing before anything can be sent, or, once the job can be built, what it sends.
#[component]
fn Review(plan: Memo<Option<Result<Job, String>>>) -> impl IntoView {
    move || {
        plan.get().map(|p| match p {
            // Not an error yet: what is missing before anything can be sent.
            Err(e) => view! { <p class="todo" id="llm-error" role="status">"Before sending: " {e}</p> }.into_any(),
            Ok(job) => view! { <Leaves job=job /> }.into_any(),
        })
    }
}

/// "What leaves this browser": every prompt exactly as it will be sent, and Send, enabled only
/// once the curator says they have reviewed them.
#[component]
fn Leaves(job: Job) -> impl IntoView {
    let g = gen();
    let n = job.items.len();
    let (summary, ending) = text::leaves_summary(&job);
    let (first, all) = (text::prompt_sample(&job), text::all_prompts(&job));
    view! {
        <div class="leaves" id="leaves">
            <h3>"What leaves this browser"</h3>
            <p id="leaves-summary">
                {summary}
                {ending}
            </p>
            {crate::state::vote::planned(&job).map(|(_, v)| view! {
                <p id="leaves-vote">{text::vote::leaves_note(n, v.candidates_per_kept)}</p>
            })}
            <p class="hint">"The first prompts, exactly as they will be sent:"</p>
            <pre id="prompt-sample">{first}</pre>
            <details>
                <summary>{format!("All {n} prompts")}</summary>
                <pre id="prompt-all">{all}</pre>
            </details>
            <label class="check">
                <input id="reviewed" type="checkbox" prop:checked=move || g.reviewed.get() on:change=move |ev| g.reviewed.set(event_target_checked(&ev)) />
                "I have reviewed what will be sent."
            </label>
            <div class="actions">
                <button
                    id="send"
                    class="primary"
                    prop:disabled=move || !g.reviewed.get() || g.busy.get() || g.job.get().is_some_and(|j| j.running)
                    on:click=move |ev| {
                        // Disabled at once, before anything is awaited: a double click sends once.
                        if let Some(b) = ev.target().and_then(|t| t.dyn_into::<web_sys::Element>().ok()) {
                            let _ = b.set_attribute("disabled", "");
                        }
                        g.start(job.clone())
                    }
                >
                    {format!("Send {n} prompts")}
                </button>
            </div>
        </div>
    }
}

/// The loaded job: how far it is, Stop, Retry and Discard, the downloads and the latest
/// documents.
#[component]
fn JobProgress() -> impl IntoView {
    let app = app();
    let g = gen();
    let checking = move || app.replay_running();
    move || {
        g.job.get().map(|j| {
            let value = j.done as f64;
            view! {
                <div class="gen-progress" id="gen-progress" data-done=j.done data-total=j.total data-running=j.running.to_string()>
                    <progress max=j.total value=value aria-label="documents generated"></progress>
                    <span>{j.status_line()}</span>
                    {j.forms_line().map(|f| view! { <span id="gen-forms">{f}</span> })}
                    <div class="actions">
                        {j.running.then(|| view! { <button id="stop" on:click=move |_| g.stop()>"Stop"</button> })}
                        {(!j.running && j.failed > 0).then(|| view! { <button id="retry" on:click=move |_| g.retry_failed()>"Retry failed documents"</button> })}
                        // Removes the job's record from this browser: its documents, outcomes and audit entries.
                        {(!j.running).then(|| view! {
                            <button id="discard-job" prop:disabled=move || g.busy.get() || checking() on:click=move |_| {
                                let sure = web_sys::window().and_then(|w| w.confirm_with_message(text::DISCARD_JOB).ok()).unwrap_or(false);
                                if sure {
                                    g.discard(app);
                                }
                            }>"Discard this job"</button>
                        })}
                        <Downloads />
                    </div>
                    <ul class="recent">
                        {move || g.recent.get().into_iter().map(|(i, l, t)| view! { <li><strong>{format!("#{} {l}: ", i + 1)}</strong>{t}</li> }).collect_view()}
                    </ul>
                </div>
            }
        })
    }
}

/// The job's downloads: the corpus without the documents the replay check flagged (unless
/// kept), and the report with its counts; the audit log without the answers it flagged. All
/// but the report are disabled while a check runs, whose flags they depend on.
#[component]
fn Downloads() -> impl IntoView {
    let app = app();
    let g = gen();
    // What the corpus downloads hold follows the replay check's flags and the vote's choice.
    let checking = move || app.replay_running() || app.vote_running();
    view! {
        <button id="dl-corpus-jsonl" prop:disabled=checking on:click=move |_| { g.with_job(|j| download::corpus_jsonl(&untrack(|| app.downloadable(j)))); }>"Synthetic corpus (JSONL)"</button>
        <button id="dl-corpus-csv" prop:disabled=checking on:click=move |_| { g.with_job(|j| download::corpus_csv(&untrack(|| app.downloadable(j)))); }>"Synthetic corpus (CSV)"</button>
        <button id="dl-audit" prop:disabled=checking on:click=move |_| {
            let current = g.with_job(|j| j.id.clone());
            download::audit_log(untrack(|| app.audit_withheld(current.as_deref())))
        }>"Audit log (JSONL)"</button>
        <button id="dl-report-html" on:click=move |_| { g.with_job(|j| download::report_html_of(&untrack(|| app.report_for_download(j)))); }>"Privacy report (printable HTML)"</button>
    }
}
