//! What a forked child must not inherit, without a system call per use: the process id (glibc no longer
//! caches `getpid`, and every call checks it to notice a fork) and the random generator of ids and tokens
//! (a child that went on with its parent's state would draw the parent's numbers).

use std::cell::RefCell;

use rand::rngs::SmallRng;
use rand::SeedableRng;

#[cfg(unix)]
mod cached {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Once;

    /// This process's id once asked; 0 until then, and again in a forked child.
    static PID: AtomicU32 = AtomicU32::new(0);
    static FORGET_IN_CHILD: Once = Once::new();

    extern "C" fn forget() {
        PID.store(0, Ordering::Relaxed);
    }

    pub fn pid() -> u32 {
        let known = PID.load(Ordering::Relaxed);
        if known != 0 {
            return known;
        }
        // Registered before the first id is stored, so no child can inherit a stored id unforgotten.
        FORGET_IN_CHILD.call_once(|| {
            // SAFETY: registers a handler that only stores to an atomic (async-signal-safe).
            unsafe { libc::pthread_atfork(None, None, Some(forget)) };
        });
        let pid = std::process::id();
        PID.store(pid, Ordering::Relaxed);
        pid
    }
}

/// This process's id: remembered after the first call, asked again in a forked child (`pthread_atfork`).
pub fn pid() -> u32 {
    #[cfg(unix)]
    return cached::pid();
    #[cfg(not(unix))]
    std::process::id()
}

thread_local! {
    /// This thread's generator and the process it was seeded in.
    static RNG: RefCell<Option<(u32, SmallRng)>> = const { RefCell::new(None) };
}

/// Runs `f` with this thread's random generator: seeded from the OS on its first use in the thread, and
/// again on the first use in a forked child, so parent and child never draw the same numbers.
pub fn with_rng<T>(f: impl FnOnce(&mut SmallRng) -> T) -> T {
    let pid = pid();
    RNG.with(|cell| {
        let mut slot = cell.borrow_mut();
        if !matches!(&*slot, Some((seeded_in, _)) if *seeded_in == pid) {
            *slot = Some((pid, SmallRng::from_os_rng()));
        }
        let (_, rng) = slot.as_mut().expect("seeded above");
        f(rng)
    })
}

#[cfg(test)]
mod tests {
    use rand::Rng;

    use super::*;

    #[test]
    fn pid_is_the_process_id() {
        assert_eq!(pid(), std::process::id());
        assert_eq!(pid(), std::process::id());
    }

    #[test]
    fn threads_draw_different_numbers() {
        let here: u64 = with_rng(|r| r.random());
        let there: u64 = std::thread::spawn(|| with_rng(|r| r.random())).join().unwrap();
        assert_ne!(here, there);
    }
}
