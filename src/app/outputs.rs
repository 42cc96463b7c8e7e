//! What a run writes besides its report, opened before it starts so a bad address or an
//! unwritable file stops it at once: the metrics endpoint and its board, the request log, the
//! page and the charts; written, checked and closed after the report.

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::RunError;
use super::metrics::MetricsServer;
use crate::config::Config;
use crate::engine::{self, Taps};
use crate::report::{self, Report};
use crate::stats::live::Board;
use crate::stats::reqlog::RequestLog;

/// Which picture a file gets.
#[derive(Debug, Clone, Copy)]
enum Picture {
    Html,
    Latency,
    Timeline,
    /// `--find-max`'s steps: latency against rate
    Curve,
}

/// The outputs of one run, open.
pub struct Opened {
    board: Option<Arc<Board>>,
    server: Option<MetricsServer>,
    linger: Duration,
    log: Option<Arc<RequestLog>>,
    files: Vec<(Picture, PathBuf, File)>,
}

fn setup(e: String) -> RunError {
    RunError::Setup(e)
}

impl Opened {
    /// Binds `--metrics-addr`, creates `--log-requests` and the picture files (each error one
    /// line naming its flag).
    pub fn open(cfg: &Config) -> Result<Opened, RunError> {
        let o = &cfg.outputs;
        let (board, server) = match o.metrics_addr {
            Some(addr) => {
                let board = Arc::new(Board::default());
                let server = MetricsServer::start(addr, board.clone()).map_err(setup)?;
                (Some(board), Some(server))
            }
            None => (None, None),
        };
        // files made before a later one fails are removed again: a run that did not start
        // leaves nothing behind
        let mut files: Vec<(Picture, PathBuf, File)> = Vec::new();
        let undo = |files: &[(Picture, PathBuf, File)]| {
            for (_, p, _) in files {
                let _ = std::fs::remove_file(p);
            }
        };
        for (flag, kind, path) in [
            ("--html", Picture::Html, &o.html),
            ("--latency-svg", Picture::Latency, &o.latency_svg),
            ("--timeline-svg", Picture::Timeline, &o.timeline_svg),
            ("--curve-svg", Picture::Curve, &o.curve_svg),
        ] {
            if let Some(p) = path {
                match File::create(p) {
                    Ok(f) => files.push((kind, p.clone(), f)),
                    Err(e) => {
                        undo(&files);
                        return Err(setup(format!("{flag} {}: {e}", p.display())));
                    }
                }
            }
        }
        let log = match &o.log_requests {
            Some(p) => match RequestLog::create(p) {
                Ok(l) => Some(Arc::new(l)),
                Err(e) => {
                    undo(&files);
                    return Err(setup(e.to_string()));
                }
            },
            None => None,
        };
        Ok(Opened {
            board,
            server,
            linger: o.metrics_linger,
            log,
            files,
        })
    }

    /// The run failed before its report: the picture files, still empty, are removed (the
    /// log keeps the rows of the stacks that ran).
    pub fn abandon(self) {
        for (_, path, f) in self.files {
            drop(f);
            let _ = std::fs::remove_file(path);
        }
    }

    /// What the engine hands its snapshots and rows to.
    pub fn taps(&self) -> Taps {
        Taps {
            live: self.board.clone(),
            log: self.log.clone(),
            control: None,
        }
    }

    /// After the report: the pictures written, the log closed and checked against the
    /// report's counts; the metrics' figures marked final and served `--metrics-linger` more.
    pub fn finish(self, report: &Report) -> Result<(), RunError> {
        let Opened {
            board,
            server,
            linger,
            log,
            files,
        } = self;
        let mut result = Ok(());
        if !files.is_empty() {
            let text = report::text::render(report);
            let latency = report::svg::report_percentiles(report);
            let timeline = report::svg::report_timeline(report);
            let curve = report::svg::capacity_curve(report);
            for (kind, path, mut f) in files {
                let content = match kind {
                    Picture::Latency => latency.clone(),
                    Picture::Timeline => timeline.clone(),
                    // the command line gives --curve-svg only with --find-max, whose report
                    // has a search on every run
                    Picture::Curve => match &curve {
                        Some(c) => c.clone(),
                        None => {
                            drop(f);
                            let _ = std::fs::remove_file(&path);
                            result = result.and(Err(RunError::Setup(format!(
                                "--curve-svg {}: the report has no capacity search (--find-max)",
                                path.display()
                            ))));
                            continue;
                        }
                    },
                    Picture::Html => {
                        let figs: Vec<report::compare::Figures> = report
                            .runs
                            .iter()
                            .map(report::compare::Figures::of)
                            .collect();
                        let refs: Vec<&report::compare::Figures> = figs.iter().collect();
                        let titles: Vec<&str> = report.runs.iter().map(|r| r.title).collect();
                        let bars = report::svg::render(
                            &report.workload,
                            &titles,
                            &report::compare::Figures::panels(&refs),
                        );
                        // a search's curve first: it follows the page's Capacity section
                        let svgs: Vec<String> = curve
                            .iter()
                            .cloned()
                            .chain([latency.clone(), timeline.clone(), bars])
                            .collect();
                        report::html::render(report, &svgs, &text)
                    }
                };
                if let Err(source) = f.write_all(content.as_bytes()).and_then(|()| f.flush()) {
                    result = result.and(Err(RunError::Output {
                        path: path.display().to_string(),
                        source,
                    }));
                }
            }
        }
        if let Some(log) = log {
            let path = log.path().display().to_string();
            let expected: u64 = report.runs.iter().map(|r| r.summary.count).sum();
            let written = match Arc::try_unwrap(log) {
                Ok(log) => log.finish(),
                Err(_) => crate::stats::reqlog::Written {
                    rows: 0,
                    error: Some("still in use (a bug: please report it)".into()),
                },
            };
            let bad = match written.error {
                Some(e) => Some(e),
                None if written.rows != expected => Some(format!(
                    "{} rows written for {expected} measured requests (a bug: please report it)",
                    written.rows
                )),
                None => None,
            };
            if let Some(e) = bad {
                result = result.and(Err(RunError::Setup(format!("--log-requests {path}: {e}"))));
            }
        }
        if let Some(board) = board {
            board.finish();
            // the last figures stay up for the scrapers; Ctrl-C cuts the wait short
            let until = Instant::now() + linger;
            while Instant::now() < until && !engine::INTERRUPTED.load(Ordering::Relaxed) {
                std::thread::sleep((until - Instant::now()).min(Duration::from_millis(50)));
            }
        }
        if let Some(s) = server {
            s.stop();
        }
        result
    }
}
