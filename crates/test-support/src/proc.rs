//! Child processes the tests own (etcd, kube-apiserver, extdns, external-dns): started with their output in a
//! log file, stopped by PID (never by name), and killed when the handle drops so a failing test leaves
//! nothing running.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// A running child process and its log.
pub struct Proc {
    /// A name for messages.
    pub name: String,
    child: Option<Child>,
    /// The file its stdout and stderr go to.
    pub log: PathBuf,
}

impl Proc {
    /// Starts `cmd` with stdout and stderr appended to `log` (appended, so a restarted process keeps one log).
    pub fn spawn(name: &str, mut cmd: Command, log: &Path) -> Result<Proc> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .with_context(|| format!("opening {}", log.display()))?;
        let err = file.try_clone()?;
        let child = cmd
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(err)
            .spawn()
            .with_context(|| format!("cannot start {name}: {cmd:?}"))?;
        Ok(Proc {
            name: name.to_string(),
            child: Some(child),
            log: log.to_path_buf(),
        })
    }

    /// The process id while it runs (for /proc figures).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The exit status if the process has ended.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.as_mut().and_then(|c| c.try_wait().ok().flatten())
    }

    /// Sends `signal` (as `kill` names it: `-STOP`, `-CONT`) to the process while it runs.
    pub fn signal(&self, signal: &str) -> Result<()> {
        let pid = self.pid().with_context(|| format!("{} is not running", self.name))?;
        let status = Command::new("kill").arg(signal).arg(pid.to_string()).status()?;
        if !status.success() {
            bail!("kill {signal} {pid} ({}) failed with {status}", self.name);
        }
        Ok(())
    }

    /// SIGKILL, then reap.
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGTERM and wait up to `grace` for the exit; SIGKILL after that. Returns whether it exited on its own.
    pub fn terminate(&mut self, grace: Duration) -> bool {
        let Some(mut c) = self.child.take() else { return true };
        let pid = c.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = c.try_wait() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = c.kill();
        let _ = c.wait();
        false
    }

    /// The log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The last `lines` lines of the log, for failure messages.
    pub fn log_tail(&self, lines: usize) -> String {
        tail(&self.log_text(), lines)
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// A child process this test owns: killed by its PID (SIGKILL) and reaped when dropped, so that a failing
/// test leaves nothing running. What every launcher holding a bare [`Child`] needs (the servers of this
/// crate, a test's extdns); it dereferences to the child for its PID, `try_wait` and pipes.
#[derive(Debug)]
pub struct OwnedChild(pub Child);

impl std::ops::Deref for OwnedChild {
    type Target = Child;

    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for OwnedChild {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for OwnedChild {
    fn drop(&mut self) {
        // Our own child, by PID: SIGKILL then reap (an error only says it had exited already).
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The last `lines` lines of `text`, each cut to a readable length (some logs hold whole API responses).
pub fn tail(text: &str, lines: usize) -> String {
    const WIDTH: usize = 400;
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..]
        .iter()
        .map(|l| match l.char_indices().nth(WIDTH) {
            Some((cut, _)) => format!("{}…", &l[..cut]),
            None => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Polls `check` every `every` until it returns `Ok(Some(v))` or `timeout` passes; the last error or
/// `None` explains the failure.
pub fn eventually<T>(
    what: &str,
    timeout: Duration,
    every: Duration,
    mut check: impl FnMut() -> Result<Option<T>>,
) -> Result<T> {
    let deadline = Instant::now() + timeout;
    loop {
        let last = match check() {
            Ok(Some(v)) => return Ok(v),
            Ok(None) => "condition not met".to_string(),
            Err(e) => format!("{e:#}"),
        };
        if Instant::now() >= deadline {
            bail!("{what}: not after {timeout:?} ({last})");
        }
        std::thread::sleep(every);
    }
}

/// Runs `cmd` to completion and returns its stdout, or fails with its stderr.
pub fn output(mut cmd: Command) -> Result<String> {
    let shown = format!("{cmd:?}");
    let out = cmd.output().with_context(|| format!("cannot start {shown}"))?;
    if !out.status.success() {
        bail!(
            "{shown} failed with {}: {}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_the_last_lines() {
        assert_eq!(tail("a\nb\nc\n", 2), "b\nc");
        assert_eq!(tail("a", 5), "a");
        let long = "x".repeat(1000);
        assert_eq!(tail(&long, 1).chars().count(), 401);
    }

    #[test]
    fn eventually_returns_the_first_success_and_reports_the_last_failure() -> Result<()> {
        let mut n = 0;
        let v = eventually("count", Duration::from_secs(5), Duration::from_millis(1), || {
            n += 1;
            Ok((n >= 3).then_some(n))
        })?;
        assert_eq!(v, 3);
        let result = eventually::<()>("never", Duration::from_millis(20), Duration::from_millis(5), || {
            bail!("still broken")
        });
        assert!(
            result.as_ref().is_err_and(|e| format!("{e}").contains("still broken")),
            "{result:?}"
        );
        Ok(())
    }

    #[test]
    fn a_dropped_owned_child_is_killed_and_reaped() -> Result<()> {
        let child = OwnedChild(Command::new("sleep").arg("30").spawn()?);
        let pid = child.id();
        let status = format!("/proc/{pid}/status");
        assert!(Path::new(&status).exists(), "sleep runs before the drop");
        drop(child);
        // Reaped: gone from /proc (not a zombie), and not another process reusing the PID yet.
        let left = std::fs::read_to_string(&status).unwrap_or_default();
        assert!(!left.contains("sleep"), "{left}");
        Ok(())
    }

    #[test]
    fn a_dropped_process_is_killed() -> Result<()> {
        let dir = tempfile::tempdir()?;
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let mut p = Proc::spawn("sleep", cmd, &dir.path().join("log"))?;
        assert!(p.exited().is_none());
        let pid = p.pid().context("no pid")?;
        drop(p);
        assert!(
            !Path::new(&format!("/proc/{pid}/status")).exists() || {
                // Reaped children vanish from /proc; a zombie would show state Z.
                let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
                !s.contains("sleep")
            }
        );
        Ok(())
    }
}
