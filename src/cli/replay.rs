//! The replay check on the command line (`crate::replay`): the private corpus files streamed
//! once through the index of the synthetic documents, as the page's worker streams the files
//! it was given. Used by `dpkps generate --corpus` and `dpkps bench replay`.
//!
//! Privacy: the texts are read one document at a time and not kept; what comes back is
//! per synthetic document (see `crate::replay`). Its spans are private text: callers print
//! counts only.

use std::fs::File;
use std::io::BufReader;

use crate::corpus::{self, Fields, Ingest};
use crate::replay::{ReplayCheck, ReplayIndex, ReplayParams, SyntheticDoc};

use super::{inputs, CliError, CorpusArgs};

/// What the pass read: for the curator's terminal only (exact counts, not DP).
pub(crate) struct PassFigures {
    pub(crate) documents: u64,
}

/// Checks `synthetic` against the corpus that `args` names (read with its columns).
pub(crate) fn check_corpus(args: &CorpusArgs, synthetic: Vec<SyntheticDoc>, params: ReplayParams) -> Result<(ReplayCheck, PassFigures), CliError> {
    let mut index = ReplayIndex::new(synthetic, params).map_err(|e| CliError::Input { path: "--replay-*".into(), message: e.to_string() })?;
    let fields = Fields { text: args.text_col.clone(), label: args.label_col.clone() };
    let mut ingest = Ingest::new(args.label_col.is_some() || args.label_from_dir);
    for input in inputs(args)? {
        let name = input.path.display().to_string();
        let file = File::open(&input.path).map_err(|e| CliError::Input { path: name.clone(), message: format!("cannot open: {e}") })?;
        corpus::stream(BufReader::with_capacity(1 << 20, file), &name, input.format, &fields, input.txt_label.as_deref(), &mut ingest, &mut |doc| {
            index.add_private(doc.text)
        })?;
    }
    ingest.finish("the corpus (--corpus)")?;
    let figures = PassFigures { documents: u64::from(index.private_documents()) };
    Ok((ReplayCheck { params, docs: index.finish() }, figures))
}
