//! What the guest's orchestration needs from where it runs: HTTP requests
//! with streamed answers, a monotonic clock with sleeps, and the wall clock.
//!
//! The component's are `wasi:http` and `wasi:clocks` (`crate::session::http`,
//! the only wasm-only code besides the export glue); native tests drive the
//! same orchestration ([`crate::session`], [`crate::tools`]) with canned
//! answers on a virtual clock. Static generics, not trait objects: the
//! component compiles one copy, as before.

use super::report::Report;
use crate::errors::{ErrorKind, Failure};
use crate::protocol::request::HttpRequest;

/// An answer whose body is read as it arrives.
pub struct Response<B> {
    /// HTTP status.
    pub status: u16,
    /// The headers the orchestration reads (names in lower case).
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: B,
}

/// The response headers the guest reads; others are not kept.
pub const READ_HEADERS: [&str; 3] = ["retry-after", "should-retry", "x-next-token"];

impl<B> Response<B> {
    /// The value of header `name` (lower case), if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A response body, read chunk by chunk.
// Single-threaded guest: no `Send` bound is wanted on these futures.
#[allow(async_fn_in_trait)]
pub trait ResponseBody {
    /// The next chunk, `None` at the end of the body.
    async fn chunk(&mut self) -> Result<Option<Vec<u8>>, Failure>;

    /// The whole body, failing past `max` bytes (error bodies and small
    /// JSON answers only).
    async fn read_to_end(&mut self, max: usize) -> Result<Vec<u8>, Failure> {
        let mut out = Vec::new();
        while let Some(chunk) = self.chunk().await? {
            if out.len() + chunk.len() > max {
                return Err(Failure::new(
                    ErrorKind::Internal,
                    format!("the answer is larger than {max} bytes"),
                ));
            }
            out.extend_from_slice(&chunk);
        }
        Ok(out)
    }
}

/// HTTP and clocks.
#[allow(async_fn_in_trait)]
pub trait Platform {
    /// What [`Platform::send`] answers with.
    type Body: ResponseBody;

    /// Sends `req`; `timeout_ms` bounds connecting and the first byte of
    /// the answer (0: none). Its body then streams.
    async fn send(
        &self,
        req: &HttpRequest,
        timeout_ms: u32,
    ) -> Result<Response<Self::Body>, Failure>;

    /// The monotonic clock, in nanoseconds.
    fn now_ns(&self) -> u64;

    /// The wall clock, in nanoseconds since the Unix epoch (only to read
    /// E2B's absolute times; every interval uses [`Platform::now_ns`]).
    fn wall_ns(&self) -> u64;

    /// Sleeps `ns` nanoseconds.
    async fn sleep_ns(&self, ns: u64);

    /// A random number (the jitter of retry backoff).
    fn random_u64(&self) -> u64;

    /// Reports a progress event (one line of JSON) to the host.
    fn progress(&self, event: &str);

    /// Reports a lifecycle event to the host, as it happens.
    fn report(&self, event: Report);
}

/// A borrowed platform is one too (a test keeps its fake to inspect it).
impl<T: Platform> Platform for &T {
    type Body = T::Body;

    async fn send(&self, req: &HttpRequest, timeout_ms: u32) -> Result<Response<T::Body>, Failure> {
        (**self).send(req, timeout_ms).await
    }

    fn now_ns(&self) -> u64 {
        (**self).now_ns()
    }

    fn wall_ns(&self) -> u64 {
        (**self).wall_ns()
    }

    async fn sleep_ns(&self, ns: u64) {
        (**self).sleep_ns(ns).await
    }

    fn random_u64(&self) -> u64 {
        (**self).random_u64()
    }

    fn progress(&self, event: &str) {
        (**self).progress(event)
    }

    fn report(&self, event: Report) {
        (**self).report(event)
    }
}

/// A platform for native tests: canned answers, a virtual clock.
#[cfg(test)]
pub mod fake {
    use std::cell::{Cell, RefCell};
    use std::collections::{BTreeSet, VecDeque};
    use std::future::Future;
    use std::pin::{pin, Pin};
    use std::rc::Rc;
    use std::task::{Context, Poll, Waker};

    use super::{Platform, Response, ResponseBody};
    use crate::errors::{ErrorKind, Failure};
    use crate::protocol::request::HttpRequest;

    /// The fake wall clock at virtual time 0: 2027-01-15T08:00:00Z.
    pub const WALL_START_NS: u64 = 1_800_000_000 * 1_000_000_000;

