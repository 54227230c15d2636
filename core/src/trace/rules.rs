//! Rules that turn trace event names into schedule events: a regular expression per rule with
//! the named groups `stage`, `phase` and `mb`. A missing `stage` means the rank's own stage
//! (single-stage schedules); a missing `mb` numbers the matches in order within each step; a
//! missing `phase` takes the rule's fixed `phase`. The built-in set covers PyTorch pipelining,
//! single-stage `Forward <mb>`/`Backward <mb>`, PiPPy and Megatron/NVTX-style ranges; users edit
//! the list (app rules editor, `mpipe trace --rules FILE`). The first matching rule wins.

use regex::Regex;
use serde::{Deserialize, Serialize};

/// What a matched event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum ActionKind {
    /// Forward (`F`).
    Forward,
    /// Whole backward (`B`).
    Backward,
    /// Backward for inputs only (`I`, zero-bubble schedules).
    BackwardInput,
    /// Backward for weights only (`W`).
    BackwardWeight,
    /// Second-order (JanusPipe) phases: the energy forward (`FE`), the force forward (`FF`),
    /// the force backward (`BF`) and the energy backward (`BE`).
    EnergyForward,
    ForceForward,
    ForceBackward,
    EnergyBackward,
    /// Sending an activation (`SEND_F`), a gradient (`SEND_B`) or anything (`send`).
    Send,
    /// Receiving.
    Recv,
}

impl ActionKind {
    /// The phase of a compute action; `None` for communication.
    pub fn phase(self) -> Option<crate::vocab::phase::Phase> {
        use crate::vocab::phase::Phase;
        Some(match self {
            ActionKind::Forward => Phase::Forward,
            ActionKind::Backward => Phase::Backward,
            ActionKind::BackwardInput => Phase::Input,
            ActionKind::BackwardWeight => Phase::Weight,
            ActionKind::EnergyForward => Phase::EnergyForward,
            ActionKind::ForceForward => Phase::ForceForward,
            ActionKind::ForceBackward => Phase::ForceBackward,
            ActionKind::EnergyBackward => Phase::EnergyBackward,
            ActionKind::Send | ActionKind::Recv => return None,
        })
    }

    /// The code of a compute action in the action notation (`F`, `I`, `FE`, …); `None` for
    /// communication.
    pub fn code(self) -> Option<&'static str> {
        self.phase().map(crate::vocab::phase::Phase::code)
    }

    pub fn is_compute(self) -> bool {
        self.phase().is_some()
    }

    /// A forward of any order (`F`, `FE`, `FF`): no backward work.
    pub fn is_forward(self) -> bool {
        self.phase().is_some_and(|p| !p.is_backward())
    }

    /// Reads a phase as a rule captures or states it: `F`, `forward`, `B`, `backward`, `I`,
    /// `W`, `weight`, `FE`, `FF`, `BF`, `BE` (or `energy_forward`, …), `SEND_F`, `RECV_B`,
    /// `send`, `recv` (any case).
    pub fn parse(text: &str) -> Option<(ActionKind, Option<Direction>)> {
        let lower = text.trim().to_ascii_lowercase();
        Some(match lower.as_str() {
            "f" | "fwd" | "forward" => (ActionKind::Forward, None),
            "b" | "bwd" | "backward" => (ActionKind::Backward, None),
            "i" | "input" | "backward_input" => (ActionKind::BackwardInput, None),
            "w" | "weight" | "backward_weight" => (ActionKind::BackwardWeight, None),
            "fe" | "energy_forward" => (ActionKind::EnergyForward, None),
            "ff" | "force_forward" => (ActionKind::ForceForward, None),
            "bf" | "force_backward" => (ActionKind::ForceBackward, None),
            "be" | "energy_backward" => (ActionKind::EnergyBackward, None),
            "send_f" => (ActionKind::Send, Some(Direction::Activation)),
            "send_b" => (ActionKind::Send, Some(Direction::Gradient)),
            "recv_f" => (ActionKind::Recv, Some(Direction::Activation)),
            "recv_b" => (ActionKind::Recv, Some(Direction::Gradient)),
            "send" | "isend" => (ActionKind::Send, None),
            "recv" | "recv_" | "irecv" => (ActionKind::Recv, None),
            _ => return None,
        })
    }
}

