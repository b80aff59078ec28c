//! `bareweb build SITE -o site.elf`, `--iso site.iso` and `--disk site.img`: bootable
//! images holding the kernel and the site in one file, as the scheduling paper's application object.
//!
//! - ELF: the kernel ELF (carried in this binary) plus the site image as one more
//!   PT_LOAD segment placed past the kernel's memory (bss included), its program header
//!   written after the existing ones (in the padding before the first segment: GRUB only
//!   reads program headers near the start of the file). The kernel's `.bwsite` descriptor,
//!   found by its marker, is patched with the segment's address, length and a default
//!   command line (--ip/--gw/--port/...). PVH loaders (QEMU `-kernel`, qboot) and GRUB's
//!   multiboot2 loader both load every PT_LOAD segment, so the one file boots and serves.
//! - ISO: that ELF in a GRUB rescue image made by `grub-mkrescue` (grub-pc-bin,
//!   grub-efi-amd64-bin, xorriso, mtools), for a CD or QEMU `-cdrom`. One image for both
//!   firmwares: an El Torito entry for BIOS (GRUB i386-pc) and one for UEFI (an EFI system
//!   image with GRUB x86_64-efi as BOOTX64.EFI); both load the kernel by multiboot2 with
//!   the same grub.cfg. GRUB EFI rather than an EFI entry of our own: the kernel already
//!   boots by multiboot2, which GRUB on UEFI speaks too (it exits boot services and hands
//!   over the memory map and the ACPI RSDP in multiboot2 tags), so one kernel entry serves
//!   every firmware and loader.
//! - Disk: the same image, which grub-mkrescue makes hybrid (an MBR with GRUB's boot code
//!   and a partition holding the EFI system image), padded with zeros to whole MiB, the
//!   last 256 KiB of which are the state area of the kernel's ACME client (`bareweb run`
//!   attaches the image as virtio-blk): `dd` to a USB stick, or a cloud VM's raw disk.
//!
//! The formats only: which files `bareweb build` writes, from its options, is
//! [`crate::image`].

use std::path::Path;
use std::process::Command;

/// Marker at the start of the kernel's site descriptor (crates/kernel/src/embedded.rs).
const MAGIC: &[u8; 16] = b"BAREWEB-SITE-v1\0";
/// Bytes of command line the descriptor holds.
const CMDLINE_MAX: usize = 496;
const PT_LOAD: u32 = 1;
const PAGE: u64 = 4096;

fn u16_at(b: &[u8], at: usize) -> Result<u16, String> {
    b.get(at..at + 2)
        .map(|s| u16::from_le_bytes([s[0], s[1]]))
        .ok_or_else(|| "kernel ELF truncated".to_string())
}

fn u64_at(b: &[u8], at: usize) -> Result<u64, String> {
    b.get(at..at + 8)
        .map(|s| u64::from_le_bytes(s.try_into().expect("8 bytes")))
        .ok_or_else(|| "kernel ELF truncated".to_string())
}

/// The kernel ELF with `site` appended as a PT_LOAD segment and the descriptor patched.
pub fn elf_with_site(kernel: &[u8], site: &[u8], cmdline: &str) -> Result<Vec<u8>, String> {
    if kernel.len() < 64 || &kernel[..4] != b"\x7fELF" || kernel[4] != 2 || kernel[5] != 1 {
        return Err("the built-in kernel is not a little-endian ELF64 file".into());
    }
    if cmdline.len() > CMDLINE_MAX {
        return Err(format!("command line longer than {CMDLINE_MAX} bytes"));
    }
    let phoff = u64_at(kernel, 32)? as usize;
    let phentsize = u16_at(kernel, 54)? as usize;
    let phnum = u16_at(kernel, 56)? as usize;
    if phentsize != 56 {
        return Err("unexpected ELF program header size".into());
    }
    let phdrs = kernel
        .get(phoff..phoff + phnum * 56)
        .ok_or("kernel ELF program headers out of the file")?;
    let mut end = 0u64;
    for i in 0..phnum {
        let p = &phdrs[i * 56..(i + 1) * 56];
        if u32::from_le_bytes(p[0..4].try_into().expect("4 bytes")) == PT_LOAD {
            end = end.max(u64_at(p, 24)? + u64_at(p, 40)?); // p_paddr + p_memsz
        }
    }
    let site_at = end.div_ceil(PAGE) * PAGE;
    if site_at + site.len() as u64 > 0xC000_0000 {
        return Err("site too large to load below 3 GiB".into());
    }
    let mut out = kernel.to_vec();
    let mark = out
        .windows(MAGIC.len())
        .position(|w| w == MAGIC)
        .ok_or("the built-in kernel has no site descriptor")?;
    let d = &mut out[mark..mark + 16 + 24 + CMDLINE_MAX];
    d[16..24].copy_from_slice(&site_at.to_le_bytes());
    d[24..32].copy_from_slice(&(site.len() as u64).to_le_bytes());
    d[32..40].copy_from_slice(&(cmdline.len() as u64).to_le_bytes());
    d[40..40 + cmdline.len()].copy_from_slice(cmdline.as_bytes());
    // The site, page-aligned in the file as in memory.
    out.resize(out.len().div_ceil(PAGE as usize) * PAGE as usize, 0);
    let site_off = out.len() as u64;
    out.extend_from_slice(site);
    // One more program header right after the existing ones, in the padding before the
    // first segment's bytes: GRUB reads program headers only from the start of the file
    // ("program header at a too high offset" otherwise).
    let first_data = (0..phnum)
        .map(|i| u64_at(&phdrs[i * 56..], 8))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .filter(|&o| o > 0)
        .min()
        .unwrap_or(0) as usize;
    let at = phoff + phnum * 56;
    if at + 56 > first_data || out[at..at + 56].iter().any(|&b| b != 0) {
        return Err("no room for one more program header in the kernel ELF".into());
    }
    let mut ph = Vec::with_capacity(56);
    ph.extend_from_slice(&PT_LOAD.to_le_bytes());
    ph.extend_from_slice(&4u32.to_le_bytes()); // PF_R
    ph.extend_from_slice(&site_off.to_le_bytes());
    ph.extend_from_slice(&site_at.to_le_bytes()); // p_vaddr
    ph.extend_from_slice(&site_at.to_le_bytes()); // p_paddr
    ph.extend_from_slice(&(site.len() as u64).to_le_bytes());
    ph.extend_from_slice(&(site.len() as u64).to_le_bytes());
    ph.extend_from_slice(&PAGE.to_le_bytes());
    out[at..at + 56].copy_from_slice(&ph);
    out[56..58].copy_from_slice(&((phnum + 1) as u16).to_le_bytes());
    Ok(out)
}

