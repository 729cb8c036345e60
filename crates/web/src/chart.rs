//! The training's loss curve as an inline SVG's paths, from plain values (no chart library):
//! the views place them; this computes them.

use dpkps_core::adapt::EpochLog;

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

#[cfg(test)]
mod tests {
    use super::*;

    fn log(epoch: usize, class_loss: f64) -> EpochLog {
        EpochLog { epoch, class_loss, coral_loss: 0.0 }
    }

    #[test]
    fn each_model_gets_one_line_on_shared_axes() {
        let curve = vec![
            ("coral".to_string(), log(1, 2.0)),
            ("plain".to_string(), log(1, 1.0)),
            ("coral".to_string(), log(2, 1.0)),
            ("plain".to_string(), log(2, f64::NAN)),
            ("coral".to_string(), log(3, 0.0)),
        ];
        let c = loss_chart(&curve);
        assert_eq!((c.y_max, c.epochs), (2.0, 3));
        assert_eq!(c.lines[0], ("coral".to_string(), "M0.0,0.0 L240.0,80.0 L480.0,160.0".to_string()));
        // A loss that is not a number is left out of its line.
        assert_eq!(c.lines[1], ("plain".to_string(), "M0.0,80.0".to_string()));
    }

    #[test]
    fn an_empty_or_one_epoch_curve_draws_without_dividing_by_zero() {
        let empty = loss_chart(&[]);
        assert!(empty.lines.is_empty() && empty.epochs == 0 && empty.y_max > 0.0);
        let one = loss_chart(&[("plain".to_string(), log(1, 0.0))]);
        assert_eq!(one.lines[0].1, "M0.0,160.0");
    }
}
