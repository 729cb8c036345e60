//! Text for the terminal. A leaf: the commands' error paths print through it.

/// `text` with its control characters (all but newline and tab) written as `\u{…}` escapes,
/// for a terminal: error text may hold bytes an endpoint chose (an HTTP body), and raw escape
/// sequences would retitle the window, clear the screen or plant links.
pub(crate) fn terminal_safe(text: &str) -> String {
    text.chars().map(|c| if c.is_control() && c != '\n' && c != '\t' { c.escape_unicode().to_string() } else { c.to_string() }).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn control_characters_reach_the_terminal_escaped() {
        let body = "bad request \u{1b}]0;PWNED\u{7}\u{1b}[2J\r\nline two\tend";
        let safe = super::terminal_safe(body);
        assert_eq!(safe, "bad request \\u{1b}]0;PWNED\\u{7}\\u{1b}[2J\\u{d}\nline two\tend");
        assert!(!safe.chars().any(|c| c.is_control() && c != '\n' && c != '\t'));
    }
}
