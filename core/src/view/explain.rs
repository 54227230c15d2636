//! Teaching: what every rank does at an instant of the simulated step and, when it is idle, why —
//! read off the timeline's binders (the event whose finish set each start), so the reason is the
//! simulator's own: "waiting for 2F3 from rank 1", "warmup: nothing to do until the first
//! microbatch arrives", a transfer still in flight, or the rank's work being done.

use crate::graph::event::Event;
use crate::sim::run::Simulation;
use crate::view::scene::Scene;
use crate::view::timings::EventTiming;
use crate::vocab::units::secs;
use petgraph::graph::NodeIndex;
use serde::Serialize;

/// An event another rank's start waits for.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct Waited {
    /// `2F3`, or `the loss of microbatch 3` for events without an action.
    pub what: String,
    /// The rank that runs it (`None` for a collective).
    pub rank: Option<usize>,
    pub end_s: f64,
}

/// Why a rank is idle at an instant.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Idle {
    /// Before the rank's first backbone forward: its first microbatch has not arrived yet.
    Warmup { waiting_for: Option<Waited> },
    /// Its next event waits for an event that is still running or not yet started elsewhere.
    Waiting { next: String, waiting_for: Waited },
    /// Its next event's input is on the wire.
    Transfer {
        next: String,
        /// `Send`, `Gather`, … with the microbatch.
        comm: String,
        from: Waited,
        arrives_s: f64,
    },
    /// Nothing is left for this rank in this step.
    Done,
}

/// What a rank does at an instant.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct RankAt {
    pub rank: usize,
    /// The compute event running, if any.
    pub running: Option<EventTiming>,
    /// A gradient reduce running on the rank's stream (`AllReduce(ReplicaGroup)`), if any.
    pub reducing: Option<String>,
    /// Why it is idle, when nothing runs.
    pub idle: Option<Idle>,
    pub memory_bytes: f64,
}

impl RankAt {
    /// One sentence: `rank 0: 0F5 (forward of microbatch 5) · holds 6.80 GB`, or the reason it
    /// is idle.
    pub fn sentence(&self) -> String {
        let doing = if let Some(e) = &self.running {
            format!(
                "{} ({})",
                e.action,
                phase_words(e.action.phase, e.mb().index())
            )
        } else if let Some(r) = &self.reducing {
            format!("reducing weight gradients ({r})")
        } else {
            match &self.idle {
                Some(idle) => format!("idle — {}", idle.sentence()),
                None => "idle".to_string(),
            }
        };
        format!(
            "rank {}: {doing} · holds {}",
            self.rank,
            crate::vocab::units::bytes(self.memory_bytes)
        )
    }
}

/// What an action of `phase` computes for microbatch `mb`, as a lesson says it: a split
/// backward's halves by name (the point of a zero-bubble lesson), a second-order phase by its.
fn phase_words(phase: crate::vocab::phase::Phase, mb: usize) -> String {
    use crate::vocab::phase::Phase;
    match phase {
        Phase::Input => {
            format!(
                "input half of the backward of microbatch {mb}: the gradient the stage before waits for"
            )
        }
        Phase::Weight => format!(
            "weight half of the backward of microbatch {mb}: its weight gradients, which nothing waits for"
        ),
        other => format!("{} of microbatch {mb}", other.describe()),
    }
}

impl Waited {
    fn phrase(&self) -> String {
        match self.rank {
            Some(r) => format!("{} from rank {r}", self.what),
            None => self.what.clone(),
        }
    }
}

impl Idle {
    /// Why, in words.
    pub fn sentence(&self) -> String {
        match self {
            Idle::Warmup { waiting_for } => match waiting_for {
                Some(w) => format!(
                    "warmup: nothing to do until the first microbatch arrives (waiting for {}, done at {})",
                    w.phrase(),
                    secs(w.end_s)
                ),
                None => "warmup: nothing to do until the first microbatch arrives".to_string(),
            },
            Idle::Waiting { next, waiting_for } => format!(
                "waiting for {} (done at {}) before it can run {next}",
                waiting_for.phrase(),
                secs(waiting_for.end_s)
            ),
            Idle::Transfer {
                next,
                comm,
                from,
                arrives_s,
            } => format!(
                "waiting for the output of {} to arrive ({comm}, at {}) before it can run {next}",
                from.phrase(),
                secs(*arrives_s)
            ),
            Idle::Done => {
                "cooldown: its work for this step is done; the step ends with the last rank"
                    .to_string()
            }
        }
    }
}

