//! The log lines the gateways of a test binary write, captured in memory: for tests that wait
//! for the gateway to say it did something it shows no other way.

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

/// Everything logged in this test process through `filter` (an `EnvFilter` directive, e.g.
/// `muxgate::http::tls=info`), as plain text. The first call installs the process's
/// subscriber; later calls, whatever their filter, share it.
pub(crate) fn captured(filter: &str) -> Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let logs = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&logs);
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_ansi(false)
            .with_writer(move || Sink(Arc::clone(&sink)))
            .try_init();
        logs
    })
    .clone()
}

/// The text captured so far.
pub(crate) fn text(logs: &Mutex<Vec<u8>>) -> String {
    String::from_utf8_lossy(&logs.lock().unwrap_or_else(|e| e.into_inner())).into_owned()
}

struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
