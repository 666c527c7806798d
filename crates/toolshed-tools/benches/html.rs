//! HTML → Markdown / text conversion speed on a 5 MiB page (the most webfetch reads): the
//! realistic article fixture with its article repeated. The page is also written to
//! `$TMPDIR/toolshed-html-bench.html` so other converters can be timed on the same input
//! (see docs/web.md).

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use toolshed_tools::web::html;

const ARTICLE: &str = include_str!("../tests/fixtures/article.html");

fn page(target_bytes: usize) -> String {
    let start = ARTICLE.find("<main").unwrap_or(0);
    let end = ARTICLE.find("</main>").map_or(ARTICLE.len(), |i| i + "</main>".len());
    let (head, main, tail) = (&ARTICLE[..start], &ARTICLE[start..end], &ARTICLE[end..]);
    let mut out = String::from(head);
    while out.len() + main.len() + tail.len() < target_bytes {
        out.push_str(main);
    }
    out.push_str(tail);
    out
}

fn bench(c: &mut Criterion) {
    let page = page(5 * 1024 * 1024);
    let _ = std::fs::write(std::env::temp_dir().join("toolshed-html-bench.html"), &page);
    let base = reqwest::Url::parse("https://blog.example.com/posts/async-cancellation").ok();
    let mut group = c.benchmark_group("html_5mib");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(page.len() as u64));
    group.bench_function("markdown", |b| b.iter(|| html::to_markdown(black_box(&page), base.as_ref())));
    group.bench_function("text", |b| b.iter(|| html::to_text(black_box(&page))));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
