//! The recipient's training as it goes and when done: the loss curve (an inline SVG), the
//! scores on the test set (accuracy, macro-F1, F1 per class, the confusion matrix) and the
//! downloads (predictions, model).

use leptos::prelude::*;

use dpkps_core::adapt::summary::TrainedSummary;
use crate::chart::{loss_chart, HEIGHT, WIDTH};
use crate::io::download;
use crate::state::recipient;
use crate::text::{fixed3, model_short, model_title, trained_line};

/// The cross-entropy per epoch of each model, drawn as training goes.
#[component]
pub fn LossCurve() -> impl IntoView {
    let rec = recipient();
    move || {
        let curve = rec.curve.get();
        (!curve.is_empty()).then(|| {
            let chart = loss_chart(&curve);
            let view_box = format!("-40 -10 {} {}", WIDTH + 50.0, HEIGHT + 30.0);
            let legend = chart
                .lines
                .iter()
                .map(|(name, _)| view! { <li class=format!("line-{name}")>{model_short(name)}</li> })
                .collect_view();
            view! {
                <figure class="loss" id="loss-curve" data-epochs=chart.epochs.to_string() data-points=curve.len().to_string()>
                    <svg viewBox=view_box role="img" aria-label="Classification loss per epoch">
                        <line class="axis" x1="0" y1=HEIGHT.to_string() x2=WIDTH.to_string() y2=HEIGHT.to_string() />
                        <line class="axis" x1="0" y1="0" x2="0" y2=HEIGHT.to_string() />
                        <text x="-6" y="4" text-anchor="end">{fixed3(chart.y_max)}</text>
                        <text x="-6" y=HEIGHT.to_string() text-anchor="end">"0"</text>
                        <text x=WIDTH.to_string() y=(HEIGHT + 16.0).to_string() text-anchor="end">{format!("epoch {}", chart.epochs)}</text>
                        {chart.lines.iter().map(|(name, d)| view! { <path class=format!("line-{name}") d=d.clone() /> }).collect_view()}
                    </svg>
                    <figcaption>
                        "Classification loss (cross-entropy) per epoch:"
                        <ul class="legend">{legend}</ul>
                    </figcaption>
                </figure>
            }
        })
    }
}

/// One model's row of the scores table.
fn score_row(m: &TrainedSummary) -> impl IntoView {
    let (acc, f1, n) = m.test.as_ref().map_or(("–".to_string(), "–".to_string(), "0".to_string()), |s| (fixed3(s.accuracy), fixed3(s.macro_f1), s.documents.to_string()));
    view! {
        <tr data-model=m.name.clone()>
            <th scope="row">{model_title(&m.name, m.coral_weight)}</th>
            <td class="accuracy">{acc}</td>
            <td class="macro-f1">{f1}</td>
            <td>{n}</td>
        </tr>
    }
}

/// One model's F1 per class and confusion matrix.
fn per_class(m: &TrainedSummary, classes: &[String]) -> impl IntoView {
    let score = m.test.clone();
    let classes = classes.to_vec();
    score.map(|s| {
        let head = classes.iter().map(|c| view! { <th scope="col">{c.clone()}</th> }).collect_view();
        let rows = classes
            .iter()
            .enumerate()
            .map(|(k, c)| {
                let cells = s.confusion.get(k).cloned().unwrap_or_default();
                view! {
                    <tr>
                        <th scope="row">{c.clone()}</th>
                        {cells.into_iter().enumerate().map(|(j, n)| view! { <td class:diag={j == k}>{n}</td> }).collect_view()}
                        <td class="f1">{s.f1.get(k).copied().map(fixed3).unwrap_or_default()}</td>
                    </tr>
                }
            })
            .collect_view();
        view! {
            <h4>{model_title(&m.name, m.coral_weight)}</h4>
            <div class="table-wrap">
                <table class="preview confusion" id=format!("confusion-{}", m.name)>
                    <thead>
                        <tr>
                            <th scope="col">"true ↓ / predicted →"</th>
                            {head}
                            <th scope="col">"F1"</th>
                        </tr>
                    </thead>
                    <tbody>{rows}</tbody>
                </table>
            </div>
        }
    })
}

/// The trained models' figures and the downloads.
#[component]
pub fn TrainResults() -> impl IntoView {
    let rec = recipient();
    move || {
        rec.result.get().map(|r| {
            let has_test = r.models.iter().any(|m| m.test.is_some());
            let has_predictions = r.counts.unlabelled > 0;
            let rows = r.models.iter().map(score_row).collect_view();
            let matrices = r.models.iter().map(|m| per_class(m, &r.classes)).collect_view();
            let (r1, r2, r3) = (r.clone(), r.clone(), r.clone());
            view! {
                <section class="card" id="train-results" aria-labelledby="trained-h">
                    <h2 id="trained-h">"5. Results"</h2>
                    <p id="trained-line">{trained_line(&r)}</p>
                    {has_test
                        .then(|| {
                            view! {
                                <table class="preview" id="scores">
                                    <thead>
                                        <tr>
                                            <th scope="col">"Model"</th>
                                            <th scope="col">"Accuracy"</th>
                                            <th scope="col">"Macro-F1"</th>
                                            <th scope="col">"Test documents"</th>
                                        </tr>
                                    </thead>
                                    <tbody>{rows}</tbody>
                                </table>
                                <h3>"F1 per class and confusion matrix (rows: true class, columns: predicted)"</h3>
                                {matrices}
                            }
                        })}
                    <p class="hint">
                        "The downloads hold your own documents (the predictions) or what was trained on them (the model): keep them as private as the documents. "
                        "The model is the file that "
                        <code>"dpkps predict --classifier model.safetensors"</code>
                        " reads (with the same embedding model)."
                    </p>
                    <div class="actions">
                        {has_predictions
                            .then(|| {
                                view! {
                                    <button id="dl-pred-csv" on:click=move |_| download::predictions_csv(&r1)>"Predictions (CSV)"</button>
                                    <button id="dl-pred-jsonl" on:click=move |_| download::predictions_jsonl(&r2)>"Predictions (JSONL)"</button>
                                }
                            })}
                        <button id="dl-model" on:click=move |_| download::model(&r3)>"Model (model.safetensors)"</button>
                    </div>
                </section>
            }
        })
    }
}
