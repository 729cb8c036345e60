//! The readers' tests: formats, located errors, the fingerprint, and the limits.

use std::io::Read;

use super::*;

fn fields(text: &str, label: Option<&str>) -> Fields {
    Fields { text: Some(text.into()), label: label.map(Into::into), person: None }
}

fn read(input: &[u8], format: Format, f: &Fields) -> Result<Corpus, CorpusError> {
    Corpus::read(input, "in", format, f)
}

#[test]
fn csv_reads_text_and_label_with_quotes_and_newlines() {
    let input = b"id,text,label\n1,\"Chest pain, \"\"acute\"\"\nsecond line\",Cardio\n2,Cough,Pulm\n";
    let c = read(input, Format::Csv, &fields("text", Some("label"))).unwrap();
    assert_eq!(c.documents.len(), 2);
    assert_eq!(c.documents[0].text, "Chest pain, \"acute\"\nsecond line");
    assert_eq!(c.documents[1].label.as_deref(), Some("Pulm"));
    assert_eq!(c.stats.classes.len(), 2);
}

#[test]
fn csv_bom_and_header_whitespace_are_tolerated() {
    let input = "\u{feff}text , label\nhello,a\n".as_bytes();
    let c = read(input, Format::Csv, &fields("text", Some("label"))).unwrap();
    assert_eq!(c.documents[0].text, "hello");
}

#[test]
fn empty_documents_are_counted_not_dropped_silently() {
    let input = b"text,label\nhello,a\n\"   \",b\n,c\nworld,\n";
    let c = read(input, Format::Csv, &fields("text", Some("label"))).unwrap();
    assert_eq!(c.stats.records, 4);
    assert_eq!(c.stats.documents, 2);
    assert_eq!(c.stats.empty_skipped, 2);
    assert_eq!(c.stats.unlabelled, 1);
}

#[test]
fn csv_missing_column_names_the_available_ones() {
    let err = read(b"a,b\n1,2\n", Format::Csv, &fields("text", None)).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, CorpusError::MissingColumn { .. }), "{msg}");
    assert!(msg.contains("\"a\", \"b\""), "{msg}");
}

#[test]
fn csv_ragged_row_is_located() {
    let err = read(b"text,label\nok,a\nbad\n", Format::Csv, &fields("text", Some("label"))).unwrap_err();
    match err {
        CorpusError::RaggedRow { line, expected, found, .. } => assert_eq!((line, expected, found), (3, 2, 1)),
        other => panic!("unexpected {other}"),
    }
}

#[test]
fn csv_invalid_utf8_is_located() {
    let err = read(b"text\nfine\nbad \xff byte\n", Format::Csv, &fields("text", None)).unwrap_err();
    match err {
        CorpusError::InvalidUtf8 { line, byte, .. } => assert_eq!((line, byte), (3, 5)),
        other => panic!("unexpected {other}"),
    }
}

#[test]
fn empty_inputs_are_errors() {
    for format in [Format::Csv, Format::Tsv, Format::Jsonl] {
        let err = read(b"", format, &fields("text", None)).unwrap_err();
        assert!(matches!(err, CorpusError::EmptyFile { .. }), "{format:?}: {err}");
    }
    // One empty .txt is one empty document (counted), so the corpus has no documents.
    let err = read(b"", Format::Txt, &Fields::default()).unwrap_err();
    assert!(matches!(err, CorpusError::NoDocuments { records: 1, .. }), "{err}");
    let err = read(b"text\n", Format::Csv, &fields("text", None)).unwrap_err();
    assert!(matches!(err, CorpusError::EmptyFile { .. }), "{err}");
    let err = read(b"text\n\" \"\n", Format::Csv, &fields("text", None)).unwrap_err();
    assert!(matches!(err, CorpusError::NoDocuments { records: 1, .. }), "{err}");
}

#[test]
fn tsv_uses_tabs() {
    let c = read(b"text\tlabel\na, b\tx\n", Format::Tsv, &fields("text", Some("label"))).unwrap();
    assert_eq!(c.documents[0].text, "a, b");
}

