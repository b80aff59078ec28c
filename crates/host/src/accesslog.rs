//! The host's access log: each core formats its lines ([`LogFormat`]) into a buffer of its
//! own ([`CoreLog`]: no lock, no allocation per request) and writes them out once per
//! round of its server, with one `write(2)` on the log's descriptor ([`Target`]), which all
//! the cores share: standard output, or a file opened for appending and reopened on demand
//! ([`Target::reopen`], for logrotate's SIGUSR1).
//!
//! Reopening never leaves a core with a stale descriptor: the new file is `dup3`'d onto
//! the descriptor every core writes to, which the kernel swaps atomically; a `write` in
//! progress finishes on the old file, every later one goes to the new. Lines are not lost
//! and not split: a buffer always ends at a line's end, a file opened with `O_APPEND`
//! takes each `write` whole, and on a pipe the writes are cut at line ends into pieces of
//! at most `PIPE_BUF` bytes, which the kernel keeps whole.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bareweb_engine::http::log::{AccessLog, AccessRecord, LogFormat, LINE_MAX};

/// Where the lines go: one descriptor for every core.
#[derive(Debug)]
pub struct Target {
    file: File,
    /// The file's path, for [`Target::reopen`] (`None`: standard output).
    path: Option<PathBuf>,
    /// A pipe or socket: writes are cut at line ends to at most `PIPE_BUF`.
    pipe: bool,
    /// Lines that could not be written (the device full, a closed pipe).
    lost: AtomicU64,
    /// Times the file was reopened.
    reopened: AtomicU64,
}

/// Bytes the kernel writes to a pipe whole (POSIX's `PIPE_BUF`, Linux's value).
const PIPE_BUF: usize = 4096;

impl Target {
    /// Standard output (a duplicate of descriptor 1: writes take no lock of std's).
    pub fn stdout() -> io::Result<Arc<Target>> {
        let fd = std::os::fd::AsFd::as_fd(&io::stdout()).try_clone_to_owned()?;
        Ok(Arc::new(Target::new(File::from(fd), None)))
    }

    /// The file at `path`, created if missing (mode 0640), appended to.
    pub fn file(path: &Path) -> io::Result<Arc<Target>> {
        let file = open_append(path)?;
        Ok(Arc::new(Target::new(file, Some(path.to_path_buf()))))
    }

    fn new(file: File, path: Option<PathBuf>) -> Target {
        let pipe = file
            .metadata()
            .map(|m| m.file_type().is_fifo() || m.file_type().is_socket())
            .unwrap_or(true);
        Target {
            file,
            path,
            pipe,
            lost: AtomicU64::new(0),
            reopened: AtomicU64::new(0),
        }
    }

    /// Opens the file's path again (a new file if logrotate renamed the old one) and puts
    /// it in place of the old under the same descriptor; every core's next write goes to
    /// it. Standard output is left as it is.
    pub fn reopen(&self) -> io::Result<()> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let new = open_append(path)?;
        // SAFETY: both descriptors are open and owned by live `File`s (`self.file` lives as
        // long as `self`); dup3 only replaces what `self.file`'s descriptor refers to, and
        // `new` is closed by its own drop afterwards. No memory is touched.
        let r = unsafe { libc::dup3(new.as_raw_fd(), self.file.as_raw_fd(), libc::O_CLOEXEC) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        self.reopened.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// The file's path (`None`: standard output).
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Lines lost so far (the device full, a closed pipe).
    pub fn lost(&self) -> u64 {
        self.lost.load(Ordering::Relaxed)
    }

    /// Times the file was reopened.
    pub fn reopened(&self) -> u64 {
        self.reopened.load(Ordering::Relaxed)
    }

    /// Writes `buf` (whole lines), holding `lines` of them.
    fn write(&self, mut buf: &[u8], lines: u64) {
        while !buf.is_empty() {
            let n = if self.pipe && buf.len() > PIPE_BUF {
                // The last line end within PIPE_BUF, else the first (a longer line alone).
                buf[..PIPE_BUF]
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .or_else(|| buf.iter().position(|&b| b == b'\n'))
                    .map_or(buf.len(), |i| i + 1)
            } else {
                buf.len()
            };
            if (&self.file).write_all(&buf[..n]).is_err() {
                let left = buf.iter().filter(|&&b| b == b'\n').count() as u64;
                self.lost.fetch_add(left.min(lines), Ordering::Relaxed);
                return;
            }
            buf = &buf[n..];
        }
    }
}

fn open_append(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o640)
        .custom_flags(libc::O_CLOEXEC)
        .open(path)
}

/// One core's access log: lines formatted into its own buffer, written to the shared
/// [`Target`] at the end of each round (or sooner when the buffer fills).
pub struct CoreLog {
    target: Arc<Target>,
    format: LogFormat,
    buf: Vec<u8>,
    lines: u64,
}

/// A core's buffer: room for two lines of the longest kind, so one always fits after a
/// flush that left room for [`LINE_MAX`].
const BUF_LEN: usize = 2 * LINE_MAX;

impl CoreLog {
    /// A log writing `format` lines to `target`; its buffer is allocated here, once.
    pub fn new(target: Arc<Target>, format: LogFormat) -> CoreLog {
        CoreLog {
            target,
            format,
            buf: Vec::with_capacity(BUF_LEN),
            lines: 0,
        }
    }
}

