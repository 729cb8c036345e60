//! The corpus options (`--corpus`, the columns, the format) and the declared classes: what
//! every command that reads a corpus shares.

use std::path::PathBuf;

use clap::Args;

use dpkps_core::input::classes::ClassSet;
use dpkps_core::input::corpus::Format;
use crate::cli::error::CliError;

#[derive(Args, Clone)]
pub(crate) struct CorpusArgs {
    /// Corpus files (.csv, .tsv, .jsonl, .txt) or folders of .txt files (one document each).
    #[arg(long, required = true, num_args = 1..)]
    pub(crate) corpus: Vec<PathBuf>,
    /// Input format; by default guessed from each file's extension.
    #[arg(long, value_parser = format_parser())]
    pub(crate) format: Option<Format>,
    /// Column (CSV/TSV) or field (JSONL) holding the text.
    #[arg(long)]
    pub(crate) text_col: Option<String>,
    /// Column or field holding the class label (optional).
    #[arg(long)]
    pub(crate) label_col: Option<String>,
    /// For .txt files: use the name of the folder holding each file as its label.
    #[arg(long)]
    pub(crate) label_from_dir: bool,
    /// Column or field naming the person (patient) each document is about. With it the privacy
    /// unit is the person: a person's documents together count as one document in every
    /// mechanism (docs/privacy.md, "The person, not the document"). Every document needs one.
    #[arg(long)]
    pub(crate) person_col: Option<String>,
}

/// The public class set (`dpkps_core::input::classes`): required with a label column for every command
/// that releases something, because a class set read from the data would itself leak.
#[derive(Args, Clone)]
pub(crate) struct ClassArgs {
    /// The classes, comma-separated: label values that may appear in the outputs and prompts.
    /// They must be public (not derived from private data). Required with --label-col.
    #[arg(long, conflicts_with = "classes_file")]
    pub(crate) classes: Option<String>,
    /// The classes, one per line (`#` comments), instead of --classes.
    #[arg(long)]
    pub(crate) classes_file: Option<PathBuf>,
    /// Documents with any other label (or none): "drop" (left out of the per-class releases) or
    /// "class" (gathered into one more class, named by --other-name).
    #[arg(long, default_value = "drop")]
    pub(crate) other: String,
    /// The name of the extra class with --other class.
    #[arg(long, default_value = dpkps_core::input::classes::ClassSet::OTHER)]
    pub(crate) other_name: String,
}

impl CorpusArgs {
    /// Whether the corpus is read with labels (a label column, or one folder per class): what
    /// decides whether the run has declared classes or the one class of an unlabelled corpus.
    pub(crate) fn labelled(&self) -> bool {
        self.label_col.is_some() || self.label_from_dir
    }
}

/// `--format`'s parser: the values a `ValueEnum` would list (`Format` is the core's type, so
/// the CLI cannot implement clap's trait for it).
pub(crate) fn format_parser() -> impl clap::builder::TypedValueParser<Value = Format> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(["csv", "tsv", "jsonl", "txt"]).map(|s| match s.as_str() {
        "csv" => Format::Csv,
        "tsv" => Format::Tsv,
        "jsonl" => Format::Jsonl,
        _ => Format::Txt,
    })
}

/// The declared classes of a releasing command and the name of the class gathering other
/// labels, if any (module `dpkps_core::input::classes`; the class set itself is built by the run plan).
pub(crate) fn declared_classes(corpus: &CorpusArgs, args: &ClassArgs) -> Result<(Vec<String>, Option<String>), CliError> {
    let labelled = corpus.labelled();
    let names = match (&args.classes, &args.classes_file) {
        (Some(list), _) => Some(ClassSet::parse_names(list, true)),
        (None, Some(path)) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| CliError::Input { path: path.display().to_string(), message: format!("cannot read: {e}") })?;
            Some(ClassSet::parse_names(&text, false))
        }
        (None, None) => None,
    };
    if !labelled {
        if names.is_some() {
            return Err(CliError::Input { path: "--classes".into(), message: "needs --label-col (or --label-from-dir): without labels there is one class".into() });
        }
        return Ok((Vec::new(), None));
    }
    let Some(names) = names else {
        return Err(CliError::Input {
            path: "--label-col".into(),
            message: "needs --classes a,b,c or --classes-file FILE: the class names appear in the outputs and prompts, so they must be declared \
                      (public), not read from the private labels"
                .into(),
        });
    };
    let other = match args.other.trim() {
        "drop" => None,
        "class" => Some(args.other_name.clone()),
        o => return Err(CliError::Input { path: "--other".into(), message: format!("unknown choice {o:?}; use drop or class") }),
    };
    Ok((names, other))
}
