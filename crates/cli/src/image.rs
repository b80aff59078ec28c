//! `bareweb build`: a site directory into an image file — a site image (`.bws`, for
//! `serve` and `run`), or with `-o NAME.elf` / `--iso NAME.iso` / `--disk NAME.img` a
//! bootable image (the kernel and the site in one file, in the formats of
//! [`crate::bootimage`]). Owns the command's options and the files it writes.

use std::path::{Path, PathBuf};

use crate::bare::KernelOpts;
use crate::bootimage::{elf_with_site, write_iso};
use crate::kernel_image::{kind_of, Kind, KERNEL};
use crate::opts::{self, ServerOpts};

#[derive(clap::Args, Clone)]
pub struct BuildArgs {
    /// The site directory.
    pub site: PathBuf,
    /// Where to write: `NAME.elf` a bootable ELF (kernel and site in one file), `NAME.iso`
    /// a bootable ISO (GRUB, BIOS and UEFI), `NAME.img` a bootable raw disk image (the
    /// same, for USB sticks and cloud VMs), anything else a site image for `serve` and `run`.
    #[arg(short, long, default_value = "site.bws")]
    pub output: PathBuf,
    /// The site configuration [default: SITE/bareweb.toml if there is one].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Also write a bootable ISO (GRUB, BIOS and UEFI) with the kernel and the site.
    #[arg(long, value_name = "NAME.iso")]
    pub iso: Option<PathBuf>,
    /// Also write a bootable raw disk image (BIOS and UEFI: `dd` it to a USB stick, or
    /// import it as a cloud VM's disk) with the kernel and the site.
    #[arg(long, value_name = "NAME.img")]
    pub disk: Option<PathBuf>,
    /// Bootable images: the server's settings, baked in as the kernel's command line (a
    /// boot loader's words override them). Every bootable image takes its address from
    /// DHCP unless --ip is given.
    #[command(flatten)]
    pub server: ServerOpts,
    /// Bootable images, with --acme-domain: the root certificates (PEM) the kernel's ACME
    /// client trusts for the CA's HTTPS, instead of the Web PKI's built in (a private or
    /// test CA); built into the image after the site
    #[arg(long, value_name = "FILE")]
    pub acme_ca: Option<PathBuf>,
    /// Bootable images: the kernel's own settings.
    #[command(flatten)]
    pub kernel: KernelOpts,
    /// Bootable images: a line of counters every second on the kernel console.
    #[arg(long)]
    pub stats_log: bool,
    /// Bootable images: more kernel command line words (docs/kernel.md), checked here.
    #[arg(long, value_name = "WORDS", value_parser = opts::kernel_words)]
    pub append: Option<String>,
}

impl BuildArgs {
    /// Whether a bootable image is asked for.
    pub fn bootable(&self) -> bool {
        self.iso.is_some() || self.disk.is_some() || kind_of(&self.output) != Kind::Site
    }

    /// The kernel command line baked into a bootable image.
    pub fn cmdline(&self) -> String {
        let mut w = Vec::new();
        // Every bootable image (ELF, ISO, disk) is meant for a LAN or a cloud VM: its
        // address from DHCP unless --ip says otherwise (QEMU user networking answers DHCP
        // too, with the address it forwards to).
        if self.server.given("ip").is_none() && self.bootable() {
            w.push("ip=dhcp".to_string());
        }
        w.extend(self.server.kernel_words(self.stats_log));
        w.extend(self.kernel.kernel_words());
        w.extend(self.append.iter().cloned());
        w.join(" ")
    }

    /// Every file this build writes (`-o`, `--iso`, `--disk`).
    pub fn outputs(&self) -> Vec<&Path> {
        let mut v = vec![self.output.as_path()];
        v.extend(self.iso.iter().map(PathBuf::as_path));
        v.extend(self.disk.iter().map(PathBuf::as_path));
        v
    }

