//! The scenario fields a schedule may read beyond the shared ones (ranks, microbatches, cut).

/// A schedule's own parameter, named by the scenario field that sets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Parameter {
    /// WaveK's unit size `k`: microbatches run in waves of `k` (JanusPipe).
    WaveK,
}

impl Parameter {
    /// Every parameter.
    pub const ALL: [Parameter; 1] = [Parameter::WaveK];

    /// The scenario field (`wave_k`).
    pub fn field(self) -> &'static str {
        match self {
            Parameter::WaveK => "wave_k",
        }
    }

    /// The validity rule about its value (`wave-k`).
    pub fn rule(self) -> &'static str {
        match self {
            Parameter::WaveK => "wave-k",
        }
    }

    /// What an editor calls it (`Wave size (k)`).
    pub fn label(self) -> &'static str {
        match self {
            Parameter::WaveK => "Wave size (k)",
        }
    }

    /// What it does, in one line (an editor's hover text).
    pub fn about(self) -> &'static str {
        match self {
            Parameter::WaveK => {
                "microbatches run in waves of k (JanusPipe's WaveK; its default is P)"
            }
        }
    }

    /// The largest value a scenario may give it.
    pub fn most(self) -> usize {
        match self {
            Parameter::WaveK => crate::vocab::limits::MAX_MICROBATCHES,
        }
    }

    /// Its symbol in reports and formulas (`k`).
    pub fn symbol(self) -> &'static str {
        match self {
            Parameter::WaveK => "k",
        }
    }
}
