//! The sentences of the DP vote over generated candidates (`dpkps_core::run::vote`): what it
//! costs in prompts and ε before the run, and what its release says per class after it.

use dpkps_core::dp::vote::{ClassOutcome, KeepMode, VotePlan};
use dpkps_core::run::vote::VoteReport;

/// Prompts a run with `per_class` sequences per class and `classes` classes sends to the LLM
/// without and with the vote's `c` candidates per kept document (on average: with the DP class
/// counts the classes share the total in proportion).
pub fn prompts(per_class: usize, classes: usize, c: usize) -> (usize, usize) {
    let without = per_class.saturating_mul(classes);
    (without, without.saturating_mul(c.max(1)))
}

/// Under the vote's fields: the extra prompts and when the vote's ε is spent.
pub fn settings_note(v: &VotePlan, per_class: usize, classes: usize) -> String {
    let (without, with) = prompts(per_class, classes, v.candidates_per_kept);
    let charged = v.charged_epsilon();
    let charge = if v.sample_rate < 1.0 {
        format!("ε_select = {} with each unit voting at rate {} is charged ε = {charged:.4}", v.eps_select, v.sample_rate)
    } else {
        format!("ε_select = {}", v.eps_select)
    };
    format!(
        "The run draws {c} × {per_class} = {} sequences per class: about {with} prompts to your LLM instead of {without} ({} more). \
         After generation, your corpus votes for the generated documents nearest its own, and one in {c} per class is kept: \
         {charge}, spent then, in a run of its own.",
        per_class * v.candidates_per_kept,
        with - without,
        c = v.candidates_per_kept,
    )
}

/// Added to the ledger note at the Run button when the vote is on.
pub fn planned_note(run: f64, vote: f64) -> String {
    format!(" The DP vote after generation adds ε = {vote:.3}: {:.3} planned in all, held to the budget now.", run + vote)
}

/// In "what leaves this browser", when the run planned a vote: how many of the `n` prompts are
/// its extra candidates.
pub fn leaves_note(n: usize, c: usize) -> String {
    let c = c.max(1);
    format!(
        "These include the DP vote's candidates: {c} per document kept, so about {} of the {n} prompts are extra; the vote keeps about {} after generation.",
        n - n / c,
        n / c
    )
}

/// The keep rule in words.
pub fn keep_words(mode: KeepMode, c: usize) -> String {
    match mode {
        KeepMode::Top => format!("one in {c} per class: the best noisy vote counts"),
        KeepMode::Proportional => format!("one in {c} per class, drawn in proportion to the noisy vote counts"),
    }
}

/// The vote panel's line before the vote: what it reads and what it costs.
pub fn cost_line(v: &VotePlan, candidates: usize, unit: &str) -> String {
    format!(
        "Each {unit} of the loaded corpus votes for the generated document of its class nearest its own (sentence embeddings, \
         cosine); the votes get discrete Laplace noise of scale 1/ε_select = {:.3}, and {} is kept. {candidates} generated \
         document(s) to choose among. This spends ε = {:.4} on the corpus, recorded before anything is drawn.",
        1.0 / v.eps_select,
        keep_words(v.keep_mode, v.candidates_per_kept),
        v.charged_epsilon(),
    )
}

/// One class's row of the vote's result: label, candidates, kept, the share of the noisy votes
/// the kept ones hold, and the candidates that drew none.
pub fn class_row(c: &ClassOutcome) -> [String; 5] {
    [
        c.label.clone(),
        c.candidates.to_string(),
        c.kept.len().to_string(),
        c.share_captured.map_or_else(|| "no vote above 0".to_string(), |s| format!("{:.0}%", 100.0 * s)),
        c.drew_none.len().to_string(),
    ]
}

