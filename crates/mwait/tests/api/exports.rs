//! What this crate exports to the crates that compile its generic waits, as one of
//! them (this test binary) links it. A symbol the crate exports keeps the default
//! visibility, and the crate's own code then reaches it through the GOT: one more
//! cache line for each such static or function on every wait that uses it. The
//! park without the climb is compiled in the caller (`docs/architecture.md`), so
//! what it names is exported: the state line, the park counts, the default
//! policy's numbers and the wake-up estimate. The climb's own statics and tiers,
//! which only this crate's ladder names, stay local.

use mwait::WaitCell;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

/// Parts of the mangled names (`_ZN5mwait...`) of what only the climb reaches, each
/// to be local: the run-queue gate and the ladder's tiers.
const LOCAL: [&str; 3] = ["4load4GATE", "6ladder9spin_tier", "6ladder13hardware_tier"];

/// Parts of the mangled names of what the code compiled in this crate reads: the
/// state line (the inlined notify's and park's) and the park counts (the park's),
/// exported, so global.
const GLOBAL: [&str; 2] = ["5linux4line4LINE", "5stats5parks5PARKS"];

#[test]
fn the_climb_keeps_its_statics_and_tiers_local() {
    // A wait that parks, so that the linker keeps all of the above in this binary.
    let cell = Arc::new(WaitCell::new(0));
    let c = cell.clone();
    let t = thread::spawn(move || {
        thread::sleep(Duration::from_millis(20));
        c.store(1);
    });
    assert_eq!(cell.wait_until(|v| v == 1), 1);
    t.join().unwrap();

    let exe = std::fs::read("/proc/self/exe").expect("this test binary");
    let symbols = elf_symbols(&exe).expect("an ELF64 binary with a symbol table");
    let of = |part: &str| -> Vec<&(String, u8)> {
        symbols
            .iter()
            .filter(|(name, _)| name.starts_with("_ZN5mwait") && name.contains(part))
            .collect()
    };
    for part in LOCAL {
        let found = of(part);
        assert!(!found.is_empty(), "no symbol of mwait's named *{part}*");
        for (name, binding) in found {
            assert_eq!(*binding, STB_LOCAL, "{name} is exported");
        }
    }
    for part in GLOBAL {
        let found = of(part);
        assert!(!found.is_empty(), "no symbol of mwait's named *{part}*");
        assert!(found.iter().all(|(_, b)| *b == STB_GLOBAL), "{found:?}");
    }
}

const STB_LOCAL: u8 = 0;
const STB_GLOBAL: u8 = 1;
/// `SHT_SYMTAB`: the section of the link-time symbols.
const SHT_SYMTAB: u32 = 2;

/// The names and bindings of an ELF64 little-endian file's `.symtab`; `None` when
/// the file is not one or has no symbol table (a stripped binary).
fn elf_symbols(f: &[u8]) -> Option<Vec<(String, u8)>> {
    let u16_at = |o: usize| Some(u16::from_le_bytes(f.get(o..o + 2)?.try_into().ok()?));
    let u32_at = |o: usize| Some(u32::from_le_bytes(f.get(o..o + 4)?.try_into().ok()?));
    let u64_at = |o: usize| -> Option<usize> {
        usize::try_from(u64::from_le_bytes(f.get(o..o + 8)?.try_into().ok()?)).ok()
    };
    if f.get(..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let (shoff, shentsize, shnum) = (u64_at(0x28)?, usize::from(u16_at(0x3a)?), u16_at(0x3c)?);
    let section = |i: usize| shoff + i * shentsize;
    let symtab = (0..usize::from(shnum)).find(|&i| u32_at(section(i) + 4) == Some(SHT_SYMTAB))?;
    let (off, size, entsize) = (
        u64_at(section(symtab) + 24)?,
        u64_at(section(symtab) + 32)?,
        u64_at(section(symtab) + 56)?,
    );
    let strtab = section(usize::try_from(u32_at(section(symtab) + 40)?).ok()?);
    let strings = f.get(u64_at(strtab + 24)?..)?;
    let mut out = Vec::new();
    for s in (off..off + size).step_by(entsize.max(1)) {
        let name_at = usize::try_from(u32_at(s)?).ok()?;
        let name = strings.get(name_at..)?;
        let end = name.iter().position(|&b| b == 0)?;
        let name = String::from_utf8_lossy(&name[..end]).into_owned();
        out.push((name, *f.get(s + 4)? >> 4));
    }
    Some(out)
}
