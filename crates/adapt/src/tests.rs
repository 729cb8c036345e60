use super::*;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Two classes in 8 dimensions, means ±1 on the first coordinate; `scale` stretches the other
/// coordinates and `offset` shifts every coordinate (a domain shift).
fn blobs(n: usize, seed: u64, scale: f32, offset: f32) -> (Matrix, Vec<usize>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut u = || (rng.next_u32() >> 8) as f32 / (1u32 << 24) as f32 - 0.5;
    let (mut rows, mut labels) = (Vec::new(), Vec::new());
    for k in 0..n {
        let y = k % 2;
        let mut r: Vec<f32> = (0..8).map(|_| u() * scale + offset).collect();
        r[0] += if y == 0 { -1.0 } else { 1.0 };
        rows.push(r);
        labels.push(y);
    }
    (Matrix::from_rows(&rows, 8).unwrap(), labels)
}

fn names() -> Vec<String> {
    vec!["a".into(), "b".into()]
}

fn small() -> TrainParams {
    TrainParams { hidden: [16, 8], epochs: 15, batch: 16, ..TrainParams::default() }
}

#[test]
fn it_learns_a_separable_task_and_the_same_seed_gives_the_same_file() {
    let (x, y) = blobs(200, 1, 0.5, 0.0);
    let (model, logs) = train(&x, &y, &names(), None, &small(), &mut |_| true).unwrap();
    assert_eq!(logs.len(), 15);
    assert!(logs[14].class_loss < logs[0].class_loss / 2.0, "{logs:?}");
    let (test, truth) = blobs(100, 2, 0.5, 0.0);
    let pred: Vec<usize> = model.predict(&test).unwrap().iter().map(|p| p.class).collect();
    let s = score::score(&truth, &pred, 2);
    assert!(s.accuracy > 0.95, "{s:?}");
    let again = train(&x, &y, &names(), None, &small(), &mut |_| true).unwrap().0;
    assert_eq!(model.to_bytes().unwrap(), again.to_bytes().unwrap(), "same seed, same model");
    let other = train(&x, &y, &names(), None, &TrainParams { seed: 2, ..small() }, &mut |_| true).unwrap().0;
    assert_ne!(model.to_bytes().unwrap(), other.to_bytes().unwrap());
}

#[test]
fn the_model_file_reads_back_and_predicts_the_same() {
    let (x, y) = blobs(100, 3, 0.5, 0.0);
    let (mut model, _) = train(&x, &y, &names(), None, &small(), &mut |_| true).unwrap();
    model.embedding_model = Some("abc123".into());
    let bytes = model.to_bytes().unwrap();
    let back = Classifier::from_bytes(&bytes).unwrap();
    assert_eq!(back.labels(), model.labels());
    assert_eq!(back.params(), model.params());
    assert_eq!(back.embedding_model.as_deref(), Some("abc123"));
    assert_eq!(back.predict(&x).unwrap(), model.predict(&x).unwrap());
    // Not a model file, a safetensors file of something else, a cut file: refused in words.
    assert!(matches!(Classifier::from_bytes(b"hello"), Err(AdaptError::ModelFile(_))));
    let other = safetensors::serialize(Vec::<(String, candle_core::Tensor)>::new(), None).unwrap();
    let e = Classifier::from_bytes(&other).unwrap_err().to_string();
    assert!(e.contains("not a dpkps classifier"), "{e}");
    assert!(Classifier::from_bytes(&bytes[..bytes.len() - 10]).is_err());
    // A weight that is not a number (the last f32 of the file).
    let mut nan = bytes.clone();
    let n = nan.len();
    nan[n - 4..].copy_from_slice(&f32::NAN.to_le_bytes());
    assert!(Classifier::from_bytes(&nan).unwrap_err().to_string().contains("not a finite number"));
    // Embeddings of the wrong width.
    let (narrow, _) = (Matrix { rows: 1, cols: 4, data: vec![0.0; 4] }, ());
    assert!(model.predict(&narrow).unwrap_err().to_string().contains("4 dimensions; the model expects 8"));
}

