//! Every validity rule rejects with its exact message, naming the rule and the field.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // tests fail by panicking

mod common;

use common::{scenario, uniform, vit_llm};
use mpipe::Scenario;
use mpipe::scenario::Workload;
use mpipe::scenario::hardware::Hardware;
use mpipe::scenario::layer::LayerSpec;
use mpipe::scenario::owner::OwnerSpec;
use mpipe::schedules::{GPIPE, ONE_F_ONE_B, TRANSPOSE};
use mpipe::vocab::role::Role;

fn error(s: &Scenario) -> (String, String, String) {
    let e = mpipe::derive(s).unwrap_err();
    (e.rule().to_string(), e.field(), e.to_string())
}

#[test]
fn cut_must_lie_inside_the_model() {
    let s = scenario(uniform(8), &[8], &[ONE_F_ONE_B, ONE_F_ONE_B], 2, 4);
    assert_eq!(
        error(&s),
        (
            "cut-tiles".into(),
            "cut[0]".into(),
            "rule `cut-tiles`: cut[0] = 8 is outside (0, 8); boundaries must lie strictly inside the model's 8 layers".into()
        )
    );
    let s = scenario(uniform(8), &[0], &[ONE_F_ONE_B, ONE_F_ONE_B], 2, 4);
    assert_eq!(error(&s).1, "cut[0]");
}

#[test]
fn cut_must_increase() {
    let s = scenario(
        uniform(12),
        &[6, 4],
        &[ONE_F_ONE_B, ONE_F_ONE_B, ONE_F_ONE_B],
        2,
        4,
    );
    assert_eq!(
        error(&s),
        (
            "cut-tiles".into(),
            "cut[1]".into(),
            "rule `cut-tiles`: cut[1] = 4 does not follow cut[0] = 6; boundaries must be strictly increasing".into()
        )
    );
    let s = scenario(
        uniform(12),
        &[6, 6],
        &[ONE_F_ONE_B, ONE_F_ONE_B, ONE_F_ONE_B],
        2,
        4,
    );
    assert_eq!(error(&s).1, "cut[1]");
}

#[test]
fn one_skeleton_per_region() {
    let s = scenario(uniform(8), &[4], &[ONE_F_ONE_B], 2, 4);
    assert_eq!(
        error(&s),
        (
            "one-skeleton-per-region".into(),
            "schedule".into(),
            "rule `one-skeleton-per-region`: the cut makes 2 region(s) but `schedule` gives 1 skeleton(s)".into()
        )
    );
}

#[test]
fn adjacent_transposes_are_rejected_with_their_normal_form() {
    let s = scenario(
        vit_llm(4, 8, true),
        &[2, 4],
        &[TRANSPOSE, TRANSPOSE, ONE_F_ONE_B],
        4,
        8,
    );
    let e = mpipe::derive(&s).unwrap_err();
    assert_eq!(e.rule(), "no-adjacent-replicated");
    assert_eq!(e.field(), "schedule[1]");
    assert_eq!(
        e.to_string(),
        "rule `no-adjacent-replicated`: regions 1 and 2 are both Replicated in ⟨transpose, transpose, 1f1b⟩; adjacent transposes share one owner map and collapse into one region. Normal form: cut [4], schedule ⟨transpose, 1f1b⟩"
    );
    let mpipe::DeriveError::Invalid(v) = e else {
        panic!()
    };
    assert_eq!(
        v.normal_form(),
        Some((vec![4], vec![TRANSPOSE, ONE_F_ONE_B]))
    );
    // The normal form is valid, and the error carries it as a one-click edit.
    let fixed = scenario(vit_llm(4, 8, true), &[4], &[TRANSPOSE, ONE_F_ONE_B], 4, 8);
    assert!(mpipe::derive(&fixed).is_ok());
    let remedy = mpipe::derive(&s).unwrap_err().remedy().unwrap();
    assert_eq!(
        remedy.label,
        "Apply the normal form: cut [4], schedule ⟨transpose, 1f1b⟩"
    );
    let mut edited = s.clone();
    remedy.edit.apply(&mut edited);
    assert_eq!(edited, fixed);
}