/// What a transfer carries, when the name says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Direction {
    Activation,
    Gradient,
}

/// One rule as the user sees and edits it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// What the rule recognises, for the editor and warnings.
    pub name: String,
    /// A regular expression matched against whole event names.
    pub pattern: String,
    /// The phase when the pattern has no `phase` group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub enabled: bool,
}

/// PyTorch's optimizers record `Optimizer.step#SGD.step` and `Optimizer.zero_grad#SGD.zero_grad`.
fn default_step_end_pattern() -> String {
    r"^Optimizer\.(?:step|zero_grad)#".to_string()
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

/// The whole rule set: schedule rules in priority order and the step marker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSet {
    pub rules: Vec<Rule>,
    /// Events whose name matches mark one training step each; an optional `step` group numbers it.
    pub step_pattern: String,
    /// Events whose name matches close a training step (the optimizer's step, zeroing the
    /// gradients): how steps are told apart in a trace without step markers.
    #[serde(default = "default_step_end_pattern")]
    pub step_end_pattern: String,
    /// Prefer `gpu_user_annotation` copies (device time) over the CPU annotations when a rank has
    /// both — unless the file links its launches to their kernels (flows): then the CPU spans,
    /// timed by their kernels, hold a CUDA backward's kernels too, and the copies do not.
    #[serde(default = "yes")]
    pub prefer_gpu_annotations: bool,
}

impl Default for RuleSet {
    fn default() -> Self {
        let rule = |name: &str, pattern: &str, phase: Option<&str>| Rule {
            name: name.to_string(),
            pattern: pattern.to_string(),
            phase: phase.map(str::to_string),
            enabled: true,
        };
        RuleSet {
            rules: vec![
                rule(
                    "PyTorch pipelining compute",
                    r"^PP:(?P<stage>\d+)(?P<phase>FE|FF|BF|BE|F|B|I|W)(?P<mb>\d+)$",
                    None,
                ),
                rule(
                    "PyTorch pipelining transfers",
                    r"^PP:(?P<stage>\d+)(?P<phase>SEND_F|RECV_F|SEND_B|RECV_B)(?P<mb>\d+)$",
                    None,
                ),
                rule(
                    "Single-stage schedules",
                    r"^(?P<phase>Forward|Backward) (?P<mb>\d+)$",
                    None,
                ),
                rule(
                    "PiPPy",
                    r"^(?P<phase>F|B)_(?P<stage>\d+),(?P<mb>\d+)$",
                    None,
                ),
                rule(
                    "Megatron / NVTX ranges",
                    r"^(?i)(?P<phase>forward|backward|weight)[-_ ](?:step|compute|pass)$",
                    None,
                ),
                rule(
                    "Phase markers (## forward ##)",
                    r"^## (?P<phase>forward|backward) ##$",
                    None,
                ),
                rule(
                    "NCCL / c10d point-to-point",
                    r"^(?:nccl:|c10d::)(?P<phase>send|recv_?)$",
                    None,
                ),
            ],
            step_pattern: r"^(?:ProfilerStep#|Iteration )(?P<step>\d+)$".to_string(),
            step_end_pattern: default_step_end_pattern(),
            prefer_gpu_annotations: true,
        }
    }
}

/// Why a rule set cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error("rule {index} ({name}): bad pattern: {message}")]
    Pattern {
        index: usize,
        name: String,
        message: String,
    },
    #[error(
        "rule {index} ({name}): no `phase` group and no fixed phase; say `\"phase\": \"F\"` (or B, I, W, send, recv)"
    )]
    NoPhase { index: usize, name: String },
    #[error(
        "rule {index} ({name}): unknown phase `{phase}` (use F, B, I, W, SEND_F, RECV_F, SEND_B, RECV_B, send or recv)"
    )]
    BadPhase {
        index: usize,
        name: String,
        phase: String,
    },
    #[error(
        "rule {index} ({name}): unknown group `{group}` (the groups read are stage, phase and mb)"
    )]
    BadGroup {
        index: usize,
        name: String,
        group: String,
    },
    #[error("step pattern: {message}")]
    StepPattern { message: String },
    #[error("step end pattern: {message}")]
    StepEndPattern { message: String },
    #[error("{file}:{line}:{column}: field `{path}`: {message}")]
    Json {
        file: String,
        line: usize,
        column: usize,
        path: String,
        message: String,
    },
}

