//! Images with virtual hosts (std only): several sites, each built alone as an image of
//! one site, laid out in one image with a site table and a names table (the host names,
//! sorted for a binary search per request) and the site answering unknown hosts.

use super::build::{build_with, invalid, BuildError, Spec};
use super::format;
use super::hosts::is_site_name;
use super::Site;

/// One site of an image with virtual hosts.
#[derive(Debug, Clone, Default)]
pub struct SiteImage {
    /// Its host names: lowercase, without port or trailing dot ([`super::is_site_name`]).
    pub names: Vec<String>,
    /// Its image, as [`super::build`] made it (one site).
    pub image: Vec<u8>,
    /// Whether it answers hosts no site names, and requests without `Host`.
    pub default: bool,
}

/// The sites handed to the writer: their images, the names sorted with their site's
/// index, the default site's index ([`format::NO_INDEX`]: none).
pub(super) struct Sites<'s> {
    pub images: Vec<&'s [u8]>,
    pub names: Vec<(String, u32)>,
    pub default: u32,
}

impl Default for Sites<'_> {
    fn default() -> Self {
        Sites {
            images: Vec::new(),
            names: Vec::new(),
            default: format::NO_INDEX,
        }
    }
}

/// Lays out `sites` as one image whose own header carries `server`'s settings for the
/// server's own pages (stats, metrics, health check; its files, if any, answer no host).
/// Refuses no site, a site without a name, a name that is not a lowercase host name or is
/// given twice, two defaults, and a site image that does not load or holds sites itself.
pub fn build_sites(server: &Spec, sites: &[SiteImage]) -> Result<Vec<u8>, BuildError> {
    if sites.is_empty() {
        return invalid("virtual hosts without any site".into());
    }
    let mut names: Vec<(String, u32)> = Vec::new();
    let mut default = format::NO_INDEX;
    for (i, s) in sites.iter().enumerate() {
        let i = i as u32;
        if s.names.is_empty() {
            return invalid(format!("site {i} has no host name"));
        }
        for n in &s.names {
            if !is_site_name(n.as_bytes()) {
                return invalid(format!(
                    "host {n:?}: not a lowercase host name without port or trailing dot"
                ));
            }
            names.push((n.clone(), i));
        }
        if s.default {
            if default != format::NO_INDEX {
                return invalid(format!("sites {default} and {i} are both the default"));
            }
            default = i;
        }
        match Site::load(&s.image) {
            Ok(site) if site.site_count() == 0 => {}
            Ok(_) => return invalid(format!("site {i} holds sites itself")),
            Err(e) => return invalid(format!("site {i}: {e}")),
        }
    }
    names.sort();
    if let Some(w) = names.windows(2).find(|w| w[0].0 == w[1].0) {
        return invalid(format!(
            "host {:?} names sites {} and {}",
            w[0].0, w[0].1, w[1].1
        ));
    }
    let images = sites.iter().map(|s| s.image.as_slice()).collect();
    build_with(
        server,
        &Sites {
            images,
            names,
            default,
        },
    )
}
