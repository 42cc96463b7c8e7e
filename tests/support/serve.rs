//! `wirebench serve` as a child process on an ephemeral loopback port, its address read from
//! the "listening on ADDR" line it prints.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::process::{die_with_parent, wirebench};

/// How long `wirebench serve` gets to print its "listening on" line.
const LISTEN_TIMEOUT: Duration = Duration::from_secs(15);

/// `wirebench serve` on an ephemeral loopback port; SIGKILLed and reaped on drop.
pub struct ServeProcess {
    child: Child,
    addr: SocketAddr,
    stderr: Arc<Mutex<String>>,
}

impl ServeProcess {
    pub fn start(extra: &[&str]) -> ServeProcess {
        ServeProcess::start_at("127.0.0.1:0", extra)
    }

    /// `wirebench serve --addr ADDR` (an ephemeral port when ADDR's is 0).
    pub fn start_at(addr: &str, extra: &[&str]) -> ServeProcess {
        let mut cmd = wirebench();
        cmd.args(["serve", "--addr", addr])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        die_with_parent(&mut cmd);
        let mut child = cmd.spawn().expect("spawn wirebench serve");

        // Drain stderr for the whole life of the server (so it never blocks on a full pipe),
        // keeping it for failure messages and handing each line to the waiter below.
        let stderr = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel::<String>();
        let pipe = child.stderr.take().unwrap();
        let log = Arc::clone(&stderr);
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                log.lock().unwrap().push_str(&line);
                log.lock().unwrap().push('\n');
                let _ = tx.send(line);
            }
        });

        let deadline = Instant::now() + LISTEN_TIMEOUT;
        let addr = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    if let Some(addr) = parse_listening(&line) {
                        break addr;
                    }
                }
                Err(e) => {
                    let _ = child.kill();
                    let status = child.wait();
                    panic!(
                        "wirebench serve {extra:?} printed no \"listening on ADDR\" line \
                         ({e}; exit: {status:?}); stderr:\n{}",
                        stderr.lock().unwrap()
                    );
                }
            }
        };
        ServeProcess {
            child,
            addr,
            stderr,
        }
    }

    pub fn target(&self) -> String {
        self.addr.to_string()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn log(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Stops (SIGSTOP) or resumes (SIGCONT) the server process: a stalled server.
    pub fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .args([&format!("-{sig}"), &self.child.id().to_string()])
            .status()
            .expect("run kill")
            .success();
        assert!(ok, "kill -{sig} {}", self.child.id());
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// "wirebench serve: listening on 127.0.0.1:NNNNN (gRPC ...)" -> the address.
pub fn parse_listening(line: &str) -> Option<SocketAddr> {
    let rest = line.split_once("listening on ")?.1;
    rest.split_whitespace().next()?.parse().ok()
}
