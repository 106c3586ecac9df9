//! Tests of the paste reader.
use super::*;

#[test]
fn binary_and_empty_are_refused() {
    assert!(decode(b"").is_err());
    assert!(decode(b" \n\t\n").is_err());
    assert!(decode(b"\x7fELF\x02\x01\x01\0\0\0\0").is_err());
    let noise: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 32) as u8).collect();
    assert!(decode(&noise).is_err());
    assert_eq!(
        decode(b"\x1b[31mROCk module is NOT loaded\x1b[0m\r\n").unwrap(),
        "ROCk module is NOT loaded\n"
    );
}

#[test]
fn utf16_with_bom_is_text() {
    let mut raw = vec![0xff, 0xfe];
    for u in "ROCk module is loaded\r\n".encode_utf16() {
        raw.extend_from_slice(&u.to_le_bytes());
    }
    assert_eq!(decode(&raw).unwrap(), "ROCk module is loaded\n");
}

#[test]
fn invalid_utf8_is_replaced_not_fatal() {
    let t = decode(b"Device Name \xff\xfe gfx1103\n").unwrap();
    assert!(t.contains("gfx1103"));
}

#[test]
fn wsl_is_seen_in_any_paste() {
    for t in [
        "Linux PC 5.15.167.4-microsoft-standard-WSL2 #1 SMP x86_64 GNU/Linux\n",
        "crw-rw-rw- 1 root root 10, 125 Jun 1 10:00 /dev/dxg\n",
        "hsa_signal_store_screlease not found - /opt/rocm-7.2.1/lib/librocdxg.so: undefined symbol\n",
    ] {
        assert_eq!(parse_text(t, "x").1.wsl, Some(true), "{t}");
    }
    assert_eq!(parse_text("Linux box 6.8.0-45-generic\n", "x").1.wsl, None);
}

#[test]
fn an_empty_device_list_is_no_vulkan_device() {
    let none = "docker run ... llama.cpp:server-vulkan\n# ./llama-server --list-devices\nAvailable devices:\n";
    assert!(parse_text(none, "x")
        .1
        .signals
        .iter()
        .any(|s| s.id == "vk-app-no-devices"));
    let one = "server-vulkan\nAvailable devices:\nVulkan0: AMD Radeon 780M Graphics (RADV PHOENIX) (29696 MiB, 28598 MiB free)\n";
    assert!(!parse_text(one, "x")
        .1
        .signals
        .iter()
        .any(|s| s.id == "vk-app-no-devices"));
}

#[test]
fn benchmark_clients_name_their_device() {
    let t = "Device ID 0 : AMD Radeon VII gfx906:sramecc+:xnack-\nrocblaslt warning: No paths matched x\n";
    let f = parse_text(t, "x").1;
    assert_eq!(f.gpus.len(), 1);
    assert_eq!(f.gpus[0].name, "AMD Radeon VII");
    assert_eq!(f.gpus[0].gfx.as_deref(), Some("gfx906"));
    assert!(parse_text("Device ID 0 : something else\n", "x")
        .1
        .gpus
        .is_empty());
}

#[test]
fn rocminfo_that_segfaults_is_an_hsa_crash() {
    let f = parse_text(
        "$ rocminfo\nROCk module is loaded\nSegmentation fault\n",
        "r.txt",
    )
    .1;
    assert!(f
        .signals
        .iter()
        .any(|s| s.id == "hsa-runtime-crash" && s.line == Some(3)));
    // Not every paste with a segfault: only rocminfo's.
    let g = parse_text("python3 train.py\nSegmentation fault\n", "x").1;
    assert!(!g.signals.iter().any(|s| s.id == "hsa-runtime-crash"));
}

