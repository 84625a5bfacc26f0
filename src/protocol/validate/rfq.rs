//! rfq topics: names, leases, delays, ids, owners and the queues of `inspect` / `purge`.

use super::{dead_of, is_topic_name, is_word, name_error};
use crate::errors::{Error, Result};
use crate::limits::{MAX_ID_LENGTH, MAX_SECONDS, MIN_LEASE};
use crate::protocol::keys::TopicList;
use crate::pyrepr::py_repr;

pub fn topic_name(name: &str) -> Result<()> {
    if is_topic_name(name) {
        return Ok(());
    }
    Err(name_error("topic", &py_repr(name)))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::errors::ErrorKind;

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
    fn leases() {
        assert_eq!(lease_ms(Some(30.0), "30.0").unwrap(), 30_000);
        assert_eq!(lease_ms(Some(0.001), "0.001").unwrap(), 1);
        assert_eq!(lease_ms(Some(0.0015), "0.0015").unwrap(), 2);
        assert_eq!(lease_ms(Some(604_800.0), "").unwrap(), 604_800_000);
        assert!(lease_ms(Some(0.0), "0").is_err());
        assert!(lease_ms(Some(f64::NAN), "nan").is_err());
        assert!(lease_ms(Some(604_800.5), "").is_err());
        assert!(lease_ms(None, "'1'").is_err());
    }

    #[test]
    fn ids_queues() {
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
    }
}
