//! RSMQ queues: Node RSMQ's rules (`_VALID` / `_validate`), plus ferroq's dead-letter settings.

use crate::errors::{Error, ErrorKind, Result};
use crate::limits::{MAX_RSMQ_MAXSIZE, MAX_RSMQ_NS_LENGTH, MAX_RSMQ_QNAME_LENGTH, MAX_RSMQ_SECONDS, MIN_RSMQ_MAXSIZE};
use crate::pyrepr::py_repr;

/// `^[A-Za-z0-9_-]{1,160}$`
pub fn is_qname(name: &str) -> bool {
    (1..=MAX_RSMQ_QNAME_LENGTH).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
}

/// The error for a bad queue name; `repr` is how Python shows the value.
pub fn qname_error(repr: &str) -> Error {
    Error::new(
        ErrorKind::InvalidName,
        format!("invalid RSMQ queue name {repr}: use 1-{MAX_RSMQ_QNAME_LENGTH} characters from A-Z a-z 0-9 _ -"),
    )
}

pub fn qname(name: &str) -> Result<()> {
    if is_qname(name) {
        return Ok(());
    }
    Err(qname_error(&py_repr(name)))
}

/// `^[A-Za-z0-9_.:-]{1,64}$`
pub fn is_ns(ns: &str) -> bool {
    (1..=MAX_RSMQ_NS_LENGTH).contains(&ns.len())
        && ns
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'))
}

pub fn ns_error(repr: &str) -> Error {
    Error::new(
        ErrorKind::InvalidName,
        format!("invalid RSMQ namespace {repr}: use 1-{MAX_RSMQ_NS_LENGTH} characters from A-Z a-z 0-9 _ . : -"),
    )
}

pub fn ns(ns: &str) -> Result<()> {
    if is_ns(ns) {
        return Ok(());
    }
    Err(ns_error(&py_repr(ns)))
}

/// `^[A-Za-z0-9:]{32}$`
pub fn is_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b':')
}

pub fn id_error(repr: &str) -> Error {
    Error::invalid(format!(
        "invalid RSMQ message id {repr}: expected 32 characters from A-Z a-z 0-9 :"
    ))
}

pub fn id(id: &str) -> Result<()> {
    if is_id(id) {
        return Ok(());
    }
    Err(id_error(&py_repr(id)))
}

/// A stored `vt` or `delay` (create, set_attributes): whole seconds, 0 to 9,999,999 (`value` None: not
/// an int, or a bool).
pub fn stored_seconds(name: &str, value: Option<i64>, repr: &str) -> Result<i64> {
    match value {
        Some(n) if (0..=MAX_RSMQ_SECONDS).contains(&n) => Ok(n),
        _ => Err(Error::invalid(format!(
            "{name} must be an int from 0 to {MAX_RSMQ_SECONDS} (seconds), got {repr}"
        ))),
    }
}

/// A per-call `vt` or `delay` (send, receive, change_visibility): seconds from 0 to 9,999,999, fractions
/// allowed, sent to the scripts as `round(seconds * 1000)` ms (`value` None: not a finite int or float).
pub fn call_ms(name: &str, value: Option<f64>, repr: &str) -> Result<u64> {
    match value {
        Some(s) if (0.0..=MAX_RSMQ_SECONDS as f64).contains(&s) => Ok((s * 1000.0).round_ties_even() as u64),
        _ => Err(Error::invalid(format!(
            "{name} must be a number of seconds from 0 to {MAX_RSMQ_SECONDS}, got {repr}"
        ))),
    }
}

/// `maxsize`: 1024 to 65536, or -1 for unlimited.
pub fn maxsize(value: Option<i64>, repr: &str) -> Result<i64> {
    match value {
        Some(n) if n == -1 || (MIN_RSMQ_MAXSIZE..=MAX_RSMQ_MAXSIZE).contains(&n) => Ok(n),
        _ => Err(Error::invalid(format!(
            "maxsize must be an int from {MIN_RSMQ_MAXSIZE} to {MAX_RSMQ_MAXSIZE}, or -1 for unlimited, got {repr}"
        ))),
    }
}

/// `max_receives`: >= 1 (create), or >= 0 where 0 removes the dead-letter queue (set_attributes).
pub fn max_receives(value: Option<i64>, repr: &str, zero_clears: bool) -> Result<i64> {
    match value {
        Some(n) if n >= 1 || (zero_clears && n == 0) => Ok(n),
        _ if zero_clears => Err(Error::invalid(format!(
            "max_receives must be an int >= 0 (0 removes the dead-letter queue), got {repr}"
        ))),
        _ => Err(Error::invalid(format!("max_receives must be an int >= 1, got {repr}"))),
    }
}

/// The dead-letter settings as given: both or neither, or (set_attributes) `max_receives=0` alone; never the
/// queue itself. Returns what the scripts take: ('' keep | '0' remove | n, dead-letter name or '').
pub fn dead_letter(
    qname: &str,
    max_receives: Option<i64>,
    dead_letter: Option<&str>,
    allow_remove: bool,
) -> Result<(String, String)> {
    if dead_letter == Some(qname) {
        return Err(Error::invalid(format!(
            "a queue cannot be its own dead-letter queue: {}",
            py_repr(qname)
        )));
    }
    match (max_receives, dead_letter) {
        (None, None) => Ok((String::new(), String::new())),
        (Some(0), None) if allow_remove => Ok(("0".to_string(), String::new())),
        (Some(n), Some(d)) if n >= 1 => Ok((n.to_string(), d.to_string())),
        _ => Err(Error::invalid(
            "max_receives and dead_letter go together: give both, or max_receives=0 alone to remove the dead-letter queue",
        )),
    }
}

