//! Credentials inside URLs: a user and password (`https://user:pw@host/`)
//! or a secret in the query (`?token=...`, a signed URL's
//! `X-Amz-Signature=...`). A lockfile's wheel URLs and the matrix's index
//! URLs are printed (`greta lock show`, its `--json`, error messages) and
//! shared; whatever greta shows of a URL goes through [`redact`], which
//! keeps where it points and hides the secret: `https://***@host/...`,
//! `?token=***`. `lock check` refuses a lockfile URL that [`secrets`] finds
//! anything in.
//!
//! The URL is read as text, not parsed: an unparsable one is printed too
//! (in the error that says so), and the authority is found as WHATWG
//! parsers find it for `https:` (any run of `/` or `\` after the scheme, up
//! to the next `/`, `\`, `?` or `#`), so a credential reqwest would send is
//! one this hides.

use std::borrow::Cow;
use std::ops::Range;

/// What stands in for a hidden credential.
pub const HIDDEN: &str = "***";

/// The secrets `url` carries, each as what it is (for `lock check`):
/// `"a user name or password"`, `"query parameter `token`"`.
pub fn secrets(url: &str) -> Vec<String> {
    spans(url)
        .into_iter()
        .map(|(_, what)| match what {
            Secret::UserInfo => "a user name or password".to_string(),
            Secret::Query(k) => format!("query parameter `{k}`"),
        })
        .collect()
}

/// `url` with every secret [`secrets`] finds replaced by `***`.
pub fn redact(url: &str) -> Cow<'_, str> {
    let found = spans(url);
    if found.is_empty() {
        return Cow::Borrowed(url);
    }
    let mut out = String::with_capacity(url.len());
    let mut at = 0;
    for (r, _) in found {
        out.push_str(&url[at..r.start]);
        out.push_str(HIDDEN);
        at = r.end;
    }
    out.push_str(&url[at..]);
    Cow::Owned(out)
}

/// For `#[serde(serialize_with)]`: a URL field serialised redacted.
pub fn serialize_redacted<S: serde::Serializer>(url: &str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&redact(url))
}

/// As [`serialize_redacted`], for an optional URL.
pub fn serialize_redacted_opt<S: serde::Serializer>(
    url: &Option<String>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match url {
        Some(u) => s.serialize_some(&*redact(u)),
        None => s.serialize_none(),
    }
}

/// As [`serialize_redacted`], for a list of URLs.
pub fn serialize_redacted_list<S: serde::Serializer>(
    urls: &[String],
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_seq(urls.iter().map(|u| redact(u)))
}

enum Secret {
    UserInfo,
    Query(String),
}

/// The byte ranges of `url`'s secrets, in order.
fn spans(url: &str) -> Vec<(Range<usize>, Secret)> {
    let mut out = Vec::new();
    let end_of_query = url.find('#').unwrap_or(url.len());
    let query_start = url[..end_of_query].find('?').map(|i| i + 1);
    let before_query = query_start.map_or(end_of_query, |q| q - 1);
    if let Some(auth) = authority(&url[..before_query]) {
        // The last '@' ends the user information (a password may hold '@').
        if let Some(at) = url[auth.clone()].rfind('@') {
            if at > 0 {
                out.push((auth.start..auth.start + at, Secret::UserInfo));
            }
        }
    }
    if let Some(q) = query_start {
        let mut start = q;
        for pair in url[q..end_of_query].split('&') {
            if let Some((key, value)) = pair.split_once('=') {
                if !value.is_empty() && secret_key(key) {
                    let v = start + key.len() + 1;
                    out.push((v..v + value.len(), Secret::Query(key.to_string())));
                }
            }
            start += pair.len() + 1;
        }
    }
    out
}

/// The authority of `url` (between the scheme's slashes and the path),
/// where it has a scheme.
fn authority(url: &str) -> Option<Range<usize>> {
    let colon = url.find(':')?;
    let scheme = &url[..colon];
    let is_scheme = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    if !is_scheme {
        return None;
    }
    let rest = &url[colon + 1..];
    let slashes = rest.len() - rest.trim_start_matches(['/', '\\']).len();
    // `mailto:user@host` and the like have no authority.
    if slashes == 0
        && !matches!(
            scheme.to_ascii_lowercase().as_str(),
            "http" | "https" | "ftp" | "ws" | "wss"
        )
    {
        return None;
    }
    let start = colon + 1 + slashes;
    let len = url[start..].find(['/', '\\']).unwrap_or(url.len() - start);
    Some(start..start + len)
}

