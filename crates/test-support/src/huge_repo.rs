//! Huge-repository fixtures for benchmarks and tests: a monorepo (200,000 tracked files, about
//! 2 GB), a tree shaped like the Linux kernel's (80,000 files, about 5,000 directories, about
//! 1 GB) and a small monorepo of the same shape for tests, each committed with git.
//!
//! `ensure(shape)` generates a shape once under `target/huge-repos/<shape>-v<N>` and returns
//! its path; later calls return at once.
//!
//! Invariants: generation is deterministic (a fixed seed, no download): the same shape always
//! yields the same paths, bytes and commit id (fixed author, dates and a hermetic git config).
//! A repository is returned only once its stamp file, written last beside it, exists, so a
//! half-made one is removed and made again; concurrent callers (processes) wait on a lock file.
//! Every caller shares the repository: leave it as you found it, or copy it. The repository
//! holds `COMMON_WORD` in most source files, `RARE_WORD` in exactly `RARE_FILES` files, and
//! files matching `Shape::deep_glob` only deep in the tree.

#[cfg(test)]
mod tests;

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Bumped whenever the generator's output changes, so stale caches are not reused.
const VERSION: u32 = 1;

/// A word in most source files of every shape (a `grep` that matches nearly everything).
pub const COMMON_WORD: &str = "buffer";

/// A word in exactly `RARE_FILES` files of every shape (a `grep` that matches almost nothing).
pub const RARE_WORD: &str = "zephyrquux";

/// How many files hold `RARE_WORD`.
pub const RARE_FILES: usize = 7;

/// Which repository to make.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Shape {
    /// 200,000 tracked files, about 2 GB: packages, services and libraries with `src` and
    /// test directories in five languages, a few large files, a `.gitignore` with ignored
    /// `node_modules` and `dist` directories (about 12,000 files more, untracked), AGENTS.md at
    /// the root and in `packages/billing` and `services/search`.
    Monorepo,
    /// Shaped like the Linux kernel's tree: 80,000 files in about 5,000 directories, deep
    /// paths, mostly `.c` and `.h`, about 1 GB; AGENTS.md at the root only.
    KernelLike,
    /// The monorepo's shape at about 3,000 small files (a few MB), for tests.
    Small,
}

impl Shape {
    /// The shape's directory name under `target/huge-repos`, without the version.
    pub fn name(self) -> &'static str {
        match self {
            Self::Monorepo => "monorepo",
            Self::KernelLike => "kernel-like",
            Self::Small => "small",
        }
    }

    /// A directory deep inside a package, relative to the root (it exists in the repository):
    /// where a user would start a session to work on one package.
    pub fn nested_dir(self) -> &'static str {
        match self {
            Self::Monorepo | Self::Small => "packages/billing/src/core",
            Self::KernelLike => "drivers/net/ethernet/intel/e1000e",
        }
    }

    /// A glob matching a file extension found only deep in the tree.
    pub fn deep_glob(self) -> &'static str {
        match self {
            Self::Monorepo | Self::Small => "*.proto",
            Self::KernelLike => "*.dts",
        }
    }
}

/// The path of `shape`'s repository, generated and committed first if it is not there yet
/// (seconds for `Small`, minutes for the big shapes, once per target directory).
///
/// # Errors
/// When a file cannot be written or git fails (or is missing).
pub fn ensure(shape: Shape) -> io::Result<PathBuf> {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/huge-repos");
    fs_err::create_dir_all(&base)?;
    let base = fs_err::canonicalize(&base)?;
    let name = format!("{}-v{VERSION}", shape.name());
    let dir = base.join(&name);
    let stamp = base.join(format!("{name}.stamp"));
    let lock = fs_err::File::create(base.join(format!("{name}.lock")))?;
    // Held until this function returns: a second process waits here while the first generates.
    lock.file().lock()?;
    if stamp.is_file() && dir.join(".git").is_dir() {
        return Ok(dir);
    }
    if dir.exists() {
        fs_err::remove_dir_all(&dir)?;
    }
    fs_err::create_dir_all(&dir)?;
    let entries = match shape {
        Shape::Monorepo => monorepo(&MONOREPO),
        Shape::Small => monorepo(&SMALL),
        Shape::KernelLike => kernel_like(),
    };
    let written = write_all(&dir, &entries)?;
    commit(&dir)?;
    fs_err::write(&stamp, format!("{name}: {} files, {} bytes\n", entries.len(), written.bytes))?;
    Ok(dir)
}