/// An event name recognised by a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Classified {
    pub rule: usize,
    pub kind: ActionKind,
    pub direction: Option<Direction>,
    pub stage: Option<usize>,
    pub mb: Option<usize>,
    /// A group the name has but whose number does not fit (`PP:99999999999999999999999F0`):
    /// such an event is skipped with a warning, never read as stage 0.
    pub unreadable: Option<&'static str>,
    /// In an overlapped pair `PP:(<forward>;<backward>)OVERLAP_F_B` (one span, both actions),
    /// the backward: its kind, stage and microbatch. The classification itself is the forward.
    pub paired: Option<(ActionKind, Option<usize>, Option<usize>)>,
}

/// A kind of event and, for transfers, what it carries.
type Phase = (ActionKind, Option<Direction>);

/// A checked, compiled rule set.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// (index in the rule set, pattern, fixed phase).
    rules: Vec<(usize, Regex, Option<Phase>)>,
    step: Regex,
    step_end: Regex,
    pub prefer_gpu_annotations: bool,
}

impl RuleSet {
    /// Reads a rule set written as JSON (a rules file, the app's editor) and checks that it
    /// compiles; `file` is the name errors give.
    pub fn from_json_str(text: &str, file: &str) -> Result<RuleSet, RuleError> {
        let mut de = serde_json::Deserializer::from_str(text);
        let rules: RuleSet =
            serde_path_to_error::deserialize(&mut de).map_err(|e| RuleError::Json {
                file: file.to_string(),
                line: e.inner().line(),
                column: e.inner().column(),
                path: e.path().to_string(),
                message: crate::scenario::locate::strip_position(&e.inner().to_string()),
            })?;
        // A rule that does not compile is named at its field in the file.
        rules.compile().map_err(|e| {
            let path = match &e {
                RuleError::Pattern { index, .. } | RuleError::BadGroup { index, .. } => {
                    format!("rules[{index}].pattern")
                }
                RuleError::BadPhase { index, .. } => format!("rules[{index}].phase"),
                RuleError::NoPhase { index, .. } => format!("rules[{index}]"),
                RuleError::StepPattern { .. } => "step_pattern".to_string(),
                RuleError::StepEndPattern { .. } => "step_end_pattern".to_string(),
                RuleError::Json { .. } => return e,
            };
            let segs = crate::scenario::locate::parse_path(&path);
            let (line, column) = crate::scenario::locate::locate(text, &segs).unwrap_or((1, 1));
            RuleError::Json {
                file: file.to_string(),
                line,
                column,
                path,
                message: e.to_string(),
            }
        })?;
        Ok(rules)
    }

    /// Compiles the enabled rules, or says which one is broken.
    pub fn compile(&self) -> Result<Compiled, RuleError> {
        let mut rules = Vec::new();
        for (index, rule) in self.rules.iter().enumerate() {
            if !rule.enabled {
                continue;
            }
            let regex = Regex::new(&rule.pattern).map_err(|e| RuleError::Pattern {
                index,
                name: rule.name.clone(),
                message: e.to_string(),
            })?;
            if let Some(group) = regex
                .capture_names()
                .flatten()
                .find(|n| !["stage", "phase", "mb"].contains(n))
            {
                return Err(RuleError::BadGroup {
                    index,
                    name: rule.name.clone(),
                    group: group.to_string(),
                });
            }
            let has_group = regex.capture_names().flatten().any(|n| n == "phase");
            let fixed = match &rule.phase {
                Some(p) => Some(ActionKind::parse(p).ok_or_else(|| RuleError::BadPhase {
                    index,
                    name: rule.name.clone(),
                    phase: p.clone(),
                })?),
                None if has_group => None,
                None => {
                    return Err(RuleError::NoPhase {
                        index,
                        name: rule.name.clone(),
                    });
                }
            };
            rules.push((index, regex, fixed));
        }
        let step = Regex::new(&self.step_pattern).map_err(|e| RuleError::StepPattern {
            message: e.to_string(),
        })?;
        let step_end =
            Regex::new(&self.step_end_pattern).map_err(|e| RuleError::StepEndPattern {
                message: e.to_string(),
            })?;
        Ok(Compiled {
            rules,
            step,
            step_end,
            prefer_gpu_annotations: self.prefer_gpu_annotations,
        })
    }
}

