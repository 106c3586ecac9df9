//! `greta smoke --html` and `greta report`, opened in headless Chromium
//! (Debian's `chromium`, installed by scripts/test.sh): the page of a real
//! lavapipe run, and of an eight-device node replayed from real lavapipe
//! runs with one GPU slowed by greta's own fault injection (`--inject
//! slow:0:50`, docs/fleet.md). Each page is rendered (`--dump-dom` for the
//! DOM after its script ran, `--screenshot` for the pixels), must log
//! nothing to the console, must hold every device and gate, its numbers
//! must equal the JSON's, and the slow GPU's grid cells must be drawn in
//! the failing colour (class and screenshot pixels).
//!
//! Without Chromium the tests say so loudly and return.

use crate::support::run::Run;
use greta_smoke::results::{GateStatus, Report};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Tall enough that the node grid of every default gate on 8 devices is on
/// screen (each gate is a row; the default profile grows).
const WINDOW: (u32, u32) = (1200, 2400);

fn greta(args: &[&str], data_home: &Path) -> (i32, String) {
    let mut cmd = crate::support::greta();
    cmd.args(args)
        .env("GRETA_VK_VALIDATION", "1")
        .env("XDG_DATA_HOME", data_home);
    let r = Run::of(cmd);
    (r.code, r.stderr)
}

fn chromium() -> Option<PathBuf> {
    let found = ["chromium", "chromium-browser"]
        .iter()
        .find_map(|n| which::which(n).ok());
    if found.is_none() {
        eprintln!(
            "\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\
             SKIPPED: no chromium on PATH; the report page was not opened in a browser.\n\
             scripts/test.sh installs Debian's `chromium` (apt-get install chromium).\n\
             !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n"
        );
    }
    found
}

/// What Chromium made of a page: the DOM after its scripts ran, and the
/// console messages it logged.
struct Rendered {
    dom: String,
    console: Vec<String>,
}

fn chromium_run(
    bin: &Path,
    profile: &Path,
    what: &[String],
    page: &Path,
) -> greta_vocab::child::Finished {
    let mut cmd = Command::new(bin);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--hide-scrollbars",
        "--force-device-scale-factor=1",
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=3000",
    ])
    .arg(format!("--window-size={},{}", WINDOW.0, WINDOW.1))
    .arg(format!("--user-data-dir={}", profile.display()))
    .args(what)
    .arg(format!("file://{}", page.display()))
    // The browser starts helpers of its own: killed with it.
    .env("HOME", profile);
    let f = greta_vocab::child::Child::new(cmd)
        .own_group()
        .finish_within(Some(Duration::from_secs(120)))
        .expect("chromium starts");
    assert!(!f.timed_out, "chromium did not finish in 120 s");
    f
}

fn render(bin: &Path, page: &Path, screenshot: Option<&Path>) -> Rendered {
    let profile = tempfile::tempdir().unwrap();
    let f = chromium_run(bin, profile.path(), &["--dump-dom".to_string()], page);
    let console: Vec<String> = f
        .stderr
        .text()
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(String::from)
        .collect();
    if let Some(png) = screenshot {
        let g = chromium_run(
            bin,
            profile.path(),
            &[format!("--screenshot={}", png.display())],
            page,
        );
        assert!(png.is_file(), "no screenshot: {}", g.stderr.text());
    }
    Rendered {
        dom: f.stdout.text(),
        console,
    }
}

/// A start tag of the serialized DOM: its name, attributes, and the text
/// right after it (up to the next tag).
#[derive(Debug)]
struct El {
    tag: String,
    attrs: BTreeMap<String, String>,
    text: String,
}

impl El {
    fn attr(&self, k: &str) -> Option<&str> {
        self.attrs.get(k).map(String::as_str)
    }
    fn has_class(&self, c: &str) -> bool {
        self.attr("class")
            .is_some_and(|v| v.split(' ').any(|x| x == c))
    }
}

