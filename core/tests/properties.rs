//! Property tests: random valid scenarios derive acyclic, complete orders; random invalid ones
//! are rejected; nothing panics on any input.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

mod common;

use mpipe::Scenario;
use mpipe::graph::event::Event;
use mpipe::scenario::layer::LayerSpec;
use mpipe::scenario::owner::OwnerSpec;
use mpipe::schedules::skeleton::Skeleton;
use mpipe::vocab::layout::Layout;
use mpipe::vocab::phase::Phase;
use mpipe::vocab::role::Role;
use petgraph::Direction;
use proptest::prelude::*;
use std::collections::HashMap;

/// A random valid scenario: regions with no adjacent transposes, one skeleton per Sharded run,
/// enough layers per Sharded region (or explicit counts with zeros), whole interleaved rounds.
fn valid_scenario() -> impl Strategy<Value = Scenario> {
    (
        1usize..=5,
        1usize..=10,
        prop::collection::vec((0u8..3, 0usize..=3, any::<bool>(), any::<bool>()), 1..=4),
        0u8..3,
        prop::collection::vec(0usize..5, 10),
    )
        .prop_map(|(p, m, raw, owner_kind, owner_list)| {
            let mut schedule: Vec<Skeleton> = Vec::new();
            let mut wavefront_skeleton = None;
            for &(kind, ..) in &raw {
                let mut s = [
                    mpipe::schedules::ONE_F_ONE_B,
                    mpipe::schedules::GPIPE,
                    mpipe::schedules::TRANSPOSE,
                ][kind as usize];
                if s == mpipe::schedules::TRANSPOSE
                    && schedule.last() == Some(&mpipe::schedules::TRANSPOSE)
                {
                    s = mpipe::schedules::ONE_F_ONE_B;
                }
                // One skeleton for every Sharded region: they weave into one wavefront.
                if s != mpipe::schedules::TRANSPOSE {
                    s = *wavefront_skeleton.get_or_insert(s);
                }
                schedule.push(s);
            }
            let mut layers = Vec::new();
            let mut cut = Vec::new();
            let mut slabs = Vec::new();
            let mut total = 0;
            for (j, (&(_, extra, trainable, explicit), &s)) in raw.iter().zip(&schedule).enumerate()
            {
                let count = match s.layout() {
                    Layout::Replicated => 1 + extra,
                    Layout::Sharded if explicit => 1 + extra,
                    Layout::Sharded => p + extra,
                };
                slabs.push(match s.layout() {
                    Layout::Sharded if explicit => {
                        // Put the region's layers on the first ranks, zeros after.
                        let mut counts = vec![0; p];
                        for l in 0..count {
                            counts[l % p.min(2)] += 1;
                        }
                        Some(counts)
                    }
                    _ => None,
                });
                // Distinct per-region times (in eighths of a second, exact in f64).
                let fwd = 0.125 * (1 + (j * 3 + extra) % 7) as f64;
                let mut spec = LayerSpec::timed(&format!("r{j}"), Role::Other, count, fwd);
                spec.output_bytes = Some(64.0 * (1 + extra) as f64);
                spec.trainable = trainable;
                layers.push(spec);
                if j > 0 {
                    cut.push(total);
                }
                total += count;
            }
            let chunks = schedule
                .iter()
                .filter(|s| **s == mpipe::schedules::ONE_F_ONE_B)
                .count();
            let mut m = m;
            if chunks > 1 {
                let rounds = (m / p).max(1);
                m = (m / rounds * rounds).max(1);
            }
            let owner = match owner_kind {
                0 => OwnerSpec::RoundRobin,
                1 => OwnerSpec::FirstRank,
                _ => OwnerSpec::Explicit(
                    owner_list
                        .iter()
                        .take(m)
                        .map(|r| r % p)
                        .chain(std::iter::repeat(0))
                        .take(m)
                        .collect(),
                ),
            };
            let mut s = common::scenario(layers, &cut, &schedule, p, m);
            s.owner = owner;
            s.hardware = Some(mpipe::scenario::hardware::Hardware {
                link_alpha_s: Some(0.25),
                link_bytes_per_s: Some(256.0),
                ..Default::default()
            });
            if slabs.iter().any(Option::is_some) {
                s.slabs = Some(slabs);
            }
            s
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn valid_scenarios_derive_complete_acyclic_orders(s in valid_scenario()) {
        let d = mpipe::derive(&s).map_err(|e| TestCaseError::fail(format!("{e}\n{}", s.to_json_string())))?;
        prop_assert!(common::executes(&d), "the derived order does not execute:\n{}", s.to_json_string());

        // Every compute-stream event sits on exactly one rank, once.
        let g = &d.order.graph;
        let mut seen = HashMap::new();
        for (rank, nodes) in d.order.nodes.iter().enumerate() {
            for &n in nodes {
                prop_assert_eq!(g[n].rank(), Some(rank));
                *seen.entry(n).or_insert(0) += 1;
            }
        }
        let on_ranks = g.node_indices().filter(|&n| g[n].rank().is_some()).count();
        prop_assert_eq!(seen.len(), on_ranks);
        prop_assert!(seen.values().all(|&c| c == 1));

        // Each microbatch's forward precedes its backward on the rank that runs both.
        for (rank, _) in d.order.nodes.iter().enumerate() {
            let actions = d.order.actions(rank);
            let pos: HashMap<_, _> = actions.iter().enumerate().map(|(i, a)| ((a.stage, a.phase, a.mb), i)).collect();
            for a in &actions {
                if a.phase == Phase::Backward {
                    let f = pos.get(&(a.stage, Phase::Forward, a.mb));
                    prop_assert!(f.is_some_and(|&f| f < pos[&(a.stage, a.phase, a.mb)]), "{} before its forward", a);
                }
            }
        }

        // Every microbatch runs a forward of every region exactly... once per placed slab.
        let fwds = g.node_weights().filter(|e| matches!(e, Event::Fwd { .. })).count();
        let per_mb: usize = d.plan.regions.iter().map(|r| match r.layout() {
            Layout::Replicated => 1,
            Layout::Sharded => r.sharded_ranks().len(),
        }).sum();
        prop_assert_eq!(fwds, per_mb * d.plan.microbatches);
    }

    #[test]
    fn composing_region_denotations_gives_the_longest_path(s in valid_scenario()) {
        let sim = mpipe::tune::pipeline::simulate_scenario(&s, mpipe::sim::engine::SimOptions::default())
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let d = &sim.derivation;
        let composed = mpipe::sim::maxplus::composed_completion(&d.order, sim.durations(), d.plan.regions.len());
        prop_assert_eq!(&composed, &sim.timeline.ends().collect::<Vec<_>>(), "{}", s.to_json_string());
        let makespan = composed.iter().copied().fold(0.0, f64::max);
        prop_assert_eq!(makespan, sim.makespan_s);
        // The event-driven simulation (a different algorithm) agrees event by event.
        let events = mpipe::sim::engine::simulate_events(&d.order, sim.durations().to_vec(), mpipe::sim::engine::SimOptions::default());
        prop_assert_eq!(&events.ends().collect::<Vec<_>>(), &sim.timeline.ends().collect::<Vec<_>>());
        // A longest path records no binders and reads each off the node's predecessors; the
        // event-driven one records them. Either way a node's binder is one of its predecessors
        // and ends when the node starts, and a node without one starts at 0.
        prop_assert!(sim.timeline.binder.is_empty());
        prop_assert_eq!(events.binder.len(), d.order.graph.node_count());
        for timeline in [&sim.timeline, &events] {
            for n in d.order.graph.node_indices() {
                let start = timeline.start_of(n).unwrap();
                match timeline.binder_of(&d.order, n) {
                    Some(b) => {
                        prop_assert!(d.order.graph.preds(n.index()).contains(&(b.index() as u32)));
                        prop_assert_eq!(timeline.end_of(b), Some(start));
                    }
                    None => prop_assert_eq!(start, 0.0),
                }
            }
        }
        // The longest path's rule, ties and all: the first predecessor to end at the start (the
        // first one at all when the node starts at 0).
        for n in d.order.graph.node_indices() {
            let start = sim.timeline.start_of(n).unwrap();
            let preds = d.order.graph.preds(n.index());
            let first = preds.iter().find(|&&p| start == 0.0 || sim.timeline.end_of(petgraph::graph::NodeIndex::new(p as usize)) == Some(start));
            prop_assert_eq!(sim.timeline.binder_of(&d.order, n).map(|b| b.index() as u32), first.copied());
        }
    }

    /// With a host that launches each rank's work (`hardware.host_launch_per_layer_s`), the
    /// longest path, the event-driven simulation and the (max,+) composition still give one
    /// timeline, and it holds every event to its launch: it starts no earlier than its launch
    /// starts and ends no earlier than its launch ends, and each rank's host launches its
    /// actions back to back from 0, in the rank's order.
    #[test]
    fn a_host_model_keeps_every_engine_in_agreement(
        s in valid_scenario(),
        forward in 0.0f64..3.0,
        backward in 0.0f64..3.0,
    ) {
        let mut s = s;
        s.hardware.get_or_insert_with(Default::default).host_launch_per_layer_s =
            Some(mpipe::scenario::hardware::PhaseSeconds {
                forward: Some(forward),
                backward: Some(backward),
                ..Default::default()
            });
        let sim = mpipe::tune::pipeline::simulate_scenario(&s, mpipe::sim::engine::SimOptions::default())
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let d = &sim.derivation;
        let launches = &sim.launches;
        let ends: Vec<f64> = sim.timeline.ends().collect();
        let composed = mpipe::sim::maxplus::composed_completion_launched(&d.order, sim.durations(), d.plan.regions.len(), launches);
        prop_assert_eq!(&composed, &ends, "{}", s.to_json_string());
        let work = mpipe::sim::cost::durations(&d.plan, &d.order);
        let events = mpipe::sim::engine::simulate_events_launched(&d.order, work.clone(), launches, mpipe::sim::engine::SimOptions::default());
        prop_assert_eq!(&events.ends().collect::<Vec<_>>(), &ends);
        for nodes in &d.order.nodes {
            let mut host = 0.0;
            for &n in nodes {
                let i = n.index();
                prop_assert!(sim.timeline.start[i] >= launches.start[i]);
                prop_assert!(ends[i] >= launches.end[i]);
                // What the timeline adds to the work is the wait for the launch, and nothing
                // else.
                let wait = sim.host_wait_s.get(i).copied().unwrap_or(0.0);
                prop_assert!((sim.durations()[i] - work[i] - wait).abs() < 1e-12);
                if d.order.graph[n].is_compute() {
                    prop_assert_eq!(launches.start[i], host);
                    host = launches.end[i];
                }
            }
        }
    }

    /// The memory curves are built from each rank's stream: every compute event stands on the
    /// stream of its own rank, once.
    #[test]
    fn every_compute_event_is_once_on_its_own_ranks_stream(s in valid_scenario()) {
        let sim = mpipe::tune::pipeline::simulate_scenario(&s, mpipe::sim::engine::SimOptions::default())
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let order = &sim.derivation.order;
        let compute = |n| matches!(order.graph.node_weight(n), Some(Event::Fwd { .. } | Event::Bwd { .. } | Event::FourPhase { .. }));
        let mut seen = vec![0u32; order.graph.node_count()];
        for (rank, nodes) in order.nodes.iter().enumerate() {
            for &n in nodes {
                seen[n.index()] += 1;
                if compute(n) {
                    prop_assert_eq!(order.graph.node_weight(n).and_then(Event::rank), Some(rank));
                }
            }
        }
        for n in order.graph.node_indices().filter(|&n| compute(n)) {
            prop_assert_eq!(seen[n.index()], 1, "{}", s.to_json_string());
        }
    }

    #[test]
    fn adjacent_transposes_or_bad_cuts_are_rejected(
        s in valid_scenario(),
        which in 0u8..3,
        at in 0usize..4,
    ) {
        let mut s = s;
        let layers: usize = s.model.layers.iter().map(|l| l.count).sum();
        match which {
            0 => { s.cut.push(layers); s.schedule.push(mpipe::schedules::ONE_F_ONE_B); }
            1 => { s.schedule.insert(at.min(s.schedule.len()), mpipe::schedules::TRANSPOSE); s.schedule.insert(at.min(s.schedule.len()), mpipe::schedules::TRANSPOSE); s.cut = (1..s.schedule.len()).collect(); }
            _ => { s.schedule.push(mpipe::schedules::GPIPE); }
        }
        prop_assert!(mpipe::derive(&s).is_err());
    }

    #[test]
    fn arbitrary_text_never_panics(text in ".{0,200}") {
        let _ = Scenario::from_json_str(&text, "fuzz.json");
    }

    #[test]
    fn mutated_samples_never_panic(
        flips in prop::collection::vec((0usize..2000, any::<u8>()), 1..6),
        which in 0usize..5,
    ) {
        let samples = [
            include_str!("../../samples/mpipe-vit-llm.json"),
            include_str!("../../samples/1f1b.json"),
            include_str!("../../samples/gpipe.json"),
            include_str!("../../samples/vpp3.json"),
            include_str!("../../samples/mpipe-vit-llm-frozen.json"),
        ];
        let mut bytes = samples[which].as_bytes().to_vec();
        for (at, b) in flips {
            let i = at % bytes.len();
            bytes[i] = b;
        }
        let text = String::from_utf8_lossy(&bytes);
        if let Ok(s) = Scenario::from_json_str(&text, "mutated.json") {
            // Keep sizes sane so a mutated "ranks": 9999999 does not allocate for minutes.
            if s.ranks.saturating_mul(s.microbatches) <= 4096 {
                let _ = mpipe::derive(&s);
            }
        }
    }
}

/// Up to five ranks and, for each of a number of regions in `regions`, a random permutation of
/// them (where each region's slabs run).
fn ranks_and_permutations(
    regions: std::ops::RangeInclusive<usize>,
) -> impl Strategy<Value = (usize, Vec<Vec<usize>>)> {
    (1usize..=5, regions).prop_flat_map(|(p, v)| {
        (
            Just(p),
            prop::collection::vec(Just((0..p).collect::<Vec<usize>>()).prop_shuffle(), v),
        )
    })
}

/// `v` regions of `p` uniform one-layer stages over `p` ranks, each region placed by its own
/// permutation (or all by the first, when `shared`).
fn placed(
    skeleton: Skeleton,
    p: usize,
    m: usize,
    perms: &[Vec<usize>],
    shared: bool,
) -> (Scenario, Scenario) {
    let v = perms.len();
    let cut: Vec<usize> = (1..v).map(|c| c * p).collect();
    let default = common::scenario(common::uniform(p * v), &cut, &vec![skeleton; v], p, m);
    let mut moved = default.clone();
    let map: Vec<usize> = (0..v)
        .flat_map(|c| perms[if shared { 0 } else { c }].clone())
        .collect();
    moved.placement = Some(mpipe::scenario::placement::PlacementSpec::Explicit(map));
    (default, moved)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn gpipe_executes_under_any_placement(
        (p, perms) in ranks_and_permutations(1..=3),
        m in 1usize..=6,
    ) {
        let (_, s) = placed(mpipe::schedules::GPIPE, p, m, &perms, false);
        let sim = mpipe::tune::pipeline::simulate_scenario(&s, mpipe::sim::engine::SimOptions::default())
            .map_err(|e| TestCaseError::fail(format!("{e}\n{}", s.to_json_string())))?;
        prop_assert!(common::executes(&sim.derivation));
        let d = &sim.derivation;
        let composed = mpipe::sim::maxplus::composed_completion(&d.order, sim.durations(), d.plan.regions.len());
        prop_assert_eq!(&composed, &sim.timeline.ends().collect::<Vec<_>>());
    }

    #[test]
    fn a_permuted_1f1b_is_the_default_schedule_relabelled(
        (p, perm) in (1usize..=5).prop_flat_map(|p| (Just(p), Just((0..p).collect::<Vec<usize>>()).prop_shuffle())),
        v in 1usize..=3,
        rounds in 1usize..=3,
    ) {
        // Whole interleaved rounds: M a multiple of P.
        let m = p * rounds;
        let (default, moved) = placed(mpipe::schedules::ONE_F_ONE_B, p, m, &vec![perm.clone(); v], true);
        let a = mpipe::tune::pipeline::simulate_scenario(&default, mpipe::sim::engine::SimOptions::default()).unwrap();
        let b = mpipe::tune::pipeline::simulate_scenario(&moved, mpipe::sim::engine::SimOptions::default())
            .map_err(|e| TestCaseError::fail(format!("{e}\n{}", moved.to_json_string())))?;
        // Rank perm[i] runs exactly what rank i runs by default (stages keep their numbers).
        for (i, &rank) in perm.iter().enumerate() {
            prop_assert_eq!(b.derivation.order.actions(rank), a.derivation.order.actions(i));
        }
        prop_assert_eq!(a.makespan_s, b.makespan_s);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn zero_bubble_family_orders_execute_and_the_three_timings_agree(
        p in 1usize..=6,
        m in 1usize..=14,
        which in 0usize..13,
        encoder in any::<bool>(),
        trainable in prop::collection::vec(any::<bool>(), 2),
        input_share in 0.0f64..=1.0,
        overlap in 0.0f64..=1.0,
    ) {
        use mpipe::schedules::{CHIMERA, DUALPIPE, DUALPIPEV, HANAYO, LOOPED_BFS, VHALF, VMIN, ZB1P, ZB2P, ZBV, ZB_AUTO};
        // (skeleton, Sharded regions): ZB-H1, interleaved zero bubble, ZB-V, DualPipeV, Looped
        // BFS, ZB-H2, V-Half, V-Min, DualPipe and Chimera (two directions), the automatic
        // scheduler (ordered by these random costs), Hanayo's one and two waves (list-scheduled).
        let (skeleton, chunks) = [
            (ZB1P, 1), (ZB1P, 2), (ZBV, 2), (DUALPIPEV, 2), (LOOPED_BFS, 3), (ZB2P, 1), (VHALF, 2), (VMIN, 2),
            (DUALPIPE, 1), (CHIMERA, 1), (ZB_AUTO, 1), (HANAYO, 2), (HANAYO, 4),
        ][which];
        let mut backbone = LayerSpec::timed("llm", Role::Backbone, chunks * p, 1.0);
        backbone.trainable = trainable[1];
        backbone.bwd_input_s = Some(2.0 * input_share);
        let offset = usize::from(encoder);
        let mut cut: Vec<usize> = (1..chunks).map(|c| offset + c * p).collect();
        let mut schedule = vec![skeleton; chunks];
        let mut layers = vec![backbone];
        if encoder {
            let mut vit = LayerSpec::timed("vit", Role::Encoder, 1, 0.5);
            vit.trainable = trainable[0];
            layers.insert(0, vit);
            cut.insert(0, 1);
            schedule.insert(0, mpipe::schedules::TRANSPOSE);
        }
        let mut s = common::scenario(layers, &cut, &schedule, p, m);
        s.hardware = Some(mpipe::scenario::hardware::Hardware { fb_overlap: Some(overlap), ..Default::default() });
        if let Err(e) = mpipe::derive(&s) {
            // Only the shapes PyTorch refuses too.
            prop_assert!(
                [
                    "interleaved-rounds", "dualpipev-microbatches", "zb2p-microbatches",
                    "dualpipe-ranks", "dualpipe-microbatches", "dualpipe-alone",
                    "chimera-ranks", "chimera-microbatches", "chimera-alone",
                ].contains(&e.rule()),
                "{e}"
            );
            return Ok(());
        }

        let sim = simulated_three_ways(&s)?;
        let d = &sim.derivation;
        // An overlapped pair runs as one slot: it starts once both halves' inputs are in, the
        // backward right after the forward, and lasts t_F + t_B − e·min(t_F, t_B).
        for &[f, b] in &d.order.pairs {
            let t = &sim.timeline;
            let (tf, tb) = (
                mpipe::sim::cost::duration(&d.plan, &d.order.graph, f),
                mpipe::sim::cost::duration(&d.plan, &d.order.graph, b),
            );
            for input in d.order.graph.neighbors_directed(b, Direction::Incoming).filter(|&n| n != f) {
                prop_assert!(t.start_of(f) >= t.end_of(input));
            }
            prop_assert_eq!(t.start_of(b), t.end_of(f));
            let slot = t.end_of(b).unwrap() - t.start_of(f).unwrap();
            prop_assert!((slot - (tf + tb - overlap * tf.min(tb))).abs() < 1e-9, "{} vs {}", slot, tf + tb);
        }
        let backward_runs = trainable[1] || (encoder && trainable[0]);
        prop_assert_eq!(
            d.order.pairs.is_empty(),
            (skeleton != DUALPIPEV && skeleton != DUALPIPE) || !backward_runs
        );
        // Every W follows its own I on the same rank.
        prop_assert!(weights_follow_their_inputs(d), "{}", s.to_json_string());
    }
}

/// `s` simulated, its derived order executing and its timeline the same by the longest path, the
/// (max,+) composition and the event simulation.
fn simulated_three_ways(s: &Scenario) -> Result<mpipe::sim::run::Simulation, TestCaseError> {
    let sim =
        mpipe::tune::pipeline::simulate_scenario(s, mpipe::sim::engine::SimOptions::default())
            .map_err(|e| TestCaseError::fail(format!("{e}\n{}", s.to_json_string())))?;
    let d = &sim.derivation;
    prop_assert!(common::executes(d), "{}", s.to_json_string());
    let ends: Vec<f64> = sim.timeline.ends().collect();
    let composed =
        mpipe::sim::maxplus::composed_completion(&d.order, sim.durations(), d.plan.regions.len());
    prop_assert_eq!(&composed, &ends);
    let events = mpipe::sim::engine::simulate_events(
        &d.order,
        sim.durations().to_vec(),
        mpipe::sim::engine::SimOptions::default(),
    );
    prop_assert_eq!(&events.ends().collect::<Vec<_>>(), &ends);
    Ok(sim)
}

/// Whether every `W` of `d`'s orders follows its own `I` on the same rank.
fn weights_follow_their_inputs(d: &mpipe::Derivation) -> bool {
    (0..d.order.nodes.len()).all(|rank| {
        let actions = d.order.actions(rank);
        actions.iter().enumerate().all(|(i, a)| {
            a.phase != Phase::Weight
                || actions
                    .iter()
                    .position(|b| b.phase == Phase::Input && b.stage == a.stage && b.mb == a.mb)
                    .is_some_and(|at| at < i)
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]

    /// Interleaved zero bubble (`zb1p`, its backward split into `I` and `W`) under any placement
    /// of its chunks, any of them frozen: an order is derived (list-scheduled where its slots
    /// deadlock or run slower, issue 26), it executes, each `W` follows its own `I`, and the
    /// longest path, the (max,+) composition and the event simulation agree under random costs;
    /// the pipeline's order (listed again with the stages' own times, and its transfers, where
    /// that is shorter) never takes longer than the one `derive` lists in units of time — with
    /// free links or transfers of up to a second each.
    #[test]
    fn a_split_backward_under_any_placement_gets_an_order_the_three_timings_agree_on(
        (p, perms) in ranks_and_permutations(2..=3),
        rounds in 1usize..=3,
        times in prop::collection::vec((1u8..=8, 0u8..=8), 15),
        trainable in prop::collection::vec(any::<bool>(), 3),
        transfers in prop::option::of(prop::collection::vec(0u8..=8, 15)),
    ) {
        let m = p * rounds;
        let (_, mut s) = placed(mpipe::schedules::ZB1P, p, m, &perms, false);
        // One layer a stage, each with its own forward and input half (in eighths of a second);
        // a region frozen at random (one with nothing trainable at or before it runs no
        // backward, an untrained one no weight half).
        s.model.layers = (0..p * perms.len())
            .map(|i| {
                let (f, input) = times[i % times.len()];
                let mut l = LayerSpec::timed(&format!("l{i}"), Role::Backbone, 1, f64::from(f) / 8.0);
                l.bwd_s = Some(f64::from(f) / 4.0);
                l.bwd_input_s = Some(f64::from(f) / 4.0 * f64::from(input) / 8.0);
                l.trainable = trainable[i / p];
                // Each stage's output, in eighths of a second over links of 1 GB/s.
                l.output_bytes = transfers.as_ref().map(|t| f64::from(t[i % t.len()]) / 8.0 * 1e9);
                l
            })
            .collect();
        if transfers.is_some() {
            s.hardware = Some(mpipe::scenario::hardware::Hardware {
                link_bytes_per_s: Some(1e9),
                link_alpha_s: Some(0.0),
                ..Default::default()
            });
        }
        let sim = simulated_three_ways(&s)?;
        let d = &sim.derivation;
        prop_assert!(weights_follow_their_inputs(d), "{}", s.to_json_string());
        let units = mpipe::derive(&s).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let units = mpipe::sim::run::run(units, mpipe::sim::engine::SimOptions::default());
        prop_assert!(sim.makespan_s <= units.makespan_s, "{}", s.to_json_string());
    }
}
