//! What the protocol modules share: the message type, decoding Redis replies, and sending chunked script
//! calls on a pool.

use redis::{Cmd, Pipeline, Value};

use crate::errors::{Error, Result};
use crate::pool::Pool;
use crate::pyrepr::shown_debug;
use crate::scripts::Id;

/// One message: its (field, value) pairs in order (rfq topics, Streams topics, Arrow rows).
pub type Fields = Vec<(String, String)>;

/// A pipeline is cut after this many bytes of arguments, so one reply never waits on a huge write.
pub const PIPELINE_BYTES: usize = 8 << 20;

// ---- reply decoding -------------------------------------------------------------------------------

pub fn unexpected(what: &str, v: &Value) -> Error {
    Error::protocol(format!("unexpected reply from Redis for {what}: {}", shown_debug(v)))
}

pub fn string(v: Value) -> Result<String> {
    match v {
        Value::BulkString(b) => {
            Ok(String::from_utf8(b).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
        }
        Value::SimpleString(s) => Ok(s),
        Value::Int(n) => Ok(n.to_string()),
        Value::Okay => Ok("OK".into()),
        other => Err(unexpected("a string", &other)),
    }
}

pub fn opt_string(v: Value) -> Result<Option<String>> {
    match v {
        Value::Nil | Value::Boolean(false) => Ok(None),
        v => string(v).map(Some),
    }
}

pub fn int(v: Value) -> Result<i64> {
    match v {
        Value::Int(n) => Ok(n),
        Value::BulkString(ref b) => std::str::from_utf8(b)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| unexpected("an integer", &v)),
        other => Err(unexpected("an integer", &other)),
    }
}

pub fn opt_number(v: Value) -> Result<Option<f64>> {
    match v {
        Value::Nil | Value::Boolean(false) => Ok(None),
        Value::Int(n) => Ok(Some(n as f64)),
        Value::Double(d) => Ok(Some(d)),
        Value::BulkString(ref b) => std::str::from_utf8(b)
            .ok()
            .and_then(|s| s.parse().ok())
            .map(Some)
            .ok_or_else(|| unexpected("a number", &v)),
        other => Err(unexpected("a number", &other)),
    }
}

pub fn array(v: Value) -> Result<Vec<Value>> {
    match v {
        Value::Array(items) | Value::Set(items) => Ok(items),
        Value::Nil => Ok(Vec::new()),
        other => Err(unexpected("an array", &other)),
    }
}

/// A flat `[f1, v1, f2, v2, ...]` list (or a RESP3 map) as pairs.
pub fn pairs(v: Value) -> Result<Fields> {
    pairs_of(v, string)
}

/// A flat `[k1, v1, k2, v2, ...]` list (or a RESP3 map) as (name, value) pairs, each value decoded by `value`.
pub fn pairs_of<T>(v: Value, value: impl Fn(Value) -> Result<T>) -> Result<Vec<(String, T)>> {
    match v {
        Value::Map(items) => items.into_iter().map(|(k, v)| Ok((string(k)?, value(v)?))).collect(),
        v => {
            let items = array(v)?;
            if items.len() % 2 != 0 {
                return Err(Error::protocol(
                    "a reply of name/value pairs has an odd number of elements",
                ));
            }
            let mut out = Vec::with_capacity(items.len() / 2);
            let mut it = items.into_iter();
            while let (Some(k), Some(v)) = (it.next(), it.next()) {
                out.push((string(k)?, value(v)?));
            }
            Ok(out)
        }
    }
}

pub fn take<const N: usize>(v: Value, what: &str) -> Result<[Value; N]> {
    let items = array(v)?;
    let n = items.len();
    items
        .try_into()
        .map_err(|_| Error::protocol(format!("{what}: expected {N} elements, got {n}")))
}

// ---- command building -------------------------------------------------------------------------------

/// Splits `cmds` into pipelines of at most [`PIPELINE_BYTES`] each (always at least one command each).
pub fn pipelines(cmds: Vec<Cmd>) -> Vec<Pipeline> {
    let mut out = Vec::new();
    let mut pipe = Pipeline::new();
    let mut bytes = 0;
    for cmd in cmds {
        let size: usize = cmd
            .args_iter()
            .map(|a| match a {
                redis::Arg::Simple(b) => b.len() + 8,
                _ => 8,
            })
            .sum();
        if !pipe.is_empty() && bytes + size > PIPELINE_BYTES {
            out.push(std::mem::take(&mut pipe));
            bytes = 0;
        }
        bytes += size;
        pipe.add_command(cmd);
    }
    if !pipe.is_empty() {
        out.push(pipe);
    }
    out
}

/// Runs all `pipes` (every command one call of `script`) on one connection, in order; returns all replies.
pub async fn eval_all(pool: &Pool, idempotent: bool, script: Id, pipes: &[Pipeline]) -> Result<Vec<Value>> {
    pool.run(idempotent, |mut conn| async move {
        let mut replies = Vec::new();
        for pipe in pipes {
            let ids = vec![script; pipe.len()];
            replies.extend(pool.eval_pipe(&mut conn, &ids, pipe).await?);
        }
        Ok(replies)
    })
    .await
}

pub async fn eval_one(pool: &Pool, idempotent: bool, script: Id, cmd: &Cmd) -> Result<Value> {
    pool.run(
        idempotent,
        |mut conn| async move { pool.eval(&mut conn, script, cmd).await },
    )
    .await
}

/// The arguments of a command as strings, for tests of command layouts.
#[cfg(test)]
pub fn packed(cmd: &Cmd) -> Vec<String> {
    cmd.args_iter()
        .map(|a| match a {
            redis::Arg::Simple(b) => String::from_utf8(b.to_vec()).unwrap(),
            _ => "<cursor>".into(),
        })
        .collect()
}

/// Sends `pipe`, commands that only read, on a shared connection (repeated once after a drop); the replies
/// in order, the first error reply as the error.
pub async fn read_pipe(pool: &Pool, pipe: &Pipeline) -> Result<Vec<Value>> {
    pool.run(true, |mut conn| async move { pool.query_pipe(&mut conn, pipe).await })
        .await
}

/// Every key matching `pattern` of Redis type `kind`, in SCAN order (never KEYS, which blocks Redis).
pub async fn scan_keys(pool: &Pool, pattern: &str, kind: &str) -> Result<Vec<String>> {
    pool.run(true, |mut conn| async move {
        let mut keys = Vec::new();
        let mut cursor = "0".to_string();
        // Bounded: a full SCAN ends when the cursor is back at 0.
        for _ in 0..10_000_000 {
            let mut cmd = redis::cmd("SCAN");
            cmd.arg(&cursor)
                .arg("MATCH")
                .arg(pattern)
                .arg("COUNT")
                .arg(1000)
                .arg("TYPE")
                .arg(kind);
            let [next, found] = take::<2>(pool.query(&mut conn, &cmd).await?, "SCAN reply")?;
            for key in array(found)? {
                keys.push(string(key)?);
            }
            cursor = string(next)?;
            if cursor == "0" {
                break;
            }
        }
        Ok(keys)
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipelines_are_cut_by_size() {
        let big = "x".repeat(PIPELINE_BYTES / 2);
        let cmds: Vec<Cmd> = (0..5)
            .map(|_| {
                let mut c = redis::cmd("SET");
                c.arg("k").arg(&big);
                c
            })
            .collect();
        let pipes = pipelines(cmds);
        assert_eq!(pipes.iter().map(|p| p.len()).sum::<usize>(), 5);
        assert!(pipes.len() >= 3);
        assert!(pipelines(Vec::new()).is_empty());
    }
}