#[test]
fn a_sharded_region_needs_a_layer_per_rank_unless_counts_are_given() {
    let s = scenario(vit_llm(2, 8, true), &[2], &[ONE_F_ONE_B, ONE_F_ONE_B], 4, 8);
    assert_eq!(
        error(&s),
        (
            "sharded-slabs".into(),
            "schedule[0]".into(),
            "rule `sharded-slabs`: region 1 (1f1b) has 2 layer(s) for 4 ranks; give per-rank layer counts in `slabs[0]` (zeros allowed)".into()
        )
    );
    // The error carries its fix: one rank a layer, the others none.
    let remedy = mpipe::derive(&s).unwrap_err().remedy().unwrap();
    assert_eq!(
        remedy.label,
        "Give region 1's 2 layer(s) one rank each (slabs[0]; the other ranks get none)"
    );
    let mut s = s;
    remedy.edit.apply(&mut s);
    assert_eq!(s.slabs, Some(vec![Some(vec![1, 1, 0, 0]), None]));
    assert!(mpipe::derive(&s).is_ok());
    s.slabs = Some(vec![Some(vec![2, 0, 0, 0]), None]);
    let d = mpipe::derive(&s).unwrap();
    // The encoder is its own first stage on rank 0: ranks 1..3 hold no slab of region 1.
    assert_eq!(d.plan.regions[0].sharded_ranks(), [0]);
    let rank1: Vec<String> = d.order.actions(1).iter().map(|a| a.to_string()).collect();
    assert!(
        rank1
            .iter()
            .all(|a| !a.starts_with("1F") && !a.starts_with("1B")),
        "{rank1:?}"
    );
}

#[test]
fn slab_counts_are_checked() {
    let base = scenario(uniform(8), &[4], &[ONE_F_ONE_B, TRANSPOSE], 2, 4);
    let mut s = base.clone();
    s.slabs = Some(vec![None]);
    assert_eq!(
        error(&s).2,
        "rule `sharded-slabs`: `slabs` has 1 entries but there are 2 regions"
    );
    let mut s = base.clone();
    s.slabs = Some(vec![None, Some(vec![2, 2])]);
    assert_eq!(
        error(&s).2,
        "rule `sharded-slabs`: `slabs[1]` gives counts for region 2, which is Replicated (transpose runs whole on every rank)"
    );
    let mut s = base.clone();
    s.slabs = Some(vec![Some(vec![4]), None]);
    assert_eq!(
        error(&s),
        (
            "sharded-slabs".into(),
            "slabs[0]".into(),
            "rule `sharded-slabs`: `slabs[0]` has 1 counts for 2 ranks".into()
        )
    );
    let mut s = base;
    s.slabs = Some(vec![Some(vec![1, 2]), None]);
    assert_eq!(
        error(&s).2,
        "rule `sharded-slabs`: `slabs[0]` sums to 3 but region 1 has 4 layers"
    );
}

#[test]
fn a_wavefront_must_not_mix_skeletons() {
    let s = scenario(uniform(8), &[4], &[ONE_F_ONE_B, GPIPE], 2, 4);
    assert_eq!(
        error(&s),
        (
            "uniform-wavefront".into(),
            "schedule[1]".into(),
            "rule `uniform-wavefront`: the Sharded regions 1, 2 form one wavefront but mix skeletons (1f1b, gpipe); mixed skeletons in one wavefront are not defined yet".into()
        )
    );
    // Its fix (issue 25, item 9): every Sharded region to the skeleton fewest of them run — the
    // one just chosen, typically — and on a tie the first that differs; applied, it derives.
    let remedy = |s: &Scenario| match mpipe::derive(s) {
        Err(e) => e.remedy().unwrap(),
        Ok(_) => panic!("valid"),
    };
    let fix = remedy(&s);
    assert_eq!(fix.label, "Set every Sharded region (1, 2) to gpipe");
    let mut fixed = s.clone();
    fix.edit.apply(&mut fixed);
    assert_eq!(fixed.schedule, [GPIPE, GPIPE]);
    assert!(mpipe::derive(&fixed).is_ok());
    let three = scenario(
        uniform(12),
        &[4, 8],
        &[GPIPE, ONE_F_ONE_B, ONE_F_ONE_B],
        2,
        4,
    );
    let fix = remedy(&three);
    assert_eq!(fix.label, "Set every Sharded region (1, 2, 3) to gpipe");
    let three = scenario(
        uniform(12),
        &[4, 8],
        &[ONE_F_ONE_B, GPIPE, ONE_F_ONE_B],
        2,
        4,
    );
    assert_eq!(
        remedy(&three).label,
        "Set every Sharded region (1, 2, 3) to gpipe"
    );
    // Never a skeleton whose own rules the uniform wavefront breaks: zbv runs exactly two
    // chunks, so three regions become 1f1b, and the fix derives.
    let three = scenario(
        uniform(12),
        &[4, 8],
        &[ONE_F_ONE_B, mpipe::schedules::ZBV, ONE_F_ONE_B],
        4,
        8,
    );
    let fix = remedy(&three);
    assert_eq!(fix.label, "Set every Sharded region (1, 2, 3) to 1f1b");
    let mut fixed = three.clone();
    fix.edit.apply(&mut fixed);
    assert!(mpipe::derive(&fixed).is_ok());
}

