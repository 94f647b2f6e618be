//! One pane's recording as a sequence of files: output chunks become events, a file that
//! would pass `max_file_bytes` is closed and the recording goes on in a new one (its own
//! header, its own time 0), and after each new file the directory's cap is applied.
//!
//! Blocking file I/O: [`super::recorder`] runs it off the async threads.

use std::fs::File;
use std::io::{self, BufWriter, Write as _};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::cast::{EventKind, Header, Utf8Decoder, event_line};
use super::store::Store;
use muxgate_tmux::PaneId;
use muxgate_tmux::output::OutputChunk;

/// The smallest `max_file_bytes`: a header and the largest event always fit in a file.
pub const MIN_FILE_BYTES: u64 = 4096;

/// Most bytes of text in one event: large enough that a flood is few events, small enough
/// that a file always holds its header and one event (JSON escaping grows text at most six
/// times: see [`event_text_limit`]).
const MAX_EVENT_TEXT: usize = 64 * 1024;

/// The file a recording writes now: what an audit record names.
#[derive(Debug, Clone)]
pub struct CurrentFile {
    /// Its file name.
    pub name: String,
    /// Time 0 of its events.
    pub started: Instant,
}

impl CurrentFile {
    /// Seconds into the file `at` is.
    pub fn offset_at(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.started).as_secs_f64()
    }
}

/// What a recording is of and how large its files may grow.
#[derive(Debug, Clone)]
pub struct Subject {
    /// The server as file names show it.
    pub server: String,
    /// The pane recorded.
    pub pane: PaneId,
    /// The pane's width in cells, for the header.
    pub width: u16,
    /// The pane's height in cells, for the header.
    pub height: u16,
    /// The header's title (who or what asked for the recording).
    pub title: String,
    /// Largest file, in bytes, before the recording goes on in a new one.
    pub max_file_bytes: u64,
}

/// A recording being written.
pub struct CastWriter {
    store: Store,
    subject: Subject,
    file: BufWriter<File>,
    name: String,
    written: u64,
    header_len: u64,
    started: Instant,
    decoder: Utf8Decoder,
    current: Arc<Mutex<CurrentFile>>,
}

impl CastWriter {
    /// Starts the first file.
    pub fn open(store: Store, subject: Subject) -> io::Result<Self> {
        let (file, name, started, header_len) = new_file(&store, &subject)?;
        let current = Arc::new(Mutex::new(CurrentFile {
            name: name.clone(),
            started,
        }));
        let writer = Self {
            store,
            subject,
            file,
            name,
            written: header_len,
            header_len,
            started,
            decoder: Utf8Decoder::new(),
            current,
        };
        writer.apply_cap();
        Ok(writer)
    }

    /// The file being written, shared with whoever names it (it changes on rotation).
    pub fn current(&self) -> Arc<Mutex<CurrentFile>> {
        self.current.clone()
    }

    /// Writes one chunk of the pane's output, which arrived at `at`: a marker for what the
    /// stream lost before it, then its text.
    pub fn chunk(&mut self, at: Instant, chunk: &OutputChunk) -> io::Result<()> {
        if chunk.missed_bytes > 0 {
            self.marker(
                at,
                &format!(
                    "gap: {} bytes of output were not recorded (the recorder fell behind)",
                    chunk.missed_bytes
                ),
            )?;
        }
        if chunk.gap {
            self.marker(at, "gap: tmux dropped output here (flow control)")?;
        }
        let text = self.decoder.decode(&chunk.data);
        self.output(at, &text)
    }

    /// A marker event; a character the stream cut before it is written first, replaced.
    pub fn marker(&mut self, at: Instant, text: &str) -> io::Result<()> {
        let rest = self.decoder.flush();
        self.output(at, &rest)?;
        self.event(at, EventKind::Marker, text)
    }

