//! A record's comment shared between the user and extdns's ownership (`--txt-ownership=metadata`): the
//! user's text first, then, after one space, the ownership payload, one word that starts with
//! [`PAYLOAD_MARK`]. The comment is read, split, and written back whole, so the user's text is kept
//! through every write extdns makes.
//!
//! Comments rather than tags: a comment exists on every plan (100 characters on Free, 500 on Pro, Business
//! and Enterprise: "Record attributes", developers.cloudflare.com/dns/manage-dns-records/reference/
//! record-attributes), while tags do not exist on the Free plan at all, so tags would leave Free zones
//! with the doubled records this is meant to avoid. Comments take any graphic Unicode character but no
//! newline or carriage return, which the payload never holds.

use extdns_provider::metadata::{PAYLOAD_MARK, is_payload};

/// Comment length on the Free plan, in characters; what fits every plan.
pub const FREE_PLAN_COMMENT_LIMIT: usize = 100;
/// Comment length on the Pro, Business and Enterprise plans, in characters.
pub const PAID_PLAN_COMMENT_LIMIT: usize = 500;

/// A comment as read: the user's text (`None` when there is none) and the ownership payload, if any.
pub fn split(comment: &str) -> (Option<&str>, Option<&str>) {
    let trimmed = comment.trim_end();
    let start = trimmed.rfind(char::is_whitespace).map_or(0, |at| at + 1);
    let last = &trimmed[start..];
    if !last.starts_with(PAYLOAD_MARK) || !is_payload(last) {
        return ((!comment.is_empty()).then_some(comment), None);
    }
    let user = trimmed[..start].trim_end();
    ((!user.is_empty()).then_some(user), Some(last))
}

/// The comment written: the user's text, then the payload after one space.
pub fn join(user: Option<&str>, payload: Option<&str>) -> Option<String> {
    match (user.filter(|u| !u.is_empty()), payload) {
        (None, None) => None,
        (Some(u), None) => Some(u.to_string()),
        (None, Some(p)) => Some(p.to_string()),
        (Some(u), Some(p)) => Some(format!("{u} {p}")),
    }
}

/// How many characters of payload fit beside `user` in a comment of at most `limit` characters.
pub fn room(user: Option<&str>, limit: usize) -> usize {
    let used = user.filter(|u| !u.is_empty()).map_or(0, |u| u.chars().count() + 1);
    limit.saturating_sub(used)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_payload_is_the_last_word_and_the_users_text_is_kept() {
        assert_eq!(
            split("managed by team a extdns:v1;o=me"),
            (Some("managed by team a"), Some("extdns:v1;o=me"))
        );
        assert_eq!(split("extdns:v1;o=me"), (None, Some("extdns:v1;o=me")));
        assert_eq!(split("just a note"), (Some("just a note"), None));
        assert_eq!(
            split("extdns:vx is not a payload"),
            (Some("extdns:vx is not a payload"), None)
        );
        assert_eq!(split(""), (None, None));
    }

    #[test]
    fn join_is_split_read_backwards() {
        for (user, payload) in [
            (Some("note"), Some("extdns:v1;o=me")),
            (None, Some("extdns:v1;o=me")),
            (Some("n"), None),
        ] {
            let c = join(user, payload).unwrap_or_default();
            assert_eq!(split(&c), (user, payload));
        }
        assert_eq!(join(None, None), None);
    }

    #[test]
    fn the_room_left_counts_characters_and_the_space() {
        assert_eq!(room(None, FREE_PLAN_COMMENT_LIMIT), 100);
        assert_eq!(room(Some("é€"), 100), 97);
        assert_eq!(room(Some(&"x".repeat(120)), 100), 0);
        assert_eq!(PAID_PLAN_COMMENT_LIMIT, 500);
    }
}