#[test]
fn interleaved_needs_whole_rounds() {
    let s = scenario(uniform(8), &[4], &[ONE_F_ONE_B, ONE_F_ONE_B], 4, 9);
    assert_eq!(error(&s).0, "interleaved-rounds");
    assert_eq!(error(&s).1, "microbatches");
    // A single 1F1B region accepts any M.
    assert!(mpipe::derive(&scenario(uniform(8), &[], &[ONE_F_ONE_B], 4, 9)).is_ok());
}

#[test]
fn sizes_must_be_positive() {
    for (field, edit) in [
        (
            "ranks",
            (|s: &mut Scenario| s.ranks = 0) as fn(&mut Scenario),
        ),
        ("microbatches", |s: &mut Scenario| s.microbatches = 0),
        ("data_parallel", |s: &mut Scenario| s.data_parallel = 0),
    ] {
        let mut s = scenario(uniform(4), &[], &[ONE_F_ONE_B], 2, 2);
        edit(&mut s);
        assert_eq!(
            error(&s),
            (
                "sizes".into(),
                field.into(),
                format!("rule `sizes`: `{field}` must be at least 1")
            )
        );
    }
    let s = scenario(vec![], &[], &[ONE_F_ONE_B], 2, 2);
    assert_eq!(error(&s).2, "rule `sizes`: the model has no layers");
}

#[test]
fn layer_costs_are_checked() {
    let mut bad = LayerSpec::timed("vit", Role::Encoder, 2, 1.0);
    bad.fwd_flops = Some(1e9);
    let s = scenario(
        vec![bad, LayerSpec::timed("llm", Role::Backbone, 2, 1.0)],
        &[],
        &[ONE_F_ONE_B],
        2,
        2,
    );
    assert_eq!(
        error(&s),
        (
            "layer-cost".into(),
            "model.layers[0]".into(),
            "rule `layer-cost`: layer 0 (`vit`): give either explicit times (`fwd_s`, `bwd_s`) or roofline inputs (`fwd_flops`, `bwd_flops`, `fwd_bytes`, `bwd_bytes`), not both".into()
        )
    );
    let roof = LayerSpec {
        name: "llm".into(),
        count: 4,
        fwd_flops: Some(1e12),
        fwd_bytes: Some(1e9),
        ..LayerSpec::default()
    };
    let mut s = scenario(vec![roof], &[], &[ONE_F_ONE_B], 2, 2);
    assert_eq!(
        error(&s).2,
        "rule `roofline-hardware`: layer 0 (`llm`) gives roofline inputs, so `hardware.peak_flops` must be set"
    );
    s.hardware = Some(Hardware {
        peak_flops: Some(1e14),
        hbm_bytes_per_s: Some(1e12),
        ..Hardware::default()
    });
    assert!(mpipe::derive(&s).is_ok());
}

