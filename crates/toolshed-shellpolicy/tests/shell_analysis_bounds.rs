//! The shell analysis is bounded: no command line up to the argument size limit (1 MiB) makes it
//! panic, overflow the stack, use much memory or take long. Inputs past its bounds ask.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use toolshed_core::permission::{Action, PermissionRequest};
use toolshed_shellpolicy::permission_requests;

const MIB: usize = 1 << 20;

/// The system allocator, counting the bytes in use and their peak.
struct Counting;

static IN_USE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = IN_USE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        IN_USE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

type Input = (&'static str, Box<dyn Fn() -> String>, bool);
type Lazy = (&'static str, fn() -> String, bool);

/// The pathological inputs (made when used, so the memory measured is the analysis's): the exact
/// ones of the issue first, then more of the same kind, each with whether it must ask.
fn inputs() -> Vec<Input> {
    let owned: Vec<(&'static str, String, bool)> = vec![
        ("15000 nested subshells", format!("{}true{}", "(".repeat(15_000), ")".repeat(15_000)), true),
        ("10 KB of nested subshells", format!("{}true{}", "(".repeat(5_000), ")".repeat(5_000)), true),
        ("50000 nested \"$(echo", "\"$(echo ".repeat(50_000), true),
        ("true && true 10000 times", vec!["true"; 10_000].join(" && "), false),
        // tree-sitter-bash's scanner passes the character after `{` to C's `isdigit`.
        ("a brace before a large code point", "x{\u{F9265}".to_string(), true),
    ];
    let mut out: Vec<Input> =
        owned.into_iter().map(|(n, s, a)| (n, Box::new(move || s.clone()) as Box<dyn Fn() -> String>, a)).collect();
    let lazy: Vec<Lazy> = vec![
        ("1 MiB of `true;`", || fill("true;"), true),
        ("1 MiB of `echo a b c\\n`", || fill("echo a b c\n"), true),
        ("1 MiB of `(`", || fill("("), true),
        ("1 MiB of `{ `", || fill("{ "), true),
        ("1 MiB of `$(`", || fill("$("), true),
        ("1 MiB of backquotes", || fill("`"), true),
        ("1 MiB of `\"`", || fill("\""), true),
        ("1 MiB of `'`", || fill("'"), false),
        ("1 MiB of `\\`", || fill("\\"), false),
        ("1 MiB of line continuations", || fill("a\\\n"), true),
        ("1 MiB of `<<A `", || fill("<<A "), true),
        ("1 MiB of `if true; then `", || fill("if true; then "), true),
        ("1 MiB of `f() { `", || fill("f() { "), true),
        ("1 MiB of `$((1+`", || fill("$((1+"), true),
        ("1 MiB of `[[ a && `", || fill("[[ a && "), true),
        ("1 MiB of `${a:-`", || fill("${a:-"), true),
        ("1 MiB of `nohup `", || fill("nohup "), true),
        ("1 MiB of `eval `", || fill("eval "), true),
        ("1 MiB of `env -S`", || format!("env {}", fill("-S")), true),
        ("1 MiB of `|`", || fill("| "), true),
        ("a 1 MiB word", || format!("echo {}", "a".repeat(MIB)), false),
        ("a 1 MiB quoted string", || format!("echo '{}'", "a b ".repeat(MIB / 4)), false),
        ("a 1 MiB quoted here-document", || format!("cat > f <<'EOF'\n{}EOF\n", fill("some text $(x) `y`\n")), false),
        ("a 1 MiB here-document with expansions", || format!("cat > f <<EOF\n{}EOF\n", fill("$a $b $c\n")), true),
        ("an arithmetic chain", || format!("echo $(({}1))", "1+".repeat(200_000)), true),
        ("a test chain", || format!("[[ {} a ]]", "a && ".repeat(100_000)), true),
        ("20 000 words naming programs", || format!("echo {}", "ls cat rm ".repeat(20_000)), true),
        ("4 000 words naming programs", || format!("echo {}", "ls cat rm ".repeat(1_300)), true),
        ("many brace expansions", || format!("echo {}", "{a,b}".repeat(50_000)), true),
        ("a big brace sequence", || "echo {1..100000000}".to_string(), false),
        ("nested bash -c", || nested_shells(8), true),
        ("many bash -c", || vec!["bash -c 'bash -c \"echo hi\"'"; 5_000].join("; "), true),
        ("many here-documents", || format!("cat {}\n", "<<A ".repeat(100)), true),
        ("many assignments", || fill("a=$b "), true),
        ("many arrays", || fill("a=( "), true),
        ("many case items", || format!("case x in {} esac", "a) ;; ".repeat(100_000)), true),
    ];
    out.extend(lazy.into_iter().map(|(n, f, a)| (n, Box::new(f) as Box<dyn Fn() -> String>, a)));
    out
}

/// `bash -c "bash -c \"...\""` nested `depth` times with the quoting each level needs.
fn nested_shells(depth: usize) -> String {
    let mut line = "rm x".to_string();
    for _ in 0..depth {
        line = format!("bash -c '{}'", line.replace('\'', "'\\''"));
    }
    line
}

/// Random bytes from a fixed seed (xorshift), as text the way the tool receives it.
fn fill(unit: &str) -> String {
    unit.repeat(MIB / unit.len())
}

fn random_text(seed: u64, len: usize) -> String {
    let mut x = seed;
    let bytes: Vec<u8> = (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The requests for `command`, how long the analysis took and the most heap it used at once.
fn analyse(command: &str) -> (Vec<PermissionRequest>, Duration, usize) {
    let base = IN_USE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let start = Instant::now();
    let requests = permission_requests(command, Path::new("/tmp"), Path::new("/tmp"), Some(Path::new("/home/u")));
    let took = start.elapsed();
    (requests, took, PEAK.load(Ordering::Relaxed).saturating_sub(base))
}

fn peak_rss_kib() -> i64 {
    // SAFETY: getrusage writes into the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    usage.ru_maxrss
}

/// Runs every pathological input on a thread with a 1 MiB stack (half of what tokio's workers
/// have), one after the other, timing each; memory is the process's peak.
#[test]
fn pathological_inputs_are_bounded_in_stack_memory_and_time() {
    let before = peak_rss_kib();
    println!("peak RSS before: {} MiB", before / 1024);
    let handle = std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(|| {
            let mut report = Vec::new();
            let mut cases = inputs();
            for seed in 1..=4u64 {
                cases.push(("1 MiB of random bytes", Box::new(move || random_text(seed, MIB)), false));
            }
            let mut slowest = Duration::ZERO;
            let mut most_heap = 0;
            for (name, make, must_ask) in cases {
                let command = make();
                let (requests, took, heap) = analyse(&command);
                let bash = requests.iter().find(|r| r.permission == "bash" && !r.secondary).unwrap();
                if must_ask && bash.minimum != Action::Ask {
                    report.push(format!("MISMATCH {name}"));
                }
                slowest = slowest.max(took);
                report.push(format!("{took:>10.1?} {:>7.1} MiB heap  {name}", heap as f64 / MIB as f64));
                assert!(took < Duration::from_millis(2500), "{name} took {took:?}");
                assert!(heap < 100 * MIB, "{name} used {} MiB", heap / MIB);
                most_heap = most_heap.max(heap);
            }
            report.push(format!("most heap {} MiB", most_heap / MIB));
            (report, slowest)
        })
        .unwrap();
    let (report, slowest) = handle.join().unwrap();
    let grown = (peak_rss_kib() - before) / 1024;
    println!("{}\nslowest {slowest:?}, peak RSS grew by {grown} MiB", report.join("\n"));
    assert!(grown < 100, "peak RSS grew by {grown} MiB");
}

#[test]
fn too_complex_says_so() {
    let (requests, _, _) = analyse(&format!("{}true{}", "(".repeat(15_000), ")".repeat(15_000)));
    let why = requests[0].metadata["unclassified"].as_str().unwrap().to_string();
    assert!(why.contains("too complex to analyse"), "{why}");
}