#[test]
fn coral_pulls_the_target_covariance_towards_the_source_on_either_layer() {
    // The target domain is stretched ×3 in every coordinate but the class axis and shifted.
    let (x, y) = blobs(400, 4, 0.5, 0.0);
    let (t, _) = blobs(400, 5, 1.5, 0.7);
    // Each at its λ of docs/recipient.md (on two logits, λ = 1000 holds the class loss at 0.48).
    for (on, lambda) in [(CoralOn::Logits, 100.0), (CoralOn::Features, 1000.0)] {
        let p = TrainParams { coral_on: on, ..small() };
        let plain = train(&x, &y, &names(), Some(&t), &TrainParams { coral_weight: 0.0, ..p.clone() }, &mut |_| true).unwrap();
        let adapted = train(&x, &y, &names(), Some(&t), &TrainParams { coral_weight: lambda, ..p }, &mut |_| true).unwrap();
        // Measured without adaptation too; trained on, it ends far smaller, and the classes
        // are still learnt.
        let (p, a) = (plain.1.last().unwrap(), adapted.1.last().unwrap());
        assert!(p.coral_loss > 0.0 && a.coral_loss < p.coral_loss / 4.0, "{on:?}: plain {p:?}, adapted {a:?}");
        let (test, truth) = blobs(200, 6, 0.5, 0.0);
        let pred: Vec<usize> = adapted.0.predict(&test).unwrap().iter().map(|p| p.class).collect();
        let s = score::score(&truth, &pred, 2);
        assert!(s.accuracy > 0.9, "{on:?}: {s:?}, {a:?}");
        assert_eq!(adapted.0.params().coral_on, on);
    }
    // Without unlabelled documents nothing is measured.
    let alone = train(&x, &y, &names(), None, &small(), &mut |_| true).unwrap();
    assert!(alone.1.iter().all(|l| l.coral_loss == 0.0));
}

