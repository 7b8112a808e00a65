//! Logging set up from `--log-format` and `--log-level`, with external-dns's level names.
//!
//! Logs go to stderr, so `extdns endpoints` can print its result on stdout and still warn about the
//! objects it skipped. `RUST_LOG`, when set, overrides `--log-level` (for debugging one crate).

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

use crate::flags::{LogFormat, LogLevel};

/// The tracing level for an external-dns level name. tracing has nothing above ERROR, so panic and fatal
/// log errors only.
pub fn tracing_level(level: LogLevel) -> tracing::Level {
    match level {
        LogLevel::Panic | LogLevel::Fatal | LogLevel::Error => tracing::Level::ERROR,
        LogLevel::Warning => tracing::Level::WARN,
        LogLevel::Info => tracing::Level::INFO,
        LogLevel::Debug => tracing::Level::DEBUG,
        LogLevel::Trace => tracing::Level::TRACE,
    }
}

/// The filter for a level: our crates at that level, the Kubernetes and HTTP client crates one step quieter
/// unless debugging (as external-dns silences client-go's klog below debug).
pub fn filter(level: LogLevel) -> EnvFilter {
    match std::env::var("RUST_LOG") {
        Ok(directives) if !directives.trim().is_empty() => EnvFilter::new(directives),
        _ => level_filter(level),
    }
}

fn level_filter(level: LogLevel) -> EnvFilter {
    let ours = tracing_level(level).as_str().to_ascii_lowercase();
    let deps = if level >= LogLevel::Debug {
        ours.clone()
    } else {
        "warn".to_string()
    };
    let deps = if level <= LogLevel::Error { ours.clone() } else { deps };
    let quiet = [
        "kube",
        "kube_client",
        "kube_runtime",
        "hyper",
        "hyper_util",
        "rustls",
        "hickory_proto",
        "hickory_net",
        "hickory_resolver",
    ];
    let mut directives = ours;
    for krate in quiet {
        directives.push_str(&format!(",{krate}={deps}"));
    }
    if deps == "warn" {
        // The informer reports each failed list or watch itself, once per kind and cause; the watcher's
        // and the client's own line for every retry would repeat it about once a second.
        directives.push_str(",kube_runtime::watcher=error,kube_client::client=error");
    }
    EnvFilter::new(directives)
}

/// Install the global subscriber. A second call (tests, or a library user that installed its own) is a
/// no-op rather than an error.
pub fn init(format: LogFormat, level: LogLevel) {
    // Colours only on a terminal: logs collected from a pod or a pipe stay plain text.
    let ansi = std::io::stderr().is_terminal();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter(level))
        .with_writer(std::io::stderr)
        .with_ansi(ansi);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn external_dns_level_names_map_to_tracing_levels() {
        assert_eq!(tracing_level(LogLevel::Panic), tracing::Level::ERROR);
        assert_eq!(tracing_level(LogLevel::Fatal), tracing::Level::ERROR);
        assert_eq!(tracing_level(LogLevel::Warning), tracing::Level::WARN);
        assert_eq!(tracing_level(LogLevel::Info), tracing::Level::INFO);
        assert_eq!(tracing_level(LogLevel::Trace), tracing::Level::TRACE);
    }

    #[test]
    fn dependencies_are_quieter_than_our_crates_below_debug() {
        let directives =
            |level| -> Vec<String> { level_filter(level).to_string().split(',').map(String::from).collect() };
        let info = directives(LogLevel::Info);
        assert!(
            info.contains(&"info".to_string()) && info.contains(&"kube=warn".to_string()),
            "{info:?}"
        );
        let debug = directives(LogLevel::Debug);
        assert!(
            debug.contains(&"debug".to_string()) && debug.contains(&"kube=debug".to_string()),
            "{debug:?}"
        );
        let error = directives(LogLevel::Error);
        assert!(
            error.contains(&"error".to_string()) && error.contains(&"kube=error".to_string()),
            "{error:?}"
        );
    }
}
