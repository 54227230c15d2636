//! The scenario fields a schedule may read beyond the shared ones (ranks, microbatches, cut).

/// A schedule's own parameter, named by the scenario field that sets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Parameter {
    /// WaveK's unit size `k`: microbatches run in waves of `k` (JanusPipe).
    WaveK,
    /// The most microbatches' activations a stage may hold: the memory limit of the zero-bubble
    /// automatic scheduler.
    ActivationLimit,
}

impl Parameter {
    /// Every parameter.
    pub const ALL: [Parameter; 2] = [Parameter::WaveK, Parameter::ActivationLimit];

    /// The scenario field (`wave_k`).
    pub fn field(self) -> &'static str {
        match self {
            Parameter::WaveK => "wave_k",
            Parameter::ActivationLimit => "activation_limit",
        }
    }

    /// The validity rule about its value (`wave-k`).
    pub fn rule(self) -> &'static str {
        match self {
            Parameter::WaveK => "wave-k",
            Parameter::ActivationLimit => "activation-limit",
        }
    }

    /// What an editor calls it (`Wave size (k)`).
    pub fn label(self) -> &'static str {
        match self {
            Parameter::WaveK => "Wave size (k)",
            Parameter::ActivationLimit => "Activation limit (microbatches)",
        }
    }

    /// What it does, in one line (an editor's hover text).
    pub fn about(self) -> &'static str {
        match self {
            Parameter::WaveK => {
                "microbatches run in waves of k (JanusPipe's WaveK; its default is P)"
            }
            Parameter::ActivationLimit => {
                "the most microbatches' activations a stage may hold (the automatic zero-bubble scheduler's memory limit; default P, as 1F1B: ZB-1p; 2P: ZB-2p)"
            }
        }
    }

    /// The largest value a scenario may give it.
    pub fn most(self) -> usize {
        match self {
            Parameter::WaveK | Parameter::ActivationLimit => crate::vocab::limits::MAX_MICROBATCHES,
        }
    }

    /// Its symbol in reports and formulas (`k`).
    pub fn symbol(self) -> &'static str {
        match self {
            Parameter::WaveK => "k",
            Parameter::ActivationLimit => "L",
        }
    }
}
