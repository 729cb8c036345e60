//! The error every parameter check returns, in plain words.

/// A parameter that a user got wrong, explained in plain words.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{name} {why} (got {value})")]
pub struct ParamError {
    pub name: &'static str,
    pub value: String,
    pub why: &'static str,
}

impl ParamError {
    pub fn new(name: &'static str, value: impl ToString, why: &'static str) -> Self {
        ParamError { name, value: value.to_string(), why }
    }
}