/// What a file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lang {
    Rust,
    TypeScript,
    JavaScript,
    Python,
    Go,
    Java,
    C,
    Header,
    Assembly,
    Proto,
    Markdown,
    Json,
    Yaml,
    Toml,
    Make,
    Binary,
}

impl Lang {
    const ALL: [Self; 16] = [
        Self::Rust,
        Self::TypeScript,
        Self::JavaScript,
        Self::Python,
        Self::Go,
        Self::Java,
        Self::C,
        Self::Header,
        Self::Assembly,
        Self::Proto,
        Self::Markdown,
        Self::Json,
        Self::Yaml,
        Self::Toml,
        Self::Make,
        Self::Binary,
    ];

    fn comment(self) -> &'static str {
        match self {
            Self::Rust
            | Self::TypeScript
            | Self::JavaScript
            | Self::Go
            | Self::Java
            | Self::C
            | Self::Header
            | Self::Proto => "//",
            Self::Python | Self::Yaml | Self::Toml | Self::Make => "#",
            Self::Assembly => ";",
            Self::Markdown | Self::Json | Self::Binary => "",
        }
    }
}

/// One file to write: where, what kind, how many bytes, whether it holds `RARE_WORD`.
#[derive(Debug, Clone)]
struct Entry {
    path: String,
    lang: Lang,
    size: usize,
    rare: bool,
    /// A file with one huge line (a minified bundle).
    one_line: bool,
}

impl Entry {
    fn new(path: String, lang: Lang, size: usize) -> Self {
        Self { path, lang, size, rare: false, one_line: false }
    }
}

/// A small deterministic generator (splitmix64): the fixtures must not change with a
/// dependency's version.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n.max(1) as u64).unwrap_or(0)
    }

    /// A number in `lo..=hi`.
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `percent / 100`.
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const WORDS: &[&str] = &[
    "account", "adapter", "address", "alloc", "array", "async", "audit", "batch", "billing",
    "block", "buffer", "builder", "bytes", "cache", "channel", "check", "client", "codec",
    "config", "context", "count", "cursor", "data", "decode", "delta", "device", "digest",
    "driver", "encode", "entry", "error", "event", "field", "filter", "flag", "format", "frame",
    "handle", "handler", "hash", "header", "index", "input", "item", "key", "layer", "limit",
    "line", "list", "loader", "lock", "logger", "lookup", "map", "match", "merge", "message",
    "meta", "mode", "model", "module", "node", "offset", "option", "order", "output", "packet",
    "page", "parse", "parser", "path", "payload", "peer", "policy", "pool", "port", "queue",
    "range", "reader", "record", "region", "report", "request", "resolve", "response", "result",
    "retry", "route", "rule", "scan", "schema", "scope", "search", "send", "server", "session",
    "shard", "signal", "size", "slot", "source", "span", "stage", "state", "status", "store",
    "stream", "sync", "table", "task", "timer", "token", "trace", "tree", "update", "user",
    "value", "vector", "version", "view", "worker", "writer", "zone",
];

const KERNEL_WORDS: &[&str] = &[
    "acpi",
    "amd",
    "arm",
    "ata",
    "audio",
    "bcm",
    "block",
    "bluetooth",
    "bpf",
    "bus",
    "can",
    "char",
    "clk",
    "core",
    "crypto",
    "display",
    "dma",
    "drm",
    "edac",
    "ext4",
    "fbdev",
    "firmware",
    "gpio",
    "gpu",
    "hid",
    "hwmon",
    "i2c",
    "i915",
    "iio",
    "infiniband",
    "input",
    "intel",
    "iommu",
    "irqchip",
    "leds",
    "media",
    "mfd",
    "misc",
    "mmc",
    "mtd",
    "net",
    "nfs",
    "nvme",
    "of",
    "pci",
    "phy",
    "pinctrl",
    "platform",
    "power",
    "pwm",
    "qcom",
    "regulator",
    "remoteproc",
    "reset",
    "rtc",
    "scsi",
    "soc",
    "spi",
    "staging",
    "thermal",
    "tty",
    "usb",
    "vfio",
    "video",
    "virtio",
    "watchdog",
    "wireless",
    "xfs",
    "btrfs",
    "sched",
    "mm",
    "ipv4",
    "ipv6",
    "netfilter",
    "mac80211",
    "sunxi",
    "rockchip",
    "tegra",
    "exynos",
    "imx",
    "mediatek",
    "renesas",
    "samsung",
    "broadcom",
    "realtek",
    "marvell",
    "mellanox",
    "atheros",
    "ralink",
    "serial",
    "host",
    "gadget",
    "codecs",
];