/// The GRUB platforms an image must boot on, and their Debian packages.
const GRUB_PLATFORMS: [(&str, &str); 2] = [
    ("i386-pc", "grub-pc-bin"),
    ("x86_64-efi", "grub-efi-amd64-bin"),
];

/// GRUB's menu. `gfxpayload=keep`: the kernel gets the screen mode as it is, UEFI's GOP
/// mode under GRUB EFI (no mode switch, the panel's own resolution), the VGA text screen
/// under GRUB i386-pc; either is the kernel's screen console (tag 8, crates/kernel fbcon).
const GRUB_CFG: &str = "\
set timeout=0
set default=0
serial --unit=0 --speed=115200
terminal_input serial console
terminal_output serial console
insmod all_video
set gfxpayload=keep
menuentry \"bareweb\" {
    multiboot2 /boot/bareweb.elf
    boot
}
";

pub fn write_iso(elf: &[u8], iso: &Path) -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("bareweb-iso-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let res = (|| {
        // The owner's alone: the ELF may hold a TLS key.
        std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
            .create(&dir)
            .map_err(|e| e.to_string())?;
        std::fs::create_dir_all(dir.join("boot/grub")).map_err(|e| e.to_string())?;
        std::fs::write(dir.join("boot/bareweb.elf"), elf).map_err(|e| e.to_string())?;
        std::fs::write(dir.join("boot/grub/grub.cfg"), GRUB_CFG).map_err(|e| e.to_string())?;
        // grub-mkrescue puts in every platform it finds installed: insist on both, or an
        // image that silently fails on UEFI PCs would be written.
        for (platform, package) in GRUB_PLATFORMS {
            if !Path::new("/usr/lib/grub")
                .join(platform)
                .join("modinfo.sh")
                .exists()
            {
                return Err(format!(
                    "GRUB for {platform} is not installed (/usr/lib/grub/{platform}): sudo apt-get install {package}"
                ));
            }
        }
        let out = Command::new("grub-mkrescue")
            .arg("-o")
            .arg(iso)
            .arg(&dir)
            .output()
            .map_err(|e| {
                format!("cannot run grub-mkrescue ({e}): sudo apt-get install grub-pc-bin grub-efi-amd64-bin grub-common xorriso mtools")
            })?;
        if !out.status.success() {
            return Err(format!(
                "grub-mkrescue failed: {} (needs grub-pc-bin, grub-efi-amd64-bin, xorriso, mtools)",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&dir);
    res
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel_image::KERNEL;

    #[test]
    fn elf_gets_a_site_segment_and_a_patched_descriptor() {
        let site = vec![0xAB; 10_000];
        let out = elf_with_site(KERNEL, &site, "ip=10.0.0.2/24 gw=none").unwrap();
        let phoff = u64_at(&out, 32).unwrap() as usize;
        let phnum = u16_at(&out, 56).unwrap() as usize;
        assert_eq!(phnum, u16_at(KERNEL, 56).unwrap() as usize + 1);
        let last = &out[phoff + (phnum - 1) * 56..phoff + phnum * 56];
        let off = u64_at(last, 8).unwrap() as usize;
        let paddr = u64_at(last, 24).unwrap();
        assert_eq!(u64_at(last, 32).unwrap(), 10_000);
        assert_eq!(&out[off..off + 10_000], &site[..]);
        assert_eq!(paddr % PAGE, 0);
        // Past every other loadable byte.
        for i in 0..phnum - 1 {
            let p = &out[phoff + i * 56..phoff + (i + 1) * 56];
            if u32::from_le_bytes(p[0..4].try_into().unwrap()) == PT_LOAD {
                assert!(u64_at(p, 24).unwrap() + u64_at(p, 40).unwrap() <= paddr);
            }
        }
        let m = out.windows(16).position(|w| w == MAGIC).unwrap();
        assert_eq!(u64_at(&out, m + 16).unwrap(), paddr);
        assert_eq!(u64_at(&out, m + 24).unwrap(), 10_000);
        assert_eq!(u64_at(&out, m + 32).unwrap(), 22);
        assert_eq!(&out[m + 40..m + 62], b"ip=10.0.0.2/24 gw=none");
    }

    #[test]
    fn rejects_what_is_not_an_elf_and_overlong_command_lines() {
        assert!(elf_with_site(
            b"not an elf at all, not an elf at all, not an elf at all, not an elf",
            b"x",
            ""
        )
        .is_err());
        assert!(elf_with_site(KERNEL, b"x", &"a".repeat(CMDLINE_MAX + 1)).is_err());
    }
}