/// A message's size as RSMQ counts it: UTF-16 code units (JavaScript's `message.length`).
pub fn utf16_len(message: &str) -> usize {
    if message.is_ascii() {
        return message.len();
    }
    message.chars().map(char::len_utf16).sum()
}

/// The client-side size limit of one RSMQ message (UTF-8 bytes).
pub fn message_bytes(message: &str, max_bytes: usize) -> Result<()> {
    if message.len() > max_bytes {
        return Err(Error::new(
            ErrorKind::MessageTooLarge,
            format!(
                "message is {} bytes, more than max_message_bytes={max_bytes}",
                message.len()
            ),
        ));
    }
    Ok(())
}

/// A message longer than the queue's `maxsize` (in UTF-16 code units), as the send script reported it.
pub fn too_long(units: usize, maxsize: &str) -> Error {
    Error::new(
        ErrorKind::MessageTooLarge,
        format!("message is {units} characters (UTF-16 code units), more than the queue's maxsize {maxsize}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rsmq_rules() {
        for ok in ["a", "jobs", "A-Z_09", &"x".repeat(160)] {
            assert!(qname(ok).is_ok(), "{ok}");
        }
        for bad in ["", "a.b", "a:b", "a b", "é", &"x".repeat(161)] {
            assert_eq!(qname(bad).unwrap_err().kind, ErrorKind::InvalidName, "{bad}");
        }
        assert_eq!(
            qname("a.b").unwrap_err().message,
            "invalid RSMQ queue name 'a.b': use 1-160 characters from A-Z a-z 0-9 _ -"
        );
        for ok in ["rsmq", "a.b:c-d_e", &"n".repeat(64)] {
            assert!(ns(ok).is_ok(), "{ok}");
        }
        for bad in ["", "a b", "a*", "{a}", &"n".repeat(65)] {
            assert_eq!(ns(bad).unwrap_err().kind, ErrorKind::InvalidName, "{bad}");
        }
        assert!(id(&"a".repeat(32)).is_ok());
        assert!(id(&format!("{}:", "Z9".repeat(15) + "a")).is_ok());
        for bad in ["", &"a".repeat(31), &"a".repeat(33), &format!("{}-", "a".repeat(31))] {
            assert!(id(bad).is_err(), "{bad}");
        }
        assert_eq!(
            id("x").unwrap_err().message,
            "invalid RSMQ message id 'x': expected 32 characters from A-Z a-z 0-9 :"
        );
        assert_eq!(stored_seconds("vt", Some(0), "0").unwrap(), 0);
        assert_eq!(stored_seconds("vt", Some(9_999_999), "").unwrap(), 9_999_999);
        assert!(stored_seconds("vt", Some(10_000_000), "").is_err());
        assert_eq!(
            stored_seconds("delay", None, "1.5").unwrap_err().message,
            "delay must be an int from 0 to 9999999 (seconds), got 1.5"
        );
        assert_eq!(call_ms("vt", Some(1.5), "1.5").unwrap(), 1500);
        assert_eq!(call_ms("vt", Some(0.0005), "").unwrap(), 0);
        assert_eq!(call_ms("vt", Some(0.0015), "").unwrap(), 2);
        assert_eq!(call_ms("vt", Some(9_999_999.0), "").unwrap(), 9_999_999_000);
        assert!(call_ms("vt", Some(-0.1), "").is_err());
        assert!(call_ms("vt", Some(f64::NAN), "").is_err());
        assert_eq!(
            call_ms("delay", None, "'1'").unwrap_err().message,
            "delay must be a number of seconds from 0 to 9999999, got '1'"
        );
        for ok in [-1, 1024, 65_536] {
            assert_eq!(maxsize(Some(ok), "").unwrap(), ok);
        }
        for bad in [0, -2, 1023, 65_537, 65_565] {
            assert!(maxsize(Some(bad), "").is_err(), "{bad}");
        }
        assert!(maxsize(None, "True").is_err());
        assert!(max_receives(Some(0), "0", false).is_err());
        assert_eq!(max_receives(Some(0), "0", true).unwrap(), 0);
        assert!(max_receives(None, "True", true).is_err());
    }

    #[test]
    fn rsmq_dead_letter_pairs() {
        let none = (String::new(), String::new());
        assert_eq!(dead_letter("q", None, None, false).unwrap(), none);
        assert_eq!(
            dead_letter("q", Some(3), Some("dead"), false).unwrap(),
            ("3".to_string(), "dead".to_string())
        );
        assert_eq!(
            dead_letter("q", Some(0), None, true).unwrap(),
            ("0".to_string(), String::new())
        );
        assert!(dead_letter("q", Some(0), None, false).is_err());
        assert!(dead_letter("q", Some(3), None, true).is_err());
        assert!(dead_letter("q", None, Some("d"), true).is_err());
        assert!(dead_letter("q", Some(0), Some("d"), true).is_err());
        assert_eq!(
            dead_letter("q", Some(2), Some("q"), true).unwrap_err().message,
            "a queue cannot be its own dead-letter queue: 'q'"
        );
        // The own-name check comes first, as in the pure client.
        assert!(dead_letter("q", None, Some("q"), true)
            .unwrap_err()
            .message
            .starts_with("a queue cannot"));
    }

    #[test]
    fn rsmq_sizes() {
        assert_eq!(utf16_len("abc"), 3);
        assert_eq!(utf16_len("é"), 1);
        assert_eq!(utf16_len("😀"), 2);
        assert!(message_bytes("abc", 3).is_ok());
        assert_eq!(
            message_bytes("abcd", 3).unwrap_err().message,
            "message is 4 bytes, more than max_message_bytes=3"
        );
        assert_eq!(
            too_long(1025, "1024").message,
            "message is 1025 characters (UTF-16 code units), more than the queue's maxsize 1024"
        );
    }
}