/// Scales of the monorepo shape.
struct MonorepoScale {
    tracked_files: usize,
    /// File sizes are multiplied by this, in percent.
    size_percent: usize,
    ignored_files: usize,
    /// Large tracked files: path and size.
    large: &'static [(&'static str, usize)],
}

const MONOREPO: MonorepoScale = MonorepoScale {
    tracked_files: 200_000,
    size_percent: 100,
    ignored_files: 12_000,
    large: &[
        ("data/fixtures/events-0.jsonl", 24 << 20),
        ("data/fixtures/events-1.jsonl", 24 << 20),
        ("db/seed.sql", 20 << 20),
        ("docs/api/openapi.json", 16 << 20),
        ("vendor/bundle.min.js", 12 << 20),
    ],
};

const SMALL: MonorepoScale = MonorepoScale {
    tracked_files: 3_000,
    size_percent: 20,
    ignored_files: 300,
    large: &[("data/fixtures/events-0.jsonl", 1 << 20), ("vendor/bundle.min.js", 256 << 10)],
};

/// A source file's size: mostly a few KB, some tens of KB (mean about 10 KB at 100%).
fn source_size(rng: &mut Rng, percent: usize) -> usize {
    let size = match rng.below(100) {
        0..45 => rng.range(1 << 10, 4 << 10),
        45..80 => rng.range(4 << 10, 12 << 10),
        80..96 => rng.range(12 << 10, 32 << 10),
        _ => rng.range(32 << 10, 96 << 10),
    };
    (size * percent / 100).max(200)
}

/// Picks distinct names from `words` for a directory's children (`-2`, `-3`… once the words
/// run out).
fn distinct_name(rng: &mut Rng, words: &[&str], taken: &mut HashSet<String>) -> String {
    for _ in 0..8 {
        let name = (*rng.pick(words)).to_owned();
        if taken.insert(name.clone()) {
            return name;
        }
    }
    let base = rng.pick(words);
    let mut n = 2;
    loop {
        let name = format!("{base}-{n}");
        if taken.insert(name.clone()) {
            return name;
        }
        n += 1;
    }
}

fn monorepo(scale: &MonorepoScale) -> Vec<Entry> {
    let mut rng = Rng(0x6D6F_6E6F_7265_706F);
    let mut entries = vec![
        Entry::new("AGENTS.md".to_owned(), Lang::Markdown, 3_000),
        Entry::new("README.md".to_owned(), Lang::Markdown, 6_000),
        Entry::new("package.json".to_owned(), Lang::Json, 1_500),
        Entry::new("Cargo.toml".to_owned(), Lang::Toml, 1_200),
        Entry::new(".github/workflows/ci.yaml".to_owned(), Lang::Yaml, 4_000),
    ];
    for &(path, size) in scale.large {
        let lang = match path.rsplit('.').next() {
            Some("js") => Lang::JavaScript,
            Some("sql") => Lang::Make,
            _ => Lang::Json,
        };
        let mut entry = Entry::new(path.to_owned(), lang, size);
        entry.one_line = path.ends_with(".min.js");
        entries.push(entry);
    }
    // A few binary assets, so a search meets files it must skip.
    for i in 0..(scale.tracked_files / 1_000).max(3) {
        entries.push(Entry::new(format!("assets/img/icon-{i}.png"), Lang::Binary, 4_000));
    }
    let units = (scale.tracked_files / 330).max(6);
    let budget = scale.tracked_files - entries.len() - 1; // 1: `.gitignore`
    let weights: Vec<usize> = (0..units)
        .map(|_| if rng.chance(5) { rng.range(300, 600) } else { rng.range(20, 180) })
        .collect();
    let total_weight: usize = weights.iter().sum();
    let mut counts: Vec<usize> = weights.iter().map(|w| budget * w / total_weight).collect();
    let assigned: usize = counts.iter().sum();
    counts[0] += budget - assigned;
    let mut names: HashSet<String> = HashSet::new();
    let mut ignored_left = scale.ignored_files;
    let mut ignored = Vec::new();
    for (unit, &count) in counts.iter().enumerate() {
        let kind = match unit % 20 {
            0..11 => "packages",
            11..16 => "services",
            _ => "libs",
        };
        let name = match unit {
            0 => "billing".to_owned(),
            1 => "search".to_owned(),
            _ => {
                let mut name = format!("{}-{}", rng.pick(WORDS), rng.pick(WORDS));
                while names.contains(&name) {
                    name = format!("{}-{}-{}", rng.pick(WORDS), rng.pick(WORDS), unit);
                }
                name
            }
        };
        names.insert(name.clone());
        let kind = if unit == 1 { "services" } else { kind };
        let lang = match unit {
            0 => Lang::TypeScript,
            1 => Lang::Go,
            _ => *rng.pick(&[
                Lang::TypeScript,
                Lang::TypeScript,
                Lang::TypeScript,
                Lang::Python,
                Lang::Python,
                Lang::Go,
                Lang::Rust,
                Lang::Java,
            ]),
        };
        let root = format!("{kind}/{name}");
        let before = entries.len();
        unit_files(&mut rng, &root, lang, count, scale.size_percent, unit < 2, &mut entries);
        debug_assert_eq!(entries.len() - before, count);
        if matches!(lang, Lang::TypeScript) && unit % 3 == 0 && ignored_left > 0 {
            let n = rng.range(60, 400).min(ignored_left);
            ignored_left -= n;
            node_modules(&mut rng, &root, n, &mut ignored);
        }
    }
    // Whatever the packages did not take goes to a root-level `node_modules`.
    node_modules(&mut rng, "", ignored_left, &mut ignored);
    entries.push(Entry::new(".gitignore".to_owned(), Lang::Make, 0));
    mark_rare(&mut entries);
    entries.extend(ignored);
    entries
}

