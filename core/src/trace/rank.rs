//! Which rank a trace file (or one process or thread of a merged file) belongs to.
//!
//! In order: what the user said, `distributedInfo.rank`, then the file's path (`rank3`,
//! `rank-3`, `rank_3`, `worker3`, `device_3`, nearest path component first), then a process or
//! thread name that carries a rank; failing all of these the importer numbers the sources in
//! order and warns.

use serde::Serialize;

/// Where a rank number came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RankSource {
    /// Given by the user (`--rank FILE=N`, the app's rank field).
    User,
    /// `distributedInfo.rank`.
    DistributedInfo,
    /// The file's path.
    FileName,
    /// A process name such as `rank 3`.
    ProcessName,
    /// A thread name, or the thread's position among the threads with schedule events.
    Thread,
    /// Guessed from the order of the sources.
    Order,
}

impl std::fmt::Display for RankSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RankSource::User => "set by the user",
            RankSource::DistributedInfo => "distributedInfo",
            RankSource::FileName => "the file name",
            RankSource::ProcessName => "the process name",
            RankSource::Thread => "the thread",
            RankSource::Order => "guessed from the order",
        })
    }
}

impl RankSource {
    /// How the app and the CLI say where a rank came from: `from distributedInfo`, `set by hand`.
    pub fn phrase(self) -> &'static str {
        match self {
            RankSource::User => "set by hand",
            RankSource::DistributedInfo => "from distributedInfo",
            RankSource::FileName => "from the file name",
            RankSource::ProcessName => "from the process name",
            RankSource::Thread => "from the thread",
            RankSource::Order => "guessed from the order",
        }
    }
}

/// A rank written in a name: `rank3`, `Rank-3`, `rank_3`, `rank 3`, `worker3`, `device_3`.
pub fn rank_in_name(name: &str) -> Option<usize> {
    let lower = name.to_ascii_lowercase();
    ["rank", "worker", "device"].iter().find_map(|word| {
        lower.match_indices(word).find_map(|(at, w)| {
            let rest = lower.get(at + w.len()..)?;
            let rest = rest.strip_prefix(['-', '_', ' ']).unwrap_or(rest);
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            // The number must end there: `rank-1e12` and `rank3x` name no rank.
            let after = rest.get(digits.len()..)?.chars().next();
            if after.is_some_and(|c| c.is_ascii_alphanumeric()) {
                return None;
            }
            digits.parse().ok()
        })
    })
}

/// A rank in a file path: the file name first, then its folders from the nearest.
pub fn rank_in_path(path: &str) -> Option<usize> {
    path.rsplit(['/', '\\']).find_map(rank_in_name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_come_from_every_usual_file_naming() {
        assert_eq!(rank_in_path("traces/rank3.json.gz"), Some(3));
        assert_eq!(rank_in_path("sampled_rank-1.json.gz"), Some(1));
        assert_eq!(rank_in_path("run/rank_12.pt.trace.json"), Some(12));
        assert_eq!(
            rank_in_path("dlrm_kineto/worker5_step_12.1694040543224.pt.trace.json"),
            Some(5)
        );
        assert_eq!(
            rank_in_path("PROF_1/device_1/timeline/msprof_1_0_1.json"),
            Some(1)
        );
        assert_eq!(rank_in_path("C:\\runs\\Rank 2\\trace.json"), Some(2));
        assert_eq!(rank_in_path("pipe_visualized.json"), None);
        assert_eq!(rank_in_path("ranking/trace.json"), None);
        assert_eq!(rank_in_path("rank-1e12.json"), None);
        assert_eq!(rank_in_path("rank-2/rank3x.json"), Some(2));
        assert_eq!(rank_in_name("Rank-7 (python3)"), Some(7));
    }
}