#[test]
fn owner_maps_are_checked() {
    let mut s = scenario(vit_llm(4, 8, true), &[4], &[TRANSPOSE, ONE_F_ONE_B], 4, 4);
    s.owner = OwnerSpec::Explicit(vec![0, 1, 2]);
    assert_eq!(
        error(&s),
        (
            "owner".into(),
            "owner".into(),
            "rule `owner`: the explicit owner map has 3 entries for 4 microbatches".into()
        )
    );
    s.owner = OwnerSpec::Explicit(vec![0, 1, 4, 3]);
    assert_eq!(
        error(&s),
        (
            "owner".into(),
            "owner[2]".into(),
            "rule `owner`: owner[2] = 4 is not a rank (ranks are 0..4)".into()
        )
    );
    s.owner = OwnerSpec::Explicit(vec![3, 3, 0, 0]);
    let d = mpipe::derive(&s).unwrap();
    let rank3: Vec<String> = d.order.actions(3).iter().map(|a| a.to_string()).collect();
    assert_eq!(rank3[..3], ["3F0", "3F1", "7F0"]);
    s.owner = OwnerSpec::FirstRank;
    let d = mpipe::derive(&s).unwrap();
    let rank0: Vec<String> = d.order.actions(0).iter().map(|a| a.to_string()).collect();
    assert_eq!(rank0[..5], ["0F0", "0F1", "0F2", "0F3", "4F0"]);
}

#[test]
fn workload_scales_are_checked() {
    let mut s = scenario(vit_llm(4, 8, true), &[4], &[TRANSPOSE, ONE_F_ONE_B], 4, 4);
    s.workload = Some(Workload {
        encoder_scale: Some(vec![1.0, 2.0]),
        ..Workload::default()
    });
    assert_eq!(
        error(&s).2,
        "rule `workload`: `workload.encoder_scale` has 2 entries for 4 microbatches"
    );
    s.workload = Some(Workload {
        encoder_scale: Some(vec![1.0, 2.0, -1.0, 0.0]),
        ..Workload::default()
    });
    assert_eq!(
        error(&s).2,
        "rule `workload`: `workload.encoder_scale[2]` = -1 must be a finite number ≥ 0"
    );
}

#[test]
fn validity_errors_are_positioned_in_the_file() {
    let text = r#"{
  "format": "mpipe-scenario/1",
  "model": { "layers": [ { "name": "llm", "count": 12, "fwd_s": 1.0 } ] },
  "cut": [6, 4],
  "schedule": ["1f1b", "1f1b", "1f1b"],
  "ranks": 2,
  "microbatches": 4
}"#;
    let s = Scenario::from_json_str(text, "bad.json").unwrap();
    let e = mpipe::derive(&s).unwrap_err();
    assert_eq!(
        e.locate(text, "bad.json").to_string(),
        "bad.json:4:14: field `cut[1]`: rule `cut-tiles`: cut[1] = 4 does not follow cut[0] = 6; boundaries must be strictly increasing"
    );
}

#[test]
fn huge_sizes_are_rejected_before_anything_is_allocated() {
    let mut s = scenario(uniform(4), &[], &[ONE_F_ONE_B], 2, 2);
    s.ranks = 1 << 40;
    assert_eq!(
        error(&s),
        (
            "sizes".into(),
            "ranks".into(),
            format!(
                "rule `sizes`: `ranks` = {} is larger than this version supports (65536)",
                1u64 << 40
            )
        )
    );
    let mut s = scenario(uniform(4), &[], &[ONE_F_ONE_B], 2, 2);
    s.model.layers[0].count = usize::MAX;
    s.model
        .layers
        .push(LayerSpec::timed("more", Role::Backbone, 5, 1.0));
    assert_eq!(error(&s).1, "model.layers");
    let s = scenario(uniform(64), &[], &[ONE_F_ONE_B], 65536, 1 << 20);
    assert_eq!(error(&s).0, "sizes");
    // The slots are named as what they are, not as a count of microbatches.
    let s = scenario(uniform(4096), &[], &[ONE_F_ONE_B], 4096, 100_000);
    assert_eq!(
        error(&s),
        (
            "sizes".into(),
            "microbatches".into(),
            "rule `sizes`: 1 region(s) × 4096 ranks × 100000 microbatches = 409600000 slots of the order graph, more than this version supports (67108864); fewer microbatches (or ranks) fit".into()
        )
    );
    let mut s = scenario(uniform(4), &[], &[ONE_F_ONE_B], 2, 2);
    s.slabs = Some(vec![Some(vec![usize::MAX, 5])]);
    assert_eq!(
        error(&s).2,
        format!(
            "rule `sharded-slabs`: `slabs[0]` sums to {} but region 1 has 4 layers",
            usize::MAX
        )
    );
}