/// `count` files of one package: a manifest, a README, sources in module directories under
/// `src`, tests, a few `.proto` files deep in `src` for Go, Java and TypeScript packages.
fn unit_files(
    rng: &mut Rng,
    root: &str,
    lang: Lang,
    count: usize,
    size_percent: usize,
    agents_md: bool,
    entries: &mut Vec<Entry>,
) {
    let (manifest, ext, test_dir) = match lang {
        Lang::Python => ("pyproject.toml", "py", "tests"),
        Lang::Go => ("go.mod", "go", "internal"),
        Lang::Rust => ("Cargo.toml", "rs", "tests"),
        Lang::Java => ("pom.xml", "java", "src/test/java"),
        _ => ("package.json", "ts", "test"),
    };
    let mut left = count;
    let mut push = |entry: Entry, left: &mut usize| {
        if *left > 0 {
            entries.push(entry);
            *left -= 1;
        }
    };
    push(Entry::new(format!("{root}/{manifest}"), Lang::Toml, 800), &mut left);
    push(Entry::new(format!("{root}/README.md"), Lang::Markdown, 2_500), &mut left);
    if agents_md {
        push(Entry::new(format!("{root}/AGENTS.md"), Lang::Markdown, 1_800), &mut left);
    }
    let n_modules = (left / 25).max(1);
    let mut modules = Vec::with_capacity(n_modules);
    let mut taken = HashSet::new();
    if root == "packages/billing" {
        modules.push("src/core".to_owned());
        taken.insert("core".to_owned());
    }
    while modules.len() < n_modules {
        let mut path = format!("src/{}", distinct_name(rng, WORDS, &mut taken));
        for _ in 0..rng.below(4) {
            path = format!("{path}/{}", rng.pick(WORDS));
        }
        modules.push(path);
    }
    let mut n = 0;
    while left > 0 {
        n += 1;
        let word = rng.pick(WORDS);
        // The first file goes to the first module, so `Shape::nested_dir` is never empty.
        let module = if n == 1 { &modules[0] } else { &modules[rng.below(modules.len())] };
        let size = source_size(rng, size_percent);
        let roll = rng.below(1000);
        let entry = if roll < 6 && lang != Lang::Python && lang != Lang::Rust {
            Entry::new(format!("{root}/{module}/proto/v1/{word}_{n}.proto"), Lang::Proto, size / 2)
        } else if roll < 260 {
            let path = match lang {
                Lang::Python => format!("{root}/{test_dir}/test_{word}_{n}.py"),
                Lang::Go => format!("{root}/{module}/{word}_{n}_test.go"),
                Lang::Java => format!("{root}/{test_dir}/com/acme/{word}/{word}{n}Test.java"),
                Lang::Rust => format!("{root}/{test_dir}/{word}_{n}.rs"),
                _ => format!("{root}/{test_dir}/{word}_{n}.test.ts"),
            };
            Entry::new(path, lang, size)
        } else if roll < 290 {
            Entry::new(format!("{root}/docs/{word}_{n}.md"), Lang::Markdown, size)
        } else if roll < 310 {
            Entry::new(format!("{root}/config/{word}_{n}.yaml"), Lang::Yaml, size / 4)
        } else {
            let path = if lang == Lang::Java {
                let package = module.trim_start_matches("src/");
                format!("{root}/src/main/java/com/acme/{package}/{word}{n}.java")
            } else {
                format!("{root}/{module}/{word}_{n}.{ext}")
            };
            Entry::new(path, lang, size)
        };
        push(entry, &mut left);
    }
}