/// A short name of the event at `n`.
fn describe(sim: &Simulation, n: NodeIndex) -> Option<Waited> {
    let d = &sim.derivation;
    let end_s = sim.timeline.end_of(n)?;
    let (what, rank) = match d.order.graph.node_weight(n) {
        Some(
            e @ (Event::Fwd { rank, .. }
            | Event::Bwd { rank, .. }
            | Event::FourPhase { rank, .. }
            | Event::Recompute { rank, .. }),
        ) => (
            e.action().map_or_else(String::new, |a| a.to_string()),
            Some(*rank),
        ),
        Some(Event::Loss { mb, rank }) => (format!("the loss of microbatch {mb}"), Some(*rank)),
        Some(Event::DpReduce { region, rank, .. }) => (
            format!("the gradient reduce of region {region}"),
            Some(*rank),
        ),
        Some(Event::Coll {
            comm,
            mb,
            from_rank,
            ..
        }) => (format!("the {comm:?} of microbatch {mb}"), Some(*from_rank)),
        Some(Event::Copy {
            mb,
            stage,
            rank,
            to_host,
            ..
        }) => (
            format!(
                "the copy of stage {stage}'s activations of microbatch {mb} {}",
                if *to_host {
                    "to the host"
                } else {
                    "back from the host"
                }
            ),
            Some(*rank),
        ),
        Some(Event::StepBarrier) | None => ("the step barrier".to_string(), None),
    };
    Some(Waited {
        what,
        rank: rank.map(usize::from),
        end_s,
    })
}

/// Why `rank` is idle at `t`, given that nothing runs on it then (`None` only for a simulation
/// whose timeline misses an event of its order).
fn why_idle(sim: &Simulation, scene: &Scene, rank: usize, t: f64) -> Option<Idle> {
    let d = &sim.derivation;
    let g = &d.order.graph;
    let timeline = &sim.timeline;
    let nodes = d.order.nodes.get(rank).map_or(&[][..], Vec::as_slice);
    // The stream runs in order, so ends are non-decreasing: the next event is the first that
    // ends after `t` and takes time.
    let from = nodes.partition_point(|&n| timeline.end_of(n).is_some_and(|e| e <= t));
    let Some(&next) = nodes
        .get(from..)
        .unwrap_or_default()
        .iter()
        .find(|&&n| timeline.duration_of(n).is_some_and(|d| d > 0.0))
    else {
        return Some(Idle::Done);
    };
    let next_name = describe(sim, next)?.what;
    // Follow the binders back through zero-length events and collectives to what holds it up.
    let mut at = next;
    let mut waited = None;
    for _ in 0..8 {
        let Some(b) = timeline.binder_of(&d.order, at) else {
            break;
        };
        match g.node_weight(b) {
            Some(Event::Coll { comm, mb, .. }) => {
                let producer = timeline.binder_of(&d.order, b);
                let (start, end) = timeline.span_of(b)?;
                if start <= t
                    && let Some(p) = producer
                {
                    return Some(Idle::Transfer {
                        next: next_name,
                        comm: format!("{comm:?} of microbatch {mb}"),
                        from: describe(sim, p)?,
                        arrives_s: end,
                    });
                }
                match producer {
                    Some(p) => at = p,
                    None => {
                        waited = Some(describe(sim, b)?);
                        break;
                    }
                }
                if g.node_weight(at).and_then(Event::rank) != Some(rank) {
                    waited = Some(describe(sim, at)?);
                    break;
                }
            }
            Some(e) if e.rank() == Some(rank) && timeline.duration_of(b) == Some(0.0) => at = b,
            Some(_) => {
                waited = Some(describe(sim, b)?);
                break;
            }
            None => break,
        }
    }
    let before_backbone = scene
        .lanes
        .get(rank)
        .and_then(|l| l.wavefront)
        .is_none_or(|w| t < w.start_s);
    let forward_next = g
        .node_weight(next)
        .is_some_and(crate::sim::metrics::is_forward);
    Some(match waited {
        _ if before_backbone && forward_next => Idle::Warmup {
            waiting_for: waited,
        },
        Some(w) => Idle::Waiting {
            next: next_name,
            waiting_for: w,
        },
        None => Idle::Warmup { waiting_for: None },
    })
}

/// Every rank's state at `t`.
pub fn at_time(sim: &Simulation, scene: &Scene, t: f64) -> Vec<RankAt> {
    let d = &sim.derivation;
    (0..d.plan.ranks)
        .map(|rank| {
            let running = scene.running(rank, t).cloned();
            let reducing = if running.is_some() {
                None
            } else {
                reduce_at(sim, rank, t)
            };
            let idle = (running.is_none() && reducing.is_none())
                .then(|| why_idle(sim, scene, rank, t))
                .flatten();
            let memory_bytes = sim.memory.get(rank).map_or(0.0, |c| {
                let i = c.points.partition_point(|p| p[0] <= t);
                i.checked_sub(1)
                    .and_then(|i| c.points.get(i))
                    .map_or(c.static_bytes, |p| p[1])
            });
            RankAt {
                rank,
                running,
                reducing,
                idle,
                memory_bytes,
            }
        })
        .collect()
}

/// The gradient reduce running on `rank`'s stream at `t`, if any.
fn reduce_at(sim: &Simulation, rank: usize, t: f64) -> Option<String> {
    let d = &sim.derivation;
    let timeline = &sim.timeline;
    let nodes = d.order.nodes.get(rank)?;
    let i = nodes.partition_point(|&n| timeline.end_of(n).is_some_and(|e| e <= t));
    let &n = nodes.get(i)?;
    match d.order.graph.node_weight(n)? {
        Event::DpReduce { region, group, .. } if timeline.start_of(n)? <= t => {
            Some(format!("region {region}, AllReduce over {group:?}"))
        }
        _ => None,
    }
}
