//! rfq message ids: a uuid1 in 32 lowercase hex, with a random multicast node (as rfq 1.2+ makes them).
//!
//! The timestamp (100 ns ticks since 1582-10-15) is strictly increasing within the process, and the random
//! parts come from a generator seeded from the OS per thread and again in a forked child
//! ([`crate::fork::with_rng`]), so a forked child never repeats its parent's ids.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use rand::Rng;

use crate::fork::with_rng;

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
    let time_low = u128::from(ticks & 0xFFFF_FFFF);
    let time_mid = u128::from((ticks >> 32) & 0xFFFF);
    let time_hi = u128::from(((ticks >> 48) & 0x0FFF) | 0x1000);
    let clock = u128::from((clock_seq & 0x3FFF) | 0x8000);
    hex32(time_low << 96 | time_mid << 80 | time_hi << 64 | clock << 48 | u128::from(node & 0xFFFF_FFFF_FFFF))
}

/// `v` as 32 lowercase hex digits, as `format!("{v:032x}")` writes it but without the formatter's work: a
/// publish of 1000 messages makes 1000 ids, and formatting them was about 8% of its client CPU.
fn hex32(v: u128) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut digits = [0u8; 32];
    for (i, d) in digits.iter_mut().enumerate() {
        *d = HEX[((v >> (124 - 4 * i)) & 0xF) as usize];
    }
    String::from_utf8(digits.to_vec()).expect("hex digits are ASCII")
}

/// `n` new ids, in increasing time order.
pub fn new_ids(n: usize) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    let start = reserve_ticks(n as u64);
    with_rng(|rng| {
        (0..n as u64)
            .map(|i| {
                let node = rng.random::<u64>() & 0xFFFF_FFFF_FFFF | (1 << 40);
                format_uuid1(start + i, rng.random::<u16>(), node)
            })
            .collect()
    })
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

// ---- RSMQ ids ------------------------------------------------------------------------------------
//
// An RSMQ id is base36(epoch µs) + 22 characters of [A-Za-z0-9] (Node RSMQ's `makeid`). The send script
// makes the time part from Redis TIME; the client supplies the random part.

/// The alphabet of the random part (`makeid` in smrchy/rsmq).
const RSMQ_ALPHABET: &[u8; 62] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
/// Characters of the random part of an RSMQ id.
pub const RSMQ_RANDOM_CHARS: usize = 22;
/// Length of the base36 time prefix (epoch microseconds) until the year ~2085.
pub const RSMQ_TIME_CHARS: usize = 10;

/// Appends the 22 random characters of one RSMQ id to `out`, drawn uniformly from `[A-Za-z0-9]`.
pub fn push_rsmq_random(rng: &mut impl Rng, out: &mut String) {
    let mut left = RSMQ_RANDOM_CHARS;
    while left > 0 {
        // 62 * 4 = 248: bytes from 248 up are redrawn so every character is equally likely.
        for b in rng.random::<[u8; RSMQ_RANDOM_CHARS]>() {
            if b < 248 && left > 0 {
                out.push(RSMQ_ALPHABET[(b % 62) as usize] as char);
                left -= 1;
            }
        }
    }
}

/// `n` random parts, for the messages of one send.
pub fn rsmq_randoms(n: usize) -> Vec<String> {
    with_rng(|rng| {
        (0..n)
            .map(|_| {
                let mut s = String::with_capacity(RSMQ_RANDOM_CHARS);
                push_rsmq_random(rng, &mut s);
                s
            })
            .collect()
    })
}

/// `sent` of an RSMQ message, epoch ms: its first 10 characters read as base36 microseconds, / 1000
/// (RSMQ's `parseInt(id.slice(0, 10), 36) / 1000`); NaN unless those are 10 base36 digits.
pub fn rsmq_sent_ms(id: &str) -> f64 {
    match id.get(..RSMQ_TIME_CHARS) {
        Some(head) if head.bytes().all(|b| b.is_ascii_alphanumeric()) => {
            u64::from_str_radix(head, 36).map_or(f64::NAN, |us| us as f64 / 1000.0)
        }
        _ => f64::NAN,
    }
}