/// `fmt::Write` into a `Vec`'s spare capacity only: it never grows (never allocates).
struct Fixed<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for Fixed<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        if self.0.capacity() - self.0.len() < s.len() {
            return Err(std::fmt::Error);
        }
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

impl AccessLog for CoreLog {
    fn record(&mut self, r: &AccessRecord<'_>) {
        if self.buf.capacity() - self.buf.len() < LINE_MAX {
            self.flush();
        }
        let start = self.buf.len();
        let mut w = Fixed(&mut self.buf);
        if std::fmt::write(&mut w, format_args!("{}\n", r.line(self.format))).is_err() {
            // Cannot happen (a line is shorter than LINE_MAX); never a partial line.
            self.buf.truncate(start);
            self.target.lost.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.lines += 1;
    }

    fn flush(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        self.target.write(&self.buf, self.lines);
        self.buf.clear();
        self.lines = 0;
    }
}

impl Drop for CoreLog {
    fn drop(&mut self) {
        self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::IpAddr;

    fn record(path: &[u8]) -> Vec<u8> {
        let mut head = b"GET ".to_vec();
        head.extend_from_slice(path);
        head.extend_from_slice(b" HTTP/1.1\r\nHost: h\r\nUser-Agent: \"\xff\r\n\r\n");
        head
    }

    fn log_one(log: &mut CoreLog, head: &[u8]) {
        let end = head.iter().position(|&b| b == b'\r').unwrap();
        log.record(&AccessRecord {
            peer: IpAddr::from([10, 0, 0, 1]),
            request_line: &head[..end],
            head,
            status: 200,
            bytes: 3,
            unix_secs: 1_700_000_000,
            duration_us: 7,
        });
    }

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("bareweb-log-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Lines wait in the core's buffer until its round ends; then they are in the file,
    /// whole and in order; the buffer never grows.
    #[test]
    fn lines_are_written_at_the_end_of_the_round() {
        let dir = temp("round");
        let path = dir.join("access.log");
        let target = Target::file(&path).unwrap();
        let mut log = CoreLog::new(Arc::clone(&target), LogFormat::Json);
        log_one(&mut log, &record(b"/a"));
        log_one(&mut log, &record(b"/b"));
        assert_eq!(std::fs::read(&path).unwrap(), b"");
        log.flush();
        let text = std::fs::read_to_string(&path).unwrap();
        let paths: Vec<String> = text
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                v["path"].as_str().unwrap().to_string()
            })
            .collect();
        assert_eq!(paths, ["/a", "/b"]);
        // Many long lines: flushed as the buffer fills, never grown, none lost.
        let long = vec![b'\x01'; 5000];
        for _ in 0..100 {
            log_one(&mut log, &record(&long));
        }
        assert_eq!(log.buf.capacity(), BUF_LEN);
        drop(log);
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 102);
        assert_eq!(target.lost(), 0);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// logrotate's way: the file renamed, then reopened; lines before the reopen are in the
    /// renamed file, lines after it in the new one, none lost, from every core's log.
    #[test]
    fn reopening_moves_the_next_lines_to_a_new_file() {
        let dir = temp("reopen");
        let path = dir.join("access.log");
        let target = Target::file(&path).unwrap();
        let mut a = CoreLog::new(Arc::clone(&target), LogFormat::Common);
        let mut b = CoreLog::new(Arc::clone(&target), LogFormat::Common);
        log_one(&mut a, &record(b"/before-a"));
        log_one(&mut b, &record(b"/before-b"));
        a.flush();
        std::fs::rename(&path, dir.join("access.log.1")).unwrap();
        // b's line was formatted before the rotation but is written after it: it goes to
        // the new file, and is not lost.
        target.reopen().unwrap();
        b.flush();
        log_one(&mut a, &record(b"/after"));
        a.flush();
        let old = std::fs::read_to_string(dir.join("access.log.1")).unwrap();
        let new = std::fs::read_to_string(&path).unwrap();
        assert!(
            old.contains("/before-a") && old.lines().count() == 1,
            "{old}"
        );
        assert!(new.contains("/before-b") && new.contains("/after"), "{new}");
        assert_eq!(new.lines().count(), 2);
        assert_eq!(target.reopened(), 1);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// On a pipe a buffer is cut at line ends into writes the kernel keeps whole.
    #[test]
    fn a_pipe_gets_whole_lines_of_at_most_pipe_buf() {
        let (r, w) = std::io::pipe().unwrap();
        let target = Arc::new(Target::new(File::from(std::os::fd::OwnedFd::from(w)), None));
        assert!(target.pipe);
        let reader = std::thread::spawn(move || {
            let mut r = r;
            let mut all = Vec::new();
            std::io::Read::read_to_end(&mut r, &mut all).unwrap();
            all
        });
        let mut log = CoreLog::new(Arc::clone(&target), LogFormat::Combined);
        for i in 0..200 {
            log_one(&mut log, &record(format!("/{i:0>300}").as_bytes()));
        }
        drop(log);
        drop(target);
        let all = reader.join().unwrap();
        let text = String::from_utf8(all).unwrap();
        assert_eq!(text.lines().count(), 200);
        assert!(text.lines().all(|l| l.ends_with("\"-\" \"\\\"\\xff\"")));
    }
}