fn unescape(s: &str) -> String {
    s.replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&nbsp;", "\u{a0}")
        .replace("&amp;", "&")
}

/// Every start tag of `html`, in order (Chromium's serializer writes
/// attributes as `name="value"`).
fn elements(html: &str) -> Vec<El> {
    let b = html.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'<' || i + 1 >= b.len() || !b[i + 1].is_ascii_alphabetic() {
            i += 1;
            continue;
        }
        let mut j = i + 1;
        while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'-') {
            j += 1;
        }
        let tag = html[i + 1..j].to_ascii_lowercase();
        let mut attrs = BTreeMap::new();
        loop {
            while j < b.len() && b[j].is_ascii_whitespace() {
                j += 1;
            }
            if j >= b.len() || b[j] == b'>' || b[j] == b'/' {
                break;
            }
            let k0 = j;
            while j < b.len() && !b"= >".contains(&b[j]) && !b[j].is_ascii_whitespace() {
                j += 1;
            }
            let key = html[k0..j].to_string();
            let mut val = String::new();
            if j < b.len() && b[j] == b'=' {
                j += 1;
                let q = b[j];
                if q == b'"' || q == b'\'' {
                    let v0 = j + 1;
                    j = v0 + html[v0..].find(q as char).expect("closed quote");
                    val = unescape(&html[v0..j]);
                    j += 1;
                }
            }
            attrs.insert(key, val);
        }
        while j < b.len() && b[j] != b'>' {
            j += 1;
        }
        let t0 = (j + 1).min(b.len());
        let t1 = html[t0..].find('<').map_or(b.len(), |k| t0 + k);
        out.push(El {
            tag,
            attrs,
            text: unescape(&html[t0..t1]),
        });
        i = t1;
    }
    out
}

/// A number as the page shows it (4 significant digits) against the JSON's.
fn shown_equals(text: &str, json: f64) -> bool {
    let v: f64 = match text.trim().parse() {
        Ok(v) => v,
        Err(_) => return false,
    };
    (v - json).abs() <= 5e-4 * json.abs()
}

/// The page's DOM holds each device and gate of `report` with its numbers:
/// the table row (status class, rate as shown and exactly in `data-rate`)
/// and the bar (`data-rate`, the reason in its title).
fn check_numbers(els: &[El], report: &Report) {
    /// (device, gate) -> (the row's class, (data-rate, the rate as shown)).
    type Rows = BTreeMap<(String, String), (String, Option<(String, String)>)>;
    let mut rows: Rows = BTreeMap::new();
    let mut bars: BTreeMap<(String, String), String> = BTreeMap::new();
    let mut current: Option<(String, String)> = None;
    for e in els {
        let key = || {
            (
                e.attr("data-device").unwrap_or_default().to_string(),
                e.attr("data-gate").unwrap_or_default().to_string(),
            )
        };
        if e.tag == "tr" && e.attr("data-gate").is_some() {
            current = Some(key());
            rows.insert(
                key(),
                (e.attr("class").unwrap_or_default().to_string(), None),
            );
        } else if e.tag == "td" && e.has_class("rate") {
            if let (Some(k), Some(r)) = (&current, e.attr("data-rate")) {
                rows.get_mut(k).unwrap().1 = Some((r.to_string(), e.text.clone()));
            }
        } else if e.tag == "rect" && e.has_class("bar") {
            bars.insert(key(), e.attr("data-rate").unwrap_or_default().to_string());
        }
    }
    let mut n = 0;
    for d in &report.devices {
        for g in &d.gates {
            let k = (d.index.to_string(), g.id.clone());
            let (class, rate) = rows
                .get(&k)
                .unwrap_or_else(|| panic!("no table row for device {} gate {}", d.index, g.id));
            assert_eq!(class, &format!("g-{}", g.status.as_str()), "{k:?}");
            match g.metrics.as_ref().and_then(|m| m.rate) {
                Some(json) => {
                    let (exact, shown) = rate
                        .as_ref()
                        .unwrap_or_else(|| panic!("{k:?}: no rate in the DOM"));
                    assert_eq!(exact.parse::<f64>().unwrap(), json, "{k:?}: data-rate");
                    assert!(
                        shown_equals(shown, json),
                        "{k:?}: shown {shown:?}, JSON {json}"
                    );
                    let bar = bars.get(&k).unwrap_or_else(|| panic!("{k:?}: no bar"));
                    assert_eq!(bar.parse::<f64>().unwrap(), json, "{k:?}: bar's data-rate");
                    n += 1;
                }
                None => assert!(rate.is_none() && !bars.contains_key(&k), "{k:?}"),
            }
        }
    }
    assert!(n > 0);
}

