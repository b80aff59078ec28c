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
        self.server.check_bare()?;
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
    for disk in disks {
        // The hybrid ISO is a disk too: an MBR with GRUB's boot code (BIOS) and a partition
        // holding the EFI system image (UEFI). Padded to whole MiB: cloud importers and
        // some USB writers want sizes in whole sectors or MiB.
        write_iso_maybe_private(&elf, disk, tls.is_some())?;
        let len = std::fs::metadata(disk).map_err(|e| e.to_string())?.len();
        let padded = len.div_ceil(1 << 20) << 20;
        std::fs::OpenOptions::new()
            .write(true)
            .open(disk)
            .and_then(|f| f.set_len(padded))
            .map_err(|e| format!("cannot pad {}: {e}", disk.display()))?;
        println!(
            "{}: bootable disk image (GRUB, BIOS and UEFI; dd it to a USB stick), {} MiB, {files} files, command line {cmdline:?}",
            disk.display(),
            padded >> 20
        );
        private(disk)?;
    }
    Ok(())
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
}