#[test]
fn a_refusal_names_its_gpu() {
    let t = "Error: Cannot install llamacpp:rocm on this system: Unsupported GPU: gfx950\n";
    let f = parse_text(t, "x").1;
    assert_eq!(f.gpus.len(), 1);
    assert_eq!(f.gpus[0].gfx.as_deref(), Some("gfx950"));
    let t = "level=WARN msg=\"amdgpu is not supported (supported types:[gfx1103])\" gpu_type=gfx1150 gpu=0\n";
    let f = parse_text(t, "x").1;
    assert_eq!(f.gpus.len(), 1, "{:?}", f.gpus);
    assert_eq!(f.gpus[0].gfx.as_deref(), Some("gfx1150"));
}

#[test]
fn rocm_version_from_an_install_path() {
    let t = "OSError: /opt/rocm-7.1.1/lib/libamdhip64.so.7: undefined symbol: hsa_x\n";
    assert_eq!(parse_text(t, "x").1.rocm.version.as_deref(), Some("7.1.1"));
    // Two releases: neither is "the" version.
    let two = "/opt/rocm-6.0.0/lib/a.so\n/opt/rocm-5.7.1/lib/b.so\n";
    assert_eq!(rocm_path_version(two), None);
    assert_eq!(rocm_path_version("/opt/rocm-/x /opt/rocm-7"), None);
}

#[test]
fn torch_version_hip_in_a_python_session() {
    let f = parse_text(
        ">>> import torch\n>>> torch.version.hip\n'3.0.19493-36529b1'\n",
        "x",
    )
    .1;
    assert_eq!(f.rocm.version.as_deref(), Some("3.0"));
    assert_eq!(f.rocm.hip_version.as_deref(), Some("3.0.19493-36529b1"));
    let f = parse_text("print(torch.version.hip)\n6.2.41133-dd7f95766\n", "x").1;
    assert_eq!(f.rocm.version.as_deref(), Some("6.2"));
    assert_eq!(
        parse_text(">>> torch.version.hip\n>>> None\n", "x")
            .1
            .rocm
            .version,
        None
    );
}

#[test]
fn unrelated_text_is_not_recognised() {
    assert!(recognise("hello world\nthis is a shopping list\n").is_empty());
    assert!(recognise("{\"not\": \"a manifest\"}").is_empty());
}

/// Every kind of terminal control sequence a pasted terminal session can
/// carry goes before any reader sees the text, each checked against the
/// text written by hand without it.
#[test]
fn terminal_control_sequences_are_stripped() {
    let cases: [(&str, &str); 12] = [
        ("\u{1b}[1;31mred\u{1b}[0m\n", "red\n"),
        // OSC window title, ended by BEL and by ST.
        ("\u{1b}]0;owned\u{7}deviceName = X\n", "deviceName = X\n"),
        (
            "a\u{1b}]8;;http://x\u{1b}\\link\u{1b}]8;;\u{1b}\\b\n",
            "alinkb\n",
        ),
        // DCS, SOS, PM, APC up to ST.
        ("a\u{1b}P1$r0m\u{1b}\\b\n", "ab\n"),
        (
            "a\u{1b}Xsos\u{1b}\\b\u{1b}^pm\u{1b}\\c\u{1b}_apc\u{1b}\\d\n",
            "abcd\n",
        ),
        // Single escape sequences: charset, save cursor, reset, keypad.
        ("\u{1b}(Bgfx\u{1b}7942\u{1b}8\u{1b}c\u{1b}=\n", "gfx942\n"),
        // 8-bit C1 forms.
        (
            "\u{9b}31mred\u{9b}0m \u{9d}0;t\u{9c}x\u{90}q\u{9c}y\u{85}\n",
            "red xy\n",
        ),
        // An unterminated OSC ends at its line; the next line is read.
        ("\u{1b}]0;never ended\nName: gfx90a\n", "\nName: gfx90a\n"),
        // A lone ESC, an ESC before a line end or before another ESC.
        ("a\u{1b}\nb\u{1b}\u{1b}[2Jc\u{1b}", "a\nbc"),
        // Other controls stay (shown escaped wherever printed).
        ("a\u{8}b\tc\n", "a\u{8}b\tc\n"),
        // A bidi override is no control sequence: it stays in the text.
        ("\u{202e}SSAP\n", "\u{202e}SSAP\n"),
        ("plain text\n", "plain text\n"),
    ];
    for (raw, want) in cases {
        assert_eq!(input::strip_control_sequences(raw), want, "{raw:?}");
    }
    // Through decode: no ESC or C1 control is left.
    let t = decode("\u{1b}]0;x\u{7}\u{1b}[2J\u{1b}(0deviceName = A\u{9b}1m\n".as_bytes()).unwrap();
    assert_eq!(t, "deviceName = A\n");
}

