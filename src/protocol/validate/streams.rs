//! Streams topics: stream, group and consumer names, ids by where they go, retention and deliveries.

use super::{dead_of, is_topic_name, name_error};
use crate::errors::{Error, ErrorKind, Result};
use crate::limits::{MAX_DELIVERIES, MAX_GROUP_NAME_LENGTH, MAX_SECONDS};
use crate::pyrepr::py_repr;

/// Most digits of each part of a stream id.
const MAX_ID_PART_DIGITS: usize = 20;

/// The error for a bad stream name; `repr` is how Python shows the value.
pub fn stream_name_error(repr: &str) -> Error {
    name_error("stream", repr)
}

pub fn stream_name(name: &str) -> Result<()> {
    if is_topic_name(name) {
        return Ok(());
    }
    Err(stream_name_error(&py_repr(name)))
}

/// A group or consumer name: 1-128 printable ASCII characters (0x21..0x7e), so no spaces.
pub fn is_group_name(name: &str) -> bool {
    (1..=MAX_GROUP_NAME_LENGTH).contains(&name.len()) && name.bytes().all(|b| (0x21..=0x7e).contains(&b))
}

pub fn group_name_error(repr: &str) -> Error {
    Error::new(
        ErrorKind::InvalidName,
        format!("invalid group name {repr}: use 1-{MAX_GROUP_NAME_LENGTH} printable ASCII characters without spaces"),
    )
}

pub fn consumer_name_error(repr: &str) -> Error {
    Error::new(
        ErrorKind::InvalidName,
        format!(
            "invalid consumer name {repr}: use 1-{MAX_GROUP_NAME_LENGTH} printable ASCII characters without spaces"
        ),
    )
}

/// `max_deliveries`: an int from 1 to 1,000,000 (`value` None: not an int, or a bool).
pub fn max_deliveries(value: Option<i64>, repr: &str) -> Result<i64> {
    match value {
        Some(n) if (1..=MAX_DELIVERIES).contains(&n) => Ok(n),
        _ => Err(Error::invalid(format!(
            "max_deliveries must be None or an int from 1 to {MAX_DELIVERIES}, got {repr}"
        ))),
    }
}

/// The dead-letter stream of `stream`: `to`, or `<stream>.dead`; never the stream itself.
pub fn dead_stream(stream: &str, to: Option<&str>) -> Result<String> {
    dead_of("stream", stream, to)
}

/// `maxlen` of a retention: an int >= 0.
pub fn maxlen(value: Option<i64>, repr: &str) -> Result<u64> {
    match value {
        Some(n) if n >= 0 => Ok(n as u64),
        _ => Err(Error::invalid(format!(
            "maxlen must be None or an int >= 0, got {repr}"
        ))),
    }
}

/// `max_age` of a retention, seconds > 0 -> ms (`round(max_age * 1000)`).
pub fn max_age_ms(value: Option<f64>, repr: &str) -> Result<u64> {
    match value {
        Some(s) if s > 0.0 => Ok((s * 1000.0).round_ties_even() as u64),
        _ => Err(Error::invalid(format!(
            "max_age must be None or a number of seconds > 0, got {repr}"
        ))),
    }
}

/// `min_idle` (autoclaim, pending), seconds from 0 to 7 days -> ms (`round(min_idle * 1000)`).
pub fn min_idle_ms(value: Option<f64>, repr: &str) -> Result<u64> {
    match value {
        Some(s) if (0.0..=MAX_SECONDS).contains(&s) => Ok((s * 1000.0).round_ties_even() as u64),
        _ => Err(Error::invalid(format!(
            "min_idle must be a number of seconds from 0 to {MAX_SECONDS:.0}, got {repr}"
        ))),
    }
}

/// Where a stream id given by a user goes: each place takes its own special ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdUse {
    /// `range` bounds: `-`, `+`, or an id, which may follow `(` (exclusive).
    Range,
    /// Group positions (`create`, `seek`): `$` or an id.
    Position,
}

/// The error for a bad id given as argument `what` in `place`; `repr` is how Python shows the value.
pub fn stream_id_error(place: IdUse, what: &str, repr: &str) -> Error {
    let (choices, bound) = match place {
        IdUse::Range => ("'-', '+'", " (after '(' for an exclusive bound)"),
        IdUse::Position => ("'$'", ""),
    };
    Error::invalid(format!(
        "{what} must be {choices}, a stream id '<ms>-<seq>' or '<ms>'{bound}, or an aware datetime, got {repr}"
    ))
}

/// The error for an entry of ack / dead_letter that is neither a StreamEntry nor a full id.
pub fn entry_id_error(repr: &str) -> Error {
    Error::invalid(format!(
        "an entry must be a StreamEntry or a stream id '<ms>-<seq>', got {repr}"
    ))
}

