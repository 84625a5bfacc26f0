//! Input validation (no I/O), with messages worded as the pure-Python client words them: the rules every
//! protocol shares here, each protocol's own in its module.

pub mod rfq;
pub mod rsmq;
pub mod streams;

use crate::errors::{Error, ErrorKind, Result};
use crate::limits::{MAX_COUNT, MAX_ID_LENGTH, MAX_NAME_LENGTH, MAX_SECONDS};
use crate::pyrepr::py_repr;

/// `^[A-Za-z0-9_.-]{1,128}$`
pub fn is_topic_name(name: &str) -> bool {
    (1..=MAX_NAME_LENGTH).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// The error of a bad topic or stream name (`what`: "topic" or "stream"; both follow the topic rule).
fn name_error(what: &str, repr: &str) -> Error {
    Error::new(
        ErrorKind::InvalidName,
        format!("invalid {what} name {repr}: use 1-128 characters from A-Z a-z 0-9 _ . -"),
    )
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
    if s.is_ascii() {
        // The usual id, checked bytewise: ASCII's whitespace by `char::is_whitespace` is 0x09-0x0d and 0x20.
        return !s.is_empty() && s.len() <= MAX_ID_LENGTH && !s.bytes().any(|b| matches!(b, 0x09..=0x0d | b' '));
    }
    s.chars().count() <= MAX_ID_LENGTH && !s.chars().any(char::is_whitespace)
}

/// The dead-letter topic or stream (`what`) of `of`: `to`, or `<of>.dead`; a valid name, never `of` itself.
fn dead_of(what: &str, of: &str, to: Option<&str>) -> Result<String> {
    let name = to.map_or_else(|| format!("{of}.dead"), str::to_string);
    if !is_topic_name(&name) {
        return Err(name_error(what, &py_repr(&name)));
    }
    if name == of {
        return Err(Error::invalid(format!(
            "a dead-letter {what} must differ from the {what} itself, got {}",
            py_repr(&name)
        )));
    }
    Ok(name)
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

/// The field count of a message that may have at most `most` fields (stream entries).
pub fn field_count(n: usize, most: usize) -> Result<()> {
    if n > most {
        return Err(Error::new(
            ErrorKind::InvalidMessage,
            format!("a message may have at most {most} fields, got {n}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_blocks_fields() {
        assert_eq!(count(Some(1), "1").unwrap(), 1);
        assert_eq!(count(Some(10_000), "10000").unwrap(), 10_000);
        assert!(count(Some(0), "0").is_err());
        assert!(count(Some(10_001), "10001").is_err());
        assert!(count(None, "True").is_err());
        assert_eq!(block(None, "None").unwrap(), None);
        assert_eq!(block(Some(Some(0.0)), "0").unwrap(), None);
        assert_eq!(block(Some(Some(1.5)), "1.5").unwrap(), Some(1.5));
        assert!(block(Some(Some(-1.0)), "-1").is_err());
        assert!(block(Some(Some(f64::NAN)), "nan").is_err());
        assert!(block(Some(None), "'x'").is_err());
        let f = vec![("k".to_string(), "v".to_string())];
        assert!(fields(&f, 2).is_ok());
        assert_eq!(fields(&f, 1).unwrap_err().kind, ErrorKind::MessageTooLarge);
        assert_eq!(fields(&[], 10).unwrap_err().kind, ErrorKind::InvalidMessage);
        let empty_key = vec![(String::new(), "v".to_string())];
        assert_eq!(fields(&empty_key, 10).unwrap_err().kind, ErrorKind::InvalidMessage);
        let e = batch_error(vec![(1, Error::invalid("x"))], 3);
        assert_eq!(e.message, "1 of 3 messages are invalid; nothing was written");
        assert_eq!(field_count(1001, 1000).unwrap_err().kind, ErrorKind::InvalidMessage);
        assert!(field_count(1000, 1000).is_ok());
    }

    #[test]
    fn words_agree_with_char_is_whitespace() {
        // The ASCII path must refuse exactly what the char path refuses.
        for b in 0u8..=0x7f {
            let c = char::from(b);
            assert_eq!(is_word(&format!("a{c}b")), !c.is_whitespace(), "byte {b:#04x}");
        }
        for s in ["é", "a\u{a0}b", "a\u{2003}b", "\u{85}"] {
            assert_eq!(is_word(s), !s.chars().any(char::is_whitespace), "{s:?}");
        }
        assert!(!is_word(""));
        assert!(is_word(&"x".repeat(MAX_ID_LENGTH)));
        assert!(!is_word(&"x".repeat(MAX_ID_LENGTH + 1)));
        assert!(is_word(&"é".repeat(MAX_ID_LENGTH)));
        assert!(!is_word(&"é".repeat(MAX_ID_LENGTH + 1)));
    }
}
