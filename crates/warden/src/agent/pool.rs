//! Which of the agent's workers wait for requests.
//!
//! The kernel wakes *every* thread waiting in `SECCOMP_IOCTL_NOTIF_RECV` for each request (the
//! waits are not exclusive); one takes it and the rest go back to sleep. A pool that kept every
//! idle worker in RECV paid one wasted wake-up and two context switches per idle worker per
//! request: after a burst of blocking calls had grown it to six workers, a delegated open cost
//! nine context switches instead of three, and ten busy clients grew it to dozens. So at most
//! [`Pool::LISTENING`] workers wait in RECV;
//! other idle workers park on a condition variable, and the listener that takes a request wakes
//! one of them (or has a new one started) only when it was the last one listening, so a request
//! that blocks (a FIFO open, a connect) never leaves the sandbox without somebody listening.
//!
//! The pool is plain bookkeeping under one lock; it knows nothing of seccomp and is tested on
//! its own.

use std::sync::{Condvar, Mutex, MutexGuard};

/// The bookkeeping of one agent's workers.
pub struct Pool {
    max_workers: usize,
    state: Mutex<State>,
    wake: Condvar,
}

#[derive(Debug, Default)]
struct State {
    /// Workers in RECV, or on their way there.
    listening: usize,
    /// Workers waiting on `wake`.
    parked: usize,
    /// Workers alive (or being started).
    workers: usize,
    /// The sandbox is gone: nobody listens any more.
    ended: bool,
}

/// What a listener that took a request must do before serving it.
#[derive(Debug, PartialEq, Eq)]
#[must_use]
pub enum Refill {
    /// Somebody is still listening, or a parked worker was woken to.
    Nothing,
    /// Nobody is: start a new worker, which begins listening (undo with [`Pool::not_started`]).
    Start,
}

impl Pool {
    /// Workers waiting in RECV at once. Measured on a 2-CPU VM (`oc`-style open loops and
    /// `bench/run.sh --only scaling`): two listeners made a single client's delegated open ~40%
    /// slower than three (a woken thread that loses the race still keeps a CPU from halting,
    /// and waking a halted vCPU is the dearest part of a round trip); three, four and
    /// unbounded were alike for one client, while unbounded made 10 clients 2.3x slower than
    /// 25 (4.4 s against 1.9 s for 200,000 opens) by waking every idle worker per request.
    pub const LISTENING: usize = 3;

