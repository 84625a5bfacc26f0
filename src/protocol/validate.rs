//! Input validation shared by every operation (no I/O). Messages match the pure-Python client.

use crate::config::{py_float, MAX_SECONDS};
use crate::errors::{Error, ErrorKind, Result};
use crate::protocol::keys::Queue;

pub const MAX_COUNT: i64 = 10_000;
pub const MAX_ID_CHARS: usize = 128;
pub const MIN_LEASE: f64 = 0.001;

/// A str as Python's `repr` shows it (quotes and escapes), for error messages.
pub fn py_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if c.is_control() => {
                let n = c as u32;
                if n <= 0xff {
                    out.push_str(&format!("\\x{n:02x}"));
                } else if n <= 0xffff {
                    out.push_str(&format!("\\u{n:04x}"));
                } else {
                    out.push_str(&format!("\\U{n:08x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// `^[A-Za-z0-9_.-]{1,128}$`
pub fn is_topic_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

pub fn topic_name(name: &str) -> Result<()> {
    if is_topic_name(name) {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::InvalidName,
        format!(
            "invalid topic name {}: use 1-128 characters from A-Z a-z 0-9 _ . -",
            py_repr(name)
        ),
    ))
}

/// `count` as given (None when it is not an int, or is a bool); `repr` is Python's repr of the value.
pub fn count(value: Option<i64>, repr: &str) -> Result<usize> {
    match value {
        Some(n) if (1..=MAX_COUNT).contains(&n) => Ok(n as usize),
        _ => Err(Error::invalid(format!(
            "count must be an int from 1 to {MAX_COUNT}, got {repr}"
        ))),
    }
}

/// A lease in seconds -> milliseconds sent to Redis: max(1, round(lease * 1000)).
pub fn lease_ms(value: Option<f64>, repr: &str) -> Result<u64> {
    match value {
        Some(s) if (MIN_LEASE..=MAX_SECONDS).contains(&s) => Ok(((s * 1000.0).round_ties_even() as u64).max(1)),
        _ => Err(Error::invalid(format!(
            "lease must be a number of seconds from {MIN_LEASE} to {MAX_SECONDS:.0}, got {repr}"
        ))),
    }
}

/// `block`: None or 0 -> no wait; (0, 7 days] -> wait that long. `Some(None)` means "not a number".
pub fn block(value: Option<Option<f64>>, repr: &str) -> Result<Option<f64>> {
    match value {
        None => Ok(None),
        Some(Some(0.0)) => Ok(None),
        Some(Some(s)) if s > 0.0 && s <= MAX_SECONDS => Ok(Some(s)),
        _ => Err(Error::invalid(format!(
            "block must be None or a number of seconds from 0 to {MAX_SECONDS:.0}, got {repr}"
        ))),
    }
}

/// Non-empty, at most 128 characters, no whitespace: the rule for message ids and worker names.
fn is_word(s: &str) -> bool {
    !s.is_empty() && s.chars().count() <= MAX_ID_CHARS && !s.chars().any(char::is_whitespace)
}

/// A message id: a non-empty str of at most 128 characters without whitespace.
pub fn message_id(id: &str) -> Result<()> {
    if is_word(id) {
        return Ok(());
    }
    Err(Error::invalid(format!(
        "a message id must be a non-empty str of at most {MAX_ID_CHARS} characters without whitespace, got {}",
        py_repr(id)
    )))
}

/// A worker name (the owner of a processing list): the same rule as ids.
pub fn owner(name: &str) -> Result<()> {
    if is_word(name) {
        return Ok(());
    }
    Err(Error::invalid(format!(
        "owner must be a non-empty str of at most {MAX_ID_CHARS} characters without whitespace, got {}",
        py_repr(name)
    )))
}

/// A release delay in seconds -> milliseconds: 0 (release now) to 7 days; a positive delay is at least 1 ms.
pub fn delay_ms(value: Option<f64>, repr: &str) -> Result<u64> {
    match value {
        Some(0.0) => Ok(0),
        Some(s) if s > 0.0 && s <= MAX_SECONDS => Ok(((s * 1000.0).round_ties_even() as u64).max(1)),
        _ => Err(Error::invalid(format!(
            "delay must be a number of seconds from 0 to {MAX_SECONDS:.0}, got {repr}"
        ))),
    }
}

/// The dead-letter topic of `topic`: `to`, or `<topic>.dead`; never the topic itself.
pub fn dead_topic(topic: &str, to: Option<&str>) -> Result<String> {
    let name = to.map_or_else(|| format!("{topic}.dead"), str::to_string);
    topic_name(&name)?;
    if name == topic {
        return Err(Error::invalid(format!(
            "a dead-letter topic must differ from the topic itself, got {}",
            py_repr(&name)
        )));
    }
    Ok(name)
}

pub fn queue(name: &str) -> Result<Queue> {
    match name {
        "backlog" => Ok(Queue::Backlog),
        "nextlog" => Ok(Queue::Nextlog),
        _ => Err(Error::invalid(format!(
            "queue must be 'backlog' or 'nextlog', got {}",
            py_repr(name)
        ))),
    }
}

pub fn start(value: Option<i64>, repr: &str) -> Result<usize> {
    match value {
        Some(n) if n >= 0 => Ok(n as usize),
        _ => Err(Error::invalid(format!("start must be an int >= 0, got {repr}"))),
    }
}

/// Checks one message's fields (already known to be str pairs): non-empty, no empty field name, size.
pub fn fields(fields: &[(String, String)], max_bytes: usize) -> Result<()> {
    if fields.is_empty() {
        return Err(Error::new(
            ErrorKind::InvalidMessage,
            "a message must have at least one field",
        ));
    }
    if fields.iter().any(|(k, _)| k.is_empty()) {
        return Err(Error::new(
            ErrorKind::InvalidMessage,
            "message field names must be non-empty",
        ));
    }
    let size: usize = fields.iter().map(|(k, v)| k.len() + v.len()).sum();
    if size > max_bytes {
        return Err(Error::new(
            ErrorKind::MessageTooLarge,
            format!("message is {size} bytes, more than max_message_bytes={max_bytes}"),
        ));
    }
    Ok(())
}

/// The error for a batch with bad items (`errors` non-empty), nothing of which was written.
pub fn batch_error(errors: Vec<(usize, Error)>, total: usize) -> Error {
    let message = format!("{} of {total} messages are invalid; nothing was written", errors.len());
    Error::new(ErrorKind::Batch(errors), message)
}

/// Python's repr of a float (for messages built from numbers).
pub fn float_repr(v: f64) -> String {
    py_float(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_names() {
        for ok in ["a", "jobs", "A-Z_0.9", &"x".repeat(128)] {
            assert!(topic_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", "a:b", "a b", "a*", "{a}", "é", &"x".repeat(129)] {
            let err = topic_name(bad).unwrap_err();
            assert_eq!(err.kind, ErrorKind::InvalidName);
        }
        assert_eq!(
            topic_name("a:b").unwrap_err().message,
            "invalid topic name 'a:b': use 1-128 characters from A-Z a-z 0-9 _ . -"
        );
    }

    #[test]
    fn reprs_like_python() {
        assert_eq!(py_repr("abc"), "'abc'");
        assert_eq!(py_repr("it's"), "\"it's\"");
        assert_eq!(py_repr("a\nb"), "'a\\nb'");
        assert_eq!(py_repr("'\""), "'\\'\"'");
        assert_eq!(py_repr("\u{1}"), "'\\x01'");
    }

    #[test]
    fn counts_leases_blocks() {
        assert_eq!(count(Some(1), "1").unwrap(), 1);
        assert_eq!(count(Some(10_000), "10000").unwrap(), 10_000);
        assert!(count(Some(0), "0").is_err());
        assert!(count(Some(10_001), "10001").is_err());
        assert!(count(None, "True").is_err());
        assert_eq!(lease_ms(Some(30.0), "30.0").unwrap(), 30_000);
        assert_eq!(lease_ms(Some(0.001), "0.001").unwrap(), 1);
        assert_eq!(lease_ms(Some(0.0015), "0.0015").unwrap(), 2);
        assert_eq!(lease_ms(Some(604_800.0), "").unwrap(), 604_800_000);
        assert!(lease_ms(Some(0.0), "0").is_err());
        assert!(lease_ms(Some(f64::NAN), "nan").is_err());
        assert!(lease_ms(Some(604_800.5), "").is_err());
        assert!(lease_ms(None, "'1'").is_err());
        assert_eq!(block(None, "None").unwrap(), None);
        assert_eq!(block(Some(Some(0.0)), "0").unwrap(), None);
        assert_eq!(block(Some(Some(1.5)), "1.5").unwrap(), Some(1.5));
        assert!(block(Some(Some(-1.0)), "-1").is_err());
        assert!(block(Some(Some(f64::NAN)), "nan").is_err());
        assert!(block(Some(None), "'x'").is_err());
    }

    #[test]
    fn ids_queues_fields() {
        assert!(message_id("abc").is_ok());
        assert!(message_id("").is_err());
        assert!(message_id("a b").is_err());
        assert!(message_id(&"a".repeat(129)).is_err());
        assert!(owner("worker-1").is_ok());
        assert!(owner("a b").is_err());
        assert_eq!(delay_ms(Some(0.0), "0").unwrap(), 0);
        assert_eq!(delay_ms(Some(0.0001), "").unwrap(), 1);
        assert_eq!(delay_ms(Some(1.5), "1.5").unwrap(), 1500);
        assert!(delay_ms(Some(-1.0), "-1").is_err());
        assert!(delay_ms(None, "'1'").is_err());
        assert_eq!(dead_topic("jobs", None).unwrap(), "jobs.dead");
        assert_eq!(dead_topic("jobs", Some("graveyard")).unwrap(), "graveyard");
        assert!(dead_topic("jobs", Some("jobs")).is_err());
        assert_eq!(
            dead_topic(&"x".repeat(124), None).unwrap_err().kind,
            ErrorKind::InvalidName
        );
        assert_eq!(queue("backlog").unwrap(), Queue::Backlog);
        assert!(queue("other").is_err());
        assert!(start(Some(0), "0").is_ok());
        assert!(start(Some(-1), "-1").is_err());
        let f = vec![("k".to_string(), "v".to_string())];
        assert!(fields(&f, 2).is_ok());
        assert_eq!(fields(&f, 1).unwrap_err().kind, ErrorKind::MessageTooLarge);
        assert_eq!(fields(&[], 10).unwrap_err().kind, ErrorKind::InvalidMessage);
        let empty_key = vec![(String::new(), "v".to_string())];
        assert_eq!(fields(&empty_key, 10).unwrap_err().kind, ErrorKind::InvalidMessage);
        let e = batch_error(vec![(1, Error::invalid("x"))], 3);
        assert_eq!(e.message, "1 of 3 messages are invalid; nothing was written");
    }
}
