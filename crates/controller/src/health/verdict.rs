//! One target's health from its probes: healthy until `threshold` probes in a row fail, healthy again at
//! the first success. A new target starts healthy, so a freshly published name is not withdrawn before
//! its first probes had a chance.

/// A target's state and its failures in a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    healthy: bool,
    failures: u32,
}

impl Default for Verdict {
    fn default() -> Self {
        Verdict {
            healthy: true,
            failures: 0,
        }
    }
}

impl Verdict {
    /// Whether the target is published.
    pub fn healthy(&self) -> bool {
        self.healthy
    }

    /// Takes one probe's result; returns the new state when it changed.
    pub fn observe(&mut self, ok: bool, threshold: u32) -> Option<bool> {
        if ok {
            self.failures = 0;
            return (!std::mem::replace(&mut self.healthy, true)).then_some(true);
        }
        self.failures = self.failures.saturating_add(1);
        if self.healthy && self.failures >= threshold.max(1) {
            self.healthy = false;
            return Some(false);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_leaves_after_threshold_failures_in_a_row_and_returns_at_the_first_success() {
        let mut v = Verdict::default();
        assert!(v.healthy());
        assert_eq!(v.observe(false, 3), None);
        assert_eq!(v.observe(false, 3), None);
        // A success in between starts the count again.
        assert_eq!(v.observe(true, 3), None);
        assert_eq!(v.observe(false, 3), None);
        assert_eq!(v.observe(false, 3), None);
        assert!(v.healthy());
        assert_eq!(v.observe(false, 3), Some(false));
        assert!(!v.healthy());
        // Further failures are no transition.
        assert_eq!(v.observe(false, 3), None);
        assert_eq!(v.observe(true, 3), Some(true));
        assert!(v.healthy());
        assert_eq!(v.observe(true, 3), None);
    }

    #[test]
    fn a_threshold_of_one_withdraws_at_the_first_failure() {
        let mut v = Verdict::default();
        assert_eq!(v.observe(false, 1), Some(false));
        let mut v = Verdict::default();
        assert_eq!(v.observe(false, 0), Some(false), "a zero threshold counts as one");
    }
}
