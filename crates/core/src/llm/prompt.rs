//! Prompts: the only text that leaves the page. Built from a template, the DP keyphrase
//! sequences, the document type and class label (public by assumption, see `report`), and
//! few-shot examples that the curator has marked as public. Nothing else goes in.

use serde::{Deserialize, Serialize};

/// The default template, after the paper's prompt, reworded from what a small local model
/// returned (docs/llm.md, “What the local model writes”): the keyphrases come first, on a line of their own, and the
/// request after them says what the reply must look like (paragraphs of full sentences, about
/// 150 words) and what it must not (a list, a numbered list, definitions). Asked to "mention
/// each of these keyphrases", the model gave half its replies back as lists or glossaries. The
/// keyphrases are separated by [`KEYPHRASE_SEPARATOR`], which the template names so that the
/// model reads each keyphrase whole.
pub const DEFAULT_TEMPLATE: &str = "Keyphrases (separated by semicolons): {keyphrases}.\n\nWrite a realistic {doc_type} ({label}) of about 150 words, in two or three paragraphs of full sentences. Use each keyphrase above naturally in the sentences, in any order; do not list, number or define them. Write only the {doc_type}.";

/// What `{keyphrases}` puts between keyphrases. Not a comma: vocabulary terms may contain
/// commas (MeSH chemical names such as "Amino Acids, Peptides, and Proteins"), and a
/// comma-joined list would read as more, shorter keyphrases. The bundled vocabularies have no
/// semicolon in any term; a user's own list might, and the few-shot parser below then splits
/// only on semicolons.
pub const KEYPHRASE_SEPARATOR: &str = "; ";
pub const DEFAULT_SYSTEM: &str = "You write realistic, fictional {doc_type}s in flowing prose: full sentences and paragraphs, never lists. Every person and detail is invented.";

/// An example pair the curator marks as public (never a private document).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FewShot {
    pub keyphrases: Vec<String>,
    pub label: Option<String>,
    pub text: String,
}

/// How prompts are written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptSettings {
    pub doc_type: String,
    pub system: String,
    pub template: String,
    pub few_shot: Vec<FewShot>,
}

