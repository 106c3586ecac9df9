//! `--index-url`: find the locked files on a mirror or local index that
//! speaks the simple repository API (PEP 691 JSON, else PEP 503 HTML).
//!
//! The lock stays the authority: the mirror only supplies URLs. A mirror that
//! advertises a different sha256 for a locked file name is refused before any
//! byte is downloaded, because it is serving some other file under that name.

use anyhow::{bail, Context, Result};
use reqwest::blocking::Client;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use reqwest::Url;
use serde::Deserialize;

use super::{FetchOptions, PinnedWheel};
use greta_vocab::normalize_name;
use greta_vocab::url_secrets::redact;

/// Largest project page read (download.pytorch.org's torch page, thousands
/// of files, is a few MiB).
const MAX_PAGE: u64 = 64 << 20;

const ACCEPT_SIMPLE: &str = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1";

/// One file listed on a project page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexFile {
    pub filename: String,
    pub url: String,
    pub sha256: Option<String>,
}

#[derive(Deserialize)]
struct JsonPage {
    files: Vec<JsonFile>,
}

#[derive(Deserialize)]
struct JsonFile {
    filename: String,
    url: String,
    #[serde(default)]
    hashes: std::collections::BTreeMap<String, String>,
}

/// Rewrites every artifact's URL to the one `index` lists for its file name.
pub fn relocate(
    client: &Client,
    index: &str,
    items: &mut [PinnedWheel],
    opts: &FetchOptions,
) -> Result<()> {
    let base = Url::parse(&format!("{}/", index.trim_end_matches('/')))
        .with_context(|| format!("--index-url {:?} is not a URL", redact(index)))?;
    let shown = redact(base.as_str()).into_owned();
    let mut pages: std::collections::BTreeMap<String, Vec<IndexFile>> = Default::default();
    for a in items.iter_mut() {
        let project = normalize_name(&a.name);
        if !pages.contains_key(&project) {
            let files = project_page(client, &base, &project, opts)?;
            pages.insert(project.clone(), files);
        }
        let files = &pages[&project];
        let Some(f) = files.iter().find(|f| f.filename == a.filename) else {
            bail!(
                "index {shown} lists no file {} for project {project} ({} files listed)",
                a.filename,
                files.len()
            );
        };
        if let Some(h) = &f.sha256 {
            if h.parse::<greta_vocab::Sha256>().ok() != Some(a.sha256) {
                bail!(
                    "index {shown} lists {} with sha256 {h}, but the lock pins {}: the index serves a different file under that name; refusing it",
                    a.filename,
                    a.sha256
                );
            }
        }
        a.url = f.url.clone();
    }
    Ok(())
}

/// A project page, retried as files are (a 5xx, 429 or a dropped
/// connection once ended the run at the first try), read capped.
fn project_page(
    client: &Client,
    base: &Url,
    project: &str,
    opts: &FetchOptions,
) -> Result<Vec<IndexFile>> {
    let url = base.join(&format!("{project}/"))?;
    let shown = redact(url.as_str()).into_owned();
    let mut last = String::new();
    let mut unreachable = false;
    for attempt in 0..opts.attempts.max(1) {
        if attempt > 0 {
            let back = opts.backoff.saturating_mul(1 << (attempt - 1).min(6));
            std::thread::sleep(back.min(std::time::Duration::from_secs(10)));
        }
        match page_once(client, &url) {
            Ok(files) => return Ok(files),
            Err(Page::Retry(why)) => {
                tracing::info!("{shown}: {why}; retrying");
                last = why;
                unreachable = false;
            }
            Err(Page::Unreachable(why)) => {
                tracing::info!("{shown}: {why}; retrying");
                last = why;
                unreachable = true;
            }
            Err(Page::Fatal(e)) => return Err(e),
        }
    }
    if unreachable {
        bail!(
            "{shown}: {last} ({} attempts): the index cannot be reached and nothing was downloaded; check the URL, or {}",
            opts.attempts.max(1),
            super::reach::BUNDLE
        )
    }
    bail!("{shown}: {last} ({} attempts)", opts.attempts.max(1))
}

enum Page {
    Retry(String),
    /// No answer at all (refused, no route, DNS, timeout).
    Unreachable(String),
    Fatal(anyhow::Error),
}

