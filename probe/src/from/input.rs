//! Reading what the user pasted: a file, a FIFO or stdin, size-capped, with
//! a bounded wait for a writer, and decoded to text (UTF-16 and ANSI colour
//! codes included).

use super::FromError;
use std::borrow::Cow;
use std::io::Read;
use std::path::Path;

/// At most this much of one file is read (16 MiB): a full `vulkaninfo` is a
/// few hundred KB, and a runaway log must not take the doctor down with it.
pub const MAX_READ: u64 = 16 << 20;

pub(super) fn read_capped(p: &Path) -> Result<(u64, bool, Vec<u8>), FromError> {
    let err = |error| FromError::Read {
        path: p.display().to_string(),
        error,
    };
    if p == Path::new("-") {
        // `rocminfo 2>&1 | greta doctor --from -`. Standard input's
        // description is shared with the shell, so it is not made
        // non-blocking: poll says when a read will not block.
        let buf = read_waiting(0, from_wait().map_err(err)?).map_err(err)?;
        let truncated = buf.len() as u64 > MAX_READ;
        let mut buf = buf;
        buf.truncate(MAX_READ as usize);
        return Ok((buf.len() as u64, truncated, buf));
    }
    let meta = std::fs::metadata(p).map_err(err)?;
    if meta.is_dir() {
        return Err(FromError::Directory {
            path: p.display().to_string(),
        });
    }
    let mut buf = Vec::new();
    if meta.is_file() {
        let f = std::fs::File::open(p).map_err(err)?;
        // One byte more than the cap tells "exactly 16 MiB" from "more".
        f.take(MAX_READ + 1).read_to_end(&mut buf).map_err(err)?;
    } else {
        // A pipe (`--from <(rocminfo)`), a FIFO, a terminal or a device:
        // opened without blocking (a FIFO's open waits for a writer) and
        // read with a bounded wait for each next byte (`from_wait`).
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::OpenOptionsExt;
        let f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(p)
            .map_err(err)?;
        buf = read_waiting(f.as_raw_fd(), from_wait().map_err(err)?).map_err(err)?;
    }
    let truncated = buf.len() as u64 > MAX_READ;
    buf.truncate(MAX_READ as usize);
    Ok((meta.len().max(buf.len() as u64), truncated, buf))
}

/// How long a pipe or FIFO may stay silent (no writer yet, or a writer
/// that neither writes nor closes) before `--from` gives up on it:
/// `GRETA_FROM_WAIT_S`, default 60 s (a slow `rocminfo` takes seconds).
pub const FROM_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

pub(super) fn from_wait() -> std::io::Result<std::time::Duration> {
    greta_vocab::number::env_duration(
        greta_vocab::EnvVars::GRETA_FROM_WAIT_S,
        greta_vocab::number::Unit::Secs,
        std::time::Duration::from_secs(3600),
    )
    .map(|d| d.unwrap_or(FROM_WAIT))
    .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
}

/// Reads `fd` to its end (at most [`MAX_READ`] + 1 bytes), waiting at most
/// `wait` for each next chunk; a longer silence is a `TimedOut` error that
/// says what was waited for.
pub(super) fn read_waiting(
    fd: std::os::fd::RawFd,
    wait: std::time::Duration,
) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 64 << 10];
    let ms = libc::c_int::try_from(wait.as_millis()).unwrap_or(libc::c_int::MAX);
    while buf.len() as u64 <= MAX_READ {
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(&mut pfd, 1, ms) };
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if r == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!(
                    "waited {} s for {}: a pipe or FIFO is read until its writer closes it \
                     (GRETA_FROM_WAIT_S sets the wait)",
                    wait.as_secs(),
                    if buf.is_empty() {
                        "a writer to open it and write"
                    } else {
                        "more data or the end from its writer"
                    }
                ),
            ));
        }
        let want = chunk.len().min((MAX_READ + 1) as usize - buf.len());
        // SAFETY: reads at most `want` bytes into `chunk`.
        let n = unsafe { libc::read(fd, chunk.as_mut_ptr().cast(), want) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if matches!(
                e.kind(),
                std::io::ErrorKind::Interrupted | std::io::ErrorKind::WouldBlock
            ) {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n as usize]);
    }
    Ok(buf)
}