#[test]
fn jsonl_reads_fields_and_skips_blank_lines() {
    let input = b"{\"t\": \"one\", \"y\": 3}\n\n{\"t\": \"two\", \"y\": null}\r\n{\"t\": null, \"y\": \"z\"}\n";
    let c = read(input, Format::Jsonl, &fields("t", Some("y"))).unwrap();
    assert_eq!(c.documents.len(), 2);
    assert_eq!(c.documents[0].label.as_deref(), Some("3"));
    assert_eq!(c.documents[1].label, None);
    assert_eq!(c.stats.empty_skipped, 1);
}

#[test]
fn jsonl_errors_are_located() {
    let err = read(b"{\"t\":\"a\"}\n{\"t\":\n", Format::Jsonl, &fields("t", None)).unwrap_err();
    assert!(matches!(err, CorpusError::BadJson { line: 2, .. }), "{err}");
    let err = read(b"{\"t\":\"a\"}\n[1]\n", Format::Jsonl, &fields("t", None)).unwrap_err();
    assert!(err.to_string().contains("an array"), "{err}");
    let err = read(b"{\"x\":\"a\"}\n", Format::Jsonl, &fields("t", None)).unwrap_err();
    assert!(matches!(err, CorpusError::MissingField { line: 1, .. }), "{err}");
    let err = read(b"{\"t\":5}\n", Format::Jsonl, &fields("t", None)).unwrap_err();
    assert!(matches!(err, CorpusError::WrongFieldType { .. }), "{err}");
    let err = read(b"{\"t\":\"\xc3\"}\n", Format::Jsonl, &fields("t", None)).unwrap_err();
    assert!(matches!(err, CorpusError::InvalidUtf8 { line: 1, .. }), "{err}");
}

#[test]
fn txt_is_one_document_and_reports_bad_utf8_line() {
    let c = read("line one\nline two\n".as_bytes(), Format::Txt, &Fields::default()).unwrap();
    assert_eq!(c.documents.len(), 1);
    let err = read(b"ok\nok\nno\xfe\n", Format::Txt, &Fields::default()).unwrap_err();
    assert!(matches!(err, CorpusError::InvalidUtf8 { line: 3, byte: 3, .. }), "{err}");
}

#[test]
fn text_field_is_required_for_tabular_formats() {
    let err = read(b"a\nb\n", Format::Csv, &Fields::default()).unwrap_err();
    assert!(matches!(err, CorpusError::FieldRequired { .. }), "{err}");
}

#[test]
fn fingerprint_depends_on_the_texts_only() {
    let a = read(b"text,label\nx,1\ny,2\n", Format::Csv, &fields("text", Some("label"))).unwrap();
    let b = read(b"{\"text\":\"x\",\"label\":\"1\"}\n{\"text\":\"y\",\"label\":\"2\"}\n", Format::Jsonl, &fields("text", None)).unwrap();
    let c = read(b"text,label\nx,1\ny z,2\n", Format::Csv, &fields("text", Some("label"))).unwrap();
    assert_eq!(a.fingerprint, b.fingerprint);
    assert_ne!(a.fingerprint, c.fingerprint);
    assert_eq!(a.fingerprint.len(), 64);
}

#[test]
fn fingerprint_ignores_order_and_file_splits() {
    let all = b"text\nalpha\nbeta\ngamma\n";
    let a = read(all, Format::Csv, &fields("text", None)).unwrap();
    let reordered = read(b"text\ngamma\nalpha\nbeta\n", Format::Csv, &fields("text", None)).unwrap();
    assert_eq!(a.fingerprint, reordered.fingerprint);
    // The same documents split over two files (one CSV, one JSONL), read into one ingest.
    let mut ingest = Ingest::new(false);
    stream(&b"text\nbeta\n"[..], "1.csv", Format::Csv, &fields("text", None), None, &mut ingest, &mut |_| {}).unwrap();
    stream(&b"{\"text\":\"gamma\"}\n{\"text\":\"alpha\"}\n"[..], "2.jsonl", Format::Jsonl, &fields("text", None), None, &mut ingest, &mut |_| {})
        .unwrap();
    let (_, keys) = ingest.finish_keyed("2 files").unwrap();
    assert_eq!(keys.fingerprint, a.fingerprint);
    assert_eq!(keys.doc_hashes.len(), 3);
    // The legacy key is order-sensitive (it only finds old ledgers).
    assert_ne!(keys.legacy, keys.fingerprint);
    // A duplicated or a missing document is another corpus.
    let dup = read(b"text\nalpha\nbeta\ngamma\ngamma\n", Format::Csv, &fields("text", None)).unwrap();
    let fewer = read(b"text\nalpha\nbeta\n", Format::Csv, &fields("text", None)).unwrap();
    assert_ne!(dup.fingerprint, a.fingerprint);
    assert_ne!(fewer.fingerprint, a.fingerprint);
}

