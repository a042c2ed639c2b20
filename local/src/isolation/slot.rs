//! Whether one sandbox runs: stopped, being started (by one caller, the
//! others waiting for that start's outcome), or running. Each start has a
//! generation, so what a caller learned of one start (its connection
//! failed) stops that start's sandbox only, never a newer one another
//! caller started meanwhile.

use tokio::sync::watch;

use super::anchor::Anchor;

/// How a start ended, for those who waited for it.
pub(super) type Outcome = Option<Result<(), String>>;

enum State {
    Stopped,
    Starting {
        generation: u64,
        done: watch::Receiver<Outcome>,
    },
    Running {
        generation: u64,
        anchor: Anchor,
    },
}

/// One sandbox's state, under its runner's lock.
pub(super) struct Slot {
    state: State,
    next_generation: u64,
}

/// What a caller that needs the sandbox running does next.
pub(super) enum Turn {
    /// It runs: use this generation's anchor.
    Use(u64),
    /// Another caller starts it: wait for the outcome.
    Wait(watch::Receiver<Outcome>),
    /// Start it, as this generation, and tell the others through `done`.
    Start {
        generation: u64,
        done: watch::Sender<Outcome>,
    },
}

impl Default for Slot {
    fn default() -> Self {
        Self {
            state: State::Stopped,
            next_generation: 1,
        }
    }
}

impl Slot {
    /// The next step for a caller; with an anchor to drop (outside the
    /// lock) when the running sandbox turned out dead.
    pub fn turn(&mut self) -> (Turn, Option<Anchor>) {
        let mut dead = None;
        if let State::Running { anchor, .. } = &mut self.state {
            if !anchor.alive() {
                dead = self.stop();
            }
        }
        let turn = match &self.state {
            State::Running { generation, .. } => Turn::Use(*generation),
            State::Starting { done, .. } => Turn::Wait(done.clone()),
            State::Stopped => {
                let generation = self.next_generation;
                self.next_generation += 1;
                let (tx, rx) = watch::channel(None);
                self.state = State::Starting {
                    generation,
                    done: rx,
                };
                Turn::Start {
                    generation,
                    done: tx,
                }
            }
        };
        (turn, dead)
    }

    /// Start `generation` ended: its anchor runs the sandbox if that start
    /// is still the current one (else it comes back, to be dropped).
    pub fn finish(
        &mut self,
        generation: u64,
        started: Result<Anchor, String>,
    ) -> (Result<(), String>, Option<Anchor>) {
        let current =
            matches!(self.state, State::Starting { generation: g, .. } if g == generation);
        match (started, current) {
            (Ok(anchor), true) => {
                self.state = State::Running { generation, anchor };
                (Ok(()), None)
            }
            (Ok(anchor), false) => (
                Err("the sandbox was stopped while it started".into()),
                Some(anchor),
            ),
            (Err(why), true) => {
                self.state = State::Stopped;
                (Err(why), None)
            }
            (Err(why), false) => (Err(why), None),
        }
    }

    /// The anchor of `generation`, if that start still runs the sandbox.
    pub fn running(&self, generation: u64) -> Option<&Anchor> {
        match &self.state {
            State::Running {
                generation: g,
                anchor,
            } if *g == generation => Some(anchor),
            _ => None,
        }
    }

    /// Stops the sandbox (a start under way finds it stopped when it
    /// ends): the anchor to drop, outside the lock.
    pub fn stop(&mut self) -> Option<Anchor> {
        match std::mem::replace(&mut self.state, State::Stopped) {
            State::Running { anchor, .. } => Some(anchor),
            _ => None,
        }
    }

    /// Stops the sandbox if `generation` still runs it (a connection to
    /// it found envd gone).
    pub fn stop_if(&mut self, generation: u64) -> Option<Anchor> {
        self.running(generation)?;
        self.stop()
    }
}
