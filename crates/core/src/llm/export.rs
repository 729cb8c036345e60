//! CSV written for download, made safe to open in a spreadsheet.
//!
//! A spreadsheet program (Excel, LibreOffice, Google Sheets) treats a cell that starts with
//! `=`, `+`, `-` or `@` as a formula, and some also after a leading tab or carriage return.
//! The cells we write hold text an LLM wrote, class labels and vocabulary terms, none of which
//! we control, so a cell like `=HYPERLINK("http://x","y")` would become a live link (or worse)
//! in the curator's spreadsheet. Following the OWASP guidance on CSV injection, such a cell is
//! prefixed with a single quote `'`, which spreadsheets read as "this is text". The quote is
//! visible to a program that reads the CSV as data; JSONL downloads carry the exact text.

use std::borrow::Cow;
use std::io::Write;

/// Characters that make a spreadsheet read a cell as a formula when they come first.
const FORMULA_START: [char; 6] = ['=', '+', '-', '@', '\t', '\r'];

/// `cell`, with a `'` in front when its first character would start a formula.
pub fn csv_cell(cell: &str) -> Cow<'_, str> {
    match cell.chars().next() {
        Some(c) if FORMULA_START.contains(&c) => Cow::Owned(format!("'{cell}")),
        _ => Cow::Borrowed(cell),
    }
}

/// Writes one record with every cell passed through [`csv_cell`].
pub fn write_record<W: Write, S: AsRef<str>>(
    w: &mut csv::Writer<W>,
    cells: impl IntoIterator<Item = S>,
) -> csv::Result<()> {
    let cells: Vec<String> = cells.into_iter().map(|c| csv_cell(c.as_ref()).into_owned()).collect();
    w.write_record(&cells)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formula_cells_are_neutralised_and_others_unchanged() {
        assert_eq!(csv_cell("=HYPERLINK(\"http://x\",\"y\")"), "'=HYPERLINK(\"http://x\",\"y\")");
        for bad in ["+1", "-2+3", "@SUM(A1)", "\tx", "\rx", "=", "+"] {
            assert_eq!(csv_cell(bad), format!("'{bad}"));
        }
        for ok in ["", "text", " =1", "a=b", "'quoted", "Ωμέγα", "1-2"] {
            assert!(matches!(csv_cell(ok), Cow::Borrowed(_)), "{ok:?}");
        }
    }

    #[test]
    fn records_are_written_neutralised_and_quoted() {
        let mut w = csv::Writer::from_writer(Vec::new());
        write_record(&mut w, ["+text, with a comma", "=HYPERLINK(\"http://x\",\"y\")", "ok"]).unwrap();
        let out = String::from_utf8(w.into_inner().unwrap()).unwrap();
        assert_eq!(out, "\"'+text, with a comma\",\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\",ok\n");
    }
}
