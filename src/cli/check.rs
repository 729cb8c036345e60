//! `dpkps check`: the DP utility check (`dpkps_core::run::check`), recorded in the ledger like a
//! run. It compares the keyphrase samplers under the given settings and prints their noisy
//! accuracies and the one it chose; `dpkps pipeline --sampler S --from-check ID` then runs with
//! it, and the run's privacy report says the sampler was chosen by that check.

use super::args::corpus::declared_classes;

use super::args::inputs::{run_settings, CheckArgs};
use super::io::write_json;
use super::run::{block_on, read_matched, CliHost, Model};
use super::error::CliError;
use dpkps_core::dp::SecureRng;
use dpkps_core::eval::dp_check::CheckParams;
use dpkps_core::run::{self, RunPlan};

pub(crate) fn run(args: CheckArgs) -> Result<(), CliError> {
    let CheckArgs { inputs, classes, ledger, compare, holdout, eps_select, out } = args;
    let declared = declared_classes(&inputs.corpus, &classes)?;
    let public = super::io::load_vocabulary(&inputs.vocab.vocabulary)?;
    let settings = run_settings(inputs.dp.params(), &inputs.summary, declared, &ledger)?;
    let plan = RunPlan::new(settings, inputs.corpus.labelled(), public.len())?;
    let mut params = CheckParams::every_sampler(&plan.settings, plan.classes.len(), plan.top_n_kept);
    if let Some(list) = compare {
        params.samplers = list.0;
    }
    params.holdout = holdout;
    params.eps_select = eps_select;
    let planned = params.epsilon(&plan.settings);
    let keep = params.keep(&plan.settings);
    let mc = read_matched(&inputs.corpus, &public, keep, &plan.classes, &ledger)?;
    let mut host = CliHost::open(&ledger, &mc, planned, Model::Load(inputs.model.clone()), None)?;
    let mut rng = SecureRng::from_os()?;
    let output = block_on(run::check::check(&plan, &mc, &public, params, &mut host, &mut rng))?;
    let r = &output.result;
    println!(
        "DP utility check {} (ε = {:.4}: training side {:.4}, scores {:.4}; {:.0}% held out; noise scale {:.3} on each count)",
        output.run.id,
        r.epsilon,
        r.epsilon_train,
        r.epsilon_select,
        100.0 * r.holdout,
        r.noise_scale
    );
    println!("noisy number of test documents: {}", r.noisy_tested);
    let classes = r.classes;
    for a in &r.arms {
        let flagged = match a.noise_dominated.len() {
            0 => String::new(),
            n if n == classes => "; every class's release is noise-dominated: nothing would be generated".into(),
            n => format!("; {n} of {classes} classes noise-dominated (left out, as generation would)"),
        };
        println!("  {:<18} noisy accuracy {:.3} ({} right{flagged})", a.sampler, a.noisy_accuracy, a.noisy_correct);
    }
    match &r.chosen {
        Some(s) => println!("chosen: {s}; run it with --sampler {s} --from-check {}", output.run.id),
        None => println!("no sampler chosen"),
    }
    if let Some(path) = out {
        write_json(&path, &serde_json::json!({ "check": output.run.id, "result": r }))?;
    }
    Ok(())
}