/// The vote's result above its table: its run, ε, the kept count, and (voting again over the
/// same documents) that the kept documents' ε counts every vote.
pub fn summary(r: &VoteReport, kept: usize, voted: usize, other_class: usize) -> String {
    let other = if other_class > 0 { format!(" ({other_class} of no declared class were not voted on and are left out)") } else { String::new() };
    let again = if r.votes_on_candidates > 1 {
        format!(
            " This is vote {n} on this run's documents: the kept set follows every vote seen before it, so the kept documents' ε counts all {n} (ε = {:.4} in votes; the report adds them up).",
            r.epsilon_votes_on_candidates,
            n = r.votes_on_candidates,
        )
    } else {
        String::new()
    };
    format!(
        "Vote {}: ε_select = {} (the ledger charged ε = {:.4}; noise scale {:.3}). {kept} of {voted} generated documents kept; the corpus downloads hold only these{other}.{again}",
        r.run, r.epsilon, r.epsilon_charged, r.noise_scale,
    )
}

/// The vote's progress, as a share only: the count of documents embedded follows which units
/// voted (with subsampling, their coins), an exact figure the curator's screen need not show.
pub fn progress(done: u64, total: u64) -> String {
    format!("{}%", percent(done, total))
}

/// `done` of `total` in whole percent (0 when nothing is known yet): the vote's progress bar and text.
pub fn percent(done: u64, total: u64) -> u64 {
    (100 * done.min(total)).checked_div(total).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_extra_prompts_are_said_before_the_run() {
        assert_eq!(prompts(50, 3, 2), (150, 300));
        let v = VotePlan { candidates_per_kept: 3, ..VotePlan::default() };
        let note = settings_note(&v, 10, 2);
        assert!(note.starts_with("The run draws 3 × 10 = 30 sequences per class: about 60 prompts to your LLM instead of 20 (40 more)."), "{note}");
        assert!(note.contains("one in 3 per class is kept: ε_select = 1, spent then"), "{note}");
        assert_eq!(leaves_note(60, 3), "These include the DP vote's candidates: 3 per document kept, so about 40 of the 60 prompts are extra; the vote keeps about 20 after generation.");
        let sub = settings_note(&VotePlan { sample_rate: 0.5, ..v }, 10, 2);
        assert!(sub.contains("at rate 0.5 is charged ε = 0.6201"), "{sub}");
    }

    #[test]
    fn the_summary_counts_every_vote_on_the_same_documents_and_progress_shows_a_share() {
        let c = ClassOutcome { label: "a".into(), candidates: 4, noisy_votes: vec![5, -1, 3, 0], kept: vec![0, 2], share_captured: Some(1.0), drew_none: vec![1, 3] };
        let mut r = VoteReport {
            run: "v1".into(),
            epsilon: 2.0,
            epsilon_charged: 2.0,
            sample_rate: 1.0,
            noise_scale: 0.5,
            keep: dpkps_core::run::vote::KeepRule::CandidatesPerKept(2),
            keep_mode: KeepMode::Top,
            privacy_unit: "document".into(),
            mechanism: String::new(),
            classes: vec![c],
            votes_on_candidates: 1,
            epsilon_votes_on_candidates: 2.0,
            votes_other_unit: 0,
            unit_verified: true,
        };
        assert_eq!(summary(&r, 2, 4, 0), "Vote v1: ε_select = 2 (the ledger charged ε = 2.0000; noise scale 0.500). 2 of 4 generated documents kept; the corpus downloads hold only these.");
        r.votes_on_candidates = 2;
        r.epsilon_votes_on_candidates = 3.0;
        assert!(summary(&r, 2, 4, 1).ends_with("hold only these (1 of no declared class were not voted on and are left out). This is vote 2 on this run's documents: the kept set follows every vote seen before it, so the kept documents' ε counts all 2 (ε = 3.0000 in votes; the report adds them up)."));
        assert_eq!((progress(0, 0), progress(1, 3), progress(40, 40)), ("0%".into(), "33%".into(), "100%".into()));
    }

    #[test]
    fn a_class_row_says_what_the_noisy_votes_kept() {
        let c = ClassOutcome { label: "a".into(), candidates: 4, noisy_votes: vec![5, -1, 3, 0], kept: vec![0, 2], share_captured: Some(1.0), drew_none: vec![1, 3] };
        assert_eq!(class_row(&c), ["a", "4", "2", "100%", "2"]);
        let none = ClassOutcome { share_captured: None, ..c };
        assert_eq!(class_row(&none)[3], "no vote above 0");
    }
}
