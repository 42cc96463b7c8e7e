//! `--log-requests FILE`: one CSV row per measured request, written by a writer thread from
//! bounded per-thread buffers; a worker whose buffers are all with the writer waits for one
//! (and counts the wait), so no row is ever dropped.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, SyncSender, TryRecvError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::outcome::{FailureKind, StatusKey};
use crate::stack::Proto;

/// The file's first line.
pub const HEADER: &str = "start_us,latency_us,stack,status,connection,bytes,error\n";

/// Rows one buffer holds; a worker hands a buffer to the writer when it is full.
pub const ROWS_PER_BUFFER: usize = 1024;

/// Buffers per worker thread: one filling, the others with the writer or ready.
pub const BUFFERS_PER_THREAD: usize = 4;

/// One measured request, as the log keeps it (no allocation: plain values).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Row {
    /// when it started (open loop: its intended send time), from the start of its run's
    /// measured window
    pub start_ns: u64,
    /// None: never sent (an expired open-loop send, a quota given up)
    pub latency_ns: Option<u64>,
    /// the response's status, when one came
    pub status: Option<StatusKey>,
    /// the local port of the connection it went on (None: it had none)
    pub connection: Option<u16>,
    /// the response's body (HTTP) or message (gRPC) bytes, when one came whole
    pub bytes: Option<u64>,
    /// None: OK
    pub error: Option<FailureKind>,
}

/// What the worker threads of one run logged, and how long they waited for the writer.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tally {
    /// the log was on
    pub on: bool,
    pub rows: u64,
    /// summed over the threads
    pub waited: Duration,
    pub waits: u64,
    /// the longest one thread waited in all
    pub longest: Duration,
}

impl Tally {
    pub fn add(&mut self, o: Tally) {
        self.on |= o.on;
        self.rows += o.rows;
        self.waited += o.waited;
        self.waits += o.waits;
        self.longest = self.longest.max(o.longest);
    }
}

/// A full buffer on its way to the writer, and where the emptied buffer goes back.
struct Batch {
    stack: Proto,
    rows: Vec<Row>,
    back: SyncSender<Vec<Row>>,
}

/// What the writer thread ends with.
#[derive(Debug, Clone, Default)]
pub struct Written {
    pub rows: u64,
    /// the first write error, as one line
    pub error: Option<String>,
}

/// Why the request log cannot be written: the line to print.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("--log-requests {}: {source}", path.display())]
    Create {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("--log-requests: cannot start the writer thread: {0}")]
    Writer(std::io::Error),
}

/// The log: its file, opened before the run, and its writer thread.
pub struct RequestLog {
    path: PathBuf,
    tx: Option<SyncSender<Batch>>,
    writer: Option<JoinHandle<Written>>,
}

impl RequestLog {
    /// Creates (or truncates) `path` and starts the writer; the error is one line naming the
    /// file. The file gets its header at once.
    pub fn create(path: &Path) -> Result<RequestLog, LogError> {
        let file = std::fs::File::create(path).map_err(|source| LogError::Create {
            path: path.to_path_buf(),
            source,
        })?;
        Self::start(path, Box::new(file))
    }