/// One part of an id: 1-20 digits, a 64-bit unsigned number.
fn is_id_part(part: &str) -> bool {
    (1..=MAX_ID_PART_DIGITS).contains(&part.len())
        && part.bytes().all(|b| b.is_ascii_digit())
        && part.parse::<u64>().is_ok()
}

/// `<ms>-<seq>`, or `<ms>` alone unless `seq`.
pub fn is_stream_id(id: &str, seq: bool) -> bool {
    match id.split_once('-') {
        Some((ms, s)) => is_id_part(ms) && is_id_part(s),
        None => !seq && is_id_part(id),
    }
}

/// A stream id given as argument `what` for `place` (returned as sent to Redis), or InvalidArgument.
pub fn stream_id(id: &str, place: IdUse, what: &str) -> Result<String> {
    let ok = match place {
        IdUse::Range => matches!(id, "-" | "+") || is_stream_id(id.strip_prefix('(').unwrap_or(id), false),
        IdUse::Position => id == "$" || is_stream_id(id, false),
    };
    if ok {
        Ok(id.to_string())
    } else {
        Err(stream_id_error(place, what, &py_repr(id)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_rules() {
        assert!(stream_name("events.v1").is_ok());
        let err = stream_name("a:b").unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidName);
        assert_eq!(
            err.message,
            "invalid stream name 'a:b': use 1-128 characters from A-Z a-z 0-9 _ . -"
        );
        for ok in ["g", "host-1:42", "~!{}", &"x".repeat(128)] {
            assert!(is_group_name(ok), "{ok}");
        }
        for bad in ["", "a b", "é", "a\tb", "\x7f", &"x".repeat(129)] {
            assert!(!is_group_name(bad), "{bad}");
        }
        assert_eq!(max_deliveries(Some(1), "1").unwrap(), 1);
        assert!(max_deliveries(Some(0), "0").is_err());
        assert!(max_deliveries(Some(1_000_001), "").is_err());
        assert!(max_deliveries(None, "True").is_err());
        assert_eq!(dead_stream("s", None).unwrap(), "s.dead");
        assert_eq!(dead_stream("s", Some("d")).unwrap(), "d");
        assert_eq!(
            dead_stream("s", Some("s")).unwrap_err().kind,
            ErrorKind::InvalidArgument
        );
        assert_eq!(dead_stream("s", Some("a b")).unwrap_err().kind, ErrorKind::InvalidName);
        assert_eq!(maxlen(Some(0), "0").unwrap(), 0);
        assert!(maxlen(Some(-1), "-1").is_err());
        assert_eq!(max_age_ms(Some(1.5), "1.5").unwrap(), 1500);
        assert_eq!(max_age_ms(Some(0.0025), "").unwrap(), 2);
        assert!(max_age_ms(Some(0.0), "0").is_err());
        assert_eq!(min_idle_ms(Some(0.0), "0").unwrap(), 0);
        assert!(min_idle_ms(Some(-0.5), "").is_err());
    }

    #[test]
    fn stream_ids_by_place() {
        let max = u64::MAX.to_string();
        for ok in ["-", "+", "0", "123", "123-4", "(123-4", "(5", max.as_str()] {
            assert_eq!(stream_id(ok, IdUse::Range, "start").unwrap(), ok);
        }
        for bad in [
            "",
            "$",
            "(",
            "(-",
            "(+",
            "1-",
            "-1",
            "1-2-3",
            "a",
            "1 ",
            "18446744073709551616",
            "１",
        ] {
            assert!(stream_id(bad, IdUse::Range, "end").is_err(), "{bad}");
        }
        for ok in ["$", "0", "17", "17-0"] {
            assert!(stream_id(ok, IdUse::Position, "start").is_ok(), "{ok}");
        }
        for bad in ["-", "+", "(1", "x"] {
            assert!(stream_id(bad, IdUse::Position, "position").is_err(), "{bad}");
        }
        assert!(is_stream_id("1-0", true));
        for bad in ["1", "0", "$", "-", "(1-0"] {
            assert!(!is_stream_id(bad, true), "{bad}");
        }
        assert_eq!(
            stream_id("x", IdUse::Range, "start").unwrap_err().message,
            "start must be '-', '+', a stream id '<ms>-<seq>' or '<ms>' (after '(' for an exclusive bound), \
             or an aware datetime, got 'x'"
        );
        assert_eq!(
            stream_id("-", IdUse::Position, "position").unwrap_err().message,
            "position must be '$', a stream id '<ms>-<seq>' or '<ms>', or an aware datetime, got '-'"
        );
    }
}