/// Colour of the screenshot's pixel at CSS pixel (x, y) (device scale 1).
fn pixel(png_path: &Path, x: u32, y: u32) -> (u8, u8, u8) {
    let dec = png::Decoder::new(std::fs::File::open(png_path).unwrap());
    let mut rd = dec.read_info().unwrap();
    let mut buf = vec![0; rd.output_buffer_size()];
    let info = rd.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), WINDOW, "screenshot size");
    let ch = match info.color_type {
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        c => panic!("unexpected PNG colour type {c:?}"),
    };
    let i = (y as usize * info.width as usize + x as usize) * ch;
    (buf[i], buf[i + 1], buf[i + 2])
}

fn close(a: (u8, u8, u8), b: (u8, u8, u8)) -> bool {
    let d = |x: u8, y: u8| (i32::from(x) - i32::from(y)).abs();
    d(a.0, b.0) <= 8 && d(a.1, b.1) <= 8 && d(a.2, b.2) <= 8
}

const FAIL_RGB: (u8, u8, u8) = (0xd7, 0x30, 0x27);
const MID_RGB: (u8, u8, u8) = (0xd9, 0xef, 0x8b);
const NONE_RGB: (u8, u8, u8) = (0xee, 0xee, 0xee);
/// The pass colour #1a9850 at opacity 0.35 over the row's #f3f3f3.
const PALE_PASS_RGB: (u8, u8, u8) = (167, 211, 186);

type Boxes = BTreeMap<(String, String), (u32, u32, u32, u32)>;

/// The boxes [`with_boxes`]' script wrote: (device, gate) -> x, y, w, h.
fn boxes(dom: &str, tag: &str) -> Boxes {
    let els = elements(dom);
    let all = els
        .iter()
        .find(|e| e.tag == "html")
        .and_then(|e| e.attr("data-boxes"))
        .expect("the probe script ran");
    all.split(';')
        .map(|b| b.split(',').collect::<Vec<&str>>())
        .filter(|f| f[0] == tag)
        .map(|f| {
            let n = |i: usize| f[i].parse::<u32>().unwrap();
            (
                (f[1].to_string(), f[2].to_string()),
                (n(3), n(4), n(5), n(6)),
            )
        })
        .collect()
}

/// A copy of `page` whose extra script writes each grid cell's and bar's
/// box into an attribute of <html> (no layout change), for the pixel checks;
/// also each bar row's name (tag `label`: in place of x, the pixels it
/// runs past its SVG's left edge, 0 when it is inside), and
/// the colour of each passing check's detail (tag `pass-detail`: red,
/// green, blue in place of x, y, w).
fn with_boxes(page: &Path) -> PathBuf {
    let html = std::fs::read_to_string(page).unwrap();
    let probe = "<script>(function(){var o=[];var c=document.querySelectorAll('td.cell, rect.bar');\
        for(var i=0;i<c.length;i++){var r=c[i].getBoundingClientRect();o.push([c[i].tagName.toLowerCase(),c[i].dataset.device,\
        c[i].dataset.gate,Math.round(r.left),Math.round(r.top),Math.round(r.width),Math.round(r.height)].join(','));}\
        var t=document.querySelectorAll('svg.bars g.row > text[text-anchor=end]');\
        for(var i=0;i<t.length;i++){var r=t[i].getBoundingClientRect();var s=t[i].closest('svg').getBoundingClientRect();\
        o.push(['label','',t[i].parentNode.dataset.gate,Math.max(0,Math.round(s.left-r.left)),Math.round(r.top),Math.round(r.width),Math.round(r.height)].join(','));}\
        var p=document.querySelectorAll('tr.g-pass td.reason');\
        for(var i=0;i<p.length;i++){var m=getComputedStyle(p[i]).color.match(/\\d+/g);\
        o.push(['pass-detail','',p[i].parentNode.dataset.check||'',m[0],m[1],m[2],0].join(','));}\
        document.documentElement.setAttribute('data-boxes',o.join(';'));})();</script></body>";
    let out = page.with_extension("boxes.html");
    std::fs::write(&out, html.replacen("</body>", probe, 1)).unwrap();
    out
}