#[test]
fn format_from_path() {
    assert_eq!(Format::from_path("a/B.CSV"), Some(Format::Csv));
    assert_eq!(Format::from_path("x.ndjson"), Some(Format::Jsonl));
    assert_eq!(Format::from_path("noext"), None);
}

/// Reads `input` with small caps (so that the tests need no huge inputs).
fn read_limited(input: impl Read, format: Format, f: &Fields, limits: Limits) -> Result<usize, CorpusError> {
    let mut ingest = Ingest::with_limits(f.label.is_some(), limits);
    let mut n = 0;
    stream(input, "in", format, f, None, &mut ingest, &mut |_| n += 1)?;
    Ok(n)
}

/// A reader that counts what was taken from it.
struct Counting<R>(R, std::rc::Rc<std::cell::Cell<u64>>);
impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.0.read(buf)?;
        self.1.set(self.1.get() + n as u64);
        Ok(n)
    }
}

#[test]
fn a_record_over_the_cap_is_refused_where_it_is_before_it_is_held() {
    let small = Limits { record_bytes: 1024, documents: 1000 };
    let long = "x".repeat(2000);
    // CSV: the row's line; a record of several lines, where it starts.
    let csv = format!("text,label\nshort,a\n{long},b\nafter,c\n");
    let e = read_limited(csv.as_bytes(), Format::Csv, &fields("text", Some("label")), small).unwrap_err();
    assert!(matches!(e, CorpusError::RecordTooLarge { line: 3, max: 1024, .. }), "{e}");
    assert_eq!(
        e.to_string(),
        "in, line 3: this record (a row, or a JSON line) is over 1 KiB, the most one document may take here; split it, or leave it out"
    );
    let quoted = format!("text\nok\n\"first line\n{long}\"\n");
    let e = read_limited(quoted.as_bytes(), Format::Csv, &fields("text", None), small).unwrap_err();
    assert!(matches!(e, CorpusError::RecordTooLarge { line: 3, .. }), "{e}");
    // JSONL and a .txt file.
    let jsonl = format!("{{\"t\":\"a\"}}\n{{\"t\":\"{long}\"}}\n");
    let e = read_limited(jsonl.as_bytes(), Format::Jsonl, &fields("t", None), small).unwrap_err();
    assert!(matches!(e, CorpusError::RecordTooLarge { line: 2, .. }), "{e}");
    let e = read_limited(long.as_bytes(), Format::Txt, &Fields::default(), small).unwrap_err();
    assert!(matches!(e, CorpusError::TextFileTooLarge { max: 1024, .. }) && e.to_string().contains("over 1 KiB"), "{e}");
    // At the cap exactly, all three are read.
    let at_cap = "y".repeat(1024);
    assert_eq!(read_limited(format!("t\n{at_cap}\n").as_bytes(), Format::Csv, &fields("t", None), small).unwrap(), 1);
    let line = format!("{{\"t\":\"{}\"}}\n", "y".repeat(1024 - 8));
    assert_eq!(read_limited(line.as_bytes(), Format::Jsonl, &fields("t", None), small).unwrap(), 1);
    assert_eq!(read_limited(at_cap.as_bytes(), Format::Txt, &Fields::default(), small).unwrap(), 1);
    // An endless record is refused having read little more than the cap (and the CSV
    // parser's buffer): never held whole.
    for (format, start) in [(Format::Csv, &b"t\n\""[..]), (Format::Jsonl, b"{\"t\":\""), (Format::Txt, b"")] {
        let taken = std::rc::Rc::new(std::cell::Cell::new(0));
        let endless = Counting(start.chain(std::io::repeat(b'z')).take(64 << 20), taken.clone());
        let e = read_limited(endless, format, &fields("t", None), small).unwrap_err();
        assert!(matches!(e, CorpusError::RecordTooLarge { .. } | CorpusError::TextFileTooLarge { .. }), "{format:?}: {e}");
        assert!(taken.get() <= 1024 + 2 * CSV_BUFFER as u64, "{format:?}: read {} bytes", taken.get());
    }
    // The default cap.
    assert_eq!(Ingest::new(false).limits, Limits { record_bytes: 16 << 20, documents: 5_000_000 });
}