// ---- Streams publish tokens ------------------------------------------------------------------------

/// `n` publish tokens: random uuid4s in 32 lowercase hex (Python's `uuid.uuid4().hex`).
pub fn new_tokens(n: usize) -> Vec<String> {
    with_rng(|rng| {
        (0..n)
            .map(|_| {
                let mut b = rng.random::<[u8; 16]>();
                b[6] = (b[6] & 0x0f) | 0x40;
                b[8] = (b[8] & 0x3f) | 0x80;
                hex32(u128::from_be_bytes(b))
            })
            .collect()
    })
}

/// A claim's token: a letter (so a script never reads it as a delivery count) and 15 random base-36 digits.
pub fn claim_token() -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    with_rng(|rng| {
        let mut out = String::with_capacity(16);
        out.push(DIGITS[rng.random_range(10..36)] as char);
        for _ in 0..15 {
            out.push(DIGITS[rng.random_range(0..36)] as char);
        }
        out
    })
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
    fn hex_digits_are_those_of_the_formatter() {
        let mut values = vec![0u128, 1, u128::MAX, 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210];
        values.extend(with_rng(|rng| {
            (0..1000).map(|_| rng.random::<u128>()).collect::<Vec<_>>()
        }));
        for v in values {
            assert_eq!(hex32(v), format!("{v:032x}"));
        }
        let (ticks, clock_seq, node) = (0x01f0_1234_5678_9abc_u64, 0xbeef_u16, 0x1234_5678_9abc_def0_u64);
        assert_eq!(
            format_uuid1(ticks, clock_seq, node),
            format!(
                "{:08x}{:04x}{:04x}{:04x}{:012x}",
                ticks & 0xFFFF_FFFF,
                (ticks >> 32) & 0xFFFF,
                ((ticks >> 48) & 0x0FFF) | 0x1000,
                (clock_seq & 0x3FFF) | 0x8000,
                node & 0xFFFF_FFFF_FFFF
            )
        );
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

    #[test]
    fn rsmq_random_parts() {
        let parts = rsmq_randoms(2000);
        assert!(parts
            .iter()
            .all(|p| p.len() == RSMQ_RANDOM_CHARS && p.bytes().all(|b| b.is_ascii_alphanumeric())));
        let unique: std::collections::HashSet<&String> = parts.iter().collect();
        assert_eq!(unique.len(), parts.len());
        let all: String = parts.concat();
        for c in ['A', 'Z', 'a', 'z', '0', '9'] {
            assert!(all.contains(c), "{c}");
        }
    }

    #[test]
    fn rsmq_sent_reads_the_base36_prefix() {
        // Python: int('gqll7vdgzk', 36) == 1700000000123456 (Number("1700000000123456").toString(36)).
        let id = format!("gqll7vdgzk{}", "A".repeat(22));
        assert_eq!(rsmq_sent_ms(&id), 1_700_000_000_123.456);
        assert_eq!(rsmq_sent_ms("GQLL7VDGZKxx"), 1_700_000_000_123.456);
        assert!(rsmq_sent_ms("").is_nan());
        assert!(rsmq_sent_ms("gqll7vdgz").is_nan());
        assert!(rsmq_sent_ms("gqll7vdg:kAAAA").is_nan());
        assert!(rsmq_sent_ms("ééééééééééé").is_nan());
    }

    #[test]
    fn tokens_are_uuid4_hex() {
        let tokens = new_tokens(100);
        for t in &tokens {
            assert_eq!(t.len(), 32);
            assert!(t.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
            assert_eq!(&t[12..13], "4");
            assert!(matches!(&t[16..17], "8" | "9" | "a" | "b"));
        }
        let unique: std::collections::HashSet<&String> = tokens.iter().collect();
        assert_eq!(unique.len(), tokens.len());
    }
}
