//! Unpacking a bundle archive (gzip-compressed tar) into memory, bounded:
//! the archive's size, the unpacked size (a decompression bomb stops at the
//! bound), the number of entries and each file's size. Only regular files
//! and directories are accepted; a link, a device or a path leaving the
//! bundle (`..`, a drive prefix) refuses the whole archive.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Component, Path};

use flate2::read::GzDecoder;

/// How much of a bundle is accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BundleLimits {
    /// Largest archive (compressed), in bytes; also bounds a download.
    /// Default 16 MiB.
    pub max_archive_bytes: usize,
    /// Largest total of the unpacked files, in bytes. Default 64 MiB.
    pub max_unpacked_bytes: usize,
    /// Most entries (files and directories). Default 10 000.
    pub max_entries: usize,
    /// Largest single file, in bytes. Default 16 MiB.
    pub max_file_bytes: usize,
}

impl Default for BundleLimits {
    fn default() -> Self {
        Self {
            max_archive_bytes: 16 << 20,
            max_unpacked_bytes: 64 << 20,
            max_entries: 10_000,
            max_file_bytes: 16 << 20,
        }
    }
}

/// The files of an archive by their path in the bundle (`/`-separated, no
/// leading `/` or `./`).
pub(crate) type Files = BTreeMap<String, Vec<u8>>;

/// Unpacks `archive`, or says why it is refused.
pub(crate) fn unpack(archive: &[u8], limits: &BundleLimits) -> Result<Files, String> {
    if archive.len() > limits.max_archive_bytes {
        return Err(format!(
            "the archive is {} bytes, over the bound of {}",
            archive.len(),
            limits.max_archive_bytes
        ));
    }
    // The files' bound plus their tar headers (512 bytes each, and the
    // end marker): decompression stops there, however the archive claims.
    let headers = limits.max_entries.saturating_add(4).saturating_mul(1024);
    let bound =
        u64::try_from(limits.max_unpacked_bytes.saturating_add(headers)).unwrap_or(u64::MAX);
    let decoder = GzDecoder::new(archive).take(bound);
    let mut tar = tar::Archive::new(decoder);
    let mut files = Files::new();
    let mut entries = 0usize;
    let mut total = 0usize;
    let iter = tar
        .entries()
        .map_err(|e| format!("not a gzip-compressed tar archive: {e}"))?;
    for entry in iter {
        let mut entry = entry.map_err(|e| unreadable(&e, total, limits))?;
        entries += 1;
        if entries > limits.max_entries {
            return Err(format!("more than {} entries", limits.max_entries));
        }
        let raw = entry
            .path()
            .map_err(|e| format!("an entry's path is unreadable: {e}"))?
            .into_owned();
        let kind = entry.header().entry_type();
        if kind.is_dir() {
            normalize(&raw)?;
            continue;
        }
        if !(kind.is_file() || kind == tar::EntryType::Continuous) {
            return Err(format!(
                "{}: only files and directories are allowed (a link or special file is refused)",
                raw.display()
            ));
        }
        let name = normalize(&raw)?;
        let size = usize::try_from(entry.size()).unwrap_or(usize::MAX);
        if size > limits.max_file_bytes {
            return Err(format!(
                "{name}: {size} bytes, over the bound of {} per file",
                limits.max_file_bytes
            ));
        }
        total = total.saturating_add(size);
        if total > limits.max_unpacked_bytes {
            return Err(format!(
                "the unpacked files exceed {} bytes",
                limits.max_unpacked_bytes
            ));
        }
        let mut bytes = Vec::with_capacity(size);
        entry
            .read_to_end(&mut bytes)
            .map_err(|e| unreadable(&e, total, limits))?;
        if bytes.len() != size {
            return Err(format!("{name}: truncated"));
        }
        if files.insert(name.clone(), bytes).is_some() {
            return Err(format!("{name}: appears twice"));
        }
    }
    Ok(files)
}

fn unreadable(e: &std::io::Error, total: usize, limits: &BundleLimits) -> String {
    format!(
        "the archive is damaged or unpacks past its bound ({total} of at most {} bytes read): {e}",
        limits.max_unpacked_bytes
    )
}

/// `raw` as a bundle path: no leading `/` or `./`, normal components only.
fn normalize(raw: &Path) -> Result<String, String> {
    let mut parts = Vec::new();
    for component in raw.components() {
        match component {
            Component::RootDir | Component::CurDir => {}
            Component::Normal(part) => {
                let part = part
                    .to_str()
                    .ok_or_else(|| format!("{}: not UTF-8", raw.display()))?;
                parts.push(part);
            }
            Component::ParentDir | Component::Prefix(_) => {
                return Err(format!(
                    "{}: a path leaving the bundle is refused",
                    raw.display()
                ));
            }
        }
    }
    if parts.len() > 64 {
        return Err(format!("{}: nested too deep", raw.display()));
    }
    Ok(parts.join("/"))
}
