//! rfq message ids: a uuid1 in 32 lowercase hex, with a random multicast node (as rfq 1.2+ makes them).
//!
//! The timestamp (100 ns ticks since 1582-10-15) is strictly increasing within the process, and every
//! batch draws its randomness from the OS, so a forked child never repeats its parent's ids.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// 100 ns ticks between 1582-10-15 (the uuid epoch) and 1970-01-01.
pub const UUID_EPOCH_OFFSET: u64 = 0x01B2_1DD2_1381_4000;

static LAST_TICKS: AtomicU64 = AtomicU64::new(0);

fn now_ticks() -> u64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    (since.as_nanos() / 100) as u64 + UUID_EPOCH_OFFSET
}

/// Reserves `n` consecutive timestamps, all later than any handed out before in this process.
fn reserve_ticks(n: u64) -> u64 {
    let now = now_ticks();
    let mut last = LAST_TICKS.load(Ordering::Relaxed);
    loop {
        let start = now.max(last + 1);
        match LAST_TICKS.compare_exchange_weak(last, start + n - 1, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => return start,
            Err(seen) => last = seen,
        }
    }
}

/// The 32-hex form of a uuid1 with these parts.
pub fn format_uuid1(ticks: u64, clock_seq: u16, node: u64) -> String {
    let time_low = ticks & 0xFFFF_FFFF;
    let time_mid = (ticks >> 32) & 0xFFFF;
    let time_hi = ((ticks >> 48) & 0x0FFF) | 0x1000;
    let clock = (clock_seq & 0x3FFF) | 0x8000;
    format!(
        "{time_low:08x}{time_mid:04x}{time_hi:04x}{clock:04x}{:012x}",
        node & 0xFFFF_FFFF_FFFF
    )
}

/// `n` new ids, in increasing time order.
pub fn new_ids(n: usize) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    let start = reserve_ticks(n as u64);
    let mut rng = SmallRng::from_os_rng();
    (0..n as u64)
        .map(|i| {
            let node = rng.random::<u64>() & 0xFFFF_FFFF_FFFF | (1 << 40);
            format_uuid1(start + i, rng.random::<u16>(), node)
        })
        .collect()
}

pub fn new_id() -> String {
    new_ids(1).remove(0)
}

/// Unix time in seconds carried by a version-1 uuid id (any case, hyphens allowed), else None.
pub fn published_unix_seconds(id: &str) -> Option<f64> {
    let hex: String = id.chars().filter(|&c| c != '-').collect();
    if hex.len() != 32 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let hex = hex.to_ascii_lowercase();
    // version nibble 1 and the RFC 4122 variant (10xx), as Python's uuid.UUID.version requires.
    if &hex[12..13] != "1" || !matches!(&hex[16..17], "8" | "9" | "a" | "b") {
        return None;
    }
    let low = u64::from_str_radix(&hex[0..8], 16).ok()?;
    let mid = u64::from_str_radix(&hex[8..12], 16).ok()?;
    let hi = u64::from_str_radix(&hex[13..16], 16).ok()?;
    let ticks = (hi << 48) | (mid << 32) | low;
    // Python: epoch + timedelta(microseconds=ticks // 10).
    let micros = (ticks / 10) as i64 - (UUID_EPOCH_OFFSET / 10) as i64;
    Some(micros as f64 / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_uuid1_hex_with_multicast_node() {
        let id = new_id();
        assert_eq!(id.len(), 32);
        assert!(id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        assert_eq!(&id[12..13], "1");
        assert!(matches!(&id[16..17], "8" | "9" | "a" | "b"));
        let node = u64::from_str_radix(&id[20..], 16).unwrap();
        assert_ne!(node & (1 << 40), 0);
    }

    #[test]
    fn timestamps_strictly_increase() {
        let ids = new_ids(10_000);
        let more = new_ids(3);
        let ticks = |id: &str| {
            let hi = u64::from_str_radix(&id[13..16], 16).unwrap();
            (hi << 48)
                | (u64::from_str_radix(&id[8..12], 16).unwrap() << 32)
                | u64::from_str_radix(&id[0..8], 16).unwrap()
        };
        let all: Vec<u64> = ids.iter().chain(more.iter()).map(|i| ticks(i)).collect();
        assert!(all.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn published_time_round_trips() {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs_f64();
        let t = published_unix_seconds(&new_id()).unwrap();
        assert!((t - now).abs() < 5.0, "{t} vs {now}");
        assert_eq!(published_unix_seconds("not-an-id"), None);
        // A version-4 uuid carries no time.
        assert_eq!(published_unix_seconds("6f1c2b0e9a4d4c3b8e2f1a0b9c8d7e6f"), None);
        // Python: ferroq.types.published_at("a8098c1af86e11dabd1a00112444be1e").timestamp() == 1149936511.013993
        let t = published_unix_seconds("a8098c1a-f86e-11da-bd1a-00112444be1e").unwrap();
        assert!((t - 1_149_936_511.013_993).abs() < 1e-6, "{t}");
    }
}
