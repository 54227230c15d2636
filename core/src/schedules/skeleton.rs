//! Skeletons: the scenario's name for a region's schedule, a handle on one [`Schedule`] of the
//! registry ([`crate::schedules::REGISTRY`]), with the questions the rest of the crate asks of
//! it, and the registry's lookups by property (the schedule that composes a certain way, that
//! reads a parameter, that splits another's backward) — never by name.

use crate::schedules::{REGISTRY, Schedule};
use crate::vocab::layout::{Composition, Layout};
use crate::vocab::parameter::Parameter;
use crate::vocab::phase::OpSet;
use serde::de::{self, EnumAccess, VariantAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::hash::{Hash, Hasher};

/// How one region's work is ordered: a schedule of the registry, written by its name.
#[derive(Clone, Copy)]
pub struct Skeleton(&'static dyn Schedule);

impl Skeleton {
    /// The skeleton of `schedule` (each schedule file defines its constant with this).
    pub const fn of(schedule: &'static dyn Schedule) -> Skeleton {
        Skeleton(schedule)
    }

    /// Every skeleton, in the order the app lists them.
    pub fn all() -> &'static [Skeleton] {
        REGISTRY
    }

    /// The skeleton the scenario calls `name`.
    pub fn named(name: &str) -> Option<Skeleton> {
        REGISTRY.iter().copied().find(|s| s.name() == name)
    }

    pub fn schedule(self) -> &'static dyn Schedule {
        self.0
    }

    pub fn name(self) -> &'static str {
        self.0.name()
    }

    /// `layout(transpose) = Replicated`; `layout(1f1b) = layout(gpipe) = Sharded`.
    pub fn layout(self) -> Layout {
        self.0.layout()
    }

    /// Whether the schedule splits each backward into its input and weight halves.
    pub fn splits_backward(self) -> bool {
        self.0.ops() == OpSet::SplitBackward
    }

    /// Whether the schedule runs two directions through mirrored regions
    /// ([`Schedule::bidirectional`]).
    pub fn bidirectional(self) -> bool {
        self.0.bidirectional()
    }

    /// Whether the schedule runs four phases per microbatch (FE, FF, BF, BE: second order).
    pub fn second_order(self) -> bool {
        self.0.ops() == OpSet::FourPhase
    }

    /// Whether some of the schedule's backwards may be split (every one, or, in a mixed schedule
    /// such as DualPipeV, those its slots say).
    pub fn may_split_backward(self) -> bool {
        self.0.ops() != OpSet::ForwardBackward
    }

    /// How its work joins each rank's stream, for a Replicated schedule.
    pub fn composition(self) -> Option<Composition> {
        self.0.composition()
    }

    /// Whether it reads `parameter`.
    pub fn reads(self, parameter: Parameter) -> bool {
        self.0.parameters().contains(&parameter)
    }

    /// The registry's schedule that composes its work as `composition`.
    pub fn composing(composition: Composition) -> Option<Skeleton> {
        REGISTRY
            .iter()
            .copied()
            .find(|s| s.composition() == Some(composition))
    }

    /// The registry's schedule of `ops` that reads `parameter` (a second-order schedule given a
    /// `wave_k` runs as the one that reads it).
    pub fn reading(parameter: Parameter, ops: OpSet) -> Option<Skeleton> {
        REGISTRY
            .iter()
            .copied()
            .find(|s| s.reads(parameter) && s.0.ops() == ops)
    }

    /// The registry's schedule that is this one with its backward split into `I` and `W`.
    pub fn with_split_backward(self) -> Option<Skeleton> {
        REGISTRY
            .iter()
            .copied()
            .find(|s| s.0.splits_backward_of() == Some(self))
    }

    /// The schedule this one runs as when the scenario gives `parameter` (itself, when it reads
    /// it; a second-order schedule given a `wave_k` runs as the one of its op set that reads it).
    pub fn given(self, parameter: Parameter) -> Option<Skeleton> {
        Skeleton::reading(parameter, self.0.ops())
    }

    /// The names of the registry's schedules that read `parameter`, as `` `wavek` `` (joined
    /// with "or").
    pub fn readers(parameter: Parameter) -> String {
        Skeleton::names_where(|s| s.reads(parameter))
    }

    /// The names of the registry's schedules that can run with `parameter`: those that read it,
    /// then those that run as one that does, as `` `wavek` `` (joined with "or").
    pub fn runners(parameter: Parameter) -> String {
        let readers = Skeleton::readers(parameter);
        let others = Skeleton::names_where(|s| !s.reads(parameter) && s.given(parameter).is_some());
        [readers, others]
            .into_iter()
            .filter(|n| !n.is_empty())
            .collect::<Vec<_>>()
            .join(" or ")
    }

    /// The names of the registry's schedules `keep` keeps, in registry order, as `` `wavek` ``
    /// (joined with "or").
    pub fn names_where(keep: impl Fn(Skeleton) -> bool) -> String {
        let names: Vec<String> = REGISTRY
            .iter()
            .filter(|s| keep(**s))
            .map(|s| format!("`{s}`"))
            .collect();
        names.join(" or ")
    }
}

/// The registry's first skeleton.
impl Default for Skeleton {
    fn default() -> Self {
        crate::schedules::DEFAULT
    }
}

/// Two skeletons are the same when they have the same name (names are unique in the registry).
impl PartialEq for Skeleton {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for Skeleton {}

impl Hash for Skeleton {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name().hash(state);
    }
}

impl fmt::Debug for Skeleton {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Skeleton({})", self.name())
    }
}

impl fmt::Display for Skeleton {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Skeleton {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Skeleton {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        /// Reads the name as an enum's variant, so a JSON reader places an unknown name where it
        /// places an unknown variant (at the name, not after it).
        struct Named;
        impl<'de> Visitor<'de> for Named {
            type Value = Skeleton;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a skeleton name")
            }
            fn visit_str<E: de::Error>(self, name: &str) -> Result<Skeleton, E> {
                Skeleton::named(name).ok_or_else(|| {
                    let names: Vec<String> = REGISTRY.iter().map(|s| format!("`{s}`")).collect();
                    E::custom(format!(
                        "unknown variant `{name}`, expected one of {}",
                        names.join(", ")
                    ))
                })
            }
            fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Skeleton, A::Error> {
                let (skeleton, unit) = data.variant_seed(NameSeed)?;
                unit.unit_variant()?;
                Ok(skeleton)
            }
        }
        struct NameSeed;
        impl<'de> de::DeserializeSeed<'de> for NameSeed {
            type Value = Skeleton;
            fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Skeleton, D::Error> {
                d.deserialize_identifier(Named)
            }
        }
        deserializer.deserialize_enum("Skeleton", &[], Named)
    }
}

/// `⟨1f1b, transpose⟩` style rendering of a schedule.
pub fn schedule_to_string(schedule: &[Skeleton]) -> String {
    let names: Vec<&str> = schedule.iter().map(|s| s.name()).collect();
    format!("⟨{}⟩", names.join(", "))
}
