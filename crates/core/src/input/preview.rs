//! The first rows of an input, so the curator can pick the text and label columns.
//!
//! Works on a prefix of the file (the app reads 64 KiB), so a cut-off last record is expected
//! and ignored. The preview stays in the page: it is shown to the curator, never sent.

use serde::{Deserialize, Serialize};

use crate::input::corpus::{CorpusError, Format};

/// What the curator sees before choosing columns. Stays in the page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Preview {
    pub file: String,
    pub format: String,
    /// Empty for .txt (one document per file).
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
    pub suggested_text: Option<String>,
    pub suggested_label: Option<String>,
}

/// Rows shown.
pub const ROWS: usize = 5;
/// Characters shown per cell.
pub const CELL_CHARS: usize = 160;

/// Builds the preview of `prefix`, the first bytes of `file`. `complete`: the prefix is the
/// whole file (then a broken last record is an error, not a cut).
pub fn preview(prefix: &[u8], file: &str, format: Format, complete: bool) -> Result<Preview, CorpusError> {
    if let Some(encoding) = crate::input::corpus::limits::utf16_bom(prefix) {
        return Err(CorpusError::NotUtf8Encoding { file: file.to_string(), encoding });
    }
    let prefix = prefix.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(prefix);
    if prefix.iter().all(u8::is_ascii_whitespace) {
        return Err(CorpusError::EmptyFile { file: file.to_string() });
    }
    // A cut may fall inside a multi-byte character: keep the valid part.
    let text = match std::str::from_utf8(prefix) {
        Ok(t) => t,
        Err(e) if !complete && e.error_len().is_none() => {
            std::str::from_utf8(&prefix[..e.valid_up_to()]).unwrap_or_default()
        }
        Err(e) => {
            let (line, byte) = locate(prefix, e.valid_up_to());
            return Err(CorpusError::InvalidUtf8 { file: file.to_string(), line, byte });
        }
    };
    let (columns, rows) = match format {
        Format::Csv => table(text, b',', file, complete)?,
        Format::Tsv => table(text, b'\t', file, complete)?,
        Format::Jsonl => jsonl(text, file, complete)?,
        Format::Txt => (Vec::new(), vec![vec![cut(text)]]),
    };
    let (suggested_text, suggested_label) = suggest(&columns, &rows);
    Ok(Preview { file: file.to_string(), format: format.name().to_string(), columns, rows, suggested_text, suggested_label })
}

