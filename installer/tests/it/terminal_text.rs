//! Strings from outside greta (a Vulkan device name from a driver or a
//! replayed capture, an ICD manifest's file name, a package name in a
//! lockfile, a pasted log line) reach the terminal with their control and
//! bidi characters shown as escapes (`\u{1b}`, `\r`, `\u{202e}`), never
//! acted on: no ESC/OSC retitles or clears the terminal, no CR overwrites
//! "FAIL" with "PASS", no U+202E reverses what follows. The `--json`
//! outputs keep the exact value.

use crate::lock_support::{edited_lock_dir, greta_lock};
use crate::support::greta;
use std::path::{Path, PathBuf};
use std::process::Output;

/// An OSC that retitles the window, a CSI that clears it, a CR that puts
/// "PASS" over "FAIL", a right-to-left override ("SSAP" reads "PASS"), an
/// isolate, a C1 CSI and a line separator.
const HOSTILE: &str =
    "AMD Radeon 760M \u{1b}]0;owned\u{7}\u{1b}[2J FAIL\rPASS \u{202e}SSAP\u{2066} \u{9b}1m\u{2028}";

/// [`HOSTILE`] as greta must show it.
const SHOWN: &str = "AMD Radeon 760M \\u{1b}]0;owned\\u{7}\\u{1b}[2J FAIL\\rPASS \\u{202e}SSAP\\u{2066} \\u{9b}1m\\u{2028}";

/// The encodings of the characters that act on a terminal (written out
/// here, independently of greta's list).
const ACTING: [&[u8]; 7] = [
    b"\x1b",
    b"\x07",
    b"\r",
    "\u{202e}".as_bytes(),
    "\u{2066}".as_bytes(),
    "\u{9b}".as_bytes(),
    "\u{2028}".as_bytes(),
];

/// Neither stream of a human-output run holds a byte sequence of [`ACTING`]
/// (the tests' stdout is no terminal, so greta writes no colour either).
fn nothing_acts(what: &str, o: &Output) {
    for (stream, bytes) in [("stdout", &o.stdout), ("stderr", &o.stderr)] {
        for a in ACTING {
            assert!(
                !bytes.windows(a.len()).any(|w| w == a),
                "{what}: {a:?} reached {stream}:\n{}",
                String::from_utf8_lossy(bytes)
            );
        }
    }
    assert!(
        !String::from_utf8_lossy(&o.stderr).contains("panicked"),
        "{what}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn text_of(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// phoenix-apu with [`HOSTILE`] as the first Vulkan device's name and
/// driver info, and as part of an ICD manifest's file name.
fn hostile_capture(tmp: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../probe/tests/sysroots/phoenix-apu");
    let m = tmp.join("m");
    let cp = std::process::Command::new("cp")
        .arg("-a")
        .arg(&src)
        .arg(&m)
        .status()
        .unwrap();
    assert!(cp.success());
    let devices = m.join(".greta/cmd/greta-vulkan-devices.txt");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&devices).unwrap()).unwrap();
    v["devices"][0]["name"] = HOSTILE.into();
    v["devices"][0]["driver_info"] = HOSTILE.into();
    std::fs::write(&devices, v.to_string()).unwrap();
    let icds = m.join("etc/vulkan/icd.d");
    std::fs::rename(
        icds.join("amd_icd64.json"),
        icds.join("amd\u{1b}[8m\u{202e}_icd64.json"),
    )
    .unwrap();
    m
}

#[test]
fn doctor_sysroot_shows_a_hostile_device_name_and_json_keeps_it() {
    let tmp = tempfile::tempdir().unwrap();
    let m = hostile_capture(tmp.path());
    let o = greta()
        .args(["doctor", "--sysroot"])
        .arg(&m)
        .output()
        .unwrap();
    nothing_acts("doctor --sysroot", &o);
    let t = text_of(&o);
    // Shown where the device is named: the Vulkan check's summary, the
    // duplicate-GPU finding, the summary line.
    assert!(t.matches(SHOWN).count() >= 3, "{t}");
    assert!(t.contains("amd\\u{1b}[8m\\u{202e}_icd64.json"), "{t}");
    assert_eq!(o.status.code(), Some(1), "{t}");

    let o = greta()
        .args(["doctor", "--json", "--sysroot"])
        .arg(&m)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let dev = &v["facts"]["vulkan"]["devices"][0];
    assert_eq!(dev["name"], HOSTILE, "{dev}");
    assert_eq!(dev["driver_info"], HOSTILE, "{dev}");
    let icds = v["facts"]["vulkan"]["icds"].to_string();
    assert!(icds.contains("amd\\u001b[8m\u{202e}_icd64.json"), "{icds}");
}