    /// A pool of at most `max_workers` workers, and `initial` (at most [`Pool::LISTENING`]) of
    /// them about to be started, listening.
    pub fn new(max_workers: usize, initial: usize) -> Pool {
        let initial = initial.min(Self::LISTENING).min(max_workers);
        Pool {
            max_workers,
            state: Mutex::new(State {
                listening: initial,
                workers: initial,
                ..State::default()
            }),
            wake: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is a few counters updated in single steps: a panic elsewhere cannot leave
        // them half-changed, so a poisoned lock is still a good one.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A listener took a request.
    pub fn took(&self) -> Refill {
        let mut st = self.lock();
        st.listening = st.listening.saturating_sub(1);
        if st.listening > 0 || st.ended {
            return Refill::Nothing;
        }
        if st.parked > 0 {
            // The woken worker finds nobody listening and listens.
            self.wake.notify_one();
            return Refill::Nothing;
        }
        if st.workers >= self.max_workers {
            return Refill::Nothing;
        }
        st.workers += 1;
        st.listening += 1;
        Refill::Start
    }

    /// A worker asked for by [`Refill::Start`] could not be started.
    pub fn not_started(&self) {
        let mut st = self.lock();
        st.workers -= 1;
        st.listening -= 1;
    }

    /// A worker finished serving: waits until it may listen again. `false`: the sandbox is gone
    /// and the worker should end.
    pub fn served(&self) -> bool {
        let mut st = self.lock();
        while st.listening >= Self::LISTENING && !st.ended {
            st.parked += 1;
            st = self.wake.wait(st).unwrap_or_else(|p| p.into_inner());
            st.parked -= 1;
        }
        if st.ended {
            st.workers -= 1;
            return false;
        }
        st.listening += 1;
        true
    }

    /// A listener found the sandbox gone: it ends, and so does every parked worker.
    pub fn end(&self) {
        let mut st = self.lock();
        st.ended = true;
        st.listening = st.listening.saturating_sub(1);
        st.workers -= 1;
        self.wake.notify_all();
    }

    /// (listening, parked, workers), for the tests.
    #[cfg(test)]
    fn counts(&self) -> (usize, usize, usize) {
        let st = self.lock();
        (st.listening, st.parked, st.workers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    fn eventually(what: &str, mut ok: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !ok() {
            assert!(Instant::now() < deadline, "timed out waiting for: {what}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    const L: usize = Pool::LISTENING;

    /// Every listener takes a request (the last one gets a new worker started).
    fn all_busy(pool: &Pool) {
        for _ in 0..L - 1 {
            assert_eq!(pool.took(), Refill::Nothing);
        }
        assert_eq!(pool.took(), Refill::Start);
    }

    #[test]
    fn a_sequential_client_keeps_the_listeners_and_starts_nobody() {
        let pool = Pool::new(64, L);
        for _ in 0..100 {
            assert_eq!(pool.took(), Refill::Nothing);
            assert!(pool.served());
        }
        assert_eq!(pool.counts(), (L, 0, L));
    }

    #[test]
    fn the_last_listener_to_take_a_request_gets_a_new_worker() {
        let pool = Pool::new(64, L);
        // All are busy (say, FIFO opens): the last must not leave nobody listening.
        all_busy(&pool);
        assert_eq!(pool.counts(), (1, 0, L + 1));
        // A start that failed gives the slot back.
        pool.not_started();
        assert_eq!(pool.counts(), (0, 0, L));
    }

    /// All busy, then all but one back to listening and the last one parked.
    fn one_parked(pool: &Arc<Pool>) -> std::thread::JoinHandle<bool> {
        all_busy(pool);
        for _ in 0..L - 1 {
            assert!(pool.served());
        }
        let parked = {
            let pool = Arc::clone(pool);
            std::thread::spawn(move || pool.served())
        };
        eventually("a worker to park", || pool.counts() == (L, 1, L + 1));
        parked
    }

    #[test]
    fn idle_workers_beyond_the_listeners_park_and_are_woken_when_needed() {
        let pool = Arc::new(Pool::new(64, L));
        let parked = one_parked(&pool);
        // Listeners take requests while another still listens: nobody is woken.
        for _ in 0..L - 1 {
            assert_eq!(pool.took(), Refill::Nothing);
        }
        assert_eq!(pool.counts(), (1, 1, L + 1));
        // The last listener takes one too: the parked worker is woken and listens.
        assert_eq!(pool.took(), Refill::Nothing);
        assert!(parked.join().unwrap());
        assert_eq!(pool.counts(), (1, 0, L + 1));
    }

    #[test]
    fn the_pool_never_grows_past_its_bound() {
        let pool = Pool::new(L, L);
        for _ in 0..L {
            assert_eq!(pool.took(), Refill::Nothing);
        }
        assert_eq!(pool.counts(), (0, 0, L));
    }

    #[test]
    fn the_end_reaches_parked_workers() {
        let pool = Arc::new(Pool::new(64, L));
        let parked = one_parked(&pool);
        // A listener finds the sandbox gone.
        pool.end();
        assert!(
            !parked.join().unwrap(),
            "a parked worker must end with the sandbox"
        );
        // So do the other listeners.
        for _ in 1..L {
            pool.end();
        }
        assert_eq!(pool.counts(), (0, 0, 0));
        // A worker still serving when the end came ends when it is done.
        let pool = Pool::new(64, L);
        assert_eq!(pool.took(), Refill::Nothing);
        for _ in 1..L {
            pool.end();
        }
        assert!(!pool.served());
        assert_eq!(pool.counts(), (0, 0, 0));
    }
}
