//! HTML text: escaping, number formats, and the page's shell (inline CSS
//! and JS; nothing loaded from elsewhere).

use std::fmt::Write;

/// Longest text of a result drawn where it may repeat (a gate id, a
/// device name, a hover title) and kept by a history, in bytes: a real one
/// is under 100. Longer text is cut, marked with an ellipsis, so that a
/// megabyte name drawn in every cell of a row, or in each of a gate's
/// drawings, cannot make a page grow faster than its file.
pub const TEXT_CAP: usize = 256;

/// Longest piece of a hover text (a gate's reason, where a floor or
/// ceiling came from): prose, longer than a label, but drawn in each of a
/// gate's drawings. The reason is whole in its table cell.
pub const HOVER_CAP: usize = 1024;

/// `s`, or its first [`TEXT_CAP`] bytes (at a character boundary) and `…`.
pub fn cut(s: &str) -> std::borrow::Cow<'_, str> {
    cut_to(s, TEXT_CAP)
}

/// `s`, or its first `cap` bytes (at a character boundary) and `…`.
pub fn cut_to(s: &str, cap: usize) -> std::borrow::Cow<'_, str> {
    if s.len() <= cap {
        return s.into();
    }
    let mut end = cap;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end]).into()
}

/// A label: text of a result drawn where it may repeat, cut to
/// [`TEXT_CAP`] and escaped. Text drawn once (a reason in its table cell,
/// a note) is drawn whole with [`esc`].
pub fn label(s: &str) -> String {
    esc(&cut(s))
}

/// Text or an attribute value, escaped.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// Past this size a number is drawn in scientific form. A fixed-point form
/// of 1e308 has 309 digits, and std writes each such digit with its exact
/// (bignum) algorithm: a damaged result of a thousand devices with huge
/// rates took most of a second to draw, nearly all of it in formatting.
const SCIENTIFIC_FROM: f64 = 1e9;

/// A rate for people: 4 significant digits (`1234`, `12.35`, `0.001234`;
/// `1.235e12` from [`SCIENTIFIC_FROM`] up).
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    if a >= SCIENTIFIC_FROM {
        format!("{v:.3e}")
    } else if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 0.001 {
        let digits = 3 - a.log10().floor() as i32;
        format!("{v:.*}", digits.max(0) as usize)
    } else {
        format!("{v:.3e}")
    }
}

/// A ratio or fraction: `0.25x` (`1.23e12` from [`SCIENTIFIC_FROM`] up).
pub fn ratio(v: f64) -> String {
    if v.abs() >= SCIENTIFIC_FROM {
        format!("{v:.2e}")
    } else {
        format!("{v:.2}")
    }
}

/// A fraction as a whole percentage: `38%` (see [`ratio`] for huge ones).
pub fn percent(f: f64) -> String {
    let p = f * 100.0;
    if p.abs() >= SCIENTIFIC_FROM {
        format!("{p:.2e}%")
    } else {
        format!("{p:.0}%")
    }
}

/// The exact value (shortest round-trip form) for `data-*` attributes.
pub fn exact(v: f64) -> String {
    format!("{v}")
}

/// Verdict colours, shared by the bars, the grid and the legend (the
/// tests sample the failing one in screenshots).
pub const FAIL: &str = "#d73027";
pub const PASS: &str = "#1a9850";
pub const SKIP: &str = "#bdbdbd";

const CSS: &str = r#"
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:16px 24px;color:#222;max-width:1200px}
h1{font-size:20px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 6px;border-bottom:1px solid #ddd}
h3{font-size:15px;margin:18px 0 4px}
.meta{color:#555;font-size:13px}
.badge{display:inline-block;padding:1px 8px;border-radius:9px;color:#fff;font-weight:600;font-size:12px}
.b-pass{background:PASSC}.b-fail{background:FAILC}.b-undecided{background:#777}
table{border-collapse:collapse;font-size:13px}
td,th{padding:2px 8px;text-align:left;vertical-align:top}
th{border-bottom:1px solid #bbb;font-weight:600}
tr.g-fail td{background:#fdecea}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.grid td.cell{width:86px;height:34px;text-align:center;font-variant-numeric:tabular-nums;border:2px solid #fff;padding:0 2px;line-height:1.1}
table.grid td.cell small{display:block;color:#333;font-size:11px}
.r-fail{background:FAILC;color:#fff}.r-fail small{color:#fff!important}
.r-low{background:#fdae61}.r-mid{background:#d9ef8b}.r-high{background:#91cf60}.r-none{background:#eee;color:#777}
.legend span{display:inline-block;padding:1px 8px;margin-right:4px;font-size:12px}
.warn{background:#fff3cd;border:1px solid #e0c060;padding:4px 8px}
svg text{font-family:"DejaVu Sans",sans-serif}
.reason{color:#a00}tr.g-pass .reason{color:inherit}
details{margin:4px 0 10px}
table.health{margin:8px 0}table.health caption{text-align:left;font-weight:600;padding:2px 0}
"#;

/// Minimal script: "failing only" filters; `data-ready` says it ran.
const JS: &str = r#"
(function(){
  var box=document.getElementById('failonly');
  if(box){box.addEventListener('change',function(){
    var rows=document.querySelectorAll('tr.g-pass,tr.g-skip');
    for(var i=0;i<rows.length;i++){rows[i].style.display=box.checked?'none':'';}
  });}
  document.documentElement.setAttribute('data-ready','1');
})();
"#;

/// The page around `body`, whose parts are written in order (a page of
/// many runs is not copied whole to be wrapped).
pub fn page(title: &str, body: &[&str]) -> String {
    let len: usize = body.iter().map(|p| p.len()).sum();
    let mut o = String::with_capacity(len + CSS.len() + JS.len() + 1024);
    let css = CSS.replace("FAILC", FAIL).replace("PASSC", PASS);
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <meta name=\"generator\" content=\"greta report {}\">\
         <title>{}</title><style>{css}</style></head>\n<body>\n",
        env!("CARGO_PKG_VERSION"),
        esc(title)
    );
    for p in body {
        o.push_str(p);
    }
    let _ = write!(o, "\n<script>{JS}</script>\n</body></html>\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_and_numbers() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(num(1234.56), "1235");
        assert_eq!(num(12.3456), "12.35");
        assert_eq!(num(0.0123456), "0.01235");
        assert_eq!(num(0.5), "0.5000");
        assert_eq!(num(f64::NAN), "-");
        assert_eq!(num(1.5e-5), "1.500e-5");
        assert_eq!(num(999_999_999.0), "999999999");
        assert_eq!(num(-1.23456e12), "-1.235e12");
        assert_eq!(num(f64::MAX), "1.798e308");
        assert_eq!(ratio(0.254), "0.25");
        assert_eq!(ratio(1e300), "1.00e300");
        assert_eq!(percent(0.384), "38%");
        assert_eq!(percent(1e300), "1.00e302%");
        assert_eq!(exact(0.1 + 0.2), "0.30000000000000004");
    }
}