/// CR, LF and CRLF line ends, mixed, all end lines.
#[test]
fn every_line_end_ends_a_line() {
    for (raw, want) in [
        ("a\rb\rc\r", "a\nb\nc\n"),
        ("a\r\nb\r\n", "a\nb\n"),
        ("a\nb\rc\r\nd", "a\nb\nc\nd"),
        ("a\r\r\nb", "a\n\nb"),
        ("\r", "\n"),
    ] {
        // decode refuses text of whitespace alone; the line ends directly.
        assert_eq!(input::line_ends(raw), want, "{raw:?}");
    }
    assert_eq!(decode(b"x\ry\r").unwrap(), "x\ny\n");
}

/// A GPU one file's reader saw (a kernel log's card at an address) that
/// the scan of the same paste named: its target is the scan's word, and
/// the facts say so for the rules that rest on readers alone; a target a
/// reader of another file printed is the reader's.
#[test]
fn a_target_only_the_scan_gave_is_kept_apart_from_the_readers() {
    use crate::facts::{Gpu, Vendor, GPU_GFX, TEXT_SCAN};
    let merged = || {
        let mut f = Facts::default();
        f.gpus.push(Gpu {
            vendor: Vendor::Amd,
            pci_address: Some("0000:28:00.0".into()),
            gfx: Some("gfx1010".into()),
            seen_by: vec!["dmesg".into(), TEXT_SCAN.into()],
            ..Gpu::default()
        });
        f.text_scan.push(ScanFact {
            fact: "gpu".into(),
            value: "AMD Radeon RX 5700 XT (gfx1010)".into(),
            evidence: "b.txt:1: GPU: AMD ATI Radeon RX 5700 XT".into(),
        });
        f
    };
    let mut f = merged();
    scanned_targets(&mut f, &[]);
    assert!(f
        .text_scan
        .iter()
        .any(|s| s.fact == GPU_GFX && s.value == "gfx1010"));
    assert_eq!(f.gpus[0].gfx.as_deref(), Some("gfx1010"));
    assert_eq!(f.readers_only().gpus[0].gfx, None);
    // Another file's reader printed it: the reader's word.
    let mut f = merged();
    scanned_targets(&mut f, &[(GPU_GFX, "gfx1010".into())]);
    assert!(!f.text_scan.iter().any(|s| s.fact == GPU_GFX));
    assert_eq!(f.readers_only().gpus[0].gfx.as_deref(), Some("gfx1010"));
    // What each file's readers stated: a reader's target, not one the
    // file's scan gave.
    let mut part = Facts::default();
    part.gpus.push(Gpu {
        vendor: Vendor::Amd,
        gfx: Some("gfx1100".into()),
        seen_by: vec!["rocminfo".into()],
        ..Gpu::default()
    });
    part.gpus.push(Gpu {
        vendor: Vendor::Amd,
        gfx: Some("gfx1010".into()),
        seen_by: vec!["dmesg".into(), TEXT_SCAN.into()],
        ..Gpu::default()
    });
    part.text_scan.push(ScanFact {
        fact: GPU_GFX.into(),
        value: "gfx1010".into(),
        evidence: "a.txt:1: x".into(),
    });
    let stated = stated_by_readers(&[part]);
    assert!(stated.contains(&(GPU_GFX, "gfx1100".into())));
    assert!(!stated.contains(&(GPU_GFX, "gfx1010".into())));
}