impl Compiled {
    /// The first rule that recognises `name`. A PyTorch overlapped pair
    /// `PP:(<a>;<b>)OVERLAP_F_B` is recognised when the rules recognise `PP:<a>` as a forward and
    /// `PP:<b>` as a backward (whole or input half).
    pub fn classify(&self, name: &str) -> Option<Classified> {
        if let Some(inner) = name
            .strip_prefix("PP:(")
            .and_then(|n| n.strip_suffix(")OVERLAP_F_B"))
        {
            let (a, b) = inner.split_once(';')?;
            let first = self.classify_one(&format!("PP:{a}"))?;
            let second = self.classify_one(&format!("PP:{b}"))?;
            let pair = first.kind == ActionKind::Forward
                && matches!(
                    second.kind,
                    ActionKind::Backward | ActionKind::BackwardInput
                );
            return pair.then_some(Classified {
                unreadable: first.unreadable.or(second.unreadable),
                paired: Some((second.kind, second.stage, second.mb)),
                ..first
            });
        }
        self.classify_one(name)
    }

    fn classify_one(&self, name: &str) -> Option<Classified> {
        self.rules.iter().find_map(|(index, regex, fixed)| {
            let caps = regex.captures(name)?;
            let number = |group: &str| caps.name(group).map(|m| m.as_str().parse::<usize>());
            let (kind, direction) = match fixed {
                Some(k) => *k,
                None => ActionKind::parse(caps.name("phase")?.as_str())?,
            };
            let (stage, mb) = (number("stage"), number("mb"));
            let unreadable = match (&stage, &mb) {
                (Some(Err(_)), _) => Some("stage"),
                (_, Some(Err(_))) => Some("mb"),
                _ => None,
            };
            Some(Classified {
                rule: *index,
                kind,
                direction,
                stage: stage.and_then(Result::ok),
                mb: mb.and_then(Result::ok),
                unreadable,
                paired: None,
            })
        })
    }

    /// Whether `name` marks a step, and its number when the pattern captures one.
    pub fn step(&self, name: &str) -> Option<Option<i64>> {
        let caps = self.step.captures(name)?;
        Some(caps.name("step").and_then(|m| m.as_str().parse().ok()))
    }

