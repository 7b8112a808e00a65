//! What the benchmarks read of a process from /proc: CPU time from its `stat` and memory from its `status`
//! (proc(5)), and the clock ticks CPU time is counted in.

use anyhow::{Context, Result};

/// `getconf CLK_TCK`: the ticks a second of /proc's CPU times (100 where it cannot be asked).
pub fn clock_ticks() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(100.0)
}

/// Field `n` of a `stat` file as proc(5) numbers them (utime is 14, stime 15, cutime 16, cstime 17); the
/// command, field 2, may hold spaces, so fields are counted after its closing parenthesis.
pub fn stat_field(stat: &str, n: usize) -> Option<f64> {
    let after_command = stat.rsplit_once(')').map(|(_, f)| f)?;
    after_command.split_whitespace().nth(n.checked_sub(3)?)?.parse().ok()
}

/// Fields `first` and `first + 1` of the `stat` file at `path` (utime and stime at 14, the waited-for
/// children's at 16), in seconds of `ticks`.
pub fn cpu_seconds(path: &str, first: usize, ticks: f64) -> Result<f64> {
    let stat = std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
    let field = |n: usize| stat_field(&stat, n).with_context(|| format!("{path}: no field {n}"));
    Ok((field(first)? + field(first + 1)?) / ticks)
}

/// A `status` line's value in bytes (`VmHWM:`, `VmRSS:`, `RssAnon:`; the file counts in KiB).
pub fn status_bytes(status: &str, key: &str) -> Option<f64> {
    let line = status.lines().find(|l| l.starts_with(key))?;
    Some(line.split_whitespace().nth(1)?.parse::<f64>().ok()? * 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_counted_after_a_command_with_spaces() {
        let stat = "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 7 3 20 0";
        assert_eq!(stat_field(stat, 3), None, "the state is a letter");
        assert_eq!(stat_field(stat, 4), Some(1.0));
        assert_eq!(stat_field(stat, 14), Some(250.0));
        assert_eq!(stat_field(stat, 17), Some(3.0));
        assert_eq!(stat_field(stat, 40), None);
    }

    #[test]
    fn status_values_are_bytes() {
        let status = "Name:\textdns\nVmHWM:\t  2048 kB\nVmRSS:\t1024 kB\n";
        assert_eq!(status_bytes(status, "VmHWM:"), Some(2_097_152.0));
        assert_eq!(status_bytes(status, "RssAnon:"), None);
    }
}
