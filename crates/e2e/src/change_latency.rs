//! Change → DNS latency under a stream of changes, shared by the benchmarks that measure it (`scale`'s
//! streams, `multi-provider`'s churn): changes are made at a steady rate, and each one's time is taken from
//! the moment the API server accepted it (its call returned) to the moment the name answers as changed where
//! it is published, each place polled by a thread of its own so that a slow one never delays the others'
//! figures.

use std::net::Ipv4Addr;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::dns;

/// How often a pending change's name is looked up.
pub(crate) const POLL: Duration = Duration::from_millis(10);

/// One place a change shows in: the A answer of a name there (`None`: no such name, or no answer).
pub(crate) type Lookup<'a> = &'a (dyn Fn(&str) -> Option<Vec<Ipv4Addr>> + Sync);

/// The A answer of `name` from the DNS server on loopback port `port`, waiting at most [`POLL`].
pub(crate) fn dns_answer(port: u16, name: &str) -> Option<Vec<Ipv4Addr>> {
    dns::query_a(port, name, POLL).ok().flatten()
}

/// A change made: the place it must show in (an index into the lookups), the name, and its new address.
pub(crate) type Expect = (usize, String, Ipv4Addr);

/// What one place saw of a stream of changes.
#[derive(Debug, Default, Clone)]
pub(crate) struct Stream {
    /// Change → answer of every change answered in time.
    pub samples: Vec<Duration>,
    /// Changes not answered within the timeout.
    pub timeouts: usize,
    /// A counter's increase over the stream (e.g. `extdns_writes_total`), and the stream's length.
    pub writes: Option<(f64, Duration)>,
}

/// A stream of `count` changes, `rate` a second: `change(k)` makes change `k` and says where it must show;
/// each change's time from that call returning to the name answering with its new address in `lookups[i]`
/// (polled every [`POLL`]), or a timeout after `timeout`. One [`Stream`] per lookup.
pub(crate) fn stream(
    lookups: &[Lookup<'_>],
    rate: u32,
    count: usize,
    timeout: Duration,
    mut change: impl FnMut(usize) -> Result<Vec<Expect>>,
) -> Result<Vec<Stream>> {
    let spacing = Duration::from_secs(1) / rate.max(1);
    let (senders, receivers): (Vec<_>, Vec<_>) = lookups
        .iter()
        .map(|_| mpsc::channel::<(String, Ipv4Addr, Instant)>())
        .unzip();
    std::thread::scope(|s| -> Result<Vec<Stream>> {
        let pollers: Vec<_> = receivers
            .into_iter()
            .zip(lookups)
            .map(|(rx, lookup)| s.spawn(move || poll(&rx, *lookup, timeout)))
            .collect();
        let start = Instant::now();
        let made = (0..count).try_for_each(|k| -> Result<()> {
            let due = start + spacing * k as u32;
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            let expected = change(k)?;
            let accepted = Instant::now();
            for (place, name, ip) in expected {
                if let Some(tx) = senders.get(place) {
                    let _ = tx.send((name, ip, accepted));
                }
            }
            Ok(())
        });
        drop(senders);
        let mut out = Vec::with_capacity(pollers.len());
        for p in pollers {
            out.push(p.join().map_err(|_| anyhow::anyhow!("a stream poller panicked"))?);
        }
        made?;
        Ok(out)
    })
}

/// One place's poller: takes the changes `rx` sends until it closes, and looks each pending one up until it
/// answers or `timeout` passes.
fn poll(rx: &mpsc::Receiver<(String, Ipv4Addr, Instant)>, lookup: Lookup<'_>, timeout: Duration) -> Stream {
    let mut out = Stream::default();
    let mut pending: Vec<(String, Ipv4Addr, Instant)> = Vec::new();
    let mut open = true;
    while open || !pending.is_empty() {
        loop {
            match rx.try_recv() {
                Ok(change) => pending.push(change),
                Err(mpsc::TryRecvError::Empty) => break,
                Err(mpsc::TryRecvError::Disconnected) => {
                    open = false;
                    break;
                }
            }
        }
        pending.retain(|(name, ip, at)| {
            if lookup(name).is_some_and(|a| a == [*ip]) {
                out.samples.push(at.elapsed());
                return false;
            }
            if at.elapsed() > timeout {
                out.timeouts += 1;
                return false;
            }
            true
        });
        std::thread::sleep(POLL);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::Mutex;

    #[test]
    fn each_change_is_timed_where_it_shows_and_a_missing_one_times_out() -> Result<()> {
        // Two places; a change shows in place 0 at once, place 1 never answers.
        let published: Mutex<HashMap<String, Ipv4Addr>> = Mutex::new(HashMap::new());
        let here = |name: &str| published.lock().ok()?.get(name).map(|ip| vec![*ip]);
        let nowhere = |_: &str| None;
        let lookups: [Lookup<'_>; 2] = [&here, &nowhere];
        let seen = stream(&lookups, 100, 4, Duration::from_millis(200), |k| {
            let (name, ip) = (format!("n{k}"), Ipv4Addr::new(192, 0, 2, k as u8));
            if let Ok(mut p) = published.lock() {
                p.insert(name.clone(), ip);
            }
            Ok(vec![(k % 2, name, ip)])
        })?;
        assert_eq!((seen[0].samples.len(), seen[0].timeouts), (2, 0));
        assert_eq!((seen[1].samples.len(), seen[1].timeouts), (0, 2));
        Ok(())
    }
}
