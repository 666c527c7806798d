//! The parser must never panic, whatever text it is given.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(patch) = toolshed_patch::parse(&text) {
        let _ = patch.paths();
    }
});