/// `count` ignored files in `root/node_modules` (and a `dist` beside it).
fn node_modules(rng: &mut Rng, root: &str, count: usize, ignored: &mut Vec<Entry>) {
    let prefix = if root.is_empty() { String::new() } else { format!("{root}/") };
    let mut left = count;
    let mut n = 0;
    while left > 0 {
        n += 1;
        let dependency = format!("{}-{}", rng.pick(WORDS), n);
        let files = rng.range(4, 40).min(left);
        for i in 0..files {
            let path = match i {
                0 => format!("{prefix}node_modules/{dependency}/package.json"),
                1 => format!("{prefix}dist/{dependency}.js"),
                _ => format!("{prefix}node_modules/{dependency}/lib/{}_{i}.js", rng.pick(WORDS)),
            };
            ignored.push(Entry::new(path, Lang::JavaScript, source_size(rng, 60)));
        }
        left -= files;
    }
}

/// Marks `RARE_FILES` source files, spread over the tracked ones, to hold `RARE_WORD`.
fn mark_rare(entries: &mut [Entry]) {
    let candidates: Vec<usize> = (0..entries.len())
        .filter(|&i| {
            !matches!(entries[i].lang, Lang::Binary | Lang::Markdown)
                && !entries[i].one_line
                && entries[i].size < (1 << 20)
        })
        .collect();
    for k in 0..RARE_FILES {
        let i = candidates[(k * 2 + 1) * candidates.len() / (RARE_FILES * 2)];
        entries[i].rare = true;
    }
}

/// Top-level directories of the kernel-like tree and their share of its files (per mille),
/// close to Linux's.
const KERNEL_TOP: &[(&str, usize)] = &[
    ("drivers", 380),
    ("arch", 220),
    ("Documentation", 100),
    ("include", 60),
    ("tools", 55),
    ("sound", 45),
    ("net", 30),
    ("fs", 30),
    ("scripts", 12),
    ("kernel", 10),
    ("lib", 10),
    ("security", 6),
    ("crypto", 5),
    ("mm", 4),
    ("block", 3),
    ("samples", 3),
    ("init", 1),
    ("ipc", 1),
    ("virt", 1),
    ("usr", 1),
    ("io_uring", 1),
    ("rust", 2),
];

const KERNEL_FILES: usize = 80_000;

fn kernel_like() -> Vec<Entry> {
    let mut rng = Rng(0x6B65_726E_656C_6C69);
    let mut entries = vec![
        Entry::new("AGENTS.md".to_owned(), Lang::Markdown, 2_500),
        Entry::new("README".to_owned(), Lang::Markdown, 800),
        Entry::new("MAINTAINERS".to_owned(), Lang::Markdown, 800 << 10),
        Entry::new("Makefile".to_owned(), Lang::Make, 60 << 10),
        Entry::new("Kconfig".to_owned(), Lang::Make, 600),
        Entry::new("COPYING".to_owned(), Lang::Markdown, 500),
    ];
    // The nested directory the benches start in, with its parents.
    for i in 0..60 {
        let word = rng.pick(KERNEL_WORDS);
        let (name, lang) = match i {
            0 => ("Makefile".to_owned(), Lang::Make),
            1 => ("Kconfig".to_owned(), Lang::Make),
            _ if i % 3 == 0 => (format!("{word}_{i}.h"), Lang::Header),
            _ => (format!("{word}_{i}.c"), Lang::C),
        };
        let size = kernel_size(&mut rng, lang);
        entries.push(Entry::new(format!("{}/{name}", Shape::KernelLike.nested_dir()), lang, size));
    }
    let budget = KERNEL_FILES - entries.len() - 1; // 1: `.gitignore`
    let per_mille: usize = KERNEL_TOP.iter().map(|(_, share)| share).sum();
    let mut left = budget;
    for (i, &(top, share)) in KERNEL_TOP.iter().enumerate() {
        let count = if i + 1 == KERNEL_TOP.len() { left } else { budget * share / per_mille };
        left -= count;
        kernel_dir(&mut rng, top, top, 0, count, &mut entries);
    }
    entries.push(Entry::new(".gitignore".to_owned(), Lang::Make, 0));
    mark_rare(&mut entries);
    entries
}

