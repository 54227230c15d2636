//! What a scenario runs, in one line — the name every chart, pinned baseline and export carries,
//! built from the schedule itself (a document's own `name` is free text and goes stale as soon as
//! the schedule is edited: "8-layer LLM, 1F1B" after switching to gpipe).

use crate::scenario::Scenario;
use crate::scenario::placement::PlacementSpec;
use crate::vocab::parameter::Parameter;
use crate::vocab::units::{escape_controls, shorten};

/// The longest document name a title quotes, in characters.
const NAME_CHARS: usize = 120;

impl Scenario {
    /// The schedule in one line: the regions' skeletons in region order (a run of one repeated
    /// `×n`: its chunks), the shape, and what departs from the defaults —
    /// `gpipe · P = 4 · M = 8`, `transpose + 1f1b ×2 · P = 4 · M = 8 · DP = 2`,
    /// `wavek · P = 4 · M = 16 · k = 8`, `1f1b ×3 · P = 4 · M = 8 · v_fold placement`.
    pub fn schedule_title(&self) -> String {
        let mut skeletons: Vec<String> = Vec::new();
        let mut i = 0;
        while let Some(s) = self.schedule.get(i) {
            let run = self
                .schedule
                .get(i..)
                .unwrap_or_default()
                .iter()
                .take_while(|k| *k == s)
                .count();
            skeletons.push(if run > 1 {
                format!("{} ×{run}", s.name())
            } else {
                s.name().to_string()
            });
            i += run.max(1);
        }
        let mut parts = vec![
            if skeletons.is_empty() {
                "no schedule".to_string()
            } else {
                skeletons.join(" + ")
            },
            format!("P = {}", self.ranks),
            format!("M = {}", self.microbatches),
        ];
        for p in Parameter::ALL {
            if let Some(v) = self.parameter(p) {
                parts.push(format!("{} = {v}", p.symbol()));
            }
        }
        if self.data_parallel > 1 {
            parts.push(format!("DP = {}", self.data_parallel));
        }
        if let Some(p) = &self.placement
            && *p != PlacementSpec::Default
        {
            parts.push(format!("{} placement", p.name()));
        }
        if self.explicit_orders().is_some() {
            parts.push("hand-written orders".to_string());
        }
        parts.join(" · ")
    }

    /// The schedule's title followed by the document it came from:
    /// `gpipe · P = 4 · M = 8 (document: 8-layer LLM, 1F1B)` — control characters escaped, the
    /// name cut to a line.
    pub fn chart_title(&self) -> String {
        let name = self.name.trim();
        if name.is_empty() {
            return self.schedule_title();
        }
        let name = shorten(name, NAME_CHARS);
        format!(
            "{} (document: {})",
            self.schedule_title(),
            escape_controls(&name)
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail by panicking
    use crate::scenario::Scenario;
    use crate::scenario::placement::PlacementSpec;
    use crate::schedules::skeleton::Skeleton;

    fn scenario(schedule: &[&str]) -> Scenario {
        let regions: Vec<String> = schedule.iter().map(|s| format!("\"{s}\"")).collect();
        let layers: Vec<String> = (0..schedule.len() * 4)
            .map(|i| format!("{{\"name\": \"l{i}\", \"fwd_s\": 1.0, \"bwd_s\": 2.0}}"))
            .collect();
        let cut: Vec<String> = (1..schedule.len()).map(|i| (i * 4).to_string()).collect();
        let text = format!(
            "{{\"format\": \"mpipe-scenario/1\", \"name\": \"8-layer LLM, 1F1B\", \"model\": {{\"layers\": [{}]}}, \"cut\": [{}], \"schedule\": [{}], \"ranks\": 4, \"microbatches\": 8}}",
            layers.join(", "),
            cut.join(", "),
            regions.join(", ")
        );
        Scenario::from_json_str(&text, "t.json").unwrap()
    }

    #[test]
    fn titles_name_the_schedule_not_the_document() {
        let mut s = scenario(&["1f1b"]);
        assert_eq!(
            s.chart_title(),
            "1f1b · P = 4 · M = 8 (document: 8-layer LLM, 1F1B)"
        );
        s.schedule = vec![Skeleton::named("gpipe").unwrap()];
        assert_eq!(
            s.chart_title(),
            "gpipe · P = 4 · M = 8 (document: 8-layer LLM, 1F1B)"
        );
        s.data_parallel = 2;
        s.placement = Some(PlacementSpec::VFold);
        assert_eq!(
            s.schedule_title(),
            "gpipe · P = 4 · M = 8 · DP = 2 · v_fold placement"
        );
        s.placement = Some(PlacementSpec::Default);
        s.orders = Some(vec![vec![]; 4]);
        assert_eq!(
            s.schedule_title(),
            "gpipe · P = 4 · M = 8 · DP = 2 · hand-written orders"
        );
        s.name = " \t".into();
        s.orders = None;
        s.data_parallel = 1;
        assert_eq!(s.chart_title(), "gpipe · P = 4 · M = 8");
    }

    #[test]
    fn titles_list_the_skeletons_with_their_chunks_and_the_parameters_they_read() {
        let s = scenario(&["transpose", "1f1b", "1f1b"]);
        assert_eq!(s.schedule_title(), "transpose + 1f1b ×2 · P = 4 · M = 8");
        let s = scenario(&["nested", "1f1b", "nested"]);
        assert_eq!(s.schedule_title(), "nested + 1f1b + nested · P = 4 · M = 8");
        let mut s = scenario(&["wavek"]);
        // WaveK reads k: its default (P) when the document gives none, the given one otherwise.
        assert_eq!(s.schedule_title(), "wavek · P = 4 · M = 8 · k = 4");
        s.wave_k = Some(8);
        assert_eq!(s.schedule_title(), "wavek · P = 4 · M = 8 · k = 8");
        s.name = "UMA\u{1b}[31m, k = 4".into();
        assert_eq!(
            s.chart_title(),
            "wavek · P = 4 · M = 8 · k = 8 (document: UMA\\u{1b}[31m, k = 4)"
        );
    }
}