#[test]
fn report_pages_of_a_real_run_and_a_replayed_node_render_in_chromium() {
    let Some(bin) = chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    // A default-profile lavapipe run (3 repeats, seed 5) with its result
    // in `out`: the exit code, the result file and its report.
    let smoke = |out: &Path, extra: &[&str]| {
        let mut args = vec!["smoke", "--device", "cpu", "--profile", "default"];
        let out_s = s(out);
        args.extend(["--repeat", "3", "--seed", "5", "--out", out_s.as_str()]);
        args.extend_from_slice(extra);
        let (code, _) = greta(&args, d);
        let json = std::fs::read_dir(out)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|x| x == "json"))
            .expect("result JSON written");
        let report: Report =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        (code, json, report)
    };

    // The real lavapipe run, drawn by `greta smoke --html`.
    let page = d.join("run.html");
    let (code, clean_json, clean) = smoke(&d.join("clean"), &["--html", &s(&page)]);
    assert_eq!(code, 0);
    let shot = d.join("run.png");
    let r = render(&bin, &page, Some(&shot));
    assert!(r.console.is_empty(), "console messages: {:#?}", r.console);
    let els = elements(&r.dom);
    assert_eq!(
        els.iter()
            .find(|e| e.tag == "html")
            .and_then(|e| e.attr("data-ready")),
        Some("1"),
        "the page's script ran"
    );
    check_numbers(&els, &clean);
    // The screenshot shows the bars: each one's middle is the pass colour,
    // pale (lavapipe has no floor, ceiling or spec to hold a rate to).
    let bar_boxes = boxes(&render(&bin, &with_boxes(&page), None).dom, "rect");
    assert_eq!(
        bar_boxes.len(),
        clean.devices[0].gates.len(),
        "{bar_boxes:?}"
    );
    for (k, (x, y, w, h)) in &bar_boxes {
        let px = pixel(&shot, x + w / 2, y + h / 2);
        assert!(
            close(px, PALE_PASS_RGB),
            "{k:?}: pixel {px:?}, pale pass colour {PALE_PASS_RGB:?}"
        );
    }
    // Every gate's name is inside its picture (the fused gates' longer
    // names once ran past the left edge), and a passing check's detail is
    // not drawn in the failing red.
    let probed = render(&bin, &with_boxes(&page), None).dom;
    let labels = boxes(&probed, "label");
    assert_eq!(labels.len(), clean.devices[0].gates.len(), "{labels:?}");
    for (k, (past, ..)) in &labels {
        assert_eq!(
            *past, 0,
            "{k:?}: the name runs {past} px past its picture's left edge"
        );
    }
    let details = boxes(&probed, "pass-detail");
    assert!(!details.is_empty(), "no passing check drawn");
    for (k, (r, g, b, _)) in &details {
        assert!(
            !(*r > 120 && *g < 60 && *b < 60),
            "{k:?}: a passing check's detail in red ({r}, {g}, {b})"
        );
    }

    // The replayed node: eight devices from the real run, device 5 from a
    // real run with greta's fault injection making it 50x slow (on this
    // shared 2-core VM two lavapipe runs differ by up to 3x: 4x slow once
    // passed its floor of 0.75x the clean run) (held to the
    // clean run as --baseline, so its gates fail their floors).
    let (code, _, slow) = smoke(
        &d.join("slow"),
        &["--baseline", &s(&clean_json), "--inject", "slow:0:50"],
    );
    assert_eq!(code, 1, "the slowed run fails its baseline floors");
    let mut node = clean.clone();
    node.devices = (0..8)
        .map(|i| {
            let mut dev = if i == 5 {
                slow.devices[0].clone()
            } else {
                clean.devices[0].clone()
            };
            dev.index = i;
            dev.device.uuid = Some(
                format!("6d657361-3232-2e33-2e36-0000000000{i:02}")
                    .parse()
                    .unwrap(),
            );
            dev
        })
        .collect();
    node.settings.inject = vec!["slow:5:50".into()];
    node.status = Report::summarize(&node.devices);
    let node_json = d.join("node.json");
    std::fs::write(&node_json, node.to_json()).unwrap();
    // Read back as greta report reads it (the same parser the page used).
    let node: Report = serde_json::from_str(&std::fs::read_to_string(&node_json).unwrap()).unwrap();
    let node_page = d.join("node.html");
    let (code, err) = greta(&["report", &s(&node_json), "--out", &s(&node_page)], d);
    assert_eq!(code, 0);
    assert!(err.contains("1 run, 0 files not used"), "{err}");
    let boxed = with_boxes(&node_page);
    let node_shot = d.join("node.png");
    let r = render(&bin, &boxed, Some(&node_shot));
    assert!(r.console.is_empty(), "console messages: {:#?}", r.console);
    let els = elements(&r.dom);
    check_numbers(&els, &node);
    for dev in &node.devices {
        assert!(
            els.iter()
                .any(|e| e.tag == "h3" && e.attr("data-device") == Some(&dev.index.to_string())),
            "device {} has its section",
            dev.index
        );
    }
    // The grid: a cell per device and gate; device 5's are failing, the
    // others sit at the median (they are the same run).
    let cells: BTreeMap<(String, String), &El> = els
        .iter()
        .filter(|e| e.tag == "td" && e.has_class("cell"))
        .map(|e| {
            (
                (
                    e.attr("data-device").unwrap().to_string(),
                    e.attr("data-gate").unwrap().to_string(),
                ),
                e,
            )
        })
        .collect();
    let ids: Vec<&str> = clean.devices[0]
        .gates
        .iter()
        .map(|g| g.id.as_str())
        .collect();
    assert_eq!(cells.len(), 8 * ids.len());
    let boxes: Boxes = boxes(&r.dom, "td");
    for id in &ids {
        for dev in 0..8u32 {
            let k = (dev.to_string(), id.to_string());
            let cell = cells
                .get(&k)
                .unwrap_or_else(|| panic!("no grid cell {k:?}"));
            let json = node.devices[dev as usize]
                .gates
                .iter()
                .find(|g| g.id == *id)
                .unwrap();
            let rate = json.metrics.as_ref().and_then(|m| m.rate);
            assert_eq!(
                cell.attr("data-rate").map(|v| v.parse::<f64>().unwrap()),
                rate,
                "{k:?}"
            );
            let (x, y, w, h) = boxes[&k];
            assert!(
                y + h < WINDOW.1 && x + w < WINDOW.0,
                "{k:?} is on screen: {:?}",
                boxes[&k]
            );
            let px = pixel(&node_shot, x + 4, y + 4);
            if dev == 5 && json.status == GateStatus::Skip {
                // f16 gates run only after clean f32 gates (docs/smoke.md).
                assert!(
                    json.reason.as_deref().is_some_and(
                        |r| r.starts_with("f16 gates run only after the f32 gates pass")
                    ),
                    "{id}: {:?}",
                    json.reason
                );
                assert!(cell.has_class("r-none"), "{k:?}: {:?}", cell.attr("class"));
                assert!(close(px, NONE_RGB), "{k:?}: pixel {px:?}");
            } else if dev == 5 {
                assert_eq!(json.status, GateStatus::Fail, "{id}: {:?}", json.reason);
                assert!(cell.has_class("r-fail"), "{k:?}: {:?}", cell.attr("class"));
                assert!(
                    close(px, FAIL_RGB),
                    "{k:?}: pixel {px:?}, failing colour {FAIL_RGB:?}"
                );
            } else {
                assert_eq!(cell.attr("data-ratio"), Some("1"), "{k:?}");
                assert!(cell.has_class("r-mid"), "{k:?}: {:?}", cell.attr("class"));
                assert!(
                    close(px, MID_RGB),
                    "{k:?}: pixel {px:?}, median colour {MID_RGB:?}"
                );
            }
        }
    }
}

