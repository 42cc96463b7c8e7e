//! Connections closing in the background, each as its own task, and the records of those
//! closed.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use crate::stats::{ConnRecord, ConnSet};

/// How long one connection's close exchange may take; connections close concurrently.
pub(super) const CLOSE_BOUND: Duration = crate::client::grpc::CLOSE_BOUND;

/// Closes connections in the background, each as its own task, and keeps their records (a
/// bounded set, `ConnSet`): a run that opens a connection per request holds no task or record
/// per connection.
#[derive(Default)]
pub(super) struct Closer {
    pending: Cell<usize>,
    done: tokio::sync::Notify,
    records: RefCell<ConnSet>,
}

impl Closer {
    pub(super) fn spawn(self: &Rc<Self>, close: impl Future<Output = ConnRecord> + 'static) {
        self.pending.set(self.pending.get() + 1);
        let me = self.clone();
        tokio::task::spawn_local(async move {
            let rec = close.await;
            me.records.borrow_mut().add(rec);
            me.pending.set(me.pending.get() - 1);
            if me.pending.get() == 0 {
                me.done.notify_waiters();
            }
        });
    }

    /// Connections closing now.
    pub(super) fn pending(&self) -> usize {
        self.pending.get()
    }

    /// The records of the connections closed so far, taken.
    pub(super) fn take_records(&self) -> ConnSet {
        self.records.take()
    }

    /// Waits until every connection handed to `spawn` is closed.
    pub(super) async fn all_closed(&self) {
        loop {
            let done = self.done.notified();
            if self.pending.get() == 0 {
                return;
            }
            done.await;
        }
    }
}