    /// Virtual time: it only moves when every future waits on a timer.
    #[derive(Debug, Default)]
    pub struct VirtualClock {
        now: Cell<u64>,
        timers: RefCell<BTreeSet<u64>>,
    }

    impl VirtualClock {
        /// Now, in nanoseconds since the test began.
        pub fn now(&self) -> u64 {
            self.now.get()
        }

        /// Moves time on by `ms`, as if the instance sat idle between calls.
        pub fn advance_ms(&self, ms: u64) {
            self.now.set(self.now.get() + ms * 1_000_000);
        }

        fn sleep_until(self: &Rc<Self>, at: u64) -> Sleep {
            Sleep {
                clock: Rc::clone(self),
                at,
            }
        }
    }

    struct Sleep {
        clock: Rc<VirtualClock>,
        at: u64,
    }

    impl Future for Sleep {
        type Output = ();
        fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
            if self.clock.now() >= self.at {
                Poll::Ready(())
            } else {
                self.clock.timers.borrow_mut().insert(self.at);
                Poll::Pending
            }
        }
    }

    /// Runs `fut` to completion: whenever it waits, time jumps to the
    /// earliest timer. Panics if it waits on nothing (a test bug).
    pub fn run<T>(clock: &VirtualClock, fut: impl Future<Output = T>) -> T {
        let mut fut = pin!(fut);
        let mut cx = Context::from_waker(Waker::noop());
        loop {
            if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
                return out;
            }
            let next = {
                let mut timers = clock.timers.borrow_mut();
                loop {
                    match timers.pop_first() {
                        Some(at) if at <= clock.now() => continue,
                        other => break other,
                    }
                }
            };
            match next {
                Some(at) => clock.now.set(at),
                None => panic!("the call waits on nothing at {} ns", clock.now()),
            }
        }
    }

    /// One step of a canned body.
    #[derive(Debug, Clone)]
    pub enum Step {
        /// These bytes.
        Bytes(Vec<u8>),
        /// Nothing for this many milliseconds.
        Wait(u64),
        /// The connection breaks.
        Break,
        /// Nothing, ever (until the caller gives up).
        Hang,
    }

    /// A canned answer.
    #[derive(Debug, Clone)]
    pub struct Answer {
        /// Its status.
        pub status: u16,
        /// Its headers.
        pub headers: Vec<(String, String)>,
        /// Its body, step by step.
        pub steps: Vec<Step>,
        /// No answer: the connection fails before one (a reset).
        pub refused: bool,
    }

    impl Answer {
        /// `status` with `body` at once.
        pub fn new(status: u16, body: impl Into<Vec<u8>>) -> Self {
            Self::steps(status, vec![Step::Bytes(body.into())])
        }

        /// `status` with a body in steps.
        pub fn steps(status: u16, steps: Vec<Step>) -> Self {
            Self {
                status,
                headers: Vec::new(),
                steps,
                refused: false,
            }
        }

        /// A connection reset instead of an answer.
        pub fn reset() -> Self {
            Self {
                refused: true,
                ..Self::steps(0, Vec::new())
            }
        }

        /// The same answer with header `name: value`.
        pub fn header(mut self, name: &str, value: &str) -> Self {
            self.headers.push((name.to_string(), value.to_string()));
            self
        }
    }

    /// A request's `"METHOD URL"` and its headers.
    type SentHeaders = (String, Vec<(String, String)>);

    /// HTTP that answers from a script, on a virtual clock.
    #[derive(Debug, Default)]
    pub struct FakePlatform {
        /// The clock every sleep and canned wait runs on.
        pub clock: Rc<VirtualClock>,
        /// `(needle, answers)`: a request whose `"METHOD URL BODY"` contains
        /// the needle gets the next answer (the last one repeats).
        routes: RefCell<Vec<(String, VecDeque<Answer>)>>,
        /// Every request sent: when (ns) and `"METHOD URL"`.
        pub sent: RefCell<Vec<(u64, String)>>,
        /// Every request sent as `"METHOD URL BODY"`.
        requests: RefCell<Vec<String>>,
        /// Every request's `"METHOD URL"` and headers.
        headers: RefCell<Vec<SentHeaders>>,
        /// Every progress event reported.
        pub progress: RefCell<Vec<String>>,
        /// Every lifecycle event reported.
        pub reports: RefCell<Vec<super::Report>>,
    }

    impl FakePlatform {
        /// Answers requests containing `needle` with `answers`, in order;
        /// earlier routes win, and routing the same needle again replaces
        /// its answers.
        pub fn route(&self, needle: &str, answers: Vec<Answer>) {
            let mut routes = self.routes.borrow_mut();
            match routes.iter_mut().find(|(n, _)| n == needle) {
                Some((_, old)) => *old = answers.into(),
                None => routes.push((needle.to_string(), answers.into())),
            }
        }

        /// The bodies of the requests sent whose `"METHOD URL"` contains
        /// `needle`.
        pub fn bodies(&self, needle: &str) -> Vec<String> {
            self.requests
                .borrow()
                .iter()
                .filter(|r| {
                    r.split(' ')
                        .take(2)
                        .collect::<Vec<_>>()
                        .join(" ")
                        .contains(needle)
                })
                .map(|r| r.splitn(3, ' ').nth(2).unwrap_or("").to_string())
                .collect()
        }

        /// The value of header `name` of each request sent whose
        /// `"METHOD URL"` contains `needle` (`None` where it had none).
        pub fn header_values(&self, needle: &str, name: &str) -> Vec<Option<String>> {
            self.headers
                .borrow()
                .iter()
                .filter(|(line, _)| line.contains(needle))
                .map(|(_, headers)| {
                    headers
                        .iter()
                        .find(|(n, _)| n.eq_ignore_ascii_case(name))
                        .map(|(_, v)| v.clone())
                })
                .collect()
        }

        /// The requests sent whose `"METHOD URL"` contains `needle`, with
        /// when they were sent, in milliseconds.
        pub fn sent_ms(&self, needle: &str) -> Vec<u64> {
            self.sent
                .borrow()
                .iter()
                .filter(|(_, r)| r.contains(needle))
                .map(|(at, _)| at / 1_000_000)
                .collect()
        }
    }

    /// A canned body being read.
    pub struct FakeBody {
        clock: Rc<VirtualClock>,
        steps: VecDeque<Step>,
    }

    impl ResponseBody for FakeBody {
        async fn chunk(&mut self) -> Result<Option<Vec<u8>>, Failure> {
            loop {
                match self.steps.pop_front() {
                    None => return Ok(None),
                    Some(Step::Bytes(b)) => return Ok(Some(b)),
                    Some(Step::Wait(ms)) => {
                        let at = self.clock.now() + ms * 1_000_000;
                        self.clock.sleep_until(at).await;
                    }
                    Some(Step::Break) => return Err(Failure::transient("connection reset")),
                    Some(Step::Hang) => std::future::pending::<()>().await,
                }
            }
        }
    }

    impl Platform for FakePlatform {
        type Body = FakeBody;

        async fn send(
            &self,
            req: &HttpRequest,
            _timeout_ms: u32,
        ) -> Result<Response<FakeBody>, Failure> {
            let line = format!("{:?} {}", req.method, req.url);
            self.sent
                .borrow_mut()
                .push((self.clock.now(), line.clone()));
            self.headers
                .borrow_mut()
                .push((line.clone(), req.headers.clone()));
            let haystack = format!("{line} {}", String::from_utf8_lossy(&req.body));
            self.requests.borrow_mut().push(haystack.clone());
            let mut routes = self.routes.borrow_mut();
            let answers = routes
                .iter_mut()
                .find(|(needle, _)| haystack.contains(needle.as_str()))
                .map(|(_, a)| a)
                .ok_or_else(|| Failure::new(ErrorKind::Network, format!("no route for {line}")))?;
            let answer = if answers.len() > 1 {
                answers.pop_front()
            } else {
                answers.front().cloned()
            }
            .ok_or_else(|| Failure::new(ErrorKind::Network, "no answer left"))?;
            if answer.refused {
                return Err(Failure::transient("connection reset"));
            }
            Ok(Response {
                status: answer.status,
                headers: answer.headers,
                body: FakeBody {
                    clock: Rc::clone(&self.clock),
                    steps: answer.steps.into(),
                },
            })
        }

        fn now_ns(&self) -> u64 {
            self.clock.now()
        }

        /// [`WALL_START_NS`] when the test began, moving with the clock.
        fn wall_ns(&self) -> u64 {
            WALL_START_NS + self.clock.now()
        }

        async fn sleep_ns(&self, ns: u64) {
            let at = self.clock.now().saturating_add(ns);
            self.clock.sleep_until(at).await;
        }

        /// Always 0: the shortest jitter, so waits are exact in tests.
        fn random_u64(&self) -> u64 {
            0
        }

        fn report(&self, event: super::Report) {
            self.reports.borrow_mut().push(event);
        }

        fn progress(&self, event: &str) {
            self.progress.borrow_mut().push(event.to_string());
        }
    }
}