/// A kernel-like file's size: `.c` files about 15 KB on average, headers smaller.
fn kernel_size(rng: &mut Rng, lang: Lang) -> usize {
    match lang {
        Lang::C | Lang::Assembly => match rng.below(100) {
            0..40 => rng.range(1 << 10, 8 << 10),
            40..80 => rng.range(8 << 10, 24 << 10),
            80..96 => rng.range(24 << 10, 64 << 10),
            _ => rng.range(64 << 10, 160 << 10),
        },
        Lang::Header | Lang::Proto => match rng.below(100) {
            0..60 => rng.range(400, 4 << 10),
            60..95 => rng.range(4 << 10, 16 << 10),
            _ => rng.range(16 << 10, 64 << 10),
        },
        Lang::Make => rng.range(200, 3 << 10),
        _ => rng.range(1 << 10, 24 << 10),
    }
}

/// `count` files in the directory `path` and its subdirectories: some here, the rest split
/// over a few children, down to leaves of a dozen or so files.
fn kernel_dir(
    rng: &mut Rng,
    top: &str,
    path: &str,
    depth: usize,
    count: usize,
    entries: &mut Vec<Entry>,
) {
    let leaf = rng.range(14, 40);
    let here =
        if count <= leaf || depth >= 8 { count } else { (count * rng.range(3, 20) / 100).max(2) };
    let mut names = HashSet::new();
    for i in 0..here {
        let lang = match top {
            "Documentation" => Lang::Markdown,
            "include" => Lang::Header,
            "arch" if path.contains("/boot/dts") => Lang::Proto,
            "arch" if rng.chance(8) => Lang::Assembly,
            "tools" | "scripts" if rng.chance(20) => Lang::Python,
            _ if i == 0 && here > 2 => Lang::Make,
            _ if rng.chance(33) => Lang::Header,
            _ => Lang::C,
        };
        let ext = match lang {
            Lang::Markdown => ".rst",
            Lang::Header => ".h",
            Lang::Proto => {
                if rng.chance(50) {
                    ".dts"
                } else {
                    ".dtsi"
                }
            }
            Lang::Assembly => ".S",
            Lang::Python => ".py",
            Lang::Make => "",
            _ => ".c",
        };
        let name = if lang == Lang::Make {
            "Makefile".to_owned()
        } else {
            let stem = match rng.below(3) {
                0 => (*rng.pick(KERNEL_WORDS)).to_owned(),
                1 => format!("{}_{}", rng.pick(KERNEL_WORDS), rng.pick(WORDS)),
                _ => format!("{}-{}", rng.pick(KERNEL_WORDS), rng.range(1, 999)),
            };
            let mut name = format!("{stem}{ext}");
            let mut n = 2;
            while names.contains(&name) {
                name = format!("{stem}{n}{ext}");
                n += 1;
            }
            name
        };
        names.insert(name.clone());
        let size = kernel_size(rng, lang);
        entries.push(Entry::new(format!("{path}/{name}"), lang, size));
    }
    let rest = count - here;
    if rest == 0 {
        return;
    }
    let n_children = rng.range(2, 8).min(rest.div_ceil(leaf)).max(1);
    let weights: Vec<usize> = (0..n_children).map(|_| rng.range(1, 10)).collect();
    let total: usize = weights.iter().sum();
    let mut taken = HashSet::new();
    let mut given = 0;
    for (i, weight) in weights.iter().enumerate() {
        let share = if i + 1 == n_children { rest - given } else { rest * weight / total };
        given += share;
        if share == 0 {
            continue;
        }
        let child = if top == "arch" && depth == 1 && i == 0 {
            taken.insert("boot".to_owned());
            format!("{path}/boot/dts")
        } else {
            format!("{path}/{}", distinct_name(rng, KERNEL_WORDS, &mut taken))
        };
        kernel_dir(rng, top, &child, depth + 1, share, entries);
    }
}

/// What `write_all` wrote.
struct Written {
    bytes: u64,
}