/// The console check can fail: a page whose script throws is caught.
#[test]
fn a_script_error_in_a_page_is_seen_on_the_console() {
    let Some(bin) = chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("bad.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><html><body><p>x</p><script>nosuch();</script></body></html>",
    )
    .unwrap();
    let r = render(&bin, &page, None);
    assert!(
        r.console
            .iter()
            .any(|l| l.contains("nosuch is not defined")),
        "{:#?}",
        r.console
    );
}

/// A watched gate's telemetry over time, in Chromium: a real lavapipe
/// memory test with thermal throttling injected (`--inject throttle:0`:
/// every reading says heat held the clocks, with no clock, power or
/// temperature of its own) draws the clock panel with its held stretches;
/// the same result with readings put into its series (as a card's sampler
/// writes them) draws all three panels. Each page logs nothing, its script
/// runs, and the chart and the table of points are in the DOM.
#[test]
fn the_health_panel_charts_a_watched_gates_telemetry_in_chromium() {
    let Some(bin) = chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let out = d.join("out");
    let page = d.join("hot.html");
    let (code, err) = greta(
        &[
            "smoke",
            "--device",
            "cpu",
            "--profile",
            "health",
            "--gate",
            "memtest.16m",
            "--repeat",
            "1",
            "--inject",
            "throttle:0",
            "--out",
            &s(&out),
            "--html",
            &s(&page),
        ],
        d,
    );
    assert_eq!(code, 1, "heat fails the gate: {err}");
    let json = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .expect("result JSON written");
    let mut report: Report =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let charts = |page: &Path| -> Vec<(String, String)> {
        let r = render(&bin, page, None);
        assert!(r.console.is_empty(), "console messages: {:#?}", r.console);
        let els = elements(&r.dom);
        assert_eq!(
            els.iter()
                .find(|e| e.tag == "html")
                .and_then(|e| e.attr("data-ready")),
            Some("1"),
            "the page's script ran"
        );
        assert!(
            r.dom.contains("<table class=\"trace-points\">"),
            "the points as text"
        );
        els.iter()
            .filter(|e| e.tag == "svg" && e.has_class("trace-chart"))
            .map(|e| {
                (
                    e.attr("data-gate").unwrap().to_string(),
                    e.attr("data-panels").unwrap().to_string(),
                )
            })
            .collect()
    };
    assert_eq!(
        charts(&page),
        [("memtest.16m".to_string(), "1".to_string())]
    );

    let t = &mut report.devices[0].gates[0].in_run.telemetry[0];
    assert!(!t.series.is_empty());
    for (i, p) in t.series.iter_mut().enumerate() {
        p.sm_mhz = Some(2100.0 - 10.0 * i as f64);
        p.power_w = Some(300.0 + i as f64);
        p.temp_c = Some(80.0 + i as f64);
    }
    let filled = d.join("filled.json");
    std::fs::write(&filled, report.to_json()).unwrap();
    let page2 = d.join("filled.html");
    let (code, err) = greta(&["report", &s(&filled), "--out", &s(&page2)], d);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        charts(&page2),
        [("memtest.16m".to_string(), "3".to_string())]
    );
}
