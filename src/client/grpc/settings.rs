//! The h2 settings a client connection announces, and which h2 client it runs on: plain data,
//! part of a run's configuration.

/// Which h2 client carries gRPC (`--h2-client`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum H2Client {
    /// the wire crate's sans-IO client with its own driver (the default)
    #[default]
    Wire,
    /// the `h2` crate, a general-purpose library: the reference
    H2,
}

impl H2Client {
    pub fn as_str(self) -> &'static str {
        match self {
            H2Client::Wire => "wire",
            H2Client::H2 => "h2",
        }
    }
}

/// h2 settings wirebench announces as a client (plain data beside `net::NetConfig`).
#[derive(Debug, Clone, Copy)]
pub struct H2Config {
    pub initial_window_size: u32,
    pub initial_conn_window_size: u32,
    pub max_frame_size: u32,
    /// largest response message accepted (gRPC's receive limit)
    pub max_recv_message: usize,
    /// break the connection's bytes into h2 layers (counted by the wire client's codec, or by
    /// frame sniffers on the h2 crate's client)
    pub ledger: bool,
    /// the connection carries plain HTTP/2 requests, not gRPC: its layers have no gRPC
    /// message layer in DATA
    pub plain: bool,
    /// h2's allowance for buffered small DATA frames before it closes the connection with
    /// ENHANCE_YOUR_CALM; must cover one response frame per concurrent stream
    pub data_frame_budget: usize,
    /// which client
    pub client: H2Client,
    /// how the wire client encodes request headers (the h2 crate has its own way)
    pub hpack: wirebench_wire::h2::hpack::Strategy,
    /// the connections are HTTP/3 over QUIC (`--proto h3`), with these flow-control windows
    /// (`--quic-stream-window`, `--quic-conn-window`)
    pub h3: bool,
    pub quic_stream_window: u32,
    pub quic_conn_window: u32,
}

/// QUIC's receive windows by default: quinn's own defaults (1.25 MB per stream, 1.875 MB per
/// connection, sized for 100 Mbit/s at 100 ms).
pub const DEFAULT_QUIC_STREAM_WINDOW: u32 = 1_250_000;
pub const DEFAULT_QUIC_CONN_WINDOW: u32 = 1_875_000;

/// h2's own default budget for small DATA frames.
pub const MIN_DATA_FRAME_BUDGET: usize = 25_600;

impl H2Config {
    /// Sizes the small-DATA-frame budget for `streams` concurrent streams per connection: each
    /// may have one small response frame buffered (at most 256 bytes of budget) while its
    /// client is busy, and that is normal load, not abuse.
    pub fn for_streams(mut self, streams: usize) -> Self {
        self.data_frame_budget = MIN_DATA_FRAME_BUDGET.max(streams.saturating_mul(512));
        self
    }

    /// For streamed responses: any number of small message frames may wait while their
    /// clients are busy, up to the connection's receive window; the budget covers the window
    /// as frames of one byte (what h2 charges them: 256 less their payload).
    pub fn for_message_streams(mut self) -> Self {
        let window = self.initial_conn_window_size as usize;
        self.data_frame_budget = self.data_frame_budget.max(window.saturating_mul(256));
        self
    }
}

impl Default for H2Config {
    fn default() -> Self {
        H2Config {
            initial_window_size: 65_535,
            initial_conn_window_size: 65_535,
            max_frame_size: 16_384,
            max_recv_message: wirebench_wire::grpc::DEFAULT_MAX_MESSAGE,
            data_frame_budget: MIN_DATA_FRAME_BUDGET,
            ledger: true,
            plain: false,
            client: H2Client::default(),
            hpack: wirebench_wire::h2::hpack::Strategy::default(),
            h3: false,
            quic_stream_window: DEFAULT_QUIC_STREAM_WINDOW,
            quic_conn_window: DEFAULT_QUIC_CONN_WINDOW,
        }
    }
}