    pub fn check(&self) -> Result<(), String> {
        self.server.check()?;
        self.server
            .check_bare(self.bootable() && self.server.given("ip").is_none())?;
        if self.acme_ca.is_some() && !self.server.settings.acme.on() {
            return Err("--acme-ca is the ACME client's: it needs --acme-domain".into());
        }
        if let Some(iso) = &self.iso {
            if kind_of(iso) != Kind::Iso {
                return Err(format!(
                    "--iso {}: the name must end in .iso",
                    iso.display()
                ));
            }
        }
        if let Some(disk) = &self.disk {
            if kind_of(disk) != Kind::Disk {
                return Err(format!(
                    "--disk {}: the name must end in .img",
                    disk.display()
                ));
            }
        }
        if !self.bootable()
            && (self.server.any() || self.kernel.any() || self.stats_log || self.append.is_some())
        {
            return Err(format!(
                "server options go into bootable images only (-o NAME.elf, --iso NAME.iso or --disk NAME.img); \
                 {} is a site image, which carries the site alone (give the options to serve or run)",
                self.output.display()
            ));
        }
        opts::kernel_settings(&self.cmdline())?;
        Ok(())
    }
}

/// `bareweb build`: the site image, or a bootable image when one is asked for.
pub fn build(a: &BuildArgs) -> Result<(), String> {
    if a.bootable() {
        return build_bootable(a);
    }
    let out = &a.output;
    if !a.site.is_dir() {
        return Err(format!("{} is not a directory", a.site.display()));
    }
    let (image, files) =
        crate::util::site_image_excluding(&a.site, a.config.as_deref(), &a.outputs())?;
    std::fs::write(out, &image).map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    println!("{}: {files} files, {} bytes", out.display(), image.len());
    Ok(())
}

/// `bareweb build SITE -o X.elf` and/or `--iso X.iso` (or `-o X.iso`).
fn build_bootable(a: &BuildArgs) -> Result<(), String> {
    let (image, files) =
        crate::util::site_image_excluding(&a.site, a.config.as_deref(), &a.outputs())?;
    // HTTPS: the certificate and key ride after the site (the kernel splits them).
    let tls = crate::tls::read_checked(&a.server)?;
    let image = crate::tls::with_pems(image, tls.as_ref())?;
    // ACME: the roots its client trusts after them.
    let roots = match &a.acme_ca {
        Some(p) => Some(crate::acme::read_roots(p)?.0),
        None => None,
    };
    let image = crate::tls::with_ca(image, roots.as_deref())?;
    let acme = a.server.settings.acme.on();
    let cmdline = a.cmdline();
    let elf = elf_with_site(KERNEL, &image, &cmdline)?;
    let output = &a.output;
    // An image holding a private key is its owner's alone (mode 0600), as the key file is.
    let private = |path: &std::path::Path| -> Result<(), String> {
        if let (Some(_), Some(key)) = (&tls, a.server.given("tls-key")) {
            std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o600))
                .map_err(|e| format!("cannot make {} private: {e}", path.display()))?;
            println!(
                "{}: holds the private key of --tls-key {key}: written with mode 0600 (owner only); keep it as private as the key",
                path.display()
            );
        }
        Ok(())
    };
    if kind_of(output) == Kind::Elf {
        let write = if tls.is_some() {
            crate::tls::write_private(output, &elf)
        } else {
            std::fs::write(output, &elf)
        };
        write.map_err(|e| format!("cannot write {}: {e}", output.display()))?;
        println!(
            "{}: bootable ELF (PVH, multiboot2), kernel {} KiB + site {files} files {} KiB, command line {cmdline:?}",
            output.display(),
            KERNEL.len() / 1024,
            image.len() / 1024
        );
        private(output)?;
    }
    let isos = a
        .iso
        .iter()
        .chain((kind_of(output) == Kind::Iso).then_some(output));
    for iso in isos {
        write_iso_maybe_private(&elf, iso, tls.is_some())?;
        println!(
            "{}: bootable ISO (GRUB, BIOS and UEFI), {files} files, command line {cmdline:?}",
            iso.display()
        );
        private(iso)?;
    }
    let disks = a
        .disk
        .iter()
        .chain((kind_of(output) == Kind::Disk).then_some(output));
    let mut disks = disks.peekable();
    let elf_or_iso =
        kind_of(output) == Kind::Elf || kind_of(output) == Kind::Iso || a.iso.is_some();
    if acme && elf_or_iso {
        println!(
            "note: with --acme-domain the kernel keeps its account key and certificate on a disk: \
             boot the .elf or .iso with `bareweb run IMAGE --state-disk FILE` (a virtio-blk disk \
             whose last {} KiB it may use){}",
            AREA_BYTES / 1024,
            if disks.peek().is_some() {
                "; the .img holds its own"
            } else {
                ""
            }
        );
    }
    for disk in disks {
        // The hybrid ISO is a disk too: an MBR with GRUB's boot code (BIOS) and a partition
        // holding the EFI system image (UEFI). Then zeros to whole MiB (cloud importers
        // and some USB writers want sizes in whole sectors or MiB), the last AREA_BYTES of
        // which are the state area the kernel's ACME client keeps its records in (the end
        // of its virtio-blk disk): past everything xorriso wrote, its backup GPT included.
        // An image rebuilt in place keeps the records its kernel wrote (the account and
        // the certificate): a new account and order at every rebuild would run into the
        // CA's limits.
        let kept = if acme {
            crate::run::state_area_of(disk).map_err(|e| format!("--disk {e}"))?
        } else {
            None
        };
        // With ACME the image is private from the start, written beside and renamed over
        // the old one (which a failed build leaves as it was).
        write_iso_maybe_private(&elf, disk, tls.is_some() || acme)?;
        let len = std::fs::metadata(disk).map_err(|e| e.to_string())?.len();
        let padded = disk_len(len);
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(disk)
            .map_err(|e| format!("cannot pad {}: {e}", disk.display()))?;
        f.set_len(padded)
            .map_err(|e| format!("cannot pad {}: {e}", disk.display()))?;
        if let Some(area) = &kept {
            use std::io::{Seek, SeekFrom, Write};
            f.seek(SeekFrom::Start(padded - AREA_BYTES))
                .and_then(|_| f.write_all(area))
                .and_then(|()| f.sync_all())
                .map_err(|e| format!("cannot keep {}'s state area: {e}", disk.display()))?;
            println!(
                "{}: the state area of the image it replaces is kept (the ACME account and certificate)",
                disk.display()
            );
        }
        println!(
            "{}: bootable disk image (GRUB, BIOS and UEFI; dd it to a USB stick), {} MiB, {files} files, command line {cmdline:?}, state area {} KiB at its end",
            disk.display(),
            padded >> 20,
            AREA_BYTES / 1024
        );
        private(disk)?;
        if acme {
            // The kernel writes the account key and the certificate's key into the area.
            std::fs::set_permissions(disk, std::os::unix::fs::PermissionsExt::from_mode(0o600))
                .map_err(|e| format!("cannot make {} private: {e}", disk.display()))?;
            println!(
                "{}: its state area will hold the ACME account key and certificate key: written with mode 0600 (owner only)",
                disk.display()
            );
        }
    }
    Ok(())
}