/// Writes every entry under `dir` (and the `.gitignore`), with contents cut from per-language
/// pools of generated lines.
fn write_all(dir: &Path, entries: &[Entry]) -> io::Result<Written> {
    let mut rng = Rng(0x706F_6F6C_7365_6564);
    let pools: Vec<(Lang, Vec<u8>)> =
        Lang::ALL.iter().map(|&lang| (lang, pool(&mut rng, lang))).collect();
    let mut made: HashSet<PathBuf> = HashSet::new();
    let mut bytes = 0_u64;
    let mut content = Vec::with_capacity(1 << 20);
    for entry in entries {
        let path = dir.join(&entry.path);
        if let Some(parent) = path.parent()
            && !made.contains(parent)
        {
            fs_err::create_dir_all(parent)?;
            made.insert(parent.to_owned());
        }
        content.clear();
        if entry.path == ".gitignore" {
            content.extend_from_slice(
                b"# Dependencies and build output.\nnode_modules/\ndist/\ntarget/\n__pycache__/\n*.log\n.cache/\n",
            );
        } else {
            let pool = pools
                .iter()
                .find(|(lang, _)| *lang == entry.lang)
                .map_or(&[][..], |(_, pool)| pool.as_slice());
            fill(&mut rng, entry, pool, &mut content);
        }
        bytes += content.len() as u64;
        fs_err::write(&path, &content)?;
    }
    Ok(Written { bytes })
}

