//! Every schedule of the registry in words, as `mpipe schedules` prints it: its name, what it
//! is, its reference, and its textbook formulas — each at the shapes where it gives one (one,
//! two and three chunks; a `k` where it reads one), with the conditions written in the formula.

use crate::schedules::skeleton::Skeleton;
use crate::schedules::{RunCtx, Uniform};
use crate::vocab::layout::Composition;
use crate::vocab::parameter::Parameter;
use std::fmt::Write;

/// The shapes a formula is asked at: `P = 4`, `M = 8`, one to three chunks, and `k = 4` for a
/// schedule that reads it; costs with `t_B = 2t_F` (the zero-bubble papers' setting), else
/// `t_B = t_F`.
fn shapes(skeleton: Skeleton) -> Vec<(usize, RunCtx)> {
    let k = skeleton.reads(Parameter::WaveK).then_some(4);
    (1..=3)
        .map(|chunks| {
            (
                chunks,
                RunCtx {
                    ranks: 4,
                    microbatches: 8,
                    chunks,
                    wave_k: k,
                    activation_limit: None,
                },
            )
        })
        .collect()
}

/// The listing.
pub fn text() -> String {
    // A formula's setting: backwards twice the forward (a split one's halves each a forward),
    // else equal to it (Chimera's).
    let settings = [(1.0, 2.0), (1.0, 1.0)].map(|(forward_s, backward_s)| Uniform {
        forward_s,
        backward_s,
    });
    let mut out = String::new();
    for &skeleton in Skeleton::all() {
        let s = skeleton.schedule();
        let _ = writeln!(out, "{}: {}", s.name(), s.summary());
        let _ = writeln!(out, "    reference: {}", s.reference());
        let mut seen: Vec<String> = Vec::new();
        for (chunks, ctx) in shapes(skeleton) {
            let Some(f) = settings.iter().find_map(|&costs| s.formula(&ctx, costs)) else {
                continue;
            };
            let line = format!(
                "step {}; bubble {}{}",
                f.step,
                f.bubble,
                f.memory
                    .map_or(String::new(), |m| format!("; activations {m}"))
            );
            if !seen.contains(&line) {
                let _ = writeln!(
                    out,
                    "    formula ({chunks} chunk{}): {line}",
                    if chunks == 1 { "" } else { "s" }
                );
                seen.push(line);
            }
        }
        if s.composition() == Some(Composition::Transpose) {
            let _ = writeln!(
                out,
                "    formula (over its backbone's): step the backbone's + {}, w_r = s_r·t_F (s_r: the forwards before rank r's first stage), E_r: rank r's encodes; bubble the backbone's idle over the longer step, the encodes busy",
                crate::report::formula::MPIPE_SPILL
            );
        } else if seen.is_empty() {
            let _ = writeln!(
                out,
                "    formula: none{}",
                s.no_formula()
                    .map_or(" written yet".to_string(), |why| format!(" ({why})"))
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_schedule_is_listed_with_its_reference() {
        let text = text();
        for &s in Skeleton::all() {
            assert!(
                text.contains(&format!("{}: {}\n", s.name(), s.schedule().summary())),
                "{}",
                s.name()
            );
        }
        assert_eq!(
            text.matches("    reference: ").count(),
            Skeleton::all().len()
        );
        // Every schedule states a formula, or why it has none.
        assert!(!text.contains("none written yet"), "{text}");
        for s in Skeleton::all()
            .iter()
            .filter_map(|s| s.schedule().no_formula())
        {
            assert!(text.contains(&format!("    formula: none ({s})\n")), "{s}");
        }
    }
}