    fn output(&mut self, at: Instant, text: &str) -> io::Result<()> {
        let limit = event_text_limit(self.subject.max_file_bytes);
        let mut rest = text;
        while !rest.is_empty() {
            let mut cut = rest.len().min(limit);
            while !rest.is_char_boundary(cut) {
                cut -= 1;
            }
            let (piece, after) = rest.split_at(cut);
            self.event(at, EventKind::Output, piece)?;
            rest = after;
        }
        Ok(())
    }

    fn event(&mut self, at: Instant, kind: EventKind, text: &str) -> io::Result<()> {
        let mut line = event_line(self.secs(at), kind, text);
        if self.written > self.header_len
            && self.written + line.len() as u64 > self.subject.max_file_bytes
        {
            self.rotate()?;
            line = event_line(self.secs(at), kind, text);
        }
        self.file.write_all(line.as_bytes())?;
        self.written += line.len() as u64;
        Ok(())
    }

    fn secs(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.started).as_secs_f64()
    }

    /// Closes the file and goes on in a new one.
    fn rotate(&mut self) -> io::Result<()> {
        self.file.flush()?;
        let (file, name, started, header_len) = new_file(&self.store, &self.subject)?;
        let old = std::mem::replace(&mut self.name, name.clone());
        self.file = file;
        self.started = started;
        self.written = header_len;
        self.header_len = header_len;
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = CurrentFile { name, started };
        self.store.closed(&old);
        self.apply_cap();
        Ok(())
    }

    fn apply_cap(&self) {
        match self.store.enforce_cap() {
            Ok(deleted) if !deleted.is_empty() => tracing::info!(
                deleted = deleted.len(),
                "recordings: oldest files deleted to stay within recordings.max_total_bytes"
            ),
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "recordings: cannot apply max_total_bytes"),
        }
    }

    /// Hands what was written to the OS.
    pub fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }

    /// Ends the recording with a marker saying why, and closes its file.
    pub fn finish(mut self, at: Instant, why: &str) -> io::Result<()> {
        let written = self.marker(at, why).and_then(|()| self.file.flush());
        self.store.closed(&self.name);
        written
    }

    /// Closes the file after a failure, writing nothing more.
    pub fn abandon(self) {
        self.store.closed(&self.name);
    }
}

/// Most bytes of text in one output event for files of at most `max_file_bytes`: escaped
/// (at most six bytes a byte, `\u001b`) it takes at most three quarters of a file, so a
/// file always holds its header and one event.
fn event_text_limit(max_file_bytes: u64) -> usize {
    let quarter = usize::try_from(max_file_bytes / 8).unwrap_or(usize::MAX);
    quarter.clamp(1, MAX_EVENT_TEXT)
}