fn page_once(client: &Client, url: &Url) -> std::result::Result<Vec<IndexFile>, Page> {
    use std::io::Read;
    let shown = redact(url.as_str());
    let resp = client
        .get(url.clone())
        .header(ACCEPT, ACCEPT_SIMPLE)
        .send()
        .map_err(|e| Page::Unreachable(super::http::describe(&e)))?;
    let status = resp.status();
    if status.is_server_error() || status.as_u16() == 429 {
        return Err(Page::Retry(format!("HTTP {status}")));
    }
    if !status.is_success() {
        return Err(Page::Fatal(anyhow::anyhow!("{shown}: HTTP {status}")));
    }
    let ctype = resp
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let final_url = resp.url().clone();
    let mut raw = Vec::new();
    resp.take(MAX_PAGE + 1)
        .read_to_end(&mut raw)
        .map_err(|e| Page::Retry(format!("reading the page: {e}")))?;
    if raw.len() as u64 > MAX_PAGE {
        return Err(Page::Fatal(anyhow::anyhow!(
            "{shown}: page larger than {MAX_PAGE} bytes"
        )));
    }
    let text = String::from_utf8_lossy(&raw);
    if ctype.contains("json") {
        parse_json(&text, &final_url)
            .with_context(|| format!("{shown}: bad PEP 691 JSON"))
            .map_err(Page::Fatal)
    } else {
        Ok(parse_html(&text, &final_url))
    }
}

pub fn parse_json(text: &str, page: &Url) -> Result<Vec<IndexFile>> {
    let p: JsonPage = serde_json::from_str(text)?;
    Ok(p.files
        .into_iter()
        .map(|f| IndexFile {
            url: page.join(&f.url).map(|u| u.to_string()).unwrap_or(f.url),
            sha256: f.hashes.get("sha256").map(|s| s.to_ascii_lowercase()),
            filename: f.filename,
        })
        .collect())
}

/// PEP 503: `<a href="URL#sha256=HEX">FILENAME</a>`; tolerant of attribute
/// order and quoting, since mirrors differ.
pub fn parse_html(text: &str, page: &Url) -> Vec<IndexFile> {
    let mut out = Vec::new();
    let lower = text.to_ascii_lowercase();
    let mut pos = 0;
    while let Some(start) = lower[pos..].find("<a ").map(|i| pos + i) {
        let Some(tag_end) = lower[start..].find('>').map(|i| start + i) else {
            break;
        };
        let Some(close) = lower[tag_end..].find("</a>").map(|i| tag_end + i) else {
            break;
        };
        let tag = &text[start..tag_end];
        let name = html_unescape(text[tag_end + 1..close].trim());
        pos = close + 4;
        let Some(href) = attr(tag, "href") else {
            continue;
        };
        let href = html_unescape(&href);
        let (link, frag) = match href.split_once('#') {
            Some((l, f)) => (l.to_string(), Some(f.to_string())),
            None => (href.clone(), None),
        };
        let sha256 = frag.and_then(|f| f.strip_prefix("sha256=").map(|h| h.to_ascii_lowercase()));
        let url = page.join(&link).map(|u| u.to_string()).unwrap_or(link);
        out.push(IndexFile {
            filename: name,
            url,
            sha256,
        });
    }
    out
}

fn attr(tag: &str, name: &str) -> Option<String> {
    let lower = tag.to_ascii_lowercase();
    let mut from = 0;
    while let Some(i) = lower[from..].find(name).map(|i| from + i) {
        from = i + name.len();
        let before_ok = i > 0 && lower.as_bytes()[i - 1].is_ascii_whitespace();
        let rest = tag[from..].trim_start();
        if !before_ok || !rest.starts_with('=') {
            continue;
        }
        let rest = rest[1..].trim_start();
        let (q, body) = match rest.chars().next()? {
            c @ ('"' | '\'') => (Some(c), &rest[1..]),
            _ => (None, rest),
        };
        let end = match q {
            Some(q) => body.find(q)?,
            None => body
                .find(|c: char| c.is_ascii_whitespace())
                .unwrap_or(body.len()),
        };
        return Some(body[..end].to_string());
    }
    None
}

fn html_unescape(s: &str) -> String {
    s.replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_html_links_relative_and_hashed() {
        let page = Url::parse("http://127.0.0.1:9/simple/torch/").unwrap();
        let html = r#"<html><body><a data-x='1' href="../../files/torch-2.0-py3-none-any.whl#sha256=ABCD">torch-2.0-py3-none-any.whl</a>
            <A HREF=https://h/x.whl>x.whl</A></body></html>"#;
        let f = parse_html(html, &page);
        assert_eq!(f.len(), 2);
        assert_eq!(
            f[0].url,
            "http://127.0.0.1:9/files/torch-2.0-py3-none-any.whl"
        );
        assert_eq!(f[0].sha256.as_deref(), Some("abcd"));
        assert_eq!(f[1].filename, "x.whl");
        assert_eq!(f[1].sha256, None);
    }

    #[test]
    fn parses_json_page() {
        let page = Url::parse("http://127.0.0.1:9/simple/jax/").unwrap();
        let j = r#"{"meta":{"api-version":"1.1"},"name":"jax","files":[{"filename":"jax-1-py3-none-any.whl","url":"/f/jax-1-py3-none-any.whl","hashes":{"sha256":"AA"}}]}"#;
        let f = parse_json(j, &page).unwrap();
        assert_eq!(f[0].url, "http://127.0.0.1:9/f/jax-1-py3-none-any.whl");
        assert_eq!(f[0].sha256.as_deref(), Some("aa"));
    }
}