/// A file's bytes: a header naming it, then `size` bytes of its language's pool from a random
/// line, wrapping around; `RARE_WORD` in the middle of rare files.
fn fill(rng: &mut Rng, entry: &Entry, pool: &[u8], out: &mut Vec<u8>) {
    let comment = entry.lang.comment();
    match entry.lang {
        Lang::Binary => out.extend_from_slice(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"),
        Lang::Json => {}
        Lang::Markdown => out.extend_from_slice(format!("# {}\n\n", entry.path).as_bytes()),
        _ => out.extend_from_slice(format!("{comment} {}\n", entry.path).as_bytes()),
    }
    let mut at = rng.below(pool.len());
    if let Some(newline) = pool[at..].iter().position(|&b| b == b'\n') {
        at += newline + 1;
    }
    let rare_at = entry.size / 2;
    let mut rare_done = !entry.rare;
    while out.len() < entry.size {
        if at >= pool.len() {
            at = 0;
        }
        let end = pool[at..].iter().position(|&b| b == b'\n').map_or(pool.len(), |i| at + i + 1);
        out.extend_from_slice(&pool[at..end]);
        if entry.one_line {
            out.pop();
            out.push(b';');
        }
        at = end;
        if !rare_done && out.len() >= rare_at {
            out.extend_from_slice(format!("{comment} TODO({RARE_WORD}): check this\n").as_bytes());
            rare_done = true;
        }
    }
    if entry.lang != Lang::Binary {
        out.push(b'\n');
    }
}

/// About 256 KB of generated lines in `lang`.
fn pool(rng: &mut Rng, lang: Lang) -> Vec<u8> {
    let mut pool = Vec::with_capacity(260 << 10);
    let mut n = 0_usize;
    while pool.len() < 256 << 10 {
        n += 1;
        let a = rng.pick(WORDS);
        let b = rng.pick(WORDS);
        let c = rng.pick(WORDS);
        let k = rng.below(4096);
        let line = match lang {
            Lang::Binary => {
                let bytes: Vec<u8> = (0..64).map(|_| (rng.next() & 0xFF) as u8).collect();
                pool.extend_from_slice(&bytes);
                pool.push(b'\n');
                continue;
            }
            Lang::Rust => match n % 6 {
                0 => format!("pub fn {a}_{b}(&mut self, {c}: usize) -> Result<{k}> {{"),
                1 => format!("    let {a} = self.{b}.get({c}).ok_or(Error::{a})?;"),
                2 => format!("    // Keeps the {a} {b} in step with the {c}."),
                3 => format!("    if {a}.len() > {k} {{ return Ok({b}_{c}); }}"),
                4 => format!("    self.{a}_{b}.push({c});"),
                _ => "}".to_owned(),
            },
            Lang::TypeScript | Lang::JavaScript => match n % 6 {
                0 => format!("export function {a}{b}({c}: number): string {{"),
                1 => format!("  const {a} = await this.{b}.{c}({k});"),
                2 => format!("  // Reads the {a} from the {b} {c}."),
                3 => format!("  if ({a}.length > {k}) return {b}.{c};"),
                4 => format!("  this.{a}.set('{b}', {c});"),
                _ => "}".to_owned(),
            },
            Lang::Python => match n % 5 {
                0 => format!("def {a}_{b}(self, {c}, limit={k}):"),
                1 => format!("    {a} = self.{b}.get(\"{c}\")"),
                2 => format!("    # Reads the {a} from the {b} {c}."),
                3 => format!("    if len({a}) > {k}:\n        return {b}_{c}"),
                _ => format!("    return {a}"),
            },
            Lang::Go => match n % 6 {
                0 => format!("func (s *{a}Server) {b}{c}(ctx context.Context) error {{"),
                1 => format!("\t{a}, err := s.{b}.{c}(ctx, {k})"),
                2 => format!("\t// Reads the {a} from the {b} {c}."),
                3 => "\tif err != nil {\n\t\treturn err\n\t}".to_owned(),
                4 => format!("\ts.{a}[{k}] = {b}"),
                _ => "}".to_owned(),
            },
            Lang::Java => match n % 6 {
                0 => format!("    public {a} {b}{c}(int {a}Id) throws IOException {{"),
                1 => format!("        var {a} = this.{b}.{c}({k});"),
                2 => format!("        // Reads the {a} from the {b} {c}."),
                3 => format!("        if ({a}.size() > {k}) return {b};"),
                4 => format!("        this.{a}.put(\"{b}\", {c});"),
                _ => "    }".to_owned(),
            },
            Lang::C | Lang::Header | Lang::Assembly => match n % 7 {
                0 => format!("static int {a}_{b}(struct {c}_dev *dev, u32 {a})"),
                1 => "{".to_owned(),
                2 => format!("\tstruct {a}_{b} *{c} = dev->{a};"),
                3 => format!("\t/* Reads the {a} from the {b} {c}. */"),
                4 => format!("\tif ({a} > {k})\n\t\treturn -EINVAL;"),
                5 => format!("\treturn {b}_{c}(dev, {a});"),
                _ => "}".to_owned(),
            },
            Lang::Proto => match n % 4 {
                0 => format!("message {a}{b} {{"),
                1 => format!("  string {a}_{b} = {};", k % 64 + 1),
                2 => format!("  // The {a} of the {b} {c}."),
                _ => "}".to_owned(),
            },
            Lang::Markdown => match n % 4 {
                0 => format!("## The {a} {b}"),
                1 => format!("Each {a} keeps its {b} until the {c} is done ({k} at most)."),
                2 => String::new(),
                _ => format!("- `{a}_{b}`: the {c}."),
            },
            Lang::Json => format!("{{\"{a}\": \"{b}\", \"{c}\": {k}, \"id\": {n}}}"),
            Lang::Yaml | Lang::Toml => match n % 3 {
                0 => format!("{a}:"),
                1 => format!("  {b}_{c}: {k}"),
                _ => format!("  {b}: \"{c}\""),
            },
            Lang::Make => match n % 3 {
                0 => format!("obj-$(CONFIG_{}) += {a}_{b}.o", a.to_uppercase()),
                1 => format!("INSERT INTO {a} ({b}, {c}) VALUES ({k}, '{a}');"),
                _ => format!("{a}-y := {b}.o {c}.o"),
            },
        };
        pool.extend_from_slice(line.as_bytes());
        pool.push(b'\n');
    }
    pool
}

/// `git init`, `git add -A` and `git commit` in `dir`, with a hermetic config and fixed
/// identity and dates (the commit id is the same on every machine with the same git).
fn commit(dir: &Path) -> io::Result<()> {
    git(dir, &["init", "-q", "-b", "main"])?;
    git(dir, &["add", "-A"])?;
    git(dir, &["commit", "-q", "-m", "huge-repo fixture"])?;
    Ok(())
}

fn git(dir: &Path, args: &[&str]) -> io::Result<()> {
    // Fixtures are made before any code under test runs, like the benches' own git calls;
    // the sandbox crate's spawner is what the product uses and what is measured.
    #[allow(clippy::disallowed_methods)]
    let mut command = Command::new("git");
    let output = command
        .args(["-c", "core.compression=1", "-c", "gc.auto=0", "-c", "commit.gpgSign=false"])
        .args(["-c", "core.autocrlf=false", "-c", "core.fsync=none"])
        .args(args)
        .current_dir(dir)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "Fixture")
        .env("GIT_AUTHOR_EMAIL", "fixture@example.com")
        .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_COMMITTER_NAME", "Fixture")
        .env("GIT_COMMITTER_EMAIL", "fixture@example.com")
        .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
        .output()?;
    if output.status.success() {
        return Ok(());
    }
    Err(io::Error::other(format!(
        "git {} in {} failed: {}",
        args.join(" "),
        dir.display(),
        String::from_utf8_lossy(&output.stderr).trim()
    )))
}
