//! PyTorch's action notation: `<stage><F|B|I|W><mb>` (four-phase schedules:
//! `<stage><FE|FF|BF|BE><mb>`), and a rank's step, one action or an overlapped pair
//! (`(<action>;<action>)OVERLAP_F_B`).

use crate::vocab::ids::{Mb, Stage};
use crate::vocab::phase::Phase;
use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// A compute action in PyTorch's notation: stage index, phase, microbatch (all 0-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Action {
    pub stage: Stage,
    pub phase: Phase,
    pub mb: Mb,
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}{}", self.stage, self.phase.code(), self.mb)
    }
}

impl Serialize for Action {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Why an action string does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not an action; expected <stage><F|B|I|W|FE|FF|BF|BE><microbatch>, e.g. `4F0`")]
pub struct ActionParseError {
    /// The text as echoed ([`crate::vocab::units::echoed`]): cut, control characters escaped.
    pub text: String,
}

impl FromStr for Action {
    type Err = ActionParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let err = || ActionParseError {
            text: crate::vocab::units::echoed(text),
        };
        let at = text.find(['F', 'B', 'I', 'W']).ok_or_else(err)?;
        let (stage, rest) = text.split_at(at);
        // The longest code that matches: `FE` before `F`.
        let (phase, mb) = [
            Phase::EnergyForward,
            Phase::ForceForward,
            Phase::ForceBackward,
            Phase::EnergyBackward,
            Phase::Forward,
            Phase::Backward,
            Phase::Input,
            Phase::Weight,
        ]
        .into_iter()
        .find_map(|p| rest.strip_prefix(p.code()).map(|mb| (p, mb)))
        .ok_or_else(err)?;
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(stage) || !digits(mb) {
            return Err(err());
        }
        let index = |s: &str| s.parse::<u32>().map(|i| i as usize).map_err(|_| err());
        Ok(Action {
            stage: Stage::new(index(stage)?),
            phase,
            mb: Mb::new(index(mb)?),
        })
    }
}

/// One compute slot of a rank's order: an action, or a forward and a backward run overlapped
/// (PyTorch's `(<action>;<action>)OVERLAP_F_B`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Step {
    One(Action),
    Overlap(Action, Action),
}

impl Step {
    /// Its actions, in order.
    pub fn actions(&self) -> impl Iterator<Item = Action> {
        let (first, second) = match *self {
            Step::One(a) => (a, None),
            Step::Overlap(a, b) => (a, Some(b)),
        };
        std::iter::once(first).chain(second)
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::One(a) => write!(f, "{a}"),
            Step::Overlap(a, b) => write!(f, "({a};{b})OVERLAP_F_B"),
        }
    }
}

impl Serialize for Step {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Why a step string does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StepParseError {
    #[error(transparent)]
    Action(#[from] ActionParseError),
    #[error(
        "`{text}` is not an overlapped pair; expected (<forward>;<backward>)OVERLAP_F_B, e.g. `(0F3;3B1)OVERLAP_F_B`"
    )]
    Pair { text: String },
}

impl FromStr for Step {
    type Err = StepParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let Some(inner) = text.strip_prefix('(') else {
            return Ok(Step::One(text.parse()?));
        };
        let pair = || StepParseError::Pair {
            text: crate::vocab::units::echoed(text),
        };
        let (a, b) = inner
            .strip_suffix(")OVERLAP_F_B")
            .and_then(|body| body.split_once(';'))
            .ok_or_else(pair)?;
        let (a, b): (Action, Action) = (a.parse()?, b.parse()?);
        if a.phase != Phase::Forward || !matches!(b.phase, Phase::Backward | Phase::Input) {
            return Err(pair());
        }
        Ok(Step::Overlap(a, b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_print_and_parse() {
        let pair: Step = "(0F3;3B1)OVERLAP_F_B".parse().unwrap();
        assert_eq!(pair.to_string(), "(0F3;3B1)OVERLAP_F_B");
        assert_eq!(
            pair.actions().map(|a| a.to_string()).collect::<Vec<_>>(),
            ["0F3", "3B1"]
        );
        assert_eq!(
            "2I0".parse::<Step>().map(|s| s.to_string()),
            Ok("2I0".into())
        );
        for bad in ["(0F3;3B1)", "(0F3,3B1)OVERLAP_F_B", "(3B1;0F3)OVERLAP_F_B"] {
            assert_eq!(
                bad.parse::<Step>().unwrap_err().to_string(),
                format!(
                    "`{bad}` is not an overlapped pair; expected (<forward>;<backward>)OVERLAP_F_B, e.g. `(0F3;3B1)OVERLAP_F_B`"
                )
            );
        }
        assert_eq!(
            "(0X3;3B1)OVERLAP_F_B"
                .parse::<Step>()
                .unwrap_err()
                .to_string(),
            "`0X3` is not an action; expected <stage><F|B|I|W|FE|FF|BF|BE><microbatch>, e.g. `4F0`"
        );
    }

    #[test]
    fn actions_print_and_parse() {
        let a = Action {
            stage: Stage::new(4),
            phase: Phase::Forward,
            mb: Mb::new(0),
        };
        assert_eq!(a.to_string(), "4F0");
        assert_eq!("4F0".parse::<Action>(), Ok(a));
        assert_eq!(
            "12B31"
                .parse::<Action>()
                .map(|a| (a.stage.index(), a.phase, a.mb.index())),
            Ok((12, Phase::Backward, 31))
        );
        // The halves of a split backward.
        assert_eq!("3I1".parse::<Action>().map(|a| a.phase), Ok(Phase::Input));
        assert_eq!(
            "4W0".parse::<Action>().map(|a| a.to_string()),
            Ok("4W0".into())
        );
        for bad in ["", "F0", "4F", "4X0", "-1F0", "4F0x", "4Q0"] {
            assert!(bad.parse::<Action>().is_err(), "{bad}");
        }
        assert_eq!(
            "4X0".parse::<Action>().unwrap_err().to_string(),
            "`4X0` is not an action; expected <stage><F|B|I|W|FE|FF|BF|BE><microbatch>, e.g. `4F0`"
        );
    }
}