/// Whether a query key names a secret: one of its words (split at `_`,
/// `-`, `.`) is a word for one, or it contains "token", "secret",
/// "passw", "signature" or "credential" (`X-Amz-Security-Token`,
/// `access_token`, `sig`, `api_key`; not `author`, `version`).
fn secret_key(key: &str) -> bool {
    let key = percent_decoded(key).to_ascii_lowercase();
    const PARTS: &[&str] = &["token", "secret", "passw", "signature", "credential"];
    const WORDS: &[&str] = &[
        "key",
        "apikey",
        "sig",
        "pwd",
        "pass",
        "pw",
        "auth",
        "authorization",
        "session",
        "sid",
    ];
    PARTS.iter().any(|p| key.contains(p)) || key.split(['_', '-', '.']).any(|w| WORDS.contains(&w))
}

fn percent_decoded(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_and_password_are_hidden() {
        let cases = [
            (
                "https://user:pw@example.com/whl/x-1-py3-none-any.whl",
                "https://***@example.com/whl/x-1-py3-none-any.whl",
            ),
            ("https://TOKEN@host/a", "https://***@host/a"),
            ("https://u:p@ss@host", "https://***@host"),
            // WHATWG parsers read these as an authority for https; so does this.
            ("https:/u:p@host/a", "https:/***@host/a"),
            ("https:\\\\u:p@host\\a", "https:\\\\***@host\\a"),
            ("HTTPS://u:p@host?x=1", "HTTPS://***@host?x=1"),
            // An '@' in the path or query is no user information.
            ("https://host/a@b", "https://host/a@b"),
            ("https://host/a?next=u@h", "https://host/a?next=u@h"),
            ("https://@host/a", "https://@host/a"),
            ("mailto:someone@example.com", "mailto:someone@example.com"),
            ("not a url", "not a url"),
            ("", ""),
        ];
        for (url, want) in cases {
            assert_eq!(redact(url), want, "{url}");
            assert_eq!(
                secrets(url).is_empty(),
                url == want,
                "{url}: {:?}",
                secrets(url)
            );
        }
        assert_eq!(
            secrets("https://user:pw@example.com/"),
            ["a user name or password"]
        );
    }

    #[test]
    fn secret_query_values_are_hidden() {
        let cases = [
            ("https://h/x.whl?token=abc", "https://h/x.whl?token=***"),
            (
                "https://h/x.whl?a=1&access_token=abc&b=2#sha256=00",
                "https://h/x.whl?a=1&access_token=***&b=2#sha256=00",
            ),
            (
                "https://b.s3.amazonaws.com/x.whl?X-Amz-Credential=AK%2F1&X-Amz-Signature=ff&X-Amz-Security-Token=tt&X-Amz-Expires=60",
                "https://b.s3.amazonaws.com/x.whl?X-Amz-Credential=***&X-Amz-Signature=***&X-Amz-Security-Token=***&X-Amz-Expires=60",
            ),
            ("https://h/x?sv=2020&sig=abc%3D", "https://h/x?sv=2020&sig=***"),
            ("https://h/x?api_key=k&apikey=k2&key=k3", "https://h/x?api_key=***&apikey=***&key=***"),
            ("https://h/x?password=p&passwd=q&pw=r", "https://h/x?password=***&passwd=***&pw=***"),
            // Percent-encoded key names are read decoded.
            ("https://h/x?%74oken=abc", "https://h/x?%74oken=***"),
            // Not secrets: ordinary keys, empty values, a fragment.
            ("https://h/x?author=a&version=1&keyword=k", "https://h/x?author=a&version=1&keyword=k"),
            ("https://h/x?token=", "https://h/x?token="),
            ("https://h/x#token=abc", "https://h/x#token=abc"),
        ];
        for (url, want) in cases {
            assert_eq!(redact(url), want, "{url}");
        }
        assert_eq!(
            secrets("https://u:p@h/x?token=a&Sig=b"),
            [
                "a user name or password",
                "query parameter `token`",
                "query parameter `Sig`"
            ]
        );
        assert_eq!(
            redact("https://u:p@h/x?token=a&Sig=b"),
            "https://***@h/x?token=***&Sig=***"
        );
    }

    #[test]
    fn serialised_urls_are_redacted() {
        #[derive(serde::Serialize)]
        struct W {
            #[serde(serialize_with = "serialize_redacted")]
            url: String,
            #[serde(serialize_with = "serialize_redacted_opt")]
            opt: Option<String>,
            #[serde(serialize_with = "serialize_redacted_list")]
            list: Vec<String>,
        }
        let w = W {
            url: "https://u:p@h/a".into(),
            opt: Some("https://h/a?token=t".into()),
            list: vec!["https://u@h/".into(), "https://h/".into()],
        };
        assert_eq!(
            serde_json::to_string(&w).unwrap(),
            r#"{"url":"https://***@h/a","opt":"https://h/a?token=***","list":["https://***@h/","https://h/"]}"#
        );
    }
}