impl Default for PromptSettings {
    fn default() -> Self {
        PromptSettings {
            doc_type: "clinical note".into(),
            system: DEFAULT_SYSTEM.into(),
            template: DEFAULT_TEMPLATE.into(),
            few_shot: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PromptError {
    #[error("the prompt template must contain {{keyphrases}}, where the private keyphrases go")]
    NoKeyphrases,
    #[error("the document type is empty")]
    NoDocType,
    #[error("few-shot example {0} has no text")]
    EmptyExample(usize),
    #[error("few-shot example {0} must start with a line \"keyphrases: a, b, c\"")]
    ExampleFormat(usize),
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub role: String,
    pub content: String,
}

impl PromptSettings {
    pub fn check(&self) -> Result<(), PromptError> {
        if !self.template.contains("{keyphrases}") {
            return Err(PromptError::NoKeyphrases);
        }
        if self.doc_type.trim().is_empty() {
            return Err(PromptError::NoDocType);
        }
        if let Some(i) = self.few_shot.iter().position(|f| f.text.trim().is_empty()) {
            return Err(PromptError::EmptyExample(i + 1));
        }
        Ok(())
    }

    fn fill(&self, text: &str, keyphrases: &[String], label: Option<&str>) -> String {
        // A sampled sequence may repeat a keyphrase (DP-KPS samples with replacement, which
        // measured better on MTSamples than forbidding repeats); the prompt names each once.
        let mut distinct: Vec<&str> = Vec::with_capacity(keyphrases.len());
        for k in keyphrases {
            if !distinct.contains(&k.as_str()) {
                distinct.push(k);
            }
        }
        let keyphrases = distinct.join(KEYPHRASE_SEPARATOR);
        let doc_type = self.doc_type.trim();
        substitute(text, &[("{keyphrases}", &keyphrases), ("{doc_type}", doc_type), ("{label}", label.unwrap_or(doc_type))])
    }

    /// The messages of one chat completion: system, few-shot pairs, the request.
    pub fn messages(&self, keyphrases: &[String], label: Option<&str>) -> Vec<Message> {
        let mut out = Vec::with_capacity(2 + 2 * self.few_shot.len());
        if !self.system.trim().is_empty() {
            out.push(Message { role: "system".into(), content: self.fill(&self.system, &[], label) });
        }
        for ex in &self.few_shot {
            out.push(Message { role: "user".into(), content: self.fill(&self.template, &ex.keyphrases, ex.label.as_deref()) });
            out.push(Message { role: "assistant".into(), content: ex.text.clone() });
        }
        out.push(Message { role: "user".into(), content: self.fill(&self.template, keyphrases, label) });
        out
    }
}

/// Replaces each placeholder of `text` with its value in ONE pass over the template: what a
/// value brings in is never scanned again. Chained `str::replace` calls would expand a
/// keyphrase, document type or label that itself contains `{label}` (a user's vocabulary
/// term or class name can be any text).
fn substitute(text: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(text.len() + values.iter().map(|(_, v)| v.len()).sum::<usize>());
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let tail = &rest[open..];
        match values.iter().find(|(name, _)| tail.starts_with(name)) {
            Some((name, value)) => {
                out.push_str(value);
                rest = &tail[name.len()..];
            }
            None => {
                out.push('{');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Parses few-shot examples typed by the curator: blocks separated by a blank line, each
/// `keyphrases: a, b, c` (or `a; b; c` when a keyphrase has a comma: a list with a semicolon
/// is split on semicolons only), optionally `label: x`, then the example text.
pub fn parse_examples(text: &str) -> Result<Vec<FewShot>, PromptError> {
    let mut out = Vec::new();
    for (n, block) in text.split("\n\n").map(str::trim).filter(|b| !b.is_empty()).enumerate() {
        let mut keyphrases = None;
        let mut label = None;
        let mut body = Vec::new();
        for line in block.lines() {
            let lower = line.trim_start().to_ascii_lowercase();
            if body.is_empty() && lower.starts_with("keyphrases:") {
                let list = &line.trim_start()["keyphrases:".len()..];
                let sep = if list.contains(';') { ';' } else { ',' };
                keyphrases = Some(list.split(sep).map(|k| k.trim().to_string()).filter(|k| !k.is_empty()).collect());
            } else if body.is_empty() && lower.starts_with("label:") {
                label = Some(line.trim_start()["label:".len()..].trim().to_string());
            } else {
                body.push(line);
            }
        }
        let keyphrases: Vec<String> = keyphrases.ok_or(PromptError::ExampleFormat(n + 1))?;
        let text = body.join("\n").trim().to_string();
        if text.is_empty() {
            return Err(PromptError::EmptyExample(n + 1));
        }
        out.push(FewShot { keyphrases, label, text });
    }
    Ok(out)
}

/// A rough token count (≈ 4 characters per token for English BPE vocabularies), for the
/// estimate shown before anything is sent. Not used for any limit.
pub fn estimate_tokens(messages: &[Message]) -> usize {
    messages.iter().map(|m| m.content.chars().count().div_ceil(4) + 4).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_the_template_and_orders_messages() {
        let mut p = PromptSettings::default();
        p.few_shot.push(FewShot { keyphrases: vec!["cough".into()], label: Some("pulmo".into()), text: "Ex.".into() });
        let m = p.messages(&["heart failure".into(), "edema".into(), "heart failure".into()], Some("cardio"));
        assert_eq!(m.iter().map(|m| m.role.as_str()).collect::<Vec<_>>(), ["system", "user", "assistant", "user"]);
        assert!(m[0].content.contains("clinical notes"), "{}", m[0].content);
        assert!(m[1].content.contains("(pulmo)") && m[1].content.contains(": cough."), "{}", m[1].content);
        assert!(m[3].content.contains("(cardio)") && m[3].content.contains(": heart failure; edema."), "{}", m[3].content);
        assert!(estimate_tokens(&m) > 30);
    }

    #[test]
    fn keyphrases_with_commas_stay_whole() {
        let p = PromptSettings::default();
        let m = p.messages(&["Amino Acids, Peptides, and Proteins".into(), "Cough".into()], None);
        let user = &m[1].content;
        assert!(user.contains("separated by semicolons"), "{user}");
        assert!(user.contains(": Amino Acids, Peptides, and Proteins; Cough."), "{user}");
    }

    #[test]
    fn placeholders_are_substituted_in_one_pass() {
        // Values that contain placeholders come out literally: a keyphrase "{label}", a
        // document type "{keyphrases}", a label "{doc_type}".
        let p = PromptSettings {
            doc_type: "note {keyphrases}".into(),
            template: "[{doc_type}] [{label}] [{keyphrases}] {unknown} {".into(),
            ..Default::default()
        };
        let m = p.messages(&["{label}".into(), "x {doc_type}".into()], Some("L {label}"));
        let user = &m[m.len() - 1].content;
        assert_eq!(user, "[note {keyphrases}] [L {label}] [{label}; x {doc_type}] {unknown} {");
        assert_eq!(substitute("{a}{b}", &[("{a}", "{b}"), ("{b}", "B")]), "{b}B");
        assert_eq!(substitute("é{a}ü", &[("{a}", "ß")]), "éßü");
    }

    #[test]
    fn parses_examples() {
        let ex = parse_examples("keyphrases: cough, fever\nlabel: pulmo\nA short note.\nSecond line.\n\n\nkeyphrases: edema\nText two.").unwrap();
        assert_eq!(ex.len(), 2);
        assert_eq!(ex[0].keyphrases, vec!["cough", "fever"]);
        assert_eq!(ex[0].label.as_deref(), Some("pulmo"));
        assert_eq!(ex[0].text, "A short note.\nSecond line.");
        assert_eq!(ex[1].label, None);
        assert_eq!(parse_examples("just text"), Err(PromptError::ExampleFormat(1)));
        assert_eq!(parse_examples("keyphrases: a\n"), Err(PromptError::EmptyExample(1)));
        assert_eq!(parse_examples("  \n"), Ok(vec![]));
        let semi = parse_examples("keyphrases: Amino Acids, Peptides, and Proteins; cough\nText.").unwrap();
        assert_eq!(semi[0].keyphrases, vec!["Amino Acids, Peptides, and Proteins", "cough"]);
    }

    #[test]
    fn refuses_templates_without_keyphrases() {
        let p = PromptSettings { template: "Write a note.".into(), ..Default::default() };
        assert_eq!(p.check(), Err(PromptError::NoKeyphrases));
        let p = PromptSettings { doc_type: " ".into(), ..Default::default() };
        assert_eq!(p.check(), Err(PromptError::NoDocType));
        assert!(PromptSettings::default().check().is_ok());
    }
}
