//! The CLI's files: reading corpora, vocabularies, the model and JSON; writing outputs
//! atomically, private ones readable by their owner only.

use std::fs::{File, OpenOptions};
use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

use dpkps_core::input::corpus::{Fields, Format};
use dpkps_core::input::matched::{MatchedCorpus, MatchingSink, Threads};
use dpkps_core::input::public_vocab::{Bundled, Matcher, PublicVocabulary};

use super::args::corpus::CorpusArgs;

use super::args::ledger::LedgerArgs;

use super::args::model::ModelArgs;
use super::error::CliError;
pub(crate) use super::kept::open_kept;

/// The embedding model: the bundled one unless the user names another.
pub(crate) fn load_model(args: &ModelArgs) -> Result<Box<dyn dpkps_core::embed::Embed>, CliError> {
    let (model, tok) = model_bytes(args)?;
    Ok(Box::new(dpkps_embed::onnx::OnnxEmbedder::from_bytes(&model, &tok)?))
}

/// The model as [`load_model`] finds it, one instance per core for the recipient's documents.
pub(crate) fn load_embedders(args: &ModelArgs) -> Result<super::embedders::Embedders, CliError> {
    let (model, tok) = model_bytes(args)?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(16);
    super::embedders::Embedders::new(model, tok, threads)
}

/// The ONNX model's and the tokenizer's bytes: the given files, or the bundled ones.
pub(crate) fn model_bytes(args: &ModelArgs) -> Result<(Vec<u8>, Vec<u8>), CliError> {
    let bundled = |f: &str| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/models")).join(f);
    let model = args.model.clone().unwrap_or_else(|| bundled(dpkps_embed::onnx::BUNDLED_MODEL));
    let tok = args.tokenizer.clone().unwrap_or_else(|| bundled("tokenizer.json"));
    let read = |p: &Path| std::fs::read(p).map_err(|e| CliError::Input { path: p.display().to_string(), message: format!("cannot read: {e}") });
    Ok((read(&model)?, read(&tok)?))
}

pub(crate) fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, CliError> {
    let bytes = std::fs::read(path).map_err(|e| CliError::Input { path: path.display().to_string(), message: format!("cannot read: {e}") })?;
    serde_json::from_slice(&bytes).map_err(|e| CliError::Input { path: path.display().to_string(), message: format!("not a valid file of this kind: {e}") })
}

pub(crate) fn now_utc() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    format!("unix:{secs}")
}

pub(crate) fn print_stats(mc: &MatchedCorpus) {
    let s = &mc.stats;
    eprintln!(
        "read {} records: {} documents, {} empty (skipped), {} classes{}",
        s.records,
        s.documents,
        s.empty_skipped,
        s.classes.len(),
        if s.unlabelled > 0 { format!(", {} without a label", s.unlabelled) } else { String::new() }
    );
}

/// Loads a bundled vocabulary by name, or a user's list from a file.
pub fn load_vocabulary(spec: &str) -> Result<PublicVocabulary, CliError> {
    if let Some(b) = Bundled::parse_name(spec) {
        return Ok(PublicVocabulary::parse_bundled(b, bundled_bytes(b))?);
    }
    let bytes = std::fs::read(spec).map_err(|e| CliError::Input {
        path: spec.to_string(),
        message: format!("not a bundled vocabulary (english, medical) and not a readable file: {e}"),
    })?;
    let name = Path::new(spec).file_name().map_or(spec.to_string(), |n| n.to_string_lossy().into_owned());
    Ok(PublicVocabulary::parse(&name, &bytes)?)
}

pub(crate) fn bundled_bytes(b: Bundled) -> &'static [u8] {
    match b {
        Bundled::English => include_bytes!("../../www/vocab/english_glove6b.txt"),
        Bundled::Medical => include_bytes!("../../www/vocab/medical_mesh2017.txt"),
    }
}

/// One input file and how to read it.
pub(crate) struct Input {
    pub(crate) path: PathBuf,
    pub(crate) format: Format,
    pub(crate) txt_label: Option<String>,
}

