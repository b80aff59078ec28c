//! Options of the bare-machine kernel alone (idle and offloads), shared by `run` and the bootable
//! images of `build`: how an idle core rests, and the NIC's offloads. Like `ServerOpts`,
//! every field is optional so an image bakes only what was given, and each becomes the
//! kernel's own command-line word (checked with the kernel's parser).

/// `--idle-poll-us`, `--poll-always`, `--no-offload`.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct KernelOpts {
    /// Microseconds an idle core keeps polling before it halts until its NIC, its timer
    /// or another core wakes it (adaptive, up to this long), 0 to 1000000 [default: 200]
    #[arg(long, value_name = "US", value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub idle_poll_us: Option<u64>,
    /// Never halt: every core polls all the time, as in the papers (a host CPU per core
    /// even with no traffic).
    #[arg(long, conflicts_with = "idle_poll_us")]
    pub poll_always: bool,
    /// Do not use the NIC's transmit offloads (virtio-net checksum and TCP segmentation,
    /// which QEMU offers with a TAP): every segment its own frame.
    #[arg(long)]
    pub no_offload: bool,
}

impl KernelOpts {
    /// Whether any option was given.
    pub fn any(&self) -> bool {
        self.idle_poll_us.is_some() || self.poll_always || self.no_offload
    }

    /// The kernel command-line words for the options given.
    pub fn kernel_words(&self) -> Vec<String> {
        let mut w = Vec::new();
        if let Some(us) = self.idle_poll_us {
            w.push(format!("idle_poll_us={us}"));
        }
        if self.poll_always {
            w.push("poll=always".into());
        }
        if self.no_offload {
            w.push("offload=off".into());
        }
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::opts::kernel_settings;

    #[test]
    fn words_are_the_kernels_own() {
        let o = KernelOpts {
            idle_poll_us: Some(50),
            poll_always: false,
            no_offload: true,
        };
        let s = kernel_settings(&o.kernel_words().join(" ")).unwrap();
        assert_eq!(
            (s.idle_poll_us, s.poll_always, s.offload),
            (50, false, false)
        );
        let always = KernelOpts {
            poll_always: true,
            ..KernelOpts::default()
        };
        assert!(
            kernel_settings(&always.kernel_words().join(" "))
                .unwrap()
                .poll_always
        );
        assert!(KernelOpts::default().kernel_words().is_empty());
    }
}
