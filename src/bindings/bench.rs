//! The benchmark's baseline of calls made one per round trip through redis-rs alone (`ferroq bench`): what
//! a single publish or claim of the native client is measured against, so its own overhead shows.

use std::time::Instant;

use pyo3::prelude::*;
use rand::Rng;

use crate::config::redact_url;
use crate::errors::{Error, ErrorKind, Result};
use crate::fork::with_rng;

/// The placeholder of an argument that takes a new random number each call (as in redis-benchmark's `-r`).
const RANDOM: &str = "__rand_int__";

/// `n` calls, each sending the `commands` in turn, each command once the previous reply was read, through
/// one redis-rs multiplexed connection on a current-thread runtime driven by this thread (as the native sync
/// client drives its calls), the GIL released. Every `__rand_int__` in an argument becomes a new random
/// 12-digit number per call (the same number within the call). Returns the seconds the `n` calls took
/// (connecting is not timed); an error reply raises.
#[pyfunction]
pub fn bench_round_trips(py: Python<'_>, url: &str, commands: Vec<Vec<String>>, n: usize) -> PyResult<f64> {
    if commands.is_empty() || commands.iter().any(Vec::is_empty) || n == 0 {
        return Err(Error::invalid("bench_round_trips needs commands (none empty) and n >= 1").into());
    }
    let url = url.to_string();
    py.detach(move || round_trips(&url, &commands, n)).map_err(PyErr::from)
}

fn round_trips(url: &str, commands: &[Vec<String>], n: usize) -> Result<f64> {
    let shown = redact_url(url);
    let redis_error = |e: redis::RedisError| Error::from_redis(&e, &shown);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::new(ErrorKind::Connection, format!("cannot start a tokio runtime: {e}")))?;
    rt.block_on(async {
        let client = redis::Client::open(url).map_err(redis_error)?;
        let mut conn = client.get_multiplexed_async_connection().await.map_err(redis_error)?;
        let started = Instant::now();
        for _ in 0..n {
            let number = format!("{:012}", with_rng(|rng| rng.random_range(0..1_000_000_000_000u64)));
            for args in commands {
                let mut cmd = redis::cmd(&args[0]);
                for arg in &args[1..] {
                    cmd.arg(arg.replace(RANDOM, &number));
                }
                cmd.query_async::<redis::Value>(&mut conn).await.map_err(redis_error)?;
            }
        }
        Ok(started.elapsed().as_secs_f64())
    })
}