    /// Whether `name` closes a training step (the optimizer's step, zeroing the gradients).
    pub fn ends_step(&self, name: &str) -> bool {
        self.step_end.is_match(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classify(name: &str) -> Option<(ActionKind, Option<usize>, Option<usize>)> {
        let c = RuleSet::default().compile().unwrap().classify(name)?;
        Some((c.kind, c.stage, c.mb))
    }

    #[test]
    fn built_in_rules_recognise_every_documented_naming() {
        use ActionKind::*;
        assert_eq!(classify("PP:2F13"), Some((Forward, Some(2), Some(13))));
        assert_eq!(classify("PP:0B1"), Some((Backward, Some(0), Some(1))));
        assert_eq!(classify("PP:3I0"), Some((BackwardInput, Some(3), Some(0))));
        assert_eq!(classify("PP:3W0"), Some((BackwardWeight, Some(3), Some(0))));
        // An overlapped pair: the forward, carrying its backward.
        let set = RuleSet::default().compile().unwrap();
        let pair = set.classify("PP:(0F3;3B1)OVERLAP_F_B").unwrap();
        assert_eq!(
            (pair.kind, pair.stage, pair.mb),
            (Forward, Some(0), Some(3))
        );
        assert_eq!(pair.paired, Some((Backward, Some(3), Some(1))));
        for not_a_pair in [
            "PP:(3B1;0F3)OVERLAP_F_B",
            "PP:(0F3)OVERLAP_F_B",
            "PP:(0F3;x)OVERLAP_F_B",
        ] {
            assert_eq!(set.classify(not_a_pair), None, "{not_a_pair}");
        }
        assert_eq!(classify("PP:1SEND_F2"), Some((Send, Some(1), Some(2))));
        assert_eq!(classify("PP:1RECV_B0"), Some((Recv, Some(1), Some(0))));
        assert_eq!(classify("Forward 7"), Some((Forward, None, Some(7))));
        assert_eq!(classify("Backward 0"), Some((Backward, None, Some(0))));
        assert_eq!(classify("F_3,1"), Some((Forward, Some(3), Some(1))));
        assert_eq!(classify("B_0,2"), Some((Backward, Some(0), Some(2))));
        assert_eq!(classify("forward-compute"), Some((Forward, None, None)));
        assert_eq!(classify("Backward_step"), Some((Backward, None, None)));
        assert_eq!(classify("nccl:send"), Some((Send, None, None)));
        assert_eq!(classify("c10d::recv_"), Some((Recv, None, None)));
        for other in [
            "PP:0UNSHARD",
            "PP:2WAIT_SEND_F0",
            "PP:0REDUCE_GRAD",
            "S_3,0",
            "aten::mm",
            "## optimizer ##",
        ] {
            assert_eq!(classify(other), None, "{other}");
        }
        let set = RuleSet::default().compile().unwrap();
        assert_eq!(set.step("ProfilerStep#551"), Some(Some(551)));
        assert_eq!(set.step("ProfilerStep"), None);
        assert_eq!(set.step("Iteration 1"), Some(Some(1)));
        assert_eq!(classify("## backward ##"), Some((Backward, None, None)));
    }

    #[test]
    fn a_broken_rule_in_a_file_is_named_at_its_field() {
        let file = |rule: &str| {
            format!("{{\n  \"rules\": [\n    {rule}\n  ],\n  \"step_pattern\": \"s\"\n}}")
        };
        let err = |rule: &str| {
            RuleSet::from_json_str(&file(rule), "mine.json")
                .unwrap_err()
                .to_string()
        };
        let bad = err(r#"{"name": "x", "pattern": "(", "phase": "F"}"#);
        assert!(
            bad.starts_with(
                "mine.json:3:30: field `rules[0].pattern`: rule 0 (x): bad pattern: regex parse error"
            ),
            "{bad}"
        );
        assert_eq!(
            err(r#"{"name": "x", "pattern": "^f$", "phase": "X"}"#),
            "mine.json:3:46: field `rules[0].phase`: rule 0 (x): unknown phase `X` (use F, B, I, W, SEND_F, RECV_F, SEND_B, RECV_B, send or recv)"
        );
        assert_eq!(
            err(r#"{"name": "x", "pattern": "^(?P<stagee>\\d+)F$", "phase": "F"}"#),
            "mine.json:3:30: field `rules[0].pattern`: rule 0 (x): unknown group `stagee` (the groups read are stage, phase and mb)"
        );
    }

    #[test]
    fn a_number_too_large_to_read_is_unreadable_not_stage_0() {
        let compiled = RuleSet::default().compile().unwrap();
        let c = compiled.classify("PP:99999999999999999999999F0").unwrap();
        assert_eq!((c.stage, c.unreadable), (None, Some("stage")));
        let c = compiled.classify("PP:3F99999999999999999999999").unwrap();
        assert_eq!((c.stage, c.mb, c.unreadable), (Some(3), None, Some("mb")));
        assert_eq!(compiled.classify("PP:3F2").unwrap().unreadable, None);
    }

    #[test]
    fn edited_rules_are_checked() {
        let mut set = RuleSet::default();
        set.rules[0].pattern = "PP:(".to_string();
        let err = set.compile().unwrap_err().to_string();
        assert!(
            err.starts_with("rule 0 (PyTorch pipelining compute): bad pattern: regex parse error"),
            "{err}"
        );
        let mut set = RuleSet::default();
        set.rules.push(Rule {
            name: "mine".into(),
            pattern: "^fwd$".into(),
            phase: None,
            enabled: true,
        });
        assert_eq!(
            set.compile().unwrap_err().to_string(),
            "rule 7 (mine): no `phase` group and no fixed phase; say `\"phase\": \"F\"` (or B, I, W, send, recv)"
        );
        set.rules[7].phase = Some("X".into());
        assert_eq!(
            set.compile().unwrap_err().to_string(),
            "rule 7 (mine): unknown phase `X` (use F, B, I, W, SEND_F, RECV_F, SEND_B, RECV_B, send or recv)"
        );
        set.rules[7].phase = Some("forward".into());
        set.rules[0].enabled = false;
        let compiled = set.compile().unwrap();
        assert_eq!(
            compiled.classify("fwd").map(|c| (c.rule, c.kind)),
            Some((7, ActionKind::Forward))
        );
        assert_eq!(compiled.classify("PP:0F0"), None);
    }
}
