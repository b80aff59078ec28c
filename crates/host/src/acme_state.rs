//! The ACME client's state on the host: one file, `acme-state`, in the `--state`
//! directory, holding the record of `bareweb_acme::store` (account key, certificate and
//! its key, checksummed). Secret, so the directory is made 0700 and the file written
//! 0600; a directory others can write to is refused (they could swap the file). A new
//! state is written to `acme-state.tmp`, flushed to disk, renamed over the old file and
//! the directory flushed: a crash at any point leaves either the old file or the new one,
//! never a mixture (and the checksum catches what the disk damaged).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use bareweb_acme::store::{self, State, StoreError};

/// The state file's name.
pub const FILE: &str = "acme-state";
const TMP: &str = "acme-state.tmp";

/// Why the kept state could not be read.
#[derive(Debug)]
pub enum LoadError {
    /// The file could not be read.
    Io(io::Error),
    /// The file is not a valid record (damaged, or not ours).
    Record(StoreError),
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Io(e) => write!(f, "cannot read it: {e}"),
            LoadError::Record(StoreError::Checksum) => {
                f.write_str("its checksum does not match (damaged)")
            }
            LoadError::Record(e) => write!(f, "it is not a bareweb ACME state record ({e:?})"),
        }
    }
}

/// The state directory.
#[derive(Debug)]
pub struct StateDir {
    dir: PathBuf,
    /// The sequence number of the record last read or written.
    seq: u64,
}

impl StateDir {
    /// The directory `dir`, made (0700) if missing. Refused if it is not a directory or
    /// others may write to it.
    pub fn open(dir: &Path) -> io::Result<StateDir> {
        if !dir.exists() {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)?;
        }
        let meta = fs::metadata(dir)?;
        if !meta.is_dir() {
            return Err(io::Error::other(format!(
                "{} is not a directory",
                dir.display()
            )));
        }
        if meta.mode() & 0o022 != 0 {
            return Err(io::Error::other(format!(
                "{} may be written by others (mode {:o}): chmod go-w it, it holds keys",
                dir.display(),
                meta.mode() & 0o777
            )));
        }
        Ok(StateDir {
            dir: dir.to_path_buf(),
            seq: 0,
        })
    }

    /// The state file's path.
    pub fn path(&self) -> PathBuf {
        self.dir.join(FILE)
    }

    /// The state kept, `None` if there is none yet.
    pub fn load(&mut self) -> Result<Option<State>, LoadError> {
        let bytes = match fs::read(self.path()) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(LoadError::Io(e)),
        };
        let (seq, state) = store::decode(&bytes).map_err(LoadError::Record)?;
        self.seq = seq;
        Ok(Some(state))
    }

    /// Keeps `state`, replacing what was kept.
    pub fn save(&mut self, state: &State) -> io::Result<()> {
        let record = store::encode(state, self.seq + 1)
            .ok_or_else(|| io::Error::other("the state is larger than a record holds"))?;
        let tmp = self.dir.join(TMP);
        // A leftover from a crash is not ours to keep.
        let _ = fs::remove_file(&tmp);
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(&record)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, self.path())?;
        File::open(&self.dir)?.sync_all()?;
        self.seq += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bareweb_acme::store::Kept;

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("bareweb-state-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    fn state(n: u8) -> State {
        State {
            account: vec![n; 40],
            certificate: Some(Kept {
                chain_pem: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".into(),
                key: vec![n; 30],
            }),
        }
    }

    #[test]
    fn kept_in_a_private_file_and_read_back() {
        let d = scratch("keep").join("nested");
        let mut s = StateDir::open(&d).unwrap();
        assert_eq!(fs::metadata(&d).unwrap().mode() & 0o777, 0o700);
        assert!(s.load().unwrap().is_none());
        s.save(&state(1)).unwrap();
        s.save(&state(2)).unwrap();
        assert_eq!(fs::metadata(s.path()).unwrap().mode() & 0o777, 0o600);
        assert!(!d.join(TMP).exists());
        let mut again = StateDir::open(&d).unwrap();
        assert_eq!(again.load().unwrap(), Some(state(2)));
        // The sequence goes on from what was read.
        again.save(&state(3)).unwrap();
        let (seq, _) = store::decode(&fs::read(again.path()).unwrap()).unwrap();
        assert_eq!(seq, 3);
        fs::remove_dir_all(d.parent().unwrap()).unwrap();
    }

    #[test]
    fn a_crash_leaves_the_old_file_and_damage_is_named() {
        let d = scratch("crash");
        let mut s = StateDir::open(&d).unwrap();
        s.save(&state(1)).unwrap();
        // A crash after the temporary file was begun: the old state is what is read, and
        // the next save replaces the leftover.
        fs::write(d.join(TMP), b"half a record").unwrap();
        assert_eq!(StateDir::open(&d).unwrap().load().unwrap(), Some(state(1)));
        s.save(&state(2)).unwrap();
        assert_eq!(StateDir::open(&d).unwrap().load().unwrap(), Some(state(2)));
        // A damaged file: the reason, not a state.
        let mut bytes = fs::read(s.path()).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        fs::write(s.path(), &bytes).unwrap();
        let e = StateDir::open(&d).unwrap().load().unwrap_err();
        assert_eq!(e.to_string(), "its checksum does not match (damaged)");
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_directory_others_may_write_is_refused() {
        let d = scratch("open");
        fs::create_dir_all(&d).unwrap();
        fs::set_permissions(&d, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
        let e = StateDir::open(&d).unwrap_err();
        assert!(
            e.to_string()
                .contains("may be written by others (mode 777)"),
            "{e}"
        );
        fs::set_permissions(&d, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        assert!(
            StateDir::open(&d).is_ok(),
            "readable by others is allowed: the file is 0600"
        );
        let file = d.join("f");
        fs::write(&file, b"").unwrap();
        assert!(StateDir::open(&file).is_err());
        fs::remove_dir_all(&d).unwrap();
    }
}
