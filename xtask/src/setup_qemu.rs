//! A QEMU with the igb NIC model (82576: QEMU 8 and later) for `cargo xtask setup`.
//! Debian bookworm ships QEMU 7.2, without igb; bookworm-backports has QEMU 10. This
//! adds the backports suite to the machine's Debian sources, reusing the mirror (URIs)
//! and keyring already configured there (deb822 `.sources` or one-line `sources.list`),
//! and installs QEMU's x86 system emulator and its data (qboot, SeaBIOS, microvm's BIOS)
//! from it; OVMF and everything else stay bookworm's.

use std::path::Path;
use std::process::Command;

/// Where the suite is added (one file of ours, replaced on every run).
const SOURCES: &str = "/etc/apt/sources.list.d/bareweb-backports.sources";

/// What is installed from backports (apt pulls the newer SeaBIOS it depends on).
pub const PACKAGES: &[&str] = &["qemu-system-x86", "qemu-system-common", "qemu-system-data"];

/// Whether `qemu` lists `-device` model `name`.
pub fn has_device(qemu: &str, name: &str) -> bool {
    Command::new(qemu)
        .args(["-device", "help"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains(&format!("name \"{name}\"")))
        .unwrap_or(false)
}

/// The codename of the running Debian release (`VERSION_CODENAME` in /etc/os-release).
fn codename() -> Option<String> {
    let os = std::fs::read_to_string("/etc/os-release").ok()?;
    os.lines()
        .find_map(|l| l.strip_prefix("VERSION_CODENAME="))
        .map(|c| c.trim_matches('"').to_string())
}

/// The deb822 stanza for `suite`-backports from the sources configured for `suite`:
/// the first stanza (deb822) or line (one-line format) naming the suite gives the URIs
/// and the Signed-By keyring. None if no source names the suite.
pub fn backports_stanza(suite: &str, deb822: &[String], one_line: &[String]) -> Option<String> {
    let stanza = |uris: &str, signed: Option<&str>| {
        let mut s =
            format!("Types: deb\nURIs: {uris}\nSuites: {suite}-backports\nComponents: main\n");
        if let Some(k) = signed {
            s += &format!("Signed-By: {k}\n");
        }
        s
    };
    for file in deb822 {
        for block in file.split("\n\n") {
            let field = |name: &str| {
                block.lines().find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    (k.trim().eq_ignore_ascii_case(name)).then(|| v.trim().to_string())
                })
            };
            let (Some(types), Some(uris), Some(suites)) =
                (field("Types"), field("URIs"), field("Suites"))
            else {
                continue;
            };
            if types.split_whitespace().any(|t| t == "deb")
                && suites.split_whitespace().any(|s| s == suite)
            {
                return Some(stanza(&uris, field("Signed-By").as_deref()));
            }
        }
    }
    for file in one_line {
        for l in file.lines().map(str::trim) {
            let Some(rest) = l.strip_prefix("deb ") else {
                continue;
            };
            // Options in brackets (`[arch=amd64 signed-by=/k.gpg]`): keep signed-by.
            let (opts, rest) = match rest.trim_start().strip_prefix('[') {
                Some(r) => r.split_once(']').unwrap_or(("", "")),
                None => ("", rest),
            };
            let signed = opts
                .split_whitespace()
                .find_map(|o| o.strip_prefix("signed-by="));
            let mut w = rest.split_whitespace();
            if let (Some(uri), Some(s)) = (w.next(), w.next()) {
                if s == suite {
                    return Some(stanza(uri, signed));
                }
            }
        }
    }
    None
}

/// On Debian bookworm, as root, when the installed QEMU lacks igb: adds the backports
/// suite and installs QEMU from it. Elsewhere a note (CI: an error, since CI's kernel
/// tests run igb).
pub fn ensure_igb(root: bool, ci: bool, apt: &dyn Fn(&[&str]) -> Command) -> Result<(), String> {
    if has_device("qemu-system-x86_64", "igb") {
        return Ok(());
    }
    let note = |why: String| -> Result<(), String> {
        if ci {
            Err(why)
        } else {
            eprintln!("note: {why}; `bareweb run --nic igb` and its tests need QEMU 8 or later");
            Ok(())
        }
    };
    let suite = codename().unwrap_or_default();
    if suite != "bookworm" {
        return note(format!("the installed QEMU has no igb model and this is not Debian bookworm ({suite:?}): install a QEMU ≥ 8 by hand"));
    }
    if !root {
        return note("the installed QEMU has no igb model; as root, `cargo xtask setup` installs QEMU from bookworm-backports".into());
    }
    let read_dir = |ext: &str| -> Vec<String> {
        std::fs::read_dir("/etc/apt/sources.list.d")
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == ext) && p != Path::new(SOURCES))
            .filter_map(|p| std::fs::read_to_string(p).ok())
            .collect()
    };
    let deb822 = read_dir("sources");
    let mut one_line = read_dir("list");
    one_line.extend(std::fs::read_to_string("/etc/apt/sources.list").ok());
    let stanza = backports_stanza("bookworm", &deb822, &one_line)
        .ok_or("no apt source names bookworm: cannot derive bookworm-backports from it")?;
    std::fs::write(SOURCES, stanza).map_err(|e| format!("{SOURCES}: {e}"))?;
    eprintln!("added bookworm-backports ({SOURCES}); installing {PACKAGES:?} from it");
    crate::run(&mut apt(&["update", "-qq"]))?;
    crate::run(
        apt(&[
            "install",
            "-y",
            "-qq",
            "--no-install-recommends",
            "-t",
            "bookworm-backports",
        ])
        .args(PACKAGES),
    )?;
    if has_device("qemu-system-x86_64", "igb") {
        Ok(())
    } else {
        Err("QEMU from bookworm-backports installed, but it still has no igb model".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deb822_sources_give_their_mirror_and_keyring() {
        let this_machine = "Types: deb\n# http://snapshot.debian.org/archive/debian/20250520T000000Z\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\nTypes: deb\nURIs: http://deb.debian.org/debian-security\nSuites: bookworm-security\nComponents: main\n";
        let s = backports_stanza("bookworm", &[this_machine.into()], &[]).unwrap();
        assert_eq!(
            s,
            "Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
        );
        // Only the security suite: nothing to derive from.
        let sec = this_machine.split("\n\n").nth(1).unwrap().to_string();
        assert_eq!(backports_stanza("bookworm", &[sec], &[]), None);
    }

    #[test]
    fn one_line_sources_give_their_mirror() {
        let list = "# comment\ndeb http://mirror.example/debian bookworm main contrib\ndeb-src http://x/debian bookworm main\n";
        let s = backports_stanza("bookworm", &[], &[list.into()]).unwrap();
        assert!(
            s.contains("URIs: http://mirror.example/debian\nSuites: bookworm-backports\n"),
            "{s}"
        );
        let signed = "deb [arch=amd64 signed-by=/k.gpg] http://m/debian bookworm main\n";
        let s = backports_stanza("bookworm", &[], &[signed.into()]).unwrap();
        assert!(
            s.contains("URIs: http://m/debian\n") && s.ends_with("Signed-By: /k.gpg\n"),
            "{s}"
        );
        assert_eq!(
            backports_stanza(
                "bookworm",
                &[],
                &["deb http://m/debian bullseye main".into()]
            ),
            None
        );
    }
}