/// A lock set whose `filelock` is named [`HOSTILE`]-like (TOML escapes).
fn hostile_lock_dir() -> tempfile::TempDir {
    edited_lock_dir("pylock.cpu.toml", |t| {
        assert!(t.contains("name = \"filelock\""));
        t.replacen(
            "name = \"filelock\"",
            "name = \"file\\u001b]0;owned\\u0007\\r\\u202elock\"",
            1,
        )
    })
    .0
}

const PACKAGE: &str = "file\u{1b}]0;owned\u{7}\r\u{202e}lock";
const PACKAGE_SHOWN: &str = "file\\u{1b}]0;owned\\u{7}\\r\\u{202e}lock";

#[test]
fn lock_show_and_check_show_a_hostile_package_name() {
    let d = hostile_lock_dir();
    let o = greta_lock(d.path(), &["show", "cpu", "--python", "3.12"]);
    nothing_acts("lock show", &o);
    assert!(text_of(&o).contains(PACKAGE_SHOWN), "{}", text_of(&o));

    let o = greta_lock(d.path(), &["show", "cpu", "--python", "3.12", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<&str> = v["sets"][0]["wheels"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["name"].as_str())
        .collect();
    assert!(names.contains(&PACKAGE), "{names:?}");

    // The check refuses the name (the wheel belongs to another package)
    // and quotes it.
    let o = greta_lock(d.path(), &["check"]);
    nothing_acts("lock check", &o);
    assert!(text_of(&o).contains(PACKAGE_SHOWN), "{}", text_of(&o));
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn install_dry_run_shows_a_hostile_package_name() {
    let d = hostile_lock_dir();
    let o = greta()
        .args(["install", "--dry-run", "--profile", "cpu", "--lock-dir"])
        .arg(d.path())
        .output()
        .unwrap();
    nothing_acts("install --dry-run", &o);
    assert!(text_of(&o).contains(PACKAGE_SHOWN), "{}", text_of(&o));
    assert_eq!(o.status.code(), Some(0), "{}", text_of(&o));
}

/// A pasted `vulkaninfo --summary` (a real one, probe/tests/fixtures)
/// whose device name carries an OSC, a CSI, a C1 CSI, bidi controls and a
/// CR: the control sequences go before any reader sees the text (the
/// name is read whole), the bidi controls stay in the facts and are shown
/// escaped wherever the name is printed.
#[test]
fn doctor_from_strips_control_sequences_and_shows_the_rest() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../probe/tests/fixtures/vulkaninfo-summary-grep-two-mesa-radv-navy-flounder-plus-gtx1650/vulkaninfo-summary-grep.txt",
    );
    let text = std::fs::read_to_string(&fixture).unwrap();
    let name = "AMD RADV NAVY_FLOUNDER (ACO)";
    assert!(text.contains(name));
    let hostile = text.replacen(
        name,
        "AMD RADV NAVY_FLOUNDER \u{1b}]0;owned\u{7}(ACO)\u{202e}SSAP\u{2066}\u{1b}[2J\u{9b}1m",
        1,
    ) + "driverInfo = FAIL\rPASS\n";
    let tmp = tempfile::tempdir().unwrap();
    let paste = tmp.path().join("paste.txt");
    std::fs::write(&paste, hostile).unwrap();

    let o = greta()
        .arg("doctor")
        .arg("--from")
        .arg(&paste)
        .output()
        .unwrap();
    nothing_acts("doctor --from", &o);
    let t = text_of(&o);
    assert!(
        t.contains("AMD RADV NAVY_FLOUNDER (ACO)\\u{202e}SSAP\\u{2066}"),
        "{t}"
    );
    assert!(!t.contains("owned") && !t.contains("[2J"), "{t}");

    let o = greta()
        .args(["doctor", "--json", "--from"])
        .arg(&paste)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<&str> = v["facts"]["vulkan"]["devices"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["name"].as_str())
        .collect();
    assert!(
        names.contains(&"AMD RADV NAVY_FLOUNDER (ACO)\u{202e}SSAP\u{2066}"),
        "{names:?}"
    );
}
