//! Input validation shared by every operation (no I/O). Messages match the pure-Python client.

use crate::errors::{Error, ErrorKind, Result};
use crate::limits::{
    MAX_COUNT, MAX_DELIVERIES, MAX_GROUP_NAME_LENGTH, MAX_ID_LENGTH, MAX_NAME_LENGTH, MAX_RSMQ_MAXSIZE,
    MAX_RSMQ_NS_LENGTH, MAX_RSMQ_QNAME_LENGTH, MAX_RSMQ_SECONDS, MAX_SECONDS, MIN_LEASE, MIN_RSMQ_MAXSIZE,
};
use crate::protocol::keys::TopicList;
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

pub fn topic_name(name: &str) -> Result<()> {
    if is_topic_name(name) {
        return Ok(());
    }
    Err(name_error("topic", &py_repr(name)))
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
    !s.is_empty() && s.chars().count() <= MAX_ID_LENGTH && !s.chars().any(char::is_whitespace)
}

/// A message id: a non-empty str of at most 128 characters without whitespace.
pub fn message_id(id: &str) -> Result<()> {
    if is_word(id) {
        return Ok(());
    }
    Err(Error::invalid(format!(
        "a message id must be a non-empty str of at most {MAX_ID_LENGTH} characters without whitespace, got {}",
        py_repr(id)
    )))
}