#[test]
fn settings_read_back_and_a_file_from_before_the_layer_setting_says_features() {
    let p = TrainParams::default();
    assert_eq!(serde_json::from_str::<TrainParams>(&serde_json::to_string(&p).unwrap()).unwrap(), p);
    let old: TrainParams = serde_json::from_str(r#"{"coral_weight":1000.0,"epochs":30}"#).unwrap();
    assert_eq!((old.coral_on, old.coral_weight), (CoralOn::Features, 1000.0));
}

#[test]
fn a_shift_task_file_reads_back_and_a_bad_one_is_refused() {
    use shift_task::{Sample, ShiftTask};
    let (x, y) = blobs(6, 1, 0.5, 0.0);
    let (u, _) = blobs(4, 2, 0.5, 0.0);
    let task = ShiftTask {
        classes: names(),
        labelled: x.clone(),
        labelled_class: y.clone(),
        unlabelled: u.clone(),
        test_shifted: u.clone(),
        test_as_is: u,
        test_class: vec![0, 1, 0, 1],
        model: "m".into(),
        key: "k".into(),
        samples: vec![Sample { set: "unlabelled".into(), row: 3, text: "a note".into() }],
    };
    let bytes = task.to_bytes();
    assert_eq!(ShiftTask::from_bytes(&bytes).unwrap(), task);
    assert_eq!(bytes, ShiftTask::from_bytes(&bytes).unwrap().to_bytes(), "the same task, the same file");
    let refused = |t: ShiftTask| ShiftTask::from_bytes(&t.to_bytes()).unwrap_err().to_string();
    let e = refused(ShiftTask { samples: vec![Sample { set: "unlabelled".into(), row: 4, text: String::new() }], ..task.clone() });
    assert!(e.contains("a sample names a row"), "{e}");
    let e = refused(ShiftTask { test_class: vec![0, 1, 2, 1], ..task.clone() });
    assert!(e.contains("test_class does not give one known class per row"), "{e}");
    let e = refused(ShiftTask { unlabelled: Matrix { rows: 1, cols: 3, data: vec![0.0; 3] }, ..task.clone() });
    assert!(e.contains("the same width"), "{e}");
    assert!(ShiftTask::from_bytes(&bytes[..bytes.len() - 4]).is_err());
    assert!(ShiftTask::from_bytes(b"not a file").unwrap_err().to_string().contains("not a safetensors file"));
}

#[test]
fn bad_inputs_and_settings_are_refused_in_words_and_stop_cancels() {
    let (x, y) = blobs(20, 6, 0.5, 0.0);
    let one_class = vec!["a".to_string()];
    assert!(train(&x, &y, &one_class, None, &small(), &mut |_| true).unwrap_err().to_string().contains("at least two classes"));
    assert!(train(&x, &y[..5], &names(), None, &small(), &mut |_| true).is_err());
    let bad = TrainParams { batch: 1, ..small() };
    assert!(train(&x, &y, &names(), None, &bad, &mut |_| true).unwrap_err().to_string().contains("batch size"));
    let bad = TrainParams { learning_rate: f64::NAN, ..small() };
    assert!(matches!(train(&x, &y, &names(), None, &bad, &mut |_| true), Err(AdaptError::Params(_))));
    let wide = Matrix { rows: 3, cols: 9, data: vec![0.0; 27] };
    assert!(train(&x, &y, &names(), Some(&wide), &small(), &mut |_| true).unwrap_err().to_string().contains("unlabelled 9"));
    let mut seen = 0;
    let r = train(&x, &y, &names(), None, &small(), &mut |_| {
        seen += 1;
        seen < 3
    });
    assert!(matches!(r, Err(AdaptError::Cancelled)) && seen == 3);
}

#[test]
fn the_task_steps_epoch_by_epoch_names_each_model_and_stops_when_asked() {
    let (x, y) = blobs(60, 7, 0.5, 0.0);
    let (u, _) = blobs(40, 8, 1.5, 0.3);
    let (t, ty) = blobs(30, 9, 1.5, 0.3);
    let label = |v: &[usize]| -> Vec<Option<String>> { v.iter().map(|&c| Some(names()[c].clone())).collect() };
    let (labels, test_labels) = (label(&y), label(&ty));
    let p = TrainParams { epochs: 4, ..small() };
    let mut task = task::Task::new(&x, &labels, Some(&u), Some((&t, &test_labels)), &p, true).unwrap();
    assert_eq!(task.progress(), (0, 8), "two models of 4 epochs");
    let mut seen = Vec::new();
    while let Some((which, log)) = task.step().unwrap() {
        seen.push((which, task.training(), log.epoch));
        assert_eq!(task.progress().0, seen.len());
    }
    let want: Vec<(task::Which, &str, usize)> =
        (1..=4).map(|e| (task::Which::Main, "coral", e)).chain((1..=4).map(|e| (task::Which::Plain, "plain", e))).collect();
    assert_eq!(seen, want);
    let stepped = task.finish().unwrap();
    // The loop (`run`, what the CLI calls) gives the same models, byte for byte.
    let looped = task::run(&x, &labels, Some(&u), Some((&t, &test_labels)), &p, true, &mut |_, _| true).unwrap();
    assert_eq!(stepped.main.model.to_bytes().unwrap(), looped.main.model.to_bytes().unwrap());
    assert_eq!(stepped.summaries(), looped.summaries());
    assert_eq!(stepped.summaries()[1].test.as_ref().map(|s| s.documents), Some(30));
    // A false from the progress callback stops training.
    let mut epochs = 0;
    let stopped = task::run(&x, &labels, Some(&u), None, &p, true, &mut |_, _| {
        epochs += 1;
        epochs < 3
    });
    assert!(matches!(stopped, Err(AdaptError::Cancelled)), "{:?}", stopped.err());
    assert_eq!(epochs, 3);
}

#[test]
fn the_embedding_batches_cover_every_document_once() {
    struct Len;
    impl dpkps_core::embed::Embed for Len {
        fn dim(&self) -> usize {
            1
        }
        fn embed(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>, dpkps_core::embed::EmbedError> {
            Ok(texts.iter().map(|t| vec![t.len() as f32]).collect())
        }
        fn checksum(&self) -> &str {
            "len"
        }
    }
    let texts: Vec<String> = (0..11).map(|k| "x".repeat((k * 7) % 5 + 1)).collect();
    let b = task::batches(&Len, &texts, 4);
    assert_eq!(b.iter().map(Vec::len).collect::<Vec<_>>(), vec![4, 4, 3]);
    let mut all: Vec<usize> = b.concat();
    all.sort();
    assert_eq!(all, (0..11).collect::<Vec<_>>());
    let m = task::embed_texts(&mut Len, &texts, 4, &mut |_, _| true).unwrap();
    assert_eq!(m.data, texts.iter().map(|t| t.len() as f32).collect::<Vec<_>>(), "rows in the texts' order");
}
