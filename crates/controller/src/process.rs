//! The standard `process_*` series, read from Linux's /proc at each scrape under the names and units every
//! Prometheus client library exports, so dashboards built for external-dns (a Go process) find them.
//!
//! The clock tick is 100 Hz, as Prometheus's procfs library assumes: Linux reports `/proc/<pid>/stat`
//! times in USER_HZ, which is 100 on every architecture it exports to user space. Resident memory comes
//! from `VmRSS` in `/proc/self/status` (kB), the same counter `stat`'s page count is, without asking the
//! page size. On a system without /proc nothing is written.

use crate::exposition::{Kind, Writer};

const USER_HZ: f64 = 100.0;

/// What one scrape read.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Process {
    pub cpu_seconds: f64,
    pub resident_bytes: f64,
    pub virtual_bytes: f64,
    pub start_time_seconds: f64,
    pub open_fds: Option<f64>,
    pub max_fds: Option<f64>,
    pub max_virtual_bytes: Option<f64>,
}

impl Process {
    /// This process now; `None` when /proc cannot be read.
    pub fn read() -> Option<Process> {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let boot = std::fs::read_to_string("/proc/stat").ok()?;
        let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
        let mut p = Process::parse(&stat, &status, &boot, &limits)?;
        p.open_fds = std::fs::read_dir("/proc/self/fd").ok().map(|d| d.count() as f64);
        Some(p)
    }

    /// The figures in the four files' texts (`open_fds` is left to [`Process::read`]).
    fn parse(stat: &str, status: &str, boot: &str, limits: &str) -> Option<Process> {
        // The command name (field 2) may contain spaces and parentheses: the fields start after the last ')'.
        let fields: Vec<&str> = stat.get(stat.rfind(')')? + 1..)?.split_whitespace().collect();
        // fields[0] is field 3 (state) of proc(5).
        let field = |n: usize| fields.get(n - 3).and_then(|v| v.parse::<f64>().ok());
        let (utime, stime, start_ticks, vsize) = (field(14)?, field(15)?, field(22)?, field(23)?);
        let btime: f64 = boot
            .lines()
            .find_map(|l| l.strip_prefix("btime "))
            .and_then(|v| v.trim().parse().ok())?;
        let rss_kb: f64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0);
        Some(Process {
            cpu_seconds: (utime + stime) / USER_HZ,
            resident_bytes: rss_kb * 1024.0,
            virtual_bytes: vsize,
            start_time_seconds: btime + start_ticks / USER_HZ,
            open_fds: None,
            max_fds: soft_limit(limits, "Max open files"),
            max_virtual_bytes: soft_limit(limits, "Max address space"),
        })
    }

    pub fn write(&self, w: &mut Writer<'_>) {
        w.family(
            "process_cpu_seconds",
            "Total user and system CPU time spent in seconds.",
            Kind::Counter,
        );
        w.sample("process_cpu_seconds_total", &[], self.cpu_seconds);
        // The gauges; one this system does not report is left out rather than written as zero.
        let gauges = [
            ("process_open_fds", "Number of open file descriptors.", self.open_fds),
            (
                "process_max_fds",
                "Maximum number of open file descriptors.",
                self.max_fds,
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes.",
                Some(self.virtual_bytes),
            ),
            (
                "process_virtual_memory_max_bytes",
                "Maximum amount of virtual memory available in bytes.",
                self.max_virtual_bytes,
            ),
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes.",
                Some(self.resident_bytes),
            ),
            (
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds.",
                Some(self.start_time_seconds),
            ),
        ];
        for (name, help, value) in gauges {
            if let Some(value) = value {
                w.family(name, help, Kind::Gauge);
                w.sample(name, &[], value);
            }
        }
    }
}

/// The soft limit of a `/proc/self/limits` row; `unlimited` is the largest 64-bit value, as procfs reports it.
fn soft_limit(limits: &str, row: &str) -> Option<f64> {
    let rest = limits.lines().find_map(|l| l.strip_prefix(row))?;
    match rest.split_whitespace().next()? {
        "unlimited" => Some(u64::MAX as f64),
        n => n.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exposition::Format;

    #[test]
    fn figures_come_from_the_proc_files() {
        let stat = "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 8 0 \
                    12000 104857600 2560 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
        let status = "Name:\tx\nVmPeak:\t  200 kB\nVmRSS:\t   10240 kB\nThreads:\t8\n";
        let boot = "cpu  1 2 3\nbtime 1700000000\nprocesses 5\n";
        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                      Max open files            1024                 524288               files\n\
                      Max address space         unlimited            unlimited            bytes\n";
        let p = Process::parse(stat, status, boot, limits).expect("parsed");
        assert_eq!(p.cpu_seconds, 3.0);
        assert_eq!(p.start_time_seconds, 1_700_000_120.0);
        assert_eq!(p.virtual_bytes, 104_857_600.0);
        assert_eq!(p.resident_bytes, 10_485_760.0);
        assert_eq!(p.max_fds, Some(1024.0));
        assert_eq!(p.max_virtual_bytes, Some(u64::MAX as f64));
        assert_eq!(Process::parse("garbage", status, boot, limits), None);
    }

    #[test]
    fn this_process_is_read_on_linux() {
        if !std::path::Path::new("/proc/self/stat").exists() {
            return;
        }
        let p = Process::read().expect("read");
        assert!(p.resident_bytes > 0.0 && p.virtual_bytes >= p.resident_bytes, "{p:?}");
        assert!(p.open_fds.is_some_and(|n| n >= 3.0), "{p:?}");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        assert!(
            p.start_time_seconds <= now + 1.0 && p.start_time_seconds > now - 86_400.0,
            "{p:?}"
        );
        let mut out = String::new();
        p.write(&mut Writer {
            out: &mut out,
            format: Format::Text,
        });
        assert!(out.contains("# TYPE process_cpu_seconds_total counter\n"), "{out}");
        assert!(out.contains("\nprocess_resident_memory_bytes "), "{out}");
    }
}