/// The state area's size (`bareweb_acme::store::AREA_BYTES`).
const AREA_BYTES: u64 = crate::run::AREA_BYTES;

/// A disk image's length for `content` bytes of hybrid ISO: room for the state area after
/// them, in whole MiB.
fn disk_len(content: u64) -> u64 {
    (content + AREA_BYTES).div_ceil(1 << 20) << 20
}

/// [`write_iso`], and when the ELF holds a key, made in a directory of the owner's alone
/// beside `out` and set to mode 0600 before it is moved there: never readable by others.
fn write_iso_maybe_private(elf: &[u8], out: &Path, private: bool) -> Result<(), String> {
    if !private {
        return write_iso(elf, out);
    }
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let dir = parent.join(format!(".bareweb-private-{}", std::process::id()));
    std::os::unix::fs::DirBuilderExt::mode(&mut std::fs::DirBuilder::new(), 0o700)
        .create(&dir)
        .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let tmp = dir.join("image");
    let res = write_iso(elf, &tmp).and_then(|()| {
        std::fs::set_permissions(&tmp, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .and_then(|()| std::fs::rename(&tmp, out))
            .map_err(|e| format!("cannot write {}: {e}", out.display()))
    });
    let _ = std::fs::remove_dir_all(&dir);
    res
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        build: BuildArgs,
    }

    fn args(words: &[&str]) -> BuildArgs {
        let mut v = vec!["bareweb", "site"];
        v.extend_from_slice(words);
        Cli::parse_from(v).build
    }

    /// One rule for every bootable output, whichever option names it: DHCP unless --ip.
    #[test]
    fn every_bootable_image_takes_dhcp_unless_ip_is_given() {
        for out in [
            &["-o", "site.elf"][..],
            &["-o", "site.iso"],
            &["-o", "site.img"],
            &["-o", "SITE.IMG"],
            &["--iso", "a.iso"],
            &["--disk", "a.img"],
            &["-o", "site.elf", "--iso", "a.iso"],
        ] {
            let a = args(out);
            assert!(a.bootable());
            assert_eq!(a.cmdline(), "ip=dhcp", "{out:?}");
            a.check().unwrap();
            let mut fixed = out.to_vec();
            fixed.extend(["--ip", "192.168.1.50/24"]);
            assert_eq!(args(&fixed).cmdline(), "ip=192.168.1.50/24", "{fixed:?}");
        }
        let site = args(&["-o", "site.bws"]);
        assert!(!site.bootable());
        assert_eq!(site.cmdline(), "", "a site image carries no command line");
    }

    /// The state area is the image's last 256 KiB, after every byte xorriso wrote, and the
    /// image stays whole MiB.
    #[test]
    fn a_disk_image_ends_with_the_state_area_in_whole_mib() {
        assert_eq!(AREA_BYTES, 256 << 10);
        for content in [
            1u64,
            5 << 20,
            (6 << 20) - AREA_BYTES,
            (6 << 20) - AREA_BYTES + 1,
        ] {
            let len = disk_len(content);
            assert_eq!(len % (1 << 20), 0, "{content}");
            assert!(len - AREA_BYTES >= content, "{content}");
            assert!(len - AREA_BYTES - content < 1 << 20, "{content}");
        }
        assert_eq!(disk_len((6 << 20) - AREA_BYTES), 6 << 20);
    }

    #[test]
    fn acme_goes_into_bootable_images_with_its_checks() {
        let acme = ["--acme-domain", "a.test", "--dns", "10.0.2.3"];
        let mut w = vec!["--disk", "s.img"];
        w.extend(acme);
        let a = args(&w);
        a.check().unwrap();
        assert!(
            a.cmdline().contains("acme_domain=a.test dns=10.0.2.3"),
            "{}",
            a.cmdline()
        );
        // The roots need ACME; ACME needs a resolver for a directory named by a host name
        // (Let's Encrypt's by default), `--dns` or DHCP's lease; a certificate given and ACME do not go together.
        for (bad, why) in [
            (
                &["-o", "s.elf", "--acme-ca", "ca.pem"][..],
                "needs --acme-domain",
            ),
            (
                &[
                    "-o",
                    "s.elf",
                    "--ip",
                    "10.0.0.2/24",
                    "--acme-domain",
                    "a.test",
                ],
                "give --dns",
            ),
            (
                // A fixed address: no DHCP lease to name a DNS server.
                &[
                    "-o",
                    "s.elf",
                    "--ip",
                    "10.0.0.2/24",
                    "--acme-domain",
                    "a.test",
                    "--acme-directory",
                    "https://ca.test:14000/dir",
                ],
                "host ca.test is a name",
            ),
            (
                &[
                    "-o",
                    "s.elf",
                    "--acme-domain",
                    "a.test",
                    "--dns",
                    "10.0.2.3",
                    "--tls-cert",
                    "c.pem",
                    "--tls-key",
                    "k.pem",
                ],
                "not both",
            ),
            (
                &[
                    "-o",
                    "s.elf",
                    "--acme-domain",
                    "a.test",
                    "--dns",
                    "10.0.2.3",
                    "--port",
                    "61000",
                ],
                "ACME client's own connections",
            ),
            (
                &[
                    "-o",
                    "s.bws",
                    "--acme-domain",
                    "a.test",
                    "--dns",
                    "10.0.2.3",
                ],
                "bootable images only",
            ),
        ] {
            let e = args(bad).check().unwrap_err();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
        // Without --ip the image takes DHCP's lease, whose DNS server looks the name up.
        assert!(args(&["-o", "s.elf", "--acme-domain", "a.test"])
            .check()
            .is_ok());
        // A directory at an address needs no resolver; the URL reaches the kernel whole.
        let a = args(&[
            "-o",
            "s.elf",
            "--acme-domain",
            "a.test,b.test",
            "--acme-directory",
            "https://10.0.2.2:14000/dir",
            "--acme-ca",
            "ca.pem",
        ]);
        a.check().unwrap();
        let s = crate::opts::kernel_settings(&a.cmdline()).unwrap();
        assert!(s.acme.on() && s.acme.directory);
        assert!(
            a.cmdline()
                .contains("acme_domain=a.test,b.test acme_directory=https://10.0.2.2:14000/dir"),
            "{}",
            a.cmdline()
        );
    }
}
