//! `greta doctor --from`: every recogniser and parser on arbitrary bytes,
//! then the merge of what two halves of the input said.
fn main() {
    afl::fuzz!(|data: &[u8]| {
        let Ok(text) = greta_probe::decode(data) else {
            return;
        };
        let _ = greta_probe::recognise(&text);
        let (_, whole) = greta_probe::parse_text(&text, "fuzz");
        let mid = text.len() / 2;
        let cut = (0..=mid)
            .rev()
            .find(|i| text.is_char_boundary(*i))
            .unwrap_or(0);
        let (_, a) = greta_probe::parse_text(&text[..cut], "a");
        let (_, b) = greta_probe::parse_text(&text[cut..], "b");
        let merged = greta_probe::merge(vec![whole, a, b]);
        let _ = greta_probe::summarise(&merged);
        serde_json::to_string(&merged).expect("facts serialise");
    });
}
