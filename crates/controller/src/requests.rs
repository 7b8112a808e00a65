//! `external_dns_http_request_duration_seconds`: every provider request, as external-dns's instrumented
//! HTTP client reports it. A summary (not a histogram) with the constant label `handler="instrumented_http"`,
//! labels `host`, `method`, `path` (the last segment of the URL path only), `scheme` and `status` (empty
//! when no answer came), and the 0.5, 0.9 and 0.99 quantiles over the last ten minutes, as Go's client
//! computes them by default.
//!
//! The quantiles here are exact over the most recent observations of the window (at most
//! [`WINDOW_SAMPLES`] per series), which is within the error Go's streaming estimate allows.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use extdns_provider::http::Observe;
use reqwest::{Method, StatusCode, Url};

use crate::exposition::{Kind, Writer};

/// The name under external-dns's prefix.
pub const NAME: &str = "external_dns_http_request_duration_seconds";
const QUANTILES: [(f64, &str); 3] = [(0.5, "0.5"), (0.9, "0.9"), (0.99, "0.99")];
/// Go's `DefMaxAge`.
const MAX_AGE: Duration = Duration::from_secs(600);
/// The most observations a series keeps for its quantiles.
pub const WINDOW_SAMPLES: usize = 1024;

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Series {
    host: String,
    method: String,
    path: String,
    scheme: String,
    status: String,
}

#[derive(Debug, Default)]
struct Observations {
    window: VecDeque<(Instant, f64)>,
    sum: f64,
    count: u64,
}

/// The summary; given to every provider's HTTP client as its [`Observe`] hook.
#[derive(Debug, Default)]
pub struct RequestDurations {
    series: Mutex<BTreeMap<Series, Observations>>,
}

impl Observe for RequestDurations {
    fn observe(&self, method: &Method, url: &Url, status: Option<StatusCode>, elapsed: Duration) {
        let host = match url.port() {
            Some(port) => format!("{}:{port}", url.host_str().unwrap_or_default()),
            None => url.host_str().unwrap_or_default().to_string(),
        };
        let key = Series {
            host,
            method: method.as_str().to_string(),
            path: url.path().rsplit('/').next().unwrap_or_default().to_string(),
            scheme: url.scheme().to_string(),
            status: status.map(|s| s.as_u16().to_string()).unwrap_or_default(),
        };
        self.record(key, elapsed, Instant::now());
    }
}

impl RequestDurations {
    fn record(&self, key: Series, elapsed: Duration, now: Instant) {
        let mut series = self.series.lock().unwrap_or_else(|p| p.into_inner());
        let o = series.entry(key).or_default();
        let seconds = elapsed.as_secs_f64();
        o.sum += seconds;
        o.count += 1;
        o.window.push_back((now, seconds));
        if o.window.len() > WINDOW_SAMPLES {
            o.window.pop_front();
        }
    }

    pub(crate) fn write(&self, w: &mut Writer<'_>) {
        let now = Instant::now();
        let mut series = self.series.lock().unwrap_or_else(|p| p.into_inner());
        w.family(NAME, "The HTTP request latencies in seconds.", Kind::Summary);
        for (key, o) in series.iter_mut() {
            while o
                .window
                .front()
                .is_some_and(|(at, _)| now.duration_since(*at) > MAX_AGE)
            {
                o.window.pop_front();
            }
            let mut values: Vec<f64> = o.window.iter().map(|(_, v)| *v).collect();
            values.sort_by(f64::total_cmp);
            let labels = [
                ("handler", "instrumented_http"),
                ("host", key.host.as_str()),
                ("method", key.method.as_str()),
                ("path", key.path.as_str()),
                ("scheme", key.scheme.as_str()),
                ("status", key.status.as_str()),
            ];
            for (q, text) in QUANTILES {
                let mut with_q = labels.to_vec();
                with_q.push(("quantile", text));
                w.sample(NAME, &with_q, quantile(&values, q));
            }
            w.sample(&format!("{NAME}_sum"), &labels, o.sum);
            w.sample(&format!("{NAME}_count"), &labels, o.count as f64);
        }
    }
}

/// The nearest-rank quantile of sorted values; NaN without any, as Go reports an empty window.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exposition::Format;

    fn scrape(d: &RequestDurations) -> String {
        let mut out = String::new();
        d.write(&mut Writer {
            out: &mut out,
            format: Format::Text,
        });
        out
    }

    #[test]
    fn requests_are_summarised_under_external_dns_labels() -> Result<(), Box<dyn std::error::Error>> {
        let d = RequestDurations::default();
        let url = Url::parse("https://route53.amazonaws.com/2013-04-01/hostedzone/Z1/rrset")?;
        for ms in 1..=100 {
            d.observe(&Method::GET, &url, Some(StatusCode::OK), Duration::from_millis(ms));
        }
        let local = Url::parse("http://127.0.0.1:8888/records")?;
        d.observe(&Method::POST, &local, None, Duration::from_millis(5));
        let text = scrape(&d);
        let labels = "handler=\"instrumented_http\",host=\"route53.amazonaws.com\",method=\"GET\",path=\"rrset\",\
                      scheme=\"https\",status=\"200\"";
        assert!(
            text.contains("# TYPE external_dns_http_request_duration_seconds summary\n"),
            "{text}"
        );
        assert!(
            text.contains(&format!("{NAME}{{{labels},quantile=\"0.5\"}} 0.05\n")),
            "{text}"
        );
        assert!(
            text.contains(&format!("{NAME}{{{labels},quantile=\"0.9\"}} 0.09\n")),
            "{text}"
        );
        assert!(
            text.contains(&format!("{NAME}{{{labels},quantile=\"0.99\"}} 0.099\n")),
            "{text}"
        );
        assert!(text.contains(&format!("{NAME}_count{{{labels}}} 100\n")), "{text}");
        assert!(
            text.contains(&format!(
                "{NAME}_count{{handler=\"instrumented_http\",host=\"127.0.0.1:8888\",method=\"POST\",\
                 path=\"records\",scheme=\"http\",status=\"\"}} 1\n"
            )),
            "{text}"
        );
        Ok(())
    }

    #[test]
    fn the_window_forgets_old_observations_but_the_count_does_not() {
        let d = RequestDurations::default();
        let key = Series {
            host: "h".into(),
            method: "GET".into(),
            path: "p".into(),
            scheme: "http".into(),
            status: "200".into(),
        };
        let long_ago = Instant::now().checked_sub(MAX_AGE + Duration::from_secs(1));
        let Some(long_ago) = long_ago else { return };
        d.record(key.clone(), Duration::from_secs(3), long_ago);
        for _ in 0..WINDOW_SAMPLES + 5 {
            d.record(key.clone(), Duration::from_secs(1), Instant::now());
        }
        let text = scrape(&d);
        assert!(text.contains("quantile=\"0.99\"} 1\n"), "{text}");
        assert!(text.contains(&format!("_count{{handler=\"instrumented_http\",host=\"h\",method=\"GET\",path=\"p\",scheme=\"http\",status=\"200\"}} {}\n", WINDOW_SAMPLES + 6)), "{text}");
        assert!(quantile(&[], 0.5).is_nan());
    }
}