pub(crate) fn inputs(args: &CorpusArgs) -> Result<Vec<Input>, CliError> {
    let mut out = Vec::new();
    for p in &args.corpus {
        let meta = std::fs::metadata(p)
            .map_err(|e| CliError::Input { path: p.display().to_string(), message: format!("cannot open: {e}") })?;
        if meta.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| CliError::Input { path: p.display().to_string(), message: e.to_string() })?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.is_file() && Format::from_path(&f.to_string_lossy()) == Some(Format::Txt))
                .collect();
            files.sort();
            if files.is_empty() {
                return Err(CliError::Input { path: p.display().to_string(), message: "the folder has no .txt files".into() });
            }
            for f in files {
                let label = args.label_from_dir.then(|| dir_label(&f)).flatten();
                out.push(Input { path: f, format: Format::Txt, txt_label: label });
            }
        } else {
            let format = match args.format {
                Some(f) => f,
                None => Format::from_path(&p.to_string_lossy()).ok_or_else(|| CliError::Input {
                    path: p.display().to_string(),
                    message: "unknown file type; use .csv, .tsv, .jsonl or .txt, or pass --format".into(),
                })?,
            };
            let label = (format == Format::Txt && args.label_from_dir).then(|| dir_label(p)).flatten();
            out.push(Input { path: p.clone(), format, txt_label: label });
        }
    }
    Ok(out)
}

pub(crate) fn dir_label(file: &Path) -> Option<String> {
    file.parent().and_then(|d| d.file_name()).map(|n| n.to_string_lossy().into_owned())
}

/// Streams every input through the matcher.
pub(crate) fn read_corpus(args: &CorpusArgs, matcher: Option<&Matcher>, keep: usize) -> Result<MatchedCorpus, CliError> {
    let fields = Fields { text: args.text_col.clone(), label: args.label_col.clone(), person: args.person_col.clone() };
    let inputs = inputs(args)?;
    let has_labels = args.labelled();
    let mut sink = MatchingSink::new(matcher, keep, has_labels);
    for input in &inputs {
        let name = input.path.display().to_string();
        let file = File::open(&input.path).map_err(|e| CliError::Input { path: name.clone(), message: format!("cannot open: {e}") })?;
        // The matching on every core (`matched::Threads`): the same matched corpus, sooner.
        sink.read_threaded(BufReader::with_capacity(1 << 20, file), &name, input.format, &fields, input.txt_label.as_deref(), Threads::available())?;
    }
    let name = if inputs.len() == 1 { inputs[0].path.display().to_string() } else { format!("{} files", inputs.len()) };
    Ok(sink.finish(&name)?)
}

pub(crate) fn ledger_path(args: &LedgerArgs) -> PathBuf {
    if let Some(p) = &args.ledger {
        return p.clone();
    }
    if let Some(p) = std::env::var_os("DPKPS_LEDGER") {
        return PathBuf::from(p);
    }
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."));
    home.join(".local/share/dpkps/ledger.json")
}

pub(crate) fn json_text<T: Serialize>(value: &T) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}

/// Writes a DP output (or other public data) as JSON: see [`write_file`].
pub(crate) fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), CliError> {
    write_file(path, json_text(value).as_bytes())
}

/// Writes private data as JSON: see [`write_private`].
pub(crate) fn write_private_json<T: Serialize>(path: &Path, value: &T) -> Result<(), CliError> {
    write_private(path, json_text(value).as_bytes())
}

/// Writes a DP output (or other public data), with the permissions the user's umask gives.
pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    write_atomic(path, bytes, false)
}

/// Writes a file derived from private data that is not a DP release, or that records its use
/// (the ledger, a run's entry, matches, exact counts, evaluation figures): on Unix it is
/// readable and writable by its owner only (0600), whatever the umask, its temporary file
/// included, so it is never readable by others even for a moment.
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    write_atomic(path, bytes, true)
}

