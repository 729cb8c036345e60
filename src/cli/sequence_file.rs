//! Keyphrase sequences in files, each line saying where it came from.
//!
//! A run's `sequences.jsonl` (`dpkps pipeline`) holds DP sequences whose ε the ledger recorded
//! before they were drawn, and a privacy report comes with them: its lines carry no marker.
//! `dpkps evaluate --export-sequences` writes sequences that are no run's release: the noiseless
//! arms' (`--no-dp`) are not DP at all, and the DP arms' ε is recorded nowhere (the evaluation
//! drops its spends). Each such line says so (`"dp": false`, or `"dp": true,
//! "epsilon_recorded": false`), and `dpkps generate` ([`check_sendable`]) sends such sequences,
//! or any file given without its run (`--sequences`), only when the curator acknowledges them
//! and the endpoint is this machine: a prompt built from them could otherwise carry noiseless
//! keyphrases of the private corpus to a hosted model with no ε recorded anywhere.

use serde::{Deserialize, Serialize};

use crate::cli::error::CliError;
use dpkps_core::llm::LlmSettings;
use dpkps_core::sample::SequenceOut;

/// One line of a sequences file: the sequence and, for sequences that are not a run's
/// release, what they are.
#[derive(Serialize, Deserialize)]
pub(crate) struct SequenceLine {
    #[serde(flatten)]
    pub(crate) sequence: SequenceOut,
    /// `false`: drawn with the noise off (not DP). Absent on a run's lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) dp: Option<bool>,
    /// `false`: DP, but its ε is in no ledger. Absent on a run's lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) epsilon_recorded: Option<bool>,
}

impl SequenceLine {
    /// A line of `dpkps evaluate --export-sequences`: never a recorded release.
    pub(crate) fn unrecorded(sequence: SequenceOut, noiseless: bool) -> SequenceLine {
        SequenceLine { sequence, dp: Some(!noiseless), epsilon_recorded: Some(false) }
    }

    /// Whether the line says it is not a recorded DP release.
    pub(crate) fn is_marked_unrecorded(&self) -> bool {
        self.dp == Some(false) || self.epsilon_recorded == Some(false)
    }
}

/// Where the sequences of a generation job come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// A run's folder (`--run`): its sequences.jsonl and privacy-report.json.
    Run,
    /// A file of sequences without a run (`--sequences`).
    File,
}

/// Refuses, before anything is sent, sequences that are not a recorded run's release, unless
/// the curator acknowledged them (`acknowledged`: `--unrecorded-sequences`) and the endpoint is
/// this machine. `marked` counts the lines that say they are not DP or not recorded.
pub(crate) fn check_sendable(source: Source, marked: usize, acknowledged: bool, llm: &LlmSettings, path: &str) -> Result<(), CliError> {
    let refuse = |message: String| Err(CliError::Input { path: path.to_string(), message });
    let what = match (source, marked) {
        (Source::Run, 0) => return Ok(()),
        (Source::Run, n) => format!("holds {n} sequences marked as not a recorded DP release (\"dp\": false or \"epsilon_recorded\": false), which no run writes"),
        (Source::File, 0) => "is a file of sequences without its run (--sequences): no privacy report says what ε drew them".to_string(),
        (Source::File, n) => format!(
            "holds {n} sequences that are not a recorded DP release (\"dp\": false: noiseless; \"epsilon_recorded\": false: DP with its ε in no ledger), \
             as `dpkps evaluate --export-sequences` writes them"
        ),
    };
    if !acknowledged {
        return refuse(format!(
            "{what}. Prompts built from them could carry the private corpus's keyphrases with no ε recorded: generate from a run's \
             folder (--run), or, for a public corpus or a benchmark, acknowledge them with --unrecorded-sequences and an endpoint on this machine"
        ));
    }
    let url = llm.endpoint_url()?;
    if !url.is_loopback() {
        return refuse(format!(
            "{what}: with --unrecorded-sequences they are sent only to an endpoint on this machine (127.0.0.1, localhost, [::1]), and {} is not",
            url.origin()
        ));
    }
    eprintln!("note: {path} {what}; sent to {} on this machine, as --unrecorded-sequences acknowledges", url.origin());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn llm(endpoint: &str) -> LlmSettings {
        LlmSettings { endpoint: endpoint.into(), ..LlmSettings::default() }
    }

    fn seq() -> SequenceOut {
        SequenceOut { label: Some("a".into()), keyphrases: vec!["x".into()], noise_dominated: false }
    }

    #[test]
    fn exported_lines_say_what_they_are_and_run_lines_stay_as_they_were() {
        let noiseless = serde_json::to_string(&SequenceLine::unrecorded(seq(), true)).unwrap();
        assert_eq!(noiseless, r#"{"label":"a","keyphrases":["x"],"dp":false,"epsilon_recorded":false}"#);
        let dp = serde_json::to_string(&SequenceLine::unrecorded(seq(), false)).unwrap();
        assert_eq!(dp, r#"{"label":"a","keyphrases":["x"],"dp":true,"epsilon_recorded":false}"#);
        // A run's line (as `dpkps pipeline` writes a `SequenceOut`) reads as unmarked.
        let run_line = serde_json::to_string(&seq()).unwrap();
        let read: SequenceLine = serde_json::from_str(&run_line).unwrap();
        assert!(!read.is_marked_unrecorded());
        for line in [&noiseless, &dp] {
            let read: SequenceLine = serde_json::from_str(line).unwrap();
            assert!(read.is_marked_unrecorded(), "{line}");
            assert_eq!(read.sequence, seq());
        }
    }

    #[test]
    fn only_a_clean_run_or_an_acknowledged_file_to_this_machine_is_sendable() {
        let local = llm("http://127.0.0.1:8080/v1");
        let hosted = llm("https://api.example.org/v1");
        let ok = |source, marked, ack, l: &LlmSettings| check_sendable(source, marked, ack, l, "f").is_ok();
        assert!(ok(Source::Run, 0, false, &hosted));
        assert!(!ok(Source::Run, 1, false, &hosted));
        assert!(!ok(Source::Run, 1, true, &hosted));
        assert!(ok(Source::Run, 1, true, &local));
        assert!(!ok(Source::File, 0, false, &local));
        assert!(!ok(Source::File, 3, false, &local));
        assert!(!ok(Source::File, 3, true, &hosted));
        assert!(!ok(Source::File, 0, true, &llm("http://10.0.0.5:8080/v1")));
        assert!(ok(Source::File, 3, true, &local));
        assert!(ok(Source::File, 0, true, &llm("http://localhost:11434/v1")));
        let Err(CliError::Input { message, .. }) = check_sendable(Source::File, 2, false, &local, "f") else { panic!("refused") };
        assert!(message.contains("--unrecorded-sequences"), "{message}");
    }
}