/// Creates a file with its header. Time 0 is the whole second of the header's timestamp, so
/// an event's wall-clock time is exactly `timestamp + secs`.
fn new_file(
    store: &Store,
    subject: &Subject,
) -> io::Result<(BufWriter<File>, String, Instant, u64)> {
    let now = SystemTime::now();
    let instant = Instant::now();
    let since = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let started = instant
        .checked_sub(Duration::from_nanos(u64::from(since.subsec_nanos())))
        .unwrap_or(instant);
    let (file, name) = store.create(&subject.server, subject.pane, now)?;
    let header = Header::new(
        subject.width,
        subject.height,
        since.as_secs(),
        Some(subject.title.clone()),
    )
    .line();
    let mut file = BufWriter::with_capacity(64 * 1024, file);
    file.write_all(header.as_bytes())?;
    Ok((file, name, started, header.len() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recordings::cast::Cast;
    use crate::recordings::store::list;

    fn subject(max_file_bytes: u64) -> Subject {
        Subject {
            server: "default".into(),
            pane: PaneId(7),
            width: 100,
            height: 30,
            title: "test".into(),
            max_file_bytes,
        }
    }

    fn chunk(data: &[u8]) -> OutputChunk {
        OutputChunk {
            data: data.to_vec(),
            ..OutputChunk::default()
        }
    }

    fn read_all(dir: &std::path::Path) -> Vec<Cast> {
        list(dir)
            .unwrap()
            .iter()
            .map(|f| Cast::parse(&std::fs::read_to_string(dir.join(&f.name)).unwrap()).unwrap())
            .collect()
    }

    #[test]
    fn chunks_become_events_with_gaps_marked() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path().to_path_buf(), u64::MAX);
        let mut writer = CastWriter::open(store, subject(1 << 20)).unwrap();
        let t0 = Instant::now();
        writer.chunk(t0, &chunk(b"hello \xe2\x82")).unwrap();
        writer.chunk(t0, &chunk(b"\xac\r\n")).unwrap();
        let lost = OutputChunk {
            data: b"after".to_vec(),
            missed_bytes: 0,
            gap: true,
        };
        writer.chunk(t0 + Duration::from_millis(5), &lost).unwrap();
        writer
            .finish(t0 + Duration::from_millis(6), "end: the pane was closed")
            .unwrap();
        let casts = read_all(dir.path());
        assert_eq!(casts.len(), 1);
        let cast = &casts[0];
        assert_eq!(cast.header["width"], 100);
        assert_eq!(cast.header["title"], "test");
        let events: Vec<(&str, &str)> = cast
            .events
            .iter()
            .map(|e| (e.code.as_str(), e.data.as_str()))
            .collect();
        assert_eq!(
            events,
            [
                ("o", "hello "),
                ("o", "€\r\n"),
                ("m", "gap: tmux dropped output here (flow control)"),
                ("o", "after"),
                ("m", "end: the pane was closed"),
            ]
        );
    }

    #[test]
    fn files_rotate_below_max_file_bytes_and_keep_every_byte() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path().to_path_buf(), u64::MAX);
        let mut writer = CastWriter::open(store, subject(MIN_FILE_BYTES)).unwrap();
        let t0 = Instant::now();
        let mut sent = String::new();
        for i in 0..200 {
            let line = format!("line {i} \u{1b}[1mbold\u{1b}[0m é\r\n");
            sent.push_str(&line);
            writer.chunk(t0, &chunk(line.as_bytes())).unwrap();
        }
        writer.finish(t0, "end").unwrap();
        let files = list(dir.path()).unwrap();
        assert!(files.len() > 2, "{} files", files.len());
        assert!(files.iter().all(|f| f.bytes <= MIN_FILE_BYTES), "{files:?}");
        let text: String = read_all(dir.path())
            .iter()
            .flat_map(|c| c.events.iter())
            .filter(|e| e.code == "o")
            .map(|e| e.data.as_str())
            .collect();
        assert_eq!(text, sent);
    }

    #[test]
    fn one_huge_chunk_is_split_into_events_that_fit() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path().to_path_buf(), u64::MAX);
        let mut writer = CastWriter::open(store, subject(MIN_FILE_BYTES)).unwrap();
        let control = vec![0x1bu8; 10_000];
        writer.chunk(Instant::now(), &chunk(&control)).unwrap();
        writer.finish(Instant::now(), "end").unwrap();
        let files = list(dir.path()).unwrap();
        assert!(files.iter().all(|f| f.bytes <= MIN_FILE_BYTES), "{files:?}");
        let escapes: usize = read_all(dir.path())
            .iter()
            .flat_map(|c| c.events.iter())
            .map(|e| e.data.chars().filter(|c| *c == '\u{1b}').count())
            .sum();
        assert_eq!(escapes, 10_000);
    }

    #[test]
    fn the_current_file_follows_rotation() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path().to_path_buf(), u64::MAX);
        let mut writer = CastWriter::open(store, subject(MIN_FILE_BYTES)).unwrap();
        let current = writer.current();
        let first = current.lock().unwrap().name.clone();
        writer.chunk(Instant::now(), &chunk(&[b'x'; 5000])).unwrap();
        let now = current.lock().unwrap().clone();
        assert_ne!(now.name, first);
        assert!(now.offset_at(Instant::now()) < 2.0);
        writer.flush().unwrap();
    }
}