/// Bytes to text: binary and empty input are refused with a reason; bad
/// UTF-8 is replaced; terminal control sequences go (colour codes, which
/// rocminfo prints, window titles, every other escape sequence: see
/// [`strip_control_sequences`]); CRLF and lone CR line ends become LF.
pub fn decode(raw: &[u8]) -> Result<String, String> {
    // PowerShell's `>` writes UTF-16 with a byte-order mark.
    let utf16 = |be: bool| {
        let units: Vec<u16> = raw[2..]
            .chunks_exact(2)
            .map(|c| {
                if be {
                    u16::from_be_bytes([c[0], c[1]])
                } else {
                    u16::from_le_bytes([c[0], c[1]])
                }
            })
            .collect();
        String::from_utf16_lossy(&units)
    };
    if raw.starts_with(&[0xff, 0xfe]) {
        return decode(utf16(false).as_bytes());
    }
    if raw.starts_with(&[0xfe, 0xff]) {
        return decode(utf16(true).as_bytes());
    }
    if raw.iter().all(|b| b.is_ascii_whitespace()) {
        return Err("empty file".into());
    }
    let head = &raw[..raw.len().min(8192)];
    let ctrl = head
        .iter()
        .filter(|&&b| b == 0 || (b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t' | 0x1b | 0x0c)))
        .count();
    if head.contains(&0) || ctrl * 20 > head.len() {
        return Err("binary data, not text: give the tool's text output".into());
    }
    let text = String::from_utf8_lossy(raw);
    Ok(line_ends(&strip_control_sequences(&text)).into_owned())
}

/// Every line end as `\n`: CRLF (Windows), a lone CR (old Mac files, some
/// terminals' pastes, progress lines that return to their start) and LF,
/// mixed in any way. A paste whose lines end in CR alone otherwise reads
/// as one line.
pub(super) fn line_ends(s: &str) -> Cow<'_, str> {
    if !s.contains('\r') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\r' {
            if chars.peek() == Some(&'\n') {
                chars.next();
            }
            out.push('\n');
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// The text without its terminal control sequences (ECMA-48), which a
/// paste of a terminal session carries and which would split or hide
/// what a reader looks for: CSI (`ESC [` ... final byte: colours, cursor
/// moves; rocminfo prints them), the string sequences OSC (`ESC ]`, a
/// window title or a hyperlink), DCS (`ESC P`), SOS, PM and APC up to
/// their terminator (ST, or BEL for OSC; a line end also ends one, so an
/// unterminated sequence never swallows the rest of a paste), the other
/// escape sequences (`ESC` intermediates final: `ESC ( B`, `ESC 7`), and
/// their 8-bit C1 forms (U+009B CSI, U+009D OSC, ...). Other control
/// characters stay (they are shown escaped wherever text is printed).
pub(super) fn strip_control_sequences(s: &str) -> Cow<'_, str> {
    if !s
        .chars()
        .any(|c| c == '\u{1b}' || ('\u{80}'..='\u{9f}').contains(&c))
    {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        // The introducer, as its 7-bit final character.
        let kind = match c {
            '\u{1b}' => match chars.peek() {
                Some(&k) if (' '..='~').contains(&k) => {
                    chars.next();
                    k
                }
                // An ESC before a line end, a control or the end stands
                // alone and goes.
                _ => continue,
            },
            '\u{9b}' => '[',
            '\u{9d}' => ']',
            '\u{90}' => 'P',
            '\u{98}' => 'X',
            '\u{9e}' => '^',
            '\u{9f}' => '_',
            // Any other C1 control is a sequence of its own.
            '\u{80}'..='\u{9f}' => continue,
            c => {
                out.push(c);
                continue;
            }
        };
        match kind {
            // CSI: parameter and intermediate bytes, then one final byte.
            '[' => {
                while let Some(&n) = chars.peek() {
                    if matches!(n, '\n' | '\r') {
                        break;
                    }
                    chars.next();
                    if ('@'..='~').contains(&n) {
                        break;
                    }
                }
            }
            // Strings: up to ST (ESC \ or U+009C), BEL (OSC's other end)
            // or the line's end.
            ']' | 'P' | 'X' | '^' | '_' => {
                while let Some(&n) = chars.peek() {
                    if matches!(n, '\n' | '\r') {
                        break;
                    }
                    chars.next();
                    if n == '\u{7}' || n == '\u{9c}' {
                        break;
                    }
                    if n == '\u{1b}' {
                        if chars.peek() == Some(&'\\') {
                            chars.next();
                        }
                        break;
                    }
                }
            }
            // `ESC` intermediates (0x20-0x2F), then one final byte.
            k if (' '..='/').contains(&k) => {
                while let Some(&n) = chars.peek() {
                    if matches!(n, '\n' | '\r') {
                        break;
                    }
                    chars.next();
                    if !(' '..='/').contains(&n) {
                        break;
                    }
                }
            }
            // `ESC` and one final byte (`ESC 7`, `ESC c`).
            _ => {}
        }
    }
    Cow::Owned(out)
}