fn locate(bytes: &[u8], offset: usize) -> (u64, u64) {
    let before = &bytes[..offset.min(bytes.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
    let col = before.iter().rev().take_while(|&&b| b != b'\n').count() as u64 + 1;
    (line, col)
}

fn cut(s: &str) -> String {
    let s = s.trim();
    match s.char_indices().nth(CELL_CHARS) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

type Table = (Vec<String>, Vec<Vec<String>>);

fn table(text: &str, delimiter: u8, file: &str, complete: bool) -> Result<Table, CorpusError> {
    let mut rdr = csv::ReaderBuilder::new().delimiter(delimiter).flexible(true).from_reader(text.as_bytes());
    let columns: Vec<String> = rdr
        .headers()
        .map_err(|e| CorpusError::Csv { file: file.to_string(), line: 1, message: e.to_string() })?
        .iter()
        .map(str::to_string)
        .collect();
    let mut rows = Vec::new();
    let mut records = rdr.records().peekable();
    while let Some(rec) = records.next() {
        let last = records.peek().is_none();
        match rec {
            // The last record of a prefix may be cut off: drop it rather than show half a row.
            Ok(_) if last && !complete => break,
            Ok(r) => rows.push(r.iter().map(cut).collect()),
            Err(_) if last && !complete => break,
            Err(e) => {
                let line = e.position().map_or(0, |p| p.line());
                return Err(CorpusError::Csv { file: file.to_string(), line, message: e.to_string() });
            }
        }
        if rows.len() == ROWS {
            break;
        }
    }
    Ok((columns, rows))
}

fn jsonl(text: &str, file: &str, complete: bool) -> Result<Table, CorpusError> {
    let mut columns: Vec<String> = Vec::new();
    let mut objects = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let cut_off = i + 1 == lines.len() && !complete;
        let value: serde_json::Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(_) if cut_off => break,
            Err(e) => {
                return Err(CorpusError::BadJson {
                    file: file.to_string(),
                    line: i as u64 + 1,
                    message: crate::input::corpus::json_problem(&e),
                })
            }
        };
        let Some(obj) = value.as_object() else {
            return Err(CorpusError::BadJson { file: file.to_string(), line: i as u64 + 1, message: "not an object".into() });
        };
        for k in obj.keys() {
            if !columns.contains(k) {
                columns.push(k.clone());
            }
        }
        objects.push(obj.clone());
        if objects.len() == ROWS {
            break;
        }
    }
    let rows = objects
        .iter()
        .map(|o| {
            columns
                .iter()
                .map(|c| match o.get(c) {
                    Some(serde_json::Value::String(s)) => cut(s),
                    Some(serde_json::Value::Null) | None => String::new(),
                    Some(v) => cut(&v.to_string()),
                })
                .collect()
        })
        .collect();
    Ok((columns, rows))
}

/// Text column: the one with the longest cells. Label column: a conventional name, else a
/// short-valued column that is not the text.
fn suggest(columns: &[String], rows: &[Vec<String>]) -> (Option<String>, Option<String>) {
    if columns.is_empty() {
        return (None, None);
    }
    let avg_len = |c: usize| rows.iter().map(|r| r.get(c).map_or(0, |s| s.chars().count())).sum::<usize>();
    let text = (0..columns.len()).max_by_key(|&c| avg_len(c));
    const LABEL_NAMES: [&str; 6] = ["label", "class", "category", "specialty", "medical_specialty", "target"];
    let label = columns
        .iter()
        .position(|c| LABEL_NAMES.contains(&c.trim().to_ascii_lowercase().as_str()))
        .filter(|&c| Some(c) != text);
    (text.map(|c| columns[c].clone()), label.map(|c| columns[c].clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_prefix_drops_the_cut_last_row_and_suggests_columns() {
        let csv = "id,medical_specialty,transcription\n1,Cardio,\"Chest pain, dyspnea on exertion\"\n2,Neuro,\"Headache and nau";
        let p = preview(csv.as_bytes(), "a.csv", Format::Csv, false).unwrap();
        assert_eq!(p.columns, vec!["id", "medical_specialty", "transcription"]);
        assert_eq!(p.rows.len(), 1);
        assert_eq!(p.suggested_text.as_deref(), Some("transcription"));
        assert_eq!(p.suggested_label.as_deref(), Some("medical_specialty"));
        // Complete file: the last row counts.
        let full = format!("{csv}sea\"\n");
        assert_eq!(preview(full.as_bytes(), "a.csv", Format::Csv, true).unwrap().rows.len(), 2);
    }

    #[test]
    fn jsonl_and_txt_and_errors() {
        let j = "{\"text\":\"a long note about asthma\",\"label\":\"pulmo\"}\n{\"text\":\"x\",\"label\":null,\"extra\":3}\n";
        let p = preview(j.as_bytes(), "a.jsonl", Format::Jsonl, true).unwrap();
        // Fields of each line in name order (serde_json's map), new ones appended.
        assert_eq!(p.columns, vec!["label", "text", "extra"]);
        assert_eq!(p.rows[1], vec!["", "x", "3"]);
        assert_eq!(p.suggested_label.as_deref(), Some("label"));
        let bad = "{\"text\":1}\nnot json\n";
        let e = preview(bad.as_bytes(), "b.jsonl", Format::Jsonl, true).unwrap_err().to_string();
        assert!(e.contains("b.jsonl, line 2") && e.contains("at character 2") && !e.contains("line 1"), "{e}");
        let t = preview("x".repeat(500).as_bytes(), "n.txt", Format::Txt, true).unwrap();
        assert_eq!(t.rows[0][0].chars().count(), CELL_CHARS + 1);
        assert!(matches!(preview(b"  \n", "e.csv", Format::Csv, true), Err(CorpusError::EmptyFile { .. })));
        let e = preview(b"text\n\xff\xfe\n", "u.csv", Format::Csv, true).unwrap_err().to_string();
        assert!(e.contains("line 2"), "{e}");
        // A cut inside a multi-byte character is not an error in a prefix.
        let cut_utf8 = "text\nnaïve".as_bytes();
        assert!(preview(&cut_utf8[..cut_utf8.len() - 3], "c.csv", Format::Csv, false).is_ok());
    }
}
