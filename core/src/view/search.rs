//! Finding events on a timeline by what people type: an action (`4F0`), `mb 7`, a stage (`4`
//! or `stage 4`), `rank 2`, `region 1`, `F` or `B`. Several terms must all hold (`mb 3 B` is
//! every backward of microbatch 3).

use crate::view::scene::Scene;
use crate::view::timings::EventTiming;
use crate::vocab::action::Action;
use crate::vocab::phase::Phase;

/// One condition on an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Term {
    Action(Action),
    Microbatch(usize),
    Stage(usize),
    Rank(usize),
    Region(usize),
    Phase(Phase),
}

/// A parsed search: every term must hold.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Query {
    pub terms: Vec<Term>,
}

impl Query {
    /// Parses `text`; the error names the word it could not read.
    pub fn parse(text: &str) -> Result<Query, String> {
        let words: Vec<String> = text
            .split(|c: char| c.is_whitespace() || c == ',' || c == '=' || c == ':')
            .filter(|w| !w.is_empty())
            .map(str::to_ascii_lowercase)
            .collect();
        let mut terms = Vec::new();
        let mut i = 0;
        while let Some(word) = words.get(i) {
            i += 1;
            let keyword = ["microbatch", "mb", "stage", "rank", "region"]
                .into_iter()
                .find_map(|k| {
                    word.strip_prefix(k)
                        .filter(|rest| rest.bytes().all(|b| b.is_ascii_digit()))
                        .map(|rest| (k, rest))
                });
            if let Some((k, digits)) = keyword {
                // `mb 7` or `mb7`.
                let number = if digits.is_empty() {
                    let next = words
                        .get(i)
                        .ok_or_else(|| format!("`{word}` needs a number"))?;
                    i += 1;
                    next.parse::<usize>()
                        .map_err(|_| format!("`{word} {next}`: `{next}` is not a number"))?
                } else {
                    digits
                        .parse::<usize>()
                        .map_err(|_| format!("`{word}` is not a number"))?
                };
                terms.push(match k {
                    "microbatch" | "mb" => Term::Microbatch(number),
                    "stage" => Term::Stage(number),
                    "rank" => Term::Rank(number),
                    _ => Term::Region(number),
                });
                continue;
            }
            let term = match word.as_str() {
                "f" | "forward" | "forwards" => Term::Phase(Phase::Forward),
                "b" | "backward" | "backwards" => Term::Phase(Phase::Backward),
                "i" | "input" => Term::Phase(Phase::Input),
                "w" | "weight" => Term::Phase(Phase::Weight),
                w if w.bytes().all(|b| b.is_ascii_digit()) => Term::Stage(
                    w.parse()
                        .map_err(|_| format!("`{w}` is not a stage number"))?,
                ),
                w => Term::Action(w.to_ascii_uppercase().parse().map_err(|_| {
                    format!(
                        "`{w}` is not a search term: use an action (4F0), mb N, a stage (4 or stage 4), rank N, region N, F or B"
                    )
                })?),
            };
            terms.push(term);
        }
        Ok(Query { terms })
    }

    /// Whether `e` satisfies every term.
    pub fn matches(&self, e: &EventTiming) -> bool {
        self.terms.iter().all(|t| match *t {
            Term::Action(a) => e.action == a,
            Term::Microbatch(m) => e.mb().index() == m,
            Term::Stage(s) => e.action.stage == s.into(),
            Term::Rank(r) => e.rank.index() == r,
            Term::Region(r) => e.region.index() == r,
            Term::Phase(p) => e.action.phase == p,
        })
    }

    /// Indices into the scene's events of every match, in order.
    pub fn find(&self, scene: &Scene) -> Vec<usize> {
        if self.terms.is_empty() {
            return Vec::new();
        }
        scene
            .events
            .iter()
            .enumerate()
            .filter(|(_, e)| self.matches(e))
            .map(|(i, _)| i)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_read_as_people_type_them() {
        let q = Query::parse("4F0").unwrap_or_default();
        assert_eq!(
            q.terms,
            [Term::Action(Action {
                stage: crate::vocab::ids::Stage::new(4),
                phase: Phase::Forward,
                mb: crate::vocab::ids::Mb::new(0)
            })]
        );
        let q = Query::parse("mb 7, B").unwrap_or_default();
        assert_eq!(q.terms, [Term::Microbatch(7), Term::Phase(Phase::Backward)]);
        let q = Query::parse("stage 4 rank=1 region:2 mb3 5").unwrap_or_default();
        assert_eq!(
            q.terms,
            [
                Term::Stage(4),
                Term::Rank(1),
                Term::Region(2),
                Term::Microbatch(3),
                Term::Stage(5)
            ]
        );
        assert_eq!(Query::parse("  ").unwrap_or_default().terms, []);
        assert_eq!(Query::parse("mb").unwrap_err(), "`mb` needs a number");
        assert_eq!(
            Query::parse("mb x").unwrap_err(),
            "`mb x`: `x` is not a number"
        );
        assert_eq!(
            Query::parse("4x0").unwrap_err(),
            "`4x0` is not a search term: use an action (4F0), mb N, a stage (4 or stage 4), rank N, region N, F or B"
        );
    }
}
