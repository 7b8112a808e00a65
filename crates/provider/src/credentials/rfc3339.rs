//! RFC 3339 times as the token endpoints write expiries (AWS's STS, container agent and metadata service,
//! Google's token endpoints), read without a date library: one parser for every credential source.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// An RFC 3339 UTC time as token endpoints write expirations (`2026-11-25T01:02:03Z`, with fractions, or
/// `+00:00` for `Z`); `None` for anything else, a time in another zone included.
pub fn parse(text: &str) -> Option<SystemTime> {
    let t = text.trim();
    let (date, time) = t.split_once(['T', 't', ' '])?;
    let mut d = date.splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let time = time
        .strip_suffix(['Z', 'z'])
        .or_else(|| time.strip_suffix("+00:00"))
        .unwrap_or(time);
    let mut parts = time.splitn(3, ':');
    let (h, min) = (parts.next()?.parse::<i64>().ok()?, parts.next()?.parse::<i64>().ok()?);
    let secs: f64 = parts.next()?.parse().ok()?;
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) || h > 23 || min > 59 || !(0.0..61.0).contains(&secs) {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let whole = u64::try_from(days * 86_400 + h * 3600 + min * 60).ok()?;
    Some(UNIX_EPOCH + Duration::from_secs(whole) + Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_times_are_read_with_fractions_and_either_spelling_of_utc() {
        let at = |s: &str| {
            parse(s)
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map(|d| d.as_secs_f64())
        };
        assert_eq!(at("1970-01-01T00:00:00Z"), Some(0.0));
        assert_eq!(at("2026-11-25T01:02:03Z"), Some(1_795_568_523.0));
        assert_eq!(at("2026-11-25T01:02:03.5Z"), Some(1_795_568_523.5));
        assert_eq!(at("2024-02-29T00:00:00+00:00"), Some(1_709_164_800.0));
        assert_eq!(at("2026-13-01T00:00:00Z"), None);
        assert_eq!(at("yesterday"), None);
    }
}