    /// The log writing to `out` (tests give it a slow sink).
    pub fn start(path: &Path, out: Box<dyn Write + Send>) -> Result<RequestLog, LogError> {
        // room for every buffer of a few dozen threads: a send to the writer never waits
        // for long; the wait that counts is for an empty buffer
        let (tx, rx) = mpsc::sync_channel::<Batch>(256);
        let writer = std::thread::Builder::new()
            .name("wirebench-log".into())
            .spawn(move || write_all(rx, out))
            .map_err(LogError::Writer)?;
        Ok(RequestLog {
            path: path.to_path_buf(),
            tx: Some(tx),
            writer: Some(writer),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A worker thread's part of the log for a run of `stack`, with its own buffers.
    pub fn thread(&self, stack: Proto) -> ThreadLog {
        let (back, empties) = mpsc::sync_channel(BUFFERS_PER_THREAD);
        for _ in 1..BUFFERS_PER_THREAD {
            let _ = back.send(Vec::with_capacity(ROWS_PER_BUFFER));
        }
        ThreadLog {
            stack,
            rows: Vec::with_capacity(ROWS_PER_BUFFER),
            empties,
            back,
            tx: self.tx.clone(),
            logged: 0,
            waited: Duration::ZERO,
            waits: 0,
        }
    }

    /// Waits until every row handed over is written and closes the file.
    pub fn finish(mut self) -> Written {
        drop(self.tx.take());
        match self.writer.take().map(JoinHandle::join) {
            Some(Ok(w)) => w,
            _ => Written {
                rows: 0,
                error: Some("the writer thread failed (a bug: please report it)".into()),
            },
        }
    }
}

/// One worker thread's rows: pushed without allocating; a full buffer goes to the writer
/// and an empty one comes back, waited for when the writer is behind.
pub struct ThreadLog {
    stack: Proto,
    rows: Vec<Row>,
    empties: Receiver<Vec<Row>>,
    back: SyncSender<Vec<Row>>,
    tx: Option<SyncSender<Batch>>,
    /// rows pushed
    pub logged: u64,
    /// how long this thread waited for an empty buffer, and how many times
    pub waited: Duration,
    pub waits: u64,
}

impl ThreadLog {
    pub fn push(&mut self, row: Row) {
        self.rows.push(row);
        self.logged += 1;
        if self.rows.len() >= ROWS_PER_BUFFER {
            self.hand_over();
        }
    }

    /// The full buffer to the writer; an empty one back (waiting for it when every buffer of
    /// this thread is with the writer).
    fn hand_over(&mut self) {
        let next = match self.empties.try_recv() {
            Ok(b) => Some(b),
            Err(TryRecvError::Empty) => None,
            // cannot happen while `self.back` lives; a new buffer keeps the rows anyway
            Err(TryRecvError::Disconnected) => Some(Vec::with_capacity(ROWS_PER_BUFFER)),
        };
        let full = std::mem::take(&mut self.rows);
        self.send(full);
        let next = match next {
            Some(b) => b,
            None => {
                let started = Instant::now();
                self.waits += 1;
                // the writer sends every buffer back, even after a write error; should it be
                // gone, a new buffer keeps the thread going
                let b = self
                    .empties
                    .recv()
                    .unwrap_or_else(|_| Vec::with_capacity(ROWS_PER_BUFFER));
                self.waited += started.elapsed();
                b
            }
        };
        self.rows = next;
    }

    /// A batch to the writer; waiting (counted) only when its queue is full.
    fn send(&mut self, rows: Vec<Row>) {
        let Some(tx) = &self.tx else { return };
        let batch = Batch {
            stack: self.stack,
            rows,
            back: self.back.clone(),
        };
        let gone = match tx.try_send(batch) {
            Ok(()) => false,
            Err(mpsc::TrySendError::Full(batch)) => {
                let started = Instant::now();
                self.waits += 1;
                let gone = tx.send(batch).is_err();
                self.waited += started.elapsed();
                gone
            }
            Err(mpsc::TrySendError::Disconnected(_)) => true,
        };
        if gone {
            self.tx = None;
        }
    }

    /// Hands over what is left; the buffers go with it.
    pub fn finish(mut self) -> Tally {
        let rest = std::mem::take(&mut self.rows);
        if !rest.is_empty() {
            self.send(rest);
        }
        Tally {
            on: true,
            rows: self.logged,
            waited: self.waited,
            waits: self.waits,
            longest: self.waited,
        }
    }
}

/// The writer: every batch as CSV lines, the buffer sent back emptied.
fn write_all(rx: Receiver<Batch>, mut out: Box<dyn Write + Send>) -> Written {
    let mut written = Written::default();
    let mut line = Vec::with_capacity(ROWS_PER_BUFFER * 64);
    if let Err(e) = out.write_all(HEADER.as_bytes()) {
        written.error = Some(e.to_string());
    }
    for mut batch in rx {
        if written.error.is_none() {
            line.clear();
            for r in &batch.rows {
                format_row(&mut line, batch.stack, r);
            }
            match out.write_all(&line) {
                Ok(()) => written.rows += batch.rows.len() as u64,
                Err(e) => written.error = Some(e.to_string()),
            }
        }
        batch.rows.clear();
        let _ = batch.back.send(batch.rows);
    }
    if let Err(e) = out.flush()
        && written.error.is_none()
    {
        written.error = Some(e.to_string());
    }
    written
}

/// ns as µs with three decimals: 1234567 -> 1234.567.
fn micros(out: &mut Vec<u8>, ns: u64) {
    let mut b = itoa::Buffer::new();
    out.extend_from_slice(b.format(ns / 1000).as_bytes());
    let frac = ns % 1000;
    out.push(b'.');
    out.push(b'0' + (frac / 100) as u8);
    out.push(b'0' + (frac / 10 % 10) as u8);
    out.push(b'0' + (frac % 10) as u8);
}

/// One row as a CSV line (no field needs quoting: numbers, names and status words).
pub fn format_row(out: &mut Vec<u8>, stack: Proto, r: &Row) {
    let mut b = itoa::Buffer::new();
    micros(out, r.start_ns);
    out.push(b',');
    if let Some(l) = r.latency_ns {
        micros(out, l);
    }
    out.push(b',');
    out.extend_from_slice(stack.name().as_bytes());
    out.push(b',');
    match r.status {
        Some(StatusKey::Http(c)) => out.extend_from_slice(b.format(c).as_bytes()),
        Some(StatusKey::Grpc(c)) => {
            out.extend_from_slice(wirebench_wire::grpc::Code::from_u32(c).as_str().as_bytes())
        }
        // the gRPC code; the HTTP status it came from is in the report
        Some(StatusKey::GrpcFromHttp { code, .. }) => out.extend_from_slice(
            wirebench_wire::grpc::Code::from_u32(code)
                .as_str()
                .as_bytes(),
        ),
        None => {}
    }
    out.push(b',');
    if let Some(p) = r.connection {
        out.extend_from_slice(b.format(p).as_bytes());
    }
    out.push(b',');
    if let Some(n) = r.bytes {
        out.extend_from_slice(b.format(n).as_bytes());
    }
    out.push(b',');
    if let Some(k) = r.error {
        out.extend_from_slice(k.as_str().as_bytes());
    }
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn rows_format_as_csv() {
        let mut out = Vec::new();
        format_row(
            &mut out,
            Proto::Http,
            &Row {
                start_ns: 1_234_567,
                latency_ns: Some(61_005),
                status: Some(StatusKey::Http(200)),
                connection: Some(40_123),
                bytes: Some(339),
                error: None,
            },
        );
        format_row(
            &mut out,
            Proto::Grpc,
            &Row {
                start_ns: 7,
                latency_ns: None,
                status: None,
                connection: None,
                bytes: None,
                error: Some(FailureKind::Late),
            },
        );
        format_row(
            &mut out,
            Proto::Grpc,
            &Row {
                start_ns: 2_000_000_000,
                latency_ns: Some(20_000_000_000),
                status: Some(StatusKey::Grpc(14)),
                connection: Some(5),
                bytes: None,
                error: Some(FailureKind::GrpcStatus),
            },
        );
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "1234.567,61.005,http,200,40123,339,\n\
             0.007,,grpc,,,,late\n\
             2000000.000,20000000.000,grpc,UNAVAILABLE,5,,grpc_status\n"
        );
    }

    /// A sink that holds every write until the test lets it go.
    struct Gate {
        open: Arc<Mutex<bool>>,
        got: Arc<Mutex<Vec<u8>>>,
    }

    impl Write for Gate {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            while !*self.open.lock().unwrap() {
                std::thread::sleep(Duration::from_millis(1));
            }
            self.got.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_stalled_writer_makes_the_thread_wait_and_loses_nothing() {
        let (open, got) = (Arc::new(Mutex::new(false)), Arc::default());
        let sink = Gate {
            open: open.clone(),
            got: Arc::clone(&got),
        };
        let log = RequestLog::start(Path::new("test.csv"), Box::new(sink)).unwrap();
        let mut t = log.thread(Proto::Grpc);
        let opener = {
            let open = open.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(200));
                *open.lock().unwrap() = true;
            })
        };
        // far more rows than the thread's buffers hold: it has to wait for the writer
        let n = (ROWS_PER_BUFFER * BUFFERS_PER_THREAD * 3 + 17) as u64;
        for i in 0..n {
            t.push(Row {
                start_ns: i,
                latency_ns: Some(1),
                status: Some(StatusKey::Grpc(0)),
                connection: Some(1),
                bytes: Some(2),
                error: None,
            });
        }
        let Tally {
            rows: logged,
            waited,
            waits,
            ..
        } = t.finish();
        opener.join().unwrap();
        let w = log.finish();
        assert_eq!((logged, w.rows), (n, n));
        assert!(w.error.is_none());
        assert!(
            waits > 0 && waited >= Duration::from_millis(100),
            "{waits} {waited:?}"
        );
        let text = String::from_utf8(got.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], HEADER.trim_end());
        assert_eq!(lines.len() as u64, n + 1);
        assert_eq!(lines[1], "0.000,0.001,grpc,OK,1,2,");
    }
}