/// Writes atomically: a temporary file next to the target, then a rename.
///
/// The temporary file has a random name and is created exclusively (`create_new`: `O_EXCL`,
/// which never follows a symbolic link): in a folder others can write to, a link planted at
/// a name we would use must not send the write, or the `chmod` of a private file, to its
/// target. A name taken (planted, or a stale file) means another name, not an overwrite.
///
/// A target that exists and is not a regular file (`/dev/null`, `/dev/stdout`, a named pipe)
/// is written straight into: a rename would replace the device itself with a regular file
/// (as root, `/dev/null` would then hold this output and feed it to every later reader).
pub(crate) fn write_atomic(path: &Path, bytes: &[u8], private: bool) -> Result<(), CliError> {
    let err = |source| CliError::Write { path: path.display().to_string(), source };
    // Written into directly only when it is a device named under /dev (`--out /dev/null`,
    // `/dev/stdout`, itself a link): anything else that is not a regular file, a symbolic link
    // planted at an output name to a FIFO or device above all, is replaced by the new file
    // rather than written through (its 0600 and its exclusive creation would be bypassed).
    if path.starts_with("/dev") && std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        let mut f = OpenOptions::new().write(true).open(path).map_err(err)?;
        return f.write_all(bytes).and_then(|()| f.flush()).map_err(err);
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(err)?;
    }
    let (tmp, mut f) = create_temp(path, private).map_err(err)?;
    let written = (|| {
        #[cfg(unix)]
        if private {
            // `mode` is filtered by the umask; the file is ours alone (just created): 0600 exactly.
            use std::os::unix::fs::PermissionsExt;
            f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        }
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.map_err(err)
}

/// A new file beside `path` named `<name>.<16 random hex digits>.tmp~`, created exclusively
/// (0600 when `private`); another name when one is taken.
fn create_temp(path: &Path, private: bool) -> std::io::Result<(PathBuf, File)> {
    let name = path.file_name().map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    let mut last = None;
    for _ in 0..16 {
        let mut random = [0u8; 8];
        getrandom::fill(&mut random).map_err(|e| std::io::Error::other(format!("no random name for a temporary file: {e}")))?;
        let tmp = path.with_file_name(format!("{name}.{}.tmp~", dpkps_core::base::hex(&random)));
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        if private {
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        }
        #[cfg(not(unix))]
        let _ = private;
        match options.open(&tmp) {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free name for a temporary file")))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// A fresh folder, removed by the test that passes (a failing one leaves it to look at).
    fn temp_dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("dpkps-io-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_planted_link_at_a_temporary_name_is_not_followed() {
        use std::os::unix::fs::PermissionsExt;
        let dir = temp_dir("planted");
        let victim = dir.join("victim.txt");
        std::fs::write(&victim, "the victim's own text").unwrap();
        std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o644)).unwrap();
        let target = dir.join("ledger.json");
        // The name the temporary file used to have, planted as a link to the victim.
        std::os::unix::fs::symlink(&victim, target.with_extension("tmp~")).unwrap();
        write_private(&target, b"{}").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "the victim's own text");
        assert_eq!(std::fs::metadata(&victim).unwrap().permissions().mode() & 0o777, 0o644, "not chmod-ed");
        assert_eq!(std::fs::read(&target).unwrap(), b"{}");
        assert_eq!(std::fs::metadata(&target).unwrap().permissions().mode() & 0o777, 0o600);
        // No temporary file is left behind; a link at the target itself is replaced, not followed.
        let left: Vec<String> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        assert!(left.iter().all(|n| !n.ends_with(".tmp~") || n == "ledger.tmp~"), "{left:?}");
        let linked = dir.join("out.json");
        std::os::unix::fs::symlink(&victim, &linked).unwrap();
        write_file(&linked, b"[]").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "the victim's own text");
        assert!(!std::fs::symlink_metadata(&linked).unwrap().file_type().is_symlink());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_kept_file_is_never_opened_through_a_link() {
        let dir = temp_dir("kept");
        let victim = dir.join("victim.txt");
        std::fs::write(&victim, "v").unwrap();
        let link = dir.join("job.lock");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let e = open_kept(&link, OpenOptions::new().read(true).write(true).create(true), true).unwrap_err();
        assert!(e.to_string().contains("is a symbolic link, not a regular file"), "{e}");
        // A dangling link: nothing is created at its target either.
        let dangling = dir.join("audit.jsonl");
        std::os::unix::fs::symlink(dir.join("created-elsewhere"), &dangling).unwrap();
        assert!(open_kept(&dangling, OpenOptions::new().append(true).create(true), false).is_err());
        assert!(!dir.join("created-elsewhere").exists());
        // Not a regular file.
        assert!(open_kept(&dir, OpenOptions::new().read(true), false).is_err());
        // A plain file is opened (and created 0600 when private).
        let f = open_kept(&dir.join("new.lock"), OpenOptions::new().read(true).write(true).create(true), true).unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(f.metadata().unwrap().permissions().mode() & 0o777, 0o600);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_planted_link_to_a_fifo_is_replaced_not_written_through() {
        let dir = std::env::temp_dir().join(format!("dpkps-io-fifo-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path; mkfifo reads it only.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o666) }, 0);
        let out = dir.join("run.json");
        std::os::unix::fs::symlink(&fifo, &out).unwrap();
        // Written through, this would block on the FIFO (no reader) or hand it the bytes.
        write_atomic(&out, b"private", true).unwrap();
        let meta = std::fs::symlink_metadata(&out).unwrap();
        assert!(meta.is_file(), "the link is replaced by a regular file");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::read(&out).unwrap(), b"private");
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "the FIFO is untouched");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Peak resident set size of this process (Linux), in kB (the benchmarks print it).
pub(crate) fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find(|l| l.starts_with("VmHWM:"))?.split_whitespace().nth(1)?.parse().ok()
}