/// A worker name (the owner of a processing list): the same rule as ids.
pub fn owner(name: &str) -> Result<()> {
    if is_word(name) {
        return Ok(());
    }
    Err(Error::invalid(format!(
        "owner must be a non-empty str of at most {MAX_ID_LENGTH} characters without whitespace, got {}",
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

/// The dead-letter topic of `topic`: `to`, or `<topic>.dead`; never the topic itself.
pub fn dead_topic(topic: &str, to: Option<&str>) -> Result<String> {
    dead_of("topic", topic, to)
}

pub fn queue(name: &str) -> Result<TopicList> {
    match name {
        "backlog" => Ok(TopicList::Backlog),
        "nextlog" => Ok(TopicList::Nextlog),
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

// ---- RSMQ (Node RSMQ's rules, `_VALID` / `_validate`, plus ferroq's dead-letter settings) --------

/// `^[A-Za-z0-9_-]{1,160}$`
pub fn is_rsmq_qname(name: &str) -> bool {
    (1..=MAX_RSMQ_QNAME_LENGTH).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
}

/// The error for a bad queue name; `repr` is how Python shows the value.
pub fn rsmq_qname_error(repr: &str) -> Error {
    Error::new(
        ErrorKind::InvalidName,
        format!("invalid RSMQ queue name {repr}: use 1-{MAX_RSMQ_QNAME_LENGTH} characters from A-Z a-z 0-9 _ -"),
    )
}

pub fn rsmq_qname(name: &str) -> Result<()> {
    if is_rsmq_qname(name) {
        return Ok(());
    }
    Err(rsmq_qname_error(&py_repr(name)))
}

/// `^[A-Za-z0-9_.:-]{1,64}$`
pub fn is_rsmq_ns(ns: &str) -> bool {
    (1..=MAX_RSMQ_NS_LENGTH).contains(&ns.len())
        && ns
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'))
}

pub fn rsmq_ns_error(repr: &str) -> Error {
    Error::new(
        ErrorKind::InvalidName,
        format!("invalid RSMQ namespace {repr}: use 1-{MAX_RSMQ_NS_LENGTH} characters from A-Z a-z 0-9 _ . : -"),
    )
}

pub fn rsmq_ns(ns: &str) -> Result<()> {
    if is_rsmq_ns(ns) {
        return Ok(());
    }
    Err(rsmq_ns_error(&py_repr(ns)))
}

/// `^[A-Za-z0-9:]{32}$`
pub fn is_rsmq_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b':')
}

pub fn rsmq_id_error(repr: &str) -> Error {
    Error::invalid(format!(
        "invalid RSMQ message id {repr}: expected 32 characters from A-Z a-z 0-9 :"
    ))
}

pub fn rsmq_id(id: &str) -> Result<()> {
    if is_rsmq_id(id) {
        return Ok(());
    }
    Err(rsmq_id_error(&py_repr(id)))
}

/// A stored `vt` or `delay` (create, set_attributes): whole seconds, 0 to 9,999,999 (`value` None: not
/// an int, or a bool).
pub fn rsmq_stored_seconds(name: &str, value: Option<i64>, repr: &str) -> Result<i64> {
    match value {
        Some(n) if (0..=MAX_RSMQ_SECONDS).contains(&n) => Ok(n),
        _ => Err(Error::invalid(format!(
            "{name} must be an int from 0 to {MAX_RSMQ_SECONDS} (seconds), got {repr}"
        ))),
    }
}

/// A per-call `vt` or `delay` (send, receive, change_visibility): seconds from 0 to 9,999,999, fractions
/// allowed, sent to the scripts as `round(seconds * 1000)` ms (`value` None: not a finite int or float).
pub fn rsmq_call_ms(name: &str, value: Option<f64>, repr: &str) -> Result<u64> {
    match value {
        Some(s) if (0.0..=MAX_RSMQ_SECONDS as f64).contains(&s) => Ok((s * 1000.0).round_ties_even() as u64),
        _ => Err(Error::invalid(format!(
            "{name} must be a number of seconds from 0 to {MAX_RSMQ_SECONDS}, got {repr}"
        ))),
    }
}

/// `maxsize`: 1024 to 65536, or -1 for unlimited.
pub fn rsmq_maxsize(value: Option<i64>, repr: &str) -> Result<i64> {
    match value {
        Some(n) if n == -1 || (MIN_RSMQ_MAXSIZE..=MAX_RSMQ_MAXSIZE).contains(&n) => Ok(n),
        _ => Err(Error::invalid(format!(
            "maxsize must be an int from {MIN_RSMQ_MAXSIZE} to {MAX_RSMQ_MAXSIZE}, or -1 for unlimited, got {repr}"
        ))),
    }
}

/// `max_receives`: >= 1 (create), or >= 0 where 0 removes the dead-letter queue (set_attributes).
pub fn rsmq_max_receives(value: Option<i64>, repr: &str, zero_clears: bool) -> Result<i64> {
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
pub fn rsmq_dead_letter(
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
pub fn rsmq_message_bytes(message: &str, max_bytes: usize) -> Result<()> {
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
pub fn rsmq_too_long(units: usize, maxsize: &str) -> Error {
    Error::new(
        ErrorKind::MessageTooLarge,
        format!("message is {units} characters (UTF-16 code units), more than the queue's maxsize {maxsize}"),
    )
}

// ---- Streams topics ------------------------------------------------------------------------------

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
        assert_eq!(queue("backlog").unwrap(), TopicList::Backlog);
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

    #[test]
    fn rsmq_rules() {
        for ok in ["a", "jobs", "A-Z_09", &"x".repeat(160)] {
            assert!(rsmq_qname(ok).is_ok(), "{ok}");
        }
        for bad in ["", "a.b", "a:b", "a b", "é", &"x".repeat(161)] {
            assert_eq!(rsmq_qname(bad).unwrap_err().kind, ErrorKind::InvalidName, "{bad}");
        }
        assert_eq!(
            rsmq_qname("a.b").unwrap_err().message,
            "invalid RSMQ queue name 'a.b': use 1-160 characters from A-Z a-z 0-9 _ -"
        );
        for ok in ["rsmq", "a.b:c-d_e", &"n".repeat(64)] {
            assert!(rsmq_ns(ok).is_ok(), "{ok}");
        }
        for bad in ["", "a b", "a*", "{a}", &"n".repeat(65)] {
            assert_eq!(rsmq_ns(bad).unwrap_err().kind, ErrorKind::InvalidName, "{bad}");
        }
        assert!(rsmq_id(&"a".repeat(32)).is_ok());
        assert!(rsmq_id(&format!("{}:", "Z9".repeat(15) + "a")).is_ok());
        for bad in ["", &"a".repeat(31), &"a".repeat(33), &format!("{}-", "a".repeat(31))] {
            assert!(rsmq_id(bad).is_err(), "{bad}");
        }
        assert_eq!(
            rsmq_id("x").unwrap_err().message,
            "invalid RSMQ message id 'x': expected 32 characters from A-Z a-z 0-9 :"
        );
        assert_eq!(rsmq_stored_seconds("vt", Some(0), "0").unwrap(), 0);
        assert_eq!(rsmq_stored_seconds("vt", Some(9_999_999), "").unwrap(), 9_999_999);
        assert!(rsmq_stored_seconds("vt", Some(10_000_000), "").is_err());
        assert_eq!(
            rsmq_stored_seconds("delay", None, "1.5").unwrap_err().message,
            "delay must be an int from 0 to 9999999 (seconds), got 1.5"
        );
        assert_eq!(rsmq_call_ms("vt", Some(1.5), "1.5").unwrap(), 1500);
        assert_eq!(rsmq_call_ms("vt", Some(0.0005), "").unwrap(), 0);
        assert_eq!(rsmq_call_ms("vt", Some(0.0015), "").unwrap(), 2);
        assert_eq!(rsmq_call_ms("vt", Some(9_999_999.0), "").unwrap(), 9_999_999_000);
        assert!(rsmq_call_ms("vt", Some(-0.1), "").is_err());
        assert!(rsmq_call_ms("vt", Some(f64::NAN), "").is_err());
        assert_eq!(
            rsmq_call_ms("delay", None, "'1'").unwrap_err().message,
            "delay must be a number of seconds from 0 to 9999999, got '1'"
        );
        for ok in [-1, 1024, 65_536] {
            assert_eq!(rsmq_maxsize(Some(ok), "").unwrap(), ok);
        }
        for bad in [0, -2, 1023, 65_537, 65_565] {
            assert!(rsmq_maxsize(Some(bad), "").is_err(), "{bad}");
        }
        assert!(rsmq_maxsize(None, "True").is_err());
        assert!(rsmq_max_receives(Some(0), "0", false).is_err());
        assert_eq!(rsmq_max_receives(Some(0), "0", true).unwrap(), 0);
        assert!(rsmq_max_receives(None, "True", true).is_err());
    }

    #[test]
    fn rsmq_dead_letter_pairs() {
        let none = (String::new(), String::new());
        assert_eq!(rsmq_dead_letter("q", None, None, false).unwrap(), none);
        assert_eq!(
            rsmq_dead_letter("q", Some(3), Some("dead"), false).unwrap(),
            ("3".to_string(), "dead".to_string())
        );
        assert_eq!(
            rsmq_dead_letter("q", Some(0), None, true).unwrap(),
            ("0".to_string(), String::new())
        );
        assert!(rsmq_dead_letter("q", Some(0), None, false).is_err());
        assert!(rsmq_dead_letter("q", Some(3), None, true).is_err());
        assert!(rsmq_dead_letter("q", None, Some("d"), true).is_err());
        assert!(rsmq_dead_letter("q", Some(0), Some("d"), true).is_err());
        assert_eq!(
            rsmq_dead_letter("q", Some(2), Some("q"), true).unwrap_err().message,
            "a queue cannot be its own dead-letter queue: 'q'"
        );
        // The own-name check comes first, as in the pure client.
        assert!(rsmq_dead_letter("q", None, Some("q"), true)
            .unwrap_err()
            .message
            .starts_with("a queue cannot"));
    }

    #[test]
    fn rsmq_sizes() {
        assert_eq!(utf16_len("abc"), 3);
        assert_eq!(utf16_len("é"), 1);
        assert_eq!(utf16_len("😀"), 2);
        assert!(rsmq_message_bytes("abc", 3).is_ok());
        assert_eq!(
            rsmq_message_bytes("abcd", 3).unwrap_err().message,
            "message is 4 bytes, more than max_message_bytes=3"
        );
        assert_eq!(
            rsmq_too_long(1025, "1024").message,
            "message is 1025 characters (UTF-16 code units), more than the queue's maxsize 1024"
        );
    }

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
        assert_eq!(field_count(1001, 1000).unwrap_err().kind, ErrorKind::InvalidMessage);
        assert!(field_count(1000, 1000).is_ok());
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
