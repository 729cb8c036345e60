//! The training's loss curve as an inline SVG's paths, from plain values (no chart library):
//! the views place them; this computes them.

use crate::adapt::EpochLog;

/// The drawing's size in SVG units (it scales to the page's width).
pub const WIDTH: f64 = 480.0;
pub const HEIGHT: f64 = 160.0;

/// One line per model: its name and the SVG path of its classification loss per epoch.
#[derive(Debug, Clone, PartialEq)]
pub struct LossChart {
    pub lines: Vec<(String, String)>,
    /// The loss at the top of the drawing, and the epochs across it.
    pub y_max: f64,
    pub epochs: usize,
}

/// The cross-entropy per epoch of each model in `curve` (in the order the models first
/// appear), on shared axes from 0 to the largest loss and from epoch 1 to the last.
pub fn loss_chart(curve: &[(String, EpochLog)]) -> LossChart {
    let epochs = curve.iter().map(|(_, l)| l.epoch).max().unwrap_or(0);
    let y_max = curve.iter().map(|(_, l)| l.class_loss).filter(|v| v.is_finite()).fold(0.0, f64::max).max(1e-9);
    let mut names: Vec<&str> = Vec::new();
    for (n, _) in curve {
        if !names.contains(&n.as_str()) {
            names.push(n);
        }
    }
    let x = |epoch: usize| if epochs > 1 { (epoch.saturating_sub(1)) as f64 / (epochs - 1) as f64 * WIDTH } else { 0.0 };
    let y = |loss: f64| HEIGHT - (loss.clamp(0.0, y_max) / y_max) * HEIGHT;
    let lines = names
        .into_iter()
        .map(|name| {
            let d: Vec<String> = curve
                .iter()
                .filter(|(n, l)| n == name && l.class_loss.is_finite())
                .enumerate()
                .map(|(k, (_, l))| format!("{}{:.1},{:.1}", if k == 0 { "M" } else { "L" }, x(l.epoch), y(l.class_loss)))
                .collect();
            (name.to_string(), d.join(" "))
        })
        .collect();
    LossChart { lines, y_max, epochs }
}