#[test]
fn a_load_of_too_many_documents_is_refused_at_the_first_one_over() {
    let few = Limits { record_bytes: 1 << 20, documents: 3 };
    // Empty rows do not count; the fourth document is on line 6.
    let csv = b"text\na\n\" \"\nb\nc\nd\ne\n";
    let e = read_limited(&csv[..], Format::Csv, &fields("text", None), few).unwrap_err();
    assert!(matches!(e, CorpusError::TooManyDocuments { line: 6, max: 3, .. }), "{e}");
    assert!(e.to_string().starts_with("in, line 6: more than 3 documents in this load"), "{e}");
    let jsonl = b"{\"t\":\"a\"}\n{\"t\":\"b\"}\n\n{\"t\":\"c\"}\n{\"t\":\"d\"}\n";
    let e = read_limited(&jsonl[..], Format::Jsonl, &fields("t", None), few).unwrap_err();
    assert!(matches!(e, CorpusError::TooManyDocuments { line: 5, .. }), "{e}");
    // Across the files of one load: .txt files one document each.
    let mut ingest = Ingest::with_limits(false, few);
    for i in 0..3 {
        stream(&b"text"[..], &format!("{i}.txt"), Format::Txt, &Fields::default(), None, &mut ingest, &mut |_| {}).unwrap();
    }
    let e = stream(&b"text"[..], "3.txt", Format::Txt, &Fields::default(), None, &mut ingest, &mut |_| {}).unwrap_err();
    assert_eq!(e.to_string(), "3.txt, line 1: more than 3 documents in this load, the most it may hold (each one stays in memory); read a part of the corpus");
}

#[test]
fn a_utf16_file_is_named_as_such() {
    let le: Vec<u8> = [0xFF, 0xFE].into_iter().chain("text\nhello\n".encode_utf16().flat_map(u16::to_le_bytes)).collect();
    let be: Vec<u8> = [0xFE, 0xFF].into_iter().chain("text\nhello\n".encode_utf16().flat_map(u16::to_be_bytes)).collect();
    for (bytes, mark) in [(&le, "UTF-16 little-endian (it starts with the byte-order mark FF FE)"), (&be, "UTF-16 big-endian (it starts with the byte-order mark FE FF)")] {
        for format in [Format::Csv, Format::Tsv, Format::Jsonl, Format::Txt] {
            let e = read(bytes, format, &fields("text", None)).unwrap_err();
            assert!(matches!(e, CorpusError::NotUtf8Encoding { .. }), "{format:?}: {e}");
            assert_eq!(e.to_string(), format!("in: the file is {mark}, not UTF-8; save it as UTF-8 and try again"));
        }
        let e = crate::input::preview::preview(bytes, "in", Format::Csv, false).unwrap_err();
        assert!(e.to_string().contains(mark), "the preview too: {e}");
    }
}

#[test]
fn a_missing_column_lists_only_the_first_columns_briefly() {
    let mut header: Vec<String> = (0..100).map(|i| format!("c{i}")).collect();
    header[1] = "h".repeat(5000);
    let input = format!("{}\n{}\n", header.join(","), vec!["v"; 100].join(","));
    let e = read(input.as_bytes(), Format::Csv, &fields("text", None)).unwrap_err();
    let m = e.to_string();
    assert!(m.starts_with(&format!("in: there is no column named \"text\"; the columns are: \"c0\", \"{}\"…, \"c2\"", "h".repeat(40))), "{m}");
    assert!(m.ends_with("\"c19\", and 80 more"), "{m}");
    assert!(m.len() < 400, "{} characters", m.len());
}
