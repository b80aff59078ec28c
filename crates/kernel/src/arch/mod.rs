//! Architecture code, re-exported so callers write `crate::arch::…`.

pub mod x86_64;
pub use self::x86_64::*;
