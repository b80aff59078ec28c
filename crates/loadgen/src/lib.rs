//! bareweb's load generator and benchmark harness (std, Linux).
//!
//! - [`load`]: an http_load / httperf-style generator on one thread with epoll — rate
//!   mode, parallel mode, connection per fetch or keep-alive, URL lists, Surge sessions,
//!   over HTTP or HTTPS (rustls on bareweb's own crypto provider, [`load::tls`]) —
//!   reporting what http_load reports ([`report`], counted by [`tally`], which the bare
//!   client of `bareweb load --tap/--xdp` counts with too).
//! - [`surge`]: the Surge workload model and the matching site generator.
//! - [`http`]: the incremental HTTP/1.x response reader the generator checks framing with.
//! - [`hist`]: latency histograms (HdrHistogram); [`rng`]: seeded distributions.
//! - [`bench`]: `bareweb bench`, the side-by-side harness (namespaces, servers under
//!   test, interleaved runs, tables, plots, the dated logs of docs/perf/log/).
//! - [`udp`]: clients of the UDP paper's stateless UDP protocol: one file (`bareweb get
//!   bwudp://…`) and the load generator of `bareweb load --udp`.
//! - `url`: the one parser of the URLs both generators take (`http://`, `https://`,
//!   `bwudp://`), with curl's `--resolve` ([`Resolve`]).
//! - [`sys`]: the Linux calls, on `rustix` and `signal-hook`: the crate has no `unsafe`.

#![forbid(unsafe_code)]

pub mod bench;
pub mod hist;
pub mod http;
pub mod load;
pub mod report;
pub mod rng;
pub mod surge;
pub mod sys;
pub mod tally;
pub mod udp;
mod url;

pub use load::{
    parse_url, parse_url_with, run, Expect, LoadConfig, Mode, Progress, Target, UrlEntry,
};
pub use report::{ErrorKind, Report, TlsReport};
pub use tally::Tally;
pub use url::Resolve;
