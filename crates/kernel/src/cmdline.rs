//! The kernel command line: the shared server options declared once in bareweb-settings'
//! table (`ip= port= tcbs= …`, the same as `bareweb serve`'s `--ip --port --tcbs …`) and
//! the bare machine's own words (`cores= apic= poll= idle_poll_us= offload=
//! virtio_mmio.device= crash=` and the bare UDP client's), parsed by
//! [`bareweb_settings::kernel`], which `bareweb run` and `bareweb build` use too to refuse
//! a bad word before boot. See that module for every word.

pub use bareweb_settings::kernel::*;
